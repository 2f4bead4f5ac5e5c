//! Consent mode `host` (docs/protocol.md §8a step 7a, §10.3): where the
//! host can ask the user itself, the PreToolUse policy puts an irreversible
//! call to the user in the host's own permission dialog
//! (`permissionDecision: "ask"`) instead of the token flow, and the
//! PostToolUse (or PostToolUseFailure) hook records the call that ran, with
//! its action hash, as a `host_consent` latch entry.
//!
//! Measured (§8a): only Claude Code's interactive TUI shows that dialog (in
//! every permission mode, `bypassPermissions` included); headless `claude
//! -p` refuses an `ask`ed call without asking anyone, and Codex 0.169 fails
//! the hook and runs the call. So the ask is answered only when the host is
//! Claude Code, `CLAUDE_CODE_ENTRYPOINT` is `cli`, and the host process (the
//! hook's parent, past a `sh -c`) has a terminal on its fd 0; anything else,
//! and every high-risk call (the user's second message), keeps the token flow.
//!
//! Between the two events an owner-only "asked" record in the data dir's
//! `actions/` holds what was asked, keyed by the session and the host's
//! `tool_use_id` (the same at PreToolUse and PostToolUse, measured): a post
//! event with no record (the token flow, a call nobody asked about) records
//! nothing, and a record is used once.

use crate::env::HookEnv;
use crate::{parse_input, Event, HookInput, Host};
use kijito_compact::procfs::Procs;
use kijito_policy::{Classification, Risk};
use kijito_protocol::error::{Error, Result};
use kijito_protocol::ids::{ActionHash, SessionId, ToolUseId};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

/// The asked record's schema.
pub const ASKED_SCHEMA: &str = "kijito-qa.host-ask/v1";
/// An asked record whose post event never came (the user answered No, or
/// the call sent none) is stale after this and records nothing.
pub const ASKED_TTL_MS: i64 = 60 * 60 * 1000;
const MAX_ASKED_BYTES: u64 = 8 * 1024;
/// The environment variable Claude Code sets for its hooks: `cli` in the
/// interactive TUI, `sdk-cli` under `claude -p` (measured, §8a).
pub const ENTRYPOINT_ENV: &str = "CLAUDE_CODE_ENTRYPOINT";

/// Whether a PreToolUse `ask` reaches a person here: Claude Code's TUI
/// (see the module docs). `me` is this process's pid.
pub fn host_can_ask(host: Host, entrypoint: Option<&str>, procs: &dyn Procs, me: u32) -> bool {
    match host {
        Host::Claude => entrypoint == Some("cli") && host_has_terminal(procs, me),
        Host::Codex => false,
    }
}

/// The host process's fd 0 is a terminal: the first ancestor (at most three
/// up) that is not a shell running the hook command.
fn host_has_terminal(procs: &dyn Procs, me: u32) -> bool {
    let Some(mut pid) = procs.stat(me).map(|s| s.ppid) else { return false };
    for _ in 0..3 {
        if pid <= 1 {
            return false;
        }
        let argv0 = procs.cmdline(pid).and_then(|a| a.into_iter().next()).unwrap_or_default();
        let name = argv0.rsplit('/').next().unwrap_or("");
        if matches!(name, "sh" | "dash" | "bash" | "zsh") {
            match procs.stat(pid) {
                Some(s) => pid = s.ppid,
                None => return false,
            }
            continue;
        }
        return procs.stdin_target(pid).is_some_and(|t| t.starts_with("/dev/pts/") || is_tty_device(&t));
    }
    false
}

fn is_tty_device(t: &Path) -> bool {
    t.parent() == Some(Path::new("/dev")) && t.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with("tty") && n != "tty")
}

/// `<data>/actions/asked-<sha256(session LF tool_use_id)>.json`.
pub fn asked_path(data_dir: &Path, session_id: &SessionId, tool_use_id: &ToolUseId) -> PathBuf {
    use sha2::Digest;
    let hex = format!("{:x}", sha2::Sha256::digest(format!("{session_id}\n{tool_use_id}")));
    data_dir.join(crate::pretool::ACTIONS_DIR).join(format!("asked-{hex}.json"))
}

/// What the PreToolUse policy knows when it would ask.
pub struct AskCall<'a> {
    pub input: &'a HookInput,
    pub cls: &'a Classification,
    pub action_file: &'a Path,
    pub action_hash: ActionHash,
    pub workspace: &'a Path,
    pub data_dir: &'a Path,
}

