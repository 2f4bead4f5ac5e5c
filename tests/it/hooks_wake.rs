//! session-hook extensions: continuity-break detection in UserPromptSubmit
//! (memory-latch) and the local wake checks in SessionStart(startup|resume)
//! (wake-check), through the real binary with real host payloads.

#![allow(clippy::unwrap_used)]

use crate::support;
use support::gate as support_gate;

use kijito_gate::Reentry;
use kijito_latch::{self as latch, Latch};
use kijito_protocol::ids::SessionId;
use serde_json::json;
use std::fs;
use std::path::Path;
use support::latch::{env, ups, Env};
use support_gate::*;

const DAY: u64 = 86_400_000;

impl Env {
    fn open_latch(&self) -> Latch {
        let mut c = latch::Config::new(&self.ws);
        c.boot_id_file = self.boot.clone();
        c.heads_dir = Some(self.w.home.join("latch-heads"));
        Latch::open(&c).unwrap()
    }

    /// Run the hook with `cwd` set to the workspace; returns the context.
    fn hook(&self, host: &str, expect: &str, key: &str, session: &str, edit: impl Fn(&mut serde_json::Value)) -> Option<String> {
        let mut p = payload(host, key);
        p["session_id"] = json!(session);
        p["transcript_path"] = json!(self.w.transcript.to_str().unwrap());
        p["cwd"] = json!(self.ws.to_str().unwrap());
        edit(&mut p);
        let out = self.session_hook(host, expect, &p);
        let schema = if expect == "SessionStart" { "session-start" } else { "user-prompt-submit" };
        assert_schema_valid(schema, &out.stdout);
        context_of(&out.stdout)
    }
}

fn prompt(text: &'static str) -> impl Fn(&mut serde_json::Value) {
    move |p| p["prompt"] = json!(text)
}

fn startup(host: &str) -> &'static str {
    if host == "codex" {
        "app-server:SessionStart:startup"
    } else {
        "SessionStart(source=startup)"
    }
}

#[test]
fn a_continuity_break_prompt_injects_the_recovery_protocol() {
    let e = env();
    for host in ["codex", "claude"] {
        let t = e.hook(host, "UserPromptSubmit", ups(host), "s1", prompt("Hmm, you FORGOT the plan?")).unwrap();
        assert!(t.contains("Continuity break signalled by the user (\"you forgot\")"), "{t}");
        // The exact absolute command for this workspace, which the command
        // guard accepts as the agent's own call (a bare `memory-latch
        // recover` is denied as not absolute).
        let bin_dir = Path::new(&support::bin("memory-latch")).parent().unwrap().to_owned();
        // It names this session and data dir, whose journal records it (docs/protocol.md §13).
        let expected = format!(
            "{}/memory-latch recover --workspace {} --session-id s1 --data-dir {}",
            bin_dir.display(),
            e.ws.display(),
            e.w.data_arg()
        );
        assert!(t.contains(&format!("run exactly `{expected}`")), "{t}");
        let dir = kijito_protocol::command::HelperDir::new(&bin_dir).unwrap();
        assert!(matches!(kijito_protocol::command::guard_line(&expected, Some(&dir)), kijito_protocol::command::Verdict::Helper(_)));
        // An ordinary prompt gets no output at all.
        assert_eq!(e.hook(host, "UserPromptSubmit", ups(host), "s1", prompt("please run the tests")), None);
        // No prompt field: nothing.
        assert_eq!(
            e.hook(host, "UserPromptSubmit", ups(host), "s1", |p| {
                p.as_object_mut().unwrap().remove("prompt");
            }),
            None
        );
    }
}

#[test]
fn recovery_joins_a_pending_reentry_in_one_context() {
    let e = env();
    let qa = e.w.qa_dir();
    let r = Reentry { session_id: SessionId::parse("s2").unwrap(), claimed_at_ms: now_ms(), reason: "no_pass".into(), attested: None };
    write_private(&qa.join("compaction-reentry.s2.json"), r.to_value().to_string().as_bytes());
    let t = e.hook("codex", "UserPromptSubmit", ups("codex"), "s2", prompt("start over")).unwrap();
    let reentry_at = t.find("UNATTESTED").unwrap();
    let recovery_at = t.find("Continuity break").unwrap();
    assert!(reentry_at < recovery_at, "re-entry first: {t}");
    // Delivered once: the next break prompt carries only the recovery text.
    let t = e.hook("codex", "UserPromptSubmit", ups("codex"), "s2", prompt("cache cleared")).unwrap();
    assert!(!t.contains("UNATTESTED") && t.contains("\"cache cleared\""), "{t}");
}

fn manifest_len(ws: &Path) -> usize {
    fs::read(ws.join(".memory-latch/_manifest.md")).unwrap().len()
}

