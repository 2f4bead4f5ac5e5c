//! Compaction triggers (pin, turn, request) through the library, one rule at
//! a time, over real files in a private temporary data dir.

#![allow(clippy::unwrap_used)]

use kijito_compact::trigger::{self, codes, Pin, Request, RequestState, Turn, TurnState, Via};
use kijito_files::private;
use kijito_gate::{Attempt, QaDir};
use kijito_protocol::ids::{AbsPath, Digest, MemoryId, MessageId, SessionId};
use serde_json::json;
use std::os::unix::fs::PermissionsExt;

use kijito_testkit::world::{World, NONCE, T0};

const NONCE2: &str = "fedcba9876543210fedcba9876543210";

fn sid(s: &str) -> SessionId {
    SessionId::parse(s).unwrap()
}

fn tmux_pin(s: &str) -> Pin {
    Pin {
        session_id: sid(s),
        via: Via::Tmux {
            socket: AbsPath::parse("/tmp/tmux-0/default").unwrap(),
            pane: "%3".into(),
            host_pid: 4242,
            host_start: 99,
            tmux: None,
        },
        pinned_at_ms: 5,
    }
}

fn codex_pin(s: &str) -> Pin {
    Pin {
        session_id: sid(s),
        via: Via::CodexAppServer { adapter_id: NONCE.into(), socket: AbsPath::parse("/run/k/ctl.sock").unwrap() },
        pinned_at_ms: 5,
    }
}

fn request(state: RequestState) -> Request {
    Request {
        session_id: sid("sess-1"),
        via: trigger::ViaKind::Tmux,
        nonce: NONCE.into(),
        requested_at_ms: 10,
        updated_at_ms: 20,
        state,
        ticket_invalidated: false,
        note: None,
    }
}

#[test]
fn the_kill_switch_is_any_file_at_its_path() {
    let e = World::new();
    assert_eq!(trigger::kill_switch(&e.data), e.data.as_path().join("compact-disabled"));
    assert!(!trigger::kill_switch_on(&e.data));
    std::os::unix::fs::symlink("/nonexistent", trigger::kill_switch(&e.data)).unwrap();
    assert!(trigger::kill_switch_on(&e.data), "a dangling symlink counts");
}

#[test]
fn file_names() {
    let e = World::new();
    let q = e.qa.path().as_path();
    assert_eq!(e.qa.pin(&e.s), q.join("compact-pin.sess-1.json"));
    assert_eq!(e.qa.turn(&e.s), q.join("compact-turn.sess-1.json"));
    assert_eq!(e.qa.request(&e.s), q.join("compact-request.sess-1.json"));
}

#[test]
fn pins_are_per_session_and_strict() {
    let e = World::new();
    assert_eq!(trigger::read_pin(&e.qa, &e.s).unwrap(), None);
    for pin in [tmux_pin("sess-1"), codex_pin("sess-1")] {
        trigger::write_pin(&e.qa, &pin).unwrap();
        assert_eq!(trigger::read_pin(&e.qa, &e.s).unwrap(), Some(pin.clone()));
        assert!(std::fs::read_to_string(e.qa.pin(&e.s)).unwrap().ends_with("}\n"));
    }
    assert_eq!(tmux_pin("a").via.name(), "tmux");
    assert_eq!(codex_pin("a").via.name(), "codex-app-server");
    // Another session's pin copied over this one's name.
    std::fs::write(e.qa.pin(&e.s), tmux_pin("other").to_value().to_string()).unwrap();
    assert_eq!(trigger::read_pin(&e.qa, &e.s).unwrap_err().code(), codes::PIN_INVALID.as_str());
    assert!(trigger::remove_pin(&e.qa, &e.s).unwrap());
    assert!(!trigger::remove_pin(&e.qa, &e.s).unwrap());
    assert_eq!(trigger::read_pin(&e.qa, &e.s).unwrap(), None);
    // A symlinked pin is not followed.
    std::os::unix::fs::symlink("/etc/hostname", e.qa.pin(&e.s)).unwrap();
    assert!(trigger::read_pin(&e.qa, &e.s).is_err());
}

