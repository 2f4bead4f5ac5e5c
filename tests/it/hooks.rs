//! The compaction hooks through the real binaries, with stdin shaped like
//! the real host payloads (fixtures/hosts/*/stdin-by-event.json) and every
//! reply validated against the Codex output schemas.
#![allow(clippy::unwrap_used)]

use crate::support;
use support::gate as support_gate;

use serde_json::{json, Value};
use std::fs;
use std::os::unix::fs::PermissionsExt;
use support_gate::*;

const CODEX_S: &str = "01a2295e-6929-7981-9da7-935145fb97be";
const CLAUDE_S: &str = "2208dc6c-1602-4db0-9c33-9125ee25dc44";

fn precompact(w: &World, host: &str, stdin: &[u8]) -> std::process::Output {
    let out = w.run(&PRECOMPACT, &["--host", host, "--data-dir", &w.data_arg()], stdin);
    assert_eq!(out.status.code(), Some(0), "precompact always exits 0");
    if host == "claude" {
        // nothing, or (attested only) the summary request: plain text for the summariser
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.is_empty() || text.starts_with("kijito-qa: end the summary with these five lines"), "Claude PreCompact: {text}");
    } else {
        assert_schema_valid("pre-compact", &out.stdout);
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(v["continue"], true);
        assert!(v["systemMessage"].as_str().unwrap().lines().count() == 1);
    }
    out
}

fn postcompact(w: &World, host: &str, stdin: &[u8]) -> Value {
    let out = w.run(&POSTCOMPACT, &["--host", host, "--data-dir", &w.data_arg()], stdin);
    assert_eq!(out.status.code(), Some(0));
    assert_schema_valid("post-compact", &out.stdout);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["continue"], true);
    assert!(v.get("hookSpecificOutput").is_none());
    v
}

fn session_hook(w: &World, host: &str, expect: &str, stdin: &[u8]) -> Option<String> {
    let out = w.run(&SESSION_HOOK, &["--host", host, "--expect", expect, "--data-dir", &w.data_arg()], stdin);
    assert_eq!(out.status.code(), Some(0));
    assert_schema_valid(schema_of(expect), &out.stdout);
    if !out.stdout.is_empty() && matches!(expect, "SessionStart" | "UserPromptSubmit") {
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(v["hookSpecificOutput"]["hookEventName"], expect);
    }
    if out.stdout.is_empty() {
        None
    } else {
        Some(String::from_utf8(out.stdout).unwrap())
    }
}

/// The exact pointer-snapshot line of an attested re-entry text.
fn snapshot_line(text: &str) -> String {
    text.lines().find(|l| l.contains("/pointer-snapshot ")).unwrap().trim().to_owned()
}

fn assert_attested(text: &str, ready: &Value, w: &World) {
    assert!(text.contains("ATTESTED") && !text.contains("UNATTESTED"), "{text}");
    let pass: Value = serde_json::from_slice(
        &fs::read(w.qa().join(format!("compaction-resume-consumed.{}.json", ready["sessionId"].as_str().unwrap()))).unwrap(),
    )
    .unwrap();
    for k in ["pointerDigest", "snapshotDigest"] {
        assert!(text.contains(pass[k].as_str().unwrap()), "text names the {k}");
    }
    assert!(text.contains(&format!("pointer id {POINTER}")) && text.contains(&format!("lock message id {LOCK}")));
    let line = snapshot_line(text);
    assert!(line.starts_with(&format!("{}/pointer-snapshot ", helper_dir().display())));
    assert!(line.contains(&format!("--expected-pointer-digest {}", pass["pointerDigest"].as_str().unwrap())));
    assert!(line.contains(&format!("--expected-snapshot-digest {}", pass["snapshotDigest"].as_str().unwrap())));
    assert!(line.contains(&format!("--report-file {}/reports/reentry-", w.qa().display())));
    let check = w.run(QA_GATE, &["check-command", &line], b"");
    assert_eq!(check.status.code(), Some(0), "the emitted command passes the grammar: {}", String::from_utf8_lossy(&check.stderr));
    assert!(text.contains("evidence, never instructions"));
}

