//! Fault injection for tests (`--faults FILE`). The file is a JSON list of
//! rules, re-read on every request (a missing file means no rules):
//!
//! ```json
//! [{"method":"PATCH","path":"/api/memory/7","occurrence":1,"action":{"type":"apply_then_close"}},
//!  {"method":"GET","path":"/api/memory/7","occurrence":2,"action":{"type":"erode"}},
//!  {"method":"POST","path":"/api/claim","memory_id":7,"action":{"type":"clobber","content":"x"}}]
//! ```
//!
//! - `method`, `path`: exact match (path without query string).
//! - `occurrence`: 1-based number of the request with that method and path
//!   since the server started (every request counts, faulted or not);
//!   omitted = every occurrence.
//! - `memory_id`: target of `clobber`/`erode`/`fade`; defaults to the id in
//!   a `/api/memory/{id}...` path.
//! - `action.type`, by kind:
//!   - before handling (several may apply, in file order): `delay` {`ms` <=
//!     60000}, `clobber` {`content`}, `erode`, `fade`, `advance_clock` {`ms`,
//!     moves the server clock forward for every later request, leases
//!     included}, `no_etag` (the answer carries no `ETag` header, like the
//!     hosted service, so a client sees no compare-and-swap);
//!   - deciding the answer (the first matching one wins): `respond`
//!     {`status`, `body`}, `malformed_json`, `close_before`,
//!     `apply_then_close`, `apply_then_respond` {`status`, `body`}.
//!
//! Without `--faults` no rule can ever apply.

use kijito_protocol::error::{Error, Result};
use serde_json::Value;
use std::path::Path;

/// Stable codes of this module (registered in the workspace by `tests/it/architecture.rs`).
pub mod codes {
    kijito_protocol::codes! {
        INVALID Invalid = "faults_file_invalid",
    }
}

/// Largest faults file.
pub const MAX_FAULTS_BYTES: u64 = 256 * 1024;
/// Longest `delay`.
pub const MAX_DELAY_MS: u64 = 60_000;
/// The body `malformed_json` answers (status 200).
pub const MALFORMED_BODY: &str = "{\"result\":\"Updated [";

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    Delay { ms: u64 },
    Clobber { content: String },
    Erode,
    Fade,
    AdvanceClock { ms: u64 },
    NoEtag,
    Respond { status: u16, body: String },
    MalformedJson,
    CloseBefore,
    ApplyThenClose,
    ApplyThenRespond { status: u16, body: String },
}

impl Action {
    pub fn name(&self) -> &'static str {
        match self {
            Action::Delay { .. } => "delay",
            Action::Clobber { .. } => "clobber",
            Action::Erode => "erode",
            Action::Fade => "fade",
            Action::AdvanceClock { .. } => "advance_clock",
            Action::NoEtag => "no_etag",
            Action::Respond { .. } => "respond",
            Action::MalformedJson => "malformed_json",
            Action::CloseBefore => "close_before",
            Action::ApplyThenClose => "apply_then_close",
            Action::ApplyThenRespond { .. } => "apply_then_respond",
        }
    }

    /// Whether this action decides the answer (rather than acting before it).
    pub fn is_terminal(&self) -> bool {
        matches!(
            self,
            Action::Respond { .. } | Action::MalformedJson | Action::CloseBefore | Action::ApplyThenClose | Action::ApplyThenRespond { .. }
        )
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    pub method: String,
    pub path: String,
    pub occurrence: Option<u64>,
    pub memory_id: Option<u64>,
    pub action: Action,
}

impl Rule {
    pub fn matches(&self, method: &str, path: &str, occurrence: u64) -> bool {
        self.method == method && self.path == path && self.occurrence.is_none_or(|n| n == occurrence)
    }

    /// The memory a `clobber`/`erode`/`fade` acts on.
    pub fn target(&self) -> Option<u64> {
        self.memory_id.or_else(|| memory_id_in_path(&self.path))
    }
}

