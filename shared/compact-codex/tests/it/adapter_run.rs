//! `kijito_compact_codex::run` with the TUI attached: the adapter runs in a
//! thread of this test, its `codex` is the stand-in app-server and TUI
//! (kijito_testkit::codex, real processes), this test is the
//! TUI's WebSocket client on the adapter's private unix socket, and it also
//! does what the host's hooks and `kijito-compact request` do (kijito-gate on
//! real files). The root package's tests/it/compact_codex.rs runs the same
//! through the real `kijito-compact` binary and hooks.

#![allow(clippy::unwrap_used)]

use crate::common;

use common::*;
use kijito_compact::trigger::{self, RequestState};
use kijito_compact_codex::{run, Bounds, Options};
use kijito_gate::ClaimOutcome;
use kijito_protocol::error::Result;
use kijito_protocol::ids::{AbsPath, SessionId};
use kijito_testkit::ws::{send, Ws};
use serde_json::{json, Value};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::thread::JoinHandleExt;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

struct Adapter {
    w: World,
    /// The stand-in's dir (its logs and the files the test writes for it).
    sd: PathBuf,
    sock: PathBuf,
    log: PathBuf,
    done: mpsc::Receiver<Result<i32>>,
    thread: libc::pthread_t,
    _handle: std::thread::JoinHandle<()>,
}

fn bounds() -> Bounds {
    Bounds {
        poll: Duration::from_millis(20),
        hold: Duration::from_secs(600),
        compaction: Duration::from_secs(60),
        claim: Duration::from_secs(30),
        handshake: Duration::from_secs(10),
        shutdown: Duration::from_secs(10),
    }
}

impl Adapter {
    fn start(b: Bounds, env: &[(&str, &str)]) -> Adapter {
        // The socket goes under the data dir (a short temporary path), the
        // same for every test of this binary.
        std::env::remove_var("XDG_RUNTIME_DIR");
        let w = World::new();
        let sd = w.path("s");
        private_dir(&sd);
        let log = w.path("m.jsonl");
        let opts = Options {
            data_dir: Some(w.data.clone()),
            message_log: Some(AbsPath::from_path(&log).unwrap()),
            codex: Some(standin_codex(&sd, env)),
            stdio_client: false,
            codex_args: vec!["--tui-flag".into(), "x".into()],
            bounds: b,
        };
        let (tx, done) = mpsc::channel();
        let handle = std::thread::spawn(move || {
            let _ = tx.send(run(&opts));
        });
        let thread = handle.as_pthread_t();
        let tui: Value = wait_for("the TUI stand-in", 20, || {
            if let Ok(r) = done.try_recv() {
                panic!("the adapter ended before its TUI started: {:?}", r.map_err(|e| e.code().to_owned()));
            }
            std::fs::read(sd.join("tui.json")).ok().and_then(|b| serde_json::from_slice(&b).ok())
        });
        let argv: Vec<String> = serde_json::from_value(tui["argv"].clone()).unwrap();
        assert_eq!(argv[0], "--remote");
        assert_eq!(&argv[2..], ["--tui-flag", "x"], "the codex arguments go to the TUI unchanged");
        let sock = PathBuf::from(argv[1].strip_prefix("unix://").unwrap());
        assert!(sock.starts_with(w.data.as_path().join("compact-codex")), "{}", sock.display());
        assert_eq!(std::fs::metadata(sock.parent().unwrap()).unwrap().permissions().mode() & 0o777, 0o700);
        Adapter { w, sd, sock, log, done, thread, _handle: handle }
    }

    fn adapter_id(&self) -> String {
        let env: Value = serde_json::from_slice(&std::fs::read(self.sd.join("env.json")).unwrap()).unwrap();
        env["KIJITO_COMPACT_ADAPTER_ID"].as_str().unwrap().to_owned()
    }

    /// What SessionStart and `qa-gate record` leave for `thread`: the pin to
    /// this adapter and a fresh pass with `nonce`.
    fn pin_and_pass(&self, thread: &str, nonce: &str) -> SessionId {
        let s = sid(thread);
        self.w.pin(&s, &self.adapter_id(), self.sock.to_str().unwrap());
        self.w.write_pass(&s, kijito_gate::now_ms(), nonce);
        s
    }

    fn request(&self, s: &SessionId) {
        trigger::create_request(&self.w.qa, s, kijito_gate::now_ms()).unwrap();
    }

