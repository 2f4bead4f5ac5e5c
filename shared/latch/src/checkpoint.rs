//! Checkpoints: the chain's RFC 6962 tree head as a c2sp.org/tlog-checkpoint
//! note (origin, size, base64 root), unsigned or signed with the user's
//! Ed25519 key ([`crate::sign`]), and the consistency check from the last
//! checkpoint to the chain now.
//!
//! Where they are kept: outside the workspace, beside the head record
//! (`<heads dir>/<sha256 of the canonical workspace path>.checkpoints.json`,
//! owner-only, atomic): the latest checkpoint (written at every seal,
//! unsigned, and by `checkpoint --sign`) and the latest signed one. Each
//! saved checkpoint also carries the compact range of its first `size - 1`
//! leaves and its last leaf (the payload hash of entry `size`); both are
//! checked by folding them to the checkpoint's root, so they are as
//! trustworthy as the root. With them the check at wake is O(log n) plus the
//! entries written since the checkpoint: the chain's entry `size` must be the
//! checkpoint's last leaf (its payload hash commits to every earlier entry
//! through `prev_payload_hash`), the entries after it must chain to it, and
//! the RFC 6962 consistency proof from the checkpoint to the tree now
//! (produced from the compact range and the new leaves only) must verify.

use crate::chain::{self, Finding, TreeHead, Verifier};
use crate::entry::Entry;
use crate::merkle::{self, Frontier, Hash};
use crate::sign::{self, Note, SigningKey};
use crate::{head, layout, Latch, VerifyReport};
use ct_codecs::{Base64, Decoder, Encoder};
use kijito_files::private;
use kijito_protocol::error::{Error, Result};
use kijito_protocol::ids::TaggedDigest;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// Origin line prefix; the rest is the first 32 hex of entry 1's payload
/// hash (a reseed starts a new chain, so a new origin).
pub const ORIGIN_PREFIX: &str = "kijito-qa/memory-latch/";
/// The public key `verify` uses when `--public-key` is not given.
pub const PUBLIC_KEY_ENV: &str = "MEMORY_LATCH_PUBLIC_KEY_FILE";
pub const STATE_SCHEMA: &str = "memory-latch.checkpoints/v1";
pub const SAVED_SCHEMA: &str = "memory-latch.checkpoint/v1";
/// Largest checkpoint file or note read.
pub const MAX_NOTE_BYTES: usize = 16 * 1024;
const MAX_STATE_BYTES: u64 = 64 * 1024;
/// Most segment files walked back to reach a checkpoint (2^20 * 128 entries).
const MAX_SEGMENTS_BACK: usize = 1 << 20;

/// The origin of the chain whose entry 1 has payload hash `genesis_leaf`.
pub fn origin_of(genesis_leaf: &Hash) -> String {
    format!("{ORIGIN_PREFIX}{}", &merkle::hex(genesis_leaf)[..32])
}

/// A checkpoint body (c2sp.org/tlog-checkpoint).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checkpoint {
    pub origin: String,
    pub size: u64,
    pub root: Hash,
}

impl Checkpoint {
    /// `<origin>\n<size>\n<base64 root>\n`.
    pub fn body(&self) -> String {
        format!("{}\n{}\n{}\n", self.origin, self.size, Base64::encode_to_string(self.root).unwrap_or_default())
    }

