//! Rendered memory (docs/protocol.md §3): the fence parser, the lifecycle
//! classifier and the built-in known-bad control.
//!
//! A rendering is the `result` text of `GET /api/memory/{id}`. It is parsed by
//! plain string scanning, in this order, and the first failing step decides
//! the error:
//!
//! 1. Size: more than [`MAX_RENDERING_BYTES`] (1 MiB) is refused.
//! 2. Open fence: the first `⟦UNTRUSTED` marker in the text must start a line
//!    that is exactly `⟦UNTRUSTED id=<id> src=persona:<persona>
//!    trust=memory-content n=<nonce>⟧` followed by `\n`: `<id>` the requested
//!    id (byte for byte, so `09` is not `9`), `<persona>` a valid persona equal
//!    to the expected one when one is given (`None` = any persona, for
//!    anchors), `<nonce>` 6 lowercase hex. Single spaces only; no other text
//!    on the line. Checked left to right: line start, shape, id, persona
//!    syntax, expected persona, nonce, the `\n` after it. Only the first
//!    marker is considered, so a decoy open fence (another id, another
//!    persona) before the genuine one fails the rendering.
//! 3. No `⟦/UNTRUSTED` marker may come before the open fence.
//! 4. Close fence: the text must end with `\n⟦/UNTRUSTED n=<nonce>⟧` (the same
//!    nonce), and the close's `\n` must come after the open fence's `\n` (an
//!    empty content is `…⟧\n\n⟦/UNTRUSTED …⟧`). Nothing may follow the close,
//!    not even a newline.
//! 5. Content = the bytes between the open fence's `\n` and the close's `\n`.
//!    The first `⟦UNTRUSTED` or `⟦/UNTRUSTED` marker found in it decides: a
//!    line that is a complete open fence for the requested id (any persona,
//!    any nonce) is a second open fence (`memory_fence_duplicated`); a line
//!    that is exactly the close fence with the same nonce is a second close
//!    (`memory_fence_close_invalid`, rule `duplicated`); any other marker is
//!    a nested fence (`memory_fence_nested`). Markers are matched without
//!    their closing `⟧`, so a truncated marker is rejected too.
//! 6. Header = the text before the first `\nedges:` (a line starting with
//!    `edges:`) if that comes before the open fence, else the text before the
//!    open fence; trailing ASCII whitespace (space, tab, CR, LF) trimmed. It
//!    must start with `Memory [<id>]\n`. (The trim only touches the end of
//!    the last header line, so trailing spaces there are ignored while
//!    trailing spaces on any other field line fail that field's rule.)
//!
//! The `edges:` block (everything from the `\nedges:` line up to the open
//! fence, including previews and `has_more=true`) is cut off in step 6 and
//! never reaches a rule: nothing reads, counts or infers from it.
//!
//! [`classify`] then applies section 3's rules, in this exact order, to the
//! header lines only (a header line "is" a field when it starts with the
//! field name and `:`, case-sensitive; its value is the text after `<Name>: `,
//! with exactly one space):
//!
//! 1. exactly one line each of `Persona:`, `Status:`, `Source:`,
//!    `Importance:`, `belief:`, else `memory_metadata_invalid`;
//! 2. `Persona: <p>` with `<p>` equal to the fence persona, else
//!    `memory_metadata_invalid`;
//! 3. `Status: active`, else `memory_lifecycle_unclassified`;
//! 4. `Source: mcp` or `Source: correction`, else
//!    `memory_lifecycle_unclassified`;
//! 5. `Importance: <n>` where `<n>` matches `0`, `0.<digits>`, `1` or
//!    `1.<zeros>` (ASCII digits, at least one after the point: `0`, `0.9`,
//!    `0.90`, `1`, `1.0`, `1.00`), else `memory_metadata_invalid`. Refused:
//!    empty, `NaN`, `inf`, `-0`, `-0.1`, `+0.5`, `.5`, `0.`, `00.5`, `1e0`,
//!    `1.5`, `1.01`, surrounding spaces;
//! 6. `belief: ` followed by exactly
//!    `confidence=(0(\.[0-9]+)?|1(\.0+)?) evidence=[0-9]+ basis=[a-z][a-z0-9_-]*`
//!    and optionally ` · eroded` (space, U+00B7, space), and nothing else,
//!    else `memory_lifecycle_unclassified` (rule `unknown_marker` for any
//!    other ` · <marker>`, `malformed` otherwise);
//! 7. ` · eroded` means [`Lifecycle::Retired`], otherwise
//!    [`Lifecycle::Current`].
//!
//! Error codes (stable; `detail` is `{"rule":"..."}` where one code covers
//! several cases):
//!
//! | code | when |
//! |---|---|
//! | `memory_rendering_too_large` | rendering text over 1 MiB |
//! | `memory_fence_missing` | no `⟦UNTRUSTED` marker at all |
//! | `memory_fence_open_invalid` | the first open marker's line is not an exact open fence (rules `not_at_line_start`, `no_newline`, `malformed`, `persona_invalid`) |
//! | `memory_fence_id_mismatch` | the open fence names another id than the requested one |
//! | `memory_fence_persona_mismatch` | the open fence persona is not the expected persona |
//! | `memory_fence_nonce_invalid` | the open fence nonce is not 6 lowercase hex |
//! | `memory_fence_close_invalid` | close fence wrong (rules `before_open`, `missing`, `malformed`, `nonce_mismatch`, `text_after_close`, `not_at_line_start`, `no_content_line`, `duplicated`) |
//! | `memory_fence_duplicated` | a second complete open fence for the id inside the content |
//! | `memory_fence_nested` | any other fence marker inside the content |
//! | `memory_header_invalid` | header does not start with `Memory [<id>]\n` |
//! | `memory_metadata_invalid` | classification rules 1, 2, 5 (rules `persona_count`, `status_count`, `source_count`, `importance_count`, `belief_count`, `persona_mismatch`, `importance_invalid`) |
//! | `memory_lifecycle_unclassified` | classification rules 3, 4, 6 (rules `status_not_active`, `source_unknown`, `belief_malformed`, `belief_unknown_marker`) |
//! | `known_bad_control_failed` | the built-in known-bad control did not classify as retired |

use crate::error::{Error, Result};
use crate::ids::{clip, Digest, MemoryId, Persona};
use serde_json::json;

/// Largest accepted rendering text (1 MiB).
pub const MAX_RENDERING_BYTES: usize = 1024 * 1024;

/// Every error code this module can return (the table above).
pub const CODES: &[Code] = Code::ALL;

pub use crate::codes::render::*;

const OPEN_MARKER: &str = "⟦UNTRUSTED";
const CLOSE_MARKER: &str = "⟦/UNTRUSTED";
const ERODED: &str = " · eroded";
const MARKER_SEP: &str = " · ";

