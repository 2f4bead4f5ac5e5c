//! memory-latch: a local, append-only, tamper-evident continuity manifest,
//! consent tokens for irreversible actions, deterministic pre-execution
//! checks (gate), and a recovery protocol with Silent Witness.
//!
//! Pure core, I/O at the edges: every operation takes `now_ms`; the boot id
//! file and the hmac key file are injected through [`Config`]. See
//! docs/memory-latch.md for the formats and the threat model.
//!
//! | idea | module |
//! |---|---|
//! | paths, symlink/ownership checks | [`layout`] |
//! | entry schema, canonical payload, rendering | [`entry`] |
//! | file layout, segments, chain verification | [`chain`] |
//! | the manifest lock | [`lock`] |
//! | the head record outside the workspace (rollback, truncation, downgrade) | [`head`] |
//! | hmac key | [`integrity`] |
//! | consent tokens and ledger | [`tokens`] |
//! | the five gate checks | [`gate`] |
//! | recovery text, Silent Witness | [`recover`] |
//! | continuity-break phrases | [`detect`] |
//! | secret redaction | [`redact`] |

pub mod chain;
pub mod detect;
pub mod entry;
pub mod gate;
pub mod head;
pub mod integrity;
pub mod layout;
pub mod lock;
pub mod recover;
pub mod redact;
pub mod time;
pub mod tokens;

pub use chain::{Depth, EntrySummary, Finding, ReportMode, VerifyReport};
pub use entry::{ConsentState, Entry, Event, Mode, Risk};
pub use lock::LockProbe;
pub use tokens::{TokenState, TokenStatus};

use kijito_protocol::error::{Error, Result};
use kijito_files::private;
use chain::{LiveState, LIVE_HEADER};
use entry::{Decision, Governance, Integrity, ReseedRef, SegmentRef, Storage, NONE};
use integrity::HmacKey;
use layout::Paths;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The default boot id source.
pub const BOOT_ID_FILE: &str = "/proc/sys/kernel/random/boot_id";
/// Environment variable naming the hmac key file.
pub const HMAC_KEY_ENV: &str = "MEMORY_LATCH_HMAC_KEY_FILE";
/// Longest free-text field (characters) and list length.
pub const MAX_TEXT_CHARS: usize = 2000;
pub const MAX_LIST_ITEMS: usize = 32;
/// Decisions carried in an entry at most: composting keeps the final 3
/// (`governance.compost_keep_decisions`) in the manifest.
pub const MAX_DECISIONS: usize = 3;
/// Maximum bytes of an action file, intended or result file.
pub const MAX_ACTION_BYTES: usize = 64 * 1024;

/// How to open a latch.
#[derive(Debug, Clone)]
pub struct Config {
    pub workspace: PathBuf,
    /// The hmac key file, if one was named (flag or environment).
    pub hmac_key_file: Option<PathBuf>,
    /// Where the boot id is read (tests inject a fake file).
    pub boot_id_file: PathBuf,
    /// Where head records live, outside every workspace ([`head::default_dir`]).
    pub heads_dir: Option<PathBuf>,
}

impl Config {
    pub fn new(workspace: impl Into<PathBuf>) -> Config {
        Config { workspace: workspace.into(), hmac_key_file: None, boot_id_file: PathBuf::from(BOOT_ID_FILE), heads_dir: head::default_dir() }
    }
}

/// An opened latch (paths resolved, key loaded). Cheap; holds no lock.
#[derive(Debug)]
pub struct Latch {
    paths: Paths,
    key: Option<HmacKey>,
    key_named: bool,
    boot_id_file: PathBuf,
    heads_dir: Option<PathBuf>,
    governance: Governance,
}

/// The Silent Witness marker (`silent-witness.json`), written when the
/// chain itself cannot record it (a verification failure).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WitnessMarker {
    pub schema: String,
    pub entered_at_ms: u64,
    pub reason: String,
    pub findings: Vec<String>,
}

pub const WITNESS_SCHEMA: &str = "memory-latch.silent-witness/v1";

/// Input of `init`.
#[derive(Debug, Clone, Default)]
pub struct InitInput {
    pub objective: String,
    pub non_negotiables: Vec<String>,
    pub next_single_step: Option<String>,
    /// `--integrity hmac` was asked for explicitly.
    pub want_hmac: bool,
}

#[derive(Debug, Clone)]
pub struct InitOutcome {
    pub entry: Entry,
    /// Set when no integrity was configured at all (checksum fallback).
    pub notice: Option<String>,
}

