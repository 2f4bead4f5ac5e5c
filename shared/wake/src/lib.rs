//! wake-check: after a long sleep or a cold boot, verify everything local
//! (and, when asked, the live pointer) and answer with a graduated trust
//! mode: `full_trust`, `cautious` or `degraded` (docs/wake-check.md).
//!
//! Pure core, I/O at the edges: [`gather`] reads the latch, the QA private
//! state and (with `--live`) the server into [`Facts`]; [`assess`] turns the
//! facts into a [`Report`] with no I/O and an injected clock, so every
//! finding and every threshold is unit-testable; [`record_degraded`] appends
//! the one visible `degraded_mode` entry when the latch is trustworthy.
//!
//! | idea | module |
//! |---|---|
//! | reading the facts from disk and the server | [`gather`] |
//! | the finding table (code, severity, check, step) | [`codes`] |
//! | the per-anchor deep audit (lifecycle, corrections, scarred) | [`anchor`] |

#![forbid(unsafe_code)]

pub mod anchor;
pub mod cli;
pub mod codes;
pub mod gather;
pub mod hold;

use codes::{Severity, Spec};
use kijito_latch::{self as latch, EntrySummary, LockProbe, ReportMode, TokenState, TokenStatus, VerifyReport};
use kijito_protocol::ids::SessionId;
use serde::Serialize;
use serde_json::{json, Value};
use std::path::PathBuf;

pub use gather::{gather, LiveProbe, Options, SignedCheck, SignedCheckpoint};

/// The `--json` report schema.
pub const SCHEMA: &str = "kijito.wake-check/v1";
/// Default `--long-sleep-after` (seconds).
pub const DEFAULT_LONG_SLEEP_S: u64 = 86_400;
/// A recorded time may be this far ahead of the clock before the clock is
/// reported as having gone backwards (file times and the clock can differ by
/// a rounding step).
pub const CLOCK_TOLERANCE_MS: u64 = 1_000;
/// A re-entry record not delivered within this window is reported (delivery
/// happens at the next SessionStart or prompt; the QA pass window).
pub const REENTRY_WINDOW_MS: i64 = kijito_gate::PASS_MAX_AGE_MS;
/// From this many findings on (all minor) the mode is `degraded`. The issue
/// fixes 1-3 minor as cautious and 5+ as degraded; 4 fails closed.
pub const DEGRADED_AT_FINDINGS: usize = 4;
/// Most findings listed in a `degraded_mode` entry (the latch bounds lists).
const MAX_DETAILS: usize = latch::MAX_LIST_ITEMS;

/// Exit statuses of `wake-check`.
pub const EXIT_FULL_TRUST: i32 = 0;
pub const EXIT_CAUTIOUS: i32 = 10;
pub const EXIT_DEGRADED: i32 = 20;

/// The graduated trust mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    FullTrust,
    Cautious,
    Degraded,
}

impl Mode {
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::FullTrust => "full_trust",
            Mode::Cautious => "cautious",
            Mode::Degraded => "degraded",
        }
    }

    pub fn exit_status(self) -> i32 {
        match self {
            Mode::FullTrust => EXIT_FULL_TRUST,
            Mode::Cautious => EXIT_CAUTIOUS,
            Mode::Degraded => EXIT_DEGRADED,
        }
    }
}

/// One finding: a code, its severity, the check that found it, what was
/// seen and exactly one recommended single step.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    pub code: &'static str,
    pub severity: Severity,
    pub check: codes::CheckName,
    pub message: String,
    pub step: String,
}

/// Status of one check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CheckStatus {
    Pass,
    Finding,
    Skipped,
}

/// One check that ran (or was skipped, with why).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Check {
    pub name: codes::CheckName,
    pub status: CheckStatus,
    pub detail: String,
}

/// What `wake-check` answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    pub mode: Mode,
    /// Since the newest verified latch entry or QA artifact; `None` when
    /// nothing is recorded or the clock is behind the records.
    pub slept_for_seconds: Option<u64>,
    pub long_sleep: bool,
    pub boot_changed: bool,
    pub findings: Vec<Finding>,
    pub checks: Vec<Check>,
    pub checked_at_ms: u64,
}

/// The fields of `wake-check --live`'s journal line (docs/protocol.md §13):
/// the trust mode, the finding codes, and whether writes stay held
/// (cautious keeps the wake hold, [`hold::answered`]). Codes only, no
/// message text.
pub fn live_line(report: &Report) -> serde_json::Value {
    serde_json::json!({
        "mode": report.mode.as_str(),
        "findings": report.findings.iter().map(|f| f.code).collect::<Vec<_>>(),
        "hold": report.mode == Mode::Cautious,
    })
}

/// The trust mode for a list of findings: any degrading finding, or
/// [`DEGRADED_AT_FINDINGS`] or more findings, is `degraded`; one or more
/// minor ones `cautious`; none `full_trust`.
pub fn mode_for(findings: &[Finding]) -> Mode {
    if findings.iter().any(|f| f.severity == Severity::Degrading) || findings.len() >= DEGRADED_AT_FINDINGS {
        Mode::Degraded
    } else if findings.is_empty() {
        Mode::FullTrust
    } else {
        Mode::Cautious
    }
}

