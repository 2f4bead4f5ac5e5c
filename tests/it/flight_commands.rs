//! The flight recorder's lines of the commands run outside a hook
//! (docs/protocol.md §13), through the real binaries: `memory-latch consent
//! request` run as PreToolUse's denial names it (wallet and key consent
//! mode: `consent_issued` in the session that asked), the user's
//! `memory-latch approve` in a real pseudo-terminal with the command that
//! request printed (`consent_confirmed` via `key`), `memory-latch recover`
//! as UserPromptSubmit names it (`recovery` in the session, up to Silent
//! Witness) and by hand (the data dir's `user` journal, which the
//! session's report points to), and kijito-local's MCP `kijito_wake_check`
//! with `live` (`wake_check_live`, the hold answered as by the CLI; a
//! session no hook started is refused). Each
//! line is redacted (no token, passphrase or prompt text), the chains
//! verify, the report's JSON validates against its schema, and the viewer's
//! timeline has the row.

#![allow(clippy::unwrap_used)]

use crate::report::{pretool, reason_of, report, session_start};
use crate::support;

use serde_json::{json, Value};
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::process::Stdio;
use support::gate::payload;
use support::latch::Env;

const S: &str = "s1";

/// The journal lines of `session`, parsed.
fn lines(e: &Env, session: &str) -> Vec<Value> {
    let text = fs::read_to_string(e.w.data.join("journal").join(format!("{session}.jsonl"))).unwrap_or_default();
    text.lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

fn of_kind<'a>(all: &'a [Value], kind: &str) -> Vec<&'a Value> {
    all.iter().filter(|v| v["kind"] == kind).collect()
}

/// `kijito-report --session <session> --json`, validated against its schema.
fn report_json(e: &Env, session: &str) -> Value {
    let v = crate::report::report_json(e, session);
    assert_eq!(v["chain"]["ok"], true, "{}", v["chain"]);
    v
}

fn report_text(e: &Env, session: &str) -> String {
    String::from_utf8(report(e, &["--session", session]).stdout).unwrap()
}

/// The journal files are owner-only, and hold none of `never`.
fn private_and_redacted(e: &Env, never: &[&str]) {
    let dir = e.w.data.join("journal");
    assert_eq!(fs::metadata(&dir).unwrap().permissions().mode() & 0o777, 0o700);
    for f in fs::read_dir(&dir).unwrap() {
        let f = f.unwrap().path();
        assert_eq!(fs::metadata(&f).unwrap().permissions().mode() & 0o777, 0o600, "{}", f.display());
        let text = fs::read_to_string(&f).unwrap();
        for n in never {
            assert!(!text.contains(n), "{n} in {}: {text}", f.display());
        }
    }
}

/// Run a command line a hook named (between backticks in `text`); its output.
fn run_named(e: &Env, text: &str) -> std::process::Output {
    let cmd = text.split('`').nth(1).unwrap_or_else(|| panic!("a command in {text}"));
    let words = shell_words::split(cmd).unwrap();
    e.command(&words[0]).args(&words[1..]).stdin(Stdio::null()).output().unwrap()
}

/// PreToolUse denies `command` for consent; the consent request command its
/// reason names, which carries this session and data dir.
fn consent_denied(e: &Env, command: &str) -> String {
    let reason = reason_of(&pretool(e, "claude", command).expect("consent required"));
    let tail = format!(" --session-id {S} --data-dir {}`", e.w.data_arg());
    assert!(reason.contains(&tail), "{reason}");
    reason
}

/// The timeline of `session` in a real `kijito-local view` has a row of `kind`.
fn viewer_shows(e: &Env, session: &str, kind: &str) {
    let v = crate::viewer::view(&e.w);
    let cookie = crate::viewer::sign_in(&v);
    let (status, _, body) = crate::viewer::request(&v, "GET", &format!("/s/{session}"), Some(&cookie));
    assert_eq!(status, 200);
    assert!(body.contains(&format!("data-kind=\"{kind}\"")), "no {kind} row: {body}");
}

