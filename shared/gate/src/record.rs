//! `qa-gate record`, `invalidate` and `status`.

use crate::pass::{self, Pass};
use crate::report::{validate_pair, GreenReport};
use crate::state::Recorded;
use crate::{fresh_nonce, read_state, QaDir};
use kijito_files::private;
use kijito_protocol::error::{Error, Result};
use kijito_protocol::ids::{AbsPath, Digest, MemoryId, SessionId};
use serde_json::{json, Value};

/// Stable codes of this module (registered in the workspace by `tests/it/architecture.rs`).
pub mod codes {
    kijito_protocol::codes! {
        VERIFY_FAILED VerifyFailed = "pass_verify_failed",
        /// A report was verified before this session's last pass was withdrawn
        /// or consumed: a new pass needs new boots (docs/protocol.md §7).
        REPORTS_PREDATE_SPENT_PASS ReportsPredateSpentPass = "reports_predate_spent_pass",
        /// Witnessed boots (docs/protocol.md §7, "Witnessed boots"): a report
        /// whose `pointer-snapshot` call the PreToolUse hook did not see, while it
        /// saw the other one.
        BOOT_NOT_WITNESSED BootNotWitnessed = "boot_not_witnessed",
        /// A report's `pointer-snapshot` call came from the main agent (no agent
        /// identity in the hook input), not a subagent.
        BOOT_BY_MAIN_AGENT BootByMainAgent = "boot_by_main_agent",
        /// Both reports come from the same subagent.
        BOOTS_SAME_AGENT BootsSameAgent = "boots_same_agent",
        /// A red (or missing) report for the same pointer was written after the
        /// first of the two green ones: the count starts again.
        BOOTS_RESET_BY_RED BootsResetByRed = "boots_reset_by_red",
        /// `qa-witness.<s>.jsonl` cannot be trusted (insecure, too large, a line
        /// that does not parse).
        WITNESS_INVALID WitnessInvalid = "witness_record_invalid",
        /// The live pointer's digest differs from the one recorded.
        NOT_LIVE NotLive = "pointer_digest_not_live",
    }
}

/// Largest verifier executable hashed.
pub const MAX_VERIFIER_BYTES: u64 = 512 * 1024 * 1024;

/// What `qa-gate record` learns outside the reports (docs/protocol.md §7):
/// the live pointer digest, read once through the configured client (this
/// crate has no HTTP, so the caller reads it), and the SHA-256 of the
/// installed `pointer-snapshot` next to the running `qa-gate`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Evidence {
    pub live_pointer_digest: Digest,
    pub installed_verifier: Digest,
}

/// SHA-256 of `<helper dir>/pointer-snapshot` (the installed verifier).
pub fn installed_verifier(helpers: &kijito_protocol::command::HelperDir) -> Result<Digest> {
    let path = helpers.path().join("pointer-snapshot");
    let file = std::fs::File::open(&path).map_err(|e| {
        Error::new(
            kijito_protocol::codes::snapshot::VERIFIER_UNREADABLE,
            format!("cannot open the installed verifier {}: {e}", path.display()),
        )
    })?;
    Digest::of_reader(file, MAX_VERIFIER_BYTES)
        .map_err(|e| {
            Error::new(
                kijito_protocol::codes::snapshot::VERIFIER_UNREADABLE,
                format!("cannot read the installed verifier {}: {e}", path.display()),
            )
        })?
        .ok_or_else(|| {
            Error::new(
                kijito_protocol::codes::snapshot::VERIFIER_UNREADABLE,
                format!("the installed verifier {} is larger than {MAX_VERIFIER_BYTES} bytes", path.display()),
            )
        })
}

/// The live digest must equal the digest on the command line (the reports
/// were already checked against it), and both reports must come from the
/// installed verifier.
pub fn check_evidence(req: &RecordRequest, evidence: &Evidence, reports: &[GreenReport; 2]) -> Result<()> {
    if evidence.live_pointer_digest != req.pointer_digest {
        return Err(Error::new(
            codes::NOT_LIVE,
            format!(
                "the live pointer {} has digest {}, not {}; verify the pointer as it is now",
                req.pointer_id, evidence.live_pointer_digest, req.pointer_digest
            ),
        ));
    }
    for r in reports {
        if r.pointer_digest != evidence.live_pointer_digest {
            return Err(Error::new(codes::NOT_LIVE, "a report's pointer digest is not the live one"));
        }
        if r.verifier_digest != evidence.installed_verifier {
            return Err(Error::new(
                crate::report::codes::VERIFIER,
                format!(
                    "a report names verifier {}, but the installed pointer-snapshot is {}",
                    r.verifier_digest, evidence.installed_verifier
                ),
            ));
        }
    }
    Ok(())
}

/// Everything `qa-gate record` is given.
#[derive(Debug, Clone)]
pub struct RecordRequest {
    pub session_id: SessionId,
    pub transcript: AbsPath,
    pub data_dir: AbsPath,
    pub pointer_id: MemoryId,
    pub pointer_digest: Digest,
    pub reports: Vec<AbsPath>,
}

