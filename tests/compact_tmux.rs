//! kijito-compact with real binaries, real files and a real tmux server on a
//! private socket: the SessionStart hook runs inside a pane (under a "host"
//! shell that then becomes `cat`, which writes whatever is typed into the
//! pane to a file), pins it, and the worker types `/compact` + Enter into it
//! only after the Stop hook recorded the turn's end (docs/adapters.md).
#![allow(clippy::unwrap_used)]

mod support;
use support::gate as sg;

use serde_json::Value;
use sg::*;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

const COMPACT: &str = env!("CARGO_BIN_EXE_kijito-compact");
const S: &str = "2208dc6c-1602-4db0-9c33-9125ee25dc44";

fn tmux_available() -> bool {
    Command::new("tmux").arg("-V").stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok_and(|s| s.success())
}

/// Wait (bounded) until `cond` holds.
fn wait_for(what: &str, secs: u64, mut cond: impl FnMut() -> bool) {
    let end = Instant::now() + Duration::from_secs(secs);
    while Instant::now() < end {
        if cond() {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("timed out after {secs} s waiting for {what}");
}

struct Server {
    sock: PathBuf,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = Command::new("tmux").arg("-S").arg(&self.sock).arg("kill-server").stderr(Stdio::null()).status();
    }
}

fn compact(w: &World, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = w.command(COMPACT);
    c.args(args).env_remove("TMUX").env_remove("TMUX_PANE").stdin(Stdio::null());
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().unwrap()
}

fn request(w: &World, env: &[(&str, &str)]) -> Output {
    compact(w, &["request", "--session-id", S, "--data-dir", &w.data_arg()], env)
}

fn status(w: &World) -> Value {
    let out = compact(w, &["status", "--session-id", S, "--data-dir", &w.data_arg()], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

fn hook(w: &World, bin: &str, args: &[&str], key: &str) -> Output {
    let data = w.data_arg();
    let mut full = vec!["--host", "claude"];
    full.extend_from_slice(args);
    full.extend_from_slice(&["--data-dir", &data]);
    let mut c = w.command(bin);
    c.args(&full).env_remove("TMUX").env_remove("TMUX_PANE");
    let mut child = c.spawn().unwrap();
    use std::io::Write;
    child.stdin.take().unwrap().write_all(&w.hook_stdin("claude", key, S)).unwrap();
    child.wait_with_output().unwrap()
}

fn session_hook(w: &World, event: &str, key: &str) -> Output {
    hook(w, &SESSION_HOOK, &["--expect", event], key)
}

fn typed(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_default()
}

fn failure(out: &Output) -> String {
    failure_code(out)
}

#[test]
fn the_tmux_adapter_types_compact_once_after_the_turn_and_records_the_claim() {
    if !tmux_available() {
        eprintln!("SKIP: tmux is not installed");
        return;
    }
    let w = World::new();
    let sock = w.path("tmux.sock");
    let stdin = w.path("ss-in.json");
    let out = w.path("ss-out.json");
    let typed_file = w.path("typed.txt");
    std::fs::write(&stdin, w.hook_stdin("claude", "SessionStart(source=startup)", S)).unwrap();
    // pane process: sh (pane_pid) -> sh (the "host") -> session-hook; then the
    // host execs cat (same pid, same start time) which records keystrokes.
    let host = format!(
        "sh -c '{hook} --host claude --expect SessionStart --data-dir {data} < {i} > {o}; exec cat > {t}'; sleep 600",
        hook = &*SESSION_HOOK,
        data = w.data_arg(),
        i = stdin.display(),
        o = out.display(),
        t = typed_file.display()
    );
    let mut c = w.command("tmux");
    c.arg("-S").arg(&sock).args(["-f", "/dev/null", "new-session", "-d", "-x", "120", "-y", "30", &host]).env_remove("TMUX").env_remove("TMUX_PANE");
    let st = c.stdin(Stdio::null()).status().unwrap();
    assert!(st.success());
    let _server = Server { sock: sock.clone() };
    wait_for("the SessionStart hook in the pane", 20, || typed_file.exists() && std::fs::metadata(&out).is_ok_and(|m| m.len() > 0));
    let ss: Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    let text = ss["hookSpecificOutput"]["additionalContext"].as_str().unwrap();
    assert!(text.contains("tmux pane is pinned"), "{text}");
    assert!(text.contains(&format!("/kijito-compact request --session-id {S} --data-dir {}", w.data_arg())), "{text}");
    let pin: Value = serde_json::from_slice(&std::fs::read(w.qa().join(format!("compact-pin.{S}.json"))).unwrap()).unwrap();
    assert_eq!(pin["via"], "tmux");
    assert_eq!(pin["target"]["socket"], sock.to_str().unwrap());
    assert_eq!(pin["target"]["pane"], "%0");
    // the tmux executable the hook resolved on its PATH (and used for #{pane_pid})
    let program = pin["target"]["tmux"].as_str().unwrap();
    assert!(program.starts_with('/') && program.ends_with("/tmux") && Path::new(program).is_file(), "{pin}");

    // Without a pass: pass_missing, nothing recorded.
    let r = request(&w, &[]);
    assert_eq!(r.status.code(), Some(1));
    assert_eq!(failure(&r), "kijito_compact_failed:pass_missing");

    // A pass, a running turn, the request: nothing is typed while the turn runs.
    w.record_ok(S);
    assert_eq!(session_hook(&w, "UserPromptSubmit", "UserPromptSubmit").status.code(), Some(0));
    let r = request(&w, &[]);
    assert_eq!(r.status.code(), Some(0), "{}", String::from_utf8_lossy(&r.stderr));
    let line: Value = serde_json::from_slice(&r.stdout).unwrap();
    assert_eq!(line["type"], "kijito.compaction.requested");
    assert_eq!(line["via"], "tmux");
    assert_eq!(line["sessionId"], S);
    assert_eq!(String::from_utf8_lossy(&r.stdout).lines().count(), 1);
    let again = request(&w, &[]);
    assert_eq!(failure(&again), "kijito_compact_failed:request_exists");
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(typed(&typed_file), "", "nothing typed while the turn runs");
    assert_eq!(status(&w)["state"], "pending");

    // Stop: the worker types exactly "/compact" and Enter.
    assert_eq!(session_hook(&w, "Stop", "Stop").status.code(), Some(0));
    wait_for("/compact in the pane", 10, || typed(&typed_file) == "/compact\n");
    assert_eq!(status(&w)["state"], "sent");
    // The host compacts: PreCompact promotes, PostCompact claims.
    assert_eq!(hook(&w, &PRECOMPACT, &[], "PreCompact(manual, no args)").status.code(), Some(0));
    assert_eq!(hook(&w, &POSTCOMPACT, &[], "PostCompact(manual)").status.code(), Some(0));
    wait_for("compacted", 10, || status(&w)["state"] == "compacted");
    let st = status(&w);
    assert_eq!(st["attested"], true, "{st}");
    assert_eq!(st["reason"], "pass_promoted");
    assert_eq!(typed(&typed_file), "/compact\n", "nothing else was typed");

    // Second pass: the host runs PreCompact but never claims; the worker
    // times out and invalidates the promoted ticket.
    std::fs::remove_file(w.qa().join(format!("compaction-reentry.{S}.json"))).ok();
    w.record_ok(S);
    assert_eq!(session_hook(&w, "UserPromptSubmit", "UserPromptSubmit").status.code(), Some(0));
    // The request (and so the worker) runs with a PATH that has no tmux, as the
    // tool calls of Codex's login shell do: the worker runs the pinned tmux.
    let r = request(&w, &[("KIJITO_COMPACT_CLAIM_WAIT_MS", "1500"), ("PATH", "/nonexistent-kijito-test")]);
    assert_eq!(r.status.code(), Some(0), "{}", String::from_utf8_lossy(&r.stderr));
    assert_eq!(session_hook(&w, "Stop", "Stop").status.code(), Some(0));
    wait_for("the second /compact", 10, || typed(&typed_file) == "/compact\n/compact\n");
    assert_eq!(hook(&w, &PRECOMPACT, &[], "PreCompact(manual, no args)").status.code(), Some(0));
    assert!(w.qa().join(format!("compaction-resume.{S}.json")).exists(), "ticket promoted");
    wait_for("timed_out", 15, || status(&w)["state"] == "timed_out");
    assert_eq!(status(&w)["ticketInvalidated"], true);
    assert!(!w.qa().join(format!("compaction-resume.{S}.json")).exists(), "the unclaimed ticket is gone");

    // Kill switch: no safe trigger.
    w.record_ok(S);
    std::fs::write(w.data.join("compact-disabled"), b"").unwrap();
    let r = request(&w, &[]);
    assert_eq!(failure(&r), "kijito_compact_failed:no_safe_trigger");
    assert!(String::from_utf8_lossy(&r.stderr).contains("ask the user to run /compact"));
    std::fs::remove_file(w.data.join("compact-disabled")).unwrap();

    // The host process ends (the pane lives on running `sleep`): the pin no
    // longer names a live host, so no safe trigger, nothing typed.
    let pid = pin["target"]["hostPid"].as_u64().unwrap();
    // SAFETY: plain kill(2) of the test's own `cat` child of the pane.
    assert_eq!(unsafe { libc::kill(pid as i32, libc::SIGTERM) }, 0);
    wait_for("the host to exit", 10, || !Path::new(&format!("/proc/{pid}")).exists() || std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| s.contains(") Z ")));
    let r = request(&w, &[]);
    assert_eq!(failure(&r), "kijito_compact_failed:no_safe_trigger", "{}", String::from_utf8_lossy(&r.stderr));
    assert_eq!(typed(&typed_file), "/compact\n/compact\n");
}

#[test]
fn outside_tmux_there_is_no_safe_trigger_and_status_creates_nothing() {
    let w = World::new();
    // status on a data dir that does not exist: no_request, creates nothing.
    let out = compact(&w, &["status", "--session-id", S, "--data-dir", &w.data_arg()], &[]);
    assert_eq!(failure(&out), "kijito_compact_failed:no_request");
    assert!(!w.data.exists());
    let out = session_hook(&w, "SessionStart", "SessionStart(source=startup)");
    let text = context_of(&out.stdout).unwrap();
    assert!(text.contains("no adapter owns this session"), "{text}");
    assert!(!w.qa().join(format!("compact-pin.{S}.json")).exists());
    assert_eq!(failure(&request(&w, &[])), "kijito_compact_failed:pass_missing");
    w.record_ok(S);
    let r = request(&w, &[]);
    assert_eq!(r.status.code(), Some(1));
    assert_eq!(failure(&r), "kijito_compact_failed:no_safe_trigger");
    assert!(String::from_utf8_lossy(&r.stderr).contains("ask the user to run /compact now"));
    assert!(r.stdout.is_empty());
    // A subagent's SessionStart never pins, even with adapter variables.
    let mut stdin: Value = serde_json::from_slice(&w.hook_stdin("claude", "SessionStart(source=startup)", S)).unwrap();
    stdin["agent_id"] = "agent-1".into();
    let mut c = w.command(&SESSION_HOOK);
    c.args(["--host", "claude", "--expect", "SessionStart", "--data-dir", &w.data_arg()])
        .env("KIJITO_COMPACT_ADAPTER_ID", "0123456789abcdef0123456789abcdef")
        .env("KIJITO_COMPACT_SOCKET", "/tmp/x.sock");
    let mut child = c.spawn().unwrap();
    use std::io::Write;
    child.stdin.take().unwrap().write_all(stdin.to_string().as_bytes()).unwrap();
    assert_eq!(child.wait_with_output().unwrap().status.code(), Some(0));
    assert!(!w.qa().join(format!("compact-pin.{S}.json")).exists(), "subagents are never pinned");
    // The adapter's variables pin the session to it; request only records.
    let stdin = w.hook_stdin("claude", "SessionStart(source=startup)", S);
    let mut c = w.command(&SESSION_HOOK);
    c.args(["--host", "claude", "--expect", "SessionStart", "--data-dir", &w.data_arg()])
        .env("KIJITO_COMPACT_ADAPTER_ID", "0123456789abcdef0123456789abcdef")
        .env("KIJITO_COMPACT_SOCKET", "/tmp/x.sock");
    let mut child = c.spawn().unwrap();
    child.stdin.take().unwrap().write_all(&stdin).unwrap();
    assert_eq!(child.wait_with_output().unwrap().status.code(), Some(0));
    let r = request(&w, &[]);
    assert_eq!(r.status.code(), Some(0), "{}", String::from_utf8_lossy(&r.stderr));
    let line: Value = serde_json::from_slice(&r.stdout).unwrap();
    assert_eq!(line["via"], "codex-app-server");
    assert_eq!(status(&w)["state"], "pending");
}

#[test]
fn protocol_section_9_examples_are_byte_exact() {
    use kijito_gate::trigger::{requested_line, Pin, Request, Turn};
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/protocol.md")).unwrap();
    let section = &text[text.find("## 9. Compaction adapters").unwrap()..];
    // up to the next top-level section (§10 follows)
    let section = &section[..section[1..].find("\n## ").map(|i| i + 1).unwrap_or(section.len())];
    let (mut pins, mut turns, mut requests, mut lines) = (0, 0, 0, 0);
    for line in section.lines().filter(|l| l.starts_with('{')) {
        let v: Value = serde_json::from_str(line).unwrap();
        let again = if v.get("target").is_some() {
            pins += 1;
            Pin::parse(line.as_bytes()).unwrap().to_value().to_string()
        } else if v.get("atMs").is_some() {
            turns += 1;
            Turn::parse(line.as_bytes()).unwrap().to_value().to_string()
        } else if v["type"] == "kijito.compaction.requested" {
            lines += 1;
            let r = Request::parse(
                format!(
                    r#"{{"schemaVersion":1,"sessionId":{},"via":{},"nonce":{},"requestedAtMs":1,"updatedAtMs":1,"state":"pending","attested":null,"reason":null,"code":null,"ticketInvalidated":false}}"#,
                    v["sessionId"], v["via"], v["nonce"]
                )
                .as_bytes(),
            )
            .unwrap();
            requested_line(&r)
        } else if v["type"] == "kijito.compaction.status" {
            // the request plus summaryCarried, summaryCheck and type, in that order
            let mut o = v.as_object().unwrap().clone();
            let tail: Vec<(String, Value)> = ["summaryCarried", "summaryCheck", "type"].iter().map(|k| (k.to_string(), o.shift_remove(*k).unwrap())).collect();
            let mut again = Request::parse(Value::Object(o).to_string().as_bytes()).unwrap().to_value();
            again.as_object_mut().unwrap().extend(tail);
            again.to_string()
        } else {
            requests += 1;
            Request::parse(line.as_bytes()).unwrap().to_value().to_string()
        };
        assert_eq!(again, line);
    }
    assert_eq!((pins, turns, requests, lines), (2, 1, 4, 1));
}

/// The turn record that the worker waits on: UserPromptSubmit writes
/// `running`, Stop writes `ended`; a subagent's hooks (its stdin carries
/// `agent_id` or `agent_type`) never touch the session's turn record.
#[test]
fn turn_records_follow_the_session_and_ignore_subagents() {
    use std::io::Write;
    let w = World::new();
    let turn = || -> Option<Value> { std::fs::read(w.qa().join(format!("compact-turn.{S}.json"))).ok().map(|b| serde_json::from_slice(&b).unwrap()) };
    let run = |event: &str, agent: Option<(&str, &str)>| {
        let mut stdin: Value = serde_json::from_slice(&w.hook_stdin("claude", event, S)).unwrap();
        if let Some((k, v)) = agent {
            stdin[k] = v.into();
        }
        let mut c = w.command(&SESSION_HOOK);
        c.args(["--host", "claude", "--expect", event, "--data-dir", &w.data_arg()]).env_remove("TMUX").env_remove("TMUX_PANE");
        let mut child = c.spawn().unwrap();
        child.stdin.take().unwrap().write_all(stdin.to_string().as_bytes()).unwrap();
        assert_eq!(child.wait_with_output().unwrap().status.code(), Some(0));
    };
    run("UserPromptSubmit", Some(("agent_id", "agent-1")));
    assert_eq!(turn(), None, "a subagent's prompt writes no turn record");
    run("UserPromptSubmit", None);
    assert_eq!(turn().unwrap()["state"], "running");
    run("Stop", Some(("agent_type", "Explore")));
    assert_eq!(turn().unwrap()["state"], "running", "a subagent's Stop does not end the session's turn");
    run("Stop", None);
    assert_eq!(turn().unwrap()["state"], "ended");
}
