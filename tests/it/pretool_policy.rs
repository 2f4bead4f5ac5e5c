//! The PreToolUse policy on every tool call, through the real
//! `pretool-hook` (and `session-hook`, which execs it), real memory-latch
//! and prompt-hook, real files: consent bound to the exact call and used
//! once, Silent Witness, degraded until the user's review, the QA freeze,
//! MCP writes to the pointer, tripwires, and workspaces without a latch.

#![allow(clippy::unwrap_used)]

use crate::support;

use serde_json::{json, Value};
use std::fs;
use support::gate::{assert_schema_valid, helper_dir, POINTER};
use support::latch::Env;

static PRETOOL: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| support::bin("pretool-hook"));

fn latch_env() -> Env {
    let e = support::latch::env();
    e.ok(&["init", "--objective", "ship the policy", "--next-step", "write the tests"]);
    e
}

/// The hook's answer: `None` allowed, `Some((code, reason))` denied.
fn ask_with(e: &Env, bin: &str, host: &str, tool: &str, input: Value) -> Option<(String, String)> {
    e.pretool_answer(bin, "s1", &e.ws, host, tool, input)
}

fn ask(e: &Env, host: &str, tool: &str, input: Value) -> Option<(String, String)> {
    ask_with(e, &PRETOOL, host, tool, input)
}

