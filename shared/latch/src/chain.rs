//! The file layout and chain verification.
//!
//! `_manifest.md` (live) holds the newest entries (at most
//! [`SEGMENT_ENTRIES`](crate::layout::SEGMENT_ENTRIES)); older ones are sealed
//! in `history/segment-NNNNNN.md`, created exclusively and never modified.
//! The first entry after a seal records the sealed segment's file hash in
//! `sealed_segment`, so the hash chain covers every segment.

use crate::entry::{self, Entry, Mode, SegmentRef, ENTRY_SCHEMA, NONE};
use crate::integrity::HmacKey;
use crate::layout::{self, Paths};
use crate::time::rfc3339_ms;
use kijito_protocol::error::ErrorCode;
use kijito_protocol::error::{Error, Result};
use kijito_protocol::ids::{ActionHash, TaggedDigest};
use serde::Serialize;
use std::collections::HashSet;

pub const LIVE_HEADER: &str = "# memory-latch manifest\n\n\
Append-only, tamper-evident continuity record written by memory-latch.\n\
Do not edit by hand: every entry is re-rendered from its JSON payload and hashed on verify.\n\
Older entries are sealed in history/segment-NNNNNN.md.\n\n";

pub fn segment_header(index: u64) -> String {
    format!("# memory-latch history segment {index:06}\n\nSealed, append-only history written by memory-latch. Do not edit by hand.\n\n")
}

/// Render a whole file (live manifest or segment).
pub fn render_file(header: &str, entries: &[Entry]) -> String {
    let mut s = String::with_capacity(header.len() + entries.len() * 2048);
    s.push_str(header);
    for e in entries {
        s.push_str(&e.render());
    }
    s
}

/// One verification finding.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    pub code: ErrorCode,
    pub message: String,
    /// The entry concerned, when known.
    pub entry_seq: Option<u64>,
}

impl Finding {
    pub fn new(code: impl Into<ErrorCode>, message: impl Into<String>, entry_seq: Option<u64>) -> Finding {
        Finding { code: code.into(), message: message.into(), entry_seq }
    }
}

/// Entries parsed from one file plus what failed.
pub struct ParsedFile {
    pub entries: Vec<Entry>,
    /// Canonical payload of each entry (parallel to `entries`).
    pub canon: Vec<Vec<u8>>,
    pub findings: Vec<Finding>,
}

/// Parse a file: exact header, then entry blocks re-rendered byte for byte.
pub fn parse_file(bytes: &[u8], header: &str, location: &str) -> ParsedFile {
    let mut out = ParsedFile { entries: Vec::new(), canon: Vec::new(), findings: Vec::new() };
    let Ok(text) = std::str::from_utf8(bytes) else {
        out.findings.push(Finding::new(crate::codes::FILE_NOT_UTF8, format!("{location} is not UTF-8"), None));
        return out;
    };
    let Some(body) = text.strip_prefix(header) else {
        out.findings.push(Finding::new(
            crate::codes::MANIFEST_HEADER_INVALID,
            format!("{location} does not start with the expected header"),
            None,
        ));
        return out;
    };
    for (i, block) in entry::split_blocks(body).into_iter().enumerate() {
        match entry::parse_block_canonical(block) {
            Ok((e, c)) => {
                out.entries.push(e);
                out.canon.push(c);
            }
            Err(err) => {
                // Keep the payload when it parses, so one bad block does not
                // cascade into sequence findings for every later entry.
                let fence = "\n```json\n";
                let parsed = block.find(fence).and_then(|p| {
                    let rest = &block[p + fence.len()..];
                    rest.find('\n').and_then(|end| serde_json::from_str::<Entry>(&rest[..end]).ok())
                });
                let seq = parsed.as_ref().map(|e| e.entry_seq);
                out.findings.push(Finding::new(err.code, format!("{location} block {}: {}", i + 1, err.message), seq));
                if let Some(e) = parsed {
                    out.canon.push(e.canonical_payload());
                    out.entries.push(e);
                }
            }
        }
    }
    out
}

