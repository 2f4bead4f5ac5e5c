//! `summaryCarried` (docs/protocol.md §7, "Summary check") through the real
//! hook binaries: the claim record says whether the compaction summary kept
//! the four pointer values, the re-entry text and `kijito-compact status`
//! show it. Hook order as measured on the real hosts: Claude Code runs
//! SessionStart(compact) before PostCompact (only PostCompact has
//! `compact_summary`); Codex gives no hook a summary.
#![allow(clippy::unwrap_used)]

use crate::support;
use support::gate::*;

use kijito_compact::trigger::{write_request, Request, RequestState};
use kijito_gate::QaDir;
use kijito_protocol::ids::{AbsPath, SessionId};
use serde_json::{json, Value};
use std::fs;

const CLAUDE_S: &str = "2208dc6c-1602-4db0-9c33-9125ee25dc44";
const CODEX_S: &str = "01a2295e-6929-7981-9da7-935145fb97be";
const COMPACT: &str = env!("CARGO_BIN_EXE_kijito-compact");

fn run_hook(w: &World, bin: &str, args: &[&str], stdin: &[u8]) -> Vec<u8> {
    let mut all = args.to_vec();
    let data = w.data_arg();
    all.extend(["--data-dir", data.as_str()]);
    let out = w.run(bin, &all, stdin);
    assert_eq!(out.status.code(), Some(0), "{bin} always exits 0");
    out.stdout
}

/// Claude PreCompact: the summariser text (attested) or nothing.
fn claude_precompact(w: &World) -> String {
    String::from_utf8(run_hook(w, &PRECOMPACT, &["--host", "claude"], &w.hook_stdin("claude", "PreCompact(manual, no args)", CLAUDE_S)))
        .unwrap()
}

/// A PostCompact stdin of `host` with `compact_summary` replaced (None: removed).
fn postcompact_stdin(w: &World, host: &str, session: &str, summary: Option<Value>) -> Vec<u8> {
    let key = if host == "claude" { "PostCompact(manual)" } else { "app-server:PostCompact:manual" };
    let mut v: Value = serde_json::from_slice(&w.hook_stdin(host, key, session)).unwrap();
    match summary {
        Some(s) => v["compact_summary"] = s,
        None => {
            v.as_object_mut().unwrap().remove("compact_summary");
        }
    }
    v.to_string().into_bytes()
}

fn postcompact(w: &World, host: &str, stdin: &[u8]) -> Value {
    let out = run_hook(w, &POSTCOMPACT, &["--host", host], stdin);
    assert_schema_valid("post-compact", &out);
    serde_json::from_slice(&out).unwrap()
}

fn session_start(w: &World, host: &str, session: &str) -> Option<String> {
    let key = if host == "claude" { "SessionStart(source=compact)" } else { "app-server:SessionStart:compact" };
    let out = run_hook(w, &SESSION_HOOK, &["--host", host, "--expect", "SessionStart"], &w.hook_stdin(host, key, session));
    context_of(&out)
}

fn user_prompt(w: &World, host: &str, session: &str) -> Option<String> {
    let out =
        run_hook(w, &SESSION_HOOK, &["--host", host, "--expect", "UserPromptSubmit"], &w.hook_stdin(host, "UserPromptSubmit", session));
    context_of(&out)
}

fn record(w: &World, name: &str) -> Value {
    serde_json::from_slice(&fs::read(w.qa().join(name)).unwrap()).unwrap()
}

fn check_of(r: &Value) -> (Value, Value) {
    (r["summaryCarried"].clone(), r["summaryCheck"].clone())
}

/// What a summariser that obeys the PreCompact text writes: Claude Code's
/// `<analysis>` + `<summary>` with the five lines at the end of the summary.
fn obeying_summary(request: &str) -> String {
    let lines: Vec<&str> = request.lines().skip(1).collect();
    format!("<analysis>the user asked for work</analysis>\n<summary>1. Work so far: tests pass.\n\n{}</summary>", lines.join("\n"))
}