/// Run the command a deny reason names first (between backticks), as the
/// agent would: it must be an absolute helper command; its stdout.
fn run_named_command(e: &Env, reason: &str) -> String {
    let cmd = reason.split('`').nth(1).expect("a command in the reason");
    let words = shell_words::split(cmd).unwrap();
    assert!(words[0].starts_with('/'), "{cmd}");
    let mut c = e.w.command(&words[0]);
    c.args(&words[1..])
        .env("MEMORY_LATCH_BOOT_ID_FILE", &e.boot)
        .env_remove("MEMORY_LATCH_HMAC_KEY_FILE")
        .stdin(std::process::Stdio::null());
    let o = c.output().unwrap();
    assert!(o.status.success(), "{cmd}: {}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout).unwrap()
}

fn token_of(out: &str) -> String {
    let at = out.find("ACT-").expect("token printed");
    out[at..at + 10].to_owned()
}

#[test]
fn an_irreversible_call_passes_once_with_the_users_token_for_exactly_that_call() {
    for host in ["claude", "codex"] {
        let e = latch_env();
        let rm = json!({"command": "rm -rf build", "description": "clean"});
        let (code, reason) = ask(&e, host, "Bash", rm.clone()).expect("denied without consent");
        assert_eq!(code, "policy_consent_required", "{reason}");
        assert!(reason.contains("memory-latch consent request --workspace"), "{reason}");
        // The command the reason names is one the command guard lets the agent run.
        let cmd = reason.split('`').nth(1).unwrap();
        let v = kijito_protocol::command::guard_line(cmd, Some(&kijito_protocol::command::HelperDir::new(&helper_dir()).unwrap()));
        assert!(matches!(v, kijito_protocol::command::Verdict::Helper(_)), "{cmd}: {v:?}");
        // The action file it names is owner-only and holds the call's canonical JSON.
        let file = cmd.split("--action-file ").nth(1).unwrap().split(' ').next().unwrap();
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(fs::metadata(file).unwrap().permissions().mode() & 0o777, 0o600);
        assert_eq!(fs::read(file).unwrap(), kijito_policy::action_bytes("Bash", &rm));
        let token = token_of(&run_named_command(&e, &reason));
        // Before the user's message the call is still denied.
        assert_eq!(ask(&e, host, "Bash", rm.clone()).unwrap().0, "policy_consent_required");
        let t = e.user_says_to(&support::bin("prompt-hook"), host, &token).unwrap();
        assert!(t.contains("confirmed"), "{t}");
        // A changed call is not authorized by it.
        let other = json!({"command": "rm -rf build2", "description": "clean"});
        assert_eq!(ask(&e, host, "Bash", other).unwrap().0, "policy_consent_required");
        // The identical call passes once, and the manifest says so.
        assert_eq!(ask(&e, host, "Bash", rm.clone()), None, "{host}: the authorized call");
        let head = &e.status()["head"];
        assert_eq!((head["event"].as_str(), head["consent_state"].as_str()), (Some("gate_pass"), Some("pending")), "{head}");
        // A third identical call is denied again.
        assert_eq!(ask(&e, host, "Bash", rm).unwrap().0, "policy_consent_required");
    }
}

#[test]
fn a_high_risk_call_needs_the_users_second_message() {
    let e = latch_env();
    let push = json!({"command": "git push --force origin main"});
    let (_, reason) = ask(&e, "claude", "Bash", push.clone()).unwrap();
    assert!(reason.contains("--risk high"), "{reason}");
    let token = token_of(&run_named_command(&e, &reason));
    e.user_says_to(&support::bin("prompt-hook"), "claude", &token).unwrap();
    let (code, reason) = ask(&e, "claude", "Bash", push.clone()).unwrap();
    assert_eq!(code, "policy_consent_required");
    assert!(reason.contains("risk_reconfirmation_required"), "{reason}");
    e.user_says_to(&support::bin("prompt-hook"), "claude", &token).unwrap();
    assert_eq!(ask(&e, "claude", "Bash", push), None);
}

#[test]
fn the_older_hooks_json_naming_session_hook_gets_the_same_policy() {
    let e = latch_env();
    let (code, _) = ask_with(&e, &support::gate::SESSION_HOOK, "codex", "Bash", json!({"command": "git reset --hard HEAD~3"})).unwrap();
    assert_eq!(code, "policy_consent_required");
}

#[test]
fn reads_and_ordinary_edits_pass_in_normal_mode() {
    let e = latch_env();
    let src = e.ws.join("src/a.rs");
    for (tool, input) in [
        ("Bash", json!({"command": "cargo test --workspace && git status"})),
        ("Read", json!({"file_path": src.to_str().unwrap()})),
        ("Write", json!({"file_path": src.to_str().unwrap(), "content": "fn main() {}\n"})),
        ("Edit", json!({"file_path": src.to_str().unwrap(), "old_string": "a", "new_string": "b"})),
        ("Grep", json!({"pattern": "x"})),
    ] {
        assert_eq!(ask(&e, "claude", tool, input.clone()), None, "{tool} {input}");
    }
}

#[test]
fn silent_witness_denies_a_write_to_a_project_file_and_lets_reads_pass() {
    let e = latch_env();
    // An integrity failure: one changed byte in the manifest.
    let manifest = e.ws.join(".memory-latch/_manifest.md");
    let text = fs::read_to_string(&manifest).unwrap().replacen("ship the policy", "ship the p0licy", 1);
    fs::write(&manifest, text).unwrap();
    let src = e.ws.join("src/a.rs");
    for host in ["claude", "codex"] {
        let (code, reason) = ask(&e, host, "Write", json!({"file_path": src.to_str().unwrap(), "content": "x"})).expect("denied");
        assert_eq!(code, "policy_silent_witness", "{reason}");
        assert!(reason.contains("memory-latch reseed --workspace"), "{reason}");
        assert_eq!(ask(&e, host, "Bash", json!({"command": "git diff"})), None);
    }
}

#[test]
fn degraded_mode_denies_mutation_survives_the_agents_checkpoint_and_ends_on_the_review_token() {
    let e = latch_env();
    let qa = e.w.qa_dir();
    kijito_files::private::write_atomic(&qa.join("current-pointer.json"), b"not json").unwrap();
    assert_eq!(e.wake(&[]).0, 20);
    fs::remove_file(qa.join("current-pointer.json")).unwrap();
    let touch = json!({"command": "touch notes.txt"});
    assert_eq!(ask(&e, "codex", "Bash", touch.clone()).unwrap().0, "policy_degraded");
    e.ok(&["checkpoint", "--next-step", "carry on as if nothing happened"]);
    assert_eq!(ask(&e, "codex", "Bash", touch.clone()).unwrap().0, "policy_degraded");
    assert_eq!(ask(&e, "codex", "Bash", json!({"command": "ls -la"})), None);
    let token = token_of(&e.ok(&["review"]));
    e.user_says_to(&support::bin("prompt-hook"), "codex", &token).unwrap();
    assert_eq!(ask(&e, "codex", "Bash", touch), None);
}

#[test]
fn the_freeze_denies_graph_writes_from_record_until_the_compaction_consumes_the_pass() {
    let e = latch_env();
    e.w.write_config(&json!({"pointerId": POINTER, "dataDir": e.w.data_arg()}));
    let publish = json!({"command": format!("{}/pointer-publish --pointer-id {POINTER} --manifest /tmp/m.json", helper_dir().display())});
    let mcp = json!({"id": 99, "content": "x"});
    // Before record: no freeze (the publish command may still be refused by
    // the command guard's grammar; what matters is no freeze code).
    let before = ask(&e, "claude", "Bash", publish.clone());
    assert!(before.as_ref().is_none_or(|(c, _)| c != "policy_qa_frozen"), "{before:?}");
    assert_eq!(ask(&e, "claude", "mcp__kijito__kijito_correct", mcp.clone()), None);
    e.w.record_ok("s1");
    let (code, reason) = ask(&e, "claude", "mcp__kijito__kijito_correct", mcp.clone()).unwrap();
    assert_eq!(code, "policy_qa_frozen", "{reason}");
    assert!(reason.contains("qa-gate invalidate --session-id s1"), "{reason}");
    if let Some((code, _)) = ask(&e, "codex", "Bash", publish.clone()) {
        assert!(code == "policy_qa_frozen" || code.starts_with("command_"), "{code}");
    }
    // The compaction consumes the pass: PreCompact promotes it to a ticket.
    let stdin = e.w.hook_stdin("claude", "PreCompact(manual, no args)", "s1");
    let o = e.w.run(&support::bin("precompact"), &["--host", "claude", "--data-dir", &e.w.data_arg()], &stdin);
    assert!(o.status.success());
    assert_eq!(ask(&e, "claude", "mcp__kijito__kijito_correct", mcp), None, "the freeze lifts after the compaction");
}

#[test]
fn an_mcp_write_to_the_pointer_or_lock_message_is_denied_in_every_workspace() {
    let e = support::latch::env(); // no latch at all
    e.w.write_config(&json!({"pointerId": 7, "lockMessageId": 9}));
    for (tool, input) in [
        ("mcp__kijito__kijito_update", json!({"id": 7, "content": "forged pointer"})),
        ("mcp__kijito__kijito_correct", json!({"id": "7", "content": "x"})),
        ("mcp__kijito__kijito_fade", json!({"id": 7})),
        ("mcp__kijito__kijito_hive_release", json!({"message_id": 9})),
    ] {
        let (code, reason) = ask(&e, "claude", tool, input.clone()).unwrap_or_else(|| panic!("{tool} {input} allowed"));
        assert_eq!(code, "policy_pointer_write", "{reason}");
        assert!(reason.contains("pointer-publish"), "{reason}");
    }
    assert_eq!(ask(&e, "claude", "mcp__kijito__kijito_update", json!({"id": 8, "content": "x"})), None);
    assert_eq!(ask(&e, "claude", "mcp__kijito__kijito_get", json!({"id": 7})), None);
}

#[test]
fn tripwires_deny_in_every_mode_even_with_a_token() {
    let e = support::latch::env();
    let qa = e.w.data.join("qa/qa-pass.s1.json");
    for (tool, input, code) in [
        ("Bash", json!({"command": "tmux send-keys -t %0 ACT-ABCDEF Enter"}), "tripwire_terminal_input"),
        ("Bash", json!({"command": "printf y > /dev/pts/3"}), "tripwire_terminal_input"),
        ("Write", json!({"file_path": qa.to_str().unwrap(), "content": "{}"}), "tripwire_qa_state_write"),
        (
            "Bash",
            json!({"command": format!("echo '{{}}' | {}/prompt-hook --host claude --expect UserPromptSubmit", helper_dir().display())}),
            "",
        ),
    ] {
        let (got, reason) = ask(&e, "claude", tool, input.clone()).unwrap_or_else(|| panic!("{input} allowed"));
        if !code.is_empty() {
            assert_eq!(got, code, "{reason}");
        } else {
            assert!(got.starts_with("tripwire_") || reason.contains("command guard"), "{reason}");
        }
    }
}

#[test]
fn without_a_latch_and_without_enforce_irreversible_calls_keep_todays_behaviour() {
    let e = support::latch::env();
    assert_eq!(ask(&e, "codex", "Bash", json!({"command": "rm -rf build"})), None);
    // With "enforce": true they need consent, and the latch to hold it.
    e.w.write_config(&json!({"enforce": true}));
    let (code, reason) = ask(&e, "codex", "Bash", json!({"command": "rm -rf build"})).unwrap();
    assert_eq!(code, "policy_latch_required", "{reason}");
    let cmd = reason.split('`').nth(1).unwrap().replace(" TEXT", " ship");
    let v = kijito_protocol::command::guard_line(&cmd, Some(&kijito_protocol::command::HelperDir::new(&helper_dir()).unwrap()));
    assert!(matches!(v, kijito_protocol::command::Verdict::Helper(_)), "{cmd}: {v:?}");
}

#[test]
fn an_unreadable_call_is_denied_and_a_bad_invocation_denies() {
    let e = latch_env();
    let mut c = e.w.command(&PRETOOL);
    c.args(["--host", "claude", "--expect", "Stop"]);
    let mut child = c.spawn().unwrap();
    drop(child.stdin.take());
    let o = support::gate::wait_bounded(child, 30);
    assert!(String::from_utf8_lossy(&o.stdout).contains("\"deny\""), "{o:?}");
    let mut c = e.w.command(&PRETOOL);
    c.args(["--host", "claude", "--expect", "PreToolUse"]);
    let mut child = c.spawn().unwrap();
    {
        use std::io::Write;
        let _ = child.stdin.take().unwrap().write_all(b"{not json");
    }
    let o = support::gate::wait_bounded(child, 30);
    assert!(String::from_utf8_lossy(&o.stdout).contains("\"deny\""), "{o:?}");
}

/// The user's policy file (docs/policy.md) reaches the hook: an added rule
/// makes `make deploy` need consent; an unusable file holds every write
/// (reads pass) until the user mends it.
#[test]
fn the_users_policy_file_adds_rules_and_an_unusable_one_holds_writes() {
    let e = latch_env();
    let path = support::write_config_file(
        &e.w.home.join(".config"),
        "policy.json",
        br#"{"schema":"kijito-qa.policy/v1","add":[{"name":"make_deploy","class":"send","risk":"medium","program":"make","args":["deploy"]}]}"#,
    );
    let (code, reason) = ask(&e, "codex", "Bash", json!({"command": "make deploy"})).expect("the user's rule holds it");
    assert_eq!(code, "policy_consent_required", "{reason}");
    assert!(reason.contains("--summary send:make_deploy"), "{reason}");
    // The agent may not edit the file itself.
    let (code, _) = ask(&e, "codex", "Write", json!({"file_path": path.to_str().unwrap(), "content": "{}"})).unwrap();
    assert!(code.starts_with("tripwire_"), "{code}");
    // Too open: every write is held, reads pass.
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(&path, fs::Permissions::from_mode(0o644)).unwrap();
    let (code, reason) = ask(&e, "codex", "Bash", json!({"command": "touch a"})).unwrap();
    assert_eq!(code, "file_permissions_too_open", "{reason}");
    assert_eq!(ask(&e, "codex", "Bash", json!({"command": "git log -1"})), None);
}

/// SessionStart says in one line whether the policy enforces here, and how
/// to turn it on (a command the guard lets the agent run).
#[test]
fn session_start_says_whether_the_policy_enforces_and_how_to_turn_it_on() {
    for (host, key) in [("claude", "SessionStart(source=startup)"), ("codex", "app-server:SessionStart:startup")] {
        let e = support::latch::env();
        let start = |e: &Env| {
            let mut p = support::gate::payload(host, key);
            p["session_id"] = json!("s1");
            p["transcript_path"] = json!(e.w.transcript.to_str().unwrap());
            p["cwd"] = json!(e.ws.to_str().unwrap());
            support::gate::context_of(&e.session_hook(host, "SessionStart", &p).stdout).unwrap()
        };
        let off = start(&e);
        let line = off.lines().find(|l| l.starts_with("kijito-qa policy: not enforced")).unwrap_or_else(|| panic!("{off}"));
        let cmd = line.split('`').nth(1).unwrap().replace(" TEXT", " ship");
        let v = kijito_protocol::command::guard_line(&cmd, Some(&kijito_protocol::command::HelperDir::new(&helper_dir()).unwrap()));
        assert!(matches!(v, kijito_protocol::command::Verdict::Helper(_)), "{cmd}: {v:?}");
        e.ok(&["init", "--objective", "ship"]);
        assert!(start(&e).contains("kijito-qa policy: enforced in this workspace"), "{host}");
    }
}

/// A governance file the latch refuses holds every mutating call (the latch
/// itself refuses every write with it) until the user fixes it.
#[test]
fn an_unusable_governance_file_holds_every_write() {
    let mut e = latch_env();
    let gov = e.w.dir().join("governance.json");
    support::gate::write_private(&gov, b"{\"token_ttl_minutes\": 0}");
    e.env.push(("MEMORY_LATCH_GOVERNANCE_FILE", gov));
    let (code, reason) = ask(&e, "claude", "Bash", json!({"command": "touch a"})).unwrap();
    assert_eq!(code, "policy_governance_invalid", "{reason}");
    assert!(reason.contains("memory-latch status --workspace"), "{reason}");
    assert_eq!(ask(&e, "claude", "Read", json!({"file_path": "/etc/hostname"})), None);
}

/// A session-hook installed without its pretool-hook sibling (an older
/// hooks.json names session-hook for PreToolUse) denies every tool call:
/// the guard and the policy live only in pretool-hook.
#[test]
fn a_session_hook_without_its_pretool_sibling_denies_every_call() {
    let e = latch_env();
    let lone = e.w.home.join("session-hook-alone");
    fs::create_dir_all(&lone).unwrap();
    kijito_testkit::copy_executable(std::path::Path::new(&*support::gate::SESSION_HOOK), &lone.join("session-hook"));
    let bin = lone.join("session-hook");
    for host in ["claude", "codex"] {
        let (code, _) = ask_with(&e, bin.to_str().unwrap(), host, "Bash", json!({"command": "ls"})).expect("denied");
        assert_eq!(code, "hook_pretool_missing", "{host}");
    }
}

/// The consent check runs in the installed `memory-latch tool-gate`: the
/// agent may not run it itself (the guard denies it), and a pretool-hook
/// whose sibling is missing passes no irreversible call.
#[test]
fn the_tool_gate_sibling_is_the_hooks_alone() {
    let e = latch_env();
    let line = format!("{}/memory-latch tool-gate --workspace {} --action-file /tmp/a.json", helper_dir().display(), e.ws.display());
    let (_, reason) = ask(&e, "claude", "Bash", json!({ "command": line })).expect("denied");
    assert!(reason.contains("command guard: denied"), "{reason}");
    let lone = e.w.home.join("pretool-alone");
    fs::create_dir_all(&lone).unwrap();
    kijito_testkit::copy_executable(std::path::Path::new(&*PRETOOL), &lone.join("pretool-hook"));
    let (code, reason) =
        ask_with(&e, lone.join("pretool-hook").to_str().unwrap(), "codex", "Bash", json!({"command": "rm -rf build"})).unwrap();
    assert_eq!(code, "policy_consent_required", "{reason}");
    assert!(reason.contains("policy_consent_check_failed"), "{reason}");
}

/// Codex 0.169 applies patches through its shell (`apply_patch <<'EOF'`,
/// arriving as `Bash`, measured: fixtures/hosts/codex/pretool-by-tool.json);
/// the `*** Begin Patch` lines and `ls *` are ordinary work, not a glob that
/// could reach a helper (the guard denied both before).
#[test]
fn a_patch_through_the_shell_and_a_bare_glob_argument_pass() {
    let e = latch_env();
    let patch = "apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: notes.txt\n+hello\n*** End Patch\nEOF\n";
    for host in ["codex", "claude"] {
        assert_eq!(ask(&e, host, "Bash", json!({ "command": patch })), None, "{host}");
        assert_eq!(ask(&e, host, "Bash", json!({"command": "ls *"})), None, "{host}");
    }
}

/// The wake hold: SessionStart's local checks find a boot
/// change, so writes wait until the agent has run the emitted absolute
/// `wake-check --live`; its cautious answer lets writes through and keeps
/// every irreversible call at high risk, and a token requested at a lower
/// risk than the hook asked for passes nothing.
#[test]
fn after_a_boot_change_writes_wait_for_the_live_wake_check() {
    let e = latch_env();
    fs::write(&e.boot, "99999999-8888-7777-6666-555555555555\n").unwrap();
    let mut p = support::gate::payload("claude", "SessionStart(source=startup)");
    p["session_id"] = json!("s1");
    p["transcript_path"] = json!(e.w.transcript.to_str().unwrap());
    p["cwd"] = json!(e.ws.to_str().unwrap());
    let ctx = support::gate::context_of(&e.session_hook("claude", "SessionStart", &p).stdout).unwrap();
    let line = ctx.lines().find(|l| l.starts_with("Until it answers")).unwrap_or_else(|| panic!("{ctx}"));
    let cmd = line.split('`').nth(1).unwrap().to_owned();
    let v = kijito_protocol::command::guard_line(&cmd, Some(&kijito_protocol::command::HelperDir::new(&helper_dir()).unwrap()));
    assert!(matches!(v, kijito_protocol::command::Verdict::Helper(_)), "{cmd}: {v:?}");
    let src = e.ws.join("src/a.rs");
    let write = json!({"file_path": src.to_str().unwrap(), "content": "x"});
    let (code, reason) = ask(&e, "claude", "Write", write.clone()).expect("held");
    assert_eq!(code, "policy_wake_pending", "{reason}");
    assert!(reason.contains(&cmd), "{reason}");
    assert_eq!(ask(&e, "claude", "Bash", json!({"command": "git status"})), None, "reads pass");
    // The agent runs the live check: it answers (cautious: the boot changed).
    let words = shell_words::split(&cmd).unwrap();
    let mut c = e.w.command(&words[0]);
    c.args(&words[1..]).env("MEMORY_LATCH_BOOT_ID_FILE", &e.boot).stdin(std::process::Stdio::null());
    let o = c.output().unwrap();
    assert_eq!(o.status.code(), Some(10), "cautious: {}", String::from_utf8_lossy(&o.stdout));
    assert_eq!(ask(&e, "claude", "Write", write.clone()), None, "the hold lifted for writes");
    let (code, reason) = ask(&e, "claude", "Bash", json!({"command": "rm -r build"})).unwrap();
    assert_eq!(code, "policy_consent_required");
    assert!(reason.contains("--risk high"), "cautious makes it high risk: {reason}");
    // A token requested at a lower risk than the hook asked for is not enough.
    let action = reason.split("--action-file ").nth(1).unwrap().split(' ').next().unwrap().to_owned();
    let token = token_of(&e.ok(&["consent", "request", "--action-file", &action, "--summary", "clean", "--risk", "low"]));
    e.user_says_to(&support::bin("prompt-hook"), "claude", &token).unwrap();
    let (_, reason) = ask(&e, "claude", "Bash", json!({"command": "rm -r build"})).unwrap();
    assert!(reason.contains("risk_reconfirmation_required") && reason.contains("requested at low"), "{reason}");
}

/// SessionStart's local wake checks run in the installed `wake-check --hook`
/// (the 1 MB bound of session-hook): a session-hook installed without that
/// sibling says so (`hook_wake_check_failed`, trust unknown) and, with
/// enforcement on, holds writes as a long sleep would, naming the live check.
#[test]
fn a_session_hook_without_its_wake_check_sibling_fails_closed() {
    let e = latch_env();
    let lone = e.w.home.join("session-hook-no-wake");
    fs::create_dir_all(&lone).unwrap();
    kijito_testkit::copy_executable(std::path::Path::new(&*support::gate::SESSION_HOOK), &lone.join("session-hook"));
    let mut p = support::gate::payload("codex", "app-server:SessionStart:startup");
    p["session_id"] = json!("s1");
    p["transcript_path"] = json!(e.w.transcript.to_str().unwrap());
    p["cwd"] = json!(e.ws.to_str().unwrap());
    let out = e.hook_bin(lone.join("session-hook").to_str().unwrap(), "codex", "SessionStart", &p);
    assert_schema_valid("session-start", &out.stdout);
    let ctx = support::gate::context_of(&out.stdout).unwrap();
    assert!(ctx.contains("could not run (hook_wake_check_failed:") && ctx.contains("Trust mode unknown"), "{ctx}");
    assert!(ctx.contains("Until it answers") && ctx.contains("/wake-check --live --workspace"), "{ctx}");
    let src = e.ws.join("src/a.rs");
    let (code, reason) = ask(&e, "codex", "Write", json!({"file_path": src.to_str().unwrap(), "content": "x"})).expect("held");
    assert_eq!(code, "policy_wake_pending", "{reason}");
    assert_eq!(ask(&e, "codex", "Bash", json!({"command": "git status"})), None, "reads pass");
    // With its sibling, the same fresh latch is full trust: no wake text, no hold.
    let fresh = latch_env();
    let mut p = p.clone();
    p["transcript_path"] = json!(fresh.w.transcript.to_str().unwrap());
    p["cwd"] = json!(fresh.ws.to_str().unwrap());
    let ctx = support::gate::context_of(&fresh.session_hook("codex", "SessionStart", &p).stdout).unwrap();
    assert!(!ctx.contains("wake-check") && !ctx.contains("Until it answers"), "{ctx}");
    let src = fresh.ws.join("src/a.rs");
    assert_eq!(ask(&fresh, "codex", "Write", json!({"file_path": src.to_str().unwrap(), "content": "x"})), None);
}
