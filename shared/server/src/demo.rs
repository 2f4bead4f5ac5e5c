//! `kijito-local demo`: the toolkit's main job on the embedded default, with
//! no account and no network. It starts `kijito-local serve` on an ephemeral
//! loopback port with a temporary database and token, seeds a mutex message,
//! three anchors and a pointer, writes a temporary config, and runs the
//! sibling binaries exactly as a user or host would: digest, publish,
//! digest, two context-free snapshot boots, record, PreCompact, PostCompact
//! and SessionStart(compact) with host-shaped stdin (in each host's real
//! order), shows the attested re-entry; then erodes an anchor and shows the
//! verifier turning red and the next compaction going UNATTESTED.
//!
//! Every step has an expectation; the demo succeeds only if all are met.

use kijito_client::http::{Method, Request, ReqwestTransport, Transport, MEMORY_TIMEOUT};
use kijito_client::token::Token;
use kijito_files::config::ApiUrl;
use kijito_files::private;
use kijito_protocol::error::{Error, Result};
use kijito_protocol::host::HostKind;
use kijito_protocol::ids::Digest;
use kijito_protocol::manifest::canonical_json;
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Stable codes of this module (registered in the workspace by `tests/it/architecture.rs`).
pub mod codes {
    kijito_protocol::codes! {
        DEMO_SPAWN_FAILED DemoSpawnFailed = "demo_spawn_failed",
        DEMO_SERVER_FAILED DemoServerFailed = "demo_server_failed",
        DEMO_SEED_FAILED DemoSeedFailed = "demo_seed_failed",
        DEMO_STEP_FAILED DemoStepFailed = "demo_step_failed",
        DEMO_BIN_DIR_UNKNOWN DemoBinDirUnknown = "demo_bin_dir_unknown",
    }
}

/// Demo options.
#[derive(Debug, Clone, Copy)]
pub struct Options {
    pub host: HostKind,
    /// Keep the temporary directory (and print where it is).
    pub keep: bool,
}

/// One row of the step table.
#[derive(Debug, Clone)]
pub struct Step {
    pub name: String,
    pub expected: String,
    pub outcome: String,
    pub ok: bool,
    pub millis: u128,
}

/// Output of one sibling binary run.
#[derive(Debug)]
struct Run {
    status: i32,
    stdout: String,
    stderr: String,
}

struct Server {
    child: Child,
}

