//! qa-gate record / invalidate / status through the real binary, and pass
//! validity (staleness, transcript identity) with the clock injected at
//! library level.
#![allow(clippy::unwrap_used)]

use crate::support;
use support::gate as support_gate;

use kijito_gate::{self as gate, QaDir, RecordRequest};
use kijito_protocol::ids::{AbsPath, Digest, MemoryId, SessionId};
use serde_json::{json, Value};
use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use support_gate::*;

const S: &str = "01a2295e-6929-7981-9da7-935145fb97be";

#[test]
fn record_writes_pass_and_prints_only_the_ready_signal() {
    let w = World::new();
    let (a, b, digest) = w.green_pair("ok", now_ms());
    let out = w.record(S, &digest, &a, &b);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert_eq!(stdout.lines().count(), 1, "only the ready signal on stdout");
    let ready: Value = serde_json::from_str(&stdout).unwrap();
    let keys: Vec<&str> = ready.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(keys, ["schemaVersion", "type", "sessionId", "compactionNonce", "passFile", "requestedAction"]);
    assert_eq!(ready["type"], "kijito.compaction.ready");
    assert_eq!(ready["requestedAction"], "native_compact");
    assert_eq!(ready["sessionId"], S);
    assert!(!String::from_utf8_lossy(&out.stderr).trim().is_empty(), "a human sentence on stderr");
    let pass_file = w.qa().join(format!("qa-pass.{S}.json"));
    assert_eq!(ready["passFile"], pass_file.to_str().unwrap());
    let meta = fs::symlink_metadata(&pass_file).unwrap();
    assert_eq!(meta.mode() & 0o777, 0o600);
    assert_eq!(fs::metadata(w.qa()).unwrap().mode() & 0o777, 0o700);
    let pass: Value = serde_json::from_slice(&fs::read(&pass_file).unwrap()).unwrap();
    let keys: Vec<&str> = pass.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        [
            "schemaVersion",
            "sessionId",
            "recordedAtMs",
            "pointerId",
            "lockMessageId",
            "pointerDigest",
            "snapshotDigest",
            "coldBootReportDigests",
            "compactionNonce",
            "transcript",
            "bootsWitnessed"
        ]
    );
    assert_eq!(pass["schemaVersion"], 6);
    // No PreToolUse hook witnessed these hand-written reports: skill-only, and record says so.
    assert_eq!(pass["bootsWitnessed"], false);
    assert!(String::from_utf8_lossy(&out.stderr).contains("bootsWitnessed: false"));
    assert_eq!(pass["compactionNonce"], ready["compactionNonce"]);
    assert_eq!(pass["pointerDigest"], digest.as_str());
    let t = fs::metadata(&w.transcript).unwrap();
    assert_eq!(pass["transcript"]["ino"], t.ino());
    assert_eq!(pass["transcript"]["size"], t.size());
    // Report digests are SHA-256 of each report's compact JSON.
    let ra: Value = serde_json::from_slice(&fs::read(&a).unwrap()).unwrap();
    assert_eq!(pass["coldBootReportDigests"][0], Digest::of(ra.to_string().as_bytes()).as_str());
    let current: Value = serde_json::from_slice(&fs::read(w.qa().join("current-pointer.json")).unwrap()).unwrap();
    assert_eq!(current["schemaVersion"], 2);
    assert_eq!(current["pointerId"], POINTER);
    assert_eq!(current["lockMessageId"], LOCK);
    assert_eq!(current["snapshotDigest"], pass["snapshotDigest"]);
    assert_eq!(fs::metadata(w.qa().join("current-pointer.json")).unwrap().mode() & 0o777, 0o600);
}

/// One rejection: the two report files get `a` and `b`; expect `code`.
fn expect_rejected(w: &World, label: &str, a: Value, b: Value, digest: &str, code: &str) {
    let pa = w.path(&format!("{label}-a.json"));
    let pb = w.path(&format!("{label}-b.json"));
    write_private(&pa, a.to_string().as_bytes());
    write_private(&pb, b.to_string().as_bytes());
    expect_paths_rejected(w, &pa, &pb, digest, code);
}