// ----- facts ---------------------------------------------------------------

/// Everything wake-check looked at, gathered before any judgement.
#[derive(Debug, Clone)]
pub struct Facts {
    pub now_ms: u64,
    pub long_sleep_after_ms: u64,
    /// The machine's current boot id (`None`: unknown).
    pub boot_id: Option<String>,
    pub latch: LatchFacts,
    pub qa: QaFacts,
    pub live: LiveFacts,
    /// How recommended steps name things (data dir, helper paths).
    pub names: StepNames,
}

/// Names used inside recommended steps.
#[derive(Debug, Clone, Default)]
pub struct StepNames {
    /// The data dir, when known.
    pub data_dir: Option<String>,
    /// Directory of the installed helpers (absolute), when known.
    pub helpers: Option<PathBuf>,
}

impl StepNames {
    fn helper(&self, name: &str) -> String {
        match &self.helpers {
            Some(d) => d.join(name).display().to_string(),
            None => name.to_owned(),
        }
    }

    fn invalidate(&self, sessions: &[SessionId]) -> String {
        let data = self.data_dir.clone().unwrap_or_else(|| "<data-dir>".into());
        let s = match sessions {
            [one] => one.as_str(),
            _ => "<session>",
        };
        let each = if sessions.len() > 1 { format!(" for each of: {}", joined(sessions)) } else { String::new() };
        format!("Run `{} invalidate --session-id {s} --data-dir {data}`{each}.", self.helper("qa-gate"))
    }
}

/// The latch, as found.
#[derive(Debug, Clone)]
pub enum LatchFacts {
    /// No `.memory-latch` in the workspace (and no head record names one):
    /// latch checks are skipped; with no QA state either, nothing is
    /// verifiable (at best cautious).
    Absent,
    /// The workspace does not exist (or is not a directory).
    WorkspaceMissing(String),
    /// A head record outside the workspace names a latch that is gone
    /// (`entry_seq`), or only the workspace index beside the head records
    /// still lists it (`None`: the head record was deleted too).
    Deleted {
        entry_seq: Option<u64>,
    },
    Present(Box<LatchState>),
}

#[derive(Debug, Clone)]
pub struct LatchState {
    /// `verify_fast` of the whole chain.
    pub verify: VerifyReport,
    /// The lock probe (`Err`: `code: message`).
    pub lock: std::result::Result<LockProbe, String>,
    /// Every consent/reseed token at `now_ms` (`Err`: `code: message`).
    pub tokens: std::result::Result<Vec<TokenState>, String>,
    /// The Silent Witness marker could not be read (`code: message`).
    pub witness_error: Option<String>,
    /// The chain against the last saved checkpoint (`Ok(None)`: none saved;
    /// `Err`: `code: message`); not asked when the chain did not verify.
    pub checkpoint: std::result::Result<Option<latch::checkpoint::Consistency>, String>,
    /// When the verified head is a `wake_findings` entry: the newest live
    /// entry before it that is not one (the sleep and the boot change are
    /// measured from it, so a wake-check's own record does not end the long
    /// sleep for the next check). `None` otherwise, or when the live
    /// manifest holds only wake entries (then the head is used).
    pub before_wake: Option<EntrySummary>,
}

/// A per-session QA state file with its recorded time (`None`: unreadable).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stamp {
    pub session: SessionId,
    pub at_ms: i64,
}

/// `current-pointer.json`, as found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PointerRecord {
    Missing,
    Invalid(String),
    Valid(Recorded),
}

/// A well-formed `current-pointer.json` (schemaVersion 2); its one home is
/// the gate's state module.
pub use kijito_gate::state::Recorded;

/// The QA private state, as found.
/// (One value per run: the size difference does not matter.)
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone)]
pub enum QaFacts {
    /// No data dir or no `qa/` directory yet: QA checks are skipped.
    Absent(String),
    Present(QaState),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QaState {
    /// Ownership, permission or symlink problems (one line each).
    pub insecure: Vec<String>,
    /// (session, why) of state files that exist but do not parse.
    pub unreadable: Vec<(SessionId, String)>,
    pub passes: Vec<Stamp>,
    /// Sessions with a `compaction-resume` ticket.
    pub tickets: Vec<SessionId>,
    pub attempts: Vec<Stamp>,
    pub reentries: Vec<Stamp>,
    /// Newest modification time of a file in `qa/`.
    pub newest_mtime_ms: Option<u64>,
    pub pointer_record: PointerRecord,
}

/// The `--live` snapshot verification, as it went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LiveFacts {
    NotAsked,
    /// Asked, but there is no recorded expectation to compare with.
    NoRecord,
    /// Green and equal to the recorded pointer and snapshot digests.
    Unchanged,
    /// Failed with this error code and message.
    Failed {
        code: String,
        message: String,
        kind: kijito_protocol::error::Kind,
    },
}

