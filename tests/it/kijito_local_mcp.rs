//! `kijito-local mcp` through the real binary: JSON-RPC over its
//! stdin/stdout on a temp store, every read bounded by a deadline; then the
//! official MCP Python SDK as the client (tests/mcp/conformance.py), skipped
//! with a printed reason when its venv is absent.

#![allow(clippy::unwrap_used)]

use crate::support;

use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};
use support::LocalServer;

/// Longest wait for one answer line (a busy 2-core machine; not a speed claim).
const DEADLINE: Duration = Duration::from_secs(30);
const MAX_LINE: usize = 1024 * 1024;

pub(crate) fn private_dir() -> tempfile::TempDir {
    let d = tempfile::Builder::new().prefix("kijito-mcp-test").tempdir().expect("temp dir");
    std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(0o700)).expect("chmod");
    d
}

/// A running `kijito-local mcp` and a reader thread for its stdout lines.
pub(crate) struct Mcp {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    next_id: u64,
}

impl Mcp {
    fn start(db: &Path, config_home: &Path, extra: &[&str]) -> Mcp {
        let mut c = Command::new(env!("CARGO_BIN_EXE_kijito-local"));
        c.arg("mcp").arg("--db").arg(db).args(extra).env("XDG_CONFIG_HOME", config_home);
        Mcp::spawn(c)
    }

    /// Any command line that starts an MCP server (e.g. what a host config registers).
    pub(crate) fn spawn(mut c: Command) -> Mcp {
        let mut child = c.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::inherit()).spawn().expect("spawn kijito-local mcp");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().take(100_000) {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let stdin = child.stdin.take();
        Mcp { child, stdin, lines: rx, next_id: 1 }
    }

    fn send_raw(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(bytes).expect("write stdin");
        stdin.flush().expect("flush stdin");
    }

    fn send(&mut self, message: &Value) {
        let mut bytes = serde_json::to_vec(message).expect("json");
        bytes.push(b'\n');
        self.send_raw(&bytes);
    }

    /// The next answer line, within the deadline.
    fn recv(&self) -> Value {
        match self.lines.recv_timeout(DEADLINE) {
            Ok(line) => serde_json::from_str(&line).unwrap_or_else(|e| panic!("answer is not JSON ({e}): {line}")),
            Err(RecvTimeoutError::Timeout) => panic!("no answer within {DEADLINE:?}"),
            Err(RecvTimeoutError::Disconnected) => panic!("the server closed stdout"),
        }
    }

    /// No further line is queued (used right after an answer that proves
    /// the server read past the messages in question: answers are in order).
    fn assert_no_pending_line(&self) {
        if let Ok(line) = self.lines.try_recv() {
            panic!("unexpected extra answer: {line}");
        }
    }

    fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let answer = self.recv();
        assert_eq!(answer["jsonrpc"], "2.0", "{answer}");
        assert_eq!(answer["id"], id, "answers come in order: {answer}");
        answer
    }

    pub(crate) fn initialize(&mut self, version: &str) -> Value {
        let answer = self.request(
            "initialize",
            json!({"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "kijito-test", "version": "1"}}),
        );
        self.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        answer["result"].clone()
    }

    /// Call a tool; returns (text, isError).
    pub(crate) fn call(&mut self, name: &str, arguments: Value) -> (String, bool) {
        let answer = self.request("tools/call", json!({"name": name, "arguments": arguments}));
        let result = &answer["result"];
        assert!(answer.get("error").is_none(), "{name}: protocol error {answer}");
        let content = result["content"].as_array().unwrap_or_else(|| panic!("{name}: no content: {answer}"));
        assert_eq!(content.len(), 1, "{answer}");
        assert_eq!(content[0]["type"], "text");
        (content[0]["text"].as_str().expect("text").to_owned(), result["isError"].as_bool().expect("isError"))
    }

    pub(crate) fn ok(&mut self, name: &str, arguments: Value) -> String {
        let (text, is_error) = self.call(name, arguments);
        assert!(!is_error, "{name} failed: {text}");
        text
    }

    fn err(&mut self, name: &str, arguments: Value, code: &str) -> String {
        let (text, is_error) = self.call(name, arguments);
        assert!(is_error, "{name} should fail with {code}: {text}");
        assert!(text.starts_with(&format!("{code}: ")), "{name}: expected {code}, got {text}");
        text
    }

    /// Close stdin and wait (bounded) for exit 0.
    pub(crate) fn finish(mut self) {
        drop(self.stdin.take());
        let deadline = Instant::now() + DEADLINE;
        loop {
            if let Some(status) = self.child.try_wait().expect("wait") {
                assert!(status.success(), "kijito-local mcp exited {status}");
                return;
            }
            assert!(Instant::now() < deadline, "kijito-local mcp did not exit at end of stdin");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Mcp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// "Created [N]" -> N.
fn created_id(text: &str) -> u64 {
    text.strip_prefix("Created [")
        .and_then(|t| t.strip_suffix(']'))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("not a Created answer: {text}"))
}

/// A rendering with its fence nonce replaced, to compare two renderings.
fn without_nonce(text: &str) -> String {
    let mut out = String::new();
    for line in text.split('\n') {
        let line = match line.rfind(" n=") {
            Some(i) if line.starts_with('⟦') => format!("{} n=<nonce>⟧", &line[..i]),
            _ => line.to_owned(),
        };
        out.push_str(&line);
        out.push('\n');
    }
    out
}

fn fresh_store() -> (tempfile::TempDir, PathBuf) {
    let d = private_dir();
    let db = d.path().join("kijito.db");
    (d, db)
}

#[test]
fn initialize_negotiates_the_revision_and_lists_tools_with_schemas() {
    let (d, db) = fresh_store();
    for (asked, answered) in [
        ("2025-06-18", "2025-06-18"),
        ("2025-11-25", "2025-11-25"),
        ("2025-03-26", "2025-03-26"),
        ("2024-11-05", "2025-11-25"),
        ("1999-01-01", "2025-11-25"),
    ] {
        let mut mcp = Mcp::start(&db, d.path(), &[]);
        let result = mcp.initialize(asked);
        assert_eq!(result["protocolVersion"], answered, "asked {asked}");
        assert_eq!(result["serverInfo"]["name"], "kijito-local");
        assert_eq!(result["capabilities"]["tools"]["listChanged"], false);
        mcp.finish();
    }
    let mut mcp = Mcp::start(&db, d.path(), &[]);
    mcp.initialize("2025-06-18");
    assert_eq!(mcp.request("ping", json!({}))["result"], json!({}));
    let tools = mcp.request("tools/list", json!({}))["result"]["tools"].clone();
    let names: Vec<&str> = tools.as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "kijito_startup",
            "kijito_recall",
            "kijito_get",
            "kijito_recent",
            "kijito_remember",
            "kijito_correct",
            "kijito_fade",
            "kijito_update",
            "kijito_dream",
            "kijito_anchor_audit",
            "kijito_wake_check",
            "kijito_hive_send",
            "kijito_hive_claim",
            "kijito_hive_release"
        ]
    );
    for tool in tools.as_array().unwrap() {
        let schema = &tool["inputSchema"];
        // Every input schema is itself a valid JSON Schema, and closed.
        let validator = jsonschema::validator_for(schema).unwrap_or_else(|e| panic!("{}: invalid schema: {e}", tool["name"]));
        assert!(!validator.is_valid(&json!({"no_such_argument": 1})), "{} accepts unknown arguments", tool["name"]);
        assert!(tool["description"].as_str().is_some_and(|s| !s.is_empty()));
    }
    let recall = tools.as_array().unwrap().iter().find(|t| t["name"] == "kijito_recall").unwrap();
    let v = jsonschema::validator_for(&recall["inputSchema"]).unwrap();
    assert!(v.is_valid(
        &json!({"query": "CODEX_CURRENT_STATE_POINTER_V1 RESUME NOW", "scope": "project", "project": "Codex", "full": true, "limit": 5})
    ));
    assert!(!v.is_valid(&json!({"scope": "project"})), "query is required");
    mcp.finish();
}

#[test]
fn every_tool_succeeds_and_fails_closed() {
    let (d, db) = fresh_store();
    // the lock message's id (20) is no memory of this store: fade and correct refuse it as update does
    let mut mcp = Mcp::start(&db, d.path(), &["--pointer-id", "1", "--lock-message-id", "20", "--persona", "codex", "--project", "Codex"]);
    mcp.initialize("2025-11-25");

    // remember: the pointer (id 1), two anchors, one in another project.
    let pointer =
        created_id(&mcp.ok(
            "kijito_remember",
            json!({"content": "CODEX_CURRENT_STATE_POINTER_V1 RESUME NOW: build the MCP server", "importance": 0.9}),
        ));
    assert_eq!(pointer, 1);
    let a = created_id(&mcp.ok("kijito_remember", json!({"content": "The store is SQLite in WAL mode.", "type": "decision", "basis": "observed", "confidence": 0.8, "model": "test-model"})));
    let b = created_id(
        &mcp.ok("kijito_remember", json!({"content": "The port is 8787.", "persona": "codex", "project": "Codex", "scope": "project"})),
    );
    let other = created_id(&mcp.ok("kijito_remember", json!({"content": "The port is 9999 elsewhere.", "project": "Other"})));
    mcp.err("kijito_remember", json!({}), "missing_field");
    mcp.err("kijito_remember", json!({"content": "   "}), "invalid_field");
    mcp.err("kijito_remember", json!({"content": "x", "importance": 2}), "invalid_field");
    mcp.err("kijito_remember", json!({"content": "x", "persona": "Not A Persona!"}), "invalid_persona");
    mcp.err("kijito_remember", json!({"content": "x", "type": "Bad Type"}), "invalid_field");
    mcp.err("kijito_remember", json!({"content": "x", "source": "correction"}), "unknown_field");

    // get: the HTTP rendering of protocol §3.
    let text = mcp.ok("kijito_get", json!({"id": a}));
    assert!(
        text.starts_with(&format!(
            "Memory [{a}]\nType: decision\nScope: project\nProject: Codex\nPersona: codex\nStatus: active\nSource: mcp\nCreated: "
        )),
        "{text}"
    );
    assert!(text.contains("\nImportance: 0.5\nbelief: confidence=0.8 evidence=1 basis=observed\n⟦UNTRUSTED id="), "{text}");
    assert!(text.contains("\nThe store is SQLite in WAL mode.\n⟦/UNTRUSTED n="), "{text}");
    mcp.err("kijito_get", json!({"id": 999}), "not_found_or_forbidden");
    mcp.err("kijito_get", json!({"id": 0}), "invalid_id");
    mcp.err("kijito_get", json!({"id": "1"}), "invalid_id");
    mcp.err("kijito_get", json!({}), "missing_field");

    // recall: ranked FTS5 over the project; the pointer query finds the pointer first.
    let text = mcp.ok(
        "kijito_recall",
        json!({"query": "CODEX_CURRENT_STATE_POINTER_V1 RESUME NOW", "scope": "project", "project": "Codex", "full": true}),
    );
    assert!(
        text.starts_with("1 result(s) for \"CODEX_CURRENT_STATE_POINTER_V1 RESUME NOW\" in project Codex, best first:\n\nMemory [1]\n"),
        "{text}"
    );
    assert!(text.contains("\nStatus: active\nSource: mcp\n"), "{text}");
    let text = mcp.ok("kijito_recall", json!({"query": "port"}));
    assert!(
        text.contains(&format!(
            "[{b}] note · Status: active · Source: mcp · belief: confidence=1 evidence=1 basis=observed · The port is 8787."
        )),
        "{text}"
    );
    assert!(!text.contains("9999 elsewhere"), "another project's memory leaked: {text}");
    let text = mcp.ok("kijito_recall", json!({"query": "port", "project": "Other"}));
    assert!(text.contains(&format!("[{other}] ")), "{text}");
    let text = mcp.ok("kijito_recall", json!({"query": "SQLite port", "limit": 1}));
    assert!(text.starts_with("1 result(s)"), "{text}");
    assert_eq!(mcp.ok("kijito_recall", json!({"query": "nonexistentword"})), "No memories match \"nonexistentword\" in project Codex.");
    // FTS5 syntax in a query is taken as words, never as a query language.
    for hostile in ["\"", "NEAR(port 8787)", "port* OR -x", "content:port", "^port", "((("] {
        let (text, is_error) = mcp.call("kijito_recall", json!({"query": hostile}));
        assert!(!is_error || text.starts_with("invalid_field: "), "{hostile}: {text}");
    }
    mcp.err("kijito_recall", json!({"query": "** --"}), "invalid_field");
    mcp.err("kijito_recall", json!({"query": "x", "limit": 0}), "invalid_field");
    mcp.err("kijito_recall", json!({"query": "x", "limit": 51}), "invalid_field");
    mcp.err("kijito_recall", json!({"query": "x", "full": "yes"}), "invalid_field");
    mcp.err("kijito_recall", json!({"query": "x".repeat(4097)}), "invalid_field");
    mcp.err("kijito_recall", json!({"query": "x", "scope": "Project!"}), "invalid_field");
    mcp.err("kijito_recall", json!({}), "missing_field");

    // recent: newest first, this project only.
    let text = mcp.ok("kijito_recent", json!({"hours": 1}));
    assert!(text.starts_with("Recent in project Codex (last 1 h), newest first:\n"), "{text}");
    let pos = |id: u64| text.find(&format!("  [{id}] ")).unwrap_or_else(|| panic!("[{id}] missing: {text}"));
    assert!(pos(b) < pos(a) && pos(a) < pos(pointer), "{text}");
    assert!(!text.contains("9999 elsewhere"), "{text}");
    mcp.err("kijito_recent", json!({"hours": 0}), "invalid_field");
    mcp.err("kijito_recent", json!({"limit": 101}), "invalid_field");

    // startup: counts, the configured pointer and lock, previews.
    let text = mcp.ok("kijito_startup", json!({"persona": "codex", "project": "Codex"}));
    assert!(text.starts_with("kijito-local startup\nPersona: codex\nProject: Codex\nMemories: 3 (3 live)\nCurrent-state pointer: [1] (read it in full with kijito_get)\nLock message: 20\nMost important (live):\n  [1] note"), "{text}");
    mcp.err("kijito_startup", json!({"persona": "BAD PERSONA"}), "invalid_persona");

    // correct: a Source: correction memory, the old one eroded.
    let text = mcp.ok("kijito_correct", json!({"id": b, "content": "The port is 8788."}));
    let c: u64 = text
        .strip_prefix(&format!("Corrected [{b}] by ["))
        .and_then(|t| t.strip_suffix(']'))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{text}"));
    let old = mcp.ok("kijito_get", json!({"id": b}));
    assert!(old.contains("basis=observed · eroded\n"), "{old}");
    let new = mcp.ok("kijito_get", json!({"id": c}));
    assert!(
        new.contains("\nSource: correction\n") && new.contains("belief: confidence=1 evidence=1 basis=correction\nedges:\n  -> corrects ["),
        "{new}"
    );
    mcp.err("kijito_correct", json!({"id": 999, "content": "x"}), "not_found_or_forbidden");
    mcp.err("kijito_correct", json!({"id": b}), "missing_field");

    // fade.
    assert_eq!(mcp.ok("kijito_fade", json!({"id": a})), format!("Faded [{a}]"));
    assert!(mcp.ok("kijito_get", json!({"id": a})).contains(" · faded\n"));
    mcp.err("kijito_fade", json!({"id": 999}), "not_found_or_forbidden");

    // The verifier's own parser and classifier (protocol §3) read the MCP
    // texts as they read the REST ones.
    let classify = |text: &str, id: u64| {
        kijito_protocol::render::parse_and_classify(text, kijito_protocol::ids::MemoryId::new(id).unwrap(), None).map(|(_, l)| l)
    };
    let text = mcp.ok("kijito_get", json!({"id": pointer}));
    assert_eq!(classify(&text, pointer).unwrap(), kijito_protocol::render::Lifecycle::Current);
    let text = mcp.ok("kijito_get", json!({"id": b}));
    assert_eq!(classify(&text, b).unwrap(), kijito_protocol::render::Lifecycle::Retired);
    let text = mcp.ok("kijito_get", json!({"id": c}));
    assert_eq!(classify(&text, c).unwrap(), kijito_protocol::render::Lifecycle::Current);
    let text = mcp.ok("kijito_get", json!({"id": a}));
    assert_eq!(
        classify(&text, a).unwrap_err().code(),
        kijito_protocol::codes::render::LIFECYCLE_UNCLASSIFIED.as_str(),
        "a faded memory is unclassified"
    );

    // anchor audit: the verifier's classification, the correction chain, scars.
    let text = mcp.ok("kijito_anchor_audit", json!({"id": pointer}));
    assert_eq!(text, format!("Anchor audit [{pointer}]\nLifecycle: current\nMarker: none\nStatus: active\nSource: mcp\nCorrected by: none\nLatest correction: none\nCorrects: none\nScarred: no"));
    let c2: u64 = mcp
        .ok("kijito_correct", json!({"id": c, "content": "The port is 8790."}))
        .rsplit('[')
        .next()
        .unwrap()
        .trim_end_matches(']')
        .parse()
        .unwrap();
    let text = mcp.ok("kijito_anchor_audit", json!({"id": b}));
    assert_eq!(
        text,
        format!("Anchor audit [{b}]\nLifecycle: retired\nMarker: eroded\nStatus: active\nSource: mcp\nCorrected by: [{c}]\nLatest correction: [{c2}] (chain [{c}] -> [{c2}])\nCorrects: none\nScarred: yes (corrected by [{c}]; eroded)")
    );
    let text = mcp.ok("kijito_anchor_audit", json!({"id": c2}));
    assert!(
        text.contains("\nLifecycle: current\n") && text.contains(&format!("\nCorrects: [{c}]\n")) && text.ends_with("\nScarred: no"),
        "{text}"
    );
    let text = mcp.ok("kijito_anchor_audit", json!({"id": a}));
    assert!(
        text.contains("\nLifecycle: unclassified (memory_lifecycle_unclassified)\n") && text.ends_with("Scarred: yes (faded)"),
        "{text}"
    );
    mcp.err("kijito_anchor_audit", json!({"id": 999}), "not_found_or_forbidden");
    mcp.err("kijito_anchor_audit", json!({}), "missing_field");

    // update: in place for an ordinary memory; refused for the pointer and the lock id.
    assert_eq!(mcp.ok("kijito_update", json!({"id": c, "content": "The port is 8789."})), format!("Updated [{c}]"));
    assert!(mcp.ok("kijito_get", json!({"id": c})).contains("\nThe port is 8789.\n"));
    let refused = mcp.err("kijito_update", json!({"id": pointer, "content": "RESUME NOW: hijacked"}), "pointer_update_refused");
    assert!(refused.contains("pointer changes go through pointer-publish"), "{refused}");
    let refused = mcp.err("kijito_update", json!({"id": 20, "content": "x"}), "pointer_update_refused");
    assert!(refused.contains("pointer changes go through pointer-publish"), "{refused}");
    // correct and fade are refused for the pointer and the lock id as well (docs/policy.md)
    for id in [pointer, 20] {
        mcp.err("kijito_fade", json!({ "id": id }), "pointer_update_refused");
        mcp.err("kijito_correct", json!({"id": id, "content": "RESUME NOW: hijacked"}), "pointer_update_refused");
        mcp.err("kijito_fade", json!({ "id": id as f64 + 0.5 }), "invalid_id");
    }
    assert!(
        mcp.ok("kijito_get", json!({"id": pointer})).contains("\nCODEX_CURRENT_STATE_POINTER_V1 RESUME NOW: build the MCP server\n"),
        "the pointer is unchanged"
    );
    assert!(!mcp.ok("kijito_get", json!({"id": pointer})).contains("hijacked"), "the pointer was not corrected");
    mcp.err("kijito_update", json!({"id": c, "content": "x", "project": "Other"}), "not_found_or_forbidden");
    mcp.err("kijito_update", json!({"id": 999, "content": "x"}), "not_found_or_forbidden");

    // dream: an explicit error result, never a silent success.
    let text = mcp.err("kijito_dream", json!({}), "not_available");
    assert!(text.contains("not available on kijito-local"), "{text}");

    // hive: send, claim (the pointer lock), self-claim advisory, release.
    let sent: Value = serde_json::from_str(&mcp.ok("kijito_hive_send", json!({"to": "codex", "content": "pointer lock"}))).unwrap();
    let m = sent["id"].as_u64().unwrap();
    assert_eq!(
        serde_json::from_str::<Value>(&mcp.ok("kijito_hive_claim", json!({"message_id": m, "lease_seconds": 30}))).unwrap(),
        json!({"claimed": true, "message_id": m})
    );
    let again: Value = serde_json::from_str(&mcp.ok("kijito_hive_claim", json!({"message_id": m}))).unwrap();
    assert_eq!(again["advisory"]["reason"], "self_claimed", "{again}");
    let other_claim: Value = serde_json::from_str(&mcp.ok("kijito_hive_claim", json!({"message_id": m, "persona": "other"}))).unwrap();
    assert_eq!(other_claim["advisory"]["reason"], "already_claimed", "{other_claim}");
    assert_eq!(
        serde_json::from_str::<Value>(&mcp.ok("kijito_hive_release", json!({"message_id": m}))).unwrap(),
        json!({"released": true, "message_id": m})
    );
    mcp.err("kijito_hive_claim", json!({"message_id": 999}), "message_not_found_or_forbidden");
    mcp.err("kijito_hive_claim", json!({"message_id": m, "lease_seconds": 5}), "invalid_lease_seconds");
    mcp.err("kijito_hive_release", json!({"message_id": 999}), "message_not_found_or_forbidden");
    mcp.err("kijito_hive_send", json!({"content": "x"}), "missing_field");

    // An unknown tool and bad params are protocol errors (-32602).
    let answer = mcp.request("tools/call", json!({"name": "kijito_nope", "arguments": {}}));
    assert_eq!(answer["error"]["code"], -32602, "{answer}");
    let answer = mcp.request("tools/call", json!({"arguments": {}}));
    assert_eq!(answer["error"]["code"], -32602, "{answer}");
    let answer = mcp.request("tools/call", json!({"name": "kijito_get", "arguments": [1]}));
    assert_eq!(answer["error"]["code"], -32602, "{answer}");
    mcp.finish();
}

#[test]
fn malformed_unknown_and_notification_messages() {
    let (d, db) = fresh_store();
    let mut mcp = Mcp::start(&db, d.path(), &[]);
    mcp.initialize("2025-06-18");
    mcp.send_raw(b"{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\n");
    let answer = mcp.recv();
    assert_eq!(answer["error"]["code"], -32700, "{answer}");
    assert_eq!(answer["id"], Value::Null);
    mcp.send_raw(b"not json at all\n");
    assert_eq!(mcp.recv()["error"]["code"], -32700);
    mcp.send_raw(b"[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}]\n");
    assert_eq!(mcp.recv()["error"]["code"], -32600, "batches are refused");
    mcp.send_raw(b"42\n");
    assert_eq!(mcp.recv()["error"]["code"], -32600);
    mcp.send(&json!({"jsonrpc": "1.0", "id": 8, "method": "ping"}));
    let answer = mcp.recv();
    assert_eq!((answer["id"].clone(), answer["error"]["code"].clone()), (json!(8), json!(-32600)));
    mcp.send(&json!({"jsonrpc": "2.0", "id": {"x": 1}, "method": "ping"}));
    assert_eq!(mcp.recv()["error"]["code"], -32600);
    let answer = mcp.request("resources/list", json!({}));
    assert_eq!(answer["error"]["code"], -32601, "{answer}");
    let answer = mcp.request("no/such/method", json!({}));
    assert_eq!(answer["error"]["code"], -32601, "{answer}");
    // Notifications, known or not, and responses are never answered: the
    // next answer is the ping's.
    mcp.send(&json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}));
    mcp.send(&json!({"jsonrpc": "2.0", "method": "no/such/notification"}));
    mcp.send(&json!({"jsonrpc": "2.0", "id": 99, "result": {}}));
    mcp.send_raw(b"\n   \n");
    let answer = mcp.request("ping", json!({}));
    assert_eq!(answer["result"], json!({}));
    mcp.assert_no_pending_line();
    // String ids are echoed.
    mcp.send(&json!({"jsonrpc": "2.0", "id": "abc", "method": "ping"}));
    assert_eq!(mcp.recv()["id"], "abc");
    mcp.finish();
}

