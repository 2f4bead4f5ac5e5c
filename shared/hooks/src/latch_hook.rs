//! memory-latch in the hooks: the user's own message confirms a consent or
//! reseed token (UserPromptSubmit), acting on the latch in the hook input's
//! `cwd`. Only this path confirms; a tool call never can.

use kijito_latch::{self as latch, flight::Flight, Latch};
use kijito_protocol::command::HelperDir;
use std::path::{Path, PathBuf};

/// Whether `cwd` holds a `.memory-latch` entry (of any kind: one that does
/// not open is still a latch not to trust).
pub fn has_latch_dir(cwd: &Path) -> bool {
    std::fs::symlink_metadata(cwd.join(latch::layout::DIR_NAME)).is_ok()
}

/// Whether the PreToolUse policy enforces the latch modes, consent and the
/// wake hold (docs/protocol.md §8a): everywhere with the config's
/// `"enforce": true`, else in a `cwd` inside a latch workspace (the
/// nearest parent with a `.memory-latch`, [`crate::resolve::workspace_of`]).
/// The one answer for SessionStart's wake hold and its enforcement line;
/// pretool-hook also looks at the workspaces of the paths a call touches.
pub fn enforced(env: &crate::env::HookEnv, cwd: Option<&Path>) -> bool {
    env.config.as_ref().is_some_and(|c| c.enforce) || cwd.and_then(crate::resolve::workspace_of).is_some()
}

/// Open the latch of the workspace `cwd` is in (`cwd` or its nearest parent
/// with a `.memory-latch` directory) with the hook's environment (key, boot
/// id, head records).
pub fn open_latch(cwd: &Path) -> Option<Latch> {
    let root = crate::resolve::workspace_of(cwd)?;
    let mut c = latch::Config::new(&root);
    c.hmac_key_file = std::env::var_os(latch::HMAC_KEY_ENV).filter(|v| !v.is_empty()).map(PathBuf::from);
    if let Some(p) = std::env::var_os("MEMORY_LATCH_BOOT_ID_FILE").filter(|v| !v.is_empty()) {
        c.boot_id_file = p.into();
    }
    Latch::open(&c).ok()
}

/// UserPromptSubmit: when the prompt is exactly a token, confirm it; the
/// returned text goes to the model as additionalContext. A wallet signature
/// is checked with the `memory-latch` next to the running executable.
pub fn confirm_from_prompt(cwd: Option<&Path>, prompt: Option<&str>, now_ms: u64) -> Option<String> {
    confirm_from_prompt_with(cwd, kijito_cli::helper_dir().ok().as_ref(), prompt, now_ms, None)
}

/// [`confirm_from_prompt`] with the installed helpers' directory (where the
/// wallet signature recovery, `memory-latch wallet-recover`, is run from).
/// With `flight`, the latch's answer is one line of the session's journal
/// ([`latch::flight`], docs/protocol.md §13).
pub fn confirm_from_prompt_with(
    cwd: Option<&Path>,
    helpers: Option<&HelperDir>,
    prompt: Option<&str>,
    now_ms: u64,
    flight: Option<&Flight>,
) -> Option<String> {
    let prompt = prompt?;
    if latch::wallet::Sig::standalone(prompt).is_some() {
        return crate::latch_wallet::confirm_signature(cwd, helpers, prompt, now_ms, flight);
    }
    latch::tokens::standalone_token(prompt).ok()?;
    let Some(l) = cwd.and_then(open_latch) else {
        flight.inspect(|f| f.refused(latch::codes::FILE_MISSING.as_str()));
        return Some("memory-latch: the user's message looks like a token, but this session's directory has no readable latch; nothing was confirmed.".into());
    };
    match l.user_prompt(now_ms, prompt) {
        Ok(Some(outcome)) => {
            flight.inspect(|f| f.outcome(&outcome));
            Some(outcome.context())
        }
        Ok(None) => None,
        Err(e) => {
            flight.inspect(|f| f.refused(e.code()));
            Some(format!("memory-latch: the user's token could not be processed ({}: {}); nothing was confirmed.", e.code(), e.message()))
        }
    }
}

