//! PostCompact's summary verdict through the library (docs/protocol.md §7,
//! "Summary check"): `note_summary` fills in the pending check of this
//! compaction's claim record, waiting or delivered, and only that one;
//! `record_for` finds the record by nonce. Real files in a private temporary
//! data dir, an injected clock.

#![allow(clippy::unwrap_used)]

use kijito_files::private;
use kijito_gate::summary::{record_for, LOCK_MESSAGE_ID, POINTER_DIGEST, POINTER_ID, SNAPSHOT_DIGEST};
use kijito_gate::{claim_with, note_summary, take_reentry, Attempt, ClaimOutcome, Reentry, Summary, SummaryCheck};
use kijito_protocol::ids::{Digest, SessionId};

use kijito_testkit::world::{pass_for, World, NONCE, T0};

const OTHER_NONCE: &str = "fedcba9876543210fedcba9876543210";
const MAX_AGE: i64 = kijito_gate::ATTEMPT_MAX_AGE_MS;

/// The four labelled lines of the pass below.
fn carrying() -> String {
    format!(
        "<summary>work\n{POINTER_ID}: 21813\n{LOCK_MESSAGE_ID}: 1234\n{POINTER_DIGEST}: {}\n{SNAPSHOT_DIGEST}: {}\n</summary>",
        Digest::of(b"pointer").as_str(),
        Digest::of(b"snapshot").as_str()
    )
}

fn attempt(session: &str, nonce: &str) -> Attempt {
    Attempt {
        session_id: SessionId::parse(session).unwrap(),
        recorded_at_ms: T0,
        trigger: "manual".into(),
        attested: true,
        reason: kijito_gate::compaction::codes::PROMOTED.into(),
        compaction_nonce: Some(nonce.to_owned()),
    }
}

/// An attested claim at `T0` whose summary check is pending (Claude Code's
/// SessionStart(compact) before PostCompact).
fn pending_claim(e: &World) -> Reentry {
    let p = pass_for(e, "sess-1", T0, NONCE);
    // What PreCompact leaves: the nonce consumed in the ledger, the ticket, the attempt.
    let entry = kijito_gate::ledger::LedgerEntry::of(&p, &p.to_bytes(), kijito_gate::pass::codes::PASS_CONSUMED, T0);
    kijito_gate::ledger::append(&e.qa, &e.s, &entry, T0).unwrap();
    private::write_atomic(&e.qa.ticket(&e.s), &p.to_bytes()).unwrap();
    private::write_atomic(&e.qa.attempt(&e.s), attempt("sess-1", NONCE).to_value().to_string().as_bytes()).unwrap();
    match claim_with(&e.qa, &e.s, T0, Summary::NotYet).unwrap() {
        ClaimOutcome::Claimed(r) => {
            assert_eq!(r.attested.as_ref().map(|a| a.summary), Some(SummaryCheck::Pending), "{r:?}");
            r
        }
        other => panic!("{other:?}"),
    }
}

fn on_disk(p: &std::path::Path) -> Reentry {
    Reentry::parse(&std::fs::read(p).unwrap()).unwrap()
}

fn noting(e: &World) -> std::path::PathBuf {
    e.qa.path().as_path().join(format!("compaction-reentry-noting.{}.json", e.s))
}

fn verdict(r: &Reentry) -> Option<SummaryCheck> {
    r.attested.as_ref().map(|a| a.summary)
}

#[test]
fn a_waiting_record_gets_the_verdict_once() {
    let e = World::new();
    let claimed = pending_claim(&e);
    let got = note_summary(&e.qa, &e.s, Summary::Text(&carrying()), T0 + 1).unwrap();
    assert_eq!(got, Some(SummaryCheck::Carried));
    let r = on_disk(&e.qa.reentry(&e.s));
    assert_eq!(verdict(&r), Some(SummaryCheck::Carried));
    // Everything else of the record is unchanged, and it is back in place.
    assert_eq!((r.session_id.clone(), r.claimed_at_ms, r.reason.clone()), (claimed.session_id, claimed.claimed_at_ms, claimed.reason));
    assert!(std::fs::symlink_metadata(noting(&e)).is_err());
    // Decided: a second PostCompact changes nothing.
    assert_eq!(note_summary(&e.qa, &e.s, Summary::Absent, T0 + 2).unwrap(), None);
    assert_eq!(verdict(&on_disk(&e.qa.reentry(&e.s))), Some(SummaryCheck::Carried));
    // The record is found by its nonce, not by another's.
    assert_eq!(record_for(&e.qa, &e.s, NONCE).unwrap(), Some(r));
    assert_eq!(record_for(&e.qa, &e.s, OTHER_NONCE).unwrap(), None);
}

