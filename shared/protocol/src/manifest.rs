//! The pointer manifest (docs/protocol.md §4) and the snapshot digest of
//! section 5. The canonical JSON printer and the strict parser it relies on
//! live in [`crate::json`] ([`canonical_json`] and [`js_number`] are
//! re-exported here).
//!
//! # Parsing a manifest
//!
//! [`parse_manifest`] (and [`parse_manifest_unbound`], which skips only the
//! two id equalities) checks, in this order: size, UTF-8, JSON syntax with a
//! strict own parser (which also records duplicate keys, lone surrogate
//! escapes and every token JavaScript would print differently), then byte
//! identity with [`canonical_json`] of the parsed value, then the schema
//! top-down in document order, then the cross-field rules. The first failure
//! wins, so each input has exactly one stable answer.
//!
//! Every rejection's [`Error::code`] is one of the two protocol codes
//! [`CODE_NOT_CANONICAL`] or [`CODE_INVALID`]; its detail is
//! `{"rule":"<rule>"}` with one of the rules below (see [`rule_of`]).
//!
//! | rule | code | rejected when |
//! |---|---|---|
//! | `too_large` | invalid | more than 65536 bytes |
//! | `not_utf8` | invalid | bytes are not UTF-8 |
//! | `not_json` | invalid | not one JSON value (syntax error, empty, trailing data, BOM) |
//! | `too_deep` | invalid | nesting deeper than 32 arrays/objects |
//! | `whitespace` | not_canonical | whitespace between tokens, or before/after the value (trailing newline) |
//! | `escape_form` | not_canonical | a string escape `JSON.stringify` would not print (`\/`, `\u0041`, `\u001F`, escaped pair, `\uD800`) |
//! | `number_form` | not_canonical | a number `JSON.stringify` would print differently (`1e3`, `1.0`, `-0`, `1E2`, beyond 2^53 and inexact, overflow) |
//! | `duplicate_key` | not_canonical | the same key twice in one object |
//! | `key_order` | not_canonical | the right keys of an object in another order than section 4 |
//! | `string_lone_surrogate` | invalid | a string (or key) holds a lone surrogate escape such as `\ud800` |
//! | `type_mismatch` | invalid | a value has the wrong JSON type (root, `lock`, `task`, `gate`, anchor not an object; list not an array; text not a string) |
//! | `unknown_key` | invalid | an object (root, `lock`, `task`, `gate`) has a key section 4 does not name |
//! | `missing_key` | invalid | an object (root, `lock`, `task`, `gate`) lacks a key |
//! | `schema_mismatch` | invalid | `schema` is not exactly `kijito.codex.current-state/v1` |
//! | `pointer_id_invalid` | invalid | `pointerId` is not a positive safe integer |
//! | `pointer_id_mismatch` | invalid | `pointerId` differs from the configured pointer id |
//! | `lock_protocol_invalid` | invalid | `lock.protocol` is not exactly `kijito-message-claim/v1` |
//! | `lock_message_id_invalid` | invalid | `lock.messageId` is not a positive safe integer |
//! | `lock_message_id_mismatch` | invalid | `lock.messageId` differs from the configured lock id |
//! | `state_invalid` | invalid | `state` is not `active` or `complete` |
//! | `string_empty` | invalid | a text (`title`, `nextAction`, list item, `purpose`) is empty |
//! | `string_too_long` | invalid | a text exceeds 2000 UTF-16 code units (`purpose`: 500) |
//! | `string_control_char` | invalid | a text holds U+0000-U+0008, U+000B, U+000C, U+000E-U+001F or U+007F |
//! | `string_untrimmed` | invalid | a text starts or ends with JavaScript whitespace (`String.prototype.trim`) |
//! | `list_too_long` | invalid | `done`, `remaining` or `doneWhen` has more than 100 items |
//! | `list_duplicate` | invalid | an item occurs twice in one list |
//! | `done_and_remaining_overlap` | invalid | an item is both in `done` and in `remaining` |
//! | `done_when_empty` | invalid | `doneWhen` is empty |
//! | `gate_required_invalid` | invalid | `gate.requiredConsecutiveGreens` is not the integer 2 |
//! | `gate_greens_invalid` | invalid | `gate.consecutiveGreens` is not an integer in 0..=2 |
//! | `gate_artifact_digest_invalid` | invalid | `gate.artifactDigest` is not null while greens are 0, or not a digest while greens are 1 or 2 |
//! | `anchors_too_many` | invalid | more than 64 anchors |
//! | `anchor_keys_invalid` | invalid | an anchor has no `status`, or not exactly the key set of its status |
//! | `anchor_status_invalid` | invalid | an anchor's `status` is not `current` or `retired` |
//! | `anchor_id_invalid` | invalid | an anchor id is not a positive safe integer |
//! | `anchor_id_duplicate` | invalid | two anchors have the same id |
//! | `anchor_sha256_invalid` | invalid | a current anchor's `sha256` is not a lowercase hex SHA-256 |
//! | `anchor_superseded_by_invalid` | invalid | a retired anchor's `supersededBy` is not a positive safe integer |
//! | `anchor_superseded_by_unknown` | invalid | a retired anchor's `supersededBy` names no current anchor of the list |
//! | `active_next_action_missing` | invalid | `active` with `nextAction` null |
//! | `active_remaining_empty` | invalid | `active` with `remaining` empty |
//! | `active_no_current_anchor` | invalid | `active` without a current anchor |
//! | `complete_next_action_present` | invalid | `complete` with a non-null `nextAction` |
//! | `complete_remaining_nonempty` | invalid | `complete` with items in `remaining` |
//!
//! Besides these, the rule `not_canonical` guards the final byte comparison
//! with [`canonical_json`]; the parser's own findings make it unreachable by
//! construction, it is a safety net only.
//!
//! Choices where section 4 is silent: `consecutiveGreens` may be 0, 1 or 2;
//! `anchors` may be empty for a `complete` manifest; a lone surrogate is
//! rejected as soon as the JSON is otherwise canonical (JavaScript would
//! print `\ud800` back unchanged, so the string rule, not the byte rule,
//! rejects it); integers beyond 2^53-1 that JavaScript prints unchanged
//! (such as 9007199254740992) are `*_invalid`, those it would round are
//! `number_form`.

use crate::error::{Error, Result};
use crate::ids::{Digest, MemoryId, MessageId, MAX_SAFE_INTEGER};
use crate::json::{self, Fail};
pub use crate::json::{canonical_json, js_number};
use serde_json::{Map, Value};
use std::collections::HashSet;

pub use crate::codes::manifest::{INVALID as CODE_INVALID, NOT_CANONICAL as CODE_NOT_CANONICAL};
/// Largest accepted manifest, in bytes (64 KiB).
pub const MAX_MANIFEST_BYTES: usize = 64 * 1024;
/// The exact `schema` value.
pub const SCHEMA: &str = "kijito.codex.current-state/v1";
/// The exact `lock.protocol` value.
pub const LOCK_PROTOCOL: &str = "kijito-message-claim/v1";
/// The only accepted `gate.requiredConsecutiveGreens`.
pub const REQUIRED_CONSECUTIVE_GREENS: u8 = 2;
/// Maximum UTF-16 code units of a text.
pub const MAX_TEXT_UNITS: usize = 2000;
/// Maximum UTF-16 code units of an anchor `purpose`.
pub const MAX_PURPOSE_UNITS: usize = 500;
/// Maximum items of `done`, `remaining`, `doneWhen`.
pub const MAX_LIST_ITEMS: usize = 100;
/// Maximum anchors.
pub const MAX_ANCHORS: usize = 64;
/// Maximum nesting of arrays and objects the parser accepts.
pub const MAX_DEPTH: usize = 32;

