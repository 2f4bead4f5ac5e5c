//! The tmux adapter's worker: one detached, bounded process per request.
//!
//! [`decide`] is the whole policy, a pure function of what the worker sees
//! on one poll; [`run`] reads those facts, asks tmux only when about to send
//! and records every outcome in the request file.

use crate::codes;
use crate::pin::{check_pane, PaneCheck};
use crate::procfs::Procs;
use crate::tmux::{Tmux, COMPACT_TEXT};
use crate::trigger::{self, Pin, Request, RequestState, Turn, TurnState, Via};
use kijito_gate::QaDir;
use kijito_protocol::error::{Error, Result};
use kijito_protocol::ids::{AbsPath, SessionId};
use std::time::Duration;

/// Bounds of one worker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// How long to wait for the turn to end (the pass expires first anyway).
    pub idle_wait_ms: i64,
    /// How long to wait for the claim record after sending (default 10 min).
    pub claim_wait_ms: i64,
    /// How long after the turn-ended record before typing: Codex 0.169's
    /// TUI runs the Stop hook before it leaves the "task running" state, and
    /// a `/compact` typed then stays in the composer (measured: typed 9 ms
    /// after Stop, the Enter did nothing).
    pub settle_ms: i64,
    /// Pause between `send-keys -l /compact` and `send-keys Enter`: Codex
    /// 0.169's TUI treats an Enter arriving right behind a burst of typed
    /// characters as part of a paste (measured: `/compact` stayed in the
    /// composer); the harness's 0.4 s gap and 0.05 s both worked.
    pub enter_gap: Duration,
    /// Poll interval while waiting for the turn to end.
    pub poll_idle: Duration,
    /// Poll interval while waiting for the claim.
    pub poll_claim: Duration,
    /// Test seam (`KIJITO_COMPACT_TEST_HOLD`, an absolute path P): right
    /// before the checks of its first keystroke (`/compact`) the worker
    /// waits until `P.1` exists, and before those of the second (Enter)
    /// until `P.2` exists, each at most [`HOLD_MAX_MS`]. It can only delay
    /// a keystroke (every check still runs after the wait), so whoever sets
    /// it gains nothing; the integration tests use it to act (type as the
    /// user, create the kill switch) at an exact point between the Stop and
    /// the keystrokes without racing the worker.
    pub hold: Option<std::path::PathBuf>,
}

/// The longest wait of [`Limits::hold`], per keystroke.
pub const HOLD_MAX_MS: u64 = 10_000;

pub const ENV_IDLE_WAIT_MS: &str = "KIJITO_COMPACT_IDLE_WAIT_MS";
pub const ENV_CLAIM_WAIT_MS: &str = "KIJITO_COMPACT_CLAIM_WAIT_MS";
pub const ENV_SETTLE_MS: &str = "KIJITO_COMPACT_SETTLE_MS";
pub const ENV_ENTER_GAP_MS: &str = "KIJITO_COMPACT_ENTER_GAP_MS";
pub const ENV_TEST_HOLD: &str = "KIJITO_COMPACT_TEST_HOLD";

impl Default for Limits {
    fn default() -> Self {
        Limits {
            idle_wait_ms: kijito_gate::PASS_MAX_AGE_MS,
            claim_wait_ms: 10 * 60 * 1000,
            settle_ms: 1000,
            enter_gap: Duration::from_millis(300),
            poll_idle: Duration::from_millis(20),
            poll_claim: Duration::from_millis(200),
            hold: None,
        }
    }
}

impl Limits {
    /// Defaults, shortened (never lengthened) by `KIJITO_COMPACT_IDLE_WAIT_MS`,
    /// `KIJITO_COMPACT_CLAIM_WAIT_MS` (each at least 100), `KIJITO_COMPACT_SETTLE_MS`
    /// and `KIJITO_COMPACT_ENTER_GAP_MS`, plus the test seam
    /// `KIJITO_COMPACT_TEST_HOLD` (tests and the benchmark use them).
    pub fn from_env() -> Limits {
        Limits::from_vars(&|k| std::env::var(k).ok())
    }

