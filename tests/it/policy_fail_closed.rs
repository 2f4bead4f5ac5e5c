//! The hook policy fails closed (docs/policy.md), through the real
//! `pretool-hook`, real memory-latch, real files: the halting modes pass
//! only the allow-list of reads; what the shell model cannot resolve is
//! `opaque` and needs consent; a file the session wrote needs consent to
//! run; terminal input through every tmux route is a tripwire; MCP calls by
//! name and the pointer's id in every spelling on any Kijito store; a Codex
//! patch moving a file to /dev/null is a delete; and the deny-list's false
//! positives pass.

#![allow(clippy::unwrap_used)]

use crate::support;

use serde_json::{json, Value};
use std::fs;
use support::latch::Env;

static PRETOOL: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| support::bin("pretool-hook"));

fn latch_env() -> Env {
    let e = support::latch::env();
    e.ok(&["init", "--objective", "ship the policy", "--next-step", "write the tests"]);
    e
}

/// The hook's answer to `host`'s PreToolUse call in session `session`:
/// `None` allowed, `Some((code, reason))` denied.
fn ask_in(e: &Env, session: &str, host: &str, tool: &str, input: Value) -> Option<(String, String)> {
    e.pretool_answer(&PRETOOL, session, &e.ws, host, tool, input)
}

fn ask(e: &Env, host: &str, tool: &str, input: Value) -> Option<(String, String)> {
    ask_in(e, "s1", host, tool, input)
}

fn bash(line: &str) -> Value {
    json!({ "command": line })
}

/// An integrity failure: Silent Witness.
fn silent_witness(e: &Env) {
    let manifest = e.ws.join(".memory-latch/_manifest.md");
    let text = fs::read_to_string(&manifest).unwrap().replacen("ship the policy", "ship the p0licy", 1);
    fs::write(&manifest, text).unwrap();
}

#[test]
fn silent_witness_passes_only_the_read_only_list() {
    let e = latch_env();
    silent_witness(&e);
    for host in ["claude", "codex"] {
        for line in [
            "awk 'BEGIN{system(\"touch pwned\")}'",
            "git -c core.pager='touch pwned' log",
            "less +'!touch pwned' README.md",
            "sed -n '1e touch pwned' README.md",
            "rg --pre ./pre.sh TODO",
            "sort --compress-program=./z.sh big.txt",
            "man -P 'touch pwned' ls",
            "git -c core.fsmonitor='touch pwned' status",
            "git log --output=pwned",
            "uniq in.txt pwned",
            "cargo tree",
            "X=1 cat README.md",
        ] {
            let (code, reason) = ask(&e, host, "Bash", bash(line)).unwrap_or_else(|| panic!("{host}: {line} passed"));
            assert_eq!(code, "policy_silent_witness", "{line}: {reason}");
            assert!(reason.contains("memory-latch reseed --workspace"), "{reason}");
        }
        for line in [
            "cat README.md",
            "git status",
            "git log --oneline -3",
            "git diff",
            "ls -la | head",
            "grep -rn TODO src",
            "find . -name '*.rs'",
            "echo done",
            "wc -l README.md",
        ] {
            assert_eq!(ask(&e, host, "Bash", bash(line)), None, "{host}: {line}");
        }
    }
    assert!(!e.ws.join("pwned").exists());
}

#[test]
fn evasions_need_the_users_consent_in_normal_mode() {
    let e = latch_env();
    for (line, rule) in [
        ("/???/r? -rf build", "opaque:opaque_program"),
        ("export R=rm; $R -rf build", "opaque:opaque_program"),
        ("${X:-rm} -rf build", "opaque:opaque_program"),
        ("rm$IFS-rf${IFS}build", "opaque:opaque_program"),
        ("function f { rm -rf \"$1\"; }; f build", "opaque:opaque_definition"),
        ("coproc rm -rf build", "opaque:opaque_definition"),
        ("bash < <(echo rm -rf build)", "opaque:opaque_shell_input"),
        ("bash <<< 'rm -rf build'", "delete:rm_recursive_force"),
        ("strace -o /dev/null rm -rf build", "delete:rm_recursive_force"),
        ("git -c alias.x='!rm -rf build' x", "opaque:opaque_option"),
        ("ltrace rm -rf build", "delete:rm_recursive_force"),
        ("chronic true", "opaque:opaque_wrapper"),
        ("fakeroot true", "opaque:opaque_wrapper"),
        ("prlimit --nofile=64 true", "opaque:opaque_wrapper"),
        ("faketime '2020-01-01' true", "opaque:opaque_wrapper"),
        ("script -qc 'rm -rf build' /dev/null", "delete:rm_recursive_force"),
        ("echo 'rm -rf build' | at now", "delete:rm_recursive_force"),
        ("python3 -c 'import shutil; shutil.rmtree(\"build\")'", "opaque:opaque_inline_code"),
        ("PROMPT_COMMAND='rm -rf build' bash -i", "opaque:opaque_shell_env"),
        ("source ./env.sh", "opaque:opaque_eval"),
    ] {
        for host in ["claude", "codex"] {
            let (code, reason) = ask(&e, host, "Bash", bash(line)).unwrap_or_else(|| panic!("{host}: {line} passed"));
            assert_eq!(code, "policy_consent_required", "{line}: {reason}");
            assert!(reason.contains(&format!("--summary {rule} ")), "{line}: {reason}");
        }
    }
}

