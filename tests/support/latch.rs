//! A memory-latch world: a [`World`] (QA data dir, transcript, HOME), a
//! canonical workspace directory and a fixed boot id file, plus the real
//! `session-hook` run with a host payload whose `cwd` is that workspace
//! (tests/it/memory_latch_consent.rs, tests/it/hooks_wake.rs, tests/it/memory_latch_knobs.rs,
//! tests/it/memory_latch_wallet.rs, tests/it/consent_key.rs), and the one
//! consent request and gate run every latch test makes.

#![allow(clippy::unwrap_used)]

use super::gate::{assert_schema_valid, context_of, payload, wait_bounded, World, SESSION_HOOK};
use serde_json::{json, Value};
use std::fs;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

/// The boot id every latch world's boot id file holds.
pub(crate) const BOOT: &str = "11111111-2222-3333-4444-555555555555";

pub(crate) struct Env {
    pub w: World,
    /// The workspace (canonical path, so the latch's own checks agree).
    pub ws: PathBuf,
    /// The boot id file (`MEMORY_LATCH_BOOT_ID_FILE`), holding [`BOOT`].
    pub boot: PathBuf,
    /// More environment for every memory-latch and hook run of this world
    /// (e.g. `MEMORY_LATCH_WALLET_FILE`).
    pub env: Vec<(&'static str, PathBuf)>,
}

/// A fresh world with an empty workspace and the boot id file.
pub(crate) fn env() -> Env {
    let w = World::new();
    let ws = fs::canonicalize(w.dir()).unwrap().join("ws");
    fs::create_dir(&ws).unwrap();
    let boot = w.dir().join("boot_id");
    fs::write(&boot, format!("{BOOT}\n")).unwrap();
    Env { w, ws, boot, env: Vec::new() }
}

/// `o`, a memory-latch run of `args`, succeeded: its stdout.
pub(crate) fn expect_ok(args: &[&str], o: Output) -> String {
    assert!(o.status.success(), "{args:?}: {}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout).unwrap()
}

/// `o`, a memory-latch run of `args`, failed with exit 1 and `code` first
/// on stderr: the output.
pub(crate) fn expect_failure(args: &[&str], o: Output, code: &str) -> Output {
    assert_eq!(o.status.code(), Some(1), "{args:?}: {}", String::from_utf8_lossy(&o.stderr));
    assert_failed_with(&o, code);
    o
}

/// The first stderr line of `o` is `kijito_memory_latch_failed:<code>`.
pub(crate) fn assert_failed_with(o: &Output, code: &str) {
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.lines().next().unwrap_or(""), format!("kijito_memory_latch_failed:{code}"), "stderr: {err}");
}

/// The host-e2e payload key of a UserPromptSubmit hook on `host`.
pub(crate) fn ups(host: &str) -> &'static str {
    if host == "codex" {
        "app-server:UserPromptSubmit"
    } else {
        "UserPromptSubmit"
    }
}