    fn state(&self, s: &SessionId) -> RequestState {
        self.w.request(s).unwrap().state
    }

    /// Wait (bounded) for `f`, failing at once when the adapter ended.
    fn wait<T>(&self, what: &str, mut f: impl FnMut() -> Option<T>) -> T {
        wait_for(what, 15, || {
            if let Ok(r) = self.done.try_recv() {
                panic!("the adapter ended while waiting for {what}: {:?}", r.map_err(|e| e.code().to_owned()));
            }
            f()
        })
    }

    fn final_state(&self, s: &SessionId) -> RequestState {
        self.wait("the request's final state", || Some(self.state(s)).filter(RequestState::is_final))
    }

    /// The TUI exits with `code`: so does the adapter, with it.
    fn exit(self, code: i32) -> World {
        kijito_testkit::codex::tui_exit(&self.sd, code);
        let r = self.done.recv_timeout(Duration::from_secs(20)).expect("the adapter ends when the TUI exits");
        assert_eq!(r.map_err(|e| e.code().to_owned()), Ok(code));
        assert!(!self.sock.exists() && !self.sock.parent().unwrap().exists(), "the socket and its dir are removed");
        self.w
    }
}

fn connect(sock: &Path) -> tungstenite::Result<Ws> {
    kijito_testkit::ws::connect(sock, Duration::from_secs(15))
}

/// [`kijito_testkit::ws::until`], at most 20000 messages.
fn until(ws: &mut Ws, seen: &mut Vec<Value>, what: &str, pred: impl Fn(&Value) -> bool) -> Value {
    kijito_testkit::ws::until(ws, seen, what, 20_000, pred)
}

/// A request and its answer through the adapter: every message the
/// app-server sent before that answer has been handled by the adapter.
fn round_trip(ws: &mut Ws, seen: &mut Vec<Value>, id: u64) {
    send(ws, json!({"id": id, "method": "model/list", "params": {}}));
    until(ws, seen, "the round trip's answer", |v| v["id"] == id);
}

fn is_method(v: &Value, m: &str) -> bool {
    v["method"] == m
}

fn start_thread(ws: &mut Ws, seen: &mut Vec<Value>, id: u64) -> String {
    send(ws, json!({"id": id, "method": "thread/start", "params": {}}));
    until(ws, seen, "thread/start's answer", |v| v["id"] == id)["result"]["thread"]["id"].as_str().unwrap().to_owned()
}

/// Wait for the adapter's compaction to start on the wire (its
/// contextCompaction item/started); the compaction turn's id.
fn compaction_started(ws: &mut Ws, seen: &mut Vec<Value>) -> Value {
    let item = until(ws, seen, "the contextCompaction item/started", |v| {
        is_method(v, "item/started") && v["params"]["item"]["type"] == "contextCompaction"
    });
    item["params"]["turnId"].clone()
}

fn finish_compaction(ws: &mut Ws, seen: &mut Vec<Value>, id: u64, thread: &str, status: &str, item: bool) {
    send(ws, json!({"id": id, "method": "test/finishCompaction", "params": {"threadId": thread, "status": status, "item": item}}));
    until(ws, seen, "test/finishCompaction's answer", |v| v["id"] == id);
}

