//! Consent tokens and their ledger, through the public API: the token is
//! random, unbiased and well formed; the standalone rule; the ledger's parse
//! limits and pruning.

#![allow(clippy::unwrap_used)]

use kijito_latch::tokens::{self, Ledger, Purpose, TokenRecord, TokenStatus, ALPHABET, MAX_MESSAGE_BYTES, MAX_TOKENS, MAX_WRONG_ATTEMPTS};
use kijito_latch::Risk;
use kijito_protocol::ids::TaggedDigest;
use std::collections::{HashMap, HashSet};

fn action() -> kijito_protocol::ids::ActionHash {
    kijito_latch::action_hash(b"rm -rf target\n").unwrap()
}

#[test]
fn tokens_are_distinct_and_well_formed() {
    let mut seen = HashSet::new();
    for _ in 0..500 {
        let t = tokens::new_token();
        assert_eq!(t.len(), 10, "{t}");
        assert!(t.starts_with("ACT-"), "{t}");
        assert!(t[4..].bytes().all(|b| ALPHABET.contains(&b)), "{t}");
        // A fresh token is always a valid standalone message.
        assert_eq!(tokens::standalone_token(&t).unwrap(), t);
        seen.insert(t);
    }
    // 31^6 ≈ 8.9e8 tokens: 500 draws collide with probability ~1.4e-4 per pair
    // set; allow a couple of collisions, refuse a constant.
    assert!(seen.len() >= 498, "only {} distinct tokens of 500", seen.len());
}

/// Rejection sampling keeps every character equally likely. 300 000
/// characters: each count is 9677 ± 97 (1 %); a biased draw (a wrong
/// rejection limit) moves some characters by 12 % or more.
#[test]
fn token_characters_are_uniform() {
    let mut counts: HashMap<u8, u64> = HashMap::new();
    let draws = 50_000;
    for _ in 0..draws {
        for b in tokens::new_token()[4..].bytes() {
            *counts.entry(b).or_default() += 1;
        }
    }
    assert_eq!(counts.len(), ALPHABET.len(), "every character of the alphabet appears");
    let mean = (draws * 6) as f64 / ALPHABET.len() as f64;
    for (&b, &n) in &counts {
        let dev = (n as f64 - mean).abs() / mean;
        assert!(dev < 0.06, "character {} drawn {n} times, mean {mean:.0} ({:.1} %)", b as char, dev * 100.0);
    }
}

#[test]
fn the_alphabet_has_no_look_alikes() {
    assert_eq!(ALPHABET.len(), 31);
    for c in b"01ILO" {
        assert!(!ALPHABET.contains(c));
    }
    assert_eq!(ALPHABET.iter().collect::<HashSet<_>>().len(), 31);
}

#[test]
fn standalone_message_length_rule() {
    let token = "ACT-9K2XQ7";
    // Padding is trimmed: exactly MAX_MESSAGE_BYTES is still a token ...
    let padded = format!("{token}{}", " ".repeat(MAX_MESSAGE_BYTES - token.len()));
    assert_eq!(padded.len(), MAX_MESSAGE_BYTES);
    assert_eq!(tokens::standalone_token(&padded).unwrap(), token);
    // ... one byte more is refused before it is looked at.
    let long = format!("{padded} ");
    assert_eq!(tokens::standalone_token(&long).unwrap_err().code(), "consent_message_not_standalone");
    // The prefix is required, and only the alphabet after it.
    for bad in ["ACX-9K2XQ7", "9K2XQ7ACT-", "ACT-9K2XQ!", "ACT-9K2XQ", "ACT-9K2XQ77", "ACT 9K2XQ7", "ACT-9K2XQI"] {
        assert!(tokens::standalone_token(bad).is_err(), "{bad}");
    }
    assert_eq!(tokens::standalone_token("\tact-22zz99\n").unwrap(), "ACT-22ZZ99");
}

