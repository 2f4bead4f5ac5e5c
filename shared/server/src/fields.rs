//! Validation of the JSON object fields that both front ends accept: the
//! HTTP API ([`crate::api`], where a [`Bad`] is a 400 answer) and the MCP
//! tools ([`crate::mcp`], where it is an error result). One home for each
//! rule: words, labels, personas, unit numbers, counts and ids.

use kijito_protocol::ids::{MemoryId, MessageId, Persona};
use serde_json::{Map, Value};

/// A refused field: a stable snake_case code and a sentence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bad {
    pub code: String,
    pub message: String,
}

pub fn bad(code: &str, message: impl Into<String>) -> Bad {
    Bad { code: code.to_owned(), message: message.into() }
}

pub type Field<T> = Result<T, Bad>;

/// Refuse any key outside `allowed`.
pub fn only_keys(obj: &Map<String, Value>, allowed: &[&str]) -> Field<()> {
    match obj.keys().find(|k| !allowed.contains(&k.as_str())) {
        Some(k) => Err(bad("unknown_field", format!("unknown field {:?}", kijito_protocol::ids::clip(k)))),
        None => Ok(()),
    }
}

/// `field(obj, name)` when the key is present, else `default`.
pub fn optional<T>(obj: &Map<String, Value>, name: &str, field: fn(&Map<String, Value>, &str) -> Field<T>, default: T) -> Field<T> {
    if obj.contains_key(name) {
        field(obj, name)
    } else {
        Ok(default)
    }
}

/// `field(obj, name)` when the key is present, else None.
pub fn maybe<T>(obj: &Map<String, Value>, name: &str, field: fn(&Map<String, Value>, &str) -> Field<T>) -> Field<Option<T>> {
    if obj.contains_key(name) {
        field(obj, name).map(Some)
    } else {
        Ok(None)
    }
}

pub fn string_field(obj: &Map<String, Value>, name: &str) -> Field<String> {
    match obj.get(name) {
        Some(Value::String(s)) => Ok(s.clone()),
        Some(_) => Err(bad("invalid_field", format!("{name} must be a string"))),
        None => Err(bad("missing_field", format!("{name} is required"))),
    }
}

pub fn bool_field(obj: &Map<String, Value>, name: &str) -> Field<bool> {
    obj.get(name).and_then(Value::as_bool).ok_or_else(|| bad("invalid_field", format!("{name} must be true or false")))
}

pub fn persona_field(obj: &Map<String, Value>, name: &str) -> Field<String> {
    let text = string_field(obj, name)?;
    Persona::parse(&text).map(|p| p.as_str().to_owned()).map_err(|e| bad(e.code(), e.message()))
}

/// A lowercase word: `^[a-z][a-z0-9_-]{0,63}$` (type, scope, source, ...).
pub fn word_field(obj: &Map<String, Value>, name: &str) -> Field<String> {
    let text = string_field(obj, name)?;
    let b = text.as_bytes();
    if !b.is_empty()
        && b.len() <= 64
        && b[0].is_ascii_lowercase()
        && b.iter().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'_' || *c == b'-')
    {
        Ok(text)
    } else {
        Err(bad("invalid_field", format!("{name} must match ^[a-z][a-z0-9_-]{{0,63}}$")))
    }
}

/// A one-line label (project, message parties): 1 to 128 characters, no
/// control characters, no surrounding whitespace.
pub fn label_field(obj: &Map<String, Value>, name: &str) -> Field<String> {
    let text = string_field(obj, name)?;
    if !text.is_empty() && text.chars().count() <= 128 && !text.chars().any(char::is_control) && text.trim() == text {
        Ok(text)
    } else {
        Err(bad("invalid_field", format!("{name} must be 1-128 characters, one line, no surrounding whitespace")))
    }
}

/// A number in [0, 1].
pub fn unit_field(obj: &Map<String, Value>, name: &str) -> Field<f64> {
    obj.get(name)
        .and_then(Value::as_f64)
        .filter(|x| x.is_finite() && (0.0..=1.0).contains(x))
        .map(|x| if x == 0.0 { 0.0 } else { x })
        .ok_or_else(|| bad("invalid_field", format!("{name} must be a number from 0 to 1")))
}

pub fn count_field(obj: &Map<String, Value>, name: &str) -> Field<u64> {
    obj.get(name)
        .and_then(Value::as_u64)
        .filter(|n| *n <= 1_000_000_000)
        .ok_or_else(|| bad("invalid_field", format!("{name} must be an integer from 0 to 1e9")))
}

/// A memory id: a positive safe integer.
pub fn memory_id_field(obj: &Map<String, Value>, name: &str) -> Field<u64> {
    match obj.get(name) {
        None => Err(bad("missing_field", format!("{name} is required"))),
        Some(v) => v
            .as_u64()
            .and_then(|n| MemoryId::new(n).ok())
            .map(MemoryId::get)
            .ok_or_else(|| bad("invalid_id", format!("{name} must be a positive safe integer"))),
    }
}

pub fn message_field(obj: &Map<String, Value>) -> Field<u64> {
    match obj.get("message_id") {
        None => Err(bad("missing_field", "message_id is required")),
        Some(v) => v
            .as_u64()
            .and_then(|n| MessageId::new(n).ok())
            .map(MessageId::get)
            .ok_or_else(|| bad(MessageId::INVALID.as_str(), "message_id must be a positive safe integer")),
    }
}