fn expect_paths_rejected(w: &World, pa: &std::path::Path, pb: &std::path::Path, digest: &str, code: &str) {
    let out = w.record(S, digest, pa, pb);
    assert_eq!(failure_code(&out), format!("kijito_qa_gate_failed:{code}"), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty(), "no ready signal on rejection");
    assert!(!w.qa().join(format!("qa-pass.{S}.json")).exists(), "no pass written for {code}");
}

fn with(v: &Value, key: &str, value: Value) -> Value {
    let mut v = v.clone();
    v[key] = value;
    v
}

#[test]
fn record_rejects_each_bad_report_with_its_own_code() {
    let w = World::new();
    let now = now_ms();
    let spec = ReportSpec::new(now);
    let d = spec.pointer_digest.clone();
    let good = green_report(&spec);
    let other = green_report(&ReportSpec { boot_nonce: nonce(9), ..spec.clone() });

    expect_rejected(&w, "red", red_report(&spec), other.clone(), &d, "report_red");
    expect_rejected(&w, "red2", good.clone(), red_report(&ReportSpec { boot_nonce: nonce(3), ..spec.clone() }), &d, "report_red");
    // extra, missing and reordered keys
    expect_rejected(&w, "extra", with(&good, "extra", json!(1)), other.clone(), &d, "report_keys_invalid");
    let mut missing = good.clone();
    missing.as_object_mut().unwrap().shift_remove("task");
    expect_rejected(&w, "missing", missing, other.clone(), &d, "report_keys_invalid");
    let mut reordered = serde_json::Map::new();
    let obj = good.as_object().unwrap();
    reordered.insert("verdict".into(), obj["verdict"].clone());
    for (k, v) in obj.iter().filter(|(k, _)| *k != "verdict") {
        reordered.insert(k.clone(), v.clone());
    }
    expect_rejected(&w, "reordered", Value::Object(reordered), other.clone(), &d, "report_keys_invalid");
    expect_rejected(
        &w,
        "schema",
        with(&good, "schema", json!("kijito.codex.pointer-snapshot/v2")),
        other.clone(),
        &d,
        "report_schema_invalid",
    );
    expect_rejected(&w, "kbc", with(&good, "knownBadControl", json!("failed")), other.clone(), &d, "report_known_bad_control_not_passed");
    expect_rejected(&w, "edges", with(&good, "graphEdgesUsed", json!(true)), other.clone(), &d, "report_graph_edges_used");
    expect_rejected(&w, "verdict", with(&good, "verdict", json!("amber")), other.clone(), &d, "report_not_green");
    expect_rejected(&w, "nonce", with(&good, "bootNonce", json!("ABC")), other.clone(), &d, "report_field_invalid");
    // a recomputed snapshot digest that differs
    expect_rejected(
        &w,
        "snap",
        with(&good, "snapshotDigest", json!(Digest::of(b"x").as_str())),
        other.clone(),
        &d,
        "report_snapshot_digest_mismatch",
    );
    // pointer id / digest other than the ones named
    let other_pointer = ReportSpec { pointer_id: 5, ..spec.clone() };
    expect_rejected(&w, "pid", green_report(&other_pointer), other.clone(), &d, "report_pointer_id_mismatch");
    expect_rejected(&w, "pdig", good.clone(), other.clone(), Digest::of(b"else").as_str(), "report_pointer_digest_mismatch");
    // equal boot nonces
    expect_rejected(&w, "same", good.clone(), good.clone(), &d, "report_boot_nonce_reused");
    // different snapshot digests, different lock ids
    let other_anchor =
        ReportSpec { anchors: vec![(22131, Digest::of(b"changed").as_str().to_owned())], boot_nonce: nonce(4), ..spec.clone() };
    expect_rejected(&w, "differs", good.clone(), green_report(&other_anchor), &d, "report_snapshot_digest_differs");
    let other_lock = ReportSpec { lock_message_id: 99, boot_nonce: nonce(5), ..spec.clone() };
    expect_rejected(&w, "lock", good.clone(), green_report(&other_lock), &d, "report_lock_differs");
    // older than 30 minutes, from the future
    let old = ReportSpec { verified_at_ms: now - 31 * 60 * 1000, ..spec.clone() };
    expect_rejected(&w, "old", green_report(&old), other.clone(), &d, "report_too_old");
    let future = ReportSpec { verified_at_ms: now + 10 * 60 * 1000, ..spec.clone() };
    expect_rejected(&w, "future", green_report(&future), other.clone(), &d, "report_from_future");
    // not JSON
    let pa = w.path("junk-a.json");
    write_private(&pa, b"not json");
    let pb = w.path("junk-b.json");
    write_private(&pb, other.to_string().as_bytes());
    expect_paths_rejected(&w, &pa, &pb, &d, "report_not_json");
}

