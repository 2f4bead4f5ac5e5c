//! The session taint (docs/policy.md, docs/protocol.md §8a): the files a
//! session's tool calls wrote, so that running one of them later is
//! `opaque_tainted` (consent), not a plain program.
//!
//! One owner-only file a session, `<data>/taint/<sha256(session_id)>.paths`:
//! one absolute path a line, appended with `O_APPEND`
//! ([`kijito_files::private::append_private`]), at most [`MAX_BYTES`]. It is
//! read only when a call executes a file. A record past its bound, or one
//! that cannot be read as this user's private file, taints every executed
//! file (fail closed); a path that is not one line (a newline in it) is
//! recorded as `*`, which does the same.

use kijito_files::private;
use sha2::Digest;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Where the session records live, under the data dir.
pub const DIR: &str = "taint";
/// The most one session's record holds.
pub const MAX_BYTES: u64 = 256 * 1024;
/// The longest path recorded as itself (longer ones are `*`).
const MAX_PATH: usize = 4096;

/// The record file of one session.
pub fn path(data_dir: &Path, session_id: &str) -> PathBuf {
    let hex = format!("{:x}", sha2::Sha256::digest(session_id.as_bytes()));
    data_dir.join(DIR).join(format!("{}.paths", &hex[..32]))
}

/// Append the files one call writes that the record does not hold yet (a
/// file edited again costs one read, not an append and its fsync). A
/// record that cannot be written (a full one, a foreign file in its place)
/// leaves the call to the policy: a full record already taints everything.
pub fn record(data_dir: &Path, session_id: &str, written: &[String]) -> kijito_protocol::error::Result<()> {
    let (known, all) = read(data_dir, session_id);
    if all || written.iter().all(|p| known.contains(p)) {
        return Ok(());
    }
    let mut lines = String::new();
    for p in written.iter().filter(|p| !known.contains(*p)) {
        if p.contains('\n') || p.len() > MAX_PATH {
            lines.push_str("*\n");
        } else {
            lines.push_str(p);
            lines.push('\n');
        }
    }
    let file = path(data_dir, session_id);
    if let Some(dir) = file.parent() {
        private::ensure_private_dir(dir)?;
    }
    private::append_private(&file, lines.as_bytes(), MAX_BYTES)
}

/// The files this session wrote, and whether every executed file counts as
/// written (the record is full, holds `*`, or is not this user's private file).
pub fn read(data_dir: &Path, session_id: &str) -> (BTreeSet<String>, bool) {
    let file = path(data_dir, session_id);
    if std::fs::symlink_metadata(&file).is_err() {
        return (BTreeSet::new(), false);
    }
    let rules = private::FileRules { owner_only: true, min_bytes: 0, max_bytes: MAX_BYTES };
    match private::read_checked(&file, rules) {
        Ok((bytes, _)) => {
            let full = bytes.len() as u64 + MAX_PATH as u64 + 1 > MAX_BYTES;
            let text = String::from_utf8_lossy(&bytes);
            let set: BTreeSet<String> = text.lines().filter(|l| !l.is_empty()).map(str::to_owned).collect();
            let all = full || set.contains("*");
            (set, all)
        }
        Err(_) => (BTreeSet::new(), true),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn data() -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
        d
    }

    #[test]
    fn a_session_record_is_private_appended_and_bounded() {
        let d = data();
        assert_eq!(read(d.path(), "s1"), (BTreeSet::new(), false));
        record(d.path(), "s1", &["/w/diag.py".into()]).unwrap();
        record(d.path(), "s1", &["/w/run.sh".into(), "/w/a\nb".into()]).unwrap();
        let (set, all) = read(d.path(), "s1");
        assert!(set.contains("/w/diag.py") && set.contains("/w/run.sh"));
        // a path already held is not appended again
        let len = std::fs::metadata(path(d.path(), "s1")).unwrap().len();
        record(d.path(), "s1", &["/w/diag.py".into()]).unwrap();
        assert_eq!(std::fs::metadata(path(d.path(), "s1")).unwrap().len(), len);
        assert!(all, "a path of two lines taints everything");
        assert_eq!(read(d.path(), "s2"), (BTreeSet::new(), false), "another session's record is its own");
        let f = path(d.path(), "s1");
        assert_eq!(std::fs::metadata(&f).unwrap().permissions().mode() & 0o777, 0o600);
        assert_eq!(std::fs::metadata(f.parent().unwrap()).unwrap().permissions().mode() & 0o777, 0o700);
        // full: every executed file is tainted
        let big = "/".to_string() + &"x".repeat(4000);
        let mut n = 0;
        while !read(d.path(), "s3").1 {
            let _ = record(d.path(), "s3", &[format!("{big}{n}")]);
            n += 1;
            assert!(n < 1000, "the record never filled");
        }
        assert!(n > 50, "{n} paths of 4 KB filled a 256 KiB record");
        // a record opened to others is not trusted
        record(d.path(), "s4", &["/w/x".into()]).unwrap();
        std::fs::set_permissions(path(d.path(), "s4"), std::fs::Permissions::from_mode(0o644)).unwrap();
        assert!(read(d.path(), "s4").1);
    }

    /// A call that writes nothing records nothing (no file, no directory);
    /// a record that already taints everything (`*`) is not appended to.
    #[test]
    fn nothing_is_appended_that_changes_nothing() {
        let d = data();
        record(d.path(), "s1", &[]).unwrap();
        assert!(!d.path().join(DIR).exists());
        record(d.path(), "s1", &["/w/a\nb".into()]).unwrap();
        let len = std::fs::metadata(path(d.path(), "s1")).unwrap().len();
        record(d.path(), "s1", &["/w/new.sh".into()]).unwrap();
        assert_eq!(std::fs::metadata(path(d.path(), "s1")).unwrap().len(), len);
        assert_eq!(read(d.path(), "s1"), (BTreeSet::from(["*".to_owned()]), true));
    }

    /// A path of up to [`MAX_PATH`] bytes is recorded as itself, a longer
    /// one as `*`; a record is full once one more longest path and its
    /// newline might not fit in [`MAX_BYTES`].
    #[test]
    fn the_path_and_record_bounds_are_exact() {
        let d = data();
        let longest = "/".repeat(MAX_PATH);
        record(d.path(), "s1", std::slice::from_ref(&longest)).unwrap();
        assert_eq!(read(d.path(), "s1"), (BTreeSet::from([longest.clone()]), false));
        record(d.path(), "s2", &[longest.clone() + "/"]).unwrap();
        assert_eq!(read(d.path(), "s2"), (BTreeSet::from(["*".to_owned()]), true));
        // a record of `room` bytes still takes one longest path; one byte more is full
        let room = (MAX_BYTES - MAX_PATH as u64 - 1) as usize;
        let file = path(d.path(), "s3");
        for (size, full) in [(room, false), (room + 1, true)] {
            let line = format!("/{}\n", "x".repeat(size - 2));
            std::fs::write(&file, &line).unwrap();
            std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
            assert_eq!(read(d.path(), "s3"), (BTreeSet::from([line.trim_end().to_owned()]), full), "{size} bytes");
        }
    }
}
