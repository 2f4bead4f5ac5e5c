//! Shared helpers for the gate and hook integration tests: the QA world run
//! through the binaries (kijito-testkit's world laid out for them), green/red report builders, real host payloads from
//! `fixtures/hosts/`, running the real binaries, and Codex schema checks.
//! Reusable by the full publish -> snapshot -> record cycle test.
#![allow(dead_code, clippy::unwrap_used)]

use kijito_protocol::ids::{Digest, MemoryId, MessageId};
use kijito_testkit::world::Layout;
use serde_json::{json, Value};
use std::fs;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

pub(crate) const QA_GATE: &str = env!("CARGO_BIN_EXE_qa-gate");
pub(crate) static PRECOMPACT: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| super::bin("precompact"));
pub(crate) static POSTCOMPACT: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| super::bin("postcompact"));
pub(crate) static SESSION_HOOK: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| super::bin("session-hook"));

/// The pointer id of every gate world: the first memory a fresh kijito-local
/// creates (its ids start at 1), holding `pointer content`.
pub(crate) const POINTER: u64 = 1;
/// The content of the live pointer of a gate world.
pub(crate) const POINTER_CONTENT: &str = "pointer content";

/// SHA-256 of the built `pointer-snapshot` next to `qa-gate` (the installed
/// verifier in tests): every report a test writes by hand names it.
pub(crate) static VERIFIER: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    let file = fs::File::open(helper_dir().join("pointer-snapshot")).unwrap();
    Digest::of_reader(file, 1 << 30).unwrap().unwrap().as_str().to_owned()
});
pub(crate) const LOCK: u64 = 1234;

/// The helpers of the hooks' command block, in order, one per command line
/// (shared/hooks/src/text.rs): digest, publish, its lease release, the two
/// verifier boots, record and invalidate, the compaction request.
pub(crate) const COMMAND_BLOCK: [&str; 8] = [
    "pointer-digest",
    "pointer-publish",
    "pointer-publish",
    "pointer-snapshot",
    "pointer-snapshot",
    "qa-gate",
    "qa-gate",
    "kijito-compact",
];

pub(crate) fn now_ms() -> i64 {
    kijito_gate::now_ms()
}

/// The directory holding the built helpers (the "installed root" in tests).
pub(crate) fn helper_dir() -> PathBuf {
    Path::new(QA_GATE).canonicalize().unwrap().parent().unwrap().to_owned()
}

/// A scratch world for the binaries: kijito-testkit's QA world laid out
/// for them ([`Layout::BINARIES`]: a HOME, a data dir path not yet created,
/// a transcript file), its paths as the binaries take them, and the live
/// server and config file `qa-gate record` reads.
pub(crate) struct World {
    /// The testkit's world this one is (its temporary dir: [`World::dir`]).
    pub kit: kijito_testkit::world::World,
    pub home: PathBuf,
    pub data: PathBuf,
    pub transcript: PathBuf,
    /// The kijito-local `qa-gate record` reads the live pointer from,
    /// started on first use (see [`World::live`]).
    live: std::sync::OnceLock<super::LocalServer>,
    config: std::sync::Mutex<Value>,
}

impl World {
    pub(crate) fn new() -> World {
        let kit = kijito_testkit::world::World::laid_out(Layout::BINARIES);
        World {
            home: kit.path("home"),
            data: kit.data.as_path().to_owned(),
            transcript: kit.transcript.as_path().to_owned(),
            kit,
            live: Default::default(),
            config: std::sync::Mutex::new(json!({})),
        }
    }

    /// The world's temporary dir (0700), holding everything else.
    pub(crate) fn dir(&self) -> &Path {
        self.kit.dir.path()
    }