#[test]
fn a_delivered_record_gets_the_verdict_in_place() {
    let e = World::new();
    pending_claim(&e);
    let delivered = take_reentry(&e.qa, &e.s, T0 + 1).unwrap().unwrap();
    assert_eq!(verdict(&delivered), Some(SummaryCheck::Pending));
    let got = note_summary(&e.qa, &e.s, Summary::Text("<summary>lost the values</summary>"), T0 + 2).unwrap();
    assert_eq!(got, Some(SummaryCheck::ValuesMissing));
    let r = on_disk(&e.qa.reentry_delivered(&e.s));
    assert_eq!(verdict(&r), Some(SummaryCheck::ValuesMissing));
    assert!(std::fs::symlink_metadata(e.qa.reentry(&e.s)).is_err(), "never re-queued for delivery");
    assert_eq!(record_for(&e.qa, &e.s, NONCE).unwrap(), Some(r));
}

#[test]
fn the_verdict_only_within_five_minutes_of_the_claim() {
    // Exactly five minutes after the claim: still this compaction's.
    let e = World::new();
    pending_claim(&e);
    assert_eq!(note_summary(&e.qa, &e.s, Summary::Absent, T0 + MAX_AGE).unwrap(), Some(SummaryCheck::NoSummary));
    // Later, or before the claim (a clock step back): left pending.
    for now in [T0 + MAX_AGE + 1, T0 - 1, 1] {
        let e = World::new();
        pending_claim(&e);
        assert_eq!(note_summary(&e.qa, &e.s, Summary::Text(&carrying()), now).unwrap(), None, "at {now}");
        assert_eq!(verdict(&on_disk(&e.qa.reentry(&e.s))), Some(SummaryCheck::Pending), "at {now}");
        assert!(std::fs::symlink_metadata(noting(&e)).is_err());
    }
}

#[test]
fn only_this_compactions_record_of_this_session() {
    // The claimed attempt names another compaction: the record is not its.
    let e = World::new();
    pending_claim(&e);
    private::write_atomic(&e.qa.attempt_claimed(&e.s), attempt("sess-1", OTHER_NONCE).to_value().to_string().as_bytes()).unwrap();
    assert_eq!(note_summary(&e.qa, &e.s, Summary::Text(&carrying()), T0 + 1).unwrap(), None);
    assert_eq!(verdict(&on_disk(&e.qa.reentry(&e.s))), Some(SummaryCheck::Pending));
    // The claimed attempt is another session's (same nonce): nothing.
    let e = World::new();
    pending_claim(&e);
    private::write_atomic(&e.qa.attempt_claimed(&e.s), attempt("sess-2", NONCE).to_value().to_string().as_bytes()).unwrap();
    assert_eq!(note_summary(&e.qa, &e.s, Summary::Text(&carrying()), T0 + 1).unwrap(), None);
    assert_eq!(verdict(&on_disk(&e.qa.reentry(&e.s))), Some(SummaryCheck::Pending));
    // No claimed attempt at all: nothing.
    let e = World::new();
    pending_claim(&e);
    std::fs::remove_file(e.qa.attempt_claimed(&e.s)).unwrap();
    assert_eq!(note_summary(&e.qa, &e.s, Summary::Absent, T0 + 1).unwrap(), None);
    // The record under this session's name is another session's (same
    // nonce): neither updated nor reported as this session's.
    let e = World::new();
    let mut r = pending_claim(&e);
    r.session_id = SessionId::parse("sess-2").unwrap();
    private::write_atomic(&e.qa.reentry(&e.s), r.to_value().to_string().as_bytes()).unwrap();
    assert_eq!(note_summary(&e.qa, &e.s, Summary::Text(&carrying()), T0 + 1).unwrap(), None);
    assert_eq!(on_disk(&e.qa.reentry(&e.s)), r);
    assert_eq!(record_for(&e.qa, &e.s, NONCE).unwrap(), None);
}

#[test]
fn record_for_finds_a_record_being_noted() {
    let e = World::new();
    let r = pending_claim(&e);
    std::fs::rename(e.qa.reentry(&e.s), noting(&e)).unwrap();
    assert_eq!(record_for(&e.qa, &e.s, NONCE).unwrap(), Some(r));
    assert_eq!(record_for(&e.qa, &e.s, OTHER_NONCE).unwrap(), None);
}