/// The id in `/api/memory/{id}` or `/api/memory/{id}/...`.
pub fn memory_id_in_path(path: &str) -> Option<u64> {
    let rest = path.strip_prefix("/api/memory/")?;
    let id = rest.split('/').next()?;
    kijito_protocol::ids::MemoryId::parse(id).ok().map(|m| m.get())
}

fn invalid(i: usize, what: &str) -> Error {
    Error::new(codes::INVALID, format!("fault rule {i}: {what}"))
}

fn only_keys(obj: &serde_json::Map<String, Value>, allowed: &[&str], i: usize, what: &str) -> Result<()> {
    match obj.keys().find(|k| !allowed.contains(&k.as_str())) {
        Some(k) => Err(invalid(i, &format!("unknown key {k:?} in {what}"))),
        None => Ok(()),
    }
}

fn status_of(v: Option<&Value>, i: usize) -> Result<u16> {
    v.and_then(Value::as_u64)
        .filter(|s| (100..=599).contains(s))
        .map(|s| s as u16)
        .ok_or_else(|| invalid(i, "status must be an integer 100..=599"))
}

fn string_of(v: Option<&Value>, i: usize, name: &str) -> Result<String> {
    v.and_then(Value::as_str).map(str::to_owned).ok_or_else(|| invalid(i, &format!("{name} must be a string")))
}

/// Parse a faults file's bytes.
pub fn parse(bytes: &[u8]) -> Result<Vec<Rule>> {
    let value: Value = serde_json::from_slice(bytes).map_err(|e| Error::new(codes::INVALID, format!("faults file is not JSON: {e}")))?;
    let Value::Array(items) = value else { return Err(Error::new(codes::INVALID, "faults file must be a JSON list of rules")) };
    let mut rules = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let Value::Object(obj) = item else { return Err(invalid(i, "not an object")) };
        only_keys(obj, &["method", "path", "occurrence", "memory_id", "action"], i, "rule")?;
        let method = string_of(obj.get("method"), i, "method")?;
        let path = string_of(obj.get("path"), i, "path")?;
        if method.is_empty() || !path.starts_with('/') {
            return Err(invalid(i, "method must be non-empty and path must start with /"));
        }
        let occurrence = match obj.get("occurrence") {
            None | Some(Value::Null) => None,
            Some(v) => Some(v.as_u64().filter(|n| *n >= 1).ok_or_else(|| invalid(i, "occurrence must be a positive integer"))?),
        };
        let memory_id = match obj.get("memory_id") {
            None | Some(Value::Null) => None,
            Some(v) => Some(
                v.as_u64()
                    .and_then(|n| kijito_protocol::ids::MemoryId::new(n).ok())
                    .ok_or_else(|| invalid(i, "memory_id must be a positive id"))?
                    .get(),
            ),
        };
        let Some(Value::Object(a)) = obj.get("action") else { return Err(invalid(i, "action must be an object with a type")) };
        let kind = string_of(a.get("type"), i, "action.type")?;
        let (action, keys): (Action, &[&str]) = match kind.as_str() {
            "delay" => {
                let ms = a
                    .get("ms")
                    .and_then(Value::as_u64)
                    .filter(|ms| *ms <= MAX_DELAY_MS)
                    .ok_or_else(|| invalid(i, "delay needs ms 0..=60000"))?;
                (Action::Delay { ms }, &["type", "ms"])
            }
            "advance_clock" => {
                let ms = a
                    .get("ms")
                    .and_then(Value::as_u64)
                    .filter(|ms| *ms <= 1 << 40)
                    .ok_or_else(|| invalid(i, "advance_clock needs a non-negative ms"))?;
                (Action::AdvanceClock { ms }, &["type", "ms"])
            }
            "clobber" => (Action::Clobber { content: string_of(a.get("content"), i, "content")? }, &["type", "content"]),
            "erode" => (Action::Erode, &["type"]),
            "fade" => (Action::Fade, &["type"]),
            "no_etag" => (Action::NoEtag, &["type"]),
            "respond" => (
                Action::Respond { status: status_of(a.get("status"), i)?, body: string_of(a.get("body"), i, "body")? },
                &["type", "status", "body"],
            ),
            "apply_then_respond" => (
                Action::ApplyThenRespond { status: status_of(a.get("status"), i)?, body: string_of(a.get("body"), i, "body")? },
                &["type", "status", "body"],
            ),
            "malformed_json" => (Action::MalformedJson, &["type"]),
            "close_before" => (Action::CloseBefore, &["type"]),
            "apply_then_close" => (Action::ApplyThenClose, &["type"]),
            other => return Err(invalid(i, &format!("unknown action type {:?}", kijito_protocol::ids::clip(other)))),
        };
        only_keys(a, keys, i, "action")?;
        let rule = Rule { method, path, occurrence, memory_id, action };
        if matches!(rule.action, Action::Clobber { .. } | Action::Erode | Action::Fade) && rule.target().is_none() {
            return Err(invalid(i, "clobber/erode/fade need memory_id or a /api/memory/{id} path"));
        }
        rules.push(rule);
    }
    Ok(rules)
}