// ----- assessment ------------------------------------------------------------

/// The chain against the last checkpoint seen before the sleep.
fn checkpoint_check(b: &mut Builder, v: &VerifyReport, c: &std::result::Result<Option<latch::checkpoint::Consistency>, String>) {
    if !v.trusted {
        return b.check(codes::CHECK_CHECKPOINT, Some("the chain did not verify".into()), "");
    }
    match c {
        Ok(None) => b.check(
            codes::CHECK_CHECKPOINT,
            Some("no checkpoint saved yet (one is written at every seal and by checkpoint --sign)".into()),
            "",
        ),
        Ok(Some(c)) if c.consistent => {
            let by = c.signed_by.as_ref().map(|k| format!(", signed by {k}")).unwrap_or_default();
            b.check(codes::CHECK_CHECKPOINT, None, format!("{}{by}", c.message))
        }
        Ok(Some(c)) => {
            b.find(&codes::LATCH_CHECKPOINT_INCONSISTENT, c.message.clone(), None);
            b.check(codes::CHECK_CHECKPOINT, None, "")
        }
        Err(e) => {
            b.find(&codes::LATCH_CHECKPOINT_INVALID, e.clone(), None);
            b.check(codes::CHECK_CHECKPOINT, None, "")
        }
    }
}

struct Builder<'a> {
    names: &'a StepNames,
    findings: Vec<Finding>,
    checks: Vec<Check>,
}

impl Builder<'_> {
    fn find(&mut self, spec: &'static Spec, message: String, step: Option<String>) {
        self.findings.push(Finding {
            code: spec.code,
            severity: spec.severity,
            check: spec.check,
            message,
            step: step.unwrap_or_else(|| spec.step.to_owned()),
        });
    }

    fn check(&mut self, name: codes::CheckName, skipped: Option<String>, detail: impl Into<String>) {
        let status = if skipped.is_some() {
            CheckStatus::Skipped
        } else if self.findings.iter().any(|f| f.check == name) {
            CheckStatus::Finding
        } else {
            CheckStatus::Pass
        };
        self.checks.push(Check { name, status, detail: skipped.unwrap_or_else(|| detail.into()) });
    }
}

fn sessions_of(items: &[&Stamp]) -> Vec<SessionId> {
    let mut s: Vec<SessionId> = items.iter().map(|i| i.session.clone()).collect();
    s.sort();
    s.dedup();
    s
}

/// Session ids as a message lists them: `a, b`.
fn joined(sessions: &[SessionId]) -> String {
    sessions.iter().map(SessionId::as_str).collect::<Vec<_>>().join(", ")
}

