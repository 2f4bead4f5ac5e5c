//! The context-free verifier (PROTOCOL.md section 5): known-bad control
//! first, then the pointer (current, at the expected digest), its manifest
//! (against both configured ids), and every `current` anchor (fetched
//! concurrently, at most 8 in flight; never a retired one; never anything
//! reached through `edges:`), each current and matching its `sha256`.
//!
//! | failure | code |
//! |---|---|
//! | the control did not classify as retired | `known_bad_control_failed` |
//! | pointer eroded | `pointer_retired` |
//! | pointer not at `--expected-pointer-digest` | `pointer_digest_mismatch` |
//! | a current anchor is eroded | `current_anchor_retired` |
//! | an anchor's content differs from its `sha256` | `anchor_digest_mismatch` |
//! | snapshot not at `--expected-snapshot-digest` | `snapshot_digest_mismatch` |
//! | report path unusable | `report_file_invalid` |
//! | manifest, rendering and HTTP codes | from `manifest`, `render`, `http` |

use crate::error::{Error, Result};
use crate::http::{Api, Transport};
use crate::ids::{AbsPath, Digest, MemoryId, MessageId};
use crate::manifest::{self, canonical_json, Manifest};
use crate::pointer::{self, MemoryRead};
use crate::private;
use crate::render;
use serde_json::{json, Value};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

pub const REPORT_SCHEMA: &str = "kijito.codex.pointer-snapshot/v1";
/// Anchor fetches in flight at once.
pub const MAX_IN_FLIGHT: usize = 8;

/// Stable codes of this module.
pub mod codes {
    pub const POINTER_RETIRED: &str = "pointer_retired";
    pub const POINTER_DIGEST_MISMATCH: &str = "pointer_digest_mismatch";
    pub const ANCHOR_RETIRED: &str = "current_anchor_retired";
    pub const ANCHOR_DIGEST_MISMATCH: &str = "anchor_digest_mismatch";
    pub const SNAPSHOT_DIGEST_MISMATCH: &str = "snapshot_digest_mismatch";
    pub const REPORT_FILE: &str = "report_file_invalid";
}

/// What to verify.
#[derive(Debug, Clone)]
pub struct Request {
    pub pointer_id: MemoryId,
    pub lock_message_id: MessageId,
    pub expected_pointer_digest: Option<Digest>,
    pub expected_snapshot_digest: Option<Digest>,
}

/// A verified snapshot.
#[derive(Debug, Clone)]
pub struct Snapshot {
    pub pointer_id: MemoryId,
    pub lock_message_id: MessageId,
    pub pointer_digest: Digest,
    pub snapshot_digest: Digest,
    pub manifest: Manifest,
    pub anchors: Vec<(MemoryId, Digest)>,
}

/// The report path must be absolute (typed), must not exist, and its
/// directory must be owned by the user, not group/other writable, not a symlink.
pub fn check_report_path(path: &AbsPath) -> Result<()> {
    let bad = |e: Error| Error::new(codes::REPORT_FILE, format!("report file: {}", e.message())).with_detail(json!({"reason": e.code()}));
    private::check_dir(path.parent(), false).map_err(bad)?;
    if std::fs::symlink_metadata(path.as_path()).is_ok() {
        return Err(Error::new(codes::REPORT_FILE, format!("report file {path} already exists; each boot needs a fresh report path"))
            .with_detail(json!({"reason": private::codes::EXISTS})));
    }
    Ok(())
}

