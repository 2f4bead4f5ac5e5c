//! PreToolUse on every tool call (docs/protocol.md §8 and §8a), the
//! `pretool-hook` binary: the helper-command guard first, then the policy
//! ([`kijito_policy`]): tripwires, the latch modes, the QA freeze, pointer
//! writes outside `pointer-publish`, and consent for irreversible calls.
//!
//! Cost, because this runs before every tool call: a read on the halting
//! modes' allow-list (or a helper command) is decided from its stdin alone;
//! the session taint ([`crate::taint`]) is appended to only by a call that
//! writes files and read only by one that executes a file; the latch is
//! opened only for another call in an enforced workspace, the QA pass is
//! looked at (one stat, one small read) only for a Kijito write.
//!
//! Enforcement (latch modes and consent) is on in a workspace that holds an
//! initialised latch (`.memory-latch/`), or everywhere with the config's
//! `"enforce": true`. Tripwires, the freeze and the pointer rule apply in
//! every workspace: they protect the QA protocol itself.

use crate::env::HookEnv;
use crate::{ask_reply, deny_reply, parse_input, HookInput};
use kijito_policy::{self as policy, Classification, ConsentTarget, Decision, Env, LatchMode, Modes, ParsedCall, ToolCall, Wake};
use kijito_protocol::codes::policy as codes;
use kijito_protocol::error::Error;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// Where the action files the deny reasons name live, under the data dir.
pub const ACTIONS_DIR: &str = "actions";

/// The PreToolUse answer for this stdin: `None` allows (no output).
pub fn pretool(env: &HookEnv, stdin: &[u8]) -> Option<String> {
    let input = match parse_input(stdin, "PreToolUse") {
        Ok(i) => i,
        Err(e) => return crate::guard::unreadable(stdin, &e),
    };
    // The call's one reading (docs/architecture.md): the guard, the witness
    // and the classifier read it, nothing else reads `tool_input`'s fields.
    let call = ParsedCall::parse(input.tool_name.as_deref().unwrap_or(""), input.tool_input.as_ref().unwrap_or(&Value::Null));
    if let Some(deny) = crate::guard::guard_tool_call(env.helpers.as_ref(), &call, input.session_id.as_str()) {
        crate::journal::guard_deny(env, &input);
        return Some(deny);
    }
    // Witnessed verifier boots (docs/protocol.md §7): a `pointer-snapshot`
    // call is recorded with the host's agent identity; any other call costs
    // no I/O. A record that cannot be written only leaves the boot unwitnessed.
    if let Some(h) = env.helpers.as_ref() {
        let _ = kijito_gate::witness::observe_tool_call(
            &call.lines,
            input.agent_id.as_deref(),
            &input.session_id,
            &|| env.qa().map(|(_, qa)| qa),
            h,
            env.now_ms,
        );
    }
    decide(env, &input, &call).map(|a| match a {
        Answer::Deny(reason) => deny_reply(&reason),
        Answer::Ask(reason) => ask_reply(&reason),
    })
}

/// What the policy answers a call it does not simply allow.
enum Answer {
    Deny(String),
    /// Consent mode host: the host asks the user ([`crate::consent_host`]).
    Ask(String),
}

/// [`pretool`] for stdin that may not have been readable.
pub fn pretool_stdin(env: &HookEnv, stdin: kijito_protocol::error::Result<Vec<u8>>) -> Option<String> {
    match stdin {
        Ok(bytes) => pretool(env, &bytes),
        Err(e) => crate::guard::unreadable(b"", &e),
    }
}

