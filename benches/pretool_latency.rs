//! PreToolUse latency: the installed `pretool-hook` run
//! as a fresh process per call, as the hosts run it before every tool call,
//! beside `/bin/true` in the same run, rounds interleaved. Three calls:
//! a read (`git status`, decided from stdin alone), an ordinary edit in a
//! workspace with a latch (the latch's mode is read), and an irreversible
//! call there (denied: the consent check under the latch's lock, the action
//! file written); and Claude Code's PostToolUse of a call nobody was asked
//! about (consent mode host's common case: one stat). Two rows bound the
//! path lookups: a program the policy does not model, given 80 path
//! arguments (each of the first `MAX_TOUCHED`, 64, is looked up: realpath
//! and stat, docs/policy.md "Paths"), outside any latch and in the latched
//! workspace (where each touched path's workspace is looked up too). Prints each median
//! and p90 and the ratio of medians to `/bin/true`. Target: the read path's
//! median at most 1.5x `/bin/true`.
//!
//! `cargo build --profile hooks -p kijito-hooks --bins && cargo build --release --bin memory-latch && cargo bench --bench pretool_latency`
//! (hooks from `target/hooks/`, memory-latch from `target/release/`);
//! `KIJITO_BENCH_BIN_DIR=<prefix>/claude/bin` measures an installed root;
//! `KIJITO_BENCH_AB_DIR=<dir>` adds a second `pretool-hook` (B), run on the
//! same calls right after the first (A) in every round, and prints B's
//! medians and B/A.
#![allow(clippy::unwrap_used)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const ROUNDS: usize = 300;

fn run(program: &Path, args: &[&str], stdin: &[u8], home: &Path) -> (Duration, Vec<u8>) {
    let start = Instant::now();
    let mut child = Command::new(program)
        .args(args)
        .env_clear()
        .env("HOME", home)
        .env("PATH", "/usr/bin:/bin")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let _ = child.stdin.take().unwrap().write_all(stdin);
    let out = child.wait_with_output().unwrap();
    (start.elapsed(), out.stdout)
}

fn median_p90(mut v: Vec<Duration>) -> (Duration, Duration) {
    v.sort();
    (v[v.len() / 2], v[v.len() * 9 / 10])
}

fn main() {
    let (hooks, bin): (PathBuf, PathBuf) = match std::env::var_os("KIJITO_BENCH_BIN_DIR") {
        Some(d) => (d.clone().into(), d.into()),
        None => {
            let release = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/release");
            (release.parent().unwrap().join("hooks"), release)
        }
    };
    let hook = hooks.join("pretool-hook");
    assert!(hook.is_file() && bin.join("memory-latch").is_file(), "build first (see the header): {}", hook.display());
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let ws = tmp.path().join("ws");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&ws).unwrap();
    let ws = std::fs::canonicalize(&ws).unwrap();
    let st = Command::new(bin.join("memory-latch"))
        .args(["init", "--workspace", ws.to_str().unwrap(), "--objective", "bench", "--next-step", "measure"])
        .env("HOME", &home)
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(st.success(), "memory-latch init failed");
    let event = |e: &str, cwd: &Path, tool: &str, input: serde_json::Value| {
        let mut v = serde_json::json!({"session_id": "bench-pretool-0001", "transcript_path": null, "cwd": cwd, "hook_event_name": e,
            "tool_name": tool, "tool_input": input, "tool_use_id": "t1", "permission_mode": "default"});
        if e != "PreToolUse" {
            v["tool_response"] = serde_json::json!({"stdout": "", "stderr": "", "interrupted": false});
        }
        v.to_string().into_bytes()
    };
    let call = |cwd: &Path, tool: &str, input: serde_json::Value| event("PreToolUse", cwd, tool, input);
    let plain = tmp.path().to_path_buf();
    let many_paths = format!("frobnicate --fast {}", (0..80).map(|i| format!("src/m{i:02}.rs")).collect::<Vec<_>>().join(" "));
    let cases: Vec<(&str, Vec<u8>, bool)> = vec![
        ("read: Bash git status (no latch)", call(&plain, "Bash", serde_json::json!({"command": "git status"})), true),
        (
            "edit: Edit src/a.rs (latch, normal)",
            call(&ws, "Edit", serde_json::json!({"file_path": ws.join("src/a.rs"), "old_string": "a", "new_string": "b"})),
            true,
        ),
        ("unknown program, 80 paths (no latch)", call(&plain, "Bash", serde_json::json!({ "command": many_paths })), true),
        ("unknown program, 80 paths (latch)", call(&ws, "Bash", serde_json::json!({ "command": many_paths })), true),
        ("irreversible: rm -rf build (denied)", call(&ws, "Bash", serde_json::json!({"command": "rm -rf build"})), false),
        // Claude Code runs it after every call that ran: nobody was asked about this one (one stat)
        ("post: PostToolUse, nothing asked (latch)", event("PostToolUse", &ws, "Bash", serde_json::json!({"command": "cargo test"})), true),
    ];
    let mut hooks = vec![hook];
    if let Some(b) = std::env::var_os("KIJITO_BENCH_AB_DIR") {
        let b = PathBuf::from(b).join("pretool-hook");
        assert!(b.is_file(), "KIJITO_BENCH_AB_DIR has no pretool-hook: {}", b.display());
        hooks.push(b);
    }
    let mut truth = Vec::with_capacity(ROUNDS);
    let mut times: Vec<Vec<Vec<Duration>>> = vec![vec![Vec::with_capacity(ROUNDS); cases.len()]; hooks.len()];
    for _ in 0..ROUNDS {
        truth.push(run(Path::new("/bin/true"), &[], b"", &home).0);
        for (i, (name, stdin, allowed)) in cases.iter().enumerate() {
            let expect = if name.starts_with("post:") { "PostToolUse" } else { "PreToolUse" };
            for (h, hook) in hooks.iter().enumerate() {
                let (t, out) = run(hook, &["--host", "claude", "--expect", expect], stdin, &home);
                assert_eq!(out.iter().all(u8::is_ascii_whitespace), *allowed, "{name}: {}", String::from_utf8_lossy(&out));
                times[h][i].push(t);
            }
        }
    }
    let (base, base90) = median_p90(truth);
    let medians: Vec<Vec<Duration>> = times.iter().map(|t| t.iter().map(|v| median_p90(v.clone()).0).collect()).collect();
    let ab_run = hooks.len() > 1;
    for (h, (hook, t)) in hooks.iter().zip(times).enumerate() {
        let label = if ab_run { ["A", "B"][h] } else { "" };
        println!("pretool-hook {label} latency, {ROUNDS} rounds interleaved, {}", hook.display());
        println!("{:<40} median {:>6.3} ms  p90 {:>6.3} ms  baseline", "/bin/true", base.as_secs_f64() * 1e3, base90.as_secs_f64() * 1e3);
        for (i, ((name, _, _), t)) in cases.iter().zip(t).enumerate() {
            let (m, p) = median_p90(t);
            let ab = if h > 0 { format!("  B/A {:.3}", m.as_secs_f64() / medians[0][i].as_secs_f64()) } else { String::new() };
            println!(
                "{name:<40} median {:>6.3} ms  p90 {:>6.3} ms  {:>5.2}x /bin/true{ab}",
                m.as_secs_f64() * 1e3,
                p.as_secs_f64() * 1e3,
                m.as_secs_f64() / base.as_secs_f64()
            );
        }
    }
}
