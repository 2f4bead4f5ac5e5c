//! PreCompact promotion, the claim after compaction and re-entry delivery.

use crate::pass::{self, Pass};
use crate::summary::{Summary, SummaryCheck};
use crate::{has_keys, is_hex32, rename_claim, QaDir, ATTEMPT_MAX_AGE_MS};
use kijito_files::private;
use kijito_protocol::error::{Error, Result};
use kijito_protocol::ids::{AbsPath, Digest, MemoryId, MessageId, SessionId};
use serde_json::{json, Value};
use std::os::unix::fs::MetadataExt;

/// Stable codes of this module (registered in the workspace by `tests/it/architecture.rs`).
pub mod codes {
    kijito_protocol::codes! {
        PROMOTED Promoted = "pass_promoted",
        PROMOTE_FAILED PromoteFailed = "pass_promotion_failed",
        ATTEMPT_INVALID AttemptInvalid = "attempt_invalid",
        ATTEMPT_EXPIRED AttemptExpired = "attempt_expired",
        ATTEMPT_FUTURE AttemptFuture = "attempt_from_future",
        TICKET_MISSING TicketMissing = "ticket_missing",
        TICKET_INVALID TicketInvalid = "ticket_invalid",
        TICKET_NONCE TicketNonce = "ticket_nonce_mismatch",
        REENTRY_INVALID ReentryInvalid = "reentry_invalid",
        /// An attested re-entry record whose compaction nonce no PreCompact
        /// consumed (no `pass_already_consumed` entry in the spent-nonce
        /// ledger at or before its claim) or whose chain is otherwise
        /// incomplete: delivered UNATTESTED (docs/protocol.md §7).
        REENTRY_UNBACKED ReentryUnbacked = "reentry_unbacked",
        /// Another PreCompact of this session held the lock for too long.
        PRECOMPACT_BUSY PrecompactBusy = "precompact_busy",
        /// The PreCompact of this compaction was killed before it recorded
        /// its attempt (its provisional attempt says so; docs/protocol.md §7,
        /// "Crash recovery").
        PRECOMPACT_INTERRUPTED PrecompactInterrupted = "precompact_interrupted",
        /// As `precompact_interrupted`, after it had already spent the pass
        /// (the ledger lists the nonce at the attempt's time): record a new one.
        PASS_SPENT_BY_INTERRUPTED PassSpentByInterrupted = "pass_spent_by_interrupted_precompact",
        /// The claim after compaction was killed between renaming the attempt
        /// and writing the re-entry record; the next hook finished it.
        CLAIM_INTERRUPTED ClaimInterrupted = "claim_interrupted",
        /// A delivery was killed after it took the record and before it was
        /// marked delivered: delivered again, never ATTESTED twice.
        DELIVERY_INTERRUPTED DeliveryInterrupted = "delivery_interrupted",
        /// SessionStart(compact) found no record of this compaction at all
        /// (no PreCompact recorded an attempt, or its state was lost).
        COMPACTION_UNRECORDED CompactionUnrecorded = "compaction_unrecorded",
    }
}

/// How long a PreCompact waits for another PreCompact of the same session
/// (below the 1.5 s PreCompact watchdog).
pub const PRECOMPACT_LOCK_WAIT_MS: u64 = 800;

