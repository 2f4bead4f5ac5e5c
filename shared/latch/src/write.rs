//! The write transaction: every append goes through [`Latch::transact`]
//! (under the held manifest lock: quick-verify including the head record,
//! refuse in Silent Witness, draft from the verified head, build, seal a
//! segment when due, finalize, write the manifest, then the head record).
//! `init` and a reseed write a genesis entry through the same
//! [`Latch::write_manifest`].

use crate::chain::{self, LiveState, ReportMode, LIVE_HEADER};
use crate::entry::{self, ConsentState, Decision, Entry, Event, Integrity, Mode, Risk, SegmentRef, NONE};
use crate::{
    clean_list, clean_text, head, layout, lock, read_boot_id, time, tokens, witness_error, CheckpointInput, InitInput, InitOutcome, Latch,
    VerifyReport, WitnessMarker, WITNESS_SCHEMA,
};
use kijito_files::private;
use kijito_protocol::error::{Error, Result};
use kijito_protocol::ids::TaggedDigest;

impl Latch {
    /// Record `e` as the head, right after it was written to the manifest.
    pub(crate) fn record_head(&self, e: &Entry) -> Result<()> {
        let path = self.head_record_path().ok_or_else(|| {
            Error::new(head::codes::UNAVAILABLE, "no state directory for head records (set HOME, XDG_STATE_HOME or MEMORY_LATCH_HEADS_DIR)")
        })?;
        head::save(&path, &head::HeadRecord::of(&self.paths.root, e))
    }

    /// Write the live manifest, then the head record (every manifest write).
    pub(crate) fn write_manifest(&self, entries: &[Entry]) -> Result<()> {
        private::write_atomic(&self.paths.manifest, chain::render_file(LIVE_HEADER, entries).as_bytes())
            .map_err(|err| layout::file_error(err, crate::codes::MANIFEST_SYMLINK))?;
        match entries.last() {
            Some(e) if e.entry_seq == 1 => {
                self.record_head(e)?;
                self.reset_checkpoints()
            }
            Some(e) => self.record_head(e),
            None => Ok(()),
        }
    }

    pub(crate) fn load_trusted_readonly(&self) -> Result<LiveState> {
        let live = chain::load_live(&self.paths, self.key.as_ref())?;
        let mode = if live.unverifiable {
            ReportMode::Unverifiable
        } else if live.saw_hmac {
            ReportMode::Hmac
        } else {
            ReportMode::Checksum
        };
        let seen = head::Seen { head: live.entries.last(), mode, manifest_present: true, saw_checksum: live.saw_checksum };
        let (findings, _) = self.head_findings(&seen);
        if !findings.is_empty() {
            return Err(chain::untrusted(findings));
        }
        if live.unverifiable {
            return Err(Error::new(
                crate::codes::UNVERIFIABLE,
                "the manifest holds hmac entries and no key was given (--hmac-key-file or MEMORY_LATCH_HMAC_KEY_FILE); refusing to trust or write it",
            ));
        }
        Ok(live)
    }

    /// Quick-verify for a write; an integrity failure enters Silent Witness.
    pub(crate) fn load_for_write(&self, now_ms: u64) -> Result<LiveState> {
        match self.load_trusted_readonly() {
            Err(e) if e.code_as() == Some(crate::codes::UNTRUSTED) => {
                let codes = e
                    .detail()
                    .and_then(|d| d.as_array())
                    .map(|a| a.iter().filter_map(|f| f.get("code").and_then(|c| c.as_str()).map(str::to_owned)).collect())
                    .unwrap_or_default();
                self.write_witness(now_ms, "verification failed", codes)?;
                Err(e)
            }
            other => other,
        }
    }

    pub(crate) fn write_witness(&self, now_ms: u64, reason: &str, findings: Vec<String>) -> Result<()> {
        if self.witness_marker().ok().flatten().is_some() {
            return Ok(());
        }
        let marker = WitnessMarker { schema: WITNESS_SCHEMA.into(), entered_at_ms: now_ms, reason: reason.into(), findings };
        let bytes = serde_json::to_vec(&marker).map_err(|e| Error::new(crate::codes::WRITE_FAILED, e.to_string()))?;
        private::write_atomic(&self.paths.witness, &bytes).map_err(|e| layout::file_error(e, crate::codes::WITNESS_SYMLINK))
    }

    /// Enter Silent Witness because the chain failed verification (writes the
    /// marker only; never appends to an untrusted chain).
    pub fn enter_silent_witness(&self, now_ms: u64, report: &VerifyReport) -> Result<()> {
        if report.mode == ReportMode::Unverifiable && report.findings.is_empty() {
            return Ok(());
        }
        let _guard = self.lock()?;
        self.write_witness(now_ms, "verification failed", report.findings.iter().map(|f| f.code.to_string()).collect())
    }

