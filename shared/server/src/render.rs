//! Rendering a stored memory exactly as docs/protocol.md §3 shows (the
//! hosted service's text), plus the small formatting helpers it needs:
//! JavaScript-like shortest numbers and `YYYY-MM-DD HH:MM:SS` UTC times.

use std::fmt::Write as _;

/// At most this many edge preview lines; more edges print `  has_more=true`.
pub const EDGE_PREVIEWS: usize = 5;
/// Characters of the target's content shown in one edge preview line.
pub const PREVIEW_CHARS: usize = 60;

/// The lifecycle marker carried on the `belief:` line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Marker {
    None,
    Eroded,
    Faded,
}

impl Marker {
    pub fn as_str(self) -> &'static str {
        match self {
            Marker::None => "none",
            Marker::Eroded => "eroded",
            Marker::Faded => "faded",
        }
    }

    pub fn parse(text: &str) -> Option<Marker> {
        match text {
            "none" => Some(Marker::None),
            "eroded" => Some(Marker::Eroded),
            "faded" => Some(Marker::Faded),
            _ => None,
        }
    }

    fn suffix(self) -> &'static str {
        match self {
            Marker::None => "",
            Marker::Eroded => " · eroded",
            Marker::Faded => " · faded",
        }
    }
}

/// One stored memory, as the renderer needs it.
#[derive(Debug, Clone, PartialEq)]
pub struct Memory {
    pub id: u64,
    pub kind: String,
    pub scope: String,
    pub project: String,
    pub persona: String,
    pub status: String,
    pub source: String,
    pub created_ms: i64,
    pub importance: f64,
    pub confidence: f64,
    pub evidence: u64,
    pub basis: String,
    pub marker: Marker,
    pub content: String,
}

/// One outgoing edge with a preview of its target.
#[derive(Debug, Clone, PartialEq)]
pub struct Edge {
    pub kind: String,
    pub to: u64,
    pub preview: String,
}

/// Render `memory` with `edges` (outgoing, oldest first; at most
/// `EDGE_PREVIEWS` are shown, `has_more` says whether more exist) and the
/// fence nonce (6 lowercase hex, fresh per response).
pub fn render(memory: &Memory, edges: &[Edge], has_more: bool, nonce: &str) -> String {
    let mut out = String::with_capacity(memory.content.len() + 512);
    // Writing into a String cannot fail.
    let _ = write!(
        out,
        "Memory [{id}]\nType: {kind}\nScope: {scope}\nProject: {project}\nPersona: {persona}\nStatus: {status}\nSource: {source}\nCreated: {created}\nImportance: {importance}\nbelief: confidence={confidence} evidence={evidence} basis={basis}{marker}\n",
        id = memory.id,
        kind = memory.kind,
        scope = memory.scope,
        project = memory.project,
        persona = memory.persona,
        status = memory.status,
        source = memory.source,
        created = kijito_protocol::clock::format_utc_seconds(memory.created_ms),
        importance = kijito_protocol::manifest::js_number(memory.importance),
        confidence = kijito_protocol::manifest::js_number(memory.confidence),
        evidence = memory.evidence,
        basis = memory.basis,
        marker = memory.marker.suffix(),
    );
    if !edges.is_empty() || has_more {
        out.push_str("edges:\n");
        for edge in edges.iter().take(EDGE_PREVIEWS) {
            let _ = writeln!(out, "  -> {} [{}] {}", edge.kind, edge.to, preview(&edge.preview));
        }
        if has_more || edges.len() > EDGE_PREVIEWS {
            out.push_str("  has_more=true\n");
        }
    }
    let _ = write!(
        out,
        "⟦UNTRUSTED id={id} src=persona:{persona} trust=memory-content n={nonce}⟧\n{content}\n⟦/UNTRUSTED n={nonce}⟧",
        id = memory.id,
        persona = memory.persona,
        content = memory.content,
    );
    out
}

/// One line that names a memory without its full text (the lists of
/// `kijito_recall` without `full`, `kijito_recent`, `kijito_startup`):
/// `[<id>] <type> · Status: <status> · Source: <source> · belief: ...[ · eroded] · <preview>`.
/// The preview is [`preview`] of the content; read the memory itself with
/// `kijito_get` (a summary line is never a rendering a verifier accepts).
pub fn summary(memory: &Memory) -> String {
    format!(
        "[{id}] {kind} · Status: {status} · Source: {source} · belief: confidence={confidence} evidence={evidence} basis={basis}{marker} · {preview}",
        id = memory.id,
        kind = memory.kind,
        status = memory.status,
        source = memory.source,
        confidence = kijito_protocol::manifest::js_number(memory.confidence),
        evidence = memory.evidence,
        basis = memory.basis,
        marker = memory.marker.suffix(),
        preview = preview(&memory.content),
    )
}