#[test]
fn a_wallet_consent_request_is_recorded_in_the_session_that_asked() {
    let e = crate::memory_latch_wallet::env();
    session_start(&e, "startup");
    let reason = consent_denied(&e, "rm -rf build");
    let o = run_named(&e, &reason);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let printed = String::from_utf8(o.stdout).unwrap();
    assert!(printed.contains("wallet consent mode") && !printed.contains("ACT-"), "{printed}");

    let all = lines(&e, S);
    let issued = of_kind(&all, "consent_issued");
    assert_eq!(issued.len(), 1, "{all:?}");
    let i = issued[0];
    assert_eq!((i["via"].as_str(), i["risk"].as_str()), (Some("wallet"), Some("medium")), "{i}");
    let record = i["record"].as_str().unwrap();
    let ledger: Value = serde_json::from_slice(&fs::read(e.ws.join(".memory-latch/tokens.json")).unwrap()).unwrap();
    let r = ledger["tokens"].as_array().unwrap().iter().find(|t| t["id"] == record).unwrap_or_else(|| panic!("{i}: {ledger}"));
    assert!(r["wallet"].is_object() && r["risk"] == i["risk"], "{r}");
    assert_eq!(i["workspace"], e.ws.to_str().unwrap());
    assert_eq!(i["summary"], "delete:rm_recursive_force");
    // After PreToolUse's request line, in the same chain.
    assert_eq!(
        all.iter().position(|v| v["kind"] == "consent_requested").map(|p| p + 1),
        all.iter().position(|v| v["kind"] == "consent_issued")
    );

    let v = report_json(&e, S);
    assert_eq!(v["consents"], json!({"requested": 1, "issued": 1, "confirmed": 0, "spent": 0, "refused": 0}));
    let w = &v["waiting"][0];
    assert_eq!((w["what"].as_str(), w["via"].as_str(), w["record"].as_str()), (Some("consent"), Some("wallet"), Some(record)), "{w}");
    assert_eq!(w["summary"], "rm -rf build");
    let text = report_text(&e, S);
    assert!(text.contains(&format!("your wallet's signature of record {record}")), "{text}");
    assert!(text.contains(&format!("consent_issued       via wallet risk medium record {record}")), "{text}");
    private_and_redacted(&e, &["ACT-", "typed_data"]);
    viewer_shows(&e, S, "consent_issued");
}

#[test]
fn a_key_approval_is_recorded_in_the_session_that_asked() {
    let k = crate::consent_key::key_world();
    let e = &k.e;
    session_start(e, "startup");
    let reason = consent_denied(e, "rm -rf build");
    let o = run_named(e, &reason);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let printed = String::from_utf8(o.stdout).unwrap();
    // The approve command the user is shown names the same session and data dir.
    let approve = printed.lines().find_map(|l| l.trim().strip_prefix("memory-latch approve ")).unwrap_or_else(|| panic!("{printed}"));
    let words = shell_words::split(approve).unwrap();
    assert!(approve.ends_with(&format!(" --session-id {S} --data-dir {}", e.w.data_arg())), "{approve}");
    let issued = of_kind(&lines(e, S), "consent_issued").into_iter().cloned().collect::<Vec<_>>();
    assert_eq!(issued.len(), 1);
    assert_eq!(issued[0]["via"], "key");
    let record = issued[0]["record"].as_str().unwrap().to_owned();
    assert!(approve.contains(&format!("--token-id {record}")), "{approve}");
    assert_eq!(report_json(e, S)["waiting"][0]["via"], "key");
    assert!(report_text(e, S).contains(&format!("memory-latch approve --token-id {record} in your terminal")));

    // The user runs it in their own terminal (the secret key is the flag the test adds).
    let extra: Vec<&str> = words.iter().skip_while(|w| *w != "--token-id").map(String::as_str).collect();
    let (rc, out) = k.approve_in_pty(crate::consent_key::PASSPHRASE, &extra);
    assert_eq!(rc, 0, "{out}");
    let all = lines(e, S);
    let confirmed = of_kind(&all, "consent_confirmed");
    assert_eq!(confirmed.len(), 1, "{all:?}");
    let c = confirmed[0];
    assert_eq!((c["via"].as_str(), c["risk"].as_str(), c["record"].as_str()), (Some("key"), Some("medium"), Some(record.as_str())), "{c}");
    assert_eq!(c["reconfirm_needed"], false);
    // The retried call passes once: spent; nothing waits.
    assert_eq!(pretool(e, "claude", "rm -rf build"), None);
    let v = report_json(e, S);
    assert_eq!(v["consents"], json!({"requested": 1, "issued": 1, "confirmed": 1, "spent": 1, "refused": 0}));
    assert_eq!(v["waiting"], json!([]));
    assert!(report_text(e, S).contains("consent_confirmed    via key risk medium"));
    private_and_redacted(e, &[crate::consent_key::PASSPHRASE, "ACT-", "signature"]);
    viewer_shows(e, S, "consent_confirmed");
}

