//! The QA world of every harness: a private temporary dir holding a data
//! dir, a one-line transcript and the session `sess-1`, laid out by a
//! [`Layout`]. The library tests (kijito-gate's, kijito-compact's and
//! kijito-compact-codex's) take [`World::new`] ([`Layout::LIBRARY`]: the
//! data dir made, its QA dir open, the spent-nonce ledger in the world's own
//! dir); kijito-hooks' library tests [`Layout::HOOKS`] (a helper dir `bin`,
//! the ledger in the world's own dir too); the root package's gate worlds
//! (`tests/support/gate.rs`, which run the real binaries)
//! [`Layout::BINARIES`] (a `home`, the data dir left for the binaries to
//! make).

use kijito_gate::{transcript_identity, Pass, QaDir};
use kijito_protocol::ids::{AbsPath, SessionId};
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;

/// A time every world's passes are recorded around (ms since the epoch).
pub const T0: i64 = 1_800_000_000_000;
/// A compaction nonce (128 bits of hex).
pub const NONCE: &str = "0123456789abcdef0123456789abcdef";

/// How a [`World`] is laid out in its temporary dir.
#[derive(Debug, Clone, Copy)]
pub struct Layout {
    /// `data` made owner-only (0700) with its QA dir open; `false`: only
    /// named, left for the binaries under test to make (the world's
    /// [`World::qa`] then creates nothing).
    pub data: bool,
    /// The one line of `transcript.jsonl` (a newline follows).
    pub transcript: &'static str,
    /// More owner-only (0700) dirs made in the world's dir.
    pub dirs: &'static [&'static str],
    /// The spent-nonce ledger in the world's own `heads` dir; `false`: in
    /// the environment's state dir, where the hooks' library keeps it
    /// (`kijito_files::datadir::heads_dir`).
    pub own_ledger: bool,
}

impl Layout {
    /// The library tests' world: [`World::new`].
    pub const LIBRARY: Layout = Layout { data: true, transcript: "{\"turn\":1}", dirs: &[], own_ledger: true };
    /// kijito-hooks' library tests: a helper dir `bin` beside the data dir,
    /// the ledger in the world's own `heads` (give it to the `HookEnv` with
    /// `with_ledger_dir`).
    pub const HOOKS: Layout = Layout { data: true, transcript: "{}", dirs: &["bin"], own_ledger: true };
    /// The root package's tests of the binaries: a `home` for `$HOME`, a
    /// Codex rollout's first line, the data dir made by the binaries.
    pub const BINARIES: Layout = Layout { data: false, transcript: "{\"type\":\"session_meta\"}", dirs: &["home"], own_ledger: false };
}

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
    /// and a one-line `transcript.jsonl` ([`Layout::LIBRARY`]).
    pub fn new() -> World {
        World::laid_out(Layout::LIBRARY)
    }

    /// A 0700 temporary dir laid out as `layout` says.
    pub fn laid_out(layout: Layout) -> World {
        let dir = tempfile::tempdir().unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
        for d in layout.dirs {
            crate::private_dir(&dir.path().join(d));
        }
        let data = AbsPath::from_path(&dir.path().join("data")).unwrap();
        let qa = if layout.data {
            crate::private_dir(data.as_path());
            QaDir::open(&data).unwrap()
        } else {
            QaDir::read_only(&data).unwrap()
        };
        let qa = if layout.own_ledger { qa.with_ledger_dir(Some(dir.path().join("heads"))) } else { qa };
        let t = dir.path().join("transcript.jsonl");
        std::fs::write(&t, format!("{}\n", layout.transcript)).unwrap();
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