/// Every rule of the module table with its protocol code, in table order.
pub const RULES: &[(&str, crate::codes::manifest::Code)] = &[
    ("too_large", CODE_INVALID),
    ("not_utf8", CODE_INVALID),
    ("not_json", CODE_INVALID),
    ("too_deep", CODE_INVALID),
    ("whitespace", CODE_NOT_CANONICAL),
    ("escape_form", CODE_NOT_CANONICAL),
    ("number_form", CODE_NOT_CANONICAL),
    ("duplicate_key", CODE_NOT_CANONICAL),
    ("key_order", CODE_NOT_CANONICAL),
    ("string_lone_surrogate", CODE_INVALID),
    ("type_mismatch", CODE_INVALID),
    ("unknown_key", CODE_INVALID),
    ("missing_key", CODE_INVALID),
    ("schema_mismatch", CODE_INVALID),
    ("pointer_id_invalid", CODE_INVALID),
    ("pointer_id_mismatch", CODE_INVALID),
    ("lock_protocol_invalid", CODE_INVALID),
    ("lock_message_id_invalid", CODE_INVALID),
    ("lock_message_id_mismatch", CODE_INVALID),
    ("state_invalid", CODE_INVALID),
    ("string_empty", CODE_INVALID),
    ("string_too_long", CODE_INVALID),
    ("string_control_char", CODE_INVALID),
    ("string_untrimmed", CODE_INVALID),
    ("list_too_long", CODE_INVALID),
    ("list_duplicate", CODE_INVALID),
    ("done_and_remaining_overlap", CODE_INVALID),
    ("done_when_empty", CODE_INVALID),
    ("gate_required_invalid", CODE_INVALID),
    ("gate_greens_invalid", CODE_INVALID),
    ("gate_artifact_digest_invalid", CODE_INVALID),
    ("anchors_too_many", CODE_INVALID),
    ("anchor_keys_invalid", CODE_INVALID),
    ("anchor_status_invalid", CODE_INVALID),
    ("anchor_id_invalid", CODE_INVALID),
    ("anchor_id_duplicate", CODE_INVALID),
    ("anchor_sha256_invalid", CODE_INVALID),
    ("anchor_superseded_by_invalid", CODE_INVALID),
    ("anchor_superseded_by_unknown", CODE_INVALID),
    ("active_next_action_missing", CODE_INVALID),
    ("active_remaining_empty", CODE_INVALID),
    ("active_no_current_anchor", CODE_INVALID),
    ("complete_next_action_present", CODE_INVALID),
    ("complete_remaining_nonempty", CODE_INVALID),
];

/// The safety-net rule of the final byte comparison (not in [`RULES`]: it
/// cannot be reached while the parser's findings are complete).
pub const RULE_NOT_CANONICAL: &str = "not_canonical";

/// The rule code of a manifest rejection, if `err` is one.
pub fn rule_of(err: &Error) -> Option<&str> {
    err.code_as::<crate::codes::manifest::Code>()?;
    err.detail()?.get("rule")?.as_str()
}

fn reject(rule: &'static str, message: impl Into<String>) -> Error {
    let code = RULES.iter().find(|(r, _)| *r == rule).map(|(_, c)| *c).unwrap_or(if rule == RULE_NOT_CANONICAL {
        CODE_NOT_CANONICAL
    } else {
        CODE_INVALID
    });
    Error::new(code, format!("{rule}: {}", message.into())).with_detail(serde_json::json!({ "rule": rule }))
}

/// Parse bytes as strict JSON and require the canonical form; returns the
/// value in document order.
fn parse_canonical(bytes: &[u8]) -> Result<Value> {
    if bytes.len() > MAX_MANIFEST_BYTES {
        return Err(reject("too_large", format!("{} bytes, at most {MAX_MANIFEST_BYTES}", bytes.len())));
    }
    let text = std::str::from_utf8(bytes).map_err(|e| reject("not_utf8", format!("invalid UTF-8 at byte {}", e.valid_up_to())))?;
    let parsed = match json::parse_strict(text, MAX_DEPTH) {
        Ok(parsed) => parsed,
        Err(Fail::Syntax(at)) => return Err(reject("not_json", format!("JSON syntax error at byte {at}"))),
        Err(Fail::TooDeep(at)) => return Err(reject("too_deep", format!("nesting deeper than {MAX_DEPTH} at byte {at}"))),
    };
    let value = parsed.value;
    if let Some((at, rule)) = parsed.non_canonical {
        return Err(reject(rule, format!("not what JSON.stringify prints, at byte {at}")));
    }
    if let Some(at) = parsed.lone_surrogate {
        return Err(reject("string_lone_surrogate", format!("lone surrogate escape at byte {at}")));
    }
    if canonical_json(&value).as_bytes() != bytes {
        return Err(reject(RULE_NOT_CANONICAL, "bytes differ from the canonical serialisation"));
    }
    Ok(value)
}

// ---------------------------------------------------------------------------
// Typed manifest
// ---------------------------------------------------------------------------

/// `state` of the manifest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum State {
    Active,
    Complete,
}

impl State {
    pub fn as_str(self) -> &'static str {
        match self {
            State::Active => "active",
            State::Complete => "complete",
        }
    }
}

/// `task.gate`; `requiredConsecutiveGreens` is always 2.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Gate {
    pub consecutive_greens: u8,
    pub artifact_digest: Option<Digest>,
}

/// `task`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Task {
    pub title: String,
    pub next_action: Option<String>,
    pub done: Vec<String>,
    pub remaining: Vec<String>,
    pub done_when: Vec<String>,
    pub gate: Gate,
}

/// One entry of `anchors`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Anchor {
    Current { id: MemoryId, sha256: Digest, purpose: String },
    Retired { id: MemoryId, superseded_by: MemoryId, purpose: String },
}

impl Anchor {
    pub fn id(&self) -> MemoryId {
        match self {
            Anchor::Current { id, .. } | Anchor::Retired { id, .. } => *id,
        }
    }
}

/// A parsed, fully validated pointer manifest.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Manifest {
    pub pointer_id: MemoryId,
    pub lock_message_id: MessageId,
    pub state: State,
    pub task: Task,
    pub anchors: Vec<Anchor>,
}

fn strings(items: &[String]) -> Value {
    Value::Array(items.iter().cloned().map(Value::String).collect())
}

impl Manifest {
    /// The manifest as a JSON value, keys in section 4 order.
    pub fn to_value(&self) -> Value {
        let mut root = Map::new();
        root.insert("schema".into(), SCHEMA.into());
        root.insert("pointerId".into(), self.pointer_id.get().into());
        let mut lock = Map::new();
        lock.insert("protocol".into(), LOCK_PROTOCOL.into());
        lock.insert("messageId".into(), self.lock_message_id.get().into());
        root.insert("lock".into(), Value::Object(lock));
        root.insert("state".into(), self.state.as_str().into());
        root.insert("task".into(), self.task_value());
        let anchors = self
            .anchors
            .iter()
            .map(|anchor| {
                let mut a = Map::new();
                match anchor {
                    Anchor::Current { id, sha256, purpose } => {
                        a.insert("id".into(), id.get().into());
                        a.insert("status".into(), "current".into());
                        a.insert("sha256".into(), sha256.as_str().into());
                        a.insert("purpose".into(), purpose.as_str().into());
                    }
                    Anchor::Retired { id, superseded_by, purpose } => {
                        a.insert("id".into(), id.get().into());
                        a.insert("status".into(), "retired".into());
                        a.insert("supersededBy".into(), superseded_by.get().into());
                        a.insert("purpose".into(), purpose.as_str().into());
                    }
                }
                Value::Object(a)
            })
            .collect();
        root.insert("anchors".into(), Value::Array(anchors));
        Value::Object(root)
    }

    /// The canonical serialisation (what is stored as the pointer content).
    pub fn to_canonical(&self) -> String {
        canonical_json(&self.to_value())
    }

