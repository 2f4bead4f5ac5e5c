//! Host hook I/O (docs/protocol.md §7 and §8; fixtures/hosts/README.md):
//! bounded stdin parsing per event, reply builders that validate against the
//! Codex output schemas and follow the Claude Code contract, the watchdog
//! that guarantees an answer, and the per-hook logic in [`run`].
//!
//! Channels, as measured on real hosts: only SessionStart and
//! UserPromptSubmit `hookSpecificOutput.additionalContext` reaches the model.
//! PreCompact stdout on Claude Code is appended to the summariser's prompt,
//! so the Claude PreCompact answer is empty. PostCompact never carries
//! `hookSpecificOutput` (both hosts reject it).

#![deny(unsafe_code)]

pub mod compact;
pub mod consent_host;
pub mod entry;
pub mod env;
pub mod guard;
pub mod journal;
pub mod latch_hook;
pub mod latch_knobs;
pub mod latch_wallet;
pub mod messages;
pub mod nudge;
pub mod pretool;
pub mod resolve;
pub mod run;
pub mod summary;
pub mod taint;
pub mod text;

pub use env::HookEnv;
pub use kijito_protocol::host::HostKind as Host;

use kijito_protocol::error::{Error, Result};
use kijito_protocol::ids::{AbsPath, SessionId, ToolUseId};
use serde_json::{json, Value};
use std::io::{Read, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// Largest hook stdin accepted.
pub const MAX_STDIN_BYTES: usize = 1024 * 1024;
/// The PreCompact watchdog answers (fail-soft) after this long, so the host
/// always gets an answer within 2 seconds.
pub const WATCHDOG: Duration = Duration::from_millis(1500);
/// Watchdog of PostCompact and session-hook: longer, because cutting a claim
/// or delivery short could lose the one re-entry, but 1.5 s below the 5 s
/// `timeout` the installed hooks.json gives every hook (the host kills a
/// hook at its timeout, so a later watchdog would never answer).
pub const WATCHDOG_SESSION: Duration = Duration::from_millis(3500);
/// The `timeout` (seconds, both hosts' convention) of every hook in the
/// installed hooks.json; the watchdogs stay below it.
pub const HOOK_TIMEOUT_SECS: u64 = 5;

/// Stable codes of this module (registered in the workspace by `tests/it/architecture.rs`).
pub mod codes {
    kijito_protocol::codes! {
        STDIN_EMPTY StdinEmpty = "hook_stdin_empty",
        /// session-hook was asked for PreToolUse and its sibling pretool-hook could not be run: denied.
        PRETOOL_MISSING PretoolMissing = "hook_pretool_missing",
        STDIN_TOO_LARGE StdinTooLarge = "hook_stdin_too_large",
        STDIN_READ StdinRead = "hook_stdin_unreadable",
        STDIN_INVALID_JSON StdinInvalidJson = "hook_stdin_invalid_json",
        STDIN_NOT_OBJECT StdinNotObject = "hook_stdin_not_object",
        EVENT_MISMATCH EventMismatch = "hook_event_mismatch",
        SESSION_INVALID SessionInvalid = "hook_session_id_invalid",
        PANIC Panic = "hook_internal_panic",
        TIMEOUT Timeout = "hook_timeout",
        /// SessionStart: the sibling `wake-check --hook` gave no answer (missing, failed, timed out, malformed).
        WAKE_CHECK_FAILED WakeCheckFailed = "hook_wake_check_failed",
    }
}

/// The hook events `session-hook` serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    SessionStart,
    UserPromptSubmit,
    Stop,
    PreToolUse,
    /// Claude Code only (docs/protocol.md §8a, host consent): a call ran.
    PostToolUse,
    /// Claude Code only: a call ran and failed.
    PostToolUseFailure,
}

