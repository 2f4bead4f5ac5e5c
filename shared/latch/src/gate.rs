//! The five deterministic pre-execution checks: intent vs result,
//! checkpoint integrity, consent integrity, path safety, risk gate. Exit 0
//! only if all pass; a pass consumes the authorization.

use crate::entry::{ConsentState, Event, OneStep, Risk, NONE};
use crate::{layout, tokens, Latch};
use kijito_protocol::error::{Error, ErrorCode, Result};
use kijito_protocol::ids::ActionHash;
use serde::Serialize;

pub const GATE_SCHEMA: &str = "memory-latch.gate/v1";

#[derive(Debug, Clone, Default)]
pub struct GateInput {
    pub action_bytes: Vec<u8>,
    /// `sha256:<hex>`: must be the payload hash of a verified entry.
    pub checkpoint: Option<String>,
    pub targets: Vec<String>,
    /// Both or neither.
    pub intended: Option<Vec<u8>>,
    pub result: Option<Vec<u8>>,
    /// The wallet signer configured now (wallet consent mode), if any: a
    /// wallet-confirmed record must have been signed by it.
    pub wallet: Option<crate::wallet::WalletConfig>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CheckResult {
    pub name: Check,
    pub passed: bool,
    /// Failure code (None when passed).
    pub code: Option<ErrorCode>,
    pub message: String,
    /// One single-step remediation (None when passed).
    pub remediation: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GateReport {
    pub schema: &'static str,
    pub passed: bool,
    pub action_hash: ActionHash,
    pub checks: Vec<CheckResult>,
    /// One single-step remediation for the first failing check.
    pub remediation: Option<String>,
    /// The `gate_pass` entry written when all checks passed.
    pub entry_seq: Option<u64>,
}

fn pass(name: Check, message: impl Into<String>) -> CheckResult {
    CheckResult { name, passed: true, code: None, message: message.into(), remediation: None }
}

fn fail(name: Check, code: impl Into<ErrorCode>, message: impl Into<String>) -> CheckResult {
    CheckResult { name, passed: false, code: Some(code.into()), message: message.into(), remediation: Some(name.remediation().to_owned()) }
}

fn normalise(bytes: &[u8]) -> Option<String> {
    let text = std::str::from_utf8(bytes).ok()?;
    Some(text.split('\n').map(|l| l.trim_end()).collect::<Vec<_>>().join("\n").trim_end().to_owned())
}

/// The gate's checks, in the order they run. Serialised (and printed) as
/// their names; each has exactly one remediation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Check {
    IntentVsResult,
    CheckpointIntegrity,
    ConsentIntegrity,
    PathSafety,
    RiskGate,
    OneStep,
}

impl Check {
    pub const ALL: [Check; 6] =
        [Check::IntentVsResult, Check::CheckpointIntegrity, Check::ConsentIntegrity, Check::PathSafety, Check::RiskGate, Check::OneStep];

    pub fn as_str(self) -> &'static str {
        match self {
            Check::IntentVsResult => "intent_vs_result",
            Check::CheckpointIntegrity => "checkpoint_integrity",
            Check::ConsentIntegrity => "consent_integrity",
            Check::PathSafety => "path_safety",
            Check::RiskGate => "risk_gate",
            Check::OneStep => "one_step",
        }
    }

    pub fn parse(name: &str) -> Option<Check> {
        Check::ALL.into_iter().find(|c| c.as_str() == name)
    }

    /// The remediation for this check when it failed (one step).
    pub fn remediation(self) -> &'static str {
        match self {
            Check::IntentVsResult => {
                "Write the intended change to a file, produce the observed result, and rerun gate with --intended F --result F until they match."
            }
            Check::CheckpointIntegrity => {
                "Run `memory-latch verify`, resolve every finding, and pass the newest verified payload hash as --checkpoint."
            }
            Check::ConsentIntegrity => {
                "Run `memory-latch consent request --action-file F --summary TEXT --risk R` and ask the user to send the token as their whole message."
            }
            Check::PathSafety => "Name at least one target inside the workspace, without `..`, symlinks or .memory-latch, then rerun gate.",
            Check::OneStep => "Run `memory-latch checkpoint --next-step TEXT` naming exactly the one next step, then rerun gate for that step only.",
            Check::RiskGate => "Ask the user to send the same token again as a second, separate message (high risk), then rerun gate.",
        }
    }
}

