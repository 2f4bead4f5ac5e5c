//! PreCompact, the claim and re-entry delivery through the library, one rule
//! at a time (real files in a private temporary data dir, an injected
//! clock): each test changes exactly one thing from a state that would be
//! attested, so a skipped guard shows as an attested re-entry.

#![allow(clippy::unwrap_used)]

use kijito_files::private;
use kijito_gate::compaction::codes as cc;
use kijito_gate::pass::codes as pc;
use kijito_gate::{claim, precompact, take_reentry, transcript_identity, Attempt, ClaimOutcome, Pass, Reentry, TranscriptId};
use kijito_protocol::ids::{AbsPath, Digest, SessionId};
use std::path::Path;

use kijito_testkit::world::{pass_for, World, NONCE, T0};

fn abs(p: &Path) -> AbsPath {
    AbsPath::from_path(p).unwrap()
}

fn write_pass(e: &World, p: &Pass) {
    private::write_atomic(&e.qa.pass(&e.s), &p.to_bytes()).unwrap();
}

fn attempt(session: &str, at: i64, attested: bool) -> Attempt {
    Attempt {
        session_id: SessionId::parse(session).unwrap(),
        recorded_at_ms: at,
        trigger: "manual".into(),
        attested,
        reason: if attested { cc::PROMOTED.into() } else { "pass_stale".into() },
        compaction_nonce: attested.then(|| NONCE.to_owned()),
    }
}

fn write_attempt(e: &World, a: &Attempt) {
    private::write_atomic(&e.qa.attempt(&e.s), a.to_value().to_string().as_bytes()).unwrap();
}

/// A claim that finds an attested attempt and a matching ticket.
fn ready_to_claim(e: &World, attempt_at: i64) {
    let p = pass_for(e, "sess-1", attempt_at, NONCE);
    private::write_atomic(&e.qa.ticket(&e.s), &p.to_bytes()).unwrap();
    write_attempt(e, &attempt("sess-1", attempt_at, true));
}

fn claimed(e: &World, now: i64) -> Reentry {
    match claim(&e.qa, &e.s, now).unwrap() {
        ClaimOutcome::Claimed(r) => r,
        other => panic!("{other:?}"),
    }
}

fn exists(p: &Path) -> bool {
    std::fs::symlink_metadata(p).is_ok()
}

#[test]
fn the_whole_cycle_attests_once() {
    let e = World::new();
    let p = pass_for(&e, "sess-1", T0, NONCE);
    write_pass(&e, &p);
    let a = precompact(&e.qa, &e.s, Some(&e.transcript), "auto", T0 + 1000).unwrap();
    assert!(a.attested, "{a:?}");
    assert_eq!((a.reason.as_str(), a.trigger.as_str(), a.recorded_at_ms), (cc::PROMOTED.as_str(), "auto", T0 + 1000));
    assert_eq!(a.compaction_nonce.as_deref(), Some(NONCE));
    // The pass became the ticket (same bytes), and the attempt is on disk.
    assert!(!exists(&e.qa.pass(&e.s)));
    assert_eq!(std::fs::read(e.qa.ticket(&e.s)).unwrap(), p.to_bytes());
    assert_eq!(Attempt::parse(&std::fs::read(e.qa.attempt(&e.s)).unwrap()).unwrap(), a);
    let r = claimed(&e, T0 + 2000);
    assert_eq!(r.reason, cc::PROMOTED.as_str());
    assert_eq!(r.claimed_at_ms, T0 + 2000);
    let at = r.attested.clone().expect("attested");
    assert_eq!((at.pointer_id, at.lock_message_id), (p.pointer_id, p.lock_message_id));
    assert_eq!((at.pointer_digest.clone(), at.snapshot_digest.clone()), (p.pointer_digest.clone(), p.snapshot_digest.clone()));
    assert_eq!(at.compaction_nonce, NONCE);
    assert!(exists(&e.qa.ticket_consumed(&e.s)) && !exists(&e.qa.ticket(&e.s)));
    assert!(exists(&e.qa.attempt_claimed(&e.s)) && !exists(&e.qa.attempt(&e.s)));
    // Exactly once.
    assert_eq!(claim(&e.qa, &e.s, T0 + 3000).unwrap(), ClaimOutcome::NothingToClaim);
    assert_eq!(take_reentry(&e.qa, &e.s, T0 + 4000).unwrap(), Some(r));
    assert_eq!(take_reentry(&e.qa, &e.s, T0 + 5000).unwrap(), None);
}

