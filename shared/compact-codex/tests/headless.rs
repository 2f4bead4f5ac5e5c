//! `run` headless (`--stdio-client`): the client is the adapter's own stdin
//! and stdout. This binary is its own harness: started with
//! `--adapter-child DATA CODEX` it is the adapter (its stdin/stdout are the
//! test's pipes); otherwise it is the test, which starts itself that way
//! with the stand-in app-server (kijito_testkit::codex).

#![allow(clippy::unwrap_used)]

mod common;

use common::*;
use kijito_compact_codex::{run, Bounds, Options};
use kijito_protocol::ids::AbsPath;
use serde_json::Value;
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("--adapter-child") {
        let opts = Options {
            data_dir: Some(AbsPath::parse(&args[2]).unwrap()),
            message_log: None,
            codex: Some(AbsPath::parse(&args[3]).unwrap()),
            stdio_client: true,
            codex_args: vec![],
            bounds: Bounds { poll: Duration::from_millis(20), shutdown: Duration::from_secs(20), ..Bounds::default() },
        };
        let code = match run(&opts) {
            Ok(c) => c,
            Err(e) => {
                eprintln!("{}: {}", e.code(), e.message());
                70
            }
        };
        std::process::exit(code);
    }
    headless_forwards_json_lines_both_ways_and_drains_the_last_answers_after_stdin_closes();
    println!("headless: 1 test passed");
}

/// The adapter child is stopped when the test fails.
struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn headless_forwards_json_lines_both_ways_and_drains_the_last_answers_after_stdin_closes() {
    let w = World::new();
    let sd = w.path("s");
    private_dir(&sd);
    let codex = standin_codex(&sd, &[]);
    let child = Command::new(std::env::current_exe().unwrap())
        .args(["--adapter-child", w.data.as_str(), codex.as_str()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut child = KillOnDrop(child);
    let child = &mut child.0;
    let stdout = child.stdout.take().unwrap();
    let (tx, lines) = mpsc::channel();
    let reader = std::thread::spawn(move || {
        for l in BufReader::new(stdout).lines() {
            let Ok(l) = l else { break };
            if tx.send(l).is_err() {
                break;
            }
        }
    });
    let next_with_id = |id: u64| -> Value {
        for _ in 0..100 {
            let l = lines.recv_timeout(Duration::from_secs(15)).unwrap_or_else(|e| panic!("no answer {id} on the adapter's stdout: {e}"));
            let v: Value = serde_json::from_str(&l).unwrap();
            if v["id"] == id {
                return v;
            }
        }
        panic!("no answer {id} within 100 lines")
    };
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"{\"id\":1,\"method\":\"thread/start\",\"params\":{}}\n{\"id\":2,  \"method\":\"model/list\"}\n").unwrap();
    stdin.flush().unwrap();
    // answered while stdin stays open (the adapter never blocks reading it)
    assert!(next_with_id(1)["result"]["thread"]["id"].is_string());
    assert_eq!(next_with_id(2)["result"], serde_json::json!({}));
    // an answer the app-server gives only after the adapter's stdin closed
    stdin.write_all(b"{\"id\":3,\"method\":\"test/answerLater\",\"params\":{\"ms\":500}}\n").unwrap();
    drop(stdin);
    assert_eq!(next_with_id(3)["result"]["late"], true, "still forwarded after stdin closed");
    let status = wait_for("the adapter to exit", 20, || child.try_wait().unwrap());
    assert_eq!(status.code(), Some(0));
    reader.join().unwrap();
    assert!(sd.join("exited").exists(), "the app-server exited on its own");
    let server = jsonl(&sd.join("server.jsonl"));
    assert!(server.iter().any(|m| m["dir"] == "in" && m["msg"]["id"] == 2), "the client's lines reached the app-server");
}