    /// The task object exactly as in the manifest (key order preserved).
    pub fn task_value(&self) -> Value {
        let t = &self.task;
        let mut task = Map::new();
        task.insert("title".into(), t.title.as_str().into());
        task.insert("nextAction".into(), t.next_action.as_deref().map_or(Value::Null, Value::from));
        task.insert("done".into(), strings(&t.done));
        task.insert("remaining".into(), strings(&t.remaining));
        task.insert("doneWhen".into(), strings(&t.done_when));
        let mut gate = Map::new();
        gate.insert("requiredConsecutiveGreens".into(), REQUIRED_CONSECUTIVE_GREENS.into());
        gate.insert("consecutiveGreens".into(), t.gate.consecutive_greens.into());
        gate.insert("artifactDigest".into(), t.gate.artifact_digest.as_ref().map_or(Value::Null, |d| d.as_str().into()));
        task.insert("gate".into(), Value::Object(gate));
        Value::Object(task)
    }

    /// Current anchors `(id, sha256)` in manifest order.
    pub fn current_anchors(&self) -> Vec<(MemoryId, Digest)> {
        self.anchors
            .iter()
            .filter_map(|a| match a {
                Anchor::Current { id, sha256, .. } => Some((*id, sha256.clone())),
                Anchor::Retired { .. } => None,
            })
            .collect()
    }

    /// Check every rule on this value (e.g. one built in code before it is
    /// published): its canonical form must parse back to itself.
    pub fn validate(&self) -> Result<()> {
        let parsed = parse_manifest_unbound(self.to_canonical().as_bytes())?;
        if &parsed == self {
            Ok(())
        } else {
            Err(reject(RULE_NOT_CANONICAL, "manifest does not round-trip"))
        }
    }
}

// ---------------------------------------------------------------------------
// Validation
// ---------------------------------------------------------------------------

/// Parse and validate a manifest against the configured pointer and lock ids.
pub fn parse_manifest(bytes: &[u8], pointer_id: MemoryId, lock_message_id: MessageId) -> Result<Manifest> {
    parse(bytes, Some((pointer_id, lock_message_id)))
}

/// Every rule except the two id equalities, for callers that learn the ids
/// from the manifest itself.
pub fn parse_manifest_unbound(bytes: &[u8]) -> Result<Manifest> {
    parse(bytes, None)
}

const ROOT_KEYS: &[&str] = &["schema", "pointerId", "lock", "state", "task", "anchors"];
const LOCK_KEYS: &[&str] = &["protocol", "messageId"];
const TASK_KEYS: &[&str] = &["title", "nextAction", "done", "remaining", "doneWhen", "gate"];
const GATE_KEYS: &[&str] = &["requiredConsecutiveGreens", "consecutiveGreens", "artifactDigest"];
const CURRENT_KEYS: &[&str] = &["id", "status", "sha256", "purpose"];
const RETIRED_KEYS: &[&str] = &["id", "status", "supersededBy", "purpose"];

fn clip(text: &str) -> String {
    crate::ids::clip(text)
}

fn object<'v>(value: &'v Value, path: &str) -> Result<&'v Map<String, Value>> {
    value.as_object().ok_or_else(|| reject("type_mismatch", format!("{path} must be an object")))
}

fn field<'v>(map: &'v Map<String, Value>, key: &str) -> &'v Value {
    // Keys were checked before any field is read.
    map.get(key).unwrap_or(&Value::Null)
}

fn exact_keys(map: &Map<String, Value>, expected: &[&str], path: &str) -> Result<()> {
    if let Some(key) = map.keys().find(|k| !expected.contains(&k.as_str())) {
        return Err(reject("unknown_key", format!("{path} has unknown key {:?}", clip(key))));
    }
    if let Some(key) = expected.iter().find(|k| !map.contains_key(**k)) {
        return Err(reject("missing_key", format!("{path} lacks key {key:?}")));
    }
    key_order(map, expected, path)
}

fn key_order(map: &Map<String, Value>, expected: &[&str], path: &str) -> Result<()> {
    if map.keys().map(String::as_str).eq(expected.iter().copied()) {
        Ok(())
    } else {
        Err(reject("key_order", format!("{path} keys must be in the order {}", expected.join(","))))
    }
}

fn safe_positive(value: &Value) -> Option<u64> {
    value.as_u64().filter(|n| (1..=MAX_SAFE_INTEGER).contains(n))
}

/// JavaScript WhiteSpace and LineTerminator (what `String.prototype.trim` strips).
pub fn is_js_whitespace(c: char) -> bool {
    matches!(
        c,
        '\u{9}'..='\u{D}'
            | ' '
            | '\u{A0}'
            | '\u{1680}'
            | '\u{2000}'..='\u{200A}'
            | '\u{2028}'
            | '\u{2029}'
            | '\u{202F}'
            | '\u{205F}'
            | '\u{3000}'
            | '\u{FEFF}'
    )
}

fn is_forbidden_control(c: char) -> bool {
    matches!(c, '\u{0}'..='\u{8}' | '\u{B}' | '\u{C}' | '\u{E}'..='\u{1F}' | '\u{7F}')
}

fn text(value: &Value, max_units: usize, path: &str) -> Result<String> {
    let s = value.as_str().ok_or_else(|| reject("type_mismatch", format!("{path} must be a string")))?;
    if s.is_empty() {
        return Err(reject("string_empty", format!("{path} is empty")));
    }
    let units = s.encode_utf16().count();
    if units > max_units {
        return Err(reject("string_too_long", format!("{path} has {units} UTF-16 code units, at most {max_units}")));
    }
    if s.chars().any(is_forbidden_control) {
        return Err(reject("string_control_char", format!("{path} contains a control character")));
    }
    if s.starts_with(is_js_whitespace) || s.ends_with(is_js_whitespace) {
        return Err(reject("string_untrimmed", format!("{path} has leading or trailing whitespace")));
    }
    Ok(s.to_owned())
}

fn list(value: &Value, path: &str) -> Result<Vec<String>> {
    let items = value.as_array().ok_or_else(|| reject("type_mismatch", format!("{path} must be an array")))?;
    if items.len() > MAX_LIST_ITEMS {
        return Err(reject("list_too_long", format!("{path} has {} items, at most {MAX_LIST_ITEMS}", items.len())));
    }
    let mut out = Vec::with_capacity(items.len());
    let mut seen = HashSet::new();
    for (i, item) in items.iter().enumerate() {
        let s = text(item, MAX_TEXT_UNITS, &format!("{path}[{i}]"))?;
        if !seen.insert(s.clone()) {
            return Err(reject("list_duplicate", format!("{path}[{i}] repeats an earlier item")));
        }
        out.push(s);
    }
    Ok(out)
}

fn gate(value: &Value) -> Result<Gate> {
    let map = object(value, "task.gate")?;
    exact_keys(map, GATE_KEYS, "task.gate")?;
    if field(map, "requiredConsecutiveGreens").as_u64() != Some(u64::from(REQUIRED_CONSECUTIVE_GREENS)) {
        return Err(reject("gate_required_invalid", "task.gate.requiredConsecutiveGreens must be 2"));
    }
    let greens = match field(map, "consecutiveGreens").as_u64() {
        Some(n @ 0..=2) => n as u8,
        _ => return Err(reject("gate_greens_invalid", "task.gate.consecutiveGreens must be an integer 0, 1 or 2")),
    };
    let digest = field(map, "artifactDigest");
    let artifact_digest = match (greens, digest) {
        (0, Value::Null) => None,
        (0, _) => return Err(reject("gate_artifact_digest_invalid", "task.gate.artifactDigest must be null while consecutiveGreens is 0")),
        (_, Value::String(s)) => Some(
            Digest::parse(s)
                .map_err(|_| reject("gate_artifact_digest_invalid", "task.gate.artifactDigest must be a lowercase hex SHA-256"))?,
        ),
        _ => return Err(reject("gate_artifact_digest_invalid", "task.gate.artifactDigest must be a digest while consecutiveGreens > 0")),
    };
    Ok(Gate { consecutive_greens: greens, artifact_digest })
}