#[test]
fn nothing_to_claim_without_an_attempt() {
    let e = World::new();
    assert_eq!(claim(&e.qa, &e.s, T0).unwrap(), ClaimOutcome::NothingToClaim);
    assert!(!exists(&e.qa.reentry(&e.s)));
}

#[test]
fn a_failed_claim_rename_is_an_error_not_nothing_to_claim() {
    let e = World::new();
    ready_to_claim(&e, T0);
    // The rename target is a non-empty directory: rename fails (not ENOENT).
    let blocker = e.qa.attempt_claimed(&e.s);
    std::fs::create_dir(&blocker).unwrap();
    std::fs::write(blocker.join("x"), b"x").unwrap();
    let err = claim(&e.qa, &e.s, T0 + 1).unwrap_err();
    assert_eq!(err.code(), kijito_gate::codes::STATE_RENAME_FAILED.as_str());
    // Same for delivery.
    private::write_atomic(&e.qa.reentry(&e.s), b"{}").unwrap();
    let blocker = e.qa.reentry_delivered(&e.s);
    std::fs::create_dir(&blocker).unwrap();
    std::fs::write(blocker.join("x"), b"x").unwrap();
    assert_eq!(take_reentry(&e.qa, &e.s, T0).unwrap_err().code(), kijito_gate::codes::STATE_RENAME_FAILED.as_str());
}

fn unattested_claim(e: &World, now: i64) -> String {
    let r = claimed(e, now);
    assert_eq!(r.attested, None, "{r:?}");
    assert_eq!(r.session_id, e.s);
    // Whatever the reason, the ticket is gone (never reused).
    assert!(!exists(&e.qa.ticket(&e.s)));
    // The written record says the same.
    let on_disk = Reentry::parse(&std::fs::read(e.qa.reentry(&e.s)).unwrap()).unwrap();
    assert_eq!(on_disk, r);
    r.reason
}

#[test]
fn the_attempt_must_be_this_sessions() {
    let e = World::new();
    ready_to_claim(&e, T0);
    write_attempt(&e, &attempt("other", T0, true));
    assert_eq!(unattested_claim(&e, T0 + 1), cc::ATTEMPT_INVALID.as_str());
}

#[test]
fn a_future_attempt_is_refused() {
    let e = World::new();
    ready_to_claim(&e, T0 + 1);
    assert_eq!(unattested_claim(&e, T0), cc::ATTEMPT_FUTURE.as_str());
}

#[test]
fn the_five_minute_boundary() {
    let e = World::new();
    ready_to_claim(&e, T0);
    let r = claimed(&e, T0 + kijito_gate::ATTEMPT_MAX_AGE_MS);
    assert!(r.attested.is_some(), "exactly 5 minutes is still in time: {r:?}");
    let e = World::new();
    ready_to_claim(&e, T0);
    assert_eq!(unattested_claim(&e, T0 + kijito_gate::ATTEMPT_MAX_AGE_MS + 1), cc::ATTEMPT_EXPIRED.as_str());
    assert_eq!(kijito_gate::ATTEMPT_MAX_AGE_MS, 300_000);
    // Claimed in the same millisecond as PreCompact: not from the future.
    let e = World::new();
    ready_to_claim(&e, T0);
    assert!(claimed(&e, T0).attested.is_some());
}

#[test]
fn an_unattested_attempt_keeps_its_reason() {
    let e = World::new();
    ready_to_claim(&e, T0);
    write_attempt(&e, &attempt("sess-1", T0, false));
    assert_eq!(unattested_claim(&e, T0 + 1), "pass_stale");
}