/// An exclusive flock on `precompact.<session>.lock` in the QA dir
/// ([`kijito_files::lock`]); released when dropped (closing the descriptor).
/// PreCompact, the claim and the delivery of a session all hold it.
pub(crate) struct SessionLock(#[allow(dead_code)] kijito_files::lock::Held);

pub(crate) fn lock_session(qa: &QaDir, session: &SessionId) -> Result<SessionLock> {
    use kijito_files::lock;
    let path = qa.path().as_path().join(format!("precompact.{session}.lock"));
    let file = kijito_files::lock::open_file(&path)
        .map_err(|e| Error::new(codes::PRECOMPACT_BUSY, format!("cannot open {}: {e}", path.display())))?;
    let every_5_ms = lock::Backoff { first: std::time::Duration::from_millis(5), max: std::time::Duration::from_millis(5) };
    let held = lock::exclusive_within(file, std::time::Duration::from_millis(PRECOMPACT_LOCK_WAIT_MS), every_5_ms)
        .map(SessionLock)
        .map_err(|_| Error::new(codes::PRECOMPACT_BUSY, "another PreCompact of this session is still running"))?;
    remove_interrupted_writes(qa, session);
    Ok(held)
}

/// Under the held session lock: remove the temp files a killed write of this
/// session's state left (docs/protocol.md §7, "Crash recovery"): of the
/// files only lock holders and the session's own hooks write (attempt,
/// re-entry records, spent record, turn, pin, and the spent-nonce ledger in
/// the state directory) at once; of the pass, the compaction request, the
/// witness record and `current-pointer.json`, which commands, the adapter
/// and PreToolUse write beside the hooks, when older than any of their lives
/// ([`private::STALE_TEMP_AGE`], the age their own writers use,
/// [`private::write_atomic_unlocked`]). Best effort.
fn remove_interrupted_writes(qa: &QaDir, session: &SessionId) {
    let name = |p: std::path::PathBuf| p.file_name().and_then(|n| n.to_str()).map(str::to_owned).unwrap_or_default();
    // Written under this lock, or by the session's other hooks, which the
    // hosts run one after the other (docs/protocol.md §7, "New turn").
    let locked = [
        name(qa.attempt(session)),
        name(qa.reentry(session)),
        name(qa.reentry_delivered(session)),
        name(crate::summary::noting_path(qa, session)),
        name(qa.spent(session)),
        name(qa.turn(session)),
        name(qa.pin(session)),
    ];
    // Written by commands and workers that may run beside a hook (the
    // witness record by PreToolUse, which a host may run for parallel tool
    // calls; `current-pointer.json` by `qa-gate record` of any session).
    let unlocked = [name(qa.pass(session)), name(qa.request(session)), name(qa.witness(session)), name(qa.current_pointer())];
    let old = private::STALE_TEMP_AGE;
    let _ = private::remove_stale_temps_for(qa.path().as_path(), |target, age| {
        locked.iter().any(|n| n == target) || (age > old && unlocked.iter().any(|n| n == target))
    });
    // The spent-nonce ledger's rewrite, in the state directory: written by
    // PreCompact under this lock and by the session's UserPromptSubmit.
    if let Ok(ledger) = crate::ledger::path(qa, session) {
        let _ = private::remove_stale_temps(&ledger);
    }
}

/// `compaction-attempt.<session>.json`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attempt {
    pub session_id: SessionId,
    pub recorded_at_ms: i64,
    pub trigger: String,
    pub attested: bool,
    pub reason: String,
    pub compaction_nonce: Option<String>,
}

const ATTEMPT_KEYS: &[&str] = &["schemaVersion", "sessionId", "recordedAtMs", "trigger", "attested", "reason", "compactionNonce"];

/// Reasons and triggers are short codes; anything else is clipped to a code.
fn code_text(s: &str) -> String {
    let t: String = s.chars().filter(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '-').take(64).collect();
    if t.is_empty() {
        "unknown".into()
    } else {
        t
    }
}

impl Attempt {
    pub fn to_value(&self) -> Value {
        json!({
            "schemaVersion": 1,
            "sessionId": self.session_id.as_str(),
            "recordedAtMs": self.recorded_at_ms,
            "trigger": self.trigger,
            "attested": self.attested,
            "reason": self.reason,
            "compactionNonce": self.compaction_nonce,
        })
    }

    pub fn parse(bytes: &[u8]) -> Result<Attempt> {
        let bad = |why: &str| Error::new(codes::ATTEMPT_INVALID, format!("attempt file: {why}"));
        let v: Value = serde_json::from_slice(bytes).map_err(|_| bad("not JSON"))?;
        let o = v.as_object().filter(|o| has_keys(o, ATTEMPT_KEYS)).ok_or_else(|| bad("keys"))?;
        if o["schemaVersion"] != 1 {
            return Err(bad("schemaVersion"));
        }
        let attested = o["attested"].as_bool().ok_or_else(|| bad("attested"))?;
        let compaction_nonce = match &o["compactionNonce"] {
            Value::Null if !attested => None,
            Value::String(s) if attested && is_hex32(s) => Some(s.clone()),
            _ => return Err(bad("compactionNonce")),
        };
        Ok(Attempt {
            session_id: o["sessionId"].as_str().and_then(|s| SessionId::parse(s).ok()).ok_or_else(|| bad("sessionId"))?,
            recorded_at_ms: o["recordedAtMs"].as_i64().ok_or_else(|| bad("recordedAtMs"))?,
            trigger: o["trigger"].as_str().map(code_text).ok_or_else(|| bad("trigger"))?,
            attested,
            reason: o["reason"].as_str().map(code_text).ok_or_else(|| bad("reason"))?,
            compaction_nonce,
        })
    }
}

/// The pointer state an attested re-entry names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attested {
    pub pointer_id: MemoryId,
    pub lock_message_id: MessageId,
    pub pointer_digest: Digest,
    pub snapshot_digest: Digest,
    pub compaction_nonce: String,
    /// Whether the compaction summary kept the four values (`summaryCarried`, `summaryCheck`).
    pub summary: SummaryCheck,
    /// The consumed ticket's `bootsWitnessed` (`None`: a schemaVersion 5
    /// pass, or not read yet). Not part of the claim record: the claim and
    /// the delivery read it from the consumed ticket.
    pub boots_witnessed: Option<bool>,
}

/// `compaction-reentry.<session>.json`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reentry {
    pub session_id: SessionId,
    pub claimed_at_ms: i64,
    pub reason: String,
    /// `Some` exactly when attested.
    pub attested: Option<Attested>,
}

