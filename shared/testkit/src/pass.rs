//! The one QA pass every test builds by hand (docs/protocol.md §6): every
//! harness takes it from here, so a pass has one shape wherever a test
//! writes it.

use kijito_gate::{Pass, TranscriptId};
use kijito_protocol::ids::{Digest, MemoryId, MessageId, SessionId};

/// The pointer id every hand-built pass names.
pub const PASS_POINTER: u64 = 21813;
/// The lock message id every hand-built pass names.
pub const PASS_LOCK: u64 = 1234;

/// A pass of `session` recorded at `at_ms` with `nonce`, bound to
/// `transcript`: pointer [`PASS_POINTER`], lock [`PASS_LOCK`], the digests
/// of "pointer" and "snapshot", reports "a" and "b". A test that needs other
/// values says which with `Pass { field, ..pass(..) }`.
pub fn pass(session: &SessionId, at_ms: i64, nonce: &str, transcript: TranscriptId) -> Pass {
    Pass {
        session_id: session.clone(),
        recorded_at_ms: at_ms,
        pointer_id: MemoryId::new(PASS_POINTER).unwrap(),
        lock_message_id: MessageId::new(PASS_LOCK).unwrap(),
        pointer_digest: Digest::of(b"pointer"),
        snapshot_digest: Digest::of(b"snapshot"),
        cold_boot_report_digests: [Digest::of(b"a"), Digest::of(b"b")],
        compaction_nonce: nonce.into(),
        transcript,
    }
}
