//! `kijito-compact codex` end to end on this machine: the real adapter binary,
//! a stand-in app-server and TUI (kijito_testkit::codex, behaving as
//! measured on Codex 0.169, its turns timed), this test as the WebSocket client on the
//! adapter's socket, a real pass (`qa-gate record`) and the real
//! precompact/postcompact hooks for the claim. The real-host version of this
//! is `tests/hosts/run.sh --only adapter-compact`.
#![allow(clippy::unwrap_used)]

use crate::support;

use kijito_compact::trigger::{self, Pin, RequestState, Via};
use kijito_gate::QaDir;
use kijito_protocol::ids::{AbsPath, SessionId};
use kijito_testkit::codex::{tui_exit, STANDIN};
use kijito_testkit::{jsonl, wait_for};
use serde_json::{json, Value};
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::Duration;
use support::gate::*;
use support::ws::{send, Ws};

const KIJITO_COMPACT: &str = env!("CARGO_BIN_EXE_kijito-compact");

struct Run {
    w: World,
    fd: PathBuf,
    child: Child,
    sock: PathBuf,
    log: PathBuf,
}

fn start(turn_ms: u64, compact_ms: u64) -> Run {
    let w = World::new();
    fs::create_dir(&w.data).unwrap();
    fs::set_permissions(&w.data, fs::Permissions::from_mode(0o700)).unwrap();
    let fd = w.path("standin");
    let run = w.path("run");
    for d in [&fd, &run] {
        fs::create_dir(d).unwrap();
        fs::set_permissions(d, fs::Permissions::from_mode(0o700)).unwrap();
    }
    let log = w.path("messages.jsonl");
    let child = w
        .command(KIJITO_COMPACT)
        .args(["codex", "--codex", STANDIN, "--data-dir", &w.data_arg(), "--message-log", log.to_str().unwrap()])
        .args(["--", "--some-tui-flag", "x"])
        .env("STANDIN_DIR", &fd)
        .env("STANDIN_TURN_MS", turn_ms.to_string())
        .env("STANDIN_COMPACT_MS", compact_ms.to_string())
        .env("XDG_RUNTIME_DIR", &run)
        .stdin(Stdio::null())
        .spawn()
        .unwrap();
    let tui: Value =
        wait_for("the TUI stand-in to start", 20, || fs::read(fd.join("tui.json")).ok().and_then(|b| serde_json::from_slice(&b).ok()));
    let argv: Vec<String> = serde_json::from_value(tui["argv"].clone()).unwrap();
    assert_eq!(argv[0], "--remote");
    assert_eq!(&argv[2..], ["--some-tui-flag", "x"], "CODEX_ARGS go to the TUI unchanged");
    let sock = PathBuf::from(argv[1].strip_prefix("unix://").unwrap());
    assert!(sock.starts_with(&run), "socket under $XDG_RUNTIME_DIR: {}", sock.display());
    let mode = fs::metadata(sock.parent().unwrap()).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o700, "the socket's directory is private");
    Run { w, fd, child, sock, log }
}

fn connect(sock: &Path) -> tungstenite::Result<Ws> {
    support::ws::connect(sock, Duration::from_secs(10))
}

/// [`support::ws::until`], at most 500 messages.
fn until(ws: &mut Ws, seen: &mut Vec<Value>, what: &str, pred: impl Fn(&Value) -> bool) -> Value {
    support::ws::until(ws, seen, what, 500, pred)
}

fn is_method(v: &Value, m: &str) -> bool {
    v["method"] == m
}