fn task(value: &Value) -> Result<Task> {
    let map = object(value, "task")?;
    exact_keys(map, TASK_KEYS, "task")?;
    let title = text(field(map, "title"), MAX_TEXT_UNITS, "task.title")?;
    let next_action = match field(map, "nextAction") {
        Value::Null => None,
        other => Some(text(other, MAX_TEXT_UNITS, "task.nextAction")?),
    };
    let done = list(field(map, "done"), "task.done")?;
    let remaining = list(field(map, "remaining"), "task.remaining")?;
    if let Some(i) = remaining.iter().position(|r| done.contains(r)) {
        return Err(reject("done_and_remaining_overlap", format!("task.remaining[{i}] is also in task.done")));
    }
    let done_when = list(field(map, "doneWhen"), "task.doneWhen")?;
    if done_when.is_empty() {
        return Err(reject("done_when_empty", "task.doneWhen must not be empty"));
    }
    let gate = gate(field(map, "gate"))?;
    Ok(Task { title, next_action, done, remaining, done_when, gate })
}

fn anchors(value: &Value) -> Result<Vec<Anchor>> {
    let items = value.as_array().ok_or_else(|| reject("type_mismatch", "anchors must be an array"))?;
    if items.len() > MAX_ANCHORS {
        return Err(reject("anchors_too_many", format!("{} anchors, at most {MAX_ANCHORS}", items.len())));
    }
    let mut out = Vec::with_capacity(items.len());
    let mut ids = HashSet::new();
    for (i, item) in items.iter().enumerate() {
        let path = format!("anchors[{i}]");
        let map = object(item, &path)?;
        let keys = match map.get("status") {
            None => return Err(reject("anchor_keys_invalid", format!("{path} has no status"))),
            Some(Value::String(s)) if s == "current" => CURRENT_KEYS,
            Some(Value::String(s)) if s == "retired" => RETIRED_KEYS,
            Some(_) => return Err(reject("anchor_status_invalid", format!("{path}.status must be current or retired"))),
        };
        let same_set = map.len() == keys.len() && keys.iter().all(|k| map.contains_key(*k));
        if !same_set {
            return Err(reject("anchor_keys_invalid", format!("{path} must have exactly the keys {}", keys.join(","))));
        }
        key_order(map, keys, &path)?;
        let id = safe_positive(field(map, "id"))
            .and_then(|n| MemoryId::new(n).ok())
            .ok_or_else(|| reject("anchor_id_invalid", format!("{path}.id must be a positive safe integer")))?;
        if !ids.insert(id) {
            return Err(reject("anchor_id_duplicate", format!("{path}.id {id} repeats an earlier anchor")));
        }
        let anchor = if keys == CURRENT_KEYS {
            let sha256 = field(map, "sha256")
                .as_str()
                .and_then(|s| Digest::parse(s).ok())
                .ok_or_else(|| reject("anchor_sha256_invalid", format!("{path}.sha256 must be a lowercase hex SHA-256")))?;
            let purpose = text(field(map, "purpose"), MAX_PURPOSE_UNITS, &format!("{path}.purpose"))?;
            Anchor::Current { id, sha256, purpose }
        } else {
            let superseded_by = safe_positive(field(map, "supersededBy"))
                .and_then(|n| MemoryId::new(n).ok())
                .ok_or_else(|| reject("anchor_superseded_by_invalid", format!("{path}.supersededBy must be a positive safe integer")))?;
            let purpose = text(field(map, "purpose"), MAX_PURPOSE_UNITS, &format!("{path}.purpose"))?;
            Anchor::Retired { id, superseded_by, purpose }
        };
        out.push(anchor);
    }
    let current: HashSet<MemoryId> = out.iter().filter(|a| matches!(a, Anchor::Current { .. })).map(Anchor::id).collect();
    for (i, anchor) in out.iter().enumerate() {
        if let Anchor::Retired { superseded_by, .. } = anchor {
            if !current.contains(superseded_by) {
                return Err(reject(
                    "anchor_superseded_by_unknown",
                    format!("anchors[{i}].supersededBy {superseded_by} names no current anchor of this manifest"),
                ));
            }
        }
    }
    Ok(out)
}

fn parse(bytes: &[u8], bound: Option<(MemoryId, MessageId)>) -> Result<Manifest> {
    let value = parse_canonical(bytes)?;
    let root = object(&value, "manifest")?;
    exact_keys(root, ROOT_KEYS, "manifest")?;
    if field(root, "schema").as_str() != Some(SCHEMA) {
        return Err(reject("schema_mismatch", format!("schema must be {SCHEMA}")));
    }
    let pointer_id = safe_positive(field(root, "pointerId"))
        .and_then(|n| MemoryId::new(n).ok())
        .ok_or_else(|| reject("pointer_id_invalid", "pointerId must be a positive safe integer"))?;
    if let Some((expected, _)) = bound {
        if pointer_id != expected {
            return Err(reject("pointer_id_mismatch", format!("pointerId {pointer_id} is not the configured pointer {expected}")));
        }
    }
    let lock = object(field(root, "lock"), "lock")?;
    exact_keys(lock, LOCK_KEYS, "lock")?;
    if field(lock, "protocol").as_str() != Some(LOCK_PROTOCOL) {
        return Err(reject("lock_protocol_invalid", format!("lock.protocol must be {LOCK_PROTOCOL}")));
    }
    let lock_message_id = safe_positive(field(lock, "messageId"))
        .and_then(|n| MessageId::new(n).ok())
        .ok_or_else(|| reject("lock_message_id_invalid", "lock.messageId must be a positive safe integer"))?;
    if let Some((_, expected)) = bound {
        if lock_message_id != expected {
            return Err(reject(
                "lock_message_id_mismatch",
                format!("lock.messageId {lock_message_id} is not the configured lock {expected}"),
            ));
        }
    }
    let state = match field(root, "state").as_str() {
        Some("active") => State::Active,
        Some("complete") => State::Complete,
        _ => return Err(reject("state_invalid", "state must be active or complete")),
    };
    let task = task(field(root, "task"))?;
    let anchors = anchors(field(root, "anchors"))?;
    match state {
        State::Active => {
            if task.next_action.is_none() {
                return Err(reject("active_next_action_missing", "an active manifest needs a nextAction"));
            }
            if task.remaining.is_empty() {
                return Err(reject("active_remaining_empty", "an active manifest needs remaining items"));
            }
            if !anchors.iter().any(|a| matches!(a, Anchor::Current { .. })) {
                return Err(reject("active_no_current_anchor", "an active manifest needs a current anchor"));
            }
        }
        State::Complete => {
            if task.next_action.is_some() {
                return Err(reject("complete_next_action_present", "a complete manifest has nextAction null"));
            }
            if !task.remaining.is_empty() {
                return Err(reject("complete_remaining_nonempty", "a complete manifest has no remaining items"));
            }
        }
    }
    Ok(Manifest { pointer_id, lock_message_id, state, task, anchors })
}

// ---------------------------------------------------------------------------
// Snapshot digest (section 5)
// ---------------------------------------------------------------------------

