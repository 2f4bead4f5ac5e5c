//! The policy's cost per tool call: parse (ToolCall) + classify + decide
//! over every call of fixtures/policy/corpus.jsonl, normal latch mode, no
//! token (so every irreversible call builds its deny reason). Prints the
//! median and p99 per call over all rounds, and the slowest call.
//!
//! Run: `cargo bench -p kijito-policy` (optionally `-- <rounds>`).

use kijito_policy::{classify, decide, ConsentTarget, Env, LatchMode, Modes, ToolCall, Wake};
use serde_json::Value;
use std::hint::black_box;
use std::time::{Duration, Instant};

fn main() {
    let rounds: usize = std::env::args().skip(1).find_map(|a| a.parse().ok()).unwrap_or(30);
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../fixtures/policy/corpus.jsonl");
    let text = std::fs::read_to_string(path).expect("corpus");
    let calls: Vec<(String, Value)> = text
        .lines()
        .map(|l| {
            let e: Value = serde_json::from_str(l).expect("json");
            (e["tool_name"].as_str().expect("tool_name").to_owned(), e["tool_input"].clone())
        })
        .collect();
    let env = Env {
        home: "/home/user".into(),
        cwd: "/home/user/project".into(),
        config_dir: Some("/home/user/.config/kijito-qa".into()),
        data_dir: Some("/home/user/.local/share/kijito-qa".into()),
        plugin_roots: vec!["/opt/kijito-qa".into()],
        ..Env::default()
    };
    let modes = Modes { wake: Wake::Clear, latch: LatchMode::Normal, qa_frozen: false, consent_confirmed: false };
    let target = ConsentTarget {
        helper_dir: "/opt/kijito-qa/bin",
        workspace: "/home/user/project",
        action_file: "/tmp/a.json",
        session_id: "s1",
        data_dir: "/d",
    };
    let mut times: Vec<(Duration, usize)> = Vec::with_capacity(rounds * calls.len());
    for _ in 0..rounds {
        for (i, (name, input)) in calls.iter().enumerate() {
            let t = Instant::now();
            let call = ToolCall::parse(name, input);
            let cls = classify(&call, &env);
            let d = decide(&cls, &modes, &target);
            black_box(d);
            times.push((t.elapsed(), i));
        }
    }
    times.sort();
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    let median = times[times.len() / 2].0;
    let p99 = times[times.len() * 99 / 100].0;
    let (max, worst) = times[times.len() - 1];
    println!(
        "kijito-policy parse+classify+decide: {} calls x {rounds} rounds: median {:.2} us/call, p99 {:.2} us, max {:.2} us (call {} {})",
        calls.len(),
        us(median),
        us(p99),
        us(max),
        calls[worst].0,
        kijito_protocol::ids::clip(&calls[worst].1.to_string())
    );
}