impl Event {
    pub fn parse(text: &str) -> Result<Event> {
        match text {
            "SessionStart" => Ok(Event::SessionStart),
            "UserPromptSubmit" => Ok(Event::UserPromptSubmit),
            "Stop" => Ok(Event::Stop),
            "PreToolUse" => Ok(Event::PreToolUse),
            "PostToolUse" => Ok(Event::PostToolUse),
            "PostToolUseFailure" => Ok(Event::PostToolUseFailure),
            _ => Err(Error::usage(
                kijito_protocol::codes::cli::INVALID_EVENT,
                format!(
                    "--expect must be SessionStart, UserPromptSubmit, Stop, PreToolUse, PostToolUse or PostToolUseFailure, got {:?}",
                    kijito_protocol::ids::clip(text)
                ),
            )),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Event::SessionStart => "SessionStart",
            Event::UserPromptSubmit => "UserPromptSubmit",
            Event::Stop => "Stop",
            Event::PreToolUse => "PreToolUse",
            Event::PostToolUse => "PostToolUse",
            Event::PostToolUseFailure => "PostToolUseFailure",
        }
    }
}

impl kijito_protocol::argv::FromArg for Event {
    fn from_arg(text: &str) -> Result<Self> {
        Event::parse(text)
    }
}

/// The flags of a hook binary that serves the event `--expect` names
/// (session-hook, prompt-hook, pretool-hook).
pub const EVENT_HOOK_FLAGS: &[kijito_protocol::argv::Command] = &[kijito_protocol::argv::Command {
    name: "",
    flags: &[
        kijito_protocol::argv::Flag::value("--host"),
        kijito_protocol::argv::Flag::value("--expect"),
        kijito_protocol::argv::Flag::value("--data-dir"),
    ],
}];
/// The flags of a hook binary of one event (precompact, postcompact).
pub const COMPACT_HOOK_FLAGS: &[kijito_protocol::argv::Command] = &[kijito_protocol::argv::Command {
    name: "",
    flags: &[kijito_protocol::argv::Flag::value("--host"), kijito_protocol::argv::Flag::value("--data-dir")],
}];

/// The arguments of every hook binary, parsed one way for the five hook
/// mains (`--help` and `--version` print and exit, [`kijito_cli::hook_args`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookArgs {
    pub host: Host,
    /// `--expect`: required where the tool declares it, else `None`.
    pub event: Option<Event>,
    pub data_dir: Option<AbsPath>,
}

impl HookArgs {
    /// This process's arguments against `tool`'s flags.
    pub fn parse(tool: &kijito_protocol::argv::Tool) -> Result<HookArgs> {
        let a = kijito_cli::hook_args(tool)?;
        let expects = tool.commands.iter().any(|c| c.flags.iter().any(|f| f.name == "--expect"));
        Ok(HookArgs {
            host: a.required("--host")?,
            event: if expects { Some(a.required("--expect")?) } else { None },
            data_dir: a.optional("--data-dir")?,
        })
    }
}

/// Replace this process with its sibling `name` (the installed
/// `<root>/bin/<name>`, or the same directory in tests) run with this
/// process's own arguments; returns only when it cannot be run (missing,
/// not executable), and the caller then answers as that event's fallback.
pub fn exec_sibling(name: &str) {
    use std::os::unix::process::CommandExt;
    let Ok(dir) = kijito_cli::helper_dir() else { return };
    let _ = std::process::Command::new(dir.path().join(name)).args(std::env::args_os().skip(1)).exec();
}

/// Read stdin up to [`MAX_STDIN_BYTES`]; more is refused (not drained).
pub fn read_bounded(mut input: impl Read) -> Result<Vec<u8>> {
    let mut buf = Vec::new();
    (&mut input)
        .take(MAX_STDIN_BYTES as u64 + 1)
        .read_to_end(&mut buf)
        .map_err(|e| Error::new(codes::STDIN_READ, format!("cannot read stdin: {e}")))?;
    if buf.len() > MAX_STDIN_BYTES {
        return Err(Error::new(codes::STDIN_TOO_LARGE, "hook stdin is larger than 1 MiB"));
    }
    Ok(buf)
}