#[test]
fn an_over_long_request_is_refused_and_writes_nothing() {
    let (d, db) = fresh_store();
    let mut mcp = Mcp::start(&db, d.path(), &[]);
    mcp.initialize("2025-06-18");
    let big = json!({"jsonrpc": "2.0", "id": 50, "method": "tools/call", "params": {"name": "kijito_remember", "arguments": {"content": "x".repeat(MAX_LINE)}}});
    let mut bytes = serde_json::to_vec(&big).unwrap();
    assert!(bytes.len() > MAX_LINE);
    bytes.push(b'\n');
    mcp.send_raw(&bytes);
    let answer = mcp.recv();
    assert_eq!(answer["error"]["code"], -32600, "{answer}");
    assert_eq!(answer["id"], Value::Null);
    let message = answer["error"]["message"].as_str().unwrap();
    assert!(message.starts_with("request_too_large: a message is at most 1048576 bytes"), "{message}");
    // The server goes on, and nothing was written.
    let text = mcp.ok("kijito_startup", json!({}));
    assert!(text.contains("\nMemories: 0 (0 live)\n"), "{text}");
    // The largest line that fits is handled.
    let fits =
        json!({"jsonrpc": "2.0", "id": 51, "method": "tools/call", "params": {"name": "kijito_remember", "arguments": {"content": ""}}});
    let overhead = serde_json::to_vec(&fits).unwrap().len();
    let fits = json!({"jsonrpc": "2.0", "id": 51, "method": "tools/call", "params": {"name": "kijito_remember", "arguments": {"content": "y".repeat(MAX_LINE - overhead)}}});
    let mut bytes = serde_json::to_vec(&fits).unwrap();
    assert_eq!(bytes.len(), MAX_LINE);
    bytes.push(b'\n');
    mcp.send_raw(&bytes);
    let answer = mcp.recv();
    assert_eq!(answer["result"]["content"][0]["text"], "Created [1]", "{}", answer.to_string().chars().take(300).collect::<String>());
    mcp.finish();
}