    /// Parse a checkpoint body (extension lines after the root are allowed
    /// by the spec and ignored here).
    pub fn parse_body(text: &str) -> Result<Checkpoint> {
        let bad = |why: &str| Error::new(crate::codes::CHECKPOINT_FILE_INVALID, format!("not a checkpoint: {why}"));
        let mut lines = text.lines();
        let origin = lines.next().filter(|o| !o.is_empty() && !o.chars().any(char::is_whitespace)).ok_or_else(|| bad("no origin line"))?;
        let size_line = lines.next().ok_or_else(|| bad("no size line"))?;
        if size_line.is_empty()
            || size_line.len() > 20
            || !size_line.bytes().all(|b| b.is_ascii_digit())
            || (size_line.len() > 1 && size_line.starts_with('0'))
        {
            return Err(bad("the size is not a decimal without leading zeros"));
        }
        let size: u64 = size_line.parse().map_err(|_| bad("the size is out of range"))?;
        let root_line = lines.next().ok_or_else(|| bad("no root hash line"))?;
        let raw = Base64::decode_to_vec(root_line, None).map_err(|_| bad("the root hash is not base64"))?;
        let root: Hash = raw.try_into().map_err(|_| bad("the root hash is not 32 bytes"))?;
        if Base64::encode_to_string(root).ok().as_deref() != Some(root_line) {
            return Err(bad("the root hash is not canonical base64"));
        }
        if lines.any(str::is_empty) {
            return Err(bad("an empty extension line"));
        }
        if size == 0 {
            return Err(bad("an empty tree"));
        }
        Ok(Checkpoint { origin: origin.to_owned(), size, root })
    }

    pub fn tree_head(&self) -> TreeHead {
        TreeHead { schema: chain::TREE_HEAD_SCHEMA.into(), size: self.size, root: merkle::hex(&self.root) }
    }
}

/// A checkpoint file: the note and the checkpoint in its text.
#[derive(Debug, Clone)]
pub struct CheckpointNote {
    pub note: Note,
    pub checkpoint: Checkpoint,
}

/// Parse a checkpoint note (signed or not).
pub fn parse_note(text: &str) -> Result<CheckpointNote> {
    if text.len() > MAX_NOTE_BYTES {
        return Err(Error::new(crate::codes::CHECKPOINT_FILE_INVALID, format!("the checkpoint is larger than {MAX_NOTE_BYTES} bytes")));
    }
    let note = Note::parse(text)?;
    let checkpoint = Checkpoint::parse_body(&note.text)?;
    Ok(CheckpointNote { note, checkpoint })
}

/// One saved checkpoint with what makes the check at wake cheap.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Saved {
    pub schema: String,
    /// `seal` (written by the seal, unsigned) or `signed` (`checkpoint --sign`).
    pub reason: String,
    /// The whole note (the checkpoint body, and the signature line when signed).
    pub note: String,
    /// The signing key's name when signed.
    pub signed_by: Option<String>,
    pub size: u64,
    /// The root, 64 hex (the same as in the note).
    pub root: String,
    /// The payload hash of entry `size` (64 hex).
    pub last_leaf: String,
    /// The compact range of entries `1..size-1` (64 hex each, largest subtree first).
    pub prefix_frontier: Vec<String>,
    pub written_at_ms: u64,
}

impl Saved {
    fn build(origin: &str, prefix: &Frontier, last_leaf: Hash, now_ms: u64, key: Option<&SigningKey>) -> Saved {
        let mut full = prefix.clone();
        full.push(&last_leaf);
        let cp = Checkpoint { origin: origin.to_owned(), size: full.size(), root: full.root() };
        let body = cp.body();
        Saved {
            schema: SAVED_SCHEMA.into(),
            reason: if key.is_some() { "signed" } else { "seal" }.into(),
            note: match key {
                Some(k) => k.sign_note(&body),
                None => body,
            },
            signed_by: key.map(|k| k.name().to_owned()),
            size: cp.size,
            root: merkle::hex(&cp.root),
            last_leaf: merkle::hex(&last_leaf),
            prefix_frontier: prefix.nodes().iter().map(merkle::hex).collect(),
            written_at_ms: now_ms,
        }
    }