#[test]
fn codex_order_postcompact_then_session_start_twice_delivers_once() {
    let w = World::new();
    for round in 0..2 {
        let ready = w.record_ok(CODEX_S);
        precompact(&w, "codex", &w.hook_stdin("codex", "app-server:PreCompact:manual", CODEX_S));
        assert!(w.qa().join(format!("compaction-resume.{CODEX_S}.json")).exists());
        let post = postcompact(&w, "codex", &w.hook_stdin("codex", "app-server:PostCompact:manual", CODEX_S));
        assert!(post["systemMessage"].as_str().unwrap().contains("attested"), "round {round}: {post}");
        let post2 = postcompact(&w, "codex", &w.hook_stdin("codex", "app-server:PostCompact:manual", CODEX_S));
        assert_eq!(post2, json!({"continue": true}), "nothing left to claim");
        let ss = w.hook_stdin("codex", "app-server:SessionStart:compact", CODEX_S);
        let first = session_hook(&w, "codex", "SessionStart", &ss).expect("first SessionStart(compact) delivers");
        assert_attested(&context_of(first.as_bytes()).unwrap(), &ready, &w);
        assert_eq!(session_hook(&w, "codex", "SessionStart", &ss), None, "the duplicate delivers nothing");
        let ups = w.hook_stdin("codex", "app-server:UserPromptSubmit", CODEX_S);
        assert_eq!(session_hook(&w, "codex", "UserPromptSubmit", &ups), None);
    }
}

#[test]
fn claude_order_session_start_then_postcompact_delivers_once() {
    let w = World::new();
    let ready = w.record_ok(CLAUDE_S);
    precompact(&w, "claude", &w.hook_stdin("claude", "PreCompact(manual, no args)", CLAUDE_S));
    let ss = w.hook_stdin("claude", "SessionStart(source=compact)", CLAUDE_S);
    let first = session_hook(&w, "claude", "SessionStart", &ss).expect("SessionStart(compact) claims and delivers");
    assert_attested(&context_of(first.as_bytes()).unwrap(), &ready, &w);
    // Nothing left to claim; the recorded host summary (FAKE-COMPACT-SUMMARY) kept no pointer
    // value, so PostCompact records summaryCarried false and tells the user (tests/it/summary_carried.rs).
    let post = postcompact(&w, "claude", &w.hook_stdin("claude", "PostCompact(manual)", CLAUDE_S));
    assert_eq!(post["systemMessage"], "kijito-qa: the compaction summary lost at least one of the pointer id, lock id and both digests (summaryCarried: false); the re-entry text has them");
    assert_eq!(
        postcompact(&w, "claude", &w.hook_stdin("claude", "PostCompact(manual)", CLAUDE_S)),
        json!({"continue": true}),
        "decided once"
    );
    assert_eq!(session_hook(&w, "claude", "SessionStart", &ss), None);
    assert_eq!(session_hook(&w, "claude", "UserPromptSubmit", &w.hook_stdin("claude", "UserPromptSubmit", CLAUDE_S)), None);
}

#[test]
fn user_prompt_submit_delivers_when_session_start_never_did() {
    let w = World::new();
    let ready = w.record_ok(CLAUDE_S);
    precompact(&w, "claude", &w.hook_stdin("claude", "PreCompact(auto)", CLAUDE_S));
    postcompact(&w, "claude", &w.hook_stdin("claude", "PostCompact(manual)", CLAUDE_S));
    let ups = w.hook_stdin("claude", "UserPromptSubmit", CLAUDE_S);
    let first = session_hook(&w, "claude", "UserPromptSubmit", &ups).expect("delivered on the next prompt");
    assert_attested(&context_of(first.as_bytes()).unwrap(), &ready, &w);
    assert_eq!(session_hook(&w, "claude", "UserPromptSubmit", &ups), None, "exactly once");
}

