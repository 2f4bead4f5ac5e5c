//! `record`, report validation, `invalidate`, `status` and the state files,
//! one rule at a time (real report files in a private temporary dir, an
//! injected clock, the live-pointer evidence given directly).

#![allow(clippy::unwrap_used)]

use kijito_files::private;
use kijito_gate::record::{self, check_evidence, invalidated_line};
use kijito_gate::report::{self, codes as rc, validate_report, validate_report_bytes, GreenReport};
use kijito_gate::state::{self, StateFile};
use kijito_gate::{Evidence, QaDir, RecordRequest, Recorded};
use kijito_protocol::ids::{AbsPath, Digest, MemoryId, MessageId, SessionId};
use kijito_protocol::manifest::snapshot_digest;
use serde_json::{json, Value};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

const NOW: i64 = 1_800_000_000_000;
const N1: &str = "0123456789abcdef0123456789abcdef";
const N2: &str = "fedcba9876543210fedcba9876543210";

fn pid() -> MemoryId {
    MemoryId::new(21813).unwrap()
}
fn lock() -> MessageId {
    MessageId::new(1234).unwrap()
}
fn pdigest() -> Digest {
    Digest::of(b"pointer")
}
fn verifier() -> Digest {
    Digest::of(b"verifier")
}

fn green(nonce: &str, verified_at: i64) -> Value {
    let anchors = [(MemoryId::new(5).unwrap(), Digest::of(b"anchor"))];
    let snapshot = snapshot_digest(pid(), &pdigest(), lock(), &anchors);
    json!({
        "schema": report::SCHEMA, "verdict": "green", "knownBadControl": "passed", "graphEdgesUsed": false,
        "pointerId": pid().get(), "lockMessageId": lock().get(), "pointerDigest": pdigest().as_str(),
        "snapshotDigest": snapshot.as_str(), "state": "active",
        "task": {"title": "Ship it", "nextAction": null, "done": [], "remaining": [], "doneWhen": ["tests pass"],
                 "gate": {"requiredConsecutiveGreens": 2, "consecutiveGreens": 0, "artifactDigest": null}},
        "anchorDigests": [{"id": 5, "sha256": Digest::of(b"anchor").as_str()}],
        "bootNonce": nonce, "verifiedAtMs": verified_at,
        "verifierSha256": verifier().as_str(),
    })
}

fn check(v: &Value) -> Result<GreenReport, String> {
    validate_report_bytes(v.to_string().as_bytes(), pid(), &pdigest(), NOW).map_err(|e| e.code().to_owned())
}

fn with(v: &Value, k: &str, x: Value) -> Value {
    let mut j = v.clone();
    j[k] = x;
    j
}

#[test]
fn a_green_report_is_read_whole() {
    let v = green(N1, NOW - 1000);
    let r = check(&v).unwrap();
    assert_eq!((r.pointer_id, r.lock_message_id, r.pointer_digest.clone()), (pid(), lock(), pdigest()));
    assert_eq!((r.boot_nonce.as_str(), r.verified_at_ms, r.verifier_digest.clone()), (N1, NOW - 1000, verifier()));
    assert_eq!(r.report_digest, Digest::of(kijito_protocol::manifest::canonical_json(&v).as_bytes()));
}

#[test]
fn the_report_age_window_is_thirty_minutes() {
    assert!(check(&green(N1, NOW - 30 * 60 * 1000)).is_ok());
    assert_eq!(check(&green(N1, NOW - 30 * 60 * 1000 - 1)), Err(rc::TOO_OLD.into()));
    assert!(check(&green(N1, NOW)).is_ok());
    assert_eq!(check(&green(N1, NOW + 1)), Err(rc::FUTURE.into()));
    assert_eq!(kijito_gate::REPORT_MAX_AGE_MS, 1_800_000);
}

