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
