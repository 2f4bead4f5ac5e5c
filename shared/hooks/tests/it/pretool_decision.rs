//! The PreToolUse decision through `kijito_hooks::pretool::pretool`, in this
//! crate (docs/mutants.md): a tripwire is denied, a read passes, and in a
//! latch workspace an irreversible call waits for consent (the consent check
//! cannot pass without the installed `memory-latch`) and a pending wake
//! hold holds a write. The latch tests set the environment the latch hook
//! reads, so each runs alone in a child process (kijito_testkit::isolated).

#![allow(clippy::unwrap_used)]

use kijito_hooks::{pretool::pretool, HookEnv, Host};
use kijito_latch::{self as latch, Config, Latch};
use kijito_testkit::isolated;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// A private temporary dir with a data dir and a workspace `ws`, and the
/// hooks' environment for Claude Code on that data dir (no helper dir).
fn world() -> (tempfile::TempDir, PathBuf, HookEnv) {
    let d = tempfile::tempdir().unwrap();
    fs::set_permissions(d.path(), fs::Permissions::from_mode(0o700)).unwrap();
    let ws = d.path().join("ws");
    fs::create_dir(&ws).unwrap();
    let data = d.path().join("data");
    fs::create_dir(&data).unwrap();
    fs::set_permissions(&data, fs::Permissions::from_mode(0o700)).unwrap();
    let env = HookEnv::new(Host::Claude, Some(kijito_protocol::ids::AbsPath::from_path(&data).unwrap()), None, None, None, 5_000);
    (d, ws, env)
}

/// The PreToolUse stdin of a Claude Code call in `cwd`.
fn call(tool: &str, input: serde_json::Value, cwd: &Path) -> Vec<u8> {
    serde_json::json!({"hook_event_name": "PreToolUse", "session_id": "s1", "cwd": cwd, "tool_name": tool, "tool_input": input})
        .to_string()
        .into_bytes()
}

/// The reason of a deny answer (panics on anything else).
fn denied(answer: Option<String>) -> String {
    let a = answer.expect("a denial");
    let v: serde_json::Value = serde_json::from_str(&a).unwrap();
    assert_eq!(v["hookSpecificOutput"]["permissionDecision"], "deny", "{a}");
    v["hookSpecificOutput"]["permissionDecisionReason"].as_str().unwrap().to_owned()
}

#[test]
fn a_tripwire_is_denied_and_a_read_passes_outside_any_latch() {
    let (_d, ws, env) = world();
    let reason = denied(pretool(&env, &call("Bash", serde_json::json!({"command": "tmux send-keys -t 0 y Enter"}), &ws)));
    assert!(reason.contains("a tripwire"), "{reason}");
    assert_eq!(pretool(&env, &call("Bash", serde_json::json!({"command": "git status"}), &ws)), None);
    assert_eq!(pretool(&env, &call("Bash", serde_json::json!({"command": "rm -rf build"}), &ws)), None);
}

/// The latch of `ws`, initialised, with the environment the latch hook reads.
fn latch_world(d: &Path, ws: &Path) -> Latch {
    let boot = d.join("boot");
    fs::write(&boot, "aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee").unwrap();
    let heads = d.join("heads");
    std::env::set_var(latch::head::HEADS_ENV, &heads);
    std::env::set_var("MEMORY_LATCH_BOOT_ID_FILE", &boot);
    std::env::set_var(latch::HMAC_KEY_ENV, "");
    let mut c = Config::new(ws);
    c.boot_id_file = boot;
    c.heads_dir = Some(heads);
    let l = Latch::open(&c).unwrap();
    l.init(1_000, &latch::InitInput { objective: "o".into(), ..Default::default() }).unwrap();
    l
}

#[test]
fn in_a_latch_workspace_an_irreversible_call_waits_for_consent() {
    if !isolated::alone(module_path!(), "in_a_latch_workspace_an_irreversible_call_waits_for_consent") {
        return; // it ran alone in a child process of this binary
    }
    let (d, ws, env) = world();
    let _latch = latch_world(d.path(), &ws);
    let reason = denied(pretool(&env, &call("Bash", serde_json::json!({"command": "rm -rf build"}), &ws)));
    assert!(reason.contains("policy_consent_required"), "{reason}");
    // Without the installed memory-latch the token check cannot pass.
    assert!(reason.contains("(Consent check: policy_consent_check_failed: cannot locate the installed memory-latch.)"), "{reason}");
    let actions: Vec<_> = fs::read_dir(d.path().join("data/actions")).unwrap().collect();
    assert_eq!(actions.len(), 1);
    // A write is not irreversible: it passes in normal mode.
    assert_eq!(pretool(&env, &call("Write", serde_json::json!({"file_path": ws.join("a.rs"), "content": "x"}), &ws)), None);
}

