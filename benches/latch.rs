//! memory-latch benchmark: append (checkpoint) and full verify at 1,000,
//! 10,000 and 100,000 entries. Target: an append at 100,000 entries within
//! 3x of one at 1,000 (the live part is bounded; history is sealed).
//!
//! Run: `cargo bench --bench latch`

use kijito_latch::{merkle, CheckpointInput, Config, Latch};
use std::os::unix::fs::PermissionsExt;
use std::time::{Duration, Instant};

const APPENDS: u64 = 64;
const VERIFIES: usize = 3;

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    // Optional sizes on the command line (`cargo bench --bench latch -- 1000`).
    let sizes: Vec<u64> = std::env::args().skip(1).filter_map(|a| a.parse().ok()).collect();
    let sizes = if sizes.is_empty() { vec![1_000, 10_000, 100_000] } else { sizes };
    println!("entries    seed_s   append_median_ms  append_mean_ms  verify_ms  verify_per_entry_us  verify_fast_ms  file_mb");
    let mut base: Option<f64> = None;
    for n in sizes {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700)).expect("chmod");
        let ws = dir.path().join("ws");
        std::fs::create_dir(&ws).expect("ws");
        let mut config = Config::new(&ws);
        config.heads_dir = Some(dir.path().join("heads"));
        let latch = Latch::open(&config).expect("open");
        let t = Instant::now();
        latch.seed_history(n, 1_700_000_000_000).expect("seed");
        let seed = t.elapsed();
        // The checkpoint seen before the sleep, at n entries (O(n), once).
        let t = Instant::now();
        latch.write_checkpoint(1_750_000_000_000, None).expect("checkpoint");
        let checkpoint_full = t.elapsed();
        let mut appends = Vec::new();
        for i in 0..APPENDS {
            let input =
                CheckpointInput { next_single_step: Some(format!("bench append {i}")), decisions: vec!["d".into()], ..Default::default() };
            let t = Instant::now();
            latch.checkpoint(1_800_000_000_000 + i, &input).expect("append");
            appends.push(t.elapsed());
        }
        let mean = appends.iter().sum::<Duration>() / APPENDS as u32;
        let med = median(appends);
        let mut verifies = Vec::new();
        for _ in 0..VERIFIES {
            let t = Instant::now();
            let r = latch.verify();
            verifies.push(t.elapsed());
            assert!(r.trusted, "{:?}", r.findings.first());
            assert_eq!(r.entries, n + APPENDS);
        }
        let v = median(verifies);
        let mut fast = Vec::new();
        for _ in 0..VERIFIES {
            let t = Instant::now();
            let r = latch.verify_fast();
            fast.push(t.elapsed());
            assert!(r.trusted && r.entries == n + APPENDS);
        }
        let f = median(fast);
        // wake-check's consistency check from that checkpoint to now (n + 64):
        // the saved compact range, the entries since it, the RFC 6962 proof.
        let mut wake = Vec::new();
        for _ in 0..20 {
            let t = Instant::now();
            let c = latch.consistency_since_saved().expect("consistency").expect("a saved checkpoint");
            wake.push(t.elapsed());
            assert!(c.consistent && c.from_size == n && c.to_size == n + APPENDS, "{c:?}");
        }
        let wake = median(wake);
        // RFC 6962: a consistency proof from the tree head at size n (taken
        // before the appends) to now: produce it (O(n)) and check it (O(log n)).
        let leaves: Vec<[u8; 32]> = (0..n + APPENDS).map(|i| merkle::leaf_hash(&i.to_le_bytes())).collect();
        let old_root = merkle::root(&leaves[..n as usize]);
        let new_root = merkle::root(&leaves);
        let t = Instant::now();
        let proof = merkle::consistency_proof(n as usize, &leaves).expect("proof");
        let prove = t.elapsed();
        let t = Instant::now();
        let mut ok = true;
        for _ in 0..1000 {
            ok &= merkle::verify_consistency(n, n + APPENDS, &old_root, &new_root, &proof);
        }
        let check = t.elapsed() / 1000;
        assert!(ok);
        let bytes: u64 = walk(dir.path());
        println!(
            "{n:>7}  {:>8.2}  {:>16.3}  {:>14.3}  {:>9.1}  {:>19.2}  {:>14.1}  {:>7.1}",
            seed.as_secs_f64(),
            med.as_secs_f64() * 1e3,
            mean.as_secs_f64() * 1e3,
            v.as_secs_f64() * 1e3,
            v.as_secs_f64() * 1e6 / (n + APPENDS) as f64,
            f.as_secs_f64() * 1e3,
            bytes as f64 / 1e6
        );
        println!(
            "         consistency proof {n} -> {}: {} hashes, produce {:.1} ms, check {:.1} us",
            n + APPENDS,
            proof.len(),
            prove.as_secs_f64() * 1e3,
            check.as_secs_f64() * 1e6
        );
        println!(
            "         checkpoint at {n} (full, O(n)): {:.1} ms; wake consistency check {n} -> {}: {:.2} ms (target < 10 ms)",
            checkpoint_full.as_secs_f64() * 1e3,
            n + APPENDS,
            wake.as_secs_f64() * 1e3
        );
        let m = med.as_secs_f64();
        match base {
            None => base = Some(m),
            Some(b) => println!("         append ratio vs first size: {:.2}x (target <= 3x)", m / b),
        }
    }
}

fn walk(p: &std::path::Path) -> u64 {
    let mut total = 0;
    if let Ok(rd) = std::fs::read_dir(p) {
        for e in rd.flatten() {
            match e.metadata() {
                Ok(m) if m.is_dir() => total += walk(&e.path()),
                Ok(m) => total += m.len(),
                Err(_) => {}
            }
        }
    }
    total
}
