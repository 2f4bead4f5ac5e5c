//! PreToolUse on every tool call (docs/protocol.md §8 and §8a), the
//! `pretool-hook` binary: the helper-command guard first, then the policy
//! ([`kijito_policy`]): tripwires, the latch modes, the QA freeze, pointer
//! writes outside `pointer-publish`, and consent for irreversible calls.
//!
//! Cost, because this runs before every tool call: a call the classifier
//! calls a read (or a helper command) is decided from its stdin alone; the
//! latch is opened only for a mutating call in an enforced workspace, the
//! QA pass is looked at (one stat, one small read) only for a Kijito write.
//!
//! Enforcement (latch modes and consent) is on in a workspace that holds an
//! initialised latch (`.memory-latch/`), or everywhere with the config's
//! `"enforce": true`. Tripwires, the freeze and the pointer rule apply in
//! every workspace: they protect the QA protocol itself.

use crate::run::HookEnv;
use crate::{ask_reply, deny_reply, parse_input, HookInput};
use kijito_policy::{self as policy, Classification, ConsentTarget, Decision, Env, LatchMode, Modes, ToolCall};
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
    if let Some(deny) = crate::guard::guard_tool_call(env.helpers.as_ref(), &input) {
        crate::journal::guard_deny(env, &input);
        return Some(deny);
    }
    // Witnessed verifier boots (docs/protocol.md §7): a `pointer-snapshot`
    // call is recorded with the host's agent identity; any other call costs
    // no I/O. A record that cannot be written only leaves the boot unwitnessed.
    if let Some(h) = env.helpers.as_ref() {
        let _ = kijito_gate::witness::observe_tool_call(
            input.tool_input.as_ref(),
            input.agent_id.as_deref(),
            &input.session_id,
            &|| env.qa().map(|(_, qa)| qa),
            h,
            env.now_ms,
        );
    }
    decide(env, &input).map(|a| match a {
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
fn decide(env: &HookEnv, input: &HookInput) -> Option<Answer> {
    let null = Value::Null;
    let tool_name = input.tool_name.as_deref().unwrap_or("");
    let tool_input = input.tool_input.as_ref().unwrap_or(&null);
    let call = ToolCall::parse(tool_name, tool_input);
    let cwd = input.cwd.as_ref().map(|c| c.as_path().to_path_buf());
    // Resolved once for this process (HookEnv::qa uses the same answer).
    let data_dir = env.data_dir().ok();
    let mut cenv = classify_env(env, cwd.as_deref(), data_dir.as_ref().map(|d| d.as_path()));
    // The user's policy file: an unusable one leaves the default rules and
    // denies every mutating call until the user mends it (reads pass).
    let user_error = match policy::UserPolicy::load(kijito_files::config::read_user_policy()) {
        Ok(u) => {
            cenv.user_policy = u;
            None
        }
        Err(e) => Some(e),
    };
    let mut cls = policy::classify(&call, &cenv);
    if !cls.mutates() && cls.tripwires.is_empty() {
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
    if let Some(reason) = pointer_write(env, &call, &cls, tool_input) {
        return Some(Answer::Deny(reason));
    }
    let helper_dir = env.helpers.as_ref().map(|h| h.path().display().to_string()).unwrap_or_else(|| "<root>/bin".into());
    let workspace = cwd.as_ref().map(|c| c.display().to_string()).unwrap_or_else(|| "<workspace>".into());
    let bytes = policy::action_bytes(tool_name, tool_input);
    let action_file =
        data_dir.as_ref().map(|d| action_path(d.as_path(), &bytes)).unwrap_or_else(|| PathBuf::from("<data-dir>/actions/action.json"));
    let action_file_text = action_file.display().to_string();
    let target = ConsentTarget {
        helper_dir: &helper_dir,
        workspace: &workspace,
        action_file: &action_file_text,
        session_id: input.session_id.as_str(),
    };

    let enforced = crate::latch_hook::enforced(env, cwd.as_deref());
    let latch = if enforced && cls.mutates() { cwd.as_deref().and_then(crate::latch_hook::open_latch) } else { None };
    let mode = match (&latch, enforced) {
        (_, false) => LatchMode::Absent,
        (Some(l), true) => LatchMode::from(&l.tool_mode()),
        // A latch directory that does not open is not a latch to trust.
        (None, true) if cwd.as_deref().is_some_and(crate::latch_hook::has_latch_dir) && cls.mutates() => LatchMode::SilentWitness,
        (None, true) => LatchMode::Normal,
    };
    let qa_frozen = cls.kijito_write() && pass_recorded(env, data_dir.as_ref(), input);
    // The wake hold (SessionStart's local wake checks, kijito_wake::hold).
    let hold = match (enforced, data_dir.as_ref(), cwd.as_deref()) {
        (true, Some(d), Some(c)) => kijito_files::datadir::qa_path(d).ok().and_then(|q| kijito_wake::hold::read(q.as_path(), c)),
        _ => None,
    };
    if hold == Some(kijito_wake::hold::Hold::Cautious) {
        cls.raise_risk(policy::Risk::High);
    }
    let modes = Modes { latch: mode, qa_frozen, consent_confirmed: false };
    let decision = match (policy::decide(&cls, &modes, &target), hold) {
        // Tripwires and the halting modes come first; the hold before the freeze and consent.
        (Decision::Deny { code, reason }, _) if policy::classify::tripwires::ALL.contains(&code) || HALTING.contains(&code) => {
            Decision::Deny { code, reason }
        }
        (d, Some(kijito_wake::hold::Hold::Pending)) => {
            let data = data_dir.as_ref().map(|d| d.as_str().to_owned()).unwrap_or_default();
            let cmd = format!("{helper_dir}/wake-check --live --workspace {workspace} --data-dir {data}");
            policy::decide::wake_hold(&cls, &cmd).unwrap_or(d)
        }
        (d, _) => d,
    };
    crate::journal::decision(env, input, &cls, mode, &decision);
    match decision {
        Decision::Allow => None,
        Decision::Deny { code, reason } if code == codes::CONSENT_REQUIRED => {
            let ctx =
                ConsentCall { input, cls: &cls, bytes: &bytes, action_file: &action_file, workspace: &workspace, helper_dir: &helper_dir };
            consent(env, latch.as_ref(), data_dir.as_ref().map(|d| d.as_path()), &ctx, reason)
        }
        Decision::Deny { reason, .. } => Some(Answer::Deny(reason)),
    }
}

/// The latch modes that halt every mutating call, ahead of the wake hold.
const HALTING: &[codes::Code] = &[codes::SILENT_WITNESS, codes::DEGRADED, codes::ONE_STEP_NO_STEP, codes::GOVERNANCE_INVALID];

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
                    action_hash: policy::hash_of_action_bytes(c.bytes),
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
fn pointer_write(env: &HookEnv, call: &ToolCall, cls: &Classification, tool_input: &Value) -> Option<String> {
    let ToolCall::Mcp { name, .. } = call else { return None };
    let config = env.config.as_ref()?;
    let targets: Vec<u64> = [config.pointer_id.map(|p| p.get()), config.lock_message_id.map(|m| m.get())].into_iter().flatten().collect();
    if targets.is_empty() || !cls.kijito_write() {
        return None;
    }
    let named = ["id", "memory_id", "memoryId", "message_id", "messageId", "target_id", "targetId"]
        .iter()
        .filter_map(|k| tool_input.get(*k))
        .filter_map(|v| v.as_u64().or_else(|| v.as_str().and_then(|s| s.trim().parse().ok())))
        .any(|id| targets.contains(&id));
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

/// What the classifier may know of this environment.
fn classify_env(env: &HookEnv, cwd: Option<&Path>, data_dir: Option<&Path>) -> Env {
    let home = std::env::var("HOME").unwrap_or_default();
    let config_dir = kijito_files::config::config_home().ok().map(|c| c.join("kijito-qa").display().to_string());
    let plugin_roots = env.helpers.as_ref().and_then(|h| h.path().parent()).map(|r| vec![r.display().to_string()]).unwrap_or_default();
    Env {
        home,
        cwd: cwd.map(|c| c.display().to_string()).unwrap_or_default(),
        config_dir,
        data_dir: data_dir.map(|d| d.display().to_string()),
        plugin_roots,
        user_policy: Default::default(),
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
    kijito_files::private::write_atomic(path, bytes)
}
