//! The real `kijito-context` binary on the real hosts' files
//! (fixtures/context: a Claude Code 2.1.328 transcript and a Codex 0.169.0
//! rollout captured after real turns and a compaction), truncated last
//! lines, a huge file and hostile inputs.
#![allow(clippy::unwrap_used)]

use serde_json::Value;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_kijito-context");

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/context").join(name).canonicalize().unwrap()
}

fn run(args: &[&str], stdin: &[u8]) -> Output {
    let mut c = Command::new(BIN).args(args).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    // a process that refuses its argv exits before reading stdin
    let _ = c.stdin.take().unwrap().write_all(stdin);
    c.wait_with_output().unwrap()
}

fn measure(path: &Path, host: Option<&str>) -> Value {
    let mut args = vec!["--session-id", "s-1", "--transcript", path.to_str().unwrap()];
    if let Some(h) = host {
        args.extend(["--host", h]);
    }
    let o = run(&args, b"");
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8(o.stdout).unwrap();
    assert_eq!(text.lines().count(), 1);
    serde_json::from_str(&text).unwrap()
}

#[test]
fn real_claude_transcript_and_codex_rollout_give_a_ratio() {
    let c = measure(&fixture("claude-transcript.jsonl"), Some("claude"));
    assert_eq!(c["usedTokens"], 50, "{c}");
    assert_eq!(c["windowTokens"], 200_000);
    assert!(c["ratio"].as_f64().unwrap() > 0.0);
    // the fake model's id is unknown: the window is the conservative default, and says so
    assert!(c["source"].as_str().unwrap().contains("window=default-200000(model claude-opus-5-5 unknown)"), "{c}");
    assert!(c.get("reason").is_none());
    let x = measure(&fixture("codex-rollout.jsonl"), Some("codex"));
    assert_eq!((x["usedTokens"].as_u64(), x["windowTokens"].as_u64()), (Some(110), Some(258_400)), "{x}");
    assert_eq!(x["source"], "codex-rollout:token_count");
    // without --host the last usable line of either kind counts
    assert_eq!(measure(&fixture("codex-rollout.jsonl"), None)["usedTokens"], 110);
}

#[test]
fn truncated_last_lines_use_the_previous_usage() {
    let d = tempfile::tempdir().unwrap();
    for (name, host, used) in [("claude-transcript.jsonl", "claude", 50), ("codex-rollout.jsonl", "codex", 110)] {
        let mut body = std::fs::read(fixture(name)).unwrap();
        // append a half-written usage line, as while the host is writing
        let last_usage =
            body.split(|b| *b == b'\n').rfind(|l| l.windows(7).any(|w| w == b"\"usage\"" || w == b"token_c")).unwrap().to_vec();
        body.extend_from_slice(&last_usage[..last_usage.len() / 2]);
        let p = d.path().join(name);
        std::fs::write(&p, &body).unwrap();
        let v = measure(&p, Some(host));
        assert_eq!(v["usedTokens"], used, "{name}: {v}");
    }
}

#[test]
fn a_huge_file_is_read_from_the_tail_only_and_bounded() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("huge.jsonl");
    let mut f = std::io::BufWriter::new(std::fs::File::create(&p).unwrap());
    // a usable line at the very start, then 40 MB without one: beyond the 16 MiB bound
    f.write_all(&std::fs::read(fixture("claude-transcript.jsonl")).unwrap()).unwrap();
    let filler = format!("{{\"type\":\"user\",\"message\":{{\"content\":\"{}\"}}}}\n", "x".repeat(8000));
    for _ in 0..(40 * 1024 * 1024 / filler.len()) {
        f.write_all(filler.as_bytes()).unwrap();
    }
    f.flush().unwrap();
    drop(f);
    let v = measure(&p, Some("claude"));
    assert_eq!(v["ratio"], Value::Null);
    assert_eq!(v["reason"], "no_usage_in_tail");
}

#[test]
fn compaction_without_a_later_turn_is_unknown_never_a_guess() {
    let d = tempfile::tempdir().unwrap();
    let body = std::fs::read_to_string(fixture("claude-transcript.jsonl")).unwrap();
    // cut the real transcript right after its compact_boundary line
    let cut: String = body
        .lines()
        .take_while(|l| !l.contains("compact_boundary"))
        .chain(body.lines().filter(|l| l.contains("compact_boundary")))
        .map(|l| format!("{l}\n"))
        .collect();
    let p = d.path().join("t.jsonl");
    std::fs::write(&p, cut).unwrap();
    let v = measure(&p, Some("claude"));
    assert_eq!((v["ratio"].clone(), v["reason"].as_str()), (Value::Null, Some("compacted_since_last_usage")), "{v}");
}

#[test]
fn usage_errors_and_unsafe_paths() {
    let o = run(&["--session-id", "s", "--transcript", "relative.jsonl"], b"");
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).starts_with("kijito_context_failed:"));
    let o = run(&["--transcript", "/x"], b"");
    assert_eq!(o.status.code(), Some(2));
    let o = run(&["--session-id", "s", "--transcript", "/x", "--host", "gemini"], b"");
    assert_eq!(o.status.code(), Some(2));
    let o = run(&["--statusline", "--session-id", "s"], b"{}");
    assert_eq!(o.status.code(), Some(2));
    let d = tempfile::tempdir().unwrap();
    let link = d.path().join("l.jsonl");
    std::os::unix::fs::symlink(fixture("claude-transcript.jsonl"), &link).unwrap();
    assert_eq!(measure(&link, Some("claude"))["reason"], "transcript_symlink");
    assert_eq!(measure(Path::new("/dev/null"), None)["reason"], "transcript_not_regular");
}

#[test]
fn statusline_line_from_the_claude_statusline_json() {
    let d = tempfile::tempdir().unwrap();
    let t = fixture("claude-transcript.jsonl");
    let stdin = serde_json::json!({
        "hook_event_name": "Status", "session_id": "s-1", "transcript_path": t.to_str().unwrap(),
        "model": {"id": "claude-opus-5-5", "display_name": "Opus"}, "workspace": {"current_dir": "/x"}
    });
    let data = d.path().join("data");
    let o = run(&["--statusline", "--data-dir", data.to_str().unwrap()], stdin.to_string().as_bytes());
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(String::from_utf8(o.stdout).unwrap(), "ctx 0% · no QA pass\n");
    assert!(!data.exists(), "the status line never creates the data dir");
    let o = run(&["--statusline"], b"not json");
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).starts_with("kijito_context_failed:statusline_stdin_invalid"));
}
