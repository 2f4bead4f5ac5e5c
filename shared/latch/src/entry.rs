//! One manifest entry: the seed schema plus the additions tamper evidence
//! needs, its canonical payload, its hash, and its markdown rendering.
//!
//! An entry on disk is a markdown block rendered *from* the payload plus the
//! payload itself as one compact JSON line in a ```json fence. Verification
//! re-renders every entry from its parsed payload and requires the bytes to
//! be identical, so a change anywhere (human text or JSON) is detected.

use kijito_protocol::ids::{ActionHash, TaggedDigest};
use serde::{Deserialize, Serialize};

pub const ENTRY_SCHEMA: &str = "memory-latch.entry/v2";
/// The `none` sentinel used by string fields with no value.
pub const NONE: &str = "none";

/// An entry's `action_hash` as stored: the [`ActionHash`] the consent
/// state is bound to, or [`NONE`] for `None` (docs/memory-latch.md). Read
/// through [`ActionHash::parse`], the one validator; the bytes written are
/// the hash's text or `none`, as before the field had a type.
pub mod action_or_none {
    use super::NONE;
    use kijito_protocol::ids::ActionHash;

    /// `none` for `None`, else the hash's text.
    pub fn text(h: &Option<ActionHash>) -> &str {
        h.as_ref().map_or(NONE, ActionHash::as_str)
    }

    /// `none` is `None`; anything else must be an action hash.
    pub fn parse(text: &str) -> kijito_protocol::error::Result<Option<ActionHash>> {
        if text == NONE {
            Ok(None)
        } else {
            ActionHash::parse(text).map(Some)
        }
    }

    pub fn serialize<S: serde::Serializer>(h: &Option<ActionHash>, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(text(h))
    }

    pub fn deserialize<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<ActionHash>, D::Error> {
        let text = <std::borrow::Cow<'de, str> as serde::Deserialize>::deserialize(d)?;
        parse(&text).map_err(|e| serde::de::Error::custom(e.message()))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Event {
    Init,
    Checkpoint,
    ConsentRequest,
    ConsentConfirm,
    GatePass,
    RecoveryAttempt,
    SilentWitness,
    Reseed,
    DegradedMode,
    /// The Stop hook's checkpoint every `checkpoint_freq_turns` turns.
    TurnCheckpoint,
    /// The Stop hook's forced checkpoint when the context ratio crossed
    /// `fatigue_trigger_context_ratio`: one-step mode begins.
    FatigueCheckpoint,
    /// The Stop hook saw the ratio below the threshold again: one-step mode ends.
    FatigueCleared,
    /// The user's own message confirmed a review token: degraded mode
    /// (consent `locked`) ends.
    Review,
    /// A wake-check run with findings (not degraded: that is
    /// `degraded_mode`), for the record (seed 001: "durable records of
    /// what was discovered upon waking"). State-neutral: it copies the
    /// head's consent, one-step and action fields; wake-check measures the
    /// sleep and the boot change from the newest entry that is not one.
    WakeFindings,
    /// A tool call ran after the user's Yes in the host's own permission
    /// dialog (`consent.mode: "host"`, docs/protocol.md §8a): the record of
    /// the executed call and its action hash, written at PostToolUse.
    /// State-neutral, like `wake_findings`.
    HostConsent,
}

impl Event {
    pub fn as_str(self) -> &'static str {
        match self {
            Event::Init => "init",
            Event::Checkpoint => "checkpoint",
            Event::ConsentRequest => "consent_request",
            Event::ConsentConfirm => "consent_confirm",
            Event::GatePass => "gate_pass",
            Event::RecoveryAttempt => "recovery_attempt",
            Event::SilentWitness => "silent_witness",
            Event::Reseed => "reseed",
            Event::DegradedMode => "degraded_mode",
            Event::TurnCheckpoint => "turn_checkpoint",
            Event::FatigueCheckpoint => "fatigue_checkpoint",
            Event::FatigueCleared => "fatigue_cleared",
            Event::Review => "review",
            Event::WakeFindings => "wake_findings",
            Event::HostConsent => "host_consent",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ConsentState {
    Authorized,
    Pending,
    Locked,
}

impl ConsentState {
    pub fn as_str(self) -> &'static str {
        match self {
            ConsentState::Authorized => "authorized",
            ConsentState::Pending => "pending",
            ConsentState::Locked => "locked",
        }
    }
}

/// Consent risk: one home, in kijito-protocol (also the policy's and the wallet's).
pub use kijito_protocol::risk::Risk;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    Checksum,
    Hmac,
}

impl Mode {
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Checksum => "checksum",
            Mode::Hmac => "hmac",
        }
    }
}

