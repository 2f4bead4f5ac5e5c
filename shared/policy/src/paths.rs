//! Paths as the shell will see them (docs/policy.md, "Paths"): pure
//! reasoning over the facts the hook looks up ([`PathFacts`]). The
//! classifier asks these questions only for the paths a call writes,
//! deletes or moves and for programs it does not know, so a read costs no
//! lookup.
//!
//! - a glob (`*`, `?`, `[...]`) in a written path could match a protected
//!   name ([`glob_reaches`]), component by component, with the shell's rule
//!   that a pattern not starting with `.` matches no dot name;
//! - the hook expands globs against the filesystem (bounded), resolves
//!   symlinks (each component, bounded) and finds a hard link to a
//!   protected file (same device and inode); each answer is judged as the
//!   written path itself;
//! - an MCP tool's arguments that name a path ([`MCP_PATH_KEYS`]).

use serde_json::Value;

/// What the hook knows of the filesystem, asked only for written paths
/// and unknown programs. Every answer is bounded by the implementation.
pub trait PathFacts: std::fmt::Debug + Send + Sync {
    /// `abs` with every symlink on the way resolved (components that do
    /// not exist are kept as written); `None` when it cannot be resolved
    /// within the bounds (the lexical path is judged).
    fn real(&self, abs: &str) -> Option<String>;
    /// The existing paths an absolute glob pattern matches; `None` past
    /// the bounds (count, entries read).
    fn expand(&self, pattern: &str) -> Option<Vec<String>>;
    /// A regular file with more than one link: the protected file it is
    /// the same file as (device and inode), if any.
    fn same_file_protected(&self, abs: &str) -> Option<String>;
    /// Whether `abs` directly holds a `.memory-latch` entry.
    fn holds_latch(&self, abs: &str) -> bool;
    /// The latch workspace roots the call is in (its working directory's):
    /// a move or deletion of one or a parent is `tripwire_latch_write`.
    fn latch_roots(&self) -> Vec<String>;
    /// The executable a bare program name runs (`PATH`), if any.
    fn which(&self, name: &str) -> Option<String>;
    /// Whether the file at `abs` is an installed hook binary by content
    /// (a copy or a renamed copy).
    fn is_hook_copy(&self, abs: &str) -> bool;
}

/// The most working directories one call may `cd`/`pushd` to before the
/// policy stops following (then a relative path is `tripwire_shell_unparsed`).
pub const MAX_DIRS: usize = 32;
/// The most written paths one call reports to the hook (for the workspace lookup).
pub const MAX_TOUCHED: usize = 64;

/// Whether `s` holds a glob character the shell expands.
pub fn has_glob(s: &str) -> bool {
    s.bytes().any(|b| matches!(b, b'*' | b'?' | b'['))
}

/// One path component against one pattern component (the shell's rule: a
/// pattern not starting with `.` does not match a name starting with `.`).
pub fn component_matches(pattern: &str, name: &str) -> bool {
    if !has_glob(pattern) {
        return pattern == name;
    }
    if name.starts_with('.') && !pattern.starts_with('.') {
        return false;
    }
    kijito_protocol::command::glob_match(pattern.as_bytes(), name.as_bytes())
}

/// Where a (possibly globbed) absolute path stands to a protected one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reach {
    /// Could be the protected path or inside it.
    Inside,
    /// Could be a parent of it (a move or a deletion takes it along).
    Above,
}

/// Whether the absolute `pattern` (globs allowed) could name `protected`
/// or a path inside it ([`Reach::Inside`]) or one of its parents
/// ([`Reach::Above`]); `protected` is a plain absolute path.
pub fn glob_reaches(pattern: &str, protected: &str) -> Option<Reach> {
    let p: Vec<&str> = pattern.split('/').filter(|c| !c.is_empty()).collect();
    let q: Vec<&str> = protected.split('/').filter(|c| !c.is_empty()).collect();
    if q.is_empty() {
        return None;
    }
    let n = p.len().min(q.len());
    if !p.iter().zip(q.iter()).take(n).all(|(a, b)| component_matches(a, b)) {
        return None;
    }
    Some(if p.len() >= q.len() { Reach::Inside } else { Reach::Above })
}

