//! pointer-publish (docs/protocol.md §6) against a real kijito-local: the
//! happy path, one test per outcome-table row, no retries, concurrency,
//! uncooperative writers with and without compare-and-swap, restore, input
//! safety and a SIGKILL between the rollback artifact and the PATCH.
#![allow(clippy::unwrap_used)]

use crate::support;
use support::publish as support_publish;

use kijito_protocol::ids::{MemoryId, MessageId};
use serde_json::{json, Value};
use std::fs;
use std::os::unix::fs::{symlink, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use support::{LocalServer, Options};
use support_publish::{digest, Ran, Seeded};

fn schema(name: &str) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/schemas").join(name);
    serde_json::from_str(&fs::read_to_string(path).unwrap()).unwrap()
}

fn assert_valid(schema_name: &str, instance: &Value) {
    let s = schema(schema_name);
    let v = jsonschema::validator_for(&s).unwrap();
    let errors: Vec<String> = v.iter_errors(instance).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{schema_name}: {instance} invalid: {errors:?}");
}

/// Receipt checks shared by every success: schema, key order, fields.
fn check_receipt(s: &Seeded, receipt: &Value, status: &str, previous: &str, new: &str, rollback: &Path) {
    assert_valid("pointer-publish-receipt.schema.json", receipt);
    let keys: Vec<&str> = receipt.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        [
            "schema",
            "status",
            "knownBadControl",
            "pointerId",
            "lockMessageId",
            "previousPointerDigest",
            "pointerDigest",
            "patchOutcome",
            "rollbackFile",
            "cas"
        ]
    );
    assert_eq!(receipt["status"], status);
    assert_eq!(receipt["knownBadControl"], "passed");
    assert_eq!(receipt["pointerId"], s.pointer_id);
    assert_eq!(receipt["lockMessageId"], s.lock_id);
    assert_eq!(receipt["previousPointerDigest"], previous);
    assert_eq!(receipt["pointerDigest"], new);
    assert_eq!(receipt["rollbackFile"], rollback.to_str().unwrap());
}

/// The rollback artifact: valid against its schema and the reader, 0600,
/// byte-exact for `old`; returns its capturedAtMs.
fn check_artifact(s: &Seeded, path: &Path, old: &str) -> u64 {
    let meta = fs::symlink_metadata(path).unwrap();
    assert!(meta.is_file());
    assert_eq!(meta.mode() & 0o777, 0o600, "rollback artifact must be 0600");
    let bytes = fs::read_to_string(path).unwrap();
    let value: Value = serde_json::from_str(&bytes).unwrap();
    assert_valid("pointer-rollback.schema.json", &value);
    let captured = value["capturedAtMs"].as_u64().unwrap();
    let expected = format!(
        "{{\"schema\":\"kijito.codex.pointer-rollback/v1\",\"pointerId\":{},\"lockMessageId\":{},\"pointerDigest\":\"{}\",\"capturedAtMs\":{},\"content\":{}}}",
        s.pointer_id,
        s.lock_id,
        digest(old),
        captured,
        serde_json::to_string(old).unwrap()
    );
    assert_eq!(bytes, expected, "rollback artifact byte-exact");
    let content = kijito_client::publish::read_rollback_artifact(
        &kijito_protocol::ids::AbsPath::parse(path.to_str().unwrap()).unwrap(),
        MemoryId::new(s.pointer_id).unwrap(),
        MessageId::new(s.lock_id).unwrap(),
    )
    .unwrap();
    assert_eq!(content, old);
    captured
}

fn calls(log: &[Value]) -> Vec<String> {
    log.iter().map(|l| format!("{} {}", l["method"].as_str().unwrap(), l["path"].as_str().unwrap())).collect()
}

fn patches(log: &[Value]) -> usize {
    log.iter().filter(|l| l["method"] == "PATCH").count()
}

fn no_temp_files(dir: &Path) {
    for entry in fs::read_dir(dir).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        assert!(!name.contains(".tmp-"), "temp file left behind: {name}");
    }
}

/// Occurrence numbers of the requests the next publication will send.
struct Occ {
    claim1: u64,
    claim2: u64,
    get1: u64,
    get2: u64,
    patch: u64,
    release: u64,
    pointer: String,
}

impl Occ {
    fn next(s: &Seeded) -> Occ {
        let pointer = s.pointer_path();
        let claim1 = s.next_occurrence("POST", "/api/claim");
        let get1 = s.next_occurrence("GET", &pointer);
        Occ {
            claim1,
            claim2: claim1 + 1,
            get1,
            get2: get1 + 1,
            patch: s.next_occurrence("PATCH", &pointer),
            release: s.next_occurrence("POST", "/api/release"),
            pointer,
        }
    }
}