#[test]
fn the_ledger_stores_a_salted_hash_and_finds_by_token_and_id() {
    let mut l = Ledger::default();
    assert_eq!(l.schema, tokens::LEDGER_SCHEMA);
    let (t1, r1) = l.issue(Purpose::Consent, &action(), Risk::Low, "one", 1000, 600_000);
    let (t2, r2) = l.issue(Purpose::Reseed, &action(), Risk::High, "two", 2000, 600_000);
    assert_ne!(t1, t2);
    assert_ne!(r1.salt, r2.salt);
    assert_ne!(r1.id, r2.id);
    assert!(r1.id.starts_with("tok_") && r1.id.len() == 20, "{}", r1.id);
    assert_eq!(r1.token_hash, tokens::hash_token(&r1.salt, &t1));
    assert_eq!(tokens::hash_token("s", "ACT-222222"), String::from(TaggedDigest::of(b"s:ACT-222222")));
    assert_ne!(tokens::hash_token("s", "ACT-222222"), tokens::hash_token("t", "ACT-222222"));
    assert!(r1.matches(&t1) && !r1.matches(&t2) && !r2.matches(&t1));
    assert_eq!((r1.issued_at_ms, r1.expires_at_ms), (1000, 601_000));
    assert_eq!((r2.purpose, r2.risk, r2.summary.as_str()), (Purpose::Reseed, Risk::High, "two"));
    assert_eq!(l.find_mut(&t2).map(|r| r.id.clone()), Some(r2.id.clone()));
    assert_eq!(l.find_mut(&t1).map(|r| r.id.clone()), Some(r1.id.clone()));
    assert!(l.find_mut("ACT-222222").is_none());
    assert_eq!(l.by_id(&r2.id), Some(&r2));
    assert_eq!(l.by_id(&r1.id), Some(&r1));
    assert_eq!(l.by_id("tok_0000000000000000"), None);
    // The view carries every field and the status at that time.
    let s = r2.state(2500);
    assert_eq!((s.id.as_str(), s.purpose, s.risk, s.summary.as_str()), (r2.id.as_str(), Purpose::Reseed, Risk::High, "two"));
    assert_eq!((s.action_hash.as_str(), s.issued_at_ms, s.expires_at_ms), (action().as_str(), 2000, 602_000));
    assert_eq!((s.used_at_ms, s.confirmed_at_ms, s.reconfirmed_at_ms, s.failed_attempts), (None, None, None, 0));
    assert_eq!(s.status, TokenStatus::Live);
    assert_eq!(r2.state(602_000).status, TokenStatus::Expired);
    // ttl saturates instead of wrapping.
    let (_, r3) = l.issue(Purpose::Consent, &action(), Risk::Low, "s", u64::MAX - 1, 10);
    assert_eq!(r3.expires_at_ms, u64::MAX);
}

#[test]
fn status_precedence_and_boundaries() {
    let mut l = Ledger::default();
    let (_, mut r) = l.issue(Purpose::Consent, &action(), Risk::Low, "s", 1000, 1000);
    assert_eq!(r.status(1999), TokenStatus::Live);
    assert_eq!(r.status(2000), TokenStatus::Expired);
    r.failed_attempts = MAX_WRONG_ATTEMPTS - 1;
    assert_eq!(r.status(1500), TokenStatus::Live);
    r.failed_attempts = MAX_WRONG_ATTEMPTS;
    assert_eq!(r.status(1500), TokenStatus::Locked);
    assert_eq!(r.status(5000), TokenStatus::Locked);
    r.used_at_ms = Some(1500);
    assert_eq!(r.status(1500), TokenStatus::Used);
}

#[test]
fn wrong_attempts_count_only_against_live_tokens() {
    let mut l = Ledger::default();
    assert_eq!(l.wrong_attempt(1000), 0, "no live token: nothing left");
    l.issue(Purpose::Consent, &action(), Risk::Low, "old", 1000, 10);
    l.issue(Purpose::Consent, &action(), Risk::Low, "new", 1000, 600_000);
    assert_eq!(l.wrong_attempt(1500), MAX_WRONG_ATTEMPTS - 1);
    assert_eq!(l.tokens[0].failed_attempts, 0, "an expired token is not counted");
    assert_eq!(l.tokens[1].failed_attempts, 1);
    assert_eq!(l.wrong_attempt(1500), MAX_WRONG_ATTEMPTS - 2);
    assert_eq!(l.tokens[1].failed_attempts, 2);
}

