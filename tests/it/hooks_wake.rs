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
        let expected = format!("{}/memory-latch recover --workspace {}", bin_dir.display(), e.ws.display());
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
    let qa = e.w.qa();
    kijito_files::private::ensure_private_dir(&e.w.data).unwrap();
    kijito_files::private::ensure_private_dir(&qa).unwrap();
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