    /// The live server `qa-gate record` reads: started once, pointer
    /// [`POINTER`] holding [`POINTER_CONTENT`], and `apiUrl`/`tokenFile` in
    /// this world's config from then on.
    pub(crate) fn live(&self) -> &super::LocalServer {
        let mut fresh = false;
        let server = self.live.get_or_init(|| {
            fresh = true;
            let s = super::LocalServer::start();
            assert_eq!(s.create_memory(POINTER_CONTENT), POINTER, "the first memory of a fresh kijito-local");
            s
        });
        if fresh {
            let c = self.config.lock().unwrap().clone();
            self.write_config(&c);
        }
        server
    }

    pub(crate) fn qa(&self) -> PathBuf {
        self.data.join("qa")
    }

    /// [`World::qa`], created first ([`qa_dir`]).
    pub(crate) fn qa_dir(&self) -> PathBuf {
        qa_dir(&self.data)
    }

    pub(crate) fn path(&self, name: &str) -> PathBuf {
        self.kit.path(name)
    }

    /// Write `~/.config/kijito-qa/config.json` (0600).
    pub(crate) fn write_config(&self, config: &Value) {
        *self.config.lock().unwrap() = config.clone();
        let mut config = config.clone();
        if let (Some(s), Some(o)) = (self.live.get(), config.as_object_mut()) {
            o.entry("apiUrl").or_insert(s.base_url().into());
            o.entry("tokenFile").or_insert(s.token_file().to_str().unwrap().into());
        }
        super::write_config_file(&self.home.join(".config"), "config.json", config.to_string().as_bytes());
    }

    /// A command for one of the binaries with a clean environment.
    pub(crate) fn command(&self, bin: &str) -> Command {
        let mut c = Command::new(bin);
        c.env("HOME", &self.home)
            .env("MEMORY_LATCH_HEADS_DIR", self.home.join("latch-heads"))
            .env_remove("XDG_CONFIG_HOME")
            .env_remove("MEMORY_LATCH_WALLET_FILE")
            .env_remove("PLUGIN_DATA")
            .env_remove("CLAUDE_PLUGIN_DATA")
            .env_remove("CLAUDE_CODE_ENTRYPOINT")
            .env_remove("MEMORY_LATCH_CONSENT_FILE")
            .env_remove("CLAUDE_CONFIG_DIR")
            .env_remove("CODEX_HOME")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        c
    }

    /// `bin` (a `qa-gate`) with [`record_args`] and no stdin.
    pub(crate) fn run_args(&self, bin: &str, args: &[String]) -> Output {
        self.run(bin, &args.iter().map(String::as_str).collect::<Vec<_>>(), b"")
    }

    /// Run a binary with args and stdin; wait for it.
    pub(crate) fn run(&self, bin: &str, args: &[&str], stdin: &[u8]) -> Output {
        if bin == QA_GATE && args.first() == Some(&"record") {
            self.live();
        }
        let child = self.spawn(bin, args, stdin);
        child.wait_with_output().unwrap()
    }

    /// Spawn with stdin written (from a thread, ignoring a closed pipe).
    pub(crate) fn spawn(&self, bin: &str, args: &[&str], stdin: &[u8]) -> Child {
        let mut child = self.command(bin).args(args).spawn().unwrap();
        let mut pipe = child.stdin.take().unwrap();
        let bytes = stdin.to_vec();
        std::thread::spawn(move || {
            let _ = pipe.write_all(&bytes);
        });
        child
    }

    pub(crate) fn data_arg(&self) -> String {
        self.data.to_str().unwrap().to_owned()
    }

    /// The flight recorder's lines of `session` (docs/protocol.md §13), after
    /// the installed `kijito-report verify` found its chain intact.
    pub(crate) fn journal(&self, session: &str) -> Vec<Value> {
        let out = self.run(&crate::support::bin("kijito-report"), &["verify", "--session", session, "--data-dir", &self.data_arg()], b"");
        assert_eq!(out.status.code(), Some(0), "journal of {session}: {}", String::from_utf8_lossy(&out.stderr));
        let text = fs::read_to_string(self.data.join("journal").join(format!("{session}.jsonl"))).unwrap();
        text.lines().map(|l| serde_json::from_str(l).unwrap()).collect()
    }