fn ledger_json(n: usize) -> serde_json::Value {
    let mut l = Ledger::default();
    let (_, r) = l.issue(Purpose::Consent, &action(), Risk::Low, "s", 1000, 600_000);
    l.tokens = vec![r; n];
    serde_json::to_value(&l).unwrap()
}

#[test]
fn the_ledger_parse_limits() {
    let parse =
        |v: &serde_json::Value| tokens::parse_ledger(v.to_string().as_bytes()).map(|l| l.tokens.len()).map_err(|e| e.code().to_owned());
    assert_eq!(parse(&ledger_json(MAX_TOKENS * 2)), Ok(MAX_TOKENS * 2));
    assert_eq!(parse(&ledger_json(MAX_TOKENS * 2 + 1)), Err("ledger_invalid".into()));
    let mut v = ledger_json(1);
    v["schema"] = "memory-latch.tokens/v1".into();
    assert_eq!(parse(&v), Err("ledger_invalid".into()));
    for key in ["token_hash", "action_hash"] {
        let mut v = ledger_json(1);
        v["tokens"][0][key] = "sha256:xyz".into();
        assert_eq!(parse(&v), Err("ledger_invalid".into()), "{key}");
        v["tokens"][0][key] = format!("md5:{}", "a".repeat(64)).into();
        assert_eq!(parse(&v), Err("ledger_invalid".into()), "{key}");
    }
    let mut v = ledger_json(1);
    v["tokens"][0]["extra"] = 1.into();
    assert_eq!(parse(&v), Err("ledger_invalid".into()));
    assert_eq!(tokens::parse_ledger(b"not json").unwrap_err().code(), "ledger_invalid");
    assert_eq!(parse(&ledger_json(0)), Ok(0));
}

fn record(l: &mut Ledger, now: u64, ttl: u64) -> TokenRecord {
    let (_, r) = l.issue(Purpose::Consent, &action(), Risk::Low, "s", now, ttl);
    r
}

#[test]
fn pruning_keeps_the_ledger_bounded_and_drops_dead_records_first() {
    let mut l = Ledger::default();
    let first = record(&mut l, 1000, 600_000);
    let dead = record(&mut l, 1000, 600_000);
    l.tokens[1].used_at_ms = Some(1001);
    for _ in 2..MAX_TOKENS {
        record(&mut l, 1000, 600_000);
    }
    assert_eq!(l.tokens.len(), MAX_TOKENS, "exactly the limit is kept whole");
    assert!(l.by_id(&dead.id).is_some());
    let newest = record(&mut l, 1000, 600_000);
    assert_eq!(l.tokens.len(), MAX_TOKENS);
    assert!(l.by_id(&dead.id).is_none(), "the used record went first");
    assert!(l.by_id(&first.id).is_some(), "the oldest live record stays while a dead one exists");
    assert!(l.by_id(&newest.id).is_some());
    // All live: the oldest goes.
    let newer = record(&mut l, 1000, 600_000);
    assert_eq!(l.tokens.len(), MAX_TOKENS);
    assert!(l.by_id(&first.id).is_none());
    assert!(l.by_id(&newer.id).is_some());
    // An explicit prune at the limit removes nothing.
    l.prune(1000);
    assert_eq!(l.tokens.len(), MAX_TOKENS);
}

#[test]
fn a_ledger_reads_back_to_the_same_bytes_with_its_action_hashes_as_text() {
    let mut l = Ledger::default();
    let (_, r1) = l.issue(Purpose::Consent, &action(), Risk::Low, "one", 1000, 600_000);
    l.issue(Purpose::Reseed, &kijito_protocol::ids::ActionHash::of_canonical(b"manifest"), Risk::High, "two", 2000, 600_000);
    let bytes = serde_json::to_vec(&l).unwrap();
    let v: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(v["tokens"][0]["action_hash"], action().as_str());
    assert_eq!(serde_json::to_vec(&tokens::parse_ledger(&bytes).unwrap()).unwrap(), bytes);
    let state = serde_json::to_value(r1.state(1000)).unwrap();
    assert_eq!(state["action_hash"], action().as_str());
}
