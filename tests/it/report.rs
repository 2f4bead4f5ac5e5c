//! The flight recorder and `kijito-report` (docs/protocol.md §13) through
//! the real binaries: a scripted session (SessionStart, a consent asked,
//! confirmed and spent, a denied call, a guarded helper, a witnessed boot,
//! `qa-gate record` against a real kijito-local, an ATTESTED and an
//! UNATTESTED compaction, a withdrawn pass, Stop) leaves one chained line
//! per decision; the report's JSON validates against its schema; a secret
//! in a command never reaches the journal; `verify` names a changed line.

#![allow(clippy::unwrap_used)]

use crate::support;

use serde_json::{json, Value};
use std::fs;
use std::path::PathBuf;
use support::gate::{helper_dir, hook_stdin, payload, POSTCOMPACT, PRECOMPACT};
use support::latch::Env;

const REPORT: &str = env!("CARGO_BIN_EXE_kijito-report");
const S: &str = "s1";
/// A credential in a command line: redacted before the journal.
const SECRET: &str = "sk-live0123456789abcdefSECRET";

pub(crate) fn pretool(e: &Env, host: &str, command: &str) -> Option<String> {
    let mut v = support::gate::pre_tool_use(host, S, "Bash", json!({ "command": command }));
    v["transcript_path"] = json!(e.w.transcript.to_str().unwrap());
    v["cwd"] = json!(e.ws.to_str().unwrap());
    let out = e.hook_bin(&support::bin("pretool-hook"), host, "PreToolUse", &v);
    let text = String::from_utf8(out.stdout).unwrap();
    (!text.trim().is_empty()).then_some(text)
}

pub(crate) fn reason_of(answer: &str) -> String {
    let v: Value = serde_json::from_str(answer).unwrap();
    v["hookSpecificOutput"]["permissionDecisionReason"].as_str().unwrap().to_owned()
}