/// Walks entries in order and checks every rule of the chain.
pub struct Verifier<'k> {
    key: Option<&'k HmacKey>,
    prev: Option<(u64, String)>,
    genesis: bool,
    pub seen_hmac: bool,
    /// A checksum entry was seen (in an hmac latch: a downgrade).
    pub seen_checksum: bool,
    pub unverifiable: bool,
    pub count: u64,
    pub findings: Vec<Finding>,
    pub hashes: Option<HashSet<String>>,
    /// Merkle leaves (raw payload hashes, in order) when collected.
    pub leaves: Option<Vec<crate::merkle::Hash>>,
}

impl<'k> Verifier<'k> {
    /// A verifier for a chain that must start at entry 1.
    pub fn genesis(key: Option<&'k HmacKey>) -> Self {
        Verifier {
            key,
            prev: None,
            genesis: true,
            seen_hmac: false,
            seen_checksum: false,
            unverifiable: false,
            count: 0,
            findings: Vec::new(),
            hashes: None,
            leaves: None,
        }
    }

    /// A verifier that starts mid-chain (quick check before an append).
    pub fn mid_chain(key: Option<&'k HmacKey>) -> Self {
        Verifier { genesis: false, ..Verifier::genesis(key) }
    }

    fn push(&mut self, code: crate::codes::Code, msg: String, seq: u64) {
        self.findings.push(Finding::new(code, msg, Some(seq)));
    }

    pub fn check(&mut self, e: &Entry) {
        self.check_with(e, &e.canonical_payload());
    }

    /// Forget the previous entry: the next one is checked mid-chain (used
    /// when entries committed by a segment hash are skipped).
    pub fn resume_mid_chain(&mut self) {
        self.prev = None;
        self.genesis = false;
    }

    /// Check one entry given its canonical payload.
    pub fn check_with(&mut self, e: &Entry, canonical: &[u8]) {
        let seq = e.entry_seq;
        self.count += 1;
        if e.schema != ENTRY_SCHEMA {
            self.push(crate::codes::ENTRY_SCHEMA_INVALID, format!("entry {seq} has schema {:?}", e.schema), seq);
        }
        match self.prev.clone() {
            Some((ps, ph)) => {
                if seq != ps + 1 {
                    self.push(crate::codes::ENTRY_SEQ_GAP, format!("entry_seq {seq} follows {ps} (must increase by exactly 1)"), seq);
                }
                if e.prev_payload_hash != ph {
                    self.push(
                        crate::codes::CHAIN_BROKEN,
                        format!("entry {seq} prev_payload_hash does not match the previous entry's payload_hash"),
                        seq,
                    );
                }
            }
            None if self.genesis => {
                if seq != 1 || e.prev_payload_hash != NONE {
                    self.push(
                        crate::codes::CHAIN_ORIGIN_INVALID,
                        format!("the chain must start at entry 1 with prev_payload_hash none (found {seq})"),
                        seq,
                    );
                }
            }
            None => {
                if !TaggedDigest::is_valid(&e.prev_payload_hash) {
                    self.push(crate::codes::CHAIN_BROKEN, format!("entry {seq} has no valid prev_payload_hash"), seq);
                }
            }
        }
        if e.updated_at != rfc3339_ms(e.updated_at_ms) {
            self.push(crate::codes::ENTRY_TIME_INCONSISTENT, format!("entry {seq} updated_at does not match updated_at_ms"), seq);
        }
        // The action hash is typed: a malformed one does not parse
        // (`entry::parse_block`, the same code).
        if e.last_good_checkpoint != NONE && !TaggedDigest::is_valid(&e.last_good_checkpoint) {
            self.push(crate::codes::ENTRY_FIELD_INVALID, format!("entry {seq} has a malformed last_good_checkpoint"), seq);
        }
        if e.irreversible_action_pending != NONE && !e.irreversible_action_pending.starts_with("tok_") {
            self.push(
                crate::codes::ENTRY_FIELD_INVALID,
                format!("entry {seq} irreversible_action_pending must be a token id or none"),
                seq,
            );
        }
        let integ = &e.integrity;
        if !TaggedDigest::is_valid(&integ.payload_hash) || integ.verified_at.is_empty() {
            self.push(crate::codes::INTEGRITY_FIELD_MISSING, format!("entry {seq} has a missing or zeroed payload_hash/verified_at"), seq);
        } else if integ.payload_hash != String::from(TaggedDigest::of(canonical)) {
            self.push(crate::codes::PAYLOAD_HASH_MISMATCH, format!("entry {seq} payload_hash does not match its canonical payload"), seq);
        }
        match integ.mode {
            Mode::Checksum => {
                self.seen_checksum = true;
                if self.seen_hmac {
                    self.push(
                        crate::codes::INTEGRITY_DOWNGRADE,
                        format!("entry {seq} is checksum after hmac entries (downgrade refused)"),
                        seq,
                    );
                }
                if integ.hmac_signature != NONE {
                    self.push(crate::codes::INTEGRITY_FIELD_INVALID, format!("entry {seq} is checksum mode but carries a signature"), seq);
                }
            }
            Mode::Hmac => {
                if self.seen_checksum && !self.seen_hmac {
                    self.push(
                        crate::codes::INTEGRITY_DOWNGRADE,
                        format!("entry {seq} is hmac after checksum entries (a mixed chain; every entry of an hmac latch is keyed)"),
                        seq,
                    );
                }
                self.seen_hmac = true;
                if !integ.hmac_signature.strip_prefix("hmac-").is_some_and(TaggedDigest::is_valid) {
                    self.push(crate::codes::INTEGRITY_FIELD_MISSING, format!("entry {seq} has a missing or zeroed hmac_signature"), seq);
                } else if let Some(key) = self.key {
                    if !key.verify(canonical, &integ.hmac_signature) {
                        self.push(
                            crate::codes::HMAC_SIGNATURE_INVALID,
                            format!("entry {seq} hmac_signature does not verify with the key"),
                            seq,
                        );
                    }
                } else {
                    self.unverifiable = true;
                }
            }
        }
        if let Some(l) = self.leaves.as_mut() {
            let raw = integ.payload_hash.strip_prefix(TaggedDigest::PREFIX).and_then(crate::merkle::parse_hex).unwrap_or([0; 32]);
            l.push(raw);
        }
        if let Some(h) = self.hashes.as_mut() {
            h.insert(integ.payload_hash.clone());
        }
        self.prev = Some((seq, integ.payload_hash.clone()));
    }
}