#[test]
fn a_pinned_idle_thread_is_compacted_once_after_its_turn_and_the_users_turn_waits_for_it() {
    // The periodic look is 10 minutes away: only a turn's end makes the
    // adapter look at the request.
    let b = Bounds { poll: Duration::from_secs(600), ..bounds() };
    let a = Adapter::start(b, &[("STANDIN_PRELUDE", "4100")]);
    // The app-server spoke before the TUI connected (and all of it was read).
    a.wait("the prelude", || a.sd.join("prelude-done").exists().then_some(()));
    let mut ws = connect(&a.sock).expect("the TUI's connection");
    assert!(connect(&a.sock).is_err(), "a second client is refused while one is attached");
    let mut seen = vec![];
    send(&mut ws, json!({"id": 1, "method": "initialize", "params": {"clientInfo": {"name": "codex-tui"}}}));
    until(&mut ws, &mut seen, "initialize's answer", |v| v["id"] == 1);
    let prelude: Vec<u64> = seen.iter().filter(|v| is_method(v, "prelude")).filter_map(|v| v["params"]["n"].as_u64()).collect();
    assert_eq!(prelude, (1..=4096).collect::<Vec<u64>>(), "kept for the client in order, at most 4096 (4097.. dropped)");

    let thread = start_thread(&mut ws, &mut seen, 2);
    let env: Value = serde_json::from_slice(&std::fs::read(a.sd.join("env.json")).unwrap()).unwrap();
    assert_eq!(env["KIJITO_COMPACT_SOCKET"].as_str(), a.sock.to_str(), "the app-server (so every hook) gets the socket");
    assert_eq!(env["PLUGIN_DATA"].as_str(), Some(a.w.data.as_str()), "and the data dir");
    let s = a.pin_and_pass(&thread, NONCE);
    a.request(&s);
    // idle, but no turn ended since: nothing sent yet
    round_trip(&mut ws, &mut seen, 3);
    assert_eq!(a.state(&s), RequestState::Pending);
    // a user turn runs and ends: then the adapter compacts
    send(&mut ws, json!({"id": 4, "method": "turn/start", "params": {"threadId": thread, "input": []}}));
    until(&mut ws, &mut seen, "turn/started", |v| is_method(v, "turn/started"));
    assert_eq!(a.state(&s), RequestState::Pending, "nothing is sent while the turn runs");
    send(&mut ws, json!({"id": 5, "method": "test/endTurn", "params": {"threadId": thread}}));
    let comp_turn = compaction_started(&mut ws, &mut seen);
    assert_eq!(a.state(&s), RequestState::Sent);
    // the user types during the compaction: held, never refused by the host
    send(&mut ws, json!({"id": 6, "method": "turn/start", "params": {"threadId": thread, "input": []}}));
    // the host's hooks inside the compaction turn: PreCompact, PostCompact
    let now = kijito_gate::now_ms();
    assert!(kijito_gate::precompact(&a.w.qa, &s, Some(&a.w.transcript), "manual", now).unwrap().attested);
    assert!(matches!(kijito_gate::claim(&a.w.qa, &s, now).unwrap(), ClaimOutcome::Claimed(_)));
    finish_compaction(&mut ws, &mut seen, 7, &thread, "completed", true);
    assert!(
        seen.iter().any(|v| is_method(v, "turn/completed") && v["params"]["turn"]["id"] == comp_turn),
        "the compaction's turn/completed reached the TUI"
    );
    let answer = until(&mut ws, &mut seen, "the held turn/start's answer", |v| v["id"] == 6);
    assert!(answer.get("result").is_some(), "the held turn/start ran after the compaction: {answer}");
    assert_eq!(a.final_state(&s), RequestState::Compacted { attested: true, reason: "pass_promoted".into() });
    assert!(
        seen.iter().all(|v| !v["id"].as_str().is_some_and(|i| i.starts_with("kijito-compact-"))),
        "the adapter's answer never reaches the client"
    );

    let (sd, log) = (a.sd.clone(), a.log.clone());
    let _w = a.exit(3);
    assert!(sd.join("exited").exists(), "the app-server had the time to exit on its own after its stdin closed");

    // the message log: one thread/compact/start, from the adapter, answered to it
    assert_eq!(std::fs::metadata(&log).unwrap().permissions().mode() & 0o777, 0o600);
    let msgs = jsonl(&log);
    let compacts: Vec<&Value> = msgs.iter().filter(|m| m["msg"]["method"] == "thread/compact/start").collect();
    assert_eq!(compacts.len(), 1, "exactly one thread/compact/start");
    assert_eq!(compacts[0]["dir"], "adapter->server");
    assert_eq!(compacts[0]["msg"]["params"]["threadId"], thread.as_str());
    assert!(msgs.iter().any(|m| m["dir"] == "server->adapter" && m["msg"]["id"] == compacts[0]["msg"]["id"]));
    assert!(msgs.iter().any(|m| m["dir"] == "held" && m["msg"]["id"] == 6));
    assert!(msgs.iter().any(|m| m["dir"] == "released" && m["msg"]["id"] == 6));
    assert!(msgs.iter().any(|m| m["dir"] == "client->server" && m["msg"]["id"] == 1));
    assert!(msgs.iter().any(|m| m["dir"] == "server->client" && m["msg"]["method"] == "prelude"));
    // the app-server saw the held turn/start only after the compaction turn ended
    let server = jsonl(&sd.join("server.jsonl"));
    let t_of = |pred: &dyn Fn(&Value) -> bool| server.iter().position(pred).unwrap();
    let done = t_of(&|m| m["dir"] == "out" && m["msg"]["method"] == "turn/completed" && m["msg"]["params"]["turn"]["id"] == comp_turn);
    let held = t_of(&|m| m["dir"] == "in" && m["msg"]["id"] == 6);
    assert!(held > done);
    assert_eq!(server.iter().filter(|m| m["dir"] == "in" && m["msg"]["method"] == "thread/compact/start").count(), 1);
}

