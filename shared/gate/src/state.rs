//! The one home of the QA state files (docs/protocol.md §7): their names,
//! how one is read (owner-only, no symlink, bounded), how a directory entry is
//! classified, the `current-pointer.json` record (written by `record`, read by
//! wake-check) and the acceptance check of a pass. The gate, the hooks and
//! wake-check all go through here.

use crate::pass::{self, Pass};
use crate::STATE_MAX_BYTES;
use kijito_files::private::{self, FileRules};
use kijito_protocol::error::Result;
use kijito_protocol::ids::{AbsPath, Digest, MemoryId, MessageId, SessionId};
use serde_json::{json, Value};
use std::path::Path;

/// The name of the last recorded pointer state in `qa/`.
pub const CURRENT_POINTER: &str = "current-pointer.json";

/// The per-session state files of `qa/` (`<prefix><session>.json`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StateFile {
    Pass,
    Ticket,
    TicketConsumed,
    Attempt,
    AttemptClaimed,
    Reentry,
    /// A re-entry record whose text is being printed (renamed from
    /// `Reentry`; renamed to `ReentryDelivered` once the answer is out): one
    /// left behind was interrupted and is delivered again, UNATTESTED.
    ReentryDelivering,
    ReentryDelivered,
    /// The compaction adapters' pin of a session (`kijito_compact::trigger`).
    Pin,
    /// The last recorded turn state (`kijito_compact::trigger`).
    Turn,
    /// The compaction request of a pass (`kijito_compact::trigger`).
    Request,
    /// A pass withdrawn by a new turn, renamed (`withdraw`): the next
    /// PreCompact names the reason, then removes it.
    Withdrawn,
    /// The session's spent nonces (`withdraw`): a pass carrying one is refused.
    Spent,
}

impl StateFile {
    pub const ALL: [StateFile; 13] = [
        StateFile::Pass,
        StateFile::Ticket,
        StateFile::TicketConsumed,
        StateFile::Attempt,
        StateFile::AttemptClaimed,
        StateFile::Reentry,
        StateFile::ReentryDelivering,
        StateFile::ReentryDelivered,
        StateFile::Pin,
        StateFile::Turn,
        StateFile::Request,
        StateFile::Withdrawn,
        StateFile::Spent,
    ];

    /// The file name before the session id (ends with a dot).
    pub fn prefix(self) -> &'static str {
        match self {
            StateFile::Pass => "qa-pass.",
            StateFile::Ticket => "compaction-resume.",
            StateFile::TicketConsumed => "compaction-resume-consumed.",
            StateFile::Attempt => "compaction-attempt.",
            StateFile::AttemptClaimed => "compaction-attempt-claimed.",
            StateFile::Reentry => "compaction-reentry.",
            StateFile::ReentryDelivering => "compaction-reentry-delivering.",
            StateFile::ReentryDelivered => "compaction-reentry-delivered.",
            StateFile::Pin => "compact-pin.",
            StateFile::Turn => "compact-turn.",
            StateFile::Request => "compact-request.",
            StateFile::Withdrawn => "qa-pass-withdrawn.",
            StateFile::Spent => "qa-spent.",
        }
    }

    /// The file name for a session.
    pub fn name(self, s: &SessionId) -> String {
        format!("{}{s}.json", self.prefix())
    }

    /// Which state file a directory entry is, with its (valid) session id.
    pub fn classify(name: &str) -> Option<(StateFile, SessionId)> {
        StateFile::ALL.into_iter().find_map(|kind| {
            let s = name.strip_prefix(kind.prefix())?.strip_suffix(".json")?;
            SessionId::parse(s).ok().map(|s| (kind, s))
        })
    }
}

/// What a gate state file must be: owner-only, at least 2 and at most [`STATE_MAX_BYTES`] bytes.
pub const STATE_RULES: FileRules = FileRules { owner_only: true, min_bytes: 2, max_bytes: STATE_MAX_BYTES };

/// Read a gate state file (owner-only, no symlink, bounded).
pub fn read_state(path: &Path) -> Result<Vec<u8>> {
    private::read_checked(path, STATE_RULES).map(|(b, _)| b)
}

/// [`read_state`] of a file that may be missing (`Ok(None)`; any other
/// entry, a symlink too, is read and refused as `read_state` refuses it).
pub fn read_optional(path: &Path) -> Result<Option<Vec<u8>>> {
    match std::fs::symlink_metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        _ => read_state(path).map(Some),
    }
}

/// The read failed because the file is not safely ours (a symlink, not a
/// regular file, not owned, too open), as opposed to missing or malformed.
pub fn is_insecure(code: impl AsRef<str>) -> bool {
    matches!(
        private::codes::Code::parse(code.as_ref()),
        Some(private::codes::SYMLINK | private::codes::NOT_REGULAR | private::codes::NOT_OWNED | private::codes::PERMISSIONS)
    )
}

