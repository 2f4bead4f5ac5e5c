//! The flight recorder (docs/protocol.md §13): one hash-chained JSON line per
//! decision or state change, per session, in `<data-dir>/journal/<session>.jsonl`.
//!
//! A line is written with one `write` on a file opened `O_APPEND` without
//! following a symlink, under an exclusive lock on that file (so the chain
//! has one order when hooks run at once). Each line carries `prev`, the
//! SHA-256 of the previous line's bytes (its newline excluded); the first
//! line of a session carries [`GENESIS`]. Past [`MAX_FILE_BYTES`] the file is
//! renamed `<session>.<k>.jsonl` (k = 1, 2, ...) and the next line starts a
//! new file whose `prev` is the hash of the renamed file's last line: the
//! chain is carried across. The journal is a record, not a gate: callers use
//! [`event`], which never fails; a line that could not be written is noted
//! in `<session>.failed` for `kijito-report` to show.
//!
//! Appends are not fsynced (a hook must stay fast): a crash may lose the
//! last lines, never reorder or half-write the earlier ones.

use crate::private::{self, codes as file_codes};
use kijito_protocol::error::{Error, Result};
use kijito_protocol::ids::SessionId;
use serde_json::{Map, Value};
use sha2::{Digest as _, Sha256};
use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{FileExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// Stable codes of the journal (the `journal` area).
pub mod codes {
    kijito_protocol::codes! {
        LINE_TOO_LARGE LineTooLarge = "journal_line_too_large",
        FULL Full = "journal_full",
        BROKEN Broken = "journal_broken",
        BUSY Busy = "journal_busy",
        NO_SESSION NoSession = "journal_no_session",
        TARGET_INVALID TargetInvalid = "journal_target_invalid",
        SESSION_UNKNOWN SessionUnknown = "journal_session_unknown",
    }
}

/// The journal directory's name in a data dir.
pub const DIR: &str = "journal";
/// The schema version every line carries (`"v":1`).
pub const VERSION: u64 = 1;
/// A file is rotated before it would exceed this many bytes.
pub const MAX_FILE_BYTES: u64 = 4 << 20;
/// The longest line (bytes, newline included).
pub const MAX_LINE_BYTES: usize = 8 << 10;
/// Rotated files kept per session; past them appends fail `journal_full`.
pub const MAX_ROTATED: u32 = 64;
/// The journal of what a command run outside every host session recorded
/// (the user's own `memory-latch recover` or `approve` by hand), chained
/// like a session's: `<data-dir>/journal/user.jsonl` (docs/protocol.md §13).
pub const USER_SESSION: &str = "user";
/// The `prev` of a session's first line.
pub const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";
/// Bound of the failure notes (`<session>.failed`).
const MAX_FAILED_BYTES: u64 = 64 << 10;
/// Keys every line sets itself; a field with one of these names is dropped.
const RESERVED: &[&str] = &["v", "seq", "ts_ms", "session", "kind", "prev"];

/// What happened (the `kind` of a line; docs/protocol.md §13 lists each one's fields).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    SessionStart,
    Prompt,
    ToolDecision,
    ConsentRequested,
    ConsentIssued,
    ConsentConfirmed,
    ConsentSpent,
    ConsentRefused,
    Boot,
    PassRecorded,
    PassWithdrawn,
    CompactionRequested,
    CompactionTriggered,
    Precompact,
    Claim,
    Delivery,
    LatchMode,
    Recovery,
    WakeCheck,
    WakeCheckLive,
    ContextSample,
}

