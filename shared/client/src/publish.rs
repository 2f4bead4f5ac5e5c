//! Publication (docs/protocol.md §6): the lease-guarded read-verify-write
//! with a rollback artifact, exactly one PATCH, an unconditional re-read, and
//! the lease released on every path after a successful claim. Nothing is
//! retried.
//!
//! | observed | code |
//! |---|---|
//! | mutex refused | `pointer_mutex_unavailable` (`claimed_by` in detail) |
//! | mutex refused, `lease_expired:true` | `pointer_mutex_expired_requires_human` |
//! | pointer not current or not at the expected digest | `pointer_publish_conflict` |
//! | second claim answered `claimed:true` | `pointer_mutex_ownership_lost` |
//! | second claim anything but self-claimed | `pointer_mutex_ownership_unverified` |
//! | re-read failed | `pointer_publish_reconciliation_unavailable` |
//! | re-read not current | `pointer_publish_reconciliation_failed` |
//! | new content | success: `published` (clean ACK) or `published_reconciled` |
//! | old content, PATCH 403 | `pointer_publish_not_found_or_forbidden` |
//! | old content, PATCH 412 | `pointer_publish_conflict` |
//! | old content otherwise | `pointer_publish_not_committed` |
//! | other content | `pointer_publish_concurrent_clobber` (`observedDigest` in detail) |
//! | release refused/failed | `pointer_mutex_release_failed`, or `pointer_publish_and_release_failed` |

use crate::http::{self, Api, Claim, Transport};
use crate::pointer;
use kijito_files::private::{self, FileRules};
use kijito_protocol::error::{Error, Kind, Result};
use kijito_protocol::ids::{AbsPath, Digest, MemoryId, MessageId};
use kijito_protocol::manifest::{self, canonical_json};
use kijito_protocol::render;
use serde_json::{json, Value};

/// Lease length for publication.
pub const LEASE_SECONDS: u32 = 300;
pub const ROLLBACK_SCHEMA: &str = "kijito.codex.pointer-rollback/v1";
pub const RECEIPT_SCHEMA: &str = "kijito.codex.pointer-publish-receipt/v1";
/// Content file bounds (section 6).
pub const CONTENT_RULES: FileRules = FileRules { owner_only: false, min_bytes: 2, max_bytes: 64 * 1024 };
/// Rollback artifacts are ours: owner-only, at most content + envelope. The
/// content is the previous pointer as the service sent it (an answer is at
/// most 1 MiB) and JSON escaping can grow a byte to six (`\u001f`), so any
/// artifact the publisher can write can be restored.
pub const ROLLBACK_RULES: FileRules =
    FileRules { owner_only: true, min_bytes: 2, max_bytes: 6 * crate::http::MAX_RESPONSE_BYTES as u64 + 64 * 1024 };

/// Stable codes of this module (registered in the workspace by `tests/it/architecture.rs`).
pub mod codes {
    kijito_protocol::codes! {
        MUTEX_UNAVAILABLE MutexUnavailable = "pointer_mutex_unavailable",
        MUTEX_EXPIRED MutexExpired = "pointer_mutex_expired_requires_human",
        CONFLICT Conflict = "pointer_publish_conflict",
        OWNERSHIP_LOST OwnershipLost = "pointer_mutex_ownership_lost",
        OWNERSHIP_UNVERIFIED OwnershipUnverified = "pointer_mutex_ownership_unverified",
        RECONCILIATION_UNAVAILABLE ReconciliationUnavailable = "pointer_publish_reconciliation_unavailable",
        RECONCILIATION_FAILED ReconciliationFailed = "pointer_publish_reconciliation_failed",
        NOT_FOUND_OR_FORBIDDEN NotFoundOrForbidden = "pointer_publish_not_found_or_forbidden",
        NOT_COMMITTED NotCommitted = "pointer_publish_not_committed",
        CLOBBER Clobber = "pointer_publish_concurrent_clobber",
        RELEASE_FAILED ReleaseFailed = "pointer_mutex_release_failed",
        PUBLISH_AND_RELEASE_FAILED PublishAndReleaseFailed = "pointer_publish_and_release_failed",
        CONTENT_FILE ContentFile = "content_file_invalid",
        ROLLBACK_PATH RollbackPath = "rollback_file_invalid",
        ROLLBACK_ARTIFACT RollbackArtifact = "rollback_artifact_invalid",
    }
}

/// Validated inputs: everything step 1 checks before any network call.
#[derive(Debug, Clone)]
pub struct Plan {
    pub pointer_id: MemoryId,
    pub lock_message_id: MessageId,
    pub expected_digest: Digest,
    /// The new canonical manifest (already validated against both ids).
    pub content: String,
    pub rollback_file: AbsPath,
}