    /// Check it: the note parses and names this size and root, and the
    /// compact range plus the last leaf fold to that root. Returns the
    /// checkpoint, the compact range of all `size` leaves and the last leaf.
    pub fn check(&self) -> Result<(Checkpoint, Frontier, Hash)> {
        let bad = |why: &str| Error::new(crate::codes::CHECKPOINT_STATE_INVALID, format!("the saved checkpoint is invalid: {why}"));
        let parsed = parse_note(&self.note).map_err(|e| bad(e.message()))?;
        let cp = parsed.checkpoint;
        if self.schema != SAVED_SCHEMA || cp.size != self.size || merkle::hex(&cp.root) != self.root {
            return Err(bad("its note does not match its size and root"));
        }
        let nodes: Option<Vec<Hash>> = self.prefix_frontier.iter().map(|h| merkle::parse_hex(h)).collect();
        let last = merkle::parse_hex(&self.last_leaf).ok_or_else(|| bad("malformed last leaf"))?;
        let mut f = nodes.and_then(|n| Frontier::from_parts(cp.size - 1, n)).ok_or_else(|| bad("malformed compact range"))?;
        f.push(&last);
        if f.root() != cp.root {
            return Err(bad("its compact range does not fold to its root"));
        }
        Ok((cp, f, last))
    }
}

/// The checkpoint state file outside the workspace.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct State {
    pub schema: String,
    pub latest: Option<Saved>,
    pub latest_signed: Option<Saved>,
}

/// The result of checking the chain against the latest saved checkpoint.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Consistency {
    pub consistent: bool,
    pub from_size: u64,
    pub to_size: u64,
    pub from_root: String,
    /// The tree head now (when the chain reaches the checkpoint).
    pub to_root: Option<String>,
    /// Hashes in the RFC 6962 consistency proof that was checked.
    pub proof_hashes: usize,
    pub signed_by: Option<String>,
    pub message: String,
}

fn raw_leaf(e: &Entry) -> Option<Hash> {
    e.integrity.payload_hash.strip_prefix(TaggedDigest::PREFIX).and_then(merkle::parse_hex)
}

fn state_error(e: Error) -> Error {
    Error::new(crate::codes::CHECKPOINT_STATE_INVALID, format!("{} ({})", e.message(), e.code()))
}

impl Latch {
    /// Where this latch's checkpoints are kept (`None`: no state directory).
    pub fn checkpoint_state_path(&self) -> Option<PathBuf> {
        self.head_record_path().map(|p| p.with_extension("checkpoints.json"))
    }

    /// The saved checkpoints, if any.
    pub fn checkpoint_state(&self) -> Result<Option<State>> {
        let path = self.checkpoint_state_path().ok_or_else(|| {
            Error::new(head::codes::UNAVAILABLE, "no state directory for checkpoints (set HOME, XDG_STATE_HOME or MEMORY_LATCH_HEADS_DIR)")
        })?;
        if std::fs::symlink_metadata(&path).is_err() {
            return Ok(None);
        }
        let rules = private::FileRules { owner_only: true, min_bytes: 2, max_bytes: MAX_STATE_BYTES };
        let (bytes, _) = private::read_checked(&path, rules).map_err(state_error)?;
        let st: State = serde_json::from_slice(&bytes)
            .map_err(|e| Error::new(crate::codes::CHECKPOINT_STATE_INVALID, format!("{} is invalid: {e}", path.display())))?;
        if st.schema != STATE_SCHEMA {
            return Err(Error::new(crate::codes::CHECKPOINT_STATE_INVALID, format!("{} has an unknown schema", path.display())));
        }
        Ok(Some(st))
    }

    fn save_checkpoint_state(&self, st: &State) -> Result<()> {
        let path =
            self.checkpoint_state_path().ok_or_else(|| Error::new(head::codes::UNAVAILABLE, "no state directory for checkpoints"))?;
        if let Some(dir) = path.parent() {
            private::ensure_private_dir(dir).map_err(|e| Error::new(head::codes::UNAVAILABLE, e.message().to_owned()))?;
        }
        let bytes = serde_json::to_vec_pretty(st).map_err(|e| Error::new(crate::codes::WRITE_FAILED, e.to_string()))?;
        private::write_atomic(&path, &bytes).map_err(|e| Error::new(crate::codes::HEAD_WRITE_FAILED, e.message().to_owned()))
    }