#[test]
fn a_pending_wake_hold_holds_a_write_in_a_latch_workspace() {
    if !isolated::alone(module_path!(), "a_pending_wake_hold_holds_a_write_in_a_latch_workspace") {
        return; // it ran alone in a child process of this binary
    }
    let (d, ws, env) = world();
    let _latch = latch_world(d.path(), &ws);
    let qa = kijito_gate::QaDir::open(&kijito_protocol::ids::AbsPath::from_path(&d.path().join("data")).unwrap()).unwrap();
    kijito_wake::hold::set(&qa, &ws, kijito_wake::hold::Hold::Pending, &["long_sleep".into()], None, 4_000).unwrap();
    let write = call("Write", serde_json::json!({"file_path": ws.join("a.rs"), "content": "x"}), &ws);
    let reason = denied(pretool(&env, &write));
    assert!(reason.contains("policy_wake_pending"), "{reason}");
    assert!(
        reason.contains(&format!("/wake-check --live --workspace {} --data-dir {}", ws.display(), d.path().join("data").display())),
        "{reason}"
    );
    assert_eq!(pretool(&env, &call("Bash", serde_json::json!({"command": "git status"}), &ws)), None);
}

/// One shell parse per command line (docs/architecture.md, "One parsed
/// tool call"): the guard and the classifier read the parse made when the
/// call was read, whatever the line expands.
#[test]
fn each_command_line_is_parsed_once() {
    let (_d, ws, env) = world();
    let parses = kijito_protocol::shell::parses_on_this_thread;
    for line in
        ["git status", "rm -rf $HOME/build && ls ${PWD}", "X=$(git push -f origin main); echo \"$X\" > out", "tmux send-keys -t 0 y Enter"]
    {
        let before = parses();
        let _ = pretool(&env, &call("Bash", serde_json::json!({ "command": line }), &ws));
        assert_eq!(parses() - before, 1, "{line}");
    }
    // Codex: a `command` argv and a `cmd` line are two lines, two parses.
    let before = parses();
    let _ = pretool(&env, &call("shell", serde_json::json!({"command": ["bash", "-lc", "rm -rf $HOME/x"], "cmd": "ls"}), &ws));
    assert_eq!(parses() - before, 2);
}

/// The hooks' environment on `d`'s data dir with this config.
fn env_with(d: &Path, config: kijito_files::config::Config) -> HookEnv {
    let data = kijito_protocol::ids::AbsPath::from_path(&d.join("data")).unwrap();
    HookEnv::new(Host::Claude, Some(data), Some(config), None, None, 5_000)
}

fn defaults() -> kijito_files::config::Config {
    kijito_files::config::Config::defaults().unwrap()
}

/// `"enforce": true` holds a write with no usable working directory (it
/// cannot tell which workspace's latch judges it); a read, an ordinary write
/// from an existing directory, and any call without the setting pass.
#[test]
fn enforcement_everywhere_holds_a_write_without_a_usable_working_directory() {
    let (d, ws, _) = world();
    let on = env_with(d.path(), kijito_files::config::Config { enforce: true, ..defaults() });
    let off = env_with(d.path(), defaults());
    let gone = d.path().join("gone");
    let edit = |cwd: &Path| call("Edit", serde_json::json!({"file_path": ws.join("a.rs"), "old_string": "a", "new_string": "b"}), cwd);
    let reason = denied(pretool(&on, &edit(&gone)));
    assert!(reason.contains("policy_cwd_unusable"), "{reason}");
    assert_eq!(pretool(&on, &edit(&ws)), None);
    assert_eq!(pretool(&on, &call("Bash", serde_json::json!({"command": "git status"}), &gone)), None);
    assert_eq!(pretool(&off, &edit(&gone)), None);
}

/// An MCP write naming the configured pointer is denied outside any latch
/// (the pointer changes only through pointer-publish); another id, or no
/// pointer configured, passes.
#[test]
fn an_mcp_write_of_the_configured_pointer_is_denied() {
    let (d, ws, _) = world();
    let pointer = kijito_protocol::ids::MemoryId::new(21813).unwrap();
    let env = env_with(d.path(), kijito_files::config::Config { pointer_id: Some(pointer), ..defaults() });
    let correct = |id: u64| call("mcp__kijito__kijito_correct", serde_json::json!({"id": id, "content": "x"}), &ws);
    let reason = denied(pretool(&env, &correct(21813)));
    assert!(reason.contains("policy_pointer_write"), "{reason}");
    assert_eq!(pretool(&env, &correct(5)), None);
    assert_eq!(pretool(&env_with(d.path(), defaults()), &correct(21813)), None);
}

