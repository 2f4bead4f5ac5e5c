//! A new turn after `record` ends the pass (docs/protocol.md §7, "New
//! turn"), through the library on real files: the withdrawal, the spent
//! record, the refusal of a pass copied back. The failed compaction request
//! is kijito-compact's part (shared/compact/tests/it/withdraw_rules.rs).
#![allow(clippy::unwrap_used)]

use kijito_files::private;
use kijito_gate::pass::codes::PASS_WITHDRAWN;
use kijito_gate::withdraw::{self, Withdrawn};
use kijito_gate::{precompact, status};
use std::os::unix::fs::PermissionsExt;

use kijito_testkit::world::{World, NONCE, T0};

const NONCE2: &str = "00000000000000000000000000abc002";

fn exists(p: &std::path::Path) -> bool {
    std::fs::symlink_metadata(p).is_ok()
}

/// No compaction request to fail (the adapters' part is not linked here).
fn no_request(_nonce: &str) -> bool {
    false
}

#[test]
fn the_withdrawal_asks_the_callback_once_with_the_withdrawn_nonce() {
    let e = World::new();
    let asked = std::cell::RefCell::new(Vec::new());
    let record = |n: &str| {
        asked.borrow_mut().push(n.to_owned());
        true
    };
    assert_eq!(withdraw::new_turn(&e.qa, &e.s, T0, &record).unwrap(), None);
    assert!(asked.borrow().is_empty(), "nothing withdrawn: not asked");
    e.write_pass(&e.s, T0, NONCE);
    assert_eq!(withdraw::new_turn(&e.qa, &e.s, T0 + 10, &record).unwrap(), Some(Withdrawn { nonce: NONCE.into(), request_failed: true }));
    assert_eq!(*asked.borrow(), [NONCE.to_owned()]);
    e.write_pass(&e.s, T0 + 20, NONCE2);
    assert_eq!(
        withdraw::new_turn(&e.qa, &e.s, T0 + 30, &no_request).unwrap(),
        Some(Withdrawn { nonce: NONCE2.into(), request_failed: false })
    );
    assert!(!exists(&e.qa.pass(&e.s)) && exists(&e.qa.withdrawn(&e.s)));
}

#[test]
fn without_a_pass_a_new_turn_does_nothing() {
    let e = World::new();
    assert_eq!(withdraw::new_turn(&e.qa, &e.s, T0, &no_request).unwrap(), None);
    assert!(!exists(&e.qa.spent(&e.s)) && !exists(&e.qa.withdrawn(&e.s)), "nothing written");
    assert!(!exists(&e.qa.path().as_path().join("precompact.sess-1.lock")), "not even the lock: one stat");
}

#[test]
fn an_unreadable_spent_record_refuses_every_pass_and_does_not_stop_the_withdrawal() {
    let e = World::new();
    private::write_atomic(&e.qa.spent(&e.s), b"{\"schemaVersion\":7}").unwrap();
    e.write_pass(&e.s, T0, NONCE2);
    let st = status(&e.qa, &e.s, None, T0 + 1);
    assert_eq!(st["passRejectedBecause"], "spent_nonces_invalid", "fail closed: {st}");
    assert!(withdraw::new_turn(&e.qa, &e.s, T0 + 2, &no_request).unwrap().is_some());
    assert!(!exists(&e.qa.pass(&e.s)), "withdrawn all the same");
    // A record (the data dir of another session) is per session.
    let other = kijito_protocol::ids::SessionId::parse("sess-2").unwrap();
    assert!(withdraw::check_unspent(&e.qa, &other, NONCE2).is_ok());
    std::fs::set_permissions(e.qa.spent(&e.s), std::fs::Permissions::from_mode(0o644)).unwrap();
    assert!(withdraw::check_unspent(&e.qa, &e.s, NONCE).is_err(), "an open record is not trusted either");
}

#[test]
fn the_protocol_example_of_the_spent_record_is_byte_exact() {
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/protocol.md")).unwrap();
    let start = doc.find(r#"`{"schemaVersion":1,"sessionId":"sess-1","spent":["#).expect("the example in docs/protocol.md §7") + 1;
    let example = &doc[start..start + doc[start..].find('`').unwrap()];
    let s = kijito_protocol::ids::SessionId::parse("sess-1").unwrap();
    let spent = withdraw::Spent::parse(example.as_bytes(), &s).unwrap();
    assert_eq!(spent.to_bytes(), example.as_bytes());
    assert_eq!(spent.entries[0].why, PASS_WITHDRAWN);
}

/// One pass, one compaction: the promoted pass's nonce is spent in the
/// ledger outside the data dir before the pass moves (PreCompact writes no
/// `qa-spent`), so the consumed ticket (or the pass) copied back as the pass
/// attests no second compaction, within its 30 minutes too.
#[test]
fn a_consumed_pass_copied_back_attests_no_second_compaction() {
    let e = World::new();
    let bytes = e.write_pass(&e.s, T0, NONCE);
    let a = precompact(&e.qa, &e.s, Some(&e.transcript), "manual", T0 + 10).unwrap();
    assert!(a.attested, "{a:?}");
    assert!(std::fs::symlink_metadata(e.qa.spent(&e.s)).is_err(), "PreCompact writes no spent record");
    let ledger = kijito_gate::ledger::read(&e.qa, &e.s).unwrap();
    assert_eq!(
        ledger.iter().map(|l| (l.nonce.as_str(), l.why, l.spent_at_ms)).collect::<Vec<_>>(),
        [(NONCE, kijito_gate::pass::codes::PASS_CONSUMED, T0 + 10)]
    );
    // The ticket copied back under the pass's name, well inside 30 minutes.
    let ticket = std::fs::read(e.qa.ticket(&e.s)).unwrap();
    assert_eq!(ticket, bytes);
    private::write_atomic(&e.qa.pass(&e.s), &ticket).unwrap();
    // (`state::accepted_pass`, which finds the ledger through the
    // environment, is checked with the real binaries: tests/it/gate_ledger.rs.)
    let consumed = kijito_gate::pass::codes::PASS_REPLAYED;
    let st = status(&e.qa, &e.s, Some(&e.transcript), T0 + 20);
    assert_eq!(st["passRejectedBecause"], consumed, "{st}");
    let a = precompact(&e.qa, &e.s, Some(&e.transcript), "manual", T0 + 30).unwrap();
    assert_eq!((a.attested, a.reason.as_str()), (false, consumed.as_str()));
    // A new record (new nonce) is attested again.
    e.write_pass(&e.s, T0 + 40, NONCE2);
    assert!(precompact(&e.qa, &e.s, Some(&e.transcript), "manual", T0 + 50).unwrap().attested);
}
