//! Where the latch lives and the checks on every path: the workspace is
//! canonicalised once; `.memory-latch`, `history/`, the manifest, the lock
//! and the ledger are fixed names below it and must never be symlinks.

use kijito_files::private;
use kijito_protocol::error::{Error, Result};
use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

pub const DIR_NAME: &str = ".memory-latch";
pub const MANIFEST: &str = "_manifest.md";
pub const LOCK: &str = "_manifest.lock";
pub const LEDGER: &str = "tokens.json";
pub const HISTORY: &str = "history";
pub const WITNESS: &str = "silent-witness.json";
pub const ARCHIVE: &str = "archive";

/// Entries kept in the live `_manifest.md` before they are sealed into a
/// history segment.
pub const SEGMENT_ENTRIES: usize = 128;
/// Upper bound on one manifest or segment file.
pub const MAX_FILE_BYTES: u64 = 64 * 1024 * 1024;

/// Every path of one latch.
#[derive(Debug, Clone)]
pub struct Paths {
    pub root: PathBuf,
    pub dir: PathBuf,
    pub manifest: PathBuf,
    pub lock: PathBuf,
    pub ledger: PathBuf,
    pub history: PathBuf,
    pub witness: PathBuf,
    pub archive: PathBuf,
}

impl Paths {
    /// Canonicalise `workspace` (a directory owned by this user) and derive
    /// the fixed paths below it.
    pub fn new(workspace: &Path) -> Result<Paths> {
        let root = fs::canonicalize(workspace)
            .map_err(|e| Error::new(crate::codes::WORKSPACE_INVALID, format!("cannot resolve workspace {}: {e}", workspace.display())))?;
        let meta = fs::metadata(&root)
            .map_err(|e| Error::new(crate::codes::WORKSPACE_INVALID, format!("cannot stat workspace {}: {e}", root.display())))?;
        if !meta.is_dir() {
            return Err(Error::new(crate::codes::WORKSPACE_INVALID, format!("workspace {} is not a directory", root.display())));
        }
        if meta.uid() != private::current_uid() {
            return Err(Error::new(
                crate::codes::WORKSPACE_INVALID,
                format!("workspace {} is not owned by the current user", root.display()),
            ));
        }
        if root.to_str().is_none() {
            return Err(Error::new(crate::codes::WORKSPACE_INVALID, "workspace path is not valid UTF-8"));
        }
        let dir = root.join(DIR_NAME);
        Ok(Paths {
            manifest: dir.join(MANIFEST),
            lock: dir.join(LOCK),
            ledger: dir.join(LEDGER),
            history: dir.join(HISTORY),
            witness: dir.join(WITNESS),
            archive: dir.join(ARCHIVE),
            dir,
            root,
        })
    }

    pub fn segment(&self, index: u64) -> PathBuf {
        self.history.join(segment_name(index))
    }

    pub fn show(p: &Path) -> String {
        p.to_str().unwrap_or_default().to_owned()
    }
}

pub fn segment_name(index: u64) -> String {
    format!("segment-{index:06}.md")
}

/// Parse `segment-000123.md` to 123.
pub fn parse_segment_name(name: &str) -> Option<u64> {
    let digits = name.strip_prefix("segment-")?.strip_suffix(".md")?;
    if digits.len() < 6 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let n: u64 = digits.parse().ok()?;
    (n >= 1 && segment_name(n) == name).then_some(n)
}

/// Whether `path` exists as a symlink (never followed).
pub fn is_symlink(path: &Path) -> bool {
    fs::symlink_metadata(path).map(|m| m.file_type().is_symlink()).unwrap_or(false)
}

/// Check a latch directory (`.memory-latch` or `history`): not a symlink,
/// a directory owned by this user, mode 0700. `None` if it does not exist.
pub fn check_latch_dir(dir: &Path, what: &str) -> Result<Option<()>> {
    match fs::symlink_metadata(dir) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Error::new(crate::codes::DIR_INVALID, format!("cannot stat {}: {e}", dir.display()))),
        Ok(m) if m.file_type().is_symlink() => {
            return Err(Error::new(crate::codes::DIR_SYMLINK, format!("{what} {} is a symlink; refusing to follow it", dir.display())))
        }
        Ok(_) => {}
    }
    private::check_dir(dir, true).map_err(|e| Error::new(crate::codes::DIR_INSECURE, format!("{what}: {}", e.message())))?;
    Ok(Some(()))
}

/// Refuse a symlink at a fixed latch file path, with a per-file code.
pub fn refuse_symlink(path: &Path, code: crate::codes::Code) -> Result<()> {
    if is_symlink(path) {
        return Err(Error::new(code, format!("{} is a symlink; refusing to follow it", path.display())));
    }
    Ok(())
}