/// Judge the facts: every finding, every check, the mode. No I/O.
pub fn assess(f: &Facts) -> Report {
    let now = f.now_ms;
    let mut b = Builder { names: &f.names, findings: Vec::new(), checks: Vec::new() };

    // --- the latch ---
    let mut verified_head: Option<&EntrySummary> = None;
    let mut any_head_ms: Option<u64> = None;
    match &f.latch {
        LatchFacts::Absent => {
            let why = Some("no .memory-latch in the workspace".to_owned());
            if matches!(f.qa, QaFacts::Absent(_)) {
                // Fail closed: nothing verifiable is never full trust.
                b.find(
                    &codes::NOTHING_VERIFIABLE,
                    "no .memory-latch in the workspace and no QA state: nothing local could be verified".into(),
                    None,
                );
                b.check(codes::CHECK_CHAIN, None, "");
            } else {
                b.check(codes::CHECK_CHAIN, why.clone(), "");
            }
            for name in [codes::CHECK_SILENT_WITNESS, codes::CHECK_LOCK, codes::CHECK_CONSENT] {
                b.check(name, why.clone(), "");
            }
        }
        LatchFacts::WorkspaceMissing(why) => {
            b.find(&codes::WORKSPACE_MISSING, format!("the workspace cannot be checked: {why}"), None);
            b.check(codes::CHECK_CHAIN, None, "");
            for name in [codes::CHECK_SILENT_WITNESS, codes::CHECK_LOCK, codes::CHECK_CONSENT] {
                b.check(name, Some("the workspace does not exist".into()), "");
            }
        }
        LatchFacts::Deleted { entry_seq } => {
            let why = match entry_seq {
                Some(n) => format!("the head record names entry {n} but the workspace has no .memory-latch: the latch was deleted"),
                None => "the workspace index lists this workspace, but it has no .memory-latch and no head record: the latch and its head record were deleted".to_owned(),
            };
            b.find(&codes::LATCH_DELETED, why, None);
            b.check(codes::CHECK_CHAIN, None, "");
            for name in [codes::CHECK_SILENT_WITNESS, codes::CHECK_LOCK, codes::CHECK_CONSENT] {
                b.check(name, Some("the latch was deleted".into()), "");
            }
        }
        LatchFacts::Present(l) => {
            let v = &l.verify;
            any_head_ms = v.head.as_ref().map(|h| h.updated_at_ms);
            if v.mode == ReportMode::Unverifiable {
                b.find(&codes::LATCH_UNVERIFIABLE, "the manifest holds hmac entries and no key was given".into(), None);
            }
            if !v.findings.is_empty() {
                let mut list: Vec<String> = v.findings.iter().map(|x| x.code.to_string()).collect();
                list.dedup();
                let first = v.findings.first().map(|x| x.message.clone()).unwrap_or_default();
                b.find(&codes::LATCH_UNTRUSTED, format!("the chain failed verification ({}); first: {first}", list.join(", ")), None);
            }
            if v.trusted {
                verified_head = v.head.as_ref();
            }

            if v.silent_witness {
                b.find(&codes::SILENT_WITNESS, "Silent Witness is active: consent is locked and writes are refused".into(), None);
            }
            if let Some(e) = &l.witness_error {
                b.find(&codes::LATCH_STATE_INVALID, format!("silent-witness.json: {e}"), None);
            }
            // Consent stays `locked` from a degraded_mode entry through every
            // later entry (a checkpoint copies it) until the user's review
            // token; Silent Witness locks it too and has its own finding.
            if let Some(h) = verified_head.filter(|h| h.consent_state == latch::ConsentState::Locked && !v.silent_witness) {
                b.find(
                    &codes::LATCH_DEGRADED_UNREVIEWED,
                    format!(
                        "consent is locked since degraded mode (head entry {}, {} at {}) until the user reviews",
                        h.seq,
                        h.event.as_str(),
                        h.updated_at
                    ),
                    None,
                );
            }
            b.check(codes::CHECK_SILENT_WITNESS, None, if v.silent_witness { "active" } else { "not active" });

            match &l.lock {
                Err(e) => b.find(&codes::LATCH_STATE_INVALID, format!("lock: {e}"), None),
                Ok(p) => {
                    if p.held {
                        b.find(&codes::LATCH_LOCK_STALE, "the manifest lock is held by a live process at wake time".into(), None);
                    }
                    if p.interrupted_writes > 0 {
                        b.find(
                            &codes::LATCH_WRITE_INTERRUPTED,
                            format!("{} leftover temp file(s) of an interrupted write", p.interrupted_writes),
                            None,
                        );
                    }
                }
            }
            b.check(codes::CHECK_LOCK, None, "manifest lock probed");

            match &l.tokens {
                Err(e) => b.find(&codes::LATCH_STATE_INVALID, format!("tokens.json: {e}"), None),
                Ok(tokens) => {
                    if let Some(h) = verified_head {
                        let pending =
                            tokens.iter().find(|t| t.id == h.irreversible_action_pending && t.purpose == latch::tokens::Purpose::Consent);
                        match (h.consent_state, pending) {
                            (latch::ConsentState::Pending, Some(t)) if t.status == TokenStatus::Expired => b.find(
                                &codes::CONSENT_TOKEN_EXPIRED,
                                format!("consent token {} ({}) expired unconfirmed", t.id, t.summary),
                                None,
                            ),
                            (latch::ConsentState::Pending, Some(t)) if t.status == TokenStatus::Live => b.find(
                                &codes::IRREVERSIBLE_ACTION_PENDING,
                                format!("consent request {} ({}) is still open across the sleep", t.id, t.summary),
                                None,
                            ),
                            (latch::ConsentState::Authorized, _) => b.find(
                                &codes::IRREVERSIBLE_ACTION_PENDING,
                                format!(
                                    "an authorization ({}) for {} is still in force",
                                    h.irreversible_action_pending,
                                    latch::entry::action_or_none::text(&h.action_hash)
                                ),
                                None,
                            ),
                            _ => {}
                        }
                    }
                }
            }
            b.check(
                codes::CHECK_CONSENT,
                if verified_head.is_none() { Some("the latch head is not verified".into()) } else { None },
                "pending tokens checked",
            );
            b.check(
                codes::CHECK_CHAIN,
                None,
                format!("{} entries, {} sealed segments, mode {:?}", v.entries, v.segments, v.mode).to_lowercase(),
            );
            checkpoint_check(&mut b, v, &l.checkpoint);
        }
    }

    // --- QA private state ---
    let mut qa_newest: Option<u64> = None;
    let mut recorded_times: Vec<u64> = Vec::new();
    match &f.qa {
        QaFacts::Absent(why) => {
            for name in [
                codes::CHECK_QA_DIR,
                codes::CHECK_QA_PASS,
                codes::CHECK_QA_TICKET,
                codes::CHECK_QA_ATTEMPT,
                codes::CHECK_QA_REENTRY,
                codes::CHECK_POINTER_RECORD,
            ] {
                b.check(name, Some(why.clone()), "");
            }
        }
        QaFacts::Present(q) => {
            qa_newest = q.newest_mtime_ms;
            for s in q.passes.iter().chain(&q.attempts).chain(&q.reentries) {
                recorded_times.push(s.at_ms.max(0) as u64);
            }
            if !q.insecure.is_empty() {
                b.find(&codes::QA_DIR_INSECURE, q.insecure.join("; "), None);
            }
            if !q.unreadable.is_empty() {
                let sessions: Vec<SessionId> = {
                    let mut s: Vec<SessionId> = q.unreadable.iter().map(|(s, _)| s.clone()).collect();
                    s.sort();
                    s.dedup();
                    s
                };
                let msg = q.unreadable.iter().map(|(s, w)| format!("{s}: {w}")).collect::<Vec<_>>().join("; ");
                let step = b.names.invalidate(&sessions);
                b.find(&codes::QA_STATE_UNREADABLE, msg, Some(step));
            }
            b.check(codes::CHECK_QA_DIR, None, "ownership, permissions and state files checked");
            let now_i = now as i64;
            let stale: Vec<&Stamp> = q.passes.iter().filter(|p| now_i - p.at_ms > kijito_gate::PASS_MAX_AGE_MS).collect();
            if !stale.is_empty() {
                let s = sessions_of(&stale);
                let step = b.names.invalidate(&s);
                b.find(&codes::QA_PASS_EXPIRED, format!("QA pass older than 30 min for session(s) {}", joined(&s)), Some(step));
            }
            b.check(codes::CHECK_QA_PASS, None, format!("{} pass(es)", q.passes.len()));
            let live_attempt =
                |s: &str| q.attempts.iter().any(|a| a.session.as_str() == s && now_i - a.at_ms <= kijito_gate::ATTEMPT_MAX_AGE_MS);
            let mut orphans: Vec<SessionId> = q.tickets.iter().filter(|t| !live_attempt(t.as_str())).cloned().collect();
            orphans.sort();
            orphans.dedup();
            if !orphans.is_empty() {
                let step = b.names.invalidate(&orphans);
                b.find(
                    &codes::QA_TICKET_ORPHANED,
                    format!("compaction ticket without a claimable attempt for session(s) {}", joined(&orphans)),
                    Some(step),
                );
            }
            b.check(codes::CHECK_QA_TICKET, None, format!("{} ticket(s)", q.tickets.len()));
            let old: Vec<&Stamp> = q.attempts.iter().filter(|a| now_i - a.at_ms > kijito_gate::ATTEMPT_MAX_AGE_MS).collect();
            if !old.is_empty() {
                let s = sessions_of(&old);
                let step = b.names.invalidate(&s);
                b.find(
                    &codes::QA_ATTEMPT_UNCLAIMED,
                    format!("compaction attempt unclaimed past its 5 min window for session(s) {}", joined(&s)),
                    Some(step),
                );
            }
            b.check(codes::CHECK_QA_ATTEMPT, None, format!("{} attempt(s)", q.attempts.len()));
            let old: Vec<&Stamp> = q.reentries.iter().filter(|r| now_i - r.at_ms > REENTRY_WINDOW_MS).collect();
            if !old.is_empty() {
                let s = sessions_of(&old);
                let step = b.names.invalidate(&s);
                b.find(
                    &codes::QA_REENTRY_UNDELIVERED,
                    format!("re-entry record undelivered past its 30 min window for session(s) {}", joined(&s)),
                    Some(step),
                );
            }
            b.check(codes::CHECK_QA_REENTRY, None, format!("{} re-entry record(s)", q.reentries.len()));
            match &q.pointer_record {
                PointerRecord::Invalid(why) => {
                    b.find(&codes::POINTER_RECORD_INVALID, format!("current-pointer.json: {why}"), None);
                    b.check(codes::CHECK_POINTER_RECORD, None, "");
                }
                PointerRecord::Missing => {
                    if f.live != LiveFacts::NotAsked {
                        b.find(&codes::POINTER_RECORD_MISSING, "no current-pointer.json: --live has nothing to compare".into(), None);
                        b.check(codes::CHECK_POINTER_RECORD, None, "");
                    } else {
                        b.check(codes::CHECK_POINTER_RECORD, Some("no current-pointer.json recorded".into()), "");
                    }
                }
                PointerRecord::Valid(r) => {
                    recorded_times.push(r.recorded_at_ms.max(0) as u64);
                    b.check(codes::CHECK_POINTER_RECORD, None, format!("pointer {} at {}", r.pointer_id, r.pointer_digest));
                }
            }
        }
    }

    // --- live ---
    match &f.live {
        LiveFacts::NotAsked => b.check(codes::CHECK_LIVE, Some("not asked (--live)".into()), ""),
        LiveFacts::NoRecord => {
            if matches!(f.qa, QaFacts::Absent(_)) {
                b.find(&codes::POINTER_RECORD_MISSING, "no QA state: --live has nothing to compare".into(), None);
            }
            b.check(codes::CHECK_LIVE, Some("no recorded pointer to compare".into()), "")
        }
        LiveFacts::Unchanged => b.check(codes::CHECK_LIVE, None, "pointer and snapshot digests equal the recorded ones"),
        LiveFacts::Failed { code, message, kind } => {
            let spec = codes::live_spec(code, *kind);
            b.find(spec, format!("{message} ({code})"), None);
            b.check(codes::CHECK_LIVE, None, "");
        }
    }

    // --- time: long sleep, clock, boot ---
    // The sleep and the boot are measured from the newest entry that is not
    // a wake-check's own record (`wake_findings`).
    let before_wake = match &f.latch {
        LatchFacts::Present(l) => l.before_wake.as_ref(),
        _ => None,
    };
    let verified_head = verified_head.map(|h| match before_wake {
        Some(b) if h.event == latch::Event::WakeFindings => b,
        _ => h,
    });
    let head_ms = verified_head.map(|h| h.updated_at_ms);
    let newest_for_sleep = [head_ms, qa_newest].into_iter().flatten().max();
    let newest_recorded = [any_head_ms, qa_newest].into_iter().flatten().chain(recorded_times).max();
    let clock_back = newest_recorded.filter(|n| *n > now.saturating_add(CLOCK_TOLERANCE_MS));
    if let Some(n) = clock_back {
        b.find(
            &codes::CLOCK_BACKWARDS,
            format!("the clock ({now} ms) is {} s earlier than the newest recorded time ({n} ms)", (n - now) / 1000),
            None,
        );
    }
    b.check(codes::CHECK_CLOCK, None, "clock compared with the newest recorded time");
    let slept_for_seconds = match (newest_for_sleep, clock_back) {
        (Some(n), None) => Some(now.saturating_sub(n) / 1000),
        _ => None,
    };
    let long_sleep = slept_for_seconds.is_some_and(|s| s.saturating_mul(1000) >= f.long_sleep_after_ms);
    if long_sleep {
        b.find(
            &codes::LONG_SLEEP,
            format!(
                "slept {} s since the newest verified record (threshold {} s)",
                slept_for_seconds.unwrap_or(0),
                f.long_sleep_after_ms / 1000
            ),
            None,
        );
    }
    b.check(
        codes::CHECK_SLEEP,
        if newest_for_sleep.is_none() { Some("no verified latch entry or QA artifact to measure from".into()) } else { None },
        format!("threshold {} s", f.long_sleep_after_ms / 1000),
    );
    let head_boot = verified_head.map(|h| h.boot_id.as_str()).filter(|b| *b != "unknown");
    let boot_changed = matches!((head_boot, f.boot_id.as_deref()), (Some(a), Some(b)) if a != b);
    if boot_changed {
        b.find(
            &codes::BOOT_CHANGED,
            format!("boot id {} differs from the head entry's {}", f.boot_id.as_deref().unwrap_or(""), head_boot.unwrap_or("")),
            None,
        );
    }
    b.check(
        codes::CHECK_BOOT,
        match (head_boot, f.boot_id.as_deref()) {
            (None, _) => Some("no verified head entry with a known boot id".into()),
            (_, None) => Some("the current boot id is unknown".into()),
            _ => None,
        },
        "boot id compared with the head entry",
    );

    let mode = mode_for(&b.findings);
    Report { mode, slept_for_seconds, long_sleep, boot_changed, findings: b.findings, checks: b.checks, checked_at_ms: now }
}

