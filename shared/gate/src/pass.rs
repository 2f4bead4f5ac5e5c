//! The one-use pass (`qa-pass.<session>.json`, schemaVersion 5), the
//! transcript identity it is bound to, and pass validity.

use crate::{has_keys, is_hex32, PASS_MAX_AGE_MS, TRANSCRIPT_MAX_GROWTH};
use kijito_protocol::error::{Error, Result};
use kijito_protocol::ids::{AbsPath, Digest, MemoryId, MessageId, SessionId};
use serde_json::{json, Value};
use std::fs::OpenOptions;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};

/// Stable codes of this module (registered in the workspace by `tests/it/architecture.rs`).
pub mod codes {
    kijito_protocol::codes! {
        PASS_INVALID PassInvalid = "pass_invalid",
        PASS_SESSION PassSession = "pass_session_mismatch",
        PASS_STALE PassStale = "pass_stale",
        PASS_FUTURE PassFuture = "pass_from_future",
        PASS_MISSING PassMissing = "pass_missing",
        /// A new turn (a UserPromptSubmit of the main agent, not `/compact`)
        /// began after `qa-gate record`: the pass was withdrawn (docs/protocol.md §7).
        PASS_WITHDRAWN PassWithdrawn = "pass_invalidated_by_new_turn",
        /// The pass's nonce was promoted by an earlier PreCompact: a ticket
        /// copied back as the pass attests nothing (docs/protocol.md §7).
        PASS_CONSUMED PassConsumed = "pass_already_consumed",
        /// `qa-spent.<s>.json` (the withdrawn nonces) does not parse: every pass
        /// of the session is refused until it is removed.
        SPENT_INVALID SpentInvalid = "spent_nonces_invalid",
        /// The pass's nonce (or one of its reports) is in the spent-nonce ledger
        /// outside the data dir: it was consumed or withdrawn before (docs/protocol.md §7).
        PASS_REPLAYED PassReplayed = "pass_replayed",
        /// The ledger exists but cannot be trusted (not an owner-only regular
        /// file, too large, a line that does not parse): fail closed.
        LEDGER_INVALID LedgerInvalid = "spent_ledger_invalid",
        /// No state directory for the ledger (no HOME, XDG_STATE_HOME or
        /// MEMORY_LATCH_HEADS_DIR), or it cannot be created or written.
        LEDGER_UNAVAILABLE LedgerUnavailable = "spent_ledger_unavailable",
        TRANSCRIPT_UNKNOWN TranscriptUnknown = "transcript_unknown",
        TRANSCRIPT_NOT_FOUND TranscriptNotFound = "transcript_not_found",
        TRANSCRIPT_SYMLINK TranscriptSymlink = "transcript_symlink",
        TRANSCRIPT_NOT_REGULAR TranscriptNotRegular = "transcript_not_regular",
        TRANSCRIPT_NOT_OWNED TranscriptNotOwned = "transcript_not_owned",
        TRANSCRIPT_UNREADABLE TranscriptUnreadable = "transcript_unreadable",
        TRANSCRIPT_CHANGED TranscriptChanged = "transcript_changed_during_read",
        TRANSCRIPT_REPLACED TranscriptReplaced = "transcript_replaced",
        TRANSCRIPT_TRUNCATED TranscriptTruncated = "transcript_truncated",
        TRANSCRIPT_GREW TranscriptGrew = "transcript_grew_too_much",
        TRANSCRIPT_MTIME TranscriptMtime = "transcript_mtime_earlier",
    }
}

/// Device, inode, size and mtime of the session transcript.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TranscriptId {
    pub dev: u64,
    pub ino: u64,
    pub size: u64,
    pub mtime_ms: i64,
}

impl TranscriptId {
    fn of(m: &std::fs::Metadata) -> TranscriptId {
        TranscriptId { dev: m.dev(), ino: m.ino(), size: m.size(), mtime_ms: m.mtime() * 1000 + m.mtime_nsec() / 1_000_000 }
    }
}