    /// A new chain (init, reseed) starts without checkpoints: the old
    /// chain's would never match it.
    pub(crate) fn reset_checkpoints(&self) -> Result<()> {
        match self.checkpoint_state_path() {
            Some(p) => private::remove_owned(&p).map(|_| ()).map_err(state_error),
            None => Ok(()),
        }
    }

    fn store(&self, saved: Saved) -> Result<Saved> {
        let mut st = match self.checkpoint_state() {
            Ok(Some(st)) => st,
            // An unreadable state is replaced (it was checked by nothing).
            _ => State { schema: STATE_SCHEMA.into(), ..State::default() },
        };
        if saved.signed_by.is_some() {
            st.latest_signed = Some(saved.clone());
        }
        st.latest = Some(saved.clone());
        self.save_checkpoint_state(&st)?;
        Ok(saved)
    }

    /// Write a checkpoint of the whole verified chain now (O(n)): signed
    /// with `key` (`checkpoint --sign`), else unsigned. The chain must
    /// verify (head record included).
    pub fn write_checkpoint(&self, now_ms: u64, key: Option<&SigningKey>) -> Result<Saved> {
        let fv = self.full_verify(false);
        if !fv.report.trusted {
            return Err(chain::untrusted(fv.report.findings));
        }
        let (Some(first), Some(last)) = (fv.leaves.first(), fv.leaves.last()) else {
            return Err(Error::new(crate::codes::MANIFEST_EMPTY, "no entry to checkpoint"));
        };
        let mut prefix = Frontier::new();
        for l in &fv.leaves[..fv.leaves.len() - 1] {
            prefix.push(l);
        }
        self.store(Saved::build(&origin_of(first), &prefix, *last, now_ms, key))
    }

    /// The unsigned checkpoint written at a seal: from the latest saved
    /// checkpoint when it lies inside the sealed entries (O(log n) plus the
    /// sealed entries), else from the whole chain (once). Best effort: a
    /// failure leaves the latest checkpoint as it was (the next seal
    /// recomputes); the entry is already written.
    pub(crate) fn seal_checkpoint(&self, sealed: &[Entry], seal_entry: &Entry, now_ms: u64) -> Result<Saved> {
        let incremental = (|| {
            let saved = self.checkpoint_state().ok()??.latest?;
            let (cp, mut f, last) = saved.check().ok()?;
            let first = sealed.first()?.entry_seq;
            let at = usize::try_from(cp.size.checked_sub(first)?).ok()?;
            if raw_leaf(sealed.get(at)?)? != last {
                return None;
            }
            for e in &sealed[at + 1..] {
                f.push(&raw_leaf(e)?);
            }
            Some((cp.origin, f))
        })();
        match (incremental, raw_leaf(seal_entry)) {
            (Some((origin, prefix)), Some(leaf)) if prefix.size() + 1 == seal_entry.entry_seq => {
                self.store(Saved::build(&origin, &prefix, leaf, now_ms, None))
            }
            _ => {
                // Never replace the evidence: a checkpoint this chain does
                // not extend stays until a person resolves it (reseed).
                if let Ok(Some(c)) = self.consistency_since_saved() {
                    if !c.consistent {
                        return Err(Error::new(crate::codes::CHECKPOINT_INCONSISTENT, c.message));
                    }
                }
                self.write_checkpoint(now_ms, None)
            }
        }
    }

