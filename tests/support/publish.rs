//! Helpers for publication tests (and the full publish -> snapshot -> record
//! cycle): a real kijito-local seeded with a mutex message, current anchors
//! and a canonical pointer manifest, a private HOME/XDG_CONFIG_HOME with a
//! 0600 `kijito-qa/config.json` pointing at the server, and runners for the
//! real `pointer-publish` binary.
//!
//! Use it with `mod support; mod support_publish;` (it needs `support`).
#![allow(dead_code, clippy::unwrap_used)]

use crate::support::LocalServer;
use kijito_protocol::ids::{Digest, MemoryId};
use serde_json::{json, Value};
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

pub(crate) const POINTER_PUBLISH: &str = env!("CARGO_BIN_EXE_pointer-publish");

/// A seeded server plus a private client environment.
pub(crate) struct Seeded {
    pub server: LocalServer,
    /// Private (0700) scratch dir: `home/`, `config/`, `work/`.
    pub tmp: tempfile::TempDir,
    pub pointer_id: u64,
    pub lock_id: u64,
    /// Current anchors: (id, sha256 of content).
    pub anchors: Vec<(u64, String)>,
    /// The pointer's content as seeded.
    pub initial: String,
}

/// The canonical manifest (docs/protocol.md §4) for `title`, with the given
/// current anchors.
pub(crate) fn manifest(pointer_id: u64, lock_id: u64, title: &str, anchors: &[(u64, String)]) -> String {
    let anchors: Vec<Value> = anchors
        .iter()
        .map(|(id, sha)| json!({"id": id, "status": "current", "sha256": sha, "purpose": format!("evidence {id}")}))
        .collect();
    let value = json!({
        "schema": "kijito.codex.current-state/v1",
        "pointerId": pointer_id,
        "lock": {"protocol": "kijito-message-claim/v1", "messageId": lock_id},
        "state": "active",
        "task": {
            "title": title,
            "nextAction": "run the tests",
            "done": [],
            "remaining": ["publish the pointer"],
            "doneWhen": ["the pointer is published"],
            "gate": {"requiredConsecutiveGreens": 2, "consecutiveGreens": 0, "artifactDigest": null}
        },
        "anchors": anchors,
    });
    let text = kijito_protocol::manifest::canonical_json(&value);
    kijito_protocol::manifest::parse_manifest(
        text.as_bytes(),
        MemoryId::new(pointer_id).unwrap(),
        kijito_protocol::ids::MessageId::new(lock_id).unwrap(),
    )
    .expect("the test manifest is canonical and valid");
    text
}

pub(crate) fn digest(text: &str) -> String {
    Digest::of(text.as_bytes()).as_str().to_owned()
}

/// Write `bytes` as a fresh 0600 file.
pub(crate) fn write_private(path: &Path, bytes: &[u8]) {
    kijito_files::private::write_atomic(path, bytes).unwrap();
}

impl Seeded {
    /// Start a server (defaults: faults and request log on) and seed it.
    pub(crate) fn new() -> Seeded {
        Seeded::on(LocalServer::start())
    }

    /// Seed an already started server: two anchors, a mutex message and the
    /// pointer (created, then patched to its canonical manifest, which needs
    /// its own id).
    pub(crate) fn on(server: LocalServer) -> Seeded {
        let tmp = tempfile::Builder::new().prefix("publish-test").tempdir().unwrap();
        fs::set_permissions(tmp.path(), fs::Permissions::from_mode(0o700)).unwrap();
        for sub in ["home", "work"] {
            fs::create_dir(tmp.path().join(sub)).unwrap();
            fs::set_permissions(tmp.path().join(sub), fs::Permissions::from_mode(0o700)).unwrap();
        }
        let config = json!({"apiUrl": server.base_url(), "tokenFile": server.token_file().to_str().unwrap()});
        super::write_config_file(&tmp.path().join("config"), "config.json", config.to_string().as_bytes());
        let anchors: Vec<(u64, String)> = ["anchor one: the build is green", "anchor two: the schema is v1"]
            .iter()
            .map(|c| (server.create_memory(c), digest(c)))
            .collect();
        let lock_id = server.send_message("codex", "codex", "pointer mutex");
        let pointer_id = server.create_memory("placeholder");
        let initial = manifest(pointer_id, lock_id, "initial state", &anchors);
        let r = server.patch(pointer_id, &initial, "Codex", None);
        assert_eq!(r.status, 200, "{}", r.body);
        Seeded { server, tmp, pointer_id, lock_id, anchors, initial }
    }

    pub(crate) fn manifest(&self, title: &str) -> String {
        manifest(self.pointer_id, self.lock_id, title, &self.anchors)
    }

    pub(crate) fn work(&self) -> PathBuf {
        self.tmp.path().join("work")
    }

    /// A path in the private work dir.
    pub(crate) fn path(&self, name: &str) -> PathBuf {
        self.work().join(name)
    }