#[test]
fn each_report_rule_alone() {
    let g = green(N1, NOW - 1000);
    let cases: Vec<(Value, &str)> = vec![
        (with(&g, "verdict", json!("red")), rc::RED.as_str()),
        (with(&g, "schema", json!("kijito.codex.pointer-snapshot/v2")), rc::SCHEMA.as_str()),
        (with(&g, "verdict", json!("amber")), rc::NOT_GREEN.as_str()),
        (with(&g, "knownBadControl", json!("failed")), rc::KNOWN_BAD.as_str()),
        (with(&g, "graphEdgesUsed", json!(true)), rc::GRAPH_EDGES.as_str()),
        (with(&g, "pointerId", json!(0)), rc::FIELD.as_str()),
        (with(&g, "pointerId", json!("21813")), rc::FIELD.as_str()),
        (with(&g, "lockMessageId", json!(0)), rc::FIELD.as_str()),
        (with(&g, "pointerDigest", json!("ABC")), rc::FIELD.as_str()),
        (with(&g, "snapshotDigest", json!(null)), rc::FIELD.as_str()),
        (with(&g, "verifierSha256", json!("x")), rc::FIELD.as_str()),
        (with(&g, "state", json!("paused")), rc::FIELD.as_str()),
        (with(&g, "task", json!([])), rc::FIELD.as_str()),
        (with(&g, "anchorDigests", json!({})), rc::FIELD.as_str()),
        (with(&g, "anchorDigests", json!([{"id": 5}])), rc::FIELD.as_str()),
        (with(&g, "anchorDigests", json!([{"id": 0, "sha256": Digest::of(b"anchor").as_str()}])), rc::FIELD.as_str()),
        (with(&g, "anchorDigests", json!([{"id": 5, "sha256": "nope"}])), rc::FIELD.as_str()),
        (with(&g, "anchorDigests", json!(vec![json!({"id": 5, "sha256": Digest::of(b"anchor").as_str()}); 65])), rc::FIELD.as_str()),
        (with(&g, "bootNonce", json!(N1.to_uppercase())), rc::FIELD.as_str()),
        (with(&g, "verifiedAtMs", json!(-1)), rc::FIELD.as_str()),
        (with(&g, "verifiedAtMs", json!(9_007_199_254_740_992u64)), rc::FIELD.as_str()),
        (with(&g, "pointerId", json!(7)), rc::POINTER_ID.as_str()),
        (with(&g, "pointerDigest", json!(Digest::of(b"other").as_str())), rc::POINTER_DIGEST.as_str()),
        (with(&g, "anchorDigests", json!([])), rc::SNAPSHOT_MISMATCH.as_str()),
        (with(&g, "lockMessageId", json!(99)), rc::SNAPSHOT_MISMATCH.as_str()),
    ];
    for (v, code) in cases {
        assert_eq!(check(&v).map(|_| ()), Err(code.to_owned()), "{v}");
    }
    // Red with its failure code in the message.
    let red = json!({"verdict": "red", "failure": {"code": "anchor_missing"}});
    let e = validate_report_bytes(red.to_string().as_bytes(), pid(), &pdigest(), NOW).unwrap_err();
    assert!(e.message().contains("anchor_missing"), "{}", e.message());
    let e = validate_report_bytes(br#"{"verdict":"red"}"#, pid(), &pdigest(), NOW).unwrap_err();
    assert!(e.message().contains("(failure unknown)"), "{}", e.message());
    // Keys: extra, missing, reordered.
    let mut extra = g.as_object().unwrap().clone();
    extra.insert("x".into(), json!(1));
    assert_eq!(check(&Value::Object(extra)).map(|_| ()), Err(rc::KEYS.into()));
    let mut missing = g.as_object().unwrap().clone();
    missing.remove("task");
    assert_eq!(check(&Value::Object(missing)).map(|_| ()), Err(rc::KEYS.into()));
    assert_eq!(validate_report_bytes(b"[1]", pid(), &pdigest(), NOW).unwrap_err().code(), rc::NOT_JSON.as_str());
    assert_eq!(validate_report_bytes(b"{", pid(), &pdigest(), NOW).unwrap_err().code(), rc::NOT_JSON.as_str());
    // 64 anchors are allowed (the count is not the failure; the digest is).
    let many = with(&g, "anchorDigests", json!(vec![json!({"id": 5, "sha256": Digest::of(b"anchor").as_str()}); 64]));
    assert_eq!(check(&many).map(|_| ()), Err(rc::SNAPSHOT_MISMATCH.into()));
}

fn private_dir() -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
    d
}

