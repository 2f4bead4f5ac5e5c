//! kijito-compact with real binaries, real files and a real tmux server on a
//! private socket: the SessionStart hook runs inside a pane (under a "host"
//! shell that then becomes `cat`, which writes whatever is typed into the
//! pane to a file), pins it, and the worker types `/compact` + Enter into it
//! only after the Stop hook recorded the turn's end (docs/adapters.md).
#![allow(clippy::unwrap_used)]

use crate::support;
use support::gate as sg;

use serde_json::Value;
use sg::*;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

const COMPACT: &str = env!("CARGO_BIN_EXE_kijito-compact");
pub(crate) const S: &str = "2208dc6c-1602-4db0-9c33-9125ee25dc44";

fn tmux_available() -> bool {
    Command::new("tmux").arg("-V").stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok_and(|s| s.success())
}

/// Wait (bounded) until `cond` holds.
pub(crate) fn wait_for(what: &str, secs: u64, mut cond: impl FnMut() -> bool) {
    let end = Instant::now() + Duration::from_secs(secs);
    while Instant::now() < end {
        if cond() {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("timed out after {secs} s waiting for {what}");
}

fn compact(w: &World, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = w.command(COMPACT);
    c.args(args).env_remove("TMUX").env_remove("TMUX_PANE").stdin(Stdio::null());
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().unwrap()
}

pub(crate) fn request(w: &World, env: &[(&str, &str)]) -> Output {
    compact(w, &["request", "--session-id", S, "--data-dir", &w.data_arg()], env)
}

pub(crate) fn status(w: &World) -> Value {
    let out = compact(w, &["status", "--session-id", S, "--data-dir", &w.data_arg()], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Run the hook `bin --host claude ARGS --data-dir D` outside tmux with
/// `stdin` and `env` added: every hook run of this file.
fn run_hook(w: &World, bin: &str, args: &[&str], stdin: &[u8], env: &[(&str, &str)]) -> Output {
    let data = w.data_arg();
    let mut full = vec!["--host", "claude"];
    full.extend_from_slice(args);
    full.extend_from_slice(&["--data-dir", &data]);
    let mut c = w.command(bin);
    c.args(&full).env_remove("TMUX").env_remove("TMUX_PANE");
    for (k, v) in env {
        c.env(k, v);
    }
    let mut child = c.spawn().unwrap();
    use std::io::Write;
    child.stdin.take().unwrap().write_all(stdin).unwrap();
    child.wait_with_output().unwrap()
}

/// [`run_hook`] with the real Claude Code payload `key` of session [`S`].
fn hook(w: &World, bin: &str, args: &[&str], key: &str) -> Output {
    run_hook(w, bin, args, &w.hook_stdin("claude", key, S), &[])
}

pub(crate) fn session_hook(w: &World, event: &str, key: &str) -> Output {
    hook(w, &SESSION_HOOK, &["--expect", event], key)
}

pub(crate) fn typed(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_default()
}

fn failure(out: &Output) -> String {
    failure_code(out)
}

/// `tmux -S SOCK ARGS` (stdout trimmed; panics on failure).
fn tmux(sock: &Path, args: &[&str]) -> String {
    let out = Command::new("tmux")
        .arg("-S")
        .arg(sock)
        .args(args)
        .env_remove("TMUX")
        .env_remove("TMUX_PANE")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success(), "tmux {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

fn proc_stat(pid: u64) -> (u64, u64) {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let rest: Vec<&str> = text[text.rfind(')').unwrap() + 1..].split_ascii_whitespace().collect();
    (rest[1].parse().unwrap(), rest[19].parse().unwrap())
}

fn proc_argv(pid: u64) -> Vec<String> {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .unwrap()
        .split(|b| *b == 0)
        .filter(|w| !w.is_empty())
        .map(|w| String::from_utf8_lossy(w).into_owned())
        .collect()
}

/// How the stand-in host is started in its pane.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Shape {
    /// The host is the pane's own command (`tmux new-session -d HOST`): the
    /// pane's process is the host.
    PaneCommand,
    /// The pane runs a shell (`sh -c 'HOST; sleep 600'`) and the host is its
    /// child; the pane lives on after the host ends.
    ShellChild,
}

const SHAPES: [Shape; 2] = [Shape::PaneCommand, Shape::ShellChild];

/// A tmux server on a private socket, with one pane running the stand-in
/// host, and a second session that keeps the server up when the pane goes.
pub(crate) struct Pane {
    sock: PathBuf,
    /// Every byte typed into the host after its SessionStart (raw mode).
    pub(crate) typed: PathBuf,
    pane_pid: u64,
    host_pid: u64,
    /// The base path of the worker's test seam (`KIJITO_COMPACT_TEST_HOLD`).
    hold: PathBuf,
}

impl Drop for Pane {
    fn drop(&mut self) {
        let _ = Command::new("tmux").arg("-S").arg(&self.sock).arg("kill-server").stderr(Stdio::null()).status();
    }
}

impl Pane {
    fn hold_env(&self) -> (&'static str, String) {
        ("KIJITO_COMPACT_TEST_HOLD", self.hold.to_str().unwrap().to_owned())
    }
    /// Let the worker go on to the checks of keystroke `n` (1: `/compact`, 2: Enter).
    fn release(&self, n: u8) {
        std::fs::write(format!("{}.{n}", self.hold.display()), b"").unwrap();
    }
}

/// Start the stand-in host in `shape`: a shell script that runs the
/// SessionStart hook through `sh -c` (as both hosts run hook commands), then
/// puts its terminal in raw mode and execs `cat` (same pid, same start
/// time), which writes every byte typed into the pane to a file. Asserts the
/// pin names the host: the pane's process (`PaneCommand`) or its child
/// running the script (`ShellChild`), never the hook's own shell.
fn start_host(w: &World, shape: Shape) -> Pane {
    let sock = w.path("tmux.sock");
    let stdin = w.path("ss-in.json");
    let out = w.path("ss-out.json");
    let typed = w.path("typed.txt");
    let script = w.path("host.sh");
    std::fs::write(&stdin, w.hook_stdin("claude", "SessionStart(source=startup)", S)).unwrap();
    std::fs::write(
        &script,
        format!(
            "sh -c '{hook} --host claude --expect SessionStart --data-dir {data} < {i} > {o}'\nstty raw -echo\nexec cat > {t}\n",
            hook = &*SESSION_HOOK,
            data = w.data_arg(),
            i = stdin.display(),
            o = out.display(),
            t = typed.display()
        ),
    )
    .unwrap();
    let host = format!("sh {}", script.display());
    let shell = format!("{host}; sleep 600");
    let cmd: Vec<&str> = match shape {
        Shape::PaneCommand => vec!["sh", script.to_str().unwrap()],
        Shape::ShellChild => vec!["sh", "-c", &shell],
    };
    let mut c = w.command("tmux");
    c.arg("-S")
        .arg(&sock)
        .args(["-f", "/dev/null", "new-session", "-d", "-s", "agent", "-x", "120", "-y", "30", "--"])
        .args(&cmd)
        .env_remove("TMUX")
        .env_remove("TMUX_PANE");
    assert!(c.stdin(Stdio::null()).status().unwrap().success());
    let mut pane = Pane { sock: sock.clone(), typed: typed.clone(), pane_pid: 0, host_pid: 0, hold: w.path("hold") };
    tmux(&sock, &["new-session", "-d", "-s", "keep", "sleep 600"]);
    wait_for("the SessionStart hook in the pane", 20, || typed.exists() && std::fs::metadata(&out).is_ok_and(|m| m.len() > 0));
    let ss: Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    let text = ss["hookSpecificOutput"]["additionalContext"].as_str().unwrap();
    assert!(text.contains("tmux pane is pinned"), "{shape:?}: {text}");
    let pin: Value = serde_json::from_slice(&std::fs::read(w.qa().join(format!("compact-pin.{S}.json"))).unwrap()).unwrap();
    assert_eq!(pin["via"], "tmux");
    assert_eq!(pin["target"]["socket"], sock.to_str().unwrap());
    assert_eq!(pin["target"]["pane"], "%0");
    let pane_pid: u64 = tmux(&sock, &["display-message", "-p", "-t", "%0", "#{pane_pid}"]).parse().unwrap();
    let host_pid = pin["target"]["hostPid"].as_u64().unwrap();
    let (ppid, start) = proc_stat(host_pid);
    assert_eq!(pin["target"]["hostStart"].as_u64(), Some(start), "{pin}");
    match shape {
        Shape::PaneCommand => assert_eq!(host_pid, pane_pid, "{shape:?}: the pane's own process is the host"),
        Shape::ShellChild => assert_eq!(ppid, pane_pid, "{shape:?}: the child of the pane's shell is the host"),
    }
    // The host (now `cat`) lives on; the hook's `sh -c` is gone. (The shell
    // creates the typed file before its `exec cat`: wait for the exec.)
    wait_for("the host to exec cat", 10, || proc_argv(host_pid) == vec!["cat".to_owned()]);
    (pane.pane_pid, pane.host_pid) = (pane_pid, host_pid);
    pane
}

/// A fresh world with the stand-in host started in `shape` ([`start_host`]):
/// the set-up of every tmux test here; `None` (and a SKIP line) without tmux.
pub(crate) fn stand_in(shape: Shape) -> Option<(World, Pane)> {
    if !tmux_available() {
        eprintln!("SKIP: tmux is not installed");
        return None;
    }
    let w = World::new();
    let p = start_host(&w, shape);
    Some((w, p))
}

/// A pass, a running turn, the request (with `env` for the worker): nothing
/// typed yet.
pub(crate) fn request_in_turn(w: &World, env: &[(&str, &str)]) {
    // The turn begins, then the agent records its pass in it (a new turn
    // after `record` would withdraw the pass).
    assert_eq!(session_hook(w, "UserPromptSubmit", "UserPromptSubmit").status.code(), Some(0));
    w.record_ok(S);
    let r = request(w, env);
    assert_eq!(r.status.code(), Some(0), "{}", String::from_utf8_lossy(&r.stderr));
    assert_eq!(status(w)["state"], "pending");
}

pub(crate) fn stop(w: &World) {
    assert_eq!(session_hook(w, "Stop", "Stop").status.code(), Some(0));
}

/// The host compacts: PreCompact promotes, PostCompact claims.
fn host_compacts(w: &World) {
    assert_eq!(hook(w, &PRECOMPACT, &[], "PreCompact(manual, no args)").status.code(), Some(0));
    assert_eq!(hook(w, &POSTCOMPACT, &[], "PostCompact(manual)").status.code(), Some(0));
}

/// Wait (bounded) for a final request state; returns the status.
fn final_status(w: &World) -> Value {
    let mut st = Value::Null;
    wait_for("a final request state", 20, || {
        st = status(w);
        !matches!(st["state"].as_str(), Some("pending" | "sent"))
    });
    st
}

#[test]
fn the_host_is_pinned_and_compacted_in_both_pane_shapes() {
    for shape in SHAPES {
        let Some((w, p)) = stand_in(shape) else { return };
        request_in_turn(&w, &[]);
        stop(&w);
        wait_for("/compact and Enter in the pane", 10, || typed(&p.typed) == "/compact\r");
        assert_eq!(status(&w)["state"], "sent", "{shape:?}");
        host_compacts(&w);
        let st = final_status(&w);
        assert_eq!((st["state"].as_str(), st["attested"].as_bool()), (Some("compacted"), Some(true)), "{shape:?}: {st}");
        assert_eq!(typed(&p.typed), "/compact\r", "{shape:?}: nothing else was typed");
    }
}

#[test]
fn the_tmux_adapter_types_compact_once_after_the_turn_and_records_the_claim() {
    let Some((w, p)) = stand_in(Shape::ShellChild) else { return };
    let pin: Value = serde_json::from_slice(&std::fs::read(w.qa().join(format!("compact-pin.{S}.json"))).unwrap()).unwrap();
    // the tmux executable the hook resolved on its PATH (and used for #{pane_pid})
    let program = pin["target"]["tmux"].as_str().unwrap();
    assert!(program.starts_with('/') && program.ends_with("/tmux") && Path::new(program).is_file(), "{pin}");
    let ss: Value = serde_json::from_slice(&std::fs::read(w.path("ss-out.json")).unwrap()).unwrap();
    let text = ss["hookSpecificOutput"]["additionalContext"].as_str().unwrap();
    assert!(text.contains(&format!("/kijito-compact request --session-id {S} --data-dir {}", w.data_arg())), "{text}");

    // Without a pass: pass_missing, nothing recorded.
    let r = request(&w, &[]);
    assert_eq!(r.status.code(), Some(1));
    assert_eq!(failure(&r), "kijito_compact_failed:pass_missing");

    // A pass, a running turn, the request: nothing is typed while the turn runs.
    assert_eq!(session_hook(&w, "UserPromptSubmit", "UserPromptSubmit").status.code(), Some(0));
    w.record_ok(S);
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
    assert_eq!(typed(&p.typed), "", "nothing typed while the turn runs");
    assert_eq!(status(&w)["state"], "pending");

    // Stop: the worker types exactly "/compact" and Enter.
    stop(&w);
    wait_for("/compact in the pane", 10, || typed(&p.typed) == "/compact\r");
    assert_eq!(status(&w)["state"], "sent");
    host_compacts(&w);
    wait_for("compacted", 10, || status(&w)["state"] == "compacted");
    let st = status(&w);
    assert_eq!(st["attested"], true, "{st}");
    assert_eq!(st["reason"], "pass_promoted");
    assert_eq!(typed(&p.typed), "/compact\r", "nothing else was typed");

    // Second pass: the host runs PreCompact but never claims; the worker
    // times out and invalidates the promoted ticket.
    std::fs::remove_file(w.qa().join(format!("compaction-reentry.{S}.json"))).ok();
    assert_eq!(session_hook(&w, "UserPromptSubmit", "UserPromptSubmit").status.code(), Some(0));
    w.record_ok(S);
    // The request (and so the worker) runs with a PATH that has no tmux, as the
    // tool calls of Codex's login shell do: the worker runs the pinned tmux.
    let r = request(&w, &[("KIJITO_COMPACT_CLAIM_WAIT_MS", "1500"), ("PATH", "/nonexistent-kijito-test")]);
    assert_eq!(r.status.code(), Some(0), "{}", String::from_utf8_lossy(&r.stderr));
    stop(&w);
    wait_for("the second /compact", 10, || typed(&p.typed) == "/compact\r/compact\r");
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
    // SAFETY: plain kill(2) of the test's own `cat` child of the pane.
    assert_eq!(unsafe { libc::kill(p.host_pid as i32, libc::SIGTERM) }, 0);
    let pid = p.host_pid;
    wait_for("the host to exit", 10, || {
        !Path::new(&format!("/proc/{pid}")).exists()
            || std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| s.contains(") Z "))
    });
    let r = request(&w, &[]);
    assert_eq!(failure(&r), "kijito_compact_failed:no_safe_trigger", "{}", String::from_utf8_lossy(&r.stderr));
    assert_eq!(typed(&p.typed), "/compact\r/compact\r");

    // The flight recorder (docs/protocol.md §13): each request and each of
    // its later states, in order, in a chain that verifies.
    let steps: Vec<(String, String)> = w
        .journal(S)
        .iter()
        .filter(|v| v["kind"] == "compaction_requested" || v["kind"] == "compaction_triggered")
        .map(|v| (v["kind"].as_str().unwrap().to_owned(), v["state"].as_str().unwrap().to_owned()))
        .collect();
    let want = [
        ("compaction_requested", "pending"),
        ("compaction_triggered", "sent"),
        ("compaction_triggered", "compacted"),
        ("compaction_requested", "pending"),
        ("compaction_triggered", "sent"),
        ("compaction_triggered", "timed_out"),
    ];
    assert!(steps.len() >= want.len(), "{steps:?}");
    assert_eq!(steps[..want.len()].iter().map(|(k, s)| (k.as_str(), s.as_str())).collect::<Vec<_>>(), want, "{steps:?}");
}

/// The host dies after `/compact` was sent and PreCompact ran (no claim):
/// that request's worker still waits for its claim when the restarted
/// session records a new pass and requests again. The new request's worker
/// waits for the old one to leave (docs/protocol.md §9.3, "A killed
/// worker") and types `/compact` after the turn; it never leaves the new
/// request pending.
#[test]
fn a_new_request_while_an_earlier_requests_worker_waits_for_its_claim_is_typed() {
    let Some((w, p)) = stand_in(Shape::ShellChild) else { return };
    assert_eq!(session_hook(&w, "UserPromptSubmit", "UserPromptSubmit").status.code(), Some(0));
    w.record_ok(S);
    let r = request(&w, &[("KIJITO_COMPACT_CLAIM_WAIT_MS", "60000")]);
    assert_eq!(r.status.code(), Some(0), "{}", String::from_utf8_lossy(&r.stderr));
    stop(&w);
    wait_for("/compact in the pane", 10, || typed(&p.typed) == "/compact\r");
    // the host runs PreCompact and dies before PostCompact: no claim
    assert_eq!(hook(&w, &PRECOMPACT, &[], "PreCompact(manual, no args)").status.code(), Some(0));
    assert_eq!(status(&w)["state"], "sent");

    // the next cycle: a new turn, a new pass, a new request
    assert_eq!(session_hook(&w, "UserPromptSubmit", "UserPromptSubmit").status.code(), Some(0));
    w.record_ok(S);
    let r = request(&w, &[]);
    assert_eq!(r.status.code(), Some(0), "{}", String::from_utf8_lossy(&r.stderr));
    stop(&w);
    wait_for("the new request's /compact", 15, || typed(&p.typed) == "/compact\r/compact\r");
    assert_eq!(status(&w)["state"], "sent");
}

/// The pane is killed, or respawned with another process (`respawn-pane
/// -k`), after the request: the worker types nothing and says why.
#[test]
fn a_gone_or_respawned_pane_gets_no_keystroke_in_either_shape() {
    for shape in SHAPES {
        // gone
        let Some((w, p)) = stand_in(shape) else { return };
        request_in_turn(&w, &[]);
        tmux(&p.sock, &["kill-pane", "-t", "%0"]);
        stop(&w);
        let st = final_status(&w);
        assert_eq!((st["state"].as_str(), st["code"].as_str()), (Some("failed"), Some("pane_gone")), "{shape:?}: {st}");
        assert_eq!(typed(&p.typed), "", "{shape:?}");
        assert_eq!(failure(&request(&w, &[])), "kijito_compact_failed:no_safe_trigger", "{shape:?}");
        drop(p);

        // respawned: same pane id, a new process (also raw `cat`)
        let Some((w, p)) = stand_in(shape) else { return };
        request_in_turn(&w, &[]);
        let other = w.path("typed-respawned.txt");
        let cmd = format!("stty raw -echo; exec cat > {}", other.display());
        tmux(&p.sock, &["respawn-pane", "-k", "-t", "%0", &cmd]);
        wait_for("the respawned process", 10, || other.exists());
        let new_pid: u64 = tmux(&p.sock, &["display-message", "-p", "-t", "%0", "#{pane_pid}"]).parse().unwrap();
        assert_ne!(new_pid, p.pane_pid);
        stop(&w);
        let st = final_status(&w);
        assert_eq!((st["state"].as_str(), st["code"].as_str()), (Some("failed"), Some("pane_process_changed")), "{shape:?}: {st}");
        assert_eq!((typed(&p.typed), typed(&other)), (String::new(), String::new()), "{shape:?}: nothing typed into either");
    }
}

/// The kill switch appears after `/compact` was typed and before its Enter
/// (the worker is held there by the test seam): no Enter, `failed:kill_switch`
/// with `compact_left_in_composer`.
#[test]
fn the_kill_switch_between_the_keystrokes_stops_the_enter() {
    for shape in SHAPES {
        let Some((w, p)) = stand_in(shape) else { return };
        let (k, v) = p.hold_env();
        request_in_turn(&w, &[(k, &v)]);
        p.release(1);
        stop(&w);
        wait_for("/compact in the pane", 10, || typed(&p.typed) == "/compact");
        std::fs::write(w.data.join("compact-disabled"), b"").unwrap();
        p.release(2);
        let st = final_status(&w);
        assert_eq!(
            (st["state"].as_str(), st["code"].as_str(), st["reason"].as_str()),
            (Some("failed"), Some("kill_switch"), Some("compact_left_in_composer")),
            "{shape:?}: {st}"
        );
        assert_eq!(typed(&p.typed), "/compact", "{shape:?}: no Enter");
    }
}

/// A tmux client attached through a pseudo-terminal, as a user's terminal
/// is; bytes written to it are the user's keys.
struct Client {
    master: std::fs::File,
    child: std::process::Child,
}

impl Drop for Client {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn attach(sock: &Path, session: &str) -> Client {
    use std::os::fd::FromRawFd;
    use std::os::unix::process::CommandExt;
    // SAFETY: posix_openpt/grantpt/unlockpt/ptsname_r on a fresh fd; the
    // buffer is large enough and NUL-terminated by ptsname_r on success.
    let (master, slave_path) = unsafe {
        let fd = libc::posix_openpt(libc::O_RDWR | libc::O_NOCTTY);
        assert!(fd >= 0);
        assert_eq!(libc::grantpt(fd), 0);
        assert_eq!(libc::unlockpt(fd), 0);
        let mut buf = [0 as libc::c_char; 128];
        assert_eq!(libc::ptsname_r(fd, buf.as_mut_ptr(), buf.len()), 0);
        let ws = libc::winsize { ws_row: 30, ws_col: 120, ws_xpixel: 0, ws_ypixel: 0 };
        assert_eq!(libc::ioctl(fd, libc::TIOCSWINSZ, &ws), 0);
        (std::fs::File::from_raw_fd(fd), std::ffi::CStr::from_ptr(buf.as_ptr()).to_str().unwrap().to_owned())
    };
    let slave = std::fs::OpenOptions::new().read(true).write(true).open(&slave_path).unwrap();
    let mut c = Command::new("tmux");
    c.arg("-S").arg(sock).args(["attach", "-t", session]).env("TERM", "xterm").env_remove("TMUX").env_remove("TMUX_PANE");
    c.stdin(slave.try_clone().unwrap()).stdout(slave.try_clone().unwrap()).stderr(slave);
    // SAFETY: setsid and ioctl(TIOCSCTTY) are async-signal-safe; they make
    // the pty the client's controlling terminal.
    unsafe {
        c.pre_exec(|| {
            if libc::setsid() < 0 || libc::ioctl(0, libc::TIOCSCTTY, 0) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let child = c.spawn().unwrap();
    // Drain the client's output so it never blocks on a full pty.
    let mut reader = master.try_clone().unwrap();
    std::thread::spawn(move || {
        use std::io::Read;
        let mut buf = [0u8; 4096];
        while matches!(reader.read(&mut buf), Ok(n) if n > 0) {}
    });
    wait_for("the client to attach", 10, || !tmux(sock, &["list-clients", "-t", session, "-F", "#{client_activity}"]).is_empty());
    Client { master, child }
}

fn now_s() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs()
}

/// A user attached to the pane's session: a quiet client does not stop the
/// compaction; keys typed after the Stop do: nothing is sent, the request
/// stays pending with `user_typed`, and the kill switch later ends it with
/// the keys still alone in the composer.
#[test]
fn keys_from_an_attached_client_after_the_stop_keep_the_request_waiting() {
    for shape in SHAPES {
        let Some((w, p)) = stand_in(shape) else { return };
        let mut client = attach(&p.sock, "agent");
        // The attach counts as activity: let the clock pass its second, so
        // the turns below start later (tmux keeps whole seconds).
        let attached = now_s();
        wait_for("the next second", 3, || now_s() > attached);

        // A quiet attached client: compacted as usual.
        request_in_turn(&w, &[]);
        stop(&w);
        wait_for("/compact and Enter", 10, || typed(&p.typed) == "/compact\r");
        host_compacts(&w);
        assert_eq!(final_status(&w)["state"], "compacted", "{shape:?}");
        std::fs::remove_file(w.qa().join(format!("compaction-reentry.{S}.json"))).ok();

        // The next turn: the user types after its Stop.
        let (k, v) = p.hold_env();
        request_in_turn(&w, &[(k, &v)]);
        stop(&w);
        use std::io::Write;
        client.master.write_all(b"fix the bu").unwrap();
        wait_for("the keys in the pane", 10, || typed(&p.typed) == "/compact\rfix the bu");
        p.release(1);
        p.release(2);
        wait_for("user_typed", 10, || status(&w)["reason"] == "user_typed");
        assert_eq!(status(&w)["state"], "pending", "{shape:?}");
        // The worker waits for a later Stop; the kill switch ends it.
        std::fs::write(w.data.join("compact-disabled"), b"").unwrap();
        let st = final_status(&w);
        assert_eq!(
            (st["state"].as_str(), st["code"].as_str(), st["reason"].as_str()),
            (Some("failed"), Some("kill_switch"), Some("user_typed")),
            "{shape:?}: {st}"
        );
        assert_eq!(typed(&p.typed), "/compact\rfix the bu", "{shape:?}: nothing typed into the user's text");
    }
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
    let adapter = [("KIJITO_COMPACT_ADAPTER_ID", "0123456789abcdef0123456789abcdef"), ("KIJITO_COMPACT_SOCKET", "/tmp/x.sock")];
    let mut stdin: Value = serde_json::from_slice(&w.hook_stdin("claude", "SessionStart(source=startup)", S)).unwrap();
    stdin["agent_id"] = "agent-1".into();
    let out = run_hook(&w, &SESSION_HOOK, &["--expect", "SessionStart"], stdin.to_string().as_bytes(), &adapter);
    assert_eq!(out.status.code(), Some(0));
    assert!(!w.qa().join(format!("compact-pin.{S}.json")).exists(), "subagents are never pinned");
    // The adapter's variables pin the session to it; request only records.
    let stdin = w.hook_stdin("claude", "SessionStart(source=startup)", S);
    assert_eq!(run_hook(&w, &SESSION_HOOK, &["--expect", "SessionStart"], &stdin, &adapter).status.code(), Some(0));
    let r = request(&w, &[]);
    assert_eq!(r.status.code(), Some(0), "{}", String::from_utf8_lossy(&r.stderr));
    let line: Value = serde_json::from_slice(&r.stdout).unwrap();
    assert_eq!(line["via"], "codex-app-server");
    assert_eq!(status(&w)["state"], "pending");
}

#[test]
fn protocol_section_9_examples_are_byte_exact() {
    use kijito_compact::trigger::{requested_line, Pin, Request, Turn};
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
            let tail: Vec<(String, Value)> =
                ["summaryCarried", "summaryCheck", "type"].iter().map(|k| (k.to_string(), o.shift_remove(*k).unwrap())).collect();
            let mut again = Request::parse(Value::Object(o).to_string().as_bytes()).unwrap().to_value();
            again.as_object_mut().unwrap().extend(tail);
            again.to_string()
        } else {
            requests += 1;
            Request::parse(line.as_bytes()).unwrap().to_value().to_string()
        };
        assert_eq!(again, line);
    }
    assert_eq!((pins, turns, requests, lines), (2, 1, 6, 1));
}

/// The turn record that the worker waits on: UserPromptSubmit writes
/// `running`, Stop writes `ended`; a subagent's hooks (its stdin carries
/// `agent_id` or `agent_type`) never touch the session's turn record.
#[test]
fn turn_records_follow_the_session_and_ignore_subagents() {
    let w = World::new();
    let turn = || -> Option<Value> {
        std::fs::read(w.qa().join(format!("compact-turn.{S}.json"))).ok().map(|b| serde_json::from_slice(&b).unwrap())
    };
    let run = |event: &str, agent: Option<(&str, &str)>| {
        let mut stdin: Value = serde_json::from_slice(&w.hook_stdin("claude", event, S)).unwrap();
        if let Some((k, v)) = agent {
            stdin[k] = v.into();
        }
        assert_eq!(run_hook(&w, &SESSION_HOOK, &["--expect", event], stdin.to_string().as_bytes(), &[]).status.code(), Some(0));
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