/// Map a `private` read/write error on a latch file to a latch code.
pub fn file_error(e: Error, symlink_code: crate::codes::Code) -> Error {
    let code = match e.code_as::<private::codes::Code>() {
        Some(private::codes::SYMLINK) => symlink_code,
        Some(private::codes::NOT_OWNED | private::codes::PERMISSIONS | private::codes::NOT_REGULAR) => crate::codes::FILE_INSECURE,
        Some(private::codes::TOO_LARGE) => crate::codes::FILE_TOO_LARGE,
        Some(private::codes::CHANGED) => crate::codes::FILE_CHANGED,
        Some(private::codes::NOT_FOUND) => crate::codes::FILE_MISSING,
        Some(private::codes::EXISTS) => crate::codes::FILE_EXISTS,
        Some(private::codes::WRITE) => crate::codes::WRITE_FAILED,
        _ => crate::codes::IO_FAILED,
    };
    Error::new(code, e.message().to_owned())
}

/// Read a latch file (owner-only, no symlink, bounded).
pub fn read_file(path: &Path, symlink_code: crate::codes::Code) -> Result<Vec<u8>> {
    let rules = private::FileRules { owner_only: true, min_bytes: 0, max_bytes: MAX_FILE_BYTES };
    private::read_checked(path, rules).map(|(b, _)| b).map_err(|e| file_error(e, symlink_code))
}

/// Resolve a gate target inside the workspace: no `..`, no NUL, inside the
/// root, not inside `.memory-latch`, and no existing component a symlink.
pub fn resolve_target(root: &Path, target: &str) -> Result<PathBuf> {
    if target.is_empty() || target.len() > 4096 || target.contains('\0') {
        return Err(Error::new(crate::codes::GATE_TARGET_INVALID, "target must be 1 to 4096 bytes without NUL"));
    }
    let raw = Path::new(target);
    if raw.components().any(|c| matches!(c, std::path::Component::ParentDir)) || target.split('/').any(|p| p == "..") {
        return Err(Error::new(crate::codes::GATE_TARGET_TRAVERSAL, format!("target {target:?} contains a .. component")));
    }
    let rel: PathBuf = if raw.is_absolute() {
        match raw.strip_prefix(root) {
            Ok(r) => r.to_path_buf(),
            Err(_) => {
                return Err(Error::new(crate::codes::GATE_TARGET_OUTSIDE_WORKSPACE, format!("target {target:?} is outside the workspace")))
            }
        }
    } else {
        raw.to_path_buf()
    };
    let parts: Vec<_> = rel.components().filter(|c| matches!(c, std::path::Component::Normal(_))).collect();
    if parts.is_empty() {
        return Err(Error::new(crate::codes::GATE_TARGET_INVALID, "target must name something inside the workspace, not the root"));
    }
    if parts[0].as_os_str() == DIR_NAME {
        return Err(Error::new(crate::codes::GATE_TARGET_PROTECTED, "targets inside .memory-latch are refused"));
    }
    let mut at = root.to_path_buf();
    for part in parts {
        at.push(part);
        match fs::symlink_metadata(&at) {
            Ok(m) if m.file_type().is_symlink() => {
                return Err(Error::new(crate::codes::GATE_TARGET_SYMLINK, format!("{} is a symlink", at.display())));
            }
            Ok(_) => {}
            Err(_) => break,
        }
    }
    Ok(root.join(rel))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segment_names_round_trip() {
        assert_eq!(parse_segment_name(&segment_name(7)), Some(7));
        for bad in ["segment-7.md", "segment-000000.md", "segment-0000007.md", "segment-00000a.md", "x.md"] {
            assert_eq!(parse_segment_name(bad), None, "{bad}");
        }
    }

    #[test]
    fn targets_stay_inside() {
        let d = tempfile::tempdir().unwrap();
        let root = fs::canonicalize(d.path()).unwrap();
        assert!(resolve_target(&root, "src/main.rs").is_ok());
        assert!(resolve_target(&root, root.join("a").to_str().unwrap()).is_ok());
        assert_eq!(resolve_target(&root, "../x").unwrap_err().code(), "gate_target_traversal");
        assert_eq!(resolve_target(&root, "a/../../x").unwrap_err().code(), "gate_target_traversal");
        assert_eq!(resolve_target(&root, "/etc/passwd").unwrap_err().code(), "gate_target_outside_workspace");
        assert_eq!(resolve_target(&root, ".memory-latch/_manifest.md").unwrap_err().code(), "gate_target_protected");
        std::os::unix::fs::symlink("/etc", root.join("l")).unwrap();
        assert_eq!(resolve_target(&root, "l/passwd").unwrap_err().code(), "gate_target_symlink");
    }
}