/// One publication run of a fresh manifest under fault rules.
struct Run {
    ran: Ran,
    log: Vec<Value>,
    rollback: PathBuf,
    old: String,
    new: String,
}

fn faulted(s: &Seeded, name: &str, rules: impl FnOnce(&Occ) -> Value) -> Run {
    let old = s.pointer_content();
    let new = s.manifest(&format!("state after {name}"));
    let file = s.content_file(&format!("{name}.json"), &new);
    let rollback = s.path(&format!("{name}.rollback.json"));
    let occ = Occ::next(s);
    s.server.set_faults(&rules(&occ));
    let mark = s.log_mark();
    let out = s.run(&s.publish_args(&digest(&old), &file, &rollback));
    s.server.clear_faults();
    let log = s.log_since(mark);
    Run { ran: Ran::of(&out), log, rollback, old, new }
}

/// A failed run: code, at most one PATCH, the lease released (or never
/// taken), and the detail line.
fn failed(run: &Run, code: &str) -> Value {
    assert_eq!(run.ran.failure(), code, "stderr: {}", run.ran.stderr);
    assert!(patches(&run.log) <= 1, "no retries: {:?}", calls(&run.log));
    run.ran.detail()
}

fn happy_calls(pointer: &str) -> Vec<String> {
    [
        "POST /api/claim",
        &format!("GET {pointer}"),
        "POST /api/claim",
        &format!("PATCH {pointer}"),
        &format!("GET {pointer}"),
        "POST /api/release",
    ]
    .iter()
    .map(|c| c.to_string())
    .collect()
}

// ---------------------------------------------------------------- happy path

#[test]
fn happy_path_six_requests_receipt_and_byte_exact_rollback() {
    let s = Seeded::new();
    let before_ms = kijito_protocol::clock::now_ms();
    let run = faulted(&s, "happy", |_| json!([]));
    let after_ms = kijito_protocol::clock::now_ms();
    let receipt = run.ran.receipt();
    check_receipt(&s, &receipt, "published", &digest(&run.old), &digest(&run.new), &run.rollback);
    assert_eq!(receipt["patchOutcome"], "acknowledged");
    assert_eq!(receipt["cas"], "enforced");
    assert_eq!(calls(&run.log), happy_calls(&s.pointer_path()));
    assert!(run.log.iter().all(|l| l["status"] == 200 && l["fault"].is_null()), "{:?}", run.log);
    let captured = check_artifact(&s, &run.rollback, &run.old);
    assert!((before_ms..=after_ms).contains(&captured));
    assert_eq!(s.pointer_content(), run.new);
    assert!(run.ran.stderr.is_empty(), "{}", run.ran.stderr);
    assert!(!run.ran.stdout.contains(s.server.token()) && !run.ran.stderr.contains(s.server.token()));
    no_temp_files(&s.work());
    // The lease was released: another persona can claim it now.
    assert_eq!(s.server.claim(s.lock_id, "other", 10).json()["claimed"], true);
}

// ------------------------------------------------------------ outcome table

#[test]
fn mutex_held_by_another_persona() {
    let s = Seeded::new();
    assert_eq!(s.server.claim(s.lock_id, "other", 300).json()["claimed"], true);
    let run = faulted(&s, "held", |_| json!([]));
    let detail = failed(&run, "pointer_mutex_unavailable");
    assert_eq!(detail["claimed_by"], "other");
    assert_eq!(detail["lease_expired"], false);
    assert!(run.ran.stderr.contains("\"other\""), "human sentence names the holder");
    assert_eq!(calls(&run.log), ["POST /api/claim"], "refused claim: nothing else, no release");
    assert!(!run.rollback.exists());
    assert_eq!(s.pointer_content(), run.old);
}

#[test]
fn expired_lease_requires_a_human() {
    let s = Seeded::new();
    assert_eq!(s.server.claim(s.lock_id, "other", 10).json()["claimed"], true);
    let run = faulted(
        &s,
        "expired",
        |o| json!([{"method":"POST","path":"/api/claim","occurrence":o.claim1,"action":{"type":"advance_clock","ms":11000}}]),
    );
    let detail = failed(&run, "pointer_mutex_expired_requires_human");
    assert_eq!(detail["claimed_by"], "other");
    assert_eq!(detail["lease_expired"], true);
    assert!(
        run.ran.stderr.contains("another persona") && run.ran.stderr.contains("not this persona's to release or take over"),
        "{}",
        run.ran.stderr
    );
    assert_eq!(calls(&run.log), ["POST /api/claim"]);
    assert_eq!(s.pointer_content(), run.old);
}