extern "C" fn on_signal(_: libc::c_int) {}

#[test]
fn the_periodic_look_sends_what_waits_and_a_refusal_or_a_late_claim_ends_it() {
    let a = Adapter::start(bounds(), &[]);
    let mut ws = connect(&a.sock).unwrap();
    let mut seen = vec![];
    let thread = start_thread(&mut ws, &mut seen, 1);
    let s = a.pin_and_pass(&thread, NONCE);
    send(&mut ws, json!({"id": 2, "method": "turn/start", "params": {"threadId": thread, "input": []}}));
    until(&mut ws, &mut seen, "turn/started", |v| is_method(v, "turn/started"));
    a.request(&s);
    // several looks pass while the turn runs: nothing is sent
    for id in 3..6 {
        std::thread::sleep(Duration::from_millis(40));
        round_trip(&mut ws, &mut seen, id);
    }
    assert_eq!(a.state(&s), RequestState::Pending, "never while a turn runs");

    // A signal handled by the process interrupts the adapter's poll: it goes on.
    // SAFETY: a handler that does nothing, installed for SIGUSR1, which
    // nothing else in this test binary uses; sent to the adapter's thread only.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as usize;
        assert_eq!(libc::sigaction(libc::SIGUSR1, &sa, std::ptr::null_mut()), 0);
        for _ in 0..20 {
            assert_eq!(libc::pthread_kill(a.thread, libc::SIGUSR1), 0);
            std::thread::sleep(Duration::from_millis(5));
        }
    }
    round_trip(&mut ws, &mut seen, 6);

    // More than the socket holds while the TUI does not read: all of it, in order.
    send(&mut ws, json!({"id": 7, "method": "test/burst", "params": {"count": 48, "size": 65536}}));
    a.wait("the burst to be written", || a.sd.join("burst-done").exists().then_some(()));
    until(&mut ws, &mut seen, "the burst's answer", |v| v["id"] == 7);
    let mut got = vec![];
    for _ in 0..48 {
        let v = until(&mut ws, &mut seen, "a burst message", |v| is_method(v, "burst"));
        got.push(v["params"]["n"].as_u64().unwrap());
    }
    assert_eq!(got, (0..48).collect::<Vec<u64>>());

    // The turn ends with the kill switch on: nothing is sent.
    a.w.kill_switch(true);
    send(&mut ws, json!({"id": 8, "method": "test/endTurn", "params": {"threadId": thread}}));
    until(&mut ws, &mut seen, "test/endTurn's answer", |v| v["id"] == 8);
    for id in 9..12 {
        std::thread::sleep(Duration::from_millis(40));
        round_trip(&mut ws, &mut seen, id);
    }
    assert_eq!(a.state(&s), RequestState::Pending, "the kill switch holds it");
    // The kill switch goes, no turn ends: the next periodic look sends it; the host refuses.
    std::fs::write(a.sd.join("compact-mode"), "refuse").unwrap();
    a.w.kill_switch(false);
    assert_eq!(a.final_state(&s), RequestState::Failed { code: "host_refused".into() });

    // A new pass and request: compacted, the claim recorded only after the
    // compaction turn ended (the adapter waits for it).
    std::fs::write(a.sd.join("compact-mode"), "ok").unwrap();
    let s = a.pin_and_pass(&thread, NONCE2);
    a.request(&s);
    compaction_started(&mut ws, &mut seen);
    let now = kijito_gate::now_ms();
    assert!(kijito_gate::precompact(&a.w.qa, &s, Some(&a.w.transcript), "manual", now).unwrap().attested);
    finish_compaction(&mut ws, &mut seen, 12, &thread, "completed", true);
    round_trip(&mut ws, &mut seen, 13);
    assert_eq!(a.state(&s), RequestState::Sent, "waiting for the claim");
    assert!(matches!(kijito_gate::claim(&a.w.qa, &s, now).unwrap(), ClaimOutcome::Claimed(_)));
    assert_eq!(a.final_state(&s), RequestState::Compacted { attested: true, reason: "pass_promoted".into() });
    a.exit(0);
}

