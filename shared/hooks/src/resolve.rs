//! The filesystem facts the PreToolUse policy asks about the paths a call
//! writes and the programs it runs (docs/policy.md, "Paths";
//! [`kijito_policy::paths::PathFacts`]), and the latch workspace of a path
//! (docs/protocol.md §8a: found the way git finds its repository).
//!
//! Every lookup is bounded; none runs for a call the classifier reads as a
//! read: the policy asks only about written paths and unknown programs.

use kijito_policy::paths::{component_matches, has_glob, PathFacts};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// Symlinks followed while resolving one path.
pub const MAX_LINKS: usize = 40;
/// Components walked while resolving one path (links' targets included).
pub const MAX_COMPONENTS: usize = 1024;
/// Paths one glob may expand to before the policy stops reading it.
pub const MAX_GLOB_MATCHES: usize = 4096;
/// Directory entries one glob expansion may read.
pub const MAX_GLOB_ENTRIES: usize = 65_536;
/// Files looked at (per protected directory tree) for a hard link's twin.
pub const MAX_LINK_SCAN: usize = 4096;
/// Depth of the protected trees scanned for a hard link's twin.
pub const MAX_LINK_DEPTH: usize = 4;
/// Ancestors looked at for a `.memory-latch` (workspace lookup).
pub const MAX_ANCESTORS: usize = 128;
/// The largest file compared with an installed hook binary.
pub const MAX_COPY_BYTES: u64 = 256 * 1024 * 1024;

/// The latch workspace of `path`: the nearest of `path` and its parents
/// that holds a `.memory-latch` entry (of any kind: one that does not open
/// is still a latch not to trust), the way git finds its repository.
pub fn workspace_of(path: &Path) -> Option<PathBuf> {
    let mut p = Some(path);
    let mut n = 0;
    while let Some(d) = p {
        if n >= MAX_ANCESTORS {
            return None;
        }
        if crate::latch_hook::has_latch_dir(d) {
            return Some(d.to_path_buf());
        }
        p = d.parent();
        n += 1;
    }
    None
}

/// The facts of this machine, for one call.
#[derive(Debug)]
pub struct FsFacts {
    /// Trees whose files a hard link may be a twin of (config dir, state
    /// dirs, the QA dir, the call's latch dirs).
    protected: Vec<PathBuf>,
    /// The installed hook binaries (looked at only when a program is unknown).
    hook_paths: Vec<PathBuf>,
    /// The call's working directory (for its workspace's latch).
    cwd: Option<PathBuf>,
    hooks: OnceLock<Vec<(PathBuf, u64)>>,
    latch_roots: OnceLock<Vec<String>>,
}

impl FsFacts {
    /// Nothing is looked up here: every fact is read when first asked.
    pub fn new(protected: Vec<PathBuf>, hook_paths: Vec<PathBuf>, cwd: Option<PathBuf>) -> FsFacts {
        FsFacts { protected, hook_paths, cwd, hooks: OnceLock::new(), latch_roots: OnceLock::new() }
    }

    fn hooks(&self) -> &[(PathBuf, u64)] {
        self.hooks.get_or_init(|| {
            self.hook_paths.iter().filter_map(|p| std::fs::metadata(p).ok().filter(|m| m.is_file()).map(|m| (p.clone(), m.len()))).collect()
        })
    }

    fn scan_for(&self, dev: u64, ino: u64) -> Option<PathBuf> {
        use std::os::unix::fs::MetadataExt;
        let mut dirs: Vec<PathBuf> = self.protected.clone();
        dirs.extend(self.latch_roots().iter().map(|w| Path::new(w).join(kijito_latch::layout::DIR_NAME)));
        for root in dirs {
            let mut seen = 0usize;
            let mut stack = vec![(root, 0usize)];
            while let Some((dir, depth)) = stack.pop() {
                let Ok(rd) = std::fs::read_dir(&dir) else { continue };
                for e in rd.flatten() {
                    seen += 1;
                    if seen > MAX_LINK_SCAN {
                        break;
                    }
                    let Ok(m) = e.metadata() else { continue };
                    if m.is_dir() && depth + 1 < MAX_LINK_DEPTH {
                        stack.push((e.path(), depth + 1));
                    } else if m.is_file() && m.dev() == dev && m.ino() == ino {
                        return Some(e.path());
                    }
                }
            }
        }
        None
    }
}

