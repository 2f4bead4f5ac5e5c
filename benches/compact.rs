//! tmux adapter overhead: from the Stop hook's turn-ended record to the
//! compaction request reaching the host, against a real tmux server on a
//! private socket whose pane runs a dummy host (`cat`, writing what is typed
//! to a file). Each round: a fresh pass, a running turn, a real
//! `kijito-compact request` (which starts the real detached worker); then
//! the clock starts, the turn-ended record is written (what the Stop hook
//! does) and the clock stops when the line `/compact` typed by the worker's
//! `send-keys -l /compact` + `send-keys Enter` arrives at the host (the
//! host's own compaction time is not counted). A second figure runs the real
//! `session-hook --expect Stop` process instead of the library write (when
//! that binary is built next to `kijito-compact`).
//!
//! The worker's deliberate settle time after Stop (1 s) and its gap before
//! Enter (0.3 s), host requirements of the Codex TUI, are set to 0 here:
//! they are not overhead.
//!
//! `cargo bench --bench compact` (N rounds, default 30: `KIJITO_BENCH_ROUNDS`).
//! Goal: median under 100 ms.
#![allow(clippy::unwrap_used)]

use kijito_compact::trigger::{self, Pin, TurnState, Via};
use kijito_files::private;
use kijito_gate::{Pass, QaDir};
use kijito_protocol::ids::{AbsPath, Digest, MemoryId, MessageId, SessionId};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const SESSION: &str = "bench-compact-0001";
const COMPACT: &str = env!("CARGO_BIN_EXE_kijito-compact");

