//! Validation of one cold-boot snapshot report (docs/protocol.md §5, §7).

use crate::{has_keys, is_hex32, REPORT_MAX_AGE_MS, REPORT_MAX_BYTES};
use kijito_files::private::{self, FileRules};
use kijito_protocol::error::{Error, Result};
use kijito_protocol::ids::{AbsPath, Digest, MemoryId, MessageId};
use kijito_protocol::manifest::{canonical_json, snapshot_digest};
use kijito_protocol::snapshot_report::{self, Report};
use serde_json::Value;
use std::sync::OnceLock;

pub use kijito_protocol::snapshot_report::SCHEMA;

/// Stable codes of this module (registered in the workspace by `tests/it/architecture.rs`).
pub mod codes {
    kijito_protocol::codes! {
        NOT_FOUND NotFound = "report_not_found",
        SYMLINK Symlink = "report_symlink",
        NOT_OWNED NotOwned = "report_not_owned",
        PERMISSIONS Permissions = "report_permissions",
        NOT_REGULAR NotRegular = "report_not_regular",
        TOO_LARGE TooLarge = "report_too_large",
        CHANGED Changed = "report_changed_during_read",
        UNREADABLE Unreadable = "report_unreadable",
        NOT_JSON NotJson = "report_not_json",
        RED Red = "report_red",
        KEYS Keys = "report_keys_invalid",
        SCHEMA Schema = "report_schema_invalid",
        NOT_GREEN NotGreen = "report_not_green",
        KNOWN_BAD KnownBad = "report_known_bad_control_not_passed",
        GRAPH_EDGES GraphEdges = "report_graph_edges_used",
        FIELD Field = "report_field_invalid",
        POINTER_ID PointerId = "report_pointer_id_mismatch",
        POINTER_DIGEST PointerDigest = "report_pointer_digest_mismatch",
        SNAPSHOT_MISMATCH SnapshotMismatch = "report_snapshot_digest_mismatch",
        TOO_OLD TooOld = "report_too_old",
        FUTURE Future = "report_from_future",
        NONCE_REUSED NonceReused = "report_boot_nonce_reused",
        SNAPSHOT_DIFFERS SnapshotDiffers = "report_snapshot_digest_differs",
        LOCK_DIFFERS LockDiffers = "report_lock_differs",
        COUNT Count = "report_count_invalid",
        /// The report was not written by the installed `pointer-snapshot`.
        VERIFIER Verifier = "report_verifier_mismatch",
    }
}

/// The published JSON Schema of a green report.
pub const GREEN_SCHEMA_JSON: &str = include_str!("../../../fixtures/schemas/pointer-snapshot-report.schema.json");

/// [`GREEN_SCHEMA_JSON`], compiled once (`Err`: it does not compile, which
/// fails every report closed).
fn green_schema() -> &'static std::result::Result<jsonschema::Validator, String> {
    static SCHEMA: OnceLock<std::result::Result<jsonschema::Validator, String>> = OnceLock::new();
    SCHEMA.get_or_init(|| {
        let schema: Value = serde_json::from_str(GREEN_SCHEMA_JSON).map_err(|e| e.to_string())?;
        jsonschema::validator_for(&schema).map_err(|e| e.to_string())
    })
}

/// Validate a report value against [`GREEN_SCHEMA_JSON`].
fn check_schema(value: &Value) -> Result<()> {
    let validator = green_schema().as_ref().map_err(|e| Error::new(codes::FIELD, format!("the report schema does not compile: {e}")))?;
    validator.validate(value).map_err(|e| {
        Error::new(
            codes::FIELD,
            format!(
                "{}: {} (fixtures/schemas/pointer-snapshot-report.schema.json)",
                e.instance_path,
                kijito_protocol::ids::clip(&e.to_string())
            ),
        )
    })
}

/// What record keeps of a validated green report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GreenReport {
    pub pointer_id: MemoryId,
    pub lock_message_id: MessageId,
    pub pointer_digest: Digest,
    pub snapshot_digest: Digest,
    pub boot_nonce: String,
    pub verified_at_ms: i64,
    /// SHA-256 of the executable that wrote the report.
    pub verifier_digest: Digest,
    /// SHA-256 of the report's compact JSON.
    pub report_digest: Digest,
}

