//! The read-only views of a latch: verification (with the head record
//! outside the workspace), the lock probe, the tokens, the Silent Witness
//! marker and `status`. Nothing here writes.

use crate::chain::EntrySummary;
use crate::chain::{self, Finding};
use crate::{head, layout, lock, Latch, LockProbe, Status, TokenState, VerifyReport, WitnessMarker};
use kijito_protocol::error::{Error, Result};
use std::path::PathBuf;

impl Latch {
    /// Full verification of the whole chain (every segment), with its RFC
    /// 6962 tree head. Read-only.
    pub fn verify(&self) -> VerifyReport {
        self.verify_since(None)
    }

    /// [`Latch::verify`], and when `since` (an earlier tree head, kept by the
    /// user) is given: the RFC 6962 consistency proof from it to the chain now
    /// must verify, or the finding `checkpoint_inconsistent` makes it
    /// untrusted (the old history is not an unchanged prefix of this one).
    pub fn verify_since(&self, since: Option<&chain::TreeHead>) -> VerifyReport {
        self.report_since(self.full_verify(false), since)
    }

    /// Fast verification for hot paths (wake-check, hooks): the live part
    /// and the segment joins fully, every sealed segment by its committed
    /// file hash, header, entry count and first/last entries. Any changed
    /// byte anywhere still fails; entries inside a segment are not re-parsed.
    pub fn verify_fast(&self) -> VerifyReport {
        let mut fv = chain::verify_with_depth(&self.paths, self.key.as_ref(), self.key_named, false, chain::Depth::SealedByHash);
        self.apply_head(&mut fv);
        fv.report
    }

    /// Where this latch's head record lives (`None`: no state directory).
    pub fn head_record_path(&self) -> Option<PathBuf> {
        self.heads_dir.as_ref().map(|d| head::record_path(d, &self.paths.root))
    }

    /// Whether the workspace index beside the head records lists this
    /// workspace (it had a latch once: [`crate::index`]).
    pub fn had_latch(&self) -> Result<bool> {
        match &self.heads_dir {
            Some(d) => crate::index::contains(d, &self.paths.root),
            None => Err(Error::new(
                head::codes::UNAVAILABLE,
                "no state directory for head records (set HOME, XDG_STATE_HOME or MEMORY_LATCH_HEADS_DIR)",
            )),
        }
    }

    /// The head record, if one exists.
    pub fn head_record(&self) -> Result<Option<head::HeadRecord>> {
        match self.head_record_path() {
            Some(p) => head::load(&p),
            None => Err(Error::new(
                head::codes::UNAVAILABLE,
                "no state directory for head records (set HOME, XDG_STATE_HOME or MEMORY_LATCH_HEADS_DIR)",
            )),
        }
    }

    pub(crate) fn head_findings(&self, seen: &head::Seen) -> (Vec<Finding>, Vec<String>) {
        match self.head_record() {
            Ok(rec) => head::compare(rec.as_ref(), seen),
            Err(e) => (vec![Finding::new(e.error_code(), e.message(), None)], Vec::new()),
        }
    }

    /// Add the head-record comparison to a verification.
    pub(crate) fn apply_head(&self, fv: &mut chain::FullVerify) {
        let seen = head::Seen {
            head: fv.head.as_ref(),
            mode: fv.report.mode,
            manifest_present: fv.report.initialised,
            saw_checksum: fv.saw_checksum,
        };
        let (findings, notes) = self.head_findings(&seen);
        fv.report.trusted &= findings.is_empty();
        fv.report.findings.extend(findings);
        fv.report.notes.extend(notes);
    }

    /// Probe the manifest lock (held right now? leftover temp files?).
    pub fn lock_probe(&self, now_ms: u64) -> Result<LockProbe> {
        layout::check_latch_dir(&self.paths.dir, ".memory-latch")?;
        lock::probe(&self.paths.lock, now_ms)
    }

    /// Every token in the ledger with its status at `now_ms`.
    pub fn tokens(&self, now_ms: u64) -> Result<Vec<TokenState>> {
        Ok(self.load_ledger()?.tokens.iter().map(|t| t.state(now_ms)).collect())
    }

    /// The Silent Witness marker, if present.
    pub fn witness_marker(&self) -> Result<Option<WitnessMarker>> {
        if std::fs::symlink_metadata(&self.paths.witness).is_err() {
            return Ok(None);
        }
        let bytes = layout::read_file(&self.paths.witness, crate::codes::WITNESS_SYMLINK)?;
        serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|e| Error::new(crate::codes::WITNESS_INVALID, format!("silent-witness.json is invalid: {e}")))
    }

    /// The current state (quick verification: live part + last segment).
    pub fn status(&self, now_ms: u64) -> Result<Status> {
        layout::check_latch_dir(&self.paths.dir, ".memory-latch")?
            .ok_or_else(|| Error::new(crate::codes::NOT_INITIALISED, "no .memory-latch directory (run memory-latch init)"))?;
        let live = self.load_trusted_readonly()?;
        let Some(head) = live.entries.last() else { return Err(Error::new(crate::codes::MANIFEST_EMPTY, "no entry")) };
        let keep = self.governance.compost_keep_decisions as usize;
        let decisions = head.decisions[head.decisions.len().saturating_sub(keep)..].to_vec();
        Ok(Status {
            schema: "memory-latch.status/v1",
            head: EntrySummary::of(head),
            objective: head.objective.clone(),
            non_negotiables: head.non_negotiables.clone(),
            next_single_step: head.next_single_step.clone(),
            blocked_by: head.blocked_by.clone(),
            known_state: head.known_state.clone(),
            unknown_state: head.unknown_state.clone(),
            last_good_checkpoint: head.last_good_checkpoint.clone(),
            decisions,
            silent_witness: head.silent_witness || self.witness_marker()?.is_some(),
            one_step: head.one_step,
            tokens: self.tokens(now_ms)?,
        })
    }

    pub(crate) fn full_verify(&self, hashes: bool) -> chain::FullVerify {
        let mut fv = chain::verify_full(&self.paths, self.key.as_ref(), self.key_named, hashes);
        self.apply_head(&mut fv);
        fv
    }
}