/// The integrity mode a report ends in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ReportMode {
    Checksum,
    Hmac,
    /// hmac entries read without the key: never downgraded, never trusted.
    Unverifiable,
}

/// The head as wake-check and `status` need it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EntrySummary {
    pub seq: u64,
    pub event: entry::Event,
    pub updated_at: String,
    pub updated_at_ms: u64,
    pub boot_id: String,
    pub consent_state: entry::ConsentState,
    pub irreversible_action_pending: String,
    /// `none` when no consent is pending or authorized.
    #[serde(with = "entry::action_or_none")]
    pub action_hash: Option<ActionHash>,
    pub risk_level: entry::Risk,
    pub recovery_attempts: u32,
    pub silent_witness: bool,
    pub payload_hash: String,
    pub mode: Mode,
}

impl EntrySummary {
    pub fn of(e: &Entry) -> Self {
        EntrySummary {
            seq: e.entry_seq,
            event: e.event,
            updated_at: e.updated_at.clone(),
            updated_at_ms: e.updated_at_ms,
            boot_id: e.boot_id.clone(),
            consent_state: e.consent_state,
            irreversible_action_pending: e.irreversible_action_pending.clone(),
            action_hash: e.action_hash.clone(),
            risk_level: e.risk_level,
            recovery_attempts: e.recovery_attempts,
            silent_witness: e.silent_witness,
            payload_hash: e.integrity.payload_hash.clone(),
            mode: e.integrity.mode,
        }
    }
}

/// Result of a full verification.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct VerifyReport {
    pub schema: &'static str,
    /// `full` (every entry re-checked) or `sealed_by_hash` (sealed segments
    /// checked by their committed file hash plus their first and last entry).
    pub depth: Depth,
    pub trusted: bool,
    pub initialised: bool,
    pub mode: ReportMode,
    pub entries: u64,
    pub segments: u64,
    pub head: Option<EntrySummary>,
    pub findings: Vec<Finding>,
    pub silent_witness: bool,
    /// Non-failing observations (an interrupted seal, a key given to a
    /// checksum manifest).
    pub notes: Vec<String>,
    /// The RFC 6962 tree head over every entry (full verification only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tree_head: Option<TreeHead>,
}

pub const TREE_HEAD_SCHEMA: &str = "memory-latch.tree-head/v1";