/// The fields of a hook's stdin this toolkit uses. Unknown fields are
/// ignored (hosts add fields between versions).
#[derive(Debug, Clone)]
pub struct HookInput {
    pub event: String,
    pub session_id: SessionId,
    /// Absent, null or not a clean absolute path: `None`.
    pub transcript_path: Option<AbsPath>,
    /// SessionStart `source` (`startup`, `resume`, `clear`, `compact`).
    pub source: Option<String>,
    /// PreCompact/PostCompact `trigger` (`manual`, `auto`).
    pub trigger: Option<String>,
    pub tool_name: Option<String>,
    pub tool_input: Option<Value>,
    /// `cwd`, when it is a clean absolute path.
    pub cwd: Option<AbsPath>,
    /// Claude Code's `agent_id` (a subagent's tool call or prompt).
    pub agent_id: Option<String>,
    /// The tool call's id (Claude Code `toolu_...`, Codex the model's
    /// `call_id`), the same at PreToolUse and PostToolUse.
    pub tool_use_id: Option<ToolUseId>,
}

/// Parse hook stdin and check its `hook_event_name`.
pub fn parse_input(bytes: &[u8], expected_event: &str) -> Result<HookInput> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(Error::new(codes::STDIN_EMPTY, "hook stdin is empty"));
    }
    if bytes.len() > MAX_STDIN_BYTES {
        return Err(Error::new(codes::STDIN_TOO_LARGE, "hook stdin is larger than 1 MiB"));
    }
    let v: Value =
        serde_json::from_slice(bytes).map_err(|e| Error::new(codes::STDIN_INVALID_JSON, format!("hook stdin is not JSON: {e}")))?;
    let Value::Object(mut o) = v else {
        return Err(Error::new(codes::STDIN_NOT_OBJECT, "hook stdin is not a JSON object"));
    };
    let event = o.get("hook_event_name").and_then(Value::as_str).unwrap_or("").to_owned();
    if event != expected_event {
        return Err(Error::new(
            codes::EVENT_MISMATCH,
            format!("expected hook event {expected_event}, got {:?}", kijito_protocol::ids::clip(&event)),
        ));
    }
    let session_id = o
        .get("session_id")
        .and_then(Value::as_str)
        .and_then(|s| SessionId::parse(s).ok())
        .ok_or_else(|| Error::new(codes::SESSION_INVALID, "session_id is missing or not a valid session id"))?;
    let text = |o: &serde_json::Map<String, Value>, k: &str| o.get(k).and_then(Value::as_str).map(kijito_protocol::ids::clip);
    Ok(HookInput {
        transcript_path: o.get("transcript_path").and_then(Value::as_str).and_then(|s| AbsPath::parse(s).ok()),
        source: text(&o, "source"),
        trigger: text(&o, "trigger"),
        tool_name: text(&o, "tool_name"),
        tool_input: o.remove("tool_input"),
        cwd: o.get("cwd").and_then(Value::as_str).and_then(|s| AbsPath::parse(s).ok()),
        agent_id: text(&o, "agent_id"),
        tool_use_id: o.get("tool_use_id").and_then(Value::as_str).and_then(|s| ToolUseId::parse(s).ok()),
        event,
        session_id,
    })
}

/// One line for a `systemMessage`: control characters become spaces, at most
/// [`messages::MAX_MESSAGE_CHARS`] characters, so every message of
/// [`messages`] is printed whole.
pub fn one_line(text: &str) -> String {
    let t: String = text.chars().map(|c| if c.is_control() { ' ' } else { c }).collect();
    let t = t.trim();
    let mut out: String = t.chars().take(messages::MAX_MESSAGE_CHARS).collect();
    if out.len() < t.len() {
        out.push('…');
    }
    out
}