#[test]
fn claude_session_start_claims_pending_then_postcompact_records_carried() {
    let w = World::new();
    let ready = w.record_ok(CLAUDE_S);
    let request = claude_precompact(&w);
    assert!(request.starts_with("kijito-qa: end the summary with these five lines"), "{request}");
    // SessionStart(compact) first: claimed and delivered, the check is pending.
    let text = session_start(&w, "claude", CLAUDE_S).expect("re-entry");
    assert!(text.contains("ATTESTED") && text.contains("summaryCarried: pending"), "{text}");
    let delivered = format!("compaction-reentry-delivered.{CLAUDE_S}.json");
    let r = record(&w, &delivered);
    assert_eq!(r["schemaVersion"], 2);
    assert_eq!(r["compactionNonce"], ready["compactionNonce"]);
    assert_eq!(check_of(&r), (Value::Null, json!("pending")));
    // PostCompact with the summary: the verdict, and one line for the user.
    let post = postcompact(&w, "claude", &postcompact_stdin(&w, "claude", CLAUDE_S, Some(json!(obeying_summary(&request)))));
    assert_eq!(
        post["systemMessage"],
        "kijito-qa: the compaction summary kept the pointer id, lock id and both digests (summaryCarried: true)"
    );
    let r = record(&w, &delivered);
    assert_eq!(check_of(&r), (json!(true), json!("carried")));
    let keys: Vec<&str> = r.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(keys.last(), Some(&"summaryCheck"));
    // A second PostCompact changes nothing and says nothing.
    let again = postcompact(&w, "claude", &postcompact_stdin(&w, "claude", CLAUDE_S, Some(json!("nothing"))));
    assert_eq!(again, json!({"continue": true}));
    assert_eq!(check_of(&record(&w, &delivered)), (json!(true), json!("carried")));
    // kijito-compact status shows it for the request of this pass.
    let status = compact_status(&w, CLAUDE_S, ready["compactionNonce"].as_str().unwrap());
    assert_eq!(
        (&status["state"], &status["summaryCarried"], &status["summaryCheck"]),
        (&json!("compacted"), &json!(true), &json!("carried"))
    );
    let keys: Vec<&str> = status.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(&keys[keys.len() - 3..], ["summaryCarried", "summaryCheck", "type"]);
}

#[test]
fn a_summary_that_drops_any_value_is_false() {
    let (pd, sd) = ("pointer-digest", "snapshot-digest");
    for drop in ["kijito-pointer-id", "kijito-lock-message-id", pd, sd, "analysis-only"] {
        let w = World::new();
        w.record_ok(CLAUDE_S);
        let request = claude_precompact(&w);
        session_start(&w, "claude", CLAUDE_S).unwrap();
        let summary = if drop == "analysis-only" {
            // Claude Code keeps only the <summary> block: values in the analysis are lost.
            format!("<analysis>{}</analysis>\n<summary>work so far</summary>", request)
        } else {
            obeying_summary(&request).lines().filter(|l| !l.contains(drop)).collect::<Vec<_>>().join("\n")
        };
        let post = postcompact(&w, "claude", &postcompact_stdin(&w, "claude", CLAUDE_S, Some(json!(summary))));
        assert!(post["systemMessage"].as_str().unwrap().contains("summaryCarried: false"), "{drop}: {post}");
        let r = record(&w, &format!("compaction-reentry-delivered.{CLAUDE_S}.json"));
        assert_eq!(check_of(&r), (json!(false), json!("values_missing")), "{drop}");
    }
}

#[test]
fn claude_postcompact_claiming_first_puts_the_verdict_in_the_reentry_text() {
    let w = World::new();
    w.record_ok(CLAUDE_S);
    let request = claude_precompact(&w);
    // The SessionStart hook never ran: PostCompact claims, with the summary in hand.
    let post = postcompact(&w, "claude", &postcompact_stdin(&w, "claude", CLAUDE_S, Some(json!(obeying_summary(&request)))));
    assert!(post["systemMessage"].as_str().unwrap().contains("attested compaction claimed"));
    assert_eq!(check_of(&record(&w, &format!("compaction-reentry.{CLAUDE_S}.json"))), (json!(true), json!("carried")));
    let text = user_prompt(&w, "claude", CLAUDE_S).expect("delivered at the next prompt");
    assert!(text.contains("The compaction summary kept these four values (summaryCarried: true)."), "{text}");
    // Without compact_summary (or not a string): no summary, null.
    for summary in [None, Some(json!(42)), Some(json!(null))] {
        let w = World::new();
        w.record_ok(CLAUDE_S);
        claude_precompact(&w);
        postcompact(&w, "claude", &postcompact_stdin(&w, "claude", CLAUDE_S, summary.clone()));
        assert_eq!(
            check_of(&record(&w, &format!("compaction-reentry.{CLAUDE_S}.json"))),
            (Value::Null, json!("no_summary")),
            "{summary:?}"
        );
    }
}