#[test]
fn record_rejects_unsafe_report_files() {
    let w = World::new();
    let (a, b, d) = w.green_pair("files", now_ms());
    // symlink
    let link = w.path("link.json");
    std::os::unix::fs::symlink(&a, &link).unwrap();
    expect_paths_rejected(&w, &link, &b, &d, "report_symlink");
    // group/other readable
    let open = w.path("open.json");
    fs::copy(&a, &open).unwrap();
    fs::set_permissions(&open, fs::Permissions::from_mode(0o644)).unwrap();
    expect_paths_rejected(&w, &open, &b, &d, "report_permissions");
    // not owned by the user (tests run as root here; skip the chown case otherwise)
    if kijito_files::private::current_uid() == 0 {
        let foreign = w.path("foreign.json");
        fs::copy(&a, &foreign).unwrap();
        fs::set_permissions(&foreign, fs::Permissions::from_mode(0o600)).unwrap();
        std::os::unix::fs::chown(&foreign, Some(65534), Some(65534)).unwrap();
        expect_paths_rejected(&w, &foreign, &b, &d, "report_not_owned");
    }
    expect_paths_rejected(&w, &w.path("nope.json"), &b, &d, "report_not_found");
    // the transcript is read safely too
    let tlink = w.path("tlink.jsonl");
    std::os::unix::fs::symlink(&w.transcript, &tlink).unwrap();
    let out = w.run_args(QA_GATE, &record_args(S, &tlink, Some(&w.data), POINTER, &d, [&a, &b]));
    assert_eq!(failure_code(&out), "kijito_qa_gate_failed:transcript_symlink");
    // argv: exactly two reports, typed values
    let out = w.run(
        QA_GATE,
        &[
            "record",
            "--session-id",
            S,
            "--transcript",
            "/t",
            "--data-dir",
            "/d",
            "--pointer-id",
            "21813",
            "--pointer-digest",
            &d,
            "--cold-boot-report",
            "/a",
        ],
        b"",
    );
    assert_eq!(out.status.code(), Some(2));
    let out = w.run(
        QA_GATE,
        &[
            "record",
            "--session-id",
            S,
            "--transcript",
            "/t",
            "--data-dir",
            "/d",
            "--pointer-id",
            "021813",
            "--pointer-digest",
            &d,
            "--cold-boot-report",
            "/a",
            "--cold-boot-report",
            "/b",
        ],
        b"",
    );
    assert_eq!(failure_code(&out), "kijito_qa_gate_failed:invalid_memory_id");
}

#[test]
fn invalidate_and_status() {
    let w = World::new();
    let out = w.run(QA_GATE, &["status", "--session-id", S, "--data-dir", &w.data_arg()], b"");
    let st: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(st["pass"], false);
    assert_eq!(st["passRejectedBecause"], "pass_missing");
    w.record_ok(S);
    w.record_ok("other-session");
    let out =
        w.run(QA_GATE, &["status", "--session-id", S, "--data-dir", &w.data_arg(), "--transcript", w.transcript.to_str().unwrap()], b"");
    let st: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(st["pass"], true);
    assert_eq!(st["passAcceptedNow"], true, "{st}");
    assert_eq!(st["transcriptChecked"], true);
    // a stray attempt file is invalidated too
    write_private(&w.qa().join(format!("compaction-attempt.{S}.json")), b"{}");
    let out = w.run(QA_GATE, &["invalidate", "--session-id", S, "--data-dir", &w.data_arg()], b"");
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        String::from_utf8(out.stdout).unwrap().trim(),
        format!(r#"{{"schemaVersion":1,"type":"kijito.compaction.invalidated","sessionId":"{S}","invalidated":2}}"#)
    );
    assert!(!w.qa().join(format!("qa-pass.{S}.json")).exists());
    assert!(w.qa().join("qa-pass.other-session.json").exists(), "only that session");
    // refuses a symlink (and removes nothing)
    w.record_ok(S);
    let target = w.path("victim");
    fs::write(&target, "x").unwrap();
    std::os::unix::fs::symlink(&target, w.qa().join(format!("compaction-resume.{S}.json"))).unwrap();
    let out = w.run(QA_GATE, &["invalidate", "--session-id", S, "--data-dir", &w.data_arg()], b"");
    assert_eq!(failure_code(&out), "kijito_qa_gate_failed:file_is_symlink");
    assert!(w.qa().join(format!("qa-pass.{S}.json")).exists());
    assert!(target.exists());
}

