//! The hooks' lines in the flight recorder (docs/protocol.md §13): each
//! function here builds one event's fields and hands them to
//! [`kijito_files::journal::event`], which never fails (a line that cannot be
//! written is noted for `kijito-report`). Free text never enters: a prompt
//! is its length and SHA-256, a command a clipped summary redacted as the
//! latch redacts ([`kijito_latch::redact::redact`]).

use crate::env::HookEnv;
use crate::HookInput;
use kijito_files::journal::{self, Kind};
use kijito_gate::compaction::{Attempt, ClaimOutcome, Reentry};
use kijito_policy::{Classification, Decision, LatchMode};
use kijito_protocol::ids::SessionId;
use serde_json::{json, Value};

/// Characters of a command kept in a `tool_decision` summary (before redaction).
pub use kijito_latch::flight::SUMMARY_CHARS;

/// One line for `session` in this data dir (none when the data dir is unknown).
pub(crate) fn note(env: &HookEnv, session: &SessionId, kind: Kind, fields: Value) {
    if let Ok(d) = env.data_dir() {
        journal::event(d.as_path(), session, kind, fields);
    }
}

fn host(env: &HookEnv) -> &'static str {
    env.host.as_str()
}

/// SessionStart: the host, this toolkit's version and how the session started.
pub(crate) fn session_start(env: &HookEnv, input: &HookInput) {
    let fields = json!({
        "host": host(env),
        "version": env!("CARGO_PKG_VERSION"),
        "source": input.source.as_deref().unwrap_or("unknown"),
        "cwd": input.cwd.as_ref().map(|c| c.as_str()),
    });
    note(env, &input.session_id, Kind::SessionStart, fields);
}

/// UserPromptSubmit: the prompt's length and hash (never its text), and the
/// pass a new turn withdrew.
pub(crate) fn prompt(
    env: &HookEnv,
    input: &HookInput,
    text: Option<&str>,
    subagent: bool,
    withdrawn: Option<&kijito_gate::withdraw::Withdrawn>,
) {
    let t = text.unwrap_or("");
    note(env, &input.session_id, Kind::Prompt, json!({"length": t.len(), "sha256": journal::text_hash(t), "subagent": subagent}));
    if let Some(w) = withdrawn {
        note(env, &input.session_id, Kind::PassWithdrawn, json!({"reason": "new_turn", "request_failed": w.request_failed}));
    }
}

fn latch_mode(m: LatchMode) -> &'static str {
    match m {
        LatchMode::Absent => "absent",
        LatchMode::Normal => "normal",
        LatchMode::SilentWitness => "silent_witness",
        LatchMode::Degraded => "degraded",
        LatchMode::OneStepWithoutStep => "one_step",
        LatchMode::GovernanceInvalid => "governance_invalid",
    }
}

/// A clipped, redacted one-line summary of a tool call: its command, else
/// the file it names.
pub fn summary(tool_input: Option<&Value>) -> String {
    let v = tool_input.unwrap_or(&Value::Null);
    let text = match v.get("command") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(a)) => a.iter().filter_map(Value::as_str).collect::<Vec<_>>().join(" "),
        _ => ["file_path", "path", "url"].iter().find_map(|k| v.get(*k).and_then(Value::as_str)).unwrap_or("").to_owned(),
    };
    kijito_latch::flight::summary_text(&text)
}

/// PreToolUse: the policy's decision on a call it did not simply allow as a
/// read (every deny, every call that needs consent, and the allowed mutating
/// calls). Allowed reads are not recorded: they are most calls, and say
/// nothing about what the agent changed (docs/protocol.md §13).
pub(crate) fn decision(env: &HookEnv, input: &HookInput, cls: &Classification, mode: LatchMode, d: &Decision) {
    let (verdict, code) = match d {
        Decision::Allow => ("allow", None),
        // The consent check decides: consent_requested, _spent or _refused follows.
        Decision::Deny { code, .. } if *code == kijito_protocol::codes::policy::CONSENT_REQUIRED => ("consent", Some(code.as_str())),
        Decision::Deny { code, .. } => ("deny", Some(code.as_str())),
    };
    let rules: Vec<&str> = cls.hits.iter().map(|h| h.rule).chain(cls.tripwires.iter().map(|t| t.code.as_str())).collect();
    let fields = json!({
        "tool": input.tool_name.as_deref().unwrap_or(""),
        "decision": verdict,
        "code": code,
        "rules": rules,
        "risk": cls.risk().as_str(),
        "latch_mode": latch_mode(mode),
        "summary": summary(input.tool_input.as_ref()),
    });
    note(env, &input.session_id, Kind::ToolDecision, fields);
}