/// Run the verification (control first, then network).
pub fn verify<T: Transport>(api: &Api<T>, request: &Request) -> Result<Snapshot> {
    render::run_known_bad_control()?;
    let pointer = pointer::read_pointer(api, request.pointer_id)?;
    if !pointer.is_current() {
        return Err(Error::new(codes::POINTER_RETIRED, format!("pointer {} is retired (eroded)", request.pointer_id)));
    }
    if let Some(expected) = &request.expected_pointer_digest {
        if &pointer.digest != expected {
            return Err(Error::new(codes::POINTER_DIGEST_MISMATCH, format!("pointer {} is at {}, expected {expected}", request.pointer_id, pointer.digest))
                .with_detail(json!({"observedDigest": pointer.digest.as_str(), "expectedDigest": expected.as_str()})));
        }
    }
    let manifest = manifest::parse_manifest(pointer.content.as_bytes(), request.pointer_id, request.lock_message_id)?;
    let anchors = manifest.current_anchors();
    let reads = fetch_all(api, &anchors);
    for ((id, expected), read) in anchors.iter().zip(reads) {
        let read = read.map_err(|e| e.context(&format!("anchor {id}")))?;
        if !read.is_current() {
            return Err(Error::new(codes::ANCHOR_RETIRED, format!("current anchor {id} is retired (eroded)")).with_detail(json!({"anchorId": id.get()})));
        }
        if &read.digest != expected {
            return Err(Error::new(codes::ANCHOR_DIGEST_MISMATCH, format!("anchor {id} content is at {}, the manifest says {expected}", read.digest))
                .with_detail(json!({"anchorId": id.get(), "observedDigest": read.digest.as_str(), "expectedDigest": expected.as_str()})));
        }
    }
    let snapshot_digest = manifest::snapshot_digest(request.pointer_id, &pointer.digest, request.lock_message_id, &anchors);
    if let Some(expected) = &request.expected_snapshot_digest {
        if &snapshot_digest != expected {
            return Err(Error::new(codes::SNAPSHOT_DIGEST_MISMATCH, format!("snapshot is at {snapshot_digest}, expected {expected}"))
                .with_detail(json!({"observedDigest": snapshot_digest.as_str(), "expectedDigest": expected.as_str()})));
        }
    }
    Ok(Snapshot { pointer_id: request.pointer_id, lock_message_id: request.lock_message_id, pointer_digest: pointer.digest, snapshot_digest, manifest, anchors })
}

/// Fetch every anchor with at most `MAX_IN_FLIGHT` requests in flight;
/// results come back in manifest order.
fn fetch_all<T: Transport>(api: &Api<T>, anchors: &[(MemoryId, Digest)]) -> Vec<Result<MemoryRead>> {
    let next = AtomicUsize::new(0);
    let slots: Vec<Mutex<Option<Result<MemoryRead>>>> = anchors.iter().map(|_| Mutex::new(None)).collect();
    let workers = anchors.len().min(MAX_IN_FLIGHT);
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some((id, _)) = anchors.get(i) else { break };
                let read = pointer::read_anchor(api, *id);
                if let Ok(mut slot) = slots[i].lock() {
                    *slot = Some(read);
                }
            });
        }
    });
    slots
        .into_iter()
        .map(|slot| {
            slot.into_inner()
                .ok()
                .flatten()
                .unwrap_or_else(|| Err(Error::new("anchor_fetch_failed", "an anchor fetch did not complete")))
        })
        .collect()
}

impl Snapshot {
    /// The green report (section 5 key order).
    pub fn green_report(&self, boot_nonce: &str, verified_at_ms: u64) -> Value {
        json!({
            "schema": REPORT_SCHEMA,
            "verdict": "green",
            "knownBadControl": "passed",
            "graphEdgesUsed": false,
            "pointerId": self.pointer_id.get(),
            "lockMessageId": self.lock_message_id.get(),
            "pointerDigest": self.pointer_digest.as_str(),
            "snapshotDigest": self.snapshot_digest.as_str(),
            "state": self.manifest.to_value()["state"].clone(),
            "task": self.manifest.task_value(),
            "anchorDigests": self.anchors.iter().map(|(id, d)| json!({"id": id.get(), "sha256": d.as_str()})).collect::<Vec<_>>(),
            "bootNonce": boot_nonce,
            "verifiedAtMs": verified_at_ms,
        })
    }
}

/// The red report: why a run failed. It can never pass for green.
pub fn red_report(pointer_id: MemoryId, failure: &Error, boot_nonce: &str, verified_at_ms: u64) -> Value {
    let control = if failure.code() == render::KNOWN_BAD_CONTROL_FAILED { "failed" } else { "passed" };
    json!({
        "schema": REPORT_SCHEMA,
        "verdict": "red",
        "knownBadControl": control,
        "graphEdgesUsed": false,
        "pointerId": pointer_id.get(),
        "failure": {"code": failure.code(), "message": failure.message()},
        "bootNonce": boot_nonce,
        "verifiedAtMs": verified_at_ms,
    })
}

/// A fresh 32-hex boot nonce from the OS random source.
pub fn boot_nonce() -> String {
    crate::random::hex(16)
}

/// Write a report exclusively, owner-only; returns its compact JSON line.
pub fn write_report(path: &AbsPath, report: &Value) -> Result<String> {
    let line = canonical_json(report);
    private::create_new(path.as_path(), line.as_bytes())
        .map_err(|e| Error::new(codes::REPORT_FILE, format!("report file: {}", e.message())).with_detail(json!({"reason": e.code()})))?;
    Ok(line)
}