/// The `ask` reason for this call, after its asked record is written;
/// `Err` when the record cannot be written (the token flow then applies).
pub fn ask(env: &HookEnv, call: &AskCall<'_>) -> Result<String> {
    let id = call
        .input
        .tool_use_id
        .as_ref()
        .ok_or_else(|| Error::new(kijito_protocol::codes::policy::HOST_CONSENT_ASK, "the call carries no usable tool_use_id"))?;
    let irreversible = call.cls.irreversible();
    let classes: Vec<&str> = irreversible.iter().map(|h| h.class.as_str()).collect();
    let rules: Vec<&str> = irreversible.iter().map(|h| h.rule).collect();
    let record = json!({
        "schema": ASKED_SCHEMA,
        "sessionId": call.input.session_id.as_str(),
        "toolUseId": id.as_str(),
        "actionHash": call.action_hash.as_str(),
        "actionFile": call.action_file.display().to_string(),
        "workspace": call.workspace.display().to_string(),
        "rules": rules,
        "risk": call.cls.risk().as_str(),
        "atMs": env.now_ms,
    });
    let path = asked_path(call.data_dir, &call.input.session_id, id);
    if let Some(dir) = path.parent() {
        kijito_files::private::ensure_private_dir(dir)?;
    }
    kijito_files::private::write_atomic(&path, format!("{record}\n").as_bytes())?;
    Ok(format!(
        "kijito-qa policy: asks the user ({}): irreversible action ({}; {}), {} risk: {}. Yes runs this one call and the memory-latch manifest records it; No refuses it.",
        kijito_protocol::codes::policy::HOST_CONSENT_ASK,
        classes.join(", "),
        rules.join(", "),
        call.cls.risk().as_str(),
        summary(call.input)
    ))
}

/// Whether the user's consent setting asks in the host's dialog for a call
/// of this risk (a high-risk call needs the user's second message: token).
pub fn wanted(setting: &kijito_latch::consent::Setting, risk: Risk) -> bool {
    setting.invalid.is_none() && setting.mode == kijito_latch::consent::Mode::Host && risk < Risk::High
}

/// One line naming the call for the dialog.
fn summary(input: &HookInput) -> String {
    let tool = input.tool_name.as_deref().unwrap_or("");
    let i = input.tool_input.as_ref();
    let field = |k: &str| i.and_then(|v| v.get(k)).and_then(Value::as_str);
    let what = field("command").or_else(|| field("file_path")).or_else(|| field("notebook_path")).unwrap_or("");
    let what: String = what.chars().map(|c| if c.is_control() { ' ' } else { c }).take(300).collect();
    if what.is_empty() {
        tool.to_owned()
    } else {
        format!("{tool} `{what}`")
    }
}

/// PostToolUse / PostToolUseFailure (pretool-hook): the call the user
/// allowed in the host's dialog ran; record it (`memory-latch tool-record`,
/// the installed sibling). Prints nothing, unless the record could not be
/// written (a `systemMessage` with the code).
pub fn post_tool(env: &HookEnv, event: Event, stdin: &[u8]) -> Option<String> {
    let input = parse_input(stdin, event.name()).ok()?;
    let id = input.tool_use_id.as_ref()?;
    let data = env.data_dir().ok()?;
    let path = asked_path(data.as_path(), &input.session_id, id);
    // The common case, one stat: nobody was asked about this call.
    std::fs::symlink_metadata(&path).ok()?;
    let read = kijito_files::private::read_checked(
        &path,
        kijito_files::private::FileRules { owner_only: true, min_bytes: 2, max_bytes: MAX_ASKED_BYTES },
    );
    // One use, whatever it holds: gone, durably, before the call is
    // recorded, so no power loss brings it back for a second record.
    if std::fs::remove_file(&path).is_ok() {
        let _ = kijito_files::private::fsync_parent(&path);
    }
    let rec: Value = match read {
        Ok((bytes, _)) => serde_json::from_slice(&bytes).unwrap_or(Value::Null),
        Err(e) => return Some(not_recorded(e.code(), e.message())),
    };
    let s = |k: &str| rec.get(k).and_then(Value::as_str).unwrap_or("");
    let at = rec.get("atMs").and_then(Value::as_i64).unwrap_or(0);
    let tool_name = input.tool_name.as_deref().unwrap_or("");
    let hash = kijito_policy::action_hash(tool_name, input.tool_input.as_ref().unwrap_or(&Value::Null));
    if s("schema") != ASKED_SCHEMA || s("sessionId") != input.session_id.as_str() || s("toolUseId") != id.as_str() {
        return Some(not_recorded(kijito_protocol::codes::policy::HOST_CONSENT_ASK.as_str(), "the asked record is malformed"));
    }
    if env.now_ms.saturating_sub(at) > ASKED_TTL_MS || at > env.now_ms.saturating_add(60_000) {
        return None;
    }
    if s("actionHash") != hash.as_str() {
        return Some(not_recorded(
            kijito_protocol::codes::policy::HOST_CONSENT_ASK.as_str(),
            "the call that ran is not the call the user was asked about",
        ));
    }
    let outcome = if event == Event::PostToolUseFailure { "failed" } else { "ran" };
    let args = [
        "tool-record",
        "--workspace",
        s("workspace"),
        "--action-file",
        s("actionFile"),
        "--tool-use-id",
        id.as_str(),
        "--outcome",
        outcome,
    ];
    match crate::pretool::run_latch_sibling(env, &args) {
        Ok(v) if v.get("recorded").and_then(Value::as_bool) == Some(true) => {
            crate::journal::consent(env, &input, kijito_files::journal::Kind::ConsentSpent, "host", None);
            None
        }
        Ok(v) => Some(not_recorded(
            v.get("code").and_then(Value::as_str).unwrap_or("latch_error"),
            v.get("message").and_then(Value::as_str).unwrap_or(""),
        )),
        Err((code, message)) => Some(not_recorded(&code, &message)),
    }
}

