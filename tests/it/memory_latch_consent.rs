//! memory-latch consent: only the user's own message confirms. Each attack
//! on the confirmation runs against the real binaries (memory-latch, the
//! session-hook with real host payloads, the PreToolUse guard) and real files.

#![allow(clippy::unwrap_used)]

use crate::support;
use support::gate as support_gate;

use serde_json::{json, Value};
use std::fs;
use support_gate::*;

/// A latch world ([`support::latch::Env`]) with this file's consent helpers
/// (a type of its own: the other latch test modules of this binary add theirs).
struct Env(support::latch::Env);

impl std::ops::Deref for Env {
    type Target = support::latch::Env;
    fn deref(&self) -> &support::latch::Env {
        &self.0
    }
}

fn env() -> Env {
    let e = Env(support::latch::env());
    e.ok(&["init", "--objective", "ship memory-latch v2", "--next-step", "write the tests"]);
    e
}

impl Env {
    fn ledger(&self) -> String {
        fs::read_to_string(self.ws.join(".memory-latch/tokens.json")).unwrap()
    }
}

fn check_code(report: &Value, name: &str) -> Value {
    report["checks"].as_array().unwrap().iter().find(|c| c["name"] == name).unwrap()["code"].clone()
}

#[test]
fn a_tool_call_can_never_confirm_its_own_consent() {
    let e = env();
    let action = e.file("action.txt", "git push --force origin main\n");
    let token = e.request_token(&action, "medium");
    // The agent saw the token on its own stdout and tries to confirm it.
    e.fails(&["consent", "confirm", "--action-file", &action, "--message", &token], "consent_requires_user_message");
    assert_eq!(e.status()["head"]["consent_state"], "pending");
    let (code, r) = e.gate(&action);
    assert_eq!(code, 1);
    assert_eq!(check_code(&r, "consent_integrity"), "consent_not_authorized");
    // The guard denies it before the binary even runs; exact grammar passes.
    let dir = helper_dir();
    let bin = dir.join("memory-latch");
    for host in ["claude", "codex"] {
        let deny = e.guard(host, &format!("{} consent confirm --action-file {action} --message {token}", bin.display())).expect("denied");
        assert!(deny.contains("command_unknown_subcommand"), "{deny}");
        let deny = e.guard(host, &format!("memory-latch consent confirm --message {token}")).expect("bare name denied");
        assert!(deny.contains("command guard: denied"), "{deny}");
        let deny = e.guard(host, &format!("{} reseed --message {token}", bin.display())).expect("reseed --message denied");
        assert!(deny.contains("command_unknown_flag"), "{deny}");
        let deny = e.guard(host, &format!("{} gate --action-file {action} --reconfirmed", bin.display())).expect("no flag reconfirms");
        assert!(deny.contains("command_unknown_flag"), "{deny}");
        assert_eq!(e.guard(host, &format!("{} status --json --workspace {}", bin.display(), e.ws.display())), None);
        assert_eq!(e.guard(host, &format!("{} consent request --action-file {action} --summary deploy --risk low", bin.display())), None);
        let wake = dir.join("wake-check");
        assert_eq!(e.guard(host, &format!("{} --json --workspace {}", wake.display(), e.ws.display())), None);
        assert!(e.guard(host, &format!("{} --json --workspace {} --evil", wake.display(), e.ws.display())).is_some());
    }
    // Reseed by command is refused the same way.
    e.fails(&["reseed", "--message", &token], "consent_requires_user_message");
    // The model typing the token into a tool call is not the user's message.
    assert_eq!(e.status()["head"]["consent_state"], "pending");
}