// ----- output ----------------------------------------------------------------

impl Report {
    /// The `--json` report, keys in the documented order.
    pub fn to_json(&self) -> Value {
        json!({
            "schema": SCHEMA,
            "mode": self.mode.as_str(),
            "sleptForSeconds": self.slept_for_seconds,
            "longSleep": self.long_sleep,
            "bootChanged": self.boot_changed,
            "findings": self.findings.iter().map(|f| json!({
                "code": f.code,
                "severity": f.severity.as_str(),
                "check": f.check,
                "message": f.message,
                "step": f.step,
            })).collect::<Vec<_>>(),
            "checks": self.checks.iter().map(|c| json!({
                "name": c.name,
                "status": c.status_str(),
                "detail": c.detail,
            })).collect::<Vec<_>>(),
            "checkedAtMs": self.checked_at_ms,
        })
    }

    /// The human summary.
    pub fn human(&self) -> String {
        let mut s = format!("wake-check: {}", self.mode.as_str().to_uppercase());
        match self.slept_for_seconds {
            Some(n) => s.push_str(&format!(" (slept {}{})", human_duration(n), if self.long_sleep { ", long sleep" } else { "" })),
            None => s.push_str(" (sleep length unknown)"),
        }
        if self.boot_changed {
            s.push_str(" (boot changed)");
        }
        s.push('\n');
        if self.findings.is_empty() {
            s.push_str("every check passed\n");
        }
        for (i, f) in self.findings.iter().enumerate() {
            s.push_str(&format!("{}. [{}] {}: {}\n   step: {}\n", i + 1, f.severity.as_str(), f.code, f.message, f.step));
        }
        let skipped: Vec<&str> = self.checks.iter().filter(|c| c.status == CheckStatus::Skipped).map(|c| c.name.as_str()).collect();
        if !skipped.is_empty() {
            s.push_str(&format!("skipped: {}\n", skipped.join(", ")));
        }
        s
    }