impl Kind {
    pub const ALL: &'static [Kind] = &[
        Kind::SessionStart,
        Kind::Prompt,
        Kind::ToolDecision,
        Kind::ConsentRequested,
        Kind::ConsentIssued,
        Kind::ConsentConfirmed,
        Kind::ConsentSpent,
        Kind::ConsentRefused,
        Kind::Boot,
        Kind::PassRecorded,
        Kind::PassWithdrawn,
        Kind::CompactionRequested,
        Kind::CompactionTriggered,
        Kind::Precompact,
        Kind::Claim,
        Kind::Delivery,
        Kind::LatchMode,
        Kind::Recovery,
        Kind::WakeCheck,
        Kind::WakeCheckLive,
        Kind::ContextSample,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Kind::SessionStart => "session_start",
            Kind::Prompt => "prompt",
            Kind::ToolDecision => "tool_decision",
            Kind::ConsentRequested => "consent_requested",
            Kind::ConsentIssued => "consent_issued",
            Kind::ConsentConfirmed => "consent_confirmed",
            Kind::ConsentSpent => "consent_spent",
            Kind::ConsentRefused => "consent_refused",
            Kind::Boot => "boot",
            Kind::PassRecorded => "pass_recorded",
            Kind::PassWithdrawn => "pass_withdrawn",
            Kind::CompactionRequested => "compaction_requested",
            Kind::CompactionTriggered => "compaction_triggered",
            Kind::Precompact => "precompact",
            Kind::Claim => "claim",
            Kind::Delivery => "delivery",
            Kind::LatchMode => "latch_mode",
            Kind::Recovery => "recovery",
            Kind::WakeCheck => "wake_check",
            Kind::WakeCheckLive => "wake_check_live",
            Kind::ContextSample => "context_sample",
        }
    }

    pub fn parse(text: &str) -> Option<Kind> {
        Kind::ALL.iter().copied().find(|k| k.as_str() == text)
    }
}

/// `<data-dir>/journal`.
pub fn dir(data_dir: &Path) -> PathBuf {
    data_dir.join(DIR)
}

/// The current file of a session: `<data-dir>/journal/<session>.jsonl`.
pub fn current_file(data_dir: &Path, session: &SessionId) -> PathBuf {
    dir(data_dir).join(format!("{session}.jsonl"))
}

/// The `k`-th rotated file of a session (`k` from 1, oldest first).
pub fn rotated_file(data_dir: &Path, session: &SessionId, k: u32) -> PathBuf {
    dir(data_dir).join(format!("{session}.{k}.jsonl"))
}

/// The failure notes of a session: `<data-dir>/journal/<session>.failed`.
pub fn failed_file(data_dir: &Path, session: &SessionId) -> PathBuf {
    dir(data_dir).join(format!("{session}.failed"))
}

/// Lowercase hex SHA-256 of one line's bytes (newline excluded).
pub fn line_hash(line: &[u8]) -> String {
    format!("{:x}", Sha256::digest(line))
}

/// Lowercase hex SHA-256 of some text (a prompt is recorded by its hash).
pub fn text_hash(text: &str) -> String {
    line_hash(text.as_bytes())
}

fn now_ms() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis() as i64).unwrap_or(0)
}

/// Record one event and never fail: the journal is a record, not a gate. A
/// line that cannot be written is noted in `<session>.failed` (best effort),
/// which `kijito-report` shows.
pub fn event(data_dir: &Path, session: &SessionId, kind: Kind, fields: Value) {
    if let Err(e) = append(data_dir, session, kind, fields) {
        let note = serde_json::json!({"ts_ms": now_ms(), "kind": kind.as_str(), "code": e.code()});
        let _ = private::ensure_private_dir(&dir(data_dir))
            .and_then(|_| private::append_private(&failed_file(data_dir, session), format!("{note}\n").as_bytes(), MAX_FAILED_BYTES));
    }
}

