//! A new turn after `qa-gate record` ends the pass (docs/protocol.md §7,
//! "New turn"): which prompt is a new turn, the withdrawal of the waiting
//! pass (and the failure of its compaction request), and the record of
//! spent nonces that refuses a pass copied back afterwards.
//!
//! Files in `<data-dir>/qa/` (0600, written atomically, never symlinks):
//!
//! | file | meaning |
//! |---|---|
//! | `qa-pass-withdrawn.<s>.json` | the withdrawn pass, renamed (same bytes); the next PreCompact records `pass_invalidated_by_new_turn` and removes it; `record` removes it |
//! | `qa-spent.<s>.json` | at most [`MAX_SPENT`] spent nonces; a pass whose nonce is listed is refused with the entry's `why` |
//!
//! The spent record is built for more than one reason: `why` is a refusal
//! code from [`WHY`]. Today only a new turn writes it; the nonce of a pass
//! PreCompact promotes is spent in the ledger outside the data dir
//! ([`crate::ledger`]), and a record an earlier version wrote with
//! `pass_already_consumed` entries is still read and obeyed.

use crate::pass::{codes, Pass};
use crate::{has_keys, is_hex32, QaDir, PASS_MAX_AGE_MS};
use kijito_files::private;
use kijito_protocol::error::{Error, Result};
use kijito_protocol::ids::SessionId;
use serde_json::Value;
use std::path::Path;

/// Most entries `qa-spent.<s>.json` keeps (the oldest go first).
pub const MAX_SPENT: usize = 64;

/// The reasons a nonce is spent; each is the refusal code of a pass that
/// carries it: withdrawn by a new turn, or consumed by a PreCompact (written
/// by earlier versions; read still).
pub const WHY: &[codes::Code] = &[codes::PASS_WITHDRAWN, codes::PASS_CONSUMED];

/// The one prompt that is not a new turn: the compaction itself.
pub const COMPACT_PROMPT: &str = "/compact";

/// Whether a UserPromptSubmit prompt starts a new turn: anything but
/// exactly `/compact` once ASCII whitespace is trimmed from both ends (so
/// `/compact keep X` is a new turn). A missing prompt is a new turn (fail
/// closed).
pub fn is_new_turn(prompt: Option<&str>) -> bool {
    prompt.is_none_or(|p| p.trim_ascii() != COMPACT_PROMPT)
}

/// One spent nonce.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpentNonce {
    pub nonce: String,
    /// The refusal code (one of [`WHY`]).
    pub why: codes::Code,
    /// `recordedAtMs` of the pass that carried it.
    pub recorded_at_ms: i64,
    pub spent_at_ms: i64,
}

/// `qa-spent.<s>.json`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Spent {
    pub session_id: SessionId,
    /// Oldest first.
    pub entries: Vec<SpentNonce>,
}

const SPENT_KEYS: &[&str] = &["schemaVersion", "sessionId", "spent"];
const ENTRY_KEYS: &[&str] = &["nonce", "why", "recordedAtMs", "spentAtMs"];

