//! The tmux adapter's worker: one detached, bounded process per request.
//!
//! [`decide`] is the whole policy, a pure function of what the worker sees
//! on one poll; [`run`] reads those facts, asks tmux only when about to send
//! and records every outcome in the request file.

use crate::codes;
use crate::pin::{check_pane, PaneCheck};
use crate::procfs::Procs;
use crate::tmux::{Tmux, COMPACT_TEXT};
use kijito_gate::trigger::{self, Pin, Request, RequestState, Turn, TurnState, Via};
use kijito_gate::QaDir;
use kijito_protocol::error::{Error, Result};
use kijito_protocol::ids::{AbsPath, SessionId};
use std::time::Duration;

/// Bounds of one worker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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
}

pub const ENV_IDLE_WAIT_MS: &str = "KIJITO_COMPACT_IDLE_WAIT_MS";
pub const ENV_CLAIM_WAIT_MS: &str = "KIJITO_COMPACT_CLAIM_WAIT_MS";
pub const ENV_SETTLE_MS: &str = "KIJITO_COMPACT_SETTLE_MS";
pub const ENV_ENTER_GAP_MS: &str = "KIJITO_COMPACT_ENTER_GAP_MS";

impl Default for Limits {
    fn default() -> Self {
        Limits {
            idle_wait_ms: kijito_gate::PASS_MAX_AGE_MS,
            claim_wait_ms: 10 * 60 * 1000,
            settle_ms: 1000,
            enter_gap: Duration::from_millis(300),
            poll_idle: Duration::from_millis(20),
            poll_claim: Duration::from_millis(200),
        }
    }
}

impl Limits {
    /// Defaults, shortened (never lengthened) by `KIJITO_COMPACT_IDLE_WAIT_MS`
    /// and `KIJITO_COMPACT_CLAIM_WAIT_MS` (tests use them).
    pub fn from_env() -> Limits {
        let mut l = Limits::default();
        let get = |k: &str| std::env::var(k).ok().and_then(|v| v.parse::<i64>().ok()).filter(|v| *v >= 100);
        if let Some(v) = get(ENV_IDLE_WAIT_MS) {
            l.idle_wait_ms = v.min(l.idle_wait_ms);
        }
        if let Some(v) = get(ENV_CLAIM_WAIT_MS) {
            l.claim_wait_ms = v.min(l.claim_wait_ms);
        }
        if let Some(v) = std::env::var(ENV_SETTLE_MS).ok().and_then(|v| v.parse::<i64>().ok()).filter(|v| *v >= 0) {
            l.settle_ms = v.min(l.settle_ms);
        }
        if let Some(v) = std::env::var(ENV_ENTER_GAP_MS).ok().and_then(|v| v.parse::<u64>().ok()) {
            l.enter_gap = Duration::from_millis(v).min(l.enter_gap);
        }
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
    pub kill_switch: bool,
    /// `trigger::pass_still_valid` (the refusal code on error).
    pub pass: std::result::Result<(), String>,
    /// The claim record of this request: (attested, reason).
    pub claim: Option<(bool, String)>,
    pub now_ms: i64,
    /// When this worker sent `/compact` (None: not yet).
    pub sent_at_ms: Option<i64>,
}

/// The worker's next step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Poll again later.
    Wait,
    /// Look at the pane (tmux + /proc), then decide again.
    CheckPane,
    /// Type `/compact`, then Enter.
    Send,
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
/// (a Stop recorded after the request) the pane (still there, still running
/// the pinned host). After sending: the claim, or time out.
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
    let ended = f.turn.is_some_and(|t| t.state == TurnState::Ended && t.at_ms >= r.requested_at_ms && f.now_ms - t.at_ms >= limits.settle_ms);
    if !ended {
        return if f.now_ms - r.requested_at_ms > limits.idle_wait_ms { Decision::Fail(codes::TURN_NOT_ENDED.into()) } else { Decision::Wait };
    }
    match f.pane {
        PaneCheck::Unchecked => Decision::CheckPane,
        PaneCheck::Gone => Decision::Fail(codes::PANE_GONE.into()),
        PaneCheck::OtherProcess => Decision::Fail(codes::PANE_PROCESS_CHANGED.into()),
        PaneCheck::Alive => Decision::Send,
    }
}

/// The worker's world: tmux, /proc, the clock and sleeping.
pub struct World<'a> {
    pub tmux: &'a dyn Tmux,
    pub procs: &'a dyn Procs,
    pub now_ms: &'a dyn Fn() -> i64,
    pub sleep: &'a dyn Fn(Duration),
}

fn claim_of(qa: &QaDir, r: &Request) -> Option<(bool, String)> {
    trigger::claim_for(qa, r).ok().flatten().map(|a| (a.attested, a.reason))
}

/// Run one worker for the request with `nonce` to its end; returns the final
/// state it recorded (or the state it left alone).
pub fn run(data_dir: &AbsPath, s: &SessionId, nonce: &str, limits: &Limits, w: &World) -> Result<RequestState> {
    let qa = QaDir::open(data_dir)?;
    let pin_at_start = trigger::read_pin(&qa, s)?.ok_or_else(|| Error::new(codes::PIN_CHANGED, "the session has no pin"))?;
    let mut sent_at: Option<i64> = None;
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
        if d == Decision::CheckPane {
            facts.pane = check_pane(&pin_at_start.via, w.procs, w.tmux).unwrap_or(PaneCheck::Gone);
            // The kill switch is read again right before typing.
            facts.kill_switch = trigger::kill_switch_on(data_dir);
            d = decide(&facts, limits);
        }
        let Some(mut r) = request else { return Ok(RequestState::Pending) };
        match d {
            // (`CheckPane` cannot come back once the pane was checked.)
            Decision::Wait | Decision::CheckPane => (w.sleep)(if sent_at.is_some() { limits.poll_claim } else { limits.poll_idle }),
            Decision::Leave => return Ok(r.state),
            Decision::Send => {
                let Via::Tmux { socket, pane, .. } = &pin_at_start.via else { return Ok(r.state) };
                // Mark sent first: a crash after typing must not type again.
                r.state = RequestState::Sent;
                r.updated_at_ms = now.max(r.requested_at_ms);
                trigger::write_request(&qa, &r)?;
                let typed = w.tmux.send_literal(socket, pane, COMPACT_TEXT).and_then(|_| {
                    (w.sleep)(limits.enter_gap);
                    w.tmux.send_enter(socket, pane)
                });
                if let Err(e) = typed {
                    let state = RequestState::Failed { code: e.code().to_owned() };
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