/// A file a call writes joins the session's taint record (docs/policy.md),
/// whatever the workspace; a call that writes nothing records nothing.
#[test]
fn a_written_file_joins_the_session_taint_record() {
    let (d, ws, env) = world();
    let data = d.path().join("data");
    assert_eq!(pretool(&env, &call("Bash", serde_json::json!({"command": "git status"}), &ws)), None);
    assert_eq!(kijito_hooks::taint::read(&data, "s1"), (Default::default(), false));
    assert_eq!(pretool(&env, &call("Write", serde_json::json!({"file_path": ws.join("gen.sh"), "content": "x"}), &ws)), None);
    let (written, all) = kijito_hooks::taint::read(&data, "s1");
    assert!(written.iter().any(|p| p.ends_with("/gen.sh")) && !all, "{written:?}");
}

/// Codex's `workdir` is the call's working directory: an absolute one as
/// is (also with no hook `cwd`), a relative one against the hook's `cwd`.
#[test]
fn codex_workdir_is_the_calls_working_directory() {
    let (d, ws, _) = world();
    let on = env_with(d.path(), kijito_files::config::Config { enforce: true, ..defaults() });
    let edit = |workdir: &str| serde_json::json!({"file_path": ws.join("a.rs"), "old_string": "a", "new_string": "b", "workdir": workdir});
    assert_eq!(pretool(&on, &call("Edit", edit("ws"), d.path())), None);
    let reason = denied(pretool(&on, &call("Edit", edit("gone"), d.path())));
    assert!(reason.contains("policy_cwd_unusable"), "{reason}");
    let no_cwd = |input: serde_json::Value| {
        serde_json::json!({"hook_event_name": "PreToolUse", "session_id": "s1", "tool_name": "Edit", "tool_input": input})
            .to_string()
            .into_bytes()
    };
    assert_eq!(pretool(&on, &no_cwd(edit(ws.to_str().unwrap()))), None);
    assert!(denied(pretool(&on, &no_cwd(edit("ws")))).contains("policy_cwd_unusable"));
}

/// Running a file this session wrote is opaque (docs/policy.md, session
/// taint): in a latch workspace it waits for consent, while the same call in
/// another session passes as an ordinary write.
#[test]
fn running_a_file_this_session_wrote_waits_for_consent() {
    if !isolated::alone(module_path!(), "running_a_file_this_session_wrote_waits_for_consent") {
        return; // it ran alone in a child process of this binary
    }
    let (d, ws, env) = world();
    let _latch = latch_world(d.path(), &ws);
    let run = |session: &str| {
        serde_json::json!({"hook_event_name": "PreToolUse", "session_id": session, "cwd": ws, "tool_name": "Bash", "tool_input": {"command": "./gen.sh"}})
            .to_string()
            .into_bytes()
    };
    assert_eq!(pretool(&env, &run("s2")), None);
    assert_eq!(pretool(&env, &call("Write", serde_json::json!({"file_path": ws.join("gen.sh"), "content": "x"}), &ws)), None);
    let reason = denied(pretool(&env, &run("s1")));
    assert!(reason.contains("policy_consent_required") && reason.contains("opaque_tainted"), "{reason}");
    assert_eq!(pretool(&env, &run("s2")), None);
}

/// The protected places come from the hook's environment: a write into the
/// toolkit's config dir or into the data dir's `qa/` is a tripwire in every
/// workspace (the call is only judged here, nothing is written).
#[test]
fn writes_into_the_config_dir_or_the_qa_dir_are_tripwires() {
    let (d, ws, env) = world();
    let config = kijito_files::config::config_home().unwrap().join("kijito-qa").join("policy.json");
    let qa = d.path().join("data").join(kijito_files::datadir::QA_DIR).join("pass-s1.json");
    for target in [config, qa] {
        let reason = denied(pretool(&env, &call("Write", serde_json::json!({"file_path": target, "content": "{}"}), &ws)));
        assert!(reason.contains("tripwire"), "{}: {reason}", target.display());
    }
    assert_eq!(pretool(&env, &call("Write", serde_json::json!({"file_path": ws.join("policy.json"), "content": "{}"}), &ws)), None);
}