#[test]
fn stale_expected_digest_is_a_conflict() {
    let s = Seeded::new();
    let new = s.manifest("stale");
    let file = s.content_file("stale.json", &new);
    let rollback = s.path("stale.rollback.json");
    let mark = s.log_mark();
    let out = s.run(&s.publish_args(&digest("not the current content"), &file, &rollback));
    let run = Run { ran: Ran::of(&out), log: s.log_since(mark), rollback, old: s.initial.clone(), new };
    let detail = failed(&run, "pointer_publish_conflict");
    assert_eq!(detail["observedDigest"], digest(&s.initial));
    assert_eq!(detail["reason"], "digest_mismatch");
    assert_eq!(calls(&run.log), ["POST /api/claim", &format!("GET {}", s.pointer_path()), "POST /api/release"]);
    assert!(!run.rollback.exists(), "no artifact before the digest check passes");
    assert_eq!(s.pointer_content(), s.initial);
}

#[test]
fn retired_pointer_before_the_write_is_a_conflict() {
    let s = Seeded::new();
    let run = faulted(&s, "retired", |o| json!([{"method":"GET","path":o.pointer,"occurrence":o.get1,"action":{"type":"erode"}}]));
    let detail = failed(&run, "pointer_publish_conflict");
    assert_eq!(detail["reason"], "pointer_retired");
    assert_eq!(patches(&run.log), 0);
    assert_eq!(run.log.last().unwrap()["path"], "/api/release");
}

#[test]
fn ownership_lost_between_claim_and_patch() {
    // The lease expires and is reaped (reap-after 1 s) before the second
    // claim, which is then granted afresh: ownership lost, nothing written.
    let s = Seeded::on(LocalServer::start_with(Options { reap_after: Some(1), ..Options::default() }));
    let run = faulted(
        &s,
        "lost",
        |o| json!([{"method":"POST","path":"/api/claim","occurrence":o.claim2,"action":{"type":"advance_clock","ms":302000}}]),
    );
    let detail = failed(&run, "pointer_mutex_ownership_lost");
    assert_eq!(detail["reason"], "claimed_again");
    assert_eq!(patches(&run.log), 0);
    assert_eq!(calls(&run.log).last().unwrap(), "POST /api/release");
    check_artifact(&s, &run.rollback, &run.old);
    assert_eq!(s.pointer_content(), run.old);
}

#[test]
fn ownership_unverified_when_the_check_names_someone_else() {
    let s = Seeded::new();
    let run = faulted(&s, "unverified", |o| {
        let body = json!({"claimed":false,"message_id":s.lock_id,"advisory":{"reason":"already_claimed","claimed_by":"intruder","lease_expired":false}});
        json!([{"method":"POST","path":"/api/claim","occurrence":o.claim2,"action":{"type":"respond","status":200,"body":body.to_string()}}])
    });
    let detail = failed(&run, "pointer_mutex_ownership_unverified");
    assert_eq!(detail["claimed_by"], "intruder");
    assert_eq!(patches(&run.log), 0);
    assert_eq!(s.pointer_content(), run.old);
}

#[test]
fn ownership_unverified_when_the_own_lease_expired() {
    let s = Seeded::new();
    let run = faulted(
        &s,
        "selfexpired",
        |o| json!([{"method":"POST","path":"/api/claim","occurrence":o.claim2,"action":{"type":"advance_clock","ms":301000}}]),
    );
    let detail = failed(&run, "pointer_mutex_ownership_unverified");
    assert_eq!(detail["lease_expired"], true);
    assert_eq!(patches(&run.log), 0);
}

#[test]
fn patch_timeout_with_the_write_applied_is_published_reconciled() {
    // The PATCH waits 11 s (the client gives up at 10 s), then the server
    // writes; the re-read waits 4 s so it sees the write.
    let s = Seeded::new();
    let run = faulted(&s, "timeout", |o| {
        json!([
            {"method":"PATCH","path":o.pointer,"occurrence":o.patch,"action":{"type":"delay","ms":11000}},
            {"method":"GET","path":o.pointer,"occurrence":o.get2,"action":{"type":"delay","ms":4000}}
        ])
    });
    let receipt = run.ran.receipt();
    check_receipt(&s, &receipt, "published_reconciled", &digest(&run.old), &digest(&run.new), &run.rollback);
    assert_eq!(receipt["patchOutcome"], "kijito_timeout");
    assert_eq!(patches(&run.log), 1);
    assert_eq!(s.pointer_content(), run.new);
}

