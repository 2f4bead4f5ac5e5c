//! The spent-nonce ledger OUTSIDE the data dir (docs/protocol.md §7,
//! "Spent-nonce ledger"): every pass nonce a PreCompact consumed or a new
//! turn withdrew, with the digest of the pass and of its two reports,
//! appended to an owner-only file beside the latch head records
//! ([`kijito_files::datadir::heads_dir`]). Deleting or editing
//! `qa-spent.<s>.json` in the data dir no longer revives a pass: PreCompact
//! refuses a pass whose nonce is in the ledger, `qa-gate record` refuses
//! reports a listed pass used (`pass_replayed`), and an attested re-entry is
//! delivered ATTESTED only when the ledger lists its nonce as consumed.
//!
//! One file per data dir and session:
//! `<heads-dir>/qa-ledger.<first 16 hex of SHA-256(qa dir path)>.<session>.jsonl`,
//! one compact JSON line per entry, keys in exactly this order:
//! `{"nonce","why","passSha256","reports":[2 digests],"recordedAtMs","spentAtMs"}`.
//! Appended with `O_APPEND` and fsynced ([`private::append_private`]); at
//! most [`MAX_LEDGER_BYTES`]: an append that would exceed it first rewrites
//! the file (atomically) without the entries nothing can use any more (pass
//! and spend both older than [`RETAIN_MS`]). A ledger that exists but is not
//! an owner-only regular file, is too large or holds a line that does not
//! parse refuses every pass of the session (`spent_ledger_invalid`); no state
//! directory at all is `spent_ledger_unavailable`. Both fail closed.

use crate::{has_keys, is_hex32, QaDir, PASS_MAX_AGE_MS, REPORT_MAX_AGE_MS};
use kijito_files::private::{self, FileRules};
use kijito_protocol::error::{Error, Result};
use kijito_protocol::ids::{Digest, SessionId};
use serde_json::Value;
use std::path::PathBuf;

/// Stable codes of this module (in the registry, [`crate::pass::codes`]).
pub mod codes {
    pub use crate::pass::codes::{Code, LEDGER_INVALID, LEDGER_UNAVAILABLE, PASS_CONSUMED, PASS_REPLAYED, PASS_WITHDRAWN};
}

/// Largest ledger file of one session.
pub const MAX_LEDGER_BYTES: u64 = 256 * 1024;
/// An entry is kept while its pass or its spend is at most this old: a pass
/// older than 30 minutes is `pass_stale`, a report older than 30 minutes
/// `report_too_old`, so an older entry refuses nothing that is not refused anyway.
pub const RETAIN_MS: i64 = if PASS_MAX_AGE_MS > REPORT_MAX_AGE_MS { PASS_MAX_AGE_MS } else { REPORT_MAX_AGE_MS };

const KEYS: &[&str] = &["nonce", "why", "passSha256", "reports", "recordedAtMs", "spentAtMs"];

/// One ledger line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LedgerEntry {
    pub nonce: String,
    /// `pass_already_consumed` (PreCompact) or `pass_invalidated_by_new_turn`.
    pub why: codes::Code,
    /// SHA-256 of the pass file's bytes (the ticket is the same inode).
    pub pass_sha256: Digest,
    /// The pass's `coldBootReportDigests`.
    pub reports: [Digest; 2],
    pub recorded_at_ms: i64,
    pub spent_at_ms: i64,
}

impl LedgerEntry {
    /// The entry for a pass (its parsed value and its exact bytes).
    pub fn of(pass: &crate::Pass, bytes: &[u8], why: codes::Code, now_ms: i64) -> LedgerEntry {
        LedgerEntry {
            nonce: pass.compaction_nonce.clone(),
            why,
            pass_sha256: Digest::of(bytes),
            reports: pass.cold_boot_report_digests.clone(),
            recorded_at_ms: pass.recorded_at_ms,
            spent_at_ms: now_ms,
        }
    }

    /// The line, newline included (every value is JSON-safe as it stands).
    pub fn to_line(&self) -> String {
        format!(
            "{{\"nonce\":\"{}\",\"why\":\"{}\",\"passSha256\":\"{}\",\"reports\":[\"{}\",\"{}\"],\"recordedAtMs\":{},\"spentAtMs\":{}}}\n",
            self.nonce, self.why, self.pass_sha256, self.reports[0], self.reports[1], self.recorded_at_ms, self.spent_at_ms
        )
    }

    /// Parse one line (without its newline) strictly.
    pub fn parse(line: &[u8]) -> Option<LedgerEntry> {
        let v: Value = serde_json::from_slice(line).ok()?;
        let o = v.as_object().filter(|o| has_keys(o, KEYS))?;
        let digest = |v: &Value| v.as_str().and_then(|s| Digest::parse(s).ok());
        let why = match codes::Code::parse(o["why"].as_str()?)? {
            why @ (codes::PASS_CONSUMED | codes::PASS_WITHDRAWN) => why,
            _ => return None,
        };
        let reports = o["reports"].as_array().filter(|a| a.len() == 2)?;
        let e = LedgerEntry {
            nonce: o["nonce"].as_str().filter(|n| is_hex32(n))?.to_owned(),
            why,
            pass_sha256: digest(&o["passSha256"])?,
            reports: [digest(&reports[0])?, digest(&reports[1])?],
            recorded_at_ms: o["recordedAtMs"].as_i64().filter(|n| *n >= 0)?,
            spent_at_ms: o["spentAtMs"].as_i64().filter(|n| *n >= 0)?,
        };
        // Byte-exact: the line is what this module writes, nothing else.
        (e.to_line().as_bytes() == [line, b"\n"].concat().as_slice()).then_some(e)
    }
}