/// `snapshotDigest`: SHA-256 of
/// `{"pointerId":n,"pointerDigest":"d","lockMessageId":m,"anchors":[{"id":a,"sha256":"d"},...]}`
/// with the current anchors in manifest order.
pub fn snapshot_digest(pointer_id: MemoryId, pointer_digest: &Digest, lock: MessageId, anchors: &[(MemoryId, Digest)]) -> Digest {
    let mut root = Map::new();
    root.insert("pointerId".into(), pointer_id.get().into());
    root.insert("pointerDigest".into(), pointer_digest.as_str().into());
    root.insert("lockMessageId".into(), lock.get().into());
    let list = anchors
        .iter()
        .map(|(id, sha)| {
            let mut a = Map::new();
            a.insert("id".into(), id.get().into());
            a.insert("sha256".into(), sha.as_str().into());
            Value::Object(a)
        })
        .collect();
    root.insert("anchors".into(), Value::Array(list));
    Digest::of(canonical_json(&Value::Object(root)).as_bytes())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    const BASE: &str = r#"{"schema":"kijito.codex.current-state/v1","pointerId":21813,"lock":{"protocol":"kijito-message-claim/v1","messageId":1234},"state":"active","task":{"title":"Ship it","nextAction":"Test it","done":["Read"],"remaining":["Write"],"doneWhen":["green"],"gate":{"requiredConsecutiveGreens":2,"consecutiveGreens":0,"artifactDigest":null}},"anchors":[{"id":22131,"status":"current","sha256":"DIGEST","purpose":"Design"},{"id":22096,"status":"retired","supersededBy":22131,"purpose":"Old"}]}"#;

    fn digest() -> String {
        Digest::of(b"anchor").as_str().to_owned()
    }

    fn base() -> String {
        BASE.replace("DIGEST", &digest())
    }

    fn pid() -> MemoryId {
        MemoryId::new(21813).unwrap()
    }

    fn lock() -> MessageId {
        MessageId::new(1234).unwrap()
    }

    fn parse_str(text: &str) -> Result<Manifest> {
        parse_manifest(text.as_bytes(), pid(), lock())
    }

    /// Replace exactly one occurrence of `old` in the base manifest.
    fn edit(old: &str, new: &str) -> String {
        let b = base();
        assert_eq!(b.matches(old).count(), 1, "{old}");
        b.replacen(old, new, 1)
    }

    fn rule(text: &str) -> String {
        let err = parse_str(text).unwrap_err();
        let r = rule_of(&err).unwrap().to_owned();
        let code = RULES.iter().find(|(x, _)| *x == r).map(|(_, c)| *c).unwrap();
        assert_eq!(err.code(), code.as_str(), "{r}");
        r
    }

    #[test]
    fn canonical_json_matches_json_stringify() {
        // Where serde_json's own printer differs from JSON.stringify.
        let v = json!({"a": "\u{7f}/\u{2028}\u{2029}é😀", "b": "\u{1}\u{1f}\u{8}\u{c}\n\r\t\"\\", "c": [1, -2, 1.5, 1e21, 1e-7, 0.000001, 123456789012.5]});
        assert_eq!(
            canonical_json(&v),
            "{\"a\":\"\u{7f}/\u{2028}\u{2029}é😀\",\"b\":\"\\u0001\\u001f\\b\\f\\n\\r\\t\\\"\\\\\",\"c\":[1,-2,1.5,1e+21,1e-7,0.000001,123456789012.5]}"
        );
        // serde_json prints 1e21 as "1e21" and 1.0 as "1.0"; JavaScript does not.
        assert_eq!(canonical_json(&json!(1.0)), "1");
        assert_eq!(canonical_json(&json!(-0.0)), "0");
        assert_eq!(canonical_json(&json!(u64::MAX)), "18446744073709551615");
        assert_eq!(canonical_json(&json!(i64::MIN)), "-9223372036854775808");
        assert_eq!(canonical_json(&json!({})), "{}");
        assert_eq!(canonical_json(&json!([])), "[]");
        assert_eq!(canonical_json(&json!(null)), "null");
        assert_eq!(canonical_json(&json!([true, false])), "[true,false]");
        // Key order is the value's order, not sorted.
        let mut m = Map::new();
        m.insert("z".into(), 1.into());
        m.insert("a".into(), 2.into());
        assert_eq!(canonical_json(&Value::Object(m)), r#"{"z":1,"a":2}"#);
    }

    #[test]
    fn js_number_follows_number_to_string() {
        let cases: &[(f64, &str)] = &[
            (0.0, "0"),
            (-0.0, "0"),
            (1.0, "1"),
            (-1.5, "-1.5"),
            (100.0, "100"),
            (1e20, "100000000000000000000"),
            (1e21, "1e+21"),
            (1.5e21, "1.5e+21"),
            (0.1, "0.1"),
            (0.000001, "0.000001"),
            (0.0000001, "1e-7"),
            (1.25e-7, "1.25e-7"),
            (5e-324, "5e-324"),
            (f64::MAX, "1.7976931348623157e+308"),
            (9007199254740992.0, "9007199254740992"),
            (123.456, "123.456"),
            (f64::INFINITY, "null"),
            (f64::NAN, "null"),
        ];
        for (x, want) in cases {
            assert_eq!(js_number(*x), *want, "{x}");
        }
    }

    #[test]
    fn js_number_matches_node_golden_values() {
        // Generated by fixtures/pointers/js-numbers.js with node.
        let text = include_str!("../../../fixtures/pointers/js-numbers.json");
        let pairs: Vec<(String, String)> = serde_json::from_str(text).unwrap();
        assert!(pairs.len() > 500);
        for (bits, want) in pairs {
            let x = f64::from_bits(u64::from_str_radix(&bits, 16).unwrap());
            assert_eq!(js_number(x), want, "{bits}");
            // And the parser accepts exactly that spelling as canonical.
            assert!(json::parse_strict(&want, MAX_DEPTH).is_ok_and(|p| p.non_canonical.is_none()), "{want}");
        }
    }

    #[test]
    fn base_manifest_parses_and_round_trips() {
        let m = parse_str(&base()).unwrap();
        assert_eq!(m.state, State::Active);
        assert_eq!(m.task.title, "Ship it");
        assert_eq!(m.task.next_action.as_deref(), Some("Test it"));
        assert_eq!(m.task.gate, Gate { consecutive_greens: 0, artifact_digest: None });
        assert_eq!(m.to_canonical(), base());
        assert_eq!(m.current_anchors(), vec![(MemoryId::new(22131).unwrap(), Digest::parse(&digest()).unwrap())]);
        assert_eq!(
            m.anchors[1],
            Anchor::Retired { id: MemoryId::new(22096).unwrap(), superseded_by: MemoryId::new(22131).unwrap(), purpose: "Old".into() }
        );
        let task = m.task_value();
        let keys: Vec<&str> = task.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(keys, TASK_KEYS);
        assert!(base().contains(&canonical_json(&task)));
        m.validate().unwrap();
        assert_eq!(parse_manifest_unbound(base().as_bytes()).unwrap(), m);
    }

    #[test]
    fn size_encoding_and_syntax_rules() {
        let big = vec![b' '; MAX_MANIFEST_BYTES + 1];
        let err = parse_manifest(&big, pid(), lock()).unwrap_err();
        assert_eq!(rule_of(&err), Some("too_large"));
        assert_eq!(err.code(), CODE_INVALID.as_str());
        let mut bad = base().into_bytes();
        bad[60] = 0xff;
        assert_eq!(rule_of(&parse_manifest(&bad, pid(), lock()).unwrap_err()), Some("not_utf8"));
        for text in [
            "",
            "{",
            "[1,]",
            "{\"a\" 1}",
            "nul",
            "01",
            "1.",
            "1e",
            "-",
            "\"\\x\"",
            "\"\\u12\"",
            "\"a",
            "{}{}",
            "\u{feff}{}",
            "{\"a\":\"\t\"}",
            "[1 2]",
        ] {
            assert_eq!(rule(text), "not_json", "{text:?}");
        }
        let deep = format!("{}{}", "[".repeat(MAX_DEPTH + 1), "]".repeat(MAX_DEPTH + 1));
        assert_eq!(rule(&deep), "too_deep");
        let ok_depth = format!("{}{}", "[".repeat(MAX_DEPTH), "]".repeat(MAX_DEPTH));
        assert_eq!(rule(&ok_depth), "type_mismatch");
        // Very deep input fails cleanly (no stack overflow).
        assert_eq!(rule(&"[".repeat(60_000)), "too_deep");
    }

    #[test]
    fn canonical_form_rules() {
        let cases: &[(&str, &str, &str)] = &[
            ("\"state\":\"active\"", "\"state\" :\"active\"", "whitespace"),
            ("\"state\":\"active\"", "\"state\":\"active\"\n", "whitespace"),
            ("Ship it", "Ship\\/it", "escape_form"),
            ("Ship it", "Ship \\u0069t", "escape_form"),
            ("Ship it", "Ship\\u000Ait", "escape_form"),
            ("Ship it", "Ship\\u000ait", "escape_form"),
            ("Ship it", "Ship\\u001Fit", "escape_form"),
            ("Ship it", "Ship \\ud83d\\ude00", "escape_form"),
            ("Ship it", "Ship \\uDBFF", "escape_form"),
            ("\"messageId\":1234", "\"messageId\":1.234e3", "number_form"),
            ("\"messageId\":1234", "\"messageId\":1234.0", "number_form"),
            ("\"messageId\":1234", "\"messageId\":1234e0", "number_form"),
            ("\"consecutiveGreens\":0", "\"consecutiveGreens\":-0", "number_form"),
            ("\"consecutiveGreens\":0", "\"consecutiveGreens\":-0.0", "number_form"),
            ("\"id\":22131", "\"id\":9007199254740993", "number_form"),
            ("\"id\":22131", "\"id\":123456789012345678901234567890", "number_form"),
            ("\"state\":\"active\"", "\"state\":\"active\",\"state\":\"active\"", "duplicate_key"),
            ("\"title\":\"Ship it\"", "\"title\":\"Ship it\",\"title\":\"Ship it\"", "duplicate_key"),
            (
                "\"protocol\":\"kijito-message-claim/v1\",\"messageId\":1234",
                "\"messageId\":1234,\"protocol\":\"kijito-message-claim/v1\"",
                "key_order",
            ),
            ("\"done\":[\"Read\"],\"remaining\":[\"Write\"]", "\"remaining\":[\"Write\"],\"done\":[\"Read\"]", "key_order"),
            ("\"id\":22096,\"status\":\"retired\"", "\"status\":\"retired\",\"id\":22096", "key_order"),
        ];
        for (old, new, want) in cases {
            let text = edit(old, new);
            assert_eq!(rule(&text), *want, "{new}");
            assert_eq!(parse_str(&text).unwrap_err().code(), CODE_NOT_CANONICAL.as_str(), "{new}");
        }
        // The canonical escapes are accepted (here inside strings the rules reject
        // for other reasons, proving the escape itself passed).
        assert_eq!(rule(&edit("Ship it", "Ship\\u001fit")), "string_control_char");
        assert_eq!(rule(&edit("Ship it", "Ship\\bit")), "string_control_char");
        assert_eq!(rule(&edit("Ship it", "Ship \\ud800")), "string_lone_surrogate");
        assert_eq!(rule(&edit("Ship it", "\\udc00 Ship")), "string_lone_surrogate");
        // Non-canonical findings win over a lone surrogate, like in JavaScript.
        assert_eq!(rule(&edit("Ship it", "Ship \\ud800 \\/")), "escape_form");
        // Integers JavaScript prints unchanged but beyond the safe range.
        assert_eq!(rule(&edit("\"id\":22131", "\"id\":9007199254740992")), "anchor_id_invalid");
        assert!(parse_str(&edit("Ship it", "Ship \\\"it\\\" \\\\ \\t\\n\\r ok")).is_ok());
    }

    #[test]
    fn structure_and_id_rules() {
        let cases: &[(&str, &str, &str)] = &[
            ("\"state\":\"active\"", "\"state\":\"active\",\"x\":1", "unknown_key"),
            ("\"consecutiveGreens\":0", "\"consecutiveGreens\":0,\"x\":1", "unknown_key"),
            ("\"messageId\":1234", "\"messageId\":1234,\"x\":1", "unknown_key"),
            ("\"title\":\"Ship it\",", "", "missing_key"),
            (",\"messageId\":1234", "", "missing_key"),
            ("\"task\":{", "\"task\":[{", "not_json"),
            ("\"schema\":\"kijito.codex.current-state/v1\"", "\"schema\":\"kijito.codex.current-state/v0\"", "schema_mismatch"),
            ("\"pointerId\":21813", "\"pointerId\":0", "pointer_id_invalid"),
            ("\"pointerId\":21813", "\"pointerId\":-1", "pointer_id_invalid"),
            ("\"pointerId\":21813", "\"pointerId\":1.5", "pointer_id_invalid"),
            ("\"pointerId\":21813", "\"pointerId\":null", "pointer_id_invalid"),
            ("\"pointerId\":21813", "\"pointerId\":21814", "pointer_id_mismatch"),
            ("kijito-message-claim/v1", "kijito-message-claim", "lock_protocol_invalid"),
            ("\"messageId\":1234", "\"messageId\":-1234", "lock_message_id_invalid"),
            ("\"messageId\":1234", "\"messageId\":true", "lock_message_id_invalid"),
            ("\"messageId\":1234", "\"messageId\":1235", "lock_message_id_mismatch"),
            ("\"state\":\"active\"", "\"state\":\"done\"", "state_invalid"),
            ("\"state\":\"active\"", "\"state\":1", "state_invalid"),
            ("\"title\":\"Ship it\"", "\"title\":[]", "type_mismatch"),
            ("\"lock\":{", "\"lock\":[],\"x\":{", "unknown_key"),
        ];
        for (old, new, want) in cases {
            assert_eq!(rule(&edit(old, new)), *want, "{new}");
        }
        assert_eq!(rule("[]"), "type_mismatch");
        assert_eq!(rule("{}"), "missing_key");
        assert_eq!(rule(&edit("\"lock\":{\"protocol\":\"kijito-message-claim/v1\",\"messageId\":1234}", "\"lock\":7")), "type_mismatch");
        // The unbound parser skips only the id equalities.
        assert!(parse_manifest_unbound(edit("\"pointerId\":21813", "\"pointerId\":5").as_bytes()).is_ok());
        assert!(parse_manifest_unbound(edit("\"messageId\":1234", "\"messageId\":5").as_bytes()).is_ok());
    }

    #[test]
    fn string_rules() {
        let title = |t: &str| edit("\"title\":\"Ship it\"", &format!("\"title\":{}", canonical_json(&Value::from(t))));
        assert!(parse_str(&title(&"😀".repeat(1000))).is_ok());
        assert_eq!(rule(&title(&format!("{}x", "😀".repeat(1000)))), "string_too_long");
        assert!(parse_str(&title(&"x".repeat(2000))).is_ok());
        assert_eq!(rule(&title(&"x".repeat(2001))), "string_too_long");
        assert_eq!(rule(&title("")), "string_empty");
        for c in ['\u{0}', '\u{8}', '\u{b}', '\u{c}', '\u{e}', '\u{1f}', '\u{7f}'] {
            assert_eq!(rule(&title(&format!("a{c}b"))), "string_control_char", "{c:?}");
        }
        for c in ['\t', '\n', '\r', '\u{85}', '\u{200b}'] {
            assert!(parse_str(&title(&format!("a{c}b"))).is_ok(), "{c:?}");
        }
        for ws in [
            '\u{9}', '\u{a}', '\u{b}', '\u{c}', '\u{d}', ' ', '\u{a0}', '\u{1680}', '\u{2000}', '\u{2005}', '\u{200a}', '\u{2028}',
            '\u{2029}', '\u{202f}', '\u{205f}', '\u{3000}', '\u{feff}',
        ] {
            assert!(is_js_whitespace(ws), "{ws:?}");
            // Leading and trailing are rejected (vertical tab and form feed are
            // controls too: the control rule comes first for them).
            let want = if matches!(ws, '\u{b}' | '\u{c}') { "string_control_char" } else { "string_untrimmed" };
            assert_eq!(rule(&title(&format!("{ws}a"))), want, "{ws:?}");
            assert_eq!(rule(&title(&format!("a{ws}"))), want, "{ws:?}");
        }
        for not_ws in ['\u{85}', '\u{180e}', '\u{200b}', 'x'] {
            assert!(!is_js_whitespace(not_ws), "{not_ws:?}");
            assert!(parse_str(&title(&format!("{not_ws}a{not_ws}"))).is_ok(), "{not_ws:?}");
        }
        let purpose = |p: &str| edit("\"purpose\":\"Design\"", &format!("\"purpose\":{}", canonical_json(&Value::from(p))));
        assert!(parse_str(&purpose(&"p".repeat(500))).is_ok());
        assert_eq!(rule(&purpose(&"p".repeat(501))), "string_too_long");
        assert!(parse_str(&purpose(&"😀".repeat(250))).is_ok());
        assert_eq!(rule(&purpose(&format!("{}p", "😀".repeat(250)))), "string_too_long");
        assert_eq!(rule(&edit("\"nextAction\":\"Test it\"", "\"nextAction\":\" Test\"")), "string_untrimmed");
        assert_eq!(rule(&edit("\"doneWhen\":[\"green\"]", "\"doneWhen\":[\"\"]")), "string_empty");
    }

    #[test]
    fn list_and_gate_rules() {
        let list_of = |n: usize, prefix: &str| canonical_json(&Value::from((0..n).map(|i| format!("{prefix} {i}")).collect::<Vec<_>>()));
        assert!(parse_str(&edit("\"done\":[\"Read\"]", &format!("\"done\":{}", list_of(100, "d")))).is_ok());
        let cases: Vec<(&str, String, &str)> = vec![
            ("\"done\":[\"Read\"]", format!("\"done\":{}", list_of(101, "d")), "list_too_long"),
            ("\"remaining\":[\"Write\"]", format!("\"remaining\":{}", list_of(101, "r")), "list_too_long"),
            ("\"doneWhen\":[\"green\"]", format!("\"doneWhen\":{}", list_of(101, "w")), "list_too_long"),
            ("\"done\":[\"Read\"]", "\"done\":[\"Read\",\"Read\"]".into(), "list_duplicate"),
            ("\"doneWhen\":[\"green\"]", "\"doneWhen\":[\"green\",\"green\"]".into(), "list_duplicate"),
            ("\"done\":[\"Read\"]", "\"done\":[\"Write\"]".into(), "done_and_remaining_overlap"),
            ("\"doneWhen\":[\"green\"]", "\"doneWhen\":[]".into(), "done_when_empty"),
            ("\"done\":[\"Read\"]", "\"done\":{}".into(), "type_mismatch"),
            ("\"requiredConsecutiveGreens\":2", "\"requiredConsecutiveGreens\":1".into(), "gate_required_invalid"),
            ("\"requiredConsecutiveGreens\":2", "\"requiredConsecutiveGreens\":null".into(), "gate_required_invalid"),
            ("\"consecutiveGreens\":0", "\"consecutiveGreens\":3".into(), "gate_greens_invalid"),
            ("\"consecutiveGreens\":0", "\"consecutiveGreens\":\"0\"".into(), "gate_greens_invalid"),
            ("\"artifactDigest\":null", format!("\"artifactDigest\":\"{}\"", digest()), "gate_artifact_digest_invalid"),
            ("\"consecutiveGreens\":0", "\"consecutiveGreens\":1".into(), "gate_artifact_digest_invalid"),
        ];
        for (old, new, want) in &cases {
            assert_eq!(rule(&edit(old, new)), *want, "{new}");
        }
        for greens in [1, 2] {
            let gate = format!("\"consecutiveGreens\":{greens},\"artifactDigest\":\"{}\"", digest());
            let m = parse_str(&edit("\"consecutiveGreens\":0,\"artifactDigest\":null", &gate)).unwrap();
            assert_eq!(m.task.gate.consecutive_greens, greens);
            assert_eq!(m.task.gate.artifact_digest.as_ref().map(Digest::as_str), Some(digest().as_str()));
            let upper = format!("\"consecutiveGreens\":{greens},\"artifactDigest\":\"{}\"", digest().to_uppercase());
            assert_eq!(rule(&edit("\"consecutiveGreens\":0,\"artifactDigest\":null", &upper)), "gate_artifact_digest_invalid");
        }
    }

    fn anchors_json(n: usize) -> String {
        let items: Vec<String> = (0..n)
            .map(|i| format!("{{\"id\":{},\"status\":\"current\",\"sha256\":\"{}\",\"purpose\":\"a{i}\"}}", 100 + i, digest()))
            .collect();
        format!("\"anchors\":[{}]", items.join(","))
    }

    #[test]
    fn anchor_and_state_rules() {
        let anchors_at = base().find("\"anchors\":").unwrap();
        let with_anchors = |a: &str| format!("{}{a}}}", &base()[..anchors_at]);
        assert!(parse_str(&with_anchors(&anchors_json(64))).is_ok());
        assert_eq!(rule(&with_anchors(&anchors_json(65))), "anchors_too_many");
        assert_eq!(rule(&with_anchors("\"anchors\":[]")), "active_no_current_anchor");
        let retired_only = "\"anchors\":[{\"id\":5,\"status\":\"retired\",\"supersededBy\":5,\"purpose\":\"x\"}]";
        assert_eq!(rule(&with_anchors(retired_only)), "anchor_superseded_by_unknown");
        let cases: &[(&str, &str, &str)] = &[
            ("\"id\":22131,\"status\":\"current\",", "\"id\":22131,", "anchor_keys_invalid"),
            ("\"purpose\":\"Design\"", "\"purpose\":\"Design\",\"supersededBy\":22096", "anchor_keys_invalid"),
            ("\"supersededBy\":22131,", "", "anchor_keys_invalid"),
            ("\"status\":\"retired\"", "\"status\":\"eroded\"", "anchor_status_invalid"),
            ("\"status\":\"current\"", "\"status\":1", "anchor_status_invalid"),
            ("\"id\":22131", "\"id\":0", "anchor_id_invalid"),
            ("\"id\":22096", "\"id\":-3", "anchor_id_invalid"),
            ("\"id\":22096", "\"id\":22131", "anchor_id_duplicate"),
            ("\"supersededBy\":22131", "\"supersededBy\":1.5", "anchor_superseded_by_invalid"),
            ("\"supersededBy\":22131", "\"supersededBy\":22096", "anchor_superseded_by_unknown"),
            ("\"supersededBy\":22131", "\"supersededBy\":7", "anchor_superseded_by_unknown"),
            ("\"nextAction\":\"Test it\"", "\"nextAction\":null", "active_next_action_missing"),
            ("\"remaining\":[\"Write\"]", "\"remaining\":[]", "active_remaining_empty"),
        ];
        for (old, new, want) in cases {
            assert_eq!(rule(&edit(old, new)), *want, "{new}");
        }
        let d = digest();
        for bad in [d.to_uppercase(), d[..63].to_owned(), format!("{d}0")] {
            assert_eq!(rule(&edit(&format!("\"sha256\":\"{d}\""), &format!("\"sha256\":\"{bad}\""))), "anchor_sha256_invalid");
        }
        let complete = edit("\"state\":\"active\"", "\"state\":\"complete\"");
        assert_eq!(rule(&complete), "complete_next_action_present");
        let complete = complete.replace("\"nextAction\":\"Test it\"", "\"nextAction\":null");
        assert_eq!(rule(&complete), "complete_remaining_nonempty");
        let complete = complete.replace("\"remaining\":[\"Write\"]", "\"remaining\":[]");
        let m = parse_str(&complete).unwrap();
        assert_eq!(m.state, State::Complete);
        let no_anchors = format!("{}\"anchors\":[]}}", &complete[..complete.find("\"anchors\":").unwrap()]);
        assert!(parse_str(&no_anchors).is_ok());
    }

    #[test]
    fn every_rule_has_a_code_and_rule_of_reads_it() {
        for (r, code) in RULES {
            let err = reject(r, "x");
            assert_eq!(err.code(), code.as_str());
            assert_eq!(rule_of(&err), Some(*r));
            assert_eq!(err.detail(), Some(&json!({ "rule": r })));
        }
        assert_eq!(reject(RULE_NOT_CANONICAL, "x").code(), CODE_NOT_CANONICAL.as_str());
        assert_eq!(rule_of(&Error::new(crate::codes::render::TOO_LARGE, "x").with_detail(json!({"rule": "x"}))), None);
        let unique: HashSet<&str> = RULES.iter().map(|(r, _)| *r).collect();
        assert_eq!(unique.len(), RULES.len());
    }

    #[test]
    fn snapshot_digest_is_sha256_of_the_compact_json() {
        let p = Digest::of(b"pointer");
        let a1 = Digest::of(b"a1");
        let a2 = Digest::of(b"a2");
        let anchors = [(MemoryId::new(22131).unwrap(), a1.clone()), (MemoryId::new(7).unwrap(), a2.clone())];
        let text = format!(
            "{{\"pointerId\":21813,\"pointerDigest\":\"{p}\",\"lockMessageId\":1234,\"anchors\":[{{\"id\":22131,\"sha256\":\"{a1}\"}},{{\"id\":7,\"sha256\":\"{a2}\"}}]}}"
        );
        assert_eq!(snapshot_digest(pid(), &p, lock(), &anchors), Digest::of(text.as_bytes()));
        let empty = format!("{{\"pointerId\":21813,\"pointerDigest\":\"{p}\",\"lockMessageId\":1234,\"anchors\":[]}}");
        assert_eq!(snapshot_digest(pid(), &p, lock(), &[]), Digest::of(empty.as_bytes()));
        // Order matters.
        let reversed = [anchors[1].clone(), anchors[0].clone()];
        assert_ne!(snapshot_digest(pid(), &p, lock(), &reversed), snapshot_digest(pid(), &p, lock(), &anchors));
    }

    // -- properties ---------------------------------------------------------

    /// A text satisfying the string rules: printable start and end, any mix
    /// inside (astral, JS whitespace inside, tab/LF/CR, quotes, backslash).
    fn text_strategy(max_inner: usize) -> impl Strategy<Value = String> {
        let edge = prop::sample::select(vec!['a', 'Z', '7', 'é', '😀', '"', '\\', '/', '\u{85}', '\u{200b}', '字']);
        let inner =
            prop::sample::select(vec!['a', ' ', '\t', '\n', '\r', '\u{3000}', '\u{feff}', '\u{2028}', '😀', '"', '\\', '/', 'ß', '\u{a0}']);
        (edge.clone(), prop::collection::vec(inner, 0..max_inner), prop::option::of(edge)).prop_map(|(a, mid, b)| {
            let mut s = String::new();
            s.push(a);
            if let Some(b) = b {
                s.extend(mid);
                s.push(b);
            }
            s
        })
    }

    fn distinct(items: Vec<String>, tag: &str) -> Vec<String> {
        items.into_iter().enumerate().map(|(i, s)| format!("{tag}{i} {s}")).collect()
    }

    prop_compose! {
        fn manifest_strategy()(
            pointer in 1..=MAX_SAFE_INTEGER,
            lock in 1..=MAX_SAFE_INTEGER,
            active in any::<bool>(),
            title in text_strategy(30),
            next in text_strategy(30),
            done in prop::collection::vec(text_strategy(8), 0..6),
            remaining in prop::collection::vec(text_strategy(8), 1..6),
            done_when in prop::collection::vec(text_strategy(8), 1..6),
            greens in 0u8..=2,
            artifact in any::<u64>(),
            currents in prop::collection::vec((1..=MAX_SAFE_INTEGER, any::<u32>(), text_strategy(10)), 1..6),
            retired in prop::collection::vec((1..=MAX_SAFE_INTEGER, any::<prop::sample::Index>(), text_strategy(10)), 0..4),
        ) -> Manifest {
            let mut seen = HashSet::new();
            let mut anchors = Vec::new();
            let mut current_ids = Vec::new();
            for (id, seed, purpose) in currents {
                if seen.insert(id) {
                    let id = MemoryId::new(id).unwrap();
                    current_ids.push(id);
                    anchors.push(Anchor::Current { id, sha256: Digest::of(&seed.to_le_bytes()), purpose });
                }
            }
            for (id, pick, purpose) in retired {
                if seen.insert(id) {
                    let superseded_by = *pick.get(&current_ids);
                    anchors.push(Anchor::Retired { id: MemoryId::new(id).unwrap(), superseded_by, purpose });
                }
            }
            Manifest {
                pointer_id: MemoryId::new(pointer).unwrap(),
                lock_message_id: MessageId::new(lock).unwrap(),
                state: if active { State::Active } else { State::Complete },
                task: Task {
                    title,
                    next_action: active.then_some(next),
                    done: distinct(done, "d"),
                    remaining: if active { distinct(remaining, "r") } else { Vec::new() },
                    done_when: distinct(done_when, "w"),
                    gate: Gate {
                        consecutive_greens: greens,
                        artifact_digest: (greens > 0).then(|| Digest::of(&artifact.to_le_bytes())),
                    },
                },
                anchors,
            }
        }
    }

    proptest! {
        // 256 cases by default; PROPTEST_CASES=N runs more.

        #[test]
        fn valid_manifests_round_trip(m in manifest_strategy()) {
            let text = m.to_canonical();
            prop_assert_eq!(canonical_json(&m.to_value()), text.clone());
            let parsed = parse_manifest(text.as_bytes(), m.pointer_id, m.lock_message_id);
            prop_assert!(parsed.is_ok(), "{:?}\n{}", parsed.err(), text);
            let parsed = parsed.unwrap();
            prop_assert_eq!(&parsed, &m);
            prop_assert_eq!(parsed.to_canonical(), text.clone());
            // serde_json agrees on the value (its printer differs only in form).
            let theirs: Value = serde_json::from_str(&text).unwrap();
            prop_assert_eq!(theirs, m.to_value());
        }

        #[test]
        fn canonical_strings_round_trip_through_serde(s in "\\PC*", c in prop::collection::vec(0u32..0x80, 0..8)) {
            let mut s = s;
            s.extend(c.into_iter().filter_map(char::from_u32));
            let printed = canonical_json(&Value::String(s.clone()));
            let back: Value = serde_json::from_str(&printed).unwrap();
            prop_assert_eq!(back, Value::String(s));
            // Only the escapes JSON.stringify prints appear.
            let mut chars = printed.chars();
            while let Some(c) = chars.next() {
                if c == '\\' {
                    match chars.next() {
                        Some('"' | '\\' | 'b' | 'f' | 'n' | 'r' | 't') => {}
                        Some('u') => {
                            let hex: String = chars.by_ref().take(4).collect();
                            prop_assert!(hex.starts_with("00") && hex.chars().all(|h| matches!(h, '0'..='9' | 'a'..='f')));
                            let unit = u32::from_str_radix(&hex, 16).unwrap();
                            prop_assert!(unit < 0x20 && !matches!(unit, 8 | 9 | 10 | 12 | 13));
                        }
                        other => prop_assert!(false, "escape {:?}", other),
                    }
                } else {
                    prop_assert!(c as u32 >= 0x20);
                }
            }
        }

        #[test]
        fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
            if let Err(e) = parse_manifest(&bytes, MemoryId::new(21813).unwrap(), MessageId::new(1234).unwrap()) {
                let rule = rule_of(&e);
                prop_assert!(rule.is_some());
                prop_assert!(RULES.iter().any(|(r, c)| Some(*r) == rule && c.as_str() == e.code()));
            }
        }

        #[test]
        fn json_like_text_never_panics(text in "[\\[\\]{}\",:0-9eE.+\\-\\\\u/a-f tnrl\\n]{0,300}") {
            let result = parse_manifest_unbound(text.as_bytes());
            if let Err(e) = result {
                prop_assert!(rule_of(&e).is_some());
            }
        }

        #[test]
        fn mutated_manifests_never_panic(
            m in manifest_strategy(),
            edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>(), 0u8..3), 1..6),
        ) {
            let mut bytes = m.to_canonical().into_bytes();
            for (at, byte, kind) in edits {
                let i = at.index(bytes.len() + 1);
                match kind {
                    0 if i < bytes.len() => bytes[i] = byte,
                    1 => bytes.insert(i, byte),
                    _ if i < bytes.len() => { bytes.remove(i); }
                    _ => {}
                }
            }
            match parse_manifest(&bytes, m.pointer_id, m.lock_message_id) {
                Ok(parsed) => prop_assert_eq!(parsed.to_canonical().into_bytes(), bytes),
                Err(e) => {
                    let rule = rule_of(&e);
                    prop_assert!(RULES.iter().any(|(r, c)| Some(*r) == rule && c.as_str() == e.code()), "{:?}", e);
                }
            }
        }
    }
}