impl PathFacts for FsFacts {
    fn real(&self, abs: &str) -> Option<String> {
        real_path(abs)
    }

    fn expand(&self, pattern: &str) -> Option<Vec<String>> {
        expand_glob(pattern)
    }

    fn same_file_protected(&self, abs: &str) -> Option<String> {
        use std::os::unix::fs::MetadataExt;
        let m = std::fs::metadata(abs).ok()?;
        if !m.is_file() || m.nlink() < 2 {
            return None;
        }
        self.scan_for(m.dev(), m.ino()).and_then(|p| p.to_str().map(str::to_owned))
    }

    fn holds_latch(&self, abs: &str) -> bool {
        crate::latch_hook::has_latch_dir(Path::new(abs))
    }

    fn latch_roots(&self) -> Vec<String> {
        self.latch_roots
            .get_or_init(|| {
                let cwd = self.cwd.as_deref().map(|c| real_path(&c.display().to_string()).map(PathBuf::from).unwrap_or(c.to_path_buf()));
                cwd.as_deref().and_then(workspace_of).and_then(|w| w.to_str().map(str::to_owned)).into_iter().collect()
            })
            .clone()
    }

    fn which(&self, name: &str) -> Option<String> {
        which_in(&std::env::var_os("PATH")?, name)
    }

    fn is_hook_copy(&self, abs: &str) -> bool {
        let Ok(m) = std::fs::metadata(abs) else { return false };
        if !m.is_file() || m.len() > MAX_COPY_BYTES {
            return false;
        }
        self.hooks().iter().any(|(hook, size)| m.len() >= *size && starts_with_file(Path::new(abs), hook, *size))
    }
}

/// Paths of `PATH` searched for a program.
pub const MAX_PATH_DIRS: usize = 64;

/// The program `name` (a bare name) as the shell finds it on `path` (a
/// `PATH` value): the first executable regular file `<dir>/<name>` of its
/// first [`MAX_PATH_DIRS`] absolute directories.
pub fn which_in(path: &std::ffi::OsStr, name: &str) -> Option<String> {
    use std::os::unix::fs::PermissionsExt;
    if name.is_empty() || name.contains('/') {
        return None;
    }
    std::env::split_paths(path).filter(|d| d.is_absolute()).take(MAX_PATH_DIRS).find_map(|d| {
        let p = d.join(name);
        let m = std::fs::metadata(&p).ok()?;
        (m.is_file() && m.permissions().mode() & 0o111 != 0).then(|| p.to_str().map(str::to_owned)).flatten()
    })
}

/// Whether the file at `candidate` begins with the `size` bytes of `hook`
/// (a copy, or a copy with bytes appended: both still run): the first 4 KiB
/// first, the rest only when they agree.
fn starts_with_file(candidate: &Path, hook: &Path, size: u64) -> bool {
    use std::io::Read;
    let (Ok(a), Ok(b)) = (std::fs::File::open(candidate), std::fs::File::open(hook)) else { return false };
    let (mut a, mut b) = (a.take(size), b.take(size));
    let mut x = vec![0u8; 4096];
    let mut y = vec![0u8; 4096];
    let mut left = size;
    while left > 0 {
        let n = (left as usize).min(x.len());
        if a.read_exact(&mut x[..n]).is_err() || b.read_exact(&mut y[..n]).is_err() || x[..n] != y[..n] {
            return false;
        }
        left -= n as u64;
        if x.len() < 1 << 20 {
            x.resize(1 << 20, 0);
            y.resize(1 << 20, 0);
        }
    }
    true
}