/// The journal a command run outside a hook was told to record in
/// (`--data-dir`, `--session-id`: the command a hook names, docs/protocol.md
/// §13), checked before the command does anything: the data dir a hook
/// journals in (a directory of this user that no one else can write, no
/// symlink — Claude Code makes its plugin data dir 0755 —, already holding
/// the private journal directory a hook made, and written as one word of a
/// helper command, so a
/// command that prints it stays one command) and a session a hook started
/// there (its journal an owner-only regular file; never [`USER_SESSION`],
/// which only a command run without `--session-id` writes).
/// `journal_target_invalid` or `journal_session_unknown` otherwise.
pub fn named_target(data_dir: &Path, session: Option<&SessionId>) -> Result<()> {
    let bad = |why: String| Error::new(codes::TARGET_INVALID, format!("data dir {}: {why}", data_dir.display()));
    if !data_dir.to_str().is_some_and(kijito_protocol::command::is_command_word) {
        return Err(bad("not a word of a helper command (letters, digits and / . _ - = : + , @ % only)".into()));
    }
    private::check_dir(data_dir, false).map_err(|e| bad(format!("{} ({})", e.message(), e.code())))?;
    private::check_dir(&dir(data_dir), true).map_err(|e| bad(format!("no journal of a hook: {} ({})", e.message(), e.code())))?;
    let Some(s) = session else { return Ok(()) };
    let unknown = |why: &str| Error::new(codes::SESSION_UNKNOWN, format!("session {s}: {why}"));
    if s.as_str() == USER_SESSION {
        return Err(unknown("the journal of commands run by hand, never named by a hook"));
    }
    let path = current_file(data_dir, s);
    let meta = fs::symlink_metadata(&path).map_err(|_| unknown("no hook started it in this data dir (no journal)"))?;
    if meta.file_type().is_symlink() {
        return Err(unknown("its journal is a symlink"));
    }
    check_meta(&path, &meta).map_err(|e| unknown(&format!("its journal: {} ({})", e.message(), e.code())))
}

/// Append one line; returns its `seq`. `fields` (an object; anything else
/// is recorded as `{}`) follow the fixed keys in their order.
pub fn append(data_dir: &Path, session: &SessionId, kind: Kind, fields: Value) -> Result<u64> {
    let dir = dir(data_dir);
    private::ensure_private_dir(&dir)?;
    let path = current_file(data_dir, session);
    // A rotation by another process between our open and our lock leaves us
    // holding the renamed file: reopen (bounded).
    for _ in 0..8 {
        let file = open_append(&path)?;
        let mut lock = fd_lock::RwLock::new(file);
        let guard = lock.write().map_err(|e| Error::new(codes::BUSY, format!("cannot lock {}: {e}", path.display())))?;
        let meta = guard.metadata().map_err(|e| private::file_error(file_codes::READ, format!("cannot stat {}: {e}", path.display())))?;
        match fs::symlink_metadata(&path) {
            Ok(now) if now.ino() == meta.ino() && now.dev() == meta.dev() => {}
            _ => continue,
        }
        check_meta(&path, &meta)?;
        let (seq, prev) = match last_line(&guard, meta.size(), &path)? {
            Some(last) => (seq_of(&last, &path)? + 1, line_hash(&last)),
            None if meta.size() == 0 => previous_file_tail(data_dir, session)?,
            None => unreachable_tail(&path)?,
        };
        let line = build_line(seq, now_ms(), session, kind, fields.clone(), &prev)?;
        if meta.size() > 0 && meta.size() + line.len() as u64 > MAX_FILE_BYTES {
            rotate(data_dir, session, &path)?;
            // The new file is created by the next pass (the renamed one is ours no more).
            drop(guard);
            continue;
        }
        let mut f: &File = &guard;
        f.write_all(&line).map_err(|e| private::file_error(file_codes::WRITE, format!("cannot append to {}: {e}", path.display())))?;
        return Ok(seq);
    }
    Err(Error::new(codes::BUSY, format!("{} kept being rotated under this writer", path.display())))
}

fn unreachable_tail(path: &Path) -> Result<(u64, String)> {
    Err(Error::new(codes::BROKEN, format!("{} does not end in a whole line", path.display())))
}

