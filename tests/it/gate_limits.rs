//! Honest limits (README "What an agent with your uid can
//! still do"): each test here shows, through the real binaries, that a path
//! a same-uid agent still has WORKS, so the README table that names it is
//! true. If one of these starts failing, the path was closed: update the
//! README table (and move the test to the regressions).
#![allow(clippy::unwrap_used)]

use crate::support;
use support::gate::*;

use kijito_gate::witness::Seen;
use kijito_gate::{Attempt, Attested, Pass, QaDir, Reentry, SummaryCheck};
use kijito_protocol::ids::{AbsPath, Digest, MemoryId, MessageId, SessionId};
use serde_json::Value;
use std::fs;

const S: &str = "2208dc6c-1602-4db0-9c33-9125ee25dc44";

fn sid() -> SessionId {
    SessionId::parse(S).unwrap()
}

/// The ledger file the hooks of `c` use (the same rule as `kijito_gate::ledger::path`).
fn ledger_file(c: &Cycle) -> std::path::PathBuf {
    let key = Digest::of(c.qa().to_str().unwrap().as_bytes());
    c.world.home.join("latch-heads").join(format!("qa-ledger.{}.{S}.jsonl", &key.as_str()[..16]))
}

/// Row "forge every chained file and the ledger by hand": the claim record,
/// the claimed attempt, the consumed ticket, the spent record and a ledger
/// line, all written by the agent (no pass, no boot, no PreCompact), and the
/// next prompt delivers ATTESTED.
#[test]
fn forging_every_chained_file_and_the_ledger_attests() {
    let c = Cycle::new();
    c.qa_dir();
    let nonce = "00000000000000000000000000abc001".to_owned();
    let now = now_ms();
    let ticket = Pass {
        pointer_id: MemoryId::new(c.seeded.pointer_id).unwrap(),
        lock_message_id: MessageId::new(c.seeded.lock_id).unwrap(),
        pointer_digest: Digest::parse(&c.seeded.pointer_digest()).unwrap(),
        snapshot_digest: Digest::parse(&c.seeded.expected_snapshot_digest()).unwrap(),
        ..support::pass::pass(
            &sid(),
            now - 3000,
            &nonce,
            kijito_gate::transcript_identity(&AbsPath::from_path(&c.transcript).unwrap()).unwrap(),
        )
    };
    let bytes = ticket.to_bytes_witnessed(true);
    write_private(&c.qa().join(format!("compaction-resume-consumed.{S}.json")), &bytes);
    let attempt = Attempt {
        session_id: sid(),
        recorded_at_ms: now - 2000,
        trigger: "manual".into(),
        attested: true,
        reason: "pass_promoted".into(),
        compaction_nonce: Some(nonce.clone()),
    };
    write_private(&c.qa().join(format!("compaction-attempt-claimed.{S}.json")), attempt.to_value().to_string().as_bytes());
    let heads = c.world.home.join("latch-heads");
    support::snapshot::private_dir(&heads);
    let line = kijito_gate::ledger::LedgerEntry::of(&ticket, &bytes, kijito_gate::pass::codes::PASS_CONSUMED, now - 2000).to_line();
    write_private(&ledger_file(&c), line.as_bytes());
    let r = Reentry {
        session_id: sid(),
        claimed_at_ms: now - 1000,
        reason: "pass_promoted".into(),
        attested: Some(Attested {
            pointer_id: ticket.pointer_id,
            lock_message_id: ticket.lock_message_id,
            pointer_digest: ticket.pointer_digest.clone(),
            snapshot_digest: ticket.snapshot_digest.clone(),
            compaction_nonce: nonce,
            summary: SummaryCheck::Pending,
            boots_witnessed: None,
        }),
    };
    write_private(&c.qa().join(format!("compaction-reentry.{S}.json")), r.to_value().to_string().as_bytes());
    let text = c.session_hook("claude", "UserPromptSubmit", &c.stdin("claude", "UserPromptSubmit", S, Some("hello"), None)).unwrap();
    assert!(text.starts_with(&format!("kijito-qa re-entry after compaction: ATTESTED (session {S})")), "{text}");
    assert!(text.contains("(bootsWitnessed: true)"), "even the witness line: {text}");
}

/// Row "delete the ledger, then put a consumed pass back": two commands
/// (one deletion outside the data dir, one copy) attest a second compaction
/// with the old pass (PreCompact spends a promoted pass in the ledger only).
#[test]
fn deleting_the_ledger_revives_a_consumed_pass() {
    let c = Cycle::new();
    c.record(S);
    let pre = c.stdin("claude", "PreCompact(manual, no args)", S, None, None);
    let start = c.stdin("claude", "SessionStart(source=compact)", S, None, None);
    c.hook(&PRECOMPACT, "claude", &[], &pre);
    assert!(c.session_hook("claude", "SessionStart", &start).unwrap().contains("ATTESTED (session"));
    fs::copy(c.qa().join(format!("compaction-resume-consumed.{S}.json")), c.qa().join(format!("qa-pass.{S}.json"))).unwrap();
    assert!(fs::symlink_metadata(c.qa().join(format!("qa-spent.{S}.json"))).is_err(), "PreCompact writes no spent record");
    fs::remove_file(ledger_file(&c)).unwrap();
    c.hook(&PRECOMPACT, "claude", &[], &pre);
    let text = c.session_hook("claude", "SessionStart", &start).unwrap();
    assert!(text.starts_with(&format!("kijito-qa re-entry after compaction: ATTESTED (session {S})")), "{text}");
}