#[test]
fn unattested_compaction_says_so() {
    let w = World::new();
    precompact(&w, "codex", &w.hook_stdin("codex", "app-server:PreCompact:auto", CODEX_S));
    let attempt: Value = serde_json::from_slice(&fs::read(w.qa().join(format!("compaction-attempt.{CODEX_S}.json"))).unwrap()).unwrap();
    assert_eq!(
        attempt,
        json!({"schemaVersion":1,"sessionId":CODEX_S,"recordedAtMs":attempt["recordedAtMs"],"trigger":"auto","attested":false,"reason":"pass_missing","compactionNonce":null})
    );
    let post = postcompact(&w, "codex", &w.hook_stdin("codex", "app-server:PostCompact:auto", CODEX_S));
    assert!(post["systemMessage"].as_str().unwrap().contains("UNATTESTED"));
    let reentry: Value = serde_json::from_slice(&fs::read(w.qa().join(format!("compaction-reentry.{CODEX_S}.json"))).unwrap()).unwrap();
    let keys: Vec<&str> = reentry.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        [
            "schemaVersion",
            "sessionId",
            "claimedAtMs",
            "attested",
            "reason",
            "pointerId",
            "lockMessageId",
            "pointerDigest",
            "snapshotDigest",
            "compactionNonce",
            "summaryCarried",
            "summaryCheck"
        ]
    );
    assert_eq!(reentry["schemaVersion"], 2);
    assert_eq!((&reentry["summaryCarried"], &reentry["summaryCheck"]), (&Value::Null, &json!("unattested")));
    assert_eq!(reentry["attested"], false);
    assert_eq!(reentry["pointerId"], Value::Null);
    let out = session_hook(&w, "codex", "SessionStart", &w.hook_stdin("codex", "app-server:SessionStart:compact", CODEX_S)).unwrap();
    let text = context_of(out.as_bytes()).unwrap();
    assert!(text.contains("UNATTESTED") && text.contains("pass_missing"), "{text}");
    assert!(text.contains("Do not resume any remembered action automatically"));
}

#[test]
fn replay_eight_postcompact_then_eight_session_start() {
    let w = World::new();
    let ready = w.record_ok(CODEX_S);
    precompact(&w, "codex", &w.hook_stdin("codex", "app-server:PreCompact:manual", CODEX_S));
    let post = w.hook_stdin("codex", "app-server:PostCompact:manual", CODEX_S);
    let children: Vec<_> = (0..8).map(|_| w.spawn(&POSTCOMPACT, &["--host", "codex", "--data-dir", &w.data_arg()], &post)).collect();
    let outs: Vec<_> = children.into_iter().map(|c| wait_bounded(c, 30)).collect();
    let mut claims = 0;
    for o in &outs {
        assert_eq!(o.status.code(), Some(0));
        assert_schema_valid("post-compact", &o.stdout);
        let v: Value = serde_json::from_slice(&o.stdout).unwrap();
        if v.get("systemMessage").is_some() {
            assert!(v["systemMessage"].as_str().unwrap().contains("attested compaction claimed"), "{v}");
            claims += 1;
        }
    }
    assert_eq!(claims, 1, "exactly one claim");
    let ss = w.hook_stdin("codex", "app-server:SessionStart:compact", CODEX_S);
    let children: Vec<_> = (0..8)
        .map(|_| w.spawn(&SESSION_HOOK, &["--host", "codex", "--expect", "SessionStart", "--data-dir", &w.data_arg()], &ss))
        .collect();
    let outs: Vec<_> = children.into_iter().map(|c| wait_bounded(c, 30)).collect();
    let delivered: Vec<_> = outs.iter().filter(|o| !o.stdout.is_empty()).collect();
    assert_eq!(delivered.len(), 1, "exactly one delivery");
    assert_schema_valid("session-start", &delivered[0].stdout);
    assert_attested(&context_of(&delivered[0].stdout).unwrap(), &ready, &w);
}

#[test]
fn eight_concurrent_session_starts_claim_and_deliver_once() {
    // Claude order under concurrency: SessionStart(compact) claims itself.
    let w = World::new();
    w.record_ok(CLAUDE_S);
    precompact(&w, "claude", &w.hook_stdin("claude", "PreCompact(manual, no args)", CLAUDE_S));
    let ss = w.hook_stdin("claude", "SessionStart(source=compact)", CLAUDE_S);
    let children: Vec<_> = (0..8)
        .map(|_| w.spawn(&SESSION_HOOK, &["--host", "claude", "--expect", "SessionStart", "--data-dir", &w.data_arg()], &ss))
        .collect();
    let outs: Vec<_> = children.into_iter().map(|c| wait_bounded(c, 30)).collect();
    let delivered: Vec<_> = outs.iter().filter(|o| !o.stdout.is_empty()).collect();
    assert_eq!(delivered.len(), 1);
    assert!(context_of(&delivered[0].stdout).unwrap().contains("ATTESTED"));
}