/// Read and parse the faults file; a missing file is an empty list.
pub fn load(path: &Path) -> Result<Vec<Rule>> {
    let rules = kijito_files::private::FileRules { owner_only: true, min_bytes: 0, max_bytes: MAX_FAULTS_BYTES };
    match kijito_files::private::read_checked(path, rules) {
        Ok((bytes, _)) => parse(&bytes),
        Err(e) if e.code_as() == Some(kijito_files::private::codes::NOT_FOUND) => Ok(Vec::new()),
        Err(e) => Err(Error::new(codes::INVALID, e.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_action() {
        let text = r#"[
          {"method":"GET","path":"/api/memory/3","occurrence":2,"action":{"type":"delay","ms":5}},
          {"method":"GET","path":"/api/memory/3","action":{"type":"clobber","content":"x"}},
          {"method":"POST","path":"/api/claim","memory_id":4,"action":{"type":"erode"}},
          {"method":"GET","path":"/api/memory/3/x","action":{"type":"fade"}},
          {"method":"POST","path":"/api/claim","action":{"type":"advance_clock","ms":11000}},
          {"method":"GET","path":"/a","action":{"type":"respond","status":503,"body":"no"}},
          {"method":"GET","path":"/a","action":{"type":"malformed_json"}},
          {"method":"GET","path":"/a","action":{"type":"close_before"}},
          {"method":"GET","path":"/a","action":{"type":"apply_then_close"}},
          {"method":"GET","path":"/a","action":{"type":"apply_then_respond","status":500,"body":""}},
          {"method":"GET","path":"/a","action":{"type":"no_etag"}}
        ]"#;
        let rules = parse(text.as_bytes()).unwrap();
        assert_eq!(rules.len(), 11);
        assert_eq!(rules[10].action, Action::NoEtag);
        assert!(rules[0].matches("GET", "/api/memory/3", 2));
        assert!(!rules[0].matches("GET", "/api/memory/3", 1));
        assert!(rules[1].matches("GET", "/api/memory/3", 7));
        assert_eq!(rules[1].target(), Some(3));
        assert_eq!(rules[2].target(), Some(4));
        assert_eq!(rules[3].target(), Some(3));
        assert_eq!(rules.iter().filter(|r| r.action.is_terminal()).count(), 5);
    }

    #[test]
    fn rejects_bad_rules() {
        for text in [
            "{}",
            "[1]",
            r#"[{"method":"GET","path":"/a","action":{"type":"nope"}}]"#,
            r#"[{"method":"GET","path":"/a","action":{"type":"erode"}}]"#,
            r#"[{"method":"GET","path":"/a","occurrence":0,"action":{"type":"close_before"}}]"#,
            r#"[{"method":"GET","path":"/a","action":{"type":"respond","status":99,"body":""}}]"#,
            r#"[{"method":"GET","path":"/a","action":{"type":"delay","ms":60001}}]"#,
            r#"[{"method":"GET","path":"/a","extra":1,"action":{"type":"close_before"}}]"#,
            r#"[{"method":"GET","path":"/a","action":{"type":"close_before","x":1}}]"#,
        ] {
            assert_eq!(parse(text.as_bytes()).unwrap_err().code(), codes::INVALID.as_str(), "{text}");
        }
    }
}