fn record(c: &Cycle, a: &std::path::Path, b: &std::path::Path) -> std::process::Output {
    c.record_reports(S, a, b)
}

fn main_agent_boots(c: &Cycle) -> [std::path::PathBuf; 2] {
    let digest = c.seeded.pointer_digest();
    ["m1", "m2"].map(|n| {
        let r = c.world.report_path(&format!("{n}.json"));
        let out = c.world.snapshot_to(&c.seeded, &r, &["--expected-pointer-digest", &digest]);
        assert_eq!(out.status.code(), Some(0));
        r
    })
}

/// Row "forge the witness record": the main agent runs both boots itself,
/// then appends two witness lines with invented subagent ids; `record`
/// takes them as witnessed.
#[test]
fn forged_witness_lines_make_main_agent_boots_witnessed() {
    let c = Cycle::new();
    let [a, b] = main_agent_boots(&c);
    let qa = QaDir::open(&AbsPath::from_path(&c.data).unwrap()).unwrap();
    let mut lines = String::new();
    for (r, agent) in [(&a, "invented-1"), (&b, "invented-2")] {
        let seen = Seen {
            report_file: AbsPath::from_path(r).unwrap(),
            pointer_id: MemoryId::new(c.seeded.pointer_id).unwrap(),
            expected_pointer_digest: None,
            agent_id: Some(agent.into()),
            seen_at_ms: now_ms() - 60_000,
        };
        lines.push_str(&seen.to_line());
    }
    write_private(&qa.witness(&sid()), lines.as_bytes());
    let out = record(&c, &a, &b);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let pass: Value = serde_json::from_slice(&fs::read(c.qa().join(format!("qa-pass.{S}.json"))).unwrap()).unwrap();
    assert_eq!(pass["bootsWitnessed"], true);
}

/// Row "delete the witness record (or remove the PreToolUse hook from the
/// host's settings)": boots the main agent ran, refused while witnessed, are
/// recorded once the record is gone; visibly (`bootsWitnessed: false`).
#[test]
fn deleting_the_witness_record_makes_main_agent_boots_skill_only() {
    let c = Cycle::new();
    let qa = QaDir::open(&AbsPath::from_path(&c.data).unwrap()).unwrap();
    let helpers = kijito_protocol::command::HelperDir::new(&helper_dir()).unwrap();
    let digest = c.seeded.pointer_digest();
    let mut reports = Vec::new();
    for n in ["w1", "w2"] {
        let r = c.world.report_path(&format!("{n}.json"));
        let line = format!(
            "{} --pointer-id {} --lock-message-id {} --expected-pointer-digest {digest} --report-file {}",
            helpers.helper("pointer-snapshot"),
            c.seeded.pointer_id,
            c.seeded.lock_id,
            r.display()
        );
        assert!(kijito_gate::witness::observe(&qa, &sid(), None, &line, &helpers, now_ms()).unwrap());
        assert_eq!(c.world.snapshot_to(&c.seeded, &r, &["--expected-pointer-digest", &digest]).status.code(), Some(0));
        reports.push(r);
    }
    assert_eq!(failure_code(&record(&c, &reports[0], &reports[1])), "kijito_qa_gate_failed:boot_by_main_agent");
    fs::remove_file(qa.witness(&sid())).unwrap();
    let out = record(&c, &reports[0], &reports[1]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("bootsWitnessed: false"));
}

/// Row "replace the installed binaries": `record` trusts whatever
/// `pointer-snapshot` sits beside the `qa-gate` it runs; a root whose
/// verifier is any file at all records a pass from reports that name that
/// file's digest (no verifier ran).
#[test]
fn a_replaced_verifier_lets_record_accept_reports_no_verifier_wrote() {
    let w = World::new();
    let root = w.path("fake-root");
    fs::create_dir(&root).unwrap();
    let gate = root.join("qa-gate");
    kijito_testkit::link_executable(std::path::Path::new(QA_GATE), &gate);
    let fake = b"#!/bin/sh\necho I am not a verifier\n";
    fs::write(root.join("pointer-snapshot"), fake).unwrap();
    let spec = ReportSpec { verifier: Digest::of(fake).as_str().to_owned(), ..ReportSpec::new(now_ms()) };
    let (a, b) = (w.path("fa.json"), w.path("fb.json"));
    write_private(&a, green_report(&spec).to_string().as_bytes());
    write_private(&b, green_report(&ReportSpec { boot_nonce: nonce(2), ..spec.clone() }).to_string().as_bytes());
    w.live();
    let out = w.run_args(gate.to_str().unwrap(), &record_args(S, &w.transcript, Some(&w.data), POINTER, &spec.pointer_digest, [&a, &b]));
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    // The real root refuses the same reports (report_verifier_mismatch): the limit is the replacement.
    let out = w.record(S, &spec.pointer_digest, &a, &b);
    assert_eq!(failure_code(&out), "kijito_qa_gate_failed:report_verifier_mismatch");
}

/// Row "delete the latch, its head record and the workspace index": wake-check
/// no longer knows a latch was there.
#[test]
fn deleting_the_latch_its_head_record_and_the_index_leaves_no_trace() {
    let e = support::latch::env();
    e.ok(&["init", "--objective", "ship it"]);
    fs::remove_dir_all(e.ws.join(".memory-latch")).unwrap();
    fs::remove_dir_all(e.w.home.join("latch-heads")).unwrap();
    let (_, v) = e.wake(&[]);
    let codes: Vec<&str> = v["findings"].as_array().unwrap().iter().map(|f| f["code"].as_str().unwrap()).collect();
    assert!(!codes.contains(&"latch_deleted"), "{v}");
}