fn unavailable(why: impl Into<String>) -> Error {
    Error::new(codes::LEDGER_UNAVAILABLE, why)
}

fn invalid(why: impl Into<String>) -> Error {
    Error::new(
        codes::LEDGER_INVALID,
        format!("{}: every pass of this session is refused until the ledger is repaired or removed by the user", why.into()),
    )
}

/// The ledger file of this QA dir's session.
pub fn path(qa: &QaDir, session: &SessionId) -> Result<PathBuf> {
    path_in(qa.ledger_dir(), qa.path().as_str(), session)
}

/// The ledger file of the QA dir at `qa_dir` (its path as text) in `dir`.
fn path_in(dir: Option<&std::path::Path>, qa_dir: &str, session: &SessionId) -> Result<PathBuf> {
    let dir = dir
        .ok_or_else(|| unavailable("no state directory for the spent-nonce ledger (set HOME, XDG_STATE_HOME or MEMORY_LATCH_HEADS_DIR)"))?;
    let key = Digest::of(qa_dir.as_bytes());
    Ok(dir.join(format!("qa-ledger.{}.{session}.jsonl", &key.as_str()[..16])))
}

/// Every entry of the session's ledger, oldest first (none when the file
/// does not exist).
pub fn read(qa: &QaDir, session: &SessionId) -> Result<Vec<LedgerEntry>> {
    read_at(&path(qa, session)?)
}

/// [`check_unlisted`] for the pass at `pass_path` (a file of a QA dir), with
/// the ledger in `dir` (the state directory): the read-only callers of
/// [`crate::state::accepted_pass`] (`status`, the Stop reminder,
/// `kijito-compact request`, the adapters) refuse what PreCompact would.
pub(crate) fn check_pass_at(pass_path: &std::path::Path, dir: Option<&std::path::Path>, session: &SessionId, nonce: &str) -> Result<()> {
    let qa_dir = pass_path.parent().and_then(|p| p.to_str()).ok_or_else(|| unavailable("the pass has no QA directory"))?;
    check_unlisted(&read_at(&path_in(dir, qa_dir, session)?)?, nonce)
}

fn read_at(path: &std::path::Path) -> Result<Vec<LedgerEntry>> {
    let path = path.to_path_buf();
    if let Err(e) = std::fs::symlink_metadata(&path) {
        return match e.kind() {
            std::io::ErrorKind::NotFound => Ok(Vec::new()),
            _ => Err(invalid(format!("cannot stat the ledger {}: {e}", path.display()))),
        };
    }
    let rules = FileRules { owner_only: true, min_bytes: 0, max_bytes: MAX_LEDGER_BYTES };
    let (bytes, _) = private::read_checked(&path, rules)
        .map_err(|e| invalid(format!("the ledger {}: {} ({})", path.display(), e.message(), e.code())))?;
    if bytes.last().is_some_and(|b| *b != b'\n') {
        return Err(invalid(format!("the ledger {} ends in a partial line", path.display())));
    }
    bytes
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| LedgerEntry::parse(l).ok_or_else(|| invalid(format!("the ledger {} holds a line that does not parse", path.display()))))
        .collect()
}

/// Append `entry` (fsynced). When the file would exceed [`MAX_LEDGER_BYTES`],
/// it is first rewritten atomically with only the entries still in use
/// ([`RETAIN_MS`]); if that is still too large the append fails.
pub fn append(qa: &QaDir, session: &SessionId, entry: &LedgerEntry, now_ms: i64) -> Result<()> {
    let path = path(qa, session)?;
    let dir = path.parent().ok_or_else(|| unavailable("the ledger has no directory"))?;
    private::ensure_private_dir(dir).map_err(|e| unavailable(format!("the ledger directory {}: {}", dir.display(), e.message())))?;
    let line = entry.to_line();
    match private::append_private(&path, line.as_bytes(), MAX_LEDGER_BYTES) {
        Ok(()) => Ok(()),
        Err(e) if e.code_as() == Some(private::codes::TOO_LARGE) => {
            let mut kept = read(qa, session)?;
            kept.retain(|e| now_ms - e.recorded_at_ms <= RETAIN_MS || now_ms - e.spent_at_ms <= RETAIN_MS);
            let mut bytes: Vec<u8> = kept.iter().flat_map(|e| e.to_line().into_bytes()).collect();
            bytes.extend_from_slice(line.as_bytes());
            if bytes.len() as u64 > MAX_LEDGER_BYTES {
                return Err(unavailable(format!("the ledger {} is full of entries still in use", path.display())));
            }
            private::write_atomic(&path, &bytes)
                .map_err(|e| unavailable(format!("cannot rewrite the ledger {}: {}", path.display(), e.message())))
        }
        Err(e) if crate::state::is_insecure(e.code()) => Err(invalid(format!("the ledger {}: {}", path.display(), e.message()))),
        Err(e) => Err(unavailable(format!("cannot append to the ledger {}: {}", path.display(), e.message()))),
    }
}

