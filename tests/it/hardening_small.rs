//! The smaller hardening items, each as an attack or a
//! broken promise that must not get through: watchdogs below the installed
//! hook timeouts; `qa-gate status` creates nothing; qa-gate finds its data
//! dir like the hooks; SessionStart(compact) with unreadable stdin is
//! UNATTESTED with the code; the exact messages are printed whole and are the
//! ones in docs/gate-and-hooks.md; concurrent PreCompacts never tell the user
//! "attested" for an attempt that cannot be claimed attested; wake-check
//! paths are absolute like every other path flag.
#![allow(clippy::unwrap_used)]

use crate::support;
use support::gate as support_gate;

use kijito_hooks::messages;
use serde_json::{json, Value};
use std::path::Path;
use support_gate::*;

const S: &str = "01a2295e-6929-7981-9da7-935145fb97be";

#[test]
fn watchdogs_answer_before_the_host_kills_the_hook() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut seen = 0;
    for host in ["codex", "claude"] {
        let v: Value = serde_json::from_slice(&std::fs::read(root.join(format!("hooks/{host}/hooks.json.tmpl"))).unwrap()).unwrap();
        for (event, groups) in v["hooks"].as_object().unwrap() {
            for group in groups.as_array().unwrap() {
                for hook in group["hooks"].as_array().unwrap() {
                    let secs = hook["timeout"].as_u64().unwrap_or_else(|| panic!("{host} {event}: timeout in seconds"));
                    assert_eq!(secs, kijito_hooks::HOOK_TIMEOUT_SECS, "{host} {event}");
                    let timeout = std::time::Duration::from_secs(secs);
                    let margin = std::time::Duration::from_secs(1);
                    assert!(
                        kijito_hooks::WATCHDOG + margin <= timeout && kijito_hooks::WATCHDOG_SESSION + margin <= timeout,
                        "{host} {event}"
                    );
                    seen += 1;
                }
            }
        }
    }
    assert_eq!(seen, 14, "6 events each, and Claude Code's PostToolUse and PostToolUseFailure");
}

#[test]
fn status_is_read_only() {
    let w = World::new();
    let out = w.run(QA_GATE, &["status", "--session-id", S, "--data-dir", &w.data_arg()], b"");
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["pass"], false);
    assert!(!w.data.exists(), "status created {}", w.data.display());
}

#[test]
fn qa_gate_resolves_the_data_dir_like_the_hooks() {
    let w = World::new();
    let configured = w.path("configured-data");
    w.write_config(&json!({"dataDir": configured.to_str().unwrap()}));
    let (a, b, digest) = w.green_pair("cfg", now_ms());
    // record without --data-dir writes the pass under the config's dataDir.
    let out = w.run_args(QA_GATE, &record_args(S, &w.transcript, None, POINTER, &digest, [&a, &b]));
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(configured.join(format!("qa/qa-pass.{S}.json")).exists());
    // The hooks (no flag, no host variable) find the same pass.
    let stdin = w.hook_stdin("codex", "app-server:PreCompact:manual", S);
    let pre = w.run(&PRECOMPACT, &["--host", "codex"], &stdin);
    let v: Value = serde_json::from_slice(&pre.stdout).unwrap();
    assert_eq!(v["systemMessage"], messages::PRECOMPACT_ATTESTED);
    let out = w.run(QA_GATE, &["status", "--session-id", S], b"");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["qaDir"], configured.join("qa").to_str().unwrap());
    let out = w.run(QA_GATE, &["invalidate", "--session-id", S], b"");
    assert_eq!(out.status.code(), Some(0));
}

