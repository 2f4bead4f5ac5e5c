//! The context-free verifier (docs/protocol.md §5): known-bad control
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

use crate::http::{Api, Transport};
use crate::pointer::{self, MemoryRead};
use kijito_files::private;
use kijito_protocol::error::{Error, Result};
use kijito_protocol::ids::{AbsPath, Digest, MemoryId, MessageId};
use kijito_protocol::manifest::{self, canonical_json, Manifest};
use kijito_protocol::render;
use kijito_protocol::snapshot_report as report;
use serde_json::{json, Value};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

pub use kijito_protocol::snapshot_report::SCHEMA as REPORT_SCHEMA;
/// Anchor fetches in flight at once.
pub const MAX_IN_FLIGHT: usize = 8;

/// Stable codes of this module: the verifier's (the `snapshot` area, in
/// kijito-protocol: kijito-wake, below the client, reads them too) and its
/// anchor fetches' (the `fetch` area, `codes::fetch`).
pub mod codes {
    pub use kijito_protocol::codes::snapshot::*;

    /// The verifier's anchor fetches (the `fetch` area).
    pub mod fetch {
        kijito_protocol::codes! {
            ANCHOR_FETCH_FAILED AnchorFetchFailed = "anchor_fetch_failed",
        }
    }
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
    private::check_new_file_path(path.as_path()).map_err(|e| {
        let hint = if e.code_as() == Some(private::codes::EXISTS) { "; each boot needs a fresh report path" } else { "" };
        Error::new(codes::REPORT_FILE, format!("report file: {}{hint}", e.message())).with_detail(json!({"reason": e.code()}))
    })
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
            return Err(Error::new(
                codes::POINTER_DIGEST_MISMATCH,
                format!("pointer {} is at {}, expected {expected}", request.pointer_id, pointer.digest),
            )
            .with_detail(json!({"observedDigest": pointer.digest.as_str(), "expectedDigest": expected.as_str()})));
        }
    }
    let manifest = manifest::parse_manifest(pointer.content.as_bytes(), request.pointer_id, request.lock_message_id)?;
    let anchors = manifest.current_anchors();
    let reads = fetch_all(api, &anchors);
    for ((id, expected), read) in anchors.iter().zip(reads) {
        let read = read.map_err(|e| e.context(&format!("anchor {id}")))?;
        if !read.is_current() {
            return Err(Error::new(codes::ANCHOR_RETIRED, format!("current anchor {id} is retired (eroded)"))
                .with_detail(json!({"anchorId": id.get()})));
        }
        if &read.digest != expected {
            return Err(Error::new(
                codes::ANCHOR_DIGEST_MISMATCH,
                format!("anchor {id} content is at {}, the manifest says {expected}", read.digest),
            )
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
    Ok(Snapshot {
        pointer_id: request.pointer_id,
        lock_message_id: request.lock_message_id,
        pointer_digest: pointer.digest,
        snapshot_digest,
        manifest,
        anchors,
    })
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
                .unwrap_or_else(|| Err(Error::new(codes::fetch::ANCHOR_FETCH_FAILED, "an anchor fetch did not complete")))
        })
        .collect()
}

impl Snapshot {
    /// The green report (section 5 key order).
    pub fn green_report(&self, boot_nonce: &str, verified_at_ms: u64, verifier: &Digest) -> Value {
        let green = report::Green {
            pointer_id: self.pointer_id,
            lock_message_id: self.lock_message_id,
            pointer_digest: &self.pointer_digest,
            snapshot_digest: &self.snapshot_digest,
            state: self.manifest.state.as_str(),
            task: self.manifest.task_value(),
            anchors: &self.anchors,
        };
        report::Report::green(green, boot_nonce, verified_at_ms, verifier).to_value()
    }
}

/// SHA-256 of the running executable (`/proc/self/exe`): the report's
/// `verifierSha256`, which `qa-gate record` compares with the installed
/// `pointer-snapshot`.
pub fn running_verifier() -> Result<Digest> {
    let file = std::fs::File::open("/proc/self/exe")
        .or_else(|_| std::env::current_exe().and_then(std::fs::File::open))
        .map_err(|e| Error::new(codes::VERIFIER_UNREADABLE, format!("cannot open the running executable: {e}")))?;
    Digest::of_reader(file, 512 * 1024 * 1024)
        .map_err(|e| Error::new(codes::VERIFIER_UNREADABLE, format!("cannot read the running executable: {e}")))?
        .ok_or_else(|| Error::new(codes::VERIFIER_UNREADABLE, "the running executable is too large to hash"))
}