fn read_report(path: &AbsPath) -> Result<Vec<u8>> {
    let rules = FileRules { owner_only: true, min_bytes: 2, max_bytes: REPORT_MAX_BYTES };
    private::read_checked(path.as_path(), rules)
        .map(|(b, _)| b)
        .map_err(|e| Error::new(report_code(&e), format!("report {path}: {}", e.message())))
}

/// The report code for a private-file read failure.
fn report_code(e: &Error) -> codes::Code {
    match e.code_as::<private::codes::Code>() {
        Some(private::codes::NOT_FOUND) => codes::NOT_FOUND,
        Some(private::codes::SYMLINK) => codes::SYMLINK,
        Some(private::codes::NOT_OWNED) => codes::NOT_OWNED,
        Some(private::codes::PERMISSIONS) => codes::PERMISSIONS,
        Some(private::codes::NOT_REGULAR) => codes::NOT_REGULAR,
        Some(private::codes::TOO_LARGE) => codes::TOO_LARGE,
        Some(private::codes::CHANGED) => codes::CHANGED,
        _ => codes::UNREADABLE,
    }
}

/// Read and validate one report file against the pointer id and digest the
/// agent named, at time `now_ms`.
pub fn validate_report(path: &AbsPath, pointer_id: MemoryId, pointer_digest: &Digest, now_ms: i64) -> Result<GreenReport> {
    let bytes = read_report(path)?;
    validate_report_bytes(&bytes, pointer_id, pointer_digest, now_ms).map_err(|e| e.context(&format!("report {path}")))
}

