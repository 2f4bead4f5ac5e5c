//! Randomness from the OS source only (nonces, tokens, temp names).

/// `bytes` random bytes from the OS, as lowercase hex (2 * bytes chars).
pub fn hex(bytes: usize) -> String {
    let mut buf = vec![0u8; bytes];
    fill(&mut buf);
    buf.iter().map(|b| format!("{b:02x}")).collect()
}

/// Fill `buf` from the OS random source. Aborts the process if the OS source
/// is unavailable: no fallback to a weaker generator.
pub fn fill(buf: &mut [u8]) {
    if let Err(e) = getrandom::getrandom(buf) {
        eprintln!("kijito: the OS random source failed: {e}");
        std::process::abort();
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn hex_is_fresh_and_lowercase() {
        let a = super::hex(16);
        let b = super::hex(16);
        assert_eq!(a.len(), 32);
        assert_ne!(a, b);
        assert!(a.bytes().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f')));
    }
}
