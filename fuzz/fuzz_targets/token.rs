#![no_main]
//! The token file parser never panics; an accepted token is one line of
//! visible characters, and the bearer header carries exactly it.
use kijito_client::token::Token;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(t) = Token::from_file_bytes(data) {
        let header = t.bearer_header();
        assert!(header.starts_with("Bearer ") && !header.chars().any(|c| c.is_control()));
    }
});
