//! The test support of the workspace, one crate every test harness takes as
//! a dev-dependency (docs/testing.md, Test support): [`world`] (the one QA
//! world: a private data dir, a transcript, a session, laid out for the
//! library tests, the hooks' or the binaries'), [`pass`] (the one
//! hand-built QA pass), [`isolated`] (a test that changes process-wide state
//! runs alone in a child), [`ws`] (the TUI side
//! of the Codex adapter's WebSocket) and [`codex`] (the stand-in Codex
//! app-server and TUI). The root package's `tests/support` re-exports these
//! and adds what needs its binaries (a real kijito-local, the gate world's
//! runs of the binaries).
//!
//! Only a dev-dependency: nothing here is part of a binary. Its dependencies
//! are already in the normal graph with the same features, so a test build
//! relinks no binary (docs/testing.md).

#![forbid(unsafe_code)]
// Test support: a failed set-up is a failed test.
#![allow(clippy::unwrap_used)]

pub mod codex;
pub mod isolated;
pub mod pass;
pub mod world;
pub mod ws;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::{Duration, Instant};

/// Create `p` (and its parents) and make it owner-only (0700).
pub fn private_dir(p: &Path) {
    std::fs::create_dir_all(p).unwrap();
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o700)).unwrap();
}

/// Copy the executable `src` to `dst`, its mode kept, in a child `cp`: no
/// descriptor open for writing on `dst` ever lives in the test process. One
/// would be inherited by a child another test thread forks meanwhile and held
/// until that child's own `exec`; running `dst` then fails with ETXTBSY
/// ("Text file busy"), as `fs::copy` of a debug binary did on a busy 2-core
/// machine.
pub fn copy_executable(src: &Path, dst: &Path) {
    let out = std::process::Command::new("cp")
        .args(["--preserve=mode", "--"])
        .arg(src)
        .arg(dst)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success(), "cp {} {}: {}", src.display(), dst.display(), String::from_utf8_lossy(&out.stderr));
}

/// Write `text` as the executable `p` with `mode`, by [`copy_executable`]
/// from a sibling file the process wrote and then removes: a script written
/// in place would have the same ETXTBSY race as a copied binary.
pub fn write_executable(p: &Path, text: &str, mode: u32) {
    let name = p.file_name().unwrap().to_str().unwrap();
    let src = p.with_file_name(format!(".{name}.text"));
    std::fs::write(&src, text).unwrap();
    copy_executable(&src, p);
    std::fs::remove_file(&src).unwrap();
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// `dst` as a hard link to the executable `src`, or, where there can be none
/// (another file system), a copy ([`copy_executable`]).
pub fn link_executable(src: &Path, dst: &Path) {
    if std::fs::hard_link(src, dst).is_err() {
        copy_executable(src, dst);
    }
}

/// Wait (bounded: at most `secs` seconds, polling every 10 ms) until `f`
/// gives a value; the test fails naming `what` when it does not.
pub fn wait_for<T>(what: &str, secs: u64, mut f: impl FnMut() -> Option<T>) -> T {
    let end = Instant::now() + Duration::from_secs(secs);
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(Instant::now() < end, "timed out after {secs} s waiting for {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The lines of `session`'s flight recorder (docs/protocol.md §13) in the
/// data dir `data` whose `kind` is `kind`, in order; the test fails unless
/// the journal reads and its chain is whole.
pub fn journal_lines(data: &Path, session: &str, kind: &str) -> Vec<serde_json::Value> {
    let j = kijito_files::journal::read(data, &world::sid(session)).unwrap();
    assert!(j.broken.is_none(), "{:?}", j.broken);
    j.events.into_iter().filter(|e| e["kind"] == kind).collect()
}

/// The JSON lines of the file `p` (none when it is missing); blank lines
/// skipped, a line that is not JSON fails the test.
pub fn jsonl(p: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(p)
        .unwrap_or_default()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt;

    /// The copy has the bytes and the mode and is a file of its own; the
    /// link is the same file; the written script has its mode and leaves no
    /// text file behind; all three run.
    #[test]
    fn executables_are_copied_and_linked_runnable() {
        let d = tempfile::tempdir().unwrap();
        let src = d.path().join("src");
        std::fs::write(&src, "#!/bin/sh\necho ran\n").unwrap();
        std::fs::set_permissions(&src, std::fs::Permissions::from_mode(0o710)).unwrap();
        let (copy, link) = (d.path().join("copy"), d.path().join("link"));
        let meta = |p: &Path| std::fs::metadata(p).unwrap();
        copy_executable(&src, &copy);
        link_executable(&src, &link);
        let written = d.path().join("written");
        write_executable(&written, "#!/bin/sh\necho ran\n", 0o700);
        assert_eq!(meta(&written).mode() & 0o7777, 0o700);
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 4, "no text file left");
        assert_eq!(std::fs::read(&copy).unwrap(), std::fs::read(&src).unwrap());
        assert_eq!(meta(&copy).mode() & 0o7777, 0o710);
        assert_ne!(meta(&copy).ino(), meta(&src).ino());
        assert_eq!(meta(&link).ino(), meta(&src).ino());
        for p in [&copy, &link, &written] {
            assert_eq!(std::process::Command::new(p).output().unwrap().stdout, b"ran\n");
        }
    }
}
