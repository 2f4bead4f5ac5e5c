//! The decision by mode: a classified call and a narrow read-only view of
//! the latch and QA state to allow, or deny with a stable code and a reason
//! naming the one step that leads out.
//!
//! Order: tripwires (every mode, no consent opens them); then the latch
//! modes that halt (Silent Witness, degraded until reviewed, one-step
//! without a named next step, an invalid governance file): an allow-list,
//! so only reads the allow-list names and helper commands pass
//! ([`Classification::halts`]); then the wake hold ([`Wake`], the same
//! allow-list: docs/protocol.md §8a); then the QA freeze (Kijito graph writes between `qa-gate record` and
//! the compaction); then consent (normal mode: an irreversible or opaque
//! call needs a confirmed token for its action hash).

use crate::classify::{Class, Classification};
use kijito_protocol::codes::policy as codes;
use kijito_protocol::ids::ActionHash;
use serde_json::Value;

/// The latch mode as the hook reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LatchMode {
    /// No latch in this workspace (only tripwires and the freeze apply).
    Absent,
    Normal,
    SilentWitness,
    /// Degraded until a human reviews (wake-check).
    Degraded,
    /// One-step mode and the head names no next step (or it was taken).
    OneStepWithoutStep,
    /// The user's governance file for the latch is refused.
    GovernanceInvalid,
}

/// The wake hold of the session's working directory (SessionStart's local
/// wake checks, docs/protocol.md §8a), as the hook read it before the call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Wake {
    /// No hold.
    #[default]
    Clear,
    /// `wake-check --live` answered cautious: every call is judged at least high risk.
    Cautious,
    /// `wake-check --live` has not answered: every call the halting modes
    /// would deny waits for it ([`WAKE_PENDING`](codes::WAKE_PENDING)).
    Pending,
}

impl Wake {
    /// The risk raise of a cautious wake: applied by [`decide`], and by the
    /// hook to the classification it journals and asks consent with.
    pub fn apply(self, cls: &mut Classification) {
        if self == Wake::Cautious {
            cls.raise_risk(crate::classify::Risk::High);
        }
    }
}

/// What the decision may know of the modes (read-only, cheap to fill).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Modes {
    pub latch: LatchMode,
    /// The session's wake hold.
    pub wake: Wake,
    /// From `qa-gate record` until that pass is consumed or invalidated.
    pub qa_frozen: bool,
    /// A consent token for exactly this call's action hash is confirmed
    /// (and reconfirmed, when high risk) and unused.
    pub consent_confirmed: bool,
}

/// Where the consent request command points (absolute paths).
#[derive(Debug, Clone, Copy)]
pub struct ConsentTarget<'a> {
    /// `<root>/bin` of this installed plugin root.
    pub helper_dir: &'a str,
    /// The workspace (`--workspace`).
    pub workspace: &'a str,
    /// Where the caller writes [`action_bytes`] for this call (`--action-file`).
    pub action_file: &'a str,
    /// The host session (for `qa-gate invalidate --session-id`).
    pub session_id: &'a str,
    /// The data dir (for `wake-check --live --data-dir`).
    pub data_dir: &'a str,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    Allow,
    Deny { code: codes::Code, reason: String },
}

impl Decision {
    pub fn allowed(&self) -> bool {
        matches!(self, Decision::Allow)
    }

    pub fn code(&self) -> Option<codes::Code> {
        match self {
            Decision::Allow => None,
            Decision::Deny { code, .. } => Some(*code),
        }
    }

    /// A denial that consent can lift: the hook then asks the user or
    /// checks a confirmed token (docs/protocol.md §8a).
    pub fn needs_consent(&self) -> bool {
        self.code() == Some(codes::CONSENT_REQUIRED)
    }
}

/// The action file of a call: canonical JSON (`kijito_protocol::json`) of
/// `{"tool_name", "tool_input"}` and one LF — already in memory-latch's
/// canonical action form, so `memory-latch consent request --action-file`
/// binds the token to [`action_hash`].
pub fn action_bytes(tool_name: &str, tool_input: &Value) -> Vec<u8> {
    let mut v = serde_json::Map::new();
    v.insert("tool_name".into(), Value::String(tool_name.to_owned()));
    v.insert("tool_input".into(), tool_input.clone());
    let mut s = kijito_protocol::json::canonical_json(&Value::Object(v));
    s.push('\n');
    s.into_bytes()
}