/// An RFC 6962 tree head: `size` entries, `root` as 64 lowercase hex.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct TreeHead {
    pub schema: String,
    pub size: u64,
    pub root: String,
}

pub const REPORT_SCHEMA: &str = "memory-latch.verify/v1";

/// How deep a verification went.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Depth {
    Full,
    SealedByHash,
}

/// Full verification output plus what callers inside the crate need.
pub struct FullVerify {
    pub report: VerifyReport,
    pub head: Option<Entry>,
    pub hashes: HashSet<String>,
    /// A checksum entry was seen.
    pub saw_checksum: bool,
    /// Merkle leaves of every entry in order (full depth only).
    pub leaves: Vec<crate::merkle::Hash>,
}

fn expected_ref(index: u64, bytes: &[u8], entries: &[Entry]) -> SegmentRef {
    SegmentRef {
        index,
        sha256: String::from(TaggedDigest::of(bytes)),
        first_seq: entries.first().map(|e| e.entry_seq).unwrap_or(0),
        last_seq: entries.last().map(|e| e.entry_seq).unwrap_or(0),
    }
}

fn check_refs(v: &mut Verifier, entries: &[Entry], expected: &Option<SegmentRef>, location: &str) {
    for (i, e) in entries.iter().enumerate() {
        let want = if i == 0 { expected.as_ref() } else { None };
        if e.sealed_segment.as_ref() != want {
            v.findings.push(Finding::new(
                crate::codes::SEGMENT_REF_MISMATCH,
                format!("{location}: entry {} sealed_segment does not match the sealed history", e.entry_seq),
                Some(e.entry_seq),
            ));
        }
    }
}

/// List `history/` segment indices (sorted) with findings for anything odd.
pub fn list_segments(paths: &Paths, findings: &mut Vec<Finding>) -> Vec<u64> {
    match layout::check_latch_dir(&paths.history, "history directory") {
        Ok(None) => return Vec::new(),
        Ok(Some(())) => {}
        Err(e) => {
            findings.push(Finding::new(e.error_code(), e.message(), None));
            return Vec::new();
        }
    }
    let mut idx = Vec::new();
    match std::fs::read_dir(&paths.history) {
        Ok(rd) => {
            for ent in rd.take(10_000_000).flatten() {
                let name = ent.file_name();
                match name.to_str().and_then(layout::parse_segment_name) {
                    Some(n) => idx.push(n),
                    // A killed seal's temp file (`.segment-*.tmp-*`): never
                    // read as history; the next write under the lock removes
                    // it (docs/memory-latch.md, "Crashes").
                    None if name.to_str().is_some_and(|n| n.starts_with(".segment-") && kijito_files::private::is_temp_name(n)) => {}
                    None => findings.push(Finding::new(
                        crate::codes::HISTORY_UNEXPECTED_FILE,
                        format!("unexpected file in history/: {:?}", name),
                        None,
                    )),
                }
            }
        }
        Err(e) => findings.push(Finding::new(crate::codes::IO_FAILED, format!("cannot list history/: {e}"), None)),
    }
    idx.sort_unstable();
    for (i, n) in idx.iter().enumerate() {
        if *n != i as u64 + 1 {
            findings.push(Finding::new(crate::codes::SEGMENT_MISSING, format!("history segments are not contiguous at {}", i + 1), None));
            break;
        }
    }
    idx
}

/// Verify everything: layout, every segment, the live manifest.
pub fn verify_full(paths: &Paths, key: Option<&HmacKey>, key_given: bool, collect_hashes: bool) -> FullVerify {
    verify_with_depth(paths, key, key_given, collect_hashes, Depth::Full)
}

