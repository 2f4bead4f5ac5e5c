//! memory-latch's governance knobs come from the user's own file,
//! not from hard-coded defaults: `memory-latch-governance.json` in
//! the user's kijito-qa config dir (or `MEMORY_LATCH_GOVERNANCE_FILE`),
//! owner-only, outside the workspace. Through the real binaries: the knobs
//! the user chose are recorded in every entry and act (the Stop hook's turn
//! checkpoint after `checkpoint_freq_turns` turns, Silent Witness after
//! `max_recovery_attempts`, composting's `compost_keep_decisions`); a value
//! out of range or a file that is not the user's is refused with its code,
//! and nothing is written.
#![allow(clippy::unwrap_used)]

use crate::support;
use support::gate::{payload, SESSION_HOOK};

use serde_json::{json, Value};
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;

fn write_file(path: &std::path::Path, text: &str, mode: u32) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, text).unwrap();
    fs::set_permissions(path, fs::Permissions::from_mode(mode)).unwrap();
}

/// The user's default governance file of this world.
fn user_file(e: &support::latch::Env) -> PathBuf {
    e.w.home.join(".config/kijito-qa/memory-latch-governance.json")
}

fn head_governance(e: &support::latch::Env) -> Value {
    let m = fs::read_to_string(e.ws.join(".memory-latch/_manifest.md")).unwrap();
    let line = m.lines().rfind(|l| l.starts_with("{\"schema\":\"memory-latch.entry/v2\"")).unwrap();
    serde_json::from_str::<Value>(line).unwrap()["governance"].clone()
}

fn turn(e: &support::latch::Env, host: &str) -> Option<String> {
    e.user_says(host, "carry on");
    let mut p = payload(host, if host == "claude" { "Stop" } else { "app-server:Stop" });
    p["session_id"] = json!("s1");
    p["transcript_path"] = json!(e.w.transcript.to_str().unwrap());
    p["cwd"] = json!(e.ws.to_str().unwrap());
    let out = e.hook_bin(&SESSION_HOOK, host, "Stop", &p);
    (!out.stdout.is_empty()).then(|| serde_json::from_slice::<Value>(&out.stdout).unwrap()["systemMessage"].as_str().unwrap().to_owned())
}

#[test]
fn the_users_knobs_are_recorded_and_act() {
    for host in ["codex", "claude"] {
        let e = support::latch::env();
        write_file(
            &user_file(&e),
            r#"{"schema":"memory-latch.governance/v1","checkpoint_freq_turns":2,"max_recovery_attempts":1,"compost_keep_decisions":2}"#,
            0o600,
        );
        e.ok(&["init", "--objective", "ship", "--next-step", "write-the-tests"]);
        let g = head_governance(&e);
        assert_eq!(
            g,
            json!({"checkpoint_freq_turns":2,"compost_keep_decisions":2,"compost_retire_turns":20,"fatigue_trigger_context_ratio":0.75,
                   "token_ttl_minutes":10,"token_single_use":true,"lock_timeout_ms":800,"max_recovery_attempts":1}),
            "{host}"
        );
        // composting keeps the user's number of decisions
        e.ok(&["checkpoint", "--decision", "a", "--decision", "b", "--decision", "c"]);
        let texts: Vec<Value> = e.status()["decisions"].as_array().unwrap().iter().map(|d| d["text"].clone()).collect();
        assert_eq!(texts, [json!("b"), json!("c")], "{host}");
        // the Stop hook checkpoints after the user's 2 turns, not 5
        assert_eq!(turn(&e, host), None, "{host}: turn 1");
        let second = turn(&e, host).unwrap_or_else(|| panic!("{host}: the second turn writes the checkpoint"));
        assert!(second.contains("automatic checkpoint after 2 turns"), "{second}");
        assert_eq!(e.status()["head"]["event"], "turn_checkpoint");
        // Silent Witness after the user's one recovery attempt
        assert!(e.ok(&["recover"]).contains("(recovery attempt 1 of 1)"));
        let incident = String::from_utf8(e.latch(&["recover"]).stdout).unwrap();
        assert!(
            incident.starts_with("SILENT WITNESS (recovery attempts exhausted)") && incident.contains("Attempted recoveries: 1 of 1"),
            "{incident}"
        );
    }
}

