//! memory-latch's governance knobs driven by the real hooks:
//! the Stop hook writes a `turn_checkpoint` every `checkpoint_freq_turns`
//! (5) turns of the latch in the hook input's `cwd`, counted once per
//! UserPromptSubmit→Stop pair (a re-fired Stop and subagent hooks count
//! nothing); when the session's context ratio reaches
//! `fatigue_trigger_context_ratio` (0.75) it forces a `fatigue_checkpoint`
//! and one-step mode, which the gate enforces (one gated action per
//! checkpoint naming the next step) until the ratio falls again. Real
//! binaries (memory-latch, session-hook), real host payloads, real files.

#![allow(clippy::unwrap_used)]

use crate::support;
use support::gate as support_gate;

use serde_json::{json, Value};
use std::fs;
use std::io::Write;
use support_gate::*;

/// A latch world ([`support::latch::Env`]) whose hooks run as `host`.
struct Env {
    l: support::latch::Env,
    host: &'static str,
}

impl std::ops::Deref for Env {
    type Target = support::latch::Env;
    fn deref(&self) -> &Self::Target {
        &self.l
    }
}

fn env(host: &'static str) -> Env {
    let e = Env { l: support::latch::env(), host };
    e.ok(&["init", "--objective", "ship the knobs", "--next-step", "write the tests"]);
    e.context(0.30);
    e
}

impl Env {
    fn head(&self) -> (u64, String) {
        let s = self.status();
        (s["head"]["seq"].as_u64().unwrap(), s["head"]["event"].as_str().unwrap().to_owned())
    }
    /// The session's context: one usage line of the host's real shape.
    fn context(&self, ratio: f64) {
        let (window, line) = if self.host == "claude" { (200_000u64, None) } else { (258_400u64, Some(())) };
        let used = (window as f64 * ratio) as u64;
        let v = match line {
            None => {
                json!({"type": "assistant", "isSidechain": false, "message": {"model": "claude-sonnet-4-5-20250929", "role": "assistant",
                "usage": {"input_tokens": 10, "cache_creation_input_tokens": 0, "cache_read_input_tokens": used - 10, "output_tokens": 5}}})
            }
            Some(()) => json!({"type": "event_msg", "payload": {"type": "token_count", "info": {
                "last_token_usage": {"input_tokens": used, "total_tokens": used}, "model_context_window": window}}}),
        };
        let mut f = fs::OpenOptions::new().append(true).open(&self.w.transcript).unwrap();
        writeln!(f, "{v}").unwrap();
    }
    fn key(&self, event: &str) -> &'static str {
        match (self.host, event) {
            ("claude", "UserPromptSubmit") => "UserPromptSubmit",
            ("claude", _) => "Stop",
            (_, "UserPromptSubmit") => "app-server:UserPromptSubmit",
            _ => "app-server:Stop",
        }
    }
    /// Run the hook for `event` with a real payload of this host; `patch`
    /// edits it (subagent fields, prompt). Returns the parsed answer.
    fn hook_with(&self, event: &str, key: &str, patch: impl FnOnce(&mut Value)) -> Option<Value> {
        let mut p = payload(self.host, key);
        p["session_id"] = json!("s1");
        // the host's own transcript of s1 (a token prompt names no other, docs/protocol.md §10.4)
        p["transcript_path"] = json!(self.host_transcript(self.host, "s1").to_str().unwrap());
        p["cwd"] = json!(self.ws.to_str().unwrap());
        patch(&mut p);
        let out = self.w.run(
            &SESSION_HOOK,
            &["--host", self.host, "--expect", event, "--data-dir", &self.w.data_arg()],
            p.to_string().as_bytes(),
        );
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
        assert_schema_valid(if event == "Stop" { "stop" } else { "user-prompt-submit" }, &out.stdout);
        (!out.stdout.is_empty()).then(|| serde_json::from_slice(&out.stdout).unwrap())
    }
    fn prompt(&self, text: &str) -> Option<String> {
        let v = self.hook_with("UserPromptSubmit", self.key("UserPromptSubmit"), |p| p["prompt"] = json!(text))?;
        v["hookSpecificOutput"]["additionalContext"].as_str().map(str::to_owned)
    }
    /// Stop's message when it says something about the latch (the QA
    /// nudges share the message above `qaAtContextRatio`).
    fn stop(&self) -> Option<String> {
        self.stop_all().filter(|m| m.contains("memory-latch:"))
    }
    fn stop_all(&self) -> Option<String> {
        let v = self.hook_with("Stop", self.key("Stop"), |_| {})?;
        Some(v["systemMessage"].as_str().unwrap().to_owned())
    }
    /// One whole turn: the user's prompt, then Stop. Returns Stop's message.
    fn turn(&self) -> Option<String> {
        self.prompt("carry on");
        self.stop()
    }
    fn subagent_turn(&self) {
        for (event, key) in [("UserPromptSubmit", self.key("UserPromptSubmit")), ("Stop", self.key("Stop"))] {
            let out = self.hook_with(event, key, |p| {
                p["agent_id"] = json!("a1b2c3");
                p["agent_type"] = json!("general-purpose");
                p["prompt"] = json!("subagent work");
            });
            assert_eq!(out, None, "a subagent hook says nothing about the latch");
        }
    }
    /// [`support::latch::Env::gate`], whose report must be JSON here.
    fn gate(&self, action: &str) -> (i32, Value) {
        let (code, v) = self.l.gate(action);
        assert!(!v.is_null(), "the gate answers JSON (exit {code})");
        (code, v)
    }
    fn trusted(&self) {
        let v: Value = serde_json::from_str(&self.ok(&["verify", "--json"])).unwrap();
        assert_eq!(v["trusted"], true, "{v}");
    }
}