/// Verify the chain; with [`Depth::SealedByHash`] a sealed segment is checked
/// by the SHA-256 of its bytes (committed in the next entry's payload, so by
/// the chain up to the head), its header, its entry count, and its first and
/// last entries (hash, signature, sequence, links), without re-checking the
/// entries in between. Any byte change in a segment still fails the hash.
pub fn verify_with_depth(paths: &Paths, key: Option<&HmacKey>, key_given: bool, collect_hashes: bool, depth: Depth) -> FullVerify {
    let mut findings = Vec::new();
    let mut notes = Vec::new();
    let mut v = Verifier::genesis(key);
    if collect_hashes {
        v.hashes = Some(HashSet::new());
    }
    if depth == Depth::Full {
        v.leaves = Some(Vec::new());
    }
    let witness_marker = layout::is_symlink(&paths.witness) || std::fs::symlink_metadata(&paths.witness).is_ok();
    let mut initialised = false;
    let mut head = None;
    let mut segments = 0;
    match layout::check_latch_dir(&paths.dir, ".memory-latch") {
        Ok(None) => findings.push(Finding::new(crate::codes::NOT_INITIALISED, "no .memory-latch directory (run memory-latch init)", None)),
        Err(e) => findings.push(Finding::new(e.error_code(), e.message(), None)),
        Ok(Some(())) => {
            for (p, code) in [(&paths.lock, crate::codes::LOCK_SYMLINK), (&paths.ledger, crate::codes::LEDGER_SYMLINK)] {
                if let Err(e) = layout::refuse_symlink(p, code) {
                    findings.push(Finding::new(e.error_code(), e.message(), None));
                }
            }
            match layout::read_file(&paths.manifest, crate::codes::MANIFEST_SYMLINK) {
                Err(e) if e.code_as() == Some(crate::codes::FILE_MISSING) => {
                    findings.push(Finding::new(crate::codes::MANIFEST_MISSING, "the .memory-latch directory has no _manifest.md", None))
                }
                Err(e) => findings.push(Finding::new(e.error_code(), e.message(), None)),
                Ok(live_bytes) => {
                    initialised = true;
                    let live = parse_file(&live_bytes, LIVE_HEADER, "_manifest.md");
                    findings.extend(live.findings);
                    if live.entries.is_empty() {
                        findings.push(Finding::new(crate::codes::MANIFEST_EMPTY, "_manifest.md holds no entry", None));
                    }
                    let mut idx = list_segments(paths, &mut findings);
                    // A seal interrupted after the segment was created but
                    // before the live file was replaced leaves a segment that
                    // is byte-identical to the live entries: tolerated.
                    if let Some(&last) = idx.last() {
                        let prev_index = live.entries.first().and_then(|e| e.sealed_segment.as_ref()).map(|r| r.index).unwrap_or(0);
                        if prev_index + 1 == last {
                            if let Ok(b) = layout::read_file(&paths.segment(last), crate::codes::SEGMENT_SYMLINK) {
                                if b == render_file(&segment_header(last), &live.entries).as_bytes() {
                                    notes.push(format!("segment {last} is an interrupted seal identical to the live entries"));
                                    idx.pop();
                                }
                            }
                        }
                    }
                    segments = idx.len() as u64;
                    let mut prev_ref: Option<SegmentRef> = None;
                    for &i in &idx {
                        let loc = layout::segment_name(i);
                        match layout::read_file(&paths.segment(i), crate::codes::SEGMENT_SYMLINK) {
                            Err(e) => {
                                findings.push(Finding::new(e.error_code(), format!("{loc}: {}", e.message()), None));
                                prev_ref = None;
                            }
                            Ok(bytes) if depth == Depth::SealedByHash && !collect_hashes => {
                                prev_ref = shallow_segment(&mut v, &mut findings, i, &bytes, &prev_ref, &loc);
                            }
                            Ok(bytes) => {
                                let seg = parse_file(&bytes, &segment_header(i), &loc);
                                findings.extend(seg.findings);
                                if seg.entries.is_empty() {
                                    findings.push(Finding::new(crate::codes::SEGMENT_EMPTY, format!("{loc} holds no entry"), None));
                                }
                                check_refs(&mut v, &seg.entries, &prev_ref, &loc);
                                for (e, c) in seg.entries.iter().zip(&seg.canon) {
                                    v.check_with(e, c);
                                }
                                prev_ref = Some(expected_ref(i, &bytes, &seg.entries));
                            }
                        }
                    }
                    check_refs(&mut v, &live.entries, &prev_ref, "_manifest.md");
                    for (e, c) in live.entries.iter().zip(&live.canon) {
                        v.check_with(e, c);
                    }
                    head = live.entries.last().cloned();
                }
            }
        }
    }
    findings.extend(std::mem::take(&mut v.findings));
    let mode = if v.unverifiable {
        ReportMode::Unverifiable
    } else if v.seen_hmac {
        ReportMode::Hmac
    } else {
        ReportMode::Checksum
    };
    if v.unverifiable {
        notes.push("hmac entries cannot be verified without the key (--hmac-key-file or MEMORY_LATCH_HMAC_KEY_FILE)".into());
    }
    if key_given && !v.seen_hmac && initialised {
        notes.push("an hmac key was given but the manifest is in checksum mode".into());
    }
    let silent_witness = witness_marker || head.as_ref().is_some_and(|h: &Entry| h.silent_witness);
    let report = VerifyReport {
        schema: REPORT_SCHEMA,
        depth: if collect_hashes { Depth::Full } else { depth },
        trusted: findings.is_empty() && !v.unverifiable,
        initialised,
        mode,
        entries: v.count,
        segments,
        head: head.as_ref().map(EntrySummary::of),
        findings,
        silent_witness,
        notes,
        tree_head: None,
    };
    FullVerify { report, head, hashes: v.hashes.unwrap_or_default(), saw_checksum: v.seen_checksum, leaves: v.leaves.unwrap_or_default() }
}