/// PreCompact answer: Codex `{"continue":true,"systemMessage":...}` (never
/// `continue:false`); Claude Code nothing at all.
pub fn precompact_reply(host: Host, message: &str) -> Option<String> {
    match host {
        Host::Codex => Some(json!({"continue": true, "systemMessage": one_line(message)}).to_string()),
        Host::Claude => None,
    }
}

/// PostCompact answer on both hosts: `{"continue":true}` plus at most a
/// one-line `systemMessage`; never `hookSpecificOutput`.
pub fn postcompact_reply(message: Option<&str>) -> String {
    match message {
        Some(m) => json!({"continue": true, "systemMessage": one_line(m)}).to_string(),
        None => json!({"continue": true}).to_string(),
    }
}

/// Model context for SessionStart or UserPromptSubmit.
pub fn context_reply(event: Event, text: &str) -> String {
    json!({"hookSpecificOutput": {"hookEventName": event.name(), "additionalContext": text}}).to_string()
}

/// A Stop reminder for the user that does not block stopping.
pub fn stop_reply(message: &str) -> String {
    json!({"systemMessage": one_line(message)}).to_string()
}

/// PreToolUse deny (the same shape is valid for Codex and Claude Code).
pub fn deny_reply(reason: &str) -> String {
    let reason = if reason.trim().is_empty() { "denied by the kijito-qa command guard" } else { reason };
    json!({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": reason}})
        .to_string()
}

/// PreToolUse answer that puts the call to the user in the host's own
/// dialog (Claude Code only: consent mode host, docs/protocol.md §8a).
pub fn ask_reply(reason: &str) -> String {
    json!({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "ask", "permissionDecisionReason": reason}})
        .to_string()
}

static ANSWERED: AtomicBool = AtomicBool::new(false);

/// Whether this process's answer reached its stdout whole (set by
/// [`answer_once`]; nothing to print counts as written).
static WRITTEN: AtomicBool = AtomicBool::new(false);

/// Print `text` (if any) as the one answer of this process; returns false if
/// an answer was already printed. Whether the write succeeded is kept in
/// [`WRITTEN`]: a host that died or closed the pipe (EPIPE, SIGPIPE is
/// ignored) never read it.
fn answer_once(text: Option<&str>) -> bool {
    if ANSWERED.compare_exchange(false, true, Ordering::SeqCst, Ordering::SeqCst).is_err() {
        return false;
    }
    let written = match text {
        Some(t) => {
            let mut out = std::io::stdout().lock();
            out.write_all(t.as_bytes()).and_then(|()| out.write_all(b"\n")).and_then(|()| out.flush()).is_ok()
        }
        None => true,
    };
    WRITTEN.store(written, Ordering::SeqCst);
    true
}

/// Run `work` under `catch_unwind`; a panic becomes `Err`.
pub fn guarded<T>(work: impl FnOnce() -> T) -> std::result::Result<T, String> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(work)).map_err(|p| {
        p.downcast_ref::<&str>().map(|s| (*s).to_owned()).or_else(|| p.downcast_ref::<String>().cloned()).unwrap_or_else(|| "panic".into())
    })
}

