//! The flight recorder's cost per line (docs/protocol.md §13): one
//! `kijito_files::journal::append` (open O_APPEND, flock, read the last
//! line, hash it, one write) as a hook makes it, per event kind a hook
//! writes, on a journal that already holds `PREFILL` lines. Prints the
//! median and p90 per append in microseconds.
//!
//! `cargo bench -p kijito-files --bench journal_append`
#![allow(clippy::unwrap_used)]

use kijito_files::journal::{self, Kind};
use kijito_protocol::ids::SessionId;
use serde_json::json;
use std::time::{Duration, Instant};

const ROUNDS: usize = 2000;
const PREFILL: usize = 1000;

fn median_p90(mut v: Vec<Duration>) -> (f64, f64) {
    v.sort();
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    (us(v[v.len() / 2]), us(v[v.len() * 9 / 10]))
}

fn main() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    std::fs::create_dir(&data).unwrap();
    let s = SessionId::parse("bench-session").unwrap();
    let decision = json!({"tool":"Bash","decision":"deny","code":"policy_consent_required","rules":["shell_delete"],"risk":"medium","latch_mode":"normal","summary":"rm -rf build"});
    for _ in 0..PREFILL {
        journal::append(&data, &s, Kind::ToolDecision, decision.clone()).unwrap();
    }
    let kinds = [
        ("tool_decision (PreToolUse)", Kind::ToolDecision, decision.clone()),
        ("prompt (UserPromptSubmit)", Kind::Prompt, json!({"length": 42, "sha256": journal::text_hash("x"), "subagent": false})),
        ("precompact (PreCompact)", Kind::Precompact, json!({"attested": true, "reason": "pass_promoted", "trigger": "manual"})),
        (
            "delivery (SessionStart)",
            Kind::Delivery,
            json!({"hook":"SessionStart","attested":true,"reason":"pass_promoted","pointer_id":3,"pointer_digest":"a".repeat(64),"snapshot_digest":"b".repeat(64)}),
        ),
    ];
    for (name, kind, fields) in kinds {
        let mut times = Vec::with_capacity(ROUNDS);
        for _ in 0..ROUNDS {
            let t = Instant::now();
            journal::append(&data, &s, kind, fields.clone()).unwrap();
            times.push(t.elapsed());
        }
        let (m, p) = median_p90(times);
        println!("journal append {name:<28} median {m:7.1} us  p90 {p:7.1} us  ({ROUNDS} appends)");
    }
    let j = journal::read(&data, &s).unwrap();
    assert!(j.broken.is_none());
    let t = Instant::now();
    let _ = journal::read(&data, &s).unwrap();
    println!("journal read+verify of {} lines: {:.1} ms", j.lines, t.elapsed().as_secs_f64() * 1e3);
}
