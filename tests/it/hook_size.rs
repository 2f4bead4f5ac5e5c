//! The size gate of the hook binaries (benches/hook_size.sh, run by .ci/run
//! on the installed bin/ dirs): both branches on sparse files of exactly
//! the bound and one byte over, a missing binary, usage; and its list of
//! hook binaries is kijito-hooks' [[bin]] targets. No release build here:
//! the real sizes are gated in CI after install.sh.

#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::process::{Command, Output};

const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/benches/hook_size.sh");
const BOUND: u64 = 2_000_000;

fn hooks() -> Vec<String> {
    let toml = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/shared/hooks/Cargo.toml")).unwrap();
    let mut names = Vec::new();
    let mut in_bin = false;
    for line in toml.lines().map(str::trim) {
        if line.starts_with('[') {
            in_bin = line == "[[bin]]";
        } else if let Some(v) = line.strip_prefix("name = \"").filter(|_| in_bin) {
            names.push(v.trim_end_matches('"').to_owned());
        }
    }
    names
}

fn sized(dir: &Path, name: &str, len: u64) {
    let f = std::fs::File::create(dir.join(name)).unwrap();
    f.set_len(len).unwrap();
}

fn gate(dir: &Path) -> Output {
    Command::new("bash").arg(SCRIPT).arg(dir).output().unwrap()
}

#[test]
fn the_gate_checks_every_hook_binary_of_kijito_hooks() {
    let script = std::fs::read_to_string(SCRIPT).unwrap();
    let hooks = hooks();
    assert_eq!(
        hooks,
        ["precompact", "postcompact", "session-hook", "prompt-hook", "pretool-hook"],
        "kijito-hooks' bins changed: update benches/hook_size.sh"
    );
    assert!(script.contains(&format!("hooks=({})", hooks.join(" "))), "benches/hook_size.sh must list {hooks:?}");
}

#[test]
fn at_the_bound_it_passes_and_one_byte_over_it_fails_naming_the_binary() {
    let d = tempfile::tempdir().unwrap();
    for h in hooks() {
        sized(d.path(), &h, BOUND);
    }
    let o = gate(d.path());
    let out = String::from_utf8(o.stdout).unwrap();
    assert_eq!(o.status.code(), Some(0), "{out}{}", String::from_utf8_lossy(&o.stderr));
    assert!(out.contains("session-hook: 2000000 B ok") && out.ends_with("hook_size: ok\n"), "{out}");
    for over in hooks() {
        for h in hooks() {
            sized(d.path(), &h, if h == over { BOUND + 1 } else { BOUND });
        }
        let o = gate(d.path());
        let (out, err) = (String::from_utf8(o.stdout).unwrap(), String::from_utf8(o.stderr).unwrap());
        assert_eq!(o.status.code(), Some(1), "{over}: {out}{err}");
        assert!(out.contains(&format!("{over}: 2000001 B OVER")), "{out}");
        assert_eq!(err, format!("hook_size: FAILED: {over} is 2000001 B, over the 2000000 B bound (docs/architecture.md, Binary sizes)\n"));
    }
}

#[test]
fn a_missing_binary_or_no_directory_never_passes() {
    let d = tempfile::tempdir().unwrap();
    sized(d.path(), "precompact", 10);
    sized(d.path(), "postcompact", 10);
    let o = gate(d.path());
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("session-hook is missing"));
    let o = gate(&d.path().join("nope"));
    assert_eq!(o.status.code(), Some(2));
    let o = Command::new("bash").arg(SCRIPT).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
}
