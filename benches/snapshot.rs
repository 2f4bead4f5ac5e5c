//! Benchmark: `pointer-snapshot` (the real binary, bench profile = release)
//! against a real kijito-local with 64 current anchors and a fault rule
//! adding 20 ms to every memory GET. Prints the wall time of each verifier
//! run and the median. Target: at most 300 ms (sequential fetching would
//! take about 64 x 20 ms = 1.3 s).
//!
//! Run: `cargo bench --bench snapshot`

#[path = "../tests/support/mod.rs"]
mod support;
use support::snapshot as support_snapshot;

use serde_json::{json, Value};
use std::time::Instant;
use support_snapshot::World;

const ANCHORS: usize = 64;
const DELAY_MS: u64 = 20;
const RUNS: usize = 7;

fn main() {
    let world = World::start();
    let seeded = world.seed(ANCHORS, 0);
    // Every memory GET (the pointer and each anchor) is 20 ms slower.
    let ids = std::iter::once(seeded.pointer_id).chain(seeded.current.iter().map(|(id, _)| *id));
    let rules: Vec<Value> =
        ids.map(|id| json!({"method": "GET", "path": format!("/api/memory/{id}"), "action": {"type": "delay", "ms": DELAY_MS}})).collect();
    world.server.set_faults(&Value::Array(rules));

    let mut times = Vec::new();
    for run in 0..RUNS {
        let report = world.report_path(&format!("bench-{run}.json"));
        let start = Instant::now();
        let out = world.snapshot_to(&seeded, &report, &[]);
        let elapsed = start.elapsed();
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
        times.push(elapsed.as_secs_f64() * 1000.0);
        println!("run {run}: {:.1} ms", elapsed.as_secs_f64() * 1000.0);
    }
    let mut sorted = times.clone();
    sorted.sort_by(|a, b| a.total_cmp(b));
    let median = sorted[sorted.len() / 2];
    println!(
        "pointer-snapshot, {ANCHORS} current anchors, +{DELAY_MS} ms per memory GET: median {median:.1} ms, min {:.1} ms, max {:.1} ms over {RUNS} runs (target <= 300 ms; sequential ~{} ms)",
        sorted[0],
        sorted[sorted.len() - 1],
        (ANCHORS as u64 + 1) * DELAY_MS
    );
}
