//! The world of the gate's integration tests: a private temporary data dir
//! with its QA dir, a transcript, one session, and a pass bound to them.

#![allow(dead_code, clippy::unwrap_used)]

use kijito_gate::{transcript_identity, Pass, QaDir};
use kijito_protocol::ids::{AbsPath, SessionId};
use std::os::unix::fs::PermissionsExt;

pub(crate) const T0: i64 = 1_800_000_000_000;
pub(crate) const NONCE: &str = "0123456789abcdef0123456789abcdef";

pub(crate) struct Env {
    pub dir: tempfile::TempDir,
    pub data: AbsPath,
    pub qa: QaDir,
    /// `sess-1`.
    pub s: SessionId,
    pub transcript: AbsPath,
}

/// A 0700 temporary dir holding a 0700 `data` dir (its QA dir open) and a
/// one-line `transcript.jsonl`.
pub(crate) fn env() -> Env {
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
    let data = AbsPath::from_path(&dir.path().join("data")).unwrap();
    std::fs::create_dir(data.as_path()).unwrap();
    std::fs::set_permissions(data.as_path(), std::fs::Permissions::from_mode(0o700)).unwrap();
    // The spent-nonce ledger in this world, never the user's state dir.
    let qa = QaDir::open(&data).unwrap().with_ledger_dir(Some(dir.path().join("heads")));
    let t = dir.path().join("transcript.jsonl");
    std::fs::write(&t, b"{\"turn\":1}\n").unwrap();
    Env { transcript: AbsPath::from_path(&t).unwrap(), dir, data, qa, s: SessionId::parse("sess-1").unwrap() }
}

/// The one hand-built pass of every harness (tests/support/pass.rs).
#[path = "../../../../tests/support/pass.rs"]
pub(crate) mod pass;

/// A pass of `session` recorded at `at` with `nonce`, bound to the world's
/// transcript ([`pass::pass`]: pointer 21813, lock 1234, digests of
/// "pointer" and "snapshot").
pub(crate) fn pass_for(e: &Env, session: &str, at: i64, nonce: &str) -> Pass {
    pass::pass(&SessionId::parse(session).unwrap(), at, nonce, transcript_identity(&e.transcript).unwrap())
}

impl Env {
    /// [`pass_for`] `sess-1` at `at` with `nonce`, written as the session's
    /// pass file (owner-only, atomic); returns the bytes written.
    pub(crate) fn write_pass(&self, at: i64, nonce: &str) -> Vec<u8> {
        let bytes = pass_for(self, "sess-1", at, nonce).to_bytes();
        kijito_files::private::write_atomic(&self.qa.pass(&self.s), &bytes).unwrap();
        bytes
    }
}