/// The most bytes of the transcript's end read by the token checks.
pub const TRANSCRIPT_TAIL_BYTES: u64 = 512 * 1024;

/// UserPromptSubmit (token mode made harder): before a prompt
/// that is a token or a signature may confirm anything, refuse (a stable
/// code, nothing confirmed) when
/// - the input names a subagent (`agent_id`/`agent_type`): its "prompt" is
///   the main agent's words (`consent_from_subagent`);
/// - the token appears in a tool call's input, or in a tool call's output
///   other than the `memory-latch consent request`, `reseed` or `review`
///   call that issued it,
///   in the transcript's tail (the agent typed it into a pane, piped it to a
///   hook, or read it back: `consent_token_seen_by_tool`);
/// - the prompt is not the user's newest message: neither host has written
///   the prompt to the transcript when UserPromptSubmit runs (measured,
///   docs/protocol.md §10.4), so a prompt that arrives while a tool call of
///   the transcript is still waiting for its output came from that tool
///   call (the agent ran the hook itself: `consent_prompt_not_newest`);
/// - the transcript cannot be read (`consent_transcript_unreadable`), or is
///   not the host's own transcript of this session ([`transcript_origin`]:
///   `consent_transcript_missing`, `_foreign`, `_other_session`, `_not_host`).
#[allow(clippy::too_many_arguments)] // the hook input's parts, each checked above
pub fn confirm_from_user_prompt(
    cwd: Option<&Path>,
    helpers: Option<&HelperDir>,
    prompt: Option<&str>,
    now_ms: u64,
    transcript: Option<&Path>,
    origin: (crate::Host, &str),
    subagent: bool,
    flight: Option<&Flight>,
) -> Option<String> {
    let p = prompt?;
    let token = latch::tokens::standalone_token(p).ok();
    if token.is_none() && latch::wallet::Sig::standalone(p).is_none() {
        return None;
    }
    let refused = |code: latch::codes::Code, why: &str| {
        flight.inspect(|f| f.refused(code.as_str()));
        Some(format!("memory-latch: the message was NOT accepted as consent ({code}: {why}); nothing was confirmed."))
    };
    if subagent {
        return refused(
            latch::codes::CONSENT_FROM_SUBAGENT,
            "this prompt comes from a subagent (agent_id/agent_type), never from the user",
        );
    }
    if let Some(t) = &token {
        let Some(path) = transcript else {
            return refused(latch::codes::CONSENT_TRANSCRIPT_UNREADABLE, "the hook input names no transcript to check the token against");
        };
        let root = transcript_root(origin.0);
        if let Err((code, why)) = root.and_then(|root| transcript_origin(origin.0, &root, origin.1, path)) {
            return refused(code, &why);
        }
        match check_transcript(path, t, p.trim()) {
            Ok(()) => {}
            Err((code, why)) => return refused(code, &why),
        }
    }
    confirm_from_prompt_with(cwd, helpers, prompt, now_ms, flight)
}

/// Why a transcript is refused: its code and the reason said in the reply.
pub type Refusal = (latch::codes::Code, String);

/// The host's own transcript directory: Claude Code
/// `<config dir>/projects` (`$CLAUDE_CONFIG_DIR` or `~/.claude`), Codex
/// `<CODEX_HOME>/sessions` (`$CODEX_HOME` or `~/.codex`).
pub fn transcript_root(host: crate::Host) -> std::result::Result<PathBuf, Refusal> {
    let dir = match host {
        crate::Host::Claude => kijito_files::config::claude_config_dir().map(|d| d.join("projects")),
        crate::Host::Codex => kijito_files::config::codex_home().map(|d| d.join("sessions")),
    };
    dir.map_err(|e| (latch::codes::CONSENT_TRANSCRIPT_FOREIGN, format!("the host's transcript directory is unknown: {}", e.message())))
}