#[test]
fn tui_attach_forwards_and_compacts_a_pinned_idle_thread_once() {
    let Run { w, fd, mut child, sock, log } = start(5000, 400);
    let mut ws = connect(&sock).expect("the TUI connection");
    assert!(connect(&sock).is_err(), "a second client is refused while one is attached");
    let mut seen = vec![];
    send(&mut ws, json!({"id": 1, "method": "initialize", "params": {"clientInfo": {"name": "codex-tui"}}}));
    until(&mut ws, &mut seen, "initialize answer", |v| v["id"] == 1);
    send(&mut ws, json!({"id": "startup-thread-start-1", "method": "thread/start", "params": {}}));
    let started = until(&mut ws, &mut seen, "thread/start answer", |v| v["id"] == "startup-thread-start-1");
    let thread = started["result"]["thread"]["id"].as_str().unwrap().to_owned();

    // What SessionStart does under the adapter: pin the thread to it.
    let env: Value = serde_json::from_slice(&fs::read(fd.join("env.json")).unwrap()).unwrap();
    let adapter_id = env["KIJITO_COMPACT_ADAPTER_ID"].as_str().unwrap().to_owned();
    assert_eq!(env["KIJITO_COMPACT_SOCKET"].as_str(), sock.to_str(), "the app-server (so every hook) gets the socket");
    assert_eq!(env["PLUGIN_DATA"].as_str(), Some(w.data_arg().as_str()), "and the data dir");
    let s = SessionId::parse(&thread).unwrap();
    let qa = QaDir::open(&AbsPath::parse(&w.data_arg()).unwrap()).unwrap();
    let via = Via::CodexAppServer { adapter_id, socket: AbsPath::parse(sock.to_str().unwrap()).unwrap() };
    trigger::write_pin(&qa, &Pin { session_id: s.clone(), via, pinned_at_ms: now_ms() }).unwrap();

    // The live pointer `qa-gate record` reads (started before the turn, so
    // the record inside it is quick).
    w.live();
    // A user turn runs; during it the agent records a pass and requests compaction.
    send(&mut ws, json!({"id": 6, "method": "turn/start", "params": {"threadId": thread, "input": []}}));
    until(&mut ws, &mut seen, "turn/started", |v| is_method(v, "turn/started"));
    w.record_ok(&thread);
    let (req, _) = trigger::create_request(&qa, &s, now_ms()).unwrap();
    assert_eq!(req.state, RequestState::Pending);
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(trigger::read_request(&qa, &s).unwrap().unwrap().state, RequestState::Pending, "nothing is sent while the turn runs");
    until(&mut ws, &mut seen, "the user turn's turn/completed", |v| {
        is_method(v, "turn/completed") && v["params"]["turn"]["id"] != Value::Null
    });

    // The adapter compacts on its own: the client sees the compaction turn.
    let item = until(&mut ws, &mut seen, "contextCompaction item/started", |v| {
        is_method(v, "item/started") && v["params"]["item"]["type"] == "contextCompaction"
    });
    assert_eq!(trigger::read_request(&qa, &s).unwrap().unwrap().state, RequestState::Sent);
    // The user types during the compaction: held, not refused by the host.
    send(&mut ws, json!({"id": 7, "method": "turn/start", "params": {"threadId": thread, "input": []}}));
    // The host runs the hooks inside the compaction turn (here: the real hook binaries).
    let pre = w.run(
        &PRECOMPACT,
        &["--host", "codex", "--data-dir", &w.data_arg()],
        &w.hook_stdin("codex", "app-server:PreCompact:manual", &thread),
    );
    assert_eq!(pre.status.code(), Some(0));
    let post = w.run(
        &POSTCOMPACT,
        &["--host", "codex", "--data-dir", &w.data_arg()],
        &w.hook_stdin("codex", "app-server:PostCompact:manual", &thread),
    );
    assert_eq!(post.status.code(), Some(0));
    let comp_turn = item["params"]["turnId"].clone();
    until(&mut ws, &mut seen, "the compaction's turn/completed", |v| {
        is_method(v, "turn/completed") && v["params"]["turn"]["id"] == comp_turn
    });
    let answer = until(&mut ws, &mut seen, "the held turn/start's answer", |v| v["id"] == 7);
    assert!(answer.get("result").is_some(), "the held turn/start ran after the compaction: {answer}");
    let state = wait_for("the request to be compacted", 10, || {
        let r = trigger::read_request(&qa, &s).unwrap().unwrap();
        matches!(r.state, RequestState::Compacted { .. }).then_some(r.state)
    });
    assert_eq!(state, RequestState::Compacted { attested: true, reason: "pass_promoted".into() }, "claimed with the pass");

    assert!(
        seen.iter().all(|v| !v["id"].as_str().is_some_and(|i| i.starts_with("kijito-compact-"))),
        "the adapter's answer never reaches the client"
    );

    // The TUI exits: so does the adapter, with its status, and cleans up.
    tui_exit(&fd, 3);
    let status = wait_for("the adapter to exit", 20, || child.try_wait().unwrap());
    assert_eq!(status.code(), Some(3));
    assert!(!sock.exists() && !sock.parent().unwrap().exists(), "socket and its dir removed");

    // The message log proves it: one thread/compact/start, from the adapter, answered to it.
    let msgs = jsonl(&log);
    assert_eq!(fs::metadata(&log).unwrap().permissions().mode() & 0o777, 0o600);
    let compacts: Vec<&Value> = msgs.iter().filter(|m| m["msg"]["method"] == "thread/compact/start").collect();
    assert_eq!(compacts.len(), 1, "exactly one thread/compact/start");
    assert_eq!(compacts[0]["dir"], "adapter->server");
    assert_eq!(compacts[0]["msg"]["params"]["threadId"], thread.as_str());
    let id = compacts[0]["msg"]["id"].clone();
    assert!(msgs.iter().any(|m| m["dir"] == "server->adapter" && m["msg"]["id"] == id));
    assert!(msgs.iter().all(|m| m["msg"]["method"] != "thread/resume"));
    assert!(msgs.iter().any(|m| m["dir"] == "held" && m["msg"]["id"] == 7));
    assert!(msgs.iter().any(|m| m["dir"] == "released" && m["msg"]["id"] == 7));
    // and the stand-in app-server saw the held turn/start only after the compaction ended
    let server = jsonl(&fd.join("server.jsonl"));
    let t_of = |pred: &dyn Fn(&Value) -> bool| server.iter().find(|m| pred(m)).map(|m| m["t"].as_f64().unwrap()).unwrap();
    let t_done = t_of(&|m| m["dir"] == "out" && m["msg"]["method"] == "turn/completed" && m["msg"]["params"]["turn"]["id"] == comp_turn);
    let t_held = t_of(&|m| m["dir"] == "in" && m["msg"]["id"] == 7);
    assert!(t_held >= t_done, "the held turn/start reached the app-server after the compaction turn ended");
    assert!(!server.iter().any(|m| m["msg"]["error"]["message"].as_str().is_some_and(|e| e.contains("ActiveTurnNotSteerable"))));
}