    /// `qa-gate record` with two reports.
    pub(crate) fn record(&self, session: &str, digest: &str, a: &Path, b: &Path) -> Output {
        self.run_args(QA_GATE, &record_args(session, &self.transcript, Some(&self.data), POINTER, digest, [a, b]))
    }

    /// Two fresh green reports for the default pointer and a successful record.
    pub(crate) fn record_ok(&self, session: &str) -> Value {
        let (a, b, digest) = self.green_pair("r", now_ms());
        let out = self.record(session, &digest, &a, &b);
        assert_eq!(out.status.code(), Some(0), "record failed: {}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_slice(&out.stdout).unwrap()
    }

    /// Write two valid green reports (distinct nonces) verified at `at_ms`.
    pub(crate) fn green_pair(&self, label: &str, at_ms: i64) -> (PathBuf, PathBuf, String) {
        let spec = ReportSpec::new(at_ms);
        let a = self.path(&format!("{label}-a.json"));
        let b = self.path(&format!("{label}-b.json"));
        write_private(&a, green_report(&spec).to_string().as_bytes());
        write_private(&b, green_report(&ReportSpec { boot_nonce: nonce(2), ..spec.clone() }).to_string().as_bytes());
        (a, b, spec.pointer_digest.clone())
    }

    pub(crate) fn hook_stdin(&self, host: &str, key: &str, session: &str) -> Vec<u8> {
        hook_stdin(host, key, session, &self.transcript)
    }
}

/// The QA dir of the data dir `data` (`<data>/qa`), both created owner-only
/// (0700) if missing, as the hooks and `qa-gate record` make them: the one
/// place a test makes a data dir's QA dir by hand.
pub(crate) fn qa_dir(data: &Path) -> PathBuf {
    let qa = data.join("qa");
    for d in [data, qa.as_path()] {
        kijito_files::private::ensure_private_dir(d).unwrap();
    }
    qa
}

/// Write `bytes` to `path` as a fresh 0600 file.
pub(crate) fn write_private(path: &Path, bytes: &[u8]) {
    let _ = fs::remove_file(path);
    let mut f = fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(path).unwrap();
    f.write_all(bytes).unwrap();
}

/// The argv of `qa-gate record` for `session` on `pointer` (`digest`) with
/// `transcript`, the data dir `data` (no `--data-dir` when `None`) and the
/// two cold-boot reports: the one shape every record run of the tests has
/// ([`World::record`], [`Cycle::record_reports`], and the tests that run
/// another `qa-gate` or leave a flag out).
pub(crate) fn record_args(
    session: &str,
    transcript: &Path,
    data: Option<&Path>,
    pointer: u64,
    digest: &str,
    reports: [&Path; 2],
) -> Vec<String> {
    let mut v: Vec<String> = ["record", "--session-id", session, "--transcript"].map(str::to_owned).to_vec();
    v.push(transcript.to_str().unwrap().to_owned());
    if let Some(data) = data {
        v.extend(["--data-dir".to_owned(), data.to_str().unwrap().to_owned()]);
    }
    v.extend(["--pointer-id".to_owned(), pointer.to_string(), "--pointer-digest".to_owned(), digest.to_owned()]);
    for r in reports {
        v.extend(["--cold-boot-report".to_owned(), r.to_str().unwrap().to_owned()]);
    }
    v
}

pub(crate) fn nonce(n: u8) -> String {
    format!("{:032x}", 0xabc0_0000_u64 + n as u64)
}

/// What a green report says.
#[derive(Debug, Clone)]
pub(crate) struct ReportSpec {
    pub pointer_id: u64,
    pub lock_message_id: u64,
    pub pointer_digest: String,
    pub anchors: Vec<(u64, String)>,
    pub boot_nonce: String,
    pub verified_at_ms: i64,
    pub verifier: String,
}

impl ReportSpec {
    pub(crate) fn new(verified_at_ms: i64) -> ReportSpec {
        ReportSpec {
            pointer_id: POINTER,
            lock_message_id: LOCK,
            pointer_digest: Digest::of(POINTER_CONTENT.as_bytes()).as_str().to_owned(),
            anchors: vec![(22131, Digest::of(b"anchor").as_str().to_owned())],
            boot_nonce: nonce(1),
            verified_at_ms,
            verifier: VERIFIER.clone(),
        }
    }