/// What the UserPromptSubmit hook did with a standalone token message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum PromptOutcome {
    /// The user's message confirmed the consent token: authorized.
    Confirmed { token_id: String, action_hash: String, risk: Risk, entry_seq: u64 },
    /// High risk: the first confirmation; a second, separate standalone
    /// message with the same token is still needed.
    AwaitingReconfirmation { token_id: String, action_hash: String, entry_seq: u64 },
    /// The reseed token: the old chain is archived and a new one started.
    Reseeded { entry_seq: u64, old_chain_trusted: bool },
    /// The token matched but cannot be used (expired, used, locked,
    /// superseded, Silent Witness, latch untrusted).
    Refused { code: String, message: String },
    /// No live token matched: a wrong attempt (attempts left before lock).
    Wrong { attempts_left: u32 },
}

impl PromptOutcome {
    /// The additionalContext the hook gives the model.
    pub fn context(&self) -> String {
        match self {
            PromptOutcome::Confirmed { token_id, action_hash, risk, .. } => format!(
                "memory-latch: the USER confirmed consent token {token_id} ({} risk) for action {action_hash} with their own standalone message. The action is authorized once: run `memory-latch gate` with the same action file before acting.",
                risk.as_str()
            ),
            PromptOutcome::AwaitingReconfirmation { token_id, action_hash, .. } => format!(
                "memory-latch: the USER confirmed high-risk consent token {token_id} for action {action_hash}. High risk needs a second, separate message: ask the user to send the same token once more, alone. Do not act before that."
            ),
            PromptOutcome::Reseeded { entry_seq, old_chain_trusted } => format!(
                "memory-latch: the USER confirmed the reseed token: the old chain was archived (trusted: {old_chain_trusted}) and a new chain starts at entry {entry_seq}. Silent Witness is over; restate the objective with the user."
            ),
            PromptOutcome::Refused { code, message } => format!("memory-latch: the user's token was NOT accepted ({code}: {message})."),
            PromptOutcome::Wrong { attempts_left } => format!(
                "memory-latch: the user's message looks like a token but matches no live token ({attempts_left} attempt(s) left before every live token locks)."
            ),
        }
    }
}

/// Input of `checkpoint`: `None` keeps the previous value.
#[derive(Debug, Clone, Default)]
pub struct CheckpointInput {
    pub objective: Option<String>,
    pub non_negotiables: Option<Vec<String>>,
    pub blocked_by: Option<String>,
    pub next_single_step: Option<String>,
    pub known_state: Option<Vec<String>>,
    pub unknown_state: Option<Vec<String>>,
    pub decisions: Vec<String>,
    pub last_good_checkpoint: Option<String>,
    pub risk: Option<Risk>,
}

/// A freshly issued token (the raw token is shown once, never stored).
#[derive(Debug, Clone)]
pub struct Issued {
    pub token: String,
    pub record: tokens::TokenState,
    pub entry: Option<Entry>,
}

/// Status: the quick-verified head with composted decisions.
#[derive(Debug, Clone, Serialize)]
pub struct Status {
    pub schema: &'static str,
    pub head: EntrySummary,
    pub objective: String,
    pub non_negotiables: Vec<String>,
    pub next_single_step: String,
    pub blocked_by: String,
    pub known_state: Vec<String>,
    pub unknown_state: Vec<String>,
    pub last_good_checkpoint: String,
    /// Only the newest `compost_keep_decisions`.
    pub decisions: Vec<Decision>,
    pub silent_witness: bool,
    pub tokens: Vec<TokenState>,
}

fn read_boot_id(path: &Path) -> String {
    let Ok(bytes) = std::fs::read(path) else { return "unknown".into() };
    let text = String::from_utf8_lossy(&bytes[..bytes.len().min(128)]).trim().to_ascii_lowercase();
    if !text.is_empty() && text.len() <= 64 && text.bytes().all(|b| b.is_ascii_hexdigit() || b == b'-') {
        text
    } else {
        "unknown".into()
    }
}

/// Normalise free text: whitespace runs collapse to one space, trimmed, no
/// control characters, bounded, then redacted.
pub fn clean_text(text: &str, field: &str, allow_empty: bool) -> Result<String> {
    let collapsed = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if collapsed.chars().any(char::is_control) {
        return Err(Error::usage("latch_text_invalid", format!("{field} contains control characters")));
    }
    if collapsed.chars().count() > MAX_TEXT_CHARS {
        return Err(Error::usage("latch_text_invalid", format!("{field} is longer than {MAX_TEXT_CHARS} characters")));
    }
    if collapsed.is_empty() && !allow_empty {
        return Err(Error::usage("latch_text_invalid", format!("{field} must not be empty")));
    }
    Ok(redact::redact(&collapsed))
}

fn clean_list(items: &[String], field: &str) -> Result<Vec<String>> {
    if items.len() > MAX_LIST_ITEMS {
        return Err(Error::usage("latch_text_invalid", format!("{field} has more than {MAX_LIST_ITEMS} items")));
    }
    items.iter().map(|t| clean_text(t, field, false)).collect()
}

