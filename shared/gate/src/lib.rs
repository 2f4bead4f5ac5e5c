//! The QA gate (docs/protocol.md §7): the one-use pass, its promotion to a
//! compaction ticket, the attempt, the claim after compaction and the
//! re-entry record. Pure state machine over files in `<data-dir>/qa/`; every
//! function that depends on time takes `now_ms`.
//!
//! Files (all 0600 in the 0700 `qa/` directory, never symlinks):
//!
//! | file | written by | meaning |
//! |---|---|---|
//! | `qa-pass.<s>.json` | `record` | a one-use pass waiting for compaction |
//! | `compaction-resume.<s>.json` | PreCompact | the ticket: the pass, same inode (link then unlink) |
//! | `compaction-attempt.<s>.json` | PreCompact | attested or unattested attempt |
//! | `compaction-attempt-claimed.<s>.json` | claim | the claimed attempt (renamed) |
//! | `compaction-resume-consumed.<s>.json` | claim | the consumed ticket (renamed), audit evidence |
//! | `compaction-reentry.<s>.json` | claim | the re-entry record waiting for delivery |
//! | `compaction-reentry-delivering.<s>.json` | delivery | the record whose text is being printed (renamed); one left behind is delivered again, UNATTESTED |
//! | `compaction-reentry-delivered.<s>.json` | delivery | the delivered re-entry record (renamed); PostCompact may fill in its summary check |
//! | `compaction-reentry-noting.<s>.json` | PostCompact | a waiting re-entry record while its summary check is filled in (renamed back) |
//! | `qa-pass-withdrawn.<s>.json` | UserPromptSubmit (a new turn) | the withdrawn pass (renamed); the next PreCompact names the reason and removes it |
//! | `qa-spent.<s>.json` | UserPromptSubmit (a new turn) | the session's withdrawn nonces (and consumed ones earlier versions' PreCompact wrote): a pass carrying one is refused |
//! | `qa-witness.<s>.jsonl` | PreToolUse ([`witness::observe`]) | every `pointer-snapshot` call seen, with the agent identity: `record` checks the boots against it |
//!
//! Outside the data dir, beside the latch head records: the spent-nonce
//! ledger ([`ledger`]), append-only.
//! | `current-pointer.json` | `record` | last recorded pointer state |
//! | `reports/` | agent | report files named by the emitted commands |

#![forbid(unsafe_code)]

pub mod cli;
pub mod compaction;
pub mod ledger;
pub mod pass;
pub mod record;
pub mod report;
pub mod state;
pub mod summary;
pub mod withdraw;
pub mod witness;

use kijito_files::private;
use kijito_protocol::error::{Error, Result};
use kijito_protocol::ids::{AbsPath, SessionId};
use std::path::PathBuf;

pub use compaction::{claim, claim_with, precompact, take_reentry, Attempt, Attested, ClaimOutcome, Reentry};
pub use pass::{transcript_identity, Pass, TranscriptId};
pub use record::{installed_verifier, invalidate, record, status, status_of, Evidence, Ready, RecordRequest};
pub use report::{validate_report, GreenReport};
pub use state::{read_state, Recorded, StateFile};
pub use summary::{note_summary, Summary, SummaryCheck};

/// Stable codes of the QA gate's state directory (the `gate` area; each
/// module's own area is `<module>::codes`).
pub mod codes {
    kijito_protocol::codes! {
        STATE_RENAME_FAILED StateRenameFailed = "state_rename_failed",
    }
}

/// A pass is valid for 30 minutes.
pub const PASS_MAX_AGE_MS: i64 = 30 * 60 * 1000;
/// A report is accepted up to 30 minutes after `verifiedAtMs`.
pub const REPORT_MAX_AGE_MS: i64 = 30 * 60 * 1000;
/// An attempt may be claimed up to 5 minutes after PreCompact.
pub const ATTEMPT_MAX_AGE_MS: i64 = 5 * 60 * 1000;
/// The transcript may grow at most this much between record and PreCompact.
pub const TRANSCRIPT_MAX_GROWTH: u64 = 1024 * 1024;
/// Largest gate state file read back.
pub const STATE_MAX_BYTES: u64 = 64 * 1024;
/// Largest report file read.
pub const REPORT_MAX_BYTES: u64 = 1024 * 1024;