impl Plan {
    /// Step 1 for a new manifest file.
    pub fn from_content_file(
        pointer_id: MemoryId,
        lock_message_id: MessageId,
        expected_digest: Digest,
        content_file: &AbsPath,
        rollback_file: AbsPath,
    ) -> Result<Plan> {
        render::run_known_bad_control()?;
        check_rollback_path(&rollback_file)?;
        let (bytes, _) = private::read_checked(content_file.as_path(), CONTENT_RULES).map_err(|e| {
            Error::new(codes::CONTENT_FILE, format!("content file: {}", e.message())).with_detail(json!({"reason": e.code()}))
        })?;
        let content = String::from_utf8(bytes).map_err(|_| Error::new(codes::CONTENT_FILE, "content file is not UTF-8"))?;
        manifest::parse_manifest(content.as_bytes(), pointer_id, lock_message_id)?;
        Ok(Plan { pointer_id, lock_message_id, expected_digest, content, rollback_file })
    }

    /// Step 1 for a restore: the artifact's schema, ids and content digest
    /// are checked, and its content goes through the same guarded path.
    pub fn from_rollback_artifact(
        pointer_id: MemoryId,
        lock_message_id: MessageId,
        expected_digest: Digest,
        artifact: &AbsPath,
        rollback_file: AbsPath,
    ) -> Result<Plan> {
        render::run_known_bad_control()?;
        check_rollback_path(&rollback_file)?;
        if artifact == &rollback_file {
            return Err(Error::new(codes::ROLLBACK_PATH, "the new rollback file must differ from the artifact being restored"));
        }
        let content = read_rollback_artifact(artifact, pointer_id, lock_message_id)?;
        manifest::parse_manifest(content.as_bytes(), pointer_id, lock_message_id)?;
        Ok(Plan { pointer_id, lock_message_id, expected_digest, content, rollback_file })
    }
}

/// The rollback path must be absolute (typed), must not exist, and its
/// directory must be owned by the user, not group/other writable, not a symlink.
pub fn check_rollback_path(path: &AbsPath) -> Result<()> {
    private::check_new_file_path(path.as_path()).map_err(|e| {
        let hint = if e.code_as() == Some(private::codes::EXISTS) { "; each publication needs a fresh path" } else { "" };
        Error::new(codes::ROLLBACK_PATH, format!("rollback file: {}{hint}", e.message())).with_detail(json!({"reason": e.code()}))
    })
}

/// The rollback artifact bytes (exact key order of section 6).
pub fn rollback_artifact(pointer_id: MemoryId, lock: MessageId, digest: &Digest, captured_at_ms: u64, content: &str) -> String {
    canonical_json(&json!({
        "schema": ROLLBACK_SCHEMA,
        "pointerId": pointer_id.get(),
        "lockMessageId": lock.get(),
        "pointerDigest": digest.as_str(),
        "capturedAtMs": captured_at_ms,
        "content": content,
    }))
}

/// Read and check a rollback artifact; returns its content.
pub fn read_rollback_artifact(path: &AbsPath, pointer_id: MemoryId, lock: MessageId) -> Result<String> {
    let invalid = |why: String| Error::new(codes::ROLLBACK_ARTIFACT, why);
    let (bytes, _) = private::read_checked(path.as_path(), ROLLBACK_RULES)
        .map_err(|e| invalid(format!("rollback artifact: {}", e.message())).with_detail(json!({"reason": e.code()})))?;
    let value: Value = serde_json::from_slice(&bytes).map_err(|_| invalid("rollback artifact is not JSON".into()))?;
    let obj = value.as_object().ok_or_else(|| invalid("rollback artifact is not an object".into()))?;
    let keys: Vec<&str> = obj.keys().map(String::as_str).collect();
    if keys != ["schema", "pointerId", "lockMessageId", "pointerDigest", "capturedAtMs", "content"] {
        return Err(invalid("rollback artifact keys are not exactly those of section 6".into()));
    }
    if canonical_json(&value).as_bytes() != bytes.as_slice() {
        return Err(invalid("rollback artifact is not in canonical form".into()));
    }
    if obj["schema"] != ROLLBACK_SCHEMA {
        return Err(invalid("rollback artifact schema mismatch".into()));
    }
    if obj["pointerId"].as_u64() != Some(pointer_id.get()) || obj["lockMessageId"].as_u64() != Some(lock.get()) {
        return Err(invalid("rollback artifact names another pointer or lock".into()));
    }
    obj["capturedAtMs"].as_u64().ok_or_else(|| invalid("capturedAtMs must be an integer".into()))?;
    let content = obj["content"].as_str().ok_or_else(|| invalid("content must be a string".into()))?;
    let digest =
        obj["pointerDigest"].as_str().and_then(|d| Digest::parse(d).ok()).ok_or_else(|| invalid("pointerDigest is not a digest".into()))?;
    if Digest::of(content.as_bytes()) != digest {
        return Err(invalid("pointerDigest does not match the artifact's content".into()));
    }
    Ok(content.to_owned())
}