/// The one-line answers of the writes, shared by the HTTP API (`result`)
/// and the MCP tools (their text).
pub mod answer {
    pub fn created(id: u64) -> String {
        format!("Created [{id}]")
    }
    pub fn updated(id: u64) -> String {
        format!("Updated [{id}]")
    }
    pub fn corrected(id: u64, by: u64) -> String {
        format!("Corrected [{id}] by [{by}]")
    }
    pub fn faded(id: u64) -> String {
        format!("Faded [{id}]")
    }
}

/// The first `PREVIEW_CHARS` characters of `content`, every control character
/// (newlines included) shown as a space, so a preview stays on one line.
pub fn preview(content: &str) -> String {
    content.chars().take(PREVIEW_CHARS).map(|c| if c.is_control() { ' ' } else { c }).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn control() -> Memory {
        Memory {
            id: 9,
            kind: "correction".into(),
            scope: "project".into(),
            project: "Codex".into(),
            persona: "codex".into(),
            status: "active".into(),
            source: "mcp".into(),
            created_ms: kijito_protocol::clock::parse_utc_seconds("2026-07-25 00:00:00").unwrap(),
            importance: 0.9,
            confidence: 0.95,
            evidence: 9,
            basis: "observed".into(),
            marker: Marker::Eroded,
            content: "known-bad".into(),
        }
    }

    #[test]
    fn renders_the_known_bad_control_byte_for_byte() {
        let golden = include_str!("../../../fixtures/renderings/known-bad-control.txt");
        assert_eq!(render(&control(), &[], false, "a1b2c3"), golden);
    }

    #[test]
    fn renders_edges_and_has_more() {
        let mut m = control();
        m.marker = Marker::Faded;
        let edges: Vec<Edge> =
            (1..=7).map(|i| Edge { kind: "relates_to".into(), to: i, preview: format!("line one\nline {i} {}", "x".repeat(80)) }).collect();
        let text = render(&m, &edges, true, "0f0f0f");
        assert!(text.contains("basis=observed · faded\nedges:\n  -> relates_to [1] line one line 1 xxx"));
        assert_eq!(text.matches("  -> ").count(), EDGE_PREVIEWS);
        assert!(text.contains("  has_more=true\n⟦UNTRUSTED id=9 "));
        let line = text.lines().find(|l| l.starts_with("  -> relates_to [2]")).unwrap();
        assert_eq!(line.chars().count(), "  -> relates_to [2] ".len() + PREVIEW_CHARS);
    }

    #[test]
    fn summary_is_one_line_with_the_marker() {
        let mut m = control();
        m.content = "first line\nsecond ⟦UNTRUSTED".into();
        assert_eq!(
            summary(&m),
            "[9] correction · Status: active · Source: mcp · belief: confidence=0.95 evidence=9 basis=observed · eroded · first line second ⟦UNTRUSTED"
        );
    }

    #[test]
    fn numbers_print_like_javascript() {
        for (x, s) in [
            (0.9, "0.9"),
            (1.0, "1"),
            (0.95, "0.95"),
            (0.0, "0"),
            (0.1 + 0.2, "0.30000000000000004"),
            (1e-7, "1e-7"),
            (0.000001, "0.000001"),
            (1.5e-7, "1.5e-7"),
        ] {
            assert_eq!(kijito_protocol::manifest::js_number(x), s);
        }
    }

    #[test]
    fn times_round_trip() {
        for t in ["1970-01-01 00:00:00", "2026-07-25 00:00:00", "2000-02-29 23:59:59", "2100-12-31 12:34:56"] {
            assert_eq!(kijito_protocol::clock::format_utc_seconds(kijito_protocol::clock::parse_utc_seconds(t).unwrap()), t);
        }
        assert_eq!(kijito_protocol::clock::parse_utc_seconds("1970-01-02 00:00:00"), Some(86_400_000));
        for bad in [
            "2026-02-30 00:00:00",
            "2026-13-01 00:00:00",
            "2026-07-25T00:00:00",
            "1969-12-31 23:59:59",
            "2026-07-25 24:00:00",
            "+026-07-25 00:00:00",
            "",
        ] {
            assert_eq!(kijito_protocol::clock::parse_utc_seconds(bad), None, "{bad}");
        }
        assert_eq!(kijito_protocol::clock::format_utc_seconds(1_500), "1970-01-01 00:00:01");
    }
}
