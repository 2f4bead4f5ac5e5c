#![no_main]
//! The command guard (the one decision of PreToolUse and `qa-gate
//! check-command`) never panics; a line it lets through as a helper command
//! passes the grammar, and a line the grammar accepts is never waved through
//! as unrelated; the PreToolUse hook, given the line as a Bash call, denies
//! exactly when `qa-gate check-command` does.
use kijito_hooks::{guard, parse_input};
use kijito_protocol::command::{self, HelperDir, Verdict};
use libfuzzer_sys::fuzz_target;
use std::path::Path;

fuzz_target!(|data: &[u8]| {
    let Ok(line) = std::str::from_utf8(data) else { return };
    static DIR: std::sync::OnceLock<HelperDir> = std::sync::OnceLock::new();
    let dir = DIR.get_or_init(|| HelperDir::new(Path::new("/opt/kq/bin")).unwrap());
    let grammar_ok = command::check_command(line.trim_end_matches([' ', '\n']), dir).is_ok();
    let verdict = command::guard_line(line, Some(dir));
    match &verdict {
        Verdict::Helper(_) => assert!(grammar_ok),
        Verdict::Unrelated => {
            assert!(!grammar_ok, "a helper command judged unrelated: {line:?}");
            let in_dir = line.split(|c: char| c.is_whitespace() || ";|&()<>".contains(c)).any(|w| w.starts_with("/opt/kq/bin/"));
            assert!(!in_dir, "a helper-dir path judged unrelated: {line:?}");
        }
        Verdict::Deny(e) => assert!(!e.code().is_empty()),
    }
    // The PreToolUse hook, given the line as a Bash call, decides exactly as
    // `qa-gate check-command` (both call guard_line): deny iff Deny.
    let stdin = format!(
        r#"{{"session_id":"2208dc6c-1602-4db0-9c33-9125ee25dc44","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{{"command":{}}}}}"#,
        serde_json::to_string(line).expect("a str serialises")
    );
    let hook_denies = match parse_input(stdin.as_bytes(), "PreToolUse") {
        Ok(input) => guard::guard_tool_call(Some(dir), &input).is_some(),
        // Only a line padded past the stdin bound fails to parse; then the hook denies.
        Err(e) => guard::unreadable(stdin.as_bytes(), &e).is_some(),
    };
    assert_eq!(hook_denies, !verdict.allowed(), "hook and check-command disagree on {line:?}");
    // Without a known root nothing that reaches a helper is allowed.
    if let Verdict::Helper(_) = command::guard_line(line, None) {
        panic!("allowed without a root: {line:?}");
    }
});
