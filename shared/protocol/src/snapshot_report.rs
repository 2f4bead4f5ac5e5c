//! The cold-boot snapshot report (docs/protocol.md §5): one type that
//! `pointer-snapshot` writes (kijito-client) and `qa-gate record` reads
//! (kijito-gate). Its keys and their order are this struct's fields, spelled
//! here only; a green report has the green fields and no `failure`, a red
//! one `failure` and no green fields.

use crate::ids::{Digest, MemoryId};
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub const SCHEMA: &str = "kijito.codex.pointer-snapshot/v1";
pub const GREEN: &str = "green";
pub const RED: &str = "red";
/// `knownBadControl` of a run whose control passed.
pub const PASSED: &str = "passed";
pub const FAILED: &str = "failed";

/// One report, green or red (the optional fields are absent when `None`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Report {
    pub schema: String,
    pub verdict: String,
    pub known_bad_control: String,
    pub graph_edges_used: bool,
    pub pointer_id: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lock_message_id: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pointer_digest: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snapshot_digest: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub anchor_digests: Option<Vec<AnchorDigest>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<Failure>,
    pub boot_nonce: String,
    pub verified_at_ms: u64,
    pub verifier_sha256: String,
}

/// A red report of any other shape: read before the keys are checked, so
/// that a red report is refused as red (the same keys as [`Report`]'s).
#[derive(Deserialize)]
struct RedPeek {
    #[serde(default)]
    verdict: Option<Value>,
    #[serde(default)]
    failure: Option<FailurePeek>,
}

#[derive(Deserialize)]
struct FailurePeek {
    #[serde(default)]
    code: Option<Value>,
}

impl Report {
    /// When `value` says it is red: its failure code, if it names one.
    pub fn red_failure(value: &Value) -> Option<Option<String>> {
        let peek = RedPeek::deserialize(value).ok()?;
        (peek.verdict.as_ref().and_then(Value::as_str) == Some(RED))
            .then(|| peek.failure.and_then(|f| f.code).and_then(|c| c.as_str().map(str::to_owned)))
    }
}

/// One current anchor of a green report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AnchorDigest {
    pub id: u64,
    pub sha256: String,
}

/// Why a red report is red.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Failure {
    pub code: String,
    pub message: String,
}

/// What a green report says about the snapshot it verified.
pub struct Green<'a> {
    pub pointer_id: MemoryId,
    pub lock_message_id: crate::ids::MessageId,
    pub pointer_digest: &'a Digest,
    pub snapshot_digest: &'a Digest,
    pub state: &'a str,
    pub task: Value,
    pub anchors: &'a [(MemoryId, Digest)],
}

impl Report {
    /// The green report of a verified snapshot.
    pub fn green(g: Green<'_>, boot_nonce: &str, verified_at_ms: u64, verifier: &Digest) -> Report {
        Report {
            schema: SCHEMA.to_owned(),
            verdict: GREEN.to_owned(),
            known_bad_control: PASSED.to_owned(),
            graph_edges_used: false,
            pointer_id: g.pointer_id.get(),
            lock_message_id: Some(g.lock_message_id.get()),
            pointer_digest: Some(g.pointer_digest.as_str().to_owned()),
            snapshot_digest: Some(g.snapshot_digest.as_str().to_owned()),
            state: Some(g.state.to_owned()),
            task: Some(g.task),
            anchor_digests: Some(g.anchors.iter().map(|(id, d)| AnchorDigest { id: id.get(), sha256: d.as_str().to_owned() }).collect()),
            failure: None,
            boot_nonce: boot_nonce.to_owned(),
            verified_at_ms,
            verifier_sha256: verifier.as_str().to_owned(),
        }
    }

    /// The red report of a failed run; `control_passed`: the known-bad
    /// control ran and passed before the failure.
    pub fn red(
        pointer_id: MemoryId,
        control_passed: bool,
        failure: Failure,
        boot_nonce: &str,
        verified_at_ms: u64,
        verifier: &Digest,
    ) -> Report {
        Report {
            schema: SCHEMA.to_owned(),
            verdict: RED.to_owned(),
            known_bad_control: if control_passed { PASSED } else { FAILED }.to_owned(),
            graph_edges_used: false,
            pointer_id: pointer_id.get(),
            lock_message_id: None,
            pointer_digest: None,
            snapshot_digest: None,
            state: None,
            task: None,
            anchor_digests: None,
            failure: Some(failure),
            boot_nonce: boot_nonce.to_owned(),
            verified_at_ms,
            verifier_sha256: verifier.as_str().to_owned(),
        }
    }

    /// The report as JSON, keys in the order of section 5.
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }

    /// The keys of a green report, in order.
    pub fn green_keys() -> Vec<String> {
        let keys = || -> Option<Vec<String>> {
            let d = Digest::of(b"");
            let green = Green {
                pointer_id: MemoryId::new(1).ok()?,
                lock_message_id: crate::ids::MessageId::new(1).ok()?,
                pointer_digest: &d,
                snapshot_digest: &d,
                state: "",
                task: Value::Null,
                anchors: &[],
            };
            Report::green(green, "", 0, &d).to_value().as_object().map(|o| o.keys().cloned().collect())
        };
        keys().unwrap_or_default()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn green_and_red_have_their_keys_in_order_and_read_back() {
        let d = Digest::of(b"x");
        let g = Green {
            pointer_id: MemoryId::new(7).unwrap(),
            lock_message_id: crate::ids::MessageId::new(8).unwrap(),
            pointer_digest: &d,
            snapshot_digest: &d,
            state: "active",
            task: serde_json::json!({"title": "t"}),
            anchors: &[(MemoryId::new(9).unwrap(), d.clone())],
        };
        let green = Report::green(g, "n", 5, &d);
        let v = green.to_value();
        let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(keys, Report::green_keys());
        assert_eq!(keys.len(), 14);
        assert_eq!(v["anchorDigests"], serde_json::json!([{"id": 9, "sha256": d.as_str()}]));
        assert_eq!(serde_json::from_value::<Report>(v).unwrap(), green);
        let red = Report::red(MemoryId::new(7).unwrap(), false, Failure { code: "c".into(), message: "m".into() }, "n", 5, &d);
        let v = red.to_value();
        let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            [
                "schema",
                "verdict",
                "knownBadControl",
                "graphEdgesUsed",
                "pointerId",
                "failure",
                "bootNonce",
                "verifiedAtMs",
                "verifierSha256"
            ]
        );
        assert_eq!(v["knownBadControl"], FAILED);
        assert_eq!(serde_json::from_value::<Report>(v).unwrap(), red);
    }
}