#[test]
fn pin_parse_bounds() {
    let parse = |v: serde_json::Value| Pin::parse(v.to_string().as_bytes()).map_err(|e| e.code().to_owned());
    let t = tmux_pin("sess-1").to_value();
    let with = |path: &[&str], v: serde_json::Value| {
        let mut j = t.clone();
        let mut at = &mut j;
        for k in &path[..path.len() - 1] {
            at = &mut at[*k];
        }
        at[path[path.len() - 1]] = v;
        j
    };
    assert!(parse(with(&["target", "hostPid"], json!(2))).is_ok());
    assert!(parse(with(&["target", "hostPid"], json!(u32::MAX))).is_ok());
    assert!(parse(with(&["target", "hostPid"], json!(u32::MAX as u64 + 1))).is_err());
    assert!(parse(with(&["target", "hostPid"], json!(1))).is_err());
    assert!(parse(with(&["target", "hostStart"], json!(-1))).is_err());
    assert!(parse(with(&["target", "socket"], json!(5))).is_err());
    assert!(parse(with(&["pinnedAtMs"], json!(0))).is_ok());
    assert!(parse(with(&["pinnedAtMs"], json!(-1))).is_err());
    assert!(parse(with(&["sessionId"], json!("bad id"))).is_err());
    assert!(parse(with(&["sessionId"], json!(1))).is_err());
    assert!(parse(with(&["target"], json!([]))).is_err());
    // A tmux pin with the codex target shape, and the reverse.
    assert!(parse(with(&["via"], json!("codex-app-server"))).is_err());
    let c = codex_pin("sess-1").to_value();
    let mut j = c.clone();
    j["via"] = json!("tmux");
    assert!(parse(j).is_err());
    for bad in [json!("ABCDEF0123456789abcdef0123456789"), json!("0123"), json!(7)] {
        let mut j = c.clone();
        j["target"]["adapterId"] = bad;
        assert_eq!(parse(j), Err(codes::PIN_INVALID.into()));
    }
    let mut j = c.clone();
    j["target"]["socket"] = json!("rel/sock");
    assert!(parse(j).is_err());
    assert!(Pin::parse(b"[]").is_err());
    assert!(Pin::parse(b"nope").is_err());
    // Pane ids: % and 1 to 9 digits.
    for (p, ok) in [("%1", true), ("%123456789", true), ("%", false), ("%1234567890", false), ("%a", false), ("12", false), ("%-1", false)]
    {
        assert_eq!(trigger::is_pane_id(p), ok, "{p}");
    }
    assert!(trigger::is_adapter_id(NONCE));
    assert!(!trigger::is_adapter_id(&NONCE[1..]));
}