/// Record at `t0` through the library (clock injected).
fn lib_record(w: &World, session: &str, t0: i64) -> (QaDir, SessionId, AbsPath) {
    let (a, b, d) = w.green_pair(&format!("lib-{session}"), t0);
    let req = RecordRequest {
        session_id: SessionId::parse(session).unwrap(),
        transcript: AbsPath::from_path(&w.transcript).unwrap(),
        data_dir: AbsPath::from_path(&w.data).unwrap(),
        pointer_id: MemoryId::new(POINTER).unwrap(),
        pointer_digest: Digest::parse(&d).unwrap(),
        reports: vec![AbsPath::from_path(&a).unwrap(), AbsPath::from_path(&b).unwrap()],
    };
    let evidence =
        gate::Evidence { live_pointer_digest: req.pointer_digest.clone(), installed_verifier: Digest::parse(&VERIFIER).unwrap() };
    gate::record(&req, || Ok(evidence), t0).unwrap();
    let qa = QaDir::open(&req.data_dir).unwrap();
    (qa, req.session_id, req.transcript)
}

fn precompact_reason(qa: &QaDir, s: &SessionId, t: &AbsPath, now: i64) -> String {
    let a = gate::precompact(qa, s, Some(t), "manual", now).unwrap();
    assert_eq!(a.attested, a.compaction_nonce.is_some());
    a.reason
}

#[test]
fn pass_staleness_with_injected_clock() {
    let w = World::new();
    let t0 = now_ms();
    let (qa, s, t) = lib_record(&w, "stale-ok", t0);
    assert_eq!(precompact_reason(&qa, &s, &t, t0 + 29 * 60 * 1000), "pass_promoted");
    let (qa, s, t) = lib_record(&w, "stale-31", t0);
    assert_eq!(precompact_reason(&qa, &s, &t, t0 + 31 * 60 * 1000), "pass_stale");
    assert!(!qa.pass(&s).exists(), "an unacceptable pass is removed");
    assert!(!qa.ticket(&s).exists());
}

