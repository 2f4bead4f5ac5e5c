#![no_main]
//! The memory-latch manifest parser (`chain::parse_file`, which splits the
//! file into blocks and parses each with `entry::parse_block_canonical`):
//! never panics; a file it accepts without a finding is exactly the
//! rendering of the entries it returned (parse → render → same bytes), and
//! every returned entry re-renders into a block that parses back to itself
//! with the same canonical payload. The chain verifier walks the entries
//! (with and without an hmac key) without panicking.
use kijito_latch::chain::{self, Verifier, LIVE_HEADER};
use kijito_latch::entry;
use kijito_latch::integrity::HmacKey;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let parsed = chain::parse_file(data, LIVE_HEADER, "fuzz");
    assert_eq!(parsed.entries.len(), parsed.canon.len());
    if parsed.findings.is_empty() {
        assert_eq!(chain::render_file(LIVE_HEADER, &parsed.entries).as_bytes(), data, "accepted file is not its own rendering");
    }
    for (e, canon) in parsed.entries.iter().zip(&parsed.canon) {
        assert_eq!(&e.canonical_payload(), canon);
        let block = e.render();
        let (again, canon2) = entry::parse_block_canonical(&block).unwrap_or_else(|err| panic!("a parsed entry does not re-parse: {err:?}"));
        assert_eq!(&again, e);
        assert_eq!(&canon2, canon);
        assert_eq!(entry::split_blocks(&block), vec![block.as_str()]);
    }
    let key = HmacKey::from_bytes(&[7u8; 32]).expect("key");
    for k in [None, Some(&key)] {
        let mut v = Verifier::genesis(k);
        for (e, canon) in parsed.entries.iter().zip(&parsed.canon) {
            v.check_with(e, canon);
        }
        assert!(v.count <= parsed.entries.len() as u64);
    }
});
