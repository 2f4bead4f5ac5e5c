//! Consent mode host (docs/protocol.md §8a step 7a), through the
//! real `pretool-hook` and `memory-latch`: on Claude Code's TUI (the hook's
//! parent, past a `sh -c`, has a terminal on fd 0 and
//! `CLAUDE_CODE_ENTRYPOINT=cli`) an irreversible call below high risk is put
//! to the user in the host's own dialog (`permissionDecision: "ask"`), and
//! the PostToolUse / PostToolUseFailure event of that call writes one
//! `host_consent` latch entry with its action hash. Everything else
//! (headless, Codex, high risk, no terminal) keeps the token flow; a post
//! event nobody was asked about, for another call, or too late records
//! nothing; the agent cannot run the record command.

#![allow(clippy::unwrap_used)]

use crate::support;

use serde_json::{json, Value};
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use support::latch::Env;

static PRETOOL: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| support::bin("pretool-hook"));

/// The host stand-in: reads the hook's stdin, puts a new pseudo-terminal
/// on its own fd 0 (as Claude Code's TUI has), runs argv[1:] (directly, or
/// through `sh -c` when KQA_VIA_SH is set, as the host runs a hook
/// command) with that stdin, and passes its stdout, stderr and status on.
pub(crate) const TUI_PARENT: &str = r#"
import os, subprocess, sys
data = sys.stdin.buffer.read()
m, s = os.openpty()
os.dup2(s, 0)
argv = sys.argv[1:]
if os.environ.get("KQA_VIA_SH"):
    argv = ["/bin/sh", "-c", '"$0" "$@"; r=$?; exit $r'] + argv
r = subprocess.run(argv, input=data, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=30)
sys.stdout.buffer.write(r.stdout)
sys.stderr.buffer.write(r.stderr)
sys.exit(r.returncode)
"#;

/// A latch world whose user chose consent mode host.
fn host_world() -> Env {
    let mut e = support::latch::env();
    let cfg = e.w.dir().join("consent.json");
    fs::write(&cfg, json!({"schema": "memory-latch.consent/v1", "mode": "host"}).to_string()).unwrap();
    fs::set_permissions(&cfg, fs::Permissions::from_mode(0o600)).unwrap();
    e.env.push(("MEMORY_LATCH_CONSENT_FILE", cfg));
    e.ok(&["init", "--objective", "ship host consent"]);
    e
}

pub(crate) fn stdin_of(e: &Env, event: &str, command: &str, id: &str) -> Value {
    let mut v = json!({
        "session_id": "s1",
        "transcript_path": e.w.transcript.to_str().unwrap(),
        "cwd": e.ws.to_str().unwrap(),
        "hook_event_name": event,
        "permission_mode": "default",
        "tool_name": "Bash",
        "tool_input": {"command": command, "description": "x"},
        "tool_use_id": id,
    });
    if event != "PreToolUse" {
        v["tool_response"] = json!({"stdout": "", "stderr": "", "interrupted": false});
    }
    v
}

/// How the hook is started.
#[derive(Clone, Copy, Debug)]
enum Parent {
    /// The TUI stand-in, the hook run directly or through `sh -c`.
    Tui { via_sh: bool },
    /// A parent without a terminal (the harness's pipes).
    Pipes,
}

/// Run pretool-hook for `event` on `host` with CLAUDE_CODE_ENTRYPOINT
/// `entry`: its stdout as JSON (`Null` when it printed nothing).
fn hook(e: &Env, parent: Parent, host: &str, entry: Option<&str>, stdin: &Value) -> Value {
    let event = stdin["hook_event_name"].as_str().unwrap();
    let hook_args = ["--host", host, "--expect", event, "--data-dir", &e.w.data_arg()];
    let out = match parent {
        Parent::Pipes => {
            let mut c = e.command(&PRETOOL);
            c.args(hook_args);
            if let Some(v) = entry {
                c.env("CLAUDE_CODE_ENTRYPOINT", v);
            }
            run(c, stdin)
        }
        Parent::Tui { via_sh } => {
            let mut c = e.command("python3");
            c.arg("-c").arg(TUI_PARENT).arg(&*PRETOOL).args(hook_args);
            if let Some(v) = entry {
                c.env("CLAUDE_CODE_ENTRYPOINT", v);
            }
            if via_sh {
                c.env("KQA_VIA_SH", "1");
            }
            run(c, stdin)
        }
    };
    if event == "PreToolUse" && host == "codex" {
        // Codex's own output schema (shared/host-schemas): never an ask.
        support::gate::assert_schema_valid("pre-tool-use", &out);
    }
    if out.iter().all(u8::is_ascii_whitespace) {
        Value::Null
    } else {
        serde_json::from_slice(&out).unwrap()
    }
}