    /// [`Limits::from_env`] over any variable lookup.
    pub fn from_vars(var: &dyn Fn(&str) -> Option<String>) -> Limits {
        let mut l = Limits::default();
        let int = |k: &str| var(k).and_then(|v| v.parse::<i64>().ok());
        if let Some(v) = int(ENV_IDLE_WAIT_MS).filter(|v| *v >= 100) {
            l.idle_wait_ms = v.min(l.idle_wait_ms);
        }
        if let Some(v) = int(ENV_CLAIM_WAIT_MS).filter(|v| *v >= 100) {
            l.claim_wait_ms = v.min(l.claim_wait_ms);
        }
        if let Some(v) = int(ENV_SETTLE_MS).filter(|v| *v >= 0) {
            l.settle_ms = v.min(l.settle_ms);
        }
        if let Some(v) = var(ENV_ENTER_GAP_MS).and_then(|v| v.parse::<u64>().ok()) {
            l.enter_gap = Duration::from_millis(v).min(l.enter_gap);
        }
        l.hold = var(ENV_TEST_HOLD).map(std::path::PathBuf::from).filter(|p| p.is_absolute());
        l
    }

    /// Most polls one worker can make.
    pub fn max_polls(&self) -> u64 {
        let idle = self.idle_wait_ms as u64 / self.poll_idle.as_millis().max(1) as u64;
        let claim = self.claim_wait_ms as u64 / self.poll_claim.as_millis().max(1) as u64;
        idle + claim + self.settle_ms as u64 / self.poll_idle.as_millis().max(1) as u64 + 16
    }
}

/// What the worker sees on one poll.
#[derive(Debug, Clone)]
pub struct Facts<'a> {
    /// The nonce this worker was started for.
    pub nonce: &'a str,
    /// The request file now (`None`: removed).
    pub request: Option<&'a Request>,
    /// The pin when the worker started, and now.
    pub pin_at_start: &'a Pin,
    pub pin_now: Option<&'a Pin>,
    pub turn: Option<&'a Turn>,
    pub pane: PaneCheck,
    /// What the clients' activity says ([`user_typed`]).
    pub typing: Typing,
    /// The Stop (`atMs`) this worker already declined to type after because
    /// the user typed: only a later Stop counts.
    pub deferred_stop_ms: Option<i64>,
    pub kill_switch: bool,
    /// `trigger::pass_still_valid` (the refusal code on error).
    pub pass: std::result::Result<(), String>,
    /// The claim record of this request: (attested, reason).
    pub claim: Option<(bool, String)>,
    pub now_ms: i64,
    /// When this worker sent `/compact` (None: not yet).
    pub sent_at_ms: Option<i64>,
}

/// The keystroke rule's answer for one check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Typing {
    /// Not looked at yet.
    Unchecked,
    /// No client of the pane's session pressed a key since the turn began.
    Quiet,
    /// One did (or the same-second ambiguity could hide one).
    Typed,
    /// The clients could not be read (the code): counts as not quiet.
    Unknown(String),
}

/// The keystroke rule (docs/adapters.md, "Never into the user's typing").
/// `activity`: `#{client_activity}` of every client of the pane's session
/// (whole seconds); `turn`: the ended turn the worker acts on;
/// `pinned_at_ms`: the pin's time. Counting from the turn's start second
/// `S` (its UserPromptSubmit): a client active in a later second typed
/// during the turn or after its Stop (the keys sit in the composer); one
/// active in `S` itself is taken as the key that submitted the turn's
/// prompt, unless the Stop came in that same second too (then a key after
/// the Stop could hide there). Without a recorded start, keys are counted
/// from the pin's second, that second included.
pub fn user_typed(activity: &[i64], turn: &Turn, pinned_at_ms: i64) -> bool {
    let (from_ms, submit_second) = match turn.started_at_ms {
        Some(start) => (start, true),
        None => (pinned_at_ms, false),
    };
    let start_s = from_ms.div_euclid(1000);
    let stop_s = turn.at_ms.div_euclid(1000);
    let same_second_ok = submit_second && stop_s > start_s;
    activity.iter().any(|a| *a > start_s || (*a == start_s && !same_second_ok))
}