/// What the PATCH answered (recorded, never fatal by itself).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PatchOutcome {
    Acknowledged,
    ResponseInvalid,
    Failed(String),
}

impl PatchOutcome {
    pub fn as_str(&self) -> &str {
        match self {
            PatchOutcome::Acknowledged => "acknowledged",
            PatchOutcome::ResponseInvalid => "response_invalid",
            PatchOutcome::Failed(code) => code,
        }
    }
}

/// A successful publication.
#[derive(Debug, Clone, PartialEq)]
pub struct Receipt {
    pub reconciled: bool,
    pub pointer_id: MemoryId,
    pub lock_message_id: MessageId,
    pub previous_digest: Digest,
    pub digest: Digest,
    pub patch_outcome: PatchOutcome,
    pub rollback_file: AbsPath,
    pub cas_enforced: bool,
}

impl Receipt {
    /// The receipt line (section 6 key order, plus `cas` at the end).
    pub fn to_json(&self) -> String {
        canonical_json(&json!({
            "schema": RECEIPT_SCHEMA,
            "status": if self.reconciled { "published_reconciled" } else { "published" },
            "knownBadControl": "passed",
            "pointerId": self.pointer_id.get(),
            "lockMessageId": self.lock_message_id.get(),
            "previousPointerDigest": self.previous_digest.as_str(),
            "pointerDigest": self.digest.as_str(),
            "patchOutcome": self.patch_outcome.as_str(),
            "rollbackFile": self.rollback_file.as_str(),
            "cas": if self.cas_enforced { "enforced" } else { "unavailable" },
        }))
    }
}

/// Steps 2-8. `plan` comes from step 1; `now_ms` stamps the rollback artifact.
pub fn publish<T: Transport>(api: &Api<T>, plan: &Plan, now_ms: u64) -> Result<Receipt> {
    // Step 2: claim; a refusal ends here (nothing held, nothing to release).
    match api.claim(plan.lock_message_id, LEASE_SECONDS) {
        Ok(Claim::Claimed) => {}
        Ok(Claim::Refused { reason, claimed_by, lease_expired }) => {
            return Err(refused(&reason, &claimed_by, lease_expired, plan.lock_message_id))
        }
        Err(err) => {
            // An ambiguous claim may have been granted: release best-effort,
            // and report the claim failure.
            let _ = api.release(plan.lock_message_id);
            return Err(err.context("claiming the pointer mutex"));
        }
    }
    let result = guarded(api, plan, now_ms);
    // Step 8: release on every path after a successful claim.
    let released = api.release(plan.lock_message_id);
    match (result, released) {
        (Ok(receipt), Ok(true)) => Ok(receipt),
        (Ok(receipt), other) => Err(Error::new(
            codes::RELEASE_FAILED,
            format!("the pointer was published but the mutex release {}; an operator must check the lease", release_words(&other)),
        )
        .with_detail(json!({"published": true, "pointerDigest": receipt.digest.as_str(), "rollbackFile": receipt.rollback_file.as_str(), "release": release_words(&other)}))),
        (Err(err), Ok(true)) => Err(err),
        (Err(err), other) => {
            let mut detail = err.detail().cloned().unwrap_or_else(|| json!({}));
            if let Some(obj) = detail.as_object_mut() {
                obj.insert("publishFailure".into(), Value::String(err.code().to_owned()));
                obj.insert("release".into(), Value::String(release_words(&other)));
            }
            Err(Error::new(
                codes::PUBLISH_AND_RELEASE_FAILED,
                format!("{} ({}); then the mutex release {}", err.message(), err.code(), release_words(&other)),
            )
            .with_detail(detail))
        }
    }
}

/// `pointer-publish --release-lease`: release this persona's own lease on
/// the mutex (left by a crashed publish). A probe claim tells whose lease it
/// is: `self_claimed` by this persona is released; a lease of another persona
/// is refused (never taken over); when nobody held it, the probe's own claim
/// is released again. Returns whether a lease of ours was held.
pub fn release_own_lease<T: Transport>(api: &Api<T>, lock: MessageId) -> Result<bool> {
    let held = match api.claim(lock, LEASE_SECONDS)? {
        Claim::Refused { reason, claimed_by, .. } if reason == "self_claimed" && claimed_by == api.persona.as_str() => true,
        Claim::Claimed => false,
        Claim::Refused { reason, claimed_by, lease_expired } => {
            return Err(Error::new(
                codes::MUTEX_UNAVAILABLE,
                format!("the pointer mutex is held by {claimed_by:?} ({reason}), not by this persona; it is not released"),
            )
            .with_detail(json!({"claimed_by": claimed_by, "reason": reason, "lease_expired": lease_expired})))
        }
    };
    match api.release(lock) {
        Ok(true) => Ok(held),
        other => Err(Error::new(codes::RELEASE_FAILED, format!("the mutex release {}", release_words(&other)))),
    }
}