    /// `init` on a workspace whose checkpoints outlived its latch and head
    /// record: refused like a leftover head record (a person removes both).
    pub(crate) fn refuse_leftover_checkpoints(&self) -> Result<()> {
        match self.checkpoint_state_path() {
            Some(p) if std::fs::symlink_metadata(&p).is_ok() => Err(Error::new(
                crate::codes::HEAD_RECORD_EXISTS,
                format!("checkpoints of an earlier latch for this workspace exist ({}); a fresh init would hide them. A person decides: remove that file by hand, then init", p.display()),
            )),
            _ => Ok(()),
        }
    }

    /// Verify the whole chain against a checkpoint: [`Latch::verify_since`]
    /// with its tree head, and its origin must be this chain's.
    pub fn verify_checkpoint(&self, cp: &Checkpoint) -> VerifyReport {
        let fv = self.full_verify(false);
        let genesis = fv.leaves.first().copied();
        let mut report = self.report_since(fv, Some(&cp.tree_head()));
        if let Some(g) = genesis {
            if origin_of(&g) != cp.origin {
                report.findings.push(Finding::new(
                    crate::codes::CHECKPOINT_ORIGIN_MISMATCH,
                    format!("the checkpoint's origin {} is not this chain's ({})", cp.origin, origin_of(&g)),
                    None,
                ));
                report.trusted = false;
            }
        }
        report
    }

    /// The tree head and, with `since`, the consistency proof from it
    /// (O(n): from every leaf).
    pub(crate) fn report_since(&self, fv: chain::FullVerify, since: Option<&TreeHead>) -> VerifyReport {
        let mut report = fv.report;
        let root = merkle::root(&fv.leaves);
        let n = fv.leaves.len() as u64;
        report.tree_head = Some(TreeHead { schema: chain::TREE_HEAD_SCHEMA.into(), size: n, root: merkle::hex(&root) });
        if let Some(old) = since {
            let consistent = match merkle::parse_hex(&old.root) {
                Some(old_root) if old.size >= 1 && old.size <= n => merkle::consistency_proof(old.size as usize, &fv.leaves)
                    .is_some_and(|proof| merkle::verify_consistency(old.size, n, &old_root, &root, &proof)),
                _ => false,
            };
            if consistent {
                report.notes.push(format!("consistent with the checkpoint of {} entries (RFC 6962 consistency proof)", old.size));
            } else {
                report.findings.push(Finding::new(
                    crate::codes::CHECKPOINT_INCONSISTENT,
                    format!("the chain is not an append-only extension of the checkpoint of {} entries (root {})", old.size, old.root),
                    None,
                ));
                report.trusted = false;
            }
        }
        report
    }

    /// The entries from `seq` on (with their canonical payloads), reading
    /// the live part and, back from it, only the sealed segments needed;
    /// each segment's bytes must hash to the reference the next file records.
    fn entries_from(&self, seq: u64) -> Result<Vec<(Entry, Vec<u8>)>> {
        let live_bytes = layout::read_file(&self.paths.manifest, crate::codes::MANIFEST_SYMLINK)?;
        let live = chain::parse_file(&live_bytes, chain::LIVE_HEADER, "_manifest.md");
        if !live.findings.is_empty() {
            return Err(chain::untrusted(live.findings));
        }
        let mut out: Vec<(Entry, Vec<u8>)> = live.entries.into_iter().zip(live.canon).collect();
        for _ in 0..MAX_SEGMENTS_BACK {
            let Some((first, _)) = out.first() else { break };
            if first.entry_seq <= seq {
                break;
            }
            let Some(r) = first.sealed_segment.clone() else { break };
            let bytes = layout::read_file(&self.paths.segment(r.index), crate::codes::SEGMENT_SYMLINK)?;
            let seg = chain::parse_file(&bytes, &chain::segment_header(r.index), &layout::segment_name(r.index));
            if String::from(TaggedDigest::of(&bytes)) != r.sha256 || !seg.findings.is_empty() {
                let mut f = seg.findings;
                f.push(Finding::new(
                    crate::codes::SEGMENT_REF_MISMATCH,
                    format!("{} does not match the hash recorded after it", layout::segment_name(r.index)),
                    None,
                ));
                return Err(chain::untrusted(f));
            }
            let mut prev: Vec<(Entry, Vec<u8>)> = seg.entries.into_iter().zip(seg.canon).collect();
            prev.append(&mut out);
            out = prev;
        }
        out.retain(|(e, _)| e.entry_seq >= seq);
        Ok(out)
    }