/// Validate report bytes (see [`validate_report`]).
pub fn validate_report_bytes(bytes: &[u8], pointer_id: MemoryId, pointer_digest: &Digest, now_ms: i64) -> Result<GreenReport> {
    let value: Value = serde_json::from_slice(bytes).map_err(|e| Error::new(codes::NOT_JSON, format!("not JSON: {e}")))?;
    let obj = value.as_object().ok_or_else(|| Error::new(codes::NOT_JSON, "not a JSON object"))?;
    if let Some(code) = Report::red_failure(&value) {
        let code = code.as_deref().map(kijito_protocol::ids::clip).unwrap_or_else(|| "unknown".into());
        return Err(Error::new(codes::RED, format!("the report is red (failure {code}); only green reports record a pass")));
    }
    let green_keys = Report::green_keys();
    let keys: Vec<&str> = green_keys.iter().map(String::as_str).collect();
    if !has_keys(obj, &keys) {
        let got: Vec<&str> = obj.keys().map(String::as_str).take(20).collect();
        return Err(Error::new(codes::KEYS, format!("keys must be exactly {keys:?} in that order, got {got:?}")));
    }
    let r = serde_json::from_value::<Report>(value.clone())
        .map_err(|e| Error::new(codes::FIELD, format!("a field has the wrong type: {}", kijito_protocol::ids::clip(&e.to_string()))))?;
    if r.schema != SCHEMA {
        return Err(Error::new(codes::SCHEMA, format!("schema must be {SCHEMA}")));
    }
    if r.verdict != snapshot_report::GREEN {
        return Err(Error::new(codes::NOT_GREEN, "verdict must be \"green\""));
    }
    if r.known_bad_control != snapshot_report::PASSED {
        return Err(Error::new(codes::KNOWN_BAD, "knownBadControl must be \"passed\""));
    }
    if r.graph_edges_used {
        return Err(Error::new(codes::GRAPH_EDGES, "graphEdgesUsed must be false"));
    }
    let field = |name: &str, why: &str| Error::new(codes::FIELD, format!("{name}: {why}"));
    let r_pointer = MemoryId::new(r.pointer_id).map_err(|e| field("pointerId", e.message()))?;
    let r_lock = MessageId::new(r.lock_message_id.unwrap_or(0)).map_err(|e| field("lockMessageId", e.message()))?;
    let digest_of =
        |name: &str, d: Option<&String>| d.and_then(|s| Digest::parse(s).ok()).ok_or_else(|| field(name, "must be 64 lowercase hex"));
    let r_pointer_digest = digest_of("pointerDigest", r.pointer_digest.as_ref())?;
    let r_snapshot = digest_of("snapshotDigest", r.snapshot_digest.as_ref())?;
    let r_verifier = digest_of("verifierSha256", Some(&r.verifier_sha256))?;
    if !matches!(r.state.as_deref(), Some("active" | "complete")) {
        return Err(field("state", "must be active or complete"));
    }
    if !r.task.as_ref().is_some_and(Value::is_object) {
        return Err(field("task", "must be an object"));
    }
    let anchors = r.anchor_digests.as_deref().unwrap_or_default();
    if anchors.len() > 64 {
        return Err(field("anchorDigests", "at most 64 anchors"));
    }
    let mut pairs = Vec::with_capacity(anchors.len());
    for a in anchors {
        let id = MemoryId::new(a.id).map_err(|_| field("anchorDigests", "bad id"))?;
        let d = Digest::parse(&a.sha256).map_err(|_| field("anchorDigests", "bad sha256"))?;
        pairs.push((id, d));
    }
    let nonce = Some(r.boot_nonce.as_str()).filter(|s| is_hex32(s)).ok_or_else(|| field("bootNonce", "must be 32 lowercase hex"))?;
    let verified = Some(r.verified_at_ms)
        .filter(|n| *n <= kijito_protocol::ids::MAX_SAFE_INTEGER)
        .ok_or_else(|| field("verifiedAtMs", "must be a non-negative safe integer"))? as i64;
    if r_pointer != pointer_id {
        return Err(Error::new(codes::POINTER_ID, format!("report is for pointer {r_pointer}, not {pointer_id}")));
    }
    if &r_pointer_digest != pointer_digest {
        return Err(Error::new(codes::POINTER_DIGEST, format!("report pointer digest {r_pointer_digest} differs from {pointer_digest}")));
    }
    let recomputed = snapshot_digest(r_pointer, &r_pointer_digest, r_lock, &pairs);
    if recomputed != r_snapshot {
        return Err(Error::new(
            codes::SNAPSHOT_MISMATCH,
            format!("snapshotDigest {r_snapshot} does not match the recomputed {recomputed}"),
        ));
    }
    if verified > now_ms {
        return Err(Error::new(codes::FUTURE, format!("verifiedAtMs {verified} is in the future (now {now_ms})")));
    }
    if now_ms - verified > REPORT_MAX_AGE_MS {
        return Err(Error::new(codes::TOO_OLD, format!("the report is {} s old; at most 1800 s", (now_ms - verified) / 1000)));
    }
    // Last, the whole report against its published schema (the task's
    // fields, list bounds, value ranges the checks above do not spell out).
    check_schema(&value)?;
    Ok(GreenReport {
        pointer_id: r_pointer,
        lock_message_id: r_lock,
        pointer_digest: r_pointer_digest,
        snapshot_digest: r_snapshot,
        boot_nonce: nonce.to_owned(),
        verified_at_ms: verified,
        verifier_digest: r_verifier,
        report_digest: Digest::of(canonical_json(&value).as_bytes()),
    })
}

/// Validate both cold-boot reports and their agreement.
pub fn validate_pair(paths: &[AbsPath], pointer_id: MemoryId, pointer_digest: &Digest, now_ms: i64) -> Result<[GreenReport; 2]> {
    let [a, b] = paths else {
        return Err(Error::new(codes::COUNT, "exactly two --cold-boot-report files are required"));
    };
    let ra = validate_report(a, pointer_id, pointer_digest, now_ms)?;
    let rb = validate_report(b, pointer_id, pointer_digest, now_ms)?;
    check_agreement(&ra, &rb)?;
    Ok([ra, rb])
}