/// The `--release-lease` answer line.
pub fn released_line(lock: MessageId, was_held: bool) -> String {
    json!({"schemaVersion": 1, "type": "kijito.pointer-lease.released", "lockMessageId": lock.get(), "wasHeld": was_held}).to_string()
}

fn release_words(r: &Result<bool>) -> String {
    match r {
        Ok(true) => "succeeded".into(),
        Ok(false) => "was refused (released:false)".into(),
        Err(e) => format!("failed ({})", e.code()),
    }
}

/// The exact command that releases this persona's own lease on `lock`
/// (the installed `pointer-publish` beside the running executable).
pub fn release_command(lock: MessageId) -> String {
    let exe = std::env::current_exe()
        .and_then(|p| p.canonicalize())
        .ok()
        .and_then(|p| p.parent().map(|d| d.join("pointer-publish").display().to_string()))
        .unwrap_or_else(|| "pointer-publish".into());
    format!("{exe} --release-lease --lock-message-id {lock}")
}

/// The refusal of a claim on the mutex, saying exactly what happens next
/// (docs/publish.md, "The lease"): an expired lease is refused to every
/// claim until its holder releases it or the server reaps it, so "wait for
/// it to expire" is never the advice.
fn refused(reason: &str, claimed_by: &str, lease_expired: bool, lock: MessageId) -> Error {
    let detail = json!({"claimed_by": claimed_by, "reason": reason, "lease_expired": lease_expired});
    let release = release_command(lock);
    if lease_expired && reason == "self_claimed" {
        Error::new(
            codes::MUTEX_EXPIRED,
            format!("the pointer mutex is held by this persona ({claimed_by:?}) with an expired lease: a crashed publication left it; nothing was written. Every claim is refused until it is released (or the server reaps it): release it with `{release}`, then publish again."),
        )
        .with_detail(detail)
    } else if lease_expired {
        Error::new(
            codes::MUTEX_EXPIRED,
            format!("the pointer mutex is held by {claimed_by:?}, another persona, with an expired lease; nothing was written. Every claim is refused until that persona releases it or the server reaps it; it is not this persona's to release or take over: ask the user."),
        )
        .with_detail(detail)
    } else if reason == "self_claimed" {
        Error::new(
            codes::MUTEX_UNAVAILABLE,
            format!("the pointer mutex is already held by this persona ({claimed_by:?}): another publication of this persona is running, or a crashed one left its lease; nothing was written. If none is running, release it with `{release}`, then publish again; otherwise wait for it to finish."),
        )
        .with_detail(detail)
    } else {
        Error::new(
            codes::MUTEX_UNAVAILABLE,
            format!("the pointer mutex is held by {claimed_by:?} ({reason}); nothing was written. Try again after it is released."),
        )
        .with_detail(detail)
    }
}