#[test]
fn patch_connection_lost_after_the_write_is_published_reconciled() {
    let s = Seeded::new();
    let run =
        faulted(&s, "closed", |o| json!([{"method":"PATCH","path":o.pointer,"occurrence":o.patch,"action":{"type":"apply_then_close"}}]));
    let receipt = run.ran.receipt();
    check_receipt(&s, &receipt, "published_reconciled", &digest(&run.old), &digest(&run.new), &run.rollback);
    assert_eq!(receipt["patchOutcome"], "kijito_network_error");
    assert_eq!(calls(&run.log), happy_calls(&s.pointer_path()), "exactly one PATCH, no retry");
}

#[test]
fn patch_500_not_applied_is_not_committed() {
    let s = Seeded::new();
    let run = faulted(
        &s,
        "p500",
        |o| json!([{"method":"PATCH","path":o.pointer,"occurrence":o.patch,"action":{"type":"respond","status":500,"body":"{\"error\":\"boom\"}"}}]),
    );
    let detail = failed(&run, "pointer_publish_not_committed");
    assert_eq!(detail["patchOutcome"], "kijito_http_500");
    assert_eq!(detail["observedDigest"], digest(&run.old));
    assert_eq!(calls(&run.log), happy_calls(&s.pointer_path()));
    assert_eq!(s.pointer_content(), run.old);
    check_artifact(&s, &run.rollback, &run.old);
}

#[test]
fn patch_403_is_not_found_or_forbidden() {
    let s = Seeded::new();
    let run = faulted(
        &s,
        "p403",
        |o| json!([{"method":"PATCH","path":o.pointer,"occurrence":o.patch,"action":{"type":"respond","status":403,"body":"{\"error\":\"not_found_or_forbidden\"}"}}]),
    );
    let detail = failed(&run, "pointer_publish_not_found_or_forbidden");
    assert_eq!(detail["patchOutcome"], "kijito_http_403");
    assert_eq!(s.pointer_content(), run.old);
}

#[test]
fn patch_412_is_a_conflict() {
    let s = Seeded::new();
    let run = faulted(
        &s,
        "p412",
        |o| json!([{"method":"PATCH","path":o.pointer,"occurrence":o.patch,"action":{"type":"respond","status":412,"body":"{\"error\":\"precondition_failed\"}"}}]),
    );
    let detail = failed(&run, "pointer_publish_conflict");
    assert_eq!(detail["patchOutcome"], "kijito_http_412");
    assert_eq!(detail["observedDigest"], digest(&run.old));
    assert_eq!(s.pointer_content(), run.old);
}

#[test]
fn odd_ack_with_the_write_applied_is_published_reconciled() {
    let s = Seeded::new();
    let run = faulted(
        &s,
        "oddack",
        |o| json!([{"method":"PATCH","path":o.pointer,"occurrence":o.patch,"action":{"type":"apply_then_respond","status":200,"body":"{\"result\":\"Updated\"}"}}]),
    );
    let receipt = run.ran.receipt();
    check_receipt(&s, &receipt, "published_reconciled", &digest(&run.old), &digest(&run.new), &run.rollback);
    assert_eq!(receipt["patchOutcome"], "response_invalid");
    assert_eq!(s.pointer_content(), run.new);
}

#[test]
fn malformed_ack_without_the_write_is_not_committed() {
    let s = Seeded::new();
    let run =
        faulted(&s, "malformed", |o| json!([{"method":"PATCH","path":o.pointer,"occurrence":o.patch,"action":{"type":"malformed_json"}}]));
    let detail = failed(&run, "pointer_publish_not_committed");
    assert_eq!(detail["patchOutcome"], "response_invalid");
    assert_eq!(s.pointer_content(), run.old);
}

#[test]
fn concurrent_clobber_before_the_reread() {
    let s = Seeded::new();
    let theirs = s.manifest("someone else's state");
    let run = faulted(
        &s,
        "clobber",
        |o| json!([{"method":"GET","path":o.pointer,"occurrence":o.get2,"action":{"type":"clobber","content":theirs}}]),
    );
    let detail = failed(&run, "pointer_publish_concurrent_clobber");
    assert_eq!(detail["observedDigest"], digest(&theirs));
    assert_eq!(detail["patchOutcome"], "acknowledged");
    assert_eq!(calls(&run.log), happy_calls(&s.pointer_path()));
}

#[test]
fn reread_failure_is_reconciliation_unavailable() {
    let s = Seeded::new();
    let run = faulted(&s, "reread", |o| json!([{"method":"GET","path":o.pointer,"occurrence":o.get2,"action":{"type":"close_before"}}]));
    let detail = failed(&run, "pointer_publish_reconciliation_unavailable");
    assert_eq!(detail["patchOutcome"], "acknowledged");
    assert_eq!(detail["reason"], "kijito_network_error");
    assert_eq!(calls(&run.log), happy_calls(&s.pointer_path()), "no second re-read");
}

