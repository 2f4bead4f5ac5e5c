//! Benchmark: the `kijito_recall` MCP tool (FTS5 search, loading and
//! rendering the hits, the JSON-RPC answer) over generated stores of 10,000
//! and 100,000 memories, plus the medians of `kijito_remember`,
//! `kijito_correct` and `kijito_fade` (each one fsynced transaction) on the
//! larger store, and recall right after a write (its document counts
//! counted again). Calls go through `Mcp::handle_line`, the function the stdio
//! loop calls for every line. Prints medians and p90s; asserts only that
//! every call answered without an error.
//!
//! Run: `cargo bench -p kijito-server --bench recall`
//! (`KIJITO_BENCH_SIZES=10000,100000`, `KIJITO_BENCH_QUERIES=200` override.)

use kijito_server::mcp::{Mcp, Options};
use kijito_server::store::{NewMemory, Store};
use serde_json::{json, Value};
use std::os::unix::fs::PermissionsExt;
use std::time::{Duration, Instant};

/// A deterministic generator (xorshift64*), so every run sees the same store.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

const VOCABULARY: usize = 20_000;
const WORDS_PER_MEMORY: usize = 24;

/// Word `i` of a pseudo-vocabulary.
fn word(i: usize) -> String {
    const SYLLABLES: [&str; 16] = ["ka", "to", "ri", "mu", "se", "no", "ha", "ji", "pe", "lo", "zu", "fi", "da", "vo", "ne", "sa"];
    let mut n = i;
    let mut w = String::new();
    loop {
        w.push_str(SYLLABLES[n % 16]);
        n /= 16;
        if n == 0 {
            break;
        }
    }
    w
}

/// A log-uniform pick (Zipf-like, s = 1): word 0 is in about 7 % of the
/// word slots, so in most memories; high words are rare.
fn zipf_word(rng: &mut Rng) -> String {
    let u = (rng.next() >> 11) as f64 / (1u64 << 53) as f64;
    word(((VOCABULARY as f64).powf(u) as usize).saturating_sub(1).min(VOCABULARY - 1))
}

fn memory(rng: &mut Rng, i: usize) -> NewMemory {
    let content: Vec<String> = (0..WORDS_PER_MEMORY).map(|_| zipf_word(rng)).collect();
    NewMemory {
        kind: "note".into(),
        scope: "project".into(),
        project: if i.is_multiple_of(10) { "Other".into() } else { "Codex".into() },
        persona: "codex".into(),
        status: "active".into(),
        source: "mcp".into(),
        created_ms: 1_700_000_000_000 + i as i64,
        importance: 0.5,
        confidence: 1.0,
        evidence: 1,
        basis: "observed".into(),
        content: content.join(" "),
    }
}

fn call(mcp: &Mcp, id: u64, name: &str, arguments: Value) -> (Duration, String) {
    let line = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": name, "arguments": arguments}}).to_string();
    let start = Instant::now();
    let answer = mcp.handle_line(line.as_bytes()).expect("an answer");
    let took = start.elapsed();
    assert_eq!(answer["result"]["isError"], false, "{name}: {answer}");
    (took, answer["result"]["content"][0]["text"].as_str().unwrap_or_default().to_owned())
}

fn stats(label: &str, mut times: Vec<Duration>) {
    times.sort_unstable();
    let at = |q: f64| times[((times.len() as f64 * q) as usize).min(times.len() - 1)];
    println!(
        "{label:<58} median {:>8.3} ms   p90 {:>8.3} ms   ({} calls)",
        at(0.5).as_secs_f64() * 1e3,
        at(0.9).as_secs_f64() * 1e3,
        times.len()
    );
}