/// The checks right before each keystroke (`/compact`, and again before
/// Enter): `None` to type, else the code. The kill switch, then the pane
/// (still running the pinned host), then the user's keys.
pub fn keystroke_check(kill_switch: bool, pane: PaneCheck, typing: &Typing) -> Option<String> {
    if kill_switch {
        return Some(codes::KILL_SWITCH.into());
    }
    match pane {
        PaneCheck::Alive => {}
        PaneCheck::Gone => return Some(codes::PANE_GONE.into()),
        PaneCheck::OtherProcess => return Some(codes::PANE_PROCESS_CHANGED.into()),
        PaneCheck::Unchecked => return Some(codes::PANE_GONE.into()),
    }
    match typing {
        Typing::Quiet => None,
        Typing::Typed => Some(codes::USER_TYPED.into()),
        Typing::Unknown(code) => Some(code.clone()),
        Typing::Unchecked => Some(codes::TMUX_UNAVAILABLE.into()),
    }
}

/// The worker's next step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Poll again later.
    Wait,
    /// Look at the pane (tmux + /proc) and the clients, then decide again.
    CheckPane,
    /// Type `/compact`, then Enter.
    Send,
    /// The user typed since the turn began: send nothing, keep the request
    /// pending with this reason and wait for a later Stop (`stop_ms` is the
    /// Stop declined now).
    Defer { reason: String, stop_ms: i64 },
    /// The claim record arrived.
    Compacted { attested: bool, reason: String },
    /// Give up without sending (code).
    Fail(String),
    /// Sent, no claim within the bound.
    TimedOut,
    /// The request is not this worker's any more (another pass, or final):
    /// exit without touching it.
    Leave,
}

/// The policy. Before sending: the request must still be this worker's and
/// pending; a claim already there ends it as compacted (the user or the host
/// compacted first); then the kill switch, the pass (still waiting, same
/// nonce, not expired), the pin (unchanged), and only once the turn has ended
/// (a Stop recorded after the request, and after any Stop already declined)
/// the pane (still there, still running the pinned host) and the user's keys
/// ([`keystroke_check`]). After sending: the claim, or time out.
pub fn decide(f: &Facts, limits: &Limits) -> Decision {
    let Some(r) = f.request else { return Decision::Leave };
    if r.nonce != f.nonce {
        return Decision::Leave;
    }
    if let Some(sent) = f.sent_at_ms {
        if let Some((attested, reason)) = &f.claim {
            return Decision::Compacted { attested: *attested, reason: reason.clone() };
        }
        if !matches!(r.state, RequestState::Sent) {
            return Decision::Leave;
        }
        return if f.now_ms - sent > limits.claim_wait_ms { Decision::TimedOut } else { Decision::Wait };
    }
    if !matches!(r.state, RequestState::Pending) {
        return Decision::Leave;
    }
    if let Some((attested, reason)) = &f.claim {
        return Decision::Compacted { attested: *attested, reason: reason.clone() };
    }
    if f.kill_switch {
        return Decision::Fail(codes::KILL_SWITCH.into());
    }
    if let Err(code) = &f.pass {
        return Decision::Fail(code.clone());
    }
    if f.pin_now != Some(f.pin_at_start) || !matches!(f.pin_at_start.via, Via::Tmux { .. }) {
        return Decision::Fail(codes::PIN_CHANGED.into());
    }
    let stop = f.turn.filter(|t| {
        t.state == TurnState::Ended
            && t.at_ms >= r.requested_at_ms
            && f.deferred_stop_ms.is_none_or(|d| t.at_ms > d)
            && f.now_ms - t.at_ms >= limits.settle_ms
    });
    let Some(stop) = stop else {
        if f.now_ms - r.requested_at_ms > limits.idle_wait_ms {
            return Decision::Fail(if f.deferred_stop_ms.is_some() { codes::USER_TYPED } else { codes::TURN_NOT_ENDED }.into());
        }
        return Decision::Wait;
    };
    if f.pane == PaneCheck::Unchecked || (f.pane == PaneCheck::Alive && f.typing == Typing::Unchecked) {
        return Decision::CheckPane;
    }
    match keystroke_check(f.kill_switch, f.pane, &f.typing) {
        None => Decision::Send,
        Some(code) if codes::Code::parse(&code) == Some(codes::USER_TYPED) => Decision::Defer { reason: code, stop_ms: stop.at_ms },
        Some(code) => Decision::Fail(code),
    }
}