const REENTRY_KEYS: &[&str] = &[
    "schemaVersion",
    "sessionId",
    "claimedAtMs",
    "attested",
    "reason",
    "pointerId",
    "lockMessageId",
    "pointerDigest",
    "snapshotDigest",
    "compactionNonce",
    "summaryCarried",
    "summaryCheck",
];

/// `schemaVersion` of the re-entry (claim) record: 2 added `summaryCarried` and `summaryCheck`.
pub const REENTRY_SCHEMA_VERSION: u64 = 2;

impl Reentry {
    pub fn to_value(&self) -> Value {
        let a = self.attested.as_ref();
        json!({
            "schemaVersion": REENTRY_SCHEMA_VERSION,
            "sessionId": self.session_id.as_str(),
            "claimedAtMs": self.claimed_at_ms,
            "attested": a.is_some(),
            "reason": self.reason,
            "pointerId": a.map(|a| a.pointer_id.get()),
            "lockMessageId": a.map(|a| a.lock_message_id.get()),
            "pointerDigest": a.map(|a| a.pointer_digest.as_str()),
            "snapshotDigest": a.map(|a| a.snapshot_digest.as_str()),
            "compactionNonce": a.map(|a| a.compaction_nonce.as_str()),
            "summaryCarried": a.and_then(|a| a.summary.carried()),
            "summaryCheck": a.map(|a| a.summary.code()).unwrap_or(crate::summary::codes::UNATTESTED),
        })
    }

    pub fn parse(bytes: &[u8]) -> Result<Reentry> {
        let bad = |why: &str| Error::new(codes::REENTRY_INVALID, format!("re-entry record: {why}"));
        let v: Value = serde_json::from_slice(bytes).map_err(|_| bad("not JSON"))?;
        let o = v.as_object().filter(|o| has_keys(o, REENTRY_KEYS)).ok_or_else(|| bad("keys"))?;
        if o["schemaVersion"] != REENTRY_SCHEMA_VERSION {
            return Err(bad("schemaVersion"));
        }
        let check = o["summaryCheck"].as_str().unwrap_or("");
        let attested = if o["attested"] == Value::Bool(true) {
            let digest = |k: &str| o[k].as_str().and_then(|s| Digest::parse(s).ok()).ok_or_else(|| bad(k));
            Some(Attested {
                pointer_id: o["pointerId"].as_u64().and_then(|n| MemoryId::new(n).ok()).ok_or_else(|| bad("pointerId"))?,
                lock_message_id: o["lockMessageId"].as_u64().and_then(|n| MessageId::new(n).ok()).ok_or_else(|| bad("lockMessageId"))?,
                pointer_digest: digest("pointerDigest")?,
                snapshot_digest: digest("snapshotDigest")?,
                compaction_nonce: o["compactionNonce"].as_str().filter(|s| is_hex32(s)).ok_or_else(|| bad("compactionNonce"))?.to_owned(),
                summary: SummaryCheck::parse(&o["summaryCarried"], check).ok_or_else(|| bad("summaryCarried/summaryCheck"))?,
                boots_witnessed: None,
            })
        } else if o["attested"] == Value::Bool(false) {
            for k in ["pointerId", "lockMessageId", "pointerDigest", "snapshotDigest", "compactionNonce", "summaryCarried"] {
                if !o[k].is_null() {
                    return Err(bad("an unattested record carries no pointer fields"));
                }
            }
            if crate::summary::codes::Code::parse(check) != Some(crate::summary::codes::UNATTESTED) {
                return Err(bad("summaryCheck"));
            }
            None
        } else {
            return Err(bad("attested"));
        };
        Ok(Reentry {
            session_id: o["sessionId"].as_str().and_then(|s| SessionId::parse(s).ok()).ok_or_else(|| bad("sessionId"))?,
            claimed_at_ms: o["claimedAtMs"].as_i64().ok_or_else(|| bad("claimedAtMs"))?,
            reason: o["reason"].as_str().map(code_text).ok_or_else(|| bad("reason"))?,
            attested,
        })
    }
}

/// Remove each file (PreCompact's last write in the same directory, the
/// attempt's, fsyncs the directory).
fn remove_all(paths: &[std::path::PathBuf]) -> Result<()> {
    for p in paths {
        private::remove_owned(p)?;
    }
    Ok(())
}