/// Identity of the transcript, read safely: opened without following a
/// symlink, a regular file owned by the user, the name still leading to the
/// opened file, and unchanged between two looks.
pub fn transcript_identity(path: &AbsPath) -> Result<TranscriptId> {
    identity_with(path, &|| {})
}

/// Open a transcript the safe way, for every reader of one (the pass, the
/// context measure): no symlink followed, a regular file owned by the user.
/// The file and its metadata at open.
pub fn open_transcript(path: &AbsPath) -> Result<(std::fs::File, std::fs::Metadata)> {
    let file = match OpenOptions::new().read(true).custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC).open(path.as_path())
    {
        Ok(f) => f,
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
            return Err(Error::new(codes::TRANSCRIPT_SYMLINK, format!("transcript {path} is a symlink")))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(Error::new(codes::TRANSCRIPT_NOT_FOUND, format!("transcript {path} does not exist")))
        }
        Err(e) => return Err(Error::new(codes::TRANSCRIPT_UNREADABLE, format!("cannot open transcript {path}: {e}"))),
    };
    let stat = |f: &std::fs::File| {
        f.metadata().map_err(|e| Error::new(codes::TRANSCRIPT_UNREADABLE, format!("cannot stat transcript {path}: {e}")))
    };
    let before = stat(&file)?;
    if !before.is_file() {
        return Err(Error::new(codes::TRANSCRIPT_NOT_REGULAR, format!("transcript {path} is not a regular file")));
    }
    if before.uid() != kijito_files::private::current_uid() {
        return Err(Error::new(codes::TRANSCRIPT_NOT_OWNED, format!("transcript {path} is not owned by the current user")));
    }
    Ok((file, before))
}

/// [`transcript_identity`] with `looked` called between the first look (the
/// opened file's metadata) and the second (the name, the file again): a
/// test changes or replaces the transcript there.
fn identity_with(path: &AbsPath, looked: &dyn Fn()) -> Result<TranscriptId> {
    let (file, before) = open_transcript(path)?;
    let stat = |f: &std::fs::File| {
        f.metadata().map_err(|e| Error::new(codes::TRANSCRIPT_UNREADABLE, format!("cannot stat transcript {path}: {e}")))
    };
    looked();
    let by_name = std::fs::symlink_metadata(path.as_path())
        .map_err(|e| Error::new(codes::TRANSCRIPT_CHANGED, format!("transcript {path} vanished: {e}")))?;
    let after = stat(&file)?;
    let id = TranscriptId::of(&before);
    if id != TranscriptId::of(&after) || by_name.dev() != id.dev || by_name.ino() != id.ino {
        return Err(Error::new(codes::TRANSCRIPT_CHANGED, format!("transcript {path} changed while it was read")));
    }
    Ok(id)
}

/// A recorded pass (also the content of the ticket it becomes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pass {
    pub session_id: SessionId,
    pub recorded_at_ms: i64,
    pub pointer_id: MemoryId,
    pub lock_message_id: MessageId,
    pub pointer_digest: Digest,
    pub snapshot_digest: Digest,
    pub cold_boot_report_digests: [Digest; 2],
    pub compaction_nonce: String,
    pub transcript: TranscriptId,
}

pub const PASS_KEYS: &[&str] = &[
    "schemaVersion",
    "sessionId",
    "recordedAtMs",
    "pointerId",
    "lockMessageId",
    "pointerDigest",
    "snapshotDigest",
    "coldBootReportDigests",
    "compactionNonce",
    "transcript",
];

impl Pass {
    pub fn to_value(&self) -> Value {
        json!({
            "schemaVersion": 5,
            "sessionId": self.session_id.as_str(),
            "recordedAtMs": self.recorded_at_ms,
            "pointerId": self.pointer_id.get(),
            "lockMessageId": self.lock_message_id.get(),
            "pointerDigest": self.pointer_digest.as_str(),
            "snapshotDigest": self.snapshot_digest.as_str(),
            "coldBootReportDigests": [self.cold_boot_report_digests[0].as_str(), self.cold_boot_report_digests[1].as_str()],
            "compactionNonce": self.compaction_nonce,
            "transcript": {
                "dev": self.transcript.dev,
                "ino": self.transcript.ino,
                "size": self.transcript.size,
                "mtimeMs": self.transcript.mtime_ms,
            },
        })
    }