/// The worker's lock, `compact-worker.<session>.lock` in the QA dir
/// (owner-only, no symlink followed): a worker holds it for its whole run
/// and the kernel drops it when the worker dies, so `request` can tell a
/// live worker from a killed one (docs/protocol.md §9.3, "A killed
/// worker"). `None`: another process holds it now.
pub fn lock(qa: &QaDir, s: &SessionId) -> Result<Option<kijito_files::lock::Held>> {
    lock_within(qa, s, Duration::ZERO)
}

/// How long a starting worker waits for the lock: a worker of an earlier
/// request of the session (its host killed after `/compact` was sent, say)
/// leaves within one claim poll of seeing the newer request, so the newer
/// one's worker waits that out instead of leaving its request pending.
pub const START_LOCK_WAIT: Duration = Duration::from_secs(3);

/// [`lock`], waiting up to `wait` for another worker to let it go.
pub fn lock_within(qa: &QaDir, s: &SessionId, wait: Duration) -> Result<Option<kijito_files::lock::Held>> {
    let path = lock_path(qa, s);
    let start = std::time::Instant::now();
    loop {
        let file = kijito_files::lock::open_file(&path)
            .map_err(|e| Error::new(codes::WORKER_SPAWN_FAILED, format!("cannot open {}: {e}", path.display())))?;
        if !file.metadata().is_ok_and(|m| m.is_file()) {
            return Err(Error::new(codes::WORKER_SPAWN_FAILED, format!("{} is not a regular file", path.display())));
        }
        let every_20_ms = kijito_files::lock::Backoff { first: Duration::from_millis(20), max: Duration::from_millis(20) };
        match kijito_files::lock::exclusive_within(file, wait.saturating_sub(start.elapsed()), every_20_ms) {
            // A lock file removed or replaced while we waited: lock the one the path names now.
            Ok(held) if !held.still_at(&path) && start.elapsed() < wait => continue,
            Ok(held) if !held.still_at(&path) => return Ok(None),
            Ok(held) => return Ok(Some(held)),
            Err(kijito_files::lock::Refused::TimedOut) => return Ok(None),
            Err(kijito_files::lock::Refused::Failed(e)) => {
                return Err(Error::new(codes::WORKER_SPAWN_FAILED, format!("cannot lock {}: {e}", path.display())))
            }
        }
    }
}

/// `compact-worker.<session>.lock` in the QA dir.
pub fn lock_path(qa: &QaDir, s: &SessionId) -> std::path::PathBuf {
    qa.path().as_path().join(format!("compact-worker.{s}.lock"))
}

/// The worker's world: tmux, /proc, the clock and sleeping, and whether the
/// worker still holds the session's lock (its lock file not removed or
/// replaced under it: [`kijito_files::lock::Held::still_at`]).
pub struct World<'a> {
    pub tmux: &'a dyn Tmux,
    pub procs: &'a dyn Procs,
    pub now_ms: &'a dyn Fn() -> i64,
    pub sleep: &'a dyn Fn(Duration),
    pub lock_kept: &'a dyn Fn() -> bool,
}

