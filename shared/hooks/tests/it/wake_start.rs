//! SessionStart(startup|resume) runs the local wake checks on the session's
//! `cwd` and says so when the mode is not full trust; a degraded latch gets
//! its one `degraded_mode` entry. It runs alone in a child process of the test
//! binary (tests/support/isolated.rs): it sets the latch environment (boot id
//! file, heads dir).

#![allow(clippy::unwrap_used)]

use crate::isolated;
use kijito_hooks::run::{self, HookEnv};
use kijito_hooks::{Event, Host};
use kijito_latch::{self as latch, Config, Latch};
use serde_json::{json, Value};
use std::fs;
use std::os::unix::fs::PermissionsExt;

fn context(reply: Option<String>) -> String {
    let v: Value = serde_json::from_str(&reply.expect("a reply")).unwrap();
    v["hookSpecificOutput"]["additionalContext"].as_str().unwrap().to_owned()
}

#[test]
fn startup_reports_the_wake_mode_of_the_sessions_directory() {
    if !isolated::alone(module_path!(), "startup_reports_the_wake_mode_of_the_sessions_directory") {
        return; // it ran alone in a child process of this binary
    }
    let d = tempfile::tempdir().unwrap();
    fs::set_permissions(d.path(), fs::Permissions::from_mode(0o700)).unwrap();
    let boot = d.path().join("boot");
    fs::write(&boot, "aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee").unwrap();
    let heads = d.path().join("heads");
    std::env::set_var(latch::head::HEADS_ENV, &heads);
    std::env::set_var("MEMORY_LATCH_BOOT_ID_FILE", &boot);
    std::env::remove_var(latch::HMAC_KEY_ENV);
    for sub in ["data", "bin", "ws"] {
        fs::create_dir(d.path().join(sub)).unwrap();
        fs::set_permissions(d.path().join(sub), fs::Permissions::from_mode(0o700)).unwrap();
    }
    let ws = d.path().join("ws");
    let env = HookEnv::new(
        Host::Codex,
        Some(kijito_protocol::ids::AbsPath::from_path(&d.path().join("data")).unwrap()),
        None,
        None,
        Some(kijito_protocol::command::HelperDir::new(&d.path().join("bin")).unwrap()),
        1_800_000_000_000,
    );
    let start = |source: &str| {
        let stdin =
            json!({"hook_event_name": "SessionStart", "session_id": "s1", "source": source, "cwd": ws.to_str().unwrap()}).to_string();
        context(run::session(&env, Event::SessionStart, stdin.as_bytes()))
    };
    const COMMANDS: &str = "kijito-qa (trusted hook output) for session s1";
    // No latch in the directory: every local check passes, nothing is said.
    for source in ["startup", "resume", "clear"] {
        assert!(start(source).starts_with(COMMANDS), "{source}");
    }
    // A fresh hmac latch, keyed and booted from the environment: full trust.
    let key = d.path().join("key");
    fs::write(&key, [9u8; 64]).unwrap();
    fs::set_permissions(&key, fs::Permissions::from_mode(0o600)).unwrap();
    std::env::set_var(latch::HMAC_KEY_ENV, &key);
    let mut c = Config::new(&ws);
    c.boot_id_file = boot.clone();
    c.heads_dir = Some(heads.clone());
    c.hmac_key_file = Some(key.clone());
    let l = Latch::open(&c).unwrap();
    l.init(env.now_ms as u64 - 1000, &latch::InitInput { objective: "o".into(), want_hmac: true, ..Default::default() }).unwrap();
    assert!(start("startup").starts_with(COMMANDS), "{}", start("startup"));
    // Two days later: a long sleep, said at startup and resume only.
    let later = {
        let mut e = env.clone();
        e.now_ms += 2 * 86_400_000;
        e
    };
    let start_later = |source: &str| {
        let stdin =
            json!({"hook_event_name": "SessionStart", "session_id": "s1", "source": source, "cwd": ws.to_str().unwrap()}).to_string();
        context(run::session(&later, Event::SessionStart, stdin.as_bytes()))
    };
    for source in ["startup", "resume"] {
        let t = start_later(source);
        assert!(t.starts_with("kijito-qa wake-check (local checks): trust mode CAUTIOUS. Long sleep detected"), "{source}: {t}");
        assert!(t.contains(&format!("\n\n{COMMANDS}")), "{t}");
    }
    assert!(start_later("clear").starts_with(COMMANDS));
    // An invalid recorded pointer: degraded, said, and the one visible
    // degraded_mode entry is appended (and said) once.
    let qa = kijito_gate::QaDir::open(&kijito_protocol::ids::AbsPath::from_path(&d.path().join("data")).unwrap()).unwrap();
    let pointer = qa.path().as_path().join("current-pointer.json");
    kijito_files::private::write_atomic(&pointer, b"{}").unwrap();
    let t = start("startup");
    assert!(t.starts_with("kijito-qa wake-check (local checks): trust mode DEGRADED."), "{t}");
    assert!(t.contains("\ndegraded_mode entry 2 appended; consent locked until a human reviews\n"), "{t}");
    let again = start("startup");
    assert!(again.starts_with("kijito-qa wake-check (local checks): trust mode DEGRADED.") && !again.contains("appended"), "{again}");
    assert_eq!(l.status(env.now_ms as u64).unwrap().head.event, latch::Event::DegradedMode);
    fs::remove_file(&pointer).unwrap();
    // A tampered chain, no sleep: degraded, said.
    let path = l.paths().manifest.clone();
    let text = fs::read_to_string(&path).unwrap();
    fs::write(&path, text.replacen("\"o\"", "\"p\"", 1)).unwrap();
    let t = start("startup");
    assert!(t.starts_with("kijito-qa wake-check (local checks): trust mode DEGRADED."), "{t}");
    assert!(t.contains("latch_untrusted"), "{t}");
}
