//! Shared helpers for the pointer tests (snapshot, digest, publish, full
//! cycle): a real `kijito-local` plus a private client world (HOME,
//! `XDG_CONFIG_HOME` with a 0600 `kijito-qa/config.json` naming the server's
//! `apiUrl` and `tokenFile`, an owner-only reports directory), seeding of
//! current and retired anchors with `edges:` blocks, and a canonical pointer
//! manifest stored in a real pointer memory.
//!
//! Use it with both harness modules:
//!
//! ```ignore
//! mod support;
//! mod support_snapshot;
//! let world = support_snapshot::World::start();
//! let seeded = world.seed(3, 2);
//! let out = world.snapshot(&seeded, &[]);
//! ```
#![allow(dead_code, clippy::unwrap_used)]

use crate::support::{LocalServer, Options};
use kijito_protocol::ids::Digest;
use kijito_protocol::manifest::canonical_json;
use serde_json::{json, Value};
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

pub(crate) const POINTER_SNAPSHOT: &str = env!("CARGO_BIN_EXE_pointer-snapshot");
pub(crate) const POINTER_DIGEST: &str = env!("CARGO_BIN_EXE_pointer-digest");

/// A real server plus a private client world.
pub(crate) struct World {
    pub server: LocalServer,
    pub tmp: tempfile::TempDir,
    /// `$HOME` of spawned binaries.
    pub home: PathBuf,
    /// `$XDG_CONFIG_HOME` of spawned binaries.
    pub xdg: PathBuf,
    /// An owner-only (0700) directory for reports.
    pub reports: PathBuf,
}

/// What `World::seed` created.
#[derive(Debug, Clone)]
pub(crate) struct Seeded {
    pub pointer_id: u64,
    pub lock_id: u64,
    /// Current anchors `(id, content)` in manifest order.
    pub current: Vec<(u64, String)>,
    /// Retired anchors (eroded by a correction) `(id, superseded by)`.
    pub retired: Vec<(u64, u64)>,
    /// Every memory id the manifest lists or the edges reach that a
    /// verifier must never request (retired anchors, unlisted memories).
    pub never_fetch: Vec<u64>,
    /// The canonical manifest stored as the pointer content.
    pub manifest: String,
}

impl Seeded {
    pub(crate) fn pointer_digest(&self) -> String {
        Digest::of(self.manifest.as_bytes()).as_str().to_owned()
    }

    /// `snapshotDigest` computed independently (docs/protocol.md §5).
    pub(crate) fn expected_snapshot_digest(&self) -> String {
        let anchors: Vec<Value> =
            self.current.iter().map(|(id, c)| json!({"id": id, "sha256": Digest::of(c.as_bytes()).as_str()})).collect();
        let v = json!({"pointerId": self.pointer_id, "pointerDigest": self.pointer_digest(), "lockMessageId": self.lock_id, "anchors": anchors});
        Digest::of(serde_json::to_string(&v).unwrap().as_bytes()).as_str().to_owned()
    }
}

pub(crate) fn private_dir(path: &Path) {
    fs::create_dir_all(path).unwrap();
    fs::set_permissions(path, fs::Permissions::from_mode(0o700)).unwrap();
}

pub(crate) fn write_private(path: &Path, bytes: &[u8]) {
    kijito_files::private::write_atomic(path, bytes).unwrap();
}

/// The task object every seeded manifest carries.
pub(crate) fn task() -> Value {
    json!({
        "title": "Verify the pointer snapshot",
        "nextAction": "Run pointer-snapshot from a fresh process",
        "done": ["Seeded anchors"],
        "remaining": ["Check every current anchor"],
        "doneWhen": ["The report is green"],
        "gate": {"requiredConsecutiveGreens": 2, "consecutiveGreens": 0, "artifactDigest": null}
    })
}

/// The canonical manifest (section 4 key order) for these ids and anchors.
pub(crate) fn manifest(pointer_id: u64, lock_id: u64, current: &[(u64, String)], retired: &[(u64, u64)]) -> String {
    let mut anchors: Vec<Value> = current
        .iter()
        .enumerate()
        .map(|(i, (id, c))| json!({"id": id, "status": "current", "sha256": Digest::of(c.as_bytes()).as_str(), "purpose": format!("Current anchor {i}")}))
        .collect();
    anchors.extend(
        retired
            .iter()
            .enumerate()
            .map(|(i, (id, by))| json!({"id": id, "status": "retired", "supersededBy": by, "purpose": format!("Retired anchor {i}")})),
    );
    let v = json!({
        "schema": "kijito.codex.current-state/v1",
        "pointerId": pointer_id,
        "lock": {"protocol": "kijito-message-claim/v1", "messageId": lock_id},
        "state": "active",
        "task": task(),
        "anchors": anchors
    });
    canonical_json(&v)
}

impl World {
    pub(crate) fn start() -> World {
        World::with_server(LocalServer::start_with(Options::default()))
    }

    pub(crate) fn with_server(server: LocalServer) -> World {
        let tmp = tempfile::Builder::new().prefix("kijito-snapshot-test").tempdir().unwrap();
        private_dir(tmp.path());
        let home = tmp.path().join("home");
        let xdg = tmp.path().join("xdg");
        let reports = tmp.path().join("reports");
        private_dir(&home);
        private_dir(&reports);
        let world = World { server, tmp, home, xdg, reports };
        world.write_config(&json!({"apiUrl": world.server.base_url(), "tokenFile": world.server.token_file().to_str().unwrap()}));
        world
    }

