//! The world of the adapter crate's integration tests: a private temporary
//! data dir with its QA dir, a transcript, and passes, pins and requests
//! written as `qa-gate record`, SessionStart and `kijito-compact request`
//! write them (through kijito-gate, on real files).

#![allow(dead_code, clippy::unwrap_used)]

use kijito_compact::trigger::{self, Pin, Request, Via};
use kijito_files::private;
use kijito_gate::{transcript_identity, QaDir};
use kijito_protocol::ids::{AbsPath, SessionId};
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;

/// This adapter's id in the tests.
pub(crate) const ADAPTER: &str = "0123456789abcdef0123456789abcdef";
pub(crate) const NONCE: &str = "fedcba9876543210fedcba9876543210";
pub(crate) const NONCE2: &str = "00112233445566778899aabbccddeeff";

/// The one hand-built pass of every harness (tests/support/pass.rs).
#[path = "../../../../tests/support/pass.rs"]
pub(crate) mod pass;

pub(crate) struct World {
    pub dir: tempfile::TempDir,
    pub data: AbsPath,
    pub qa: QaDir,
    pub transcript: AbsPath,
}

pub(crate) fn private_dir(p: &std::path::Path) {
    std::fs::create_dir_all(p).unwrap();
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o700)).unwrap();
}

impl World {
    /// A 0700 temporary dir with a 0700 `data` dir (its QA dir open) and a
    /// one-line `transcript.jsonl`.
    pub(crate) fn new() -> World {
        let dir = tempfile::tempdir().unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
        let data = AbsPath::from_path(&dir.path().join("data")).unwrap();
        private_dir(data.as_path());
        let qa = QaDir::open(&data).unwrap();
        let t = dir.path().join("transcript.jsonl");
        std::fs::write(&t, b"{\"turn\":1}\n").unwrap();
        World { transcript: AbsPath::from_path(&t).unwrap(), dir, data, qa }
    }

    pub(crate) fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// A pass of `s` recorded at `at` with `nonce`, bound to the transcript
    /// ([`pass::pass`]).
    pub(crate) fn write_pass(&self, s: &SessionId, at: i64, nonce: &str) {
        let p = pass::pass(s, at, nonce, transcript_identity(&self.transcript).unwrap());
        private::write_atomic(&self.qa.pass(s), &p.to_bytes()).unwrap();
    }

    /// What SessionStart writes under the adapter `adapter_id`.
    pub(crate) fn pin(&self, s: &SessionId, adapter_id: &str, socket: &str) {
        let via = Via::CodexAppServer { adapter_id: adapter_id.into(), socket: AbsPath::parse(socket).unwrap() };
        trigger::write_pin(&self.qa, &Pin { session_id: s.clone(), via, pinned_at_ms: 5 }).unwrap();
    }

    pub(crate) fn request(&self, s: &SessionId) -> Option<Request> {
        trigger::read_request(&self.qa, s).unwrap()
    }

    pub(crate) fn kill_switch(&self, on: bool) {
        let p = trigger::kill_switch(&self.data);
        if on {
            std::fs::write(p, b"").unwrap();
        } else {
            std::fs::remove_file(p).unwrap();
        }
    }
}

pub(crate) fn sid(s: &str) -> SessionId {
    SessionId::parse(s).unwrap()
}

/// A `codex` for the adapter to run: a script in `dir` that starts
/// tests/support/standin-codex.py (app-server and TUI) with `STANDIN_DIR`
/// = `dir` and the given environment (the adapter passes its own
/// environment on, which the tests running in parallel share).
pub(crate) fn standin_codex(dir: &std::path::Path, env: &[(&str, &str)]) -> AbsPath {
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/support/standin-codex.py");
    let mut text = format!("#!/bin/sh\nexport STANDIN_DIR='{}'\n", dir.display());
    for (k, v) in env {
        text.push_str(&format!("export {k}='{v}'\n"));
    }
    text.push_str(&format!("exec python3 '{}' \"$@\"\n", script.display()));
    let p = dir.join("codex");
    std::fs::write(&p, text).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o700)).unwrap();
    AbsPath::from_path(&p).unwrap()
}

/// Wait (bounded) until `f` gives a value.
pub(crate) fn wait_for<T>(what: &str, secs: u64, mut f: impl FnMut() -> Option<T>) -> T {
    let end = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(std::time::Instant::now() < end, "timed out after {secs} s waiting for {what}");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

pub(crate) fn jsonl(p: &std::path::Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(p)
        .unwrap_or_default()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}
