//! The PreToolUse path's two questions to a latch: which mode is
//! it in (read-only, quick, on every mutating tool call), and may exactly
//! this tool call run now (consuming a confirmed authorization once).
//!
//! The consent and risk checks are [`crate::gate`]'s own ([`consent_check`],
//! [`risk_check`]), so `memory-latch gate` and the hook decide alike; the
//! tool path needs no intent/result files, checkpoint or targets, because
//! the action *is* the tool call (its canonical JSON, docs/protocol.md §8).

use crate::entry::{ConsentState, OneStep, NONE};
use crate::gate::{consent_check, consume, risk_check};
use crate::Latch;
use kijito_protocol::error::{Error, Result};
use kijito_protocol::ids::ToolUseId;

/// The latch mode as the PreToolUse policy reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolMode {
    Normal,
    /// Silent Witness (a marker, the head's flag, or a chain that does not
    /// verify: an integrity failure halts like Silent Witness).
    SilentWitness {
        reason: String,
    },
    /// Consent locked until the user reviews (wake-check's degraded mode).
    Degraded,
    /// One-step mode and the head names no next step, or it was taken.
    OneStepWithoutStep,
    /// The user's governance file is refused (every latch write fails
    /// closed with it): the user fixes the file.
    GovernanceInvalid {
        reason: String,
    },
}

/// The one mapping onto the policy's view of the mode (pretool-hook).
impl From<&ToolMode> for kijito_policy::LatchMode {
    fn from(m: &ToolMode) -> Self {
        match m {
            ToolMode::Normal => kijito_policy::LatchMode::Normal,
            ToolMode::SilentWitness { .. } => kijito_policy::LatchMode::SilentWitness,
            ToolMode::Degraded => kijito_policy::LatchMode::Degraded,
            ToolMode::OneStepWithoutStep => kijito_policy::LatchMode::OneStepWithoutStep,
            ToolMode::GovernanceInvalid { .. } => kijito_policy::LatchMode::GovernanceInvalid,
        }
    }
}

impl Latch {
    /// The mode, read-only (the live part and the head record verified,
    /// as `status` does). Anything that cannot be read or verified is
    /// [`ToolMode::SilentWitness`]: a latch that cannot be trusted halts.
    pub fn tool_mode(&self) -> ToolMode {
        let witness = |reason: String| ToolMode::SilentWitness { reason };
        if let Err(e) = self.governance_in_force() {
            return ToolMode::GovernanceInvalid { reason: format!("{}: {}", e.code(), e.message()) };
        }
        match self.witness_marker() {
            Ok(Some(m)) => return witness(m.reason),
            Ok(None) => {}
            Err(e) => return witness(format!("{}: {}", e.code(), e.message())),
        }
        let live = match self.load_trusted_readonly() {
            Ok(l) => l,
            Err(e) => return witness(format!("{}: {}", e.code(), e.message())),
        };
        let Some(head) = live.entries.last() else { return witness("the manifest has no entry".into()) };
        if head.silent_witness {
            return witness("recovery attempts exhausted".into());
        }
        if head.consent_state == ConsentState::Locked {
            return ToolMode::Degraded;
        }
        match head.one_step {
            Some(OneStep::StepTaken) => ToolMode::OneStepWithoutStep,
            Some(OneStep::Ready) if head.next_single_step == NONE => ToolMode::OneStepWithoutStep,
            _ => ToolMode::Normal,
        }
    }

    /// May the tool call whose canonical action bytes are `action_bytes`
    /// run now? Under the manifest lock: the chain quick-verified, the head's
    /// authorization and its ledger record checked exactly as `gate` checks
    /// them, the risk gate; then the authorization is consumed in the same
    /// transaction (a `gate_pass` entry). A second identical call finds
    /// nothing to consume. `Err` carries the failing check's code and
    /// message; nothing is written then. `wallet_ok` checks a wallet
    /// record's stored signature (see [`consent_check`]).
    pub fn tool_gate(
        &self,
        now_ms: u64,
        action_bytes: &[u8],
        wallet_ok: &dyn Fn(&crate::wallet::Challenge, &kijito_protocol::ids::ActionHash, Option<&crate::wallet::WalletConfig>) -> bool,
    ) -> Result<crate::entry::Entry> {
        self.tool_gate_at_least(now_ms, action_bytes, wallet_ok, None)
    }