/// `Err(pass_replayed)` when the ledger lists `nonce`.
pub fn check_unlisted(entries: &[LedgerEntry], nonce: &str) -> Result<()> {
    match entries.iter().find(|e| e.nonce == nonce) {
        None => Ok(()),
        Some(e) => Err(Error::new(
            codes::PASS_REPLAYED,
            format!("this pass's nonce {nonce} is in the spent-nonce ledger ({}): a pass attests at most one compaction; run the QA cycle again", e.why),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(n: u32, at: i64) -> LedgerEntry {
        LedgerEntry {
            nonce: format!("{n:032x}"),
            why: codes::PASS_CONSUMED,
            pass_sha256: Digest::of(b"pass"),
            reports: [Digest::of(b"a"), Digest::of(b"b")],
            recorded_at_ms: at,
            spent_at_ms: at + 1,
        }
    }

    #[test]
    fn a_line_round_trips_byte_exact_and_nothing_else_parses() {
        let e = entry(7, 1_764_500_000_000);
        let line = e.to_line();
        assert_eq!(LedgerEntry::parse(line.trim_end().as_bytes()), Some(e.clone()));
        let text = line.trim_end().to_owned();
        for junk in [
            text.replace("pass_already_consumed", "something_else"),
            text.replace("\"nonce\"", "\"nonce\" "),
            text.replace("1764500000000", "-1"),
            text.replace("}", ",\"x\":1}"),
            text.replace(&format!("{:032x}", 7), "7"),
        ] {
            assert_eq!(LedgerEntry::parse(junk.as_bytes()), None, "{junk}");
        }
    }

    #[test]
    fn the_ledger_appends_stays_bounded_and_keeps_what_is_in_use() {
        let d = tempfile::tempdir().unwrap();
        std::fs::set_permissions(d.path(), std::os::unix::fs::PermissionsExt::from_mode(0o700)).unwrap();
        let data = kijito_protocol::ids::AbsPath::from_path(&d.path().join("data")).unwrap();
        std::fs::create_dir(data.as_path()).unwrap();
        std::fs::set_permissions(data.as_path(), std::os::unix::fs::PermissionsExt::from_mode(0o700)).unwrap();
        let qa = QaDir::open(&data).unwrap().with_ledger_dir(Some(d.path().join("heads")));
        let s = SessionId::parse("s-1").unwrap();
        assert_eq!(read(&qa, &s).unwrap(), Vec::new());
        let now = 100 * RETAIN_MS;
        let per_line = entry(0, now - 3 * RETAIN_MS).to_line().len() as u64;
        let fits = (MAX_LEDGER_BYTES / per_line) as u32;
        // Old entries fill the file; then one in use.
        for n in 0..fits - 1 {
            append(&qa, &s, &entry(n, now - 3 * RETAIN_MS), now).unwrap();
        }
        append(&qa, &s, &entry(fits - 1, now - 10), now).unwrap();
        assert_eq!(read(&qa, &s).unwrap().len(), fits as usize);
        // The next append rewrites without the stale entries.
        append(&qa, &s, &entry(fits, now), now).unwrap();
        let kept = read(&qa, &s).unwrap();
        assert_eq!(kept.iter().map(|e| e.nonce.clone()).collect::<Vec<_>>(), vec![format!("{:032x}", fits - 1), format!("{:032x}", fits)]);
        assert!(check_unlisted(&kept, &format!("{:032x}", fits)).unwrap_err().code_as() == Some(codes::PASS_REPLAYED));
        assert!(check_unlisted(&kept, &format!("{:032x}", 0)).is_ok(), "a stale entry is gone (its pass is pass_stale anyway)");
        // A torn last line or an open mode refuses everything.
        let p = path(&qa, &s).unwrap();
        use std::io::Write;
        std::fs::OpenOptions::new().append(true).open(&p).unwrap().write_all(b"{\"nonce\"").unwrap();
        assert!(read(&qa, &s).unwrap_err().code_as() == Some(codes::LEDGER_INVALID));
        std::fs::write(&p, entry(1, now).to_line()).unwrap();
        std::fs::set_permissions(&p, std::os::unix::fs::PermissionsExt::from_mode(0o644)).unwrap();
        assert!(read(&qa, &s).unwrap_err().code_as() == Some(codes::LEDGER_INVALID));
        assert!(append(&qa, &s, &entry(2, now), now).unwrap_err().code_as() == Some(codes::LEDGER_INVALID));
        // No state directory: unavailable.
        let none = QaDir::open(&data).unwrap().with_ledger_dir(None);
        assert!(read(&none, &s).unwrap_err().code_as() == Some(codes::LEDGER_UNAVAILABLE));
    }
}