fn open_append(path: &Path) -> Result<File> {
    OpenOptions::new()
        .read(true)
        .append(true)
        .create(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
        .map_err(|e| match e.raw_os_error() {
            Some(libc::ELOOP) => private::file_error(file_codes::SYMLINK, format!("{} is a symlink", path.display())),
            _ => private::file_error(file_codes::WRITE, format!("cannot open {} for appending: {e}", path.display())),
        })
}

fn check_meta(path: &Path, meta: &fs::Metadata) -> Result<()> {
    if !meta.is_file() {
        return Err(private::file_error(file_codes::NOT_REGULAR, format!("{} is not a regular file", path.display())));
    }
    if meta.uid() != private::current_uid() {
        return Err(private::file_error(file_codes::NOT_OWNED, format!("{} is not owned by the current user", path.display())));
    }
    if meta.mode() & 0o077 != 0 {
        return Err(private::file_error(file_codes::PERMISSIONS, format!("{} is readable or writable by group or others", path.display())));
    }
    Ok(())
}

/// The last whole line of an open file of `size` bytes (without its
/// newline), or `None` when the file is empty. A file that does not end in
/// a newline, or whose last line is longer than [`MAX_LINE_BYTES`], is broken.
fn last_line(file: &File, size: u64, path: &Path) -> Result<Option<Vec<u8>>> {
    if size == 0 {
        return Ok(None);
    }
    let want = size.min(MAX_LINE_BYTES as u64 + 1);
    let mut buf = vec![0u8; want as usize];
    file.read_exact_at(&mut buf, size - want)
        .map_err(|e| private::file_error(file_codes::READ, format!("cannot read {}: {e}", path.display())))?;
    if buf.last() != Some(&b'\n') {
        return Err(Error::new(codes::BROKEN, format!("{} does not end in a whole line", path.display())));
    }
    buf.pop();
    match buf.iter().rposition(|b| *b == b'\n') {
        Some(i) => Ok(Some(buf[i + 1..].to_vec())),
        None if want == size => Ok(Some(buf)),
        None => Err(Error::new(codes::BROKEN, format!("the last line of {} is longer than {MAX_LINE_BYTES} bytes", path.display()))),
    }
}

fn seq_of(line: &[u8], path: &Path) -> Result<u64> {
    serde_json::from_slice::<Value>(line)
        .ok()
        .and_then(|v| v.get("seq").and_then(Value::as_u64))
        .ok_or_else(|| Error::new(codes::BROKEN, format!("the last line of {} is not a journal line", path.display())))
}

/// `(seq, prev)` of the first line of a fresh current file: carried from the
/// newest rotated file, or the genesis.
fn previous_file_tail(data_dir: &Path, session: &SessionId) -> Result<(u64, String)> {
    let Some(k) = newest_rotated(data_dir, session) else { return Ok((1, GENESIS.to_owned())) };
    let path = rotated_file(data_dir, session, k);
    let (bytes, _) = private::read_checked(&path, private::FileRules { owner_only: true, min_bytes: 1, max_bytes: MAX_FILE_BYTES })?;
    let tail =
        bytes.strip_suffix(b"\n").ok_or_else(|| Error::new(codes::BROKEN, format!("{} does not end in a whole line", path.display())))?;
    let last = &tail[tail.iter().rposition(|b| *b == b'\n').map(|i| i + 1).unwrap_or(0)..];
    Ok((seq_of(last, &path)? + 1, line_hash(last)))
}

/// The highest `k` with a rotated file, if any.
fn newest_rotated(data_dir: &Path, session: &SessionId) -> Option<u32> {
    (1..=MAX_ROTATED).take_while(|k| fs::symlink_metadata(rotated_file(data_dir, session, *k)).is_ok()).last()
}

fn rotate(data_dir: &Path, session: &SessionId, path: &Path) -> Result<()> {
    let k = newest_rotated(data_dir, session).map(|k| k + 1).unwrap_or(1);
    if k > MAX_ROTATED {
        return Err(Error::new(codes::FULL, format!("{} has {MAX_ROTATED} rotated files already", path.display())));
    }
    let to = rotated_file(data_dir, session, k);
    if fs::symlink_metadata(&to).is_ok() {
        return Err(private::file_error(file_codes::EXISTS, format!("{} already exists", to.display())));
    }
    fs::rename(path, &to).map_err(|e| private::file_error(file_codes::WRITE, format!("cannot rotate {}: {e}", path.display())))?;
    private::fsync_dir(&dir(data_dir))
}

/// One line, newline included: `{"v":1,"seq":..,"ts_ms":..,"session":..,"kind":..,<fields>,"prev":..}`.
pub fn build_line(seq: u64, ts_ms: i64, session: &SessionId, kind: Kind, fields: Value, prev: &str) -> Result<Vec<u8>> {
    let mut m = Map::new();
    m.insert("v".into(), VERSION.into());
    m.insert("seq".into(), seq.into());
    m.insert("ts_ms".into(), ts_ms.into());
    m.insert("session".into(), session.as_str().into());
    m.insert("kind".into(), kind.as_str().into());
    if let Value::Object(fields) = fields {
        for (k, v) in fields {
            if !RESERVED.contains(&k.as_str()) {
                m.insert(k, v);
            }
        }
    }
    m.insert("prev".into(), prev.into());
    let mut line =
        serde_json::to_vec(&Value::Object(m)).map_err(|e| Error::new(codes::BROKEN, format!("cannot print a journal line: {e}")))?;
    line.push(b'\n');
    if line.len() > MAX_LINE_BYTES {
        return Err(Error::new(
            codes::LINE_TOO_LARGE,
            format!("a {} line of {} bytes exceeds {MAX_LINE_BYTES}", kind.as_str(), line.len()),
        ));
    }
    Ok(line)
}

/// A session's journal as read: its events in order, the failures noted,
/// and where (if anywhere) its chain breaks.
#[derive(Debug, Clone, Default)]
pub struct Journal {
    pub events: Vec<Value>,
    /// `<session>.failed`: lines that could not be written (newest last).
    pub failures: Vec<Value>,
    /// Lines read, over every file.
    pub lines: u64,
    pub broken: Option<Break>,
}

/// The first place a chain does not hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Break {
    /// The file holding the bad line.
    pub file: PathBuf,
    /// Its line number in that file (from 1).
    pub line: u64,
    /// Its line number over the whole session (from 1).
    pub global_line: u64,
    pub why: String,
}

