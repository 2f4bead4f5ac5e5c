//! A crashed publish's lease is released with
//! `pointer-publish --release-lease` (another persona's lease is refused);
//! a semantically clean PATCH acknowledgement with other JSON formatting is
//! `published`, not `published_reconciled`.
#![allow(clippy::unwrap_used)]

use crate::support;
use support::publish as support_publish;

use serde_json::{json, Value};
use support_publish::*;

fn release_lease(s: &Seeded) -> std::process::Output {
    s.run(&["--release-lease".into(), "--lock-message-id".into(), s.lock_id.to_string()])
}

/// The absolute `pointer-publish --release-lease` command of this build.
fn release_command(s: &Seeded) -> String {
    let exe = std::fs::canonicalize(env!("CARGO_BIN_EXE_pointer-publish")).unwrap();
    format!("{} --release-lease --lock-message-id {}", exe.display(), s.lock_id)
}

#[test]
fn an_expired_lease_of_a_crashed_publish_names_the_release_and_the_release_frees_it() {
    let s = Seeded::new();
    // A crashed publish left this persona's lease; the server clock then
    // passes its expiry (the advance_clock fault: no sleeping), not its reaping.
    assert_eq!(s.server.claim(s.lock_id, "codex", 10).status, 200);
    let occurrence = s.next_occurrence("POST", "/api/claim");
    s.server.set_faults(&serde_json::json!([{"method": "POST", "path": "/api/claim", "occurrence": occurrence,
        "action": {"type": "advance_clock", "ms": 11000}}]));
    let blocked = s.publish("expired", &s.manifest("expired"));
    assert_eq!(Ran::of(&blocked).failure(), "pointer_mutex_expired_requires_human");
    let stderr = String::from_utf8_lossy(&blocked.stderr);
    assert!(stderr.contains("expired lease: a crashed publication left it"), "{stderr}");
    assert!(stderr.contains(&format!("release it with `{}`, then publish again", release_command(&s))), "{stderr}");
    // What the message says works: the release frees it and the publish goes through.
    let out = release_lease(&s);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(serde_json::from_slice::<Value>(&out.stdout).unwrap()["wasHeld"], true);
    let ok = s.publish("after", &s.manifest("after the release"));
    assert!(ok.status.success(), "{}", String::from_utf8_lossy(&ok.stderr));
}

#[test]
fn release_lease_frees_our_own_lease_and_refuses_anothers() {
    let s = Seeded::new();
    // A crashed publish: the lease is held by this persona (codex).
    assert_eq!(s.server.claim(s.lock_id, "codex", 300).status, 200);
    let blocked = s.publish("blocked", &s.manifest("blocked"));
    assert_eq!(Ran::of(&blocked).failure(), "pointer_mutex_unavailable");
    // The refusal names the exact release command (docs/publish.md, "The lease").
    let stderr = String::from_utf8_lossy(&blocked.stderr);
    assert!(stderr.contains(&format!("release it with `{}`", release_command(&s))), "{stderr}");
    assert!(!stderr.contains("lease expires"), "an expired lease frees nothing: {stderr}");
    let out = release_lease(&s);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v, json!({"schemaVersion": 1, "type": "kijito.pointer-lease.released", "lockMessageId": s.lock_id, "wasHeld": true}));
    let ok = s.publish("after", &s.manifest("after release"));
    assert!(ok.status.success(), "{}", String::from_utf8_lossy(&ok.stderr));
    // Nothing held: answers wasHeld false and leaves nothing held.
    let out = release_lease(&s);
    assert_eq!(serde_json::from_slice::<Value>(&out.stdout).unwrap()["wasHeld"], false);
    assert!(s.publish("free", &s.manifest("still free")).status.success());
    // Another persona's lease is never released.
    assert_eq!(s.server.claim(s.lock_id, "claude", 300).status, 200);
    let out = release_lease(&s);
    assert_eq!(Ran::of(&out).failure(), "pointer_mutex_unavailable");
    let again = s.server.claim(s.lock_id, "claude", 300);
    assert_eq!(again.json()["advisory"]["reason"], "self_claimed", "claude's lease is still held: {}", again.body);
    // Usage: only --lock-message-id and --token-file go with it.
    let out = s.run(&[
        "--release-lease".into(),
        "--lock-message-id".into(),
        s.lock_id.to_string(),
        "--pointer-id".into(),
        s.pointer_id.to_string(),
    ]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn a_clean_ack_with_other_formatting_is_published() {
    let s = Seeded::new();
    let path = s.pointer_path();
    let occurrence = s.next_occurrence("PATCH", &path);
    // The server really writes, then answers the clean ACK with other whitespace.
    s.server.set_faults(&json!([{"method": "PATCH", "path": path, "occurrence": occurrence,
        "action": {"type": "apply_then_respond", "status": 200, "body": format!("{{\"result\": \"Updated [{}]\"}}", s.pointer_id)}}]));
    let out = s.publish("spaced", &s.manifest("spaced ack"));
    let ran = Ran::of(&out);
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    assert_eq!(ran.receipt()["status"], "published", "{}", ran.stdout);
}