/// The [`ActionHash`] of [`action_bytes`] (already canonical): memory-latch's
/// action hash of the same action.
pub fn action_hash(tool_name: &str, tool_input: &Value) -> ActionHash {
    ActionHash::of_canonical(&action_bytes(tool_name, tool_input))
}

/// The exact command that requests consent for this call; it names the
/// session and data dir whose journal records the request (docs/protocol.md §13).
pub fn consent_command(cls: &Classification, target: &ConsentTarget<'_>) -> String {
    let first = cls.irreversible().first().copied();
    let summary = match first {
        Some(h) => format!("{}:{}", h.class.as_str(), h.rule),
        None => "action".to_owned(),
    };
    let journal = if target.session_id.is_empty() || target.data_dir.is_empty() {
        String::new()
    } else {
        format!(" --session-id {} --data-dir {}", target.session_id, target.data_dir)
    };
    format!(
        "{}/memory-latch consent request --workspace {} --action-file {} --summary {} --risk {}{journal}",
        target.helper_dir.trim_end_matches('/'),
        target.workspace,
        target.action_file,
        summary,
        cls.risk().as_str()
    )
}

fn what(cls: &Classification) -> String {
    let mut parts: Vec<String> = cls.irreversible().iter().map(|h| format!("{} ({})", h.class.as_str(), h.rule)).collect();
    if parts.is_empty() {
        parts = cls.classes().iter().filter(|c| c.is_mutation()).map(|c| c.as_str().to_owned()).collect();
    }
    if parts.is_empty() {
        if let Some(u) = cls.unlisted() {
            parts.push(format!("not on the read-only list: {u}"));
        }
    }
    parts.join(", ")
}

/// The wake hold (docs/protocol.md §8a): after a long sleep, a boot change
/// or a clock that went back at SessionStart, every call the halting modes
/// would deny waits until `wake-check --live` answered (the command named
/// exact and absolute). After [`decide`]'s tripwires and halting modes,
/// before the freeze and consent.
fn wake_hold(cls: &Classification, target: &ConsentTarget<'_>) -> Option<Decision> {
    halts(cls).then(|| Decision::Deny {
        code: codes::WAKE_PENDING,
        reason: format!(
            "kijito-qa policy: denied ({}): this session woke from a long sleep, a boot change or local findings; writes and irreversible calls wait until the live wake check has answered (this one: {}). The one step out: run `{}/wake-check --live --workspace {} --data-dir {}`, read its verdict, then retry.",
            codes::WAKE_PENDING,
            what(cls),
            target.helper_dir.trim_end_matches('/'),
            target.workspace,
            target.data_dir
        ),
    })
}

/// A call the halting modes deny: a mutation other than a helper command,
/// or a command off the allow-list.
fn halts(cls: &Classification) -> bool {
    cls.classes().iter().any(|c| c.is_mutation() && *c != Class::Helper) || cls.unlisted().is_some()
}