#[test]
fn an_unreadable_attempt_is_unattested() {
    let e = World::new();
    ready_to_claim(&e, T0);
    private::write_atomic(&e.qa.attempt(&e.s), b"{\"not\":\"an attempt\"}").unwrap();
    assert_eq!(unattested_claim(&e, T0 + 1), cc::ATTEMPT_INVALID.as_str());
}

#[test]
fn the_ticket_must_exist_belong_and_carry_the_nonce() {
    let e = World::new();
    ready_to_claim(&e, T0);
    std::fs::remove_file(e.qa.ticket(&e.s)).unwrap();
    assert_eq!(unattested_claim(&e, T0 + 1), cc::TICKET_MISSING.as_str());

    let e = World::new();
    ready_to_claim(&e, T0);
    private::write_atomic(&e.qa.ticket(&e.s), &pass_for(&e, "other", T0, NONCE).to_bytes()).unwrap();
    assert_eq!(unattested_claim(&e, T0 + 1), cc::TICKET_INVALID.as_str());

    let e = World::new();
    ready_to_claim(&e, T0);
    private::write_atomic(&e.qa.ticket(&e.s), b"{\"garbage\":1}").unwrap();
    assert_eq!(unattested_claim(&e, T0 + 1), cc::TICKET_INVALID.as_str());

    let e = World::new();
    ready_to_claim(&e, T0);
    private::write_atomic(&e.qa.ticket(&e.s), &pass_for(&e, "sess-1", T0, &"f".repeat(32)).to_bytes()).unwrap();
    assert_eq!(unattested_claim(&e, T0 + 1), cc::TICKET_NONCE.as_str());
}

fn unattested_precompact(e: &World, transcript: Option<&AbsPath>, now: i64) -> String {
    let a = precompact(&e.qa, &e.s, transcript, "manual", now).unwrap();
    assert!(!a.attested, "{a:?}");
    assert_eq!(a.compaction_nonce, None);
    assert!(!exists(&e.qa.pass(&e.s)), "the refused pass is removed");
    assert!(!exists(&e.qa.ticket(&e.s)));
    assert_eq!(Attempt::parse(&std::fs::read(e.qa.attempt(&e.s)).unwrap()).unwrap(), a);
    a.reason
}

#[test]
fn precompact_refusals() {
    let e = World::new();
    assert_eq!(unattested_precompact(&e, Some(&e.transcript), T0), pc::PASS_MISSING.as_str());

    let e = World::new();
    write_pass(&e, &pass_for(&e, "sess-1", T0, NONCE));
    assert_eq!(unattested_precompact(&e, None, T0), pc::TRANSCRIPT_UNKNOWN.as_str());

    // The transcript was replaced by another file (another inode).
    let e = World::new();
    write_pass(&e, &pass_for(&e, "sess-1", T0, NONCE));
    let t = e.transcript.as_path();
    let other = e.dir.path().join("other.jsonl");
    std::fs::write(&other, b"{\"turn\":1}\n").unwrap();
    std::fs::rename(&other, t).unwrap();
    assert_eq!(unattested_precompact(&e, Some(&e.transcript), T0), pc::TRANSCRIPT_REPLACED.as_str());

    // Stale pass.
    let e = World::new();
    write_pass(&e, &pass_for(&e, "sess-1", T0, NONCE));
    assert_eq!(unattested_precompact(&e, Some(&e.transcript), T0 + kijito_gate::PASS_MAX_AGE_MS + 1), pc::PASS_STALE.as_str());
    let e = World::new();
    write_pass(&e, &pass_for(&e, "sess-1", T0, NONCE));
    assert!(precompact(&e.qa, &e.s, Some(&e.transcript), "manual", T0 + kijito_gate::PASS_MAX_AGE_MS).unwrap().attested);
}