/// One-step mode (entered at context fatigue): `ready` while the current
/// checkpoint's `next_single_step` has not been acted on, `step_taken` after
/// the gate passed once; only a checkpoint naming the next step makes it
/// `ready` again. Absent from the payload when the mode is off.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OneStep {
    Ready,
    StepTaken,
}

impl OneStep {
    pub fn as_str(self) -> &'static str {
        match self {
            OneStep::Ready => "ready",
            OneStep::StepTaken => "step_taken",
        }
    }
}

/// A decision, the entry it was made in and the latch's turn count then
/// (composting retires it once `compost_retire_turns` turns have passed).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Decision {
    pub seq: u64,
    pub text: String,
    /// The latch's turn count (`turns.json` `turns`) when the decision was
    /// recorded. **The key is absent** in decisions recorded before turns
    /// stamped them (so those entries stay canonical); such a decision
    /// retires by entries, as it did then.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn: Option<u64>,
}

/// Reference to the sealed history segment this entry follows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SegmentRef {
    pub index: u64,
    /// `sha256:<hex>` of the segment file's exact bytes.
    pub sha256: String,
    pub first_seq: u64,
    pub last_seq: u64,
}

/// What a reseeded chain started from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReseedRef {
    /// The old head's recorded `payload_hash` (or `none` if unreadable).
    pub old_head_payload_hash: String,
    pub old_head_seq: u64,
    /// `sha256:<hex>` of the old `_manifest.md` bytes.
    pub old_manifest_sha256: String,
    pub old_chain_trusted: bool,
    /// Archive directory (relative to `.memory-latch`).
    pub archive: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Governance {
    pub checkpoint_freq_turns: u32,
    pub compost_keep_decisions: u32,
    pub compost_retire_turns: u32,
    pub fatigue_trigger_context_ratio: f64,
    pub token_ttl_minutes: u32,
    pub token_single_use: bool,
    pub lock_timeout_ms: u64,
    pub max_recovery_attempts: u32,
}