fn run(mut c: std::process::Command, stdin: &Value) -> Vec<u8> {
    let mut child = c.spawn().unwrap();
    {
        use std::io::Write;
        child.stdin.take().unwrap().write_all(stdin.to_string().as_bytes()).unwrap();
    }
    let out = support::gate::wait_bounded(child, 60);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    out.stdout
}

fn decision(v: &Value) -> (&str, &str) {
    let o = &v["hookSpecificOutput"];
    (o["permissionDecision"].as_str().unwrap_or(""), o["permissionDecisionReason"].as_str().unwrap_or(""))
}

fn asked_records(e: &Env) -> Vec<PathBuf> {
    let dir = e.w.data.join("actions");
    let mut v: Vec<PathBuf> = fs::read_dir(&dir)
        .map(|r| r.flatten().map(|d| d.path()).filter(|p| p.file_name().unwrap().to_str().unwrap().starts_with("asked-")).collect())
        .unwrap_or_default();
    v.sort();
    v
}

fn head(e: &Env) -> Value {
    e.status()["head"].clone()
}

#[test]
fn the_tui_asks_in_the_hosts_dialog_and_the_post_event_records_the_call_once() {
    for (via_sh, post) in [(false, "PostToolUse"), (true, "PostToolUse"), (true, "PostToolUseFailure")] {
        let e = host_world();
        let before = head(&e);
        let pre = stdin_of(&e, "PreToolUse", "rm -rf build", "toolu_01A");
        let v = hook(&e, Parent::Tui { via_sh }, "claude", Some("cli"), &pre);
        let (d, reason) = decision(&v);
        assert_eq!(d, "ask", "{via_sh}: {v}");
        assert!(
            reason.starts_with("kijito-qa policy: asks the user (policy_host_consent): irreversible action (delete;")
                && reason.contains("medium risk")
                && reason.contains("Bash `rm -rf build`"),
            "{reason}"
        );
        // Asking wrote nothing to the manifest; the asked record is owner-only.
        assert_eq!(head(&e)["entry_seq"], before["entry_seq"]);
        let recs = asked_records(&e);
        assert_eq!(recs.len(), 1, "{recs:?}");
        assert_eq!(fs::metadata(&recs[0]).unwrap().permissions().mode() & 0o777, 0o600);
        // The user said Yes; the host ran the call and sends the post event.
        let out = hook(&e, Parent::Pipes, "claude", Some("cli"), &stdin_of(&e, post, "rm -rf build", "toolu_01A"));
        assert_eq!(out, Value::Null, "{post}: the record is silent");
        let h = head(&e);
        assert_eq!(h["event"], "host_consent", "{h}");
        assert_eq!(h["entry_seq"].as_u64(), before["entry_seq"].as_u64().map(|s| s + 1));
        assert_eq!(h["consent_state"], before["consent_state"], "state-neutral");
        let details = fs::read_to_string(e.ws.join(".memory-latch/_manifest.md")).unwrap();
        let hash = kijito_policy::action_hash("Bash", &json!({"command": "rm -rf build", "description": "x"}));
        let outcome = if post == "PostToolUse" { "ran" } else { "failed" };
        assert!(
            details.contains(&format!(
                "tool call {outcome} after the user's Yes in the host's dialog (consent mode host): {hash}, tool_use_id toolu_01A"
            )),
            "{details}"
        );
        assert!(asked_records(&e).is_empty(), "the asked record is used once");
        // The same post event again records nothing more.
        hook(&e, Parent::Pipes, "claude", Some("cli"), &stdin_of(&e, post, "rm -rf build", "toolu_01A"));
        assert_eq!(head(&e)["entry_seq"], h["entry_seq"]);
        // The manifest still verifies.
        e.ok(&["verify"]);
    }
}