#[test]
fn precompact_removes_an_orphaned_ticket_and_reentry_first() {
    let e = World::new();
    let old = pass_for(&e, "sess-1", T0, &"e".repeat(32));
    private::write_atomic(&e.qa.ticket(&e.s), &old.to_bytes()).unwrap();
    private::write_atomic(&e.qa.reentry(&e.s), b"{}").unwrap();
    assert_eq!(unattested_precompact(&e, Some(&e.transcript), T0), pc::PASS_MISSING.as_str());
    assert!(!exists(&e.qa.reentry(&e.s)));
    // With a fresh pass, the new ticket is the new pass, not the orphan.
    let e2 = World::new();
    private::write_atomic(&e2.qa.ticket(&e2.s), &old.to_bytes()).unwrap();
    private::write_atomic(&e2.qa.reentry(&e2.s), b"{}").unwrap();
    let p = pass_for(&e2, "sess-1", T0, NONCE);
    write_pass(&e2, &p);
    assert!(precompact(&e2.qa, &e2.s, Some(&e2.transcript), "auto", T0).unwrap().attested);
    assert_eq!(std::fs::read(e2.qa.ticket(&e2.s)).unwrap(), p.to_bytes());
    assert!(!exists(&e2.qa.reentry(&e2.s)));
}

#[test]
fn trigger_and_reason_are_clipped_to_codes() {
    let e = World::new();
    let a = precompact(&e.qa, &e.s, Some(&e.transcript), "auto; rm -rf /", T0).unwrap();
    assert_eq!(a.trigger, "autorm-rf");
    let a = precompact(&e.qa, &e.s, Some(&e.transcript), &"x".repeat(100), T0).unwrap();
    assert_eq!(a.trigger, "x".repeat(64));
    let a = precompact(&e.qa, &e.s, Some(&e.transcript), "; /", T0).unwrap();
    assert_eq!(a.trigger, "unknown");
    let a = precompact(&e.qa, &e.s, Some(&e.transcript), "a_b-C9", T0).unwrap();
    assert_eq!(a.trigger, "a_b-C9");
}

#[test]
fn a_concurrent_precompact_waits_then_gives_up() {
    use std::os::fd::AsRawFd;
    let e = World::new();
    let lock_path = e.qa.path().as_path().join("precompact.sess-1.lock");
    let f = std::fs::OpenOptions::new().read(true).write(true).create(true).truncate(false).open(&lock_path).unwrap();
    // SAFETY: flock on a descriptor we own.
    assert_eq!(unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) }, 0);
    let start = std::time::Instant::now();
    let err = precompact(&e.qa, &e.s, Some(&e.transcript), "auto", T0).unwrap_err();
    let waited = start.elapsed();
    assert_eq!(err.code(), cc::PRECOMPACT_BUSY.as_str());
    assert!(waited >= std::time::Duration::from_millis(700), "gave up after {waited:?}");
    assert!(waited < std::time::Duration::from_secs(10), "{waited:?}");
    assert!(!exists(&e.qa.attempt(&e.s)), "nothing written while busy");
    drop(f);
    assert!(!precompact(&e.qa, &e.s, Some(&e.transcript), "auto", T0).unwrap().attested);
}

fn attempt_json(attested: serde_json::Value, nonce: serde_json::Value) -> Vec<u8> {
    serde_json::json!({"schemaVersion": 1, "sessionId": "sess-1", "recordedAtMs": 5, "trigger": "auto", "attested": attested, "reason": "r", "compactionNonce": nonce})
        .to_string()
        .into_bytes()
}