/// The red report: why a run failed. It can never pass for green.
pub fn red_report(pointer_id: MemoryId, failure: &Error, boot_nonce: &str, verified_at_ms: u64, verifier: &Digest) -> Value {
    let control_passed = failure.code_as() != Some(render::KNOWN_BAD_CONTROL_FAILED);
    let why = report::Failure { code: failure.code().to_owned(), message: failure.message().to_owned() };
    report::Report::red(pointer_id, control_passed, why, boot_nonce, verified_at_ms, verifier).to_value()
}

/// A fresh 32-hex boot nonce from the OS random source.
pub fn boot_nonce() -> String {
    kijito_files::random::hex(16)
}

/// Write a report exclusively, owner-only; returns its compact JSON line.
pub fn write_report(path: &AbsPath, report: &Value) -> Result<String> {
    let line = canonical_json(report);
    private::create_new(path.as_path(), line.as_bytes())
        .map_err(|e| Error::new(codes::REPORT_FILE, format!("report file: {}", e.message())).with_detail(json!({"reason": e.code()})))?;
    Ok(line)
}

/// Verify a recorded expectation against the configured server (wake-check
/// `--live`): a fresh client from the config, the known-bad control, then
/// [`verify`] with both expected digests.
pub fn verify_recorded(pointer_id: MemoryId, lock_message_id: MessageId, pointer_digest: &Digest, snapshot_digest: &Digest) -> Result<()> {
    let request = Request {
        pointer_id,
        lock_message_id,
        expected_pointer_digest: Some(pointer_digest.clone()),
        expected_snapshot_digest: Some(snapshot_digest.clone()),
    };
    crate::http::connect_configured(None).and_then(|api| verify(&api, &request)).map(|_| ())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::http::{Request as HttpRequest, Response};
    use kijito_protocol::ids::Persona;
    use std::collections::HashMap;
    use std::sync::Condvar;
    use std::time::{Duration, Instant};

    /// An in-memory service: renderings by id; counts requests and the peak
    /// number in flight. With `hold`, each request waits (bounded) until
    /// `hold` requests have been in flight at once, which a sequential
    /// fetcher never reaches: the peak then proves real concurrency without
    /// any timing assertion.
    struct Service {
        renderings: HashMap<u64, String>,
        hold: usize,
        state: Mutex<(usize, usize, Vec<u64>)>, // (in flight, peak, requested ids)
        changed: Condvar,
    }

    impl Service {
        fn new(renderings: HashMap<u64, String>, hold: usize) -> Self {
            Service { renderings, hold, state: Mutex::new((0, 0, Vec::new())), changed: Condvar::new() }
        }
        fn peak(&self) -> usize {
            self.state.lock().unwrap().1
        }
        fn requested(&self) -> Vec<u64> {
            self.state.lock().unwrap().2.clone()
        }
    }

    impl Transport for Service {
        fn send(&self, request: &HttpRequest) -> Result<Response> {
            let id: u64 = request.path.strip_prefix("/api/memory/").unwrap().parse().unwrap();
            {
                let mut s = self.state.lock().unwrap();
                s.0 += 1;
                s.1 = s.1.max(s.0);
                s.2.push(id);
                self.changed.notify_all();
                let deadline = Instant::now() + Duration::from_secs(5);
                while id != POINTER && s.1 < self.hold && Instant::now() < deadline {
                    s = self.changed.wait_timeout(s, Duration::from_millis(50)).unwrap().0;
                }
                s.0 -= 1;
            }
            match self.renderings.get(&id) {
                Some(text) => Ok(Response { status: 200, etag: None, body: json!({"result": text}).to_string().into_bytes() }),
                None => Err(crate::http::status_error(403)),
            }
        }
    }

    fn render(id: u64, persona: &str, marker: &str, content: &str) -> String {
        format!(
            "Memory [{id}]\nType: note\nScope: project\nProject: Codex\nPersona: {persona}\nStatus: active\nSource: mcp\nCreated: 2026-07-25 00:00:00\nImportance: 0.9\nbelief: confidence=1 evidence=1 basis=observed{marker}\nedges:\n  -> relates_to [{}] hidden\n  has_more=true\n⟦UNTRUSTED id={id} src=persona:{persona} trust=memory-content n=abc123⟧\n{content}\n⟦/UNTRUSTED n=abc123⟧",
            id + 1
        )
    }

    const POINTER: u64 = 1000;
    const LOCK: u64 = 77;

    /// A pointer listing `n` current anchors (ids 1..=n) and, below the cap
    /// of 64, one retired anchor (id 500, present in the service so a fetch
    /// would be seen).
    fn world(n: u64, hold: usize) -> (Api<Service>, Request, Vec<(MemoryId, Digest)>) {
        let mut renderings = HashMap::new();
        let mut anchors = Vec::new();
        let mut current = Vec::new();
        for id in 1..=n {
            let content = format!("anchor {id}");
            let persona = if id % 2 == 0 { "claude" } else { "codex" };
            renderings.insert(id, render(id, persona, "", &content));
            let d = Digest::of(content.as_bytes());
            anchors.push(json!({"id": id, "status": "current", "sha256": d.as_str(), "purpose": "p"}));
            current.push((MemoryId::new(id).unwrap(), d));
        }
        renderings.insert(500, render(500, "codex", " · eroded", "old"));
        if n < 64 {
            anchors.push(json!({"id": 500, "status": "retired", "supersededBy": 1, "purpose": "old"}));
        }
        let manifest = json!({
            "schema": "kijito.codex.current-state/v1", "pointerId": POINTER,
            "lock": {"protocol": "kijito-message-claim/v1", "messageId": LOCK}, "state": "active",
            "task": {"title": "t", "nextAction": "n", "done": [], "remaining": ["r"], "doneWhen": ["w"],
                     "gate": {"requiredConsecutiveGreens": 2, "consecutiveGreens": 0, "artifactDigest": null}},
            "anchors": anchors
        });
        renderings.insert(POINTER, render(POINTER, "codex", "", &canonical_json(&manifest)));
        let api = Api::new(Service::new(renderings, hold), Persona::default(), "Codex".into());
        let request = Request {
            pointer_id: MemoryId::new(POINTER).unwrap(),
            lock_message_id: MessageId::new(LOCK).unwrap(),
            expected_pointer_digest: None,
            expected_snapshot_digest: None,
        };
        (api, request, current)
    }

    #[test]
    fn sixty_four_anchors_reach_exactly_eight_in_flight_in_manifest_order() {
        let (api, request, current) = world(64, MAX_IN_FLIGHT);
        let snap = verify(&api, &request).unwrap();
        assert_eq!(api.transport.peak(), MAX_IN_FLIGHT, "exactly 8 requests were in flight at once, never more");
        assert_eq!(snap.anchors, current, "manifest order");
        let requested = api.transport.requested();
        assert_eq!(requested.len(), 65, "the pointer and each current anchor once");
        assert!(!requested.contains(&500), "a retired anchor is never fetched");
        assert!(!requested.contains(&(POINTER + 1)), "nothing reached through edges");
    }

    #[test]
    fn a_few_anchors_use_no_more_workers_than_anchors() {
        let (api, request, _) = world(3, 3);
        verify(&api, &request).unwrap();
        assert_eq!(api.transport.peak(), 3);
        let mut requested = api.transport.requested();
        requested.sort_unstable();
        assert_eq!(requested, [1, 2, 3, POINTER], "the retired anchor 500 is never fetched");
    }

    #[test]
    fn the_first_failing_anchor_in_manifest_order_decides() {
        let (mut api, request, _) = world(20, 0);
        api.transport.renderings.insert(7, render(7, "codex", " · eroded", "anchor 7"));
        api.transport.renderings.insert(12, render(12, "claude", "", "anchor 12 changed"));
        api.transport.renderings.remove(&15);
        for _ in 0..5 {
            let err = verify(&api, &request).unwrap_err();
            assert_eq!(err.code(), codes::ANCHOR_RETIRED.as_str());
            assert_eq!(err.detail().unwrap()["anchorId"], 7);
        }
        api.transport.renderings.insert(7, render(7, "codex", "", "anchor 7"));
        assert_eq!(verify(&api, &request).unwrap_err().code(), codes::ANCHOR_DIGEST_MISMATCH.as_str());
        api.transport.renderings.insert(12, render(12, "claude", "", "anchor 12"));
        let err = verify(&api, &request).unwrap_err();
        assert_eq!(err.code(), "kijito_http_403");
        assert!(err.message().starts_with("anchor 15: "), "{}", err.message());
    }

    #[test]
    fn pointer_rules_come_before_any_anchor_fetch() {
        let (mut api, mut request, _) = world(4, 0);
        request.expected_pointer_digest = Some(Digest::of(b"other"));
        assert_eq!(verify(&api, &request).unwrap_err().code(), codes::POINTER_DIGEST_MISMATCH.as_str());
        assert_eq!(api.transport.requested(), vec![POINTER]);
        request.expected_pointer_digest = None;
        let text = api.transport.renderings[&POINTER].replace("observed\n", "observed · eroded\n");
        api.transport.renderings.insert(POINTER, text);
        assert_eq!(verify(&api, &request).unwrap_err().code(), codes::POINTER_RETIRED.as_str());
        // The pointer must carry the configured persona's fence.
        let text =
            api.transport.renderings[&POINTER].replace("persona:codex", "persona:claude").replace("Persona: codex", "Persona: claude");
        api.transport.renderings.insert(POINTER, text);
        assert_eq!(verify(&api, &request).unwrap_err().code(), render::FENCE_PERSONA_MISMATCH.as_str());
    }

    #[test]
    fn snapshot_digest_is_section_5_and_pinnable() {
        let (api, mut request, current) = world(3, 0);
        let snap = verify(&api, &request).unwrap();
        let anchors: Vec<Value> = current.iter().map(|(id, d)| json!({"id": id.get(), "sha256": d.as_str()})).collect();
        let text = format!(
            "{{\"pointerId\":{POINTER},\"pointerDigest\":\"{}\",\"lockMessageId\":{LOCK},\"anchors\":{}}}",
            snap.pointer_digest,
            serde_json::to_string(&anchors).unwrap()
        );
        assert_eq!(snap.snapshot_digest, Digest::of(text.as_bytes()));
        request.expected_snapshot_digest = Some(snap.snapshot_digest.clone());
        assert!(verify(&api, &request).is_ok());
        request.expected_snapshot_digest = Some(Digest::of(b"x"));
        assert_eq!(verify(&api, &request).unwrap_err().code(), codes::SNAPSHOT_DIGEST_MISMATCH.as_str());
    }

    #[test]
    fn reports_have_exact_keys_and_red_never_says_green() {
        let (api, request, _) = world(2, 0);
        let snap = verify(&api, &request).unwrap();
        let green = snap.green_report(&boot_nonce(), 5, &Digest::of(b"v"));
        let keys: Vec<&str> = green.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            [
                "schema",
                "verdict",
                "knownBadControl",
                "graphEdgesUsed",
                "pointerId",
                "lockMessageId",
                "pointerDigest",
                "snapshotDigest",
                "state",
                "task",
                "anchorDigests",
                "bootNonce",
                "verifiedAtMs",
                "verifierSha256"
            ]
        );
        let control = Error::new(render::KNOWN_BAD_CONTROL_FAILED, "control classified as current");
        let red = red_report(request.pointer_id, &control, "0".repeat(32).as_str(), 5, &Digest::of(b"v"));
        let keys: Vec<&str> = red.as_object().unwrap().keys().map(String::as_str).collect();
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
        assert_eq!(red["verdict"], "red");
        assert_eq!(red["knownBadControl"], "failed");
        assert_eq!(red["failure"], json!({"code": "known_bad_control_failed", "message": "control classified as current"}));
        let other = red_report(request.pointer_id, &Error::new(codes::ANCHOR_RETIRED, "m"), "0".repeat(32).as_str(), 5, &Digest::of(b"v"));
        assert_eq!(other["knownBadControl"], "passed");
    }

    #[test]
    fn boot_nonces_are_fresh_32_hex() {
        let a = boot_nonce();
        assert_eq!(a.len(), 32);
        assert!(a.bytes().all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()));
        assert_ne!(a, boot_nonce());
    }

    #[test]
    fn report_path_rules() {
        use std::os::unix::fs::PermissionsExt;
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("reports");
        std::fs::create_dir(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
        let path = |p: &std::path::Path| AbsPath::from_path(p).unwrap();
        let fresh = path(&dir.join("r.json"));
        check_report_path(&fresh).unwrap();
        let line = write_report(&fresh, &json!({"a": 1})).unwrap();
        assert_eq!(std::fs::read_to_string(fresh.as_path()).unwrap(), line);
        assert_eq!(std::fs::metadata(fresh.as_path()).unwrap().permissions().mode() & 0o777, 0o600);
        // Existing: refused by the check and by the exclusive write.
        assert_eq!(check_report_path(&fresh).unwrap_err().code(), codes::REPORT_FILE.as_str());
        assert_eq!(write_report(&fresh, &json!({})).unwrap_err().code(), codes::REPORT_FILE.as_str());
        assert_eq!(std::fs::read_to_string(fresh.as_path()).unwrap(), line);
        let link = tmp.path().join("link");
        std::os::unix::fs::symlink(&dir, &link).unwrap();
        assert_eq!(check_report_path(&path(&link.join("r2.json"))).unwrap_err().code(), codes::REPORT_FILE.as_str());
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o720)).unwrap();
        assert_eq!(check_report_path(&path(&dir.join("r3.json"))).unwrap_err().code(), codes::REPORT_FILE.as_str());
        assert_eq!(check_report_path(&path(&tmp.path().join("missing/r.json"))).unwrap_err().code(), codes::REPORT_FILE.as_str());
    }
}