/// The files of a session, oldest first (rotated ones, then the current).
pub fn files(data_dir: &Path, session: &SessionId) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> =
        (1..=MAX_ROTATED).map(|k| rotated_file(data_dir, session, k)).take_while(|p| fs::symlink_metadata(p).is_ok()).collect();
    let current = current_file(data_dir, session);
    if fs::symlink_metadata(&current).is_ok() {
        out.push(current);
    }
    out
}

/// Read and verify a session's journal. Events after a break are still
/// returned (the report says the chain broke and where). Fails only when
/// the session has no journal or a file cannot be read safely.
pub fn read(data_dir: &Path, session: &SessionId) -> Result<Journal> {
    let files = files(data_dir, session);
    let failures = read_failures(data_dir, session);
    if files.is_empty() && failures.is_empty() {
        return Err(Error::new(codes::NO_SESSION, format!("no journal for session {session} in {}", dir(data_dir).display())));
    }
    let rules = private::FileRules { owner_only: true, min_bytes: 0, max_bytes: MAX_FILE_BYTES + MAX_LINE_BYTES as u64 };
    let mut j = Journal { failures, ..Journal::default() };
    let mut prev = GENESIS.to_owned();
    let mut expected_seq = 1u64;
    for file in files {
        let (bytes, _) = private::read_checked(&file, rules)?;
        let broke = |j: &mut Journal, line: u64, global: u64, why: String| {
            if j.broken.is_none() {
                j.broken = Some(Break { file: file.clone(), line, global_line: global, why });
            }
        };
        let body = match bytes.strip_suffix(b"\n") {
            Some(b) => b,
            None if bytes.is_empty() => continue,
            None => {
                let n = bytes.split(|b| *b == b'\n').count() as u64;
                let global = j.lines + n;
                broke(&mut j, n, global, "the file does not end in a whole line".into());
                &bytes[..]
            }
        };
        for (i, line) in body.split(|b| *b == b'\n').enumerate() {
            j.lines += 1;
            let n = i as u64 + 1;
            let global = j.lines;
            let parsed = serde_json::from_slice::<Value>(line).ok().filter(Value::is_object);
            match &parsed {
                None => broke(&mut j, n, global, "not a JSON object".into()),
                Some(v) => {
                    if v.get("prev").and_then(Value::as_str) != Some(prev.as_str()) {
                        // The previous line is not the one this line chained to.
                        let why =
                            format!("line {} was changed, removed or inserted (the next line's prev does not match)", global.max(2) - 1);
                        if global == 1 {
                            broke(&mut j, n, global, "the first line does not start the chain".into());
                        } else if n == 1 {
                            // The changed line is the previous file's last.
                            broke(&mut j, n, global, why);
                        } else {
                            broke(&mut j, n - 1, global - 1, why);
                        }
                    } else if v.get("seq").and_then(Value::as_u64) != Some(expected_seq) {
                        broke(&mut j, n, global, format!("seq is not {expected_seq}"));
                    }
                    expected_seq = v.get("seq").and_then(Value::as_u64).unwrap_or(expected_seq) + 1;
                }
            }
            prev = line_hash(line);
            if let Some(v) = parsed {
                j.events.push(v);
            }
        }
    }
    Ok(j)
}