    /// Compact JSON bytes of a schemaVersion 5 pass (no `bootsWitnessed`).
    pub fn to_bytes(&self) -> Vec<u8> {
        self.to_value().to_string().into_bytes()
    }

    /// The bytes `qa-gate record` writes: schemaVersion 6, the keys of 5 and
    /// then `bootsWitnessed` (whether the PreToolUse hook witnessed both boots
    /// as two distinct subagents, [`crate::witness`]).
    pub fn to_bytes_witnessed(&self, boots_witnessed: bool) -> Vec<u8> {
        let mut v = self.to_value();
        if let Some(o) = v.as_object_mut() {
            o.insert("schemaVersion".into(), json!(6));
            o.insert("bootsWitnessed".into(), json!(boots_witnessed));
        }
        v.to_string().into_bytes()
    }

    /// Parse a pass file strictly (exact keys and order, typed values).
    pub fn parse(bytes: &[u8]) -> Result<Pass> {
        let bad = |why: &str| Error::new(codes::PASS_INVALID, format!("pass file: {why}"));
        let v: Value = serde_json::from_slice(bytes).map_err(|_| bad("not JSON"))?;
        let o = v.as_object().ok_or_else(|| bad("not an object"))?;
        let v5 = has_keys(o, PASS_KEYS) && o["schemaVersion"] == 5;
        let v6 = o.len() == PASS_KEYS.len() + 1
            && o.keys().zip(PASS_KEYS.iter().chain(&["bootsWitnessed"])).all(|(a, b)| a == b)
            && o["schemaVersion"] == 6
            && o["bootsWitnessed"].is_boolean();
        if !v5 && !v6 {
            return Err(bad("keys differ from schemaVersion 5 and 6"));
        }
        let session_id = o["sessionId"].as_str().and_then(|s| SessionId::parse(s).ok()).ok_or_else(|| bad("sessionId"))?;
        let recorded_at_ms = o["recordedAtMs"].as_i64().filter(|n| *n >= 0).ok_or_else(|| bad("recordedAtMs"))?;
        let pointer_id = o["pointerId"].as_u64().and_then(|n| MemoryId::new(n).ok()).ok_or_else(|| bad("pointerId"))?;
        let lock_message_id = o["lockMessageId"].as_u64().and_then(|n| MessageId::new(n).ok()).ok_or_else(|| bad("lockMessageId"))?;
        let digest = |v: &Value| v.as_str().and_then(|s| Digest::parse(s).ok());
        let pointer_digest = digest(&o["pointerDigest"]).ok_or_else(|| bad("pointerDigest"))?;
        let snapshot_digest = digest(&o["snapshotDigest"]).ok_or_else(|| bad("snapshotDigest"))?;
        let reports = o["coldBootReportDigests"].as_array().filter(|a| a.len() == 2).ok_or_else(|| bad("coldBootReportDigests"))?;
        let r0 = digest(&reports[0]).ok_or_else(|| bad("coldBootReportDigests"))?;
        let r1 = digest(&reports[1]).ok_or_else(|| bad("coldBootReportDigests"))?;
        let compaction_nonce = o["compactionNonce"].as_str().filter(|s| is_hex32(s)).ok_or_else(|| bad("compactionNonce"))?.to_owned();
        let t = o["transcript"].as_object().filter(|t| has_keys(t, &["dev", "ino", "size", "mtimeMs"])).ok_or_else(|| bad("transcript"))?;
        let transcript = TranscriptId {
            dev: t["dev"].as_u64().ok_or_else(|| bad("transcript.dev"))?,
            ino: t["ino"].as_u64().ok_or_else(|| bad("transcript.ino"))?,
            size: t["size"].as_u64().ok_or_else(|| bad("transcript.size"))?,
            mtime_ms: t["mtimeMs"].as_i64().ok_or_else(|| bad("transcript.mtimeMs"))?,
        };
        Ok(Pass {
            session_id,
            recorded_at_ms,
            pointer_id,
            lock_message_id,
            pointer_digest,
            snapshot_digest,
            cold_boot_report_digests: [r0, r1],
            compaction_nonce,
            transcript,
        })
    }

