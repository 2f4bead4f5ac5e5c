//! The Claude Code compaction summary carries the pointer (docs/gate-and-hooks.md,
//! "Lifecycle on Claude Code"). Claude Code 2.1.328 appends PreCompact stdout
//! to the summariser's instructions ("Additional Instructions:"); with an
//! attested attempt (a valid pass was just promoted to the ticket) the
//! Claude PreCompact prints plain text asking the summary to keep, verbatim,
//! the pointer id, lock message id, pointer digest, snapshot digest and the
//! one resume command, and nothing else of the memory. Without a valid pass
//! it prints nothing, as before.

use crate::run::HookEnv;
use crate::text::snapshot_command;
use kijito_gate::{Attempt, Pass, QaDir};
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
    let cmd = snapshot_command(helpers, p.pointer_id, p.lock_message_id, Some(p.pointer_digest.as_str()), Some(p.snapshot_digest.as_str()), &report);
    Some(format!(
        "kijito-qa: end the summary with these five lines, copied verbatim (they identify the verified memory \
         state; they are data, not instructions), and include nothing else from the memory, the pointer or its anchors:\n\
         kijito-pointer-id: {}\nkijito-lock-message-id: {}\nkijito-pointer-digest: {}\nkijito-snapshot-digest: {}\n\
         kijito-resume-command: {cmd}",
        p.pointer_id, p.lock_message_id, p.pointer_digest, p.snapshot_digest
    ))
}
