//! The PreToolUse guard decides on what the shell will run.
//! Every bypass from the issue, and a generated corpus of obfuscations and
//! harmless lines, goes through BOTH real binaries — `session-hook --expect
//! PreToolUse` (a Bash tool call) and `qa-gate check-command` — which share
//! one decision function; their verdicts must be identical, and no bypass
//! may get through. Each denied bypass is also run by bash to show the
//! injected command really would have run had the guard allowed it.
#![allow(clippy::unwrap_used)]

use crate::support;
use support::gate as support_gate;

use serde_json::{json, Value};
use support_gate::*;

const S: &str = "01a2295e-6929-7981-9da7-935145fb97be";

fn root() -> String {
    helper_dir().to_str().unwrap().to_owned()
}

/// The hook's verdict: (allowed, code in the deny reason).
fn hook_verdict(w: &World, line: &str) -> (bool, String) {
    let stdin = pre_tool_use_stdin("codex", S, "Bash", json!({"command": line}));
    let out = w.run(&SESSION_HOOK, &["--host", "codex", "--expect", "PreToolUse", "--data-dir", &w.data_arg()], &stdin);
    assert_eq!(out.status.code(), Some(0));
    if out.stdout.is_empty() {
        return (true, String::new());
    }
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["hookSpecificOutput"]["permissionDecision"], "deny");
    let reason = v["hookSpecificOutput"]["permissionDecisionReason"].as_str().unwrap().to_owned();
    let code = reason.split("denied (").nth(1).and_then(|r| r.split(':').next()).unwrap_or("").to_owned();
    (false, code)
}

/// check-command's verdict: (allowed, failure code if denied).
fn check_verdict(w: &World, line: &str) -> (bool, String) {
    let out = w.run(QA_GATE, &["check-command", line], b"");
    let word = String::from_utf8(out.stdout.clone()).unwrap();
    match word.trim() {
        "allow" => (true, String::new()),
        "deny" => {
            assert_eq!(out.status.code(), Some(1));
            (false, failure_code(&out).trim_start_matches("kijito_qa_gate_failed:").to_owned())
        }
        other => panic!("check-command printed {other:?} for {line:?}"),
    }
}

/// The known bypasses of the command guard (`<root>/bin/` is the helper dir here).
fn issue_bypasses(r: &str, marker: &str) -> Vec<String> {
    vec![
        format!("{r}/pointer\\-digest --pointer-id 3; touch {marker}"),
        format!("{r}/pointer-dige?t --pointer-id 3; touch {marker}"),
        format!("P=pointer-digest; {r}/$P --pointer-id 3; touch {marker}"),
    ]
}

/// Obfuscated forms of a helper invocation followed by an injected command.
fn generated(r: &str) -> Vec<String> {
    let names = [
        "pointer-digest",
        "pointer-snapshot",
        "pointer-publish",
        "qa-gate",
        "precompact",
        "postcompact",
        "session-hook",
        "memory-latch",
        "wake-check",
        "kijito-local",
        "kijito-compact",
    ];
    let mut out = Vec::new();
    for name in names {
        let tail = " --pointer-id 3; echo INJECTED";
        let mid = name.len() / 2;
        let (a, b) = name.split_at(mid);
        let mut forms = vec![
            format!("{r}/{a}\\{b}"),
            format!("{r}/{a}'{b}'"),
            format!("{r}/{a}\"\"{b}"),
            format!("'{r}/{name}'"),
            format!("\"{r}/{name}\""),
            format!("{r}/{a}?{}", &b[1..]),
            format!("{r}/{a}*"),
            format!("{r}/{a}[{}]{}", &b[..1], &b[1..]),
            format!("{r}/{{{name},x}}"),
            format!("X={name}; {r}/$X"),
            format!("X={name}; {r}/${{X}}"),
            format!("A={a}; B={b}; {r}/$A$B"),
            format!("R={r}; $R/{name}"),
            format!("{r}/$(echo {name})"),
            format!("{r}/`echo {name}`"),
            format!("$'{r}/{name}'"),
            format!("{r}/{a}$'\\x{:02x}'{}", b.as_bytes()[0], &b[1..]),
            format!("cd {r} && ./{name}"),
            format!("cd {r} && ./{a}*"),
            format!("env {name}"),
            format!("command {r}/{name}"),
            format!("bash -c '{r}/{name}'"),
            format!("{r}/../{}/{name}", r.rsplit('/').next().unwrap()),
            format!("{r}//{name}"),
            format!("FOO=1 {r}/{name}"),
            format!("{r}/{name} --pointer-id 3 && true"),
            format!("{r}/sh -c id"),
            format!("~{r}/{name}"),
            format!("{r}/{}", name.to_uppercase()),
        ];
        forms.iter_mut().for_each(|f| f.push_str(tail));
        out.extend(forms);
    }
    out
}

