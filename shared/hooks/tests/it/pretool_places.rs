//! What `kijito_hooks::pretool` takes from the hook's environment and the
//! data dir before the policy decides, in this crate (docs/mutants.md): the
//! protected places (the latch's state dir, the plugin root, the user's
//! startup files and Codex's rules, a link into the QA dir), the QA pass
//! that freezes Kijito writes, the pointer rule's scope, enforcement without
//! a latch, and the action file's size bound. A test that sets the
//! environment runs alone in a child process (kijito_testkit::isolated).

#![allow(clippy::unwrap_used)]

use kijito_hooks::{pretool::pretool, HookEnv, Host};
use kijito_protocol::command::HelperDir;
use kijito_protocol::ids::AbsPath;
use kijito_testkit::isolated;
use serde_json::{json, Value};
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// A private temporary dir with a workspace `ws` and a data dir `data`.
fn dirs() -> (tempfile::TempDir, PathBuf) {
    let d = tempfile::tempdir().unwrap();
    fs::set_permissions(d.path(), fs::Permissions::from_mode(0o700)).unwrap();
    for n in ["ws", "data"] {
        fs::create_dir(d.path().join(n)).unwrap();
        fs::set_permissions(d.path().join(n), fs::Permissions::from_mode(0o700)).unwrap();
    }
    let ws = d.path().join("ws");
    (d, ws)
}

/// The hooks' environment for Claude Code on `d`'s data dir.
fn env(d: &Path, config: Option<kijito_files::config::Config>, helpers: Option<&Path>) -> HookEnv {
    let data = AbsPath::from_path(&d.join("data")).unwrap();
    HookEnv::new(Host::Claude, Some(data), config, None, helpers.map(|h| HelperDir::new(h).unwrap()), 5_000)
}

fn call(tool: &str, input: Value, cwd: &Path) -> Vec<u8> {
    json!({"hook_event_name": "PreToolUse", "session_id": "s1", "cwd": cwd, "tool_name": tool, "tool_input": input})
        .to_string()
        .into_bytes()
}

fn write(file: &Path, cwd: &Path) -> Vec<u8> {
    call("Write", json!({"file_path": file, "content": "x"}), cwd)
}

/// The reason of a deny answer (panics on anything else).
fn denied(answer: Option<String>) -> String {
    let a = answer.expect("a denial");
    let v: Value = serde_json::from_str(&a).unwrap();
    assert_eq!(v["hookSpecificOutput"]["permissionDecision"], "deny", "{a}");
    v["hookSpecificOutput"]["permissionDecisionReason"].as_str().unwrap().to_owned()
}

fn assert_tripwire(answer: Option<String>, code: &str) {
    let reason = denied(answer);
    assert!(reason.contains(&format!("denied ({code})")) && reason.contains("a tripwire"), "{reason}");
}

/// The latch's heads dir is protected; in the default layout
/// (`.../kijito-qa/latch-heads`) the whole `kijito-qa` state dir above it
/// is, in another layout only the heads dir itself.
#[test]
fn the_latch_state_dir_is_protected_whole_only_in_its_default_layout() {
    if !isolated::alone(module_path!(), "the_latch_state_dir_is_protected_whole_only_in_its_default_layout") {
        return; // it ran alone in a child process of this binary
    }
    let (d, ws) = dirs();
    let env = env(d.path(), None, None);
    let state = d.path().join("state");
    std::env::set_var(kijito_files::datadir::HEADS_ENV, state.join("kijito-qa/latch-heads"));
    assert_tripwire(pretool(&env, &write(&state.join("kijito-qa/latch-heads/h"), &ws)), "tripwire_state_write");
    assert_tripwire(pretool(&env, &write(&state.join("kijito-qa/notes.json"), &ws)), "tripwire_state_write");
    assert_eq!(pretool(&env, &write(&state.join("notes.json"), &ws)), None);
    for other in ["other/latch-heads", "kijito-qa/heads"] {
        let heads = state.join(other);
        std::env::set_var(kijito_files::datadir::HEADS_ENV, &heads);
        assert_tripwire(pretool(&env, &write(&heads.join("h"), &ws)), "tripwire_state_write");
        assert_eq!(pretool(&env, &write(&heads.parent().unwrap().join("notes.json"), &ws)), None, "{other}");
    }
}