/// Decide one classified call, in the order of this module's head.
pub fn decide(cls: &Classification, modes: &Modes, target: &ConsentTarget<'_>) -> Decision {
    let raised;
    let cls = if modes.wake == Wake::Cautious {
        let mut c = cls.clone();
        modes.wake.apply(&mut c);
        raised = c;
        &raised
    } else {
        cls
    };
    let bin = target.helper_dir.trim_end_matches('/');
    if let Some(t) = cls.tripwires.first() {
        return Decision::Deny {
            code: t.code,
            reason: format!(
                "kijito-qa policy: denied ({}): a tripwire ({}). This call is never allowed from the agent, in any mode and with any token; leave it to the user.",
                t.code, t.detail
            ),
        };
    }
    let mutates = halts(cls);
    let halt = |code: codes::Code, mode: &str, step: String| {
        Decision::Deny {
        code,
        reason: format!("kijito-qa policy: denied ({code}): {mode} halts every call but the read-only list (cat, head, tail, less, ls, stat, wc, file, pwd, echo, printf, grep, rg, find, git status|log|diff|show|blame, our helpers) (this one: {}). The one step out: {step}", what(cls)),
    }
    };
    match modes.latch {
        LatchMode::SilentWitness if mutates => {
            return halt(
                codes::SILENT_WITNESS,
                "Silent Witness",
                format!("ask the user to reseed: run `{bin}/memory-latch reseed --workspace {}` and the user sends the printed token in their own message.", target.workspace),
            )
        }
        LatchMode::Degraded if mutates => {
            return halt(
                codes::DEGRADED,
                "degraded mode (until a human reviews)",
                format!("stop and ask the user to review the latch (`{bin}/memory-latch status --workspace {}` shows it); do not try to end degraded mode yourself.", target.workspace),
            )
        }
        LatchMode::GovernanceInvalid if mutates => {
            return halt(
                codes::GOVERNANCE_INVALID,
                "an unusable memory-latch governance file",
                format!("ask the user to fix or remove their memory-latch governance file (`{bin}/memory-latch status --workspace {}` names the problem); do not edit it yourself.", target.workspace),
            )
        }
        LatchMode::OneStepWithoutStep if mutates => {
            return halt(
                codes::ONE_STEP_NO_STEP,
                "one-step mode without a named next step",
                format!("name the single next step: `{bin}/memory-latch checkpoint --workspace {} --next-step TEXT`.", target.workspace),
            )
        }
        _ => {}
    }
    if modes.wake == Wake::Pending {
        if let Some(d) = wake_hold(cls, target) {
            return d;
        }
    }
    if modes.qa_frozen && cls.kijito_write() {
        return Decision::Deny {
            code: codes::QA_FROZEN,
            reason: format!(
                "kijito-qa policy: denied (policy_qa_frozen): the QA pass is recorded; no Kijito graph write until it is consumed. The one step out: compact first (the compaction consumes the pass), or invalidate the pass: `{bin}/qa-gate invalidate --session-id {}`.",
                target.session_id
            ),
        };
    }
    if modes.latch != LatchMode::Absent && cls.is_irreversible() && !modes.consent_confirmed {
        return Decision::Deny {
            code: codes::CONSENT_REQUIRED,
            reason: format!(
                "kijito-qa policy: denied (policy_consent_required): irreversible action: {}. No valid token, no execution. The one step out: run `{}`, show the user the action and ask them to send the printed token in their own message; then retry exactly this call (a changed call needs a new token).",
                what(cls),
                consent_command(cls, target)
            ),
        };
    }
    Decision::Allow
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::call::ToolCall;
    use crate::classify::{classify, Env};
    use serde_json::json;

    const T: ConsentTarget<'static> =
        ConsentTarget { helper_dir: "/opt/k/bin", workspace: "/w", action_file: "/w/.a/x.json", session_id: "s1", data_dir: "/d" };

    fn cls(tool: &str, input: Value) -> Classification {
        let env = Env { home: "/home/u".into(), cwd: "/w".into(), ..Env::default() };
        classify(&ToolCall::parse(tool, &input), &env)
    }

    fn modes(latch: LatchMode) -> Modes {
        Modes { latch, wake: Wake::Clear, qa_frozen: false, consent_confirmed: false }
    }

    #[test]
    fn halting_modes_deny_mutation_and_pass_reads() {
        let write = cls("Write", json!({"file_path": "/w/src/a.rs", "content": "x"}));
        let read = cls("Bash", json!({"command": "git status"}));
        let helper = cls("Bash", json!({"command": "/opt/k/bin/memory-latch status"}));
        for (mode, code) in [
            (LatchMode::SilentWitness, codes::SILENT_WITNESS),
            (LatchMode::Degraded, codes::DEGRADED),
            (LatchMode::OneStepWithoutStep, codes::ONE_STEP_NO_STEP),
        ] {
            assert_eq!(decide(&write, &modes(mode), &T).code(), Some(code));
            assert!(decide(&read, &modes(mode), &T).allowed());
            assert!(decide(&helper, &modes(mode), &T).allowed());
        }
        assert!(decide(&write, &modes(LatchMode::Normal), &T).allowed());
        let Decision::Deny { reason, .. } = decide(&write, &modes(LatchMode::OneStepWithoutStep), &T) else { panic!() };
        assert!(reason.contains("/opt/k/bin/memory-latch checkpoint --workspace /w --next-step TEXT"), "{reason}");
    }

    /// The halting modes are an allow-list: a read off the list is denied
    /// there (and by the wake hold), passes in normal mode; an opaque call
    /// needs consent in normal mode.
    #[test]
    fn the_halting_modes_pass_only_the_allow_list() {
        let tree = cls("Bash", json!({"command": "cargo tree"}));
        let pager = cls("Bash", json!({"command": "git -c core.pager='rm -rf x' log"}));
        for mode in [LatchMode::SilentWitness, LatchMode::Degraded, LatchMode::OneStepWithoutStep, LatchMode::GovernanceInvalid] {
            let Decision::Deny { reason, .. } = decide(&tree, &modes(mode), &T) else { panic!("{mode:?}") };
            assert!(reason.contains("not on the read-only list: cargo"), "{reason}");
            assert!(!decide(&pager, &modes(mode), &T).allowed());
        }
        assert!(decide(&tree, &modes(LatchMode::Normal), &T).allowed());
        assert!(wake_hold(&tree, &T).is_some());
        assert!(wake_hold(&cls("Bash", json!({"command": "git status"})), &T).is_none());
        let Decision::Deny { code, reason } = decide(&pager, &modes(LatchMode::Normal), &T) else { panic!() };
        assert_eq!(code, codes::CONSENT_REQUIRED);
        assert!(reason.contains("--summary opaque:opaque_option --risk medium"), "{reason}");
    }

    #[test]
    fn normal_mode_needs_a_confirmed_token_for_irreversible_calls() {
        let rm = cls("Bash", json!({"command": "rm -rf build"}));
        let Decision::Deny { code, reason } = decide(&rm, &modes(LatchMode::Normal), &T) else { panic!() };
        assert_eq!(code, codes::CONSENT_REQUIRED);
        assert!(
            reason.contains("`/opt/k/bin/memory-latch consent request --workspace /w --action-file /w/.a/x.json --summary delete:rm_recursive_force --risk medium --session-id s1 --data-dir /d`"),
            "{reason}"
        );
        let ok = Modes { consent_confirmed: true, ..modes(LatchMode::Normal) };
        assert!(decide(&rm, &ok, &T).allowed());
        // without a latch, irreversible calls keep today's behaviour
        assert!(decide(&rm, &modes(LatchMode::Absent), &T).allowed());
    }

    /// The consent command names the session's journal only with both a
    /// session id and a data dir; with either one missing it names neither.
    #[test]
    fn the_consent_command_names_the_journal_only_with_both_parts() {
        let rm = cls("Bash", json!({"command": "rm -rf build"}));
        let want = "/opt/k/bin/memory-latch consent request --workspace /w --action-file /w/.a/x.json --summary delete:rm_recursive_force --risk medium";
        for (session_id, data_dir) in [("", "/d"), ("s1", ""), ("", "")] {
            assert_eq!(consent_command(&rm, &ConsentTarget { session_id, data_dir, ..T }), want, "{session_id:?} {data_dir:?}");
        }
        assert_eq!(consent_command(&rm, &T), format!("{want} --session-id s1 --data-dir /d"));
    }

    /// Every command a deny reason names (between backticks) is one the
    /// command guard accepts as a helper command of this root.
    #[test]
    fn every_command_a_deny_reason_names_passes_the_command_guard() {
        let dir = tempfile_dir();
        let bin = dir.display().to_string();
        let helpers = kijito_protocol::command::HelperDir::new(&dir).unwrap();
        let target =
            ConsentTarget { helper_dir: &bin, workspace: "/w", action_file: "/w/actions/sha256-x.json", session_id: "s1", data_dir: "/d" };
        let mut seen = 0;
        for (line, latch, frozen) in [
            ("rm -rf build", LatchMode::Normal, false),
            ("git push --force", LatchMode::Normal, false),
            ("cast send 0x1 --value 1", LatchMode::Normal, false),
            ("psql -c 'drop table t'", LatchMode::Normal, false),
            ("touch a", LatchMode::SilentWitness, false),
            ("touch a", LatchMode::Degraded, false),
            ("touch a", LatchMode::OneStepWithoutStep, false),
            ("/opt/k/bin/pointer-publish --pointer-id 1", LatchMode::Absent, true),
        ] {
            let c = cls("Bash", json!({ "command": line }));
            let Decision::Deny { reason, .. } =
                decide(&c, &Modes { latch, wake: Wake::Clear, qa_frozen: frozen, consent_confirmed: false }, &target)
            else {
                panic!("{line} allowed in {latch:?}")
            };
            let cmds: Vec<&str> = reason.split('`').skip(1).step_by(2).collect();
            assert!(!cmds.is_empty(), "{reason}");
            for cmd in cmds {
                let cmd = cmd.replace(" TEXT", " next");
                let v = kijito_protocol::command::guard_line(&cmd, Some(&helpers));
                assert!(matches!(v, kijito_protocol::command::Verdict::Helper(_)), "{cmd}: {v:?}");
                seen += 1;
            }
        }
        assert_eq!(seen, 8);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    fn tempfile_dir() -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("kijito-policy-test-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        d.canonicalize().unwrap()
    }

    #[test]
    fn tripwires_and_freeze() {
        let tmux = cls("Bash", json!({"command": "tmux send-keys -t 0 y Enter"}));
        for m in [LatchMode::Absent, LatchMode::Normal] {
            let d = decide(&tmux, &Modes { consent_confirmed: true, ..modes(m) }, &T);
            assert_eq!(d.code(), Some(crate::classify::tripwires::TERMINAL_INPUT));
        }
        let upd = cls("mcp__kijito__kijito_update", json!({"id": 1}));
        let frozen = Modes { qa_frozen: true, ..modes(LatchMode::Absent) };
        assert_eq!(decide(&upd, &frozen, &T).code(), Some(codes::QA_FROZEN));
        let publish = cls("Bash", json!({"command": "/opt/k/bin/pointer-publish --pointer-id 1"}));
        assert_eq!(decide(&publish, &frozen, &T).code(), Some(codes::QA_FROZEN));
        assert!(decide(&upd, &modes(LatchMode::Absent), &T).allowed());
    }

    /// The wake hold's place in the order: after the tripwires and the
    /// halting modes, before the freeze and consent; only calls the halting
    /// modes would deny wait, and the reason names the exact wake command.
    #[test]
    fn a_pending_wake_holds_after_the_halting_modes_and_before_the_freeze() {
        let pending = |latch| Modes { wake: Wake::Pending, ..modes(latch) };
        let write = cls("Write", json!({"file_path": "/w/src/a.rs", "content": "x"}));
        let Decision::Deny { code, reason } = decide(&write, &pending(LatchMode::Normal), &T) else { panic!() };
        assert_eq!(code, codes::WAKE_PENDING);
        assert!(reason.contains("run `/opt/k/bin/wake-check --live --workspace /w --data-dir /d`"), "{reason}");
        assert_eq!(decide(&write, &pending(LatchMode::Absent), &T).code(), Some(codes::WAKE_PENDING));
        for (latch, code) in [
            (LatchMode::SilentWitness, codes::SILENT_WITNESS),
            (LatchMode::Degraded, codes::DEGRADED),
            (LatchMode::OneStepWithoutStep, codes::ONE_STEP_NO_STEP),
            (LatchMode::GovernanceInvalid, codes::GOVERNANCE_INVALID),
        ] {
            assert_eq!(decide(&write, &pending(latch), &T).code(), Some(code));
        }
        let tmux = cls("Bash", json!({"command": "tmux send-keys -t 0 y Enter"}));
        assert_eq!(decide(&tmux, &pending(LatchMode::Normal), &T).code(), Some(crate::classify::tripwires::TERMINAL_INPUT));
        let rm = cls("Bash", json!({"command": "rm -rf build"}));
        assert_eq!(decide(&rm, &pending(LatchMode::Normal), &T).code(), Some(codes::WAKE_PENDING));
        let confirmed = Modes { consent_confirmed: true, ..pending(LatchMode::Normal) };
        assert_eq!(decide(&rm, &confirmed, &T).code(), Some(codes::WAKE_PENDING));
        let upd = cls("mcp__kijito__kijito_update", json!({"id": 1}));
        let frozen = Modes { qa_frozen: true, ..modes(LatchMode::Normal) };
        assert_eq!(decide(&upd, &frozen, &T).code(), Some(codes::QA_FROZEN));
        assert_eq!(decide(&upd, &Modes { wake: Wake::Pending, ..frozen }, &T).code(), Some(codes::WAKE_PENDING));
        assert!(decide(&cls("Bash", json!({"command": "git status"})), &pending(LatchMode::Normal), &T).allowed());
        assert!(decide(&write, &Modes { wake: Wake::Cautious, ..modes(LatchMode::Normal) }, &T).allowed());
    }

    /// A cautious wake judges every call at least high risk: the consent
    /// request names `--risk high`, and [`Wake::apply`] raises the same.
    #[test]
    fn a_cautious_wake_raises_the_risk_of_the_consent_request() {
        let rm = cls("Bash", json!({"command": "rm -rf build"}));
        let Decision::Deny { reason, .. } = decide(&rm, &modes(LatchMode::Normal), &T) else { panic!() };
        assert!(reason.contains("--risk medium"), "{reason}");
        let cautious = Modes { wake: Wake::Cautious, ..modes(LatchMode::Normal) };
        let Decision::Deny { code, reason } = decide(&rm, &cautious, &T) else { panic!() };
        assert_eq!(code, codes::CONSENT_REQUIRED);
        assert!(reason.contains("--summary delete:rm_recursive_force --risk high"), "{reason}");
        let mut raised = rm.clone();
        Wake::Pending.apply(&mut raised);
        Wake::Clear.apply(&mut raised);
        assert_eq!(raised.risk(), rm.risk());
        Wake::Cautious.apply(&mut raised);
        assert_eq!(raised.risk(), crate::classify::Risk::High);
    }

    #[test]
    fn only_a_consent_denial_needs_consent() {
        let rm = cls("Bash", json!({"command": "rm -rf build"}));
        assert!(decide(&rm, &modes(LatchMode::Normal), &T).needs_consent());
        assert!(!decide(&rm, &modes(LatchMode::SilentWitness), &T).needs_consent());
        assert!(!decide(&rm, &modes(LatchMode::Absent), &T).needs_consent());
        assert!(!Decision::Allow.needs_consent());
    }

    /// An invalid governance file halts like the other halting modes: a
    /// write is denied with its own code, a read and a helper command pass.
    #[test]
    fn an_invalid_governance_file_halts_writes_and_passes_reads() {
        let m = modes(LatchMode::GovernanceInvalid);
        let write = cls("Write", json!({"file_path": "/w/src/a.rs", "content": "x"}));
        let Decision::Deny { code, reason } = decide(&write, &m, &T) else { panic!() };
        assert_eq!(code, codes::GOVERNANCE_INVALID);
        assert!(reason.contains("`/opt/k/bin/memory-latch status --workspace /w` names the problem"), "{reason}");
        assert!(decide(&cls("Bash", json!({"command": "git status"})), &m, &T).allowed());
        assert!(decide(&cls("Bash", json!({"command": "/opt/k/bin/memory-latch status"})), &m, &T).allowed());
    }

    #[test]
    fn action_hash_is_of_the_canonical_bytes() {
        let input = json!({"command": "rm -rf build", "description": "clean"});
        assert_eq!(
            action_bytes("Bash", &input),
            b"{\"tool_name\":\"Bash\",\"tool_input\":{\"command\":\"rm -rf build\",\"description\":\"clean\"}}\n".to_vec()
        );
        assert_ne!(action_hash("Bash", &input), action_hash("Bash", &json!({"command": "rm -rf build2"})));
    }
}