fn claim_of(qa: &QaDir, r: &Request) -> Option<(bool, String)> {
    trigger::claim_for(qa, r).ok().flatten().map(|a| (a.attested, a.reason))
}

/// What the clients of the pinned pane's session say about the turn
/// (`Typing::Unknown` when they cannot be read).
fn typing_now(w: &World, via: &Via, turn: &Turn, pinned_at_ms: i64) -> Typing {
    let Via::Tmux { socket, pane, .. } = via else { return Typing::Unknown(codes::PIN_CHANGED.into()) };
    match w.tmux.client_activity(socket, pane) {
        Ok(a) if user_typed(&a, turn, pinned_at_ms) => Typing::Typed,
        Ok(_) => Typing::Quiet,
        Err(e) => Typing::Unknown(e.code().to_owned()),
    }
}

/// The pane, then (only for a live pane) the clients, then the kill switch:
/// the facts [`keystroke_check`] needs, read right before a keystroke.
fn check_now(w: &World, data_dir: &AbsPath, pin: &Pin, turn: &Turn) -> (bool, PaneCheck, Typing) {
    let pane = check_pane(&pin.via, w.procs, w.tmux).unwrap_or(PaneCheck::Gone);
    let typing = if pane == PaneCheck::Alive { typing_now(w, &pin.via, turn, pin.pinned_at_ms) } else { Typing::Unchecked };
    (trigger::kill_switch_on(data_dir), pane, typing)
}

/// Wait for the test seam's path of keystroke `n` ([`Limits::hold`]), bounded.
fn hold_before(limits: &Limits, w: &World, n: u8) {
    let Some(base) = &limits.hold else { return };
    let mut path = base.clone().into_os_string();
    path.push(format!(".{n}"));
    let step = limits.poll_idle.max(Duration::from_millis(1));
    for _ in 0..HOLD_MAX_MS / step.as_millis() as u64 {
        if std::fs::symlink_metadata(&path).is_ok() {
            return;
        }
        (w.sleep)(step);
    }
}

