//! The adapter's side of the QA state (`Gatekeeper`): which request it may
//! send, what it records before sending, and how a sent request ends. Real
//! files in a private temporary data dir, written by kijito-gate as the
//! hooks and `kijito-compact request` write them; the clock is passed in.

#![allow(clippy::unwrap_used)]

use crate::common;

use common::*;
use kijito_compact::trigger::{self, Pin, Request, RequestState, Via, ViaKind};
use kijito_compact_codex::gatekeeper::{Decision, Gatekeeper};
use kijito_gate::ClaimOutcome;
use kijito_protocol::ids::AbsPath;

const T0: i64 = 1_800_000_000_000;
const THREAD: &str = "019a0000-0000-7000-8000-000000000001";
const SOCK: &str = "/run/user/1000/kijito-compact/x/rpc.sock";

fn gate(w: &World) -> Gatekeeper {
    Gatekeeper { data_dir: w.data.clone(), adapter_id: ADAPTER.into() }
}

/// A pass at T0, this adapter's pin, and the request `kijito-compact
/// request` records at `at`.
fn requested(w: &World, at: i64) -> Request {
    let s = sid(THREAD);
    w.write_pass(&s, T0, NONCE);
    w.pin(&s, ADAPTER, SOCK);
    trigger::create_request(&w.qa, &s, at).unwrap().0
}

#[test]
fn a_pending_request_of_a_pinned_thread_is_recorded_as_sent_before_sending() {
    let w = World::new();
    let r = requested(&w, T0 + 10);
    assert_eq!(r.state, RequestState::Pending);
    let d = gate(&w).decide(THREAD, T0 + 500).unwrap();
    let Decision::Send(sent) = d else { panic!("{d:?}") };
    assert_eq!(sent.state, RequestState::Sent);
    assert_eq!(sent.nonce, NONCE);
    assert_eq!(sent.updated_at_ms, T0 + 500);
    assert_eq!(w.request(&sid(THREAD)).unwrap(), sent, "on disk before the caller sends");
    // sent once: the next look finds nothing to send
    assert_eq!(gate(&w).decide(THREAD, T0 + 600).unwrap(), Decision::Nothing);
}

#[test]
fn the_sent_time_never_goes_before_the_request() {
    // the wall clock stepped back between the request and the adapter's look
    let w = World::new();
    requested(&w, T0 + 1000);
    let Decision::Send(sent) = gate(&w).decide(THREAD, T0 + 400).unwrap() else { panic!() };
    assert_eq!(sent.updated_at_ms, T0 + 1000);
    assert_eq!(w.request(&sid(THREAD)).unwrap().updated_at_ms, T0 + 1000);
}

#[test]
fn nothing_without_a_session_thread_a_qa_dir_a_pin_to_this_adapter_or_a_pending_codex_request() {
    // a thread id that is no session id
    let w = World::new();
    requested(&w, T0 + 10);
    assert_eq!(gate(&w).decide("not a/session", T0 + 20).unwrap(), Decision::Nothing);
    // a data dir with no QA state at all
    let empty = tempfile::tempdir().unwrap();
    let g = Gatekeeper { data_dir: AbsPath::from_path(empty.path()).unwrap(), adapter_id: ADAPTER.into() };
    assert_eq!(g.decide(THREAD, T0 + 20).unwrap(), Decision::Nothing);
    assert!(!empty.path().join("qa").exists(), "the look creates nothing");

    let s = sid(THREAD);
    // no pin
    let w = World::new();
    w.write_pass(&s, T0, NONCE);
    assert_eq!(gate(&w).decide(THREAD, T0 + 20).unwrap(), Decision::Nothing);
    // pinned to another adapter, or to a tmux pane
    let w = World::new();
    requested(&w, T0 + 10);
    w.pin(&s, &"f".repeat(32), SOCK);
    assert_eq!(gate(&w).decide(THREAD, T0 + 20).unwrap(), Decision::Nothing);
    let tmux =
        Via::Tmux { socket: AbsPath::parse("/tmp/tmux-0/default").unwrap(), pane: "%3".into(), host_pid: 4242, host_start: 99, tmux: None };
    trigger::write_pin(&w.qa, &Pin { session_id: s.clone(), via: tmux, pinned_at_ms: 5 }).unwrap();
    assert_eq!(gate(&w).decide(THREAD, T0 + 20).unwrap(), Decision::Nothing);
    assert_eq!(w.request(&s).unwrap().state, RequestState::Pending, "left for its own adapter");
    // pinned here, no request
    let w = World::new();
    w.write_pass(&s, T0, NONCE);
    w.pin(&s, ADAPTER, SOCK);
    assert_eq!(gate(&w).decide(THREAD, T0 + 20).unwrap(), Decision::Nothing);
    // a request made for the tmux adapter, now pinned here
    let mut r = requested(&w, T0 + 10);
    r.via = ViaKind::Tmux;
    trigger::write_request(&w.qa, &r).unwrap();
    assert_eq!(gate(&w).decide(THREAD, T0 + 20).unwrap(), Decision::Nothing);
    assert_eq!(w.request(&s).unwrap(), r, "untouched");
    // a codex request already sent, or final
    for state in [RequestState::Sent, RequestState::TimedOut, RequestState::Failed { code: "host_refused".into() }] {
        r.via = ViaKind::CodexAppServer;
        r.state = state;
        trigger::write_request(&w.qa, &r).unwrap();
        assert_eq!(gate(&w).decide(THREAD, T0 + 20).unwrap(), Decision::Nothing, "{:?}", r.state);
        assert_eq!(w.request(&s).unwrap(), r, "untouched");
    }
}

