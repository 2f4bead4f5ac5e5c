//! wake-check benchmark: the local checks (no --live) on a 10,000-entry
//! latch and a populated data dir (200 sessions' QA files plus the recorded
//! pointer). Prints the in-process time of `wake::run` and the wall time of
//! the real `wake-check --json` process. Target: under 50 ms.
//!
//! Run: `cargo bench --bench wake` (optionally `-- <entries>`).

use kijito_files::private;
use kijito_gate::{Attempt, Pass, Reentry, TranscriptId};
use kijito_latch::{Config, Latch};
use kijito_protocol::clock;
use kijito_protocol::ids::{AbsPath, Digest, MemoryId, MessageId, SessionId};
use kijito_wake as wake;
use std::os::unix::fs::PermissionsExt;
use std::process::Command;
use std::time::{Duration, Instant};

const RUNS: usize = 15;
const SESSIONS: usize = 200;

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn main() {
    let entries: u64 = std::env::args().skip(1).find_map(|a| a.parse().ok()).unwrap_or(10_000);
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700)).expect("chmod");
    let root = std::fs::canonicalize(dir.path()).expect("canonical");
    let ws = root.join("ws");
    let data = root.join("data");
    let qa = data.join("qa");
    std::fs::create_dir(&ws).expect("ws");
    private::ensure_private_dir(&data).expect("data");
    private::ensure_private_dir(&qa).expect("qa");
    let now = clock::now_ms();
    let boot = root.join("boot_id");
    std::fs::write(&boot, "11111111-2222-3333-4444-555555555555\n").expect("boot");
    let mut config = Config::new(&ws);
    config.boot_id_file = boot.clone();
    config.heads_dir = Some(root.join("heads"));
    let latch = Latch::open(&config).expect("open");
    latch.seed_history(entries, now - entries - 60_000).expect("seed");
    // A populated data dir: fresh (claimable) state for many sessions.
    for i in 0..SESSIONS {
        let s = SessionId::parse(&format!("session-{i}")).expect("sid");
        let pass = Pass {
            session_id: s.clone(),
            recorded_at_ms: now as i64 - 60_000,
            pointer_id: MemoryId::new(5).expect("id"),
            lock_message_id: MessageId::new(6).expect("id"),
            pointer_digest: Digest::of(b"p"),
            snapshot_digest: Digest::of(b"s"),
            cold_boot_report_digests: [Digest::of(b"a"), Digest::of(b"b")],
            compaction_nonce: "0123456789abcdef0123456789abcdef".into(),
            transcript: TranscriptId { dev: 1, ino: 2, size: 3, mtime_ms: 4 },
        };
        private::write_atomic(&qa.join(format!("qa-pass.{s}.json")), &pass.to_bytes()).expect("pass");
        private::write_atomic(&qa.join(format!("compaction-resume.{s}.json")), &pass.to_bytes()).expect("ticket");
        let a = Attempt {
            session_id: s.clone(),
            recorded_at_ms: now as i64 - 1000,
            trigger: "auto".into(),
            attested: true,
            reason: "pass_promoted".into(),
            compaction_nonce: Some(pass.compaction_nonce.clone()),
        };
        private::write_atomic(&qa.join(format!("compaction-attempt.{s}.json")), a.to_value().to_string().as_bytes()).expect("attempt");
        let r = Reentry { session_id: s.clone(), claimed_at_ms: now as i64 - 1000, reason: "no_pass".into(), attested: None };
        private::write_atomic(&qa.join(format!("compaction-reentry.{s}.json")), r.to_value().to_string().as_bytes()).expect("reentry");
    }
    let record = format!(
        "{{\"schemaVersion\":2,\"pointerId\":5,\"lockMessageId\":6,\"pointerDigest\":\"{}\",\"snapshotDigest\":\"{}\",\"recordedAtMs\":{}}}",
        Digest::of(b"p"),
        Digest::of(b"s"),
        now - 60_000
    );
    private::write_atomic(&qa.join("current-pointer.json"), record.as_bytes()).expect("record");

    // In process.
    let mut lib = Vec::new();
    let mut mode = String::new();
    for _ in 0..RUNS {
        let mut opts = wake::Options::new(Some(ws.clone()), clock::now_ms());
        opts.data_dir = Some(AbsPath::parse(data.to_str().expect("utf8")).expect("abs"));
        opts.boot_id_file = boot.clone();
        let t = Instant::now();
        let (report, _) = wake::run(&opts, true).expect("run");
        lib.push(t.elapsed());
        mode = report.mode.as_str().to_owned();
    }
    // The real process (spawn + run + exit).
    let bin = env!("CARGO_BIN_EXE_wake-check");
    let mut wall = Vec::new();
    let mut status = None;
    for _ in 0..RUNS {
        let t = Instant::now();
        let out = Command::new(bin)
            .args(["--json", "--workspace", ws.to_str().expect("utf8"), "--data-dir", data.to_str().expect("utf8")])
            .env("MEMORY_LATCH_BOOT_ID_FILE", &boot)
            .env("MEMORY_LATCH_HEADS_DIR", root.join("heads"))
            .env("HOME", &root)
            .env_remove("XDG_CONFIG_HOME")
            .output()
            .expect("spawn");
        wall.push(t.elapsed());
        status = out.status.code();
    }
    println!("wake-check bench: {entries} latch entries, {SESSIONS} sessions x 4 QA files + current-pointer.json, no --live");
    println!("mode {mode}, exit status {status:?}");
    println!("in-process wake::run   median {:.2} ms  min {:.2} ms", ms(median(lib.clone())), ms(*lib.iter().min().expect("runs")));
    println!(
        "wake-check process     median {:.2} ms  min {:.2} ms  (target < 50 ms)",
        ms(median(wall.clone())),
        ms(*wall.iter().min().expect("runs"))
    );
}
