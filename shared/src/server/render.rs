//! Rendering a stored memory exactly as PROTOCOL.md section 3 shows (the
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
        created = format_time(memory.created_ms),
        importance = js_number(memory.importance),
        confidence = js_number(memory.confidence),
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

/// The first `PREVIEW_CHARS` characters of `content`, every control character
/// (newlines included) shown as a space, so a preview stays on one line.
pub fn preview(content: &str) -> String {
    content.chars().take(PREVIEW_CHARS).map(|c| if c.is_control() { ' ' } else { c }).collect()
}

/// A number printed the way JavaScript's `String(x)` prints it, for the
/// values the store accepts (finite, 0 to 1): shortest round-trip digits,
/// no trailing `.0`, exponent form below 1e-6.
pub fn js_number(x: f64) -> String {
    if x == 0.0 {
        return "0".to_owned();
    }
    if x.abs() < 1e-6 || x.abs() >= 1e21 {
        // Rust's `{:e}` is shortest round-trip too: 1e-7, 1.5e-7.
        let s = format!("{x:e}");
        return match s.split_once('e') {
            Some((m, e)) if !e.starts_with('-') => format!("{m}e+{e}"),
            _ => s,
        };
    }
    format!("{x}")
}

/// Days since 1970-01-01 to a civil (year, month, day), proleptic Gregorian.
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// A civil date to days since 1970-01-01.
fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let m = i64::from(m);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Unix milliseconds to `YYYY-MM-DD HH:MM:SS` (UTC, seconds truncated).
pub fn format_time(ms: i64) -> String {
    let secs = ms.div_euclid(1000);
    let (y, mo, d) = civil_from_days(secs.div_euclid(86_400));
    let rem = secs.rem_euclid(86_400);
    format!("{y:04}-{mo:02}-{d:02} {:02}:{:02}:{:02}", rem / 3600, rem % 3600 / 60, rem % 60)
}

/// Parse `YYYY-MM-DD HH:MM:SS` (UTC, years 1970-9999) to Unix milliseconds.
pub fn parse_time(text: &str) -> Option<i64> {
    let b = text.as_bytes();
    if b.len() != 19 || b[4] != b'-' || b[7] != b'-' || b[10] != b' ' || b[13] != b':' || b[16] != b':' {
        return None;
    }
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        let part = &text[r];
        part.bytes().all(|c| c.is_ascii_digit()).then(|| part.parse().ok()).flatten()
    };
    let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (h, mi, s) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if y < 1970 || !(1..=12).contains(&mo) || d < 1 || h > 23 || mi > 59 || s > 59 {
        return None;
    }
    let days = days_from_civil(y, mo as u32, d as u32);
    // Reject 2026-02-30 and friends: the date must round-trip.
    if civil_from_days(days) != (y, mo as u32, d as u32) {
        return None;
    }
    Some((days * 86_400 + h * 3600 + mi * 60 + s) * 1000)
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
            created_ms: parse_time("2026-07-25 00:00:00").unwrap(),
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
        let edges: Vec<Edge> = (1..=7)
            .map(|i| Edge { kind: "relates_to".into(), to: i, preview: format!("line one\nline {i} {}", "x".repeat(80)) })
            .collect();
        let text = render(&m, &edges, true, "0f0f0f");
        assert!(text.contains("basis=observed · faded\nedges:\n  -> relates_to [1] line one line 1 xxx"));
        assert_eq!(text.matches("  -> ").count(), EDGE_PREVIEWS);
        assert!(text.contains("  has_more=true\n⟦UNTRUSTED id=9 "));
        let line = text.lines().find(|l| l.starts_with("  -> relates_to [2]")).unwrap();
        assert_eq!(line.chars().count(), "  -> relates_to [2] ".len() + PREVIEW_CHARS);
    }

    #[test]
    fn numbers_print_like_javascript() {
        for (x, s) in [(0.9, "0.9"), (1.0, "1"), (0.95, "0.95"), (0.0, "0"), (0.1 + 0.2, "0.30000000000000004"), (1e-7, "1e-7"), (0.000001, "0.000001"), (1.5e-7, "1.5e-7")] {
            assert_eq!(js_number(x), s);
        }
    }

    #[test]
    fn times_round_trip() {
        for t in ["1970-01-01 00:00:00", "2026-07-25 00:00:00", "2000-02-29 23:59:59", "2100-12-31 12:34:56"] {
            assert_eq!(format_time(parse_time(t).unwrap()), t);
        }
        assert_eq!(parse_time("1970-01-02 00:00:00"), Some(86_400_000));
        for bad in ["2026-02-30 00:00:00", "2026-13-01 00:00:00", "2026-07-25T00:00:00", "1969-12-31 23:59:59", "2026-07-25 24:00:00", "+026-07-25 00:00:00", ""] {
            assert_eq!(parse_time(bad), None, "{bad}");
        }
        assert_eq!(format_time(1_500), "1970-01-01 00:00:01");
    }
}
