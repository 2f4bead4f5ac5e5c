//! A token-shaped user prompt confirms consent only through the latch of the
//! session's directory, opened with the key and boot-id file the environment
//! names. One test in its own process: it sets those environment variables.

#![allow(clippy::unwrap_used)]

use kijito_hooks::latch_hook::{confirm_from_prompt, open_latch};
use kijito_latch::{self as latch, Config, Latch, Risk};
use std::fs;
use std::os::unix::fs::PermissionsExt;

#[test]
fn a_token_prompt_confirms_through_the_keyed_latch_of_the_directory() {
    let d = tempfile::tempdir().unwrap();
    fs::set_permissions(d.path(), fs::Permissions::from_mode(0o700)).unwrap();
    let boot = d.path().join("boot");
    fs::write(&boot, "aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee").unwrap();
    let heads = d.path().join("heads");
    let key = d.path().join("key");
    fs::write(&key, [9u8; 64]).unwrap();
    fs::set_permissions(&key, fs::Permissions::from_mode(0o600)).unwrap();
    let ws = d.path().join("ws");
    fs::create_dir(&ws).unwrap();
    std::env::set_var(latch::head::HEADS_ENV, &heads);
    std::env::set_var("MEMORY_LATCH_BOOT_ID_FILE", &boot);
    std::env::set_var(latch::HMAC_KEY_ENV, &key);

    let mut c = Config::new(&ws);
    c.boot_id_file = boot.clone();
    c.heads_dir = Some(heads.clone());
    c.hmac_key_file = Some(key.clone());
    let l = Latch::open(&c).unwrap();
    l.init(1_000, &latch::InitInput { objective: "o".into(), want_hmac: true, ..Default::default() }).unwrap();
    let issued = l.consent_request(2_000, b"rm -rf target\n", "clean", Risk::Low).unwrap();

    // The hook opens the same latch, keyed from the environment.
    let opened = open_latch(&ws).expect("the directory's latch");
    assert!(opened.has_key());
    assert!(open_latch(d.path()).is_none(), "no .memory-latch here");
    assert_eq!(confirm_from_prompt(Some(&ws), Some("please go ahead"), 3_000), None);
    let ctx = confirm_from_prompt(Some(&ws), Some(&format!("  {}  ", issued.token.to_lowercase())), 3_000).expect("a confirmation");
    assert!(ctx.starts_with(&format!("memory-latch: the USER confirmed consent token {} (low risk)", issued.record.id)), "{ctx}");
    // The confirmation entry was written with the boot id the environment names.
    assert_eq!(l.status(3_000).unwrap().head.boot_id, "aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee");
    // Replayed: refused, said as such.
    let again = confirm_from_prompt(Some(&ws), Some(&issued.token), 3_001).unwrap();
    assert!(again.starts_with("memory-latch: the user's token was NOT accepted (consent_already_confirmed: "), "{again}");
    // Through UserPromptSubmit: the session's `cwd` must be an absolute path.
    let data = d.path().join("data");
    fs::create_dir(&data).unwrap();
    fs::set_permissions(&data, fs::Permissions::from_mode(0o700)).unwrap();
    let env = kijito_hooks::run::HookEnv::new(kijito_hooks::Host::Claude, Some(kijito_protocol::ids::AbsPath::from_path(&data).unwrap()), None, None, None, 6_000);
    let ups = |cwd: &str, prompt: &str| {
        let stdin = serde_json::json!({"hook_event_name": "UserPromptSubmit", "session_id": "s1", "cwd": cwd, "prompt": prompt}).to_string();
        let out = kijito_hooks::run::session(&env, kijito_hooks::Event::UserPromptSubmit, stdin.as_bytes()).expect("an answer");
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        v["hookSpecificOutput"]["additionalContext"].as_str().unwrap().to_owned()
    };
    let third = l.consent_request(5_500, b"rm -rf target3\n", "clean", Risk::Low).unwrap();
    // The same directory named relative to this process's working directory.
    let here = std::env::current_dir().unwrap();
    let relative = format!("{}{}", "../".repeat(here.components().count() - 1), ws.to_str().unwrap().trim_start_matches('/'));
    assert!(std::path::Path::new(&relative).join(".memory-latch").exists(), "{relative}");
    assert!(ups(&relative, &third.token).contains("no readable latch"));
    assert!(ups(ws.to_str().unwrap(), &third.token).starts_with(&format!("memory-latch: the USER confirmed consent token {}", third.record.id)));
    // Without the key in the environment the hmac chain cannot be extended.
    std::env::set_var(latch::HMAC_KEY_ENV, "");
    assert!(!open_latch(&ws).unwrap().has_key(), "an empty variable names no key");
    let second = l.consent_request(4_000, b"rm -rf target2\n", "clean", Risk::Low).unwrap();
    let keyless = confirm_from_prompt(Some(&ws), Some(&second.token), 5_000).unwrap();
    assert!(!keyless.starts_with("memory-latch: the USER confirmed"), "{keyless}");
}