fn write_report(dir: &Path, name: &str, v: &Value) -> AbsPath {
    let p = dir.join(name);
    private::write_atomic(&p, v.to_string().as_bytes()).unwrap();
    AbsPath::from_path(&p).unwrap()
}

#[test]
fn report_files_are_read_safely() {
    let d = private_dir();
    let good = write_report(d.path(), "a.json", &green(N1, NOW - 1));
    assert!(validate_report(&good, pid(), &pdigest(), NOW).is_ok());
    let code = |p: &Path| validate_report(&AbsPath::from_path(p).unwrap(), pid(), &pdigest(), NOW).unwrap_err().code().to_owned();
    assert_eq!(code(&d.path().join("none.json")), rc::NOT_FOUND.as_str());
    let link = d.path().join("link.json");
    std::os::unix::fs::symlink(good.as_path(), &link).unwrap();
    assert_eq!(code(&link), rc::SYMLINK.as_str());
    std::fs::set_permissions(good.as_path(), std::fs::Permissions::from_mode(0o644)).unwrap();
    assert_eq!(code(good.as_path()), rc::PERMISSIONS.as_str());
    assert_eq!(code(d.path()), rc::NOT_REGULAR.as_str());
    let big = d.path().join("big.json");
    private::write_atomic(&big, &vec![b' '; kijito_gate::REPORT_MAX_BYTES as usize + 1]).unwrap();
    assert_eq!(code(&big), rc::TOO_LARGE.as_str());
    let small = d.path().join("small.json");
    private::write_atomic(&small, b"{").unwrap();
    assert_eq!(code(&small), rc::UNREADABLE.as_str());
    if private::current_uid() == 0 {
        let theirs = write_report(d.path(), "theirs.json", &green(N1, NOW - 1));
        std::os::unix::fs::chown(theirs.as_path(), Some(4242), None).unwrap();
        assert_eq!(code(theirs.as_path()), rc::NOT_OWNED.as_str());
    }
    // The path is named in the message.
    let e = validate_report(&AbsPath::from_path(&small).unwrap(), pid(), &pdigest(), NOW).unwrap_err();
    assert!(e.message().contains("small.json"), "{}", e.message());
}

#[test]
fn two_reports_from_distinct_runs_over_one_snapshot() {
    let a = check(&green(N1, NOW - 1)).unwrap();
    let b = check(&green(N2, NOW - 2)).unwrap();
    assert!(report::check_agreement(&a, &b).is_ok());
    assert_eq!(report::check_agreement(&a, &a).unwrap_err().code(), rc::NONCE_REUSED.as_str());
    let mut c = b.clone();
    c.lock_message_id = MessageId::new(9).unwrap();
    assert_eq!(report::check_agreement(&a, &c).unwrap_err().code(), rc::LOCK_DIFFERS.as_str());
    let mut c = b.clone();
    c.snapshot_digest = Digest::of(b"x");
    assert_eq!(report::check_agreement(&a, &c).unwrap_err().code(), rc::SNAPSHOT_DIFFERS.as_str());
    let d = private_dir();
    let ra = write_report(d.path(), "a.json", &green(N1, NOW - 1));
    let rb = write_report(d.path(), "b.json", &green(N2, NOW - 1));
    let pair = report::validate_pair(&[ra.clone(), rb.clone()], pid(), &pdigest(), NOW).unwrap();
    assert_eq!((pair[0].boot_nonce.as_str(), pair[1].boot_nonce.as_str()), (N1, N2));
    assert_eq!(report::validate_pair(std::slice::from_ref(&ra), pid(), &pdigest(), NOW).unwrap_err().code(), rc::COUNT.as_str());
    assert_eq!(
        report::validate_pair(&[ra.clone(), rb.clone(), ra.clone()], pid(), &pdigest(), NOW).unwrap_err().code(),
        rc::COUNT.as_str()
    );
    assert_eq!(report::validate_pair(&[ra.clone(), ra], pid(), &pdigest(), NOW).unwrap_err().code(), rc::NONCE_REUSED.as_str());
}

struct Rec {
    d: tempfile::TempDir,
    req: RecordRequest,
}

