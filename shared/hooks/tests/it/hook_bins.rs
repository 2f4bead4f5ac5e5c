//! The three hook binaries of this package answer `--help` (and, being an
//! integration test of this package, make `cargo test --workspace` build them
//! for the workspace's other tests).

use std::process::{Command, Stdio};

#[test]
fn every_hook_binary_answers_help() {
    for bin in [env!("CARGO_BIN_EXE_precompact"), env!("CARGO_BIN_EXE_postcompact"), env!("CARGO_BIN_EXE_session-hook")] {
        let out = Command::new(bin).arg("--help").stdin(Stdio::null()).output().expect("run hook binary");
        assert!(out.status.success(), "{bin} --help failed");
        let name = std::path::Path::new(bin).file_name().unwrap().to_string_lossy().into_owned();
        assert!(
            String::from_utf8_lossy(&out.stdout).starts_with(&format!("{name} --host codex|claude")),
            "{bin} --help prints no usage line"
        );
    }
}
