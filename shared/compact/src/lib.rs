//! kijito-compact: the compaction adapters (docs/adapters.md, docs/protocol.md
//! §9). This crate holds what the hooks and the `kijito-compact` binary share:
//! pin discovery for the SessionStart hook ([`pin`]), the adapters' state
//! files (pin, turn record, request: [`trigger`]), the `request`/`status`
//! commands and the tmux adapter's worker ([`worker`]). An adapter is named
//! by [`trigger::ViaKind`], never by a string. No HTTP.

#![deny(unsafe_code)]

pub mod cli;
pub mod pin;
pub mod procfs;
pub mod tmux;
pub mod trigger;
pub mod worker;

use kijito_gate::QaDir;
use kijito_protocol::error::{Error, Result};
use kijito_protocol::ids::{AbsPath, SessionId};
use std::path::Path;
use trigger::{Pin, Request, TurnState, Via, ViaKind};

/// Stable codes (`kijito_compact_failed:<code>`; request states `failed`):
/// the `compact` area (requests and the tmux worker), declared here, and the
/// `trigger` area's constants ([`crate::trigger::codes`], its enum as
/// `TriggerCode`; `Code` is this area's).
pub mod codes {
    pub use crate::trigger::codes::Code as TriggerCode;
    pub use crate::trigger::codes::*;

    kijito_protocol::codes! {
        KILL_SWITCH KillSwitch = "kill_switch",
        PIN_CHANGED PinChanged = "pin_changed",
        PANE_GONE PaneGone = "pane_gone",
        PANE_PROCESS_CHANGED PaneProcessChanged = "pane_process_changed",
        PANE_NOT_ANCESTOR PaneNotAncestor = "pane_not_ancestor",
        TURN_NOT_ENDED TurnNotEnded = "turn_not_ended",
        CODEX_DAEMON CodexDaemon = "codex_daemon",
        TMUX_ENV_INVALID TmuxEnvInvalid = "tmux_env_invalid",
        ADAPTER_ENV_INVALID AdapterEnvInvalid = "adapter_env_invalid",
        TMUX_UNAVAILABLE TmuxUnavailable = "tmux_unavailable",
        SEND_FAILED SendFailed = "send_failed",
        WORKER_SPAWN_FAILED WorkerSpawnFailed = "worker_spawn_failed",
        /// A `sent` request whose worker died before it saw the compaction
        /// (docs/protocol.md §9.3, "A killed worker").
        WORKER_GONE WorkerGone = "worker_gone",
        /// A client of the pane's tmux session pressed a key since the turn
        /// began (the keystroke rule, docs/adapters.md).
        USER_TYPED UserTyped = "user_typed",
        /// The `reason` of a request that failed after `/compact` was typed and
        /// before its Enter: the text stays in the host's composer.
        COMPACT_LEFT_IN_COMPOSER CompactLeftInComposer = "compact_left_in_composer",
    }
}

/// The sentence `request` adds when there is no safe trigger.
pub const ASK_USER: &str = "No adapter can make the host compact this session: ask the user to run /compact now.";

/// `kijito-compact request`: check the kill switch and (for a tmux pin) that
/// the pinned pane still runs the host, record the one request for this
/// pass, and for a tmux pin start the detached worker (`worker_exe worker
/// ...`). An app-server pin only records the request: the adapter process
/// polls for it. Returns the one stdout line.
pub fn request(data_dir: &AbsPath, s: &SessionId, worker_exe: &Path, now_ms: i64) -> Result<String> {
    let qa = QaDir::open(data_dir)?;
    if trigger::kill_switch_on(data_dir) {
        return Err(Error::new(
            codes::NO_SAFE_TRIGGER,
            format!("the compaction adapters are disabled ({} exists). {ASK_USER}", trigger::kill_switch(data_dir).display()),
        ));
    }
    if let Some(Pin { via: via @ Via::Tmux { .. }, .. }) = trigger::read_pin(&qa, s)? {
        let check = pin::check_pane(&via, &procfs::RealProcs, &tmux::RealTmux::for_via(&via)).unwrap_or(pin::PaneCheck::Gone);
        if check != pin::PaneCheck::Alive {
            return Err(Error::new(codes::NO_SAFE_TRIGGER, format!("the pinned tmux pane no longer runs this session's host. {ASK_USER}")));
        }
        // The worker's lock must be one a worker can take (not a symlink, FIFO
        // or directory planted in its place), else the request would stay
        // pending with no worker: checked before anything is recorded. A
        // worker holding it now is fine (it leaves for the newer request).
        worker::lock(&qa, s).map_err(|e| Error::new(codes::NO_SAFE_TRIGGER, format!("{} ({}). {ASK_USER}", e.message(), e.code())))?;
    }
    let (mut r, pin) = match trigger::create_request(&qa, s, now_ms) {
        Err(e) if e.code_as() == Some(codes::REQUEST_EXISTS) => return resume_killed_worker(&qa, data_dir, s, worker_exe, now_ms, e),
        other => other.map_err(|e| {
            if e.code_as() == Some(codes::NO_SAFE_TRIGGER) {
                Error::new(codes::NO_SAFE_TRIGGER, format!("{} {ASK_USER}", e.message()))
            } else {
                e
            }
        })?,
    };
    if matches!(pin.via, Via::Tmux { .. }) {
        match spawn_worker(worker_exe, data_dir, s, &r.nonce) {
            Ok(mut worker) => until_worker_locked(&qa, s, &mut worker),
            Err(e) => {
                let _ =
                    trigger::finish_failed(&qa, &mut r, trigger::RequestState::Failed { code: codes::WORKER_SPAWN_FAILED.into() }, now_ms);
                return Err(Error::new(codes::NO_SAFE_TRIGGER, format!("the tmux worker could not start ({}). {ASK_USER}", e.message())));
            }
        }
    }
    Ok(trigger::requested_line(&r))
}