#[test]
fn the_users_own_standalone_message_confirms_once() {
    let e = env();
    let action = e.file("action.txt", "git push --force origin main\n");
    let token = e.request_token(&action, "medium");
    // Not standalone: no confirmation, and no wrong attempt either.
    assert_eq!(e.user_says("claude", &format!("yes {token}")), None);
    assert_eq!(e.status()["head"]["consent_state"], "pending");
    let t = e.user_says("claude", &format!("  {}\n", token.to_lowercase())).unwrap();
    assert!(t.contains("the USER confirmed consent token"), "{t}");
    let s = e.status();
    assert_eq!(s["head"]["consent_state"], "authorized");
    assert_eq!(s["head"]["event"], "consent_confirm");
    // Single use: the same message again changes nothing.
    let t = e.user_says("codex", &token).unwrap();
    assert!(t.contains("NOT accepted (consent_already_confirmed"), "{t}");
    let (code, r) = e.gate(&action);
    assert_eq!(code, 0, "{r}");
    // The gate consumed it: a replay of the message or the gate fails.
    let t = e.user_says("claude", &token).unwrap();
    assert!(t.contains("consent_token_replayed"), "{t}");
    let (code, r) = e.gate(&action);
    assert_eq!((code, check_code(&r, "consent_integrity")), (1, json!("consent_not_authorized")));
}

#[test]
fn high_risk_needs_a_second_separate_user_message() {
    let e = env();
    let action = e.file("action.txt", "DROP TABLE users;\n");
    let token = e.request_token(&action, "high");
    let t = e.user_says("claude", &token).unwrap();
    assert!(t.contains("High risk needs a second, separate message"), "{t}");
    assert_eq!(e.status()["head"]["consent_state"], "pending");
    let (code, r) = e.gate(&action);
    assert_eq!((code, check_code(&r, "consent_integrity")), (1, json!("consent_not_authorized")));
    // The old flag is gone: a usage error, not a bypass.
    let args = e.gate_args(&action, &["--reconfirmed"]);
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    assert_eq!(e.latch(&refs).status.code(), Some(2));
    let t = e.user_says("claude", &token).unwrap();
    assert!(t.contains("the USER confirmed consent token") && t.contains("high risk"), "{t}");
    let (code, r) = e.gate(&action);
    assert_eq!(code, 0, "{r}");
    assert_eq!(check_code(&r, "risk_gate"), Value::Null);
}

#[test]
fn five_wrong_standalone_attempts_lock_every_live_token() {
    let e = env();
    let action = e.file("action.txt", "deploy\n");
    let token = e.request_token(&action, "low");
    let wrong = if token == "ACT-ZZZZZZ" { "ACT-YYYYYY" } else { "ACT-ZZZZZZ" };
    for left in (0..5).rev() {
        let t = e.user_says("claude", wrong).unwrap();
        assert!(t.contains(&format!("({left} attempt(s) left")), "{t}");
    }
    let t = e.user_says("claude", &token).unwrap();
    assert!(t.contains("consent_token_locked"), "{t}");
    assert_eq!(e.status()["head"]["consent_state"], "pending");
    let ledger: Value = serde_json::from_str(&e.ledger()).unwrap();
    assert_eq!(ledger["tokens"][0]["failed_attempts"], 5);
}

#[test]
fn the_ledger_holds_only_salted_hashes_and_a_guess_buys_nothing() {
    let e = env();
    let action = e.file("action.txt", "deploy\n");
    let t1 = e.request_token(&action, "low");
    let t2 = e.request_token(&action, "low");
    let ledger = e.ledger();
    for t in [&t1, &t2] {
        assert!(!ledger.contains(t.as_str()) && !ledger.contains(&t[4..]) && !ledger.contains(&t[4..].to_lowercase()));
    }
    let v: Value = serde_json::from_str(&ledger).unwrap();
    let salts: Vec<&str> = v["tokens"].as_array().unwrap().iter().map(|t| t["salt"].as_str().unwrap()).collect();
    assert_eq!(salts.len(), 2);
    assert_ne!(salts[0], salts[1], "a salt per token");
    // Even with the right token (as an offline guess would find it), no
    // command confirms: only the user's message does.
    e.fails(&["consent", "confirm", "--action-file", &action, "--message", &t2], "consent_requires_user_message");
    // The superseded first token is refused even from the user.
    let t = e.user_says("claude", &t1).unwrap();
    assert!(t.contains("consent_token_superseded"), "{t}");
}

