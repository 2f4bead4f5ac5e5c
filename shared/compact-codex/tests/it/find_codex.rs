//! `find_codex`: the first absolute PATH entry holding an executable regular
//! file named `codex`. It runs alone in a child process of the test binary
//! (kijito_testkit::isolated), so changing PATH races with nothing.

#![allow(clippy::unwrap_used)]

use kijito_compact_codex::adapter::find_codex;
use kijito_testkit::isolated;
use std::os::unix::fs::PermissionsExt;
use std::path::{Component, Path, PathBuf};

fn codex_in(dir: &Path, mode: u32) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    let p = dir.join("codex");
    std::fs::write(&p, b"#!/bin/sh\n").unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
    p
}

/// `abs` as a path relative to the working directory (which this test does
/// not change).
fn relative(abs: &Path) -> PathBuf {
    let cwd = std::env::current_dir().unwrap();
    let mut rel = PathBuf::new();
    for c in cwd.components() {
        if matches!(c, Component::Normal(_)) {
            rel.push("..");
        }
    }
    rel.join(abs.strip_prefix("/").unwrap())
}

#[test]
fn codex_is_the_first_executable_regular_file_on_an_absolute_path_entry() {
    if !isolated::alone(module_path!(), "codex_is_the_first_executable_regular_file_on_an_absolute_path_entry") {
        return; // it ran alone in a child process of this binary
    }
    let d = tempfile::tempdir().unwrap();
    // an executable codex on a relative entry (never used: it depends on the cwd)
    let rel_dir = d.path().join("rel");
    codex_in(&rel_dir, 0o755);
    let rel = relative(&rel_dir);
    assert!(rel.is_relative() && rel.join("codex").is_file());
    // a codex that is not executable, one that is a directory
    let plain = d.path().join("plain");
    codex_in(&plain, 0o644);
    let dir = d.path().join("dir");
    std::fs::create_dir_all(dir.join("codex")).unwrap();
    // the one that counts, and a later one
    let good = codex_in(&d.path().join("good"), 0o700);
    let later = d.path().join("later");
    codex_in(&later, 0o755);
    let path = std::env::join_paths([rel.clone(), plain.clone(), dir.clone(), good.parent().unwrap().to_owned(), later]).unwrap();
    std::env::set_var("PATH", &path);
    assert_eq!(find_codex().unwrap(), good);
    // none there at all
    let path = std::env::join_paths([rel, plain, dir]).unwrap();
    std::env::set_var("PATH", &path);
    assert_eq!(find_codex().unwrap_err().code(), "codex_not_found");
    std::env::remove_var("PATH");
    assert_eq!(find_codex().unwrap_err().code(), "codex_not_found");
}