#[test]
fn serve_and_mcp_share_one_database_at_once() {
    let server = LocalServer::start();
    let db = server.db_path();
    let config = private_dir();
    let mut mcp = Mcp::start(&db, config.path(), &[]);
    mcp.initialize("2025-06-18");

    // HTTP writes, MCP reads (recall sees the index the server's insert fed).
    let anchor = server.create_memory("anchor written over HTTP: the verifier digest");
    let text = mcp.ok("kijito_recall", json!({"query": "verifier digest", "full": true}));
    assert!(text.contains(&format!("\nMemory [{anchor}]\n")), "{text}");
    // MCP writes, HTTP reads; both render the same text (nonce aside).
    let id = created_id(&mcp.ok("kijito_remember", json!({"content": "written over MCP"})));
    let http = server.get(id).rendering();
    let via_mcp = mcp.ok("kijito_get", json!({"id": id}));
    assert_eq!(without_nonce(&http), without_nonce(&via_mcp));
    // A correction over MCP is the eroded suffix over HTTP.
    mcp.ok("kijito_correct", json!({"id": anchor, "content": "corrected over MCP"}));
    assert!(server.get(anchor).rendering().contains(" · eroded\n"));

    // Concurrent writers from both processes: every write lands, ids unique.
    const EACH: usize = 40;
    let writer = {
        let base = server.base_url();
        let token = server.token().to_owned();
        std::thread::spawn(move || {
            let addr: std::net::SocketAddr = base.trim_start_matches("http://").parse().unwrap();
            (0..EACH)
                .map(|i| {
                    let body = json!({"content": format!("http writer {i}"), "persona": "codex", "scope": "project", "project": "Codex"})
                        .to_string();
                    let auth = format!("Bearer {token}");
                    let req = support::build_request(
                        "POST",
                        "/api/memory",
                        Some(&body),
                        &[("Authorization", &auth), ("Content-Type", "application/json")],
                    );
                    let response = support::send(addr, &req).expect("http create");
                    assert_eq!(response.status, 200, "{}", response.body);
                    response.json()["id"].as_u64().unwrap()
                })
                .collect::<Vec<u64>>()
        })
    };
    let mut ids: Vec<u64> =
        (0..EACH).map(|i| created_id(&mcp.ok("kijito_remember", json!({"content": format!("mcp writer {i}")})))).collect();
    ids.extend(writer.join().expect("http writer"));
    let count = ids.len();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), count, "ids are unique across processes");
    let text = mcp.ok("kijito_startup", json!({}));
    assert!(text.contains(&format!("\nMemories: {} (", 3 + 2 * EACH)), "{text}");
    let text = mcp.ok("kijito_recall", json!({"query": "writer", "limit": 50}));
    assert!(text.starts_with("50 result(s)"), "{}", text.lines().next().unwrap_or_default());
    for probe in [ids[0], ids[count - 1]] {
        assert_eq!(server.get(probe).status, 200);
    }
    mcp.finish();
}

