#![no_main]
//! Hook stdin of every event: parsing never panics; a PreToolUse call is
//! either judged by the guard or, unreadable, denied (never silently allowed
//! when it names a shell tool).
use kijito_hooks::{guard, parse_input};
use kijito_protocol::command::HelperDir;
use libfuzzer_sys::fuzz_target;
use std::path::Path;

fuzz_target!(|data: &[u8]| {
    let dir = HelperDir::new(Path::new("/opt/kq/bin")).unwrap();
    for event in ["PreCompact", "PostCompact", "SessionStart", "UserPromptSubmit", "Stop", "PreToolUse"] {
        match parse_input(data, event) {
            Ok(input) => {
                assert_eq!(input.event, event);
                if event == "PreToolUse" {
                    if let Some(reply) = guard::guard_tool_call(Some(&dir), &input) {
                        assert!(reply.contains("\"permissionDecision\":\"deny\""));
                    }
                }
            }
            Err(e) if event == "PreToolUse" => {
                let named_shell = serde_json::from_slice::<serde_json::Value>(data)
                    .ok()
                    .and_then(|v| v.get("tool_name").and_then(|t| t.as_str()).map(|t| guard::SHELL_TOOLS.contains(&t)))
                    .unwrap_or(true);
                let reply = guard::unreadable(data, &e);
                if named_shell {
                    assert!(reply.is_some_and(|r| r.contains("\"permissionDecision\":\"deny\"")));
                }
            }
            Err(_) => {}
        }
    }
});