/// `abs` with every symlink on the way resolved (bounded: [`MAX_LINKS`],
/// [`MAX_COMPONENTS`]); components that do not exist are kept as written.
pub fn real_path(abs: &str) -> Option<String> {
    if !abs.starts_with('/') {
        return None;
    }
    let mut todo: std::collections::VecDeque<String> = abs.split('/').filter(|c| !c.is_empty()).map(str::to_owned).collect();
    let mut cur = PathBuf::from("/");
    let (mut links, mut steps) = (0usize, 0usize);
    let mut missing = false;
    while let Some(c) = todo.pop_front() {
        steps += 1;
        if steps > MAX_COMPONENTS {
            return None;
        }
        match c.as_str() {
            "." => continue,
            ".." => {
                cur.pop();
                missing = std::fs::symlink_metadata(&cur).is_err();
                continue;
            }
            _ => {}
        }
        let next = cur.join(&c);
        if missing {
            cur = next;
            continue;
        }
        match std::fs::symlink_metadata(&next) {
            Ok(m) if m.file_type().is_symlink() => {
                links += 1;
                if links > MAX_LINKS {
                    return None;
                }
                let target = std::fs::read_link(&next).ok()?;
                let t = target.to_str()?;
                if t.starts_with('/') {
                    cur = PathBuf::from("/");
                }
                for (k, part) in t.split('/').filter(|p| !p.is_empty()).enumerate() {
                    todo.insert(k, part.to_owned());
                }
            }
            Ok(_) => cur = next,
            Err(_) => {
                missing = true;
                cur = next;
            }
        }
    }
    cur.to_str().map(str::to_owned)
}