#[test]
fn the_kill_switch_holds_a_pending_request() {
    let w = World::new();
    let r = requested(&w, T0 + 10);
    w.kill_switch(true);
    assert_eq!(gate(&w).decide(THREAD, T0 + 20).unwrap(), Decision::Nothing);
    assert_eq!(w.request(&sid(THREAD)).unwrap(), r, "still pending, nothing recorded");
    w.kill_switch(false);
    assert!(matches!(gate(&w).decide(THREAD, T0 + 30).unwrap(), Decision::Send(_)));
}

#[test]
fn a_request_whose_pass_is_gone_or_replaced_or_stale_fails_without_sending() {
    let s = sid(THREAD);
    // withdrawn
    let w = World::new();
    requested(&w, T0 + 10);
    std::fs::remove_file(w.qa.pass(&s)).unwrap();
    assert_eq!(gate(&w).decide(THREAD, T0 + 20).unwrap(), Decision::Failed("pass_missing".into()));
    let r = w.request(&s).unwrap();
    assert_eq!(r.state, RequestState::Failed { code: "pass_missing".into() });
    assert_eq!(r.updated_at_ms, T0 + 20);
    assert_eq!(gate(&w).decide(THREAD, T0 + 30).unwrap(), Decision::Nothing, "failed once");
    // a newer pass replaced it
    let w = World::new();
    requested(&w, T0 + 10);
    w.write_pass(&s, T0 + 15, NONCE2);
    assert_eq!(gate(&w).decide(THREAD, T0 + 20).unwrap(), Decision::Failed("request_superseded".into()));
    // too old by now
    let w = World::new();
    requested(&w, T0 + 10);
    let late = T0 + kijito_gate::PASS_MAX_AGE_MS + 1;
    assert_eq!(gate(&w).decide(THREAD, late).unwrap(), Decision::Failed("pass_stale".into()));
    assert_eq!(w.request(&s).unwrap().state, RequestState::Failed { code: "pass_stale".into() });
}

#[test]
fn a_sent_request_is_claimed_by_the_compaction_of_its_pass() {
    let w = World::new();
    let s = sid(THREAD);
    requested(&w, T0 + 10);
    let Decision::Send(mut r) = gate(&w).decide(THREAD, T0 + 20).unwrap() else { panic!() };
    assert_eq!(gate(&w).claimed(&r).unwrap(), None, "not compacted yet");
    // the host's hooks: PreCompact promotes the pass, PostCompact claims it
    let a = kijito_gate::precompact(&w.qa, &s, Some(&w.transcript), "manual", T0 + 30).unwrap();
    assert!(a.attested, "{a:?}");
    assert_eq!(gate(&w).claimed(&r).unwrap(), None, "promoted, not claimed yet");
    assert!(matches!(kijito_gate::claim(&w.qa, &s, T0 + 40).unwrap(), ClaimOutcome::Claimed(_)));
    let st = gate(&w).claimed(&r).unwrap().unwrap();
    assert_eq!(st, RequestState::Compacted { attested: true, reason: "pass_promoted".into() });
    gate(&w).finish(&mut r, st.clone(), T0 + 50).unwrap();
    let on_disk = w.request(&s).unwrap();
    assert_eq!(on_disk.state, st);
    assert_eq!(on_disk.updated_at_ms, T0 + 50);
    assert!(!on_disk.ticket_invalidated);
    // a data dir without QA state has no claim
    let empty = tempfile::tempdir().unwrap();
    let g = Gatekeeper { data_dir: AbsPath::from_path(empty.path()).unwrap(), adapter_id: ADAPTER.into() };
    assert_eq!(g.claimed(&r).unwrap(), None);
}

#[test]
fn a_compacted_end_never_goes_before_the_request() {
    let w = World::new();
    let s = sid(THREAD);
    let mut r = requested(&w, T0 + 1000);
    gate(&w).finish(&mut r, RequestState::Compacted { attested: false, reason: "pass_missing".into() }, T0 + 5).unwrap();
    assert_eq!(w.request(&s).unwrap().updated_at_ms, T0 + 1000);
}

#[test]
fn a_sent_request_that_times_out_invalidates_the_promoted_unclaimed_ticket() {
    let w = World::new();
    let s = sid(THREAD);
    requested(&w, T0 + 10);
    let Decision::Send(mut r) = gate(&w).decide(THREAD, T0 + 20).unwrap() else { panic!() };
    kijito_gate::precompact(&w.qa, &s, Some(&w.transcript), "manual", T0 + 30).unwrap();
    assert!(w.qa.ticket(&s).exists());
    gate(&w).finish(&mut r, RequestState::TimedOut, T0 + 90).unwrap();
    let on_disk = w.request(&s).unwrap();
    assert_eq!(on_disk.state, RequestState::TimedOut);
    assert_eq!(on_disk.updated_at_ms, T0 + 90);
    assert!(on_disk.ticket_invalidated, "a later compaction cannot consume that ticket");
    assert!(!w.qa.ticket(&s).exists());
    // a refusal is recorded with its code
    let w = World::new();
    requested(&w, T0 + 10);
    let Decision::Send(mut r) = gate(&w).decide(THREAD, T0 + 20).unwrap() else { panic!() };
    gate(&w).finish(&mut r, RequestState::Failed { code: "host_refused".into() }, T0 + 40).unwrap();
    assert_eq!(w.request(&s).unwrap().state, RequestState::Failed { code: "host_refused".into() });
}
