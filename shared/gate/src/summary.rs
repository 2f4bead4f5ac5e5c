//! Whether the compaction summary carried the pointer (docs/protocol.md §7,
//! "Summary check"). With an attested attempt the Claude Code PreCompact asks
//! the summariser to end the summary with the four labelled lines below; the
//! claim record says whether they survived (`summaryCarried`).
//!
//! Where the summary is visible, as measured on the real hosts (Claude Code
//! 2.1.328, Codex 0.169.0, docs/gate-and-hooks.md): only Claude Code's
//! PostCompact stdin has it (`compact_summary`). Claude Code runs
//! SessionStart(compact) — which claims and delivers the re-entry — BEFORE
//! PostCompact, and its transcript holds no summary at SessionStart(compact)
//! or PostCompact time (not even after polling 3 s inside the hook): so that
//! claim records `pending`, and PostCompact fills the verdict in with
//! [`note_summary`]. Codex hands no hook a summary: `no_summary`.
//!
//! The verdict only reports; it authorises nothing (a summary is model
//! output and may be forged by the conversation it summarises).

use crate::compaction::{Attested, Reentry};
use crate::{rename_claim, QaDir, ATTEMPT_MAX_AGE_MS};
use kijito_files::private;
use kijito_protocol::error::Error;
use kijito_protocol::error::Result;
use kijito_protocol::ids::SessionId;

/// Stable codes of this module (registered in the workspace by `tests/it/architecture.rs`).
pub mod codes {
    kijito_protocol::codes! {
        /// The summary holds all four values (`summaryCarried: true`).
        CARRIED Carried = "carried",
        /// The summary lacks at least one value (`summaryCarried: false`).
        VALUES_MISSING ValuesMissing = "values_missing",
        /// Claimed before the host handed any hook the summary (Claude Code:
        /// SessionStart(compact) runs before PostCompact); PostCompact fills it in.
        PENDING Pending = "pending",
        /// The host gave no hook the summary (Codex 0.169.0 never does).
        NO_SUMMARY NoSummary = "no_summary",
        /// Unattested: nothing was asked to carry.
        UNATTESTED Unattested = "unattested",
    }
}

/// The labels of the four lines the summary is asked to keep verbatim.
pub const POINTER_ID: &str = "kijito-pointer-id";
pub const LOCK_MESSAGE_ID: &str = "kijito-lock-message-id";
pub const POINTER_DIGEST: &str = "kijito-pointer-digest";
pub const SNAPSHOT_DIGEST: &str = "kijito-snapshot-digest";
/// The label of the resume command line (asked for, not checked: the
/// command names a fresh report path, so it is not a stable value).
pub const RESUME_COMMAND: &str = "kijito-resume-command";

/// Largest summary examined (a hook stdin is at most 1 MiB anyway).
pub const MAX_SUMMARY_BYTES: usize = 1024 * 1024;

/// What the claim knew about the summary (attested claims only).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SummaryCheck {
    /// All four values, each as its labelled line.
    Carried,
    /// A summary without at least one of them.
    ValuesMissing,
    /// Claimed before any hook saw the summary; PostCompact decides.
    Pending,
    /// The host gave no summary.
    NoSummary,
}

impl SummaryCheck {
    /// `summaryCarried`: `true`, `false`, or `None` (null) when unknown.
    pub fn carried(self) -> Option<bool> {
        match self {
            SummaryCheck::Carried => Some(true),
            SummaryCheck::ValuesMissing => Some(false),
            SummaryCheck::Pending | SummaryCheck::NoSummary => None,
        }
    }

    /// `summaryCheck`.
    pub fn code(self) -> codes::Code {
        match self {
            SummaryCheck::Carried => codes::CARRIED,
            SummaryCheck::ValuesMissing => codes::VALUES_MISSING,
            SummaryCheck::Pending => codes::PENDING,
            SummaryCheck::NoSummary => codes::NO_SUMMARY,
        }
    }

    /// From the record's two fields; they must agree.
    pub fn parse(carried: &serde_json::Value, code: &str) -> Option<SummaryCheck> {
        let c = [SummaryCheck::Carried, SummaryCheck::ValuesMissing, SummaryCheck::Pending, SummaryCheck::NoSummary]
            .into_iter()
            .find(|c| Some(c.code()) == codes::Code::parse(code))?;
        let expected = match c.carried() {
            Some(b) => serde_json::Value::Bool(b),
            None => serde_json::Value::Null,
        };
        (carried == &expected).then_some(c)
    }
}