/// The whole life of a hook process: arm a watchdog that prints `fallback`
/// and `_exit(0)`s after `timeout`, run `work`, print its answer, exit 0.
/// A panic anywhere answers `fallback` and exits 0 from the panic hook
/// itself, before any unwinding, so the same holds under `panic = "abort"`
/// (the release profile of the hook binaries, docs/architecture.md).
/// Exactly one answer is ever printed.
///
/// The watchdog is a `SIGALRM` timer ([`arm_alarm`]), not a thread: a
/// thread costs about as much as the rest of a PreToolUse read decision
/// (measured, docs/testing.md), and this runs before every tool call. If
/// the timer cannot be armed, a watchdog thread does the same.
#[allow(unsafe_code)]
pub fn run_hook(timeout: Duration, fallback: Option<String>, work: impl FnOnce() -> Option<String>) -> ! {
    let on_panic = fallback.clone();
    std::panic::set_hook(Box::new(move |info| {
        let _ = writeln!(std::io::stderr(), "kijito hook: internal error ({}); answering fail-soft", codes::PANIC);
        let _ = info;
        finish(on_panic.as_deref())
    }));
    if !arm_alarm(timeout, fallback.as_deref()) {
        let fb = fallback.clone();
        let _ = std::thread::Builder::new().name("watchdog".into()).spawn(move || {
            std::thread::sleep(timeout);
            if answer_once(fb.as_deref()) {
                let _ = writeln!(std::io::stderr(), "kijito hook: {}: answered fail-soft", codes::TIMEOUT);
                // SAFETY: _exit has no preconditions; it ends the process at once.
                unsafe { libc::_exit(0) }
            }
        });
    }
    IN_HOOK.store(true, Ordering::SeqCst);
    // `guarded` only matters if a panic ever got past the hook above.
    match guarded(work) {
        Ok(answer) => finish_then(answer.as_deref(), true),
        Err(_) => finish(fallback.as_deref()),
    }
}

/// What the alarm handler writes: the fallback answer line (empty: none)
/// and the stderr line. Set once, before the timer is armed.
static ALARM_TEXT: std::sync::OnceLock<(Vec<u8>, Vec<u8>)> = std::sync::OnceLock::new();

/// `write(2)` all of `bytes` to `fd` (async-signal-safe: no allocation, no lock).
#[allow(unsafe_code)]
fn write_raw(fd: libc::c_int, bytes: &[u8]) {
    write_all_with(
        bytes,
        // SAFETY: b is a valid readable buffer of its length.
        |b| unsafe { libc::write(fd, b.as_ptr().cast(), b.len()) },
        || std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted,
    )
}

/// [`write_raw`]'s loop over one `write` call (`write` answers as
/// `write(2)`; `interrupted`: whether its last failure was `EINTR`): the
/// rest again after a short write, the same again after `EINTR`, done at
/// anything else (an error, or nothing written).
fn write_all_with(mut bytes: &[u8], mut write: impl FnMut(&[u8]) -> isize, interrupted: impl Fn() -> bool) {
    while !bytes.is_empty() {
        let n = write(bytes);
        if n > 0 {
            bytes = &bytes[n as usize..];
        } else if n < 0 && interrupted() {
            continue;
        } else {
            return;
        }
    }
}

/// The `SIGALRM` handler: unless an answer was printed, print the fallback
/// and `_exit(0)`. Only async-signal-safe calls: an atomic, `write`, `_exit`.
#[allow(unsafe_code)]
extern "C" fn on_alarm(_: libc::c_int) {
    if ANSWERED.compare_exchange(false, true, Ordering::SeqCst, Ordering::SeqCst).is_err() {
        // The answer is being printed; the process exits on its own.
        return;
    }
    if let Some((answer, note)) = ALARM_TEXT.get() {
        write_raw(1, answer);
        write_raw(2, note);
    }
    // SAFETY: _exit has no preconditions and is async-signal-safe.
    unsafe { libc::_exit(0) }
}