impl Env {
    /// `bin` with this world's HOME, boot id file and [`Env::env`].
    pub(crate) fn command(&self, bin: &str) -> Command {
        let mut c = self.w.command(bin);
        c.env("MEMORY_LATCH_BOOT_ID_FILE", &self.boot).env_remove("MEMORY_LATCH_HMAC_KEY_FILE");
        for (k, v) in &self.env {
            c.env(k, v);
        }
        c
    }
    /// Run the real `wake-check --json <args> --workspace <ws> --data-dir
    /// <data>` of this world: (exit status, report).
    pub(crate) fn wake(&self, args: &[&str]) -> (i32, Value) {
        let mut c = self.command(&super::bin("wake-check"));
        c.arg("--json").args(args).arg("--workspace").arg(&self.ws).arg("--data-dir").arg(&self.w.data).stdin(Stdio::null());
        let o = c.output().unwrap();
        let v = serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&o.stderr)));
        (o.status.code().unwrap(), v)
    }
    /// Run the real `memory-latch <args> --workspace <ws>` (stdin empty).
    pub(crate) fn latch(&self, args: &[&str]) -> Output {
        let mut c = self.command(&super::bin("memory-latch"));
        c.args(args).arg("--workspace").arg(&self.ws).stdin(Stdio::null());
        c.output().unwrap()
    }
    /// [`Env::latch`] that must succeed; its stdout.
    pub(crate) fn ok(&self, args: &[&str]) -> String {
        expect_ok(args, self.latch(args))
    }
    /// [`Env::latch`] that must fail with exit 1 and `code` first on stderr.
    pub(crate) fn fails(&self, args: &[&str], code: &str) -> Output {
        expect_failure(args, self.latch(args), code)
    }
    /// Write `text` to `name` in the workspace; its path.
    pub(crate) fn file(&self, name: &str, text: &str) -> String {
        let p = self.ws.join(name);
        fs::write(&p, text).unwrap();
        p.to_str().unwrap().to_owned()
    }
    /// The real `memory-latch consent request --action-file <action>
    /// --summary <summary> --risk <risk>` (and `--json` when `json`), which
    /// must succeed: its (stdout, stderr).
    pub(crate) fn consent_request(&self, action: &str, summary: &str, risk: &str, json: bool) -> (String, String) {
        let mut args = vec!["consent", "request"];
        if json {
            args.push("--json");
        }
        args.extend(["--action-file", action, "--summary", summary, "--risk", risk]);
        let o = self.latch(&args);
        assert!(o.status.success(), "{args:?}: {}", String::from_utf8_lossy(&o.stderr));
        (String::from_utf8(o.stdout).unwrap(), String::from_utf8(o.stderr).unwrap())
    }
    /// A token-mode [`Env::consent_request`] ("the action"): the token it
    /// printed (`ACT-` and six characters).
    pub(crate) fn request_token(&self, action: &str, risk: &str) -> String {
        let (out, _) = self.consent_request(action, "the action", risk, false);
        let at = out.find("ACT-").expect("token printed");
        out[at..at + 10].to_owned()
    }
    /// A `--json` [`Env::consent_request`]: (the request as JSON, stderr).
    pub(crate) fn request_json(&self, action: &str, summary: &str, risk: &str) -> (Value, String) {
        let (out, err) = self.consent_request(action, summary, risk, true);
        (serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}")), err)
    }
    /// The argv of `memory-latch gate --json` for `action` on `src/a.rs`,
    /// intended and result both `a\n`, the head as checkpoint, then `extra`.
    pub(crate) fn gate_args(&self, action: &str, extra: &[&str]) -> Vec<String> {
        let intended = self.file("intended.txt", "a\n");
        let result = self.file("result.txt", "a\n");
        let cp = self.status()["head"]["payload_hash"].as_str().unwrap().to_owned();
        let mut v: Vec<String> = [
            "gate",
            "--json",
            "--action-file",
            action,
            "--intended",
            &intended,
            "--result",
            &result,
            "--checkpoint",
            &cp,
            "--target",
            "src/a.rs",
        ]
        .map(str::to_owned)
        .to_vec();
        v.extend(extra.iter().map(|s| s.to_string()));
        v
    }
    /// The real `memory-latch gate` of [`Env::gate_args`]: (exit status, its
    /// JSON report, or `Null` when stdout is not JSON).
    pub(crate) fn gate(&self, action: &str) -> (i32, Value) {
        let args = self.gate_args(action, &[]);
        let o = self.latch(&args.iter().map(String::as_str).collect::<Vec<_>>());
        (o.status.code().unwrap(), serde_json::from_slice(&o.stdout).unwrap_or(Value::Null))
    }
    /// `memory-latch status --json`.
    pub(crate) fn status(&self) -> Value {
        serde_json::from_str(&self.ok(&["status", "--json"])).unwrap()
    }
    /// The user sends `text` as their whole prompt: the UserPromptSubmit
    /// hook of `bin` with a real `host` payload (`cwd` = the workspace).
    /// Returns the context for the model.
    pub(crate) fn user_says_to(&self, bin: &str, host: &str, text: &str) -> Option<String> {
        let mut p = payload(host, ups(host));
        p["session_id"] = json!("s1");
        p["transcript_path"] = json!(self.host_transcript(host, "s1").to_str().unwrap());
        p["cwd"] = json!(self.ws.to_str().unwrap());
        p["prompt"] = json!(text);
        let out = self.hook_bin(bin, host, "UserPromptSubmit", &p);
        assert_schema_valid("user-prompt-submit", &out.stdout);
        context_of(&out.stdout)
    }
    /// Where `host` keeps the transcript of `session` under this world's
    /// HOME (Claude Code `~/.claude/projects/<project>/<session>.jsonl`,
    /// Codex `~/.codex/sessions/Y/M/D/rollout-<time>-<session>.jsonl`),
    /// holding a copy of [`World::transcript`] (0600), or absent when that
    /// file is: the one a token prompt may name (docs/protocol.md §10.4).
    pub(crate) fn host_transcript(&self, host: &str, session: &str) -> PathBuf {
        use std::os::unix::fs::PermissionsExt;
        let p = if host == "codex" {
            self.w.home.join(format!(".codex/sessions/2026/12/06/rollout-2026-12-06T01-00-00-{session}.jsonl"))
        } else {
            self.w.home.join(format!(".claude/projects/-ws/{session}.jsonl"))
        };
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        match fs::read(&self.w.transcript) {
            Ok(bytes) => {
                fs::write(&p, bytes).unwrap();
                fs::set_permissions(&p, fs::Permissions::from_mode(0o600)).unwrap();
            }
            Err(_) => {
                let _ = fs::remove_file(&p);
            }
        }
        p
    }
    /// [`Env::user_says_to`] the real session-hook.
    pub(crate) fn user_says(&self, host: &str, text: &str) -> Option<String> {
        self.user_says_to(&SESSION_HOOK, host, text)
    }
    /// Run the real `session-hook --expect <expect>` with `stdin` on this
    /// world's data dir and boot id file (bounded: 30 s); it must exit 0.
    pub(crate) fn session_hook(&self, host: &str, expect: &str, stdin: &Value) -> Output {
        self.hook_bin(&SESSION_HOOK, host, expect, stdin)
    }
    /// The PreToolUse guard's answer (None: no output) for a shell command
    /// the model of session `s1` runs (`shell` on Codex, `Bash` on Claude Code).
    pub(crate) fn guard(&self, host: &str, command: &str) -> Option<String> {
        let tool = if host == "codex" { "shell" } else { "Bash" };
        let out = self.session_hook(host, "PreToolUse", &super::gate::pre_tool_use(host, "s1", tool, json!({ "command": command })));
        (!out.stdout.is_empty()).then(|| String::from_utf8(out.stdout).unwrap())
    }
    /// [`Env::session_hook`] with the session-hook binary `bin`.
    pub(crate) fn hook_bin(&self, bin: &str, host: &str, expect: &str, stdin: &Value) -> Output {
        let mut c = self.command(bin);
        c.args(["--host", host, "--expect", expect, "--data-dir", &self.w.data_arg()]);
        let mut child = c.spawn().expect("spawn");
        {
            use std::io::Write;
            // A hook may answer without reading (session-hook without its
            // prompt-hook sibling exits at once): a closed pipe is its answer.
            match child.stdin.take().unwrap().write_all(stdin.to_string().as_bytes()) {
                Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
                r => r.unwrap(),
            }
        }
        let out = wait_bounded(child, 30);
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
        out
    }
    /// The real PreToolUse hook `bin`'s answer to `host`'s call of `tool`
    /// in `session`, the hook input's `cwd` at `cwd` (this world's
    /// transcript, permission mode `default`; the reply checked against the
    /// host's schema): `None` allowed, `Some((code, reason))` denied.
    pub(crate) fn pretool_answer(
        &self,
        bin: &str,
        session: &str,
        cwd: &std::path::Path,
        host: &str,
        tool: &str,
        input: Value,
    ) -> Option<(String, String)> {
        let mut v = super::gate::pre_tool_use(host, session, tool, input);
        v["transcript_path"] = json!(self.w.transcript.to_str().unwrap());
        v["cwd"] = json!(cwd.to_str().unwrap());
        v["permission_mode"] = json!("default");
        let out = self.hook_bin(bin, host, "PreToolUse", &v);
        assert_schema_valid("pre-tool-use", &out.stdout);
        if out.stdout.iter().all(u8::is_ascii_whitespace) {
            return None;
        }
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        let o = &v["hookSpecificOutput"];
        assert_eq!(o["permissionDecision"], "deny", "{v}");
        let reason = o["permissionDecisionReason"].as_str().unwrap().to_owned();
        let code = reason.split("denied (").nth(1).and_then(|r| r.split([')', ':']).next()).unwrap_or("").to_owned();
        Some((code, reason))
    }
}