/// Whether `path` is the host's own transcript of `session` under `root`
/// (docs/protocol.md §10.4): a token prompt whose transcript fails any of
/// these confirms nothing.
/// - `consent_transcript_foreign`: `path` is not under `root` (lexically, no
///   `..`, and once its links are resolved);
/// - `consent_transcript_other_session`: the file name is not this
///   session's (Claude Code `<session_id>.jsonl`, Codex
///   `rollout-<time>-<session_id>.jsonl`);
/// - `consent_transcript_missing`: the file does not exist (a token is
///   issued by a tool call the host wrote to the transcript first);
/// - `consent_transcript_not_host`: a symlink, not a regular file, owned by
///   another user, or writable by group or others.
pub fn transcript_origin(host: crate::Host, root: &Path, session: &str, path: &Path) -> std::result::Result<(), Refusal> {
    use std::os::unix::fs::MetadataExt as _;
    use std::path::Component;
    let foreign = |why: String| Err((latch::codes::CONSENT_TRANSCRIPT_FOREIGN, why));
    if !path.is_absolute()
        || path.components().any(|c| matches!(c, Component::ParentDir | Component::CurDir))
        || !path.starts_with(root)
        || path == root
    {
        return foreign(format!("{} is not under the host's transcript directory {}", path.display(), root.display()));
    }
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let ours = !session.is_empty()
        && match host {
            crate::Host::Claude => name == format!("{session}.jsonl"),
            crate::Host::Codex => name.starts_with("rollout-") && name.ends_with(&format!("-{session}.jsonl")),
        };
    if !ours {
        return Err((latch::codes::CONSENT_TRANSCRIPT_OTHER_SESSION, format!("the transcript {name} is not the one of session {session}")));
    }
    let meta = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err((
                latch::codes::CONSENT_TRANSCRIPT_MISSING,
                "the transcript does not exist, so no tool call of this session issued the token".into(),
            ))
        }
        Err(e) => return Err((latch::codes::CONSENT_TRANSCRIPT_UNREADABLE, format!("cannot stat the transcript: {e}"))),
    };
    let not_host =
        |why: &str| Err((latch::codes::CONSENT_TRANSCRIPT_NOT_HOST, format!("the transcript is {why}, not a file the host wrote")));
    if meta.file_type().is_symlink() {
        return not_host("a symlink");
    }
    if !meta.is_file() {
        return not_host("not a regular file");
    }
    if meta.uid() != kijito_files::private::current_uid() {
        return not_host("owned by another user");
    }
    if meta.mode() & 0o022 != 0 {
        return not_host("writable by group or others");
    }
    match (std::fs::canonicalize(path), std::fs::canonicalize(root)) {
        (Ok(p), Ok(r)) if p.starts_with(&r) => Ok(()),
        _ => foreign(format!("{} resolves outside the host's transcript directory {}", path.display(), root.display())),
    }
}

/// One conversational item of either host's transcript.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Item {
    UserText(String),
    ToolCall { id: String, input: String },
    ToolResult { id: String, output: String },
}

/// Read the transcript's last [`TRANSCRIPT_TAIL_BYTES`] and check a token
/// prompt against it (see [`confirm_from_user_prompt`]).
pub fn check_transcript(path: &Path, token_upper: &str, prompt: &str) -> std::result::Result<(), (latch::codes::Code, String)> {
    use std::io::{Read as _, Seek as _, SeekFrom};
    let unreadable = |why: String| (latch::codes::CONSENT_TRANSCRIPT_UNREADABLE, why);
    let mut f = std::fs::File::open(path).map_err(|e| unreadable(format!("cannot open the transcript: {e}")))?;
    let len = f.metadata().map_err(|e| unreadable(format!("cannot stat the transcript: {e}")))?.len();
    let start = len.saturating_sub(TRANSCRIPT_TAIL_BYTES);
    f.seek(SeekFrom::Start(start)).map_err(|e| unreadable(format!("cannot seek the transcript: {e}")))?;
    let mut bytes = Vec::with_capacity((len - start) as usize);
    f.take(TRANSCRIPT_TAIL_BYTES).read_to_end(&mut bytes).map_err(|e| unreadable(format!("cannot read the transcript: {e}")))?;
    let text = String::from_utf8_lossy(&bytes);
    let mut lines: Vec<&str> = text.split('\n').collect();
    if start > 0 && !lines.is_empty() {
        lines.remove(0);
    }
    let items: Vec<Item> =
        lines.iter().filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok()).flat_map(|v| items_of(&v)).collect();
    check_items(&items, token_upper, prompt)
}