/// Arm the watchdog: a `SIGALRM` handler ([`on_alarm`], `SA_RESTART`, so a
/// system call it interrupts goes on when an answer is already out) and a
/// one-shot `ITIMER_REAL` of `timeout`. Timers are not inherited by
/// children (fork) and nothing here execs after arming. `false` when either
/// cannot be set: the caller starts a watchdog thread instead.
#[allow(unsafe_code)]
fn arm_alarm(timeout: Duration, fallback: Option<&str>) -> bool {
    let answer = fallback.map(|f| format!("{f}\n").into_bytes()).unwrap_or_default();
    let note = format!("kijito hook: {}: answered fail-soft\n", codes::TIMEOUT).into_bytes();
    if ALARM_TEXT.set((answer, note)).is_err() {
        return false;
    }
    // SAFETY: a zeroed sigaction is valid; the handler is an extern "C" fn
    // of the signature sa_sigaction expects without SA_SIGINFO.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = on_alarm as extern "C" fn(libc::c_int) as usize;
        sa.sa_flags = libc::SA_RESTART;
        libc::sigemptyset(&mut sa.sa_mask);
        if libc::sigaction(libc::SIGALRM, &sa, std::ptr::null_mut()) != 0 {
            return false;
        }
    }
    let value = libc::timeval { tv_sec: timeout.as_secs() as libc::time_t, tv_usec: timeout.subsec_micros() as libc::suseconds_t };
    let timer = libc::itimerval { it_interval: libc::timeval { tv_sec: 0, tv_usec: 0 }, it_value: value };
    // SAFETY: timer is a valid itimerval; the old value is not wanted.
    unsafe { libc::setitimer(libc::ITIMER_REAL, &timer, std::ptr::null_mut()) == 0 }
}

/// Set by [`run_hook`]: this process prints its answer at its end, so
/// [`after_answer`] steps wait for it.
static IN_HOOK: AtomicBool = AtomicBool::new(false);

/// Steps that must come after the answer is printed ([`after_answer`]).
#[allow(clippy::type_complexity)]
static AFTER_ANSWER: std::sync::Mutex<Vec<Box<dyn FnOnce() + Send>>> = std::sync::Mutex::new(Vec::new());

/// Run `step` once this hook's answer is printed (and flushed), before the
/// process exits; never after a fallback answer (panic, watchdog) nor when
/// the print failed (the host closed the pipe or died: EPIPE). Outside
/// a hook process ([`run_hook`] not running: tests, embedders) it runs at
/// once. A re-entry delivery is marked delivered this way: a kill before
/// the print leaves it to be delivered again (docs/protocol.md §7).
pub fn after_answer(step: impl FnOnce() + Send + 'static) {
    if IN_HOOK.load(Ordering::SeqCst) {
        if let Ok(mut steps) = AFTER_ANSWER.lock() {
            steps.push(Box::new(step));
        }
    } else {
        step()
    }
}

/// Print `answer` unless one was already printed, then exit 0.
#[allow(unsafe_code)]
fn finish(answer: Option<&str>) -> ! {
    finish_then(answer, false)
}