/// Load and check the session's pass for promotion; returns it with the
/// inode it was read from.
fn acceptable_pass(qa: &QaDir, session: &SessionId, transcript: Option<&AbsPath>, now_ms: i64) -> Result<(Pass, Vec<u8>, u64, u64)> {
    let path = qa.pass(session);
    if std::fs::symlink_metadata(&path).is_err() {
        return Err(Error::new(pass::codes::PASS_MISSING, "no QA pass was recorded for this session"));
    }
    let (bytes, id) = qa.read_checked(&path, crate::state::STATE_RULES)?;
    let p = Pass::parse(&bytes)?;
    crate::withdraw::check_unspent(qa, session, &p.compaction_nonce)?;
    // The ledger outside the data dir: a pass whose nonce was ever consumed
    // or withdrawn is refused even when `qa-spent` was deleted.
    crate::ledger::check_unlisted(&crate::ledger::read(qa, session)?, &p.compaction_nonce)?;
    let transcript = transcript.ok_or_else(|| Error::new(pass::codes::TRANSCRIPT_UNKNOWN, "the host gave no transcript path"))?;
    let t = pass::transcript_identity(transcript)?;
    p.check_valid(session, now_ms, &t)?;
    Ok((p, bytes, id.dev, id.ino))
}

/// PreCompact (no network, never blocks): promote a valid pass to the ticket
/// by link-then-unlink of the same inode and record an attested attempt;
/// otherwise remove the session's pass, ticket and attempt and record an
/// unattested attempt with the reason. An orphaned ticket or undelivered
/// re-entry from an earlier compaction is removed first, never reused.
///
/// PreCompacts of one session are serialised (a flock), so the attempt a
/// call returns — and the message the hook shows for it — is the state it
/// left on disk, never one a concurrent PreCompact half-undid.
pub fn precompact(qa: &QaDir, session: &SessionId, transcript: Option<&AbsPath>, trigger: &str, now_ms: i64) -> Result<Attempt> {
    precompact_with(qa, session, transcript, trigger, now_ms, &|| {})
}

/// [`precompact`] with `linked` called between linking the ticket and
/// checking that it is the pass's inode (a test replaces the ticket there).
fn precompact_with(
    qa: &QaDir,
    session: &SessionId,
    transcript: Option<&AbsPath>,
    trigger: &str,
    now_ms: i64,
    linked: &dyn Fn(),
) -> Result<Attempt> {
    let _lock = lock_session(qa, session)?;
    // First of all, a provisional unattested attempt: a PreCompact killed
    // anywhere after this still leaves an attempt to claim, and its re-entry
    // says so (docs/protocol.md §7, "Crash recovery").
    let provisional = Attempt {
        session_id: session.clone(),
        recorded_at_ms: now_ms,
        trigger: code_text(trigger),
        attested: false,
        reason: codes::PRECOMPACT_INTERRUPTED.into(),
        compaction_nonce: None,
    };
    // Not fsynced: the real attempt below replaces it durably, and a power
    // loss that tears it leaves an attempt the claim refuses (unattested).
    qa.write_provisional(&qa.attempt(session), provisional.to_value().to_string().as_bytes())?;
    remove_all(&[qa.ticket(session), qa.reentry(session)])?;
    // A pass withdrawn by a new turn since the last PreCompact: its reason,
    // once (the marker goes with this attempt).
    let withdrawn = crate::withdraw::was_withdrawn(qa, session);
    let promoted = acceptable_pass(qa, session, transcript, now_ms).and_then(|(p, bytes, dev, ino)| {
        // One pass, one compaction: its nonce is spent before anything moves,
        // in the ledger outside the data dir (fsynced), the one record of a
        // consumed pass (docs/protocol.md §7).
        crate::ledger::append(qa, session, &crate::ledger::LedgerEntry::of(&p, &bytes, pass::codes::PASS_CONSUMED, now_ms), now_ms)?;
        let ticket = qa.ticket(session);
        std::fs::hard_link(qa.pass(session), &ticket)
            .map_err(|e| Error::new(codes::PROMOTE_FAILED, format!("cannot link the pass to the ticket: {e}")))?;
        linked();
        match std::fs::symlink_metadata(&ticket) {
            Ok(m) if m.dev() == dev && m.ino() == ino => {}
            _ => {
                let _ = private::remove_owned(&ticket);
                return Err(Error::new(codes::PROMOTE_FAILED, "the pass changed while it was promoted"));
            }
        }
        std::fs::remove_file(qa.pass(session))
            .map_err(|e| Error::new(codes::PROMOTE_FAILED, format!("cannot unlink the promoted pass: {e}")))?;
        // Not fsynced here: the attempt's write below fsyncs `qa/` once for
        // all of this compaction's changes in it (see there).
        Ok(p)
    });
    let attempt = match promoted {
        Ok(p) => Attempt {
            session_id: session.clone(),
            recorded_at_ms: now_ms,
            trigger: code_text(trigger),
            attested: true,
            reason: codes::PROMOTED.into(),
            compaction_nonce: Some(p.compaction_nonce),
        },
        Err(e) => {
            remove_all(&[qa.pass(session), qa.ticket(session), qa.attempt(session)])?;
            let reason =
                if withdrawn && e.code_as() == Some(pass::codes::PASS_MISSING) { pass::codes::PASS_WITHDRAWN.as_str() } else { e.code() };
            Attempt {
                session_id: session.clone(),
                recorded_at_ms: now_ms,
                trigger: code_text(trigger),
                attested: false,
                reason: reason.to_owned(),
                compaction_nonce: None,
            }
        }
    };
    if withdrawn {
        // Only a reason's marker: failing to remove it never costs the attempt.
        let _ = private::remove_owned(&qa.withdrawn(session));
    }
    // One fsync of `qa/` for every change this PreCompact made in it: the
    // provisional attempt, the removals, the ticket's link, the pass's
    // unlink and this rename (docs/protocol.md §7,
    // "Crash recovery", power loss). Before it, only the ledger line outside
    // the data dir is durable (fsynced first), and each record's content is
    // fsynced under its temp name, so a power loss keeps any subset of these
    // renames, links and unlinks, each whole; every such state is resolved
    // by the next hook, never ATTESTED without the whole chain and never a
    // pass promoted twice:
    // - the ticket without the attested attempt (the provisional or an older
    //   one): the claim of an unattested attempt removes the ticket unused (so
    //   does the next PreCompact), and the ledger refuses its nonce;
    // - the attested attempt without the ticket: `ticket_missing`, UNATTESTED;
    // - the pass's unlink undone: a pass whose nonce the ledger lists, refused;
    // - none of them: the state before this PreCompact, whose compaction the
    //   next SessionStart(compact) reports UNATTESTED (`compaction_unrecorded`).
    // The host is answered only after this fsync.
    qa.write_atomic(&qa.attempt(session), attempt.to_value().to_string().as_bytes())?;
    Ok(attempt)
}