#[test]
fn aborted_compaction_never_reuses_the_orphaned_ticket() {
    let w = World::new();
    let pre = w.hook_stdin("claude", "PreCompact(manual, no args)", CLAUDE_S);
    let first = w.record_ok(CLAUDE_S);
    precompact(&w, "claude", &pre);
    let ticket = w.qa().join(format!("compaction-resume.{CLAUDE_S}.json"));
    assert!(ticket.exists());
    // No compaction happened (nothing to summarise), then a new PreCompact.
    precompact(&w, "claude", &pre);
    assert!(!ticket.exists(), "the orphaned ticket is gone");
    let attempt: Value = serde_json::from_slice(&fs::read(w.qa().join(format!("compaction-attempt.{CLAUDE_S}.json"))).unwrap()).unwrap();
    assert_eq!(attempt["attested"], false);
    assert_eq!(attempt["reason"], "pass_missing");
    // With a fresh pass the new attempt is attested, with the new nonce.
    precompact(&w, "claude", &pre);
    let fresh = w.record_ok(CLAUDE_S);
    precompact(&w, "claude", &pre);
    let attempt: Value = serde_json::from_slice(&fs::read(w.qa().join(format!("compaction-attempt.{CLAUDE_S}.json"))).unwrap()).unwrap();
    assert_eq!(attempt["attested"], true);
    assert_eq!(attempt["compactionNonce"], fresh["compactionNonce"]);
    assert_ne!(attempt["compactionNonce"], first["compactionNonce"]);
    let text = session_hook(&w, "claude", "SessionStart", &w.hook_stdin("claude", "SessionStart(source=compact)", CLAUDE_S)).unwrap();
    assert_attested(&context_of(text.as_bytes()).unwrap(), &fresh, &w);
}

#[test]
fn precompact_is_fail_soft() {
    let w = World::new();
    let good = w.hook_stdin("codex", "app-server:PreCompact:manual", CODEX_S);
    let wrong_event = w.hook_stdin("codex", "app-server:PostCompact:manual", CODEX_S);
    let big = vec![b'{'; 2 * 1024 * 1024];
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        ("malformed", b"{\"session_id\":".to_vec(), "hook_stdin_invalid_json"),
        ("empty", Vec::new(), "hook_stdin_empty"),
        ("2 MiB", big, "hook_stdin_too_large"),
        ("wrong event", wrong_event, "hook_event_mismatch"),
    ];
    for (name, stdin, code) in cases {
        for host in ["codex", "claude"] {
            let out = precompact(&w, host, &stdin);
            if host == "codex" {
                let v: Value = serde_json::from_slice(&out.stdout).unwrap();
                assert!(v["systemMessage"].as_str().unwrap().contains(code), "{name}: {v}");
            }
        }
    }
    // data dir that is a symlink
    let real = w.path("real-data");
    fs::create_dir(&real).unwrap();
    fs::set_permissions(&real, fs::Permissions::from_mode(0o700)).unwrap();
    let link = w.path("link-data");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    // data dir that cannot be written: its path runs through a regular file
    let file = w.path("a-file");
    fs::write(&file, "x").unwrap();
    let under_file = file.join("data");
    // data dir group/other-writable
    let open = w.path("open-data");
    fs::create_dir(&open).unwrap();
    fs::set_permissions(&open, fs::Permissions::from_mode(0o777)).unwrap();
    for dir in [&link, &under_file, &open] {
        for host in ["codex", "claude"] {
            let out = w.run(&PRECOMPACT, &["--host", host, "--data-dir", dir.to_str().unwrap()], &good);
            assert_eq!(out.status.code(), Some(0));
            if host == "claude" {
                assert!(out.stdout.is_empty());
            } else {
                assert_schema_valid("pre-compact", &out.stdout);
                let v: Value = serde_json::from_slice(&out.stdout).unwrap();
                assert_eq!(v["continue"], true);
                assert!(v["systemMessage"].as_str().unwrap().contains("data_dir_unusable"), "{v}");
            }
        }
    }
    assert!(fs::read_dir(&real).unwrap().next().is_none(), "nothing written through the symlink");
    // bad argv: still exit 0 and nothing that could block
    let out = w.run(&PRECOMPACT, &["--host", "vim"], &good);
    assert_eq!(out.status.code(), Some(0));
    assert!(out.stdout.is_empty());
}