    /// Check the chain now against the latest saved checkpoint (the last
    /// one seen before a sleep): O(log n) plus the entries written since.
    /// `Ok(None)`: no checkpoint saved. `Err`: the saved checkpoint or the
    /// entries read are unusable (the chain itself is judged by
    /// `verify_fast`).
    pub fn consistency_since_saved(&self) -> Result<Option<Consistency>> {
        let Some(saved) = self.checkpoint_state()?.and_then(|s| s.latest) else { return Ok(None) };
        self.consistency_since(&saved)
    }

    /// [`Latch::consistency_since_saved`] from the latest checkpoint signed
    /// by `key` instead (its signature must verify): a forged or replaced
    /// saved state cannot pass this. `Ok(None)`: none signed is saved.
    pub fn consistency_since_signed(&self, key: &sign::VerifierKey) -> Result<Option<Consistency>> {
        let Some(saved) = self.checkpoint_state()?.and_then(|s| s.latest_signed) else { return Ok(None) };
        parse_note(&saved.note)?.note.verify(key)?;
        self.consistency_since(&saved)
    }

    fn consistency_since(&self, saved: &Saved) -> Result<Option<Consistency>> {
        let (cp, frontier, last) = saved.check()?;
        let m = cp.size;
        let mut result = Consistency {
            consistent: false,
            from_size: m,
            to_size: 0,
            from_root: merkle::hex(&cp.root),
            to_root: None,
            proof_hashes: 0,
            signed_by: saved.signed_by.clone(),
            message: String::new(),
        };
        let tail = self.entries_from(m)?;
        let mut v = Verifier::mid_chain(self.key.as_ref());
        for (e, c) in &tail {
            v.check_with(e, c);
        }
        if !v.findings.is_empty() {
            return Err(chain::untrusted(v.findings));
        }
        result.to_size = tail.last().map(|(e, _)| e.entry_seq).unwrap_or(0);
        match tail.first() {
            Some((e, _)) if e.entry_seq == m => {
                if raw_leaf(e) != Some(last) {
                    result.message =
                        format!("entry {m} is not the entry the checkpoint of {m} entries ends with: the history was rewritten");
                    return Ok(Some(result));
                }
            }
            _ => {
                result.message = format!(
                    "the chain does not reach entry {m}, where the checkpoint of {m} entries ends (now {}): rolled back or replaced",
                    result.to_size
                );
                return Ok(Some(result));
            }
        }
        let new: Option<Vec<Hash>> = tail[1..].iter().map(|(e, _)| raw_leaf(e).map(|l| merkle::leaf_hash(&l))).collect();
        let new = new.ok_or_else(|| Error::new(crate::codes::INTEGRITY_FIELD_MISSING, "an entry has no payload hash"))?;
        let mut now = frontier.clone();
        for h in &new {
            now.push_hashed(*h);
        }
        let n = now.size();
        let to_root = now.root();
        let proof = if n == m { Some(Vec::new()) } else { merkle::consistency_proof_extending(&frontier, &new) };
        result.to_root = Some(merkle::hex(&to_root));
        result.proof_hashes = proof.as_ref().map(Vec::len).unwrap_or(0);
        result.consistent = proof.is_some_and(|p| merkle::verify_consistency(m, n, &cp.root, &to_root, &p));
        result.message = if result.consistent {
            format!(
                "the chain ({n} entries) extends the checkpoint of {m} entries (RFC 6962 consistency proof, {} hashes)",
                result.proof_hashes
            )
        } else {
            format!("the consistency proof from {m} to {n} entries does not verify")
        };
        Ok(Some(result))
    }
}