#[test]
fn attempt_parse_guards() {
    use serde_json::json;
    let ok = Attempt::parse(&attempt_json(json!(true), json!(NONCE))).unwrap();
    assert_eq!((ok.attested, ok.compaction_nonce.as_deref(), ok.recorded_at_ms), (true, Some(NONCE), 5));
    let ok = Attempt::parse(&attempt_json(json!(false), json!(null))).unwrap();
    assert_eq!((ok.attested, ok.compaction_nonce), (false, None));
    for (attested, nonce) in [
        (json!(true), json!(null)),
        (json!(false), json!(NONCE)),
        (json!(true), json!(NONCE.to_uppercase())),
        (json!(true), json!(&NONCE[1..])),
        (json!(true), json!(format!("{NONCE}0"))),
        (json!(true), json!(format!("g{}", &NONCE[1..]))),
        (json!("yes"), json!(null)),
    ] {
        let err = Attempt::parse(&attempt_json(attested.clone(), nonce.clone())).unwrap_err();
        assert_eq!(err.code(), cc::ATTEMPT_INVALID.as_str(), "{attested} {nonce}");
    }
    let text = String::from_utf8(attempt_json(json!(false), json!(null))).unwrap();
    for bad in [
        text.replace("\"schemaVersion\":1", "\"schemaVersion\":2"),
        text.replace("\"sess-1\"", "\"\""),
        text.replace("\"recordedAtMs\":5", "\"recordedAtMs\":\"5\""),
        text.replace("\"trigger\":\"auto\"", "\"trigger\":1"),
        text.replace("\"reason\":\"r\"", "\"reason\":null"),
        text.replace("\"trigger\":\"auto\",", ""),
        "[]".to_owned(),
        "nope".to_owned(),
    ] {
        assert_eq!(Attempt::parse(bad.as_bytes()).unwrap_err().code(), cc::ATTEMPT_INVALID.as_str(), "{bad}");
    }
    // Reasons and triggers read back as codes.
    let odd = text.replace("\"reason\":\"r\"", "\"reason\":\"a b;c\"");
    assert_eq!(Attempt::parse(odd.as_bytes()).unwrap().reason, "abc");
}

fn reentry_json(attested: bool) -> serde_json::Value {
    let d = Digest::of(b"x");
    if attested {
        serde_json::json!({"schemaVersion": kijito_gate::compaction::REENTRY_SCHEMA_VERSION, "sessionId": "sess-1", "claimedAtMs": 9, "attested": true, "reason": "pass_promoted",
            "pointerId": 7, "lockMessageId": 8, "pointerDigest": d.as_str(), "snapshotDigest": d.as_str(), "compactionNonce": NONCE,
            "summaryCarried": true, "summaryCheck": "carried"})
    } else {
        serde_json::json!({"schemaVersion": kijito_gate::compaction::REENTRY_SCHEMA_VERSION, "sessionId": "sess-1", "claimedAtMs": 9, "attested": false, "reason": "pass_stale",
            "pointerId": null, "lockMessageId": null, "pointerDigest": null, "snapshotDigest": null, "compactionNonce": null,
            "summaryCarried": null, "summaryCheck": "unattested"})
    }
}

#[test]
fn reentry_parse_guards() {
    let parse = |v: &serde_json::Value| Reentry::parse(v.to_string().as_bytes());
    let a = parse(&reentry_json(true)).unwrap();
    assert_eq!(Reentry::parse(a.to_value().to_string().as_bytes()).unwrap(), a);
    let at = a.attested.unwrap();
    assert_eq!((at.pointer_id.get(), at.lock_message_id.get(), at.compaction_nonce.as_str()), (7, 8, NONCE));
    let u = parse(&reentry_json(false)).unwrap();
    assert_eq!((u.attested, u.reason.as_str(), u.claimed_at_ms), (None, "pass_stale", 9));
    let bad = |v: serde_json::Value| assert_eq!(parse(&v).unwrap_err().code(), cc::REENTRY_INVALID.as_str(), "{v}");
    for (k, v) in [
        ("pointerId", serde_json::json!(0)),
        ("lockMessageId", serde_json::json!("8")),
        ("pointerDigest", serde_json::json!("abc")),
        ("snapshotDigest", serde_json::json!(null)),
        ("compactionNonce", serde_json::json!(NONCE.to_uppercase())),
        ("attested", serde_json::json!("true")),
        ("schemaVersion", serde_json::json!(1)),
        ("summaryCheck", serde_json::json!("pending")),
        ("summaryCarried", serde_json::json!(false)),
        ("sessionId", serde_json::json!("")),
        ("claimedAtMs", serde_json::json!(1.5)),
    ] {
        let mut j = reentry_json(true);
        j[k] = v;
        bad(j);
    }
    for k in ["pointerId", "lockMessageId", "pointerDigest", "snapshotDigest", "compactionNonce", "summaryCarried", "summaryCheck"] {
        let mut j = reentry_json(false);
        j[k] = reentry_json(true)[k].clone();
        bad(j);
    }
}