fn rec() -> Rec {
    let d = private_dir();
    let data = d.path().join("data");
    std::fs::create_dir(&data).unwrap();
    std::fs::set_permissions(&data, std::fs::Permissions::from_mode(0o700)).unwrap();
    let t = d.path().join("t.jsonl");
    std::fs::write(&t, b"x\n").unwrap();
    let reports = vec![write_report(d.path(), "a.json", &green(N1, NOW - 1)), write_report(d.path(), "b.json", &green(N2, NOW - 1))];
    let req = RecordRequest {
        session_id: SessionId::parse("sess-1").unwrap(),
        transcript: AbsPath::from_path(&t).unwrap(),
        data_dir: AbsPath::from_path(&data).unwrap(),
        pointer_id: pid(),
        pointer_digest: pdigest(),
        reports,
    };
    Rec { d, req }
}

fn evidence() -> Evidence {
    Evidence { live_pointer_digest: pdigest(), installed_verifier: verifier() }
}

#[test]
fn record_writes_a_pass_bound_to_the_transcript() {
    let r = rec();
    let ready = record::record(&r.req, || Ok(evidence()), NOW).unwrap();
    let qa = QaDir::open(&r.req.data_dir).unwrap();
    let path = qa.pass(&r.req.session_id);
    assert_eq!(ready.pass_file, path.to_string_lossy());
    // schemaVersion 6: nothing witnessed these boots (no PreToolUse record).
    assert_eq!(std::fs::read(&path).unwrap(), ready.pass.to_bytes_witnessed(false));
    assert_eq!(ready.boots, kijito_gate::witness::Boots::SkillOnly);
    let p = &ready.pass;
    assert_eq!((p.pointer_id, p.lock_message_id, p.recorded_at_ms), (pid(), lock(), NOW));
    assert_eq!(p.transcript, kijito_gate::transcript_identity(&r.req.transcript).unwrap());
    assert_eq!(p.compaction_nonce.len(), 32);
    let a = check(&green(N1, NOW - 1)).unwrap();
    let b = check(&green(N2, NOW - 1)).unwrap();
    assert_eq!(p.cold_boot_report_digests, [a.report_digest, b.report_digest]);
    let signal: Value = serde_json::from_str(&ready.signal).unwrap();
    assert_eq!(
        signal,
        json!({"schemaVersion": 1, "type": "kijito.compaction.ready", "sessionId": "sess-1", "compactionNonce": p.compaction_nonce, "passFile": ready.pass_file, "requestedAction": "native_compact"})
    );
    let current = Recorded::parse(&std::fs::read(qa.current_pointer()).unwrap()).unwrap();
    assert_eq!(
        current,
        Recorded {
            pointer_id: pid(),
            lock_message_id: lock(),
            pointer_digest: pdigest(),
            snapshot_digest: a.snapshot_digest,
            recorded_at_ms: NOW
        }
    );
    // Two records make two different nonces.
    let again = record::record(&r.req, || Ok(evidence()), NOW).unwrap();
    assert_ne!(again.pass.compaction_nonce, p.compaction_nonce);
    drop(r.d);
}

#[test]
fn record_needs_live_evidence_after_valid_reports() {
    // A bad report costs no request.
    let r = rec();
    let mut bad = r.req.clone();
    bad.reports = vec![r.req.reports[0].clone(), r.req.reports[0].clone()];
    let asked = std::cell::Cell::new(false);
    let e = record::record(
        &bad,
        || {
            asked.set(true);
            Ok(evidence())
        },
        NOW,
    )
    .unwrap_err();
    assert_eq!(e.code(), rc::NONCE_REUSED.as_str());
    assert!(!asked.get());
    // The evidence's failure is the record's failure.
    let e = record::record(&r.req, || Err(kijito_protocol::Error::new(kijito_client::http::codes::TIMEOUT, "t")), NOW).unwrap_err();
    assert_eq!(e.code(), "kijito_timeout");
    let qa = QaDir::open(&r.req.data_dir).unwrap();
    assert!(std::fs::symlink_metadata(qa.pass(&r.req.session_id)).is_err(), "nothing written");
    // Not live, or another verifier.
    let e = record::record(&r.req, || Ok(Evidence { live_pointer_digest: Digest::of(b"newer"), installed_verifier: verifier() }), NOW)
        .unwrap_err();
    assert_eq!(e.code(), record::codes::NOT_LIVE.as_str());
    let e = record::record(&r.req, || Ok(Evidence { live_pointer_digest: pdigest(), installed_verifier: Digest::of(b"other") }), NOW)
        .unwrap_err();
    assert_eq!(e.code(), rc::VERIFIER.as_str());
    assert!(std::fs::symlink_metadata(qa.pass(&r.req.session_id)).is_err());
    // A transcript that is not there.
    let mut gone = r.req.clone();
    gone.transcript = AbsPath::from_path(&r.d.path().join("none")).unwrap();
    assert_eq!(record::record(&gone, || Ok(evidence()), NOW).unwrap_err().code(), "transcript_not_found");
}

