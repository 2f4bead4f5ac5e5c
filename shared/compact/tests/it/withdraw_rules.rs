//! A new turn after `record` ends the pass (docs/protocol.md §7, "New
//! turn"), the adapters' part, through the library on real files: the
//! request of the withdrawn pass failed, a final or foreign one left alone,
//! the pin the hooks read, and a pass copied back refused by `request` too.
//! The gate's part is shared/gate/tests/it/withdraw_rules.rs.
#![allow(clippy::unwrap_used)]

use kijito_compact::trigger::{self, Pin, Request, RequestState, Via};
use kijito_files::private;
use kijito_gate::pass::codes::{PASS_MISSING, PASS_WITHDRAWN};
use kijito_gate::withdraw::{self, Withdrawn};
use kijito_gate::{precompact, status};
use kijito_protocol::ids::AbsPath;
use std::os::unix::fs::MetadataExt;

use kijito_testkit::world::{pass_for, World, NONCE, T0};

const NONCE2: &str = "00000000000000000000000000abc002";

fn pin(e: &World) {
    let pin = Pin {
        session_id: e.s.clone(),
        via: Via::Tmux {
            socket: AbsPath::parse("/tmp/tmux-0/default").unwrap(),
            pane: "%3".into(),
            host_pid: 4242,
            host_start: 9,
            tmux: None,
        },
        pinned_at_ms: T0,
    };
    trigger::write_pin(&e.qa, &pin).unwrap();
}

fn exists(p: &std::path::Path) -> bool {
    std::fs::symlink_metadata(p).is_ok()
}

#[test]
fn a_new_turn_withdraws_the_pass_fails_its_request_and_names_the_reason_once() {
    let e = World::new();
    let bytes = e.write_pass(&e.s, T0, NONCE);
    pin(&e);
    let (r, _) = trigger::create_request(&e.qa, &e.s, T0 + 1).unwrap();
    assert_eq!(r.state, RequestState::Pending);

    let w = trigger::new_turn(&e.qa, &e.s, T0 + 10).unwrap();
    assert_eq!(w, Some(Withdrawn { nonce: NONCE.into(), request_failed: true }));
    assert!(!exists(&e.qa.pass(&e.s)), "the pass is withdrawn");
    assert_eq!(std::fs::read(e.qa.withdrawn(&e.s)).unwrap(), bytes, "renamed, same bytes");
    let spent = std::fs::read_to_string(e.qa.spent(&e.s)).unwrap();
    assert_eq!(
        spent,
        format!(
            r#"{{"schemaVersion":1,"sessionId":"sess-1","spent":[{{"nonce":"{NONCE}","why":"pass_invalidated_by_new_turn","recordedAtMs":{T0},"spentAtMs":{}}}]}}"#,
            T0 + 10
        )
    );
    for p in [e.qa.spent(&e.s), e.qa.withdrawn(&e.s)] {
        assert_eq!(std::fs::metadata(&p).unwrap().mode() & 0o777, 0o600, "{}", p.display());
    }
    let r = trigger::read_request(&e.qa, &e.s).unwrap().unwrap();
    assert_eq!(r.state, RequestState::Failed { code: PASS_WITHDRAWN.into() });
    assert_eq!((r.updated_at_ms, r.ticket_invalidated), (T0 + 10, false));
    // `qa-gate status` says why; the adapter and a new request refuse with the reason.
    let st = status(&e.qa, &e.s, None, T0 + 20);
    assert_eq!((st["pass"].clone(), st["passRejectedBecause"].clone()), (false.into(), PASS_WITHDRAWN.into()), "{st}");
    assert_eq!(trigger::pass_still_valid(&e.qa, &r, T0 + 20).unwrap_err().code(), PASS_WITHDRAWN.as_str());
    assert_eq!(trigger::create_request(&e.qa, &e.s, T0 + 20).unwrap_err().code(), PASS_WITHDRAWN.as_str());
    // A second prompt finds no pass: nothing more happens.
    assert_eq!(trigger::new_turn(&e.qa, &e.s, T0 + 30).unwrap(), None);

    // The next PreCompact is UNATTESTED with the reason, and only that one.
    let a = precompact(&e.qa, &e.s, Some(&e.transcript), "auto", T0 + 40).unwrap();
    assert!(!a.attested);
    assert_eq!(a.reason, PASS_WITHDRAWN.as_str());
    assert!(!exists(&e.qa.withdrawn(&e.s)), "the marker went with that attempt");
    let a = precompact(&e.qa, &e.s, Some(&e.transcript), "auto", T0 + 50).unwrap();
    assert_eq!(a.reason, PASS_MISSING.as_str());
}