#[test]
fn delivery_of_a_bad_record_is_unattested() {
    let e = World::new();
    let mut other = reentry_json(true);
    other["sessionId"] = "other".into();
    private::write_atomic(&e.qa.reentry(&e.s), other.to_string().as_bytes()).unwrap();
    let r = take_reentry(&e.qa, &e.s, T0).unwrap().unwrap();
    assert_eq!((r.attested, r.reason.as_str(), r.claimed_at_ms, r.session_id.as_str()), (None, cc::REENTRY_INVALID.as_str(), T0, "sess-1"));
    private::write_atomic(&e.qa.reentry(&e.s), b"garbage").unwrap();
    let r = take_reentry(&e.qa, &e.s, T0).unwrap().unwrap();
    assert_eq!((r.attested, r.reason.as_str()), (None, cc::REENTRY_INVALID.as_str()));
    // A well-formed record with `attested:true` that no PreCompact
    // backs (its nonce was never consumed) is delivered UNATTESTED.
    private::write_atomic(&e.qa.reentry(&e.s), reentry_json(true).to_string().as_bytes()).unwrap();
    let r = take_reentry(&e.qa, &e.s, T0).unwrap().unwrap();
    assert_eq!((r.attested, r.reason.as_str(), r.claimed_at_ms), (None, cc::REENTRY_UNBACKED.as_str(), 9));
    // Consumed after the claim: still not backed.
    let consumed = |e: &World, at: i64| {
        let p = pass_for(e, "sess-1", 1, NONCE);
        let entry = kijito_gate::ledger::LedgerEntry::of(&p, &p.to_bytes(), kijito_gate::pass::codes::PASS_CONSUMED, at);
        kijito_gate::ledger::append(&e.qa, &e.s, &entry, at).unwrap();
    };
    consumed(&e, 10);
    private::write_atomic(&e.qa.reentry(&e.s), reentry_json(true).to_string().as_bytes()).unwrap();
    assert_eq!(take_reentry(&e.qa, &e.s, T0).unwrap().unwrap().reason, cc::REENTRY_UNBACKED.as_str());
    // A record whose nonce the ledger lists as consumed before the claim is
    // still not enough: no claimed attempt, no consumed ticket.
    let e = World::new();
    consumed(&e, 8);
    private::write_atomic(&e.qa.reentry(&e.s), reentry_json(true).to_string().as_bytes()).unwrap();
    let r = take_reentry(&e.qa, &e.s, T0).unwrap().unwrap();
    assert_eq!((r.attested, r.reason.as_str(), r.claimed_at_ms), (None, cc::REENTRY_UNBACKED.as_str(), 9));
}

/// One real cycle (pass, PreCompact, claim) left on disk; the delivered
/// record is ATTESTED only with the whole chain intact:
/// each test below breaks one link.
fn cycle_ready_to_deliver(e: &World) -> Reentry {
    write_pass(e, &pass_for(e, "sess-1", T0, NONCE));
    assert!(precompact(&e.qa, &e.s, Some(&e.transcript), "manual", T0 + 10).unwrap().attested);
    claimed(e, T0 + 20)
}