/// The policy's decision for one parsed call: `None` allows.
fn decide(env: &HookEnv, input: &HookInput, parsed: &ParsedCall) -> Option<Answer> {
    let null = Value::Null;
    let tool_name = input.tool_name.as_deref().unwrap_or("");
    let tool_input = input.tool_input.as_ref().unwrap_or(&null);
    let call = &parsed.kind;
    let cwd = call_cwd(input.cwd.as_ref().map(|c| c.as_path()), parsed.workdir.as_deref());
    // Resolved once for this process (HookEnv::qa uses the same answer).
    let data_dir = env.data_dir().ok();
    let mut cenv = classify_env(env, cwd.as_deref(), data_dir.as_ref().map(|d| d.as_path()));
    if let Some(mcp) = parsed.mcp_input() {
        cenv.mcp_paths = policy::paths::mcp_paths(mcp);
    }
    // The user's policy file: an unusable one leaves the default rules and
    // denies every mutating call until the user mends it (reads pass).
    let user_error = match policy::UserPolicy::load(kijito_files::config::read_user_policy()) {
        Ok(u) => {
            cenv.user_policy = u;
            None
        }
        Err(e) => Some(e),
    };
    let mut cls = policy::classify(call, &cenv);
    // The session taint (docs/policy.md): files this call writes are
    // recorded; a file it executes that this session wrote makes it opaque.
    if let Some(d) = data_dir.as_ref() {
        if !cls.writes().is_empty() {
            let _ = crate::taint::record(d.as_path(), input.session_id.as_str(), cls.writes());
        }
        if !cls.executes().is_empty() {
            let (written, all) = crate::taint::read(d.as_path(), input.session_id.as_str());
            cls.apply_taint(&written, all);
        }
    }
    if !cls.halts() && cls.tripwires.is_empty() {
        return None;
    }
    if let Some(e) = user_error {
        return Some(Answer::Deny(format!(
            "kijito-qa policy: denied ({}): your policy file ({}) cannot be used: {}. Every write is held until the user fixes or removes it; reads pass.",
            e.code(),
            kijito_files::config::user_policy_path().map(|p| p.display().to_string()).unwrap_or_else(|_| "policy.json".into()),
            e.message()
        )));
    }
    if let Some(reason) = pointer_write(env, call, &cls) {
        return Some(Answer::Deny(reason));
    }
    let enforce_all = env.config.as_ref().is_some_and(|c| c.enforce);
    if enforce_all && cls.tripwires.is_empty() && cls.mutates() && !cwd.as_deref().is_some_and(Path::is_dir) {
        return Some(Answer::Deny(format!(
            "kijito-qa policy: denied ({}): enforcement is on everywhere (\"enforce\": true) and this call has no usable working directory ({}) to find its workspace from. The one step out: run it from an existing absolute directory.",
            codes::CWD_UNUSABLE,
            cwd.as_deref().map(|c| c.display().to_string()).unwrap_or_else(|| "none given".into())
        )));
    }
    let helper_dir = env.helpers.as_ref().map(|h| h.path().display().to_string()).unwrap_or_else(|| "<root>/bin".into());
    let bytes = policy::action_bytes(tool_name, tool_input);
    let action_file =
        data_dir.as_ref().map(|d| action_path(d.as_path(), &bytes)).unwrap_or_else(|| PathBuf::from("<data-dir>/actions/action.json"));
    let call = Judged { input, cls: &cls, bytes: &bytes, action_file: &action_file, helper_dir: &helper_dir, data_dir: data_dir.as_ref() };
    // Every latch workspace the call is in or touches judges it (docs/protocol.md §8a).
    let workspaces = if cls.halts() { call_workspaces(cwd.as_deref(), &cls) } else { Vec::new() };
    if workspaces.is_empty() {
        let workspace = cwd.as_ref().map(|c| c.display().to_string()).unwrap_or_else(|| "<workspace>".into());
        return judge(env, &call, None, &workspace, enforce_all);
    }
    workspaces.iter().find_map(|ws| judge(env, &call, Some(ws), &ws.display().to_string(), true))
}

/// The call's working directory: Codex's `workdir` in the tool input
/// (against the hook's `cwd` when relative), else the hook's `cwd`.
fn call_cwd(hook_cwd: Option<&Path>, workdir: Option<&str>) -> Option<PathBuf> {
    match workdir {
        Some(w) if w.starts_with('/') => Some(PathBuf::from(policy::classify::resolve_at(w, "/", ""))),
        Some(w) => hook_cwd.map(|c| PathBuf::from(policy::classify::resolve_at(w, &c.display().to_string(), ""))),
        None => hook_cwd.map(Path::to_path_buf),
    }
}