    /// Write a content file (0600) in the work dir; returns its path.
    pub(crate) fn content_file(&self, name: &str, content: &str) -> PathBuf {
        let p = self.path(name);
        write_private(&p, content.as_bytes());
        p
    }

    /// The pointer's exact content as the server renders it now.
    pub(crate) fn pointer_content(&self) -> String {
        let text = self.server.get(self.pointer_id).rendering();
        kijito_protocol::render::parse_rendering(&text, MemoryId::new(self.pointer_id).unwrap(), None).unwrap().content
    }

    pub(crate) fn pointer_digest(&self) -> String {
        digest(&self.pointer_content())
    }

    /// The request log from line `mark` on.
    pub(crate) fn log_since(&self, mark: usize) -> Vec<Value> {
        self.server.request_log().into_iter().skip(mark).collect()
    }

    pub(crate) fn log_mark(&self) -> usize {
        self.server.request_log().len()
    }

    /// The occurrence number the next request with this method and path will
    /// have (every request so far is in the log).
    pub(crate) fn next_occurrence(&self, method: &str, path: &str) -> u64 {
        self.server.request_log().iter().filter(|l| l["method"] == method && l["path"] == path).count() as u64 + 1
    }

    pub(crate) fn pointer_path(&self) -> String {
        format!("/api/memory/{}", self.pointer_id)
    }

    /// A `pointer-publish` command with the private HOME and config.
    pub(crate) fn command(&self) -> Command {
        let mut c = Command::new(POINTER_PUBLISH);
        c.env("HOME", self.tmp.path().join("home"))
            .env("XDG_CONFIG_HOME", self.tmp.path().join("config"))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        c
    }

    /// The argv for publishing `content_file` over the expected digest.
    pub(crate) fn publish_args(&self, expected: &str, content_file: &Path, rollback: &Path) -> Vec<String> {
        vec![
            "--pointer-id".into(),
            self.pointer_id.to_string(),
            "--lock-message-id".into(),
            self.lock_id.to_string(),
            "--expected-pointer-digest".into(),
            expected.into(),
            "--content-file".into(),
            content_file.to_str().unwrap().into(),
            "--rollback-file".into(),
            rollback.to_str().unwrap().into(),
        ]
    }

    /// The argv for restoring `artifact` over the expected digest.
    pub(crate) fn restore_args(&self, expected: &str, artifact: &Path, rollback: &Path) -> Vec<String> {
        vec![
            "--restore-from".into(),
            artifact.to_str().unwrap().into(),
            "--pointer-id".into(),
            self.pointer_id.to_string(),
            "--lock-message-id".into(),
            self.lock_id.to_string(),
            "--expected-pointer-digest".into(),
            expected.into(),
            "--rollback-file".into(),
            rollback.to_str().unwrap().into(),
        ]
    }

    pub(crate) fn run(&self, args: &[String]) -> Output {
        self.command().args(args).output().unwrap()
    }

    pub(crate) fn spawn(&self, args: &[String]) -> Child {
        self.command().args(args).spawn().unwrap()
    }

    /// Publish `content` (written to `<name>.json`) over the current pointer
    /// with rollback file `<name>.rollback.json`.
    pub(crate) fn publish(&self, name: &str, content: &str) -> Output {
        let file = self.content_file(&format!("{name}.json"), content);
        self.run(&self.publish_args(&self.pointer_digest(), &file, &self.path(&format!("{name}.rollback.json"))))
    }
}

/// A run's outcome, parsed.
#[derive(Debug)]
pub(crate) struct Ran {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl Ran {
    pub(crate) fn of(out: &Output) -> Ran {
        Ran {
            code: out.status.code(),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    /// The receipt of a successful run.
    pub(crate) fn receipt(&self) -> Value {
        assert_eq!(self.code, Some(0), "expected success; stderr: {}", self.stderr);
        assert_eq!(self.stdout.matches('\n').count(), 1, "exactly one receipt line: {:?}", self.stdout);
        serde_json::from_str(self.stdout.trim_end()).unwrap()
    }

    /// The failure code of the first stderr line (asserting exit 1 and an
    /// empty stdout).
    pub(crate) fn failure(&self) -> String {
        assert_eq!(self.code, Some(1), "expected exit 1; stdout {:?} stderr {:?}", self.stdout, self.stderr);
        assert!(self.stdout.is_empty(), "nothing on stdout on failure: {:?}", self.stdout);
        let first = self.stderr.lines().next().unwrap_or_default();
        first.strip_prefix("kijito_pointer_publish_failed:").unwrap_or_else(|| panic!("bad first stderr line {first:?}")).to_owned()
    }

    /// The JSON detail on the second stderr line.
    pub(crate) fn detail(&self) -> Value {
        let second = self.stderr.lines().nth(1).unwrap_or_default();
        serde_json::from_str(second).unwrap_or_else(|e| panic!("second stderr line is not JSON ({e}): {:?}", self.stderr))
    }
}
