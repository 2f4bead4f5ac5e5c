//! Adapter overhead of `kijito-compact codex`: from the end of a turn
//! (turn/completed written by the app-server) to the adapter's
//! thread/compact/start reaching the app-server, when a request is pending
//! for that pinned thread. Both instants are taken by the stand-in app-server
//! (kijito_testkit::codex, its turns timed; one monotonic clock), so the figure holds the
//! two pipe hops, the adapter's parsing and its checks of the pin, request,
//! pass and kill switch files; the host's own compaction time is not in it.
//! Each round: a fresh pass (restored bytes of a real `qa-gate record`), a
//! request, a turn; the real precompact/postcompact hooks claim during the
//! compaction turn, and the adapter records `compacted` before the next round.
//!
//! `cargo bench --bench compact_codex` (release binaries cargo built);
//! `KIJITO_BENCH_BIN_DIR=<prefix>/codex/bin` measures an installed root.
//! Target: median under 100 ms.
#![allow(clippy::unwrap_used)]

use kijito_compact::trigger::{self, Pin, RequestState, Via};
use kijito_gate::QaDir;
use kijito_protocol::ids::{AbsPath, SessionId};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const ROUNDS: usize = 40;

fn main() {
    let bin: PathBuf = std::env::var_os("KIJITO_BENCH_BIN_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_BIN_EXE_kijito-local")).parent().unwrap().to_owned());
    // A real world: the demo leaves a seeded store's reports and transcript.
    let out = Command::new(bin.join("kijito-local")).args(["demo", "--keep"]).output().expect("demo");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "demo failed:\n{text}");
    let dir = PathBuf::from(text.lines().find_map(|l| l.strip_prefix("kept ")).expect("kept dir"));
    let data = dir.join("bench-data");
    std::fs::create_dir(&data).unwrap();
    std::fs::set_permissions(&data, std::fs::Permissions::from_mode(0o700)).unwrap();
    let fd = dir.join("standin-codex");
    std::fs::create_dir(&fd).unwrap();
    let log = fd.join("server.jsonl");

    let mut child = Command::new(bin.join("kijito-compact"))
        .args(["codex", "--stdio-client", "--codex", kijito_testkit::codex::STANDIN, "--data-dir", data.to_str().unwrap()])
        .env("STANDIN_DIR", &fd)
        .env("STANDIN_TURN_MS", "5")
        .env("STANDIN_COMPACT_MS", "20")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("kijito-compact codex");
    let mut to = child.stdin.take().unwrap();
    let mut from = BufReader::new(child.stdout.take().unwrap());
    let mut read_until = |what: &str, pred: &dyn Fn(&Value) -> bool| -> Value {
        for _ in 0..1000 {
            let mut line = String::new();
            assert!(from.read_line(&mut line).unwrap() > 0, "adapter closed while waiting for {what}");
            let v: Value = serde_json::from_str(&line).unwrap();
            if pred(&v) {
                return v;
            }
        }
        panic!("no {what}")
    };
    writeln!(to, "{}", json!({"id": 1, "method": "thread/start", "params": {}})).unwrap();
    let thread = read_until("thread", &|v| v["id"] == 1)["result"]["thread"]["id"].as_str().unwrap().to_owned();
    let s = SessionId::parse(&thread).unwrap();
    let env: Value = serde_json::from_slice(&std::fs::read(fd.join("env.json")).unwrap()).unwrap();

    // The pass for this thread, recorded once for real; restored each round.
    let report: Value = serde_json::from_slice(&std::fs::read(dir.join("data/boot-1.json")).unwrap()).unwrap();
    let transcript = dir.join("transcript.jsonl");
    let record = Command::new(bin.join("qa-gate"))
        .args(["record", "--session-id", &thread, "--transcript", transcript.to_str().unwrap(), "--data-dir", data.to_str().unwrap()])
        .args(["--pointer-id", &report["pointerId"].to_string(), "--pointer-digest", report["pointerDigest"].as_str().unwrap()])
        .args([
            "--cold-boot-report",
            dir.join("data/boot-1.json").to_str().unwrap(),
            "--cold-boot-report",
            dir.join("data/boot-2.json").to_str().unwrap(),
        ])
        .output()
        .expect("record");
    assert!(record.status.success(), "record failed: {}", String::from_utf8_lossy(&record.stderr));
    let qa = QaDir::open(&AbsPath::parse(data.to_str().unwrap()).unwrap()).unwrap();
    let pass = std::fs::read(qa.pass(&s)).unwrap();
    let via = Via::CodexAppServer {
        adapter_id: env["KIJITO_COMPACT_ADAPTER_ID"].as_str().unwrap().into(),
        socket: AbsPath::parse(env["KIJITO_COMPACT_SOCKET"].as_str().unwrap()).unwrap(),
    };
    trigger::write_pin(&qa, &Pin { session_id: s.clone(), via, pinned_at_ms: kijito_gate::now_ms() }).unwrap();

    let hook_stdin = |event: &str| {
        format!(
            r#"{{"session_id":"{thread}","turn_id":"t","transcript_path":"{}","cwd":"{}","hook_event_name":"{event}","model":"m","trigger":"manual"}}"#,
            transcript.display(),
            dir.display()
        )
    };
    let run_hook = |name: &str, event: &str| {
        let mut c = Command::new(bin.join(name))
            .args(["--host", "codex", "--data-dir", data.to_str().unwrap()])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        c.stdin.take().unwrap().write_all(hook_stdin(event).as_bytes()).unwrap();
        assert!(c.wait().unwrap().success());
    };
    let mut lat = vec![];
    for round in 0..ROUNDS {
        std::fs::write(qa.pass(&s), &pass).unwrap();
        std::fs::set_permissions(qa.pass(&s), std::fs::Permissions::from_mode(0o600)).unwrap();
        for f in [qa.request(&s), qa.attempt_claimed(&s), qa.reentry(&s), qa.ticket_consumed(&s)] {
            let _ = std::fs::remove_file(f);
        }
        trigger::create_request(&qa, &s, kijito_gate::now_ms()).unwrap();
        let id = 100 + round;
        writeln!(to, "{}", json!({"id": id, "method": "turn/start", "params": {"threadId": thread, "input": []}})).unwrap();
        read_until("compaction item", &|v| v["method"] == "item/started" && v["params"]["item"]["type"] == "contextCompaction");
        run_hook("precompact", "PreCompact");
        run_hook("postcompact", "PostCompact");
        read_until("compaction turn/completed", &|v| {
            v["method"] == "turn/completed" && v["params"]["turn"]["id"].as_str().is_some_and(|t| t.starts_with("compact-"))
        });
        let end = Instant::now() + Duration::from_secs(10);
        loop {
            let r = trigger::read_request(&qa, &s).unwrap().unwrap();
            if matches!(r.state, RequestState::Compacted { attested: true, .. }) {
                break;
            }
            assert!(Instant::now() < end, "round {round}: request stayed {:?}", r.state);
            std::thread::sleep(Duration::from_millis(2));
        }
        // From the server's log: this round's user turn/completed out -> thread/compact/start in.
        let msgs: Vec<Value> = std::fs::read_to_string(&log).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        let start = msgs.iter().rposition(|m| m["dir"] == "in" && m["msg"]["id"] == id).unwrap();
        let done = msgs[start..].iter().find(|m| m["dir"] == "out" && m["msg"]["method"] == "turn/completed").unwrap();
        let comp = msgs[start..].iter().find(|m| m["dir"] == "in" && m["msg"]["method"] == "thread/compact/start").unwrap();
        lat.push((comp["t"].as_f64().unwrap() - done["t"].as_f64().unwrap()) * 1000.0);
    }
    drop(to);
    let _ = child.wait();
    lat.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let median = lat[lat.len() / 2];
    let p90 = lat[lat.len() * 9 / 10];
    println!(
        "compact_codex: turn/completed -> thread/compact/start through the adapter, {} rounds: median {median:.2} ms, p90 {p90:.2} ms, max {:.2} ms (target: median < 100 ms)",
        lat.len(),
        lat[lat.len() - 1]
    );
    let _ = std::fs::remove_dir_all(&dir);
    assert!(median < 100.0, "median {median:.2} ms is over the 100 ms target");
}
