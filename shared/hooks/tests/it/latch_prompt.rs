//! A token-shaped user prompt confirms consent only through the latch of the
//! session's directory, opened with the key and boot-id file the environment
//! names. The governance knobs (turn count, one-step mode) and a
//! wallet-signature prompt go through the same hook path. The tests set
//! those environment variables, so each runs alone in a child process of the
//! test binary (kijito_testkit::isolated), and they take turns under one lock.

#![allow(clippy::unwrap_used)]

use kijito_hooks::latch_hook::{confirm_from_prompt, open_latch};
use kijito_latch::{self as latch, Config, Latch, Risk};
use kijito_testkit::isolated;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::sync::Mutex;

/// The environment is process-wide: one test at a time sets and reads it.
static ENV: Mutex<()> = Mutex::new(());

/// One latch world of these tests, its environment set.
struct World {
    d: tempfile::TempDir,
    /// The session's directory (its latch opened, not yet initialised).
    ws: std::path::PathBuf,
    latch: Latch,
    /// The hooks' environment for Claude Code at the clock it was built with,
    /// on a private data dir.
    env: kijito_hooks::HookEnv,
}

/// A private temporary dir with a boot-id file holding `boot_id`, a heads
/// dir and a workspace `ws`, named by the environment the latch hook reads
/// (`MEMORY_LATCH_HEADS_DIR`, `MEMORY_LATCH_BOOT_ID_FILE`, and the HMAC key
/// variable: a 64-byte key file with `key`, empty without), the latch of
/// `ws` opened with the same settings, and the hooks' environment at `now_ms`.
/// `more_env` sets the test's own variables (given the temporary dir) before
/// the latch's configuration reads the environment.
fn world(boot_id: &str, key: bool, now_ms: i64, more_env: impl FnOnce(&std::path::Path)) -> World {
    let d = tempfile::tempdir().unwrap();
    fs::set_permissions(d.path(), fs::Permissions::from_mode(0o700)).unwrap();
    let boot = d.path().join("boot");
    fs::write(&boot, boot_id).unwrap();
    let heads = d.path().join("heads");
    let ws = d.path().join("ws");
    fs::create_dir(&ws).unwrap();
    std::env::set_var(latch::head::HEADS_ENV, &heads);
    std::env::set_var("MEMORY_LATCH_BOOT_ID_FILE", &boot);
    let key = key.then(|| {
        let key = d.path().join("key");
        fs::write(&key, [9u8; 64]).unwrap();
        fs::set_permissions(&key, fs::Permissions::from_mode(0o600)).unwrap();
        key
    });
    match &key {
        Some(k) => std::env::set_var(latch::HMAC_KEY_ENV, k),
        None => std::env::set_var(latch::HMAC_KEY_ENV, ""),
    }
    more_env(d.path());
    let mut c = Config::new(&ws);
    c.boot_id_file = boot;
    c.heads_dir = Some(heads);
    c.hmac_key_file = key;
    let latch = Latch::open(&c).unwrap();
    let data = d.path().join("data");
    fs::create_dir(&data).unwrap();
    fs::set_permissions(&data, fs::Permissions::from_mode(0o700)).unwrap();
    let env = kijito_hooks::HookEnv::new(
        kijito_hooks::Host::Claude,
        Some(kijito_protocol::ids::AbsPath::from_path(&data).unwrap()),
        None,
        None,
        None,
        now_ms,
    );
    World { d, ws, latch, env }
}