#[test]
fn a_changed_action_fails_the_gate_after_confirmation() {
    let e = env();
    let action = e.file("action.txt", "git push origin main\n");
    let token = e.request_token(&action, "low");
    e.user_says("claude", &token).unwrap();
    let changed = e.file("action.txt", "git push --force origin main\n");
    let (code, r) = e.gate(&changed);
    assert_eq!((code, check_code(&r, "consent_integrity")), (1, json!("consent_action_changed")));
}

#[test]
fn copying_back_an_authorized_manifest_does_not_replay_consent() {
    let e = env();
    let action = e.file("action.txt", "rm -rf build\n");
    let token = e.request_token(&action, "low");
    e.user_says("claude", &token).unwrap();
    let dir = e.ws.join(".memory-latch");
    let saved_manifest = fs::read(dir.join("_manifest.md")).unwrap();
    let saved_ledger = fs::read(dir.join("tokens.json")).unwrap();
    let (code, r) = e.gate(&action);
    assert_eq!(code, 0, "{r}");
    // The attack: put the authorized state back and run the gate again.
    kijito_files::private::write_atomic(&dir.join("_manifest.md"), &saved_manifest).unwrap();
    kijito_files::private::write_atomic(&dir.join("tokens.json"), &saved_ledger).unwrap();
    let o = e.latch(&["verify", "--json"]);
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["trusted"], false);
    let codes: Vec<&str> = v["findings"].as_array().unwrap().iter().map(|f| f["code"].as_str().unwrap()).collect();
    // One entry behind its head record: an older copy and a dropped last
    // entry look the same here; both are refused.
    assert!(codes == ["latch_rolled_back"] || codes == ["latch_truncated"], "{codes:?}");
    e.fails(&["gate", "--action-file", &action], "silent_witness_active");
}

#[test]
fn reseed_only_from_the_users_message() {
    let e = env();
    let m = e.ws.join(".memory-latch/_manifest.md");
    let text = fs::read_to_string(&m).unwrap();
    fs::write(&m, text.replacen("write the tests", "write the tasts", 1)).unwrap();
    e.fails(&["verify"], "latch_untrusted");
    let out = e.ok(&["reseed"]);
    assert!(out.contains("the USER sends only this token"), "{out}");
    let at = out.find("ACT-").unwrap();
    let token = &out[at..at + 10];
    e.fails(&["reseed", "--message", token], "consent_requires_user_message");
    let t = e.user_says("claude", token).unwrap();
    assert!(t.contains("confirmed the reseed token") && t.contains("trusted: false"), "{t}");
    assert!(!e.ws.join(".memory-latch/silent-witness.json").exists());
    e.ok(&["verify"]);
    e.ok(&["checkpoint", "--next-step", "back to work"]);
    let t = e.user_says("claude", token).unwrap();
    assert!(t.contains("consent_token_replayed"), "{t}");
}

#[test]
fn a_token_in_a_directory_without_a_latch_confirms_nothing() {
    let e = env();
    let elsewhere = e.w.dir().join("other");
    fs::create_dir(&elsewhere).unwrap();
    let mut p = payload("claude", "UserPromptSubmit");
    p["session_id"] = json!("s1");
    p["transcript_path"] = json!(e.w.transcript.to_str().unwrap());
    p["cwd"] = json!(elsewhere.to_str().unwrap());
    p["prompt"] = json!("ACT-23456A");
    let out = e.session_hook("claude", "UserPromptSubmit", &p);
    let t = context_of(&out.stdout).unwrap();
    assert!(t.contains("nothing was confirmed"), "{t}");
}