    /// The context a hook injects: mode, findings and their steps.
    pub fn hook_context(&self) -> String {
        let mut s = format!("kijito-qa wake-check (local checks): trust mode {}.", self.mode.as_str().to_uppercase());
        if self.long_sleep {
            s.push_str(&format!(" Long sleep detected ({}).", human_duration(self.slept_for_seconds.unwrap_or(0))));
        }
        s.push_str(match self.mode {
            Mode::FullTrust => " Every local check passed; still reload state from verified sources before resuming.",
            Mode::Cautious => " Act cautiously: confirm remembered plans against verified state before acting; no irreversible action without fresh consent.",
            Mode::Degraded => " DEGRADED: do not resume remembered actions or run irreversible steps; show these findings to the user and wait for a human review.",
        });
        for f in &self.findings {
            s.push_str(&format!("\n- {} ({}): {} Step: {}", f.code, f.severity.as_str(), f.message, f.step));
        }
        s
    }
}

impl Check {
    pub fn status_str(&self) -> &'static str {
        match self.status {
            CheckStatus::Pass => "pass",
            CheckStatus::Finding => "finding",
            CheckStatus::Skipped => "skipped",
        }
    }
}

fn human_duration(s: u64) -> String {
    if s >= 86_400 {
        format!("{}d {}h", s / 86_400, (s % 86_400) / 3600)
    } else if s >= 3600 {
        format!("{}h {}m", s / 3600, (s % 3600) / 60)
    } else {
        format!("{}m {}s", s / 60, s % 60)
    }
}