/// Result of a claim.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClaimOutcome {
    /// This call claimed the attempt and wrote the re-entry record.
    Claimed(Reentry),
    /// No attempt waited (already claimed, or none recorded).
    NothingToClaim,
}

/// [`claim_with`] by a hook that has not seen the summary (yet): an attested
/// claim records the summary check as `pending`.
pub fn claim(qa: &QaDir, session: &SessionId, now_ms: i64) -> Result<ClaimOutcome> {
    claim_with(qa, session, now_ms, Summary::NotYet)
}

/// The claim after compaction, exactly once per attempt: rename the attempt
/// (first wins), then, if attested and at most 5 minutes old, rename the
/// ticket to `compaction-resume-consumed` and require its nonce to equal the
/// attempt's. Writes the re-entry record either way; an attested one with
/// the verdict on `summary` ([`crate::summary::check`]).
pub fn claim_with(qa: &QaDir, session: &SessionId, now_ms: i64, summary: Summary<'_>) -> Result<ClaimOutcome> {
    let _lock = lock_session(qa, session)?;
    claim_locked(qa, session, now_ms, summary)
}

/// SessionStart(compact): under one hold of the session's lock, claim (if
/// still unclaimed) and take the re-entry for delivery
/// ([`take_reentry_for_delivery`]); the lock is held until the delivery is
/// committed or dropped, so a concurrent hook never mistakes a delivery in
/// progress for an interrupted one.
pub fn claim_and_take(qa: &QaDir, session: &SessionId, now_ms: i64, summary: Summary<'_>) -> Result<Option<(Reentry, Delivery)>> {
    let lock = lock_session(qa, session)?;
    claim_locked(qa, session, now_ms, summary)?;
    take_locked(qa, session, now_ms, lock)
}