#[test]
fn a_token_prompt_confirms_through_the_keyed_latch_of_the_directory() {
    if !isolated::alone(module_path!(), "a_token_prompt_confirms_through_the_keyed_latch_of_the_directory") {
        return; // it ran alone in a child process of this binary
    }
    let _env = ENV.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let World { d, ws, latch: l, env } = world("aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee", true, 6_000, |_| {});
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
    // Both hosts name the transcript; the token checks read it, and only the
    // host's own transcript of the session counts (docs/protocol.md §10.4).
    let claude_dir = d.path().join("claude");
    let transcript = claude_dir.join("projects/-ws/s1.jsonl");
    fs::create_dir_all(transcript.parent().unwrap()).unwrap();
    fs::write(&transcript, "{}\n").unwrap();
    fs::set_permissions(&transcript, fs::Permissions::from_mode(0o600)).unwrap();
    std::env::set_var("CLAUDE_CONFIG_DIR", &claude_dir);
    let ups = |cwd: &str, prompt: &str| {
        let stdin = serde_json::json!({"hook_event_name": "UserPromptSubmit", "session_id": "s1", "cwd": cwd, "prompt": prompt, "transcript_path": transcript}).to_string();
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
    assert!(
        ups(ws.to_str().unwrap(), &third.token).starts_with(&format!("memory-latch: the USER confirmed consent token {}", third.record.id))
    );
    // Without the key in the environment the hmac chain cannot be extended.
    std::env::set_var(latch::HMAC_KEY_ENV, "");
    assert!(!open_latch(&ws).unwrap().has_key(), "an empty variable names no key");
    let second = l.consent_request(4_000, b"rm -rf target2\n", "clean", Risk::Low).unwrap();
    let keyless = confirm_from_prompt(Some(&ws), Some(&second.token), 5_000).unwrap();
    assert!(!keyless.starts_with("memory-latch: the USER confirmed"), "{keyless}");
}

/// UserPromptSubmit opens a turn (stamped with the hook's clock), Stop closes
/// and counts it and writes the automatic checkpoint at the fifth; in
/// one-step mode the prompt carries the reminder; a subagent counts nothing;
/// a signature-shaped prompt is answered whether or not there is a latch.
#[test]
fn the_knobs_and_a_signature_prompt_go_through_the_hooks() {
    if !isolated::alone(module_path!(), "the_knobs_and_a_signature_prompt_go_through_the_hooks") {
        return; // it ran alone in a child process of this binary
    }
    let _env = ENV.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let World { d, ws, latch: l, env } = world("11111111-2222-3333-4444-555555555555", false, 7_654, |d| {
        let cfg = d.join("xdg");
        fs::create_dir(&cfg).unwrap();
        std::env::set_var(latch::wallet::WALLET_ENV, "");
        std::env::set_var("XDG_CONFIG_HOME", &cfg);
    });
    l.init(1_000, &latch::InitInput { objective: "o".into(), next_single_step: Some("write the tests".into()), ..Default::default() })
        .unwrap();

    let hook = |event: kijito_hooks::Event, name: &str, patch: &dyn Fn(&mut serde_json::Value)| {
        let mut p = serde_json::json!({"hook_event_name": name, "session_id": "s1", "cwd": ws.to_str().unwrap(), "prompt": "carry on"});
        patch(&mut p);
        kijito_hooks::run::session(&env, event, p.to_string().as_bytes())
            .map(|out| serde_json::from_str::<serde_json::Value>(&out).unwrap())
    };
    let prompt = |patch: &dyn Fn(&mut serde_json::Value)| {
        hook(kijito_hooks::Event::UserPromptSubmit, "UserPromptSubmit", patch)
            .map(|v| v["hookSpecificOutput"]["additionalContext"].as_str().unwrap().to_owned())
    };
    let stop = |patch: &dyn Fn(&mut serde_json::Value)| {
        hook(kijito_hooks::Event::Stop, "Stop", patch).map(|v| v["systemMessage"].as_str().unwrap().to_owned())
    };
    let subagent = |p: &mut serde_json::Value| {
        p["agent_id"] = serde_json::json!("a1b2c3");
        p["agent_type"] = serde_json::json!("general-purpose");
    };

    for turn in 1..=4 {
        assert_eq!(prompt(&|_| {}), None, "turn {turn}: nothing to say outside one-step mode");
        // The open turn carries the hook's clock.
        let open = l.turns().unwrap().open;
        assert_eq!(open.iter().map(|o| (o.session.as_str(), o.since_ms)).collect::<Vec<_>>(), [("s1", 7_654)], "turn {turn}");
        assert_eq!(stop(&|_| {}), None, "turn {turn}: no checkpoint yet");
        // A subagent's prompt and Stop count nothing and say nothing.
        assert_eq!(prompt(&subagent), None);
        assert_eq!(stop(&subagent), None);
    }
    assert_eq!(l.turns().unwrap().turns, 4);
    assert!(l.turns().unwrap().open.is_empty());
    assert_eq!(prompt(&|_| {}), None);
    let fifth = stop(&|_| {}).expect("the fifth turn writes the checkpoint");
    assert_eq!(fifth, "memory-latch: automatic checkpoint after 5 turns (entry 2).");
    let head = l.status(8_000).unwrap().head;
    assert_eq!((head.seq, head.boot_id.as_str()), (2, "11111111-2222-3333-4444-555555555555"));

    // Context fatigue (another session's Stop at 90 %) turns one-step mode
    // on: every prompt of the session is reminded of its next single step.
    let fatigue = l.turn_ended(&kijito_protocol::ids::SessionId::parse("s2").unwrap(), 8_000, Some(0.9)).unwrap();
    assert_eq!(fatigue.written.map(|(_, seq)| seq), Some(3));
    let reminder = prompt(&|_| {}).expect("the one-step reminder");
    let checkpoint =
        latch::recover::latch_command(env.helpers.as_ref(), &fs::canonicalize(&ws).unwrap(), "checkpoint", " --next-step <NEXT_STEP>");
    assert_eq!(reminder, latch::knobs::one_step_context(latch::entry::OneStep::Ready, "write the tests", checkpoint.as_deref()));
    assert!(
        reminder.starts_with("memory-latch: ONE-STEP MODE (context fatigue). Do only the next single step: \"write the tests\""),
        "{reminder}"
    );
    assert_eq!(prompt(&subagent), None, "a subagent is not reminded");

    // A prompt that is exactly a signature: without a latch in `cwd` it is
    // said so; with one but no wallet configured, refused with its code.
    let sig = format!("0x{}1b", "ab".repeat(64));
    let elsewhere = prompt(&|p| {
        p["cwd"] = serde_json::json!(d.path().to_str().unwrap());
        p["prompt"] = serde_json::json!(sig);
    });
    assert_eq!(
        elsewhere.as_deref(),
        Some("memory-latch: the user's message looks like a wallet signature, but this session's directory has no readable latch; nothing was confirmed.")
    );
    let refused = prompt(&|p| p["prompt"] = serde_json::json!(sig)).expect("an answer to the signature");
    assert!(refused.contains(latch::codes::WALLET_CONFIG_INVALID.as_str()), "{refused}");
    assert!(refused.contains("no wallet signer is configured"), "{refused}");
    assert!(!refused.contains("confirmed consent"), "{refused}");
}