#[test]
fn session_start_injects_wake_findings_after_a_long_sleep() {
    let e = env();
    e.open_latch().seed_history(3, now_ms() as u64 - 3 * DAY).unwrap();
    for host in ["codex", "claude"] {
        let t = e.hook(host, "SessionStart", startup(host), "s3", |_| {}).unwrap();
        assert!(t.contains("kijito-qa wake-check (local checks): trust mode CAUTIOUS"), "{t}");
        assert!(t.contains("Long sleep detected"));
        assert!(t.contains("- long_sleep (minor):") && t.contains("Step: Reload state"));
        // The emitted commands are still there.
        assert!(t.contains("pointer-snapshot") || t.contains("helper commands"), "{t}");
    }
    // resume too.
    let t = e.hook("claude", "SessionStart", "SessionStart(source=resume)", "s3", |_| {}).unwrap();
    assert!(t.contains("trust mode CAUTIOUS"));
    // Not on compact (re-entry owns that start).
    let t = e.hook("claude", "SessionStart", "SessionStart(source=compact)", "s3", |_| {});
    assert!(!t.unwrap_or_default().contains("wake-check"));
}

#[test]
fn session_start_is_quiet_when_trusted_and_records_degraded_mode() {
    let e = env();
    e.open_latch().init(now_ms() as u64, &latch::InitInput { objective: "o".into(), ..Default::default() }).unwrap();
    let t = e.hook("codex", "SessionStart", startup("codex"), "s4", |_| {}).unwrap();
    assert!(!t.contains("wake-check"), "{t}");
    // Degraded (an invalid recorded pointer): injected, and the hook appends
    // the one visible degraded_mode entry, as wake-check does; not twice.
    write_private(&e.w.qa().join("current-pointer.json"), b"{}");
    let before = manifest_len(&e.ws);
    let t = e.hook("codex", "SessionStart", startup("codex"), "s4", |_| {}).unwrap();
    assert!(t.contains("trust mode DEGRADED") && t.contains("pointer_record_invalid (degrading)"), "{t}");
    assert!(t.contains("degraded_mode entry 2 appended"), "{t}");
    assert!(manifest_len(&e.ws) > before);
    let head = e.open_latch().status(now_ms() as u64).unwrap().head;
    assert_eq!((head.seq, head.event, head.consent_state), (2, latch::Event::DegradedMode, latch::ConsentState::Locked));
    let after = manifest_len(&e.ws);
    e.hook("codex", "SessionStart", startup("codex"), "s4", |_| {}).unwrap();
    assert_eq!(manifest_len(&e.ws), after, "recorded once");
    // The review: a checkpoint after the human looked.
    e.open_latch()
        .checkpoint(now_ms() as u64, &latch::CheckpointInput { next_single_step: Some("reviewed".into()), ..Default::default() })
        .unwrap();
    // A boot change is reported from the latch in cwd.
    fs::remove_file(e.w.qa().join("current-pointer.json")).unwrap();
    fs::write(&e.boot, "99999999-8888-7777-6666-555555555555\n").unwrap();
    let t = e.hook("claude", "SessionStart", startup("claude"), "s4", |_| {}).unwrap();
    assert!(t.contains("boot_changed (minor)"), "{t}");
}

#[test]
fn session_start_without_a_latch_in_cwd_checks_only_qa() {
    let e = env();
    // A cwd that does not exist cannot be verified: cautious, never full trust.
    let t = e.hook("codex", "SessionStart", startup("codex"), "s5", |p| p["cwd"] = json!("/nonexistent/dir")).unwrap();
    assert!(t.contains("trust mode CAUTIOUS") && t.contains("workspace_missing (minor)"), "{t}");
    // An existing cwd without a latch, with QA state: only QA is checked.
    let t = e.hook("codex", "SessionStart", startup("codex"), "s5", |_| {}).unwrap();
    assert!(!t.contains("wake-check"), "{t}");
    // Stale QA state is still reported.
    let old = kijito_gate::Attempt {
        session_id: SessionId::parse("gone").unwrap(),
        recorded_at_ms: now_ms() - 3_600_000,
        trigger: "auto".into(),
        attested: false,
        reason: "no_pass".into(),
        compaction_nonce: None,
    };
    write_private(&e.w.qa().join("compaction-attempt.gone.json"), old.to_value().to_string().as_bytes());
    let t = e.hook("codex", "SessionStart", startup("codex"), "s5", |p| p["cwd"] = json!("/nonexistent/dir")).unwrap();
    assert!(t.contains("qa_attempt_unclaimed (minor)") && t.contains("invalidate --session-id gone"), "{t}");
}