#[test]
fn every_route_to_terminal_input_is_a_tripwire() {
    let e = support::latch::env(); // no latch: tripwires hold in every workspace
    for line in [
        "tmux if-shell true 'send-keys -t 0 y Enter'",
        "tmux run-shell 'echo hi'",
        "tmux pipe-pane -I -t 0 'echo ls'",
        "tmux -C attach",
        "tmux set-hook -g after-new-window 'send-keys ls Enter'",
        "tmux bind-key x send-keys y",
        "tmux command-prompt -I x",
        "tmux source-file /tmp/cmds",
        "tmux respawn-pane -k -t 0 ls",
        "screen -X eval 'stuff ls'",
        "kitty @ send-text --match id:1 ls",
        "wezterm cli send-text ls",
        "zellij action write-chars ls",
        "xdotool key Return",
        "ydotool type ls",
        "echo ls > /proc/1/fd/0",
    ] {
        let (code, reason) = ask(&e, "claude", "Bash", bash(line)).unwrap_or_else(|| panic!("{line} passed"));
        assert_eq!(code, "tripwire_terminal_input", "{line}: {reason}");
    }
    assert_eq!(ask(&e, "claude", "Bash", bash("tmux list-sessions")), None);
}

#[test]
fn mcp_calls_by_name_and_the_pointer_in_every_spelling_on_any_kijito_store() {
    let e = latch_env();
    for (tool, input, summary) in [
        ("mcp__stripe__create_payment", json!({"amount": 100}), "wallet-transfer:mcp_transfer"),
        ("mcp__stripe__create_refund", json!({"charge": "ch_1"}), "wallet-transfer:mcp_transfer"),
        ("mcp__stripe__create_payout", json!({"amount": 1}), "wallet-transfer:mcp_transfer"),
        ("mcp__linear__archive_issue", json!({"id": "L-1"}), "delete:mcp_delete"),
        ("mcp__supabase__execute_sql", json!({"query": "drop table users"}), "delete:mcp_sql_write"),
        ("mcp__vercel__deploy_project", json!({"name": "app"}), "send:mcp_send"),
        ("mcp__github__create_or_update_file", json!({"path": "a.md"}), "public-post:mcp_public_post"),
        ("mcp__github__merge_pull_request", json!({"number": 1}), "public-post:mcp_public_post"),
        ("mcp__files__delete_file", json!({"path": "a"}), "delete:mcp_delete"),
    ] {
        let (code, reason) = ask(&e, "claude", tool, input).unwrap_or_else(|| panic!("{tool} passed"));
        assert_eq!(code, "policy_consent_required", "{tool}: {reason}");
        assert!(reason.contains(&format!("--summary {summary} ")), "{tool}: {reason}");
    }
    assert_eq!(ask(&e, "claude", "mcp__supabase__execute_sql", json!({"query": "select 1"})), None);

    e.w.write_config(&json!({"pointerId": 21813, "lockMessageId": 9, "dataDir": e.w.data_arg()}));
    for (tool, input) in [
        ("mcp__kijito__kijito_update", json!({"id": 21813.0, "content": "x"})),
        ("mcp__kijito__kijito_update", json!({"id": "21813.0", "content": "x"})),
        ("mcp__kijito__kijito_update", json!({"id": [21813], "content": "x"})),
        ("mcp__kijito__kijito_update", json!({"ID": 21813, "content": "x"})),
        ("mcp__kijito__kijito_fade", json!({"Memory_Id": " 21813 "})),
        ("mcp__memory__kijito_update", json!({"id": 21813, "content": "x"})),
        ("mcp__k2__kijito_correct", json!({"id": 21813.0, "content": "x"})),
        ("mcp__k2__kijito_fade", json!({"messageId": 9})),
    ] {
        let (code, reason) = ask(&e, "codex", tool, input.clone()).unwrap_or_else(|| panic!("{tool} {input} passed"));
        assert_eq!(code, "policy_pointer_write", "{tool} {input}: {reason}");
    }
    // the QA freeze holds graph writes on any Kijito store; reads pass
    e.w.record_ok("s1");
    assert_eq!(ask(&e, "claude", "mcp__other__kijito_update", json!({"id": 5, "content": "x"})).unwrap().0, "policy_qa_frozen");
    assert_eq!(ask(&e, "claude", "mcp__kijito__kijito_recall", json!({"query": "pointer"})), None);
    assert_eq!(ask(&e, "claude", "mcp__kijito__kijito_get", json!({"id": 21813})), None);
}

