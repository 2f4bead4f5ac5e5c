#![no_main]
//! The manifest parser must never panic, and whatever it accepts must be its
//! own canonical serialisation.
use kijito_protocol::ids::{MemoryId, MessageId};
use kijito_protocol::manifest;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(m) = manifest::parse_manifest_unbound(data) {
        assert_eq!(m.to_canonical().as_bytes(), data);
        let _ = manifest::parse_manifest(data, MemoryId::new(21813).unwrap(), MessageId::new(1234).unwrap());
    }
});