#[test]
fn turns() {
    let e = World::new();
    assert_eq!(trigger::read_turn(&e.qa, &e.s).unwrap(), None);
    trigger::record_turn(&e.qa, &e.s, TurnState::Running, 7).unwrap();
    assert_eq!(
        trigger::read_turn(&e.qa, &e.s).unwrap(),
        Some(Turn { session_id: e.s.clone(), state: TurnState::Running, at_ms: 7, started_at_ms: Some(7) })
    );
    trigger::record_turn(&e.qa, &e.s, TurnState::Ended, 8).unwrap();
    assert_eq!(trigger::read_turn(&e.qa, &e.s).unwrap().unwrap().state, TurnState::Ended);
    std::fs::write(
        e.qa.turn(&e.s),
        Turn { session_id: sid("other"), state: TurnState::Ended, at_ms: 1, started_at_ms: None }.to_value().to_string(),
    )
    .unwrap();
    assert_eq!(trigger::read_turn(&e.qa, &e.s).unwrap_err().code(), codes::TURN_INVALID.as_str());
    for bad in [
        r#"{"schemaVersion":2,"sessionId":"sess-1","state":"ended","atMs":7}"#,
        r#"{"schemaVersion":1,"sessionId":"sess-1","state":"ended","atMs":-1}"#,
        r#"{"schemaVersion":1,"sessionId":"","state":"ended","atMs":1}"#,
        r#"{"schemaVersion":1,"sessionId":"sess-1","atMs":1,"state":"ended"}"#,
        "nope",
    ] {
        assert_eq!(Turn::parse(bad.as_bytes()).unwrap_err().code(), codes::TURN_INVALID.as_str(), "{bad}");
    }
    assert_eq!(Turn::parse(br#"{"schemaVersion":1,"sessionId":"sess-1","state":"running","atMs":0}"#).unwrap().state, TurnState::Running);
}

#[test]
fn request_states_and_parse_bounds() {
    assert_eq!(
        [
            RequestState::Pending,
            RequestState::Sent,
            RequestState::Compacted { attested: true, reason: "r".into() },
            RequestState::Failed { code: "c".into() },
            RequestState::TimedOut
        ]
        .map(|s| (s.name(), s.is_final())),
        [("pending", false), ("sent", false), ("compacted", true), ("failed", true), ("timed_out", true)]
    );
    let parse = |v: &serde_json::Value| Request::parse(v.to_string().as_bytes()).map_err(|e| e.code().to_owned());
    let base = request(RequestState::Compacted { attested: false, reason: "x".repeat(64) }).to_value();
    assert!(parse(&base).is_ok());
    let with = |k: &str, v: serde_json::Value| {
        let mut j = base.clone();
        j[k] = v;
        j
    };
    for (k, v) in [
        ("reason", json!("x".repeat(65))),
        ("reason", json!("")),
        ("reason", json!("a b")),
        ("reason", json!(null)),
        ("attested", json!("no")),
        ("via", json!("screen")),
        ("nonce", json!(&NONCE[1..])),
        ("requestedAtMs", json!(-1)),
        ("updatedAtMs", json!(9)),
        ("state", json!("done")),
        ("ticketInvalidated", json!(null)),
        ("schemaVersion", json!(2)),
        ("sessionId", json!("")),
    ] {
        assert_eq!(parse(&with(k, v.clone())), Err(codes::REQUEST_INVALID.into()), "{k}={v}");
    }
    assert!(parse(&with("updatedAtMs", json!(10))).is_ok(), "updated at the request time");
    assert!(parse(&with("via", json!("codex-app-server"))).is_ok());
    assert!(parse(&with("reason", json!("a_B-9"))).is_ok());
    let failed = request(RequestState::Failed { code: "pane_gone".into() }).to_value();
    assert!(parse(&failed).is_ok());
    let mut j = failed.clone();
    j["code"] = json!(null);
    assert!(parse(&j).is_err());
    let r = request(RequestState::Sent);
    assert_eq!(
        trigger::requested_line(&r),
        format!(r#"{{"type":"kijito.compaction.requested","sessionId":"sess-1","via":"tmux","nonce":"{NONCE}"}}"#)
    );
}

#[test]
fn a_request_needs_a_valid_pass_and_a_pin_once_per_pass() {
    let e = World::new();
    assert_eq!(trigger::create_request(&e.qa, &e.s, T0).unwrap_err().code(), kijito_gate::pass::codes::PASS_MISSING.as_str());
    e.write_pass(&e.s, T0, NONCE);
    assert_eq!(trigger::create_request(&e.qa, &e.s, T0).unwrap_err().code(), codes::NO_SAFE_TRIGGER.as_str());
    trigger::write_pin(&e.qa, &codex_pin("sess-1")).unwrap();
    assert_eq!(trigger::create_request(&e.qa, &e.s, T0 + kijito_gate::PASS_MAX_AGE_MS + 1).unwrap_err().code(), "pass_stale");
    let (r, pin) = trigger::create_request(&e.qa, &e.s, T0 + 5).unwrap();
    assert_eq!(pin, codex_pin("sess-1"));
    assert_eq!(
        (r.via.as_str(), r.nonce.as_str(), r.requested_at_ms, r.updated_at_ms, r.state.clone()),
        ("codex-app-server", NONCE, T0 + 5, T0 + 5, RequestState::Pending)
    );
    assert!(!r.ticket_invalidated);
    assert_eq!(trigger::read_request(&e.qa, &e.s).unwrap(), Some(r));
    assert_eq!(trigger::create_request(&e.qa, &e.s, T0 + 6).unwrap_err().code(), codes::REQUEST_EXISTS.as_str());
    // A new pass may be requested again.
    e.write_pass(&e.s, T0 + 10, NONCE2);
    let (r2, _) = trigger::create_request(&e.qa, &e.s, T0 + 11).unwrap();
    assert_eq!(r2.nonce, NONCE2);
    // Another session's request under this name is invalid.
    let mut other = r2.clone();
    other.session_id = sid("other");
    std::fs::write(e.qa.request(&e.s), other.to_value().to_string()).unwrap();
    assert_eq!(trigger::read_request(&e.qa, &e.s).unwrap_err().code(), codes::REQUEST_INVALID.as_str());
}

#[test]
fn the_pass_of_a_request_must_still_wait() {
    let e = World::new();
    let mut r = request(RequestState::Sent);
    r.session_id = e.s.clone();
    assert_eq!(trigger::pass_still_valid(&e.qa, &r, T0).unwrap_err().code(), kijito_gate::pass::codes::PASS_MISSING.as_str());
    e.write_pass(&e.s, T0, NONCE2);
    assert_eq!(trigger::pass_still_valid(&e.qa, &r, T0).unwrap_err().code(), codes::REQUEST_SUPERSEDED.as_str());
    e.write_pass(&e.s, T0, NONCE);
    assert!(trigger::pass_still_valid(&e.qa, &r, T0 + 1).is_ok());
    assert_eq!(trigger::pass_still_valid(&e.qa, &r, T0 - 1).unwrap_err().code(), "pass_from_future");
}

fn claimed_attempt(e: &World, session: &str, at: i64, nonce: Option<&str>) {
    let a = Attempt {
        session_id: sid(session),
        recorded_at_ms: at,
        trigger: "auto".into(),
        attested: nonce.is_some(),
        reason: "r".into(),
        compaction_nonce: nonce.map(str::to_owned),
    };
    private::write_atomic(&e.qa.attempt_claimed(&e.s), a.to_value().to_string().as_bytes()).unwrap();
}

#[test]
fn which_claim_belongs_to_a_request() {
    let e = World::new();
    let r = request(RequestState::Sent); // requested at 10
    assert_eq!(trigger::claim_for(&e.qa, &r).unwrap(), None);
    claimed_attempt(&e, "sess-1", 5, Some(NONCE));
    assert!(trigger::claim_for(&e.qa, &r).unwrap().is_some(), "same nonce, whenever");
    claimed_attempt(&e, "sess-1", 50, Some(NONCE2));
    assert_eq!(trigger::claim_for(&e.qa, &r).unwrap(), None, "another pass's attested claim");
    claimed_attempt(&e, "sess-1", 10, None);
    assert!(trigger::claim_for(&e.qa, &r).unwrap().is_some(), "unattested at the request time");
    claimed_attempt(&e, "sess-1", 9, None);
    assert_eq!(trigger::claim_for(&e.qa, &r).unwrap(), None, "unattested before the request");
    claimed_attempt(&e, "other", 50, Some(NONCE));
    assert_eq!(trigger::claim_for(&e.qa, &r).unwrap(), None, "another session's");
}

#[test]
fn a_failed_request_invalidates_an_unclaimed_ticket_only() {
    // A waiting, unclaimed ticket: the session's QA state is invalidated.
    let e = World::new();
    let mut r = request(RequestState::Sent);
    private::write_atomic(&e.qa.ticket(&e.s), b"{}").unwrap();
    private::write_atomic(&e.qa.pass(&e.s), b"{}").unwrap();
    trigger::finish_failed(&e.qa, &mut r, RequestState::Failed { code: "pane_gone".into() }, 5).unwrap();
    assert!(r.ticket_invalidated);
    assert!(std::fs::symlink_metadata(e.qa.ticket(&e.s)).is_err() && std::fs::symlink_metadata(e.qa.pass(&e.s)).is_err());
    assert_eq!(r.state, RequestState::Failed { code: "pane_gone".into() });
    assert_eq!(r.updated_at_ms, 10, "never before the request");
    assert_eq!(trigger::read_request(&e.qa, &e.s).unwrap(), Some(r));
    // Claimed: the ticket stays.
    let e = World::new();
    let mut r = request(RequestState::Sent);
    private::write_atomic(&e.qa.ticket(&e.s), b"{}").unwrap();
    claimed_attempt(&e, "sess-1", 11, Some(NONCE));
    trigger::finish_failed(&e.qa, &mut r, RequestState::TimedOut, 30).unwrap();
    assert!(!r.ticket_invalidated);
    assert!(std::fs::symlink_metadata(e.qa.ticket(&e.s)).is_ok());
    assert_eq!((r.state.clone(), r.updated_at_ms), (RequestState::TimedOut, 30));
    // No ticket: nothing to invalidate, the pass stays.
    let e = World::new();
    let mut r = request(RequestState::Sent);
    private::write_atomic(&e.qa.pass(&e.s), b"{}").unwrap();
    trigger::finish_failed(&e.qa, &mut r, RequestState::TimedOut, 30).unwrap();
    assert!(!r.ticket_invalidated);
    assert!(std::fs::symlink_metadata(e.qa.pass(&e.s)).is_ok());
}

#[test]
fn status_shows_a_claimed_request_as_compacted() {
    let e = World::new();
    let empty = tempfile::tempdir().unwrap();
    std::fs::set_permissions(empty.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
    let none = AbsPath::from_path(empty.path()).unwrap();
    assert_eq!(trigger::status(&none, &e.s).unwrap_err().code(), codes::NO_REQUEST.as_str());
    assert!(std::fs::symlink_metadata(empty.path().join("qa")).is_err(), "status creates nothing");
    assert_eq!(trigger::status(&e.data, &e.s).unwrap_err().code(), codes::NO_REQUEST.as_str());
    for state in [RequestState::Pending, RequestState::Sent] {
        trigger::write_request(&e.qa, &request(state.clone())).unwrap();
        let v = trigger::status(&e.data, &e.s).unwrap();
        assert_eq!((v["type"].as_str(), v["state"].as_str()), (Some("kijito.compaction.status"), Some(state.name())));
    }
    // Not compacted yet: no summary check.
    let v = trigger::status(&e.data, &e.s).unwrap();
    assert_eq!((v["summaryCarried"].clone(), v["summaryCheck"].clone()), (json!(null), json!(null)));
    claimed_attempt(&e, "sess-1", 11, Some(NONCE));
    let v = trigger::status(&e.data, &e.s).unwrap();
    assert_eq!((v["state"].as_str(), v["attested"].as_bool(), v["reason"].as_str()), (Some("compacted"), Some(true), Some("r")));
    // Attested, but no claim record names this compaction (yet): unknown.
    assert_eq!((v["summaryCarried"].clone(), v["summaryCheck"].clone()), (json!(null), json!(null)));
    // The claim record of this compaction gives the verdict.
    let claim = kijito_gate::Reentry {
        session_id: e.s.clone(),
        claimed_at_ms: 12,
        reason: "pass_valid".into(),
        attested: Some(kijito_gate::Attested {
            pointer_id: MemoryId::new(21813).unwrap(),
            lock_message_id: MessageId::new(1234).unwrap(),
            pointer_digest: Digest::of(b"p"),
            snapshot_digest: Digest::of(b"s"),
            compaction_nonce: NONCE.into(),
            summary: kijito_gate::SummaryCheck::Carried,
            boots_witnessed: None,
        }),
    };
    private::write_atomic(&e.qa.reentry_delivered(&e.s), claim.to_value().to_string().as_bytes()).unwrap();
    let v = trigger::status(&e.data, &e.s).unwrap();
    assert_eq!((v["summaryCarried"].clone(), v["summaryCheck"].clone()), (json!(true), json!(kijito_gate::summary::codes::CARRIED)));
    // An unattested compaction: the check says so.
    trigger::write_request(&e.qa, &request(RequestState::Compacted { attested: false, reason: "pass_stale".into() })).unwrap();
    let v = trigger::status(&e.data, &e.s).unwrap();
    assert_eq!((v["summaryCarried"].clone(), v["summaryCheck"].clone()), (json!(null), json!(kijito_gate::summary::codes::UNATTESTED)));
    // A final state is shown as it is.
    trigger::write_request(&e.qa, &request(RequestState::TimedOut)).unwrap();
    assert_eq!(trigger::status(&e.data, &e.s).unwrap()["state"], "timed_out");
}

#[test]
fn an_unreadable_state_path_is_an_error_not_absent() {
    // `qa` is a file: every state name under it fails with ENOTDIR, which is
    // not "no such file" and must not read as "nothing recorded".
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("qa"), b"not a directory").unwrap();
    let qa = QaDir::read_only(&AbsPath::from_path(d.path()).unwrap()).unwrap();
    let s = SessionId::parse("s1").unwrap();
    assert!(trigger::read_pin(&qa, &s).is_err());
    assert!(trigger::read_turn(&qa, &s).is_err());
    assert!(trigger::read_request(&qa, &s).is_err());
    // Absent under a real directory is absent.
    let d = tempfile::tempdir().unwrap();
    let qa = QaDir::read_only(&AbsPath::from_path(d.path()).unwrap()).unwrap();
    std::fs::create_dir(d.path().join("qa")).unwrap();
    assert_eq!(trigger::read_pin(&qa, &s).unwrap(), None);
}
