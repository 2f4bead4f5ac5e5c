//! The head record: the latch's last known head kept OUTSIDE the workspace,
//! so an older copy of `_manifest.md`, a dropped last entry or a rewrite in
//! a weaker integrity mode is detected even though every hash in the
//! workspace is self-consistent.
//!
//! Location: `$MEMORY_LATCH_HEADS_DIR` if set (tests), else
//! `$XDG_STATE_HOME/kijito-qa/latch-heads`, else
//! `$HOME/.local/state/kijito-qa/latch-heads`; one owner-only file per
//! workspace, named by the SHA-256 of its canonical path. Every manifest
//! write updates it right after the manifest (atomic, 0600 in 0700 dirs).

use crate::chain::{Finding, ReportMode};
use crate::entry::{Entry, Mode};
use crate::layout;
use kijito_files::private;
use kijito_protocol::error::{Error, Result};
use kijito_protocol::ids::TaggedDigest;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

pub const HEADS_ENV: &str = kijito_files::datadir::HEADS_ENV;
pub const HEAD_SCHEMA: &str = "memory-latch.head/v1";
const MAX_HEAD_BYTES: u64 = 16 * 1024;

/// Stable finding codes of the comparison.
pub mod codes {
    pub use kijito_protocol::codes::latch::{
        DELETED, HEAD_DIR_UNAVAILABLE as UNAVAILABLE, HEAD_RECORD_MISSING as MISSING, HEAD_RECORD_STALE as STALE,
        MODE_DOWNGRADE as DOWNGRADE, ROLLED_BACK, TRUNCATED,
    };
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HeadRecord {
    pub schema: String,
    /// The canonical workspace path (informational; the file name is its hash).
    pub workspace: String,
    pub entry_seq: u64,
    pub payload_hash: String,
    pub prev_payload_hash: String,
    pub mode: Mode,
    pub updated_at_ms: u64,
    /// The newest `last_good_checkpoint` the chain recorded (`none` if none).
    pub last_good_checkpoint: String,
}

impl HeadRecord {
    pub fn of(workspace: &Path, e: &Entry) -> HeadRecord {
        HeadRecord {
            schema: HEAD_SCHEMA.into(),
            workspace: layout::Paths::show(workspace),
            entry_seq: e.entry_seq,
            payload_hash: e.integrity.payload_hash.clone(),
            prev_payload_hash: e.prev_payload_hash.clone(),
            mode: e.integrity.mode,
            updated_at_ms: e.updated_at_ms,
            last_good_checkpoint: e.last_good_checkpoint.clone(),
        }
    }
}

/// The default heads directory from the environment (`None` without HOME):
/// the one rule, [`kijito_files::datadir::heads_dir`] (the QA ledger lives there too).
pub fn default_dir() -> Option<PathBuf> {
    kijito_files::datadir::heads_dir()
}

/// The record file of a canonical workspace root.
pub fn record_path(dir: &Path, root: &Path) -> PathBuf {
    let hash = String::from(TaggedDigest::of(layout::Paths::show(root).as_bytes()));
    dir.join(format!("{}.json", hash.trim_start_matches(TaggedDigest::PREFIX)))
}

/// Load a record: `None` when absent; anything odd fails closed.
pub fn load(path: &Path) -> Result<Option<HeadRecord>> {
    if std::fs::symlink_metadata(path).is_err() {
        return Ok(None);
    }
    let rules = private::FileRules { owner_only: true, min_bytes: 2, max_bytes: MAX_HEAD_BYTES };
    let (bytes, _) =
        private::read_checked(path, rules).map_err(|e| Error::new(crate::codes::HEAD_RECORD_INVALID, e.message().to_owned()))?;
    let rec: HeadRecord = serde_json::from_slice(&bytes)
        .map_err(|e| Error::new(crate::codes::HEAD_RECORD_INVALID, format!("the head record {} is invalid: {e}", path.display())))?;
    if rec.schema != HEAD_SCHEMA || !TaggedDigest::is_valid(&rec.payload_hash) {
        return Err(Error::new(
            crate::codes::HEAD_RECORD_INVALID,
            format!("the head record {} has an unknown schema or hash", path.display()),
        ));
    }
    Ok(Some(rec))
}

/// Write a record atomically (creating the private directory).
pub fn save(path: &Path, rec: &HeadRecord) -> Result<()> {
    let dir = path.parent().ok_or_else(|| Error::new(codes::UNAVAILABLE, "the head record has no directory"))?;
    private::ensure_private_dir(dir).map_err(|e| Error::new(codes::UNAVAILABLE, e.message().to_owned()))?;
    let bytes = serde_json::to_vec_pretty(rec).map_err(|e| Error::new(crate::codes::WRITE_FAILED, e.to_string()))?;
    private::write_atomic(path, &bytes).map_err(|e| Error::new(crate::codes::HEAD_WRITE_FAILED, e.message().to_owned()))
}

/// What the workspace chain looks like, for [`compare`].
pub struct Seen<'a> {
    pub head: Option<&'a Entry>,
    pub mode: ReportMode,
    /// `.memory-latch/_manifest.md` exists.
    pub manifest_present: bool,
    /// Any checksum entry was seen.
    pub saw_checksum: bool,
}

/// Compare the chain with the head record. Findings only; notes for the
/// tolerated case (the record one write behind after an interrupted write).
pub fn compare(rec: Option<&HeadRecord>, seen: &Seen) -> (Vec<Finding>, Vec<String>) {
    let mut f = Vec::new();
    let mut notes = Vec::new();
    let Some(rec) = rec else {
        if seen.manifest_present {
            f.push(Finding::new(
                codes::MISSING,
                "no head record outside the workspace for this latch: rollback cannot be ruled out (a user-confirmed reseed starts a recorded chain)",
                None,
            ));
        }
        return (f, notes);
    };
    if !seen.manifest_present {
        f.push(Finding::new(
            codes::DELETED,
            format!("the head record names entry {} but the workspace has no manifest: the latch was deleted", rec.entry_seq),
            None,
        ));
        return (f, notes);
    }
    if rec.mode == Mode::Hmac && (seen.mode == ReportMode::Checksum || seen.saw_checksum) {
        f.push(Finding::new(codes::DOWNGRADE, "the head record says hmac mode but the chain holds checksum entries", None));
    }
    let Some(h) = seen.head else { return (f, notes) };
    let seq = h.entry_seq;
    if seq < rec.entry_seq {
        if seq + 1 == rec.entry_seq && h.integrity.payload_hash == rec.prev_payload_hash {
            f.push(Finding::new(
                codes::TRUNCATED,
                format!("entry {} (the recorded head) was dropped from the end", rec.entry_seq),
                Some(seq),
            ));
        } else {
            f.push(Finding::new(
                codes::ROLLED_BACK,
                format!("the chain ends at entry {seq} but the head record names entry {}: an older copy", rec.entry_seq),
                Some(seq),
            ));
        }
    } else if seq == rec.entry_seq {
        if h.integrity.payload_hash != rec.payload_hash {
            f.push(Finding::new(
                codes::ROLLED_BACK,
                format!("entry {seq} differs from the recorded head: the history was replaced"),
                Some(seq),
            ));
        }
    } else if seq == rec.entry_seq + 1 && h.prev_payload_hash == rec.payload_hash {
        notes.push(format!(
            "the head record is one entry behind (entry {}); an interrupted write, repaired on the next write",
            rec.entry_seq
        ));
    } else {
        f.push(Finding::new(
            codes::STALE,
            format!("the chain is at entry {seq} but the head record names entry {}", rec.entry_seq),
            Some(seq),
        ));
    }
    (f, notes)
}