#[test]
fn an_attested_record_needs_the_whole_chain() {
    type Break = fn(&World);
    let breaks: [(&str, Break); 8] = [
        ("the claimed attempt removed", |e| std::fs::remove_file(e.qa.attempt_claimed(&e.s)).unwrap()),
        ("the consumed ticket removed", |e| std::fs::remove_file(e.qa.ticket_consumed(&e.s)).unwrap()),
        ("the consumed ticket readable by others", |e| {
            std::fs::set_permissions(e.qa.ticket_consumed(&e.s), std::os::unix::fs::PermissionsExt::from_mode(0o644)).unwrap()
        }),
        ("the consumed ticket a symlink to a copy", |e| {
            let copy = e.dir.path().join("copy");
            std::fs::copy(e.qa.ticket_consumed(&e.s), &copy).unwrap();
            std::fs::remove_file(e.qa.ticket_consumed(&e.s)).unwrap();
            std::os::unix::fs::symlink(&copy, e.qa.ticket_consumed(&e.s)).unwrap();
        }),
        ("the consumed ticket of another pointer digest", |e| {
            let other = Pass { pointer_digest: Digest::of(b"other"), ..pass_for(e, "sess-1", T0, NONCE) };
            private::write_atomic(&e.qa.ticket_consumed(&e.s), &other.to_bytes()).unwrap();
        }),
        ("the consumed ticket rewritten (same values, other bytes: the ledger's digest differs)", |e| {
            let p = pass_for(e, "sess-1", T0, NONCE);
            private::write_atomic(&e.qa.ticket_consumed(&e.s), &p.to_bytes_witnessed(true)).unwrap();
        }),
        ("the claimed attempt of another nonce", |e| {
            let mut a = Attempt::parse(&std::fs::read(e.qa.attempt_claimed(&e.s)).unwrap()).unwrap();
            a.compaction_nonce = Some("ffffffffffffffffffffffffffffffff".into());
            private::write_atomic(&e.qa.attempt_claimed(&e.s), a.to_value().to_string().as_bytes()).unwrap();
        }),
        ("the ledger removed", |e| std::fs::remove_file(kijito_gate::ledger::path(&e.qa, &e.s).unwrap()).unwrap()),
    ];
    for (what, brk) in breaks {
        let e = World::new();
        let r = cycle_ready_to_deliver(&e);
        brk(&e);
        let got = take_reentry(&e.qa, &e.s, T0 + 30).unwrap().unwrap();
        assert_eq!(
            (got.attested, got.reason.as_str(), got.claimed_at_ms),
            (None, cc::REENTRY_UNBACKED.as_str(), r.claimed_at_ms),
            "{what}"
        );
    }
    // Nothing broken: ATTESTED, with the ticket's bootsWitnessed (a v5 pass: unknown).
    let e = World::new();
    let r = cycle_ready_to_deliver(&e);
    let got = take_reentry(&e.qa, &e.s, T0 + 30).unwrap().unwrap();
    assert_eq!(got, r);
    assert_eq!(got.attested.unwrap().boots_witnessed, None);
}