/// The decision over parsed items (pure).
pub fn check_items(items: &[Item], token_upper: &str, prompt: &str) -> std::result::Result<(), (latch::codes::Code, String)> {
    let has = |s: &str| s.to_ascii_uppercase().contains(token_upper);
    let issuing: Vec<&str> = items
        .iter()
        .filter_map(|i| match i {
            Item::ToolCall { id, input } if issues_tokens(input) && !has(input) => Some(id.as_str()),
            _ => None,
        })
        .collect();
    for i in items {
        match i {
            Item::ToolCall { input, .. } if has(input) => {
                return Err((
                    latch::codes::CONSENT_TOKEN_SEEN_BY_TOOL,
                    "the token appears in a tool call's input in the transcript (typed or piped by the agent)".into(),
                ))
            }
            Item::ToolResult { id, output } if has(output) && !issuing.contains(&id.as_str()) => {
                return Err((
                    latch::codes::CONSENT_TOKEN_SEEN_BY_TOOL,
                    "the token appears in the output of a tool call other than the consent request that issued it (the agent read it back)"
                        .into(),
                ))
            }
            _ => {}
        }
    }
    let last_user = items.iter().rposition(|i| matches!(i, Item::UserText(_)));
    if let Some(i) = last_user {
        if matches!(&items[i], Item::UserText(t) if t.trim() == prompt) {
            return Ok(());
        }
    }
    // from the newest user text on (which is no tool call)
    let after = &items[last_user.unwrap_or(0)..];
    let pending = after.iter().any(|c| match c {
        Item::ToolCall { id, .. } => !after.iter().any(|r| matches!(r, Item::ToolResult { id: rid, .. } if rid == id)),
        _ => false,
    });
    if pending {
        return Err((
            latch::codes::CONSENT_PROMPT_NOT_NEWEST,
            "a tool call of the transcript is still waiting for its output: this prompt is not the user's newest message (it came from inside the agent's turn)".into(),
        ));
    }
    Ok(())
}

/// A tool call that runs memory-latch's `consent request`, `reseed` or
/// `review`: its output is where the token is shown.
fn issues_tokens(input: &str) -> bool {
    input.contains("memory-latch") && ["consent request", " reseed", " review"].iter().any(|w| input.contains(w))
}

