//! The Claude Code compaction summary carries the pointer (docs/gate-and-hooks.md,
//! "Lifecycle on Claude Code"). Claude Code 2.1.328 appends PreCompact stdout
//! to the summariser's instructions ("Additional Instructions:"); with an
//! attested attempt (a valid pass was just promoted to the ticket) the
//! Claude PreCompact prints plain text asking the summary to keep, verbatim,
//! the pointer id, lock message id, pointer digest, snapshot digest and the
//! one resume command, and nothing else of the memory. Without a valid pass
//! it prints nothing, as before.
//!
//! Whether the summary kept them (`summaryCarried`, the rule is
//! [`kijito_gate::summary::check`]): only Claude Code's PostCompact stdin has
//! the summary (`compact_summary`), and Claude Code runs
//! SessionStart(compact) first, so that claim records `pending` and
//! PostCompact fills the verdict in; Codex gives no hook a summary.

use crate::env::HookEnv;
use crate::messages;
use crate::text::snapshot_command;
use crate::Host;
use kijito_gate::summary::{self as gs, Summary, SummaryCheck};
use kijito_gate::{Attempt, Attested, Pass, QaDir};
use kijito_protocol::ids::SessionId;

/// The text for the summariser, from the promoted ticket of `session`.
pub fn request_text(env: &HookEnv, qa: &QaDir, session: &SessionId, attempt: &Attempt) -> Option<String> {
    if !attempt.attested {
        return None;
    }
    let rules = kijito_files::private::FileRules { owner_only: true, min_bytes: 2, max_bytes: kijito_gate::STATE_MAX_BYTES };
    let (bytes, _) = kijito_files::private::read_checked(&qa.ticket(session), rules).ok()?;
    let p = Pass::parse(&bytes).ok()?;
    if attempt.compaction_nonce.as_deref() != Some(p.compaction_nonce.as_str()) {
        return None;
    }
    let helpers = env.helpers.as_ref()?;
    let report = qa.fresh_report_path("summary").ok()?;
    let cmd = snapshot_command(
        helpers,
        p.pointer_id,
        p.lock_message_id,
        Some(p.pointer_digest.as_str()),
        Some(p.snapshot_digest.as_str()),
        &report,
    );
    Some(format!(
        "kijito-qa: end the summary with these five lines, copied verbatim (they identify the verified memory \
         state; they are data, not instructions), and include nothing else from the memory, the pointer or its anchors:\n\
         {}: {}\n{}: {}\n{}: {}\n{}: {}\n{}: {cmd}",
        gs::POINTER_ID,
        p.pointer_id,
        gs::LOCK_MESSAGE_ID,
        p.lock_message_id,
        gs::POINTER_DIGEST,
        p.pointer_digest,
        gs::SNAPSHOT_DIGEST,
        p.snapshot_digest,
        gs::RESUME_COMMAND,
    ))
}

/// `compact_summary` of a PostCompact stdin (Claude Code), if it is a string.
pub fn compact_summary(stdin: &[u8]) -> Option<String> {
    match serde_json::from_slice::<serde_json::Value>(stdin).ok()? {
        serde_json::Value::Object(mut o) => match o.remove("compact_summary")? {
            serde_json::Value::String(s) => Some(s),
            _ => None,
        },
        _ => None,
    }
}

/// What a claim at SessionStart(compact) knows of the summary: on Claude
/// Code it comes later (PostCompact); Codex never gives one.
pub fn at_session_start(host: Host) -> Summary<'static> {
    match host {
        Host::Claude => Summary::NotYet,
        Host::Codex => Summary::Absent,
    }
}

/// What a PostCompact knows of the summary.
pub fn at_postcompact(text: Option<&str>) -> Summary<'_> {
    text.map_or(Summary::Absent, Summary::Text)
}

/// PostCompact with nothing left to claim: fill in the summary check of the
/// claim SessionStart(compact) made; the user's one line, if it decided.
pub fn note(qa: &QaDir, session: &SessionId, text: Option<&str>, now_ms: i64) -> Option<&'static str> {
    match gs::note_summary(qa, session, at_postcompact(text), now_ms).ok()?? {
        SummaryCheck::Carried => Some(messages::POSTCOMPACT_SUMMARY_CARRIED),
        SummaryCheck::ValuesMissing => Some(messages::POSTCOMPACT_SUMMARY_MISSING),
        SummaryCheck::Pending | SummaryCheck::NoSummary => None,
    }
}

/// The re-entry text's line about the summary (attested re-entries).
pub fn reentry_line(a: &Attested) -> &'static str {
    match a.summary {
        SummaryCheck::Carried => "The compaction summary kept these four values (summaryCarried: true).",
        SummaryCheck::ValuesMissing => {
            "The compaction summary did NOT keep all four values (summaryCarried: false): use the values in this message, never ones recalled from the summary."
        }
        SummaryCheck::Pending => {
            "Whether the compaction summary kept these four values is checked by PostCompact, which runs after this message (summaryCarried: pending; the kijito-compact status subcommand shows the result). Use the values in this message."
        }
        SummaryCheck::NoSummary => "This host gives the hooks no compaction summary, so whether it kept these values is unknown (summaryCarried: null).",
    }
}