/// Check a sealed segment by hash: header, entry count, first and last
/// entries fully; returns the ref the next file must record.
fn shallow_segment(
    v: &mut Verifier,
    findings: &mut Vec<Finding>,
    index: u64,
    bytes: &[u8],
    prev_ref: &Option<SegmentRef>,
    loc: &str,
) -> Option<SegmentRef> {
    let Some(body) = std::str::from_utf8(bytes).ok().and_then(|t| t.strip_prefix(segment_header(index).as_str())) else {
        findings.push(Finding::new(crate::codes::MANIFEST_HEADER_INVALID, format!("{loc} is not UTF-8 or has a wrong header"), None));
        v.resume_mid_chain();
        return None;
    };
    let count = body.matches("\n## Entry ").count() + usize::from(body.starts_with("## Entry "));
    let first_end = body.find("\n## Entry ").map(|p| p + 1).unwrap_or(body.len());
    let last_start = body.rfind("\n## Entry ").map(|p| p + 1).unwrap_or(0);
    let mut ends = Vec::new();
    for (n, block) in [&body[..first_end], &body[last_start..]].into_iter().enumerate() {
        if n == 1 && last_start == 0 {
            break; // a single-entry segment: first is last
        }
        match entry::parse_block_canonical(block) {
            Ok((e, c)) => {
                let want = if n == 0 { prev_ref.as_ref() } else { None };
                if e.sealed_segment.as_ref() != want {
                    findings.push(Finding::new(
                        crate::codes::SEGMENT_REF_MISMATCH,
                        format!("{loc}: entry {} sealed_segment does not match", e.entry_seq),
                        Some(e.entry_seq),
                    ));
                }
                if n == 1 {
                    v.resume_mid_chain();
                }
                v.check_with(&e, &c);
                ends.push(e);
            }
            Err(err) => {
                findings.push(Finding::new(err.code, format!("{loc}: {}", err.message), None));
                v.resume_mid_chain();
                return None;
            }
        }
    }
    let (Some(first), Some(last)) = (ends.first(), ends.last()) else {
        findings.push(Finding::new(crate::codes::SEGMENT_EMPTY, format!("{loc} holds no entry"), None));
        return None;
    };
    if last.entry_seq.checked_sub(first.entry_seq).map(|d| d + 1) != Some(count as u64) {
        findings.push(Finding::new(
            crate::codes::ENTRY_SEQ_GAP,
            format!("{loc} holds {count} entries but spans {}..{}", first.entry_seq, last.entry_seq),
            None,
        ));
    }
    v.count += (count as u64).saturating_sub(ends.len() as u64);
    Some(SegmentRef { index, sha256: String::from(TaggedDigest::of(bytes)), first_seq: first.entry_seq, last_seq: last.entry_seq })
}

/// The live state loaded for an append, after the quick check: the live
/// entries verified, plus the last sealed segment verified and hash-matched.
pub struct LiveState {
    pub entries: Vec<Entry>,
    /// The segment the live part follows (recomputed, not trusted blindly).
    pub last_segment: Option<SegmentRef>,
    /// Whether an interrupted seal left the next segment already on disk.
    pub pending_seal: bool,
    pub unverifiable: bool,
    pub saw_checksum: bool,
    pub saw_hmac: bool,
}

