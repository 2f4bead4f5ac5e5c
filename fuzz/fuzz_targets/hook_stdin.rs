#![no_main]
//! Hook stdin of every event the hosts send (the five the toolkit installs,
//! PreToolUse, and the ones it does not serve): parsing never panics; an
//! input is accepted for at most one expected event, the one it names, with
//! a valid session id; a PreToolUse call is either judged by the guard (a
//! shell line the guard denies is denied by the hook) or, unreadable, denied
//! unless it is readable JSON naming a non-shell tool; every reply the hooks
//! build from the input's text is one JSON object carrying that text (one
//! line, bounded, for `systemMessage`).
use kijito_hooks::{context_reply, deny_reply, guard, messages, one_line, parse_input, postcompact_reply, stop_reply, Event};
use kijito_protocol::command::{self, HelperDir, Verdict};
use kijito_protocol::ids::SessionId;
use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use std::path::Path;

const EVENTS: &[&str] = &[
    "PreCompact", "PostCompact", "SessionStart", "UserPromptSubmit", "Stop", "PreToolUse",
    // Sent by the hosts, never installed: must never parse as one of ours.
    "SubagentStop", "SubagentStart", "PostToolUse", "Notification", "SessionEnd", "PermissionRequest",
];

fn check_one_line(text: &str) {
    let l = one_line(text);
    assert!(!l.chars().any(char::is_control), "{l:?}");
    assert!(l.chars().count() <= messages::MAX_MESSAGE_CHARS + 1);
    if !l.ends_with('…') {
        assert_eq!(l, l.trim());
    }
    let v: Value = serde_json::from_str(&stop_reply(text)).unwrap();
    assert_eq!(v["systemMessage"].as_str(), Some(l.as_str()));
    let v: Value = serde_json::from_str(&postcompact_reply(Some(text))).unwrap();
    assert_eq!(v["continue"], Value::Bool(true));
    assert_eq!(v["systemMessage"].as_str(), Some(l.as_str()));
}

fuzz_target!(|data: &[u8]| {
    static DIR: std::sync::OnceLock<HelperDir> = std::sync::OnceLock::new();
    let dir = DIR.get_or_init(|| HelperDir::new(Path::new("/opt/kq/bin")).unwrap());
    let json: Option<Value> = serde_json::from_slice(data).ok();
    // Each parse_input call parses the JSON again: try the event the input
    // names, PreToolUse (the guard), and one other event picked by length.
    let named = json.as_ref().and_then(|v| v.get("hook_event_name")).and_then(Value::as_str).and_then(|n| EVENTS.iter().copied().find(|e| *e == n));
    let mut tried: Vec<&str> = vec!["PreToolUse", EVENTS[data.len() % EVENTS.len()]];
    tried.extend(named);
    tried.sort_unstable();
    tried.dedup();
    let mut accepted = 0;
    for &event in &tried {
        match parse_input(data, event) {
            Ok(input) => {
                accepted += 1;
                assert_eq!(input.event, event);
                assert_eq!(json.as_ref().and_then(|v| v["hook_event_name"].as_str()), Some(event));
                assert!(SessionId::parse(input.session_id.as_str()).is_ok());
                for text in [&input.source, &input.trigger, &input.tool_name].into_iter().flatten() {
                    check_one_line(text);
                    for ev in [Event::SessionStart, Event::UserPromptSubmit] {
                        let v: Value = serde_json::from_str(&context_reply(ev, text)).unwrap();
                        assert_eq!(v["hookSpecificOutput"]["additionalContext"].as_str(), Some(text.as_str()));
                        assert_eq!(v["hookSpecificOutput"]["hookEventName"].as_str(), Some(ev.name()));
                    }
                    let v: Value = serde_json::from_str(&deny_reply(text)).unwrap();
                    assert_eq!(v["hookSpecificOutput"]["permissionDecision"], "deny");
                }
                if event == "PreToolUse" {
                    let reply = guard::guard_tool_call(Some(dir), &input);
                    if let Some(r) = &reply {
                        assert!(r.contains("\"permissionDecision\":\"deny\""));
                    }
                    let line = input.tool_input.as_ref().and_then(|t| t.get("command")).and_then(Value::as_str);
                    if let Some(line) = line {
                        if let Verdict::Deny(_) = command::guard_line(line, Some(dir)) {
                            assert!(reply.is_some(), "the guard denies {line:?} but the hook allows it");
                        }
                    }
                }
            }
            Err(e) if event == "PreToolUse" => {
                let named_shell = json
                    .as_ref()
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
    assert!(accepted <= 1);
    if accepted == 1 {
        assert!(named.is_some());
    }
    if let Some(m) = json.as_ref().and_then(|v| v.get("prompt")).and_then(Value::as_str) {
        check_one_line(m);
    }
});