/// A request for this pass exists (`exists`, the `request_exists` refusal).
/// When it is a tmux request that is not final and no worker holds its lock
/// (the one that was started was killed, or `request` was killed before it
/// started one: docs/protocol.md §9.3, "A killed worker"): a `pending` one
/// gets a worker again and the requested line; a `sent` one ends `failed`
/// with `worker_gone` (`/compact` may have been typed; it is never typed
/// twice) and the answer is `no_safe_trigger`. Otherwise `exists` stands.
fn resume_killed_worker(qa: &QaDir, data_dir: &AbsPath, s: &SessionId, worker_exe: &Path, now_ms: i64, exists: Error) -> Result<String> {
    let Some(mut r) = trigger::read_request(qa, s)? else { return Err(exists) };
    if !matches!(r.via, ViaKind::Tmux) || r.state.is_final() || worker::lock(qa, s)?.is_none() {
        return Err(exists);
    }
    if r.state == trigger::RequestState::Pending {
        let mut worker = spawn_worker(worker_exe, data_dir, s, &r.nonce).map_err(|e| {
            Error::new(codes::NO_SAFE_TRIGGER, format!("the tmux worker could not start again ({}). {ASK_USER}", e.message()))
        })?;
        until_worker_locked(qa, s, &mut worker);
        return Ok(trigger::requested_line(&r));
    }
    trigger::finish_failed(qa, &mut r, trigger::RequestState::Failed { code: codes::WORKER_GONE.into() }, now_ms)?;
    Err(Error::new(
        codes::NO_SAFE_TRIGGER,
        format!("the tmux worker of this request ended after it marked `/compact` sent and before the compaction was seen ({}); it is not typed again. {ASK_USER}", codes::WORKER_GONE),
    ))
}

