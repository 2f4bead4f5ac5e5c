//! The workspace index: every workspace that ever had a latch, kept beside
//! the head records ([`crate::head::default_dir`]), so a workspace whose
//! latch AND head record are both gone is still known to have had one
//! (wake-check: `latch_deleted`).
//!
//! `<heads-dir>/latch-workspaces.jsonl`: owner-only, append-only (written by
//! `memory-latch init` only, `O_APPEND`, fsynced), one compact JSON line per
//! workspace, keys in this order:
//! `{"schema":"memory-latch.workspace/v1","workspace":"<canonical path>","initAtMs":N}`.
//! A workspace is listed once (a second init appends nothing). At most
//! [`MAX_INDEX_BYTES`]: an init that would exceed it fails
//! (`latch_index_unavailable`), nothing is dropped. An index that exists but
//! is not an owner-only regular file or holds a line that does not parse is
//! `latch_index_invalid`.

use kijito_files::private::{self, FileRules};
use kijito_protocol::error::{Error, Result};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

pub const INDEX_FILE: &str = "latch-workspaces.jsonl";
pub const INDEX_SCHEMA: &str = "memory-latch.workspace/v1";
/// Largest index (about 8000 workspaces of 100-byte paths).
pub const MAX_INDEX_BYTES: u64 = 1024 * 1024;

/// Stable codes (in the registry, [`kijito_protocol::codes::latch`]).
pub mod codes {
    pub use kijito_protocol::codes::latch::{INDEX_INVALID, INDEX_UNAVAILABLE};
}

/// The index file in a heads directory.
pub fn path(heads_dir: &Path) -> PathBuf {
    heads_dir.join(INDEX_FILE)
}

fn line(workspace: &str, now_ms: u64) -> String {
    format!("{}\n", json!({"schema": INDEX_SCHEMA, "workspace": workspace, "initAtMs": now_ms}))
}

/// Every workspace listed, in order (none when the index does not exist).
pub fn read(heads_dir: &Path) -> Result<Vec<String>> {
    let p = path(heads_dir);
    if std::fs::symlink_metadata(&p).is_err() {
        return Ok(Vec::new());
    }
    let bad = |why: String| Error::new(codes::INDEX_INVALID, format!("the latch workspace index {}: {why}", p.display()));
    let rules = FileRules { owner_only: true, min_bytes: 0, max_bytes: MAX_INDEX_BYTES };
    let (bytes, _) = private::read_checked(&p, rules).map_err(|e| bad(format!("{} ({})", e.message(), e.code())))?;
    if bytes.last().is_some_and(|b| *b != b'\n') {
        return Err(bad("ends in a partial line".into()));
    }
    let mut out = Vec::new();
    for l in bytes.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
        let v: Value = serde_json::from_slice(l).map_err(|_| bad("a line is not JSON".into()))?;
        let w = v.get("workspace").and_then(Value::as_str).filter(|w| w.starts_with('/'));
        let at = v.get("initAtMs").and_then(Value::as_u64);
        match (v.get("schema").and_then(Value::as_str), w, at, v.as_object().map(|o| o.len())) {
            (Some(INDEX_SCHEMA), Some(w), Some(at), Some(3)) if line(w, at).as_bytes() == [l, b"\n"].concat().as_slice() => {
                out.push(w.to_owned())
            }
            _ => return Err(bad("a line is not an index entry".into())),
        }
    }
    Ok(out)
}

/// Whether the canonical workspace `root` is listed.
pub fn contains(heads_dir: &Path, root: &Path) -> Result<bool> {
    let w = crate::layout::Paths::show(root);
    Ok(read(heads_dir)?.contains(&w))
}

/// List `root` (once), creating the private heads directory if needed.
pub fn record(heads_dir: &Path, root: &Path, now_ms: u64) -> Result<()> {
    if contains(heads_dir, root)? {
        return Ok(());
    }
    let unavailable = |e: Error| {
        Error::new(codes::INDEX_UNAVAILABLE, format!("cannot list the workspace in {}: {}", path(heads_dir).display(), e.message()))
    };
    private::ensure_private_dir(heads_dir).map_err(unavailable)?;
    private::append_private(&path(heads_dir), line(&crate::layout::Paths::show(root), now_ms).as_bytes(), MAX_INDEX_BYTES)
        .map_err(unavailable)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listed_once_strict_and_owner_only() {
        let d = tempfile::tempdir().unwrap();
        let heads = d.path().join("heads");
        assert_eq!(read(&heads).unwrap(), Vec::<String>::new());
        assert!(!contains(&heads, Path::new("/w/one")).unwrap());
        record(&heads, Path::new("/w/one"), 5).unwrap();
        record(&heads, Path::new("/w/two"), 6).unwrap();
        record(&heads, Path::new("/w/one"), 7).unwrap();
        assert_eq!(read(&heads).unwrap(), vec!["/w/one".to_owned(), "/w/two".to_owned()]);
        assert_eq!(
            std::fs::read_to_string(path(&heads)).unwrap().lines().next().unwrap(),
            r#"{"schema":"memory-latch.workspace/v1","workspace":"/w/one","initAtMs":5}"#
        );
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(path(&heads)).unwrap().permissions().mode() & 0o777, 0o600);
        std::fs::set_permissions(path(&heads), std::fs::Permissions::from_mode(0o644)).unwrap();
        assert!(read(&heads).unwrap_err().code_as() == Some(codes::INDEX_INVALID));
        std::fs::set_permissions(path(&heads), std::fs::Permissions::from_mode(0o600)).unwrap();
        for junk in [
            &b"{\"workspace\":\"/w\"}\n"[..],
            b"garbage\n",
            b"{\"schema\":\"memory-latch.workspace/v1\",\"workspace\":\"/w\",\"initAtMs\":1}",
        ] {
            std::fs::write(path(&heads), junk).unwrap();
            assert!(read(&heads).unwrap_err().code_as() == Some(codes::INDEX_INVALID), "{junk:?}");
        }
    }
}
