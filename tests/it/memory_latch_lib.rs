//! memory-latch through the library: injected clock, the byte-flip sweep,
//! and the API wake-check uses.

#![allow(clippy::unwrap_used)]

use kijito_latch::{self as latch, Config, ConsentState, Event, Latch, PromptOutcome, Risk, TokenStatus};
use std::fs;
use std::os::unix::fs::PermissionsExt;

fn setup() -> (tempfile::TempDir, Latch) {
    let d = tempfile::tempdir().unwrap();
    fs::set_permissions(d.path(), fs::Permissions::from_mode(0o700)).unwrap();
    let boot = d.path().join("boot");
    fs::write(&boot, "aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee").unwrap();
    let ws = d.path().join("ws");
    fs::create_dir(&ws).unwrap();
    let mut c = Config::new(&ws);
    c.boot_id_file = boot;
    c.heads_dir = Some(d.path().join("heads"));
    let l = Latch::open(&c).unwrap();
    l.init(1_000, &latch::InitInput { objective: "o".into(), ..Default::default() }).unwrap();
    (d, l)
}

const T0: u64 = 1_800_000_000_000;
const TTL: u64 = 10 * 60_000;

#[test]
fn token_expiry_follows_the_injected_clock() {
    let (_d, l) = setup();
    let action = b"rm -rf target\n";
    let issued = l.consent_request(T0, action, "clean", Risk::Low).unwrap();
    let states = l.tokens(T0 + TTL).unwrap();
    assert_eq!(states[0].status, TokenStatus::Expired);
    assert_eq!(l.tokens(T0 + TTL - 1).unwrap()[0].status, TokenStatus::Live);
    let refused = |o: Option<PromptOutcome>| match o {
        Some(PromptOutcome::Refused { code, .. }) => code,
        other => panic!("{other:?}"),
    };
    assert_eq!(refused(l.user_prompt(T0 + TTL, &issued.token).unwrap()).as_str(), "consent_token_expired");
    match l.user_prompt(T0 + TTL - 1, &format!(" {} ", issued.token.to_lowercase())).unwrap() {
        Some(PromptOutcome::Confirmed { risk: Risk::Low, .. }) => {}
        other => panic!("{other:?}"),
    }
    assert_eq!(l.status(T0 + TTL - 1).unwrap().head.consent_state, ConsentState::Authorized);
    assert_eq!(refused(l.user_prompt(T0 + TTL - 1, &issued.token).unwrap()).as_str(), "consent_already_confirmed");
    // Not a token: nothing happens, nothing is counted.
    assert_eq!(l.user_prompt(T0, "please go ahead").unwrap(), None);
    assert_eq!(l.user_prompt(T0, &format!("ok {}", issued.token)).unwrap(), None);
}