    pub(crate) fn snapshot_digest(&self) -> String {
        let anchors: Vec<(MemoryId, Digest)> =
            self.anchors.iter().map(|(id, d)| (MemoryId::new(*id).unwrap(), Digest::parse(d).unwrap())).collect();
        kijito_protocol::manifest::snapshot_digest(
            MemoryId::new(self.pointer_id).unwrap(),
            &Digest::parse(&self.pointer_digest).unwrap(),
            MessageId::new(self.lock_message_id).unwrap(),
            &anchors,
        )
        .as_str()
        .to_owned()
    }
}

/// A green report (docs/protocol.md §5), keys in order.
pub(crate) fn green_report(s: &ReportSpec) -> Value {
    json!({
        "schema": "kijito.codex.pointer-snapshot/v1",
        "verdict": "green",
        "knownBadControl": "passed",
        "graphEdgesUsed": false,
        "pointerId": s.pointer_id,
        "lockMessageId": s.lock_message_id,
        "pointerDigest": s.pointer_digest,
        "snapshotDigest": s.snapshot_digest(),
        "state": "active",
        "task": {"title": "t", "nextAction": "n", "done": [], "remaining": ["r"], "doneWhen": ["d"],
                 "gate": {"requiredConsecutiveGreens": 2, "consecutiveGreens": 0, "artifactDigest": null}},
        "anchorDigests": s.anchors.iter().map(|(id, d)| json!({"id": id, "sha256": d})).collect::<Vec<_>>(),
        "bootNonce": s.boot_nonce,
        "verifiedAtMs": s.verified_at_ms,
        "verifierSha256": s.verifier,
    })
}

/// A red report.
pub(crate) fn red_report(s: &ReportSpec) -> Value {
    json!({
        "schema": "kijito.codex.pointer-snapshot/v1",
        "verdict": "red",
        "knownBadControl": "passed",
        "graphEdgesUsed": false,
        "pointerId": s.pointer_id,
        "failure": {"code": "pointer_digest_mismatch", "message": "x"},
        "bootNonce": s.boot_nonce,
        "verifiedAtMs": s.verified_at_ms,
        "verifierSha256": s.verifier,
    })
}

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/hosts")
}

/// A real host payload (`codex` / `claude`, key of stdin-by-event.json).
pub(crate) fn payload(host: &str, key: &str) -> Value {
    let all: Value = serde_json::from_slice(&fs::read(fixtures().join(host).join("stdin-by-event.json")).unwrap()).unwrap();
    all.get(key).unwrap_or_else(|| panic!("no payload {key} for {host}")).clone()
}

/// A real payload with our session id and transcript path.
pub(crate) fn hook_stdin(host: &str, key: &str, session: &str, transcript: &Path) -> Vec<u8> {
    let mut p = payload(host, key);
    p["session_id"] = json!(session);
    p["transcript_path"] = json!(transcript.to_str().unwrap());
    p.to_string().into_bytes()
}

/// The PreToolUse stdin of a shell call, per host.
pub(crate) fn pre_tool_use_stdin(host: &str, session: &str, tool: &str, input: Value) -> Vec<u8> {
    pre_tool_use(host, session, tool, input).to_string().into_bytes()
}

/// [`pre_tool_use_stdin`] as JSON, for a test that changes a field.
pub(crate) fn pre_tool_use(host: &str, session: &str, tool: &str, input: Value) -> Value {
    let mut v = json!({
        "session_id": session,
        "transcript_path": "/home/user/t.jsonl",
        "cwd": "/home/user/project",
        "hook_event_name": "PreToolUse",
        "tool_name": tool,
        "tool_input": input,
        "tool_use_id": "toolu_1",
    });
    if host == "codex" {
        v["turn_id"] = json!("turn-1");
        v["model"] = json!("fake-model");
        v["permission_mode"] = json!("bypassPermissions");
    }
    v
}