/// `$HOME`'s startup files and Codex's rules (`$CODEX_HOME/rules`, and the
/// default `~/.codex/rules`) are protected.
#[test]
fn home_startup_files_and_codex_rules_are_protected() {
    if !isolated::alone(module_path!(), "home_startup_files_and_codex_rules_are_protected") {
        return; // it ran alone in a child process of this binary
    }
    let (d, ws) = dirs();
    let env = env(d.path(), None, None);
    let home = d.path().join("home");
    std::env::set_var("HOME", &home);
    std::env::remove_var("CODEX_HOME");
    assert_tripwire(pretool(&env, &write(&home.join(".bashrc"), &ws)), "tripwire_startup_write");
    assert_tripwire(pretool(&env, &write(&home.join(".codex/rules/default.rules"), &ws)), "tripwire_host_rules_write");
    std::env::set_var("CODEX_HOME", d.path().join("cx"));
    assert_tripwire(pretool(&env, &write(&d.path().join("cx/rules/default.rules"), &ws)), "tripwire_host_rules_write");
    assert_eq!(pretool(&env, &write(&home.join("notes.txt"), &ws)), None);
}

/// The hook's plugin root (its helper dir's parent) and, for a per-host
/// root, the install prefix above it are protected; a write through a
/// symlink is judged where the link leads (the data dir's `qa/`).
#[test]
fn the_plugin_root_and_a_link_into_the_qa_dir_are_protected() {
    let (d, ws) = dirs();
    let bin = d.path().join("prefix/claude/bin");
    fs::create_dir_all(&bin).unwrap();
    let env = env(d.path(), None, Some(&bin));
    assert_tripwire(pretool(&env, &write(&d.path().join("prefix/claude/hooks/hooks.json"), &ws)), "tripwire_plugin_root_write");
    assert_tripwire(pretool(&env, &write(&d.path().join("prefix/codex/hooks.json"), &ws)), "tripwire_plugin_root_write");
    let qa = d.path().join("data").join(kijito_files::datadir::QA_DIR);
    fs::create_dir(&qa).unwrap();
    std::os::unix::fs::symlink(&qa, ws.join("link")).unwrap();
    assert_tripwire(pretool(&env, &write(&ws.join("link/pass-s1.json"), &ws)), "tripwire_qa_state_write");
    assert_eq!(pretool(&env, &write(&ws.join("notes.txt"), &ws)), None);
}

/// A recorded QA pass of this session freezes Kijito writes until it is
/// consumed or withdrawn; with no pass, or a pass of another session, the
/// same write passes.
#[test]
fn a_recorded_pass_freezes_kijito_writes() {
    let (d, ws) = dirs();
    let env = env(d.path(), None, None);
    let correct = call("mcp__kijito__kijito_correct", json!({"id": 5, "content": "x"}), &ws);
    assert_eq!(pretool(&env, &correct), None);
    let t = d.path().join("t.jsonl");
    fs::write(&t, b"{}\n").unwrap();
    let transcript = kijito_gate::pass::transcript_identity(&AbsPath::from_path(&t).unwrap()).unwrap();
    let qa = kijito_gate::QaDir::open(&AbsPath::from_path(&d.path().join("data")).unwrap()).unwrap();
    let other = kijito_protocol::ids::SessionId::parse("s2").unwrap();
    let p = kijito_testkit::pass::pass(&other, 4_000, "n", transcript);
    kijito_files::private::write_atomic(&qa.pass(&other), &p.to_bytes()).unwrap();
    assert_eq!(pretool(&env, &correct), None);
    let s1 = kijito_protocol::ids::SessionId::parse("s1").unwrap();
    let p = kijito_testkit::pass::pass(&s1, 4_000, "n", transcript);
    kijito_files::private::write_atomic(&qa.pass(&s1), &p.to_bytes()).unwrap();
    let reason = denied(pretool(&env, &correct));
    assert!(reason.contains("policy_qa_frozen"), "{reason}");
}

/// The pointer rule judges Kijito writes only: another server's
/// destructive call that names the pointer's id is not a pointer write (and
/// outside any latch it passes).
#[test]
fn only_a_kijito_write_can_be_a_pointer_write() {
    let (d, ws) = dirs();
    let pointer = kijito_protocol::ids::MemoryId::new(21813).unwrap();
    let env = env(
        d.path(),
        Some(kijito_files::config::Config { pointer_id: Some(pointer), ..kijito_files::config::Config::defaults().unwrap() }),
        None,
    );
    assert_eq!(pretool(&env, &call("mcp__github__delete_repo", json!({"id": 21813}), &ws)), None);
    let reason = denied(pretool(&env, &call("mcp__kijito__kijito_fade", json!({"id": 21813}), &ws)));
    assert!(reason.contains("policy_pointer_write"), "{reason}");
}