#[test]
fn unreadable_session_start_compact_is_unattested_with_the_code() {
    let w = World::new();
    let mut big: Value = serde_json::from_slice(&w.hook_stdin("codex", "app-server:SessionStart:compact", S)).unwrap();
    big["padding"] = json!("x".repeat(1024 * 1024 + 1));
    for (stdin, code) in [
        (big.to_string().into_bytes(), "hook_stdin_too_large"),
        (b"{\"source\":\"compact\",".to_vec(), "hook_stdin_invalid_json"),
        (b"{\"hook_event_name\":\"SessionStart\",\"source\":\"compact\",\"session_id\":\"a/b\"}".to_vec(), "hook_session_id_invalid"),
    ] {
        let out = w.run(&SESSION_HOOK, &["--host", "codex", "--expect", "SessionStart", "--data-dir", &w.data_arg()], &stdin);
        assert_eq!(out.status.code(), Some(0));
        let text = context_of(&out.stdout).unwrap_or_else(|| panic!("{code}: no context"));
        assert!(text.contains("UNATTESTED") && text.contains(code), "{code}: {text}");
    }
}

/// Every `"systemMessage":"..."` in the docs page, placeholders normalised.
fn documented_messages() -> Vec<String> {
    let page = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/gate-and-hooks.md")).unwrap();
    // A message is a text starting with `kijito-qa:` (the page also shows
    // the shape with "..." elsewhere).
    page.split("\"systemMessage\":\"")
        .skip(1)
        .map(|rest| rest.split('"').next().unwrap())
        .filter(|m| m.starts_with("kijito-qa:"))
        .map(normalise)
        .collect()
}

fn normalise(text: &str) -> String {
    let mut out = String::new();
    let mut in_ph = false;
    for c in text.chars() {
        match c {
            '<' => in_ph = true,
            '>' if in_ph => {
                in_ph = false;
                out.push_str("<x>");
            }
            _ if in_ph => {}
            _ => out.push(c),
        }
    }
    out.replace(" N ", " <x> ")
}

#[test]
fn the_docs_table_and_the_hooks_print_the_same_messages_whole() {
    let documented = documented_messages();
    for template in messages::ALL {
        assert!(documented.contains(&normalise(template)), "not in docs/gate-and-hooks.md: {template}");
    }
    for doc in &documented {
        assert!(messages::ALL.iter().any(|t| normalise(t) == *doc), "documented but never printed: {doc}");
    }
    // The real hooks print them whole (no clipping at 80 characters).
    let w = World::new();
    w.record_ok(S);
    let stop = w.run(
        &SESSION_HOOK,
        &["--host", "codex", "--expect", "Stop", "--data-dir", &w.data_arg()],
        &w.hook_stdin("codex", "app-server:Stop", S),
    );
    let v: Value = serde_json::from_slice(&stop.stdout).unwrap();
    let msg = v["systemMessage"].as_str().unwrap();
    let advice = "run `kijito-compact request` (or ask the user to run /compact) so re-entry is attested";
    let whole = |n: &str| messages::fill(messages::STOP_WAITING, n).replacen("<advice>", advice, 1);
    assert!(msg == whole("29") || msg == whole("30"), "{msg}");
    assert!(msg.ends_with("so re-entry is attested"), "printed whole: {msg}");
    let pre =
        w.run(&PRECOMPACT, &["--host", "codex", "--data-dir", &w.data_arg()], &w.hook_stdin("codex", "app-server:PreCompact:manual", S));
    assert_eq!(serde_json::from_slice::<Value>(&pre.stdout).unwrap()["systemMessage"], messages::PRECOMPACT_ATTESTED);
    let post =
        w.run(&POSTCOMPACT, &["--host", "codex", "--data-dir", &w.data_arg()], &w.hook_stdin("codex", "app-server:PostCompact:manual", S));
    assert_eq!(serde_json::from_slice::<Value>(&post.stdout).unwrap()["systemMessage"], messages::POSTCOMPACT_ATTESTED);
}