/// [`claim_with`] under the held session lock.
fn claim_locked(qa: &QaDir, session: &SessionId, now_ms: i64, summary: Summary<'_>) -> Result<ClaimOutcome> {
    let claimed = qa.attempt_claimed(session);
    if !rename_claim(&qa.attempt(session), &claimed)? {
        return Ok(ClaimOutcome::NothingToClaim);
    }
    let unattested =
        |reason: &str| Reentry { session_id: session.clone(), claimed_at_ms: now_ms, reason: reason.to_owned(), attested: None };
    let reentry = match qa.read_state(&claimed).and_then(|b| Attempt::parse(&b)) {
        Err(e) => {
            private::remove_owned(&qa.ticket(session))?;
            unattested(e.code())
        }
        Ok(a) if &a.session_id != session => {
            private::remove_owned(&qa.ticket(session))?;
            unattested(codes::ATTEMPT_INVALID.as_str())
        }
        Ok(a) if a.recorded_at_ms > now_ms => {
            private::remove_owned(&qa.ticket(session))?;
            unattested(codes::ATTEMPT_FUTURE.as_str())
        }
        Ok(a) if now_ms - a.recorded_at_ms > ATTEMPT_MAX_AGE_MS => {
            private::remove_owned(&qa.ticket(session))?;
            unattested(codes::ATTEMPT_EXPIRED.as_str())
        }
        Ok(a) if !a.attested => {
            private::remove_owned(&qa.ticket(session))?;
            unattested(&unattested_reason(qa, session, &a))
        }
        Ok(a) => {
            let consumed = qa.ticket_consumed(session);
            if !rename_claim(&qa.ticket(session), &consumed)? {
                unattested(codes::TICKET_MISSING.as_str())
            } else {
                let bytes = qa.read_state(&consumed);
                let boots_witnessed = bytes.as_ref().ok().and_then(|b| Pass::boots_witnessed(b));
                match bytes.and_then(|b| Pass::parse(&b)) {
                    Err(_) => unattested(codes::TICKET_INVALID.as_str()),
                    Ok(t) if &t.session_id != session => unattested(codes::TICKET_INVALID.as_str()),
                    Ok(t) if Some(&t.compaction_nonce) != a.compaction_nonce.as_ref() => unattested(codes::TICKET_NONCE.as_str()),
                    Ok(t) => {
                        let mut a = Attested {
                            pointer_id: t.pointer_id,
                            lock_message_id: t.lock_message_id,
                            pointer_digest: t.pointer_digest,
                            snapshot_digest: t.snapshot_digest,
                            compaction_nonce: t.compaction_nonce,
                            summary: SummaryCheck::Pending,
                            boots_witnessed,
                        };
                        a.summary = crate::summary::check(summary, &a);
                        Reentry { session_id: session.clone(), claimed_at_ms: now_ms, reason: codes::PROMOTED.into(), attested: Some(a) }
                    }
                }
            }
        }
    };
    qa.write_atomic(&qa.reentry(session), reentry.to_value().to_string().as_bytes())?;
    Ok(ClaimOutcome::Claimed(reentry))
}

/// The reason an unattested attempt gives its re-entry: its own, except
/// that an interrupted PreCompact that had already spent the pass (the
/// ledger lists a nonce of this session consumed at the attempt's time)
/// says so, so the agent knows the pass is gone.
fn unattested_reason(qa: &QaDir, session: &SessionId, a: &Attempt) -> String {
    let spent = a.reason == codes::PRECOMPACT_INTERRUPTED.as_str()
        && crate::ledger::read(qa, session)
            .map(|l| l.iter().any(|e| e.why == pass::codes::PASS_CONSUMED && e.spent_at_ms == a.recorded_at_ms))
            .unwrap_or(false);
    if spent {
        codes::PASS_SPENT_BY_INTERRUPTED.as_str().to_owned()
    } else {
        a.reason.clone()
    }
}

/// Finish what a killed hook left, before a delivery looks for a record
/// (docs/protocol.md §7, "Crash recovery"):
/// - a claim killed after it renamed the attempt and before it wrote the
///   re-entry record (a claimed attempt newer than every record) gets its
///   record now, UNATTESTED: the attempt's own reason when it was
///   unattested, else `claim_interrupted`;
/// - a PostCompact killed while it noted the summary (a `-noting` record;
///   noting holds the same lock) puts the record back.
fn recover(qa: &QaDir, session: &SessionId, now_ms: i64) -> Result<()> {
    let reentry = qa.reentry(session);
    let noting = crate::summary::noting_path(qa, session);
    // Under the session lock a `-noting` record is never a live one.
    if std::fs::symlink_metadata(&noting).is_ok() {
        crate::summary::put_back(&noting, &reentry)?;
    }
    let exists = |p: &std::path::Path| std::fs::symlink_metadata(p).is_ok();
    if exists(&reentry) || exists(&qa.reentry_delivering(session)) || exists(&noting) {
        return Ok(());
    }
    let Some(bytes) = crate::state::read_optional(&qa.attempt_claimed(session))? else { return Ok(()) };
    let attempt = Attempt::parse(&bytes).ok().filter(|a| &a.session_id == session);
    let attempt_ms = attempt.as_ref().map(|a| a.recorded_at_ms).unwrap_or(i64::MIN);
    let delivered = crate::state::read_optional(&qa.reentry_delivered(session)).ok().flatten().and_then(|b| Reentry::parse(&b).ok());
    if delivered.is_some_and(|d| d.claimed_at_ms >= attempt_ms) {
        return Ok(());
    }
    let reason = match &attempt {
        Some(a) if !a.attested => unattested_reason(qa, session, a),
        _ => codes::CLAIM_INTERRUPTED.as_str().to_owned(),
    };
    let r = Reentry { session_id: session.clone(), claimed_at_ms: now_ms.max(attempt_ms), reason, attested: None };
    match private::create_new(&reentry, r.to_value().to_string().as_bytes()) {
        Err(e) if e.code_as() == Some(private::codes::EXISTS) => Ok(()),
        other => other,
    }
}