// ----- the degraded-mode entry ---------------------------------------------------

/// What happened to the `degraded_mode` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DegradedEntry {
    /// The mode is not degraded (or only an unreviewed earlier entry remains).
    NotNeeded,
    /// No latch in the workspace.
    NoLatch,
    /// The head already is an unresolved `degraded_mode` entry listing the
    /// same findings.
    AlreadyRecorded(u64),
    /// Written as entry `seq`.
    Written(u64),
    /// Not written because the latch is untrusted, unverifiable or in Silent
    /// Witness (never write then).
    RefusedUntrusted,
    /// The append failed (code).
    Failed(String),
    /// Not degraded, with findings: the `wake_findings` entry `seq` was appended.
    WakeRecorded(u64),
    /// The head already is a `wake_findings` entry listing the same findings.
    WakeAlreadyRecorded(u64),
    /// The `wake_findings` append failed (code).
    WakeFailed(String),
}

impl DegradedEntry {
    pub fn describe(&self) -> String {
        match self {
            DegradedEntry::NotNeeded => "no degraded_mode entry needed".into(),
            DegradedEntry::NoLatch => "no latch: no degraded_mode entry written".into(),
            DegradedEntry::AlreadyRecorded(s) => format!("degraded_mode already recorded in entry {s} (consent locked)"),
            DegradedEntry::Written(s) => format!("degraded_mode entry {s} appended; consent locked until a human reviews"),
            DegradedEntry::RefusedUntrusted => "the latch is untrusted: nothing was written to it".into(),
            DegradedEntry::Failed(c) => format!("the degraded_mode entry could not be appended ({c})"),
            DegradedEntry::WakeFailed(c) => format!("the wake_findings entry could not be appended ({c})"),
            DegradedEntry::WakeRecorded(s) => format!("wake_findings entry {s} appended (the findings, for the record)"),
            DegradedEntry::WakeAlreadyRecorded(s) => format!("wake_findings already recorded in entry {s}"),
        }
    }
}

/// The details a `degraded_mode` entry lists: one line per finding (the
/// unreviewed-entry finding itself excluded), normalised as the latch stores
/// free text, bounded to the latch's list limit.
pub fn degraded_details(report: &Report) -> Vec<String> {
    let lines: Vec<String> = report
        .findings
        .iter()
        .filter(|f| f.code != codes::LATCH_DEGRADED_UNREVIEWED.code)
        .map(|f| format!("{} ({}): {}", f.code, f.severity.as_str(), f.step))
        .collect();
    let mut out: Vec<String> = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        if out.len() == MAX_DETAILS - 1 && lines.len() > MAX_DETAILS {
            out.push(format!("and {} more finding(s): run wake-check", lines.len() - i));
            break;
        }
        let clipped: String = l.chars().take(latch::MAX_TEXT_CHARS).collect();
        out.push(latch::clean_text(&clipped, "details", false).unwrap_or_else(|_| "a finding (unprintable)".into()));
    }
    out
}