/// Run the helper command a deny reason names (between backticks).
fn run_named(e: &Env, reason: &str) -> String {
    let cmd = reason.split('`').nth(1).expect("a command in the reason");
    let words = shell_words::split(cmd).unwrap();
    let o =
        e.w.command(&words[0])
            .args(&words[1..])
            .env("MEMORY_LATCH_BOOT_ID_FILE", &e.boot)
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
    assert!(o.status.success(), "{cmd}: {}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout).unwrap()
}

fn compaction_hook(e: &Env, bin: &str, key: &str) {
    let out = e.w.run(bin, &["--host", "claude", "--data-dir", &e.w.data_arg()], &hook_stdin("claude", key, S, &e.w.transcript));
    assert_eq!(out.status.code(), Some(0));
}

pub(crate) fn session_start(e: &Env, source: &str) {
    let mut p = payload("claude", &format!("SessionStart(source={source})"));
    p["session_id"] = json!(S);
    p["transcript_path"] = json!(e.w.transcript.to_str().unwrap());
    p["cwd"] = json!(e.ws.to_str().unwrap());
    e.session_hook("claude", "SessionStart", &p);
}

/// The scripted session; returns the world (its data dir holds the journal).
fn scripted_session() -> Env {
    let e = support::latch::env();
    e.ok(&["init", "--objective", "ship the report", "--next-step", "write the tests"]);
    session_start(&e, "startup");
    e.user_says_to(&support::bin("prompt-hook"), "claude", "please clean the build");
    // A consent asked, confirmed by the user's own message, spent once.
    let reason = reason_of(&pretool(&e, "claude", "rm -rf build").expect("consent required"));
    let out = run_named(&e, &reason);
    let at = out.find("ACT-").unwrap();
    e.user_says_to(&support::bin("prompt-hook"), "claude", &out[at..at + 10]);
    assert_eq!(pretool(&e, "claude", "rm -rf build"), None, "the authorized call passes once");
    // A call carrying a credential: denied (consent), recorded redacted.
    pretool(&e, "claude", &format!("rm -rf /tmp/x --token={SECRET}")).expect("consent required");
    // A helper the agent may never run: the command guard denies it.
    let setup = format!("{}/kijito-setup --write", helper_dir().display());
    pretool(&e, "claude", &setup).expect("the guard denies kijito-setup");
    // ATTESTED, then UNATTESTED (no pass), then a pass withdrawn by a new turn.
    e.w.record_ok(S);
    compaction_hook(&e, &PRECOMPACT, "PreCompact(manual, no args)");
    compaction_hook(&e, &POSTCOMPACT, "PostCompact(manual)");
    session_start(&e, "compact");
    compaction_hook(&e, &PRECOMPACT, "PreCompact(manual, no args)");
    compaction_hook(&e, &POSTCOMPACT, "PostCompact(manual)");
    session_start(&e, "compact");
    e.w.record_ok(S);
    e.user_says_to(&support::bin("prompt-hook"), "claude", "one more thing");
    // A witnessed verifier boot (last: a witnessed boot makes `qa-gate record` want two).
    let report = e.w.data.join("qa/reports/snapshot-a-0123456789abcdef.json");
    let boot = format!("{}/pointer-snapshot --pointer-id 3 --lock-message-id 1 --report-file {}", helper_dir().display(), report.display());
    pretool(&e, "claude", &boot);
    let mut stop = payload("claude", "Stop");
    stop["session_id"] = json!(S);
    stop["transcript_path"] = json!(e.w.transcript.to_str().unwrap());
    stop["cwd"] = json!(e.ws.to_str().unwrap());
    e.session_hook("claude", "Stop", &stop);
    e
}

pub(crate) fn report(e: &Env, args: &[&str]) -> std::process::Output {
    e.w.command(REPORT).args(args).args(["--data-dir", &e.w.data_arg()]).stdin(std::process::Stdio::null()).output().unwrap()
}

/// `kijito-report --session <session> --json`: exit 0, validated against
/// its schema (fixtures/schemas/kijito-report.schema.json).
pub(crate) fn report_json(e: &Env, session: &str) -> Value {
    let out = report(e, &["--session", session, "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let schema: Value = serde_json::from_slice(
        &fs::read(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/schemas/kijito-report.schema.json")).unwrap(),
    )
    .unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = validator.iter_errors(&v).map(|e| format!("{e} at {}", e.instance_path)).collect();
    assert!(errors.is_empty(), "{errors:?}");
    v
}

fn journal_file(e: &Env) -> PathBuf {
    e.w.data.join("journal").join(format!("{S}.jsonl"))
}

#[test]
fn a_scripted_session_is_reported_and_its_chain_verifies() {
    let e = scripted_session();
    let v = report_json(&e, S);

    let kinds: std::collections::BTreeSet<&str> = v["events"].as_array().unwrap().iter().map(|e| e["kind"].as_str().unwrap()).collect();
    for k in [
        "session_start",
        "prompt",
        "tool_decision",
        "consent_requested",
        "consent_confirmed",
        "consent_spent",
        "boot",
        "pass_recorded",
        "pass_withdrawn",
        "precompact",
        "claim",
        "delivery",
        "wake_check",
    ] {
        assert!(kinds.contains(k), "{k} missing from {kinds:?}");
    }
    assert_eq!(v["host"], "claude");
    assert_eq!(v["compactions"], json!({"total": 2, "attested": 1, "unattested": 1, "unattested_reasons": {"pass_missing": 1}}));
    assert_eq!((v["consents"]["confirmed"].as_u64(), v["consents"]["spent"].as_u64()), (Some(1), Some(1)), "{}", v["consents"]);
    assert_eq!(v["denials"]["policy_consent_required"], 2, "{}", v["denials"]);
    assert_eq!(v["denials"]["command_guard"], 1, "{}", v["denials"]);
    assert_eq!(v["latch_mode"], "normal");
    // The call with the credential waits for the user's consent.
    let waiting = &v["waiting"][0];
    assert_eq!(waiting["what"], "consent", "{}", v["waiting"]);
    assert!(waiting["summary"].as_str().unwrap().contains("[REDACTED]"), "{waiting}");
    let deliveries: Vec<&Value> = v["events"].as_array().unwrap().iter().filter(|e| e["kind"] == "delivery").collect();
    assert_eq!(deliveries[0]["attested"], true);
    assert_eq!(deliveries[0]["pointer_digest"].as_str().map(str::len), Some(64));
    assert_eq!((deliveries[1]["attested"].as_bool(), deliveries[1]["reason"].as_str()), (Some(false), Some("pass_missing")));
    assert_eq!(v["chain"]["ok"], true);

    // The text report says the same in its header.
    let text = String::from_utf8(report(&e, &["--session", S]).stdout).unwrap();
    assert!(text.contains("compactions 2: ATTESTED 1 / UNATTESTED 1 (pass_missing x1)"), "{text}");
    assert!(text.contains("waiting for you: your consent for Bash"), "{text}");
    assert!(text.contains("journal: chain intact"), "{text}");

    // Never the secret, never the prompt's text; owner-only files.
    let bytes = fs::read(journal_file(&e)).unwrap();
    let all = String::from_utf8_lossy(&bytes);
    assert!(!all.contains(SECRET) && !all.contains("please clean the build"), "{all}");
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(fs::metadata(journal_file(&e)).unwrap().permissions().mode() & 0o777, 0o600);
    assert_eq!(fs::metadata(e.w.data.join("journal")).unwrap().permissions().mode() & 0o777, 0o700);

    let ok = report(&e, &["verify", "--session", S]);
    assert_eq!(ok.status.code(), Some(0), "{}", String::from_utf8_lossy(&ok.stderr));
    assert!(String::from_utf8_lossy(&ok.stdout).contains("chain intact"));
}

#[test]
fn verify_names_the_line_of_a_flipped_byte() {
    let e = scripted_session();
    let path = journal_file(&e);
    let mut bytes = fs::read(&path).unwrap();
    // Line 3 (1-based): change one byte inside its `ts_ms` value.
    let starts: Vec<usize> = std::iter::once(0).chain(bytes.iter().enumerate().filter(|(_, b)| **b == b'\n').map(|(i, _)| i + 1)).collect();
    let line3 = starts[2];
    let at = line3 + bytes[line3..].windows(8).position(|w| w == b"\"ts_ms\":").unwrap() + 9;
    bytes[at] = if bytes[at] == b'1' { b'2' } else { b'1' };
    fs::write(&path, &bytes).unwrap();
    let out = report(&e, &["verify", "--session", S, "--json"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().next(), Some("kijito_report_failed:report_chain_broken"), "{err}");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["break"]["line"], 3, "{v}");
    assert_eq!(v["ok"], false);
    // The report still reads, and says where the chain broke.
    let text = String::from_utf8(report(&e, &["--session", S]).stdout).unwrap();
    assert!(text.contains("chain BROKEN at line 3"), "{text}");
}

#[test]
fn no_journal_and_a_bad_since_are_refused_with_codes() {
    let e = support::latch::env();
    let out = report(&e, &["--last"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(String::from_utf8_lossy(&out.stderr).lines().next(), Some("kijito_report_failed:report_no_journal"));
    let out = report(&e, &["--since", "2x"]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(String::from_utf8_lossy(&out.stderr).lines().next(), Some("kijito_report_failed:report_since_invalid"));
}

/// The journal lines of session `S` whose kind is one of `kinds`, in order.
fn lines_of(e: &Env, kinds: &[&str]) -> Vec<Value> {
    let text = fs::read_to_string(journal_file(e)).unwrap_or_default();
    text.lines().map(|l| serde_json::from_str::<Value>(l).unwrap()).filter(|v| kinds.contains(&v["kind"].as_str().unwrap())).collect()
}

/// The latch writes its own answer to each standalone token message the
/// user sends (docs/protocol.md §13): one line per message, never the
/// token: a token nobody issued and a replayed one refused with their
/// codes, a confirmed consent with its risk, the review token leaving
/// degraded mode and the reseed token leaving Silent Witness as `latch_mode`.
#[test]
fn the_latch_records_its_answer_to_each_token_message() {
    let e = support::latch::env();
    e.ok(&["init", "--objective", "ship the report", "--next-step", "write the tests"]);
    let said = |text: &str| e.user_says("claude", text).unwrap();
    assert!(said("ACT-23456A").contains("consent_token_unknown"));
    let action = e.file("action.txt", "rm -rf build\n");
    let token = e.request_token(&action, "low");
    assert!(said(&token).contains("confirmed consent token"));
    let again = said(&token);
    assert!(again.contains("consent_already_confirmed"), "{again}");
    // Degraded mode (an unreadable pointer record), ended by the review token.
    let qa = e.w.qa_dir();
    kijito_files::private::write_atomic(&qa.join("current-pointer.json"), b"not json").unwrap();
    assert_eq!(e.wake(&[]).0, 20);
    fs::remove_file(qa.join("current-pointer.json")).unwrap();
    let out = e.ok(&["review"]);
    let review = &out[out.find("ACT-").unwrap()..][..10];
    assert!(said(review).contains("degraded mode ends"));
    // A chain that no longer verifies (Silent Witness), started anew by the reseed token.
    let m = e.ws.join(".memory-latch/_manifest.md");
    let text = fs::read_to_string(&m).unwrap();
    assert!(text.contains("ship the report"), "{text}");
    fs::write(&m, text.replacen("ship the report", "ship the rapport", 1)).unwrap();
    e.fails(&["verify"], "latch_untrusted");
    let out = e.ok(&["reseed"]);
    let reseed = &out[out.find("ACT-").unwrap()..][..10];
    assert!(said(reseed).contains("confirmed the reseed token"));

    let got: Vec<Value> = lines_of(&e, &["consent_confirmed", "consent_refused", "latch_mode"])
        .into_iter()
        .map(|mut v| {
            let o = v.as_object_mut().unwrap();
            for k in ["v", "seq", "ts_ms", "session", "prev"] {
                o.remove(k);
            }
            v
        })
        .collect();
    assert_eq!(
        got,
        [
            json!({"kind": "consent_refused", "via": "prompt", "code": "consent_token_unknown"}),
            json!({"kind": "consent_confirmed", "via": "prompt", "risk": "low", "reconfirm_needed": false}),
            json!({"kind": "consent_refused", "via": "prompt", "code": "consent_already_confirmed"}),
            json!({"kind": "latch_mode", "mode": "normal", "from": "degraded", "via": "review"}),
            json!({"kind": "latch_mode", "mode": "normal", "from": "silent_witness", "via": "reseed", "old_chain_trusted": false}),
        ]
    );
    let all = fs::read_to_string(journal_file(&e)).unwrap();
    for t in [&token, review, reseed, "ACT-23456A"] {
        assert!(!all.contains(t), "the token {t} is in the journal: {all}");
    }
    let v: Value = serde_json::from_slice(&report(&e, &["--session", S, "--json"]).stdout).unwrap();
    assert_eq!(v["consents"], json!({"requested": 0, "issued": 0, "confirmed": 1, "spent": 0, "refused": 2}));
    assert_eq!(v["denials"], json!({"consent_token_unknown": 1, "consent_already_confirmed": 1}));
    assert_eq!(v["latch_mode"], "normal");
    let text = String::from_utf8(report(&e, &["--session", S]).stdout).unwrap();
    assert!(text.contains("degraded -> normal by the user's review token"), "{text}");
}

/// `wake-check --live` writes its answer (trust mode, finding codes,
/// whether writes stay held) as one line of the journal of the session
/// whose SessionStart set the wake hold, and the report stops saying it
/// waits for it.
#[test]
fn wake_check_live_records_its_answer_in_the_held_session() {
    let e = support::latch::env();
    e.ok(&["init", "--objective", "ship the report", "--next-step", "write the tests"]);
    fs::write(&e.boot, "99999999-8888-7777-6666-555555555555\n").unwrap();
    let mut p = payload("claude", "SessionStart(source=startup)");
    p["session_id"] = json!(S);
    p["transcript_path"] = json!(e.w.transcript.to_str().unwrap());
    p["cwd"] = json!(e.ws.to_str().unwrap());
    let ctx = support::gate::context_of(&e.session_hook("claude", "SessionStart", &p).stdout).unwrap();
    let line = ctx.lines().find(|l| l.starts_with("Until it answers")).unwrap_or_else(|| panic!("{ctx}"));
    let waiting = |e: &Env| -> Value {
        let v: Value = serde_json::from_slice(&report(e, &["--session", S, "--json"]).stdout).unwrap();
        v["waiting"].clone()
    };
    assert_eq!(waiting(&e)[0]["what"], "wake_check_live");
    let words = shell_words::split(line.split('`').nth(1).unwrap()).unwrap();
    let o = e.command(&words[0]).args(&words[1..]).stdin(std::process::Stdio::null()).output().unwrap();
    assert_eq!(o.status.code(), Some(10), "cautious: {}", String::from_utf8_lossy(&o.stdout));
    let live = lines_of(&e, &["wake_check_live"]);
    assert_eq!(live.len(), 1, "{live:?}");
    assert_eq!((live[0]["mode"].as_str(), live[0]["hold"].as_bool()), (Some("cautious"), Some(true)), "{}", live[0]);
    let findings: Vec<&str> = live[0]["findings"].as_array().unwrap().iter().map(|f| f.as_str().unwrap()).collect();
    assert!(!findings.is_empty() && findings.iter().all(|f| f.chars().all(|c| c.is_ascii_lowercase() || c == '_')), "{findings:?}");
    assert_eq!(waiting(&e), json!([]));
}