    pub(crate) fn witness_active(&self, live: &LiveState) -> Result<Option<String>> {
        if let Some(m) = self.witness_marker()? {
            return Ok(Some(m.reason));
        }
        if live.entries.last().is_some_and(|h| h.silent_witness) {
            return Ok(Some("recovery attempts exhausted".into()));
        }
        Ok(None)
    }

    pub(crate) fn draft(&self, head: &Entry, event: Event, now_ms: u64) -> Entry {
        let mut e = head.clone();
        e.entry_seq = head.entry_seq + 1;
        e.event = event;
        e.updated_at = time::rfc3339_ms(now_ms);
        e.updated_at_ms = now_ms;
        e.boot_id = read_boot_id(&self.boot_id_file);
        e.details = Vec::new();
        e.prev_payload_hash = head.integrity.payload_hash.clone();
        e.sealed_segment = None;
        e.reseeded_from = None;
        e.governance = self.governance.clone();
        e.storage = self.storage();
        e.integrity =
            Integrity { mode: head.integrity.mode, payload_hash: String::new(), hmac_signature: NONE.into(), verified_at: String::new() };
        // Composting: retire decisions made compost_retire_turns or more
        // turns ago (the hooks' turn count, knobs.rs); a decision recorded
        // before turns stamped it retires by entries, as it did then. An
        // unreadable counter retires nothing by turns this time.
        let retire = self.governance.compost_retire_turns as u64;
        let now_turn = self.turn_count();
        e.decisions.retain(|d| match (d.turn, now_turn) {
            (Some(t), Some(now)) => now.saturating_sub(t) < retire,
            (Some(_), None) => true,
            (None, _) => e.entry_seq.saturating_sub(d.seq) < retire,
        });
        e
    }

    pub(crate) fn genesis(&self, now_ms: u64, event: Event, mode: Mode, objective: String) -> Entry {
        Entry {
            schema: entry::ENTRY_SCHEMA.into(),
            entry_seq: 1,
            event,
            updated_at: time::rfc3339_ms(now_ms),
            updated_at_ms: now_ms,
            boot_id: read_boot_id(&self.boot_id_file),
            objective,
            non_negotiables: Vec::new(),
            last_good_checkpoint: NONE.into(),
            blocked_by: NONE.into(),
            next_single_step: NONE.into(),
            known_state: Vec::new(),
            unknown_state: Vec::new(),
            decisions: Vec::new(),
            consent_state: ConsentState::Pending,
            irreversible_action_pending: NONE.into(),
            action_hash: None,
            recovery_attempts: 0,
            risk_level: Risk::Low,
            silent_witness: false,
            one_step: None,
            details: Vec::new(),
            prev_payload_hash: NONE.into(),
            sealed_segment: None,
            reseeded_from: None,
            governance: self.governance.clone(),
            storage: self.storage(),
            integrity: Integrity { mode, payload_hash: String::new(), hmac_signature: NONE.into(), verified_at: String::new() },
        }
    }

    pub(crate) fn finalize(&self, e: &mut Entry, now_ms: u64) -> Result<()> {
        e.integrity.verified_at = time::rfc3339_ms(now_ms);
        e.integrity.hmac_signature = NONE.into();
        e.integrity.payload_hash = String::new();
        let payload = e.canonical_payload();
        if payload.is_empty() {
            return Err(Error::new(crate::codes::WRITE_FAILED, "cannot serialise the entry"));
        }
        if e.integrity.mode == Mode::Hmac {
            let key = self.key.as_ref().ok_or_else(|| {
                Error::new(crate::codes::HMAC_KEY_REQUIRED, "this manifest is in hmac mode; the key is required to write")
            })?;
            e.integrity.hmac_signature = key.sign(&payload);
        }
        e.integrity.payload_hash = String::from(TaggedDigest::of(&payload));
        Ok(())
    }