#[test]
fn a_consumed_pass_put_back_is_replayed_by_the_ledger() {
    let e = World::new();
    cycle_ready_to_deliver(&e);
    // Copy the consumed ticket back as the pass: no `qa-spent` lists it
    // (PreCompact writes none), the ledger outside the data dir refuses it.
    std::fs::copy(e.qa.ticket_consumed(&e.s), e.qa.pass(&e.s)).unwrap();
    assert!(std::fs::symlink_metadata(e.qa.spent(&e.s)).is_err(), "no spent record");
    let a = precompact(&e.qa, &e.s, Some(&e.transcript), "manual", T0 + 40).unwrap();
    assert_eq!((a.attested, a.reason.as_str()), (false, pc::PASS_REPLAYED.as_str()));
    // A ledger that cannot be trusted refuses every pass (fail closed), and
    // PreCompact still records an attempt (it never blocks).
    let e = World::new();
    std::fs::create_dir_all(e.qa.ledger_dir().unwrap()).unwrap();
    std::fs::write(kijito_gate::ledger::path(&e.qa, &e.s).unwrap(), b"garbage\n").unwrap();
    std::fs::set_permissions(kijito_gate::ledger::path(&e.qa, &e.s).unwrap(), std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    write_pass(&e, &pass_for(&e, "sess-1", T0, NONCE));
    let a = precompact(&e.qa, &e.s, Some(&e.transcript), "manual", T0 + 10).unwrap();
    assert_eq!((a.attested, a.reason.as_str()), (false, pc::LEDGER_INVALID.as_str()));
    // No state directory at all: unavailable, unattested.
    let e = World::new();
    let qa = kijito_gate::QaDir::open(&e.data).unwrap().with_ledger_dir(None);
    write_pass(&e, &pass_for(&e, "sess-1", T0, NONCE));
    let a = precompact(&qa, &e.s, Some(&e.transcript), "manual", T0 + 10).unwrap();
    assert_eq!((a.attested, a.reason.as_str()), (false, pc::LEDGER_UNAVAILABLE.as_str()));
}

#[test]
fn transcript_identity_rules() {
    let e = World::new();
    let t = e.transcript.as_path();
    // Every field comes from the file: mtime to the millisecond.
    let when = std::time::UNIX_EPOCH + std::time::Duration::from_millis(1_700_000_000_123);
    std::fs::OpenOptions::new().write(true).open(t).unwrap().set_modified(when).unwrap();
    let id = transcript_identity(&e.transcript).unwrap();
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(t).unwrap();
    assert_eq!(id, TranscriptId { dev: m.dev(), ino: m.ino(), size: 11, mtime_ms: 1_700_000_000_123 });
    // A symlink, a missing file, a directory.
    let link = e.dir.path().join("link.jsonl");
    std::os::unix::fs::symlink(t, &link).unwrap();
    assert_eq!(transcript_identity(&abs(&link)).unwrap_err().code(), pc::TRANSCRIPT_SYMLINK.as_str());
    assert_eq!(transcript_identity(&abs(&e.dir.path().join("none"))).unwrap_err().code(), pc::TRANSCRIPT_NOT_FOUND.as_str());
    assert_eq!(transcript_identity(&abs(e.dir.path())).unwrap_err().code(), pc::TRANSCRIPT_NOT_REGULAR.as_str());
    // Not readable at all (a path through a file).
    assert_eq!(transcript_identity(&abs(&t.join("x"))).unwrap_err().code(), pc::TRANSCRIPT_UNREADABLE.as_str());
}

/// A FIFO as transcript must not block PreCompact (opened non-blocking).
#[test]
fn a_fifo_transcript_does_not_hang() {
    let e = World::new();
    let fifo = e.dir.path().join("fifo.jsonl");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a valid C string.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let path = abs(&fifo);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(transcript_identity(&path).map_err(|e| e.code().to_owned()));
    });
    let got = rx.recv_timeout(std::time::Duration::from_secs(10)).expect("transcript_identity blocked on a FIFO");
    assert_eq!(got, Err(pc::TRANSCRIPT_NOT_REGULAR.to_string()));
}

#[test]
fn a_transcript_of_another_user_is_refused() {
    let e = World::new();
    let path = if private::current_uid() == 0 {
        let t = e.dir.path().join("theirs.jsonl");
        std::fs::write(&t, b"x").unwrap();
        std::os::unix::fs::chown(&t, Some(4242), Some(4242)).unwrap();
        t
    } else {
        Path::new("/etc/passwd").to_owned()
    };
    assert_eq!(transcript_identity(&abs(&path)).unwrap_err().code(), pc::TRANSCRIPT_NOT_OWNED.as_str());
}

/// The per-session lock file is never followed through a symlink.
#[test]
fn a_symlinked_lock_file_is_refused() {
    let e = World::new();
    let target = e.dir.path().join("elsewhere");
    std::fs::write(&target, b"").unwrap();
    std::os::unix::fs::symlink(&target, e.qa.path().as_path().join("precompact.sess-1.lock")).unwrap();
    let err = precompact(&e.qa, &e.s, Some(&e.transcript), "auto", T0).unwrap_err();
    assert_eq!(err.code(), cc::PRECOMPACT_BUSY.as_str());
    assert!(!exists(&e.qa.attempt(&e.s)));
}
