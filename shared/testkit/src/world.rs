//! The QA world of the library tests (kijito-gate's, kijito-compact's and
//! kijito-compact-codex's): a private temporary dir holding a private data
//! dir with its QA dir open, a one-line transcript and the session `sess-1`.
//! The root package's gate worlds (`tests/support/gate.rs`) run the real
//! binaries against a HOME of their own instead.

use kijito_gate::{transcript_identity, Pass, QaDir};
use kijito_protocol::ids::{AbsPath, SessionId};
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;

/// A time every world's passes are recorded around (ms since the epoch).
pub const T0: i64 = 1_800_000_000_000;
/// A compaction nonce (128 bits of hex).
pub const NONCE: &str = "0123456789abcdef0123456789abcdef";

pub struct World {
    pub dir: tempfile::TempDir,
    pub data: AbsPath,
    pub qa: QaDir,
    /// `sess-1`.
    pub s: SessionId,
    pub transcript: AbsPath,
}

impl World {
    /// A 0700 temporary dir holding a 0700 `data` dir (its QA dir open, the
    /// spent-nonce ledger in this dir's `heads`, never the user's state dir)
    /// and a one-line `transcript.jsonl`.
    pub fn new() -> World {
        let dir = tempfile::tempdir().unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
        let data = AbsPath::from_path(&dir.path().join("data")).unwrap();
        crate::private_dir(data.as_path());
        let qa = QaDir::open(&data).unwrap().with_ledger_dir(Some(dir.path().join("heads")));
        let t = dir.path().join("transcript.jsonl");
        std::fs::write(&t, b"{\"turn\":1}\n").unwrap();
        World { transcript: AbsPath::from_path(&t).unwrap(), dir, data, qa, s: sid("sess-1") }
    }

    /// `name` in the world's temporary dir.
    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// A pass of `s` recorded at `at` with `nonce`, bound to the world's
    /// transcript ([`crate::pass::pass`]), written as the session's pass
    /// file (owner-only, atomic); returns the bytes written.
    pub fn write_pass(&self, s: &SessionId, at: i64, nonce: &str) -> Vec<u8> {
        let bytes = pass_for(self, s.as_str(), at, nonce).to_bytes();
        kijito_files::private::write_atomic(&self.qa.pass(s), &bytes).unwrap();
        bytes
    }
}

impl Default for World {
    fn default() -> World {
        World::new()
    }
}

/// A pass of `session` recorded at `at` with `nonce`, bound to the world's
/// transcript ([`crate::pass::pass`]: pointer 21813, lock 1234, digests of
/// "pointer" and "snapshot").
pub fn pass_for(w: &World, session: &str, at: i64, nonce: &str) -> Pass {
    crate::pass::pass(&sid(session), at, nonce, transcript_identity(&w.transcript).unwrap())
}

/// The session id `s` (a test's literal; fails the test when invalid).
pub fn sid(s: &str) -> SessionId {
    SessionId::parse(s).unwrap()
}