/// `wake-check --hook`, what SessionStart runs: one `kijito.wake-check.hook/v1`
/// line with the context session-hook injects, whether the wake hold is
/// needed, and the findings; never with `--live` or `--json`.
#[test]
fn wake_check_hook_answers_the_session_start_line() {
    let e = env();
    e.open_latch().seed_history(3, now_ms() as u64 - 3 * DAY).unwrap();
    let run = |extra: &[&str]| {
        let mut c = e.command(&support::bin("wake-check"));
        c.arg("--hook").args(extra).arg("--data-dir").arg(&e.w.data).stdin(std::process::Stdio::null());
        c.output().unwrap()
    };
    let o = run(&["--workspace", e.ws.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(10), "cautious");
    let text = String::from_utf8(o.stdout).unwrap();
    assert_eq!(text.lines().count(), 1, "{text}");
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        (v["schema"].as_str(), v["mode"].as_str(), v["hold"].as_bool()),
        (Some("kijito.wake-check.hook/v1"), Some("cautious"), Some(true))
    );
    assert!(
        v["context"].as_str().unwrap().contains("trust mode CAUTIOUS") && v["context"].as_str().unwrap().contains("Long sleep detected"),
        "{v}"
    );
    assert!(v["findings"].as_array().unwrap().iter().any(|c| c == "long_sleep"), "{v}");
    assert!(v["checkedAtMs"].as_u64().unwrap() > 0);
    // Without --workspace no latch is checked (the hook input had no cwd):
    // QA only, and with no QA state nothing is verifiable (never full trust).
    let v: serde_json::Value = serde_json::from_slice(&run(&[]).stdout).unwrap();
    assert_eq!((v["mode"].as_str(), v["hold"].as_bool()), (Some("cautious"), Some(false)), "{v}");
    assert_eq!(v["findings"], json!(["nothing_verifiable"]), "{v}");
    for bad in ["--json", "--live"] {
        let o = run(&[bad]);
        assert_eq!(o.status.code(), Some(2), "{bad}");
        assert!(String::from_utf8_lossy(&o.stderr).contains("conflicting_flags"), "{bad}: {}", String::from_utf8_lossy(&o.stderr));
    }
}

/// Every wake-check run with findings leaves a durable latch entry (seed
/// 001): a `wake_findings` entry listing them. Its own
/// timestamp does not end the long sleep: two checks in a row (the binary,
/// then SessionStart's) both report it, and the entry is written once.
#[test]
fn wake_findings_are_recorded_and_do_not_end_the_long_sleep() {
    let e = env();
    e.open_latch().seed_history(3, now_ms() as u64 - 3 * DAY).unwrap();
    let (code, first) = e.wake(&[]);
    assert_eq!(code, 10, "{first}");
    assert_eq!(first["longSleep"], true, "{first}");
    let manifest = fs::read_to_string(e.ws.join(".memory-latch/_manifest.md")).unwrap();
    assert!(manifest.contains("wake_findings") && manifest.contains("long_sleep (minor)"), "{manifest}");
    let head = e.open_latch().status(now_ms() as u64).unwrap().head;
    assert_eq!((head.seq, head.event), (4, latch::Event::WakeFindings));
    let (code, second) = e.wake(&[]);
    assert_eq!((code, &second["longSleep"]), (10, &json!(true)), "the record did not end the sleep: {second}");
    let t = e.hook("claude", "SessionStart", startup("claude"), "s6", |_| {}).unwrap();
    assert!(t.contains("Long sleep detected"), "{t}");
    assert_eq!(e.open_latch().status(now_ms() as u64).unwrap().head.seq, 4, "the same findings are recorded once");
    assert!(e.open_latch().verify_fast().trusted, "the chain still verifies");
}

/// Moved from shared/hooks/tests/it/wake_start.rs (the checks now run in the
/// real `wake-check --hook`): an hmac latch keyed from the hook's
/// environment is full trust and quiet, `clear` runs no wake check, and a
/// tampered chain is DEGRADED (`latch_untrusted`).
#[test]
fn session_start_checks_an_hmac_latch_from_the_environment_and_a_tampered_chain() {
    let mut e = env();
    let key = e.w.dir().join("hmac.key");
    write_private(&key, &[9u8; 64]);
    e.env.push((latch::HMAC_KEY_ENV, key.clone()));
    let mut c = latch::Config::new(&e.ws);
    c.boot_id_file = e.boot.clone();
    c.heads_dir = Some(e.w.home.join("latch-heads"));
    c.hmac_key_file = Some(key);
    let l = Latch::open(&c).unwrap();
    l.init(now_ms() as u64 - 1000, &latch::InitInput { objective: "o".into(), want_hmac: true, ..Default::default() }).unwrap();
    let t = e.hook("codex", "SessionStart", startup("codex"), "s7", |_| {}).unwrap();
    assert!(!t.contains("wake-check (local checks)"), "full trust is quiet: {t}");
    let text = fs::read_to_string(&l.paths().manifest).unwrap();
    fs::write(&l.paths().manifest, text.replacen("\"o\"", "\"p\"", 1)).unwrap();
    let t = e.hook("codex", "SessionStart", startup("codex"), "s7", |p| p["source"] = json!("clear"));
    assert!(!t.unwrap_or_default().contains("wake-check (local checks)"), "clear runs no wake check");
    let t = e.hook("codex", "SessionStart", startup("codex"), "s7", |_| {}).unwrap();
    assert!(t.starts_with("kijito-qa wake-check (local checks): trust mode DEGRADED.") && t.contains("latch_untrusted"), "{t}");
}