/// The venv with the official MCP Python SDK (.ci/run creates it):
/// `KIJITO_MCP_VENV`, else `target/mcp-venv` of this workspace.
fn sdk_python() -> Option<PathBuf> {
    let venv = std::env::var_os("KIJITO_MCP_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target/mcp-venv"));
    let python = venv.join("bin/python");
    python.is_file().then_some(python)
}

#[test]
fn conformance_through_the_official_python_sdk() {
    let Some(python) = sdk_python() else {
        println!("SKIP conformance_through_the_official_python_sdk: no MCP SDK venv (create target/mcp-venv with `pip install mcp==2.3.0`, or set KIJITO_MCP_VENV)");
        return;
    };
    let (d, db) = fresh_store();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/conformance.py");
    let mut child = Command::new(&python)
        .arg(&script)
        .arg(env!("CARGO_BIN_EXE_kijito-local"))
        .arg(&db)
        .env("XDG_CONFIG_HOME", d.path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn python");
    let deadline = Instant::now() + Duration::from_secs(120);
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the SDK conformance script did not finish within 120 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let output = child.wait_with_output().expect("output");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(status.success(), "conformance failed ({status}):\n{stdout}\n{stderr}");
    let last = stdout.lines().last().unwrap_or_default();
    assert!(last.starts_with("conformance ok: protocol 2025-11-25, 14 tools, "), "{stdout}\n{stderr}");
}

#[test]
fn mcp_flags_and_config_are_checked_before_serving() {
    let d = private_dir();
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_kijito-local"))
            .arg("mcp")
            .args(args)
            .env("XDG_CONFIG_HOME", d.path())
            .stdin(Stdio::null())
            .output()
            .expect("run")
    };
    let db = d.path().join("k.db");
    let db = db.to_str().unwrap();
    for (args, code) in [
        (vec![], "missing_flag"),
        (vec!["--db", db, "--pointer-id", "0"], "invalid_memory_id"),
        (vec!["--db", db, "--persona", "Not Valid"], "invalid_persona"),
        (vec!["--db", db, "--project", " padded "], "invalid_argument"),
    ] {
        let out = run(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(&format!("kijito_local_failed:{code}")), "{args:?}: {stderr}");
        assert!(out.stdout.is_empty(), "nothing on stdout: {args:?}");
    }
    // The pointer comes from the config when no flag names it.
    support::write_config_file(d.path(), "config.json", br#"{"pointerId":7,"lockMessageId":8,"project":"Proj"}"#);
    let dbp = d.path().join("k.db");
    let mut mcp = Mcp::start(&dbp, d.path(), &[]);
    mcp.initialize("2025-06-18");
    let text = mcp.ok("kijito_startup", json!({}));
    assert!(
        text.contains("\nProject: Proj\n") && text.contains("\nCurrent-state pointer: [7] ") && text.contains("\nLock message: 8\n"),
        "{text}"
    );
    let refused = mcp.err("kijito_update", json!({"id": 7, "content": "x"}), "pointer_update_refused");
    assert!(refused.contains("pointer changes go through pointer-publish"));
    mcp.finish();
    // An invalid config fails closed at start.
    support::write_config_file(d.path(), "config.json", br#"{"noSuchKey":1}"#);
    let out = run(&["--db", db]);
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.stdout.is_empty());
}

// ------------------------------------------------ registration with the hosts (kijito-setup --mcp, kijito-doctor)

/// A fresh HOME with a kijito-local config (kijito-setup --create against a
/// real server), and plugin roots for both hosts whose bin/ holds the built
/// kijito-local (and kijito-setup, which the doctor's fix names).
struct Installed {
    dir: tempfile::TempDir,
    home: PathBuf,
    prefix: PathBuf,
    codex_home: PathBuf,
    empty_path: PathBuf,
}

impl Installed {
    fn new(server: &LocalServer) -> Installed {
        Installed::new_with(server, false)
    }

    /// As [`Installed::new`], but the plugin roots are made by the real
    /// `install.sh --debug` (its manifest, so its `--uninstall` works).
    fn new_with(server: &LocalServer, install_sh: bool) -> Installed {
        let dir = private_dir();
        let home = dir.path().join("home");
        let prefix = dir.path().join("prefix");
        let codex_home = dir.path().join("codex-home");
        let empty_path = dir.path().join("empty-path");
        for d in [&home, &codex_home, &empty_path] {
            std::fs::create_dir(d).unwrap();
        }
        if install_sh {
            let o = install_sh_run(&prefix, &[]);
            assert!(o.status.success(), "install.sh: {}", String::from_utf8_lossy(&o.stderr));
        }
        for host in ["claude", "codex"] {
            if install_sh {
                break;
            }
            let bin = prefix.join(host).join("bin");
            std::fs::create_dir_all(&bin).unwrap();
            for b in ["kijito-local", "kijito-setup"] {
                let src = support::bin(b);
                kijito_testkit::link_executable(Path::new(&src), &bin.join(b));
            }
        }
        let me = Installed { dir, home, prefix, codex_home, empty_path };
        let anchor = me.dir.path().join("anchor.md");
        kijito_files::private::write_atomic(&anchor, b"Decision: the parser keeps the old AST names.\n").unwrap();
        let o = me.run(
            env!("CARGO_BIN_EXE_kijito-setup"),
            &[
                "--api-url",
                &server.base_url(),
                "--token-file",
                server.token_file().to_str().unwrap(),
                "--create",
                "--anchor-file",
                anchor.to_str().unwrap(),
                "--title",
                "Ship the parser",
            ],
        );
        assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
        me
    }

    fn command(&self, bin: &str, args: &[&str]) -> Command {
        let mut c = Command::new(bin);
        c.args(args)
            .current_dir(&self.home)
            .env("HOME", &self.home)
            .env("PATH", &self.empty_path)
            .env("CODEX_HOME", &self.codex_home)
            .env_remove("XDG_CONFIG_HOME")
            .env_remove("XDG_CACHE_HOME")
            .env_remove("CLAUDE_CONFIG_DIR")
            .env_remove("CLAUDE_PLUGIN_DATA")
            .stdin(Stdio::null());
        c
    }

    fn run(&self, bin: &str, args: &[&str]) -> std::process::Output {
        self.command(bin, args).output().unwrap()
    }

    fn setup_mcp(&self, host: &str, db: &Path, write: bool) -> std::process::Output {
        let mut args = vec!["--mcp", "--host", host, "--db", db.to_str().unwrap(), "--root", self.prefix.to_str().unwrap()];
        if write {
            args.push("--write");
        }
        self.run(env!("CARGO_BIN_EXE_kijito-setup"), &args)
    }

    /// The doctor's `mcp` line for `host` (offline: no GET of the pointer).
    fn doctor_mcp(&self, host: &str) -> Value {
        let o = self
            .run(env!("CARGO_BIN_EXE_kijito-doctor"), &["--host", host, "--root", self.prefix.to_str().unwrap(), "--offline", "--json"]);
        let v: Value = serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&o.stderr)));
        v["checks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["host"] == host && c["check"] == "mcp")
            .cloned()
            .unwrap_or_else(|| panic!("no {host} mcp line: {v:#}"))
    }

    fn config(&self) -> Value {
        serde_json::from_slice(&std::fs::read(self.home.join(".config/kijito-qa/config.json")).unwrap()).unwrap()
    }
}