/// Two reports must come from distinct runs over the same snapshot.
pub fn check_agreement(a: &GreenReport, b: &GreenReport) -> Result<()> {
    if a.boot_nonce == b.boot_nonce {
        return Err(Error::new(codes::NONCE_REUSED, "both reports carry the same boot nonce; two independent cold boots are required"));
    }
    if a.lock_message_id != b.lock_message_id {
        return Err(Error::new(codes::LOCK_DIFFERS, "the reports name different lock message ids"));
    }
    if a.snapshot_digest != b.snapshot_digest {
        return Err(Error::new(codes::SNAPSHOT_DIFFERS, "the reports saw different snapshots"));
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    const NOW: i64 = 1_800_000_000_000;

    #[test]
    fn every_private_read_failure_has_its_report_code() {
        // Including a report that changed between the reader's two looks
        // (kijito-files' read_checked detects it; this maps its code).
        for (private, report) in [
            (private::codes::NOT_FOUND, codes::NOT_FOUND),
            (private::codes::SYMLINK, codes::SYMLINK),
            (private::codes::NOT_OWNED, codes::NOT_OWNED),
            (private::codes::PERMISSIONS, codes::PERMISSIONS),
            (private::codes::NOT_REGULAR, codes::NOT_REGULAR),
            (private::codes::TOO_LARGE, codes::TOO_LARGE),
            (private::codes::CHANGED, codes::CHANGED),
            (private::codes::READ, codes::UNREADABLE),
        ] {
            assert_eq!(report_code(&Error::new(private, "m")), report, "{private}");
        }
        let all = [
            codes::NOT_FOUND,
            codes::SYMLINK,
            codes::NOT_OWNED,
            codes::PERMISSIONS,
            codes::NOT_REGULAR,
            codes::TOO_LARGE,
            codes::CHANGED,
            codes::UNREADABLE,
        ];
        assert_eq!(all.iter().collect::<std::collections::BTreeSet<_>>().len(), all.len(), "distinct codes");
    }

    fn green(task: Value) -> (Vec<u8>, MemoryId, Digest) {
        let pointer = MemoryId::new(21813).unwrap();
        let lock = MessageId::new(1234).unwrap();
        let digest = Digest::of(b"pointer");
        let snapshot = snapshot_digest(pointer, &digest, lock, &[]);
        let report = json!({
            "schema": SCHEMA, "verdict": "green", "knownBadControl": "passed", "graphEdgesUsed": false,
            "pointerId": pointer.get(), "lockMessageId": lock.get(), "pointerDigest": digest.as_str(),
            "snapshotDigest": snapshot.as_str(), "state": "active", "task": task, "anchorDigests": [],
            "bootNonce": "0123456789abcdef0123456789abcdef", "verifiedAtMs": NOW - 1000,
            "verifierSha256": Digest::of(b"verifier").as_str(),
        });
        (report.to_string().into_bytes(), pointer, digest)
    }

    fn task() -> Value {
        json!({"title": "Ship it", "nextAction": null, "done": [], "remaining": [], "doneWhen": ["tests pass"],
               "gate": {"requiredConsecutiveGreens": 2, "consecutiveGreens": 0, "artifactDigest": null}})
    }

    #[test]
    fn the_published_schema_compiles() {
        assert!(green_schema().is_ok());
    }

    #[test]
    fn a_schema_valid_report_is_accepted() {
        let (bytes, pointer, digest) = green(task());
        assert!(validate_report_bytes(&bytes, pointer, &digest, NOW).is_ok());
    }

    #[test]
    fn the_schema_rejects_what_the_hand_checks_do_not_spell_out() {
        let mut bad = task();
        bad["doneWhen"] = json!([]);
        for t in [json!({}), bad, json!({"title": ""})] {
            let (bytes, pointer, digest) = green(t.clone());
            let err = validate_report_bytes(&bytes, pointer, &digest, NOW).unwrap_err();
            assert_eq!(err.code(), codes::FIELD.as_str(), "{t}: {err}");
            assert!(err.message().contains("/task"), "{err}");
        }
    }
}