#[test]
fn a_bad_value_or_a_file_not_the_users_is_refused_and_nothing_is_written() {
    let e = support::latch::env();
    e.ok(&["init", "--objective", "ship"]);
    let manifest = e.ws.join(".memory-latch/_manifest.md");
    let before = fs::read(&manifest).unwrap();
    let file = user_file(&e);
    for (body, mode, code) in [
        (r#"{"schema":"memory-latch.governance/v1","checkpoint_freq_turns":0}"#, 0o600, "governance_value_invalid"),
        (r#"{"schema":"memory-latch.governance/v1","token_single_use":false}"#, 0o600, "governance_value_invalid"),
        (r#"{"schema":"memory-latch.governance/v1","fatigue_trigger_context_ratio":2}"#, 0o600, "governance_value_invalid"),
        (r#"{"schema":"memory-latch.governance/v1","checkpoint_freq_turns":3,"extra":1}"#, 0o600, "governance_config_invalid"),
        (r#"{"schema":"memory-latch.governance/v1"}"#, 0o644, "governance_config_invalid"),
    ] {
        write_file(&file, body, mode);
        e.fails(&["checkpoint", "--next-step", "x"], code);
        let action = e.file("a.json", "x\n");
        e.fails(&["consent", "request", "--action-file", &action, "--summary", "s", "--risk", "low"], code);
        e.fails(&["recover"], code);
        assert_eq!(fs::read(&manifest).unwrap(), before, "{body}: nothing written");
    }
    // the file inside the workspace, named explicitly, is not the user's either
    let mut e = e;
    let inside = e.ws.join("governance.json");
    write_file(&inside, r#"{"schema":"memory-latch.governance/v1"}"#, 0o600);
    fs::remove_file(&file).unwrap();
    e.env.push(("MEMORY_LATCH_GOVERNANCE_FILE", inside));
    e.fails(&["checkpoint", "--next-step", "x"], "governance_config_invalid");
    // a named file that does not exist is refused, not the defaults
    e.env.pop();
    e.env.push(("MEMORY_LATCH_GOVERNANCE_FILE", e.w.home.join("missing.json")));
    e.fails(&["checkpoint", "--next-step", "x"], "governance_config_invalid");
    assert_eq!(fs::read(&manifest).unwrap(), before);
    // a valid file again: writes go on
    e.env.pop();
    write_file(&file, r#"{"schema":"memory-latch.governance/v1","checkpoint_freq_turns":7}"#, 0o600);
    e.ok(&["checkpoint", "--next-step", "x"]);
    assert_eq!(head_governance(&e)["checkpoint_freq_turns"], 7);
}

/// Composting retires by turns through the real hooks (seed 000), here the
/// user's `compost_retire_turns` 2: entries alone retire nothing; the
/// second turn after a decision retires it at the next entry.
#[test]
fn composting_retires_by_the_users_turns_through_the_hooks() {
    let host = "claude";
    let e = support::latch::env();
    write_file(&user_file(&e), r#"{"schema":"memory-latch.governance/v1","compost_retire_turns":2,"checkpoint_freq_turns":100}"#, 0o600);
    e.ok(&["init", "--objective", "ship"]);
    e.ok(&["checkpoint", "--decision", "keep-the-api"]);
    for i in 0..25 {
        e.ok(&["checkpoint", "--next-step", &format!("step-{i}")]);
    }
    let kept = |e: &support::latch::Env| e.status()["decisions"].as_array().unwrap().len();
    assert_eq!(kept(&e), 1, "25 entries in no turn retire nothing");
    assert_eq!(e.status()["decisions"][0]["turn"], 0);
    turn(&e, host);
    e.ok(&["checkpoint", "--next-step", "after-one-turn"]);
    assert_eq!(kept(&e), 1, "one turn later");
    turn(&e, host);
    e.ok(&["checkpoint", "--next-step", "after-two-turns"]);
    assert_eq!(kept(&e), 0, "two turns later: retired");
    e.ok(&["verify"]);
}