    /// Append `e` after the verified `live` state (caller holds the lock).
    pub(crate) fn commit(&self, live: LiveState, mut e: Entry, now_ms: u64) -> Result<Entry> {
        let head = live.entries.last().cloned().ok_or_else(|| Error::new(crate::codes::MANIFEST_EMPTY, "no entry"))?;
        if e.entry_seq != head.entry_seq + 1 || e.prev_payload_hash != head.integrity.payload_hash {
            return Err(Error::new(crate::codes::ENTRY_SEQ_GAP, "entry_seq must increase by exactly 1 on the verified head"));
        }
        let mut entries = live.entries;
        let mut sealed = Vec::new();
        if entries.len() >= layout::SEGMENT_ENTRIES {
            let index = live.last_segment.as_ref().map(|r| r.index + 1).unwrap_or(1);
            let bytes = chain::render_file(&chain::segment_header(index), &entries);
            if !live.pending_seal {
                private::ensure_private_dir(&self.paths.history).map_err(|e| layout::file_error(e, crate::codes::DIR_SYMLINK))?;
                private::create_new(&self.paths.segment(index), bytes.as_bytes())
                    .map_err(|e| layout::file_error(e, crate::codes::SEGMENT_SYMLINK))?;
            }
            e.sealed_segment = Some(SegmentRef {
                index,
                sha256: String::from(TaggedDigest::of(bytes.as_bytes())),
                first_seq: entries.first().map(|x| x.entry_seq).unwrap_or(0),
                last_seq: head.entry_seq,
            });
            sealed = std::mem::take(&mut entries);
        }
        self.finalize(&mut e, now_ms)?;
        entries.push(e.clone());
        self.write_manifest(&entries)?;
        if !sealed.is_empty() {
            // A checkpoint at every seal (best effort: docs/memory-latch.md).
            let _ = self.seal_checkpoint(&sealed, &e, now_ms);
        }
        Ok(e)
    }

    /// The one write transaction, under a held manifest lock: quick-verify
    /// (the live part, the last segment and the head record; an integrity
    /// failure enters Silent Witness), refuse in Silent Witness, draft the
    /// next entry from the verified head, let `build` fill it (it may refuse
    /// with an error: nothing is written), then commit.
    pub(crate) fn transact(
        &self,
        _held: &lock::LockGuard,
        now_ms: u64,
        event: Event,
        build: impl FnOnce(&mut Entry, &Entry) -> Result<()>,
    ) -> Result<Entry> {
        let live = self.load_for_write(now_ms)?;
        if let Some(reason) = self.witness_active(&live)? {
            return Err(witness_error(&reason));
        }
        let head = live.entries.last().cloned().ok_or_else(|| Error::new(crate::codes::MANIFEST_EMPTY, "no entry"))?;
        let mut e = self.draft(&head, event, now_ms);
        build(&mut e, &head)?;
        self.commit(live, e, now_ms)
    }

    /// Lock, then [`Latch::transact`].
    pub(crate) fn append_with(&self, now_ms: u64, event: Event, build: impl FnOnce(&mut Entry, &Entry) -> Result<()>) -> Result<Entry> {
        let guard = self.lock()?;
        self.transact(&guard, now_ms, event, build)
    }

    /// Create `.memory-latch` and the first entry.
    pub fn init(&self, now_ms: u64, input: &InitInput) -> Result<InitOutcome> {
        if (input.want_hmac || self.key_named) && self.key.is_none() {
            return Err(Error::new(
                crate::codes::HMAC_KEY_MISSING,
                "hmac was requested (--integrity hmac, --hmac-key-file or MEMORY_LATCH_HMAC_KEY_FILE) but the key file does not exist; nothing written (no silent fallback to checksum)",
            ));
        }
        layout::check_latch_dir(&self.paths.dir, ".memory-latch")?;
        private::ensure_private_dir(&self.paths.dir).map_err(|e| layout::file_error(e, crate::codes::DIR_SYMLINK))?;
        let _guard = self.lock()?;
        if std::fs::symlink_metadata(&self.paths.manifest).is_ok() || std::fs::symlink_metadata(&self.paths.history).is_ok() {
            return Err(Error::new(crate::codes::ALREADY_INITIALISED, "this workspace already has a memory-latch manifest"));
        }
        if let Some(rec) = self.head_record()? {
            return Err(Error::new(
                crate::codes::HEAD_RECORD_EXISTS,
                format!(
                    "a head record for this workspace names entry {}: its latch was deleted; a fresh init would hide that. A person decides: remove {} by hand, then init",
                    rec.entry_seq,
                    self.head_record_path().map(|p| p.display().to_string()).unwrap_or_default()
                ),
            ));
        }
        self.refuse_leftover_checkpoints()?;
        let mode = if self.key.is_some() { Mode::Hmac } else { Mode::Checksum };
        let notice = (mode == Mode::Checksum)
            .then(|| "no hmac key is configured: this manifest uses checksum mode (tamper-evident against edits, not against a writer that recomputes hashes)".to_owned());
        let mut e = self.genesis(now_ms, Event::Init, mode, clean_text(&input.objective, "objective", false)?);
        e.non_negotiables = clean_list(&input.non_negotiables, "non-negotiable")?;
        if let Some(step) = &input.next_single_step {
            e.next_single_step = clean_text(step, "next single step", false)?;
        }
        self.finalize(&mut e, now_ms)?;
        self.write_manifest(std::slice::from_ref(&e))?;
        // Beside the head record: this workspace had a latch (wake-check
        // tells a latch deleted with its head record from none at all).
        if let Some(dir) = &self.heads_dir {
            crate::index::record(dir, &self.paths.root, now_ms)?;
        }
        if std::fs::symlink_metadata(&self.paths.ledger).is_err() {
            self.save_ledger(&tokens::Ledger::default())?;
        }
        Ok(InitOutcome { entry: e, notice })
    }

