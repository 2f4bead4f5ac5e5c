//! The turn record's `startedAtMs` and the request's waiting/left-behind
//! `reason` (docs/protocol.md §9.1), which the tmux worker's keystroke rule
//! reads: through the library over real files.

#![allow(clippy::unwrap_used)]

use kijito_compact::trigger::{self, codes, Request, RequestState, Turn, TurnState};
use kijito_protocol::ids::SessionId;

use kijito_testkit::world::{World, NONCE};

fn turn_file(e: &World) -> String {
    std::fs::read_to_string(e.qa.turn(&e.s)).unwrap()
}

#[test]
fn a_stop_carries_the_start_of_its_turn() {
    let e = World::new();
    // a Stop with no record before it: start unknown
    trigger::record_turn(&e.qa, &e.s, TurnState::Ended, 5).unwrap();
    assert_eq!(trigger::read_turn(&e.qa, &e.s).unwrap().unwrap().started_at_ms, None);
    assert_eq!(turn_file(&e), "{\"schemaVersion\":1,\"sessionId\":\"sess-1\",\"state\":\"ended\",\"atMs\":5,\"startedAtMs\":null}\n");
    trigger::record_turn(&e.qa, &e.s, TurnState::Running, 10).unwrap();
    assert_eq!(turn_file(&e), "{\"schemaVersion\":1,\"sessionId\":\"sess-1\",\"state\":\"running\",\"atMs\":10,\"startedAtMs\":10}\n");
    trigger::record_turn(&e.qa, &e.s, TurnState::Ended, 20).unwrap();
    let t = trigger::read_turn(&e.qa, &e.s).unwrap().unwrap();
    assert_eq!((t.state, t.at_ms, t.started_at_ms), (TurnState::Ended, 20, Some(10)));
    // a second Stop of the same turn keeps its start
    trigger::record_turn(&e.qa, &e.s, TurnState::Ended, 30).unwrap();
    assert_eq!(trigger::read_turn(&e.qa, &e.s).unwrap().unwrap().started_at_ms, Some(10));
    // a Stop recorded at the very start keeps it (start == end)
    trigger::record_turn(&e.qa, &e.s, TurnState::Running, 40).unwrap();
    trigger::record_turn(&e.qa, &e.s, TurnState::Ended, 40).unwrap();
    assert_eq!(trigger::read_turn(&e.qa, &e.s).unwrap().unwrap().started_at_ms, Some(40));
    // a clock that went back: a start after the Stop is not carried
    trigger::record_turn(&e.qa, &e.s, TurnState::Running, 50).unwrap();
    trigger::record_turn(&e.qa, &e.s, TurnState::Ended, 49).unwrap();
    assert_eq!(trigger::read_turn(&e.qa, &e.s).unwrap().unwrap().started_at_ms, None);
    // an unreadable previous record: start unknown, the Stop still recorded
    std::fs::write(e.qa.turn(&e.s), b"junk").unwrap();
    trigger::record_turn(&e.qa, &e.s, TurnState::Ended, 60).unwrap();
    let t = trigger::read_turn(&e.qa, &e.s).unwrap().unwrap();
    assert_eq!((t.at_ms, t.started_at_ms), (60, None));
}

#[test]
fn turn_records_old_and_new() {
    let s = SessionId::parse("sess-1").unwrap();
    // written before startedAtMs existed: still read
    let old = Turn::parse(br#"{"schemaVersion":1,"sessionId":"sess-1","state":"ended","atMs":7}"#).unwrap();
    assert_eq!(old, Turn { session_id: s.clone(), state: TurnState::Ended, at_ms: 7, started_at_ms: None });
    let t = Turn { session_id: s, state: TurnState::Ended, at_ms: 7, started_at_ms: Some(7) };
    assert_eq!(Turn::parse(t.to_value().to_string().as_bytes()).unwrap(), t);
    for bad in [
        r#"{"schemaVersion":1,"sessionId":"sess-1","state":"ended","atMs":7,"startedAtMs":8}"#,
        r#"{"schemaVersion":1,"sessionId":"sess-1","state":"ended","atMs":7,"startedAtMs":-1}"#,
        r#"{"schemaVersion":1,"sessionId":"sess-1","state":"ended","atMs":7,"startedAtMs":"1"}"#,
        r#"{"schemaVersion":1,"sessionId":"sess-1","state":"ended","startedAtMs":1,"atMs":7}"#,
        r#"{"schemaVersion":1,"sessionId":"sess-1","state":"ended","atMs":7,"startedAtMs":1,"x":1}"#,
    ] {
        assert_eq!(Turn::parse(bad.as_bytes()).unwrap_err().code(), codes::TURN_INVALID.as_str(), "{bad}");
    }
    assert!(Turn::parse(br#"{"schemaVersion":1,"sessionId":"sess-1","state":"ended","atMs":7,"startedAtMs":0}"#).is_ok());
}

fn request(state: RequestState, note: Option<&str>) -> Request {
    Request {
        session_id: SessionId::parse("sess-1").unwrap(),
        via: trigger::ViaKind::Tmux,
        nonce: NONCE.into(),
        requested_at_ms: 10,
        updated_at_ms: 20,
        state,
        ticket_invalidated: false,
        note: note.map(Into::into),
    }
}

#[test]
fn a_pending_or_failed_request_says_why() {
    let pending = request(RequestState::Pending, Some("user_typed"));
    let text = pending.to_value().to_string();
    assert!(text.contains(r#""state":"pending","attested":null,"reason":"user_typed","code":null"#), "{text}");
    assert_eq!(Request::parse(text.as_bytes()).unwrap(), pending);
    let failed = request(RequestState::Failed { code: "kill_switch".into() }, Some("compact_left_in_composer"));
    let text = failed.to_value().to_string();
    assert!(text.contains(r#""state":"failed","attested":null,"reason":"compact_left_in_composer","code":"kill_switch""#), "{text}");
    assert_eq!(Request::parse(text.as_bytes()).unwrap(), failed);
    // other states never carry it
    for state in [RequestState::Sent, RequestState::TimedOut] {
        let r = request(state, Some("user_typed"));
        let text = r.to_value().to_string();
        assert!(text.contains(r#""reason":null"#), "{text}");
        assert_eq!(Request::parse(text.as_bytes()).unwrap().note, None);
    }
    let c = request(RequestState::Compacted { attested: true, reason: "pass_promoted".into() }, None);
    assert_eq!(Request::parse(c.to_value().to_string().as_bytes()).unwrap(), c);
    // a reason that is not a short token is refused
    let text = pending.to_value().to_string();
    for junk in ["user typed", "", "x\"y"] {
        let bad = text.replace("user_typed", &junk.replace('"', "\\\""));
        assert_eq!(Request::parse(bad.as_bytes()).unwrap_err().code(), codes::REQUEST_INVALID.as_str(), "{bad}");
    }
    assert_eq!(Request::parse(text.replace("\"user_typed\"", "7").as_bytes()).unwrap_err().code(), codes::REQUEST_INVALID.as_str());
}