impl Drop for Server {
    #[allow(unsafe_code)]
    fn drop(&mut self) {
        // SAFETY: kill(2) on our own child's pid; no memory is touched.
        unsafe {
            libc::kill(self.child.id() as i32, libc::SIGTERM);
        }
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

struct Demo {
    bin: PathBuf,
    dir: PathBuf,
    host: HostKind,
    steps: Vec<Step>,
    out: Box<dyn Write>,
}

const SESSION: &str = "0b5e55ed-c0de-4a11-9e57-demo00000001";

impl Demo {
    fn helper(&self, name: &str) -> PathBuf {
        self.bin.join(name)
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// Run a sibling binary in the demo's environment ([`isolate`]).
    fn run(&self, name: &str, args: &[&str], stdin: Option<&str>) -> Result<Run> {
        let mut cmd = Command::new(self.helper(name));
        isolate(cmd.args(args), &self.dir)
            .stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().map_err(|e| Error::new(codes::DEMO_SPAWN_FAILED, format!("cannot run {name}: {e}")))?;
        if let (Some(text), Some(mut pipe)) = (stdin, child.stdin.take()) {
            let _ = pipe.write_all(text.as_bytes());
        }
        let out = child.wait_with_output().map_err(|e| Error::new(codes::DEMO_SPAWN_FAILED, format!("{name}: {e}")))?;
        Ok(Run {
            status: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        })
    }

    /// Time a step, record its row and print it.
    fn step<T>(&mut self, name: &str, expected: &str, work: impl FnOnce(&mut Demo) -> Result<(bool, String, T)>) -> Option<T> {
        let start = Instant::now();
        let result = work(self);
        let millis = start.elapsed().as_millis();
        let (ok, outcome, value) = match result {
            Ok((ok, outcome, value)) => (ok, outcome, Some(value)),
            Err(e) => (false, format!("error {}: {}", e.code(), e.message()), None),
        };
        let row = Step { name: name.into(), expected: expected.into(), outcome, ok, millis };
        let n = self.steps.len() + 1;
        let _ = writeln!(
            self.out,
            "{n:>2}  {:<50} {:<30} {:<4} {:>6} ms  {}",
            row.name,
            row.expected,
            if row.ok { "ok" } else { "FAIL" },
            row.millis,
            row.outcome
        );
        self.steps.push(row);
        value.filter(|_| ok)
    }

    fn hook_stdin(&self, event: &str, extra: Value) -> String {
        let mut v = json!({
            "session_id": SESSION,
            "transcript_path": self.path("transcript.jsonl").to_string_lossy(),
            "cwd": self.dir.to_string_lossy(),
            "hook_event_name": event,
        });
        if let (Some(o), Some(e)) = (v.as_object_mut(), extra.as_object()) {
            for (k, val) in e {
                o.insert(k.clone(), val.clone());
            }
        }
        v.to_string()
    }
}

fn manifest(pointer_id: u64, lock: u64, title: &str, next: &str, anchors: &[(u64, Digest, &str)]) -> String {
    canonical_json(&json!({
        "schema": "kijito.codex.current-state/v1",
        "pointerId": pointer_id,
        "lock": {"protocol": "kijito-message-claim/v1", "messageId": lock},
        "state": "active",
        "task": {
            "title": title,
            "nextAction": next,
            "done": ["Seeded the local store"],
            "remaining": ["Ship the verified pointer"],
            "doneWhen": ["Two context-free boots are green"],
            "gate": {"requiredConsecutiveGreens": 2, "consecutiveGreens": 0, "artifactDigest": null}
        },
        "anchors": anchors.iter().map(|(id, d, p)| json!({"id": id, "status": "current", "sha256": d.as_str(), "purpose": p})).collect::<Vec<_>>(),
    }))
}

/// The demo's environment for every child: HOME and every XDG directory
/// inside the demo's temp dir `dir`, so no helper writes into the user's own
/// state (the spent-nonce ledger, latch heads), config or cache; removing
/// `dir` leaves nothing behind (docs/kijito-local.md, demo).
fn isolate<'c>(cmd: &'c mut Command, dir: &Path) -> &'c mut Command {
    cmd.env("HOME", dir.join("home"))
        .env("XDG_CONFIG_HOME", dir.join("config"))
        .env("XDG_STATE_HOME", dir.join("home/.local/state"))
        .env("XDG_CACHE_HOME", dir.join("home/.cache"))
        .env("XDG_DATA_HOME", dir.join("home/.local/share"))
        .env_remove("XDG_RUNTIME_DIR")
        .env_remove("MEMORY_LATCH_HEADS_DIR")
        .env_remove("CODEX_HOME")
        .env_remove("CLAUDE_CONFIG_DIR")
        .env_remove("CLAUDE_PLUGIN_DATA")
        .env_remove("PLUGIN_DATA")
}

fn start_server(bin: &Path, dir: &Path) -> Result<(Server, String)> {
    let mut child = isolate(&mut Command::new(bin.join("kijito-local")), dir)
        .args(["serve", "--db"])
        .arg(dir.join("kijito.sqlite"))
        .arg("--token-file")
        .arg(dir.join("token"))
        .args(["--listen", "127.0.0.1:0"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| Error::new(codes::DEMO_SERVER_FAILED, format!("cannot start kijito-local: {e}")))?;
    let stdout = child.stdout.take().ok_or_else(|| Error::new(codes::DEMO_SERVER_FAILED, "no stdout"))?;
    let server = Server { child };
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = BufReader::new(stdout).read_line(&mut line);
        let _ = tx.send(line);
    });
    let line = rx
        .recv_timeout(Duration::from_secs(10))
        .map_err(|_| Error::new(codes::DEMO_SERVER_FAILED, "kijito-local did not start within 10 s"))?;
    let url = line
        .trim()
        .strip_prefix("kijito-local listening on ")
        .ok_or_else(|| Error::new(codes::DEMO_SERVER_FAILED, format!("unexpected first line {line:?}")))?
        .to_owned();
    Ok((server, url))
}