/// Whether this session's re-entry of a compaction claimed at most 5 minutes
/// ago was delivered (or is being delivered): a second SessionStart(compact)
/// then says nothing.
pub fn delivered_recently(qa: &QaDir, session: &SessionId, now_ms: i64) -> bool {
    [qa.reentry_delivered(session), qa.reentry_delivering(session)].iter().any(|p| {
        crate::state::read_optional(p)
            .ok()
            .flatten()
            .and_then(|b| Reentry::parse(&b).ok())
            .is_some_and(|r| &r.session_id == session && (now_ms - r.claimed_at_ms).abs() <= ATTEMPT_MAX_AGE_MS)
    })
}

/// The chain behind an attested claim record (docs/protocol.md §7, "Re-entry
/// delivery"): the claimed attempt and the consumed ticket exist as
/// owner-only regular files of this session with the record's nonce, the
/// ticket names the record's pointer, lock and digests, and the ledger
/// outside the data dir lists the nonce as consumed at or before the claim,
/// with the SHA-256 of the consumed ticket's bytes. Returns the ticket's
/// `bootsWitnessed`; `None` when any link is missing.
fn backed(qa: &QaDir, session: &SessionId, r: &Reentry, a: &Attested) -> Option<Option<bool>> {
    let attempt = qa.read_state(&qa.attempt_claimed(session)).and_then(|b| Attempt::parse(&b)).ok()?;
    if &attempt.session_id != session || !attempt.attested || attempt.compaction_nonce.as_deref() != Some(a.compaction_nonce.as_str()) {
        return None;
    }
    let bytes = qa.read_state(&qa.ticket_consumed(session)).ok()?;
    let t = Pass::parse(&bytes).ok()?;
    let same = &t.session_id == session
        && t.compaction_nonce == a.compaction_nonce
        && t.pointer_id == a.pointer_id
        && t.lock_message_id == a.lock_message_id
        && t.pointer_digest == a.pointer_digest
        && t.snapshot_digest == a.snapshot_digest;
    if !same {
        return None;
    }
    let digest = Digest::of(&bytes);
    let ledger = crate::ledger::read(qa, session).ok()?;
    ledger
        .iter()
        .any(|e| {
            e.nonce == a.compaction_nonce
                && e.why == pass::codes::PASS_CONSUMED
                && e.spent_at_ms <= r.claimed_at_ms
                && e.pass_sha256 == digest
        })
        .then(|| Pass::boots_witnessed(&bytes))
}

/// The last step of a delivery, run once its text is out
/// ([`take_reentry`]): the record moves from `-delivering` to `-delivered`.
#[must_use = "commit the delivery once its text is printed"]
pub struct Delivery {
    delivering: std::path::PathBuf,
    delivered: std::path::PathBuf,
    /// The session's lock, released once the delivery is committed.
    _lock: SessionLock,
}

impl Delivery {
    /// Mark the record delivered. Deliberately not fsynced: a power loss
    /// that undoes it leaves `-delivering`, which is delivered again,
    /// UNATTESTED (a duplicate is harmless; a lost text is not), while a
    /// fsync here would be one more point where a kill after the print
    /// could lose the text (docs/protocol.md §7, "Crash recovery").
    pub fn commit(self) -> Result<()> {
        std::fs::rename(&self.delivering, &self.delivered)
            .map_err(|e| Error::new(crate::codes::STATE_RENAME_FAILED, format!("cannot rename {}: {e}", self.delivering.display())))
    }
}

/// [`take_reentry_for_delivery`] marked delivered at once (a caller with
/// nothing to print first: tests, status tools).
pub fn take_reentry(qa: &QaDir, session: &SessionId, now_ms: i64) -> Result<Option<Reentry>> {
    take_reentry_for_delivery(qa, session, now_ms)?.map(|(r, d)| d.commit().map(|()| r)).transpose()
}

/// Take the pending re-entry record for delivery, at least once and
/// ATTESTED at most once: after [`recover`], rename it to
/// `compaction-reentry-delivering` (first wins, fsynced) and return it with
/// the [`Delivery`] to commit once its text is printed. A `-delivering`
/// record left by a killed delivery is returned again, UNATTESTED with
/// `delivery_interrupted`. A record that does not parse is still
/// delivered, as unattested; an attested one whose chain ([`backed`]) is
/// incomplete is delivered UNATTESTED with `reentry_unbacked`.
pub fn take_reentry_for_delivery(qa: &QaDir, session: &SessionId, now_ms: i64) -> Result<Option<(Reentry, Delivery)>> {
    // Nothing a delivery or a recovery could act on: no lock (and no lock
    // file) for a session that never compacted.
    let candidates =
        [qa.reentry(session), qa.reentry_delivering(session), crate::summary::noting_path(qa, session), qa.attempt_claimed(session)];
    if !candidates.iter().any(|p| std::fs::symlink_metadata(p).is_ok()) {
        return Ok(None);
    }
    let lock = lock_session(qa, session)?;
    take_locked(qa, session, now_ms, lock)
}

