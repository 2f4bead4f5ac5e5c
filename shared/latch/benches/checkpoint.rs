//! The check wake-check runs from the last checkpoint, at about 1,000 and
//! 100,000 entries: a checkpoint at n+64, 64 appends, then
//! `Latch::consistency_since_saved` (target: under 10 ms at 100,000); and
//! from an older checkpoint (the last seal within the 200 entries before n,
//! or n-200), which reads a sealed segment too. The same figures are printed by
//! the root package's `cargo bench --bench latch`; this one builds only the
//! latch crate.
//!
//! Run: `cargo bench -p kijito-latch --bench checkpoint [-- SIZES...]`

use kijito_latch::{CheckpointInput, Config, Latch};
use std::os::unix::fs::PermissionsExt;
use std::time::{Duration, Instant};

const APPENDS: u64 = 64;
const RUNS: usize = 20;

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// (from, median): `from` is the latest saved checkpoint (a seal among the
/// appends moves it on).
fn time_check(latch: &Latch, to: u64) -> (u64, Duration) {
    let from = latch.checkpoint_state().expect("state").expect("saved").latest.expect("latest").size;
    let mut runs = Vec::new();
    for _ in 0..RUNS {
        let t = Instant::now();
        let c = latch.consistency_since_saved().expect("consistency").expect("a saved checkpoint");
        runs.push(t.elapsed());
        assert!(c.consistent && c.from_size == from && c.to_size == to, "{c:?}");
    }
    (from, median(runs))
}

fn main() {
    let sizes: Vec<u64> = std::env::args().skip(1).filter_map(|a| a.parse().ok()).collect();
    let sizes = if sizes.is_empty() { vec![1_000, 100_000] } else { sizes };
    println!("entries n  checkpoint_full_ms (at n+64, O(n))  wake_check_ms (n+64 -> n+128)  proof_hashes  wake_check_ms (older checkpoint -> n+64)");
    for n in sizes {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700)).expect("chmod");
        let ws = dir.path().join("ws");
        std::fs::create_dir(&ws).expect("ws");
        let mut config = Config::new(&ws);
        config.heads_dir = Some(dir.path().join("heads"));
        let latch = Latch::open(&config).expect("open");
        // A checkpoint 200 entries before the end, then one at n.
        latch.seed_history(n - 200, 1_700_000_000_000).expect("seed");
        latch.write_checkpoint(1_700_000_000_000, None).expect("checkpoint");
        for i in 0..200 {
            let input = CheckpointInput { next_single_step: Some(format!("to n {i}")), ..Default::default() };
            latch.checkpoint(1_750_000_000_000 + i, &input).expect("append");
        }
        for i in 0..APPENDS {
            let input = CheckpointInput { next_single_step: Some(format!("after {i}")), ..Default::default() };
            latch.checkpoint(1_800_000_000_000 + i, &input).expect("append");
        }
        let (back, from_back) = time_check(&latch, n + APPENDS);
        let t = Instant::now();
        latch.write_checkpoint(1_850_000_000_000, None).expect("checkpoint at n+64");
        let full = t.elapsed();
        for i in 0..APPENDS {
            let input = CheckpointInput { next_single_step: Some(format!("more {i}")), ..Default::default() };
            latch.checkpoint(1_900_000_000_000 + i, &input).expect("append");
        }
        let c = latch.consistency_since_saved().expect("consistency").expect("saved");
        let (near_from, near) = time_check(&latch, n + 2 * APPENDS);
        println!(
            "{n:>9}  {:>32.1}  {:>20.2} (from {near_from})  {:>12}  {:>8.2} (from {back})",
            full.as_secs_f64() * 1e3,
            near.as_secs_f64() * 1e3,
            c.proof_hashes,
            from_back.as_secs_f64() * 1e3
        );
    }
}