/// `install.sh --debug --prefix PREFIX --host both` plus `extra`.
fn install_sh_run(prefix: &Path, extra: &[&str]) -> std::process::Output {
    support::install_sh().args(["--prefix", prefix.to_str().unwrap(), "--host", "both"]).args(extra).stdin(Stdio::null()).output().unwrap()
}

#[test]
fn install_sh_uninstall_removes_the_mcp_registrations_and_keeps_what_the_user_wrote() {
    let server = LocalServer::start();
    let inst = Installed::new_with(&server, true);
    let db = server.db_path();
    let claude_json = inst.prefix.join("claude/.mcp.json");
    let toml = inst.codex_home.join("config.toml");
    // The user's own servers: one in the plugin root's .mcp.json, lines in Codex's config.
    let user_json =
        "{\n  \"mcpServers\": {\n    \"docs\": {\n      \"command\": \"/usr/bin/docs-mcp\"\n    }\n  },\n  \"note\": \"mine\"\n}\n";
    std::fs::write(&claude_json, user_json).unwrap();
    let user_toml = "model = \"gpt-5\"\n\n[mcp_servers.docs]\ncommand = \"/usr/bin/docs-mcp\"\n";
    std::fs::write(&toml, user_toml).unwrap();
    for host in ["claude", "codex"] {
        let o = inst.setup_mcp(host, &db, true);
        assert_eq!(o.status.code(), Some(0), "{host}: {}", String::from_utf8_lossy(&o.stderr));
        assert_eq!(inst.doctor_mcp(host)["status"], "green", "{host}");
    }
    // Claude: our server beside the user's, the user's keys kept in order.
    let v: Value = serde_json::from_slice(&std::fs::read(&claude_json).unwrap()).unwrap();
    assert_eq!(v["mcpServers"]["docs"]["command"], "/usr/bin/docs-mcp");
    assert_eq!(v["note"], "mine");
    assert_eq!(v["mcpServers"].as_object().unwrap().keys().collect::<Vec<_>>(), ["docs", "kijito"]);
    assert!(std::fs::read_to_string(&toml).unwrap().starts_with(user_toml));
    // Edited after the registration: the user adds another server; it survives the uninstall too.
    let mut edited = v.clone();
    edited["mcpServers"]["later"] = json!({"command": "/usr/bin/later"});
    std::fs::write(&claude_json, serde_json::to_string_pretty(&edited).unwrap()).unwrap();

    let o = install_sh_run(&inst.prefix, &["--uninstall"]);
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(o.status.success(), "{out}\n{}", String::from_utf8_lossy(&o.stderr));
    assert!(out.contains("kijito-qa's server removed, everything else kept"), "{out}");
    // Codex: exactly the user's bytes again; Claude: the user's servers and keys, not ours.
    assert_eq!(std::fs::read_to_string(&toml).unwrap(), user_toml);
    let v: Value = serde_json::from_slice(&std::fs::read(&claude_json).unwrap()).unwrap();
    assert_eq!(
        v,
        json!({"mcpServers": {"docs": {"command": "/usr/bin/docs-mcp"}, "later": {"command": "/usr/bin/later"}}, "note": "mine"})
    );
    // The rest of the install is gone; the root stays only for the user's file.
    assert!(!inst.prefix.join("claude/bin").exists() && !inst.prefix.join("codex").exists());
    assert!(!inst.prefix.join("claude/.kijito-mcp-registrations").exists());

    // Without user content: install, register, uninstall leaves nothing of
    // ours; a config.toml kijito-setup created is removed, the prefix too.
    std::fs::remove_file(&claude_json).unwrap();
    std::fs::remove_file(&toml).unwrap();
    assert!(install_sh_run(&inst.prefix, &[]).status.success());
    for host in ["claude", "codex"] {
        assert_eq!(inst.setup_mcp(host, &db, true).status.code(), Some(0), "{host}");
    }
    assert!(claude_json.exists() && toml.exists());
    let o = install_sh_run(&inst.prefix, &["--uninstall"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(!claude_json.exists() && !toml.exists(), "files only kijito-setup wrote are removed");
    assert!(!inst.prefix.exists(), "the prefix is left empty and removed");

    // A .mcp.json the user broke: the uninstall stops before removing anything.
    assert!(install_sh_run(&inst.prefix, &[]).status.success());
    assert_eq!(inst.setup_mcp("claude", &db, true).status.code(), Some(0));
    std::fs::write(&claude_json, "{ not json").unwrap();
    let o = install_sh_run(&inst.prefix, &["--uninstall"]);
    assert!(!o.status.success());
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("kijito_setup_failed:claude_mcp_config_invalid"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(inst.prefix.join("claude/bin/kijito-setup").exists(), "nothing else was removed");
    assert_eq!(std::fs::read_to_string(&claude_json).unwrap(), "{ not json");
    std::fs::remove_file(&claude_json).unwrap();
    assert!(install_sh_run(&inst.prefix, &["--uninstall"]).status.success());
    assert!(!inst.prefix.exists());
}

fn mode_of(p: &Path) -> u32 {
    std::fs::metadata(p).unwrap().permissions().mode() & 0o777
}

fn failure_line(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).lines().next().unwrap_or_default().to_owned()
}

#[test]
fn setup_registers_kijito_local_mcp_for_claude_and_the_registered_command_serves_the_same_store() {
    let server = LocalServer::start();
    let inst = Installed::new(&server);
    let db = server.db_path();
    let config = inst.config();
    let (pointer, lock) = (config["pointerId"].as_u64().unwrap(), config["lockMessageId"].as_u64().unwrap());
    let claude_root = inst.prefix.join("claude");
    let file = claude_root.join(".mcp.json");

    // Before: the doctor's line is yellow with the exact fix.
    let line = inst.doctor_mcp("claude");
    assert_eq!(line["status"], "yellow", "{line}");
    assert!(line["detail"].as_str().unwrap().contains("registers no \"kijito\" MCP server"), "{line}");
    assert!(
        line["fix"]
            .as_str()
            .unwrap()
            .contains(&format!("kijito-setup --mcp --host claude --db <the --db of kijito-local serve> --root {}", claude_root.display())),
        "{line}"
    );

    // Without --write: shows, writes nothing.
    let o = inst.setup_mcp("claude", &db, false);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stdout).contains("nothing written"));
    assert!(!file.exists());
    // --write: the plugin's .mcp.json, 0600, absolute command, the serve store, the config's ids.
    let o = inst.setup_mcp("claude", &db, true);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(mode_of(&file), 0o600);
    let v: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    let server_entry = &v["mcpServers"]["kijito"];
    let command = server_entry["command"].as_str().unwrap().to_owned();
    assert_eq!(command, claude_root.join("bin/kijito-local").to_str().unwrap());
    let args: Vec<String> = server_entry["args"].as_array().unwrap().iter().map(|a| a.as_str().unwrap().to_owned()).collect();
    assert_eq!(
        args,
        [
            "mcp",
            "--db",
            db.to_str().unwrap(),
            "--pointer-id",
            &pointer.to_string(),
            "--lock-message-id",
            &lock.to_string(),
            "--persona",
            "codex",
            "--project",
            "Codex"
        ]
    );
    // Again: nothing to write.
    let o = inst.setup_mcp("claude", &db, true);
    assert!(String::from_utf8_lossy(&o.stdout).contains("already registers it"), "{}", String::from_utf8_lossy(&o.stdout));

    // The doctor runs the registered command as the host would and sees the tools.
    let line = inst.doctor_mcp("claude");
    assert_eq!(line["status"], "green", "{line}");
    assert!(
        line["detail"].as_str().unwrap().contains("tools listed (kijito_recall, kijito_get, kijito_remember, kijito_correct, kijito_fade"),
        "{line}"
    );

    // The registered command line, started with no config in reach, serves the
    // serve store: the pointer kijito-setup made over HTTP, refused for update.
    let mut c = Command::new(&command);
    c.args(&args).env("HOME", inst.dir.path().join("nowhere")).env_remove("XDG_CONFIG_HOME");
    let mut mcp = Mcp::spawn(c);
    mcp.initialize("2025-11-25");
    let via_mcp = mcp.ok("kijito_get", json!({"id": pointer}));
    assert_eq!(without_nonce(&via_mcp), without_nonce(&server.get(pointer).rendering()));
    mcp.err("kijito_update", json!({"id": pointer, "content": "x"}), "pointer_update_refused");
    let id = created_id(&mcp.ok("kijito_remember", json!({"content": "curated through the registered server"})));
    assert_eq!(server.get(id).status, 200);
    mcp.finish();

    // A config that moved to another pointer: the registration is stale (yellow).
    let mut changed = inst.config();
    changed["pointerId"] = json!(id);
    support::write_config_file(&inst.home.join(".config"), "config.json", changed.to_string().as_bytes());
    let line = inst.doctor_mcp("claude");
    assert_eq!(line["status"], "yellow", "{line}");
    assert!(line["detail"].as_str().unwrap().contains("the config now means"), "{line}");
    // A registered store that is gone is red (the server would start an empty one).
    let gone = inst.dir.path().join("gone.db");
    std::fs::write(&gone, b"").unwrap();
    let o = inst.setup_mcp("claude", &gone, true);
    assert_eq!(o.status.code(), Some(0));
    std::fs::remove_file(&gone).unwrap();
    let line = inst.doctor_mcp("claude");
    assert_eq!(line["status"], "red", "{line}");
    assert!(line["detail"].as_str().unwrap().contains("gone.db"), "{line}");
}