/// The known-bad control of docs/protocol.md §3, byte for byte (equal to
/// `fixtures/renderings/known-bad-control.txt`, no trailing newline).
pub const KNOWN_BAD_CONTROL: &str = "Memory [9]\n\
Type: correction\n\
Scope: project\n\
Project: Codex\n\
Persona: codex\n\
Status: active\n\
Source: mcp\n\
Created: 2026-07-25 00:00:00\n\
Importance: 0.9\n\
belief: confidence=0.95 evidence=9 basis=observed · eroded\n\
⟦UNTRUSTED id=9 src=persona:codex trust=memory-content n=a1b2c3⟧\n\
known-bad\n\
⟦/UNTRUSTED n=a1b2c3⟧";

/// A parsed rendering: only the fence and header have been checked; the
/// lifecycle comes from [`classify`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rendering {
    pub id: MemoryId,
    /// Text before the `edges:` line (or the open fence), trailing
    /// whitespace trimmed. Starts with `Memory [<id>]\n`.
    pub header: String,
    /// The persona named by the open fence.
    pub fence_persona: Persona,
    /// 6 lowercase hex.
    pub nonce: String,
    /// Exact bytes between the fences (untrusted; evidence, never instructions).
    pub content: String,
}

/// Lifecycle of a memory (classification rule 7).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Lifecycle {
    Current,
    Retired,
}

impl Lifecycle {
    pub fn as_str(self) -> &'static str {
        match self {
            Lifecycle::Current => "current",
            Lifecycle::Retired => "retired",
        }
    }
}

fn fail(code: Code, rule: &str, message: impl Into<String>) -> Error {
    Error::new(code, message).with_detail(json!({ "rule": rule }))
}

fn is_nonce(s: &str) -> bool {
    s.len() == 6 && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// Is `pos` at the start of a line of `text`?
fn at_line_start(text: &str, pos: usize) -> bool {
    pos == 0 || text.as_bytes().get(pos - 1) == Some(&b'\n')
}

/// The line of `text` starting at `pos` (without its `\n`), and whether a
/// `\n` ends it.
fn line_at(text: &str, pos: usize) -> (&str, bool) {
    let rest = &text[pos..];
    match rest.find('\n') {
        Some(end) => (&rest[..end], true),
        None => (rest, false),
    }
}

/// The fields of an open fence line, split but not yet judged.
struct OpenFence<'a> {
    id: &'a str,
    persona: &'a str,
    nonce: &'a str,
}

/// Split `⟦UNTRUSTED id=<a> src=persona:<b> trust=memory-content n=<c>⟧`
/// (the whole line). `<a>` and `<b>` hold no space, `<c>` no `⟧`.
fn split_open_line(line: &str) -> Option<OpenFence<'_>> {
    let rest = line.strip_prefix("⟦UNTRUSTED id=")?;
    let (id, rest) = rest.split_once(' ')?;
    let rest = rest.strip_prefix("src=persona:")?;
    let (persona, rest) = rest.split_once(' ')?;
    let rest = rest.strip_prefix("trust=memory-content n=")?;
    let (nonce, rest) = rest.split_once('⟧')?;
    if !rest.is_empty() || id.is_empty() || persona.is_empty() {
        return None;
    }
    Some(OpenFence { id, persona, nonce })
}

/// Parse a rendering's fences and header (steps 1 to 6 of the module doc).
pub fn parse_rendering(text: &str, id: MemoryId, fence_persona: Option<&Persona>) -> Result<Rendering> {
    // 1. size
    if text.len() > MAX_RENDERING_BYTES {
        return Err(Error::new(TOO_LARGE, format!("rendering is {} bytes, more than {MAX_RENDERING_BYTES}", text.len())));
    }
    let id_text = id.to_string();

    // 2. the open fence: the first open marker
    let open = text.find(OPEN_MARKER).ok_or_else(|| Error::new(FENCE_MISSING, format!("memory {id}: no ⟦UNTRUSTED open fence")))?;
    if !at_line_start(text, open) {
        return Err(fail(FENCE_OPEN_INVALID, "not_at_line_start", format!("memory {id}: open fence marker is not at the start of a line")));
    }
    let (line, has_newline) = line_at(text, open);
    let fence = split_open_line(line)
        .ok_or_else(|| fail(FENCE_OPEN_INVALID, "malformed", format!("memory {id}: open fence line is not exact: {:?}", clip(line))))?;
    if fence.id != id_text {
        return Err(Error::new(FENCE_ID_MISMATCH, format!("memory {id}: open fence names id {:?}", clip(fence.id))));
    }
    let persona = Persona::parse(fence.persona).map_err(|_| {
        fail(
            FENCE_OPEN_INVALID,
            "persona_invalid",
            format!("memory {id}: open fence persona {:?} is not a valid persona", clip(fence.persona)),
        )
    })?;
    if let Some(expected) = fence_persona {
        if &persona != expected {
            return Err(Error::new(
                FENCE_PERSONA_MISMATCH,
                format!("memory {id}: open fence persona {persona} is not the expected persona {expected}"),
            ));
        }
    }
    if !is_nonce(fence.nonce) {
        return Err(Error::new(FENCE_NONCE_INVALID, format!("memory {id}: fence nonce {:?} is not 6 lowercase hex", clip(fence.nonce))));
    }
    if !has_newline {
        return Err(fail(FENCE_OPEN_INVALID, "no_newline", format!("memory {id}: open fence is not followed by a newline")));
    }
    let nonce = fence.nonce;
    let content_start = open + line.len() + 1;

    // 3. no close marker before the open fence
    if text[..open].contains(CLOSE_MARKER) {
        return Err(fail(FENCE_CLOSE_INVALID, "before_open", format!("memory {id}: close fence marker before the open fence")));
    }

    // 4. the close fence ends the text
    let close_line = format!("⟦/UNTRUSTED n={nonce}⟧");
    // `+ 1`: the close's own `\n` must come after the open fence's `\n`.
    let close_ok = text.len() > content_start + close_line.len()
        && text.ends_with(close_line.as_str())
        && text.as_bytes()[text.len() - close_line.len() - 1] == b'\n';
    if !close_ok {
        return Err(close_failure(text, content_start, &close_line, id));
    }
    let close_newline = text.len() - close_line.len() - 1;

    // 5. content, with no marker inside
    let content = &text[content_start..close_newline];
    check_content_markers(content, &id_text, &close_line, id)?;

    // 6. header
    let header_end = text[..open].find("\nedges:").unwrap_or(open);
    let header = text[..header_end].trim_end_matches([' ', '\t', '\r', '\n']);
    let expected_first = format!("Memory [{id}]\n");
    if !header.starts_with(&expected_first) {
        return Err(Error::new(HEADER_INVALID, format!("memory {id}: header does not start with {:?}", expected_first)));
    }

    Ok(Rendering { id, header: header.to_owned(), fence_persona: persona, nonce: nonce.to_owned(), content: content.to_owned() })
}

