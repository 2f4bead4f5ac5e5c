//! Context nudges and the after-claim notice through the real hook binaries
//!: a transcript whose last assistant usage crosses
//! `qaAtContextRatio` makes UserPromptSubmit add one line for the model and
//! Stop show the user one message, each once per 10 percentage points, never
//! with a valid pass; after a claimed compaction Stop says once that the next
//! compaction will be UNATTESTED unless QA runs again.
#![allow(clippy::unwrap_used)]

use crate::support;
use support::gate as support_gate;

use serde_json::{json, Value};
use std::io::Write;
use support_gate::*;

const CODEX_S: &str = "01a2295e-6929-7981-9da7-935145fb97be";
const CLAUDE_S: &str = "2208dc6c-1602-4db0-9c33-9125ee25dc44";

fn hook(w: &World, host: &str, expect: &str, stdin: &[u8]) -> Option<Value> {
    let out = w.run(&support::bin("session-hook"), &["--host", host, "--expect", expect, "--data-dir", &w.data_arg()], stdin);
    assert_eq!(out.status.code(), Some(0));
    let schema = if expect == "Stop" { "stop" } else { "user-prompt-submit" };
    assert_schema_valid(schema, &out.stdout);
    (!out.stdout.is_empty()).then(|| serde_json::from_slice(&out.stdout).unwrap())
}

/// Append one usage line of the host's real shape: `used` of a 200000 (Claude
/// Sonnet) or 258400 (Codex) window.
fn grow(w: &World, host: &str, used: u64) {
    let line = match host {
        "claude" => {
            json!({"type": "assistant", "isSidechain": false, "message": {"model": "claude-sonnet-4-5-20250929", "role": "assistant",
            "usage": {"input_tokens": 10, "cache_creation_input_tokens": 0, "cache_read_input_tokens": used - 10, "output_tokens": 5}}})
        }
        _ => json!({"type": "event_msg", "payload": {"type": "token_count", "info": {
            "last_token_usage": {"input_tokens": used, "total_tokens": used}, "model_context_window": 258_400}}}),
    };
    let mut f = std::fs::OpenOptions::new().append(true).open(&w.transcript).unwrap();
    writeln!(f, "{line}").unwrap();
}

fn window(host: &str) -> u64 {
    if host == "claude" {
        200_000
    } else {
        258_400
    }
}

fn keys(host: &str) -> (&'static str, &'static str, &'static str) {
    match host {
        "claude" => ("UserPromptSubmit", "Stop", CLAUDE_S),
        _ => ("app-server:UserPromptSubmit", "app-server:Stop", CODEX_S),
    }
}

#[test]
fn nudges_once_per_ten_points_and_never_with_a_valid_pass() {
    for host in ["codex", "claude"] {
        let w = World::new();
        let (ups, stop, s) = keys(host);
        let prompt = w.hook_stdin(host, ups, s);
        let stop_in = w.hook_stdin(host, stop, s);
        let at = |r: f64| (window(host) as f64 * r) as u64;
        // below the default threshold (0.6): nothing
        grow(&w, host, at(0.41));
        assert_eq!(hook(&w, host, "UserPromptSubmit", &prompt), None);
        assert_eq!(hook(&w, host, "Stop", &stop_in), None);
        // crossing: one line for the model, one message for the user
        grow(&w, host, at(0.635));
        let v = hook(&w, host, "UserPromptSubmit", &prompt).expect("nudge");
        let ctx = v["hookSpecificOutput"]["additionalContext"].as_str().unwrap();
        assert_eq!(ctx.lines().count(), 1, "{ctx}");
        assert!(ctx.contains("context at 63%") && ctx.contains("kijito-memory-qa") && ctx.contains("compaction"), "{ctx}");
        let v = hook(&w, host, "Stop", &stop_in).expect("stop nudge");
        assert!(v["systemMessage"].as_str().unwrap().contains("context at 63%"), "{v}");
        assert!(v.get("decision").is_none(), "never blocks");
        // the same band again: silent
        grow(&w, host, at(0.68));
        assert_eq!(hook(&w, host, "UserPromptSubmit", &prompt), None);
        assert_eq!(hook(&w, host, "Stop", &stop_in), None);
        // the next band: once more
        grow(&w, host, at(0.71));
        assert!(hook(&w, host, "UserPromptSubmit", &prompt).is_some());
        assert!(hook(&w, host, "Stop", &stop_in).is_some());
        // a valid pass: never (Stop shows the pass reminder instead); only
        // the compaction's own prompt keeps a pass (any other withdraws it,
        // tests/it/hooks_new_turn.rs)
        w.record_ok(s);
        grow(&w, host, at(0.83));
        let mut compact: Value = serde_json::from_slice(&prompt).unwrap();
        compact["prompt"] = json!("/compact");
        assert_eq!(hook(&w, host, "UserPromptSubmit", compact.to_string().as_bytes()), None);
        let v = hook(&w, host, "Stop", &stop_in).unwrap();
        assert!(v["systemMessage"].as_str().unwrap().contains("waits for compaction"), "{v}");
        // the state file is owner-only in the private QA dir
        let st = std::fs::metadata(w.qa().join(format!("nudge.{s}.json"))).unwrap();
        assert_eq!(std::os::unix::fs::PermissionsExt::mode(&st.permissions()) & 0o777, 0o600);
        // the flight recorder: one context_sample per Stop, rising with the
        // transcript (docs/protocol.md §13), in a chain that verifies
        let samples: Vec<f64> =
            w.journal(s).iter().filter(|v| v["kind"] == "context_sample").map(|v| v["ratio"].as_f64().unwrap()).collect();
        assert_eq!(samples.len(), 5, "{host}: {samples:?}");
        assert!(samples.windows(2).all(|p| p[0] < p[1]) && samples[0] > 0.3 && samples[4] < 0.95, "{host}: {samples:?}");
    }
}