/// What a hook has of the summary when it claims.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Summary<'a> {
    /// This host shows the summary only to a later hook (Claude Code's
    /// SessionStart(compact)).
    NotYet,
    /// This host gives no summary (Codex; a Claude PostCompact without
    /// `compact_summary`).
    Absent,
    /// The summary text (`compact_summary`).
    Text(&'a str),
}

/// The part of a Claude Code summary the resumed model keeps: Claude Code
/// drops the `<analysis>` block and keeps the `<summary>` block, so values
/// only in the analysis did not survive. Without a `<summary>` tag, all of it.
fn kept_part(text: &str) -> &str {
    match text.find("<summary>") {
        Some(start) => {
            let rest = &text[start + "<summary>".len()..];
            match rest.rfind("</summary>") {
                Some(end) => &rest[..end],
                None => rest,
            }
        }
        None => text,
    }
}

/// `label: value` occurs with nothing alphanumeric right after the value
/// (so pointer 2181 is not found inside 21813).
fn has_line(text: &str, label: &str, value: &str) -> bool {
    let needle = format!("{label}: {value}");
    text.match_indices(&needle).any(|(i, _)| !text[i + needle.len()..].chars().next().is_some_and(|c| c.is_ascii_alphanumeric()))
}

/// The verdict for an attested claim, from what the hook has of the summary.
pub fn check(summary: Summary<'_>, a: &Attested) -> SummaryCheck {
    let text = match summary {
        Summary::NotYet => return SummaryCheck::Pending,
        Summary::Absent => return SummaryCheck::NoSummary,
        Summary::Text(t) if t.len() > MAX_SUMMARY_BYTES => return SummaryCheck::ValuesMissing,
        Summary::Text(t) => kept_part(t),
    };
    let all = has_line(text, POINTER_ID, &a.pointer_id.to_string())
        && has_line(text, LOCK_MESSAGE_ID, &a.lock_message_id.to_string())
        && has_line(text, POINTER_DIGEST, a.pointer_digest.as_str())
        && has_line(text, SNAPSHOT_DIGEST, a.snapshot_digest.as_str());
    if all {
        SummaryCheck::Carried
    } else {
        SummaryCheck::ValuesMissing
    }
}

/// The private name a pending re-entry record is moved to while PostCompact
/// adds the verdict (so a concurrent delivery never sees half of it).
pub(crate) fn noting_path(qa: &QaDir, s: &SessionId) -> std::path::PathBuf {
    qa.path().as_path().join(format!("compaction-reentry-noting.{s}.json"))
}

/// Move the record back for delivery by link-then-unlink: a record that a
/// newer claim wrote meanwhile is never overwritten (ours is then superseded
/// and dropped).
pub(crate) fn put_back(noting: &std::path::Path, reentry: &std::path::Path) -> Result<()> {
    put_back_with(noting, reentry, &|| {})
}

/// [`put_back`] with `linked` called between the link and the unlink (a
/// test removes the name there, as a concurrent `invalidate` could).
fn put_back_with(noting: &std::path::Path, reentry: &std::path::Path, linked: &dyn Fn()) -> Result<()> {
    match std::fs::hard_link(noting, reentry) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(Error::new(crate::codes::STATE_RENAME_FAILED, format!("cannot put {} back: {e}", noting.display()))),
    }
    linked();
    // Unlinking the name never follows it (even if it were a symlink).
    match std::fs::remove_file(noting) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(Error::new(crate::codes::STATE_RENAME_FAILED, format!("cannot remove {}: {e}", noting.display())))
        }
        _ => private::fsync_parent(reentry),
    }
}

/// A record of this compaction whose summary check is still pending, with
/// the verdict filled in; `None` when the record is not one.
fn updated(bytes: &[u8], s: &SessionId, nonce: &str, now_ms: i64, summary: Summary<'_>) -> Option<Reentry> {
    let mut r = Reentry::parse(bytes).ok()?;
    let fresh = &r.session_id == s && r.claimed_at_ms <= now_ms && now_ms - r.claimed_at_ms <= ATTEMPT_MAX_AGE_MS;
    let a = r.attested.as_mut().filter(|a| fresh && a.compaction_nonce == nonce && a.summary == SummaryCheck::Pending)?;
    a.summary = check(summary, a);
    Some(r)
}