/// Why the text does not end with the close fence (step 4).
fn close_failure(text: &str, content_start: usize, close_line: &str, id: MemoryId) -> Error {
    let after = &text[content_start..];
    let Some(rel) = after.rfind(CLOSE_MARKER) else {
        return fail(FENCE_CLOSE_INVALID, "missing", format!("memory {id}: no close fence"));
    };
    let pos = content_start + rel;
    let (line, has_newline) = line_at(text, pos);
    let rule = if !at_line_start(text, pos) {
        "not_at_line_start"
    } else if line == close_line {
        // Exact close line: either text follows it, or it directly follows
        // the open fence and shares its newline (no content line at all).
        if has_newline {
            "text_after_close"
        } else {
            "no_content_line"
        }
    } else if line.strip_prefix("⟦/UNTRUSTED n=").and_then(|r| r.strip_suffix('⟧')).is_some_and(is_nonce) {
        if has_newline {
            "text_after_close"
        } else {
            "nonce_mismatch"
        }
    } else {
        "malformed"
    };
    fail(FENCE_CLOSE_INVALID, rule, format!("memory {id}: close fence invalid ({rule})"))
}

/// Reject any fence marker inside the content (step 5).
fn check_content_markers(content: &str, id_text: &str, close_line: &str, id: MemoryId) -> Result<()> {
    let first_open = content.find(OPEN_MARKER);
    let first_close = content.find(CLOSE_MARKER);
    let (pos, is_open) = match (first_open, first_close) {
        (None, None) => return Ok(()),
        (Some(o), None) => (o, true),
        (None, Some(c)) => (c, false),
        (Some(o), Some(c)) => {
            if o < c {
                (o, true)
            } else {
                (c, false)
            }
        }
    };
    let line_start = at_line_start(content, pos);
    let (line, _) = line_at(content, pos);
    if is_open && line_start && split_open_line(line).is_some_and(|f| f.id == id_text) {
        return Err(Error::new(FENCE_DUPLICATED, format!("memory {id}: a second open fence inside the content")));
    }
    if !is_open && line_start && line == close_line {
        return Err(fail(FENCE_CLOSE_INVALID, "duplicated", format!("memory {id}: a second close fence inside the content")));
    }
    Err(Error::new(FENCE_NESTED, format!("memory {id}: a fence marker inside the content")))
}

/// The header fields classification reads. Values are the raw text after
/// `<Name>:` (the leading space is checked by each rule).
struct Fields<'a> {
    persona: &'a str,
    status: &'a str,
    source: &'a str,
    importance: &'a str,
    belief: &'a str,
}

fn header_fields(header: &str, id: MemoryId) -> Result<Fields<'_>> {
    const NAMES: [(&str, &str); 5] = [
        ("Persona:", "persona_count"),
        ("Status:", "status_count"),
        ("Source:", "source_count"),
        ("Importance:", "importance_count"),
        ("belief:", "belief_count"),
    ];
    let mut found: [Option<&str>; 5] = [None; 5];
    let mut counts = [0usize; 5];
    for line in header.split('\n') {
        for (i, (name, _)) in NAMES.iter().enumerate() {
            if let Some(value) = line.strip_prefix(name) {
                counts[i] += 1;
                found[i] = Some(value);
            }
        }
    }
    for (i, (name, rule)) in NAMES.iter().enumerate() {
        if counts[i] != 1 {
            return Err(fail(
                METADATA_INVALID,
                rule,
                format!("memory {id}: header has {} `{name}` lines, expected exactly one", counts[i]),
            ));
        }
    }
    let [Some(persona), Some(status), Some(source), Some(importance), Some(belief)] = found else {
        return Err(fail(METADATA_INVALID, "persona_count", format!("memory {id}: header field missing")));
    };
    Ok(Fields { persona, status, source, importance, belief })
}

/// `0`, `0.<digits>`, `1`, `1.<zeros>`; ASCII digits, at least one after
/// the point. (The same grammar as the belief confidence.)
fn is_unit_number(s: &str) -> bool {
    match s.split_once('.') {
        None => s == "0" || s == "1",
        Some((int, frac)) => {
            !frac.is_empty()
                && match int {
                    "0" => frac.bytes().all(|b| b.is_ascii_digit()),
                    "1" => frac.bytes().all(|b| b == b'0'),
                    _ => false,
                }
        }
    }
}