    /// [`Latch::tool_gate`] with the call's risk as the hook classified it
    /// (`min_risk`): a high one needs the user's second message even when
    /// the agent requested consent at a lower risk.
    pub fn tool_gate_at_least(
        &self,
        now_ms: u64,
        action_bytes: &[u8],
        wallet_ok: &dyn Fn(&crate::wallet::Challenge, &kijito_protocol::ids::ActionHash, Option<&crate::wallet::WalletConfig>) -> bool,
        min_risk: Option<crate::entry::Risk>,
    ) -> Result<crate::entry::Entry> {
        let hash = crate::action_hash(action_bytes)?;
        let guard = self.lock()?;
        let live = self.load_trusted_readonly()?;
        if let Some(reason) = self.witness_active(&live)? {
            return Err(crate::witness_error(&reason));
        }
        let head = live.entries.last();
        let ledger = self.load_ledger();
        let rec = match (&ledger, head) {
            (Ok(l), Some(h)) => l.by_id(&h.irreversible_action_pending).cloned(),
            _ => None,
        };
        // High risk, confirmed once: say what is missing (the user's second
        // message), not merely "not authorized".
        if let (Some(h), Some(r)) = (head, rec.as_ref()) {
            let once = r.confirmed_at_ms.is_some() && r.reconfirmed_at_ms.is_none() && r.used_at_ms.is_none();
            if let Some(min) = min_risk.filter(|m| r.action_hash == hash && *m > r.risk) {
                return Err(Error::new(
                    crate::codes::RISK_RECONFIRMATION_REQUIRED,
                    format!(
                        "this call is {} risk, but its consent was requested at {}: request consent again with the exact command the hook gave (--risk {}){}",
                        min.as_str(),
                        r.risk.as_str(),
                        min.as_str(),
                        if min == crate::entry::Risk::High { "; the user confirms a high-risk token twice" } else { "" }
                    ),
                ));
            }
            if h.consent_state == ConsentState::Pending && r.action_hash == hash && r.risk == crate::entry::Risk::High && once {
                return Err(Error::new(
                    crate::codes::RISK_RECONFIRMATION_REQUIRED,
                    "high risk: the user confirmed once; they must send the same token again as a second, separate message",
                ));
            }
        }
        for check in [consent_check(head, rec.as_ref(), &ledger, &hash, None, wallet_ok), risk_check(head, rec.as_ref())] {
            if !check.passed {
                let code = check.code.unwrap_or_else(|| crate::codes::UNVERIFIABLE.into());
                return Err(Error::new(code, check.message));
            }
        }
        consume(self, &guard, now_ms, ledger, rec.as_ref(), format!("tool call passed for {hash}; authorization consumed (PreToolUse)"))
    }
}

/// How a call that the user allowed in the host's dialog ended, as the
/// host's post event says (Claude Code: PostToolUse, PostToolUseFailure).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HostOutcome {
    Ran,
    Failed,
}

impl HostOutcome {
    pub fn parse(text: &str) -> Result<HostOutcome> {
        match text {
            "ran" => Ok(HostOutcome::Ran),
            "failed" => Ok(HostOutcome::Failed),
            _ => Err(Error::usage(crate::codes::HOST_OUTCOME_INVALID, "--outcome must be ran or failed")),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            HostOutcome::Ran => "ran",
            HostOutcome::Failed => "failed",
        }
    }
}

impl Latch {
    /// Record a tool call the user allowed in the host's own dialog and the
    /// host then ran (`consent.mode: "host"`): one state-neutral
    /// `host_consent` entry naming its action hash, the hook's
    /// `tool_use_id` and the outcome. Nothing is authorized or consumed:
    /// the host's dialog was the consent. A latch in Silent Witness (or
    /// one that does not verify) records nothing.
    pub fn record_host_consent(
        &self,
        now_ms: u64,
        action_bytes: &[u8],
        tool_use_id: &str,
        outcome: HostOutcome,
    ) -> Result<crate::entry::Entry> {
        let hash = String::from(crate::action_hash(action_bytes)?);
        let tool_use_id = ToolUseId::parse(tool_use_id)
            .map_err(|e| Error::usage(crate::codes::HOST_OUTCOME_INVALID, format!("--tool-use-id: {}", e.message())))?;
        let detail = format!(
            "tool call {} after the user's Yes in the host's dialog (consent mode host): {hash}, tool_use_id {tool_use_id}",
            outcome.as_str()
        );
        self.append_with(now_ms, crate::entry::Event::HostConsent, |e, _| {
            e.details = vec![detail];
            Ok(())
        })
    }
}