    /// `bootsWitnessed` of a pass file's bytes: `None` for schemaVersion 5
    /// (or bytes that are no pass).
    pub fn boots_witnessed(bytes: &[u8]) -> Option<bool> {
        let v: Value = serde_json::from_slice(bytes).ok()?;
        Pass::parse(bytes).ok()?;
        v.get("bootsWitnessed")?.as_bool()
    }

    /// Whether this pass is acceptable now for `session` given the
    /// transcript's current identity: at most 30 minutes old, same device and
    /// inode, size not smaller and grown at most 1 MiB, mtime not earlier.
    pub fn check_valid(&self, session: &SessionId, now_ms: i64, current: &TranscriptId) -> Result<()> {
        self.check_age(session, now_ms)?;
        let t = &self.transcript;
        if current.dev != t.dev || current.ino != t.ino {
            return Err(Error::new(
                codes::TRANSCRIPT_REPLACED,
                "the transcript is a different file (device or inode changed) since the pass was recorded",
            ));
        }
        if current.size < t.size {
            return Err(Error::new(
                codes::TRANSCRIPT_TRUNCATED,
                format!("the transcript shrank from {} to {} bytes", t.size, current.size),
            ));
        }
        if current.size - t.size > TRANSCRIPT_MAX_GROWTH {
            return Err(Error::new(
                codes::TRANSCRIPT_GREW,
                format!("the transcript grew by {} bytes; at most {TRANSCRIPT_MAX_GROWTH}", current.size - t.size),
            ));
        }
        if current.mtime_ms < t.mtime_ms {
            return Err(Error::new(codes::TRANSCRIPT_MTIME, "the transcript's modification time moved into the past"));
        }
        Ok(())
    }