/// The latch workspaces of the call's working directory, the directories
/// it `cd`s to and the paths it writes (each as written and with its
/// symlinks resolved), nearest first, without repeats.
fn call_workspaces(cwd: Option<&Path>, cls: &Classification) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = Vec::new();
    let starts = cwd.map(|c| c.display().to_string()).into_iter().chain(cls.dirs.iter().cloned()).chain(cls.touched.iter().cloned());
    for s in starts {
        let real = crate::resolve::real_path(&s);
        for p in std::iter::once(s).chain(real) {
            if let Some(w) = crate::resolve::workspace_of(Path::new(&p)) {
                if !out.contains(&w) {
                    out.push(w);
                }
            }
        }
    }
    out
}

/// One mutating call being judged, workspace by workspace.
struct Judged<'a> {
    input: &'a HookInput,
    cls: &'a Classification,
    bytes: &'a [u8],
    action_file: &'a Path,
    helper_dir: &'a str,
    data_dir: Option<&'a kijito_protocol::ids::AbsPath>,
}

/// The decision of one workspace (`ws`: its root, `None` outside every
/// latch workspace) for a call: `None` allows.
fn judge(env: &HookEnv, j: &Judged<'_>, ws: Option<&Path>, workspace: &str, enforced: bool) -> Option<Answer> {
    let input = j.input;
    let mut cls = j.cls.clone();
    let action_file_text = j.action_file.display().to_string();
    let latch = if enforced && cls.halts() { ws.and_then(crate::latch_hook::open_latch) } else { None };
    let mode = match (&latch, enforced) {
        (_, false) => LatchMode::Absent,
        (Some(l), true) => LatchMode::from(&l.tool_mode()),
        // A latch directory that does not open is not a latch to trust.
        (None, true) if ws.is_some() && cls.halts() => LatchMode::SilentWitness,
        (None, true) => LatchMode::Normal,
    };
    let qa_frozen = cls.kijito_write() && pass_recorded(env, j.data_dir, input);
    let wake = wake_of(enforced, j.data_dir, input);
    wake.apply(&mut cls);
    let target = ConsentTarget {
        helper_dir: j.helper_dir,
        workspace,
        action_file: &action_file_text,
        session_id: input.session_id.as_str(),
        data_dir: j.data_dir.map(|d| d.as_str()).unwrap_or_default(),
    };
    let decision = policy::decide(&cls, &Modes { latch: mode, wake, qa_frozen, consent_confirmed: false }, &target);
    crate::journal::decision(env, input, &cls, mode, &decision);
    let consent_lifts = decision.needs_consent();
    match decision {
        Decision::Allow => None,
        Decision::Deny { reason, .. } if consent_lifts => {
            let ctx = ConsentCall { input, cls: &cls, bytes: j.bytes, action_file: j.action_file, workspace, helper_dir: j.helper_dir };
            consent(env, latch.as_ref(), j.data_dir.map(|d| d.as_path()), &ctx, reason)
        }
        Decision::Deny { reason, .. } => Some(Answer::Deny(reason)),
    }
}

/// The wake hold (SessionStart's local wake checks, [`kijito_wake::hold`])
/// kept for the session's cwd, where enforcement is on.
fn wake_of(enforced: bool, data_dir: Option<&kijito_protocol::ids::AbsPath>, input: &HookInput) -> Wake {
    let hold = match (enforced, data_dir, input.cwd.as_ref()) {
        (true, Some(d), Some(c)) => kijito_files::datadir::qa_path(d).ok().and_then(|q| kijito_wake::hold::read(q.as_path(), c.as_path())),
        _ => None,
    };
    match hold {
        None => Wake::Clear,
        Some(kijito_wake::hold::Hold::Cautious) => Wake::Cautious,
        Some(kijito_wake::hold::Hold::Pending) => Wake::Pending,
    }
}

/// One irreversible call awaiting consent.
struct ConsentCall<'a> {
    input: &'a HookInput,
    cls: &'a Classification,
    bytes: &'a [u8],
    action_file: &'a Path,
    workspace: &'a str,
    helper_dir: &'a str,
}