/// The Codex output schema (file stem) of a `session-hook --expect EVENT` reply.
pub(crate) fn schema_of(expect: &str) -> &'static str {
    match expect {
        "SessionStart" => "session-start",
        "UserPromptSubmit" => "user-prompt-submit",
        "Stop" => "stop",
        _ => "pre-tool-use",
    }
}

/// Validate one reply against a Codex output schema (file stem, e.g.
/// `session-start`). Empty stdout is valid (no output).
pub(crate) fn assert_schema_valid(schema: &str, stdout: &[u8]) {
    let text = String::from_utf8(stdout.to_vec()).unwrap();
    if text.trim().is_empty() {
        return;
    }
    assert_eq!(text.trim_end_matches('\n').lines().count(), 1, "one JSON line: {text}");
    let instance: Value = serde_json::from_str(text.trim()).unwrap_or_else(|e| panic!("reply is not JSON ({e}): {text}"));
    let s: Value =
        serde_json::from_slice(&fs::read(fixtures().join(format!("codex-schemas/{schema}.command.output.schema.json"))).unwrap()).unwrap();
    let v = jsonschema::validator_for(&s).unwrap();
    let errors: Vec<String> = v.iter_errors(&instance).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{schema} reply {text} invalid: {errors:?}");
}

/// additionalContext of a SessionStart/UserPromptSubmit reply.
pub(crate) fn context_of(stdout: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(stdout);
    if text.trim().is_empty() {
        return None;
    }
    let v: Value = serde_json::from_str(text.trim()).unwrap();
    Some(v["hookSpecificOutput"]["additionalContext"].as_str().unwrap().to_owned())
}

/// First stderr line (`kijito_<tool>_failed:<code>`).
pub(crate) fn failure_code(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).lines().next().unwrap_or("").to_owned()
}

