//! The hook binaries print exactly one answer and exit 0: the work's answer,
//! or the watchdog's when the work cannot finish (a stdin that never ends).

#![allow(clippy::unwrap_used)]

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

struct Dir(tempfile::TempDir);

fn dirs() -> Dir {
    let d = tempfile::tempdir().unwrap();
    std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
    std::fs::create_dir(d.path().join("data")).unwrap();
    std::fs::set_permissions(d.path().join("data"), std::fs::Permissions::from_mode(0o700)).unwrap();
    Dir(d)
}

impl Dir {
    fn run(&self, bin: &str, args: &[&str], stdin: &[u8]) -> (Option<i32>, String) {
        let data = self.0.path().join("data");
        let mut child = Command::new(bin)
            .args(args)
            .arg("--data-dir")
            .arg(&data)
            .env("HOME", self.0.path())
            .env_remove("XDG_CONFIG_HOME")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(stdin).unwrap();
        let out = child.wait_with_output().unwrap();
        (out.status.code(), String::from_utf8(out.stdout).unwrap())
    }
}

const PRE: &str = r#"{"hook_event_name":"PreCompact","session_id":"sess-1","trigger":"auto"}"#;

#[test]
fn each_binary_prints_its_one_answer() {
    let d = dirs();
    let (code, out) = d.run(env!("CARGO_BIN_EXE_precompact"), &["--host", "codex"], PRE.as_bytes());
    assert_eq!(code, Some(0));
    assert_eq!(out, "{\"continue\":true,\"systemMessage\":\"kijito-qa: compaction UNATTESTED (pass_missing); compaction proceeds\"}\n");
    let (code, out) = d.run(env!("CARGO_BIN_EXE_precompact"), &["--host", "claude"], PRE.as_bytes());
    assert_eq!((code, out.as_str()), (Some(0), ""));
    let post = r#"{"hook_event_name":"PostCompact","session_id":"sess-1","trigger":"auto"}"#;
    let (code, out) = d.run(env!("CARGO_BIN_EXE_postcompact"), &["--host", "codex"], post.as_bytes());
    assert_eq!(code, Some(0));
    assert_eq!(out, "{\"continue\":true,\"systemMessage\":\"kijito-qa: compaction claimed UNATTESTED (pass_missing)\"}\n");
    let (_, out) = d.run(env!("CARGO_BIN_EXE_postcompact"), &["--host", "codex"], post.as_bytes());
    assert_eq!(out, "{\"continue\":true}\n", "claimed once");
    let tool = r#"{"hook_event_name":"PreToolUse","session_id":"sess-1","tool_name":"Bash","tool_input":{"command":"qa-gate status"}}"#;
    let (code, out) = d.run(env!("CARGO_BIN_EXE_session-hook"), &["--host", "claude", "--expect", "PreToolUse"], tool.as_bytes());
    assert_eq!(code, Some(0));
    assert_eq!(out.lines().count(), 1, "{out}");
    assert!(out.contains(r#""permissionDecision":"deny""#), "{out}");
    let stop = r#"{"hook_event_name":"Stop","session_id":"sess-1"}"#;
    let (code, out) = d.run(env!("CARGO_BIN_EXE_session-hook"), &["--host", "claude", "--expect", "Stop"], stop.as_bytes());
    assert_eq!((code, out.as_str()), (Some(0), ""));
}

/// A stdin that never ends: the watchdog answers in time, once, and the
/// process exits 0.
#[test]
fn the_watchdog_answers_when_the_work_cannot_finish() {
    let d = dirs();
    let cases: [(&str, &[&str], &str, Duration); 2] = [
        (
            env!("CARGO_BIN_EXE_precompact"),
            &["--host", "codex"],
            "{\"continue\":true,\"systemMessage\":\"kijito-qa: PreCompact did not finish in time; compaction proceeds UNATTESTED\"}\n",
            Duration::from_millis(1500),
        ),
        (env!("CARGO_BIN_EXE_session-hook"), &["--host", "codex", "--expect", "PreToolUse"], "", Duration::from_millis(3500)),
    ];
    for (bin, args, expected, watchdog) in cases {
        // The watchdog counts from the process's start, so the clock starts
        // before the spawn: a busy machine can only make `took` longer.
        let start = Instant::now();
        let mut child = Command::new(bin)
            .args(args)
            .arg("--data-dir")
            .arg(d.0.path().join("data"))
            .env("HOME", d.0.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(b"{\"hook_event_name\":").unwrap();
        let out = child.wait_with_output().unwrap();
        let took = start.elapsed();
        drop(stdin);
        assert_eq!(out.status.code(), Some(0));
        let text = String::from_utf8(out.stdout).unwrap();
        if expected.is_empty() {
            assert!(text.contains(r#""permissionDecision":"deny""#) && text.contains("hook_timeout"), "{text}");
            assert_eq!(text.lines().count(), 1, "{text}");
        } else {
            assert_eq!(text, expected);
        }
        assert!(took >= watchdog, "{bin} answered after {took:?}, before its watchdog");
        assert!(took < watchdog + Duration::from_secs(10), "{bin} took {took:?}");
    }
}

/// Claude Code's plugin options fill the pointer the config lacks; Codex
/// hooks never read them.
#[test]
fn plugin_options_count_for_claude_only() {
    let d = dirs();
    let start = r#"{"hook_event_name":"SessionStart","session_id":"sess-1","source":"clear"}"#;
    let run = |host: &str| {
        let mut child = Command::new(env!("CARGO_BIN_EXE_session-hook"))
            .args(["--host", host, "--expect", "SessionStart", "--data-dir"])
            .arg(d.0.path().join("data"))
            .env("HOME", d.0.path())
            .env_remove("XDG_CONFIG_HOME")
            .env(kijito_files::config::OPTION_POINTER_ID, "777")
            .env(kijito_files::config::OPTION_LOCK_MESSAGE_ID, "888")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(start.as_bytes()).unwrap();
        String::from_utf8(child.wait_with_output().unwrap().stdout).unwrap()
    };
    let claude = run("claude");
    assert!(claude.contains("Pointer id 777, lock message id 888."), "{claude}");
    let codex = run("codex");
    assert!(codex.contains("No pointer is configured"), "{codex}");
}