    /// Record a checkpoint (resets the recovery attempt count).
    pub fn checkpoint(&self, now_ms: u64, input: &CheckpointInput) -> Result<Entry> {
        self.append_with(now_ms, Event::Checkpoint, |e, _| {
            if let Some(t) = &input.objective {
                e.objective = clean_text(t, "objective", false)?;
            }
            if let Some(l) = &input.non_negotiables {
                e.non_negotiables = clean_list(l, "non-negotiable")?;
            }
            if let Some(t) = &input.blocked_by {
                e.blocked_by = clean_text(t, "blocked by", false)?;
            }
            if let Some(t) = &input.next_single_step {
                e.next_single_step = clean_text(t, "next single step", false)?;
            }
            // One-step mode: a checkpoint must name the next step; it makes the mode ready again.
            if e.one_step.is_some() {
                if input.next_single_step.is_none() {
                    return Err(Error::new(
                        crate::codes::ONE_STEP_NEXT_STEP_REQUIRED,
                        "one-step mode (context fatigue): a checkpoint must name the next single step (--next-step TEXT)",
                    ));
                }
                e.one_step = Some(crate::entry::OneStep::Ready);
            }
            if let Some(l) = &input.known_state {
                e.known_state = clean_list(l, "known")?;
            }
            if let Some(l) = &input.unknown_state {
                e.unknown_state = clean_list(l, "unknown")?;
            }
            if let Some(c) = &input.last_good_checkpoint {
                if !TaggedDigest::is_valid(c) {
                    return Err(Error::usage(crate::codes::CHECKPOINT_INVALID, "--last-good-checkpoint must be sha256:<64 lowercase hex>"));
                }
                e.last_good_checkpoint = c.clone();
            }
            if let Some(r) = input.risk {
                e.risk_level = r;
            }
            let turn = Some(self.turn_count().unwrap_or(0));
            for d in clean_list(&input.decisions, "decision")? {
                e.decisions.push(Decision { seq: e.entry_seq, text: d, turn });
            }
            let excess = e.decisions.len().saturating_sub(self.governance.compost_keep_decisions as usize);
            e.decisions.drain(..excess);
            e.recovery_attempts = 0;
            Ok(())
        })
    }

    /// Append an entry of any event kind with details (wake-check uses this
    /// for `degraded_mode`). `lock_consent` sets consent to locked.
    pub fn append_entry(&self, now_ms: u64, event: Event, details: &[String], lock_consent: bool) -> Result<Entry> {
        self.append_with(now_ms, event, |e, _| {
            e.details = clean_list(details, "details")?;
            if lock_consent {
                e.consent_state = ConsentState::Locked;
            }
            Ok(())
        })
    }

    /// Benchmarks and tests only: write a valid history of `n` entries
    /// (init plus checkpoints) directly, one file write per sealed segment.
    #[doc(hidden)]
    pub fn seed_history(&self, n: u64, start_ms: u64) -> Result<()> {
        private::ensure_private_dir(&self.paths.dir).map_err(|e| layout::file_error(e, crate::codes::DIR_SYMLINK))?;
        let mode = if self.key.is_some() { Mode::Hmac } else { Mode::Checksum };
        let mut head = self.genesis(start_ms, Event::Init, mode, "benchmark objective".into());
        self.finalize(&mut head, start_ms)?;
        let mut live = vec![head.clone()];
        let mut last: Option<SegmentRef> = None;
        for i in 1..n {
            let now = start_ms + i;
            let mut e = self.draft(&head, Event::Checkpoint, now);
            e.next_single_step = format!("step {i}");
            if live.len() >= layout::SEGMENT_ENTRIES {
                let index = last.as_ref().map(|r| r.index + 1).unwrap_or(1);
                let bytes = chain::render_file(&chain::segment_header(index), &live);
                private::ensure_private_dir(&self.paths.history).map_err(|e| layout::file_error(e, crate::codes::DIR_SYMLINK))?;
                private::write_atomic(&self.paths.segment(index), bytes.as_bytes())?;
                let r = SegmentRef {
                    index,
                    sha256: String::from(TaggedDigest::of(bytes.as_bytes())),
                    first_seq: live[0].entry_seq,
                    last_seq: head.entry_seq,
                };
                e.sealed_segment = Some(r.clone());
                last = Some(r);
                live.clear();
            }
            self.finalize(&mut e, now)?;
            live.push(e.clone());
            head = e;
        }
        self.write_manifest(&live)?;
        if std::fs::symlink_metadata(&self.paths.ledger).is_err() {
            self.save_ledger(&tokens::Ledger::default())?;
        }
        Ok(())
    }
}