/// PostCompact after SessionStart(compact) already claimed (Claude Code):
/// fill in the summary verdict of this compaction's claim record, whether it
/// is still waiting for delivery or already delivered. Returns the verdict,
/// or `None` when there is no attested claim of this compaction with a
/// pending check (unattested, another compaction's, already decided).
pub fn note_summary(qa: &QaDir, s: &SessionId, summary: Summary<'_>, now_ms: i64) -> Result<Option<SummaryCheck>> {
    // Under the session's lock, as the claim and the delivery.
    let _lock = crate::compaction::lock_session(qa, s)?;
    // The claimed attempt names this compaction's nonce.
    let Some(attempt) = crate::state::read_optional(&qa.attempt_claimed(s))? else { return Ok(None) };
    let Ok(attempt) = crate::Attempt::parse(&attempt) else { return Ok(None) };
    let Some(nonce) = attempt.compaction_nonce.filter(|_| attempt.attested && &attempt.session_id == s) else { return Ok(None) };
    // Still waiting for delivery: take it exclusively, update, put it back.
    let noting = noting_path(qa, s);
    if rename_claim(&qa.reentry(s), &noting)? {
        let bytes = crate::read_state(&noting);
        let verdict = match bytes.ok().and_then(|b| updated(&b, s, &nonce, now_ms, summary)) {
            Some(r) => {
                private::write_atomic(&noting, r.to_value().to_string().as_bytes())?;
                r.attested.map(|a| a.summary)
            }
            None => None,
        };
        put_back(&noting, &qa.reentry(s))?;
        return Ok(verdict);
    }
    // Delivered: the record stays as audit evidence; only its verdict changes.
    let delivered = qa.reentry_delivered(s);
    let Some(bytes) = crate::state::read_optional(&delivered)? else { return Ok(None) };
    match updated(&bytes, s, &nonce, now_ms, summary) {
        Some(r) => {
            private::write_atomic(&delivered, r.to_value().to_string().as_bytes())?;
            Ok(r.attested.map(|a| a.summary))
        }
        None => Ok(None),
    }
}