/// `"enforce": true` in a directory with no latch is normal mode (not
/// Silent Witness): a write passes, an irreversible call names the latch it
/// needs.
#[test]
fn enforcement_without_a_latch_is_normal_mode() {
    let (d, ws) = dirs();
    let on = env(d.path(), Some(kijito_files::config::Config { enforce: true, ..kijito_files::config::Config::defaults().unwrap() }), None);
    assert_eq!(pretool(&on, &write(&ws.join("a.rs"), &ws)), None);
    let reason = denied(pretool(&on, &call("Bash", json!({"command": "rm -rf build"}), &ws)));
    assert!(reason.contains("policy_latch_required"), "{reason}");
}

/// The action file holds at most what memory-latch accepts
/// (`kijito_latch::MAX_ACTION_BYTES`): an action of exactly that size is
/// written, a larger one is not and the reason says why.
#[test]
fn an_action_up_to_the_latchs_bound_is_written_and_a_larger_one_is_not() {
    if !isolated::alone(module_path!(), "an_action_up_to_the_latchs_bound_is_written_and_a_larger_one_is_not") {
        return; // it ran alone in a child process of this binary
    }
    let (d, ws) = dirs();
    let boot = d.path().join("boot");
    fs::write(&boot, "aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee").unwrap();
    std::env::set_var(kijito_latch::head::HEADS_ENV, d.path().join("heads"));
    std::env::set_var("MEMORY_LATCH_BOOT_ID_FILE", &boot);
    std::env::set_var(kijito_latch::HMAC_KEY_ENV, "");
    let mut c = kijito_latch::Config::new(&ws);
    c.boot_id_file = boot;
    c.heads_dir = Some(d.path().join("heads"));
    kijito_latch::Latch::open(&c).unwrap().init(1_000, &kijito_latch::InitInput { objective: "o".into(), ..Default::default() }).unwrap();
    let env = env(d.path(), None, None);
    let input = |pad: usize| json!({"command": "rm -rf build", "description": "d".repeat(pad)});
    let pad = kijito_latch::MAX_ACTION_BYTES - kijito_policy::action_bytes("Bash", &input(0)).len();
    assert_eq!(kijito_policy::action_bytes("Bash", &input(pad)).len(), kijito_latch::MAX_ACTION_BYTES);
    let reason = denied(pretool(&env, &call("Bash", input(pad), &ws)));
    assert!(reason.contains("policy_consent_required") && !reason.contains("could not be written"), "{reason}");
    let written: Vec<u64> = fs::read_dir(d.path().join("data/actions")).unwrap().map(|e| e.unwrap().metadata().unwrap().len()).collect();
    assert_eq!(written, [kijito_latch::MAX_ACTION_BYTES as u64]);
    let reason = denied(pretool(&env, &call("Bash", input(pad + 1), &ws)));
    assert!(reason.contains("(The action file could not be written: policy_action_too_large:"), "{}", &reason[..400.min(reason.len())]);
    assert_eq!(fs::read_dir(d.path().join("data/actions")).unwrap().count(), 1);
}

/// A workspace whose latch does not open (here: the latch's HMAC key file
/// is readable by others) is not a latch to trust: its calls are judged in
/// Silent Witness mode, a write is held and a read passes.
#[test]
fn a_latch_that_does_not_open_is_silent_witness() {
    if !isolated::alone(module_path!(), "a_latch_that_does_not_open_is_silent_witness") {
        return; // it ran alone in a child process of this binary
    }
    let (d, ws) = dirs();
    fs::create_dir(ws.join(".memory-latch")).unwrap();
    fs::set_permissions(ws.join(".memory-latch"), fs::Permissions::from_mode(0o700)).unwrap();
    let key = d.path().join("key");
    fs::write(&key, "k".repeat(64)).unwrap();
    fs::set_permissions(&key, fs::Permissions::from_mode(0o644)).unwrap();
    std::env::set_var(kijito_latch::HMAC_KEY_ENV, &key);
    let env = env(d.path(), None, None);
    let reason = denied(pretool(&env, &write(&ws.join("a.rs"), &ws)));
    assert!(reason.contains("denied (policy_silent_witness): Silent Witness halts every call"), "{reason}");
    assert_eq!(pretool(&env, &call("Bash", json!({"command": "git status"}), &ws)), None);
}