#[test]
fn precompact_watchdog_answers_when_stdin_never_ends() {
    let w = World::new();
    for host in ["codex", "claude"] {
        // stdin stays open and empty: the work never finishes by itself.
        let mut child = w.command(&PRECOMPACT).args(["--host", host, "--data-dir", &w.data_arg()]).spawn().unwrap();
        let stdin = child.stdin.take().unwrap();
        let out = wait_bounded(child, 20);
        drop(stdin);
        assert_eq!(out.status.code(), Some(0));
        if host == "codex" {
            assert_schema_valid("pre-compact", &out.stdout);
            let v: Value = serde_json::from_slice(&out.stdout).unwrap();
            assert_eq!(v["continue"], true);
            assert!(v["systemMessage"].as_str().unwrap().contains("did not finish in time"));
        } else {
            assert!(out.stdout.is_empty());
        }
    }
}

#[test]
fn postcompact_and_session_hook_fail_soft() {
    let w = World::new();
    for stdin in [&b""[..], b"nonsense", b"{\"hook_event_name\":\"PreCompact\",\"session_id\":\"x\"}"] {
        for host in ["codex", "claude"] {
            let v = postcompact(&w, host, stdin);
            assert!(v["systemMessage"].as_str().unwrap().contains("could not claim (hook_"), "{v}");
            for ev in ["UserPromptSubmit", "Stop"] {
                assert_eq!(session_hook(&w, host, ev, stdin), None);
            }
            // An unreadable tool call is denied, never allowed.
            let deny = session_hook(&w, host, "PreToolUse", stdin).unwrap();
            assert!(deny.contains("\"permissionDecision\":\"deny\"") && deny.contains("could not be read"), "{deny}");
        }
    }
    // A SessionStart(compact) whose state cannot be read never looks attested.
    let ss = w.hook_stdin("codex", "app-server:SessionStart:compact", CODEX_S);
    let file = w.path("f");
    fs::write(&file, "x").unwrap();
    let out = w.run(&SESSION_HOOK, &["--host", "codex", "--expect", "SessionStart", "--data-dir", file.join("d").to_str().unwrap()], &ss);
    assert_schema_valid("session-start", &out.stdout);
    assert!(context_of(&out.stdout).unwrap().contains("UNATTESTED"));
}

#[test]
fn session_start_emits_the_exact_commands() {
    let w = World::new();
    w.write_config(&json!({"pointerId": POINTER, "lockMessageId": LOCK}));
    let dir = helper_dir();
    for (host, key, s) in [("codex", "app-server:SessionStart:startup", CODEX_S), ("claude", "SessionStart(source=resume)", CLAUDE_S)] {
        let out = session_hook(&w, host, "SessionStart", &w.hook_stdin(host, key, s)).unwrap();
        let text = context_of(out.as_bytes()).unwrap();
        assert!(text.contains(&format!("Pointer id {POINTER}, lock message id {LOCK}")));
        let lines: Vec<&str> = text.lines().map(str::trim).filter(|l| l.starts_with(dir.to_str().unwrap())).collect();
        let helpers: Vec<&str> = lines.iter().map(|l| l.split(' ').next().unwrap().rsplit('/').next().unwrap()).collect();
        assert_eq!(helpers, COMMAND_BLOCK);
        assert!(text.contains("kijito_compact_failed:no_safe_trigger, ask the user to run /compact"), "{text}");
        let content = w.path("manifest.json");
        for line in &lines {
            assert!(
                line.contains(&format!("--pointer-id {POINTER}"))
                    || line.contains("invalidate")
                    || line.contains("kijito-compact request")
                    || line.ends_with(&format!("pointer-publish --release-lease --lock-message-id {LOCK}"))
            );
            if line.contains(" record ") || line.contains(" invalidate ") || line.contains(" request ") {
                assert!(line.contains(&format!("--session-id {s}")) && line.contains(&format!("--data-dir {}", w.data.display())));
            }
            let filled = line
                .replace("<EXPECTED_POINTER_DIGEST>", &"a".repeat(64))
                .replace("<POINTER_DIGEST>", &"b".repeat(64))
                .replace("<CONTENT_FILE>", content.to_str().unwrap());
            let check = w.run(QA_GATE, &["check-command", &filled], b"");
            assert_eq!(check.status.code(), Some(0), "{filled}: {}", String::from_utf8_lossy(&check.stderr));
            if filled != *line {
                let raw = w.run(QA_GATE, &["check-command", line], b"");
                assert_eq!(raw.status.code(), Some(1), "a placeholder never passes: {line}");
            }
        }
        assert!(text.contains(&format!("--transcript {}", w.transcript.display())));
        assert!(text.contains("evidence, never instructions"));
    }
    // Fresh report paths each time.
    let a = context_of(session_hook(&w, "codex", "SessionStart", &w.hook_stdin("codex", "exec:SessionStart", CODEX_S)).unwrap().as_bytes())
        .unwrap();
    let b = context_of(session_hook(&w, "codex", "SessionStart", &w.hook_stdin("codex", "exec:SessionStart", CODEX_S)).unwrap().as_bytes())
        .unwrap();
    assert_ne!(snapshot_line(&a), snapshot_line(&b));
}

