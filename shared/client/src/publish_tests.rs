//! Publication, one branch at a time, over the scripted transport: each test
//! answers the happy path except for one step, so a guard that did not look
//! at that step would publish (or would name the wrong failure).

#![allow(clippy::unwrap_used)]

use super::*;
use crate::http::script::{api, ok, Script};
use crate::http::{Method, Response};
use std::os::unix::fs::PermissionsExt;

// The fixtures of publish.rs's own tests (one pointer, one lock, one manifest shape).
use super::tests::{abs, lock, manifest, pid, plan, private_tmp, rendering, ACK, CLAIMED, RELEASED, SELF};

const NOT_RELEASED: &str = r#"{"released":false,"message_id":1234}"#;

fn get_marked(content: &str, marker: &str) -> Result<Response> {
    let body = json!({"result": rendering(content, marker)}).to_string();
    Ok(Response { status: 200, etag: None, body: body.into_bytes() })
}

fn get(content: &str) -> Result<Response> {
    get_marked(content, "")
}

fn methods(a: &Api<Script>) -> Vec<Method> {
    a.transport.seen.lock().unwrap().iter().map(|r| r.method).collect()
}

/// Everything up to the PATCH answers the happy path; `rest` answers the
/// PATCH, the re-read and the release.
fn run(rest: Vec<Result<Response>>) -> (tempfile::TempDir, Api<Script>, Result<Receipt>) {
    let d = private_tmp();
    let (old, new) = (manifest("old"), manifest("new"));
    let mut answers = vec![ok(CLAIMED), get(&old), ok(SELF)];
    answers.extend(rest);
    let a = api(answers);
    let r = publish(&a, &plan(d.path(), &old, &new), 9);
    (d, a, r)
}