#[test]
fn pointer_eroded_between_steps_is_reconciliation_failed() {
    let s = Seeded::new();
    let run = faulted(&s, "eroded", |o| json!([{"method":"GET","path":o.pointer,"occurrence":o.get2,"action":{"type":"erode"}}]));
    let detail = failed(&run, "pointer_publish_reconciliation_failed");
    assert_eq!(detail["patchOutcome"], "acknowledged");
    assert_eq!(calls(&run.log).last().unwrap(), "POST /api/release");
}

#[test]
fn release_refused_after_success_fails_the_run() {
    let s = Seeded::new();
    let run = faulted(&s, "relrefused", |o| {
        let body = json!({"released":false,"message_id":s.lock_id}).to_string();
        json!([{"method":"POST","path":"/api/release","occurrence":o.release,"action":{"type":"respond","status":200,"body":body}}])
    });
    let detail = failed(&run, "pointer_mutex_release_failed");
    assert_eq!(detail["published"], true);
    assert_eq!(detail["pointerDigest"], digest(&run.new));
    assert_eq!(s.pointer_content(), run.new, "the write itself happened");
    assert_eq!(calls(&run.log), happy_calls(&s.pointer_path()), "the release is not retried");
}

#[test]
fn release_failing_after_a_failed_publish() {
    let s = Seeded::new();
    let run = faulted(&s, "relfail", |o| {
        json!([
            {"method":"PATCH","path":o.pointer,"occurrence":o.patch,"action":{"type":"respond","status":500,"body":"{}"}},
            {"method":"POST","path":"/api/release","occurrence":o.release,"action":{"type":"respond","status":500,"body":"{}"}}
        ])
    });
    let detail = failed(&run, "pointer_publish_and_release_failed");
    assert_eq!(detail["publishFailure"], "pointer_publish_not_committed");
    assert_eq!(detail["patchOutcome"], "kijito_http_500");
    assert_eq!(detail["release"], "failed (kijito_http_500)");
    assert_eq!(s.pointer_content(), run.old);
}

// -------------------------------------------------------------- concurrency

#[test]
fn eight_concurrent_publishers_one_winner() {
    let s = Seeded::new();
    let expected = s.pointer_digest();
    let occ = Occ::next(&s);
    // The winner holds the lease for ~8 s (slow PATCH, slow release, both
    // within the client timeouts) so every loser's first claim meets it.
    s.server.set_faults(&json!([
        {"method":"PATCH","path":occ.pointer,"occurrence":occ.patch,"action":{"type":"delay","ms":5000}},
        {"method":"POST","path":"/api/release","occurrence":occ.release,"action":{"type":"delay","ms":3000}}
    ]));
    let mark = s.log_mark();
    let mut children = Vec::new();
    for i in 0..8 {
        let content = s.manifest(&format!("publisher {i}"));
        let file = s.content_file(&format!("c{i}.json"), &content);
        let child = s.spawn(&s.publish_args(&expected, &file, &s.path(&format!("c{i}.rollback.json"))));
        children.push((content, child));
    }
    let mut winners = Vec::new();
    for (content, child) in children {
        let ran = Ran::of(&child.wait_with_output().unwrap());
        if ran.code == Some(0) {
            winners.push(content);
        } else {
            assert_eq!(ran.failure(), "pointer_mutex_unavailable", "{}", ran.stderr);
            assert_eq!(ran.detail()["claimed_by"], "codex");
        }
    }
    assert_eq!(winners.len(), 1, "exactly one publisher wins");
    assert_eq!(s.pointer_content(), winners[0]);
    let log = s.log_since(mark);
    assert_eq!(patches(&log), 1);
    assert_eq!(log.iter().filter(|l| l["path"] == "/api/claim").count(), 9, "8 first claims + 1 ownership check");
    assert_eq!(log.iter().filter(|l| l["path"] == "/api/release").count(), 1);
}

// ---------------------------------------------------- uncooperative writers