/// Run one worker for the request with `nonce` to its end; returns the final
/// state it recorded (or the state it left alone).
pub fn run(data_dir: &AbsPath, s: &SessionId, nonce: &str, limits: &Limits, w: &World) -> Result<RequestState> {
    let qa = QaDir::open(data_dir)?;
    let pin_at_start = trigger::read_pin(&qa, s)?.ok_or_else(|| Error::new(codes::PIN_CHANGED, "the session has no pin"))?;
    let mut sent_at: Option<i64> = None;
    let mut deferred: Option<i64> = None;
    for _ in 0..limits.max_polls() {
        let now = (w.now_ms)();
        let request = trigger::read_request(&qa, s).ok().flatten();
        let pin_now = trigger::read_pin(&qa, s).ok().flatten();
        let turn = trigger::read_turn(&qa, s).ok().flatten();
        let mut facts = Facts {
            nonce,
            request: request.as_ref(),
            pin_at_start: &pin_at_start,
            pin_now: pin_now.as_ref(),
            turn: turn.as_ref(),
            pane: PaneCheck::Unchecked,
            typing: Typing::Unchecked,
            deferred_stop_ms: deferred,
            kill_switch: trigger::kill_switch_on(data_dir),
            pass: match &request {
                Some(r) if sent_at.is_none() => trigger::pass_still_valid(&qa, r, now).map_err(|e| e.code().to_owned()),
                _ => Ok(()),
            },
            claim: request.as_ref().and_then(|r| claim_of(&qa, r)),
            now_ms: now,
            sent_at_ms: sent_at,
        };
        let mut d = decide(&facts, limits);
        if let (Decision::CheckPane, Some(t)) = (&d, &turn) {
            hold_before(limits, w, 1);
            // Pane, clients and kill switch are read again right before typing.
            (facts.kill_switch, facts.pane, facts.typing) = check_now(w, data_dir, &pin_at_start, t);
            d = decide(&facts, limits);
        }
        let Some(mut r) = request else { return Ok(RequestState::Pending) };
        match d {
            // (`CheckPane` cannot come back once the pane and clients were read.)
            Decision::Wait | Decision::CheckPane => (w.sleep)(if sent_at.is_some() { limits.poll_claim } else { limits.poll_idle }),
            Decision::Leave => return Ok(r.state),
            Decision::Defer { reason, stop_ms } => {
                deferred = Some(stop_ms);
                if r.note.as_deref() != Some(reason.as_str()) {
                    r.note = Some(reason);
                    r.updated_at_ms = now.max(r.requested_at_ms);
                    trigger::write_request(&qa, &r)?;
                }
                (w.sleep)(limits.poll_idle);
            }
            Decision::Send => {
                let (Via::Tmux { socket, pane, .. }, Some(t)) = (&pin_at_start.via, &turn) else { return Ok(r.state) };
                // A worker whose lock file was removed or replaced is no longer
                // the session's one worker (another may hold the new lock): it
                // leaves, and types nothing.
                if !(w.lock_kept)() {
                    return Ok(r.state);
                }
                // Mark sent first: a crash after typing must not type again.
                r.state = RequestState::Sent;
                r.note = None;
                r.updated_at_ms = now.max(r.requested_at_ms);
                trigger::write_request(&qa, &r)?;
                if let Err(e) = w.tmux.send_literal(socket, pane, COMPACT_TEXT) {
                    let state = RequestState::Failed { code: e.code().to_owned() };
                    trigger::finish_failed(&qa, &mut r, state.clone(), (w.now_ms)())?;
                    return Ok(state);
                }
                (w.sleep)(limits.enter_gap);
                hold_before(limits, w, 2);
                // Every check again before the Enter; a failure here leaves
                // `/compact` in the composer, and says so.
                let (kill, pane_now, typing) = check_now(w, data_dir, &pin_at_start, t);
                let failed = match keystroke_check(kill, pane_now, &typing) {
                    Some(code) => Some(code),
                    None => w.tmux.send_enter(socket, pane).err().map(|e| e.code().to_owned()),
                };
                if let Some(code) = failed {
                    r.note = Some(codes::COMPACT_LEFT_IN_COMPOSER.into());
                    let state = RequestState::Failed { code };
                    trigger::finish_failed(&qa, &mut r, state.clone(), (w.now_ms)())?;
                    return Ok(state);
                }
                sent_at = Some((w.now_ms)());
            }
            Decision::Compacted { attested, reason } => {
                r.state = RequestState::Compacted { attested, reason };
                r.updated_at_ms = now.max(r.requested_at_ms);
                trigger::write_request(&qa, &r)?;
                return Ok(r.state);
            }
            Decision::Fail(code) => {
                let state = RequestState::Failed { code };
                trigger::finish_failed(&qa, &mut r, state.clone(), now)?;
                return Ok(state);
            }
            Decision::TimedOut => {
                trigger::finish_failed(&qa, &mut r, RequestState::TimedOut, now)?;
                return Ok(RequestState::TimedOut);
            }
        }
    }
    // The poll budget is larger than both waits; reaching here means the
    // clock stood still. Record it rather than loop.
    let mut r = trigger::read_request(&qa, s)?.ok_or_else(|| Error::new(trigger::codes::NO_REQUEST, "the request vanished"))?;
    if r.nonce == nonce && !r.state.is_final() {
        let state = if sent_at.is_some() { RequestState::TimedOut } else { RequestState::Failed { code: codes::TURN_NOT_ENDED.into() } };
        trigger::finish_failed(&qa, &mut r, state.clone(), (w.now_ms)())?;
        return Ok(state);
    }
    Ok(r.state)
}