/// The claim record of the compaction with this nonce (waiting or
/// delivered), for `kijito-compact status`.
pub fn record_for(qa: &QaDir, s: &SessionId, nonce: &str) -> Result<Option<Reentry>> {
    for path in [qa.reentry(s), qa.reentry_delivered(s), noting_path(qa, s)] {
        let Some(bytes) = crate::state::read_optional(&path)? else { continue };
        if let Ok(r) = Reentry::parse(&bytes) {
            if &r.session_id == s && r.attested.as_ref().is_some_and(|a| a.compaction_nonce == nonce) {
                return Ok(Some(r));
            }
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use kijito_protocol::ids::{Digest, MemoryId, MessageId};

    fn attested() -> Attested {
        Attested {
            pointer_id: MemoryId::new(21813).unwrap(),
            lock_message_id: MessageId::new(77).unwrap(),
            pointer_digest: Digest::parse(&"a".repeat(64)).unwrap(),
            snapshot_digest: Digest::parse(&"b".repeat(64)).unwrap(),
            compaction_nonce: "0123456789abcdef0123456789abcdef".into(),
            summary: SummaryCheck::Pending,
            boots_witnessed: None,
        }
    }

    fn lines(p: &str, l: &str, pd: &str, sd: &str) -> String {
        format!("{POINTER_ID}: {p}\n{LOCK_MESSAGE_ID}: {l}\n{POINTER_DIGEST}: {pd}\n{SNAPSHOT_DIGEST}: {sd}\n")
    }

    #[test]
    fn all_four_labelled_values_or_false() {
        let a = attested();
        let (pd, sd) = ("a".repeat(64), "b".repeat(64));
        let good = lines("21813", "77", &pd, &sd);
        assert_eq!(check(Summary::Text(&good), &a), SummaryCheck::Carried);
        assert_eq!(
            check(Summary::Text(&format!("<analysis>x</analysis>\n<summary>work\n- {}</summary>", good.replace('\n', "\n- "))), &a),
            SummaryCheck::Carried
        );
        for bad in [
            lines("2181", "77", &pd, &sd),   // a prefix of another id is not the id
            lines("218130", "77", &pd, &sd), // nor is a longer number
            lines("21813", "7", &pd, &sd),
            lines("21813", "77", &pd[..63], &sd), // a truncated digest
            lines("21813", "77", &pd, &sd.replace('b', "c")),
            good.replace(SNAPSHOT_DIGEST, "snapshot digest"), // unlabelled
            good.lines().take(3).collect::<Vec<_>>().join("\n"),
            String::new(),
        ] {
            assert_eq!(check(Summary::Text(&bad), &a), SummaryCheck::ValuesMissing, "{bad}");
        }
        // Values only in the analysis block: Claude Code drops it.
        let hidden = format!("<analysis>{good}</analysis>\n<summary>nothing here</summary>");
        assert_eq!(check(Summary::Text(&hidden), &a), SummaryCheck::ValuesMissing);
        assert_eq!(check(Summary::NotYet, &a), SummaryCheck::Pending);
        assert_eq!(check(Summary::Absent, &a), SummaryCheck::NoSummary);
        let huge = format!("{good}{}", "x".repeat(MAX_SUMMARY_BYTES));
        assert_eq!(check(Summary::Text(&huge), &a), SummaryCheck::ValuesMissing);
    }

    #[test]
    fn put_back_never_overwrites_a_newer_record() {
        let d = tempfile::tempdir().unwrap();
        let (noting, reentry) = (d.path().join("noting"), d.path().join("reentry"));
        std::fs::write(&noting, "old").unwrap();
        std::fs::write(&reentry, "newer").unwrap();
        put_back(&noting, &reentry).unwrap();
        assert_eq!(std::fs::read_to_string(&reentry).unwrap(), "newer");
        assert!(!noting.exists());
        std::fs::write(&noting, "mine").unwrap();
        std::fs::remove_file(&reentry).unwrap();
        put_back(&noting, &reentry).unwrap();
        assert_eq!(std::fs::read_to_string(&reentry).unwrap(), "mine");
        assert!(!noting.exists());
    }

    #[test]
    fn the_size_bound_and_the_summary_tag_edges() {
        let a = attested();
        let good = lines("21813", "77", &"a".repeat(64), &"b".repeat(64));
        assert_eq!(MAX_SUMMARY_BYTES, 1 << 20);
        // Exactly the bound is examined (and carries); one byte more is not.
        let at_bound = format!("{good}{}", "x".repeat(MAX_SUMMARY_BYTES - good.len()));
        assert_eq!(at_bound.len(), MAX_SUMMARY_BYTES);
        assert_eq!(check(Summary::Text(&at_bound), &a), SummaryCheck::Carried);
        assert_eq!(check(Summary::Text(&format!("{at_bound}x")), &a), SummaryCheck::ValuesMissing);
        // A summary tag at the very start, and values right after it.
        assert_eq!(kept_part("<summary>kept</summary>"), "kept");
        assert_eq!(check(Summary::Text(&format!("<summary>{good}</summary>")), &a), SummaryCheck::Carried);
        assert_eq!(kept_part("ab<summary>kept"), "kept");
        assert_eq!(kept_part("<analysis>a</analysis><summary>x</summary>y</summary>"), "x</summary>y");
        assert_eq!(kept_part("no tags"), "no tags");
    }

    #[test]
    fn put_back_reports_what_it_could_not_do() {
        let d = tempfile::tempdir().unwrap();
        let (noting, reentry) = (d.path().join("noting"), d.path().join("reentry"));
        // Nothing to put back: the link fails (not "already exists").
        let e = put_back(&noting, &reentry).unwrap_err();
        assert_eq!(e.code(), crate::codes::STATE_RENAME_FAILED.as_str());
        assert!(!reentry.exists());
        // The noting name is a directory and a newer record exists: the link
        // is skipped (already exists) and the unlink fails (not "not found").
        std::fs::create_dir(&noting).unwrap();
        std::fs::write(&reentry, "newer").unwrap();
        let e = put_back(&noting, &reentry).unwrap_err();
        assert_eq!(e.code(), crate::codes::STATE_RENAME_FAILED.as_str());
        assert_eq!(std::fs::read_to_string(&reentry).unwrap(), "newer");
        std::fs::remove_dir(&noting).unwrap();
        std::fs::remove_file(&reentry).unwrap();
        // The noting name vanished after the link (a concurrent removal):
        // the record is back, and that is not an error.
        std::fs::write(&noting, "mine").unwrap();
        put_back_with(&noting, &reentry, &|| std::fs::remove_file(&noting).unwrap()).unwrap();
        assert_eq!(std::fs::read_to_string(&reentry).unwrap(), "mine");
        assert!(!noting.exists());
    }

    #[test]
    fn fields_agree_or_do_not_parse() {
        use serde_json::json;
        for c in [SummaryCheck::Carried, SummaryCheck::ValuesMissing, SummaryCheck::Pending, SummaryCheck::NoSummary] {
            let v = c.carried().map(|b| json!(b)).unwrap_or(serde_json::Value::Null);
            assert_eq!(SummaryCheck::parse(&v, c.code().as_str()), Some(c));
        }
        assert_eq!(SummaryCheck::parse(&json!(true), codes::VALUES_MISSING.as_str()), None);
        assert_eq!(SummaryCheck::parse(&json!(null), codes::CARRIED.as_str()), None);
        assert_eq!(SummaryCheck::parse(&json!(false), codes::PENDING.as_str()), None);
        assert_eq!(SummaryCheck::parse(&json!(null), "maybe"), None);
    }
}