    /// The checks that need no transcript: session and age.
    pub fn check_age(&self, session: &SessionId, now_ms: i64) -> Result<()> {
        if &self.session_id != session {
            return Err(Error::new(codes::PASS_SESSION, "the pass belongs to another session"));
        }
        if self.recorded_at_ms > now_ms {
            return Err(Error::new(codes::PASS_FUTURE, "the pass was recorded in the future"));
        }
        if now_ms - self.recorded_at_ms > PASS_MAX_AGE_MS {
            return Err(Error::new(
                codes::PASS_STALE,
                format!("the pass is {} s old; at most 1800 s", (now_ms - self.recorded_at_ms) / 1000),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn sample(now: i64) -> Pass {
        Pass {
            session_id: SessionId::parse("s-1").unwrap(),
            recorded_at_ms: now,
            pointer_id: MemoryId::new(21813).unwrap(),
            lock_message_id: MessageId::new(1234).unwrap(),
            pointer_digest: Digest::of(b"p"),
            snapshot_digest: Digest::of(b"s"),
            cold_boot_report_digests: [Digest::of(b"a"), Digest::of(b"b")],
            compaction_nonce: "0123456789abcdef0123456789abcdef".into(),
            transcript: TranscriptId { dev: 1, ino: 2, size: 100, mtime_ms: 5000 },
        }
    }

    #[test]
    fn a_transcript_changed_between_the_two_looks_is_refused() {
        let d = tempfile::tempdir().unwrap();
        let t = d.path().join("t.jsonl");
        std::fs::write(&t, b"{}\n").unwrap();
        let path = AbsPath::from_path(&t).unwrap();
        let unchanged = identity_with(&path, &|| {}).unwrap();
        assert_eq!(unchanged, transcript_identity(&path).unwrap());
        // Grown in between (same name, same inode): the file's two looks differ.
        let grow = || {
            use std::io::Write;
            std::fs::OpenOptions::new().append(true).open(&t).unwrap().write_all(b"{}\n").unwrap();
        };
        assert_eq!(identity_with(&path, &grow).unwrap_err().code(), codes::TRANSCRIPT_CHANGED.as_str());
        // Replaced in between (the opened file unchanged, the name now
        // another file): the name no longer leads to the opened file.
        let other = d.path().join("other.jsonl");
        let replace = || {
            std::fs::write(&other, b"{}\n").unwrap();
            std::fs::rename(&other, &t).unwrap();
        };
        assert_eq!(identity_with(&path, &replace).unwrap_err().code(), codes::TRANSCRIPT_CHANGED.as_str());
        // Removed in between.
        let remove = || std::fs::remove_file(&t).unwrap();
        assert_eq!(identity_with(&path, &remove).unwrap_err().code(), codes::TRANSCRIPT_CHANGED.as_str());
    }

    #[test]
    fn round_trip_and_strict_keys() {
        let p = sample(1_000);
        let bytes = p.to_bytes();
        assert!(String::from_utf8(bytes.clone()).unwrap().starts_with("{\"schemaVersion\":5,\"sessionId\":\"s-1\","));
        assert_eq!(Pass::parse(&bytes).unwrap(), p);
        assert_eq!(Pass::boots_witnessed(&bytes), None);
        for w in [true, false] {
            let v6 = p.to_bytes_witnessed(w);
            assert!(String::from_utf8(v6.clone()).unwrap().ends_with(&format!("}},\"bootsWitnessed\":{w}}}")));
            assert_eq!(Pass::parse(&v6).unwrap(), p);
            assert_eq!(Pass::boots_witnessed(&v6), Some(w));
            let wrong = String::from_utf8(v6).unwrap().replace("\"schemaVersion\":6", "\"schemaVersion\":5");
            assert_eq!(Pass::parse(wrong.as_bytes()).unwrap_err().code(), codes::PASS_INVALID.as_str());
        }
        let text = String::from_utf8(bytes).unwrap().replace("\"schemaVersion\":5", "\"schemaVersion\":4");
        assert_eq!(Pass::parse(text.as_bytes()).unwrap_err().code(), codes::PASS_INVALID.as_str());
        assert_eq!(Pass::parse(b"{}").unwrap_err().code(), codes::PASS_INVALID.as_str());
    }

    #[test]
    fn validity_rules_with_injected_clock() {
        let t0 = 1_700_000_000_000;
        let p = sample(t0);
        let s = p.session_id.clone();
        let same = p.transcript;
        assert!(p.check_valid(&s, t0, &same).is_ok());
        assert!(p.check_valid(&s, t0 + 30 * 60 * 1000, &same).is_ok());
        assert_eq!(p.check_valid(&s, t0 + 31 * 60 * 1000, &same).unwrap_err().code(), codes::PASS_STALE.as_str());
        assert_eq!(p.check_valid(&s, t0 - 1, &same).unwrap_err().code(), codes::PASS_FUTURE.as_str());
        assert_eq!(p.check_valid(&SessionId::parse("other").unwrap(), t0, &same).unwrap_err().code(), codes::PASS_SESSION.as_str());
        let check = |t: TranscriptId| p.check_valid(&s, t0, &t).err().map(|e| e.code().to_owned());
        assert_eq!(check(TranscriptId { ino: 3, ..same }).as_deref(), Some(codes::TRANSCRIPT_REPLACED.as_str()));
        assert_eq!(check(TranscriptId { dev: 9, ..same }).as_deref(), Some(codes::TRANSCRIPT_REPLACED.as_str()));
        assert_eq!(check(TranscriptId { size: 99, ..same }).as_deref(), Some(codes::TRANSCRIPT_TRUNCATED.as_str()));
        assert_eq!(check(TranscriptId { size: 100 + TRANSCRIPT_MAX_GROWTH, ..same }), None);
        assert_eq!(check(TranscriptId { size: 101 + TRANSCRIPT_MAX_GROWTH, ..same }).as_deref(), Some(codes::TRANSCRIPT_GREW.as_str()));
        assert_eq!(check(TranscriptId { mtime_ms: 4999, ..same }).as_deref(), Some(codes::TRANSCRIPT_MTIME.as_str()));
        assert_eq!(check(TranscriptId { mtime_ms: 9999, size: 200, ..same }), None);
    }
}