/// Read a pass and check it would be accepted now: age and session always,
/// the transcript binding when a transcript path is given, and that its
/// nonce is not spent (the `qa-spent.<s>.json` beside it, [`crate::withdraw`],
/// and the ledger outside the data dir, [`crate::ledger`]).
pub fn accepted_pass(path: &Path, session: &SessionId, transcript: Option<&AbsPath>, now_ms: i64) -> Result<Pass> {
    accepted_pass_in(path, kijito_files::datadir::heads_dir().as_deref(), session, transcript, now_ms)
}

/// [`accepted_pass`] with the spent-nonce ledger in `ledger_dir` (a
/// [`crate::QaDir`]'s; the environment's state directory unless a test set
/// another).
pub(crate) fn accepted_pass_in(
    path: &Path,
    ledger_dir: Option<&Path>,
    session: &SessionId,
    transcript: Option<&AbsPath>,
    now_ms: i64,
) -> Result<Pass> {
    let p = read_state(path).and_then(|b| Pass::parse(&b))?;
    crate::withdraw::check_unspent_at(&path.with_file_name(StateFile::Spent.name(session)), session, &p.compaction_nonce)?;
    crate::ledger::check_pass_at(path, ledger_dir, session, &p.compaction_nonce)?;
    match transcript {
        Some(t) => pass::transcript_identity(t).and_then(|id| p.check_valid(session, now_ms, &id))?,
        None => p.check_age(session, now_ms)?,
    }
    Ok(p)
}

/// A well-formed `current-pointer.json` (schemaVersion 2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recorded {
    pub pointer_id: MemoryId,
    pub lock_message_id: MessageId,
    pub pointer_digest: Digest,
    pub snapshot_digest: Digest,
    pub recorded_at_ms: i64,
}

const POINTER_KEYS: &[&str] = &["schemaVersion", "pointerId", "lockMessageId", "pointerDigest", "snapshotDigest", "recordedAtMs"];

impl Recorded {
    /// The bytes `record` writes.
    pub fn to_bytes(&self) -> Vec<u8> {
        json!({
            "schemaVersion": 2,
            "pointerId": self.pointer_id.get(),
            "lockMessageId": self.lock_message_id.get(),
            "pointerDigest": self.pointer_digest.as_str(),
            "snapshotDigest": self.snapshot_digest.as_str(),
            "recordedAtMs": self.recorded_at_ms,
        })
        .to_string()
        .into_bytes()
    }

    /// Parse `current-pointer.json` strictly (schemaVersion 2, exact keys);
    /// `Err` says why in words.
    pub fn parse(bytes: &[u8]) -> std::result::Result<Recorded, String> {
        let v: Value = serde_json::from_slice(bytes).map_err(|_| "not JSON".to_owned())?;
        let o = v.as_object().ok_or("not a JSON object")?;
        if o.len() != POINTER_KEYS.len() || !o.keys().zip(POINTER_KEYS).all(|(a, b)| a == b) {
            return Err("keys differ from schemaVersion 2".into());
        }
        if o["schemaVersion"] != 2 {
            return Err("schemaVersion must be 2".into());
        }
        let digest = |k: &str| o[k].as_str().and_then(|s| Digest::parse(s).ok()).ok_or(format!("{k} is not a digest"));
        Ok(Recorded {
            pointer_id: o["pointerId"].as_u64().and_then(|n| MemoryId::new(n).ok()).ok_or("pointerId is not a memory id")?,
            lock_message_id: o["lockMessageId"].as_u64().and_then(|n| MessageId::new(n).ok()).ok_or("lockMessageId is not a message id")?,
            pointer_digest: digest("pointerDigest")?,
            snapshot_digest: digest("snapshotDigest")?,
            recorded_at_ms: o["recordedAtMs"].as_i64().filter(|n| *n >= 0).ok_or("recordedAtMs is not a time")?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_classifies_back_to_its_kind() {
        let s = SessionId::parse("sess-1").expect("session id");
        for kind in StateFile::ALL {
            assert_eq!(StateFile::classify(&kind.name(&s)), Some((kind, s.clone())));
        }
        assert_eq!(StateFile::classify(CURRENT_POINTER), None);
        assert_eq!(StateFile::classify("qa-pass..json"), None);
        assert_eq!(StateFile::classify("qa-pass.sess-1.json.tmp"), None);
    }

    #[test]
    fn the_pointer_record_round_trips_and_is_strict() {
        let d = Digest::of(b"x");
        let r = Recorded {
            pointer_id: MemoryId::new(7).expect("id"),
            lock_message_id: MessageId::new(9).expect("id"),
            pointer_digest: d.clone(),
            snapshot_digest: d,
            recorded_at_ms: 5,
        };
        assert_eq!(Recorded::parse(&r.to_bytes()), Ok(r));
        assert!(Recorded::parse(br#"{"schemaVersion":1}"#).is_err());
    }
}