#[test]
fn claude_pending_record_not_yet_delivered_gets_the_verdict_and_is_delivered_once() {
    let w = World::new();
    w.record_ok(CLAUDE_S);
    let request = claude_precompact(&w);
    // SessionStart(compact) claimed but its delivery was lost (as if cut short):
    // claim through the library exactly as the hook does, no delivery.
    let qa = QaDir::open(&AbsPath::parse(&w.data_arg()).unwrap()).unwrap();
    let s = SessionId::parse(CLAUDE_S).unwrap();
    kijito_gate::claim_with(&qa, &s, now_ms(), kijito_gate::Summary::NotYet).unwrap();
    let truncated = obeying_summary(&request).replace("kijito-lock-message-id", "lock");
    let post = postcompact(&w, "claude", &postcompact_stdin(&w, "claude", CLAUDE_S, Some(json!(truncated))));
    assert!(post["systemMessage"].as_str().unwrap().contains("summaryCarried: false"), "{post}");
    assert!(!w.qa().join(format!("compaction-reentry-noting.{CLAUDE_S}.json")).exists());
    let text = user_prompt(&w, "claude", CLAUDE_S).expect("delivered at the next prompt");
    assert!(text.contains("did NOT keep all four values (summaryCarried: false)"), "{text}");
    assert_eq!(user_prompt(&w, "claude", CLAUDE_S), None, "exactly once");
}

#[test]
fn codex_has_no_summary_channel_and_says_so() {
    let w = World::new();
    let ready = w.record_ok(CODEX_S);
    run_hook(&w, &PRECOMPACT, &["--host", "codex"], &w.hook_stdin("codex", "app-server:PreCompact:manual", CODEX_S));
    // Codex order: PostCompact claims (its stdin has no summary), SessionStart delivers.
    postcompact(&w, "codex", &postcompact_stdin(&w, "codex", CODEX_S, None));
    assert_eq!(check_of(&record(&w, &format!("compaction-reentry.{CODEX_S}.json"))), (Value::Null, json!("no_summary")));
    let text = session_start(&w, "codex", CODEX_S).unwrap();
    assert!(text.contains("no compaction summary") && text.contains("summaryCarried: null"), "{text}");
    let status = compact_status(&w, CODEX_S, ready["compactionNonce"].as_str().unwrap());
    assert_eq!((&status["summaryCarried"], &status["summaryCheck"]), (&Value::Null, &json!("no_summary")));
    // A forged compact_summary in a Codex PostCompact stdin after the claim changes nothing
    // (the record is not pending).
    let forged = postcompact(&w, "codex", &postcompact_stdin(&w, "codex", CODEX_S, Some(json!("kijito-pointer-id: 1"))));
    assert_eq!(forged, json!({"continue": true}));
}

#[test]
fn unattested_and_stale_records_are_never_marked() {
    let w = World::new();
    // First compaction, attested and carried.
    w.record_ok(CLAUDE_S);
    let request = claude_precompact(&w);
    session_start(&w, "claude", CLAUDE_S).unwrap();
    postcompact(&w, "claude", &postcompact_stdin(&w, "claude", CLAUDE_S, Some(json!("lost everything"))));
    let delivered = format!("compaction-reentry-delivered.{CLAUDE_S}.json");
    assert_eq!(check_of(&record(&w, &delivered)), (json!(false), json!("values_missing")));
    // Second compaction without a pass: unattested; a perfect summary of the old values
    // must not touch either record.
    assert!(claude_precompact(&w).is_empty());
    let text = session_start(&w, "claude", CLAUDE_S).unwrap();
    assert!(text.contains("UNATTESTED") && !text.contains("summaryCarried"), "{text}");
    assert_eq!(check_of(&record(&w, &delivered)), (Value::Null, json!("unattested")));
    let post = postcompact(&w, "claude", &postcompact_stdin(&w, "claude", CLAUDE_S, Some(json!(obeying_summary(&request)))));
    assert_eq!(post, json!({"continue": true}));
    assert_eq!(check_of(&record(&w, &delivered)), (Value::Null, json!("unattested")));
}

/// `kijito-compact status` for a request of the pass with `nonce` (the
/// request file written as the adapter writes it).
fn compact_status(w: &World, session: &str, nonce: &str) -> Value {
    let qa = QaDir::open(&AbsPath::parse(&w.data_arg()).unwrap()).unwrap();
    let r = Request {
        session_id: SessionId::parse(session).unwrap(),
        via: kijito_compact::trigger::ViaKind::Tmux,
        nonce: nonce.into(),
        requested_at_ms: 1,
        updated_at_ms: 1,
        state: RequestState::Sent,
        ticket_invalidated: false,
        note: None,
    };
    write_request(&qa, &r).unwrap();
    let out = w.run(COMPACT, &["status", "--session-id", session, "--data-dir", &w.data_arg()], b"");
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}