fn not_recorded(code: &str, message: &str) -> String {
    json!({"systemMessage": crate::one_line(&format!(
        "kijito-qa: the call you allowed ran, but the memory-latch manifest could not record it ({code}: {message})."
    ))})
    .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use kijito_compact::procfs::ProcStat;
    use std::collections::HashMap;

    /// A process table: pid -> (ppid, argv0, fd 0).
    struct Fake(HashMap<u32, (u32, &'static str, &'static str)>);

    impl Procs for Fake {
        fn stat(&self, pid: u32) -> Option<ProcStat> {
            self.0.get(&pid).map(|p| ProcStat { ppid: p.0, start: 1 })
        }
        fn cmdline(&self, pid: u32) -> Option<Vec<String>> {
            self.0.get(&pid).map(|p| vec![p.1.to_owned()])
        }
        fn stdin_target(&self, pid: u32) -> Option<PathBuf> {
            self.0.get(&pid).map(|p| PathBuf::from(p.2))
        }
    }

    fn tree(host_fd0: &'static str) -> Fake {
        Fake(HashMap::from([(100, (50, "/bin/sh", "pipe:[1]")), (50, (10, "claude", host_fd0)), (200, (100, "pretool-hook", "pipe:[2]"))]))
    }

    #[test]
    fn only_claude_codes_tui_with_a_terminal_is_asked() {
        assert!(host_can_ask(Host::Claude, Some("cli"), &tree("/dev/pts/4"), 200));
        assert!(host_can_ask(Host::Claude, Some("cli"), &tree("/dev/tty2"), 200));
        // headless: the entrypoint, or no terminal on the host's fd 0
        assert!(!host_can_ask(Host::Claude, Some("sdk-cli"), &tree("/dev/pts/4"), 200));
        assert!(!host_can_ask(Host::Claude, None, &tree("/dev/pts/4"), 200));
        assert!(!host_can_ask(Host::Claude, Some("cli"), &tree("/dev/null"), 200));
        assert!(!host_can_ask(Host::Claude, Some("cli"), &tree("/dev/tty"), 200));
        // never Codex (an ask fails its hook and runs the call)
        assert!(!host_can_ask(Host::Codex, Some("cli"), &tree("/dev/pts/4"), 200));
        // an unreadable table, or shells all the way up
        assert!(!host_can_ask(Host::Claude, Some("cli"), &Fake(HashMap::new()), 200));
        let shells = Fake(HashMap::from([
            (200, (100, "hook", "")),
            (100, (90, "sh", "/dev/pts/1")),
            (90, (80, "bash", "/dev/pts/1")),
            (80, (70, "dash", "/dev/pts/1")),
            (70, (1, "claude", "/dev/pts/1")),
        ]));
        assert!(!host_can_ask(Host::Claude, Some("cli"), &shells, 200));
        // the hook run straight from the host (no sh -c)
        let direct = Fake(HashMap::from([(200, (50, "hook", "")), (50, (10, "node", "/dev/pts/9"))]));
        assert!(host_can_ask(Host::Claude, Some("cli"), &direct, 200));
    }

    #[test]
    fn tool_use_ids_and_record_paths() {
        assert_eq!(ToolUseId::parse("toolu_01ABC").unwrap().as_str(), "toolu_01ABC");
        for bad in ["", "a/b", "a b", "../x", &"x".repeat(129)] {
            assert!(ToolUseId::parse(bad).is_err(), "{bad}");
        }
        let (s, t) = (|v| SessionId::parse(v).unwrap(), |v| ToolUseId::parse(v).unwrap());
        let a = asked_path(Path::new("/d"), &s("s1"), &t("toolu_1"));
        assert!(a.to_str().unwrap().starts_with("/d/actions/asked-") && a.extension().is_some_and(|e| e == "json"), "{}", a.display());
        assert_ne!(a, asked_path(Path::new("/d"), &s("s2"), &t("toolu_1")));
        assert_ne!(a, asked_path(Path::new("/d"), &s("s1"), &t("toolu_2")));
    }

    #[test]
    fn host_mode_asks_below_high_risk_only() {
        let host = kijito_latch::consent::Setting { mode: kijito_latch::consent::Mode::Host, ..Default::default() };
        assert!(wanted(&host, Risk::Low) && wanted(&host, Risk::Medium));
        assert!(!wanted(&host, Risk::High));
        let token = kijito_latch::consent::Setting::default();
        assert!(!wanted(&token, Risk::Medium));
        let broken =
            kijito_latch::consent::Setting { invalid: Some((kijito_latch::codes::CONSENT_CONFIG_INVALID.into(), "x".into())), ..host };
        assert!(!wanted(&broken, Risk::Medium));
    }
}