/// The canonical action summary: UTF-8, CRLF to LF, trailing whitespace
/// trimmed on each line, trailing blank lines dropped, one final LF.
pub fn canonical_action(bytes: &[u8]) -> Result<String> {
    if bytes.len() > MAX_ACTION_BYTES {
        return Err(Error::new("action_file_invalid", format!("the action file is larger than {MAX_ACTION_BYTES} bytes")));
    }
    let text = std::str::from_utf8(bytes).map_err(|_| Error::new("action_file_invalid", "the action file is not UTF-8"))?;
    let lines: Vec<&str> = text.split('\n').map(|l| l.trim_end()).collect();
    let mut out = lines.join("\n").trim_end().to_owned();
    if out.is_empty() {
        return Err(Error::new("action_file_invalid", "the action file is empty"));
    }
    out.push('\n');
    Ok(out)
}

/// `sha256:<hex>` of the canonical action summary.
pub fn action_hash(bytes: &[u8]) -> Result<String> {
    Ok(entry::sha256_tagged(canonical_action(bytes)?.as_bytes()))
}

fn witness_error(reason: &str) -> Error {
    Error::new(
        "silent_witness_active",
        format!("Silent Witness is active ({reason}); write and irreversible commands are refused until `memory-latch reseed` with a confirmed token"),
    )
}

impl Latch {
    /// Open a latch: canonicalise the workspace, load the key (if named and
    /// present). Does not require the latch to exist.
    pub fn open(config: &Config) -> Result<Latch> {
        let paths = Paths::new(&config.workspace)?;
        let key = match &config.hmac_key_file {
            Some(p) => integrity::load(p, &paths.root)?,
            None => None,
        };
        Ok(Latch {
            paths,
            key,
            key_named: config.hmac_key_file.is_some(),
            boot_id_file: config.boot_id_file.clone(),
            heads_dir: config.heads_dir.clone(),
            governance: Governance::default(),
        })
    }

    /// Use an in-memory key (benches and tests).
    pub fn with_key(mut self, key: HmacKey) -> Latch {
        self.key = Some(key);
        self.key_named = true;
        self
    }

    pub fn paths(&self) -> &Paths {
        &self.paths
    }

    pub fn has_key(&self) -> bool {
        self.key.is_some()
    }

    fn storage(&self) -> Storage {
        Storage {
            root: Paths::show(&self.paths.root),
            manifest_path: Paths::show(&self.paths.manifest),
            lock_path: Paths::show(&self.paths.lock),
            token_ledger_path: Paths::show(&self.paths.ledger),
        }
    }

    fn lock(&self) -> Result<lock::LockGuard> {
        match layout::check_latch_dir(&self.paths.dir, ".memory-latch")? {
            Some(()) => {}
            None => return Err(Error::new("latch_not_initialised", "no .memory-latch directory (run memory-latch init)")),
        }
        layout::refuse_symlink(&self.paths.manifest, "latch_manifest_symlink")?;
        layout::refuse_symlink(&self.paths.ledger, "latch_ledger_symlink")?;
        layout::check_latch_dir(&self.paths.history, "history directory")?;
        lock::acquire(&self.paths.lock, self.governance.lock_timeout_ms)
    }

    // ----- reading -------------------------------------------------------