#[test]
fn setup_merges_an_mcp_servers_block_into_codex_config_and_refuses_conflicts() {
    let server = LocalServer::start();
    let inst = Installed::new(&server);
    let db = server.db_path();
    let toml = inst.codex_home.join("config.toml");
    let user = "model = \"gpt-5\"\n\n[mcp_servers.docs]\ncommand = \"/usr/bin/docs-mcp\"\n";
    std::fs::write(&toml, user).unwrap();

    assert_eq!(inst.doctor_mcp("codex")["status"], "yellow");
    let o = inst.setup_mcp("codex", &db, true);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    let text = std::fs::read_to_string(&toml).unwrap();
    assert!(text.starts_with(user), "every other line kept: {text}");
    let command = inst.prefix.join("codex/bin/kijito-local");
    assert!(
        text.contains(&format!(
            "[mcp_servers.kijito]\ncommand = \"{}\"\nargs = [\"mcp\",\"--db\",\"{}\",",
            command.display(),
            db.display()
        )),
        "{text}"
    );
    assert_eq!(mode_of(&toml), 0o600);
    let line = inst.doctor_mcp("codex");
    assert_eq!(line["status"], "green", "{line}");
    // Re-running replaces the block in place (one block, user lines kept).
    std::fs::write(&toml, format!("{text}\n[profiles.fast]\nmodel = \"o4\"\n")).unwrap();
    let o = inst.setup_mcp("codex", &db, true);
    assert_eq!(o.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&o.stdout).contains("already registers it"));
    // A hand-written server of the same name: refused, nothing written.
    let hand = "[mcp_servers.kijito]\ncommand = \"/elsewhere/kijito-local\"\n";
    std::fs::write(&toml, hand).unwrap();
    let o = inst.setup_mcp("codex", &db, true);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(failure_line(&o), "kijito_setup_failed:codex_config_conflict");
    assert_eq!(std::fs::read_to_string(&toml).unwrap(), hand);
    assert_eq!(inst.doctor_mcp("codex")["status"], "red");
    // A store that does not exist, or a hosted config: refused.
    let o = inst.setup_mcp("codex", &inst.dir.path().join("missing.db"), true);
    assert_eq!(failure_line(&o), "kijito_setup_failed:mcp_db_invalid");
    let mut hosted = inst.config();
    hosted["apiUrl"] = json!("https://api.kijito.ai");
    support::write_config_file(&inst.home.join(".config"), "config.json", hosted.to_string().as_bytes());
    let o = inst.setup_mcp("codex", &db, true);
    assert_eq!(failure_line(&o), "kijito_setup_failed:mcp_needs_kijito_local");
    // ... and on the hosted service the doctor has no mcp line at all.
    let o =
        inst.run(env!("CARGO_BIN_EXE_kijito-doctor"), &["--host", "codex", "--root", inst.prefix.to_str().unwrap(), "--offline", "--json"]);
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(!v["checks"].as_array().unwrap().iter().any(|c| c["check"] == "mcp"), "{v:#}");
    // Usage.
    for (args, code) in [
        (vec!["--mcp", "--db", "/x"], "missing_flag"),
        (vec!["--mcp", "--host", "codex"], "missing_flag"),
        (vec!["--db", "/x"], "conflicting_flags"),
        (vec!["--mcp", "--host", "codex", "--db", "/x", "--force"], "conflicting_flags"),
    ] {
        let o = inst.run(env!("CARGO_BIN_EXE_kijito-setup"), &args);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        assert_eq!(failure_line(&o), format!("kijito_setup_failed:{code}"), "{args:?}");
    }
}

