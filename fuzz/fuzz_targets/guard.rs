#![no_main]
//! The command guard (the one decision of PreToolUse and `qa-gate
//! check-command`) never panics; a line it lets through as a helper command
//! passes the grammar, and a line the grammar accepts is never waved through
//! as unrelated.
use kijito_protocol::command::{self, HelperDir, Verdict};
use libfuzzer_sys::fuzz_target;
use std::path::Path;

fuzz_target!(|data: &[u8]| {
    let Ok(line) = std::str::from_utf8(data) else { return };
    let dir = HelperDir::new(Path::new("/opt/kq/bin")).unwrap();
    let grammar_ok = command::check_command(line.trim_end_matches([' ', '\n']), &dir).is_ok();
    match command::guard_line(line, Some(&dir)) {
        Verdict::Helper(_) => assert!(grammar_ok),
        Verdict::Unrelated => {
            assert!(!grammar_ok, "a helper command judged unrelated: {line:?}");
            let in_dir = line.split(|c: char| c.is_whitespace() || ";|&()<>".contains(c)).any(|w| w.starts_with("/opt/kq/bin/"));
            assert!(!in_dir, "a helper-dir path judged unrelated: {line:?}");
        }
        Verdict::Deny(e) => assert!(!e.code().is_empty()),
    }
    // Without a known root nothing that reaches a helper is allowed.
    if let Verdict::Helper(_) = command::guard_line(line, None) {
        panic!("allowed without a root: {line:?}");
    }
});