#[test]
fn a_compaction_without_its_claim_or_its_end_times_out_and_a_lingering_app_server_is_stopped() {
    let b = Bounds {
        claim: Duration::from_millis(300),
        compaction: Duration::from_millis(300),
        shutdown: Duration::from_millis(300),
        ..bounds()
    };
    let a = Adapter::start(b, &[("STANDIN_ON_EOF", "linger")]);
    let grandchild: i32 = a.wait("the app-server's own child", || std::fs::read_to_string(a.sd.join("grandchild.pid")).ok()?.parse().ok());
    let mut ws = connect(&a.sock).unwrap();
    let mut seen = vec![];
    let thread = start_thread(&mut ws, &mut seen, 1);
    let nonces = ["11111111111111111111111111111111", "22222222222222222222222222222222", "33333333333333333333333333333333"];

    // Compacted on the wire, PreCompact promoted the pass, PostCompact never
    // claimed: timed out, and the promoted ticket is invalidated.
    let s = a.pin_and_pass(&thread, nonces[0]);
    a.request(&s);
    compaction_started(&mut ws, &mut seen);
    kijito_gate::precompact(&a.w.qa, &s, Some(&a.w.transcript), "manual", kijito_gate::now_ms()).unwrap();
    finish_compaction(&mut ws, &mut seen, 2, &thread, "completed", true);
    assert_eq!(a.final_state(&s), RequestState::TimedOut);
    assert!(a.w.request(&s).unwrap().ticket_invalidated);

    // The compaction turn was interrupted (no completed contextCompaction item).
    let s = a.pin_and_pass(&thread, nonces[1]);
    a.request(&s);
    compaction_started(&mut ws, &mut seen);
    finish_compaction(&mut ws, &mut seen, 3, &thread, "interrupted", false);
    assert_eq!(a.final_state(&s), RequestState::Failed { code: "not_compacted".into() });

    // The host never answers thread/compact/start: timed out after the bound.
    std::fs::write(a.sd.join("compact-mode"), "silent").unwrap();
    let s = a.pin_and_pass(&thread, nonces[2]);
    a.request(&s);
    assert_eq!(a.final_state(&s), RequestState::TimedOut);

    // The TUI exits; the app-server does not: its whole process group is stopped.
    a.exit(0);
    wait_for("the app-server's own child to be stopped", 15, || {
        let st = std::fs::read_to_string(format!("/proc/{grandchild}/stat")).ok();
        st.is_none_or(|s| s.rsplit(')').next().is_some_and(|r| r.trim_start().starts_with('Z'))).then_some(())
    });
}

#[test]
fn usage_and_start_failures_are_stable_codes() {
    let w = World::new();
    let sd = w.path("s");
    private_dir(&sd);
    let opts = |stdio: bool, args: &[&str]| Options {
        data_dir: Some(w.data.clone()),
        message_log: None,
        codex: Some(standin_codex(&sd, &[])),
        stdio_client: stdio,
        codex_args: args.iter().map(Into::into).collect(),
        bounds: bounds(),
    };
    // codex arguments make no sense without a TUI
    assert_eq!(run(&opts(true, &["x"])).unwrap_err().code(), "codex_usage");
    assert!(!w.data.as_path().join("compact-codex").exists(), "refused before anything is created");
    // a codex that cannot be started
    let mut o = opts(false, &[]);
    o.codex = Some(AbsPath::from_path(&w.path("no-such-codex")).unwrap());
    assert_eq!(run(&o).unwrap_err().code(), "spawn_failed");
    // the message log is never an existing file
    let existing = w.path("existing.log");
    std::fs::write(&existing, b"kept").unwrap();
    let mut o = opts(false, &[]);
    o.message_log = Some(AbsPath::from_path(&existing).unwrap());
    assert_eq!(run(&o).unwrap_err().code(), "file_exists");
    assert_eq!(std::fs::read(&existing).unwrap(), b"kept");
    assert!(!sd.join("env.json").exists(), "no app-server was started");
}