/// Normal mode, an irreversible call: in consent mode host on a host that
/// can ask, put it to the user in the host's dialog; else pass once if the
/// user authorized exactly this call (the authorization is consumed, a
/// `gate_pass` entry written); otherwise write the action file and deny
/// with the command that requests consent for it.
fn consent(
    env: &HookEnv,
    latch: Option<&kijito_latch::Latch>,
    data_dir: Option<&Path>,
    c: &ConsentCall<'_>,
    reason: String,
) -> Option<Answer> {
    let Some(latch) = latch else {
        crate::journal::consent_check(env, c.input, codes::LATCH_REQUIRED.as_str());
        return Some(Answer::Deny(format!(
            "kijito-qa policy: denied ({}): irreversible action ({}) and enforcement is on, but this workspace has no latch to hold the user's consent. The one step out: `{}/memory-latch init --workspace {} --objective TEXT` (TEXT: the objective, one word or quoted), then retry.",
            codes::LATCH_REQUIRED,
            c.cls.irreversible().iter().map(|h| h.rule).collect::<Vec<_>>().join(", "),
            c.helper_dir,
            c.workspace
        )));
    };
    if let Err(e) = write_action_file(c.action_file, c.bytes) {
        return Some(Answer::Deny(format!("{reason} (The action file could not be written: {}: {}.)", e.code(), e.message())));
    }
    let root = &latch.paths().root;
    let mut note = String::new();
    let setting = kijito_latch::consent::Setting::from_env(root);
    if setting.mode == kijito_latch::consent::Mode::Host {
        let asks = crate::consent_host::host_can_ask(
            env.host,
            std::env::var(crate::consent_host::ENTRYPOINT_ENV).ok().as_deref(),
            &kijito_compact::procfs::RealProcs,
            std::process::id(),
        );
        match (crate::consent_host::wanted(&setting, c.cls.risk()), asks, data_dir) {
            (true, true, Some(data)) => {
                let call = crate::consent_host::AskCall {
                    input: c.input,
                    cls: c.cls,
                    action_file: c.action_file,
                    action_hash: kijito_protocol::ids::ActionHash::of_canonical(c.bytes),
                    workspace: root,
                    data_dir: data,
                };
                match crate::consent_host::ask(env, &call) {
                    Ok(r) => {
                        crate::journal::consent(env, c.input, kijito_files::journal::Kind::ConsentRequested, "host", None);
                        return Some(Answer::Ask(r));
                    }
                    Err(e) => note = format!(" (Consent mode host: the host could not be asked: {}: {}.)", e.code(), e.message()),
                }
            }
            (false, _, _) => note = " (Consent mode host: a high-risk call still needs the user's token, twice.)".into(),
            _ => note = " (Consent mode host: this host cannot ask the user itself, so the token flow applies.)".into(),
        }
    }
    let (code, message) = match run_tool_gate(env, root, c.action_file, c.cls.risk()) {
        Ok(()) => {
            crate::journal::consent(env, c.input, kijito_files::journal::Kind::ConsentSpent, "token", None);
            return None;
        }
        Err(e) => e,
    };
    crate::journal::consent_check(env, c.input, &code);
    Some(Answer::Deny(if kijito_latch::codes::Code::parse(&code) == Some(kijito_latch::codes::CONSENT_NOT_AUTHORIZED) {
        // Nothing authorized yet: the plain instruction says it all.
        format!("{reason}{note}")
    } else {
        format!("{reason}{note} (Consent check: {code}: {message}.)")
    }))
}

/// The consent check and its one-use consumption, run by the installed
/// sibling `memory-latch tool-gate` (so that the ledger, the signature
/// checks and the write transaction are not linked into this hook: the
/// 1 MB bound, docs/architecture.md). `Err((code, message))` when it did
/// not pass; a sibling that is missing, fails or hangs passes nothing.
fn run_tool_gate(env: &HookEnv, workspace: &Path, action_file: &Path, risk: policy::Risk) -> Result<(), (String, String)> {
    let (w, f) = (workspace.display().to_string(), action_file.display().to_string());
    let v = run_latch_sibling(env, &["tool-gate", "--workspace", &w, "--action-file", &f, "--min-risk", risk.as_str()])?;
    match (v.get("passed").and_then(Value::as_bool), v.get("code").and_then(Value::as_str)) {
        (Some(true), _) => Ok(()),
        (Some(false), Some(code)) => Err((code.to_owned(), v.get("message").and_then(Value::as_str).unwrap_or("").to_owned())),
        _ => Err((codes::CONSENT_CHECK_FAILED.to_string(), "memory-latch tool-gate answered malformed output".into())),
    }
}