pub(crate) fn untrusted(findings: Vec<Finding>) -> Error {
    let detail = serde_json::to_value(&findings).unwrap_or_default();
    let first = findings.first().map(|f| format!("{}: {}", f.code, f.message)).unwrap_or_default();
    Error::new(
        crate::codes::UNTRUSTED,
        format!("the latch failed verification ({} findings; first: {first}); nothing written", findings.len()),
    )
    .with_detail(detail)
}

/// Quick verification before an append: constant in the history length.
pub fn load_live(paths: &Paths, key: Option<&HmacKey>) -> Result<LiveState> {
    let live_bytes = layout::read_file(&paths.manifest, crate::codes::MANIFEST_SYMLINK).map_err(|e| {
        if e.code_as() == Some(crate::codes::FILE_MISSING) {
            Error::new(crate::codes::NOT_INITIALISED, "no _manifest.md (run memory-latch init)")
        } else {
            e
        }
    })?;
    let live = parse_file(&live_bytes, LIVE_HEADER, "_manifest.md");
    let mut findings = live.findings;
    let Some(first) = live.entries.first() else {
        findings.push(Finding::new(crate::codes::MANIFEST_EMPTY, "_manifest.md holds no entry", None));
        return Err(untrusted(findings));
    };
    let mut v;
    let mut last_segment = None;
    match &first.sealed_segment {
        None => v = Verifier::genesis(key),
        Some(r) => {
            v = if r.index == 1 { Verifier::genesis(key) } else { Verifier::mid_chain(key) };
            match layout::read_file(&paths.segment(r.index), crate::codes::SEGMENT_SYMLINK) {
                Err(e) => findings.push(Finding::new(e.error_code(), e.message(), None)),
                Ok(bytes) => {
                    let loc = layout::segment_name(r.index);
                    let seg = parse_file(&bytes, &segment_header(r.index), &loc);
                    findings.extend(seg.findings);
                    for (i, (e, c)) in seg.entries.iter().zip(&seg.canon).enumerate() {
                        let ok = match (&e.sealed_segment, i) {
                            (None, 0) => r.index == 1,
                            (Some(p), 0) => p.index + 1 == r.index,
                            (s, _) => s.is_none(),
                        };
                        if !ok {
                            findings.push(Finding::new(
                                crate::codes::SEGMENT_REF_MISMATCH,
                                format!("{loc}: entry {} sealed_segment is wrong", e.entry_seq),
                                Some(e.entry_seq),
                            ));
                        }
                        v.check_with(e, c);
                    }
                    let want = expected_ref(r.index, &bytes, &seg.entries);
                    if &want != r {
                        findings.push(Finding::new(
                            crate::codes::SEGMENT_REF_MISMATCH,
                            format!("{loc} does not match the hash recorded in the live manifest"),
                            Some(first.entry_seq),
                        ));
                    }
                    last_segment = Some(want);
                }
            }
        }
    }
    for (i, (e, c)) in live.entries.iter().zip(&live.canon).enumerate() {
        if i > 0 && e.sealed_segment.is_some() {
            findings.push(Finding::new(
                crate::codes::SEGMENT_REF_MISMATCH,
                format!("entry {} has an unexpected sealed_segment", e.entry_seq),
                Some(e.entry_seq),
            ));
        }
        v.check_with(e, c);
    }
    findings.extend(std::mem::take(&mut v.findings));
    let next = last_segment.as_ref().map(|r| r.index + 1).unwrap_or(1);
    let mut pending_seal = false;
    if std::fs::symlink_metadata(paths.segment(next)).is_ok() {
        match layout::read_file(&paths.segment(next), crate::codes::SEGMENT_SYMLINK) {
            Ok(b) if b == render_file(&segment_header(next), &live.entries).as_bytes() => pending_seal = true,
            _ => findings.push(Finding::new(
                crate::codes::SEGMENT_UNREFERENCED,
                format!("history/{} is not referenced by the chain", layout::segment_name(next)),
                None,
            )),
        }
    }
    if !findings.is_empty() {
        return Err(untrusted(findings));
    }
    Ok(LiveState {
        entries: live.entries,
        last_segment,
        pending_seal,
        unverifiable: v.unverifiable,
        saw_checksum: v.seen_checksum,
        saw_hmac: v.seen_hmac,
    })
}