/// Wait, at most [`worker::START_LOCK_WAIT`], until some process holds the
/// session's worker lock (the worker just started, or an earlier request's
/// worker it waits out) or `worker` has exited: `request` answers only
/// then, so a `request` right after it finds the worker by its lock and
/// answers `request_exists` instead of starting a second one
/// (docs/protocol.md §9.3, "A killed worker"). A free lock is taken and let
/// go at once (the worker retries every 20 ms).
fn until_worker_locked(qa: &QaDir, s: &SessionId, worker: &mut std::process::Child) {
    let start = std::time::Instant::now();
    while start.elapsed() < worker::START_LOCK_WAIT {
        match worker::lock(qa, s) {
            Ok(Some(free)) => drop(free),
            Ok(None) | Err(_) => return,
        }
        if !matches!(worker.try_wait(), Ok(None)) {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

/// Start `exe worker --session-id S --data-dir D --nonce N` in its own
/// session (setsid), stdio on /dev/null, not waited for (the returned child
/// is only polled). Its lifetime is bounded by [`worker::Limits`].
#[allow(unsafe_code)]
pub fn spawn_worker(exe: &Path, data_dir: &AbsPath, s: &SessionId, nonce: &str) -> Result<std::process::Child> {
    use std::os::unix::process::CommandExt;
    use std::process::{Command, Stdio};
    let mut cmd = Command::new(exe);
    cmd.args(["worker", "--session-id", s.as_str(), "--data-dir", data_dir.as_str(), "--nonce", nonce])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    // SAFETY: setsid is async-signal-safe and touches no memory of the parent.
    unsafe {
        cmd.pre_exec(|| {
            if libc::setsid() < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    cmd.spawn().map_err(|e| Error::new(codes::WORKER_SPAWN_FAILED, format!("cannot start the worker: {e}")))
}

/// `kijito-compact worker`: the real world (tmux through PATH, /proc, the
/// system clock).
pub fn run_worker(data_dir: &AbsPath, s: &SessionId, nonce: &str) -> Result<trigger::RequestState> {
    if !trigger::is_adapter_id(nonce) {
        return Err(Error::usage(kijito_protocol::codes::cli::INVALID_ARGUMENT, "--nonce must be 32 lowercase hex"));
    }
    // The tmux the hook recorded in the pin (the worker's PATH may differ:
    // a login shell resets it); without a pin the worker ends at once.
    let pinned = QaDir::open(data_dir).ok().and_then(|qa| trigger::read_pin(&qa, s).ok().flatten());
    let tmux = pinned.map(|p| tmux::RealTmux::for_via(&p.via)).unwrap_or_default();
    // One worker per session at a time, holding the lock for its whole run.
    // An earlier request's worker leaves once it sees this newer request
    // (within one claim poll); one that still holds the lock after
    // START_LOCK_WAIT is this request's own, so this one leaves it alone.
    let qa = QaDir::open(data_dir)?;
    let Some(_held) = worker::lock_within(&qa, s, worker::START_LOCK_WAIT)? else {
        return Ok(trigger::read_request(&qa, s)?.map(|r| r.state).unwrap_or(trigger::RequestState::Pending));
    };
    let lock_path = worker::lock_path(&qa, s);
    let lock_kept = || _held.still_at(&lock_path);
    let world = worker::World {
        tmux: &tmux,
        procs: &procfs::RealProcs,
        now_ms: &kijito_gate::now_ms,
        sleep: &std::thread::sleep,
        lock_kept: &lock_kept,
    };
    worker::run(data_dir, s, nonce, &worker::Limits::from_env(), &world)
}

/// `kijito-compact status` (read-only).
pub fn status(data_dir: &AbsPath, s: &SessionId) -> Result<serde_json::Value> {
    trigger::status(data_dir, s)
}

/// What the SessionStart hook did about the pin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PinOutcome {
    Pinned(ViaKind),
    /// Neither tmux nor the app-server adapter: no pin (any old one removed).
    NoTrigger,
    /// A subagent session: never pinned.
    Subagent,
    /// The environment names an adapter that cannot be trusted (code,
    /// message); no pin (any old one removed).
    Refused(String, String),
}

/// SessionStart: write (or remove) the pin of `s` from this process's
/// environment. Subagent sessions never get a pin.
pub fn hook_session_start(qa: &QaDir, s: &SessionId, subagent: bool, now_ms: i64) -> PinOutcome {
    if subagent {
        return PinOutcome::Subagent;
    }
    let env = pin::PinEnv::from_process();
    let tmux = env.tmux_program.as_ref().map(tmux::RealTmux::at).unwrap_or_default();
    let found = pin::discover(&env, std::process::id(), &procfs::RealProcs, &tmux);
    match found {
        Ok(Some(via)) => {
            let kind = via.kind();
            match trigger::write_pin(qa, &Pin { session_id: s.clone(), via, pinned_at_ms: now_ms }) {
                Ok(()) => PinOutcome::Pinned(kind),
                Err(e) => PinOutcome::Refused(e.code().to_owned(), e.message().to_owned()),
            }
        }
        Ok(None) => {
            let _ = trigger::remove_pin(qa, s);
            PinOutcome::NoTrigger
        }
        Err(e) => {
            let _ = trigger::remove_pin(qa, s);
            PinOutcome::Refused(e.code().to_owned(), e.message().to_owned())
        }
    }
}

/// UserPromptSubmit (running) and Stop (ended): the turn record.
pub fn hook_turn(qa: &QaDir, s: &SessionId, state: TurnState, now_ms: i64) -> Result<()> {
    trigger::record_turn(qa, s, state, now_ms)
}

/// The latest request of a session, if any (for the Stop message).
pub fn pending_request(qa: &QaDir, s: &SessionId) -> Option<Request> {
    trigger::read_request(qa, s).ok().flatten().filter(|r| !r.state.is_final())
}

#[cfg(test)]
mod tests;