/// Whether some component of the absolute `pattern` could be `name`.
pub fn names_component(pattern: &str, name: &str) -> bool {
    pattern.split('/').any(|c| component_matches(c, name))
}

/// Keys of an MCP tool's arguments that name a file or directory.
pub const MCP_PATH_KEYS: &[&str] = &[
    "path",
    "paths",
    "file",
    "file_path",
    "filePath",
    "filepath",
    "filename",
    "file_name",
    "source",
    "source_path",
    "destination",
    "destination_path",
    "dest",
    "target",
    "target_path",
    "dir",
    "directory",
    "dir_path",
    "output",
    "output_path",
    "new_path",
    "old_path",
    "from",
    "to",
];

/// The path arguments of an MCP call (top level and one object level down,
/// strings and arrays of strings; at most [`MAX_TOUCHED`]).
pub fn mcp_paths(tool_input: &Value) -> Vec<String> {
    let mut out = Vec::new();
    let mut take = |v: &Value| match v {
        Value::String(s) if !s.is_empty() => out.push(s.clone()),
        Value::Array(a) => out.extend(a.iter().filter_map(Value::as_str).filter(|s| !s.is_empty()).map(str::to_owned)),
        _ => {}
    };
    let Some(o) = tool_input.as_object() else { return Vec::new() };
    for (k, v) in o {
        if MCP_PATH_KEYS.contains(&k.as_str()) {
            take(v);
        } else if let Value::Object(inner) = v {
            inner.iter().filter(|(k, _)| MCP_PATH_KEYS.contains(&k.as_str())).for_each(|(_, v)| take(v));
        } else if let Value::Array(items) = v {
            for inner in items.iter().filter_map(Value::as_object) {
                inner.iter().filter(|(k, _)| MCP_PATH_KEYS.contains(&k.as_str())).for_each(|(_, v)| take(v));
            }
        }
    }
    out.truncate(MAX_TOUCHED);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_glob_reaches_a_protected_name_the_way_the_shell_would() {
        let latch = "/w/.memory-latch";
        for p in ["/w/.memory-lat?h", "/w/.memory-latc[h]/tokens.json", "/w/.m*", "/w/.memory-latch", "/*/.memory-latch/x"] {
            assert_eq!(glob_reaches(p, latch), Some(Reach::Inside), "{p}");
        }
        // `*` does not match a dot name; a different directory does not reach it
        for p in ["/w/*", "/w/*/x", "/v/.memory-lat?h", "/w/.memory-latch-old"] {
            assert_eq!(glob_reaches(p, latch), None, "{p}");
        }
        assert_eq!(glob_reaches("/h/.conf*", "/h/.config/kijito-qa"), Some(Reach::Above));
        assert_eq!(glob_reaches("/h/.config/*", "/h/.config/kijito-qa"), Some(Reach::Inside));
        assert_eq!(glob_reaches("/opt", "/opt/kq/claude"), Some(Reach::Above));
        assert!(names_component("/w/a/.memory-lat?h/t", ".memory-latch"));
        assert!(!names_component("/w/a/*/t", ".memory-latch"));
    }

    #[test]
    fn mcp_path_arguments_are_found() {
        let v =
            json!({"path": "~/.zshrc", "content": "x", "edits": [{"file_path": "/a"}], "opts": {"destination": "/b"}, "paths": ["/c", 1]});
        let mut got = mcp_paths(&v);
        got.sort();
        assert_eq!(got, ["/a", "/b", "/c", "~/.zshrc"]);
        assert!(mcp_paths(&json!("x")).is_empty());
        // an empty string names no path, alone or in a list
        assert_eq!(mcp_paths(&json!({"path": "", "paths": ["", "/d"]})), ["/d"]);
    }
}