fn tmux(sock: &Path, args: &[&str]) -> String {
    let out = Command::new("tmux").arg("-S").arg(sock).args(args).stdin(Stdio::null()).output().unwrap();
    assert!(out.status.success(), "tmux {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

fn stat(pid: u32) -> (u32, u64) {
    let t = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let f: Vec<&str> = t[t.rfind(')').unwrap() + 1..].split_whitespace().collect();
    (f[1].parse().unwrap(), f[19].parse().unwrap())
}

/// The child of `parent` (bounded scan of /proc).
fn child_of(parent: u32) -> Option<u32> {
    std::fs::read_dir("/proc")
        .ok()?
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .find(|p| std::fs::read_to_string(format!("/proc/{p}/stat")).is_ok_and(|_| stat(*p).0 == parent))
}

fn wait_until(secs: u64, mut cond: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + Duration::from_secs(secs);
    while Instant::now() < end {
        if cond() {
            return true;
        }
        std::thread::sleep(Duration::from_micros(200));
    }
    false
}

fn write_pass(qa: &QaDir, s: &SessionId, transcript: &AbsPath, n: usize) {
    let dg = |c: char| Digest::parse(&c.to_string().repeat(64)).unwrap();
    let pass = Pass {
        session_id: s.clone(),
        recorded_at_ms: kijito_gate::now_ms(),
        pointer_id: MemoryId::parse("7").unwrap(),
        lock_message_id: MessageId::parse("8").unwrap(),
        pointer_digest: dg('a'),
        snapshot_digest: dg('b'),
        cold_boot_report_digests: [dg('c'), dg('d')],
        compaction_nonce: format!("{:032x}", 0xbe00 + n),
        transcript: kijito_gate::transcript_identity(transcript).unwrap(),
    };
    private::write_atomic(&qa.pass(s), &pass.to_bytes()).unwrap();
}

fn median(mut v: Vec<f64>) -> (f64, f64, f64) {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    (v[v.len() / 2], v[v.len() * 9 / 10], v[v.len() - 1])
}

fn main() {
    if Command::new("tmux").arg("-V").output().map(|o| !o.status.success()).unwrap_or(true) {
        println!("compact: SKIP (tmux not installed)");
        return;
    }
    let rounds: usize = std::env::var("KIJITO_BENCH_ROUNDS").ok().and_then(|v| v.parse().ok()).unwrap_or(30).clamp(3, 1000);
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    std::fs::set_permissions(&root, std::os::unix::fs::PermissionsExt::from_mode(0o700)).unwrap();
    let data_path = root.join("data");
    private::ensure_private_dir(&data_path).unwrap();
    let data = AbsPath::parse(data_path.to_str().unwrap()).unwrap();
    let qa = QaDir::open(&data).unwrap();
    let s = SessionId::parse(SESSION).unwrap();
    let transcript = data.join("t.jsonl").unwrap();
    std::fs::write(transcript.as_path(), b"{}\n").unwrap();
    let sock = root.join("tmux.sock");
    let typed = root.join("typed.txt");
    let host = format!("sh -c 'exec cat > {}'; sleep 600", typed.display());
    tmux(&sock, &["-f", "/dev/null", "new-session", "-d", "-x", "100", "-y", "20", &host]);
    struct Kill(PathBuf);
    impl Drop for Kill {
        fn drop(&mut self) {
            let _ = Command::new("tmux").arg("-S").arg(&self.0).arg("kill-server").status();
        }
    }
    let _kill = Kill(sock.clone());
    let pane_pid: u32 = tmux(&sock, &["display-message", "-p", "-t", "%0", "#{pane_pid}"]).parse().unwrap();
    let mut host_pid = None;
    assert!(wait_until(10, || {
        host_pid = child_of(pane_pid).filter(|p| std::fs::read_link(format!("/proc/{p}/exe")).is_ok_and(|e| e.ends_with("cat")));
        host_pid.is_some()
    }));
    let host_pid = host_pid.unwrap();
    let pin = Pin {
        session_id: s.clone(),
        via: Via::Tmux {
            socket: AbsPath::parse(sock.to_str().unwrap()).unwrap(),
            pane: "%0".into(),
            host_pid,
            host_start: stat(host_pid).1,
            tmux: None,
        },
        pinned_at_ms: kijito_gate::now_ms(),
    };
    trigger::write_pin(&qa, &pin).unwrap();
    let hook = Path::new(COMPACT).parent().unwrap().join("session-hook");
    let stop_stdin = format!(r#"{{"session_id":"{SESSION}","hook_event_name":"Stop","stop_hook_active":false}}"#);

    let mut lib = Vec::new();
    let mut via_hook = Vec::new();
    for n in 0..rounds * 2 {
        let use_hook = n % 2 == 1;
        if use_hook && !hook.is_file() {
            continue;
        }
        write_pass(&qa, &s, &transcript, n);
        trigger::record_turn(&qa, &s, TurnState::Running, kijito_gate::now_ms()).unwrap();
        let before = std::fs::metadata(&typed).map(|m| m.len()).unwrap_or(0);
        let out = Command::new(COMPACT)
            .args(["request", "--session-id", SESSION, "--data-dir", data.as_str()])
            .env("KIJITO_COMPACT_CLAIM_WAIT_MS", "100")
            // The settle time after Stop is a host requirement, not overhead.
            .env("KIJITO_COMPACT_SETTLE_MS", "0")
            .env("KIJITO_COMPACT_ENTER_GAP_MS", "0")
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        // Let the worker start and reach its idle poll.
        std::thread::sleep(Duration::from_millis(150));
        let start = Instant::now();
        if use_hook {
            let mut c = Command::new(&hook)
                .args(["--host", "claude", "--expect", "Stop", "--data-dir", data.as_str()])
                .stdin(Stdio::piped())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap();
            use std::io::Write;
            c.stdin.take().unwrap().write_all(stop_stdin.as_bytes()).unwrap();
            c.wait().unwrap();
        } else {
            trigger::record_turn(&qa, &s, TurnState::Ended, kijito_gate::now_ms()).unwrap();
        }
        assert!(wait_until(10, || std::fs::metadata(&typed).map(|m| m.len()).unwrap_or(0) >= before + 9), "nothing typed");
        let ms = start.elapsed().as_secs_f64() * 1000.0;
        if use_hook {
            via_hook.push(ms)
        } else {
            lib.push(ms)
        }
        // The worker times out (no claim) and finishes before the next round.
        assert!(wait_until(10, || trigger::read_request(&qa, &s).ok().flatten().is_some_and(|r| r.state.is_final())));
        let _ = kijito_gate::invalidate(&qa, &s);
    }
    let typed_text = std::fs::read_to_string(&typed).unwrap();
    assert!(typed_text.lines().all(|l| l == "/compact"), "only /compact was typed: {typed_text:?}");
    let (m, p90, max) = median(lib);
    println!("compact: tmux adapter, turn-ended record -> '/compact'+Enter at the host: median {m:.1} ms, p90 {p90:.1} ms, max {max:.1} ms ({rounds} rounds; goal median < 100 ms)");
    if !via_hook.is_empty() {
        let (m, p90, max) = median(via_hook);
        println!("compact: tmux adapter, Stop hook process start -> '/compact'+Enter at the host: median {m:.1} ms, p90 {p90:.1} ms, max {max:.1} ms ({rounds} rounds)");
    }
}
