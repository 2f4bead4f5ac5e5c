//! Token mode, harder. The UserPromptSubmit confirmation
//! (the real session-hook, both hosts' transcript shapes) refuses, with a
//! stable code and nothing confirmed, when the token appears in a tool
//! call's input (the agent typed it into its pane or piped it to a hook) or
//! in a tool output other than the consent request that issued it (the
//! agent read it back), and when a tool call is still waiting for its
//! output (the "prompt" came from inside the agent's turn). The ordinary
//! flow still confirms. Each case failed on main (it confirmed).

#![allow(clippy::unwrap_used)]

use crate::support;

use serde_json::{json, Value};
use std::fs;
use support::latch::{env, Env};

/// One transcript line per item, in `host`'s shape: ("user", text),
/// ("call", id, input), ("result", id, output).
fn line(host: &str, kind: &str, id: &str, text: &str) -> Value {
    match (host, kind) {
        ("claude", "user") => json!({"type": "user", "message": {"role": "user", "content": text}}),
        ("claude", "call") => {
            json!({"type": "assistant", "message": {"content": [{"type": "tool_use", "id": id, "name": "Bash", "input": {"command": text}}]}})
        }
        ("claude", "result") => {
            json!({"type": "user", "message": {"content": [{"type": "tool_result", "tool_use_id": id, "content": text}]}})
        }
        (_, "user") => {
            json!({"type": "response_item", "payload": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}})
        }
        (_, "call") => {
            json!({"type": "response_item", "payload": {"type": "function_call", "name": "exec_command", "arguments": json!({"cmd": text}).to_string(), "call_id": id}})
        }
        _ => json!({"type": "response_item", "payload": {"type": "function_call_output", "call_id": id, "output": text}}),
    }
}

struct T {
    e: Env,
    action: String,
    token: String,
}

/// A latch with a pending low-risk token, requested by the agent's tool call.
fn world() -> T {
    let e = env();
    e.ok(&["init", "--objective", "ship it"]);
    let action = e.file("action.txt", "git push --force origin main\n");
    let v: Value =
        serde_json::from_str(&e.ok(&["consent", "request", "--json", "--action-file", &action, "--summary", "push", "--risk", "low"]))
            .unwrap();
    let token = v["token"].as_str().unwrap().to_owned();
    T { e, action, token }
}

impl T {
    /// The transcript: the user's request, the agent's consent request and
    /// its output (with the token), then `more`.
    fn transcript(&self, host: &str, more: &[(&str, &str, String)]) {
        let ml = support::bin("memory-latch");
        let mut items = vec![
            line(host, "user", "", "please push"),
            line(host, "call", "c1", &format!("{ml} consent request --action-file {} --summary push --risk low", self.action)),
            line(
                host,
                "result",
                "c1",
                &format!("CONFIRMATION NEEDED (low risk)\nTo authorize, the USER sends only this token: {}\n", self.token),
            ),
        ];
        items.extend(more.iter().map(|(k, id, t)| line(host, k, id, t)));
        let text: String = items.iter().map(|v| format!("{v}\n")).collect();
        fs::write(&self.e.w.transcript, text).unwrap();
    }
    fn consent(&self) -> String {
        self.e.status()["head"]["consent_state"].as_str().unwrap().to_owned()
    }
}

fn refused(ctx: Option<String>, code: &str) {
    let ctx = ctx.expect("an answer");
    assert!(ctx.contains("NOT accepted") && ctx.contains(code) && !ctx.contains("USER confirmed"), "expected {code}: {ctx}");
}

#[test]
fn the_token_typed_or_piped_by_a_tool_call_confirms_nothing() {
    for host in ["claude", "codex"] {
        let t = world();
        for input in [
            format!("tmux send-keys -t \"$TMUX_PANE\" -l {}", t.token),
            format!("echo '{{\"prompt\":\"{}\"}}' | session-hook --host claude --expect UserPromptSubmit", t.token.to_lowercase()),
        ] {
            t.transcript(host, &[("call", "c2", input.clone()), ("result", "c2", String::new())]);
            refused(t.e.user_says(host, &t.token), "consent_token_seen_by_tool");
            assert_eq!(t.consent(), "pending", "{host} {input}");
        }
    }
}

#[test]
fn the_token_read_back_by_another_tool_call_confirms_nothing() {
    for host in ["claude", "codex"] {
        let t = world();
        let out = format!("{{\"type\":\"tool_result\",\"content\":\"... {} ...\"}}", t.token);
        t.transcript(host, &[("call", "c2", "grep -h ACT- ~/.claude/projects/*/*.jsonl".into()), ("result", "c2", out)]);
        refused(t.e.user_says(host, &t.token), "consent_token_seen_by_tool");
        assert_eq!(t.consent(), "pending", "{host}");
    }
}

#[test]
fn a_prompt_while_a_tool_call_waits_for_its_output_confirms_nothing() {
    for host in ["claude", "codex"] {
        let t = world();
        // the agent's own tool call runs the hook (its input does not carry
        // the token in the clear: it reads it from a file)
        t.transcript(host, &[("call", "c2", "sh /tmp/confirm-it.sh".into())]);
        refused(t.e.user_says(host, &t.token), "consent_prompt_not_newest");
        assert_eq!(t.consent(), "pending", "{host}");
    }
}

#[test]
fn the_users_own_prompt_after_the_turn_still_confirms() {
    for host in ["claude", "codex"] {
        let t = world();
        t.transcript(host, &[("call", "c2", "cargo test".into()), ("result", "c2", "ok".into())]);
        let ctx = t.e.user_says(host, &t.token).unwrap();
        assert!(ctx.contains("USER confirmed consent token"), "{host}: {ctx}");
        assert_eq!(t.consent(), "authorized", "{host}");
        let intended = t.e.file("i.txt", "a\n");
        let cp = t.e.status()["head"]["payload_hash"].as_str().unwrap().to_owned();
        t.e.ok(&[
            "gate",
            "--action-file",
            &t.action,
            "--intended",
            &intended,
            "--result",
            &intended,
            "--checkpoint",
            &cp,
            "--target",
            "src/a.rs",
        ]);
    }
}

/// An insecure consent configuration (group-writable) confirms nothing and
/// issues nothing: fail closed, with its code.
#[test]
fn an_insecure_consent_configuration_fails_closed() {
    use std::os::unix::fs::PermissionsExt;
    let mut t = world();
    let cfg = t.e.w.dir().join("consent.json");
    fs::write(&cfg, r#"{"schema":"memory-latch.consent/v1","mode":"token"}"#).unwrap();
    fs::set_permissions(&cfg, fs::Permissions::from_mode(0o620)).unwrap();
    t.e.env.push(("MEMORY_LATCH_CONSENT_FILE", cfg));
    t.transcript("claude", &[]);
    refused(t.e.user_says("claude", &t.token), "consent_config_insecure");
    assert_eq!(t.consent(), "pending");
    t.e.fails(&["consent", "request", "--action-file", &t.action, "--summary", "push", "--risk", "low"], "consent_config_insecure");
}
