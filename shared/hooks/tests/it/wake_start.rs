//! SessionStart(startup|resume) runs the local wake checks in the installed
//! sibling `wake-check --hook` (docs/wake-check.md, Hook integration). Here,
//! in-process with a helper directory that has no `wake-check`: the context
//! says the checks could not run (`hook_wake_check_failed`, trust unknown),
//! `clear` does not run them, and where enforcement is on (a latch in `cwd`)
//! writes are held as after a long sleep. What the checks find through the
//! real binaries: tests/it/hooks_wake.rs.

#![allow(clippy::unwrap_used)]

use kijito_hooks::{run, HookEnv};
use kijito_hooks::{Event, Host};
use kijito_protocol::ids::AbsPath;
use serde_json::{json, Value};
use std::fs;
use std::os::unix::fs::PermissionsExt;

fn context(reply: Option<String>) -> String {
    let v: Value = serde_json::from_str(&reply.expect("a reply")).unwrap();
    v["hookSpecificOutput"]["additionalContext"].as_str().unwrap().to_owned()
}

/// A private temporary dir with `data`, `bin` (the helper dir, no
/// `wake-check` in it yet) and `ws`; the data dir; the hooks' environment
/// for Codex on them.
fn world() -> (tempfile::TempDir, AbsPath, HookEnv) {
    let d = tempfile::tempdir().unwrap();
    kijito_testkit::private_dir(d.path());
    for sub in ["data", "bin", "ws"] {
        kijito_testkit::private_dir(&d.path().join(sub));
    }
    let data = AbsPath::from_path(&d.path().join("data")).unwrap();
    let helpers = kijito_protocol::command::HelperDir::new(&d.path().join("bin")).unwrap();
    let env = HookEnv::new(Host::Codex, Some(data.clone()), None, None, Some(helpers), 1_800_000_000_000);
    (d, data, env)
}

/// The `wake_check` lines of session `s1`'s flight recorder.
fn wake_lines(data: &AbsPath) -> Vec<Value> {
    kijito_testkit::journal_lines(data.as_path(), "s1", "wake_check")
}

#[test]
fn startup_without_the_wake_check_sibling_fails_closed() {
    let (d, data, env) = world();
    let ws = d.path().join("ws");
    let start = |source: &str| {
        let stdin =
            json!({"hook_event_name": "SessionStart", "session_id": "s1", "source": source, "cwd": ws.to_str().unwrap()}).to_string();
        context(run::session(&env, Event::SessionStart, stdin.as_bytes()))
    };
    const COMMANDS: &str = "kijito-qa (trusted hook output) for session s1";
    const FAILED: &str = "kijito-qa wake-check (local checks) could not run (hook_wake_check_failed: ";
    // No latch in cwd: not enforced, said, nothing held.
    for source in ["startup", "resume"] {
        let t = start(source);
        assert!(t.starts_with(FAILED) && t.contains("Trust mode unknown"), "{source}: {t}");
        assert!(t.contains(&format!("\n\n{COMMANDS}")) && !t.contains("Until it answers"), "{source}: {t}");
        // last, how to turn enforcement on
        let init = format!("{}/memory-latch init --workspace {} --objective TEXT", d.path().join("bin").display(), ws.display());
        assert!(t.ends_with(&format!("\n\n{}", kijito_hooks::text::ENFORCEMENT_OFF.replacen("<command>", &init, 1))), "{source}: {t}");
    }
    assert!(start("clear").starts_with(COMMANDS), "clear runs no wake check");
    let qa_dir = kijito_files::datadir::qa_path(&data).unwrap();
    assert_eq!(kijito_wake::hold::read(qa_dir.as_path(), &ws), None);
    // A latch in cwd (enforcement on): the wake hold is set, naming the live check.
    fs::create_dir(ws.join(".memory-latch")).unwrap();
    let t = start("startup");
    assert!(t.starts_with(FAILED), "{t}");
    let live = format!("/wake-check --live --workspace {} --data-dir {}`", ws.display(), data.as_str());
    assert!(t.contains("\nUntil it answers, writes and irreversible tool calls are held") && t.contains(&live), "{t}");
    assert!(t.ends_with(&format!("\n\n{}", kijito_hooks::text::ENFORCEMENT_ON)), "{t}");
    assert_eq!(kijito_wake::hold::read(qa_dir.as_path(), &ws), Some(kijito_wake::hold::Hold::Pending));
    // the flight recorder says the writes are held
    let wake = wake_lines(&data);
    assert_eq!(wake.iter().map(|w| w["hold"].as_bool().unwrap()).collect::<Vec<_>>(), [false, false, true]);
}

/// The sibling's answer is one JSON object read up to 256 KiB: its context
/// reaches the model and its findings the flight recorder; an answer cut by
/// the bound, or of another schema, is malformed (the checks could not run).
#[test]
fn the_wake_check_answer_is_read_up_to_256_kib() {
    let (d, data, env) = world();
    let answer = d.path().join("answer.json");
    let sibling = d.path().join("bin/wake-check");
    fs::write(&sibling, format!("#!/bin/sh\ncat '{}'\n", answer.display())).unwrap();
    fs::set_permissions(&sibling, fs::Permissions::from_mode(0o700)).unwrap();
    let stdin = json!({"hook_event_name": "SessionStart", "session_id": "s1", "source": "startup", "cwd": d.path().join("ws")}).to_string();
    let reply = |body: String| {
        fs::write(&answer, body).unwrap();
        context(run::session(&env, Event::SessionStart, stdin.as_bytes()))
    };
    let good = json!({"schema": kijito_wake::HOOK_SCHEMA, "context": "wake-check: FULL TRUST.", "findings": ["f1"], "hold": false,
                      "checkedAtMs": 1_800_000_000_000u64})
    .to_string();
    const FAILED: &str = "kijito-qa wake-check (local checks) could not run (hook_wake_check_failed: ";
    for size in [good.len(), 256 * 1024] {
        let t = reply(format!("{}{good}", " ".repeat(size - good.len())));
        assert!(t.starts_with("wake-check: FULL TRUST.\n\nkijito-qa (trusted hook output)"), "{size}: {}", &t[..200.min(t.len())]);
    }
    let t = reply(format!("{}{good}", " ".repeat(256 * 1024 + 1 - good.len())));
    assert!(t.starts_with(FAILED) && t.contains("--hook answered malformed output"), "{t}");
    // no context: nothing to say before the commands
    let t = reply(good.replace(r#""wake-check: FULL TRUST.""#, "null"));
    assert!(t.starts_with("kijito-qa (trusted hook output)"), "{t}");
    let t = reply(good.replace(kijito_wake::HOOK_SCHEMA, "kijito.wake-check.hook/v0"));
    assert!(t.starts_with(FAILED) && t.contains("--hook answered malformed output"), "{t}");
    let wake = wake_lines(&data);
    assert_eq!(wake.len(), 5);
    assert_eq!((&wake[0]["findings"], &wake[0]["hold"], &wake[0]["failed"]), (&json!(["f1"]), &json!(false), &Value::Null));
    assert_eq!((&wake[4]["findings"], &wake[4]["hold"]), (&json!(["hook_wake_check_failed"]), &json!(false)));
}