#[test]
fn session_start_without_pointer_says_never_search() {
    let w = World::new();
    let out = session_hook(&w, "claude", "SessionStart", &w.hook_stdin("claude", "SessionStart(source=startup)", CLAUDE_S)).unwrap();
    let text = context_of(out.as_bytes()).unwrap();
    assert!(text.contains("No pointer is configured"));
    assert!(text.contains("never be discovered by recall, search"));
    assert!(!text.contains("pointer-snapshot --"));
    assert!(text.contains(" invalidate --session-id "));
}

#[test]
fn stop_reminds_only_when_a_pass_waits() {
    let w = World::new();
    for (host, key, s) in [("codex", "app-server:Stop", CODEX_S), ("claude", "Stop", CLAUDE_S)] {
        let stdin = w.hook_stdin(host, key, s);
        assert_eq!(session_hook(&w, host, "Stop", &stdin), None);
        w.record_ok(s);
        let out = session_hook(&w, host, "Stop", &stdin).expect("reminder");
        let v: Value = serde_json::from_str(out.trim()).unwrap();
        assert!(v["systemMessage"].as_str().unwrap().contains("waits for compaction"), "{v}");
        assert!(v.get("decision").is_none(), "never blocks");
        let out = w.run(QA_GATE, &["invalidate", "--session-id", s, "--data-dir", &w.data_arg()], b"");
        assert_eq!(out.status.code(), Some(0));
        assert_eq!(session_hook(&w, host, "Stop", &stdin), None);
    }
}

#[test]
fn pre_tool_use_guard_per_host() {
    let w = World::new();
    let dir = helper_dir();
    let good = format!("{}/qa-gate invalidate --session-id {CODEX_S} --data-dir {}", dir.display(), w.data.display());
    let cases: Vec<(&str, Value, bool)> = vec![
        ("Bash", json!({"command": good.clone()}), false),
        ("Bash", json!({"command": format!("{good}; rm -rf /")}), true),
        ("Bash", json!({"command": "/other/root/bin/pointer-publish --pointer-id 1"}), true),
        ("Bash", json!({"command": "qa-gate record --session-id x"}), true),
        ("Bash", json!({"command": format!("cd /tmp && {good}")}), true),
        ("Bash", json!({"command": "ls -la"}), false),
        ("Bash", json!({"command": "kijito-setup --pointer-id 666 --lock-message-id 666 --force"}), true),
        ("Bash", json!({"command": format!("{}/kijito-setup --create --anchor-file /tmp/a --title T --force", dir.display())}), true),
        ("Bash", json!({"command": "kijito-doctor --offline"}), false),
        ("Bash", json!({"command": "grep qa-gate README.md"}), false),
        ("Bash", json!({"command": ["bash", "-lc", good.clone()]}), false),
        ("Bash", json!({"command": ["bash", "-lc", format!("{good} | tee x")]}), true),
        (
            "shell",
            json!({"command": [format!("{}/qa-gate", dir.display()), "status", "--session-id", CODEX_S, "--data-dir", w.data.to_str().unwrap()]}),
            false,
        ),
        ("shell", json!({"command": [format!("{}/qa-gate", dir.display()), "status --session-id x"]}), true),
        ("Read", json!({"file_path": "/x/bin/qa-gate"}), false),
        ("Write", json!({"file_path": "/tmp/x", "content": "qa-gate record"}), false),
    ];
    for host in ["codex", "claude"] {
        for (tool, input, deny) in &cases {
            let stdin = pre_tool_use_stdin(host, CODEX_S, tool, input.clone());
            let out = session_hook(&w, host, "PreToolUse", &stdin);
            assert_eq!(out.is_some(), *deny, "{host} {tool} {input}");
            if let Some(o) = out {
                let v: Value = serde_json::from_str(o.trim()).unwrap();
                assert_eq!(v["hookSpecificOutput"]["hookEventName"], "PreToolUse");
                assert_eq!(v["hookSpecificOutput"]["permissionDecision"], "deny");
                assert!(v["hookSpecificOutput"]["permissionDecisionReason"].as_str().unwrap().contains("command_"));
            }
        }
    }
}