/// Run the installed `memory-latch <args> --json`, bounded
/// ([`TOOL_GATE_TIMEOUT`], 64 KiB of output): its one JSON line, or
/// `Err((policy_consent_check_failed, why))` when it cannot be run, hangs
/// or answers no JSON object.
pub(crate) fn run_latch_sibling(env: &HookEnv, args: &[&str]) -> Result<Value, (String, String)> {
    let failed = |why: String| Err((codes::CONSENT_CHECK_FAILED.to_string(), why));
    let Some(h) = env.helpers.as_ref() else { return failed("cannot locate the installed memory-latch".into()) };
    let exe = h.helper("memory-latch");
    let mut cmd = std::process::Command::new(&exe);
    cmd.args(args).arg("--json");
    let out = match kijito_files::child::run_bounded(&mut cmd, TOOL_GATE_TIMEOUT, 64 * 1024) {
        Ok(kijito_files::child::Ran::Exited { stdout, .. }) => stdout,
        Ok(kijito_files::child::Ran::TimedOut) => return failed(format!("{exe} {} did not finish in time", args[0])),
        Err(e) => return failed(format!("cannot run {exe}: {e}")),
    };
    match serde_json::from_str::<Value>(out.trim()) {
        Ok(v) if v.is_object() => Ok(v),
        _ => failed(format!("{exe} {} answered malformed output", args[0])),
    }
}

/// The sibling's whole run, below the hook's watchdog (3.5 s).
const TOOL_GATE_TIMEOUT: std::time::Duration = std::time::Duration::from_millis(2500);

/// An MCP write whose target is the configured pointer or lock message:
/// denied in every mode (the pointer changes only through `pointer-publish`,
/// under its lease, with a rollback artifact).
fn pointer_write(env: &HookEnv, call: &ToolCall, cls: &Classification) -> Option<String> {
    let ToolCall::Mcp { name, input, .. } = call else { return None };
    let config = env.config.as_ref()?;
    let targets: Vec<u64> = [config.pointer_id.map(|p| p.get()), config.lock_message_id.map(|m| m.get())].into_iter().flatten().collect();
    if targets.is_empty() || !cls.kijito_write() {
        return None;
    }
    // every spelling of the id (`21813.0`, `"21813"`, `[21813]`, any key case), on any server
    // whose tools are a Kijito store's (kijito_policy::mcp)
    let named = policy::mcp::target_ids(input).iter().any(|id| targets.contains(id));
    named.then(|| {
        format!(
            "kijito-qa policy: denied ({}): {name} would change the configured pointer or lock message. The pointer changes only through `pointer-publish` (lease, read-verify-write, rollback artifact); run the publish step of the QA skill instead.",
            codes::POINTER_WRITE
        )
    })
}

/// A recorded QA pass for this session (from `qa-gate record` until the
/// compaction consumes it, a new turn withdraws it, or it is invalidated).
fn pass_recorded(env: &HookEnv, data_dir: Option<&kijito_protocol::ids::AbsPath>, input: &HookInput) -> bool {
    let Some(data) = data_dir else { return false };
    let Ok(Some(qa)) = kijito_gate::QaDir::existing(data) else { return false };
    let path = qa.pass(&input.session_id);
    if std::fs::symlink_metadata(&path).is_err() {
        return false;
    }
    // A pass that cannot be read still freezes (fail closed) unless it is
    // provably past its 30 minutes.
    match qa.read_state(&path).and_then(|b| kijito_gate::pass::Pass::parse(&b)) {
        Ok(p) => p.check_age(&input.session_id, env.now_ms).is_ok(),
        Err(_) => true,
    }
}