#[test]
fn a_pass_copied_back_is_refused_everywhere_and_a_new_record_works() {
    let e = World::new();
    let bytes = e.write_pass(&e.s, T0, NONCE);
    trigger::new_turn(&e.qa, &e.s, T0 + 10).unwrap().unwrap();
    // Copied back under the pass's name (same nonce).
    private::write_atomic(&e.qa.pass(&e.s), &bytes).unwrap();
    let st = status(&e.qa, &e.s, Some(&e.transcript), T0 + 20);
    assert_eq!(
        (st["pass"].clone(), st["passAcceptedNow"].clone(), st["passRejectedBecause"].clone()),
        (true.into(), false.into(), PASS_WITHDRAWN.into())
    );
    assert_eq!(kijito_gate::state::accepted_pass(&e.qa.pass(&e.s), &e.s, None, T0 + 20).unwrap_err().code(), PASS_WITHDRAWN.as_str());
    pin(&e);
    assert_eq!(trigger::create_request(&e.qa, &e.s, T0 + 20).unwrap_err().code(), PASS_WITHDRAWN.as_str());
    let a = precompact(&e.qa, &e.s, Some(&e.transcript), "manual", T0 + 30).unwrap();
    assert_eq!((a.attested, a.reason.as_str()), (false, PASS_WITHDRAWN.as_str()));
    assert!(!exists(&e.qa.ticket(&e.s)) && !exists(&e.qa.pass(&e.s)), "no ticket; the copy is removed");
    // Copied back again after that PreCompact (the marker is gone): still refused.
    private::write_atomic(&e.qa.pass(&e.s), &bytes).unwrap();
    let a = precompact(&e.qa, &e.s, Some(&e.transcript), "manual", T0 + 40).unwrap();
    assert_eq!((a.attested, a.reason.as_str()), (false, PASS_WITHDRAWN.as_str()));
    // The agent runs the cycle again: a new pass (new nonce) is promoted.
    e.write_pass(&e.s, T0 + 50, NONCE2);
    let a = precompact(&e.qa, &e.s, Some(&e.transcript), "manual", T0 + 60).unwrap();
    assert!(a.attested, "{a:?}");
    assert_eq!(a.compaction_nonce.as_deref(), Some(NONCE2));
}

#[test]
fn a_final_or_foreign_request_is_left_alone_and_a_withdrawn_copy_stays_listed_once() {
    let e = World::new();
    e.write_pass(&e.s, T0, NONCE);
    let done = Request {
        session_id: e.s.clone(),
        via: trigger::ViaKind::Tmux,
        nonce: "ffffffffffffffffffffffffffffffff".into(),
        requested_at_ms: T0,
        updated_at_ms: T0,
        state: RequestState::Sent,
        ticket_invalidated: false,
        note: None,
    };
    trigger::write_request(&e.qa, &done).unwrap();
    let w = trigger::new_turn(&e.qa, &e.s, T0 + 5).unwrap().unwrap();
    assert!(!w.request_failed, "a request for another pass is not this pass's");
    assert_eq!(trigger::read_request(&e.qa, &e.s).unwrap().unwrap(), done);
    // The same pass copied back and withdrawn again: listed once.
    private::write_atomic(&e.qa.pass(&e.s), &pass_for(&e, "sess-1", T0, NONCE).to_bytes()).unwrap();
    trigger::new_turn(&e.qa, &e.s, T0 + 6).unwrap().unwrap();
    assert_eq!(withdraw::read_spent(&e.qa, &e.s).unwrap().entries.len(), 1);
}

#[test]
fn the_hooks_read_only_the_adapter_of_a_pin() {
    let e = World::new();
    assert_eq!(trigger::pinned_via(&e.qa, &e.s).unwrap(), None);
    pin(&e);
    assert_eq!(trigger::pinned_via(&e.qa, &e.s).unwrap().map(trigger::ViaKind::as_str), Some("tmux"));
    let text = std::fs::read_to_string(e.qa.pin(&e.s)).unwrap();
    for junk in [
        text.replace("sess-1", "sess-2"),
        text.replace("\"via\":\"tmux\"", "\"via\":\"screen\""),
        text.replace("\"schemaVersion\":1", "\"schemaVersion\":2"),
        "{}}".into(),
    ] {
        private::write_atomic(&e.qa.pin(&e.s), junk.as_bytes()).unwrap();
        assert_eq!(trigger::pinned_via(&e.qa, &e.s).unwrap_err().code(), trigger::codes::PIN_INVALID.as_str(), "{junk}");
    }
}