/// A recorded pass and its ready signal.
#[derive(Debug, Clone)]
pub struct Ready {
    pub pass: Pass,
    pub pass_file: String,
    /// The one stdout line (no newline).
    pub signal: String,
    /// How the two boots were witnessed ([`crate::witness::check_boots`]);
    /// the pass's `bootsWitnessed` is whether this is `Witnessed`.
    pub boots: crate::witness::Boots,
}

impl Ready {
    /// The flight recorder's `pass_recorded` fields (docs/protocol.md §13).
    pub fn journal_fields(&self) -> serde_json::Value {
        serde_json::json!({
            "pointer_id": self.pass.pointer_id.get(),
            "pointer_digest": self.pass.pointer_digest.as_str(),
            "snapshot_digest": self.pass.snapshot_digest.as_str(),
            "boots_witnessed": matches!(self.boots, crate::witness::Boots::Witnessed { .. }),
        })
    }
}

/// A new pass needs new boots: both reports must be verified no earlier than
/// the last time a pass of this session was withdrawn by a new turn or
/// consumed by a PreCompact (the spent record, [`crate::withdraw`]), so the
/// reports of a withdrawn or used pass never make another one.
///
/// The ledger outside the data dir ([`crate::ledger`]) counts too, so
/// deleting `qa-spent` does not revive old reports, and a report a consumed
/// or withdrawn pass was made of is refused outright (`pass_replayed`). A
/// ledger that cannot be read fails closed.
fn check_after_spent(qa: &QaDir, session: &SessionId, pair: &[GreenReport; 2]) -> Result<()> {
    let spent = crate::withdraw::read_spent(qa, session)?;
    let ledger = crate::ledger::read(qa, session)?;
    let last = spent.entries.iter().map(|e| e.spent_at_ms).chain(ledger.iter().map(|e| e.spent_at_ms)).max();
    if last.is_some_and(|last| pair.iter().any(|r| r.verified_at_ms < last)) {
        return Err(Error::new(
            codes::REPORTS_PREDATE_SPENT_PASS,
            "a report was verified before this session's last pass was withdrawn or used: run both cold boots again",
        ));
    }
    // Belt and braces (a report of a spent pass predates its spend, so the
    // rule above refuses it first): the ledger's report digests.
    if let Some(e) = ledger.iter().find(|e| pair.iter().any(|r| e.reports.contains(&r.report_digest))) {
        return Err(Error::new(
            crate::ledger::codes::PASS_REPLAYED,
            format!("a report belongs to the pass with nonce {} (spent: {}): run both cold boots again", e.nonce, e.why),
        ));
    }
    Ok(())
}

/// Validate both reports and the [`Evidence`], bind the pass to the
/// transcript, write the pass and `current-pointer.json`, re-read and
/// re-validate the pass.
/// `evidence` runs once, after the reports validated (so a bad report costs
/// no request).
pub fn record(req: &RecordRequest, evidence: impl FnOnce() -> Result<Evidence>, now_ms: i64) -> Result<Ready> {
    let pair = validate_pair(&req.reports, req.pointer_id, &req.pointer_digest, now_ms)?;
    let qa = QaDir::open(&req.data_dir)?;
    check_after_spent(&qa, &req.session_id, &pair)?;
    let boots = crate::witness::check_boots(&qa, &req.session_id, &req.reports, &pair, now_ms)?;
    check_evidence(req, &evidence()?, &pair)?;
    let [a, b] = pair;
    let transcript = pass::transcript_identity(&req.transcript)?;
    let pass = Pass {
        session_id: req.session_id.clone(),
        recorded_at_ms: now_ms,
        pointer_id: a.pointer_id,
        lock_message_id: a.lock_message_id,
        pointer_digest: a.pointer_digest.clone(),
        snapshot_digest: a.snapshot_digest.clone(),
        cold_boot_report_digests: [a.report_digest.clone(), b.report_digest.clone()],
        compaction_nonce: fresh_nonce(),
        transcript,
    };
    let path = qa.pass(&req.session_id);
    let bytes = pass.to_bytes_witnessed(matches!(boots, crate::witness::Boots::Witnessed { .. }));
    // A new pass supersedes a withdrawn one: the next PreCompact judges this one.
    private::remove_owned(&qa.withdrawn(&req.session_id))?;
    private::write_atomic(&path, &bytes)?;
    let current = Recorded {
        pointer_id: pass.pointer_id,
        lock_message_id: pass.lock_message_id,
        pointer_digest: pass.pointer_digest.clone(),
        snapshot_digest: pass.snapshot_digest.clone(),
        recorded_at_ms: now_ms,
    };
    private::write_atomic(&qa.current_pointer(), &current.to_bytes())?;
    // Verify before we announce: read back what is on disk and re-validate.
    let verified = read_state(&path).and_then(|back| {
        if back != bytes {
            return Err(Error::new(codes::VERIFY_FAILED, "the pass on disk differs from what was written"));
        }
        let parsed = Pass::parse(&back)?;
        let now_t = pass::transcript_identity(&req.transcript)?;
        parsed.check_valid(&req.session_id, now_ms, &now_t)?;
        Ok(parsed)
    });
    let parsed = match verified {
        Ok(p) => p,
        Err(e) => {
            let _ = private::remove_owned(&path);
            return Err(Error::new(codes::VERIFY_FAILED, format!("the written pass did not re-validate: {} ({})", e.message(), e.code())));
        }
    };
    let pass_file = path.to_string_lossy().into_owned();
    let signal = json!({
        "schemaVersion": 1,
        "type": "kijito.compaction.ready",
        "sessionId": parsed.session_id.as_str(),
        "compactionNonce": parsed.compaction_nonce,
        "passFile": pass_file,
        "requestedAction": "native_compact",
    })
    .to_string();
    Ok(Ready { pass: parsed, pass_file, signal, boots })
}