/// Check the belief value (without the `belief: ` prefix) against rule 6.
/// `Ok(true)` when it ends with ` · eroded`.
fn parse_belief(value: &str) -> std::result::Result<bool, &'static str> {
    let rest = value.strip_prefix("confidence=").ok_or("belief_malformed")?;
    let (confidence, rest) = rest.split_once(' ').ok_or("belief_malformed")?;
    if !is_unit_number(confidence) {
        return Err("belief_malformed");
    }
    let rest = rest.strip_prefix("evidence=").ok_or("belief_malformed")?;
    let (evidence, rest) = rest.split_once(' ').ok_or("belief_malformed")?;
    if evidence.is_empty() || !evidence.bytes().all(|b| b.is_ascii_digit()) {
        return Err("belief_malformed");
    }
    let rest = rest.strip_prefix("basis=").ok_or("belief_malformed")?;
    let basis_len =
        rest.bytes().position(|b| !(b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-')).unwrap_or(rest.len());
    if basis_len == 0 || !rest.as_bytes()[0].is_ascii_lowercase() {
        return Err("belief_malformed");
    }
    match &rest[basis_len..] {
        "" => Ok(false),
        ERODED => Ok(true),
        tail if tail.starts_with(MARKER_SEP) => Err("belief_unknown_marker"),
        _ => Err("belief_malformed"),
    }
}

/// Classify a parsed rendering (section 3 rules 1 to 7, in order). Reads
/// only `header` and `fence_persona`.
pub fn classify(r: &Rendering) -> Result<Lifecycle> {
    let id = r.id;
    // 1. exactly one of each field line
    let f = header_fields(&r.header, id)?;
    // 2. persona
    if f.persona.strip_prefix(' ') != Some(r.fence_persona.as_str()) {
        return Err(fail(
            METADATA_INVALID,
            "persona_mismatch",
            format!("memory {id}: header Persona {:?} is not the fence persona {}", clip(f.persona.trim_start()), r.fence_persona),
        ));
    }
    // 3. status
    if f.status != " active" {
        return Err(fail(
            LIFECYCLE_UNCLASSIFIED,
            "status_not_active",
            format!("memory {id}: Status {:?} is not active", clip(f.status.trim_start())),
        ));
    }
    // 4. source
    if f.source != " mcp" && f.source != " correction" {
        return Err(fail(
            LIFECYCLE_UNCLASSIFIED,
            "source_unknown",
            format!("memory {id}: Source {:?} is not mcp or correction", clip(f.source.trim_start())),
        ));
    }
    // 5. importance
    if !f.importance.strip_prefix(' ').is_some_and(is_unit_number) {
        return Err(fail(
            METADATA_INVALID,
            "importance_invalid",
            format!("memory {id}: Importance {:?} is not a number in [0, 1]", clip(f.importance.trim_start())),
        ));
    }
    // 6. belief
    let eroded = f
        .belief
        .strip_prefix(' ')
        .ok_or("belief_malformed")
        .and_then(parse_belief)
        .map_err(|rule| fail(LIFECYCLE_UNCLASSIFIED, rule, format!("memory {id}: belief line not classifiable ({rule})")))?;
    // 7. liveness
    Ok(if eroded { Lifecycle::Retired } else { Lifecycle::Current })
}

/// [`parse_rendering`] then [`classify`].
pub fn parse_and_classify(text: &str, id: MemoryId, fence_persona: Option<&Persona>) -> Result<(Rendering, Lifecycle)> {
    let rendering = parse_rendering(text, id, fence_persona)?;
    let lifecycle = classify(&rendering)?;
    Ok((rendering, lifecycle))
}

/// SHA-256 of the exact content bytes.
pub fn content_digest(r: &Rendering) -> Digest {
    Digest::of(r.content.as_bytes())
}

/// Check one control rendering: parsed as memory 9 of persona `codex` it
/// must classify [`Lifecycle::Retired`] with content `known-bad`. Anything
/// else is `known_bad_control_failed`.
pub fn check_control(text: &str) -> Result<()> {
    let failed = |why: String| Error::new(KNOWN_BAD_CONTROL_FAILED, format!("known-bad control failed: {why}"));
    let id = MemoryId::new(9).map_err(|e| failed(e.to_string()))?;
    let persona = Persona::default();
    match parse_and_classify(text, id, Some(&persona)) {
        Ok((r, Lifecycle::Retired)) if r.content == "known-bad" => Ok(()),
        Ok((_, Lifecycle::Retired)) => Err(failed("content is not known-bad".into())),
        Ok((_, Lifecycle::Current)) => Err(failed("classified current".into())),
        Err(e) => Err(failed(format!("rejected with {}", e.code()))),
    }
}

/// The built-in known-bad control: every verifier and the publisher call
/// this first and refuse to go on when it fails. Besides requiring the
/// control to be retired, it checks that the same rendering without
/// ` · eroded` classifies current, so a classifier that calls everything
/// retired cannot pass.
pub fn run_known_bad_control() -> Result<()> {
    check_control(KNOWN_BAD_CONTROL)?;
    let good = KNOWN_BAD_CONTROL.replacen("basis=observed · eroded\n", "basis=observed\n", 1);
    let id = MemoryId::new(9).map_err(|e| Error::new(KNOWN_BAD_CONTROL_FAILED, e.to_string()))?;
    match parse_and_classify(&good, id, Some(&Persona::default())) {
        Ok((_, Lifecycle::Current)) => Ok(()),
        _ => Err(Error::new(KNOWN_BAD_CONTROL_FAILED, "known-bad control failed: its non-eroded twin is not current")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const FIXTURE_CONTROL: &str = include_str!("../../../fixtures/renderings/known-bad-control.txt");

    fn id(n: u64) -> MemoryId {
        MemoryId::new(n).expect("test id")
    }

    fn codex() -> Persona {
        Persona::default()
    }

    /// Header lines of a genuine current memory 7 of persona codex.
    fn header_lines() -> Vec<String> {
        [
            "Memory [7]",
            "Type: fact",
            "Scope: project",
            "Project: Codex",
            "Persona: codex",
            "Status: active",
            "Source: mcp",
            "Created: 2026-07-25 00:00:00",
            "Importance: 0.9",
            "belief: confidence=0.95 evidence=9 basis=observed",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect()
    }

    fn render(header: &[String], edges: Option<&str>, content: &str) -> String {
        let mut out = header.join("\n");
        out.push('\n');
        if let Some(e) = edges {
            out.push_str("edges:\n");
            out.push_str(e);
            out.push('\n');
        }
        out.push_str("⟦UNTRUSTED id=7 src=persona:codex trust=memory-content n=0f9e8d⟧\n");
        out.push_str(content);
        out.push_str("\n⟦/UNTRUSTED n=0f9e8d⟧");
        out
    }

    fn good() -> String {
        render(&header_lines(), None, "hello\nworld")
    }

    /// Replace (or with `None` remove) the header line starting with `prefix`.
    fn with_line(prefix: &str, line: Option<&str>) -> String {
        let mut h = header_lines();
        let i = h.iter().position(|l| l.starts_with(prefix)).expect("prefix");
        match line {
            Some(l) => h[i] = l.to_owned(),
            None => {
                h.remove(i);
            }
        }
        render(&h, None, "c")
    }

    fn code(text: &str) -> String {
        parse_and_classify(text, id(7), Some(&codex())).expect_err("must be rejected").code().to_owned()
    }

    fn rule(text: &str) -> String {
        let err = parse_and_classify(text, id(7), Some(&codex())).expect_err("must be rejected");
        err.detail().and_then(|d| d["rule"].as_str()).unwrap_or("").to_owned()
    }

    fn lifecycle(text: &str) -> Lifecycle {
        parse_and_classify(text, id(7), Some(&codex())).expect("must be accepted").1
    }

    #[test]
    fn control_constant_is_the_fixture_byte_for_byte() {
        assert_eq!(KNOWN_BAD_CONTROL, FIXTURE_CONTROL);
        assert!(!KNOWN_BAD_CONTROL.ends_with('\n'));
    }

    #[test]
    fn known_bad_control_passes_and_catches_a_current_twin() {
        run_known_bad_control().expect("control");
        let (r, l) = parse_and_classify(KNOWN_BAD_CONTROL, id(9), Some(&codex())).expect("control parses");
        assert_eq!(l, Lifecycle::Retired);
        assert_eq!(r.content, "known-bad");
        assert_eq!(r.nonce, "a1b2c3");
        let twin = KNOWN_BAD_CONTROL.replace(" · eroded", "");
        assert_eq!(check_control(&twin).expect_err("must be rejected").code(), KNOWN_BAD_CONTROL_FAILED.as_str());
        let broken = KNOWN_BAD_CONTROL.replace("n=a1b2c3⟧", "n=A1B2C3⟧");
        assert_eq!(check_control(&broken).expect_err("must be rejected").code(), KNOWN_BAD_CONTROL_FAILED.as_str());
        let other = KNOWN_BAD_CONTROL.replace("\nknown-bad\n", "\nknown-good\n");
        assert_eq!(check_control(&other).expect_err("must be rejected").code(), KNOWN_BAD_CONTROL_FAILED.as_str());
    }

    #[test]
    fn genuine_rendering_parses_exactly() {
        let text = good();
        let r = parse_rendering(&text, id(7), Some(&codex())).expect("good");
        assert_eq!(r.id, id(7));
        assert_eq!(r.content, "hello\nworld");
        assert_eq!(r.nonce, "0f9e8d");
        assert_eq!(r.fence_persona, codex());
        assert_eq!(r.header, header_lines().join("\n"));
        assert_eq!(classify(&r).expect("classify"), Lifecycle::Current);
        assert_eq!(content_digest(&r), Digest::of(b"hello\nworld"));
        // Any persona is allowed without an expectation (anchors).
        let other = text.replace("persona:codex", "persona:claude").replace("Persona: codex", "Persona: claude");
        let r = parse_rendering(&other, id(7), None).expect("any persona");
        assert_eq!(r.fence_persona.as_str(), "claude");
        assert_eq!(classify(&r).expect("classify"), Lifecycle::Current);
    }

    #[test]
    fn content_is_exact_bytes_between_the_newlines() {
        for content in ["", "\n", " x ", "a\n\nb\n", "⟦ not a marker ⟧", "unicode: 雪 😀 ·", "edges:\nStatus: retired", "\r\n"] {
            let text = render(&header_lines(), None, content);
            let r = parse_rendering(&text, id(7), Some(&codex())).expect(content);
            assert_eq!(r.content, content);
        }
    }

    #[test]
    fn size_is_bounded() {
        let base = good();
        let pad = |total: usize| {
            let filler = "x".repeat(total - base.len());
            base.replace("hello\nworld", &format!("hello\nworld{filler}"))
        };
        let exact = pad(MAX_RENDERING_BYTES);
        assert_eq!(exact.len(), MAX_RENDERING_BYTES);
        assert!(parse_rendering(&exact, id(7), Some(&codex())).is_ok());
        let over = pad(MAX_RENDERING_BYTES + 1);
        assert_eq!(code(&over), TOO_LARGE.as_str());
    }

    #[test]
    fn open_fence_rules() {
        let g = good();
        let open = "⟦UNTRUSTED id=7 src=persona:codex trust=memory-content n=0f9e8d⟧";
        let cases: &[(&str, &str, &str)] = &[
            ("⟦UNTRUSTED id=7 ", "⟦UNTRUSTED id=8 ", FENCE_ID_MISMATCH.as_str()),
            ("⟦UNTRUSTED id=7 ", "⟦UNTRUSTED id=07 ", FENCE_ID_MISMATCH.as_str()),
            ("⟦UNTRUSTED id=7 ", "⟦UNTRUSTED id=7x ", FENCE_ID_MISMATCH.as_str()),
            ("⟦UNTRUSTED id=7 ", "⟦UNTRUSTED  id=7 ", FENCE_OPEN_INVALID.as_str()),
            ("⟦UNTRUSTED id=7 ", "⟦UNTRUSTED id=7  ", FENCE_OPEN_INVALID.as_str()),
            ("⟦UNTRUSTED id=7 ", "⟦UNTRUSTED id= ", FENCE_OPEN_INVALID.as_str()),
            ("src=persona:codex ", "src=persona:claude ", FENCE_PERSONA_MISMATCH.as_str()),
            ("src=persona:codex ", "src=persona:Codex ", FENCE_OPEN_INVALID.as_str()),
            ("src=persona:codex ", "src=persona: ", FENCE_OPEN_INVALID.as_str()),
            ("src=persona:codex ", "src=persona:codex  ", FENCE_OPEN_INVALID.as_str()),
            ("trust=memory-content", "trust=memory_content", FENCE_OPEN_INVALID.as_str()),
            ("n=0f9e8d⟧\n", "n=0F9E8D⟧\n", FENCE_NONCE_INVALID.as_str()),
            ("n=0f9e8d⟧\n", "n=0f9e8⟧\n", FENCE_NONCE_INVALID.as_str()),
            ("n=0f9e8d⟧\n", "n=0f9e8d0⟧\n", FENCE_NONCE_INVALID.as_str()),
            ("n=0f9e8d⟧\n", "n=0f9e8g⟧\n", FENCE_NONCE_INVALID.as_str()),
            ("n=0f9e8d⟧\n", "n= 0f9e8d⟧\n", FENCE_NONCE_INVALID.as_str()),
            ("n=0f9e8d⟧\n", "n=⟧\n", FENCE_NONCE_INVALID.as_str()),
            ("n=0f9e8d⟧\n", "n=0f9e8d⟧ \n", FENCE_OPEN_INVALID.as_str()),
            ("n=0f9e8d⟧\n", "n=0f9e8d⟧⟧\n", FENCE_OPEN_INVALID.as_str()),
            ("n=0f9e8d⟧\n", "n=0f9e8d\n", FENCE_OPEN_INVALID.as_str()),
            ("n=0f9e8d⟧\n", "n=0f9e8d⟧\r\n", FENCE_OPEN_INVALID.as_str()),
            (open, &open.replace("⟦", "⟦UNTRUSTED"), FENCE_OPEN_INVALID.as_str()),
            ("\n⟦UNTRUSTED id=7", "\n ⟦UNTRUSTED id=7", FENCE_OPEN_INVALID.as_str()),
            ("\n⟦UNTRUSTED id=7", "\nx⟦UNTRUSTED id=7", FENCE_OPEN_INVALID.as_str()),
        ];
        for (from, to, want) in cases {
            let text = g.replacen(from, to, 1);
            assert_ne!(text, g, "{to}");
            assert_eq!(code(&text), *want, "{to:?}");
        }
        assert_eq!(code(&g.replace(open, "UNTRUSTED id=7")), FENCE_MISSING.as_str());
        assert_eq!(code("Memory [7]\nno fences at all"), FENCE_MISSING.as_str());
        assert_eq!(code(""), FENCE_MISSING.as_str());
        // An open fence with no newline at all after it.
        let cut = format!("Memory [7]\n{open}");
        assert_eq!((code(&cut), rule(&cut)), (FENCE_OPEN_INVALID.into(), "no_newline".into()));
        // The expected persona is enforced, None allows any.
        let claude = Persona::parse("claude").expect("persona");
        assert_eq!(parse_rendering(&g, id(7), Some(&claude)).expect_err("must be rejected").code(), FENCE_PERSONA_MISMATCH.as_str());
        // An open-fence-looking line with another id before the real one.
        let decoy = g.replacen(open, &format!("{}\n{open}", open.replace("id=7", "id=70")), 1);
        assert_eq!(code(&decoy), FENCE_ID_MISMATCH.as_str());
    }

    #[test]
    fn second_open_fence_anywhere_is_rejected() {
        let g = good();
        let open = "⟦UNTRUSTED id=7 src=persona:codex trust=memory-content n=0f9e8d⟧";
        // Two open fences in a row.
        let two = g.replacen(open, &format!("{open}\n{open}"), 1);
        assert_eq!(code(&two), FENCE_DUPLICATED.as_str());
        // Another nonce and persona, still the same id: duplicated.
        let other = open.replace("n=0f9e8d", "n=123456").replace("codex", "mallory");
        assert_eq!(code(&g.replacen("hello\n", &format!("hello\n{other}\n"), 1)), FENCE_DUPLICATED.as_str());
        // Inside the content, not a full line, or another id: nested.
        assert_eq!(code(&g.replacen("hello", &format!("hello {open}"), 1)), FENCE_NESTED.as_str());
        assert_eq!(code(&g.replacen("hello", &open.replace("id=7", "id=8"), 1)), FENCE_NESTED.as_str());
        // Open fence placed in the header before the real one: that first one is the
        // open fence, the real one ends up in the content.
        let h = header_lines().join("\n");
        let early = g.replacen(&h, &format!("{h}\n{open}"), 1);
        assert_eq!(code(&early), FENCE_DUPLICATED.as_str());
    }

    #[test]
    fn close_fence_rules() {
        let g = good();
        let cases: &[(&str, &str, &str)] = &[
            ("\n⟦/UNTRUSTED n=0f9e8d⟧", "", "missing"),
            ("\n⟦/UNTRUSTED n=0f9e8d⟧", "\n⟦/UNTRUSTED n=0f9e8d⟧\n", "text_after_close"),
            ("\n⟦/UNTRUSTED n=0f9e8d⟧", "\n⟦/UNTRUSTED n=0f9e8d⟧ ", "malformed"),
            ("\n⟦/UNTRUSTED n=0f9e8d⟧", "\n⟦/UNTRUSTED n=0f9e8d⟧\nmore", "text_after_close"),
            ("\n⟦/UNTRUSTED n=0f9e8d⟧", "\n⟦/UNTRUSTED n=aaaaaa⟧", "nonce_mismatch"),
            ("\n⟦/UNTRUSTED n=0f9e8d⟧", "\n⟦/UNTRUSTED n=0F9E8D⟧", "malformed"),
            ("\n⟦/UNTRUSTED n=0f9e8d⟧", "\n⟦/UNTRUSTED  n=0f9e8d⟧", "malformed"),
            ("\n⟦/UNTRUSTED n=0f9e8d⟧", "\n⟦/UNTRUSTED n=0f9e8d", "malformed"),
            ("\n⟦/UNTRUSTED n=0f9e8d⟧", "⟦/UNTRUSTED n=0f9e8d⟧", "not_at_line_start"),
            ("\n⟦/UNTRUSTED n=0f9e8d⟧", "\n⟦/UNTRUSTED n=0f9e8d⟧\n⟦/UNTRUSTED n=0f9e8d⟧", "duplicated"),
        ];
        for (from, to, want) in cases {
            let text = g.replacen(from, to, 1);
            assert_eq!((code(&text), rule(&text)), (FENCE_CLOSE_INVALID.to_string(), want.to_string()), "{to:?}");
        }
        // A close marker before the open fence.
        let before = g.replacen("Type: fact", "Type: ⟦/UNTRUSTED n=0f9e8d⟧", 1);
        assert_eq!((code(&before), rule(&before)), (FENCE_CLOSE_INVALID.into(), "before_open".into()));
        // The close sharing the open fence's newline: no content line.
        let shared = format!(
            "{}\n⟦UNTRUSTED id=7 src=persona:codex trust=memory-content n=0f9e8d⟧\n⟦/UNTRUSTED n=0f9e8d⟧",
            header_lines().join("\n")
        );
        assert_eq!((code(&shared), rule(&shared)), (FENCE_CLOSE_INVALID.into(), "no_content_line".into()));
        // Empty content needs its own line.
        let empty = shared.replace("⟧\n⟦/", "⟧\n\n⟦/");
        assert_eq!(parse_rendering(&empty, id(7), Some(&codex())).expect("empty").content, "");
    }

    #[test]
    fn markers_inside_content_are_nested() {
        let g = good();
        for inner in [
            "⟦UNTRUSTED",
            "x ⟦UNTRUSTED id=7 src=persona:codex trust=memory-content n=0f9e8d⟧",
            "⟦/UNTRUSTED",
            "⟦/UNTRUSTED n=0f9e8d⟧ x",
            "⟦/UNTRUSTED n=111111⟧",
        ] {
            let text = g.replacen("hello", inner, 1);
            assert_eq!(code(&text), FENCE_NESTED.as_str(), "{inner:?}");
        }
        // Lookalikes without the exact marker are content.
        for inner in ["[UNTRUSTED id=7]", "⟦ UNTRUSTED", "⟦untrusted", "UNTRUSTED n=0f9e8d⟧", "⟦/ UNTRUSTED"] {
            let text = g.replacen("hello", inner, 1);
            assert_eq!(lifecycle(&text), Lifecycle::Current, "{inner:?}");
        }
    }

    #[test]
    fn header_rules() {
        let g = good();
        for (from, to) in [
            ("Memory [7]\n", "Memory [8]\n"),
            ("Memory [7]\n", "Memory [07]\n"),
            ("Memory [7]\n", "Memory [7] \n"),
            ("Memory [7]\n", " Memory [7]\n"),
            ("Memory [7]\n", "\nMemory [7]\n"),
            ("Memory [7]\n", "memory [7]\n"),
            ("Memory [7]\n", "Memory [7]\r\n"),
        ] {
            assert_eq!(code(&g.replacen(from, to, 1)), HEADER_INVALID.as_str(), "{to:?}");
        }
        // Only the first line alone is not a header (its \n is trimmed away).
        let bare = "Memory [7]\n⟦UNTRUSTED id=7 src=persona:codex trust=memory-content n=0f9e8d⟧\nc\n⟦/UNTRUSTED n=0f9e8d⟧";
        assert_eq!(code(bare), HEADER_INVALID.as_str());
        let only_edges = "Memory [7]\nedges:\nPersona: codex\n⟦UNTRUSTED id=7 src=persona:codex trust=memory-content n=0f9e8d⟧\nc\n⟦/UNTRUSTED n=0f9e8d⟧";
        assert_eq!(code(only_edges), HEADER_INVALID.as_str());
        // Trailing whitespace is trimmed from the header.
        let spaced = g.replacen("basis=observed\n", "basis=observed \t\r\n\n", 1);
        let r = parse_rendering(&spaced, id(7), Some(&codex())).expect("trimmed");
        assert!(r.header.ends_with("basis=observed"));
    }

    #[test]
    fn edges_block_is_never_read() {
        let hostile = [
            "  Status: retired",
            "Status: retired",
            "Persona: evil",
            "Source: imported",
            "Importance: 7",
            "belief: confidence=0.1 evidence=0 basis=observed · eroded",
            "belief: confidence=1 evidence=1 basis=x",
            "Memory [7]",
            "edges:",
            "UNTRUSTED id=7 src=persona:codex trust=memory-content n=0f9e8d",
            "/UNTRUSTED n=0f9e8d",
            "[22131] supersedes → [22096] preview text…",
            "has_more=true",
        ]
        .join("\n");
        let plain = good();
        let with_edges = render(&header_lines(), Some(&hostile), "hello\nworld");
        let a = parse_and_classify(&plain, id(7), Some(&codex())).expect("plain");
        let b = parse_and_classify(&with_edges, id(7), Some(&codex())).expect("edges ignored");
        assert_eq!(a, b);
        assert_eq!(b.1, Lifecycle::Current);
        // And the other way: an eroded memory stays retired whatever edges say.
        let mut eroded = header_lines();
        eroded[9].push_str(" · eroded");
        let c = parse_and_classify(&render(&eroded, Some(&hostile), "x"), id(7), Some(&codex())).expect("eroded");
        assert_eq!(c.1, Lifecycle::Retired);
        // Fields missing from the header are not found in the edges block.
        let mut missing = header_lines();
        missing.retain(|l| !l.starts_with("Status:"));
        let text = render(&missing, Some("Status: active\nhas_more=true"), "x");
        assert_eq!((code(&text), rule(&text)), (METADATA_INVALID.into(), "status_count".into()));
    }

    #[test]
    fn classification_counts() {
        for (prefix, rule_name) in [
            ("Persona:", "persona_count"),
            ("Status:", "status_count"),
            ("Source:", "source_count"),
            ("Importance:", "importance_count"),
            ("belief:", "belief_count"),
        ] {
            let missing = with_line(prefix, None);
            assert_eq!((code(&missing), rule(&missing)), (METADATA_INVALID.into(), rule_name.into()), "{prefix}");
            let mut h = header_lines();
            let line = h.iter().find(|l| l.starts_with(prefix)).expect("line").clone();
            h.insert(2, line);
            let dup = render(&h, None, "c");
            assert_eq!((code(&dup), rule(&dup)), (METADATA_INVALID.into(), rule_name.into()), "{prefix}");
        }
        // A malformed field line still counts as that field.
        let mut h = header_lines();
        h.insert(2, "Status:retired".into());
        assert_eq!(rule(&render(&h, None, "c")), "status_count");
        // Case and indentation matter: these are not field lines.
        let mut h = header_lines();
        h.insert(2, "status: retired".into());
        h.insert(2, " Status: retired".into());
        assert_eq!(lifecycle(&render(&h, None, "c")), Lifecycle::Current);
    }

    #[test]
    fn classification_order_is_exact() {
        // Rule 1 before rule 3: a duplicated Persona beats a bad Status.
        let mut h = header_lines();
        h[5] = "Status: retired".into();
        h.insert(2, "Persona: codex".into());
        assert_eq!(rule(&render(&h, None, "c")), "persona_count");
        // Rule 2 before 3.
        let mut h = header_lines();
        h[4] = "Persona: claude".into();
        h[5] = "Status: retired".into();
        assert_eq!(rule(&render(&h, None, "c")), "persona_mismatch");
        // Rule 3 before 4, 4 before 5, 5 before 6.
        let mut h = header_lines();
        h[5] = "Status: retired".into();
        h[6] = "Source: other".into();
        assert_eq!(rule(&render(&h, None, "c")), "status_not_active");
        let mut h = header_lines();
        h[6] = "Source: other".into();
        h[8] = "Importance: 2".into();
        assert_eq!(rule(&render(&h, None, "c")), "source_unknown");
        let mut h = header_lines();
        h[8] = "Importance: 2".into();
        h[9] = "belief: nonsense".into();
        assert_eq!(rule(&render(&h, None, "c")), "importance_invalid");
    }

    #[test]
    fn persona_status_source_rules() {
        for (line, want, r) in [
            ("Persona: claude", METADATA_INVALID, "persona_mismatch"),
            ("Persona:codex", METADATA_INVALID, "persona_mismatch"),
            ("Persona:  codex", METADATA_INVALID, "persona_mismatch"),
            ("Persona: codex ", METADATA_INVALID, "persona_mismatch"),
            ("Persona: Codex", METADATA_INVALID, "persona_mismatch"),
            ("Status: retired", LIFECYCLE_UNCLASSIFIED, "status_not_active"),
            ("Status: Active", LIFECYCLE_UNCLASSIFIED, "status_not_active"),
            ("Status:active", LIFECYCLE_UNCLASSIFIED, "status_not_active"),
            ("Status: active ", LIFECYCLE_UNCLASSIFIED, "status_not_active"),
            ("Status: ", LIFECYCLE_UNCLASSIFIED, "status_not_active"),
            ("Source: import", LIFECYCLE_UNCLASSIFIED, "source_unknown"),
            ("Source: MCP", LIFECYCLE_UNCLASSIFIED, "source_unknown"),
            ("Source: mcp correction", LIFECYCLE_UNCLASSIFIED, "source_unknown"),
        ] {
            let prefix = &line[..line.find(':').expect("colon") + 1];
            let text = with_line(prefix, Some(line));
            assert_eq!((code(&text), rule(&text)), (want.to_string(), r.to_owned()), "{line:?}");
        }
        assert_eq!(lifecycle(&with_line("Source:", Some("Source: correction"))), Lifecycle::Current);
        assert_eq!(lifecycle(&with_line("Source:", Some("Source: mcp"))), Lifecycle::Current);
    }

    #[test]
    fn importance_syntax() {
        for ok in ["0", "1", "0.0", "0.9", "0.90", "0.123456789", "1.0", "1.000"] {
            let text = with_line("Importance:", Some(&format!("Importance: {ok}")));
            assert_eq!(lifecycle(&text), Lifecycle::Current, "{ok}");
        }
        for bad in [
            "", " ", "NaN", "nan", "inf", "-0", "-0.1", "+0.5", ".5", "0.", "1.", "00.5", "01", "1e0", "0.5e0", "1.5", "1.01", "2", " 0.9",
            "0.9 ", "0,9", "0.9x", "٠.٥",
        ] {
            let text = with_line("Importance:", Some(&format!("Importance: {bad}")));
            assert_eq!((code(&text), rule(&text)), (METADATA_INVALID.into(), "importance_invalid".into()), "{bad:?}");
        }
        let text = with_line("Importance:", Some("Importance:0.9"));
        assert_eq!(rule(&text), "importance_invalid");
    }

    /// A header whose belief line is not the last line, so the header's
    /// trailing-whitespace trim cannot touch it.
    fn belief_mid(line: &str) -> String {
        let mut h = header_lines();
        h.pop();
        h.insert(3, line.to_owned());
        render(&h, None, "c")
    }

    #[test]
    fn belief_syntax() {
        let with_line = |_: &str, line: Option<&str>| belief_mid(line.expect("line"));
        let current = [
            "confidence=0 evidence=0 basis=a",
            "confidence=1 evidence=12 basis=observed",
            "confidence=0.95 evidence=9 basis=user_said-2",
            "confidence=1.00 evidence=007 basis=x",
        ];
        for b in current {
            let text = with_line("belief:", Some(&format!("belief: {b}")));
            assert_eq!(lifecycle(&text), Lifecycle::Current, "{b}");
            let text = with_line("belief:", Some(&format!("belief: {b} · eroded")));
            assert_eq!(lifecycle(&text), Lifecycle::Retired, "{b}");
        }
        let base = "confidence=0.95 evidence=9 basis=observed";
        let marker = [" · faded", " · eroded · eroded", " · ", " · Eroded", " · eroded2", " · eroded ", " ·  eroded"];
        for tail in marker {
            let text = with_line("belief:", Some(&format!("belief: {base}{tail}")));
            assert_eq!((code(&text), rule(&text)), (LIFECYCLE_UNCLASSIFIED.into(), "belief_unknown_marker".into()), "{tail:?}");
        }
        let malformed = [
            format!("belief: {base} "),
            format!("belief: {base} extra"),
            format!("belief: {base}·eroded"),
            format!("belief: {base} . eroded"),
            format!("belief: {base}  · eroded"),
            format!("belief: {base}\u{a0}· eroded"),
            format!("belief:{base}"),
            format!("belief:  {base}"),
            "belief: confidence=1.5 evidence=9 basis=observed".into(),
            "belief: confidence=1.01 evidence=9 basis=observed".into(),
            "belief: confidence=.5 evidence=9 basis=observed".into(),
            "belief: confidence=0. evidence=9 basis=observed".into(),
            "belief: confidence=-0 evidence=9 basis=observed".into(),
            "belief: confidence=0.٥ evidence=9 basis=observed".into(),
            "belief: confidence=0.9 evidence= basis=observed".into(),
            "belief: confidence=0.9 evidence=-1 basis=observed".into(),
            "belief: confidence=0.9 evidence=9 basis=".into(),
            "belief: confidence=0.9 evidence=9 basis=Observed".into(),
            "belief: confidence=0.9 evidence=9 basis=9x".into(),
            "belief: confidence=0.9 evidence=9 basis=_x".into(),
            "belief: confidence=0.9 evidence=9".into(),
            "belief: evidence=9 confidence=0.9 basis=observed".into(),
            "belief: ".into(),
        ];
        for line in &malformed {
            let text = with_line("belief:", Some(line));
            assert_eq!((code(&text), rule(&text)), (LIFECYCLE_UNCLASSIFIED.into(), "belief_malformed".into()), "{line:?}");
        }
    }

    #[test]
    fn trailing_whitespace_of_the_last_header_line_is_trimmed() {
        // Section 3 trims the header's trailing whitespace, which is the end
        // of its last line (here the belief line) only.
        let text = with_line("belief:", Some("belief: confidence=0.95 evidence=9 basis=observed · eroded \t"));
        assert_eq!(lifecycle(&text), Lifecycle::Retired);
        let text = belief_mid("belief: confidence=0.95 evidence=9 basis=observed · eroded ");
        assert_eq!(rule(&text), "belief_unknown_marker");
    }

    #[test]
    fn status_source_confidence_never_decide_alone() {
        // A correction with confidence 0 and importance 0 is still current.
        let mut h = header_lines();
        h[6] = "Source: correction".into();
        h[8] = "Importance: 0".into();
        h[9] = "belief: confidence=0 evidence=0 basis=observed".into();
        assert_eq!(lifecycle(&render(&h, None, "c")), Lifecycle::Current);
    }

    fn arb_header_value() -> impl Strategy<Value = String> {
        "[a-z][a-z0-9_-]{0,10}"
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

        #[test]
        fn never_panics_on_arbitrary_text(text in "\\PC*", n in 1u64..100) {
            let _ = parse_and_classify(&text, id(n), Some(&codex()));
            let _ = parse_and_classify(&text, id(n), None);
        }

        #[test]
        fn never_panics_on_marker_soup(parts in proptest::collection::vec(prop_oneof![
            Just("⟦UNTRUSTED id=7 src=persona:codex trust=memory-content n=0f9e8d⟧".to_string()),
            Just("⟦/UNTRUSTED n=0f9e8d⟧".to_string()),
            Just("⟦UNTRUSTED".to_string()),
            Just("⟦/UNTRUSTED".to_string()),
            Just("\n".to_string()),
            Just("Memory [7]\n".to_string()),
            Just("\nedges:".to_string()),
            Just(" · eroded".to_string()),
            Just("⟧".to_string()),
            "[a-z0-9 =:]{0,8}",
        ], 0..24)) {
            let text: String = parts.concat();
            let _ = parse_and_classify(&text, id(7), Some(&codex()));
        }

        #[test]
        fn never_panics_on_mutations(edits in proptest::collection::vec((any::<prop::sample::Index>(), 0u8..3, prop_oneof![
            Just('⟦'), Just('⟧'), Just('\n'), Just('·'), Just(' '), Just('/'), Just('x'), Just('0'), any::<char>()
        ]), 1..6)) {
            let mut chars: Vec<char> = good().chars().collect();
            for (at, op, c) in edits {
                let i = at.index(chars.len() + 1);
                match op {
                    0 => chars.insert(i, c),
                    1 if i < chars.len() => { chars.remove(i); }
                    _ if i < chars.len() => chars[i] = c,
                    _ => chars.push(c),
                }
            }
            let text: String = chars.into_iter().collect();
            if let Ok(r) = parse_rendering(&text, id(7), Some(&codex())) {
                // Whatever got through keeps the parser's promises.
                prop_assert!(r.header.starts_with("Memory [7]\n"));
                prop_assert!(!r.content.contains(OPEN_MARKER) && !r.content.contains(CLOSE_MARKER));
                prop_assert!(is_nonce(&r.nonce));
                let close = format!("\n{CLOSE_MARKER} n={}⟧", r.nonce);
                prop_assert!(text.ends_with(&close));
                prop_assert!(text[..text.len() - close.len()].ends_with(&r.content));
                let _ = classify(&r);
            }
        }

        #[test]
        fn genuine_renderings_round_trip(
            content in "[^⟦]{0,200}",
            persona in arb_header_value(),
            basis in arb_header_value(),
            nonce in "[0-9a-f]{6}",
            n in 1u64..1_000_000,
            eroded in any::<bool>(),
            edges in proptest::option::of("[^⟦]{0,120}"),
        ) {
            let mut text = format!(
                "Memory [{n}]\nType: fact\nPersona: {persona}\nStatus: active\nSource: mcp\nImportance: 0.5\nbelief: confidence=0.5 evidence=1 basis={basis}{}\n",
                if eroded { " · eroded" } else { "" }
            );
            if let Some(e) = &edges {
                text.push_str("edges:\n");
                text.push_str(e);
                text.push('\n');
            }
            text.push_str(&format!("⟦UNTRUSTED id={n} src=persona:{persona} trust=memory-content n={nonce}⟧\n{content}\n⟦/UNTRUSTED n={nonce}⟧"));
            let p = Persona::parse(&persona).expect("persona");
            let (r, l) = parse_and_classify(&text, id(n), Some(&p)).expect("genuine");
            prop_assert_eq!(&r.content, &content);
            prop_assert_eq!(&r.nonce, &nonce);
            prop_assert_eq!(l, if eroded { Lifecycle::Retired } else { Lifecycle::Current });
            prop_assert!(!r.header.contains("edges:"));
        }

        #[test]
        fn edges_never_change_the_outcome(edges in "[^⟦]{0,300}", eroded in any::<bool>()) {
            let mut h = header_lines();
            if eroded { h[9].push_str(" · eroded"); }
            let plain = render(&h, None, "c");
            let with_edges = render(&h, Some(&edges), "c");
            prop_assert_eq!(
                parse_and_classify(&plain, id(7), Some(&codex())).expect("plain"),
                parse_and_classify(&with_edges, id(7), Some(&codex())).expect("edges")
            );
        }
    }
}