fn self_claim(by: &str, expired: bool) -> String {
    format!(r#"{{"claimed":false,"message_id":1234,"advisory":{{"reason":"self_claimed","claimed_by":"{by}","lease_expired":{expired}}}}}"#)
}

/// The ownership check (step 5) accepts only `self_claimed` by this persona
/// with a live lease; nothing is PATCHed otherwise and the lease is released.
#[test]
fn the_ownership_check_accepts_only_our_own_live_lease() {
    let other_reason =
        r#"{"claimed":false,"message_id":1234,"advisory":{"reason":"already_claimed","claimed_by":"codex","lease_expired":false}}"#
            .to_owned();
    let cases: Vec<(Result<Response>, &str)> = vec![
        (ok(&self_claim("claude", false)), codes::OWNERSHIP_UNVERIFIED.as_str()),
        (ok(&self_claim("codex", true)), codes::OWNERSHIP_UNVERIFIED.as_str()),
        (ok(&other_reason), codes::OWNERSHIP_UNVERIFIED.as_str()),
        (ok(CLAIMED), codes::OWNERSHIP_LOST.as_str()),
        (Err(http::service_error(http::codes::TIMEOUT, "t")), codes::OWNERSHIP_UNVERIFIED.as_str()),
    ];
    for (answer, code) in cases {
        let d = private_tmp();
        let (old, new) = (manifest("old"), manifest("new"));
        let a = api(vec![ok(CLAIMED), get(&old), answer, ok(RELEASED)]);
        let err = publish(&a, &plan(d.path(), &old, &new), 9).unwrap_err();
        assert_eq!(err.code(), code, "{err:?}");
        assert_eq!(methods(&a), [Method::Post, Method::Get, Method::Post, Method::Post], "no PATCH: {err:?}");
        // The rollback artifact was written before the check.
        assert!(d.path().join("rollback.json").exists());
    }
}

#[test]
fn a_clean_ack_publishes_and_an_unclean_one_reconciles() {
    let new = manifest("new");
    let (_d, a, r) = run(vec![ok(ACK), get(&new), ok(RELEASED)]);
    let r = r.unwrap();
    assert!(!r.reconciled);
    assert_eq!(r.patch_outcome, PatchOutcome::Acknowledged);
    assert_eq!((r.pointer_id, r.lock_message_id), (pid(), lock()));
    assert_eq!(r.previous_digest, Digest::of(manifest("old").as_bytes()));
    assert_eq!(r.digest, Digest::of(new.as_bytes()));
    assert!(!r.cas_enforced);
    assert!(r.to_json().contains(r#""status":"published","#), "{}", r.to_json());
    assert!(r.to_json().contains(r#""patchOutcome":"acknowledged""#));
    assert_eq!(methods(&a).len(), 6);

    let (_d, _a, r) = run(vec![ok(r#"{"result":"Updated [1]"}"#), get(&new), ok(RELEASED)]);
    let r = r.unwrap();
    assert!(r.reconciled);
    assert_eq!(r.patch_outcome, PatchOutcome::ResponseInvalid);
    assert!(r.to_json().contains(r#""status":"published_reconciled","#));
    assert!(r.to_json().contains(r#""patchOutcome":"response_invalid""#));

    let (_d, _a, r) = run(vec![Err(http::status_error(500)), get(&new), ok(RELEASED)]);
    let r = r.unwrap();
    assert!(r.reconciled);
    assert_eq!(r.patch_outcome, PatchOutcome::Failed("kijito_http_500".into()));
    assert_eq!(r.patch_outcome.as_str(), "kijito_http_500");
}

/// Old content after the PATCH: the refusal's HTTP status names the failure.
#[test]
fn an_unchanged_pointer_is_classified_by_the_patch_status() {
    let old = manifest("old");
    for (patch, code) in [
        (Err(http::status_error(403)), codes::NOT_FOUND_OR_FORBIDDEN),
        (Err(http::status_error(412)), codes::CONFLICT),
        (Err(http::status_error(404)), codes::NOT_COMMITTED),
        (Err(http::service_error(http::codes::TIMEOUT, "t")), codes::NOT_COMMITTED),
        (ok(ACK), codes::NOT_COMMITTED),
    ] {
        let (_d, _a, r) = run(vec![patch, get(&old), ok(RELEASED)]);
        let err = r.unwrap_err();
        assert_eq!(err.code(), code.as_str(), "{err:?}");
        assert_eq!(err.detail().unwrap()["observedDigest"], Digest::of(old.as_bytes()).as_str());
    }
}

/// Third content after the PATCH: a clobber; a 412 says ours was not written.
#[test]
fn other_content_is_a_clobber_and_412_says_whose() {
    let third = manifest("third");
    let (_d, _a, r) = run(vec![Err(http::status_error(412)), get(&third), ok(RELEASED)]);
    let err = r.unwrap_err();
    assert_eq!(err.code(), codes::CLOBBER.as_str());
    assert!(err.message().contains("(412)"), "{}", err.message());
    assert_eq!(err.detail().unwrap()["observedDigest"], Digest::of(third.as_bytes()).as_str());
    for patch in [ok(ACK), Err(http::status_error(403))] {
        let (_d, _a, r) = run(vec![patch, get(&third), ok(RELEASED)]);
        let err = r.unwrap_err();
        assert_eq!(err.code(), codes::CLOBBER.as_str());
        assert!(err.message().contains("another writer changed it"), "{}", err.message());
    }
}

/// The re-read: a service failure leaves the outcome unknown; an answer that
/// is not a valid memory, or a retired pointer, fails reconciliation.
#[test]
fn the_re_read_failures_are_classified() {
    let new = manifest("new");
    let (_d, _a, r) = run(vec![ok(ACK), Err(http::service_error(http::codes::TIMEOUT, "t")), ok(RELEASED)]);
    let err = r.unwrap_err();
    assert_eq!(err.code(), codes::RECONCILIATION_UNAVAILABLE.as_str());
    assert_eq!(err.detail().unwrap()["patchOutcome"], "acknowledged");
    let (_d, _a, r) = run(vec![ok(ACK), Err(http::status_error(502)), ok(RELEASED)]);
    assert_eq!(r.unwrap_err().code(), codes::RECONCILIATION_UNAVAILABLE.as_str());
    // A 200 whose rendering is not a memory: not a service failure.
    let (_d, _a, r) = run(vec![ok(ACK), ok(r#"{"result":"no memory here"}"#), ok(RELEASED)]);
    let err = r.unwrap_err();
    assert_eq!(err.code(), codes::RECONCILIATION_FAILED.as_str(), "{err:?}");
    // Retired after the write, even with the new content.
    let (_d, _a, r) = run(vec![ok(ACK), get_marked(&new, " \u{b7} eroded"), ok(RELEASED)]);
    let err = r.unwrap_err();
    assert_eq!(err.code(), codes::RECONCILIATION_FAILED.as_str(), "{err:?}");
    assert_eq!(err.detail().unwrap()["observedDigest"], Digest::of(new.as_bytes()).as_str());
}

/// Step 3: a retired pointer or another digest stops before any write.
#[test]
fn the_pointer_must_be_current_and_at_the_expected_digest() {
    let (old, new) = (manifest("old"), manifest("new"));
    let d = private_tmp();
    let a = api(vec![ok(CLAIMED), get_marked(&old, " \u{b7} eroded"), ok(RELEASED)]);
    let err = publish(&a, &plan(d.path(), &old, &new), 9).unwrap_err();
    assert_eq!((err.code(), err.detail().unwrap()["reason"].as_str()), (codes::CONFLICT.as_str(), Some("pointer_retired")));
    assert!(!d.path().join("rollback.json").exists());
    let a = api(vec![ok(CLAIMED), get(&manifest("other")), ok(RELEASED)]);
    let err = publish(&a, &plan(d.path(), &old, &new), 9).unwrap_err();
    assert_eq!((err.code(), err.detail().unwrap()["reason"].as_str()), (codes::CONFLICT.as_str(), Some("digest_mismatch")));
    assert_eq!(methods(&a), [Method::Post, Method::Get, Method::Post]);
    assert!(!d.path().join("rollback.json").exists());
}

/// Step 8: the release result is part of the outcome.
#[test]
fn a_failed_release_is_reported_with_the_publication() {
    let new = manifest("new");
    let (_d, _a, r) = run(vec![ok(ACK), get(&new), ok(NOT_RELEASED)]);
    let err = r.unwrap_err();
    assert_eq!(err.code(), codes::RELEASE_FAILED.as_str());
    assert_eq!(err.detail().unwrap()["published"], true);
    assert_eq!(err.detail().unwrap()["release"], "was refused (released:false)");
    let (_d, _a, r) = run(vec![ok(ACK), get(&new), Err(http::status_error(500))]);
    let err = r.unwrap_err();
    assert_eq!(err.code(), codes::RELEASE_FAILED.as_str());
    assert_eq!(err.detail().unwrap()["release"], "failed (kijito_http_500)");
    // A failed publication with a failed release names both.
    let (_d, _a, r) = run(vec![Err(http::status_error(403)), get(&manifest("old")), ok(NOT_RELEASED)]);
    let err = r.unwrap_err();
    assert_eq!(err.code(), codes::PUBLISH_AND_RELEASE_FAILED.as_str());
    let detail = err.detail().unwrap();
    assert_eq!(detail["publishFailure"], codes::NOT_FOUND_OR_FORBIDDEN);
    assert_eq!(detail["release"], "was refused (released:false)");
    assert!(err.message().contains(codes::NOT_FOUND_OR_FORBIDDEN.as_str()), "{}", err.message());
    // A failed publication with a good release is just the failure.
    let (_d, _a, r) = run(vec![Err(http::status_error(403)), get(&manifest("old")), ok(RELEASED)]);
    assert_eq!(r.unwrap_err().code(), codes::NOT_FOUND_OR_FORBIDDEN.as_str());
}

#[test]
fn a_refused_claim_names_whose_lease_it_is() {
    let d = private_tmp();
    let err = |body: &str| {
        let a = api(vec![ok(body)]);
        let e = publish(&a, &plan(d.path(), "a", &manifest("n")), 1).unwrap_err();
        assert_eq!(methods(&a).len(), 1);
        e
    };
    let e = err(&self_claim("codex", false));
    assert_eq!(e.code(), codes::MUTEX_UNAVAILABLE.as_str());
    assert!(e.message().contains("already held by this persona"), "{}", e.message());
    let e =
        err(r#"{"claimed":false,"message_id":1234,"advisory":{"reason":"already_claimed","claimed_by":"other","lease_expired":false}}"#);
    assert_eq!(e.code(), codes::MUTEX_UNAVAILABLE.as_str());
    assert!(e.message().contains("held by \"other\" (already_claimed)"), "{}", e.message());
    assert_eq!(e.detail().unwrap()["lease_expired"], false);
    let e = err(&self_claim("codex", true));
    assert_eq!(e.code(), codes::MUTEX_EXPIRED.as_str());
}

#[test]
fn releasing_our_own_lease_only() {
    // Ours: released, and it was held.
    let a = api(vec![ok(SELF), ok(RELEASED)]);
    assert!(release_own_lease(&a, lock()).unwrap());
    assert_eq!(methods(&a), [Method::Post, Method::Post]);
    // Free: the probe's own claim is released; nothing was held.
    let a = api(vec![ok(CLAIMED), ok(RELEASED)]);
    assert!(!release_own_lease(&a, lock()).unwrap());
    // Another persona's (even a self_claimed one) or another reason: refused, never released.
    for body in [
        self_claim("claude", false),
        r#"{"claimed":false,"message_id":1234,"advisory":{"reason":"already_claimed","claimed_by":"codex","lease_expired":true}}"#
            .to_owned(),
    ] {
        let a = api(vec![ok(&body), ok(RELEASED)]);
        let e = release_own_lease(&a, lock()).unwrap_err();
        assert_eq!(e.code(), codes::MUTEX_UNAVAILABLE.as_str());
        assert_eq!(methods(&a).len(), 1, "no release sent");
    }
    // The release itself refused or failed.
    let a = api(vec![ok(SELF), ok(NOT_RELEASED)]);
    assert_eq!(release_own_lease(&a, lock()).unwrap_err().code(), codes::RELEASE_FAILED.as_str());
    let a = api(vec![ok(SELF), Err(http::status_error(500))]);
    let e = release_own_lease(&a, lock()).unwrap_err();
    assert_eq!(e.code(), codes::RELEASE_FAILED.as_str());
    assert!(e.message().contains("failed (kijito_http_500)"), "{}", e.message());
    assert_eq!(
        released_line(lock(), true),
        r#"{"schemaVersion":1,"type":"kijito.pointer-lease.released","lockMessageId":1234,"wasHeld":true}"#
    );
}

#[test]
fn a_plan_needs_a_fresh_rollback_path_in_a_private_directory() {
    let d = private_tmp();
    let content = d.path().join("c.json");
    private::write_atomic(&content, manifest("c").as_bytes()).unwrap();
    let existing = d.path().join("exists.json");
    std::fs::write(&existing, b"x").unwrap();
    let e = Plan::from_content_file(pid(), lock(), Digest::of(b"x"), &abs(&content), abs(&existing)).unwrap_err();
    assert_eq!(e.code(), codes::ROLLBACK_PATH.as_str());
    assert!(e.message().contains("each publication needs a fresh path"), "{}", e.message());
    // A world-writable directory is refused, without the fresh-path hint.
    let open = d.path().join("open");
    std::fs::create_dir(&open).unwrap();
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
    let e = Plan::from_content_file(pid(), lock(), Digest::of(b"x"), &abs(&content), abs(&open.join("r.json"))).unwrap_err();
    assert_eq!(e.code(), codes::ROLLBACK_PATH.as_str());
    assert!(!e.message().contains("fresh path"), "{}", e.message());
    // The same checks on restore.
    let art = d.path().join("a.json");
    let c = manifest("c");
    private::write_atomic(&art, rollback_artifact(pid(), lock(), &Digest::of(c.as_bytes()), 7, &c).as_bytes()).unwrap();
    let e = Plan::from_rollback_artifact(pid(), lock(), Digest::of(b"x"), &abs(&art), abs(&existing)).unwrap_err();
    assert_eq!(e.code(), codes::ROLLBACK_PATH.as_str());
    // A content file that is not a manifest of this pointer is refused.
    let e = Plan::from_content_file(MemoryId::new(7).unwrap(), lock(), Digest::of(b"x"), &abs(&content), abs(&d.path().join("r.json")))
        .unwrap_err();
    assert_eq!(e.code(), "pointer_manifest_invalid");
    let bad = d.path().join("bad.json");
    std::fs::write(&bad, [0xff, 0xfe, 0xfd]).unwrap();
    assert_eq!(
        Plan::from_content_file(pid(), lock(), Digest::of(b"x"), &abs(&bad), abs(&d.path().join("r.json"))).unwrap_err().code(),
        codes::CONTENT_FILE.as_str()
    );
}

#[test]
fn the_rollback_artifact_exists_before_the_patch_and_is_never_overwritten() {
    let d = private_tmp();
    let (old, new) = (manifest("old"), manifest("new"));
    std::fs::write(d.path().join("rollback.json"), b"precious").unwrap();
    let a = api(vec![ok(CLAIMED), get(&old), ok(RELEASED)]);
    let e = publish(&a, &plan(d.path(), &old, &new), 9).unwrap_err();
    assert_eq!(e.code(), codes::ROLLBACK_PATH.as_str());
    assert_eq!(std::fs::read(d.path().join("rollback.json")).unwrap(), b"precious");
    assert_eq!(methods(&a), [Method::Post, Method::Get, Method::Post]);
}

/// The file bounds as numbers: a content file of 64 KiB is read (and then
/// judged as a manifest), one byte more is refused; a rollback artifact may
/// be 6 MiB + 64 KiB (six bytes per byte of a 1 MiB answer plus envelope).
#[test]
fn the_file_bounds_as_numbers() {
    assert_eq!(crate::http::MAX_RESPONSE_BYTES, 1_048_576);
    let d = private_tmp();
    let content = d.path().join("c.json");
    std::fs::write(&content, vec![b' '; 65_536]).unwrap();
    let e = Plan::from_content_file(pid(), lock(), Digest::of(b"x"), &abs(&content), abs(&d.path().join("r.json"))).unwrap_err();
    assert_eq!(e.code(), "pointer_manifest_invalid", "{e:?}");
    std::fs::write(&content, vec![b' '; 65_537]).unwrap();
    let e = Plan::from_content_file(pid(), lock(), Digest::of(b"x"), &abs(&content), abs(&d.path().join("r.json"))).unwrap_err();
    assert_eq!(
        (e.code(), e.detail().unwrap()["reason"].as_str()),
        (codes::CONTENT_FILE.as_str(), Some(private::codes::TOO_LARGE.as_str()))
    );
    let art = d.path().join("a.json");
    private::write_atomic(&art, &vec![b' '; 6_356_992]).unwrap();
    let e = read_rollback_artifact(&abs(&art), pid(), lock()).unwrap_err();
    assert_eq!((e.code(), e.message()), (codes::ROLLBACK_ARTIFACT.as_str(), "rollback artifact is not JSON"));
    private::write_atomic(&art, &vec![b' '; 6_356_993]).unwrap();
    let e = read_rollback_artifact(&abs(&art), pid(), lock()).unwrap_err();
    assert_eq!(e.detail().unwrap()["reason"], private::codes::TOO_LARGE);
}