/// Steps 3-7, under the lease.
fn guarded<T: Transport>(api: &Api<T>, plan: &Plan, now_ms: u64) -> Result<Receipt> {
    // Step 3: read and verify the current pointer.
    let before = pointer::read_pointer(api, plan.pointer_id)?;
    if !before.is_current() {
        return Err(Error::new(codes::CONFLICT, "the pointer is retired; publication needs a current pointer")
            .with_detail(json!({"reason": "pointer_retired"})));
    }
    if before.digest != plan.expected_digest {
        return Err(Error::new(codes::CONFLICT, "the pointer is not at the expected digest; someone published in between").with_detail(
            json!({"reason": "digest_mismatch", "observedDigest": before.digest.as_str(), "expectedDigest": plan.expected_digest.as_str()}),
        ));
    }
    // CAS when the server offers it: If-Match carries the ETag of this GET.
    let if_match = before.etag.clone();
    // Step 4: the rollback artifact, exclusively, before any write.
    let artifact = rollback_artifact(plan.pointer_id, plan.lock_message_id, &before.digest, now_ms, &before.content);
    private::create_new(plan.rollback_file.as_path(), artifact.as_bytes()).map_err(|e| {
        Error::new(codes::ROLLBACK_PATH, format!("rollback file: {}", e.message())).with_detail(json!({"reason": e.code()}))
    })?;
    // Step 5: the ownership check.
    match api.claim(plan.lock_message_id, LEASE_SECONDS) {
        Ok(Claim::Refused { reason, claimed_by, lease_expired: false })
            if reason == "self_claimed" && claimed_by == api.persona.as_str() => {}
        Ok(Claim::Claimed) => {
            return Err(Error::new(
                codes::OWNERSHIP_LOST,
                "the lease was lost before the write (a new claim succeeded); nothing was written",
            )
            .with_detail(json!({"reason": "claimed_again", "rollbackFile": plan.rollback_file.as_str()})))
        }
        Ok(Claim::Refused { reason, claimed_by, lease_expired }) => {
            return Err(Error::new(codes::OWNERSHIP_UNVERIFIED, "the ownership check did not answer self_claimed; nothing was written")
                .with_detail(json!({"claimed_by": claimed_by, "reason": reason, "lease_expired": lease_expired})))
        }
        Err(e) => {
            return Err(Error::new(codes::OWNERSHIP_UNVERIFIED, format!("the ownership check failed ({}); nothing was written", e.code()))
                .with_detail(json!({"reason": e.code()})))
        }
    }
    // Step 6: exactly one PATCH.
    // The HTTP status the service refused the PATCH with, if it did.
    let (patch, refused_with) = match api.patch_memory(plan.pointer_id, &plan.content, if_match.as_deref()) {
        Ok(body) if http::is_clean_ack(&body, plan.pointer_id) => (PatchOutcome::Acknowledged, None),
        Ok(_) => (PatchOutcome::ResponseInvalid, None),
        Err(e) => (PatchOutcome::Failed(e.code().to_owned()), if let Kind::HttpStatus(s) = e.kind() { Some(s) } else { None }),
    };
    // Step 7: re-read unconditionally and reconcile.
    let new_digest = Digest::of(plan.content.as_bytes());
    let after = match pointer::read_pointer(api, plan.pointer_id) {
        Ok(read) => read,
        Err(e) if e.kind().is_service() => {
            return Err(Error::new(
                codes::RECONCILIATION_UNAVAILABLE,
                format!("re-reading the pointer failed ({}); the outcome of the write is unknown", e.code()),
            )
            .with_detail(json!({"patchOutcome": patch.as_str(), "reason": e.code()})))
        }
        Err(e) => {
            return Err(Error::new(codes::RECONCILIATION_FAILED, format!("the pointer no longer reads as a valid memory ({})", e.code()))
                .with_detail(json!({"patchOutcome": patch.as_str(), "reason": e.code()})))
        }
    };
    if !after.is_current() {
        return Err(Error::new(codes::RECONCILIATION_FAILED, "the pointer is no longer current after the write")
            .with_detail(json!({"patchOutcome": patch.as_str(), "observedDigest": after.digest.as_str()})));
    }
    let detail = json!({"patchOutcome": patch.as_str(), "observedDigest": after.digest.as_str()});
    if after.digest == new_digest {
        return Ok(Receipt {
            reconciled: patch != PatchOutcome::Acknowledged,
            pointer_id: plan.pointer_id,
            lock_message_id: plan.lock_message_id,
            previous_digest: before.digest,
            digest: new_digest,
            patch_outcome: patch,
            rollback_file: plan.rollback_file.clone(),
            cas_enforced: if_match.is_some(),
        });
    }
    if after.digest == before.digest {
        return Err(match refused_with {
            Some(403) => Error::new(
                codes::NOT_FOUND_OR_FORBIDDEN,
                "the service refused the write (403: not found or forbidden); the pointer is unchanged",
            ),
            Some(412) => Error::new(codes::CONFLICT, "compare-and-swap refused the write (412); the pointer is unchanged"),
            _ => Error::new(
                codes::NOT_COMMITTED,
                format!("the write was not committed (PATCH: {}); the pointer is unchanged", patch.as_str()),
            ),
        }
        .with_detail(detail));
    }
    let why = match refused_with {
        Some(412) => "; compare-and-swap refused our write (412), so the other writer's content is intact and nothing of ours was written",
        _ => "; another writer changed it without the lease",
    };
    Err(Error::new(
        codes::CLOBBER,
        format!("the pointer holds content that is neither the old nor the new manifest (digest {}){why}", after.digest),
    )
    .with_detail(detail))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::http::script::{api, ok};
    use crate::http::{Method, Response};
    use std::os::unix::fs::PermissionsExt;
    use std::path::Path;

    const PID: u64 = 21813;
    const LOCK: u64 = 1234;

    #[test]
    fn the_largest_artifact_the_publisher_can_write_can_be_restored() {
        // The worst content: a whole 1 MiB answer of bytes JSON escapes to six.
        let content = "\u{1f}".repeat(crate::http::MAX_RESPONSE_BYTES);
        let d = tempfile::tempdir().unwrap();
        std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
        let path = AbsPath::from_path(&d.path().join("rb.json")).unwrap();
        let artifact = rollback_artifact(pid(), MessageId::new(LOCK).unwrap(), &Digest::of(content.as_bytes()), 5, &content);
        assert!(artifact.len() as u64 > 256 * 1024 && artifact.len() as u64 <= ROLLBACK_RULES.max_bytes, "{}", artifact.len());
        private::create_new(path.as_path(), artifact.as_bytes()).unwrap();
        assert_eq!(read_rollback_artifact(&path, pid(), MessageId::new(LOCK).unwrap()).unwrap(), content);
    }

    pub(super) fn pid() -> MemoryId {
        MemoryId::new(PID).unwrap()
    }
    pub(super) fn lock() -> MessageId {
        MessageId::new(LOCK).unwrap()
    }

    pub(super) fn private_tmp() -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
        d
    }

    pub(super) fn abs(p: &Path) -> AbsPath {
        AbsPath::parse(p.to_str().unwrap()).unwrap()
    }

    pub(super) fn manifest(title: &str) -> String {
        let sha = Digest::of(b"anchor");
        format!(
            "{{\"schema\":\"kijito.codex.current-state/v1\",\"pointerId\":{PID},\"lock\":{{\"protocol\":\"kijito-message-claim/v1\",\"messageId\":{LOCK}}},\"state\":\"active\",\"task\":{{\"title\":\"{title}\",\"nextAction\":\"go\",\"done\":[],\"remaining\":[\"x\"],\"doneWhen\":[\"y\"],\"gate\":{{\"requiredConsecutiveGreens\":2,\"consecutiveGreens\":0,\"artifactDigest\":null}}}},\"anchors\":[{{\"id\":5,\"status\":\"current\",\"sha256\":\"{sha}\",\"purpose\":\"p\"}}]}}"
        )
    }

    pub(super) fn rendering(content: &str, marker: &str) -> String {
        format!(
            "Memory [{PID}]\nType: note\nScope: project\nProject: Codex\nPersona: codex\nStatus: active\nSource: mcp\nCreated: 2026-07-25 00:00:00\nImportance: 0.9\nbelief: confidence=1 evidence=1 basis=observed{marker}\n\u{27e6}UNTRUSTED id={PID} src=persona:codex trust=memory-content n=abc123\u{27e7}\n{content}\n\u{27e6}/UNTRUSTED n=abc123\u{27e7}"
        )
    }

    fn get(content: &str, etag: bool) -> Result<Response> {
        let body = json!({"result": rendering(content, "")}).to_string();
        let etag = etag.then(|| format!("\"sha256:{}\"", Digest::of(content.as_bytes())));
        Ok(Response { status: 200, etag, body: body.into_bytes() })
    }

    pub(super) const CLAIMED: &str = r#"{"claimed":true,"message_id":1234}"#;
    pub(super) const SELF: &str =
        r#"{"claimed":false,"message_id":1234,"advisory":{"reason":"self_claimed","claimed_by":"codex","lease_expired":false}}"#;
    pub(super) const ACK: &str = r#"{"result":"Updated [21813]"}"#;
    pub(super) const RELEASED: &str = r#"{"released":true,"message_id":1234}"#;

    pub(super) fn plan(dir: &Path, old: &str, new: &str) -> Plan {
        Plan {
            pointer_id: pid(),
            lock_message_id: lock(),
            expected_digest: Digest::of(old.as_bytes()),
            content: new.to_owned(),
            rollback_file: abs(&dir.join("rollback.json")),
        }
    }

    #[test]
    fn happy_path_sends_the_eight_steps_in_order_with_if_match() {
        let d = private_tmp();
        let (old, new) = (manifest("old"), manifest("new"));
        let a = api(vec![ok(CLAIMED), get(&old, true), ok(SELF), ok(ACK), get(&new, true), ok(RELEASED)]);
        let receipt = publish(&a, &plan(d.path(), &old, &new), 42).unwrap();
        assert!(!receipt.reconciled && receipt.cas_enforced);
        let seen = a.transport.seen.lock().unwrap();
        let shape: Vec<(Method, &str)> = seen.iter().map(|r| (r.method, r.path.as_str())).collect();
        assert_eq!(
            shape,
            [
                (Method::Post, "/api/claim"),
                (Method::Get, "/api/memory/21813"),
                (Method::Post, "/api/claim"),
                (Method::Patch, "/api/memory/21813"),
                (Method::Get, "/api/memory/21813"),
                (Method::Post, "/api/release")
            ]
        );
        assert_eq!(seen[3].if_match.as_deref(), Some(format!("\"sha256:{}\"", Digest::of(old.as_bytes())).as_str()));
        let artifact = std::fs::read_to_string(d.path().join("rollback.json")).unwrap();
        assert_eq!(artifact, rollback_artifact(pid(), lock(), &Digest::of(old.as_bytes()), 42, &old));
    }

    #[test]
    fn without_an_etag_no_if_match_is_sent() {
        let d = private_tmp();
        let (old, new) = (manifest("old"), manifest("new"));
        let a = api(vec![ok(CLAIMED), get(&old, false), ok(SELF), ok(ACK), get(&new, false), ok(RELEASED)]);
        let receipt = publish(&a, &plan(d.path(), &old, &new), 1).unwrap();
        assert!(!receipt.cas_enforced);
        assert!(receipt.to_json().ends_with(r#","cas":"unavailable"}"#));
        assert_eq!(a.transport.seen.lock().unwrap()[3].if_match, None);
    }

    #[test]
    fn an_ambiguous_claim_is_released_and_never_retried() {
        let d = private_tmp();
        let a = api(vec![Err(http::service_error(http::codes::TIMEOUT, "t")), ok(RELEASED)]);
        let err = publish(&a, &plan(d.path(), "a", &manifest("n")), 1).unwrap_err();
        assert_eq!(err.code(), "kijito_timeout");
        assert_eq!(a.transport.seen.lock().unwrap().len(), 2);
        assert!(!d.path().join("rollback.json").exists());
    }

    #[test]
    fn a_refused_claim_sends_nothing_else() {
        let d = private_tmp();
        let refused =
            r#"{"claimed":false,"message_id":1234,"advisory":{"reason":"already_claimed","claimed_by":"other","lease_expired":true}}"#;
        let a = api(vec![ok(refused)]);
        let err = publish(&a, &plan(d.path(), "a", &manifest("n")), 1).unwrap_err();
        assert_eq!(err.code(), codes::MUTEX_EXPIRED.as_str());
        assert_eq!(err.detail().unwrap()["claimed_by"], "other");
        assert_eq!(a.transport.seen.lock().unwrap().len(), 1);
    }

    #[test]
    fn receipt_key_order_is_exact() {
        let r = Receipt {
            reconciled: true,
            pointer_id: pid(),
            lock_message_id: lock(),
            previous_digest: Digest::of(b"a"),
            digest: Digest::of(b"b"),
            patch_outcome: PatchOutcome::Failed("kijito_timeout".into()),
            rollback_file: AbsPath::parse("/tmp/r.json").unwrap(),
            cas_enforced: true,
        };
        assert_eq!(
            r.to_json(),
            format!(
                "{{\"schema\":\"kijito.codex.pointer-publish-receipt/v1\",\"status\":\"published_reconciled\",\"knownBadControl\":\"passed\",\"pointerId\":21813,\"lockMessageId\":1234,\"previousPointerDigest\":\"{}\",\"pointerDigest\":\"{}\",\"patchOutcome\":\"kijito_timeout\",\"rollbackFile\":\"/tmp/r.json\",\"cas\":\"enforced\"}}",
                Digest::of(b"a"),
                Digest::of(b"b")
            )
        );
    }

    #[test]
    fn rollback_artifact_parsing_rejections() {
        let d = private_tmp();
        let content = manifest("old");
        let good = rollback_artifact(pid(), lock(), &Digest::of(content.as_bytes()), 7, &content);
        let path = d.path().join("a.json");
        private::write_atomic(&path, good.as_bytes()).unwrap();
        assert_eq!(read_rollback_artifact(&abs(&path), pid(), lock()).unwrap(), content);
        // Wrong ids.
        assert_eq!(
            read_rollback_artifact(&abs(&path), MemoryId::new(1).unwrap(), lock()).unwrap_err().code(),
            codes::ROLLBACK_ARTIFACT.as_str()
        );
        assert_eq!(
            read_rollback_artifact(&abs(&path), pid(), MessageId::new(1).unwrap()).unwrap_err().code(),
            codes::ROLLBACK_ARTIFACT.as_str()
        );
        let digest = Digest::of(content.as_bytes()).as_str().to_owned();
        let other = Digest::of(b"other").as_str().to_owned();
        let swapped = good.replacen(r#""pointerId":21813,"lockMessageId":1234"#, r#""lockMessageId":1234,"pointerId":21813"#, 1);
        let bad: Vec<(String, &str)> = vec![
            ("not json".into(), "not JSON"),
            ("[1,2]".into(), "not an object"),
            (good.replace(&digest, &other), "digest mismatch"),
            (good.replace("\"capturedAtMs\":7", "\"capturedAtMs\":7.5"), "fractional time"),
            (good.replace("\"capturedAtMs\":7", "\"capturedAtMs\":-7"), "negative time"),
            (good.replace("pointer-rollback/v1", "pointer-rollback/v2"), "schema"),
            (good.replacen(':', ": ", 1), "not compact"),
            (swapped, "key order"),
            (good.replace(",\"capturedAtMs\":7", ""), "missing key"),
            (good.replacen("{", "{\"extra\":1,", 1), "unknown key"),
            (format!("{}\n", good), "trailing newline"),
            (good.replace(&format!("\"pointerDigest\":\"{digest}\""), "\"pointerDigest\":\"ABC\""), "bad digest"),
            (good.replace(&format!("\"content\":{}", serde_json::to_string(&content).unwrap()), "\"content\":5"), "content not a string"),
        ];
        for (i, (text, why)) in bad.iter().enumerate() {
            let p = d.path().join(format!("bad{i}.json"));
            private::write_atomic(&p, text.as_bytes()).unwrap();
            assert_eq!(read_rollback_artifact(&abs(&p), pid(), lock()).unwrap_err().code(), codes::ROLLBACK_ARTIFACT.as_str(), "{why}");
        }
        // Unsafe files: group-readable, symlink, too small.
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
        assert_eq!(
            read_rollback_artifact(&abs(&path), pid(), lock()).unwrap_err().detail().unwrap()["reason"],
            private::codes::PERMISSIONS
        );
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        let link = d.path().join("link.json");
        std::os::unix::fs::symlink(&path, &link).unwrap();
        assert_eq!(read_rollback_artifact(&abs(&link), pid(), lock()).unwrap_err().detail().unwrap()["reason"], private::codes::SYMLINK);
    }

    #[test]
    fn restore_needs_a_fresh_rollback_path_and_a_valid_manifest() {
        let d = private_tmp();
        let content = manifest("old");
        let art = d.path().join("a.json");
        private::write_atomic(&art, rollback_artifact(pid(), lock(), &Digest::of(content.as_bytes()), 7, &content).as_bytes()).unwrap();
        let expected = Digest::of(b"x");
        let e = Plan::from_rollback_artifact(pid(), lock(), expected.clone(), &abs(&art), abs(&art)).unwrap_err();
        assert_eq!(e.code(), codes::ROLLBACK_PATH.as_str());
        let plan = Plan::from_rollback_artifact(pid(), lock(), expected.clone(), &abs(&art), abs(&d.path().join("new.json"))).unwrap();
        assert_eq!(plan.content, content);
        // An artifact whose content is not a manifest is refused on restore.
        let junk = d.path().join("junk.json");
        private::write_atomic(&junk, rollback_artifact(pid(), lock(), &Digest::of(b"junk"), 7, "junk").as_bytes()).unwrap();
        assert_eq!(
            Plan::from_rollback_artifact(pid(), lock(), expected, &abs(&junk), abs(&d.path().join("n2.json"))).unwrap_err().code(),
            "pointer_manifest_invalid"
        );
    }

    const RULES: FileRules = CONTENT_RULES;

    #[test]
    fn a_content_file_changed_or_replaced_mid_read_is_refused() {
        let d = private_tmp();
        let path = d.path().join("c.json");
        let content = manifest("c");
        // Replaced (rename over) between open and read.
        private::write_atomic(&path, content.as_bytes()).unwrap();
        let err = private::read_checked_with(&path, RULES, || private::write_atomic(&path, manifest("d").as_bytes()).unwrap()).unwrap_err();
        assert_eq!(err.code(), private::codes::CHANGED.as_str());
        // Appended to in place.
        let err = private::read_checked_with(&path, RULES, || {
            use std::io::Write;
            std::fs::OpenOptions::new().append(true).open(&path).unwrap().write_all(b" ").unwrap();
        })
        .unwrap_err();
        assert_eq!(err.code(), private::codes::CHANGED.as_str());
        // Rewritten in place with the same size (only the mtime tells).
        private::write_atomic(&path, content.as_bytes()).unwrap();
        let err = private::read_checked_with(&path, RULES, || {
            use std::io::Write;
            let mut f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
            f.write_all(b"X").unwrap();
            f.set_modified(std::time::SystemTime::now() + std::time::Duration::from_secs(5)).unwrap();
        })
        .unwrap_err();
        assert_eq!(err.code(), private::codes::CHANGED.as_str());
        // Unchanged: read fine, and the plan accepts it.
        private::write_atomic(&path, content.as_bytes()).unwrap();
        let plan = Plan::from_content_file(pid(), lock(), Digest::of(b"x"), &abs(&path), abs(&d.path().join("r.json"))).unwrap();
        assert_eq!(plan.content, content);
    }
}

#[cfg(test)]
#[path = "publish_tests.rs"]
mod branch_tests;