impl Spent {
    /// Compact JSON, as written (no newline). Every value is JSON-safe as
    /// it stands (a session id, 32 hex, a snake_case code, integers), so the
    /// bytes are formatted directly (the hook binaries' size).
    pub fn to_bytes(&self) -> Vec<u8> {
        let entries: Vec<String> = self
            .entries
            .iter()
            .map(|e| {
                format!(r#"{{"nonce":"{}","why":"{}","recordedAtMs":{},"spentAtMs":{}}}"#, e.nonce, e.why, e.recorded_at_ms, e.spent_at_ms)
            })
            .collect();
        format!(r#"{{"schemaVersion":1,"sessionId":"{}","spent":[{}]}}"#, self.session_id, entries.join(",")).into_bytes()
    }

    /// Parse strictly: exact keys in order, at most [`MAX_SPENT`] entries,
    /// known `why` codes, this session's id.
    pub fn parse(bytes: &[u8], session: &SessionId) -> Result<Spent> {
        let bad = || {
            Error::new(codes::SPENT_INVALID, "the spent-nonce record is invalid: every pass of this session is refused until it is removed")
        };
        let v: Value = serde_json::from_slice(bytes).map_err(|_| bad())?;
        let o = v.as_object().filter(|o| has_keys(o, SPENT_KEYS)).ok_or_else(bad)?;
        if o["schemaVersion"] != 1 || o["sessionId"].as_str() != Some(session.as_str()) {
            return Err(bad());
        }
        let list = o["spent"].as_array().filter(|a| a.len() <= MAX_SPENT).ok_or_else(bad)?;
        let mut entries = Vec::with_capacity(list.len());
        for e in list {
            let e = e.as_object().filter(|e| has_keys(e, ENTRY_KEYS)).ok_or_else(bad)?;
            let nonce = e["nonce"].as_str().filter(|n| is_hex32(n)).ok_or_else(bad)?.to_owned();
            let why = e["why"].as_str().and_then(codes::Code::parse).filter(|w| WHY.contains(w)).ok_or_else(bad)?;
            let time = |k: &str| e[k].as_i64().filter(|t| *t >= 0).ok_or_else(bad);
            entries.push(SpentNonce { nonce, why, recorded_at_ms: time("recordedAtMs")?, spent_at_ms: time("spentAtMs")? });
        }
        Ok(Spent { session_id: session.clone(), entries })
    }

    /// The entry of `nonce`, if spent.
    pub fn find(&self, nonce: &str) -> Option<&SpentNonce> {
        self.entries.iter().find(|e| e.nonce == nonce)
    }

    /// Add `entry` (once per nonce), then drop the entries whose pass is
    /// stale at `now_ms` (a pass that carries one is refused as `pass_stale`
    /// anyway) and the oldest beyond [`MAX_SPENT`].
    pub fn add(&mut self, entry: SpentNonce, now_ms: i64) {
        if self.find(&entry.nonce).is_none() {
            self.entries.push(entry);
        }
        self.entries.retain(|e| now_ms - e.recorded_at_ms <= PASS_MAX_AGE_MS);
        let extra = self.entries.len().saturating_sub(MAX_SPENT);
        self.entries.drain(..extra);
    }
}

/// The spent record at `path` (none: empty).
fn read_spent_at(path: &Path, session: &SessionId) -> Result<Spent> {
    match crate::state::read_optional(path)? {
        None => Ok(Spent { session_id: session.clone(), entries: Vec::new() }),
        Some(b) => Spent::parse(&b, session),
    }
}

/// The session's spent nonces.
pub fn read_spent(qa: &QaDir, session: &SessionId) -> Result<Spent> {
    read_spent_at(&qa.spent(session), session)
}

/// `Err` with the entry's code when `nonce` is spent in the record at
/// `path`; an unreadable record refuses every nonce.
pub fn check_unspent_at(path: &Path, session: &SessionId, nonce: &str) -> Result<()> {
    match read_spent_at(path, session)?.find(nonce) {
        None => Ok(()),
        Some(e) if e.why == codes::PASS_CONSUMED => Err(Error::new(
            e.why,
            "this pass's nonce was already promoted by a PreCompact (one pass, one compaction): run the QA cycle again",
        )),
        Some(e) => Err(Error::new(e.why, "this pass's nonce is spent (withdrawn by a new turn): run the QA cycle again")),
    }
}

/// [`check_unspent_at`] for the session's record.
pub fn check_unspent(qa: &QaDir, session: &SessionId, nonce: &str) -> Result<()> {
    check_unspent_at(&qa.spent(session), session, nonce)
}

/// What a withdrawal did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Withdrawn {
    /// The withdrawn pass's nonce.
    pub nonce: String,
    /// A pending or sent compaction request for that pass was failed.
    pub request_failed: bool,
}

/// A new turn of the main agent (the caller checked [`is_new_turn`] and
/// that the hook input is not a subagent's): withdraw the waiting pass.
/// Costs one `stat` when no pass exists. Otherwise: the nonce joins the
/// spent record (first, so a crash leaves a refused pass, never a valid
/// one), the pass is renamed to `qa-pass-withdrawn.<s>.json`, and a pending
/// or sent request for that pass becomes `failed` with
/// `pass_invalidated_by_new_turn` (`fail_request(nonce)`, the compaction
/// adapters' part: `kijito_compact::trigger::new_turn`; its answer is
/// [`Withdrawn::request_failed`]). No lock (the hook binary's size): the host
/// runs a session's UserPromptSubmit and PreCompact one after the other, and
/// should one ever race with a PreCompact promoting the same pass, the
/// rename makes that PreCompact's link or unlink fail (unattested,
/// `promote_failed`) or finds the pass already promoted. A pass that does
/// not parse is left for PreCompact to refuse (`pass_invalid`).
pub fn new_turn(qa: &QaDir, session: &SessionId, now_ms: i64, fail_request: &dyn Fn(&str) -> bool) -> Result<Option<Withdrawn>> {
    let path = qa.pass(session);
    if std::fs::symlink_metadata(&path).is_err() {
        return Ok(None);
    }
    let Some(bytes) = crate::state::read_optional(&path)? else { return Ok(None) };
    let pass = Pass::parse(&bytes)?;
    let entry = SpentNonce {
        nonce: pass.compaction_nonce.clone(),
        why: codes::PASS_WITHDRAWN,
        recorded_at_ms: pass.recorded_at_ms,
        spent_at_ms: now_ms,
    };
    // An unreadable record already refuses every pass: the withdrawal goes on.
    let listed = read_spent(qa, session).and_then(|mut spent| {
        spent.add(entry, now_ms);
        qa.write_atomic(&qa.spent(session), &spent.to_bytes())
    });
    // The ledger outside the data dir too (best effort: the record above and
    // the rename below already refuse the pass; the ledger makes deleting
    // `qa-spent` and copying the pass back useless).
    let _ = crate::ledger::append(qa, session, &crate::ledger::LedgerEntry::of(&pass, &bytes, codes::PASS_WITHDRAWN, now_ms), now_ms);
    if !crate::rename_claim(&path, &qa.withdrawn(session))? {
        // Promoted by a PreCompact meanwhile: that compaction is under way.
        return Ok(None);
    }
    private::fsync_dir(qa.path().as_path())?;
    // (A crash here leaves the request to the adapter, which refuses the
    // withdrawn pass with the same code.)
    let request_failed = fail_request(&pass.compaction_nonce);
    if let Err(e) = listed {
        if e.code_as() != Some(codes::SPENT_INVALID) {
            return Err(e);
        }
    }
    Ok(Some(Withdrawn { nonce: pass.compaction_nonce, request_failed }))
}

/// Whether the last pass of the session was withdrawn by a new turn and no
/// PreCompact or `record` has run since (the marker file exists).
pub fn was_withdrawn(qa: &QaDir, session: &SessionId) -> bool {
    std::fs::symlink_metadata(qa.withdrawn(session)).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sid() -> SessionId {
        SessionId::parse("sess-1").unwrap()
    }

    fn entry(n: u32, recorded: i64) -> SpentNonce {
        SpentNonce { nonce: format!("{n:032x}"), why: codes::PASS_WITHDRAWN, recorded_at_ms: recorded, spent_at_ms: recorded + 1 }
    }

    #[test]
    fn only_an_exact_compact_is_not_a_new_turn() {
        for p in ["/compact", " /compact\n", "\t/compact  \r\n"] {
            assert!(!is_new_turn(Some(p)), "{p:?}");
        }
        for p in ["", "hello", "fix the bu/compact", "/compact keep the pointer", "/Compact", "/compact\u{a0}", "\u{2003}/compact"] {
            assert!(is_new_turn(Some(p)), "{p:?}");
        }
        assert!(is_new_turn(None), "no prompt: a new turn (fail closed)");
    }

    #[test]
    fn the_record_round_trips_byte_exact_and_is_strict() {
        let text = r#"{"schemaVersion":1,"sessionId":"sess-1","spent":[{"nonce":"00000000000000000000000000abc001","why":"pass_invalidated_by_new_turn","recordedAtMs":1764500000000,"spentAtMs":1764500001000}]}"#;
        let s = Spent::parse(text.as_bytes(), &sid()).unwrap();
        assert_eq!(s.to_bytes(), text.as_bytes());
        assert_eq!(s.find("00000000000000000000000000abc001").unwrap().why, codes::PASS_WITHDRAWN);
        for junk in [
            text.replace("sess-1", "sess-2"),
            text.replace("\"schemaVersion\":1", "\"schemaVersion\":2"),
            text.replace("pass_invalidated_by_new_turn", "anything_else"),
            text.replace("abc001", "ABC001"),
            text.replace(
                "\"recordedAtMs\":1764500000000,\"spentAtMs\":1764500001000",
                "\"spentAtMs\":1764500001000,\"recordedAtMs\":1764500000000",
            ),
            text.replace("1764500000000", "-1"),
            text.replace("}]}", ",\"extra\":1}]}"),
        ] {
            assert_eq!(Spent::parse(junk.as_bytes(), &sid()).unwrap_err().code(), codes::SPENT_INVALID.as_str(), "{junk}");
        }
    }

    #[test]
    fn the_record_is_bounded_and_forgets_only_what_is_stale_anyway() {
        let now = 10 * PASS_MAX_AGE_MS;
        let mut s = Spent { session_id: sid(), entries: Vec::new() };
        s.add(entry(0, now - PASS_MAX_AGE_MS - 1), now);
        assert!(s.entries.is_empty(), "a pass that old is refused as pass_stale anyway");
        for n in 1..=(MAX_SPENT as u32 + 5) {
            s.add(entry(n, now - 1000 + n as i64), now);
        }
        assert_eq!(s.entries.len(), MAX_SPENT);
        assert_eq!(s.entries[0].nonce, format!("{:032x}", 6), "the oldest went first");
        s.add(entry(MAX_SPENT as u32 + 5, now), now);
        assert_eq!(s.entries.len(), MAX_SPENT, "a nonce is listed once");
        assert!(s.to_bytes().len() < crate::STATE_MAX_BYTES as usize);
        assert_eq!(Spent::parse(&s.to_bytes(), &sid()).unwrap(), s);
        // A pass recorded exactly PASS_MAX_AGE_MS ago is still accepted by age: kept.
        let mut t = Spent { session_id: sid(), entries: Vec::new() };
        t.add(entry(1, now - PASS_MAX_AGE_MS), now);
        assert_eq!(t.entries.len(), 1);
    }
}