#[test]
fn concurrent_precompacts_never_promise_an_attestation_that_is_not_delivered() {
    let w = World::new();
    for round in 0..5 {
        let session = format!("race-{round}");
        w.record_ok(&session);
        let stdin = w.hook_stdin("codex", "app-server:PreCompact:manual", &session);
        let children: Vec<_> = (0..6).map(|_| w.spawn(&PRECOMPACT, &["--host", "codex", "--data-dir", &w.data_arg()], &stdin)).collect();
        let said: Vec<String> = children
            .into_iter()
            .map(|c| {
                let out = wait_bounded(c, 20);
                serde_json::from_slice::<Value>(&out.stdout).unwrap()["systemMessage"].as_str().unwrap().to_owned()
            })
            .collect();
        let attested_msgs = said.iter().filter(|m| m.as_str() == messages::PRECOMPACT_ATTESTED).count();
        assert!(attested_msgs <= 1, "one pass, at most one attested PreCompact: {said:?}");
        let attempt: Value =
            serde_json::from_slice(&std::fs::read(w.qa().join(format!("compaction-attempt.{session}.json"))).unwrap()).unwrap();
        let post = w.run(
            &POSTCOMPACT,
            &["--host", "codex", "--data-dir", &w.data_arg()],
            &w.hook_stdin("codex", "app-server:PostCompact:manual", &session),
        );
        let claimed = serde_json::from_slice::<Value>(&post.stdout).unwrap()["systemMessage"].as_str().unwrap().to_owned();
        // What the last PreCompact left on disk is what is delivered.
        assert_eq!(attempt["attested"] == true, claimed == messages::POSTCOMPACT_ATTESTED, "{attempt} / {claimed} / {said:?}");
    }
}

#[test]
fn wake_check_paths_are_absolute_like_every_path_flag() {
    let w = World::new();
    for flag in ["--workspace", "--data-dir"] {
        let out = w.run(&support::bin("wake-check"), &[flag, "relative/dir"], b"");
        assert_eq!(out.status.code(), Some(2), "{flag}: {}", String::from_utf8_lossy(&out.stderr));
    }
}

#[test]
fn an_unsafe_ancestor_of_a_private_path_is_refused() {
    use std::os::unix::fs::PermissionsExt;
    let w = World::new();
    // Reports two levels under a world-writable directory (no sticky bit).
    let open = w.path("open");
    std::fs::create_dir_all(open.join("a/reports")).unwrap();
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
    for d in ["a", "a/reports"] {
        std::fs::set_permissions(open.join(d), std::fs::Permissions::from_mode(0o700)).unwrap();
    }
    let spec = ReportSpec::new(now_ms());
    let a = open.join("a/reports/a.json");
    let b = open.join("a/reports/b.json");
    write_private_unchecked(&a, green_report(&spec).to_string().as_bytes());
    write_private_unchecked(&b, green_report(&ReportSpec { boot_nonce: nonce(5), ..spec.clone() }).to_string().as_bytes());
    let out = w.record(S, &spec.pointer_digest, &a, &b);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("writable by group or other without the sticky bit"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // A data dir reached through a symlinked ancestor is unusable for the hooks.
    std::fs::create_dir(w.path("real")).unwrap();
    std::os::unix::fs::symlink(w.path("real"), w.path("alias")).unwrap();
    let data = w.path("alias/data");
    let stdin = w.hook_stdin("codex", "app-server:PreCompact:manual", S);
    let pre = w.run(&PRECOMPACT, &["--host", "codex", "--data-dir", data.to_str().unwrap()], &stdin);
    let msg = serde_json::from_slice::<Value>(&pre.stdout).unwrap()["systemMessage"].as_str().unwrap().to_owned();
    assert_eq!(msg, messages::fill(messages::PRECOMPACT_UNATTESTED, "data_dir_unusable"));
    assert!(!w.path("real/data").exists(), "nothing was created through the symlink");
}

/// A 0600 file written without the library's checks (the attacker's setup).
fn write_private_unchecked(path: &Path, bytes: &[u8]) {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(path).unwrap();
    f.write_all(bytes).unwrap();
}