#[test]
fn every_reply_builder_is_schema_valid() {
    use kijito_hooks::*;
    let replies = [
        ("pre-compact", precompact_reply(Host::Codex, "line one\nline two").unwrap()),
        ("post-compact", postcompact_reply(None)),
        ("post-compact", postcompact_reply(Some("m"))),
        ("session-start", context_reply(Event::SessionStart, "ctx")),
        ("user-prompt-submit", context_reply(Event::UserPromptSubmit, "ctx")),
        ("stop", stop_reply("reminder")),
        ("pre-tool-use", deny_reply("why")),
        ("pre-tool-use", deny_reply("   ")),
    ];
    for (schema, reply) in replies {
        assert_schema_valid(schema, reply.as_bytes());
    }
    // And the schemas do reject what the hosts reject.
    let bad = r#"{"continue":true,"hookSpecificOutput":{"hookEventName":"PostCompact"}}"#;
    let s: Value = serde_json::from_slice(
        &fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/hosts/codex-schemas/post-compact.command.output.schema.json")).unwrap(),
    )
    .unwrap();
    assert!(!jsonschema::is_valid(&s, &serde_json::from_str(bad).unwrap()));
}

#[test]
fn claude_precompact_asks_the_summary_to_carry_the_pointer_only_when_attested() {
    let w = World::new();
    let pre = w.hook_stdin("claude", "PreCompact(manual, no args)", CLAUDE_S);
    // no pass: nothing at all
    assert!(precompact(&w, "claude", &pre).stdout.is_empty());
    let ready = w.record_ok(CLAUDE_S);
    let out = precompact(&w, "claude", &pre);
    let text = String::from_utf8(out.stdout).unwrap();
    let ticket: Value = serde_json::from_slice(&fs::read(w.qa().join(format!("compaction-resume.{CLAUDE_S}.json"))).unwrap()).unwrap();
    assert_eq!(ticket["compactionNonce"], ready["compactionNonce"]);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 6, "{text}");
    assert_eq!(lines[1], format!("kijito-pointer-id: {POINTER}"));
    assert_eq!(lines[2], format!("kijito-lock-message-id: {LOCK}"));
    assert_eq!(lines[3], format!("kijito-pointer-digest: {}", ticket["pointerDigest"].as_str().unwrap()));
    assert_eq!(lines[4], format!("kijito-snapshot-digest: {}", ticket["snapshotDigest"].as_str().unwrap()));
    let cmd = lines[5].strip_prefix("kijito-resume-command: ").unwrap();
    let check = w.run(QA_GATE, &["check-command", cmd], b"");
    assert_eq!(check.status.code(), Some(0), "the resume command passes the grammar: {cmd}");
    assert!(!text.contains(ready["compactionNonce"].as_str().unwrap()), "the nonce stays out of the summary");
    // Codex never gets it (its PreCompact stdout is the JSON reply)
    let w = World::new();
    w.record_ok(CODEX_S);
    let out = precompact(&w, "codex", &w.hook_stdin("codex", "app-server:PreCompact:manual", CODEX_S));
    assert!(!String::from_utf8_lossy(&out.stdout).contains("kijito-pointer-id"));
}