/// What the classifier may know of this environment: the protected
/// places and the filesystem facts (asked only for written paths and
/// unknown programs, docs/policy.md "Paths").
fn classify_env(env: &HookEnv, cwd: Option<&Path>, data_dir: Option<&Path>) -> Env {
    let home = std::env::var("HOME").unwrap_or_default();
    let config_dir = kijito_files::config::config_home().ok().map(|c| c.join("kijito-qa"));
    // The plugin root of this hook and, when it is one of the install's
    // per-host roots (`<prefix>/codex`, `<prefix>/claude`), the prefix.
    let root = env.helpers.as_ref().and_then(|h| h.path().parent()).map(Path::to_path_buf);
    let mut plugin_roots: Vec<PathBuf> = root.iter().cloned().collect();
    if let Some(prefix) =
        root.as_deref().filter(|r| r.file_name().and_then(|n| n.to_str()).and_then(crate::Host::from_name).is_some()).and_then(Path::parent)
    {
        plugin_roots.push(prefix.to_path_buf());
    }
    let state_dirs: Vec<PathBuf> = kijito_files::datadir::heads_dir()
        .map(|h| {
            let default_layout =
                h.file_name().is_some_and(|n| n == "latch-heads") && h.parent().and_then(Path::file_name).is_some_and(|n| n == "kijito-qa");
            if default_layout {
                h.parent().map(Path::to_path_buf).unwrap_or(h)
            } else {
                h
            }
        })
        .into_iter()
        .collect();
    // Codex's rules: `$CODEX_HOME/rules` and the default `~/.codex/rules`.
    let codex_home = std::env::var_os("CODEX_HOME").map(PathBuf::from).filter(|p| p.is_absolute());
    let default_home = (!home.is_empty()).then(|| Path::new(&home).join(".codex"));
    let host_rules_dirs: Vec<PathBuf> = codex_home.into_iter().chain(default_home).map(|c| c.join("rules")).collect();
    let qa = data_dir.map(|d| d.join(kijito_files::datadir::QA_DIR));
    let protected: Vec<PathBuf> = config_dir.iter().cloned().chain(state_dirs.iter().cloned()).chain(qa).collect();
    let hook_paths: Vec<PathBuf> =
        env.helpers.as_ref().map(|h| policy::classify::HOOK_BINARIES.iter().map(|n| h.path().join(n)).collect()).unwrap_or_default();
    let text = |v: &[PathBuf]| v.iter().map(|p| p.display().to_string()).collect::<Vec<_>>();
    Env {
        home,
        cwd: cwd.map(|c| c.display().to_string()).unwrap_or_default(),
        config_dir: config_dir.map(|c| c.display().to_string()),
        data_dir: data_dir.map(|d| d.display().to_string()),
        plugin_roots: text(&plugin_roots),
        state_dirs: text(&state_dirs),
        host_rules_dirs: text(&host_rules_dirs),
        facts: Some(std::sync::Arc::new(crate::resolve::FsFacts::new(protected, hook_paths, cwd.map(Path::to_path_buf)))),
        ..Env::default()
    }
}

/// `<data>/actions/sha256-<hex>.json`: the action file of these bytes.
pub fn action_path(data_dir: &Path, bytes: &[u8]) -> PathBuf {
    use sha2::Digest;
    let hex = format!("{:x}", sha2::Sha256::digest(bytes));
    data_dir.join(ACTIONS_DIR).join(format!("sha256-{hex}.json"))
}

fn write_action_file(path: &Path, bytes: &[u8]) -> Result<(), Error> {
    if bytes.len() > kijito_latch::MAX_ACTION_BYTES {
        return Err(Error::new(
            codes::ACTION_TOO_LARGE,
            format!("the call's action is {} bytes, more than memory-latch accepts ({})", bytes.len(), kijito_latch::MAX_ACTION_BYTES),
        ));
    }
    if let Some(dir) = path.parent() {
        kijito_files::private::ensure_private_dir(dir)?;
    }
    // a killed earlier write's temp file, once older than any live write
    // (docs/protocol.md §7, "Crash recovery"), goes with this one
    let _ = kijito_files::private::remove_stale_temps_older(path, std::time::Duration::from_secs(30));
    kijito_files::private::write_atomic(path, bytes)
}