#[test]
fn headless_codex_no_terminal_and_high_risk_keep_the_token_flow() {
    let e = host_world();
    let rm = stdin_of(&e, "PreToolUse", "rm -rf build", "toolu_02A");
    let cases: [(Parent, &str, Option<&str>, &str); 5] = [
        (Parent::Tui { via_sh: true }, "claude", Some("sdk-cli"), "cannot ask the user itself"),
        (Parent::Tui { via_sh: true }, "claude", None, "cannot ask the user itself"),
        (Parent::Pipes, "claude", Some("cli"), "cannot ask the user itself"),
        // never an ask to Codex: it fails the hook and runs the call
        (Parent::Tui { via_sh: true }, "codex", Some("cli"), "cannot ask the user itself"),
        (Parent::Tui { via_sh: false }, "codex", Some("cli"), "cannot ask the user itself"),
    ];
    for (parent, host, entry, note) in cases {
        let v = hook(&e, parent, host, entry, &rm);
        let (d, reason) = decision(&v);
        assert_eq!(d, "deny", "{parent:?} {host} {entry:?}: {v}");
        assert!(reason.contains("(policy_consent_required)") && reason.contains("memory-latch consent request"), "{reason}");
        assert!(reason.contains(note), "{reason}");
    }
    // A high-risk call on the TUI: the user's token, twice.
    let push = stdin_of(&e, "PreToolUse", "git push --force origin main", "toolu_02B");
    let v = hook(&e, Parent::Tui { via_sh: true }, "claude", Some("cli"), &push);
    let (d, reason) = decision(&v);
    assert_eq!(d, "deny", "{v}");
    assert!(reason.contains("--risk high") && reason.contains("a high-risk call still needs the user's token, twice"), "{reason}");
    assert!(asked_records(&e).is_empty(), "nothing was asked");
    // In token mode the TUI is never asked either.
    let t = support::latch::env();
    t.ok(&["init", "--objective", "token mode"]);
    let v = hook(&t, Parent::Tui { via_sh: true }, "claude", Some("cli"), &stdin_of(&t, "PreToolUse", "rm -rf build", "toolu_02C"));
    let (d, reason) = decision(&v);
    assert_eq!(d, "deny", "{v}");
    assert!(!reason.contains("Consent mode host"), "{reason}");
}

#[test]
fn a_post_event_nobody_was_asked_about_for_another_call_or_too_late_records_nothing() {
    let e = host_world();
    let before = head(&e);
    // No ask before it (the token flow, or a read): nothing, silently.
    assert_eq!(hook(&e, Parent::Pipes, "claude", Some("cli"), &stdin_of(&e, "PostToolUse", "rm -rf build", "toolu_03A")), Value::Null);
    assert_eq!(head(&e)["entry_seq"], before["entry_seq"]);
    // Asked about one call; the post event with that id carries another.
    let pre = stdin_of(&e, "PreToolUse", "rm -rf build", "toolu_03B");
    assert_eq!(decision(&hook(&e, Parent::Tui { via_sh: true }, "claude", Some("cli"), &pre)).0, "ask");
    let v = hook(&e, Parent::Pipes, "claude", Some("cli"), &stdin_of(&e, "PostToolUse", "rm -rf dist", "toolu_03B"));
    assert!(v["systemMessage"].as_str().unwrap().contains("not the call the user was asked about"), "{v}");
    assert_eq!(head(&e)["entry_seq"], before["entry_seq"]);
    assert!(asked_records(&e).is_empty());
    // Another session's post event with the same tool_use_id finds no record.
    assert_eq!(decision(&hook(&e, Parent::Tui { via_sh: true }, "claude", Some("cli"), &pre)).0, "ask");
    let mut other = stdin_of(&e, "PostToolUse", "rm -rf build", "toolu_03B");
    other["session_id"] = json!("s2");
    assert_eq!(hook(&e, Parent::Pipes, "claude", Some("cli"), &other), Value::Null);
    assert_eq!(head(&e)["entry_seq"], before["entry_seq"]);
    // An asked record older than its hour (the user answered No long ago).
    let rec = asked_records(&e).pop().unwrap();
    let mut r: Value = serde_json::from_slice(&fs::read(&rec).unwrap()).unwrap();
    r["atMs"] = json!(r["atMs"].as_i64().unwrap() - 2 * 3600 * 1000);
    fs::write(&rec, r.to_string()).unwrap();
    assert_eq!(hook(&e, Parent::Pipes, "claude", Some("cli"), &stdin_of(&e, "PostToolUse", "rm -rf build", "toolu_03B")), Value::Null);
    assert_eq!(head(&e)["entry_seq"], before["entry_seq"]);
    assert!(asked_records(&e).is_empty());
    // A record another user could have written (group-writable) is refused.
    assert_eq!(decision(&hook(&e, Parent::Tui { via_sh: true }, "claude", Some("cli"), &pre)).0, "ask");
    let rec = asked_records(&e).pop().unwrap();
    fs::set_permissions(&rec, fs::Permissions::from_mode(0o660)).unwrap();
    let v = hook(&e, Parent::Pipes, "claude", Some("cli"), &stdin_of(&e, "PostToolUse", "rm -rf build", "toolu_03B"));
    assert!(v["systemMessage"].as_str().unwrap().contains("could not record it"), "{v}");
    assert_eq!(head(&e)["entry_seq"], before["entry_seq"]);
}