impl std::fmt::Display for Check {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for Check {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl PartialEq<&str> for Check {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

/// The remediation for a failed check, by its name (one step); `None` for a
/// name that is no check of the gate.
pub fn remediation(name: &str) -> Option<&'static str> {
    Check::parse(name).map(Check::remediation)
}

/// A wallet record's stored signature recovers, over its own challenge and
/// action hash, to its recorded signer, which is the configured one (when a
/// configuration is given).
pub fn wallet_ok(c: &crate::wallet::Challenge, action_hash: &ActionHash, configured: Option<&crate::wallet::WalletConfig>) -> bool {
    let Ok(signer) = crate::wallet::Address::parse(&c.signer) else { return false };
    let Some(sig) = c.signature.as_deref().and_then(crate::wallet::Sig::standalone) else { return false };
    configured.is_none_or(|w| w.signer == signer) && c.verify(action_hash, &sig, &signer)
}

/// The consent-integrity check: does the verified head and its ledger
/// record authorize exactly the action `hash` now? The one predicate that
/// `memory-latch gate` and the PreToolUse path ([`crate::tool_gate`]) share.
///
/// The user's consent setting comes with the ledger
/// ([`tokens::Ledger::context`], attached when the latch loads it): an
/// unusable setting refuses everything; in key mode the record must carry a
/// signature that verifies with the configured public key only, over this
/// record, this action, its nonce and an expiry not yet passed; in wallet
/// mode the configured signer's EIP-712 signature. `wallet` (the caller's
/// wallet signer, if it passes one) must agree with the setting's.
///
/// `wallet_ok` checks a wallet record's stored signature against a signer:
/// `gate` recovers it here (`k256`), the hook through the installed sibling,
/// so that the hook binary links no curve code (docs/architecture.md).
pub(crate) fn consent_check(
    head: Option<&crate::entry::Entry>,
    rec: Option<&tokens::TokenRecord>,
    ledger: &Result<tokens::Ledger>,
    hash: &ActionHash,
    wallet: Option<&crate::wallet::WalletConfig>,
    wallet_ok: &dyn Fn(&crate::wallet::Challenge, &ActionHash, Option<&crate::wallet::WalletConfig>) -> bool,
) -> CheckResult {
    const NAME: Check = Check::ConsentIntegrity;
    let ctx = ledger.as_ref().ok().and_then(|l| l.context.as_ref());
    let setting = ctx.map(|c| &c.setting);
    let now_ms = ctx.map(|c| c.now_ms).unwrap_or_else(crate::time::now_ms);
    if let Some((code, message)) = setting.and_then(|s| s.invalid.as_ref()) {
        return fail(NAME, code.clone(), format!("the user's consent configuration is unusable: {message}"));
    }
    let mode = setting.map(|s| s.mode).unwrap_or(crate::consent::Mode::Token);
    match (head, rec, ledger) {
        (_, _, Err(e)) => fail(NAME, e.error_code(), "the token ledger cannot be read"),
        (None, _, _) => fail(NAME, crate::codes::UNTRUSTED, "no verified head to read consent from"),
        (Some(h), _, _) if h.consent_state != ConsentState::Authorized => {
            fail(NAME, crate::codes::CONSENT_NOT_AUTHORIZED, format!("consent is {}, not authorized", h.consent_state.as_str()))
        }
        (Some(h), _, _) if h.action_hash.as_ref() != Some(hash) => {
            fail(NAME, crate::codes::CONSENT_ACTION_CHANGED, "the authorized action hash differs from this action file")
        }
        (Some(_), None, _) => fail(NAME, crate::codes::CONSENT_RECORD_MISSING, "the authorizing token is not in the ledger"),
        (Some(_), Some(r), _) if r.key.is_some() && r.used_at_ms.is_some() => {
            fail(NAME, crate::codes::CONSENT_SIGNATURE_REPLAYED, "the signed record was already used (single use)")
        }
        (Some(_), Some(r), _)
            if r.purpose != tokens::Purpose::Consent || r.confirmed_at_ms.is_none() || r.used_at_ms.is_some() || r.action_hash != *hash =>
        {
            fail(NAME, crate::codes::CONSENT_RECORD_MISMATCH, "the ledger record does not confirm this authorization")
        }
        (Some(_), Some(r), _) if mode == crate::consent::Mode::Key => {
            let Some(key) = setting.and_then(|s| s.public_key.as_ref()) else {
                return fail(NAME, crate::codes::CONSENT_CONFIG_INVALID, "key consent mode without a configured public key");
            };
            let Some(c) = r.key.as_ref() else {
                return fail(
                    NAME,
                    crate::codes::CONSENT_SIGNATURE_REQUIRED,
                    "key consent mode: this record was not signed by the user's key (memory-latch approve)",
                );
            };
            match crate::consent::verify_challenge(key, &r.id, hash, c, now_ms) {
                Ok(()) => pass(
                    NAME,
                    format!(
                        "authorized by the user's Ed25519 signature ({}) over this action, its nonce and expiry (single use)",
                        key.name
                    ),
                ),
                Err((code, message)) => fail(NAME, code, message),
            }
        }
        (Some(_), Some(r), _) if mode == crate::consent::Mode::Wallet || r.wallet.is_some() => {
            let configured = setting.and_then(|s| s.wallet.as_ref());
            if let (Some(a), Some(b)) = (configured, wallet) {
                if a.signer != b.signer {
                    return fail(
                        NAME,
                        crate::codes::CONSENT_RECORD_MISMATCH,
                        "the caller's wallet signer is not the one the consent setting names",
                    );
                }
            }
            match r.wallet.as_ref() {
                None => fail(
                    NAME,
                    crate::codes::WALLET_SIGNATURE_REQUIRED,
                    "wallet consent mode: this record carries no signature by the configured signer",
                ),
                Some(c) if !wallet_ok(c, &r.action_hash, configured.or(wallet)) => fail(
                    NAME,
                    crate::codes::CONSENT_RECORD_MISMATCH,
                    "the ledger's wallet signature does not verify for this action and the configured signer",
                ),
                Some(_) => pass(NAME, "authorized by the configured signer's EIP-712 signature over this action (single-use nonce)"),
            }
        }
        _ => pass(NAME, "authorized by a confirmed single-use token bound to this action"),
    }
}

/// The risk gate: a high-risk authorization needs the user's second,
/// separate message (shared by `gate` and [`crate::tool_gate`]).
pub(crate) fn risk_check(head: Option<&crate::entry::Entry>, rec: Option<&tokens::TokenRecord>) -> CheckResult {
    let risk = rec.map(|r| r.risk).or(head.map(|h| h.risk_level)).unwrap_or(Risk::High);
    let reconfirmed = rec.is_some_and(|r| r.confirmed_at_ms.is_some() && r.reconfirmed_at_ms.is_some());
    if risk == Risk::High && !reconfirmed {
        fail(
            Check::RiskGate,
            crate::codes::RISK_RECONFIRMATION_REQUIRED,
            "high risk: the user must reconfirm with a second, separate standalone message",
        )
    } else {
        pass(Check::RiskGate, format!("risk {}", risk.as_str()))
    }
}

/// Consume the authorization under the held lock: one `gate_pass` entry
/// (consent back to pending, the step taken in one-step mode) and the
/// ledger record marked used, in one transaction.
pub(crate) fn consume(
    latch: &Latch,
    guard: &crate::lock::LockGuard,
    now_ms: u64,
    ledger: Result<tokens::Ledger>,
    rec: Option<&tokens::TokenRecord>,
    detail: String,
) -> Result<crate::entry::Entry> {
    latch.transact(guard, now_ms, Event::GatePass, |e, _| {
        e.consent_state = ConsentState::Pending;
        e.irreversible_action_pending = NONE.into();
        e.action_hash = None;
        e.details = vec![detail];
        if e.one_step.is_some() {
            e.one_step = Some(OneStep::StepTaken);
        }
        if let (Ok(mut l), Some(r)) = (ledger, rec) {
            if let Some(t) = l.tokens.iter_mut().find(|t| t.id == r.id) {
                t.used_at_ms = Some(now_ms);
            }
            latch.save_ledger(&l)?;
        }
        Ok(())
    })
}

pub(crate) fn run(latch: &Latch, now_ms: u64, input: &GateInput) -> Result<GateReport> {
    let hash = crate::action_hash(&input.action_bytes)?;
    if input.intended.is_some() != input.result.is_some() {
        return Err(Error::usage(crate::codes::GATE_INTENT_INCOMPLETE, "--intended and --result must be given together"));
    }
    if input.targets.len() > 256 {
        return Err(Error::usage(crate::codes::GATE_TARGET_INVALID, "at most 256 targets"));
    }
    let guard = latch.lock()?;
    let full = latch.full_verify(input.checkpoint.is_some());
    let report = &full.report;
    if report.silent_witness {
        let reason = latch.witness_marker()?.map(|m| m.reason).unwrap_or_else(|| "recovery attempts exhausted".into());
        return Err(crate::witness_error(&reason));
    }
    if !report.trusted && !report.findings.is_empty() {
        latch.write_witness(now_ms, "verification failed", report.findings.iter().map(|f| f.code.to_string()).collect())?;
    }
    let mut checks = Vec::with_capacity(5);

    // 1. intent vs result
    checks.push(match (&input.intended, &input.result) {
        (Some(i), Some(r)) => match (normalise(i), normalise(r)) {
            (Some(a), Some(b)) if a == b => pass(Check::IntentVsResult, "the result matches the intended content"),
            (Some(_), Some(_)) => {
                fail(Check::IntentVsResult, crate::codes::INTENT_RESULT_MISMATCH, "the result differs from the intended content")
            }
            _ => fail(Check::IntentVsResult, crate::codes::INTENT_RESULT_UNREADABLE, "the intended or result file is not UTF-8"),
        },
        _ => fail(
            Check::IntentVsResult,
            crate::codes::INTENT_UNDECLARED,
            "no declared delta: --intended and --result are required (the check cannot pass vacuously)",
        ),
    });

    // 2. checkpoint integrity
    checks.push(if !report.trusted {
        let first = report.findings.first().map(|f| f.code.as_str()).unwrap_or(crate::codes::UNVERIFIABLE.as_str());
        fail(Check::CheckpointIntegrity, crate::codes::UNTRUSTED, format!("the latch chain is not trusted ({first})"))
    } else {
        match &input.checkpoint {
            Some(c) if !full.hashes.contains(c) => fail(
                Check::CheckpointIntegrity,
                crate::codes::GATE_CHECKPOINT_UNKNOWN,
                "the given checkpoint is not the payload hash of any verified entry",
            ),
            Some(_) => pass(Check::CheckpointIntegrity, format!("chain verified ({} entries); checkpoint found", report.entries)),
            None => fail(
                Check::CheckpointIntegrity,
                crate::codes::GATE_CHECKPOINT_MISSING,
                "no --checkpoint given: the check needs the referenced checkpoint",
            ),
        }
    });

    // 3. consent integrity
    let ledger = latch.load_ledger();
    let head = full.head.as_ref().filter(|_| report.trusted);
    let rec = match (&ledger, head) {
        (Ok(l), Some(h)) => l.by_id(&h.irreversible_action_pending).cloned(),
        _ => None,
    };
    checks.push(consent_check(head, rec.as_ref(), &ledger, &hash, input.wallet.as_ref(), &wallet_ok));

    // 4. path safety
    let mut path_check = if input.targets.is_empty() {
        fail(Check::PathSafety, crate::codes::GATE_TARGET_MISSING, "no --target given: path safety needs at least one target")
    } else {
        pass(Check::PathSafety, format!("{} target(s) inside the workspace", input.targets.len()))
    };
    for t in &input.targets {
        if let Err(e) = layout::resolve_target(&latch.paths().root, t) {
            path_check = fail(Check::PathSafety, e.error_code(), e.message());
            break;
        }
    }
    checks.push(path_check);

    // 5. risk gate
    checks.push(risk_check(head, rec.as_ref()));

    // 6. one-step mode (only while it is on: context fatigue, `knobs`)
    let one_step = head.and_then(|h| h.one_step.map(|m| (m, h.next_single_step.clone())));
    match &one_step {
        Some((OneStep::StepTaken, _)) => checks.push(fail(
            Check::OneStep,
            crate::codes::ONE_STEP_CHECKPOINT_REQUIRED,
            "one-step mode: the declared single step was already taken; a checkpoint naming the next step must come first",
        )),
        Some((OneStep::Ready, step)) if step == NONE => checks.push(fail(
            Check::OneStep,
            crate::codes::ONE_STEP_NEXT_STEP_REQUIRED,
            "one-step mode: the checkpoint names no next single step",
        )),
        Some((OneStep::Ready, step)) => checks.push(pass(Check::OneStep, format!("one-step mode: the declared single step \"{step}\""))),
        None => {}
    }

    let passed = checks.iter().all(|c| c.passed);
    let remediation = checks.iter().find(|c| !c.passed).map(|c| c.name.remediation().to_owned());
    let mut entry_seq = None;
    if passed {
        let e = consume(latch, &guard, now_ms, ledger, rec.as_ref(), format!("gate passed for {hash}; authorization consumed"))?;
        entry_seq = Some(e.entry_seq);
    }
    Ok(GateReport { schema: GATE_SCHEMA, passed, action_hash: hash, checks, remediation, entry_seq })
}