#[test]
fn the_threshold_comes_from_the_config_and_an_unknown_ratio_never_nudges() {
    let w = World::new();
    w.write_config(&json!({"qaAtContextRatio": 0.8}));
    let (ups, _, s) = keys("claude");
    let prompt = w.hook_stdin("claude", ups, s);
    grow(&w, "claude", 150_000); // 75%
    assert_eq!(hook(&w, "claude", "UserPromptSubmit", &prompt), None);
    grow(&w, "claude", 165_000); // 82%
    let v = hook(&w, "claude", "UserPromptSubmit", &prompt).expect("nudge at 80%");
    assert!(v["hookSpecificOutput"]["additionalContext"].as_str().unwrap().contains("threshold 80%"));
    // a compaction boundary after the usage: the ratio is unknown, so silent
    let mut f = std::fs::OpenOptions::new().append(true).open(&w.transcript).unwrap();
    writeln!(f, "{}", json!({"type": "system", "subtype": "compact_boundary"})).unwrap();
    grow(&w, "claude", 10); // and a new turn far below
    grow(&w, "claude", 190_000); // then up again: a new crossing nudges again
    assert!(hook(&w, "claude", "UserPromptSubmit", &prompt).is_some());
}

#[test]
fn a_hostile_state_file_is_not_followed() {
    let w = World::new();
    let (ups, _, s) = keys("codex");
    let prompt = w.hook_stdin("codex", ups, s);
    grow(&w, "codex", 200_000);
    assert!(hook(&w, "codex", "UserPromptSubmit", &prompt).is_some());
    // replace the state with a symlink to a file we own: never written through
    let state = w.qa().join(format!("nudge.{s}.json"));
    let target = w.path("victim.txt");
    std::fs::write(&target, "keep").unwrap();
    std::fs::remove_file(&state).unwrap();
    std::os::unix::fs::symlink(&target, &state).unwrap();
    grow(&w, "codex", 240_000);
    let _ = hook(&w, "codex", "UserPromptSubmit", &prompt);
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep");
}

#[test]
fn after_a_claim_stop_says_once_that_the_next_compaction_is_unattested() {
    for host in ["codex", "claude"] {
        let w = World::new();
        let (_, stop, s) = keys(host);
        let (pre, post) = match host {
            "claude" => ("PreCompact(manual, no args)", "PostCompact(manual)"),
            _ => ("app-server:PreCompact:manual", "app-server:PostCompact:manual"),
        };
        w.record_ok(s);
        let out = w.run(&support::bin("precompact"), &["--host", host, "--data-dir", &w.data_arg()], &w.hook_stdin(host, pre, s));
        assert_eq!(out.status.code(), Some(0));
        let out = w.run(&support::bin("postcompact"), &["--host", host, "--data-dir", &w.data_arg()], &w.hook_stdin(host, post, s));
        assert_eq!(out.status.code(), Some(0));
        let stop_in = w.hook_stdin(host, stop, s);
        let v = hook(&w, host, "Stop", &stop_in).expect("notice");
        let m = v["systemMessage"].as_str().unwrap();
        assert!(m.contains("next compaction") && m.contains("UNATTESTED"), "{m}");
        assert_eq!(hook(&w, host, "Stop", &stop_in), None, "once per claim");
    }
}