// ------------------------------------------------ wake checks as MCP tools (seed 001)

/// The `Report: {...}` line of a `kijito_wake_check` text.
fn wake_report(text: &str) -> Value {
    let line = text.lines().find_map(|l| l.strip_prefix("Report: ")).unwrap_or_else(|| panic!("no Report line: {text}"));
    serde_json::from_str(line).unwrap()
}

fn finding_codes(v: &Value) -> Vec<String> {
    v["findings"].as_array().unwrap().iter().map(|f| f["code"].as_str().unwrap().to_owned()).collect()
}

#[test]
fn wake_check_tool_gives_the_cli_verdict_with_its_session_binding() {
    let d = private_dir();
    let root = std::fs::canonicalize(d.path()).unwrap();
    let (ws, data, heads, home, boot) = (root.join("ws"), root.join("data"), root.join("heads"), root.join("home"), root.join("boot_id"));
    for dir in [&ws, &home] {
        std::fs::create_dir_all(dir).unwrap();
    }
    support::gate::qa_dir(&data);
    std::fs::write(&boot, "11111111-2222-3333-4444-555555555555\n").unwrap();
    let mut config = kijito_latch::Config::new(&ws);
    config.boot_id_file = boot.clone();
    config.heads_dir = Some(heads.clone());
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as u64;
    kijito_latch::Latch::open(&config)
        .unwrap()
        .init(now, &kijito_latch::InitInput { objective: "ship it".into(), ..Default::default() })
        .unwrap();
    let env = |c: &mut Command| {
        c.env("HOME", &home)
            .env_remove("XDG_CONFIG_HOME")
            .env_remove("PLUGIN_DATA")
            .env_remove("CLAUDE_PLUGIN_DATA")
            .env_remove("MEMORY_LATCH_HMAC_KEY_FILE")
            .env("MEMORY_LATCH_HEADS_DIR", &heads)
            .env("MEMORY_LATCH_BOOT_ID_FILE", &boot);
    };
    let cli = |extra: &[&str]| -> (i32, Value) {
        let mut c = Command::new(env!("CARGO_BIN_EXE_wake-check"));
        c.args(["--json", "--workspace", ws.to_str().unwrap(), "--data-dir", data.to_str().unwrap()]).args(extra);
        env(&mut c);
        let o = c.output().unwrap();
        (
            o.status.code().unwrap(),
            serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&o.stderr))),
        )
    };
    // The server's current directory is the default workspace.
    let mut c = Command::new(env!("CARGO_BIN_EXE_kijito-local"));
    c.args(["mcp", "--db", root.join("k.db").to_str().unwrap()]).current_dir(&ws);
    env(&mut c);
    let mut mcp = Mcp::spawn(c);
    mcp.initialize("2025-06-18");
    let tools = mcp.request("tools/list", json!({}));
    let listed = tools["result"]["tools"].as_array().unwrap();
    assert!(listed.iter().any(|t| t["name"] == "kijito_wake_check" && t["inputSchema"]["additionalProperties"] == false), "{tools}");

    // A fresh latch: full trust, bound to the session asked for, as the CLI says.
    let text = mcp.ok("kijito_wake_check", json!({"data_dir": data.to_str().unwrap(), "session_id": "s1"}));
    assert!(text.contains("\nSession binding: s1 (only this session's QA files)\n"), "{text}");
    assert!(
        text.contains(&format!("\nWorkspace: {}\n", ws.display())) && text.contains("\nTrust mode: full_trust\nFindings: 0\n"),
        "{text}"
    );
    let report = wake_report(&text);
    let (code, expected) = cli(&["--session-id", "s1"]);
    assert_eq!(code, 0);
    assert_eq!((report["mode"].clone(), finding_codes(&report)), (expected["mode"].clone(), finding_codes(&expected)));

    // A changed boot id and --live without a recorded pointer: cautious, two findings, the same as the CLI.
    std::fs::write(&boot, "99999999-2222-3333-4444-555555555555\n").unwrap();
    let text = mcp.ok("kijito_wake_check", json!({"workspace": ws.to_str().unwrap(), "data_dir": data.to_str().unwrap(), "live": true}));
    assert!(text.contains("\nSession binding: none (every session's QA files"), "{text}");
    assert!(text.contains("\nTrust mode: cautious\nFindings: 2\n") && text.contains("boot_changed") && text.contains("step: "), "{text}");
    let report = wake_report(&text);
    let (code, expected) = cli(&["--live"]);
    assert_eq!(code, 10);
    assert_eq!(finding_codes(&report), finding_codes(&expected));
    assert_eq!(finding_codes(&report), ["pointer_record_missing", "boot_changed"]);
    assert_eq!(report["schema"], "kijito.wake-check/v1");

    // Fails closed on bad arguments, nothing run.
    mcp.err("kijito_wake_check", json!({"workspace": "relative/ws"}), "invalid_field");
    mcp.err("kijito_wake_check", json!({"session_id": "bad id"}), "invalid_session_id");
    mcp.err("kijito_wake_check", json!({"long_sleep_after": 0}), "invalid_field");
    mcp.err("kijito_wake_check", json!({"verbose": true}), "unknown_field");
    mcp.finish();
}