fn main() {
    let sizes: Vec<usize> = std::env::var("KIJITO_BENCH_SIZES")
        .ok()
        .map(|s| s.split(',').filter_map(|n| n.trim().parse().ok()).collect())
        .unwrap_or_else(|| vec![10_000, 100_000]);
    let queries: usize = std::env::var("KIJITO_BENCH_QUERIES").ok().and_then(|n| n.parse().ok()).unwrap_or(200);
    for &size in &sizes {
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700)).expect("chmod");
        let db = dir.path().join("kijito.db");
        let store = Store::open(&db).expect("store");
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ size as u64);
        let start = Instant::now();
        for chunk in (0..size).collect::<Vec<_>>().chunks(10_000) {
            let batch: Vec<NewMemory> = chunk.iter().map(|&i| memory(&mut rng, i)).collect();
            store.create_memories(&batch).expect("seed");
        }
        // The pointer the skills look for.
        store
            .create_memory(&NewMemory {
                content: "CODEX_CURRENT_STATE_POINTER_V1 RESUME NOW: the benchmark pointer".into(),
                ..memory(&mut rng, 1)
            })
            .expect("pointer");
        println!(
            "store of {size} memories seeded in {:.1} s ({} MiB)",
            start.elapsed().as_secs_f64(),
            std::fs::metadata(&db).map(|m| m.len() >> 20).unwrap_or(0)
        );
        // A second connection for the exact FTS5 ranking (the query before the
        // weightless-word rule), to show both on the same store.
        let exact = Store::open(&db).expect("second store");
        let options = Options {
            pointer_id: None,
            lock_message_id: None,
            persona: "codex".into(),
            project: "Codex".into(),
            reap_after_ms: 21_600_000,
            workspace: None,
            data_dir: None,
            live: None,
        };
        let mcp = Mcp::new(store, options);

        // Warm-up (page cache, statement cache).
        for i in 0..20 {
            call(&mcp, i, "kijito_recall", json!({"query": format!("{} {}", zipf_word(&mut rng), zipf_word(&mut rng))}));
        }
        let mut common = Vec::new();
        let mut rare = Vec::new();
        let mut full = Vec::new();
        let mut pointer = Vec::new();
        let mut commonest = Vec::new();
        let mut pointer_common = Vec::new();
        for i in 0..queries {
            let id = 100 + i as u64;
            // Two Zipf-like words: often common ones.
            common.push(call(&mcp, id, "kijito_recall", json!({"query": format!("{} {}", zipf_word(&mut rng), zipf_word(&mut rng))})).0);
            // Two uniformly chosen words: mostly rare ones.
            rare.push(
                call(
                    &mcp,
                    id,
                    "kijito_recall",
                    json!({"query": format!("{} {}", word(rng.below(VOCABULARY)), word(rng.below(VOCABULARY)))}),
                )
                .0,
            );
            full.push(
                call(&mcp, id, "kijito_recall", json!({"query": format!("{} {}", zipf_word(&mut rng), zipf_word(&mut rng)), "full": true}))
                    .0,
            );
            let (took, text) = call(
                &mcp,
                id,
                "kijito_recall",
                json!({"query": "CODEX_CURRENT_STATE_POINTER_V1 RESUME NOW", "scope": "project", "project": "Codex", "full": true}),
            );
            assert!(text.contains("the benchmark pointer"), "{text}");
            pointer.push(took);
            // The two commonest words (each in most memories): the worst case.
            commonest.push(call(&mcp, id, "kijito_recall", json!({"query": format!("{} {}", word(0), word(1))})).0);
            // The pointer's sentinel with the two commonest words (as if
            // RESUME and NOW were in most memories): the pointer still ranks first.
            let (took, text) = call(
                &mcp,
                id,
                "kijito_recall",
                json!({"query": format!("CODEX_CURRENT_STATE_POINTER_V1 {} {}", word(0), word(1)), "limit": 1}),
            );
            assert!(text.contains("· CODEX_CURRENT_STATE_POINTER_V1 RESUME NOW: the benchmark"), "{text}");
            pointer_common.push(took);
        }
        // One word, from the commonest down: words 0-1 are in most memories
        // (weightless), the others are weighted and ranked over every match.
        for w in [0usize, 1, 2, 4, 8, 32] {
            let times = (0..queries).map(|i| call(&mcp, 50_000 + i as u64, "kijito_recall", json!({"query": word(w)})).0).collect();
            stats(&format!("{size}: kijito_recall, one word: word {w}"), times);
        }
        let phrases = vec![word(0), word(1)];
        let times = (0..queries.min(50))
            .map(|_| {
                let start = Instant::now();
                let hits = exact.recall_exact(&phrases, None, Some("Codex"), 10).expect("exact");
                assert_eq!(hits.len(), 10);
                start.elapsed()
            })
            .collect();
        stats(&format!("{size}: exact FTS5 ranking, the 2 commonest words (store only)"), times);
        let times = (0..queries.min(50))
            .map(|_| {
                let start = Instant::now();
                let hits = exact.recall(&phrases, None, Some("Codex"), 10).expect("recall");
                assert_eq!(hits.len(), 10);
                start.elapsed()
            })
            .collect();
        stats(&format!("{size}: Store::recall, the 2 commonest words (store only)"), times);
        stats(&format!("{size}: kijito_recall, 2 Zipf words, limit 10"), common);
        stats(&format!("{size}: kijito_recall, 2 uniform words, limit 10"), rare);
        stats(&format!("{size}: kijito_recall, 2 Zipf words, full, limit 10"), full);
        stats(&format!("{size}: kijito_recall, the pointer query, full"), pointer);
        stats(&format!("{size}: kijito_recall, the 2 commonest words, limit 10"), commonest);
        stats(&format!("{size}: kijito_recall, sentinel + the 2 commonest words"), pointer_common);

        // The same queries each right after a write (a new memory): the
        // document counts recall keeps for an unchanged index are counted again.
        let cold = queries.min(100);
        for (label, query) in
            [("the 2 commonest words", format!("{} {}", word(0), word(1))), ("one word: word 4", word(4)), ("one word: word 8", word(8))]
        {
            let times = (0..cold)
                .map(|i| {
                    call(&mcp, 70_000 + i as u64, "kijito_remember", json!({"content": format!("cold write {i} {}", zipf_word(&mut rng))}));
                    call(&mcp, 80_000 + i as u64, "kijito_recall", json!({"query": query})).0
                })
                .collect();
            stats(&format!("{size}: kijito_recall after a write, {label}"), times);
        }

        let writes = queries.min(100);
        let mut remember = Vec::new();
        let mut correct = Vec::new();
        let mut fade = Vec::new();
        for i in 0..writes {
            let id = 10_000 + i as u64;
            let (took, text) = call(&mcp, id, "kijito_remember", json!({"content": format!("bench anchor {i} {}", zipf_word(&mut rng))}));
            remember.push(took);
            let new: u64 = text.trim_start_matches("Created [").trim_end_matches(']').parse().expect("id");
            correct.push(call(&mcp, id, "kijito_correct", json!({"id": new, "content": format!("bench anchor {i}, corrected")})).0);
            fade.push(call(&mcp, id, "kijito_fade", json!({"id": 1 + rng.below(size) as u64})).0);
        }
        stats(&format!("{size}: kijito_remember"), remember);
        stats(&format!("{size}: kijito_correct"), correct);
        stats(&format!("{size}: kijito_fade"), fade);
        drop(mcp);
        drop(exact);
        drop(dir);
    }
}