fn check<'a>(report: &'a Value, name: &str) -> Option<&'a Value> {
    report["checks"].as_array().unwrap().iter().find(|c| c["name"] == name)
}

#[test]
fn stop_writes_one_checkpoint_every_five_turns_counted_once_per_prompt_and_never_for_subagents() {
    for host in ["claude", "codex"] {
        let e = env(host);
        for i in 1..=4 {
            assert_eq!(e.turn(), None, "{host} turn {i}");
            // noise that must not count: a Stop without a new prompt, a subagent's hooks
            assert_eq!(e.stop(), None);
            e.subagent_turn();
        }
        if host == "claude" {
            // the real re-fired Stop (stop_hook_active after a Stop block) counts nothing
            assert_eq!(e.hook_with("Stop", "Stop(stop_hook_active=true, after a Stop block)", |_| {}), None);
        }
        assert_eq!(e.head(), (1, "init".to_owned()), "{host}: 4 turns, no checkpoint yet");
        let msg = e.turn().expect("the 5th turn writes the checkpoint");
        assert!(msg.contains("automatic checkpoint after 5 turns (entry 2)"), "{msg}");
        assert_eq!(e.head(), (2, "turn_checkpoint".to_owned()));
        let turns: Value = serde_json::from_slice(&fs::read(e.ws.join(".memory-latch/turns.json")).unwrap()).unwrap();
        assert_eq!(
            (turns["turns"].as_u64(), turns["since_checkpoint"].as_u64(), turns["open"].as_array().map(Vec::len)),
            (Some(5), Some(0), Some(0)),
            "{turns}"
        );
        // the agent's own checkpoint restarts the count: 2 turns, a checkpoint, then 5 more
        e.turn();
        e.prompt("carry on");
        e.ok(&["checkpoint", "--next-step", "review"]);
        assert_eq!(e.stop(), None);
        for _ in 0..4 {
            assert_eq!(e.turn(), None);
        }
        assert!(e.turn().unwrap().contains("after 5 turns (entry 4)"));
        assert_eq!(e.head(), (4, "turn_checkpoint".to_owned()));
        // outside a latch workspace nothing is counted or written
        let elsewhere = e.hook_with("Stop", e.key("Stop"), |p| p["cwd"] = json!(e.w.dir().to_str().unwrap()));
        assert_eq!(elsewhere, None);
        e.trusted();
    }
}