#[test]
fn evidence_checks_each_report() {
    let r = rec();
    let a = check(&green(N1, NOW - 1)).unwrap();
    let b = check(&green(N2, NOW - 1)).unwrap();
    assert!(check_evidence(&r.req, &evidence(), &[a.clone(), b.clone()]).is_ok());
    let mut other = b.clone();
    other.verifier_digest = Digest::of(b"x");
    assert_eq!(check_evidence(&r.req, &evidence(), &[a.clone(), other]).unwrap_err().code(), rc::VERIFIER.as_str());
    let mut other = b.clone();
    other.pointer_digest = Digest::of(b"x");
    assert_eq!(check_evidence(&r.req, &evidence(), &[a.clone(), other]).unwrap_err().code(), record::codes::NOT_LIVE.as_str());
    let mut req = r.req.clone();
    req.pointer_digest = Digest::of(b"x");
    assert_eq!(check_evidence(&req, &evidence(), &[a, b]).unwrap_err().code(), record::codes::NOT_LIVE.as_str());
}

#[test]
fn the_installed_verifier_is_hashed() {
    let d = private_dir();
    std::fs::write(d.path().join("pointer-snapshot"), b"binary").unwrap();
    let helpers = kijito_protocol::command::HelperDir::new(d.path()).unwrap();
    assert_eq!(record::installed_verifier(&helpers).unwrap(), Digest::of(b"binary"));
    // A real executable is megabytes: 2 MiB is hashed whole.
    let big = vec![7u8; 2 * 1024 * 1024];
    std::fs::write(d.path().join("pointer-snapshot"), &big).unwrap();
    assert_eq!(record::installed_verifier(&helpers).unwrap(), Digest::of(&big));
    std::fs::remove_file(d.path().join("pointer-snapshot")).unwrap();
    assert_eq!(record::installed_verifier(&helpers).unwrap_err().code(), kijito_protocol::codes::snapshot::VERIFIER_UNREADABLE.as_str());
}

#[test]
fn invalidate_removes_exactly_the_four_files_or_nothing() {
    let r = rec();
    let qa = QaDir::open(&r.req.data_dir).unwrap();
    let s = &r.req.session_id;
    assert_eq!(record::invalidate(&qa, s).unwrap(), 0);
    let four = [qa.pass(s), qa.ticket(s), qa.attempt(s), qa.reentry(s)];
    let kept = [qa.attempt_claimed(s), qa.ticket_consumed(s), qa.reentry_delivered(s), qa.current_pointer()];
    for p in four.iter().chain(&kept) {
        private::write_atomic(p, b"{}").unwrap();
    }
    assert_eq!(record::invalidate(&qa, s).unwrap(), 4);
    assert!(four.iter().all(|p| std::fs::symlink_metadata(p).is_err()));
    assert!(kept.iter().all(|p| std::fs::symlink_metadata(p).is_ok()));
    private::write_atomic(&four[0], b"{}").unwrap();
    assert_eq!(record::invalidate(&qa, s).unwrap(), 1);
    // A symlink or a directory among them: nothing is removed.
    private::write_atomic(&four[0], b"{}").unwrap();
    std::os::unix::fs::symlink("/etc/hostname", &four[3]).unwrap();
    assert_eq!(record::invalidate(&qa, s).unwrap_err().code(), private::codes::SYMLINK.as_str());
    assert!(std::fs::symlink_metadata(&four[0]).is_ok());
    std::fs::remove_file(&four[3]).unwrap();
    std::fs::create_dir(&four[2]).unwrap();
    assert_eq!(record::invalidate(&qa, s).unwrap_err().code(), private::codes::NOT_REGULAR.as_str());
    assert!(std::fs::symlink_metadata(&four[0]).is_ok());
    std::fs::remove_dir(&four[2]).unwrap();
    if private::current_uid() == 0 {
        std::os::unix::fs::chown(&four[1], Some(4242), None).ok();
        private::write_atomic(&four[1], b"{}").unwrap();
        std::os::unix::fs::chown(&four[1], Some(4242), None).unwrap();
        assert_eq!(record::invalidate(&qa, s).unwrap_err().code(), private::codes::NOT_OWNED.as_str());
        assert!(std::fs::symlink_metadata(&four[0]).is_ok());
    }
    assert_eq!(
        invalidated_line(s, 3),
        r#"{"schemaVersion":1,"type":"kijito.compaction.invalidated","sessionId":"sess-1","invalidated":3}"#
    );
}