/// Wait (bounded) until `ready` holds.
fn wait_until(what: &str, ready: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !ready() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn uncooperative_writer_before_the_patch_is_refused_by_cas() {
    // A raw PATCH without the lease lands after the verifying read (the
    // rollback artifact exists) and before our PATCH (the ownership check is
    // held 3 s). With CAS our PATCH gets 412: the other writer's content is
    // intact (nothing lost), and the re-read sees neither old nor new content.
    let s = Seeded::new();
    let old = s.pointer_content();
    let new = s.manifest("ours");
    let theirs = s.manifest("uncooperative writer");
    let file = s.content_file("cas.json", &new);
    let rollback = s.path("cas.rollback.json");
    let occ = Occ::next(&s);
    s.server.set_faults(&json!([{"method":"POST","path":"/api/claim","occurrence":occ.claim2,"action":{"type":"delay","ms":3000}}]));
    let mark = s.log_mark();
    let child = s.spawn(&s.publish_args(&digest(&old), &file, &rollback));
    wait_until("the rollback artifact", || rollback.exists());
    assert_eq!(s.server.patch(s.pointer_id, &theirs, "Codex", None).status, 200);
    let ran = Ran::of(&child.wait_with_output().unwrap());
    assert_eq!(ran.failure(), "pointer_publish_concurrent_clobber", "{}", ran.stderr);
    let detail = ran.detail();
    assert_eq!(detail["patchOutcome"], "kijito_http_412");
    assert_eq!(detail["observedDigest"], digest(&theirs));
    assert!(ran.stderr.contains("412") && ran.stderr.contains("intact"), "{}", ran.stderr);
    assert_eq!(s.pointer_content(), theirs, "nothing lost");
    let log = s.log_since(mark);
    let statuses: Vec<Value> = log.iter().filter(|l| l["method"] == "PATCH").map(|l| l["status"].clone()).collect();
    assert_eq!(statuses, [json!(200), json!(412)], "their PATCH, then our single refused one");
    check_artifact(&s, &rollback, &old);
}

#[test]
fn uncooperative_writer_after_the_patch_without_etags_is_concurrent_clobber() {
    let s = Seeded::new();
    let old = s.pointer_content();
    let new = s.manifest("ours");
    let theirs = s.manifest("uncooperative writer");
    let file = s.content_file("noetag.json", &new);
    let rollback = s.path("noetag.rollback.json");
    let occ = Occ::next(&s);
    s.server.set_faults(&json!([
        {"method":"GET","path":occ.pointer,"action":{"type":"no_etag"}},
        {"method":"GET","path":occ.pointer,"occurrence":occ.get2,"action":{"type":"delay","ms":3000}}
    ]));
    let mark = s.log_mark();
    let child = s.spawn(&s.publish_args(&digest(&old), &file, &rollback));
    wait_until("our PATCH", || s.log_since(mark).iter().any(|l| l["method"] == "PATCH"));
    assert_eq!(s.server.patch(s.pointer_id, &theirs, "Codex", None).status, 200);
    let ran = Ran::of(&child.wait_with_output().unwrap());
    assert_eq!(ran.failure(), "pointer_publish_concurrent_clobber", "{}", ran.stderr);
    let detail = ran.detail();
    assert_eq!(detail["observedDigest"], digest(&theirs));
    assert_eq!(detail["patchOutcome"], "acknowledged");
    assert_eq!(s.pointer_content(), theirs);
}

#[test]
fn without_etags_the_receipt_says_cas_unavailable() {
    // Without ETags the protocol is unchanged; a writer before our PATCH is
    // overwritten (last writer wins, as on the hosted service) and the
    // receipt says so with "cas":"unavailable".
    let s = Seeded::new();
    let theirs = s.manifest("uncooperative writer");
    let run = faulted(&s, "nocas", |o| {
        json!([
            {"method":"GET","path":o.pointer,"action":{"type":"no_etag"}},
            {"method":"POST","path":"/api/claim","occurrence":o.claim2,"memory_id":s.pointer_id,"action":{"type":"clobber","content":theirs}}
        ])
    });
    let receipt = run.ran.receipt();
    check_receipt(&s, &receipt, "published", &digest(&run.old), &digest(&run.new), &run.rollback);
    assert_eq!(receipt["cas"], "unavailable");
    assert_eq!(s.pointer_content(), run.new);
}

// ------------------------------------------------------------------ restore

#[test]
fn restore_round_trip() {
    let s = Seeded::new();
    let b = s.pointer_content();
    let a = s.manifest("version A");
    let out = s.publish("a", &a);
    let first = Ran::of(&out).receipt();
    let artifact = PathBuf::from(first["rollbackFile"].as_str().unwrap());
    check_artifact(&s, &artifact, &b);
    assert_eq!(s.pointer_content(), a);

    let second = s.path("restore.rollback.json");
    let mark = s.log_mark();
    let ran = Ran::of(&s.run(&s.restore_args(&digest(&a), &artifact, &second)));
    let receipt = ran.receipt();
    check_receipt(&s, &receipt, "published", &digest(&a), &digest(&b), &second);
    assert_eq!(calls(&s.log_since(mark)), happy_calls(&s.pointer_path()), "the same guarded path");
    assert_eq!(s.pointer_content().as_bytes(), b.as_bytes(), "B restored byte for byte");
    check_artifact(&s, &second, &a);
}

#[test]
fn restore_refuses_a_tampered_or_foreign_artifact_before_any_network_call() {
    let s = Seeded::new();
    let a = s.manifest("version A");
    Ran::of(&s.publish("a", &a)).receipt();
    let artifact = s.path("a.rollback.json");
    let text = fs::read_to_string(&artifact).unwrap();
    let tampered = s.path("tampered.json");
    support_publish::write_private(&tampered, text.replace("initial state", "evil state").as_bytes());
    let mark = s.log_mark();
    let ran = Ran::of(&s.run(&s.restore_args(&digest(&a), &tampered, &s.path("r1.json"))));
    assert_eq!(ran.failure(), "rollback_artifact_invalid");
    // Another pointer id than the artifact's.
    let mut args = s.restore_args(&digest(&a), &artifact, &s.path("r2.json"));
    args[3] = (s.pointer_id + 1000).to_string();
    assert_eq!(Ran::of(&s.run(&args)).failure(), "rollback_artifact_invalid");
    // Group-readable artifact.
    fs::set_permissions(&artifact, fs::Permissions::from_mode(0o640)).unwrap();
    assert_eq!(Ran::of(&s.run(&s.restore_args(&digest(&a), &artifact, &s.path("r3.json")))).failure(), "rollback_artifact_invalid");
    assert!(s.log_since(mark).is_empty());
    assert_eq!(s.pointer_content(), a);
}

// ------------------------------------------------------------- input safety

/// Run with `args`; it must fail with `code` and send nothing.
fn rejected_offline(s: &Seeded, args: &[String], code: &str, exit: i32) -> Ran {
    let mark = s.log_mark();
    let ran = Ran::of(&s.run(args));
    assert_eq!(ran.code, Some(exit), "{}", ran.stderr);
    let first = ran.stderr.lines().next().unwrap_or_default();
    assert_eq!(first, format!("kijito_pointer_publish_failed:{code}"), "{}", ran.stderr);
    assert!(ran.stdout.is_empty());
    assert!(s.log_since(mark).is_empty(), "no network call: {:?}", s.log_since(mark));
    ran
}

#[test]
fn unsafe_inputs_are_rejected_before_any_network_call() {
    let s = Seeded::new();
    let expected = s.pointer_digest();
    let good = s.content_file("good.json", &s.manifest("good"));
    let rollback = s.path("r.json");

    // Symlinked content file.
    let link = s.path("link.json");
    symlink(&good, &link).unwrap();
    let ran = rejected_offline(&s, &s.publish_args(&expected, &link, &rollback), "content_file_invalid", 1);
    assert_eq!(ran.detail()["reason"], "file_is_symlink");

    // A FIFO is not a regular file (and must not block the reader).
    let fifo = s.path("fifo.json");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: mkfifo on a NUL-terminated path we own.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let ran = rejected_offline(&s, &s.publish_args(&expected, &fifo, &rollback), "content_file_invalid", 1);
    assert_eq!(ran.detail()["reason"], "file_not_regular");

    // The content file path replaced by a directory.
    let dir = s.path("dir.json");
    fs::create_dir(&dir).unwrap();
    rejected_offline(&s, &s.publish_args(&expected, &dir, &rollback), "content_file_invalid", 1);

    // Too small, too large.
    let tiny = s.content_file("tiny.json", "{");
    assert_eq!(
        rejected_offline(&s, &s.publish_args(&expected, &tiny, &rollback), "content_file_invalid", 1).detail()["reason"],
        "file_too_small"
    );
    let huge = s.content_file("huge.json", &"x".repeat(64 * 1024 + 1));
    assert_eq!(
        rejected_offline(&s, &s.publish_args(&expected, &huge, &rollback), "content_file_invalid", 1).detail()["reason"],
        "file_too_large"
    );

    // Rollback path that exists (even empty), or is a dangling symlink.
    let existing = s.content_file("exists.json", "");
    let ran = rejected_offline(&s, &s.publish_args(&expected, &good, &existing), "rollback_file_invalid", 1);
    assert_eq!(ran.detail()["reason"], "file_exists");
    let dangling = s.path("dangling.json");
    symlink(s.path("nowhere"), &dangling).unwrap();
    rejected_offline(&s, &s.publish_args(&expected, &good, &dangling), "rollback_file_invalid", 1);
    assert!(!s.path("nowhere").exists());

    // Relative paths are usage errors.
    let mut args = s.publish_args(&expected, Path::new("good.json"), &rollback);
    rejected_offline(&s, &args, "invalid_path", 2);
    args = s.publish_args(&expected, &good, Path::new("r.json"));
    rejected_offline(&s, &args, "invalid_path", 2);

    // A group-writable rollback directory.
    let open_dir = s.path("open");
    fs::create_dir(&open_dir).unwrap();
    fs::set_permissions(&open_dir, fs::Permissions::from_mode(0o770)).unwrap();
    let ran = rejected_offline(&s, &s.publish_args(&expected, &good, &open_dir.join("r.json")), "rollback_file_invalid", 1);
    assert_eq!(ran.detail()["reason"], "directory_permissions_too_open");
    // A symlinked rollback directory.
    let dir_link = s.path("dirlink");
    symlink(s.work(), &dir_link).unwrap();
    let ran = rejected_offline(&s, &s.publish_args(&expected, &good, &dir_link.join("r.json")), "rollback_file_invalid", 1);
    assert_eq!(ran.detail()["reason"], "directory_is_symlink");

    // Manifests: other ids, not canonical, not a manifest.
    let other = s.content_file("other.json", &support_publish::manifest(s.pointer_id + 1, s.lock_id, "x", &s.anchors));
    rejected_offline(&s, &s.publish_args(&expected, &other, &rollback), "pointer_manifest_invalid", 1);
    let other_lock = s.content_file("otherlock.json", &support_publish::manifest(s.pointer_id, s.lock_id + 1, "x", &s.anchors));
    rejected_offline(&s, &s.publish_args(&expected, &other_lock, &rollback), "pointer_manifest_invalid", 1);
    let spaced = s.content_file("spaced.json", &format!("{} ", s.manifest("spaced")));
    rejected_offline(&s, &s.publish_args(&expected, &spaced, &rollback), "pointer_manifest_not_canonical", 1);

    assert!(!rollback.exists());
    assert_eq!(s.pointer_content(), s.initial);
}

#[test]
fn usage_errors_exit_2() {
    let s = Seeded::new();
    let good = s.content_file("good.json", &s.manifest("good"));
    let rollback = s.path("r.json");
    let mut both = s.publish_args(&s.pointer_digest(), &good, &rollback);
    both.extend(["--restore-from".to_string(), good.to_str().unwrap().to_string()]);
    let ran = Ran::of(&s.run(&both));
    assert_eq!(ran.code, Some(2));
    assert!(ran.stderr.starts_with("kijito_pointer_publish_failed:"), "{}", ran.stderr);
    let neither: Vec<String> = s
        .publish_args(&s.pointer_digest(), &good, &rollback)
        .into_iter()
        .take(6)
        .chain(["--rollback-file".into(), rollback.to_str().unwrap().into()])
        .collect();
    assert_eq!(Ran::of(&s.run(&neither)).code, Some(2));
    let mut bad_digest = s.publish_args("ABC", &good, &rollback);
    assert_eq!(Ran::of(&s.run(&bad_digest)).code, Some(2));
    bad_digest = s.publish_args(&s.pointer_digest(), &good, &rollback);
    bad_digest[1] = "0".into();
    assert_eq!(Ran::of(&s.run(&bad_digest)).code, Some(2));
}

// ----------------------------------------------------------------- SIGKILL

#[test]
fn sigkill_after_the_rollback_artifact_leaves_it_complete() {
    let s = Seeded::new();
    let old = s.pointer_content();
    let file = s.content_file("kill.json", &s.manifest("killed"));
    let rollback = s.path("kill.rollback.json");
    let occ = Occ::next(&s);
    // The ownership check hangs (within the 5 s claim timeout), so the
    // process is between step 4 and step 6 when it is killed.
    s.server.set_faults(&json!([{"method":"POST","path":"/api/claim","occurrence":occ.claim2,"action":{"type":"delay","ms":4500}}]));
    let mark = s.log_mark();
    let mut child = s.spawn(&s.publish_args(&digest(&old), &file, &rollback));
    // Kill once the artifact is linked in place and its temp name is gone.
    let no_temp = || fs::read_dir(s.work()).unwrap().all(|e| !e.unwrap().file_name().to_string_lossy().contains(".tmp-"));
    wait_until("the rollback artifact", || rollback.exists() && no_temp());
    child.kill().unwrap(); // SIGKILL
    let status = child.wait().unwrap();
    assert_eq!(std::os::unix::process::ExitStatusExt::signal(&status), Some(libc::SIGKILL));
    check_artifact(&s, &rollback, &old);
    no_temp_files(&s.work());
    // The process is gone, so no PATCH can ever follow.
    assert_eq!(patches(&s.log_since(mark)), 0);
    s.server.clear_faults();
    assert_eq!(s.pointer_content(), old);
    // The artifact restores cleanly (after the killed run's lease is released).
    assert_eq!(s.server.release(s.lock_id, "codex").json()["released"], true);
    let ran = Ran::of(&s.run(&s.restore_args(&digest(&old), &rollback, &s.path("after.json"))));
    ran.receipt();
    assert_eq!(s.pointer_content(), old);
}