#[test]
fn recover_is_recorded_in_the_session_or_by_hand_in_the_user_journal() {
    let e = support::latch::env();
    e.ok(&["init", "--objective", "ship the report", "--next-step", "write the tests"]);
    session_start(&e, "startup");
    let prompt = "you forgot everything, my card is 4111 1111 1111 1111";
    let ctx = e.user_says("claude", prompt).unwrap();
    let tail = format!(" --session-id {S} --data-dir {}`", e.w.data_arg());
    assert!(ctx.contains(&tail), "{ctx}");
    let o = run_named(&e, &ctx);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let rec = of_kind(&lines(&e, S), "recovery").into_iter().cloned().collect::<Vec<_>>();
    assert_eq!(rec.len(), 1);
    assert_eq!((rec[0]["outcome"].as_str(), rec[0]["attempt"].as_u64()), (Some("protocol"), Some(1)), "{}", rec[0]);
    let max = rec[0]["max_attempts"].as_u64().unwrap();

    // By hand, outside every session: the data dir's `user` journal.
    let data = e.w.data_arg();
    let by_hand = e.latch(&["recover", "--data-dir", &data]);
    assert!(by_hand.status.success(), "{}", String::from_utf8_lossy(&by_hand.stderr));
    let user = lines(&e, "user");
    assert_eq!(user.len(), 1, "{user:?}");
    assert_eq!((user[0]["kind"].as_str(), user[0]["session"].as_str()), (Some("recovery"), Some("user")));
    assert_eq!((user[0]["attempt"].as_u64(), user[0]["workspace"].as_str()), (Some(2), e.ws.to_str()));
    let v = report_json(&e, S);
    assert_eq!(v["outside_sessions"]["events"], 1, "{v}");
    assert!(report_text(&e, S).contains("outside any session: 1 event(s) run by hand"), "{}", report_text(&e, S));
    let u = report_json(&e, "user");
    assert_eq!(u["events_total"], 1);
    let verify = report(&e, &["verify", "--session", "user"]);
    assert_eq!(verify.status.code(), Some(0));
    // --last is the host session, not the user's journal written after it.
    assert_eq!(report_json_last(&e)["session"], S);

    // The session's own recover calls until the attempts run out: Silent Witness.
    for _ in 2..max {
        assert!(run_named(&e, &ctx).status.success());
    }
    assert_eq!(run_named(&e, &ctx).status.code(), Some(1), "Silent Witness");
    let all = lines(&e, S);
    let last = *of_kind(&all, "recovery").last().unwrap();
    assert_eq!((last["outcome"].as_str(), last["entered_now"].as_bool()), (Some("silent_witness"), Some(true)), "{last}");
    let v = report_json(&e, S);
    assert_eq!(v["latch_mode"], "silent_witness", "{}", v["mode_changes"]);
    assert!(report_text(&e, S).contains("SILENT WITNESS (recovery attempts exhausted), entered now"));
    // the card whole or in groups (a bare "4111" may occur in a hash by chance)
    private_and_redacted(&e, &["4111 1111", "4111111111111111", "you forgot everything"]);
    viewer_shows(&e, S, "recovery");
}