/// Unix time in milliseconds now (the binaries' clock; library code takes it
/// as a parameter).
pub fn now_ms() -> i64 {
    kijito_protocol::clock::now_ms() as i64
}

/// A fresh 32-hex compaction nonce.
pub fn fresh_nonce() -> String {
    kijito_files::random::hex(16)
}

/// 32 lowercase hex digits (a nonce, an adapter id).
pub fn is_hex32(s: &str) -> bool {
    s.len() == 32 && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// The private `qa/` directory of a data dir, with the per-session names.
#[derive(Debug, Clone)]
pub struct QaDir {
    dir: AbsPath,
    /// Set when this process checked the directory and its ancestors
    /// ([`QaDir::open`], [`QaDir::existing`]): its state files are then read
    /// and written without checking the ancestors again.
    checked: Option<private::CheckedDir>,
    /// Where the spent-nonce ledger lives ([`ledger`]): the state directory
    /// beside the latch head records, from the environment unless a test
    /// sets it ([`QaDir::with_ledger_dir`]); `None`: unavailable.
    ledger_dir: Option<PathBuf>,
}

impl QaDir {
    /// Validate (and create) `<data-dir>/qa/`.
    pub fn open(data_dir: &AbsPath) -> Result<QaDir> {
        let (dir, checked) = kijito_files::datadir::qa_dir_checked(data_dir)?;
        Ok(QaDir { dir, checked: Some(checked), ledger_dir: kijito_files::datadir::heads_dir() })
    }

    /// The QA dir of `data_dir` for reading only: nothing is created or
    /// checked (every read checks its own file).
    pub fn read_only(data_dir: &AbsPath) -> Result<QaDir> {
        Ok(QaDir { dir: kijito_files::datadir::qa_path(data_dir)?, checked: None, ledger_dir: kijito_files::datadir::heads_dir() })
    }

    /// `<data-dir>/qa/` if it exists and is private; creates nothing
    /// (read-only commands). `Ok(None)` when there is no QA state yet.
    pub fn existing(data_dir: &AbsPath) -> Result<Option<QaDir>> {
        let dir = kijito_files::datadir::qa_path(data_dir)?;
        match std::fs::symlink_metadata(dir.as_path()) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            _ => {
                private::check_dir(data_dir.as_path(), false)?;
                let checked = private::check_dir_checked(dir.as_path(), true)?;
                Ok(Some(QaDir { dir, checked: Some(checked), ledger_dir: kijito_files::datadir::heads_dir() }))
            }
        }
    }

    pub fn path(&self) -> &AbsPath {
        &self.dir
    }

    /// This QA dir with the ledger in `dir` instead of the environment's
    /// state directory (tests; `None`: no ledger, which fails closed).
    pub fn with_ledger_dir(mut self, dir: Option<PathBuf>) -> QaDir {
        self.ledger_dir = dir;
        self
    }

    /// The directory of the spent-nonce ledger, if there is one.
    pub fn ledger_dir(&self) -> Option<&std::path::Path> {
        self.ledger_dir.as_deref()
    }

    /// `qa-witness.<s>.jsonl`: the `pointer-snapshot` calls the PreToolUse hook saw ([`witness`]).
    pub fn witness(&self, s: &SessionId) -> PathBuf {
        self.file(format!("qa-witness.{s}.jsonl"))
    }

    /// Read a state file of this directory as [`read_state`] does; the
    /// ancestors are not checked again when [`QaDir::open`] checked them.
    pub fn read_state(&self, path: &std::path::Path) -> Result<Vec<u8>> {
        self.read_checked(path, state::STATE_RULES).map(|(b, _)| b)
    }

    /// [`private::read_checked`] for a file of this directory (see [`QaDir::read_state`]).
    pub fn read_checked(&self, path: &std::path::Path, rules: private::FileRules) -> Result<(Vec<u8>, private::FileIdentity)> {
        match &self.checked {
            Some(c) => c.read_checked(path, rules),
            None => private::read_checked(path, rules),
        }
    }

    /// [`private::write_atomic`] for a file of this directory (see [`QaDir::read_state`]).
    pub fn write_atomic(&self, path: &std::path::Path, bytes: &[u8]) -> Result<()> {
        match &self.checked {
            Some(c) => c.write_atomic(path, bytes),
            None => private::write_atomic(path, bytes),
        }
    }

    /// [`private::write_provisional`] for a file of this directory (see [`QaDir::read_state`]).
    pub fn write_provisional(&self, path: &std::path::Path, bytes: &[u8]) -> Result<()> {
        match &self.checked {
            Some(c) => c.write_provisional(path, bytes),
            None => private::write_provisional(path, bytes),
        }
    }

    fn file(&self, name: String) -> PathBuf {
        self.dir.as_path().join(name)
    }
    pub fn pass(&self, s: &SessionId) -> PathBuf {
        self.file(StateFile::Pass.name(s))
    }
    pub fn ticket(&self, s: &SessionId) -> PathBuf {
        self.file(StateFile::Ticket.name(s))
    }
    pub fn ticket_consumed(&self, s: &SessionId) -> PathBuf {
        self.file(StateFile::TicketConsumed.name(s))
    }
    pub fn attempt(&self, s: &SessionId) -> PathBuf {
        self.file(StateFile::Attempt.name(s))
    }
    pub fn attempt_claimed(&self, s: &SessionId) -> PathBuf {
        self.file(StateFile::AttemptClaimed.name(s))
    }
    pub fn reentry(&self, s: &SessionId) -> PathBuf {
        self.file(StateFile::Reentry.name(s))
    }
    pub fn reentry_delivering(&self, s: &SessionId) -> PathBuf {
        self.file(StateFile::ReentryDelivering.name(s))
    }
    pub fn reentry_delivered(&self, s: &SessionId) -> PathBuf {
        self.file(StateFile::ReentryDelivered.name(s))
    }
    pub fn withdrawn(&self, s: &SessionId) -> PathBuf {
        self.file(StateFile::Withdrawn.name(s))
    }
    pub fn spent(&self, s: &SessionId) -> PathBuf {
        self.file(StateFile::Spent.name(s))
    }
    /// The compaction adapters' files (`kijito_compact::trigger`).
    pub fn pin(&self, s: &SessionId) -> PathBuf {
        self.file(StateFile::Pin.name(s))
    }
    pub fn turn(&self, s: &SessionId) -> PathBuf {
        self.file(StateFile::Turn.name(s))
    }
    pub fn request(&self, s: &SessionId) -> PathBuf {
        self.file(StateFile::Request.name(s))
    }
    pub fn current_pointer(&self) -> PathBuf {
        self.file(state::CURRENT_POINTER.to_owned())
    }

    /// `qa/reports/`, created owner-only: where emitted commands put reports.
    pub fn reports_dir(&self) -> Result<AbsPath> {
        let d = self.dir.join("reports")?;
        private::ensure_private_dir(d.as_path())?;
        Ok(d)
    }

    /// A fresh, not yet existing report path in `qa/reports/`.
    pub fn fresh_report_path(&self, label: &str) -> Result<AbsPath> {
        let d = self.reports_dir()?;
        d.join(&format!("{label}-{}.json", kijito_files::random::hex(8)))
    }
}

/// Atomic rename that reports "someone else got there first" as `Ok(false)`.
/// Not fsynced here: every caller's next write in the same directory fsyncs
/// it (which makes this rename durable too), or the caller calls
/// [`private::fsync_parent`] itself before relying on it.
pub(crate) fn rename_claim(from: &std::path::Path, to: &std::path::Path) -> Result<bool> {
    match std::fs::rename(from, to) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(Error::new(codes::STATE_RENAME_FAILED, format!("cannot rename {}: {e}", from.display()))),
    }
}

/// The keys of a JSON object, in order, equal `keys`.
pub fn has_keys(obj: &serde_json::Map<String, serde_json::Value>, keys: &[&str]) -> bool {
    obj.len() == keys.len() && obj.keys().zip(keys).all(|(a, b)| a == b)
}
