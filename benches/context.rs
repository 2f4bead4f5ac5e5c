//! kijito-context benchmark: a 200 MB Claude Code transcript (the real
//! fixture's lines repeated) and a 200 MB Codex rollout, measured by reading
//! the tail only. Prints the in-process time of `kijito_context::measure`
//! (median of 31 runs), the worst case (no usable line in the last 16 MiB:
//! the bounded maximum read), and the wall time of the real
//! `kijito-context` process when it is built next to this bench.
//! Target: under 20 ms for the 200 MB transcript.
//!
//! Run: `cargo bench --bench context` (optionally `-- <megabytes>`).

use kijito_context::{measure, Host};
use kijito_protocol::ids::AbsPath;
use std::io::Write;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

const RUNS: usize = 31;

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// Write `lines` repeatedly until `bytes`, then `tail` once.
fn build(path: &Path, lines: &[u8], bytes: u64, tail: &[u8]) {
    let mut f = std::io::BufWriter::new(std::fs::File::create(path).expect("create"));
    let mut n = 0u64;
    while n < bytes {
        f.write_all(lines).expect("write");
        n += lines.len() as u64;
    }
    f.write_all(tail).expect("write");
    f.flush().expect("flush");
}

fn time(path: &AbsPath, host: Host) -> (Duration, String) {
    let mut times = Vec::new();
    let mut last = String::new();
    for _ in 0..RUNS {
        let t = Instant::now();
        let m = measure(path, Some(host));
        times.push(t.elapsed());
        last = m.to_json();
    }
    (median(times), last)
}

fn main() {
    let mb: u64 = std::env::args().skip(1).find_map(|a| a.parse().ok()).unwrap_or(200);
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/context");
    let claude = std::fs::read(fixtures.join("claude-transcript.jsonl")).expect("claude fixture");
    let codex = std::fs::read(fixtures.join("codex-rollout.jsonl")).expect("codex fixture");
    let dir = tempfile::tempdir().expect("tempdir");
    let size = mb * 1024 * 1024;

    let t = dir.path().join("claude.jsonl");
    build(&t, &claude, size, &claude);
    let t = AbsPath::from_path(&t).expect("abs");
    let (d, out) = time(&t, Host::Claude);
    println!("kijito-context measure, {mb} MB Claude Code transcript: median {:.3} ms ({out})", ms(d));

    let r = dir.path().join("codex.jsonl");
    build(&r, &codex, size, &codex);
    let r = AbsPath::from_path(&r).expect("abs");
    let (d, out) = time(&r, Host::Codex);
    println!("kijito-context measure, {mb} MB Codex rollout: median {:.3} ms ({out})", ms(d));

    // Worst case: filler only; the reader grows its window to the 16 MiB bound.
    let w = dir.path().join("worst.jsonl");
    let filler = format!("{{\"type\":\"user\",\"message\":{{\"content\":\"{}\"}}}}\n", "x".repeat(4000));
    build(&w, filler.as_bytes(), size, b"");
    let w = AbsPath::from_path(&w).expect("abs");
    let (d, out) = time(&w, Host::Claude);
    println!("kijito-context measure, {mb} MB with no usage line (reads the 16 MiB bound): median {:.3} ms ({out})", ms(d));

    let exe = std::env::current_exe().expect("exe");
    let bin = exe.parent().and_then(Path::parent).map(|p| p.join("kijito-context"));
    match bin.filter(|b| b.is_file()) {
        Some(bin) => {
            let mut times = Vec::new();
            for _ in 0..RUNS {
                let start = Instant::now();
                let o = Command::new(&bin)
                    .args(["--session-id", "bench", "--transcript", t.as_str(), "--host", "claude"])
                    .output()
                    .expect("run");
                times.push(start.elapsed());
                assert!(o.status.success());
            }
            println!("kijito-context process (wall), {mb} MB Claude Code transcript: median {:.3} ms", ms(median(times)));
        }
        None => println!("kijito-context process: not built in this profile (cargo build --release -p kijito-context)"),
    }
}