fn report_json_last(e: &Env) -> Value {
    serde_json::from_slice(&report(e, &["--last", "--json"]).stdout).unwrap()
}

/// kijito-local's MCP wake check with `live` answers as `wake-check --live`:
/// one `wake_check_live` line in the session whose SessionStart set the
/// hold (else in the session it names), and the hold answered.
#[test]
fn the_mcp_live_wake_check_records_its_answer_in_the_held_session() {
    let e = support::latch::env();
    e.ok(&["init", "--objective", "ship the report", "--next-step", "write the tests"]);
    fs::write(&e.boot, "99999999-8888-7777-6666-555555555555\n").unwrap();
    let mut p = payload("claude", "SessionStart(source=startup)");
    p["session_id"] = json!(S);
    p["transcript_path"] = json!(e.w.transcript.to_str().unwrap());
    p["cwd"] = json!(e.ws.to_str().unwrap());
    e.session_hook("claude", "SessionStart", &p);
    assert_eq!(report_json(&e, S)["waiting"][0]["what"], "wake_check_live");

    let db = e.w.dir().join("mcp.db");
    let mut c = e.command(env!("CARGO_BIN_EXE_kijito-local"));
    c.args(["mcp", "--db", db.to_str().unwrap()]).current_dir(&e.ws);
    let mut mcp = crate::kijito_local_mcp::Mcp::spawn(c);
    mcp.initialize("2025-06-18");
    let data = e.w.data_arg();
    let text = mcp.ok("kijito_wake_check", json!({"workspace": e.ws.to_str().unwrap(), "data_dir": data, "live": true}));
    assert!(text.contains("\nTrust mode: cautious\n"), "{text}");
    let live = of_kind(&lines(&e, S), "wake_check_live").into_iter().cloned().collect::<Vec<_>>();
    assert_eq!(live.len(), 1, "{live:?}");
    assert_eq!((live[0]["mode"].as_str(), live[0]["hold"].as_bool()), (Some("cautious"), Some(true)), "{}", live[0]);
    let codes: Vec<&str> = live[0]["findings"].as_array().unwrap().iter().map(|f| f.as_str().unwrap()).collect();
    assert!(codes.contains(&"boot_changed"), "{codes:?}");
    let v = report_json(&e, S);
    assert_eq!(v["waiting"], json!([]), "answered: nothing waits for the live check");
    // The hold is now cautious, as the CLI leaves it.
    let hold = fs::read_dir(e.w.qa_dir())
        .unwrap()
        .map(|f| f.unwrap().path())
        .find(|p| p.file_name().unwrap().to_str().unwrap().starts_with("wake-hold."));
    let hold: Value = serde_json::from_slice(&fs::read(hold.unwrap()).unwrap()).unwrap();
    assert_eq!(hold["hold"], "cautious");

    // Naming a session: its journal gets the line; a session no hook
    // started gets none, and nothing runs (journal_session_unknown).
    mcp.ok("kijito_wake_check", json!({"workspace": e.ws.to_str().unwrap(), "data_dir": data, "live": true, "session_id": S}));
    let (text, is_error) =
        mcp.call("kijito_wake_check", json!({"workspace": e.ws.to_str().unwrap(), "data_dir": data, "live": true, "session_id": "s2"}));
    assert!(is_error && text.contains("journal_session_unknown"), "{text}");
    mcp.finish();
    assert_eq!(of_kind(&lines(&e, S), "wake_check_live").len(), 2);
    assert!(lines(&e, "s2").is_empty());
    viewer_shows(&e, S, "wake_check_live");
}