/// Degraded mode (a `degraded_mode` entry locks consent)
/// survives the agent's own checkpoint and consent request; only the user's
/// own message with the token of `memory-latch review` ends it, once.
#[test]
fn degraded_mode_ends_only_on_the_users_review_token() {
    let e = env();
    // A degrading finding: the QA data dir's pointer record is unreadable.
    let qa = e.w.qa_dir();
    kijito_files::private::write_atomic(&qa.join("current-pointer.json"), b"not json").unwrap();
    let codes =
        |v: &Value| -> Vec<String> { v["findings"].as_array().unwrap().iter().map(|f| f["code"].as_str().unwrap().to_owned()).collect() };
    let (code, _) = e.wake(&[]);
    assert_eq!(code, 20);
    assert_eq!(
        (e.status()["head"]["event"].as_str(), e.status()["head"]["consent_state"].as_str()),
        (Some("degraded_mode"), Some("locked"))
    );
    fs::remove_file(qa.join("current-pointer.json")).unwrap();
    // The agent's own checkpoint does not end it (it did before).
    e.ok(&["checkpoint", "--next-step", "carry on as if nothing happened"]);
    assert_eq!(e.status()["head"]["consent_state"], "locked");
    let (code, v) = e.wake(&[]);
    assert_eq!((code, codes(&v)), (20, vec!["latch_degraded_unreviewed".to_owned()]), "{v}");
    // Nor does a consent request (it used to set consent back to pending).
    let action = e.file("action.txt", "rm -rf build\n");
    e.fails(&["consent", "request", "--action-file", &action, "--summary", "clean", "--risk", "low"], "consent_locked_until_review");
    // The review token: never confirmed by a command, only by the user's message.
    let out = e.ok(&["review"]);
    assert!(out.contains("the USER sends only this token"), "{out}");
    let at = out.find("ACT-").unwrap();
    let token = out[at..at + 10].to_owned();
    e.fails(&["review", "--message", &token], "consent_requires_user_message");
    assert_eq!(e.status()["head"]["consent_state"], "locked");
    let t = e.user_says("codex", &token).unwrap();
    assert!(t.contains("confirmed the review token") && t.contains("degraded mode ends"), "{t}");
    let head = &e.status()["head"];
    assert_eq!((head["event"].as_str(), head["consent_state"].as_str()), (Some("review"), Some("pending")), "{head}");
    assert_eq!(e.wake(&[]).0, 0);
    // Once: the token is spent, and there is nothing left to review.
    assert!(e.user_says("claude", &token).unwrap().contains("consent_token_replayed"));
    e.fails(&["review"], "review_not_needed");
    // Consent works again.
    e.request_token(&action, "low");
}

/// A UserPromptSubmit whose input carries `agent_id` or
/// `agent_type` is a subagent's prompt (written by the main agent), so it
/// confirms nothing and counts no wrong attempt (refused with
/// `consent_from_subagent`); the user's own prompt then still confirms.
#[test]
fn a_subagents_prompt_confirms_no_token() {
    let e = env();
    let action = e.file("action.txt", "git push --force origin main\n");
    let token = e.request_token(&action, "low");
    let ledger = e.ledger();
    for (host, key) in [("claude", "agent_id"), ("codex", "agent_type"), ("claude", "agent_type")] {
        let mut p = payload(host, support::latch::ups(host));
        p["session_id"] = json!("s1");
        p["transcript_path"] = json!(e.w.transcript.to_str().unwrap());
        p["cwd"] = json!(e.ws.to_str().unwrap());
        p["prompt"] = json!(token);
        p[key] = json!("verifier-1");
        let out = e.hook_bin(&SESSION_HOOK, host, "UserPromptSubmit", &p);
        let ctx = context_of(&out.stdout).unwrap_or_default();
        assert!(!ctx.contains("USER confirmed") && ctx.contains("consent_from_subagent"), "{host} {key}: {ctx}");
        assert_eq!(e.status()["head"]["consent_state"], "pending", "{host} {key}");
        assert_eq!(e.ledger(), ledger, "{host} {key}: nothing counted");
    }
    assert!(e.user_says("claude", &token).unwrap().contains("the USER confirmed consent token"));
}