impl Default for Governance {
    fn default() -> Self {
        Governance {
            checkpoint_freq_turns: 5,
            compost_keep_decisions: 3,
            compost_retire_turns: 20,
            fatigue_trigger_context_ratio: 0.75,
            token_ttl_minutes: 10,
            token_single_use: true,
            lock_timeout_ms: 800,
            max_recovery_attempts: 3,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Storage {
    pub root: String,
    pub manifest_path: String,
    pub lock_path: String,
    pub token_ledger_path: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Integrity {
    pub mode: Mode,
    /// `sha256:<hex>` of the canonical payload.
    pub payload_hash: String,
    /// `none` in checksum mode; `hmac-sha256:<hex>` in hmac mode.
    pub hmac_signature: String,
    /// When the writer verified the chain before appending (RFC 3339).
    pub verified_at: String,
}

/// One entry. Field order here IS the canonical key order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Entry {
    pub schema: String,
    pub entry_seq: u64,
    pub event: Event,
    pub updated_at: String,
    pub updated_at_ms: u64,
    pub boot_id: String,
    pub objective: String,
    pub non_negotiables: Vec<String>,
    pub last_good_checkpoint: String,
    pub blocked_by: String,
    pub next_single_step: String,
    pub known_state: Vec<String>,
    pub unknown_state: Vec<String>,
    pub decisions: Vec<Decision>,
    pub consent_state: ConsentState,
    pub irreversible_action_pending: String,
    /// `none` when no consent is pending or authorized.
    #[serde(with = "action_or_none")]
    pub action_hash: Option<ActionHash>,
    pub recovery_attempts: u32,
    pub risk_level: Risk,
    pub silent_witness: bool,
    /// One-step mode; the key is absent when off (entries written before it
    /// existed stay canonical).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub one_step: Option<OneStep>,
    pub details: Vec<String>,
    pub prev_payload_hash: String,
    pub sealed_segment: Option<SegmentRef>,
    pub reseeded_from: Option<ReseedRef>,
    pub governance: Governance,
    pub storage: Storage,
    pub integrity: Integrity,
}

impl Entry {
    /// The canonical payload: the compact JSON of the entry (keys in the
    /// struct's order) with `integrity` reduced to `{"mode","verified_at"}`.
    pub fn canonical_payload(&self) -> Vec<u8> {
        canonical_from_line(&self.payload_line(), &self.integrity)
    }

    /// SHA-256 of the canonical payload, tagged.
    pub fn compute_payload_hash(&self) -> String {
        TaggedDigest::of(&self.canonical_payload()).into()
    }

    /// The exact payload line (compact JSON of the whole entry).
    pub fn payload_line(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    /// The markdown block for this entry (ends with a blank line).
    pub fn render(&self) -> String {
        self.render_with(&self.payload_line())
    }

    /// Render with an already serialised payload line.
    fn render_with(&self, line: &str) -> String {
        let list = |v: &[String]| if v.is_empty() { NONE.to_owned() } else { v.join("; ") };
        let decisions: Vec<String> = self.decisions.iter().map(|d| format!("[{}] {}", d.seq, d.text)).collect();
        let mut s = String::with_capacity(2048);
        s.push_str(&format!("## Entry {} · {} · {}\n\n", self.entry_seq, self.event.as_str(), self.updated_at));
        s.push_str(&format!("- objective: {}\n", self.objective));
        s.push_str(&format!("- non-negotiables: {}\n", list(&self.non_negotiables)));
        s.push_str(&format!("- next single step: {}\n", self.next_single_step));
        s.push_str(&format!("- blocked by: {}\n", self.blocked_by));
        s.push_str(&format!("- known: {}\n", list(&self.known_state)));
        s.push_str(&format!("- unknown: {}\n", list(&self.unknown_state)));
        s.push_str(&format!("- decisions: {}\n", list(&decisions)));
        s.push_str(&format!(
            "- consent: {} · action {} · pending {}\n",
            self.consent_state.as_str(),
            action_or_none::text(&self.action_hash),
            self.irreversible_action_pending
        ));
        s.push_str(&format!(
            "- risk: {} · recovery attempts: {} · silent witness: {}\n",
            self.risk_level.as_str(),
            self.recovery_attempts,
            if self.silent_witness { "ACTIVE" } else { "no" }
        ));
        if let Some(m) = self.one_step {
            s.push_str(&format!("- one-step mode: {}\n", m.as_str()));
        }
        if !self.details.is_empty() {
            s.push_str(&format!("- details: {}\n", self.details.join("; ")));
        }
        s.push_str(&format!("- integrity: {} · {}\n\n", self.integrity.mode.as_str(), self.integrity.payload_hash));
        s.push_str("```json\n");
        s.push_str(line);
        s.push_str("\n```\n\n");
        s
    }
}

/// The canonical payload from the entry's full payload line: `integrity` is
/// the last key, and the byte sequence `,"integrity":{` cannot occur inside a
/// JSON string (its quote would be escaped), so the split is unambiguous.
fn canonical_from_line(line: &str, integrity: &Integrity) -> Vec<u8> {
    #[derive(Serialize)]
    struct Covered<'a> {
        mode: Mode,
        verified_at: &'a str,
    }
    let Some(pos) = line.rfind(",\"integrity\":{") else { return Vec::new() };
    let Ok(covered) = serde_json::to_vec(&Covered { mode: integrity.mode, verified_at: &integrity.verified_at }) else {
        return Vec::new();
    };
    let mut out = Vec::with_capacity(pos + covered.len() + 16);
    out.extend_from_slice(&line.as_bytes()[..pos]);
    out.extend_from_slice(b",\"integrity\":");
    out.extend_from_slice(&covered);
    out.push(b'}');
    out
}

/// Why one entry block failed to parse.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockError {
    pub code: crate::codes::Code,
    pub message: String,
}

/// Parse one rendered block back into an entry, requiring canonical JSON and
/// an identical re-rendering.
pub fn parse_block(block: &str) -> std::result::Result<Entry, BlockError> {
    parse_block_canonical(block).map(|(e, _)| e)
}

/// [`parse_block`] plus the entry's canonical payload (computed once).
pub fn parse_block_canonical(block: &str) -> std::result::Result<(Entry, Vec<u8>), BlockError> {
    let fence = "\n```json\n";
    let Some(start) = block.find(fence) else {
        return Err(BlockError { code: crate::codes::ENTRY_TRUNCATED, message: "entry has no payload fence".into() });
    };
    let rest = &block[start + fence.len()..];
    let Some(end) = rest.find('\n') else {
        return Err(BlockError { code: crate::codes::ENTRY_TRUNCATED, message: "entry payload line is not terminated".into() });
    };
    let line = &rest[..end];
    let entry: Entry = serde_json::from_str(line).map_err(|e| match malformed_action_hash(line) {
        // A stored action hash that does not parse is a bad field, as the
        // chain's other field checks report theirs.
        Some(seq) => {
            BlockError { code: crate::codes::ENTRY_FIELD_INVALID, message: format!("entry {seq} has a malformed action_hash: {e}") }
        }
        None => BlockError { code: crate::codes::ENTRY_MALFORMED, message: format!("entry payload is not a valid entry: {e}") },
    })?;
    let again = entry.payload_line();
    if again != line {
        return Err(BlockError {
            code: crate::codes::ENTRY_NOT_CANONICAL,
            message: format!("entry {} payload is not canonical JSON", entry.entry_seq),
        });
    }
    if entry.render_with(&again) != block {
        let code = if !block.ends_with("\n```\n\n") { crate::codes::ENTRY_TRUNCATED } else { crate::codes::ENTRY_RENDERING_MISMATCH };
        return Err(BlockError { code, message: format!("entry {} text does not match its payload", entry.entry_seq) });
    }
    let canonical = canonical_from_line(&again, &entry.integrity);
    Ok((entry, canonical))
}

/// When the payload line is a JSON object whose `action_hash` is a string
/// that [`action_or_none::parse`] refuses: its `entry_seq` (0 when absent).
fn malformed_action_hash(line: &str) -> Option<u64> {
    let v: serde_json::Value = serde_json::from_str(line).ok()?;
    let text = v.get("action_hash")?.as_str()?;
    action_or_none::parse(text).is_err().then(|| v.get("entry_seq").and_then(serde_json::Value::as_u64).unwrap_or(0))
}

/// Split a file body (after the header) into entry blocks at lines starting
/// with `## Entry `.
pub fn split_blocks(body: &str) -> Vec<&str> {
    let mut starts = Vec::new();
    if body.starts_with("## Entry ") {
        starts.push(0);
    }
    let mut from = 0;
    while let Some(rel) = body[from..].find("\n## Entry ") {
        starts.push(from + rel + 1);
        from = from + rel + 1;
    }
    if starts.first() != Some(&0) && !body.is_empty() {
        starts.insert(0, 0);
    }
    let mut blocks = Vec::with_capacity(starts.len());
    for (i, &s) in starts.iter().enumerate() {
        let e = starts.get(i + 1).copied().unwrap_or(body.len());
        blocks.push(&body[s..e]);
    }
    blocks
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_payload_equals_the_value_definition() {
        let line = r#"{"schema":"memory-latch.entry/v2","entry_seq":1,"event":"init","updated_at":"1970-01-01T00:00:00.001Z","updated_at_ms":1,"boot_id":"unknown","objective":"has \",\"integrity\":{ inside","non_negotiables":[],"last_good_checkpoint":"none","blocked_by":"none","next_single_step":"none","known_state":[],"unknown_state":[],"decisions":[],"consent_state":"pending","irreversible_action_pending":"none","action_hash":"none","recovery_attempts":0,"risk_level":"low","silent_witness":false,"details":[],"prev_payload_hash":"none","sealed_segment":null,"reseeded_from":null,"governance":{"checkpoint_freq_turns":5,"compost_keep_decisions":3,"compost_retire_turns":20,"fatigue_trigger_context_ratio":0.75,"token_ttl_minutes":10,"token_single_use":true,"lock_timeout_ms":800,"max_recovery_attempts":3},"storage":{"root":"/r","manifest_path":"/r/m","lock_path":"/r/l","token_ledger_path":"/r/t"},"integrity":{"mode":"checksum","payload_hash":"x","hmac_signature":"none","verified_at":"v"}}"#;
        let e: Entry = serde_json::from_str(line).unwrap();
        assert_eq!(e.payload_line(), line);
        // Oracle: the definition via a JSON value with integrity replaced.
        let mut v: serde_json::Value = serde_json::from_str(line).unwrap();
        v["integrity"] = serde_json::json!({"mode":"checksum","verified_at":"v"});
        assert_eq!(e.canonical_payload(), serde_json::to_vec(&v).unwrap());
        let (parsed, canon) = parse_block_canonical(&e.render()).unwrap();
        assert_eq!(parsed, e);
        assert_eq!(canon, e.canonical_payload());
    }

    /// The entry of [`canonical_payload_equals_the_value_definition`] with
    /// its stored `action_hash` text replaced by `text`.
    fn line_with_action(text: &str) -> String {
        let line = r#"{"schema":"memory-latch.entry/v2","entry_seq":3,"event":"consent_request","updated_at":"1970-01-01T00:00:00.001Z","updated_at_ms":1,"boot_id":"unknown","objective":"o","non_negotiables":[],"last_good_checkpoint":"none","blocked_by":"none","next_single_step":"none","known_state":[],"unknown_state":[],"decisions":[],"consent_state":"pending","irreversible_action_pending":"tok_0123456789abcdef","action_hash":"ACTION","recovery_attempts":0,"risk_level":"low","silent_witness":false,"details":[],"prev_payload_hash":"none","sealed_segment":null,"reseeded_from":null,"governance":{"checkpoint_freq_turns":5,"compost_keep_decisions":3,"compost_retire_turns":20,"fatigue_trigger_context_ratio":0.75,"token_ttl_minutes":10,"token_single_use":true,"lock_timeout_ms":800,"max_recovery_attempts":3},"storage":{"root":"/r","manifest_path":"/r/m","lock_path":"/r/l","token_ledger_path":"/r/t"},"integrity":{"mode":"checksum","payload_hash":"x","hmac_signature":"none","verified_at":"v"}}"#;
        line.replace("ACTION", text)
    }

    #[test]
    fn a_stored_action_hash_is_typed_and_written_back_byte_for_byte() {
        let hash = ActionHash::of_canonical(b"rm -rf target\n");
        for (text, want) in [("none", None), (hash.as_str(), Some(hash.clone()))] {
            let line = line_with_action(text);
            let e: Entry = serde_json::from_str(&line).unwrap();
            assert_eq!(e.action_hash, want, "{text}");
            assert_eq!(e.payload_line(), line, "the same bytes back");
            let block = e.render();
            assert!(block.contains(&format!("- consent: pending · action {text} · pending tok_0123456789abcdef\n")), "{block}");
            assert_eq!(parse_block(&block).unwrap(), e);
        }
    }

    #[test]
    fn a_stored_action_hash_that_does_not_parse_is_a_bad_field() {
        // A valid entry's block with its hash replaced (in the text line and
        // the payload alike): only the action hash is wrong.
        let good = ActionHash::of_canonical(b"a");
        let block = serde_json::from_str::<Entry>(&line_with_action(good.as_str())).unwrap().render();
        let zeros = format!("sha256:{}", "0".repeat(64));
        let upper = good.as_str().to_ascii_uppercase();
        for bad in ["sha256:xyz", zeros.as_str(), upper.as_str(), "", "None", "md5:00"] {
            let err = parse_block(&block.replace(good.as_str(), bad)).unwrap_err();
            assert_eq!(err.code, crate::codes::ENTRY_FIELD_INVALID, "{bad}: {}", err.message);
            assert!(err.message.starts_with("entry 3 has a malformed action_hash"), "{}", err.message);
        }
        // Not a string at all: the payload is not an entry.
        let e: Entry = serde_json::from_str(&line_with_action(good.as_str())).unwrap();
        let block = e.render().replace(&format!("\"action_hash\":\"{good}\""), "\"action_hash\":7");
        assert_eq!(parse_block(&block).unwrap_err().code, crate::codes::ENTRY_MALFORMED);
    }
}
