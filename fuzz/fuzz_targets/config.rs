#![no_main]
//! The config parser never panics; an accepted apiUrl is https or loopback.
use kijito_files::config::Config;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(c) = Config::from_json(data) {
        let url = c.api_url.as_str();
        assert!(url.starts_with("https://") || url.starts_with("http://"), "{url}");
    }
});