#[test]
fn a_patch_that_moves_a_file_to_a_device_is_a_delete() {
    let e = latch_env();
    for to in ["/dev/null", "/dev/zero", "../../../../../../dev/null"] {
        let patch = format!("*** Begin Patch\n*** Update File: src/a.rs\n*** Move to: {to}\n@@\n-a\n+a\n*** End Patch\n");
        let (code, reason) = ask(&e, "codex", "apply_patch", json!({ "input": patch })).expect("denied");
        assert_eq!(code, "policy_consent_required", "{reason}");
        assert!(reason.contains("--summary delete:patch_delete "), "{reason}");
        let through_shell = format!("apply_patch <<'EOF'\n{patch}EOF\n");
        assert_eq!(ask(&e, "codex", "Bash", bash(&through_shell)).unwrap().0, "policy_consent_required");
    }
}

#[test]
fn a_file_the_session_wrote_needs_consent_to_run() {
    let e = latch_env();
    let diag = e.ws.join("diag.py");
    let taint = e.w.data.join("taint");
    // a read writes and reads no record
    assert_eq!(ask(&e, "claude", "Bash", bash("python3 other.py")), None, "a file this session did not write");
    assert_eq!(ask(&e, "claude", "Bash", bash("git status")), None);
    assert!(!taint.exists(), "no record before a write");
    assert_eq!(ask(&e, "claude", "Write", json!({"file_path": diag.to_str().unwrap(), "content": "import shutil\n"})), None);
    for line in ["python3 diag.py", "python3 -u ./diag.py", "cd . && python3 diag.py"] {
        let (code, reason) = ask(&e, "claude", "Bash", bash(line)).unwrap_or_else(|| panic!("{line} passed"));
        assert_eq!(code, "policy_consent_required", "{line}: {reason}");
        assert!(reason.contains("--summary opaque:opaque_tainted "), "{reason}");
    }
    // another session did not write it
    assert_eq!(ask_in(&e, "s2", "claude", "Bash", bash("python3 diag.py")), None);
    // a shell redirect, a Codex patch and a download taint as well
    assert_eq!(ask(&e, "codex", "Bash", bash("printf 'rm -rf build' > run.sh")), None);
    let add = "*** Begin Patch\n*** Add File: tool.js\n+x\n*** End Patch\n";
    assert_eq!(ask(&e, "codex", "apply_patch", json!({ "input": add })), None);
    for line in ["bash run.sh", "sh -e ./run.sh", "node tool.js", "source run.sh"] {
        assert_eq!(ask(&e, "codex", "Bash", bash(line)).map(|d| d.0).as_deref(), Some("policy_consent_required"), "{line}");
    }
    // the record: owner-only, under the data dir
    use std::os::unix::fs::PermissionsExt;
    let files: Vec<_> = fs::read_dir(&taint).unwrap().map(|f| f.unwrap().path()).collect();
    assert_eq!(files.len(), 1, "{files:?}");
    assert_eq!(fs::metadata(&files[0]).unwrap().permissions().mode() & 0o777, 0o600);
    assert_eq!(fs::metadata(&taint).unwrap().permissions().mode() & 0o777, 0o700);
    assert!(fs::read_to_string(&files[0]).unwrap().lines().any(|l| l == diag.to_str().unwrap()));
}

#[test]
fn the_deny_lists_false_positives_pass_in_normal_mode() {
    let e = latch_env();
    for line in [
        "rm --help",
        "git push --help",
        "git push --dry-run --force",
        "npm publish --dry-run",
        "cargo publish --dry-run",
        "scp host:x /tmp/",
        "python3 -c 'import sys; print(sys.version)'",
        "GIT_PAGER=cat git log -3",
    ] {
        assert_eq!(ask(&e, "claude", "Bash", bash(line)), None, "{line}");
    }
}