/// Read a checkpoint file for `verify --since-checkpoint`: a note (signed
/// or not) or a saved checkpoint (`memory-latch.checkpoint/v1`).
pub fn read_checkpoint_text(text: &str) -> Result<CheckpointNote> {
    if text.trim_start().starts_with('{') {
        let saved: Saved =
            serde_json::from_str(text).map_err(|e| Error::new(crate::codes::CHECKPOINT_FILE_INVALID, format!("not a checkpoint: {e}")))?;
        return parse_note(&saved.note);
    }
    parse_note(text)
}

/// Check a note's signature with a public key (`verify --public-key`).
pub fn check_signature(note: &CheckpointNote, key: &sign::VerifierKey) -> Result<()> {
    note.note.verify(key)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bodies_round_trip_and_bad_ones_are_refused() {
        let cp = Checkpoint { origin: "kijito-qa/memory-latch/00".into(), size: 7, root: [9; 32] };
        assert_eq!(Checkpoint::parse_body(&cp.body()).unwrap(), cp);
        let root = Base64::encode_to_string([9u8; 32]).unwrap();
        for bad in [
            format!("o\n07\n{root}\n"),
            format!("o\n0\n{root}\n"),
            format!("o\n-1\n{root}\n"),
            "o\n7\nAAAA\n".to_owned(),
            format!("o o\n7\n{root}\n"),
            format!("o\n7\n{root}\n\n"),
            "o\n7\n".to_owned(),
        ] {
            assert!(Checkpoint::parse_body(&bad).is_err(), "{bad:?}");
        }
        assert_eq!(Checkpoint::parse_body(&format!("o\n7\n{root}\nextension\n")).unwrap().size, 7);
    }

    #[test]
    fn a_saved_checkpoint_must_fold_to_its_root() {
        let leaves: Vec<Hash> = (0..10u8).map(|i| [i; 32]).collect();
        let mut prefix = Frontier::new();
        for l in &leaves[..9] {
            prefix.push(l);
        }
        let s = Saved::build(&origin_of(&leaves[0]), &prefix, leaves[9], 1, None);
        let (cp, f, last) = s.check().unwrap();
        assert_eq!((cp.size, f.root(), last), (10, merkle::root(&leaves), leaves[9]));
        let mut bad = s.clone();
        bad.last_leaf = merkle::hex(&[1; 32]);
        assert!(bad.check().unwrap_err().code_as() == Some(crate::codes::CHECKPOINT_STATE_INVALID));
        let mut bad = s.clone();
        bad.prefix_frontier.pop();
        assert!(bad.check().is_err());
        let mut bad = s;
        bad.size = 11;
        assert!(bad.check().is_err());
    }
    fn latch_in(dir: &std::path::Path, name: &str) -> Latch {
        let ws = dir.join(name);
        std::fs::create_dir_all(&ws).unwrap();
        let mut config = crate::Config::new(&ws);
        config.heads_dir = Some(dir.join("heads"));
        Latch::open(&config).unwrap()
    }

    #[test]
    fn seals_write_checkpoints_and_a_rewritten_history_is_inconsistent() {
        let d = tempfile::tempdir().unwrap();
        std::fs::set_permissions(d.path(), std::os::unix::fs::PermissionsExt::from_mode(0o700)).unwrap();
        let l = latch_in(d.path(), "ws");
        l.seed_history(200, 1_700_000_000_000).unwrap();
        assert_eq!(l.consistency_since_saved().unwrap(), None);
        let first = l.write_checkpoint(1_700_000_001_000, None).unwrap();
        assert_eq!((first.size, first.reason.as_str()), (200, "seal"));
        let c = l.consistency_since_saved().unwrap().unwrap();
        assert!(c.consistent && c.to_size == 200 && c.proof_hashes == 0, "{c:?}");
        // 60 appends: the 57th seals entries 129..256; the seal writes a
        // checkpoint from the saved one (incremental) that equals the full one.
        for i in 0..60 {
            let input = crate::CheckpointInput { next_single_step: Some(format!("s{i}")), ..Default::default() };
            l.checkpoint(1_700_000_002_000 + i, &input).unwrap();
        }
        let st = l.checkpoint_state().unwrap().unwrap();
        let seal = st.latest.unwrap();
        assert_eq!((seal.size, seal.reason.as_str()), (257, "seal"));
        assert!(st.latest_signed.is_none());
        let mut leaves = Vec::new();
        let fv = l.full_verify(false);
        leaves.extend_from_slice(&fv.leaves[..257]);
        assert_eq!(seal.root, merkle::hex(&merkle::root(&leaves)));
        let c = l.consistency_since_saved().unwrap().unwrap();
        assert!(c.consistent && c.from_size == 257 && c.to_size == 260 && c.proof_hashes > 0, "{c:?}");
        assert_eq!(c.to_root.as_deref(), l.verify().tree_head.map(|t| t.root).as_deref());
        // A checkpoint read from a note checks through verify_checkpoint.
        let cp = parse_note(&seal.note).unwrap().checkpoint;
        assert!(l.verify_checkpoint(&cp).trusted);

        // The agent rewrites the whole history and the head record on
        // purpose (a chain built elsewhere, copied over both): every hash and
        // the record agree, but the saved checkpoint is not a prefix of it.
        let other = latch_in(d.path(), "forged");
        other.seed_history(300, 1_700_000_000_500).unwrap();
        let (ws, forged) = (l.paths().dir.clone(), other.paths().dir.clone());
        std::fs::remove_dir_all(&ws).unwrap();
        std::fs::rename(&forged, &ws).unwrap();
        std::fs::copy(other.head_record_path().unwrap(), l.head_record_path().unwrap()).unwrap();
        assert!(l.verify_fast().trusted, "{:?}", l.verify_fast().findings);
        let c = l.consistency_since_saved().unwrap().unwrap();
        assert!(!c.consistent && c.message.contains("rewritten"), "{c:?}");
        let r = l.verify_checkpoint(&cp);
        assert!(!r.trusted);
        let codes: Vec<&str> = r.findings.iter().map(|f| f.code.as_str()).collect();
        assert!(
            codes.contains(&crate::codes::CHECKPOINT_INCONSISTENT.as_str())
                && codes.contains(&crate::codes::CHECKPOINT_ORIGIN_MISMATCH.as_str()),
            "{codes:?}"
        );
        // A seal on the forged chain keeps the evidence instead of replacing it.
        for i in 0..85 {
            let input = crate::CheckpointInput { next_single_step: Some(format!("f{i}")), ..Default::default() };
            l.checkpoint(1_700_000_003_000 + i, &input).unwrap();
        }
        assert_eq!(l.checkpoint_state().unwrap().unwrap().latest.unwrap().size, 257);
        // A shorter chain (rolled back below the checkpoint) is inconsistent too.
        let short = latch_in(d.path(), "short");
        short.seed_history(5, 1_700_000_000_000).unwrap();
        std::fs::copy(l.checkpoint_state_path().unwrap(), short.checkpoint_state_path().unwrap()).unwrap();
        let c = short.consistency_since_saved().unwrap().unwrap();
        assert!(!c.consistent && c.message.contains("does not reach"), "{c:?}");
        // init refuses while checkpoints of an earlier latch exist.
        let again = latch_in(d.path(), "again");
        std::fs::copy(l.checkpoint_state_path().unwrap(), again.checkpoint_state_path().unwrap()).unwrap();
        let e = again.init(1, &crate::InitInput { objective: "x".into(), ..Default::default() }).unwrap_err();
        assert!(e.code_as() == Some(crate::codes::HEAD_RECORD_EXISTS), "{e:?}");
    }
}