fn take_locked(qa: &QaDir, session: &SessionId, now_ms: i64, lock: SessionLock) -> Result<Option<(Reentry, Delivery)>> {
    recover(qa, session, now_ms)?;
    let delivering = qa.reentry_delivering(session);
    let interrupted = std::fs::symlink_metadata(&delivering).is_ok();
    if !interrupted {
        if !rename_claim(&qa.reentry(session), &delivering)? {
            return Ok(None);
        }
        // Durable before the text is printed: a power loss must not put
        // back a record whose ATTESTED text may already be out.
        private::fsync_parent(&delivering)?;
    }
    let r = qa.read_state(&delivering).and_then(|b| Reentry::parse(&b)).and_then(|r| {
        if &r.session_id == session {
            Ok(r)
        } else {
            Err(Error::new(codes::REENTRY_INVALID, "re-entry record of another session"))
        }
    });
    // ATTESTED only when a PreCompact really consumed that nonce before the
    // claim: a hand-written record with `attested:true` is not enough; and
    // never a second time.
    let r = r.map(|r| match &r.attested {
        _ if interrupted => Reentry { attested: None, reason: codes::DELIVERY_INTERRUPTED.into(), ..r },
        Some(a) => match backed(qa, session, &r, a) {
            Some(boots_witnessed) => Reentry { attested: Some(Attested { boots_witnessed, ..a.clone() }), ..r },
            None => Reentry { attested: None, reason: codes::REENTRY_UNBACKED.into(), ..r },
        },
        None => r,
    });
    // Whatever failed (unreadable, malformed, another session's), the reason
    // is the one re-entry code.
    let r = r.unwrap_or_else(|_| Reentry {
        session_id: session.clone(),
        claimed_at_ms: now_ms,
        reason: if interrupted { codes::DELIVERY_INTERRUPTED } else { codes::REENTRY_INVALID }.into(),
        attested: None,
    });
    Ok(Some((r, Delivery { delivering, delivered: qa.reentry_delivered(session), _lock: lock })))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_ticket_replaced_while_it_is_promoted_is_not_attested() {
        let d = tempfile::tempdir().unwrap();
        std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
        let data = d.path().join("data");
        std::fs::create_dir(&data).unwrap();
        std::fs::set_permissions(&data, std::fs::Permissions::from_mode(0o700)).unwrap();
        let qa = QaDir::open(&AbsPath::from_path(&data).unwrap()).unwrap().with_ledger_dir(Some(d.path().join("heads")));
        let t = d.path().join("t.jsonl");
        std::fs::write(&t, b"{}\n").unwrap();
        let transcript = AbsPath::from_path(&t).unwrap();
        let s = SessionId::parse("s-1").unwrap();
        let t0 = 1_800_000_000_000;
        let pass = Pass {
            session_id: s.clone(),
            recorded_at_ms: t0,
            pointer_id: MemoryId::new(21813).unwrap(),
            lock_message_id: MessageId::new(1234).unwrap(),
            pointer_digest: Digest::of(b"p"),
            snapshot_digest: Digest::of(b"s"),
            cold_boot_report_digests: [Digest::of(b"a"), Digest::of(b"b")],
            compaction_nonce: "0123456789abcdef0123456789abcdef".into(),
            transcript: pass::transcript_identity(&transcript).unwrap(),
        };
        private::write_atomic(&qa.pass(&s), &pass.to_bytes()).unwrap();
        // Another file (same bytes, another inode) takes the ticket's name
        // between the link and the check.
        let swap = || {
            let other = data.join("qa").join("other");
            private::write_atomic(&other, &pass.to_bytes()).unwrap();
            std::fs::rename(&other, qa.ticket(&s)).unwrap();
        };
        let a = precompact_with(&qa, &s, Some(&transcript), "manual", t0 + 1, &swap).unwrap();
        assert!(!a.attested, "{a:?}");
        assert_eq!(a.reason, codes::PROMOTE_FAILED.as_str());
        assert!(std::fs::symlink_metadata(qa.ticket(&s)).is_err(), "no ticket is left");
        assert!(std::fs::symlink_metadata(qa.pass(&s)).is_err(), "the pass is spent");
        // That PreCompact spent the nonce in the ledger: the same pass put
        // back attests nothing (one pass, one compaction) ...
        private::write_atomic(&qa.pass(&s), &pass.to_bytes()).unwrap();
        let again = precompact_with(&qa, &s, Some(&transcript), "manual", t0 + 2, &|| {}).unwrap();
        assert_eq!((again.attested, again.reason.as_str()), (false, crate::pass::codes::PASS_REPLAYED.as_str()));
        // ... and without the swap a pass (a new record: a new nonce) is promoted.
        let fresh = Pass { compaction_nonce: "0123456789abcdef0123456789abcde0".into(), ..pass.clone() };
        private::write_atomic(&qa.pass(&s), &fresh.to_bytes()).unwrap();
        assert!(precompact_with(&qa, &s, Some(&transcript), "manual", t0 + 3, &|| {}).unwrap().attested);
    }
}
