//! One integration-test binary per package (docs/testing.md): every test file
//! is a module of its package's `tests/it/main.rs`. A `tests/<name>.rs` left
//! beside it would be a binary of its own (or, in the root package, with
//! `autotests = false`, not run at all), and a `tests/it/<name>.rs` that
//! main.rs does not declare would never be compiled.

#![allow(clippy::unwrap_used)]

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// The `.rs` file stems directly in `dir`.
fn stems(dir: &Path) -> BTreeSet<String> {
    let Ok(entries) = fs::read_dir(dir) else { return BTreeSet::new() };
    entries
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file() && p.extension().is_some_and(|x| x == "rs"))
        .map(|p| p.file_stem().unwrap().to_str().unwrap().to_owned())
        .collect()
}

/// The names of main.rs's `mod <name>;` lines without a `#[path]` above them.
fn declared(main: &Path) -> BTreeSet<String> {
    let text = fs::read_to_string(main).unwrap_or_else(|e| panic!("{}: {e}", main.display()));
    let lines: Vec<&str> = text.lines().collect();
    let mut mods = BTreeSet::new();
    for (i, l) in lines.iter().enumerate() {
        let Some(name) = l.trim().strip_prefix("mod ").and_then(|r| r.strip_suffix(';')) else { continue };
        if i > 0 && lines[i - 1].trim_start().starts_with("#[path") {
            continue;
        }
        mods.insert(name.to_owned());
    }
    mods
}

/// Every package's tests/ dir: the root's and each shared/<crate>'s.
fn packages() -> Vec<PathBuf> {
    let mut v = vec![PathBuf::from(ROOT)];
    let mut crates: Vec<PathBuf> = fs::read_dir(Path::new(ROOT).join("shared")).unwrap().map(|e| e.unwrap().path()).collect();
    crates.sort();
    v.extend(crates.into_iter().filter(|p| p.join("Cargo.toml").is_file()));
    v
}

#[test]
fn every_test_file_is_a_module_of_its_packages_one_harness() {
    let mut checked = 0;
    for pkg in packages() {
        let tests = pkg.join("tests");
        if !tests.is_dir() {
            continue;
        }
        let manifest = fs::read_to_string(pkg.join("Cargo.toml")).unwrap();
        // A top-level test file only as a declared harness = false binary.
        for stem in stems(&tests) {
            let entry = format!("path = \"tests/{stem}.rs\"");
            assert!(
                manifest.contains(&entry) && manifest.contains("harness = false"),
                "{}/{stem}.rs: move it to tests/it/{stem}.rs and add `mod {stem};` to tests/it/main.rs",
                tests.display()
            );
        }
        let it = tests.join("it");
        let mut files = stems(&it);
        files.remove("main");
        assert_eq!(declared(&it.join("main.rs")), files, "{}: main.rs declares exactly the files beside it", it.display());
        checked += files.len();
    }
    assert!(checked >= 77, "only {checked} test modules found (77 when the harnesses were made)");
}

#[test]
fn the_root_package_builds_exactly_the_one_harness() {
    let manifest = fs::read_to_string(Path::new(ROOT).join("Cargo.toml")).unwrap();
    assert!(manifest.lines().any(|l| l.trim() == "autotests = false"), "root Cargo.toml: autotests = false");
    assert_eq!(manifest.matches("[[test]]").count(), 1, "root Cargo.toml: one [[test]]");
    assert!(manifest.contains("[[test]]\nname = \"it\"\npath = \"tests/it/main.rs\""));
}