/// Wait for a child at most `secs` seconds (bounded loop); kill on timeout.
pub(crate) fn wait_bounded(mut child: Child, secs: u64) -> Output {
    for _ in 0..secs * 20 {
        if child.try_wait().unwrap().is_some() {
            return child.wait_with_output().unwrap();
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let _ = child.kill();
    panic!("child did not finish within {secs} s");
}

/// One host's session id (as that host forms it) and the keys of its real
/// payloads in `fixtures/hosts/<host>/stdin-by-event.json`: the per-host
/// table of every cycle test.
pub(crate) struct Keys {
    pub host: &'static str,
    pub s: &'static str,
    pub startup: &'static str,
    pub ups: &'static str,
    /// A manual compaction's PreCompact.
    pub precompact: &'static str,
    /// An automatic compaction's PreCompact.
    pub precompact_auto: &'static str,
    pub postcompact: &'static str,
    pub compact_start: &'static str,
}

/// [`Keys`] of Codex, then Claude Code.
pub(crate) const HOSTS: [Keys; 2] = [
    Keys {
        host: "codex",
        s: "01a2295e-6929-7981-9da7-935145fb97be",
        startup: "app-server:SessionStart:startup",
        ups: "app-server:UserPromptSubmit",
        precompact: "app-server:PreCompact:manual",
        precompact_auto: "app-server:PreCompact:auto",
        postcompact: "app-server:PostCompact:manual",
        compact_start: "app-server:SessionStart:compact",
    },
    Keys {
        host: "claude",
        s: "2208dc6c-1602-4db0-9c33-9125ee25dc44",
        startup: "SessionStart(source=startup)",
        ups: "UserPromptSubmit",
        precompact: "PreCompact(manual, no args)",
        precompact_auto: "PreCompact(auto)",
        postcompact: "PostCompact(manual)",
        compact_start: "SessionStart(source=compact)",
    },
];

/// A whole QA cycle on real parts, for the hook tests that need a pass the
/// real verifier vouched for: a kijito-local with a seeded pointer (three
/// current anchors, a retired one), the kijito-qa config naming it (apiUrl,
/// tokenFile, pointerId, lockMessageId), a private data dir and a
/// transcript; [`Cycle::record`] runs two real `pointer-snapshot` boots and
/// the real `qa-gate record`.
pub(crate) struct Cycle {
    pub world: super::snapshot::World,
    pub seeded: super::snapshot::Seeded,
    pub data: PathBuf,
    pub transcript: PathBuf,
    boots: std::sync::atomic::AtomicUsize,
}

impl Cycle {
    /// The real `qa-gate record` of `session` on this cycle's pointer with
    /// the two cold-boot reports `a` and `b` as given (no boots run), stdin
    /// empty (tests/it/gate_limits.rs, tests/it/gate_witness.rs); every
    /// record of a [`Cycle`] runs through here.
    pub(crate) fn record_reports(&self, session: &str, a: &Path, b: &Path) -> Output {
        let args = record_args(session, &self.transcript, Some(&self.data), self.seeded.pointer_id, &self.seeded.pointer_digest(), [a, b]);
        self.run(QA_GATE, &args.iter().map(String::as_str).collect::<Vec<_>>(), b"")
    }

    pub(crate) fn new() -> Cycle {
        let world = super::snapshot::World::start();
        let seeded = world.seed(3, 1);
        world.write_config(&json!({
            "apiUrl": world.server.base_url(),
            "tokenFile": world.server.token_file().to_str().unwrap(),
            "pointerId": seeded.pointer_id,
            "lockMessageId": seeded.lock_id,
        }));
        let data = world.path("data");
        super::snapshot::private_dir(&data);
        let transcript = world.path("transcript.jsonl");
        fs::write(&transcript, "{\"type\":\"session_meta\"}\n").unwrap();
        Cycle { world, seeded, data, transcript, boots: Default::default() }
    }

    pub(crate) fn data_arg(&self) -> String {
        self.data.to_str().unwrap().to_owned()
    }

    pub(crate) fn qa(&self) -> PathBuf {
        self.data.join("qa")
    }

    /// [`Cycle::qa`], created first ([`qa_dir`]).
    pub(crate) fn qa_dir(&self) -> PathBuf {
        qa_dir(&self.data)
    }

    /// A binary of the workspace with this world's HOME and XDG_CONFIG_HOME,
    /// outside tmux and any compaction adapter.
    pub(crate) fn command(&self, bin: &str) -> Command {
        let mut c = self.world.command(bin);
        for v in [
            "TMUX",
            "TMUX_PANE",
            "PLUGIN_DATA",
            "CLAUDE_PLUGIN_DATA",
            "KIJITO_COMPACT_ADAPTER_ID",
            "KIJITO_COMPACT_SOCKET",
            "MEMORY_LATCH_WALLET_FILE",
        ] {
            c.env_remove(v);
        }
        c.env("MEMORY_LATCH_HEADS_DIR", self.world.home.join("latch-heads"));
        c.stdin(Stdio::piped());
        c
    }

    /// Run `bin` with `args` and `stdin`; wait at most 30 s.
    pub(crate) fn run(&self, bin: &str, args: &[&str], stdin: &[u8]) -> Output {
        let mut child = self.command(bin).args(args).spawn().unwrap();
        let mut pipe = child.stdin.take().unwrap();
        let bytes = stdin.to_vec();
        std::thread::spawn(move || {
            let _ = pipe.write_all(&bytes);
        });
        wait_bounded(child, 30)
    }

    /// A hook binary (`precompact`, `postcompact`, `session-hook`) for
    /// `host` with this data dir; it always exits 0.
    pub(crate) fn hook(&self, bin: &str, host: &str, args: &[&str], stdin: &[u8]) -> Output {
        let data = self.data_arg();
        let mut all = vec!["--host", host];
        all.extend_from_slice(args);
        all.extend(["--data-dir", data.as_str()]);
        let out = self.run(bin, &all, stdin);
        assert_eq!(out.status.code(), Some(0), "{bin} {args:?} exits 0: {}", String::from_utf8_lossy(&out.stderr));
        out
    }

    /// `session-hook --expect EVENT`: the additionalContext (SessionStart,
    /// UserPromptSubmit) or the whole reply (Stop), None for no output;
    /// every reply valid against the Codex output schema.
    pub(crate) fn session_hook(&self, host: &str, expect: &str, stdin: &[u8]) -> Option<String> {
        let out = self.hook(&SESSION_HOOK, host, &["--expect", expect], stdin);
        assert_schema_valid(schema_of(expect), &out.stdout);
        match expect {
            "SessionStart" | "UserPromptSubmit" => context_of(&out.stdout),
            _ => (!out.stdout.is_empty()).then(|| String::from_utf8(out.stdout).unwrap()),
        }
    }

    /// A real host payload with this session id and transcript; `prompt`
    /// replaces the prompt (UserPromptSubmit), `agent` adds a subagent's
    /// `agent_id`.
    pub(crate) fn stdin(&self, host: &str, key: &str, session: &str, prompt: Option<&str>, agent: Option<&str>) -> Vec<u8> {
        let mut v: Value = serde_json::from_slice(&hook_stdin(host, key, session, &self.transcript)).unwrap();
        if let Some(p) = prompt {
            v["prompt"] = json!(p);
        }
        if let Some(a) = agent {
            v["agent_id"] = json!(a);
            v["agent_type"] = json!("general-purpose");
        }
        v.to_string().into_bytes()
    }

    /// The two report paths of [`Cycle::record`]'s `n`-th call.
    fn boot_reports(&self, n: usize) -> [PathBuf; 2] {
        ["a", "b"].map(|boot| self.world.report_path(&format!("boot-{n}-{boot}.json")))
    }

    /// Two real verifier boots (fresh report files) and the real `qa-gate
    /// record` for `session`: its ready signal.
    pub(crate) fn record(&self, session: &str) -> Value {
        let n = self.boots.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let digest = self.seeded.pointer_digest();
        let reports = self.boot_reports(n);
        for report in &reports {
            let out = self.world.snapshot_to(&self.seeded, report, &["--expected-pointer-digest", &digest]);
            assert_eq!(out.status.code(), Some(0), "verifier boot: {}", String::from_utf8_lossy(&out.stderr));
        }
        let out = self.record_reports(session, &reports[0], &reports[1]);
        assert_eq!(out.status.code(), Some(0), "record: {}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_slice(&out.stdout).unwrap()
    }

    /// `qa-gate record` again from the two reports [`Cycle::record`]'s
    /// `n`-th call wrote (no new boots): the run's output.
    pub(crate) fn record_again_from(&self, session: &str, n: usize) -> Output {
        let [a, b] = self.boot_reports(n);
        self.record_reports(session, &a, &b)
    }

    /// `qa-gate status` of `session` (with the transcript check).
    pub(crate) fn status(&self, session: &str) -> Value {
        let (t, d) = (self.transcript.to_str().unwrap().to_owned(), self.data_arg());
        let out = self.run(QA_GATE, &["status", "--session-id", session, "--data-dir", &d, "--transcript", &t], b"");
        assert_eq!(out.status.code(), Some(0));
        serde_json::from_slice(&out.stdout).unwrap()
    }

    /// Whether `qa-gate check-command` accepts the line (exit 0), with why not.
    pub(crate) fn check_command(&self, line: &str) -> Result<(), String> {
        let out = self.run(QA_GATE, &["check-command", line], b"");
        if out.status.code() == Some(0) {
            Ok(())
        } else {
            Err(String::from_utf8_lossy(&out.stderr).into_owned())
        }
    }
}