/// Remove exactly this session's pass, ticket, attempt and pending re-entry
/// record. Refuses (removing nothing) when any of them is a symlink, not a
/// regular file or not owned by the user. Returns how many were removed.
pub fn invalidate(qa: &QaDir, session: &SessionId) -> Result<usize> {
    let files = [qa.pass(session), qa.ticket(session), qa.attempt(session), qa.reentry(session)];
    for f in &files {
        match std::fs::symlink_metadata(f) {
            Err(_) => {}
            Ok(m) => {
                use std::os::unix::fs::MetadataExt;
                if m.file_type().is_symlink() {
                    return Err(private::file_error(private::codes::SYMLINK, format!("{} is a symlink; nothing was removed", f.display())));
                }
                if !m.is_file() {
                    return Err(private::file_error(
                        private::codes::NOT_REGULAR,
                        format!("{} is not a regular file; nothing was removed", f.display()),
                    ));
                }
                if m.uid() != private::current_uid() {
                    return Err(private::file_error(
                        private::codes::NOT_OWNED,
                        format!("{} is not owned by the user; nothing was removed", f.display()),
                    ));
                }
            }
        }
    }
    let mut n = 0;
    for f in &files {
        if private::remove_owned(f)? {
            n += 1;
        }
    }
    if n > 0 {
        private::fsync_dir(qa.path().as_path())?;
    }
    Ok(n)
}

/// The invalidate answer line.
pub fn invalidated_line(session: &SessionId, n: usize) -> String {
    json!({"schemaVersion": 1, "type": "kijito.compaction.invalidated", "sessionId": session.as_str(), "invalidated": n}).to_string()
}

fn exists(p: &std::path::Path) -> bool {
    std::fs::symlink_metadata(p).is_ok()
}

/// `qa-gate status`: [`status`] of the data dir's QA dir, read-only (a
/// missing data dir or QA dir reads as empty; nothing is created).
pub fn status_of(data_dir: &AbsPath, session: &SessionId, transcript: Option<&AbsPath>, now_ms: i64) -> Value {
    match QaDir::read_only(data_dir) {
        Ok(qa) => status(&qa, session, transcript, now_ms),
        Err(e) => json!({"schemaVersion": 1, "type": "kijito.compaction.status", "sessionId": session.as_str(), "error": e.code()}),
    }
}

/// What exists for a session and whether its pass would be accepted now (the
/// transcript check runs only when a transcript path is given).
pub fn status(qa: &QaDir, session: &SessionId, transcript: Option<&AbsPath>, now_ms: i64) -> Value {
    let pass_path = qa.pass(session);
    let (accepted, reason) = if !exists(&pass_path) {
        let why = if crate::withdraw::was_withdrawn(qa, session) { pass::codes::PASS_WITHDRAWN } else { pass::codes::PASS_MISSING };
        (false, Some(why.to_string()))
    } else {
        match crate::state::accepted_pass_in(&pass_path, qa.ledger_dir(), session, transcript, now_ms) {
            Ok(_) => (true, None),
            Err(e) => (false, Some(e.code().to_owned())),
        }
    };
    let attempt = read_state(&qa.attempt(session)).ok().and_then(|b| serde_json::from_slice::<Value>(&b).ok());
    json!({
        "schemaVersion": 1,
        "type": "kijito.compaction.status",
        "sessionId": session.as_str(),
        "qaDir": qa.path().as_str(),
        "pass": exists(&pass_path),
        "passAcceptedNow": accepted,
        "passRejectedBecause": reason,
        "transcriptChecked": transcript.is_some(),
        "ticket": exists(&qa.ticket(session)),
        "attempt": attempt,
        "attemptClaimed": exists(&qa.attempt_claimed(session)),
        "ticketConsumed": exists(&qa.ticket_consumed(session)),
        "reentryPending": exists(&qa.reentry(session)),
        // a re-entry whose text was printed but not yet marked delivered (a
        // killed delivery; docs/protocol.md §7 "Crash recovery")
        "reentryDelivering": exists(&qa.reentry_delivering(session)),
        "reentryDelivered": exists(&qa.reentry_delivered(session)),
        "currentPointer": exists(&qa.current_pointer()),
    })
}