fn strings(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// The items of one transcript line: Claude Code (`type` user/assistant,
/// `message.content` text, `tool_use`, `tool_result`) or Codex
/// (`response_item` payloads: `message` role user, `*call`, `*call_output`).
pub fn items_of(v: &serde_json::Value) -> Vec<Item> {
    let mut out = Vec::new();
    let kind = v.get("type").and_then(serde_json::Value::as_str).unwrap_or("");
    if kind == "user" || kind == "assistant" {
        let meta = v.get("isMeta").and_then(serde_json::Value::as_bool).unwrap_or(false);
        let content = v.get("message").and_then(|m| m.get("content"));
        match content {
            Some(serde_json::Value::String(s)) if kind == "user" && !meta => out.push(Item::UserText(s.clone())),
            Some(serde_json::Value::Array(parts)) => {
                for p in parts {
                    match p.get("type").and_then(serde_json::Value::as_str) {
                        Some("text") if kind == "user" && !meta => out.push(Item::UserText(p.get("text").map(strings).unwrap_or_default())),
                        Some("tool_use") => out.push(Item::ToolCall {
                            id: p.get("id").map(strings).unwrap_or_default(),
                            input: p.get("input").map(strings).unwrap_or_default(),
                        }),
                        Some("tool_result") => out.push(Item::ToolResult {
                            id: p.get("tool_use_id").map(strings).unwrap_or_default(),
                            output: p.get("content").map(strings).unwrap_or_default(),
                        }),
                        _ => {}
                    }
                }
            }
            _ => {}
        }
        // Claude Code also keeps a tool's raw result beside the message.
        if let Some(r) = v.get("toolUseResult") {
            if let Some(Item::ToolResult { id, .. }) = out.iter().rev().find(|i| matches!(i, Item::ToolResult { .. })).cloned() {
                out.push(Item::ToolResult { id, output: strings(r) });
            }
        }
        return out;
    }
    if kind == "response_item" {
        let Some(p) = v.get("payload") else { return out };
        let pk = p.get("type").and_then(serde_json::Value::as_str).unwrap_or("");
        let id = p.get("call_id").or_else(|| p.get("id")).map(strings).unwrap_or_default();
        if pk == "message" && p.get("role").and_then(serde_json::Value::as_str) == Some("user") {
            for part in p.get("content").and_then(serde_json::Value::as_array).into_iter().flatten() {
                let t = part.get("text").map(strings).unwrap_or_default();
                if !t.starts_with("<environment_context>") && !t.starts_with("<user_instructions>") {
                    out.push(Item::UserText(t));
                }
            }
        } else if pk.ends_with("_output") {
            out.push(Item::ToolResult { id, output: p.get("output").map(strings).unwrap_or_default() });
        } else if pk.ends_with("call") {
            let mut input = p.clone();
            if let Some(o) = input.as_object_mut() {
                o.remove("type");
            }
            out.push(Item::ToolCall { id, input: input.to_string() });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const T: &str = "ACT-23456A";

    fn call(id: &str, input: &str) -> Item {
        Item::ToolCall { id: id.into(), input: input.into() }
    }
    fn result(id: &str, output: &str) -> Item {
        Item::ToolResult { id: id.into(), output: output.into() }
    }

    #[test]
    fn the_token_in_tool_io_or_a_pending_tool_call_refuses() {
        let request = call("1", "/opt/kq/bin/memory-latch consent request --action-file /w/a --summary s --risk low");
        let issued = result("1", &format!("CONFIRMATION NEEDED ... {T}"));
        // the ordinary flow: issued by the request, the turn over
        assert_eq!(check_items(&[Item::UserText("deploy".into()), request.clone(), issued.clone()], T, T), Ok(()));
        // the agent types it into its pane, or pipes it to a hook
        for input in [format!("tmux send-keys -t %1 -l {T}"), format!("echo '{{\"prompt\":\"{}\"}}' | prompt-hook", T.to_lowercase())] {
            let items = [request.clone(), issued.clone(), call("2", &input), result("2", "")];
            assert_eq!(check_items(&items, T, T).unwrap_err().0.as_str(), "consent_token_seen_by_tool", "{input}");
        }
        // the agent reads it back from somewhere else
        let items = [request.clone(), issued.clone(), call("3", "cat ~/.claude/projects/x.jsonl"), result("3", &format!("... {T} ..."))];
        assert_eq!(check_items(&items, T, T).unwrap_err().0.as_str(), "consent_token_seen_by_tool");
        // a prompt arriving while a tool call waits for its output
        let items = [request.clone(), issued.clone(), call("4", "/opt/kq/bin/some-script")];
        assert_eq!(check_items(&items, T, T).unwrap_err().0.as_str(), "consent_prompt_not_newest");
        // a reseed or review token, shown by its own command
        for cmd in ["/opt/kq/bin/memory-latch reseed --workspace /w", "/opt/kq/bin/memory-latch review --workspace /w"] {
            assert_eq!(check_items(&[call("5", cmd), result("5", &format!("... {T}"))], T, T), Ok(()), "{cmd}");
        }
        // the host already wrote the prompt: it is the newest user entry
        let items = [request, issued, Item::UserText(T.into())];
        assert_eq!(check_items(&items, T, T), Ok(()));
    }

    #[test]
    fn only_the_hosts_own_transcript_of_this_session_counts() {
        use crate::Host;
        use std::os::unix::fs::PermissionsExt;
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("projects");
        std::fs::create_dir_all(root.join("-p")).unwrap();
        let own = root.join("-p/s1.jsonl");
        std::fs::write(&own, "{}\n").unwrap();
        std::fs::set_permissions(&own, std::fs::Permissions::from_mode(0o600)).unwrap();
        let code = |host, session: &str, path: &Path| transcript_origin(host, &root, session, path).map_err(|e| e.0.as_str());
        assert_eq!(code(Host::Claude, "s1", &own), Ok(()));
        assert_eq!(code(Host::Claude, "s1", Path::new("/nonexistent")), Err("consent_transcript_foreign"));
        assert_eq!(code(Host::Claude, "s1", &root.join("-p/../-p/s1.jsonl")), Err("consent_transcript_foreign"));
        assert_eq!(code(Host::Claude, "s2", &own), Err("consent_transcript_other_session"));
        assert_eq!(code(Host::Claude, "s1", &root.join("-q/s1.jsonl")), Err("consent_transcript_missing"));
        let codex = root.join("2026/12/06/rollout-2026-12-06T01-00-00-s1.jsonl");
        std::fs::create_dir_all(codex.parent().unwrap()).unwrap();
        std::fs::write(&codex, "{}\n").unwrap();
        std::fs::set_permissions(&codex, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(code(Host::Codex, "s1", &codex), Ok(()));
        assert_eq!(code(Host::Codex, "s1", &own), Err("consent_transcript_other_session"));
        // Codex: both the `rollout-` start and this session's end
        for other in ["rollout-2026-12-06T01-00-00-s2.jsonl", "x-s1.jsonl"] {
            assert_eq!(code(Host::Codex, "s1", &root.join("2026/12/06").join(other)), Err("consent_transcript_other_session"), "{other}");
        }
        // a stat that fails for another reason than a missing file
        assert_eq!(code(Host::Claude, "s1", &own.join("s1.jsonl")), Err("consent_transcript_unreadable"));
        std::fs::set_permissions(&own, std::fs::Permissions::from_mode(0o620)).unwrap();
        assert_eq!(code(Host::Claude, "s1", &own), Err("consent_transcript_not_host"));
        let link = root.join("-p/s3.jsonl");
        std::os::unix::fs::symlink(&codex, &link).unwrap();
        assert_eq!(code(Host::Claude, "s3", &link), Err("consent_transcript_not_host"));
        let outside = tmp.path().join("elsewhere");
        std::fs::create_dir(&outside).unwrap();
        std::fs::write(outside.join("s4.jsonl"), "{}\n").unwrap();
        std::fs::set_permissions(outside.join("s4.jsonl"), std::fs::Permissions::from_mode(0o600)).unwrap();
        std::os::unix::fs::symlink(&outside, root.join("-linked")).unwrap();
        assert_eq!(code(Host::Claude, "s4", &root.join("-linked/s4.jsonl")), Err("consent_transcript_foreign"));
    }

    /// Only a call that runs memory-latch's own `consent request`, `reseed`
    /// or `review` shows a token in its output; either half alone does not.
    #[test]
    fn only_memory_latchs_own_requests_issue_tokens() {
        for cmd in ["/opt/kq/bin/memory-latch status --workspace /w", "cat notes | grep ' review'", "echo consent request"] {
            let items = [call("6", cmd), result("6", &format!("... {T}"))];
            assert_eq!(check_items(&items, T, T).unwrap_err().0.as_str(), "consent_token_seen_by_tool", "{cmd}");
        }
    }

    /// A Claude Code transcript line calling a tool with `command`.
    fn tool_line(id: &str, command: &str) -> String {
        json!({"type":"assistant","message":{"content":[{"type":"tool_use","id":id,"name":"Bash","input":{"command":command}}]}})
            .to_string()
    }

    /// The token checks read the transcript's last 512 KiB, and only whole
    /// lines of it: a line cut by that bound is dropped, however it reads.
    #[test]
    fn the_transcript_is_read_by_its_last_512_kib_of_whole_lines() {
        const TAIL: usize = 512 * 1024;
        assert_eq!(TRANSCRIPT_TAIL_BYTES, TAIL as u64);
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("t.jsonl");
        let prompt = json!({"type":"user","message":{"role":"user","content":T}}).to_string();
        let typed = tool_line("9", &format!("tmux send-keys -l {T}"));
        let pad = |n: usize| json!({"type":"note","pad":"p".repeat(n)}).to_string();
        let check = |body: &str| {
            std::fs::write(&path, body).unwrap();
            check_transcript(&path, T, T).map_err(|e| e.0.as_str())
        };
        // a small transcript, the agent's typing on its first line
        assert_eq!(check(&format!("{typed}\n{prompt}\n")), Err("consent_token_seen_by_tool"));
        // 100 KiB of other lines between: still within the tail
        assert_eq!(check(&format!("{typed}\n{}\n{prompt}\n", pad(100 * 1024))), Err("consent_token_seen_by_tool"));
        // 600 KiB between: the typing is outside the tail
        assert_eq!(check(&format!("{typed}\n{}\n{prompt}\n", pad(600 * 1024))), Ok(()));
        // the bound cuts a line exactly where a whole JSON object of it
        // starts: the cut line is dropped, not read as that object
        let end = format!("\n{}\n{prompt}\n", pad(TAIL - typed.len() - prompt.len() - 3 - pad(0).len()));
        let cut = format!("{}{typed}{end}", "x".repeat(1000));
        assert_eq!(cut.len() - 1000, TAIL);
        assert_eq!(check(&cut), Ok(()));
        // the same lines whole: the typing is read
        assert_eq!(check(&format!("{typed}{end}")), Err("consent_token_seen_by_tool"));
        // an unreadable transcript
        assert_eq!(check_transcript(&tmp.path().join("none.jsonl"), T, T).map_err(|e| e.0.as_str()), Err("consent_transcript_unreadable"));
    }

    #[test]
    fn both_hosts_transcript_shapes_parse() {
        let claude = [
            json!({"type":"user","message":{"role":"user","content":"hello"}}),
            json!({"type":"assistant","message":{"content":[{"type":"tool_use","id":"toolu_1","name":"Bash","input":{"command":"ls"}}]}}),
            json!({"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"a b"}]},"toolUseResult":{"stdout":"a b"}}),
            json!({"type":"user","isMeta":true,"message":{"content":"meta"}}),
        ];
        let items: Vec<Item> = claude.iter().flat_map(items_of).collect();
        assert_eq!(items[0], Item::UserText("hello".into()));
        assert!(matches!(&items[1], Item::ToolCall { id, input } if id == "toolu_1" && input.contains("ls")));
        assert!(matches!(&items[2], Item::ToolResult { id, output } if id == "toolu_1" && output == "a b"));
        assert_eq!(items.len(), 4);
        let codex = [
            json!({"type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"<environment_context>x"}]}}),
            json!({"type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"Say hello"}]}}),
            json!({"type":"response_item","payload":{"type":"function_call","name":"exec_command","arguments":"{\"cmd\":\"ls\"}","call_id":"call_1"}}),
            json!({"type":"response_item","payload":{"type":"function_call_output","call_id":"call_1","output":"a b"}}),
        ];
        let items: Vec<Item> = codex.iter().flat_map(items_of).collect();
        assert_eq!(items[0], Item::UserText("Say hello".into()));
        assert!(matches!(&items[1], Item::ToolCall { id, input } if id == "call_1" && input.contains("exec_command")));
        assert_eq!(items[2], Item::ToolResult { id: "call_1".into(), output: "a b".into() });
        // only the user's own words are user text: Claude Code's text parts of
        // a user message (not a meta one, not the assistant's), Codex's user
        // messages (not the assistant's)
        let parts = |kind: &str, meta: bool| {
            items_of(&json!({"type":kind,"isMeta":meta,"message":{"content":[{"type":"text","text":"go"},{"type":"image"}]}}))
        };
        assert_eq!(parts("user", false), vec![Item::UserText("go".into())]);
        assert_eq!(parts("user", true), vec![]);
        assert_eq!(parts("assistant", false), vec![]);
        let said = json!({"type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"done"}]}});
        assert_eq!(items_of(&said), vec![]);
    }
}
