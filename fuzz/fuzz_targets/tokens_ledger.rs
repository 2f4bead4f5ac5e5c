#![no_main]
//! The memory-latch consent-token ledger (`tokens.json`, `tokens::parse_ledger`)
//! and the standalone-token rule: never panic; an accepted ledger written the
//! way the latch writes it (pretty JSON) reads back equal, and that text is a
//! fixed point; status, pruning and wrong-attempt counting keep their
//! invariants on any accepted ledger; an accepted confirmation message is
//! exactly one well-formed token.
use kijito_latch::tokens::{self, TokenStatus, ALPHABET, MAX_TOKENS, MAX_WRONG_ATTEMPTS, TOKEN_CHARS, TOKEN_PREFIX};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        if let Ok(t) = tokens::standalone_token(text) {
            assert_eq!(t.len(), TOKEN_PREFIX.len() + TOKEN_CHARS);
            assert!(t.starts_with(TOKEN_PREFIX) && t[TOKEN_PREFIX.len()..].bytes().all(|b| ALPHABET.contains(&b)));
            assert_eq!(t, text.trim().to_ascii_uppercase());
        }
    }
    let Ok(ledger) = tokens::parse_ledger(data) else { return };
    // The writer's format (ledger.rs: serde_json::to_vec_pretty).
    let written = serde_json::to_vec_pretty(&ledger).expect("serialise");
    let again = tokens::parse_ledger(&written).expect("a written ledger reads back");
    assert_eq!(again, ledger);
    assert_eq!(serde_json::to_vec_pretty(&again).unwrap(), written);
    let mut times: Vec<u64> = vec![0, u64::MAX];
    for t in &ledger.tokens {
        times.extend([t.issued_at_ms, t.expires_at_ms.saturating_sub(1), t.expires_at_ms]);
    }
    times.truncate(6);
    for &now in &times {
        for t in &ledger.tokens {
            let s = t.status(now);
            assert_eq!(s == TokenStatus::Used, t.used_at_ms.is_some());
            if s == TokenStatus::Live {
                assert!(now < t.expires_at_ms && t.failed_attempts < MAX_WRONG_ATTEMPTS);
            }
            assert_eq!(t.state(now).status, s);
            assert_eq!(ledger.by_id(&t.id).map(|r| r.id.as_str()), Some(t.id.as_str()));
        }
        let live = ledger.tokens.iter().filter(|t| t.status(now) == TokenStatus::Live).count();
        let mut pruned = ledger.clone();
        pruned.prune(now);
        assert!(pruned.tokens.len() <= MAX_TOKENS);
        if ledger.tokens.len() <= MAX_TOKENS {
            assert_eq!(pruned, ledger);
        } else if live <= MAX_TOKENS {
            // Only used, expired or locked records are dropped.
            assert_eq!(pruned.tokens.iter().filter(|t| t.status(now) == TokenStatus::Live).count(), live);
        }
        let mut tried = ledger.clone();
        let left = tried.wrong_attempt(now);
        assert!(left < MAX_WRONG_ATTEMPTS);
        for (before, after) in ledger.tokens.iter().zip(&tried.tokens) {
            let bump = u32::from(before.status(now) == TokenStatus::Live);
            assert_eq!(after.failed_attempts, before.failed_attempts + bump);
        }
        if live == 0 {
            assert_eq!(left, 0);
        }
    }
});