    pub(crate) fn write_config(&self, config: &Value) {
        super::write_config_file(&self.xdg, "config.json", config.to_string().as_bytes());
    }

    pub(crate) fn path(&self, name: &str) -> PathBuf {
        self.tmp.path().join(name)
    }

    /// A fresh (not yet existing) report path in the private reports dir.
    pub(crate) fn report_path(&self, name: &str) -> PathBuf {
        self.reports.join(name)
    }

    /// Create `n_current` current anchors and `n_retired` retired ones (each
    /// retired one is corrected by a current one that is also listed), a
    /// lock message, and the pointer holding the canonical manifest. Every
    /// memory (pointer, anchors, retired ones) has an `edges:` block; the
    /// pointer's lists more than five edges (`has_more=true`) and includes
    /// the retired anchors, so a verifier that followed edges would be seen
    /// in the request log.
    pub(crate) fn seed(&self, n_current: usize, n_retired: usize) -> Seeded {
        assert!(n_retired <= n_current, "each retired anchor is superseded by a listed current one");
        let s = &self.server;
        let lock_id = s.send_message("codex", "codex", "pointer mutex");
        let pointer_id = s.create_memory_with(json!({"content": "placeholder", "importance": 0.9}));
        let mut current = Vec::new();
        let mut retired = Vec::new();
        for i in 0..n_retired {
            let old = s.create_memory(&format!("retired anchor {i} original content"));
            let content = format!("current anchor {i} (correction)\nsecond line");
            let new = s.correct(old, &content);
            retired.push((old, new));
            current.push((new, content));
        }
        for i in n_retired..n_current {
            let content = format!("current anchor {i}\n  with indented line and unicode \u{2603}");
            // Every third one is written by another persona: an anchor's
            // fence may name any persona (its header agrees).
            let persona = if i % 3 == 2 { "claude" } else { "codex" };
            let id = s.create_memory_with(json!({"content": content, "persona": persona}));
            current.push((id, content));
        }
        // Edges everywhere: anchors point at each other and at the pointer;
        // the pointer points at every anchor, current and retired.
        let all: Vec<u64> = current.iter().map(|(id, _)| *id).chain(retired.iter().map(|(id, _)| *id)).collect();
        for (i, id) in all.iter().enumerate() {
            s.relate(*id, pointer_id);
            s.relate(*id, all[(i + 1) % all.len()]);
        }
        for id in &all {
            s.relate(pointer_id, *id);
        }
        let mut never_fetch: Vec<u64> = retired.iter().map(|(id, _)| *id).collect();
        // Unlisted memories reachable only through the pointer's edges.
        for i in all.len()..6 {
            let extra = s.create_memory(&format!("unlisted memory {i}, reachable only through edges"));
            s.relate(pointer_id, extra);
            never_fetch.push(extra);
        }
        let manifest = manifest(pointer_id, lock_id, &current, &retired);
        let r = s.patch(pointer_id, &manifest, "Codex", None);
        assert_eq!(r.status, 200, "{}", r.body);
        Seeded { pointer_id, lock_id, current, retired, never_fetch, manifest }
    }

    /// A command for a binary with this world's HOME / XDG_CONFIG_HOME.
    pub(crate) fn command(&self, bin: &str) -> Command {
        let mut c = Command::new(bin);
        c.env("HOME", &self.home).env("XDG_CONFIG_HOME", &self.xdg).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
        c
    }

    /// Run pointer-snapshot for `seeded` with `--report-file report` plus `extra`.
    pub(crate) fn snapshot_to(&self, seeded: &Seeded, report: &Path, extra: &[&str]) -> Output {
        let mut c = self.command(POINTER_SNAPSHOT);
        c.arg("--pointer-id").arg(seeded.pointer_id.to_string());
        c.arg("--lock-message-id").arg(seeded.lock_id.to_string());
        c.arg("--report-file").arg(report);
        c.args(extra);
        c.output().unwrap()
    }

    /// Run pointer-digest for memory `id` plus `extra`.
    pub(crate) fn digest(&self, id: u64, extra: &[&str]) -> Output {
        self.command(POINTER_DIGEST).arg("--pointer-id").arg(id.to_string()).args(extra).output().unwrap()
    }

    /// Paths of every GET in the request log.
    pub(crate) fn gets(&self) -> Vec<String> {
        self.server.request_log().iter().filter(|l| l["method"] == "GET").map(|l| l["path"].as_str().unwrap().to_owned()).collect()
    }

    pub(crate) fn log_len(&self) -> usize {
        self.server.request_log().len()
    }
}

pub(crate) fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).unwrap()
}

pub(crate) fn stderr(o: &Output) -> String {
    String::from_utf8(o.stderr.clone()).unwrap()
}

/// Validate `instance` against a schema in `fixtures/schemas/`; the errors.
pub(crate) fn schema_errors(schema_file: &str, instance: &Value) -> Vec<String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/schemas").join(schema_file);
    let schema: Value = serde_json::from_slice(&fs::read(&path).unwrap()).unwrap();
    let v = jsonschema::validator_for(&schema).unwrap();
    v.iter_errors(instance).map(|e| format!("{} at {}", e, e.instance_path)).collect()
}

pub(crate) const GREEN_SCHEMA: &str = "pointer-snapshot-report.schema.json";
pub(crate) const RED_SCHEMA: &str = "pointer-snapshot-red-report.schema.json";
