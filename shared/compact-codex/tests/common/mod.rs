//! The world of the adapter crate's integration tests (both harnesses, `it`
//! and `headless`): kijito-testkit's QA world, passes and stand-in Codex,
//! and the adapter's state files as SessionStart and `kijito-compact
//! request` write them (through kijito-compact, on real files).

#![allow(dead_code, unused_imports, clippy::unwrap_used)]

use kijito_compact::trigger::{self, Pin, Request, Via};
use kijito_protocol::ids::{AbsPath, SessionId};
pub(crate) use kijito_testkit::codex::standin_codex;
pub(crate) use kijito_testkit::world::{sid, World};
pub(crate) use kijito_testkit::{jsonl, private_dir, wait_for};

/// This adapter's id in the tests.
pub(crate) const ADAPTER: &str = "0123456789abcdef0123456789abcdef";
pub(crate) const NONCE: &str = "fedcba9876543210fedcba9876543210";
pub(crate) const NONCE2: &str = "00112233445566778899aabbccddeeff";

/// The adapter's state files in a [`World`].
pub(crate) trait AdapterFiles {
    /// What SessionStart writes under the adapter `adapter_id`.
    fn pin(&self, s: &SessionId, adapter_id: &str, socket: &str);
    /// The request of `s`, if any.
    fn request(&self, s: &SessionId) -> Option<Request>;
    /// Turn the kill switch on (create it) or off (remove it).
    fn kill_switch(&self, on: bool);
}

impl AdapterFiles for World {
    fn pin(&self, s: &SessionId, adapter_id: &str, socket: &str) {
        let via = Via::CodexAppServer { adapter_id: adapter_id.into(), socket: AbsPath::parse(socket).unwrap() };
        trigger::write_pin(&self.qa, &Pin { session_id: s.clone(), via, pinned_at_ms: 5 }).unwrap();
    }

    fn request(&self, s: &SessionId) -> Option<Request> {
        trigger::read_request(&self.qa, s).unwrap()
    }

    fn kill_switch(&self, on: bool) {
        let p = trigger::kill_switch(&self.data);
        if on {
            std::fs::write(p, b"").unwrap();
        } else {
            std::fs::remove_file(p).unwrap();
        }
    }
}