fn read_failures(data_dir: &Path, session: &SessionId) -> Vec<Value> {
    let rules = private::FileRules { owner_only: true, min_bytes: 0, max_bytes: MAX_FAILED_BYTES };
    match private::read_checked(&failed_file(data_dir, session), rules) {
        Ok((bytes, _)) => bytes
            .split(|b| *b == b'\n')
            .filter(|l| !l.is_empty())
            .map(|l| serde_json::from_slice(l).unwrap_or_else(|_| serde_json::json!({"code": "unreadable"})))
            .collect(),
        Err(e) if e.code_as() == Some(file_codes::NOT_FOUND) => Vec::new(),
        Err(e) => vec![serde_json::json!({"code": e.code()})],
    }
}

/// The sessions with a journal in a data dir, with the modification time
/// (ms) of their current file, newest first.
pub fn sessions(data_dir: &Path) -> Result<Vec<(SessionId, i64)>> {
    let d = dir(data_dir);
    let entries = match fs::read_dir(&d) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(private::file_error(file_codes::READ, format!("cannot list {}: {e}", d.display()))),
    };
    private::check_dir(&d, true)?;
    let mut out = Vec::new();
    for entry in entries.flatten().take(100_000) {
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        let Some(stem) = name.strip_suffix(".jsonl").or_else(|| name.strip_suffix(".failed")) else { continue };
        let Ok(s) = SessionId::parse(stem) else { continue };
        let mtime = entry.metadata().map(|m| m.mtime() * 1000 + m.mtime_nsec() / 1_000_000).unwrap_or(0);
        match out.iter_mut().find(|(o, _): &&mut (SessionId, i64)| *o == s) {
            Some(o) => o.1 = o.1.max(mtime),
            None => out.push((s, mtime)),
        }
    }
    out.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.as_str().cmp(b.0.as_str())));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::{symlink, PermissionsExt};

    fn data() -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        fs::set_permissions(d.path(), fs::Permissions::from_mode(0o700)).unwrap();
        d
    }

    fn sid() -> SessionId {
        SessionId::parse("s-1").unwrap()
    }

    /// Claude Code's plugin data dir is 0755: a command a hook named there is
    /// recorded; a dir others can write, or one no hook journalled in, is not.
    #[test]
    fn a_named_target_is_a_hooks_data_dir_that_no_one_else_can_write() {
        let d = data();
        let s = sid();
        fs::set_permissions(d.path(), fs::Permissions::from_mode(0o755)).unwrap();
        assert_eq!(named_target(d.path(), None).unwrap_err().code(), codes::TARGET_INVALID.as_str(), "no journal of a hook yet");
        append(d.path(), &s, Kind::Prompt, serde_json::json!({})).unwrap();
        named_target(d.path(), Some(&s)).unwrap();
        named_target(d.path(), None).unwrap();
        assert_eq!(named_target(d.path(), Some(&sid_of("s-2"))).unwrap_err().code(), codes::SESSION_UNKNOWN.as_str());
        fs::set_permissions(d.path(), fs::Permissions::from_mode(0o775)).unwrap();
        assert_eq!(named_target(d.path(), Some(&s)).unwrap_err().code(), codes::TARGET_INVALID.as_str(), "group-writable");
    }

    fn sid_of(s: &str) -> SessionId {
        SessionId::parse(s).unwrap()
    }

    #[test]
    fn lines_chain_and_verify() {
        let d = data();
        for i in 0..5 {
            assert_eq!(append(d.path(), &sid(), Kind::Prompt, serde_json::json!({"length": i})).unwrap(), i + 1);
        }
        let j = read(d.path(), &sid()).unwrap();
        assert_eq!(j.lines, 5);
        assert_eq!(j.broken, None);
        assert_eq!(j.events[0]["prev"], GENESIS);
        let meta = fs::metadata(current_file(d.path(), &sid())).unwrap();
        assert_eq!(meta.mode() & 0o777, 0o600);
        assert_eq!(fs::metadata(dir(d.path())).unwrap().mode() & 0o777, 0o700);
    }

    #[test]
    fn a_flipped_byte_is_found_with_its_line() {
        let d = data();
        for i in 0..4 {
            append(d.path(), &sid(), Kind::Prompt, serde_json::json!({"length": i})).unwrap();
        }
        let p = current_file(d.path(), &sid());
        let mut bytes = fs::read(&p).unwrap();
        let second = bytes.iter().position(|b| *b == b'\n').unwrap() + 1;
        let at = second + bytes[second..].windows(8).position(|w| w == b"\"length\"").unwrap() + 9;
        bytes[at] = b'7';
        fs::write(&p, &bytes).unwrap();
        let b = read(d.path(), &sid()).unwrap().broken.unwrap();
        assert_eq!((b.line, b.global_line), (2, 2), "{b:?}");
    }

    #[test]
    fn rotation_carries_the_chain() {
        let d = data();
        let big = "x".repeat(6000);
        let n = (MAX_FILE_BYTES / 6000) + 5;
        for _ in 0..n {
            append(d.path(), &sid(), Kind::Prompt, serde_json::json!({"pad": big})).unwrap();
        }
        assert!(rotated_file(d.path(), &sid(), 1).exists());
        let j = read(d.path(), &sid()).unwrap();
        assert_eq!(j.broken, None);
        assert_eq!(j.lines, n);
        assert_eq!(j.events.last().unwrap()["seq"], n);
    }

    #[test]
    fn symlinked_journal_is_refused_and_noted() {
        let d = data();
        fs::create_dir(dir(d.path())).unwrap();
        fs::set_permissions(dir(d.path()), fs::Permissions::from_mode(0o700)).unwrap();
        symlink("/etc/hostname", current_file(d.path(), &sid())).unwrap();
        assert_eq!(append(d.path(), &sid(), Kind::Prompt, Value::Null).unwrap_err().code(), file_codes::SYMLINK.as_str());
        event(d.path(), &sid(), Kind::Prompt, Value::Null);
        let failures = read_failures(d.path(), &sid());
        assert_eq!(failures[0]["code"], file_codes::SYMLINK.as_str());
    }

    #[test]
    fn reserved_fields_are_dropped_and_lines_bounded() {
        let line = build_line(3, 9, &sid(), Kind::Claim, serde_json::json!({"prev": "x", "attested": true}), GENESIS).unwrap();
        let text = String::from_utf8(line).unwrap();
        assert_eq!(
            text,
            format!("{{\"v\":1,\"seq\":3,\"ts_ms\":9,\"session\":\"s-1\",\"kind\":\"claim\",\"attested\":true,\"prev\":\"{GENESIS}\"}}\n")
        );
        let huge = "y".repeat(MAX_LINE_BYTES);
        assert_eq!(
            build_line(1, 1, &sid(), Kind::Claim, serde_json::json!({"pad": huge}), GENESIS).unwrap_err().code(),
            codes::LINE_TOO_LARGE.as_str()
        );
    }
}