#[test]
fn transcript_identity_rules() {
    let w = World::new();
    let t0 = now_ms();
    // replaced (new inode)
    let (qa, s, t) = lib_record(&w, "replaced", t0);
    let tmp = w.path("new-transcript");
    fs::write(&tmp, fs::read(&w.transcript).unwrap()).unwrap();
    fs::rename(&tmp, &w.transcript).unwrap();
    assert_eq!(precompact_reason(&qa, &s, &t, t0), "transcript_replaced");
    // truncated
    fs::write(&w.transcript, "0123456789\n".repeat(10)).unwrap();
    let (qa, s, t) = lib_record(&w, "truncated", t0);
    fs::OpenOptions::new().write(true).open(&w.transcript).unwrap().set_len(5).unwrap();
    assert_eq!(precompact_reason(&qa, &s, &t, t0), "transcript_truncated");
    // grown by more than 1 MiB (and by exactly 1 MiB is fine)
    let (qa, s, t) = lib_record(&w, "grown", t0);
    let len = fs::metadata(&w.transcript).unwrap().len();
    let f = fs::OpenOptions::new().write(true).open(&w.transcript).unwrap();
    f.set_len(len + 1024 * 1024 + 1).unwrap();
    assert_eq!(precompact_reason(&qa, &s, &t, t0), "transcript_grew_too_much");
    let (qa, s, t) = lib_record(&w, "grown-ok", t0);
    let len = fs::metadata(&w.transcript).unwrap().len();
    f.set_len(len + 1024 * 1024).unwrap();
    assert_eq!(precompact_reason(&qa, &s, &t, t0), "pass_promoted");
    // touched into the past
    let (qa, s, t) = lib_record(&w, "touched", t0);
    f.set_modified(std::time::SystemTime::now() - std::time::Duration::from_secs(3600)).unwrap();
    assert_eq!(precompact_reason(&qa, &s, &t, t0), "transcript_mtime_earlier");
    // a symlinked transcript, or none given
    let (qa, s, _) = lib_record(&w, "nolink", t0);
    let link = AbsPath::from_path(&w.path("tl")).unwrap();
    std::os::unix::fs::symlink(&w.transcript, link.as_path()).unwrap();
    assert_eq!(precompact_reason(&qa, &s, &link, t0), "transcript_symlink");
    let (qa, s, _) = lib_record(&w, "none", t0);
    assert_eq!(gate::precompact(&qa, &s, None, "auto", t0).unwrap().reason, "transcript_unknown");
}

#[test]
fn promotion_keeps_the_inode_and_claim_is_once() {
    let w = World::new();
    let t0 = now_ms();
    let (qa, s, t) = lib_record(&w, "inode", t0);
    let ino = fs::metadata(qa.pass(&s)).unwrap().ino();
    assert_eq!(precompact_reason(&qa, &s, &t, t0), "pass_promoted");
    assert!(!qa.pass(&s).exists());
    assert_eq!(fs::metadata(qa.ticket(&s)).unwrap().ino(), ino, "link-then-unlink of the same inode");
    assert_eq!(fs::metadata(qa.ticket(&s)).unwrap().nlink(), 1);
    let first = gate::claim(&qa, &s, t0 + 1000).unwrap();
    let gate::ClaimOutcome::Claimed(r) = first else { panic!("first claim") };
    assert!(r.attested.is_some());
    assert_eq!(gate::claim(&qa, &s, t0 + 2000).unwrap(), gate::ClaimOutcome::NothingToClaim);
    assert_eq!(fs::metadata(qa.ticket_consumed(&s)).unwrap().ino(), ino, "the consumed ticket is the same inode");
    assert!(gate::take_reentry(&qa, &s, t0).unwrap().is_some());
    assert!(gate::take_reentry(&qa, &s, t0).unwrap().is_none());
}

#[test]
fn attempt_older_than_five_minutes_is_unattested() {
    let w = World::new();
    let t0 = now_ms();
    let (qa, s, t) = lib_record(&w, "late", t0);
    assert_eq!(precompact_reason(&qa, &s, &t, t0), "pass_promoted");
    let gate::ClaimOutcome::Claimed(r) = gate::claim(&qa, &s, t0 + 6 * 60 * 1000).unwrap() else { panic!() };
    assert!(r.attested.is_none());
    assert_eq!(r.reason, "attempt_expired");
    assert!(!qa.ticket(&s).exists(), "the ticket is not left behind");
}

#[test]
fn ticket_nonce_must_match_attempt() {
    let w = World::new();
    let t0 = now_ms();
    let (qa, s, t) = lib_record(&w, "nonce", t0);
    assert_eq!(precompact_reason(&qa, &s, &t, t0), "pass_promoted");
    // Swap in a different (valid) ticket: its nonce differs from the attempt's.
    let text = fs::read_to_string(qa.ticket(&s)).unwrap();
    let v: Value = serde_json::from_str(&text).unwrap();
    let swapped = text.replace(v["compactionNonce"].as_str().unwrap(), &nonce(7));
    fs::remove_file(qa.ticket(&s)).unwrap();
    write_private(&qa.ticket(&s), swapped.as_bytes());
    let gate::ClaimOutcome::Claimed(r) = gate::claim(&qa, &s, t0).unwrap() else { panic!() };
    assert_eq!(r.reason, "ticket_nonce_mismatch");
    assert!(r.attested.is_none());
}