/// In degraded mode with a trustworthy latch, append exactly one visible
/// `degraded_mode` entry listing the findings and locking consent; never on
/// an untrusted latch; not again while the head is an unresolved
/// `degraded_mode` entry with the same findings.
pub fn record_degraded(latch_handle: Option<&latch::Latch>, facts: &Facts, report: &Report) -> DegradedEntry {
    if report.mode != Mode::Degraded {
        return DegradedEntry::NotNeeded;
    }
    let (Some(l), LatchFacts::Present(state)) = (latch_handle, &facts.latch) else {
        return DegradedEntry::NoLatch;
    };
    let v = &state.verify;
    if !v.trusted || v.mode == ReportMode::Unverifiable || v.silent_witness {
        return DegradedEntry::RefusedUntrusted;
    }
    let details = degraded_details(report);
    if details.is_empty() {
        return DegradedEntry::NotNeeded;
    }
    if let Some(h) = v.head.as_ref().filter(|h| h.event == latch::Event::DegradedMode && h.consent_state == latch::ConsentState::Locked) {
        match gather::head_details(l, h) {
            Ok(prev) if prev == details => return DegradedEntry::AlreadyRecorded(h.seq),
            Ok(_) => {}
            Err(e) => return DegradedEntry::Failed(e.code().to_owned()),
        }
    }
    match l.append_entry(facts.now_ms, latch::Event::DegradedMode, &details, true) {
        Ok(e) => DegradedEntry::Written(e.entry_seq),
        Err(e) if matches!(e.code_as(), Some(latch_codes::UNTRUSTED | latch_codes::UNVERIFIABLE | latch_codes::SILENT_WITNESS_ACTIVE)) => {
            DegradedEntry::RefusedUntrusted
        }
        Err(e) => DegradedEntry::Failed(e.code().to_owned()),
    }
}

use kijito_protocol::codes::latch as latch_codes;

/// The schema of `wake-check --hook`'s answer.
pub const HOOK_SCHEMA: &str = "kijito.wake-check.hook/v1";

/// `wake-check --hook`: what SessionStart(startup|resume) needs from the
/// local checks, which run in this binary so that the latch verification
/// is not linked into session-hook (the size bound, docs/architecture.md):
/// `context`, the text to inject (null when full trust without a long
/// sleep; the degraded entry's fate appended), `hold`, whether the wake
/// hold is needed ([`hold::needed`]), the finding codes and the time.
pub fn hook_answer(report: &Report, entry: &DegradedEntry) -> Value {
    let recorded = match entry {
        DegradedEntry::Written(_) | DegradedEntry::Failed(_) => format!("\n{}", entry.describe()),
        _ => String::new(),
    };
    let context = (report.mode != Mode::FullTrust || report.long_sleep).then(|| format!("{}{recorded}", report.hook_context()));
    json!({
        "schema": HOOK_SCHEMA,
        "mode": report.mode.as_str(),
        "context": context,
        "hold": hold::needed(report),
        "findings": report.findings.iter().map(|f| f.code).collect::<Vec<_>>(),
        "checkedAtMs": report.checked_at_ms,
    })
}

#[cfg(test)]
mod tests;

/// The whole local run: gather, assess and (when `write_degraded`) record the
/// degraded-mode entry.
/// (and, not degraded, the `wake_findings` entry: [`record_wake_findings`]).
pub fn run(opts: &Options, write_degraded: bool) -> kijito_protocol::Result<(Report, DegradedEntry)> {
    let (facts, handle) = gather(opts)?;
    let report = assess(&facts);
    let entry = match write_degraded {
        false => DegradedEntry::NotNeeded,
        true if report.mode == Mode::Degraded => record_degraded(handle.as_ref(), &facts, &report),
        true => record_wake_findings(handle.as_ref(), &facts, &report),
    };
    Ok((report, entry))
}

/// Not degraded, with findings, on a trustworthy latch: append one
/// `wake_findings` entry listing them ([`degraded_details`]), state-neutral
/// (consent, one-step and action fields copied from the head); not again
/// while the head is a `wake_findings` entry with the same findings. Never
/// on an untrusted latch, nor in Silent Witness.
pub fn record_wake_findings(latch_handle: Option<&latch::Latch>, facts: &Facts, report: &Report) -> DegradedEntry {
    if report.mode == Mode::Degraded || report.findings.is_empty() {
        return DegradedEntry::NotNeeded;
    }
    let (Some(l), LatchFacts::Present(state)) = (latch_handle, &facts.latch) else {
        return DegradedEntry::NotNeeded;
    };
    let v = &state.verify;
    if !v.trusted || v.mode == ReportMode::Unverifiable || v.silent_witness || !v.initialised {
        return DegradedEntry::RefusedUntrusted;
    }
    let details = degraded_details(report);
    if details.is_empty() {
        return DegradedEntry::NotNeeded;
    }
    if let Some(h) = v.head.as_ref().filter(|h| h.event == latch::Event::WakeFindings) {
        match gather::head_details(l, h) {
            Ok(prev) if prev == details => return DegradedEntry::WakeAlreadyRecorded(h.seq),
            Ok(_) => {}
            Err(e) => return DegradedEntry::WakeFailed(e.code().to_owned()),
        }
    }
    match l.append_entry(facts.now_ms, latch::Event::WakeFindings, &details, false) {
        Ok(e) => DegradedEntry::WakeRecorded(e.entry_seq),
        Err(e) if matches!(e.code_as(), Some(latch_codes::UNTRUSTED | latch_codes::UNVERIFIABLE | latch_codes::SILENT_WITNESS_ACTIVE)) => {
            DegradedEntry::RefusedUntrusted
        }
        Err(e) => DegradedEntry::WakeFailed(e.code().to_owned()),
    }
}