/// The existing paths an absolute glob pattern matches (a literal last
/// component is kept even when it does not exist yet: a write creates it);
/// `None` past [`MAX_GLOB_MATCHES`] or [`MAX_GLOB_ENTRIES`].
pub fn expand_glob(pattern: &str) -> Option<Vec<String>> {
    let comps: Vec<&str> = pattern.split('/').filter(|c| !c.is_empty()).collect();
    let mut cur = vec![PathBuf::from("/")];
    let mut read = 0usize;
    for (i, c) in comps.iter().enumerate() {
        let last = i + 1 == comps.len();
        let mut next = Vec::new();
        for d in &cur {
            if !has_glob(c) {
                let p = d.join(c);
                if last || std::fs::symlink_metadata(&p).is_ok() {
                    next.push(p);
                }
                continue;
            }
            let Ok(rd) = std::fs::read_dir(d) else { continue };
            for e in rd.flatten() {
                read += 1;
                if read > MAX_GLOB_ENTRIES {
                    return None;
                }
                if e.file_name().to_str().is_some_and(|n| component_matches(c, n)) {
                    next.push(e.path());
                }
            }
        }
        if next.len() > MAX_GLOB_MATCHES {
            return None;
        }
        cur = next;
    }
    Some(cur.into_iter().filter_map(|p| p.to_str().map(str::to_owned)).collect())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn symlinks_globs_and_workspaces_resolve_on_real_files() {
        let d = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(d.path()).unwrap();
        let r = root.display().to_string();
        std::fs::create_dir_all(root.join("cfg/kijito-qa")).unwrap();
        std::os::unix::fs::symlink(root.join("cfg/kijito-qa"), root.join("c")).unwrap();
        std::os::unix::fs::symlink("c", root.join("c2")).unwrap();
        assert_eq!(real_path(&format!("{r}/c2/policy.json")).unwrap(), format!("{r}/cfg/kijito-qa/policy.json"));
        assert_eq!(real_path(&format!("{r}/none/../c/x")).unwrap(), format!("{r}/cfg/kijito-qa/x"));
        std::os::unix::fs::symlink("loop", root.join("loop")).unwrap();
        assert_eq!(real_path(&format!("{r}/loop/x")), None);
        std::fs::create_dir_all(root.join("ws/.memory-latch")).unwrap();
        std::fs::create_dir_all(root.join("ws/src/deep")).unwrap();
        assert_eq!(workspace_of(&root.join("ws/src/deep")), Some(root.join("ws")));
        assert_eq!(workspace_of(&root.join("ws/build/new")), Some(root.join("ws")));
        assert_eq!(workspace_of(&root.join("cfg")), None);
        let mut got = expand_glob(&format!("{r}/ws/.memory-lat?h")).unwrap();
        got.extend(expand_glob(&format!("{r}/*/kijito-q[a]/new.json")).unwrap());
        assert_eq!(got, [format!("{r}/ws/.memory-latch"), format!("{r}/cfg/kijito-qa/new.json")]);
        assert!(expand_glob(&format!("{r}/ws/*")).unwrap().iter().all(|p| !p.ends_with(".memory-latch")));
    }

    #[test]
    fn a_hard_link_and_a_copy_are_found_by_content_and_inode() {
        let d = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(d.path()).unwrap();
        std::fs::create_dir_all(root.join("cfg")).unwrap();
        std::fs::write(root.join("cfg/policy.json"), b"{}").unwrap();
        std::fs::hard_link(root.join("cfg/policy.json"), root.join("twin")).unwrap();
        std::fs::write(root.join("plain"), b"{}").unwrap();
        let hook = root.join("hook");
        std::fs::write(&hook, vec![7u8; 10_000]).unwrap();
        let mut longer = vec![7u8; 10_000];
        longer.extend_from_slice(b"appended");
        std::fs::write(root.join("copy"), &longer).unwrap();
        std::fs::write(root.join("other"), vec![8u8; 10_000]).unwrap();
        let f = FsFacts::new(vec![root.join("cfg")], vec![hook], None);
        let s = |n: &str| root.join(n).display().to_string();
        assert_eq!(f.same_file_protected(&s("twin")), Some(s("cfg/policy.json")));
        assert_eq!(f.same_file_protected(&s("plain")), None);
        assert!(f.is_hook_copy(&s("copy")));
        assert!(!f.is_hook_copy(&s("other")));
        assert!(!f.is_hook_copy(&s("plain")));
    }

    /// The other facts, through the trait: the glob, the workspace's latch,
    /// a latch dir, a program on `PATH`.
    #[test]
    fn the_facts_of_a_call_on_real_files() {
        use std::os::unix::fs::PermissionsExt;
        let d = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(d.path()).unwrap();
        let r = root.display().to_string();
        std::fs::create_dir_all(root.join("ws/.memory-latch")).unwrap();
        std::fs::create_dir_all(root.join("ws/src")).unwrap();
        std::os::unix::fs::symlink(root.join("ws/src"), root.join("src-link")).unwrap();
        let f = FsFacts::new(vec![], vec![], Some(root.join("src-link")));
        assert_eq!(f.expand(&format!("{r}/ws/.memory-lat?h")), Some(vec![format!("{r}/ws/.memory-latch")]));
        assert_eq!(f.latch_roots(), vec![format!("{r}/ws")], "the workspace of the cwd's real path");
        assert!(FsFacts::new(vec![], vec![], Some(root.clone())).latch_roots().is_empty());
        assert!(f.holds_latch(&format!("{r}/ws")) && !f.holds_latch(&format!("{r}/ws/src")));
        // PATH: relative dirs skipped, then the first executable regular file
        for dir in ["rel", "a", "b/tool", "c", "c/sub"] {
            std::fs::create_dir_all(root.join(dir)).unwrap();
        }
        let put = |p: &str, mode: u32| {
            std::fs::write(root.join(p), "#!/bin/sh\n").unwrap();
            std::fs::set_permissions(root.join(p), std::fs::Permissions::from_mode(mode)).unwrap();
        };
        put("rel/tool", 0o755);
        put("a/tool", 0o644);
        put("c/tool", 0o700);
        put("c/sub/tool", 0o755);
        let path = std::ffi::OsString::from(format!("rel:{r}/a:{r}/b:{r}/c"));
        assert_eq!(which_in(&path, "tool"), Some(format!("{r}/c/tool")));
        assert_eq!(which_in(&path, "sub/tool"), None, "a name with a slash is not looked up");
        assert_eq!(which_in(&path, ""), None);
        assert_eq!(which_in(&path, "none"), None);
        // the trait looks on this process's PATH
        assert!(f.which("sh").is_some_and(|p| p.ends_with("/sh") && p.starts_with('/')), "{:?}", f.which("sh"));
        assert_eq!(f.which("kijito-no-such-program"), None);
        // only the first 64 directories
        let far = |n: usize| std::ffi::OsString::from(format!("{}{r}/c", format!("{r}/a:").repeat(n)));
        assert_eq!(which_in(&far(MAX_PATH_DIRS - 1), "tool"), Some(format!("{r}/c/tool")));
        assert_eq!(which_in(&far(MAX_PATH_DIRS), "tool"), None);
    }

    /// The latch workspace is looked for in at most 128 ancestors.
    #[test]
    fn the_workspace_is_looked_for_in_128_ancestors() {
        let d = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(d.path()).unwrap();
        std::fs::create_dir(root.join(".memory-latch")).unwrap();
        let deep = |k: usize| root.join("a/".repeat(k));
        assert_eq!(workspace_of(&deep(MAX_ANCESTORS - 1)), Some(root.clone()));
        assert_eq!(workspace_of(&deep(MAX_ANCESTORS)), None);
    }

    /// A hard link's twin is looked for 4 directories deep and among 4096
    /// entries per protected tree; a file with one link, or whose other link
    /// is outside the trees, has no twin.
    #[test]
    fn a_twin_is_looked_for_within_the_bounds() {
        let (_d, root) = shm();
        let s = |p: &Path| p.display().to_string();
        let twin = |tree: &str, rel: &str, fillers: usize| {
            let dir = root.join(tree);
            let target = dir.join(rel);
            std::fs::create_dir_all(target.parent().unwrap()).unwrap();
            for i in 0..fillers {
                std::fs::write(dir.join("sub").join(format!("f{i}")), "").unwrap();
            }
            std::fs::write(&target, tree).unwrap();
            let link = root.join(format!("{tree}.link"));
            std::fs::hard_link(&target, &link).unwrap();
            FsFacts::new(vec![dir], vec![], None).same_file_protected(&s(&link))
        };
        assert_eq!(twin("t1", "a/b/c/x", 0), Some(s(&root.join("t1/a/b/c/x"))));
        assert_eq!(twin("t2", "a/b/c/d/x", 0), None, "five deep");
        // the tree's own entry `sub` (1), its 4093 fillers and `deeper` (4095),
        // then the twin: the 4096th entry read, and one filler more: the 4097th
        assert_eq!(twin("t3", "sub/deeper/x", 4093), Some(s(&root.join("t3/sub/deeper/x"))));
        std::fs::write(root.join("t3/sub/one-more"), "").unwrap();
        let f = FsFacts::new(vec![root.join("t3")], vec![], None);
        assert_eq!(f.same_file_protected(&s(&root.join("t3.link"))), None);
        // no twin: one link only (even inside the tree), or the other link outside
        let f = FsFacts::new(vec![root.join("t1")], vec![], None);
        std::fs::write(root.join("t1/solo"), "").unwrap();
        assert_eq!(f.same_file_protected(&s(&root.join("t1/solo"))), None);
        std::fs::write(root.join("out"), "").unwrap();
        std::fs::hard_link(root.join("out"), root.join("out2")).unwrap();
        assert_eq!(f.same_file_protected(&s(&root.join("out"))), None);
        assert_eq!(f.same_file_protected(&s(&root.join("t1"))), None, "a directory");
    }

    /// A copy of a hook binary is recognised up to 256 MiB (sparse files here).
    #[test]
    fn a_hook_copy_is_recognised_up_to_256_mib() {
        let d = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(d.path()).unwrap();
        let hook = root.join("hook");
        std::fs::write(&hook, vec![7u8; 10_000]).unwrap();
        let f = FsFacts::new(vec![], vec![hook.clone()], None);
        assert_eq!(MAX_COPY_BYTES, 256 << 20);
        for (len, copy) in [(256 << 20, true), ((256 << 20) + 1, false)] {
            let p = root.join(format!("copy-{len}"));
            std::fs::copy(&hook, &p).unwrap();
            std::fs::OpenOptions::new().write(true).open(&p).unwrap().set_len(len).unwrap();
            assert_eq!(f.is_hook_copy(&p.display().to_string()), copy, "{len}");
        }
        assert!(!f.is_hook_copy(&root.display().to_string()), "a directory");
    }

    /// A private dir in memory where the machine has one (these tests make
    /// thousands of entries), else the usual temporary dir.
    fn shm() -> (tempfile::TempDir, PathBuf) {
        let d = tempfile::tempdir_in("/dev/shm").or_else(|_| tempfile::tempdir()).unwrap();
        let root = std::fs::canonicalize(d.path()).unwrap();
        (d, root)
    }

    /// `real_path` follows at most 40 links and walks at most 1024
    /// components; `.` is no component.
    #[test]
    fn real_paths_are_bounded() {
        let (_d, root) = shm();
        let r = root.display().to_string();
        std::fs::create_dir(root.join("target")).unwrap();
        // l0 -> l1 -> ... -> l40 -> target: 41 links from l0, 40 from l1
        for i in 0..=MAX_LINKS {
            let to = if i == MAX_LINKS { "target".to_owned() } else { format!("l{}", i + 1) };
            std::os::unix::fs::symlink(to, root.join(format!("l{i}"))).unwrap();
        }
        assert_eq!(real_path(&format!("{r}/l1/x")), Some(format!("{r}/target/x")));
        assert_eq!(real_path(&format!("{r}/l0/x")), None);
        assert_eq!(real_path(&format!("{r}/./target/./x")), Some(format!("{r}/target/x")));
        let walk = |n: usize| format!("/{}", vec!["none"; n].join("/"));
        assert_eq!(real_path(&walk(MAX_COMPONENTS)), Some(walk(MAX_COMPONENTS)));
        assert_eq!(real_path(&walk(MAX_COMPONENTS + 1)), None);
    }

    /// A glob expands to at most 4096 paths and reads at most 65,536
    /// directory entries (links to one directory make them here).
    #[test]
    fn glob_expansion_is_bounded() {
        let (_d, root) = shm();
        let r = root.display().to_string();
        let dir_of = |name: &str, files: usize| {
            std::fs::create_dir(root.join(name)).unwrap();
            for i in 0..files {
                std::fs::write(root.join(name).join(format!("f{i}")), "").unwrap();
            }
        };
        let links = |tree: &str, to: &str, n: usize| {
            std::fs::create_dir(root.join(tree)).unwrap();
            for i in 0..n {
                std::os::unix::fs::symlink(root.join(to), root.join(tree).join(format!("l{i}"))).unwrap();
            }
        };
        // 64 links to 64 files: 4096 paths; one more directory of one file: 4097
        dir_of("d64", 64);
        links("m", "d64", 64);
        assert_eq!(expand_glob(&format!("{r}/m/*/*")).map(|v| v.len()), Some(MAX_GLOB_MATCHES));
        dir_of("m/e", 1);
        assert_eq!(expand_glob(&format!("{r}/m/*/*")), None);
        // 256 links (256 entries), each to 255 files (65,280): 65,536 entries
        // read, nothing matched; one more entry: 65,537
        dir_of("d255", 255);
        links("n", "d255", 256);
        assert_eq!(expand_glob(&format!("{r}/n/*/x*")), Some(vec![]));
        std::fs::write(root.join("n/plain"), "").unwrap();
        assert_eq!(expand_glob(&format!("{r}/n/*/x*")), None);
    }
}