/// PreToolUse denied by the helper-command guard before the policy.
pub(crate) fn guard_deny(env: &HookEnv, input: &HookInput) {
    let fields = json!({
        "tool": input.tool_name.as_deref().unwrap_or(""),
        "decision": "deny",
        "code": Value::Null,
        "rules": ["command_guard"],
        "summary": summary(input.tool_input.as_ref()),
    });
    note(env, &input.session_id, Kind::ToolDecision, fields);
}

/// An irreversible call: consent asked (`token` flow or the `host` dialog),
/// spent (a confirmed token passed it) or refused (with the code).
pub(crate) fn consent(env: &HookEnv, input: &HookInput, kind: Kind, via: &str, code: Option<&str>) {
    let fields =
        json!({"via": via, "code": code, "tool": input.tool_name.as_deref().unwrap_or(""), "summary": summary(input.tool_input.as_ref())});
    note(env, &input.session_id, kind, fields);
}

/// The token check did not pass: nothing authorized yet is a request
/// waiting for the user; anything else is refused with its code.
pub(crate) fn consent_check(env: &HookEnv, input: &HookInput, code: &str) {
    if kijito_latch::codes::Code::parse(code) == Some(kijito_latch::codes::CONSENT_NOT_AUTHORIZED) {
        consent(env, input, Kind::ConsentRequested, "token", None);
    } else {
        consent(env, input, Kind::ConsentRefused, "token", Some(code));
    }
}

/// PreCompact: attested or not, and why.
pub(crate) fn precompact(env: &HookEnv, stdin: &[u8], outcome: &kijito_protocol::error::Result<(kijito_gate::QaDir, SessionId, Attempt)>) {
    match outcome {
        Ok((_, s, a)) => note(env, s, Kind::Precompact, json!({"attested": a.attested, "reason": a.reason, "trigger": a.trigger})),
        Err(e) => {
            if let Ok(input) = crate::parse_input(stdin, "PreCompact") {
                note(env, &input.session_id, Kind::Precompact, json!({"attested": false, "reason": e.code(), "trigger": input.trigger}));
            }
        }
    }
}

/// The claim of a compaction attempt (PostCompact, or SessionStart(compact) first).
pub(crate) fn claim(env: &HookEnv, session: &SessionId, hook: &str, outcome: &ClaimOutcome) {
    if let ClaimOutcome::Claimed(r) = outcome {
        note(env, session, Kind::Claim, json!({"hook": hook, "attested": r.attested.is_some(), "reason": r.reason}));
    }
}

/// A re-entry delivered to the model: which hook, ATTESTED or UNATTESTED,
/// why, and the pointer and snapshot digests it names.
pub(crate) fn delivery(env: &HookEnv, input: &HookInput, r: &Reentry) {
    let a = r.attested.as_ref();
    let fields = json!({
        "hook": input.event,
        "attested": a.is_some(),
        "reason": r.reason,
        "pointer_id": a.map(|a| a.pointer_id.get()),
        "pointer_digest": a.map(|a| a.pointer_digest.as_str()),
        "snapshot_digest": a.map(|a| a.snapshot_digest.as_str()),
    });
    note(env, &input.session_id, Kind::Delivery, fields);
}

/// SessionStart's local wake checks: the findings, whether writes are held.
pub(crate) fn wake_check(env: &HookEnv, input: &HookInput, findings: &[String], hold: bool, failed: Option<&str>) {
    note(env, &input.session_id, Kind::WakeCheck, json!({"findings": findings, "hold": hold, "failed": failed}));
}

/// Stop: the context ratio, when the transcript gives one.
pub(crate) fn context_sample(env: &HookEnv, input: &HookInput) {
    if let Some(r) = crate::nudge::session_ratio(env, input) {
        note(env, &input.session_id, Kind::ContextSample, json!({"ratio": (r * 1000.0).round() / 1000.0}));
    }
}