#[test]
fn status_reports_what_exists_and_creates_nothing() {
    let r = rec();
    let s = &r.req.session_id;
    let v = record::status_of(&r.req.data_dir, s, None, NOW);
    assert_eq!(
        (v["pass"].as_bool(), v["passAcceptedNow"].as_bool(), v["passRejectedBecause"].as_str()),
        (Some(false), Some(false), Some("pass_missing"))
    );
    assert!(std::fs::symlink_metadata(r.req.data_dir.as_path().join("qa")).is_err(), "status created the qa dir");
    let ready = record::record(&r.req, || Ok(evidence()), NOW).unwrap();
    let v = record::status_of(&r.req.data_dir, s, Some(&r.req.transcript), NOW + 1);
    assert_eq!(
        (v["pass"].as_bool(), v["passAcceptedNow"].as_bool(), v["transcriptChecked"].as_bool()),
        (Some(true), Some(true), Some(true))
    );
    assert_eq!(v["passRejectedBecause"], Value::Null);
    assert_eq!(v["currentPointer"], true);
    assert_eq!((v["type"].as_str(), v["sessionId"].as_str()), (Some("kijito.compaction.status"), Some("sess-1")));
    let v = record::status_of(&r.req.data_dir, s, None, NOW + kijito_gate::PASS_MAX_AGE_MS + 1);
    assert_eq!(
        (v["passAcceptedNow"].as_bool(), v["passRejectedBecause"].as_str(), v["transcriptChecked"].as_bool()),
        (Some(false), Some("pass_stale"), Some(false))
    );
    // The transcript check runs only with a transcript: a grown transcript.
    std::fs::write(r.req.transcript.as_path(), vec![b'x'; 2 * 1024 * 1024]).unwrap();
    assert_eq!(record::status_of(&r.req.data_dir, s, Some(&r.req.transcript), NOW)["passRejectedBecause"], "transcript_grew_too_much");
    assert_eq!(record::status_of(&r.req.data_dir, s, None, NOW)["passAcceptedNow"], true);
    // Every other file is reported by existence; the attempt by content.
    let qa = QaDir::open(&r.req.data_dir).unwrap();
    for (key, path) in [
        ("ticket", qa.ticket(s)),
        ("attemptClaimed", qa.attempt_claimed(s)),
        ("ticketConsumed", qa.ticket_consumed(s)),
        ("reentryPending", qa.reentry(s)),
        ("reentryDelivering", qa.reentry_delivering(s)),
        ("reentryDelivered", qa.reentry_delivered(s)),
    ] {
        assert_eq!(record::status_of(&r.req.data_dir, s, None, NOW)[key], false, "{key}");
        private::write_atomic(&path, b"{}").unwrap();
        assert_eq!(record::status_of(&r.req.data_dir, s, None, NOW)[key], true, "{key}");
    }
    assert_eq!(record::status_of(&r.req.data_dir, s, None, NOW)["attempt"], Value::Null);
    private::write_atomic(&qa.attempt(s), br#"{"a":1}"#).unwrap();
    assert_eq!(record::status_of(&r.req.data_dir, s, None, NOW)["attempt"], json!({"a": 1}));
    assert_eq!(record::status_of(&r.req.data_dir, s, None, NOW)["qaDir"], qa.path().as_str());
    drop(ready);
}

#[test]
fn state_files_classify_and_read_safely() {
    let s = SessionId::parse("sess-1").unwrap();
    assert_eq!(StateFile::classify("compaction-resume-consumed.sess-1.json"), Some((StateFile::TicketConsumed, s.clone())));
    assert_eq!(StateFile::classify("compaction-attempt-claimed.sess-1.json"), Some((StateFile::AttemptClaimed, s.clone())));
    assert_eq!(StateFile::classify("compact-pin.bad id.json"), None);
    assert_eq!(StateFile::Request.name(&s), "compact-request.sess-1.json");
    for code in [private::codes::SYMLINK, private::codes::NOT_REGULAR, private::codes::NOT_OWNED, private::codes::PERMISSIONS] {
        assert!(state::is_insecure(code), "{code}");
    }
    for code in [private::codes::NOT_FOUND.as_str(), private::codes::TOO_LARGE.as_str(), "pass_invalid"] {
        assert!(!state::is_insecure(code), "{code}");
    }
    let d = private_dir();
    let p = d.path().join("f.json");
    private::write_atomic(&p, b"{}").unwrap();
    assert_eq!(state::read_state(&p).unwrap(), b"{}");
    private::write_atomic(&p, b"{").unwrap();
    assert!(state::read_state(&p).is_err(), "below two bytes");
    private::write_atomic(&p, &vec![b' '; kijito_gate::STATE_MAX_BYTES as usize]).unwrap();
    assert!(state::read_state(&p).is_ok());
    private::write_atomic(&p, &vec![b' '; kijito_gate::STATE_MAX_BYTES as usize + 1]).unwrap();
    assert!(state::read_state(&p).is_err());
}

#[test]
fn the_pointer_record_is_strict() {
    let r = Recorded {
        pointer_id: pid(),
        lock_message_id: lock(),
        pointer_digest: pdigest(),
        snapshot_digest: Digest::of(b"s"),
        recorded_at_ms: 0,
    };
    let v: Value = serde_json::from_slice(&r.to_bytes()).unwrap();
    assert_eq!(Recorded::parse(&r.to_bytes()), Ok(r));
    for (k, x) in [
        ("schemaVersion", json!(1)),
        ("pointerId", json!(0)),
        ("lockMessageId", json!(-1)),
        ("pointerDigest", json!("x")),
        ("snapshotDigest", json!(1)),
        ("recordedAtMs", json!(-1)),
    ] {
        assert!(Recorded::parse(with(&v, k, x.clone()).to_string().as_bytes()).is_err(), "{k}={x}");
    }
    assert!(Recorded::parse(b"[]").is_err());
    assert!(Recorded::parse(b"x").is_err());
    let mut o = v.as_object().unwrap().clone();
    o.remove("recordedAtMs");
    assert!(Recorded::parse(Value::Object(o).to_string().as_bytes()).is_err());
}

#[test]
fn qa_dir_forms() {
    let d = private_dir();
    let data = AbsPath::from_path(d.path()).unwrap();
    assert!(QaDir::existing(&data).unwrap().is_none());
    // A data dir that is a file: an error, not "no QA state".
    let file = d.path().join("file");
    std::fs::write(&file, b"x").unwrap();
    assert!(QaDir::existing(&AbsPath::from_path(&file).unwrap()).is_err());
    let ro = QaDir::read_only(&data).unwrap();
    assert_eq!(ro.path().as_path(), d.path().join("qa"));
    assert!(std::fs::symlink_metadata(d.path().join("qa")).is_err(), "read_only creates nothing");
    let qa = QaDir::open(&data).unwrap();
    assert_eq!(std::fs::metadata(qa.path().as_path()).unwrap().permissions().mode() & 0o777, 0o700);
    assert_eq!(QaDir::existing(&data).unwrap().unwrap().path(), qa.path());
    // An open qa dir is refused by existing().
    std::fs::set_permissions(qa.path().as_path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    assert!(QaDir::existing(&data).is_err());
    std::fs::set_permissions(qa.path().as_path(), std::fs::Permissions::from_mode(0o700)).unwrap();
    let reports = qa.reports_dir().unwrap();
    assert_eq!(reports.as_path(), qa.path().as_path().join("reports"));
    let a = qa.fresh_report_path("cold-boot").unwrap();
    let b = qa.fresh_report_path("cold-boot").unwrap();
    assert_ne!(a, b);
    let name = a.as_path().file_name().unwrap().to_str().unwrap().to_owned();
    assert!(name.starts_with("cold-boot-") && name.ends_with(".json") && name.len() == "cold-boot-".len() + 16 + 5, "{name}");
    assert_eq!(a.as_path().parent().unwrap(), reports.as_path());
    let nonce = kijito_gate::fresh_nonce();
    assert_eq!(nonce.len(), 32);
    assert!(nonce.bytes().all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()));
    assert_ne!(nonce, kijito_gate::fresh_nonce());
    let now = kijito_gate::now_ms();
    let sys = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as i64;
    assert!((sys - now).abs() < 60_000, "{now} vs {sys}");
}

/// The documented bounds, as numbers (docs/protocol.md §7): a pass lives 30
/// minutes, the transcript may grow 1 MiB, state files are at most 64 KiB
/// and reports at most 1 MiB.
#[test]
fn the_documented_bounds_as_numbers() {
    let e = rec();
    let ready = record::record(&e.req, || Ok(evidence()), NOW).unwrap();
    let p = ready.pass;
    let s = &e.req.session_id;
    let t = p.transcript;
    assert!(p.check_valid(s, NOW + 1_800_000, &t).is_ok());
    assert_eq!(p.check_valid(s, NOW + 1_800_001, &t).unwrap_err().code(), "pass_stale");
    let grown = kijito_gate::TranscriptId { size: t.size + 1_048_576, ..t };
    assert!(p.check_valid(s, NOW, &grown).is_ok());
    let grown = kijito_gate::TranscriptId { size: t.size + 1_048_577, ..t };
    assert_eq!(p.check_valid(s, NOW, &grown).unwrap_err().code(), "transcript_grew_too_much");
    let d = private_dir();
    let f = d.path().join("f.json");
    private::write_atomic(&f, &vec![b' '; 65_536]).unwrap();
    assert!(state::read_state(&f).is_ok());
    private::write_atomic(&f, &vec![b' '; 65_537]).unwrap();
    assert!(state::read_state(&f).is_err());
    // A report of exactly 1 MiB is read (and then judged); one byte more is not.
    let mut big = green(N1, NOW - 1).to_string().into_bytes();
    big.resize(1_048_576, b' ');
    private::write_atomic(&f, &big).unwrap();
    assert!(validate_report(&AbsPath::from_path(&f).unwrap(), pid(), &pdigest(), NOW).is_ok());
    big.push(b' ');
    private::write_atomic(&f, &big).unwrap();
    assert_eq!(validate_report(&AbsPath::from_path(&f).unwrap(), pid(), &pdigest(), NOW).unwrap_err().code(), rc::TOO_LARGE.as_str());
}

#[test]
fn invalidate_syncs_the_directory_only_after_removing_something() {
    let d = tempfile::tempdir().unwrap();
    std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
    let s = SessionId::parse("s1").unwrap();
    // Nothing to remove, and no QA directory at all: nothing to sync, so
    // nothing fails (a read-only QaDir checks and creates nothing).
    let empty = QaDir::read_only(&AbsPath::from_path(d.path()).unwrap()).unwrap();
    assert_eq!(kijito_gate::invalidate(&empty, &s).unwrap(), 0);
    assert!(std::fs::symlink_metadata(d.path().join("qa")).is_err());
    // Files removed through a `qa` name that is a symlink to the real
    // directory: the removal happens, but the directory sync (which never
    // follows a symlink) fails, and that is reported, not swallowed.
    let data = d.path().join("data");
    let real = d.path().join("real-qa");
    std::fs::create_dir(&data).unwrap();
    std::fs::create_dir(&real).unwrap();
    std::os::unix::fs::symlink(&real, data.join("qa")).unwrap();
    let linked = QaDir::read_only(&AbsPath::from_path(&data).unwrap()).unwrap();
    private::write_atomic(&real.join(StateFile::Pass.name(&s)), b"{}").unwrap();
    let e = kijito_gate::invalidate(&linked, &s).unwrap_err();
    assert_eq!(e.code(), private::codes::WRITE.as_str(), "{e}");
    assert!(std::fs::symlink_metadata(real.join(StateFile::Pass.name(&s))).is_err(), "the pass was removed");
}