#[test]
fn nothing_is_sent_without_a_pin_to_this_adapter_or_with_the_kill_switch() {
    let Run { w, fd, mut child, sock, log } = start(50, 100);
    let mut ws = connect(&sock).unwrap();
    let mut seen = vec![];
    send(&mut ws, json!({"id": 1, "method": "thread/start", "params": {}}));
    let thread = until(&mut ws, &mut seen, "thread", |v| v["id"] == 1)["result"]["thread"]["id"].as_str().unwrap().to_owned();
    let s = SessionId::parse(&thread).unwrap();
    let qa = QaDir::open(&AbsPath::parse(&w.data_arg()).unwrap()).unwrap();
    w.record_ok(&thread);
    // pinned to another adapter
    let other = Via::CodexAppServer { adapter_id: "f".repeat(32), socket: AbsPath::parse(sock.to_str().unwrap()).unwrap() };
    trigger::write_pin(&qa, &Pin { session_id: s.clone(), via: other, pinned_at_ms: now_ms() }).unwrap();
    trigger::create_request(&qa, &s, now_ms()).unwrap();
    std::thread::sleep(Duration::from_millis(800));
    assert_eq!(trigger::read_request(&qa, &s).unwrap().unwrap().state, RequestState::Pending);
    // pinned to this adapter, but the kill switch is on
    let env: Value = serde_json::from_slice(&fs::read(fd.join("env.json")).unwrap()).unwrap();
    let mine = Via::CodexAppServer {
        adapter_id: env["KIJITO_COMPACT_ADAPTER_ID"].as_str().unwrap().into(),
        socket: AbsPath::parse(sock.to_str().unwrap()).unwrap(),
    };
    fs::write(w.data.join("compact-disabled"), "").unwrap();
    trigger::write_pin(&qa, &Pin { session_id: s.clone(), via: mine, pinned_at_ms: now_ms() }).unwrap();
    std::thread::sleep(Duration::from_millis(800));
    assert_eq!(trigger::read_request(&qa, &s).unwrap().unwrap().state, RequestState::Pending);
    // the pass is withdrawn before the kill switch goes: failed, nothing sent
    fs::remove_file(qa.pass(&s)).unwrap();
    fs::remove_file(w.data.join("compact-disabled")).unwrap();
    let st = wait_for("the request to fail", 10, || {
        let r = trigger::read_request(&qa, &s).unwrap().unwrap();
        r.state.is_final().then_some(r.state)
    });
    assert_eq!(st, RequestState::Failed { code: "pass_missing".into() });
    tui_exit(&fd, 0);
    assert_eq!(wait_for("exit", 20, || child.try_wait().unwrap()).code(), Some(0));
    assert!(jsonl(&log).iter().all(|m| m["msg"]["method"] != "thread/compact/start"), "nothing was sent");
}