/// [`finish`], running the [`after_answer`] steps after the print when `then`.
#[allow(unsafe_code)]
fn finish_then(answer: Option<&str>, then: bool) -> ! {
    if answer_once(answer) {
        // the steps that need the answer out (marking a re-entry delivered)
        // run only when it was written whole: a failed print leaves the
        // re-entry to the next hook (docs/protocol.md §7, "Crash recovery")
        if then && WRITTEN.load(Ordering::SeqCst) {
            let steps = AFTER_ANSWER.lock().map(|mut s| std::mem::take(&mut *s)).unwrap_or_default();
            for step in steps {
                step();
            }
        }
        std::process::exit(0);
    }
    // The watchdog won the race and is exiting; never print a second answer.
    std::thread::sleep(Duration::from_secs(5));
    // SAFETY: as above.
    unsafe { libc::_exit(0) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn input_parsing_and_codes() {
        let ok = br#"{"session_id":"abc-1","transcript_path":"/t/x.jsonl","hook_event_name":"SessionStart","source":"compact"}"#;
        let i = parse_input(ok, "SessionStart").unwrap();
        assert_eq!(i.session_id.as_str(), "abc-1");
        assert_eq!(i.source.as_deref(), Some("compact"));
        assert_eq!(i.transcript_path.unwrap().as_str(), "/t/x.jsonl");
        assert_eq!(parse_input(ok, "Stop").unwrap_err().code(), codes::EVENT_MISMATCH.as_str());
        assert_eq!(parse_input(b"", "Stop").unwrap_err().code(), codes::STDIN_EMPTY.as_str());
        assert_eq!(parse_input(b"{", "Stop").unwrap_err().code(), codes::STDIN_INVALID_JSON.as_str());
        assert_eq!(parse_input(b"[]", "Stop").unwrap_err().code(), codes::STDIN_NOT_OBJECT.as_str());
        assert_eq!(
            parse_input(br#"{"hook_event_name":"Stop","session_id":"a/b"}"#, "Stop").unwrap_err().code(),
            codes::SESSION_INVALID.as_str()
        );
        let big = vec![b' '; MAX_STDIN_BYTES + 10];
        assert_eq!(read_bounded(&big[..]).unwrap_err().code(), codes::STDIN_TOO_LARGE.as_str());
        let null_t = br#"{"session_id":"a","transcript_path":null,"hook_event_name":"Stop"}"#;
        assert!(parse_input(null_t, "Stop").unwrap().transcript_path.is_none());
    }

    /// The raw write loop: a short write goes on with the rest, `EINTR`
    /// tries again, anything else (an error, nothing written) stops.
    #[test]
    fn the_raw_write_goes_on_after_short_writes_and_eintr_only() {
        use std::cell::RefCell;
        // `answers`: what each write(2) returns (-1 with `EINTR` or not); the bytes each was given
        let run = |answers: &[(isize, bool)]| {
            let calls: RefCell<Vec<Vec<u8>>> = RefCell::new(Vec::new());
            let eintr = std::cell::Cell::new(false);
            write_all_with(
                b"abcdefgh",
                |b| {
                    let k = calls.borrow().len();
                    assert!(k < answers.len(), "a write(2) more than expected: {:?}", calls.borrow());
                    calls.borrow_mut().push(b.to_vec());
                    eintr.set(answers[k].1);
                    answers[k].0
                },
                || eintr.get(),
            );
            calls.into_inner().into_iter().map(|c| String::from_utf8(c).unwrap()).collect::<Vec<_>>()
        };
        assert_eq!(run(&[(8, false)]), ["abcdefgh"]);
        assert_eq!(run(&[(3, false), (2, false), (3, false)]), ["abcdefgh", "defgh", "fgh"]);
        assert_eq!(run(&[(-1, true), (-1, true), (8, false)]), ["abcdefgh"; 3]);
        assert_eq!(run(&[(2, false), (-1, true), (6, false)]), ["abcdefgh", "cdefgh", "cdefgh"]);
        // an error that is not EINTR, or nothing written (even with a stale EINTR): done
        assert_eq!(run(&[(-1, false)]), ["abcdefgh"]);
        assert_eq!(run(&[(0, true)]), ["abcdefgh"]);
        assert_eq!(run(&[(4, false), (0, false)]), ["abcdefgh", "efgh"]);
    }

    #[test]
    fn replies_have_the_host_shapes() {
        assert_eq!(precompact_reply(Host::Claude, "x"), None);
        assert_eq!(precompact_reply(Host::Codex, "a\nb").unwrap(), r#"{"continue":true,"systemMessage":"a b"}"#);
        assert_eq!(postcompact_reply(None), r#"{"continue":true}"#);
        assert!(deny_reply("").contains("command guard"));
        let long = "x".repeat(messages::MAX_MESSAGE_CHARS + 100);
        let v: Value = serde_json::from_str(&stop_reply(&long)).unwrap();
        assert_eq!(v["systemMessage"].as_str().unwrap().chars().count(), messages::MAX_MESSAGE_CHARS + 1, "the maximum, then an ellipsis");
        let whole = "y".repeat(messages::MAX_MESSAGE_CHARS);
        let v: Value = serde_json::from_str(&stop_reply(&whole)).unwrap();
        assert_eq!(v["systemMessage"].as_str().unwrap(), whole, "a message of the maximum length is printed whole");
        assert!(guarded(|| -> u8 { panic!("boom") }).unwrap_err().contains("boom"));
    }
}