#[test]
fn the_agent_cannot_run_the_record_command() {
    let dir = kijito_protocol::command::HelperDir::new(&support::gate::helper_dir()).unwrap();
    let bin = support::bin("memory-latch");
    for line in [
        format!("{bin} tool-record --workspace /w --action-file /a --tool-use-id toolu_1 --outcome ran --json"),
        format!("cd /w && {bin} tool-record --workspace /w --action-file /a --tool-use-id toolu_1 --outcome ran"),
    ] {
        let v = kijito_protocol::command::guard_line(&line, Some(&dir));
        assert!(matches!(v, kijito_protocol::command::Verdict::Deny(_)), "{line}: {v:?}");
    }
    // And the bad arguments it refuses when run at all.
    let e = host_world();
    let action = e.file("a.json", "{\"tool_name\":\"Bash\",\"tool_input\":{\"command\":\"rm -rf build\"}}\n");
    for (id, outcome) in [("a/b", "ran"), ("toolu_1", "maybe")] {
        let o = e.latch(&["tool-record", "--action-file", &action, "--tool-use-id", id, "--outcome", outcome]);
        assert_eq!(o.status.code(), Some(2), "a usage error");
        assert!(String::from_utf8_lossy(&o.stderr).starts_with("kijito_memory_latch_failed:host_outcome_invalid\n"));
    }
    assert_eq!(e.status()["head"]["event"], "init", "nothing recorded");
}

#[test]
fn the_agent_cannot_play_the_post_event_itself() {
    // An agent that wants a host_consent entry for a call nobody allowed
    // needs a post event for an id the host chose: it can write an asked
    // record, but only a run of the hook by hand makes the event, and that
    // call is denied before it runs (in every form the agent can type).
    let e = host_world();
    let before = head(&e);
    let post = stdin_of(&e, "PostToolUse", "rm -rf build", "toolu_04A");
    let hook = format!("{}/pretool-hook", support::gate::helper_dir().display());
    for line in [
        format!("echo '{post}' | {hook} --host claude --expect PostToolUse"),
        format!("cd /tmp && {hook} --host claude --expect PostToolUseFailure < post.json"),
        format!("bash -c '{hook} --host claude --expect PostToolUse' < post.json"),
    ] {
        let v = hook_call(&e, &line);
        let (d, reason) = decision(&v);
        assert_eq!(d, "deny", "{line}: {v}");
        assert!(reason.contains("tripwire_hook_binary") || reason.contains("command guard: denied"), "{line}: {reason}");
    }
    assert_eq!(head(&e)["entry_seq"], before["entry_seq"], "nothing recorded");
}

/// The PreToolUse answer to the agent's Bash `command` (Claude Code, no terminal).
fn hook_call(e: &Env, command: &str) -> Value {
    let mut pre = stdin_of(e, "PreToolUse", "", "toolu_04B");
    pre["tool_input"] = json!({"command": command, "description": "x"});
    hook(e, Parent::Pipes, "claude", Some("cli"), &pre)
}