#[test]
fn headless_stdio_client_and_usage_errors() {
    let w = World::new();
    // codex arguments make no sense without a TUI
    let out = w.run(KIJITO_COMPACT, &["codex", "--stdio-client", "--codex", STANDIN, "--", "x"], b"");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).starts_with("kijito_compact_failed:codex_usage"));
    let out = w.run(KIJITO_COMPACT, &["codex", "--codex", "relative/codex"], b"");
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
    fs::create_dir(&w.data).unwrap();
    fs::set_permissions(&w.data, fs::Permissions::from_mode(0o700)).unwrap();
    // the message log is never an existing file (nor a symlink to one)
    let existing = w.path("existing.log");
    fs::write(&existing, "").unwrap();
    let link = w.path("link.log");
    std::os::unix::fs::symlink(&existing, &link).unwrap();
    for p in [&existing, &link] {
        let out = w.run(
            KIJITO_COMPACT,
            &["codex", "--stdio-client", "--codex", STANDIN, "--data-dir", &w.data_arg(), "--message-log", p.to_str().unwrap()],
            b"",
        );
        assert_ne!(out.status.code(), Some(0), "{}", p.display());
        assert!(String::from_utf8_lossy(&out.stderr).starts_with("kijito_compact_failed:"));
    }
    assert_eq!(fs::read(&existing).unwrap(), b"");
    // headless: JSON lines on stdin/stdout, forwarded unchanged
    let fd = w.path("standin");
    fs::create_dir(&fd).unwrap();
    let mut c = w.command(KIJITO_COMPACT);
    c.args(["codex", "--stdio-client", "--codex", STANDIN, "--data-dir", &w.data_arg()]).env("STANDIN_DIR", &fd);
    let child = c.spawn().unwrap();
    let mut stdin = child.stdin.as_ref().unwrap();
    use std::io::Write;
    stdin.write_all(b"{\"id\":1,\"method\":\"thread/start\",\"params\":{}}\n{\"id\":2,  \"method\":\"model/list\"}\n").unwrap();
    let out = {
        let mut child = child;
        drop(child.stdin.take());
        wait_bounded(child, 20)
    };
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.lines().any(|l| l.starts_with("{\"id\":1,\"result\":{\"thread\"")), "{text}");
    let server = jsonl(&fd.join("server.jsonl"));
    assert!(server.iter().any(|m| m["dir"] == "in" && m["msg"]["id"] == 2));
}