fn call(t: &ReqwestTransport, method: Method, path: &str, body: Value) -> Result<Value> {
    let r =
        t.send(&Request { method, path: path.into(), body: Some(body.to_string().into_bytes()), if_match: None, timeout: MEMORY_TIMEOUT })?;
    serde_json::from_slice(&r.body).map_err(|_| Error::new(codes::DEMO_SEED_FAILED, format!("{path} answered non-JSON")))
}

fn id_of(v: &Value) -> Result<u64> {
    v.get("id")
        .and_then(Value::as_u64)
        .or_else(|| v.pointer("/result/id").and_then(Value::as_u64))
        .ok_or_else(|| Error::new(codes::DEMO_SEED_FAILED, format!("no id in {v}")))
}

/// Seeded ids and digests.
struct Seed {
    pointer: u64,
    lock: u64,
    anchors: Vec<(u64, Digest, &'static str)>,
}

fn seed(t: &ReqwestTransport) -> Result<Seed> {
    let persona = kijito_protocol::ids::Persona::default();
    let memory = |content: &str| json!({"content": content, "persona": persona.as_str(), "scope": "project", "project": "Codex", "type": "decision", "importance": 0.8});
    let lock =
        id_of(&call(t, Method::Post, "/api/send", json!({"to": persona.as_str(), "from": "operator", "content": "pointer mutex"}))?)?;
    let texts = [
        ("Decision: the local store is SQLite in WAL mode.", "storage decision"),
        ("Checkpoint: the publish path was verified end to end.", "last good checkpoint"),
        ("Fact: the test command is `cargo test --workspace --locked`.", "how to test"),
    ];
    let mut anchors = Vec::new();
    for (text, purpose) in texts {
        let id = id_of(&call(t, Method::Post, "/api/memory", memory(text))?)?;
        anchors.push((id, Digest::of(text.as_bytes()), purpose));
    }
    // The pointer's id is known only once it exists: create, then write v1.
    let pointer = id_of(&call(t, Method::Post, "/api/memory", memory("placeholder"))?)?;
    let v1 = manifest(pointer, lock, "Keep the agent's memory verified", "Publish the next manifest", &anchors);
    call(
        t,
        Method::Patch,
        &format!("/api/memory/{pointer}"),
        json!({"content": v1, "persona": persona.as_str(), "scope": "project", "project": "Codex"}),
    )?;
    Ok(Seed { pointer, lock, anchors })
}

fn json_line(text: &str) -> Option<Value> {
    serde_json::from_str(text.trim()).ok()
}

fn failure_code(run: &Run) -> String {
    run.stderr.lines().next().and_then(|l| l.split_once("_failed:")).map(|(_, c)| c.to_owned()).unwrap_or_default()
}

fn context_of(stdout: &str) -> Option<String> {
    json_line(stdout)?.pointer("/hookSpecificOutput/additionalContext")?.as_str().map(str::to_owned)
}

/// Run the demo; returns whether every step behaved as expected.
pub fn run(bin: &Path, options: Options, out: Box<dyn Write>) -> Result<bool> {
    let base = std::env::temp_dir();
    let dir = base.join(format!("kijito-demo-{}", kijito_files::random::hex(6)));
    private::ensure_private_dir(&dir)?;
    private::ensure_private_dir(&dir.join("home"))?;
    let mut demo = Demo { bin: bin.to_owned(), dir: dir.clone(), host: options.host, steps: Vec::new(), out };
    let result = demo_steps(&mut demo);
    let all_ok = result.is_ok() && demo.steps.iter().all(|s| s.ok);
    let passed = demo.steps.iter().filter(|s| s.ok).count();
    let total = demo.steps.len();
    let _ = writeln!(demo.out);
    if let Err(e) = &result {
        let _ = writeln!(demo.out, "demo stopped early: {} ({})", e.message(), e.code());
    }
    let _ = writeln!(demo.out, "{}: {passed}/{total} steps behaved as expected", if all_ok { "demo passed" } else { "demo FAILED" });
    if options.keep {
        let _ = writeln!(demo.out, "kept {}", dir.display());
    } else {
        let _ = std::fs::remove_dir_all(&dir);
    }
    Ok(all_ok)
}

fn demo_steps(d: &mut Demo) -> Result<()> {
    let host_flag = d.host.as_str();
    let _ = writeln!(d.out, "kijito-qa demo ({host_flag} host order) in {}\n", d.dir.display());
    let _ = writeln!(d.out, " #  {:<50} {:<30} {:<4} {:>9}  outcome", "step", "expected", "", "time");

    // Setup: token, server, seed, config, transcript.
    private::write_atomic(&d.path("token"), format!("demo-{}\n", kijito_files::random::hex(16)).as_bytes())?;
    let (server, url) = d
        .step("start kijito-local on 127.0.0.1:0", "listening", |d| {
            let (server, url) = start_server(&d.bin, &d.dir)?;
            Ok((true, url.clone(), (server, url)))
        })
        .ok_or_else(|| Error::new(codes::DEMO_SERVER_FAILED, "the server did not start"))?;
    let _server = server;
    let transport = ReqwestTransport::new(ApiUrl::parse(&url)?, &Token::read(&d.path("token"))?)?;
    let seed = d
        .step("seed mutex, 3 anchors, pointer v1", "created", |_| {
            let s = seed(&transport)?;
            Ok((true, format!("pointer {} lock {} anchors {:?}", s.pointer, s.lock, s.anchors.iter().map(|a| a.0).collect::<Vec<_>>()), s))
        })
        .ok_or_else(|| Error::new(codes::DEMO_SEED_FAILED, "seeding failed"))?;
    let data_dir = d.path("data");
    private::ensure_private_dir(&data_dir)?;
    private::ensure_private_dir(&d.path("config/kijito-qa"))?;
    let config = json!({"apiUrl": url, "tokenFile": d.path("token").to_string_lossy(), "pointerId": seed.pointer, "lockMessageId": seed.lock, "dataDir": data_dir.to_string_lossy()});
    private::write_atomic(&d.path("config/kijito-qa/config.json"), config.to_string().as_bytes())?;
    private::write_atomic(&d.path("transcript.jsonl"), b"{\"type\":\"demo\",\"text\":\"a long agent session\"}\n")?;
    let (p, l) = (seed.pointer.to_string(), seed.lock.to_string());

    // Digest, publish v2, digest.
    let d1 = d
        .step("pointer-digest", "exit 0, a digest", |d| {
            let r = d.run("pointer-digest", &["--pointer-id", &p], None)?;
            let digest = Digest::parse(r.stdout.trim()).ok();
            Ok((r.status == 0 && digest.is_some(), r.stdout.trim().chars().take(16).collect::<String>() + "…", digest))
        })
        .flatten()
        .ok_or_else(|| Error::new(codes::DEMO_STEP_FAILED, "pointer-digest failed"))?;
    let v2 = manifest(seed.pointer, seed.lock, "Keep the agent's memory verified", "Resume: verify, then ship the pointer", &seed.anchors);
    private::write_atomic(&d.path("manifest-v2.json"), v2.as_bytes())?;
    let published = d
        .step("pointer-publish manifest v2", "status published", |d| {
            let r = d.run(
                "pointer-publish",
                &[
                    "--pointer-id",
                    &p,
                    "--lock-message-id",
                    &l,
                    "--expected-pointer-digest",
                    d1.as_str(),
                    "--content-file",
                    &d.path("manifest-v2.json").to_string_lossy(),
                    "--rollback-file",
                    &d.path("rollback-1.json").to_string_lossy(),
                ],
                None,
            )?;
            let receipt = json_line(&r.stdout);
            let status = receipt.as_ref().and_then(|v| v["status"].as_str().map(str::to_owned)).unwrap_or_else(|| failure_code(&r));
            let cas = receipt.as_ref().and_then(|v| v["cas"].as_str().map(str::to_owned)).unwrap_or_default();
            let digest = receipt.as_ref().and_then(|v| v["pointerDigest"].as_str().and_then(|s| Digest::parse(s).ok()));
            Ok((r.status == 0 && status == "published", format!("{status}, cas {cas}"), digest))
        })
        .flatten()
        .ok_or_else(|| Error::new(codes::DEMO_STEP_FAILED, "pointer-publish failed"))?;
    let d2 = d
        .step("pointer-digest again", "the published digest", |d| {
            let r = d.run("pointer-digest", &["--pointer-id", &p], None)?;
            let digest = Digest::parse(r.stdout.trim()).ok();
            Ok((
                digest.as_ref() == Some(&published),
                if digest.as_ref() == Some(&published) { "matches the receipt".into() } else { format!("got {:?}", r.stdout.trim()) },
                digest,
            ))
        })
        .flatten()
        .ok_or_else(|| Error::new(codes::DEMO_STEP_FAILED, "digest mismatch after publish"))?;

    // Two context-free boots.
    let mut reports = Vec::new();
    let mut snapshot_digest = String::new();
    for boot in 1..=2 {
        let report = d.path(&format!("data/boot-{boot}.json"));
        let ok = d.step(&format!("pointer-snapshot boot {boot} (fresh process)"), "green report", |d| {
            let r = d.run(
                "pointer-snapshot",
                &[
                    "--pointer-id",
                    &p,
                    "--lock-message-id",
                    &l,
                    "--expected-pointer-digest",
                    d2.as_str(),
                    "--report-file",
                    &report.to_string_lossy(),
                ],
                None,
            )?;
            let v = json_line(&r.stdout);
            let verdict = v.as_ref().and_then(|v| v["verdict"].as_str().map(str::to_owned)).unwrap_or_else(|| failure_code(&r));
            let snap = v.as_ref().and_then(|v| v["snapshotDigest"].as_str().map(str::to_owned)).unwrap_or_default();
            let nonce = v.as_ref().and_then(|v| v["bootNonce"].as_str().map(str::to_owned)).unwrap_or_default();
            Ok((
                r.status == 0 && verdict == "green",
                format!("{verdict}, snapshot {}…, nonce {}…", snap.get(..12).unwrap_or(""), nonce.get(..8).unwrap_or("")),
                snap,
            ))
        });
        match ok {
            Some(snap) if boot == 1 || snap == snapshot_digest => {
                snapshot_digest = snap;
                reports.push(report);
            }
            _ => return Err(Error::new(codes::DEMO_STEP_FAILED, "a snapshot boot was not green or the two differ")),
        }
    }

    // Record the pass.
    let transcript = d.path("transcript.jsonl").to_string_lossy().into_owned();
    let data = data_dir.to_string_lossy().into_owned();
    d.step("qa-gate record (two green boots)", "kijito.compaction.ready", |d| {
        let r = d.run(
            "qa-gate",
            &[
                "record",
                "--session-id",
                SESSION,
                "--transcript",
                &transcript,
                "--data-dir",
                &data,
                "--pointer-id",
                &p,
                "--pointer-digest",
                d2.as_str(),
                "--cold-boot-report",
                &reports[0].to_string_lossy(),
                "--cold-boot-report",
                &reports[1].to_string_lossy(),
            ],
            None,
        )?;
        let kind = json_line(&r.stdout).and_then(|v| v["type"].as_str().map(str::to_owned)).unwrap_or_else(|| failure_code(&r));
        Ok((r.status == 0 && kind == "kijito.compaction.ready", kind, ()))
    })
    .ok_or_else(|| Error::new(codes::DEMO_STEP_FAILED, "record failed"))?;

    // The attested compaction.
    let reentry = compaction(d, d.host, &snapshot_digest, true)?;
    let _ = writeln!(d.out, "\n--- re-entry text the resumed model receives (attested) ---\n{}\n---\n", reentry.trim_end());

    // Erode an anchor: the verifier turns red and the next compaction is UNATTESTED.
    let eroded = seed.anchors[1].0;
    d.step(&format!("erode anchor {eroded} (a correction)"), "corrected", |_| {
        let v = call(
            &transport,
            Method::Post,
            &format!("/api/memory/{eroded}/correct"),
            json!({"content": "Checkpoint: the publish path must be verified again."}),
        )?;
        Ok((v.get("id").is_some(), v["result"].as_str().unwrap_or("").to_owned(), ()))
    });
    let red = d.path("data/boot-3.json");
    d.step("pointer-snapshot boot 3", "red: current_anchor_retired", |d| {
        let r = d.run(
            "pointer-snapshot",
            &[
                "--pointer-id",
                &p,
                "--lock-message-id",
                &l,
                "--expected-pointer-digest",
                d2.as_str(),
                "--expected-snapshot-digest",
                &snapshot_digest,
                "--report-file",
                &red.to_string_lossy(),
            ],
            None,
        )?;
        let code = failure_code(&r);
        let report: Option<Value> = std::fs::read(&red).ok().and_then(|b| serde_json::from_slice(&b).ok());
        let verdict = report.as_ref().and_then(|v| v["verdict"].as_str().map(str::to_owned)).unwrap_or_default();
        Ok((
            r.status == 1
                && kijito_protocol::codes::snapshot::Code::parse(&code) == Some(kijito_protocol::codes::snapshot::ANCHOR_RETIRED)
                && verdict == "red",
            format!("exit {}, {code}, report verdict {verdict}", r.status),
            (),
        ))
    });
    let text = compaction(d, d.host, &snapshot_digest, false)?;
    let _ = writeln!(d.out, "\n--- re-entry text the resumed model receives (unattested) ---\n{}\n---", text.trim_end());
    Ok(())
}

/// PreCompact, then PostCompact and SessionStart(compact) in the host's real
/// order (Codex: PostCompact first and SessionStart(compact) can fire twice;
/// Claude Code: SessionStart(compact) before PostCompact). Returns the
/// delivered re-entry text, which must appear exactly once.
fn compaction(d: &mut Demo, host: HostKind, snapshot_digest: &str, attested: bool) -> Result<String> {
    let label = if attested { "attested" } else { "unattested" };
    let pre = d.hook_stdin("PreCompact", json!({"trigger": "manual", "custom_instructions": null}));
    let post = d.hook_stdin("PostCompact", json!({"trigger": "manual", "compact_summary": "summary text (untrusted)"}));
    let start = d.hook_stdin("SessionStart", json!({"source": "compact"}));
    d.step(&format!("precompact --host {host}"), "allows compaction", |d| {
        let r = d.run("precompact", &["--host", host.as_str()], Some(&pre))?;
        let ok = match host {
            HostKind::Codex => json_line(&r.stdout).map(|v| v["continue"] == true).unwrap_or(false),
            // Claude Code: nothing, or (attested) the request that the summary carry the pointer
            HostKind::Claude => {
                r.stdout.is_empty() != (attested && r.stdout.starts_with("kijito-qa: end the summary with these five lines"))
            }
        } && r.status == 0;
        let shown = match (host, r.stdout.is_empty()) {
            (_, true) => "(no output: Claude Code)".to_owned(),
            (HostKind::Codex, false) => r.stdout.trim().chars().take(70).collect(),
            (HostKind::Claude, false) => "(text for the summariser: keep the pointer ids and digests)".to_owned(),
        };
        Ok((ok, shown, ()))
    });
    let mut delivered = Vec::new();
    let order: Vec<&str> = match host {
        HostKind::Codex => vec!["post", "start", "start"],
        HostKind::Claude => vec!["start", "post"],
    };
    for which in order {
        if which == "post" {
            d.step(&format!("postcompact --host {host}"), "continue:true", |d| {
                let r = d.run("postcompact", &["--host", host.as_str()], Some(&post))?;
                let ok = r.status == 0
                    && json_line(&r.stdout).map(|v| v["continue"] == true && v.get("hookSpecificOutput").is_none()).unwrap_or(false);
                Ok((ok, r.stdout.trim().chars().take(70).collect(), ()))
            });
        } else {
            let first = delivered.is_empty();
            let expected = if first { format!("{label} re-entry") } else { "nothing (already delivered)".into() };
            if let Some(Some(text)) = d.step(&format!("session-hook SessionStart(compact) --host {host}"), &expected, |d| {
                let r = d.run("session-hook", &["--host", host.as_str(), "--expect", "SessionStart"], Some(&start))?;
                let text = context_of(&r.stdout);
                let ok = r.status == 0
                    && match (&text, first) {
                        (Some(t), true) if attested => t.contains(snapshot_digest) && !t.contains("UNATTESTED"),
                        (Some(t), true) => t.contains("UNATTESTED"),
                        (None, false) => r.stdout.trim().is_empty(),
                        _ => false,
                    };
                let shown = match &text {
                    Some(t) => format!("additionalContext, {} chars", t.len()),
                    None => "no output".into(),
                };
                Ok((ok, shown, text))
            }) {
                delivered.push(text);
            }
        }
    }
    if delivered.len() != 1 {
        return Err(Error::new(
            codes::DEMO_STEP_FAILED,
            format!("the {label} re-entry was delivered {} times, expected exactly once", delivered.len()),
        ));
    }
    Ok(delivered.remove(0))
}