    /// Full verification of the whole chain (every segment). Read-only.
    pub fn verify(&self) -> VerifyReport {
        self.full_verify(false).report
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

    // ----- the head record (outside the workspace) -----------------------

    /// Where this latch's head record lives (`None`: no state directory).
    pub fn head_record_path(&self) -> Option<PathBuf> {
        self.heads_dir.as_ref().map(|d| head::record_path(d, &self.paths.root))
    }

    /// The head record, if one exists.
    pub fn head_record(&self) -> Result<Option<head::HeadRecord>> {
        match self.head_record_path() {
            Some(p) => head::load(&p),
            None => Err(Error::new(head::codes::UNAVAILABLE, "no state directory for head records (set HOME, XDG_STATE_HOME or MEMORY_LATCH_HEADS_DIR)")),
        }
    }

    fn head_findings(&self, seen: &head::Seen) -> (Vec<Finding>, Vec<String>) {
        match self.head_record() {
            Ok(rec) => head::compare(rec.as_ref(), seen),
            Err(e) => (vec![Finding::new(e.code(), e.message(), None)], Vec::new()),
        }
    }

    /// Add the head-record comparison to a verification.
    fn apply_head(&self, fv: &mut chain::FullVerify) {
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

    /// Record `e` as the head, right after it was written to the manifest.
    fn record_head(&self, e: &Entry) -> Result<()> {
        let path = self.head_record_path().ok_or_else(|| {
            Error::new(head::codes::UNAVAILABLE, "no state directory for head records (set HOME, XDG_STATE_HOME or MEMORY_LATCH_HEADS_DIR)")
        })?;
        head::save(&path, &head::HeadRecord::of(&self.paths.root, e))
    }

    /// Write the live manifest, then the head record (every manifest write).
    fn write_manifest(&self, entries: &[Entry]) -> Result<()> {
        private::write_atomic(&self.paths.manifest, chain::render_file(LIVE_HEADER, entries).as_bytes())
            .map_err(|err| layout::file_error(err, "latch_manifest_symlink"))?;
        match entries.last() {
            Some(e) => self.record_head(e),
            None => Ok(()),
        }
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
        let bytes = layout::read_file(&self.paths.witness, "latch_witness_symlink")?;
        serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|e| Error::new("latch_witness_invalid", format!("silent-witness.json is invalid: {e}")))
    }

    /// The current state (quick verification: live part + last segment).
    pub fn status(&self, now_ms: u64) -> Result<Status> {
        layout::check_latch_dir(&self.paths.dir, ".memory-latch")?
            .ok_or_else(|| Error::new("latch_not_initialised", "no .memory-latch directory (run memory-latch init)"))?;
        let live = self.load_trusted_readonly()?;
        let Some(head) = live.entries.last() else { return Err(Error::new("manifest_empty", "no entry")) };
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
            tokens: self.tokens(now_ms)?,
        })
    }

    fn load_trusted_readonly(&self) -> Result<LiveState> {
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
                "latch_unverifiable",
                "the manifest holds hmac entries and no key was given (--hmac-key-file or MEMORY_LATCH_HMAC_KEY_FILE); refusing to trust or write it",
            ));
        }
        Ok(live)
    }

    /// Quick-verify for a write; an integrity failure enters Silent Witness.
    fn load_for_write(&self, now_ms: u64) -> Result<LiveState> {
        match self.load_trusted_readonly() {
            Err(e) if e.code() == "latch_untrusted" => {
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

    fn write_witness(&self, now_ms: u64, reason: &str, findings: Vec<String>) -> Result<()> {
        if self.witness_marker().ok().flatten().is_some() {
            return Ok(());
        }
        let marker = WitnessMarker { schema: WITNESS_SCHEMA.into(), entered_at_ms: now_ms, reason: reason.into(), findings };
        let bytes = serde_json::to_vec(&marker).map_err(|e| Error::new("latch_write_failed", e.to_string()))?;
        private::write_atomic(&self.paths.witness, &bytes).map_err(|e| layout::file_error(e, "latch_witness_symlink"))
    }

    /// Enter Silent Witness because the chain failed verification (writes the
    /// marker only; never appends to an untrusted chain).
    pub fn enter_silent_witness(&self, now_ms: u64, report: &VerifyReport) -> Result<()> {
        if report.mode == ReportMode::Unverifiable && report.findings.is_empty() {
            return Ok(());
        }
        let _guard = self.lock()?;
        self.write_witness(now_ms, "verification failed", report.findings.iter().map(|f| f.code.clone()).collect())
    }

    fn witness_active(&self, live: &LiveState) -> Result<Option<String>> {
        if let Some(m) = self.witness_marker()? {
            return Ok(Some(m.reason));
        }
        if live.entries.last().is_some_and(|h| h.silent_witness) {
            return Ok(Some("recovery attempts exhausted".into()));
        }
        Ok(None)
    }

    fn load_ledger(&self) -> Result<tokens::Ledger> {
        if std::fs::symlink_metadata(&self.paths.ledger).is_err() {
            layout::refuse_symlink(&self.paths.ledger, "latch_ledger_symlink")?;
            return Ok(tokens::Ledger::default());
        }
        let bytes = layout::read_file(&self.paths.ledger, "latch_ledger_symlink")?;
        tokens::parse_ledger(&bytes)
    }

    fn save_ledger(&self, ledger: &tokens::Ledger) -> Result<()> {
        let bytes = serde_json::to_vec_pretty(ledger).map_err(|e| Error::new("latch_write_failed", e.to_string()))?;
        private::write_atomic(&self.paths.ledger, &bytes).map_err(|e| layout::file_error(e, "latch_ledger_symlink"))
    }

    // ----- entries -------------------------------------------------------

    fn draft(&self, head: &Entry, event: Event, now_ms: u64) -> Entry {
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
        e.integrity = Integrity { mode: head.integrity.mode, payload_hash: String::new(), hmac_signature: NONE.into(), verified_at: String::new() };
        // Composting: retire decisions older than compost_retire_turns.
        let retire = self.governance.compost_retire_turns as u64;
        e.decisions.retain(|d| e.entry_seq.saturating_sub(d.seq) < retire);
        e
    }

    fn genesis(&self, now_ms: u64, event: Event, mode: Mode, objective: String) -> Entry {
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
            action_hash: NONE.into(),
            recovery_attempts: 0,
            risk_level: Risk::Low,
            silent_witness: false,
            details: Vec::new(),
            prev_payload_hash: NONE.into(),
            sealed_segment: None,
            reseeded_from: None,
            governance: self.governance.clone(),
            storage: self.storage(),
            integrity: Integrity { mode, payload_hash: String::new(), hmac_signature: NONE.into(), verified_at: String::new() },
        }
    }

    fn finalize(&self, e: &mut Entry, now_ms: u64) -> Result<()> {
        e.integrity.verified_at = time::rfc3339_ms(now_ms);
        e.integrity.hmac_signature = NONE.into();
        e.integrity.payload_hash = String::new();
        let payload = e.canonical_payload();
        if payload.is_empty() {
            return Err(Error::new("latch_write_failed", "cannot serialise the entry"));
        }
        if e.integrity.mode == Mode::Hmac {
            let key = self.key.as_ref().ok_or_else(|| Error::new("hmac_key_required", "this manifest is in hmac mode; the key is required to write"))?;
            e.integrity.hmac_signature = key.sign(&payload);
        }
        e.integrity.payload_hash = entry::sha256_tagged(&payload);
        Ok(())
    }

    /// Append `e` after the verified `live` state (caller holds the lock).
    fn commit(&self, live: LiveState, mut e: Entry, now_ms: u64) -> Result<Entry> {
        let head = live.entries.last().cloned().ok_or_else(|| Error::new("manifest_empty", "no entry"))?;
        if e.entry_seq != head.entry_seq + 1 || e.prev_payload_hash != head.integrity.payload_hash {
            return Err(Error::new("entry_seq_gap", "entry_seq must increase by exactly 1 on the verified head"));
        }
        let mut entries = live.entries;
        if entries.len() >= layout::SEGMENT_ENTRIES {
            let index = live.last_segment.as_ref().map(|r| r.index + 1).unwrap_or(1);
            let bytes = chain::render_file(&chain::segment_header(index), &entries);
            if !live.pending_seal {
                private::ensure_private_dir(&self.paths.history).map_err(|e| layout::file_error(e, "latch_dir_symlink"))?;
                private::create_new(&self.paths.segment(index), bytes.as_bytes()).map_err(|e| layout::file_error(e, "latch_segment_symlink"))?;
            }
            e.sealed_segment = Some(SegmentRef {
                index,
                sha256: entry::sha256_tagged(bytes.as_bytes()),
                first_seq: entries.first().map(|x| x.entry_seq).unwrap_or(0),
                last_seq: head.entry_seq,
            });
            entries.clear();
        }
        self.finalize(&mut e, now_ms)?;
        entries.push(e.clone());
        self.write_manifest(&entries)?;
        Ok(e)
    }

    /// Lock, quick-verify, refuse in Silent Witness, build and append.
    fn append_with(&self, now_ms: u64, event: Event, build: impl FnOnce(&mut Entry, &Entry) -> Result<()>) -> Result<Entry> {
        let _guard = self.lock()?;
        let live = self.load_for_write(now_ms)?;
        if let Some(reason) = self.witness_active(&live)? {
            return Err(witness_error(&reason));
        }
        let head = live.entries.last().cloned().ok_or_else(|| Error::new("manifest_empty", "no entry"))?;
        let mut e = self.draft(&head, event, now_ms);
        build(&mut e, &head)?;
        self.commit(live, e, now_ms)
    }

    // ----- commands ------------------------------------------------------

    /// Create `.memory-latch` and the first entry.
    pub fn init(&self, now_ms: u64, input: &InitInput) -> Result<InitOutcome> {
        if (input.want_hmac || self.key_named) && self.key.is_none() {
            return Err(Error::new(
                "hmac_key_missing",
                "hmac was requested (--integrity hmac, --hmac-key-file or MEMORY_LATCH_HMAC_KEY_FILE) but the key file does not exist; nothing written (no silent fallback to checksum)",
            ));
        }
        layout::check_latch_dir(&self.paths.dir, ".memory-latch")?;
        private::ensure_private_dir(&self.paths.dir).map_err(|e| layout::file_error(e, "latch_dir_symlink"))?;
        let _guard = self.lock()?;
        if std::fs::symlink_metadata(&self.paths.manifest).is_ok() || std::fs::symlink_metadata(&self.paths.history).is_ok() {
            return Err(Error::new("latch_already_initialised", "this workspace already has a memory-latch manifest"));
        }
        if let Some(rec) = self.head_record()? {
            return Err(Error::new(
                "latch_head_record_exists",
                format!(
                    "a head record for this workspace names entry {}: its latch was deleted; a fresh init would hide that. A person decides: remove {} by hand, then init",
                    rec.entry_seq,
                    self.head_record_path().map(|p| p.display().to_string()).unwrap_or_default()
                ),
            ));
        }
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
            if let Some(l) = &input.known_state {
                e.known_state = clean_list(l, "known")?;
            }
            if let Some(l) = &input.unknown_state {
                e.unknown_state = clean_list(l, "unknown")?;
            }
            if let Some(c) = &input.last_good_checkpoint {
                if !entry::is_tagged_digest(c, "sha256") {
                    return Err(Error::usage("latch_checkpoint_invalid", "--last-good-checkpoint must be sha256:<64 lowercase hex>"));
                }
                e.last_good_checkpoint = c.clone();
            }
            if let Some(r) = input.risk {
                e.risk_level = r;
            }
            for d in clean_list(&input.decisions, "decision")? {
                e.decisions.push(Decision { seq: e.entry_seq, text: d });
            }
            let excess = e.decisions.len().saturating_sub(MAX_DECISIONS);
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

    /// Issue a consent token bound to the action file's hash.
    pub fn consent_request(&self, now_ms: u64, action_bytes: &[u8], summary: &str, risk: Risk) -> Result<Issued> {
        let hash = action_hash(action_bytes)?;
        let summary = clean_text(summary, "summary", false)?;
        let summary: String = summary.chars().take(300).collect();
        let _guard = self.lock()?;
        let live = self.load_for_write(now_ms)?;
        if let Some(reason) = self.witness_active(&live)? {
            return Err(witness_error(&reason));
        }
        let mut ledger = self.load_ledger()?;
        let ttl = self.governance.token_ttl_minutes as u64 * 60_000;
        let (token, rec) = ledger.issue(tokens::Purpose::Consent, &hash, risk, &summary, now_ms, ttl);
        self.save_ledger(&ledger)?;
        let head = live.entries.last().cloned().ok_or_else(|| Error::new("manifest_empty", "no entry"))?;
        let mut e = self.draft(&head, Event::ConsentRequest, now_ms);
        e.consent_state = ConsentState::Pending;
        e.irreversible_action_pending = rec.id.clone();
        e.action_hash = hash;
        e.risk_level = risk;
        e.details = vec![format!("consent requested ({}): {summary}", risk.as_str())];
        let entry = self.commit(live, e, now_ms)?;
        Ok(Issued { token, record: rec.state(now_ms), entry: Some(entry) })
    }

    /// A tool call may never confirm: consent comes only from the user's own
    /// message through the UserPromptSubmit hook ([`Latch::user_prompt`]).
    pub fn consent_confirm_from_tool(&self) -> Result<Entry> {
        Err(Error::new(
            "consent_requires_user_message",
            "consent is confirmed only by the user's own standalone message (the UserPromptSubmit hook), never by a command; ask the user to send the token as their whole message",
        ))
    }

    /// The UserPromptSubmit hook's entry point: when the user's prompt is,
    /// after trimming, exactly one token (case-insensitive, standalone),
    /// confirm it. `Ok(None)` when the prompt is not a token or this
    /// workspace has no latch (nothing to do, nothing counted).
    pub fn user_prompt(&self, now_ms: u64, prompt: &str) -> Result<Option<PromptOutcome>> {
        let Ok(token) = tokens::standalone_token(prompt) else { return Ok(None) };
        if layout::check_latch_dir(&self.paths.dir, ".memory-latch")?.is_none() {
            return Ok(None);
        }
        let _guard = self.lock()?;
        let mut ledger = self.load_ledger()?;
        let refused = |code: &str, message: &str| Ok(Some(PromptOutcome::Refused { code: code.into(), message: message.into() }));
        let Some(idx) = ledger.tokens.iter().position(|t| t.matches(&token)) else {
            let attempts_left = ledger.wrong_attempt(now_ms);
            self.save_ledger(&ledger)?;
            return Ok(Some(PromptOutcome::Wrong { attempts_left }));
        };
        match ledger.tokens[idx].status(now_ms) {
            TokenStatus::Used => return refused("consent_token_replayed", "that token was already used (single use)"),
            TokenStatus::Expired => return refused("consent_token_expired", "that token has expired; request consent again"),
            TokenStatus::Locked => return refused("consent_token_locked", "that token is locked after too many wrong attempts; request consent again"),
            TokenStatus::Live => {}
        }
        if ledger.tokens[idx].purpose == tokens::Purpose::Reseed {
            return match self.reseed_locked(now_ms, &mut ledger, idx) {
                Ok(e) => Ok(Some(PromptOutcome::Reseeded {
                    entry_seq: e.entry_seq,
                    old_chain_trusted: e.reseeded_from.as_ref().is_some_and(|r| r.old_chain_trusted),
                })),
                Err(e) => refused(e.code(), e.message()),
            };
        }
        let live = match self.load_for_write(now_ms) {
            Ok(l) => l,
            Err(e) => return refused(e.code(), e.message()),
        };
        if let Some(reason) = self.witness_active(&live)? {
            return refused("silent_witness_active", &reason);
        }
        let head = live.entries.last().cloned().ok_or_else(|| Error::new("manifest_empty", "no entry"))?;
        let rec = &mut ledger.tokens[idx];
        if head.irreversible_action_pending != rec.id || head.action_hash != rec.action_hash {
            return refused("consent_token_superseded", "a newer consent request (or a changed action) replaced this token");
        }
        if head.consent_state == ConsentState::Authorized {
            return refused("consent_already_confirmed", "this token is already confirmed");
        }
        let high = rec.risk == Risk::High;
        let first = rec.confirmed_at_ms.is_none();
        if first {
            rec.confirmed_at_ms = Some(now_ms);
        } else {
            rec.reconfirmed_at_ms = Some(now_ms);
        }
        let authorized = !high || !first;
        let (id, hash, risk) = (rec.id.clone(), rec.action_hash.clone(), rec.risk);
        self.save_ledger(&ledger)?;
        let mut e = self.draft(&head, Event::ConsentConfirm, now_ms);
        e.consent_state = if authorized { ConsentState::Authorized } else { ConsentState::Pending };
        e.irreversible_action_pending = id.clone();
        e.action_hash = hash.clone();
        e.details = vec![match (high, first) {
            (false, _) => "consent confirmed by the user's standalone message".to_owned(),
            (true, true) => "high risk: first confirmation by the user's standalone message; a second separate message is required".to_owned(),
            (true, false) => "high risk: reconfirmed by a second, separate standalone user message".to_owned(),
        }];
        let entry = self.commit(live, e, now_ms)?;
        Ok(Some(if authorized {
            PromptOutcome::Confirmed { token_id: id, action_hash: hash, risk, entry_seq: entry.entry_seq }
        } else {
            PromptOutcome::AwaitingReconfirmation { token_id: id, action_hash: hash, entry_seq: entry.entry_seq }
        }))
    }

    /// Run the five deterministic checks; a pass consumes the authorization.
    pub fn gate(&self, now_ms: u64, input: &gate::GateInput) -> Result<gate::GateReport> {
        gate::run(self, now_ms, input)
    }

    /// One recovery attempt (or Silent Witness when attempts are exhausted
    /// or the chain fails verification).
    pub fn recover(&self, now_ms: u64) -> Result<recover::RecoverOutcome> {
        recover::run(self, now_ms)
    }

    /// Issue a reseed token (only in Silent Witness), bound to the current
    /// manifest bytes.
    pub fn reseed_request(&self, now_ms: u64) -> Result<Issued> {
        let _guard = self.lock()?;
        let reason = self.silent_witness_reason()?.ok_or_else(|| Error::new("reseed_not_needed", "Silent Witness is not active; reseed is refused"))?;
        let state = self.state_hash()?;
        let mut ledger = self.load_ledger()?;
        let ttl = self.governance.token_ttl_minutes as u64 * 60_000;
        let summary = clean_text(&format!("reseed: archive the current chain and start a new one ({reason})"), "summary", false)?;
        let (token, rec) = ledger.issue(tokens::Purpose::Reseed, &state, Risk::High, &summary, now_ms, ttl);
        self.save_ledger(&ledger)?;
        Ok(Issued { token, record: rec.state(now_ms), entry: None })
    }

    /// Silent Witness reason from the marker or a trusted head (no lock).
    pub fn silent_witness_reason(&self) -> Result<Option<String>> {
        if let Some(m) = self.witness_marker()? {
            return Ok(Some(m.reason));
        }
        match chain::load_live(&self.paths, self.key.as_ref()) {
            Ok(live) => self.witness_active(&live),
            Err(_) => Ok(None),
        }
    }

    fn state_hash(&self) -> Result<String> {
        match layout::read_file(&self.paths.manifest, "latch_manifest_symlink") {
            Ok(b) => Ok(entry::sha256_tagged(&b)),
            Err(e) if e.code() == "latch_file_missing" => Ok(entry::sha256_tagged(b"")),
            Err(e) => Err(e),
        }
    }

    /// Leave Silent Witness with the reseed token at `idx`, confirmed by the
    /// user's message (caller holds the lock): archive the old chain and
    /// start a new one recording the old head's hash.
    fn reseed_locked(&self, now_ms: u64, ledger: &mut tokens::Ledger, idx: usize) -> Result<Entry> {
        if self.silent_witness_reason()?.is_none() {
            return Err(Error::new("reseed_not_needed", "Silent Witness is not active; reseed is refused"));
        }
        let state = self.state_hash()?;
        let rec = &mut ledger.tokens[idx];
        if rec.action_hash != state {
            return Err(Error::new("consent_action_changed", "the manifest changed since the reseed token was issued"));
        }
        rec.used_at_ms = Some(now_ms);
        rec.confirmed_at_ms = Some(now_ms);
        self.save_ledger(ledger)?;
        let full = self.full_verify(false);
        let trusted = full.report.trusted;
        let old_head = full.head;
        // Archive the old chain.
        let name = format!("chain-{}-{}", now_ms, kijito_files::random::hex(4));
        private::ensure_private_dir(&self.paths.archive).map_err(|e| layout::file_error(e, "latch_dir_symlink"))?;
        let dest = self.paths.archive.join(&name);
        private::ensure_private_dir(&dest).map_err(|e| layout::file_error(e, "latch_dir_symlink"))?;
        for (from, to) in [(&self.paths.manifest, dest.join(layout::MANIFEST)), (&self.paths.history, dest.join(layout::HISTORY))] {
            if std::fs::symlink_metadata(from).is_ok() {
                std::fs::rename(from, &to).map_err(|e| Error::new("latch_write_failed", format!("cannot archive {}: {e}", from.display())))?;
            }
        }
        private::fsync_dir(&dest)?;
        private::fsync_dir(&self.paths.dir)?;
        private::remove_owned(&self.paths.witness).map_err(|e| layout::file_error(e, "latch_witness_symlink"))?;
        let mode = if self.key.is_some() { Mode::Hmac } else { Mode::Checksum };
        let objective = match &old_head {
            Some(h) if trusted => h.objective.clone(),
            _ => "restate the objective: the previous chain failed verification".to_owned(),
        };
        let mut e = self.genesis(now_ms, Event::Reseed, mode, objective);
        if let (true, Some(h)) = (trusted, &old_head) {
            e.non_negotiables = h.non_negotiables.clone();
            e.known_state = h.known_state.clone();
            e.unknown_state = h.unknown_state.clone();
            e.next_single_step = h.next_single_step.clone();
        }
        e.reseeded_from = Some(ReseedRef {
            old_head_payload_hash: old_head.as_ref().map(|h| h.integrity.payload_hash.clone()).unwrap_or_else(|| NONE.into()),
            old_head_seq: old_head.as_ref().map(|h| h.entry_seq).unwrap_or(0),
            old_manifest_sha256: state,
            old_chain_trusted: trusted,
            archive: format!("{}/{}", layout::ARCHIVE, name),
        });
        e.details = vec!["reseeded from a confirmed user token; the old chain is archived".into()];
        self.finalize(&mut e, now_ms)?;
        self.write_manifest(std::slice::from_ref(&e))?;
        Ok(e)
    }

    /// Benchmarks and tests only: write a valid history of `n` entries
    /// (init plus checkpoints) directly, one file write per sealed segment.
    #[doc(hidden)]
    pub fn seed_history(&self, n: u64, start_ms: u64) -> Result<()> {
        private::ensure_private_dir(&self.paths.dir).map_err(|e| layout::file_error(e, "latch_dir_symlink"))?;
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
                private::ensure_private_dir(&self.paths.history).map_err(|e| layout::file_error(e, "latch_dir_symlink"))?;
                private::write_atomic(&self.paths.segment(index), bytes.as_bytes())?;
                let r = SegmentRef {
                    index,
                    sha256: entry::sha256_tagged(bytes.as_bytes()),
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

    pub(crate) fn full_verify(&self, hashes: bool) -> chain::FullVerify {
        let mut fv = chain::verify_full(&self.paths, self.key.as_ref(), self.key_named, hashes);
        self.apply_head(&mut fv);
        fv
    }

    pub(crate) fn governance(&self) -> &Governance {
        &self.governance
    }

    pub(crate) fn ledger(&self) -> Result<tokens::Ledger> {
        self.load_ledger()
    }

    pub(crate) fn store_ledger(&self, ledger: &tokens::Ledger) -> Result<()> {
        self.save_ledger(ledger)
    }

    pub(crate) fn locked(&self) -> Result<lock::LockGuard> {
        self.lock()
    }

    pub(crate) fn live_for_write(&self, now_ms: u64) -> Result<LiveState> {
        self.load_for_write(now_ms)
    }

    pub(crate) fn witness_reason_for(&self, live: &LiveState) -> Result<Option<String>> {
        self.witness_active(live)
    }

    pub(crate) fn mark_witness(&self, now_ms: u64, reason: &str, findings: Vec<String>) -> Result<()> {
        self.write_witness(now_ms, reason, findings)
    }

    pub(crate) fn new_draft(&self, head: &Entry, event: Event, now_ms: u64) -> Entry {
        self.draft(head, event, now_ms)
    }

    pub(crate) fn commit_entry(&self, live: LiveState, e: Entry, now_ms: u64) -> Result<Entry> {
        self.commit(live, e, now_ms)
    }
}