#[test]
fn context_fatigue_forces_a_checkpoint_and_one_step_mode_that_the_gate_enforces() {
    for host in ["claude", "codex"] {
        let e = env(host);
        let a1 = e.file("a1.txt", "rm -rf build/\n");
        let a2 = e.file("a2.txt", "git push origin main\n");
        // below the threshold: no mode, and the gate has its five checks only
        let t = e.request_token(&a1, "low");
        assert!(e.prompt(&t).unwrap().contains("confirmed consent"));
        assert_eq!(e.stop(), None);
        e.context(0.74);
        assert_eq!(e.turn(), None, "{host}: 74% is below 75%");
        assert_eq!(e.status()["one_step"], Value::Null);
        // crossing 75% (81%): the forced checkpoint and one-step mode
        e.context(0.81);
        e.prompt("carry on");
        let msg = e.stop_all().expect("fatigue message");
        assert!(
            msg.contains("memory-latch: context at 81%") && msg.contains("one-step mode") && msg.contains("forced checkpoint"),
            "{msg}"
        );
        assert!(msg.contains("kijito-qa: context at 81%"), "the QA nudge and the latch line are joined: {msg}");
        let s = e.status();
        assert_eq!((s["head"]["event"].as_str(), s["one_step"].as_str()), (Some("fatigue_checkpoint"), Some("ready")), "{s}");
        assert!(fs::read_to_string(e.ws.join(".memory-latch/_manifest.md")).unwrap().contains("- one-step mode: ready\n"));
        // staying above: no second forced checkpoint; the model is told at each prompt
        let ctx = e.prompt("carry on").unwrap();
        assert!(ctx.contains("ONE-STEP MODE") && ctx.contains("\"write the tests\""), "{ctx}");
        assert_eq!(e.stop(), None);
        // one gated action: the authorized a1 passes (the sixth check names the step)
        let (code, r) = e.gate(&a1);
        assert_eq!(code, 0, "{r}");
        assert_eq!(check(&r, "one_step").unwrap()["passed"], true);
        assert_eq!(e.status()["one_step"], "step_taken");
        // a second action, even confirmed by the user, is refused until a checkpoint names it
        let t2 = e.request_token(&a2, "low");
        assert!(e.prompt(&t2).unwrap().contains("confirmed consent"));
        let (code, r) = e.gate(&a2);
        assert_eq!(code, 1);
        assert_eq!(check(&r, "one_step").unwrap()["code"], "one_step_checkpoint_required", "{r}");
        assert!(r["remediation"].as_str().unwrap().contains("--next-step"), "{r}");
        // the PreToolUse policy holds every mutating call too, and names the way out
        let call = json!({"session_id": "s1", "cwd": e.ws.to_str().unwrap(), "hook_event_name": "PreToolUse", "tool_name": "Bash",
            "tool_input": {"command": "touch notes.txt"}, "tool_use_id": "t1", "transcript_path": null, "turn_id": "u1", "model": "m", "permission_mode": "default"});
        let out = String::from_utf8(e.hook_bin(&support::bin("pretool-hook"), host, "PreToolUse", &call).stdout).unwrap();
        assert!(out.contains("policy_one_step_no_next_step") && out.contains("checkpoint --workspace"), "{out}");
        assert!(e.prompt("carry on").unwrap().contains("The declared step was taken"));
        e.stop();
        // a checkpoint without a next step does not reopen the mode
        e.fails(&["checkpoint", "--known", "a1 done"], "one_step_next_step_required");
        e.ok(&["checkpoint", "--next-step", "push a2"]);
        assert_eq!(e.status()["one_step"], "ready");
        let (code, r) = e.gate(&a2);
        assert_eq!(code, 0, "{r}");
        assert_eq!(e.status()["one_step"], "step_taken");
        // the ratio falls (after a compaction): one-step mode ends
        e.context(0.20);
        e.prompt("carry on");
        assert!(e.stop().unwrap().contains("one-step mode ended"));
        let s = e.status();
        assert_eq!((s["head"]["event"].as_str(), &s["one_step"]), (Some("fatigue_cleared"), &Value::Null));
        assert_eq!(e.prompt("carry on"), None);
        let a3 = e.file("a3.txt", "deploy\n");
        let t3 = e.request_token(&a3, "low");
        e.prompt(&t3);
        let (code, r) = e.gate(&a3);
        assert_eq!(code, 0, "{r}");
        assert!(check(&r, "one_step").is_none(), "no sixth check outside one-step mode: {r}");
        e.trusted();
        // The latch's turn ends are journal lines (docs/protocol.md §13): one-step mode entered, then left.
        let journal = fs::read_to_string(e.w.data.join("journal/s1.jsonl")).unwrap();
        let modes: Vec<Value> = journal
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .filter(|v| v["kind"] == "latch_mode")
            .map(|v| json!([v["entry"], v["from"], v["mode"]]))
            .collect();
        assert_eq!(
            modes,
            [json!(["fatigue_checkpoint", "normal", "one_step"]), json!(["fatigue_cleared", "one_step", "normal"])],
            "{host}"
        );
    }
}

#[test]
fn a_hand_edited_one_step_flag_breaks_the_chain() {
    // The mode lives in the hashed entry, not in a side file: removing it by
    // editing the manifest is a verification failure (and Silent Witness).
    let e = env("claude");
    e.context(0.9);
    e.turn();
    assert_eq!(e.status()["one_step"], "ready");
    let m = e.ws.join(".memory-latch/_manifest.md");
    let text = fs::read_to_string(&m).unwrap().replace(",\"one_step\":\"ready\"", "").replace("- one-step mode: ready\n", "");
    fs::write(&m, text).unwrap();
    let a = e.file("a.txt", "x\n");
    e.fails(&["consent", "request", "--action-file", &a, "--summary", "s", "--risk", "low"], "latch_untrusted");
    // and a turns.json made a symlink is refused, never followed
    let e = env("codex");
    let target = e.w.dir().join("elsewhere.json");
    fs::write(&target, "{}").unwrap();
    std::os::unix::fs::symlink(&target, e.ws.join(".memory-latch/turns.json")).unwrap();
    for _ in 0..5 {
        e.turn();
    }
    assert_eq!(e.head(), (1, "init".to_owned()));
    assert_eq!(fs::read_to_string(&target).unwrap(), "{}");
}