#[test]
fn a_newer_request_supersedes_the_older_token() {
    let (_d, l) = setup();
    let first = l.consent_request(T0, b"a\n", "a", Risk::Low).unwrap();
    let _second = l.consent_request(T0 + 1, b"a\n", "a", Risk::Low).unwrap();
    match l.user_prompt(T0 + 2, &first.token).unwrap() {
        Some(PromptOutcome::Refused { code, .. }) => assert_eq!(code.as_str(), "consent_token_superseded"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn lockout_after_five_wrong_attempts_and_high_risk_twice() {
    let (_d, l) = setup();
    let issued = l.consent_request(T0, b"drop\n", "drop", Risk::High).unwrap();
    let wrong = if issued.token == "ACT-ZZZZZZ" { "ACT-YYYYYY" } else { "ACT-ZZZZZZ" };
    for left in (0..5).rev() {
        assert_eq!(l.user_prompt(T0, wrong).unwrap(), Some(PromptOutcome::Wrong { attempts_left: left }));
    }
    assert_eq!(l.tokens(T0).unwrap()[0].status, TokenStatus::Locked);
    let again = l.consent_request(T0 + 1, b"drop\n", "drop", Risk::High).unwrap();
    assert!(matches!(l.user_prompt(T0 + 2, &again.token).unwrap(), Some(PromptOutcome::AwaitingReconfirmation { .. })));
    assert_eq!(l.status(T0 + 2).unwrap().head.consent_state, ConsentState::Pending);
    assert!(matches!(l.user_prompt(T0 + 3, &again.token).unwrap(), Some(PromptOutcome::Confirmed { risk: Risk::High, .. })));
    let t = l.tokens(T0 + 3).unwrap().into_iter().find(|t| t.id == l.status(T0 + 3).unwrap().head.irreversible_action_pending).unwrap();
    assert_eq!((t.confirmed_at_ms, t.reconfirmed_at_ms), (Some(T0 + 2), Some(T0 + 3)));
}

#[test]
fn every_single_byte_change_is_detected() {
    let (_d, l) = setup();
    for i in 0..3 {
        l.checkpoint(
            T0 + i,
            &latch::CheckpointInput { next_single_step: Some(format!("step {i}")), decisions: vec!["d".into()], ..Default::default() },
        )
        .unwrap();
    }
    assert!(l.verify().trusted);
    let path = l.paths().manifest.clone();
    let original = fs::read(&path).unwrap();
    let mut checked = 0;
    for pos in (0..original.len()).step_by(7) {
        let mut bytes = original.clone();
        bytes[pos] = if bytes[pos] == b'x' { b'y' } else { b'x' };
        fs::write(&path, &bytes).unwrap();
        let r = l.verify();
        assert!(!r.trusted, "byte {pos} ({:?}) changed without detection", original[pos] as char);
        checked += 1;
    }
    assert!(checked > 500);
    fs::write(&path, &original).unwrap();
    assert!(l.verify().trusted);
}

#[test]
fn wake_check_api_head_lock_tokens_and_degraded_entry() {
    let (_d, l) = setup();
    let r = l.verify();
    let head = r.head.clone().unwrap();
    assert_eq!(head.boot_id, "aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee");
    assert_eq!(head.updated_at_ms, 1_000);
    assert!(!r.silent_witness);
    let probe = l.lock_probe(T0).unwrap();
    assert!(probe.exists && !probe.held);
    let guard = fs::OpenOptions::new().read(true).write(true).open(&l.paths().lock).unwrap();
    use std::os::fd::AsRawFd;
    // SAFETY: flock on a valid fd.
    assert_eq!(unsafe { libc::flock(guard.as_raw_fd(), libc::LOCK_EX) }, 0);
    assert!(l.lock_probe(T0).unwrap().held);
    drop(guard);
    let e = l.append_entry(T0, Event::DegradedMode, &["long_sleep: 3 days".into()], true).unwrap();
    assert_eq!((e.event, e.consent_state), (Event::DegradedMode, ConsentState::Locked));
    let r = l.verify();
    assert!(r.trusted);
    assert_eq!(r.head.unwrap().event, Event::DegradedMode);
    assert!(l.tokens(T0).unwrap().is_empty());
}

#[test]
fn detect_and_protocol_text_for_the_hook() {
    assert_eq!(latch::detect::continuity_break("hey, you lost context"), Some("lost context"));
    let ctx = latch::recover::hook_context("lost context", Some("/r/bin/memory-latch recover --workspace /w"));
    assert!(ctx.contains("`/r/bin/memory-latch recover --workspace /w`"), "{ctx}");
}

#[test]
fn fast_verify_agrees_with_full_and_still_catches_segment_edits() {
    let d = tempfile::tempdir().unwrap();
    fs::set_permissions(d.path(), fs::Permissions::from_mode(0o700)).unwrap();
    let ws = d.path().join("ws");
    fs::create_dir(&ws).unwrap();
    let mut c = Config::new(&ws);
    c.heads_dir = Some(d.path().join("heads"));
    let l = Latch::open(&c).unwrap();
    l.seed_history(400, T0).unwrap();
    let (full, fast) = (l.verify(), l.verify_fast());
    assert!(full.trusted && fast.trusted, "{:?} {:?}", full.findings, fast.findings);
    assert_eq!((full.entries, full.segments), (fast.entries, fast.segments));
    assert_eq!(full.head, fast.head);
    assert_eq!((full.depth, fast.depth), (latch::Depth::Full, latch::Depth::SealedByHash));
    let seg = l.paths().segment(2);
    let original = fs::read_to_string(&seg).unwrap();
    // an edit deep inside a segment (neither first nor last entry)
    fs::write(&seg, original.replacen("step 200\"", "step 201\"", 1)).unwrap();
    let fast = l.verify_fast();
    assert!(!fast.trusted);
    assert!(fast.findings.iter().any(|f| f.code.as_str() == "segment_ref_mismatch"), "{:?}", fast.findings);
    // a whole entry removed from the middle of a segment
    let start = original.find("## Entry 200 ").unwrap();
    let end = original.find("## Entry 201 ").unwrap();
    fs::write(&seg, format!("{}{}", &original[..start], &original[end..])).unwrap();
    assert!(!l.verify_fast().trusted);
    // hostile bytes right after the header never panic
    let header_end = original.find("## Entry ").unwrap();
    fs::write(&seg, format!("{}é{}", &original[..header_end], &original[header_end..])).unwrap();
    assert!(!l.verify_fast().trusted);
    assert!(!l.verify().trusted);
    fs::write(&seg, &original).unwrap();
    assert!(l.verify_fast().trusted);
}
