#![no_main]
//! The rendering parser and classifier must never panic, and accepted content
//! never contains a fence marker.
use kijito_protocol::ids::{MemoryId, Persona};
use kijito_protocol::render;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    for persona in [None, Some(Persona::default())] {
        if let Ok((r, _)) = render::parse_and_classify(text, MemoryId::new(9).unwrap(), persona.as_ref()) {
            assert!(!r.content.contains("⟦UNTRUSTED") && !r.content.contains("⟦/UNTRUSTED"));
        }
    }
});