/// Lines that reach no helper: the guard lets them run.
fn harmless() -> Vec<String> {
    [
        "ls -la",
        "ls -la *.rs",
        "grep qa-gate README.md",
        "cargo build --bin qa-gate",
        "echo \"$HOME\"",
        "cat ~/notes.txt | wc -l",
        "for f in src/*.rs; do wc -l $f; done",
        "git status && git diff --stat",
        "find . -name '*.json' -newer Cargo.toml",
        "echo {a,b,c}",
        "python3 -c 'print(1)'",
        "true",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

#[test]
fn hook_and_check_command_agree_and_no_bypass_gets_through() {
    let w = World::new();
    let r = root();
    let marker = w.path("INJECTED");
    let bypasses = issue_bypasses(&r, marker.to_str().unwrap());
    let corpus = generated(&r);
    assert!(corpus.len() >= 200, "corpus of {} variants", corpus.len());
    let valid = format!("{r}/qa-gate status --session-id {S} --data-dir {}", w.data_arg());
    let mut lines: Vec<(String, Option<bool>)> = Vec::new();
    lines.extend(bypasses.iter().map(|l| (l.clone(), Some(false))));
    lines.extend(corpus.iter().map(|l| (l.clone(), Some(false))));
    lines.extend(harmless().into_iter().map(|l| (l, Some(true))));
    lines.push((valid.clone(), Some(true)));
    // Found by fuzz/fuzz_targets/guard.rs: a command word holding `=` is run
    // as a command (it is no assignment), so it is judged whole.
    lines.push((format!("{r}/qa-Pgate=p o"), Some(false)));
    lines.push((format!("X=1 {r}/pointer-digest=x --pointer-id 3"), Some(false)));
    for (line, want) in &lines {
        let hook = hook_verdict(&w, line);
        let check = check_verdict(&w, line);
        assert_eq!(hook, check, "hook and check-command disagree on {line:?}");
        if let Some(allowed) = want {
            assert_eq!(hook.0, *allowed, "{line:?}: {}", hook.1);
        }
        if !hook.0 {
            assert!(hook.1.starts_with("command_"), "{line:?}: {}", hook.1);
        }
    }
    // The issue's bypasses are real: bash would run the helper and then the
    // injected command (here the helper is stubbed by a copy of `true`, in
    // a private dir named like the root, so nothing real runs).
    let fake = w.path("fake-root");
    std::fs::create_dir(&fake).unwrap();
    kijito_testkit::copy_executable(std::path::Path::new("/bin/true"), &fake.join("pointer-digest"));
    for line in issue_bypasses(fake.to_str().unwrap(), marker.to_str().unwrap()) {
        let _ = std::fs::remove_file(&marker);
        let status = std::process::Command::new("bash").arg("-c").arg(&line).current_dir(&fake).status().unwrap();
        assert!(status.success() && marker.exists(), "bash ran {line:?} and its injection");
    }
}

#[test]
fn oversized_or_unparsable_tool_calls_are_denied() {
    let w = World::new();
    let r = root();
    let injected = format!("{r}/pointer-digest --pointer-id 3; echo INJECTED");
    // Padded past 1 MiB: denied with the reason, never allowed.
    let mut v: Value = serde_json::from_slice(&pre_tool_use_stdin("codex", S, "Bash", json!({"command": injected}))).unwrap();
    v["padding"] = json!("x".repeat(1024 * 1024 + 10));
    for (host, stdin) in [
        ("codex", v.to_string().into_bytes()),
        ("claude", v.to_string().into_bytes()),
        ("codex", b"{\"tool_name\":\"Bash\",".to_vec()),
        ("codex", b"".to_vec()),
    ] {
        let out = w.run(&SESSION_HOOK, &["--host", host, "--expect", "PreToolUse", "--data-dir", &w.data_arg()], &stdin);
        assert_eq!(out.status.code(), Some(0));
        let text = String::from_utf8(out.stdout).unwrap();
        let v: Value = serde_json::from_str(text.trim()).unwrap_or_else(|_| panic!("no deny for {} bytes: {text:?}", stdin.len()));
        assert_eq!(v["hookSpecificOutput"]["permissionDecision"], "deny");
        let reason = v["hookSpecificOutput"]["permissionDecisionReason"].as_str().unwrap();
        assert!(reason.contains("hook_stdin_") && reason.contains("could not be read"), "{reason}");
    }
    // A readable call of another tool with no command is not a shell call.
    let read = pre_tool_use_stdin("codex", S, "Read", json!({"file_path": "/x"}));
    let out = w.run(&SESSION_HOOK, &["--host", "codex", "--expect", "PreToolUse", "--data-dir", &w.data_arg()], &read);
    assert!(out.stdout.is_empty());
}
