//! Context telemetry (docs/context.md): how full a session's context window
//! is, read from the tail of the host's own session file, never guessed.
//!
//! - Claude Code: the transcript's last (non-sidechain, non-synthetic)
//!   assistant line's `message.usage`: `input_tokens +
//!   cache_read_input_tokens + cache_creation_input_tokens`, against the
//!   window of `message.model` from a small table of known models (or a
//!   conservative default, said so in `source`). A `compact_boundary` after
//!   the last usage means the usage is from before a compaction: unknown.
//! - Codex: the rollout's last `event_msg` of `payload.type` `token_count`
//!   with an `info`: `info.last_token_usage.total_tokens` (what Codex itself
//!   counts as in the window) against `info.model_context_window`.
//!
//! Only the tail is read: [`FIRST_TAIL`] bytes, doubled while no usable line
//! was found, at most [`MAX_TAIL`]. A truncated last line (the host is still
//! writing) is not JSON and is skipped; so is the first, partial line of a
//! window that does not start at offset 0.

#![forbid(unsafe_code)]

pub mod statusline;

use kijito_gate::pass::codes as transcript;
use kijito_protocol::error::{Error, Result};
use kijito_protocol::ids::AbsPath;
use serde_json::{json, Value};
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::os::unix::fs::MetadataExt;

/// First tail window.
pub const FIRST_TAIL: u64 = 256 * 1024;
/// Largest tail window read before answering "no usable line".
pub const MAX_TAIL: u64 = 16 * 1024 * 1024;
/// Conservative window for a Claude model this table does not know: the
/// smallest window of any current Claude model, so the ratio errs high.
pub const CLAUDE_DEFAULT_WINDOW: u64 = 200_000;

/// Stable codes of this module (registered in the workspace by `tests/it/architecture.rs`).
pub mod codes {
    kijito_protocol::codes! {
        NO_USAGE NoUsage = "no_usage_in_tail",
        COMPACTED Compacted = "compacted_since_last_usage",
        WINDOW_UNKNOWN WindowUnknown = "window_unknown",
        USAGE_INVALID UsageInvalid = "usage_invalid",
        STDIN Stdin = "statusline_stdin_invalid",
        STATUSLINE_FLAGS StatuslineFlags = "statusline_flags",
        DATA_DIR_FLAG DataDirFlag = "data_dir_flag",
    }
}

/// Which host wrote the file: the one host enum ([`kijito_protocol::host::HostKind`]).
pub use kijito_protocol::host::HostKind as Host;

/// One measurement. `ratio` is `Some` only when both numbers are known.
#[derive(Debug, Clone, PartialEq)]
pub struct Measure {
    pub used_tokens: Option<u64>,
    pub window_tokens: Option<u64>,
    pub ratio: Option<f64>,
    /// Where the numbers came from, e.g. `codex-rollout:token_count` or
    /// `claude-transcript:usage;window=default-200000(model claude-x unknown)`.
    pub source: String,
    /// Why `ratio` is null (a code from [`codes`]).
    pub reason: Option<String>,
}

impl Measure {
    fn unknown(source: &str, reason: impl Into<&'static str>) -> Measure {
        Measure { used_tokens: None, window_tokens: None, ratio: None, source: source.to_owned(), reason: Some(reason.into().to_owned()) }
    }

    fn of(used: u64, window: Option<u64>, source: String) -> Measure {
        match window.filter(|w| *w > 0) {
            Some(w) => Measure {
                used_tokens: Some(used),
                window_tokens: Some(w),
                ratio: Some(((used as f64 / w as f64) * 10_000.0).round() / 10_000.0),
                source,
                reason: None,
            },
            None => {
                Measure { used_tokens: Some(used), window_tokens: None, ratio: None, source, reason: Some(codes::WINDOW_UNKNOWN.into()) }
            }
        }
    }

    /// `{"usedTokens","windowTokens","ratio","source"}` plus `"reason"` when
    /// the ratio is null.
    pub fn to_json(&self) -> String {
        let mut v = json!({"usedTokens": self.used_tokens, "windowTokens": self.window_tokens, "ratio": self.ratio, "source": self.source});
        if let (Some(r), Some(o)) = (&self.reason, v.as_object_mut()) {
            o.insert("reason".into(), Value::String(r.clone()));
        }
        v.to_string()
    }

    /// Whole percent, rounded down (`None` when unknown).
    pub fn percent(&self) -> Option<u64> {
        self.ratio.map(|r| (r * 100.0).floor().max(0.0) as u64)
    }
}

/// Known Claude context windows by model id prefix (the window a model has
/// without a long-context beta; a `[1m]` suffix in the statusline's model id
/// is handled by the caller).
const CLAUDE_WINDOWS: &[(&str, u64)] = &[
    ("claude-opus-4", 200_000),
    ("claude-sonnet-4", 200_000),
    ("claude-haiku-4", 200_000),
    ("claude-3-7-sonnet", 200_000),
    ("claude-3-5-sonnet", 200_000),
    ("claude-3-5-haiku", 200_000),
    ("claude-3-opus", 200_000),
    ("claude-3-haiku", 200_000),
];

/// The window of a Claude model and how it was found.
pub fn claude_window(model: Option<&str>) -> (u64, String) {
    let m = model.map(kijito_protocol::ids::clip).unwrap_or_default();
    let m: String = m.chars().filter(|c| c.is_ascii_alphanumeric() || "-._[]".contains(*c)).take(80).collect();
    if let Some(base) = m.strip_suffix("[1m]") {
        return (1_000_000, format!("window=1m-suffix({base})"));
    }
    match CLAUDE_WINDOWS.iter().find(|(p, _)| m.starts_with(p)) {
        Some((_, w)) => (*w, format!("window=model-table({m})")),
        None => (
            CLAUDE_DEFAULT_WINDOW,
            format!("window=default-{CLAUDE_DEFAULT_WINDOW}(model {} unknown)", if m.is_empty() { "?" } else { &m }),
        ),
    }
}

/// Open the session file safely, as every transcript reader does
/// ([`kijito_gate::pass::open_transcript`]); the refusal is its code.
fn open(path: &AbsPath) -> std::result::Result<(File, u64), &'static str> {
    let (file, m) = kijito_gate::pass::open_transcript(path)
        .map_err(|e| e.code_as::<transcript::Code>().unwrap_or(transcript::TRANSCRIPT_UNREADABLE).as_str())?;
    Ok((file, m.size()))
}

/// What one line says, read backwards.
enum Line {
    /// A usable measurement.
    Usage(Measure),
    /// A Claude compaction boundary (usage before it is stale).
    Boundary,
    Other,
}

fn as_u64(v: Option<&Value>) -> Option<u64> {
    v.and_then(Value::as_u64)
}

fn claude_line(v: &Value) -> Line {
    let Some(o) = v.as_object() else { return Line::Other };
    match o.get("type").and_then(Value::as_str) {
        Some("system") if o.get("subtype").and_then(Value::as_str) == Some("compact_boundary") => Line::Boundary,
        Some("assistant") => {
            if o.get("isSidechain") == Some(&Value::Bool(true)) {
                return Line::Other;
            }
            let Some(msg) = o.get("message").and_then(Value::as_object) else { return Line::Other };
            let model = msg.get("model").and_then(Value::as_str);
            if model == Some("<synthetic>") {
                return Line::Other;
            }
            let Some(u) = msg.get("usage").and_then(Value::as_object) else { return Line::Other };
            let parts = [
                as_u64(u.get("input_tokens")),
                as_u64(u.get("cache_read_input_tokens")).or(Some(0)),
                as_u64(u.get("cache_creation_input_tokens")).or(Some(0)),
            ];
            let [Some(a), Some(b), Some(c)] = parts else {
                return Line::Usage(Measure::unknown("claude-transcript:usage", codes::USAGE_INVALID));
            };
            let used = a.saturating_add(b).saturating_add(c);
            let (w, how) = claude_window(model);
            Line::Usage(Measure::of(used, Some(w), format!("claude-transcript:usage;{how}")))
        }
        _ => Line::Other,
    }
}

fn codex_line(v: &Value) -> Line {
    let Some(o) = v.as_object() else { return Line::Other };
    if o.get("type").and_then(Value::as_str) != Some("event_msg") {
        return Line::Other;
    }
    let Some(p) = o.get("payload").and_then(Value::as_object) else { return Line::Other };
    if p.get("type").and_then(Value::as_str) != Some("token_count") {
        return Line::Other;
    }
    // A token_count with `info: null` carries only rate limits.
    let Some(info) = p.get("info").and_then(Value::as_object) else { return Line::Other };
    let used = info.get("last_token_usage").and_then(|l| as_u64(l.get("total_tokens")));
    let window = as_u64(info.get("model_context_window"));
    match used {
        Some(u) => Line::Usage(Measure::of(u, window, "codex-rollout:token_count".into())),
        None => Line::Usage(Measure::unknown("codex-rollout:token_count", codes::USAGE_INVALID)),
    }
}

/// Classify one complete line (it contains at least one needle).
fn classify(line: &[u8], host: Option<Host>) -> Line {
    let has = |needle: &[u8]| memchr::memmem::find(line, needle).is_some();
    let claude = host != Some(Host::Codex) && (has(b"\"usage\"") || has(b"compact_boundary"));
    let codex = host != Some(Host::Claude) && has(b"\"token_count\"");
    if !claude && !codex {
        return Line::Other;
    }
    let Ok(v) = serde_json::from_slice::<Value>(line) else { return Line::Other };
    if codex {
        if let u @ Line::Usage(_) = codex_line(&v) {
            return u;
        }
    }
    if claude {
        return claude_line(&v);
    }
    Line::Other
}

const NEEDLES: [&[u8]; 3] = [b"\"usage\"", b"compact_boundary", b"\"token_count\""];

/// Scan `region` (complete lines, except a partial first line when
/// `partial_first`) from the end: only lines holding a needle are parsed.
fn scan(region: &[u8], partial_first: bool, host: Option<Host>) -> Option<Line> {
    let mut end = region.len();
    loop {
        let hit = NEEDLES.iter().filter_map(|n| memchr::memmem::rfind(&region[..end], n)).max()?;
        let line_start = memchr::memrchr(b'\n', &region[..hit]).map_or(0, |i| i + 1);
        if line_start == 0 && partial_first {
            return None;
        }
        let line_end = memchr::memchr(b'\n', &region[hit..end]).map_or(end, |i| hit + i);
        match classify(&region[line_start..line_end], host) {
            Line::Other => {}
            found => return Some(found),
        }
        if line_start == 0 {
            return None;
        }
        end = line_start - 1;
    }
}

fn source_name(host: Option<Host>) -> &'static str {
    match host {
        Some(Host::Codex) => "codex-rollout",
        Some(Host::Claude) => "claude-transcript",
        None => "transcript",
    }
}

/// Measure from the session file at `path` (see the module docs). Never
/// fails: every problem is a null ratio with a reason.
pub fn measure(path: &AbsPath, host: Option<Host>) -> Measure {
    let (mut file, size) = match open(path) {
        Ok(x) => x,
        Err(code) => return Measure::unknown(source_name(host), code),
    };
    // `buf` holds the file from `start` to the end; each round reads only
    // the new chunk before it and scans the lines not scanned yet (the new
    // chunk plus the old partial first line).
    let mut start = size;
    let mut buf: Vec<u8> = Vec::new();
    let mut want = FIRST_TAIL;
    loop {
        let new_start = size.saturating_sub(want);
        let mut chunk = Vec::with_capacity((start - new_start) as usize + buf.len());
        if file.seek(SeekFrom::Start(new_start)).is_err()
            || (&mut file).take(start - new_start).read_to_end(&mut chunk).is_err()
            || chunk.len() as u64 != start - new_start
        {
            return Measure::unknown(source_name(host), transcript::TRANSCRIPT_UNREADABLE);
        }
        let old_first_line = memchr::memchr(b'\n', &buf).unwrap_or(buf.len());
        let limit = chunk.len() + old_first_line;
        chunk.extend_from_slice(&buf);
        buf = chunk;
        start = new_start;
        match scan(&buf[..limit], start > 0, host) {
            Some(Line::Usage(m)) => return m,
            Some(Line::Boundary) => return Measure::unknown("claude-transcript", codes::COMPACTED),
            _ => {}
        }
        if start == 0 || want >= MAX_TAIL {
            return Measure::unknown(source_name(host), codes::NO_USAGE);
        }
        want = (want * 2).min(MAX_TAIL);
    }
}

/// The flags of `kijito-context`.
pub const FLAGS: &[kijito_protocol::argv::Flag] = &[
    kijito_protocol::argv::Flag::value("--session-id"),
    kijito_protocol::argv::Flag::value("--transcript"),
    kijito_protocol::argv::Flag::value("--host"),
    kijito_protocol::argv::Flag::switch("--statusline"),
    kijito_protocol::argv::Flag::value("--data-dir"),
];

/// The whole run of the binary: `--statusline` reads the statusline JSON
/// from `stdin` and answers the one line; otherwise `--session-id` and
/// `--transcript` are required and the answer is the measurement JSON.
pub fn run(args: &kijito_protocol::argv::Args, stdin: impl Read, now_ms: i64) -> Result<String> {
    let data_dir: Option<AbsPath> = args.optional("--data-dir")?;
    if args.has("--statusline") {
        for f in ["--session-id", "--transcript", "--host"] {
            if args.has(f) {
                return Err(Error::usage(
                    codes::STATUSLINE_FLAGS,
                    format!("--statusline reads the session from stdin; {f} is not accepted with it"),
                ));
            }
        }
        let mut buf = Vec::new();
        stdin
            .take(statusline::MAX_STDIN_BYTES as u64 + 1)
            .read_to_end(&mut buf)
            .map_err(|e| Error::new(codes::STDIN, format!("cannot read stdin: {e}")))?;
        return statusline::statusline(&buf, data_dir.as_ref(), now_ms).map(|l| format!("{l}\n"));
    }
    if data_dir.is_some() {
        return Err(Error::usage(codes::DATA_DIR_FLAG, "--data-dir is only used with --statusline"));
    }
    let _session: kijito_protocol::ids::SessionId = args.required("--session-id")?;
    let transcript: AbsPath = args.required("--transcript")?;
    let host: Option<Host> = args.optional("--host")?;
    Ok(format!("{}\n", measure(&transcript, host).to_json()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    const CLAUDE: &str = r#"{"type":"assistant","isSidechain":false,"message":{"model":"claude-sonnet-4-5-20250929","usage":{"input_tokens":50,"cache_creation_input_tokens":1000,"cache_read_input_tokens":122950,"output_tokens":12}}}"#;
    const CODEX: &str = r#"{"type":"event_msg","payload":{"type":"token_count","info":{"last_token_usage":{"input_tokens":100,"total_tokens":110},"model_context_window":258400}}}"#;

    fn file(dir: &tempfile::TempDir, name: &str, body: &[u8]) -> AbsPath {
        let p = dir.path().join(name);
        std::fs::File::create(&p).unwrap().write_all(body).unwrap();
        AbsPath::from_path(&p).unwrap()
    }

    #[test]
    fn claude_usage_and_window_table() {
        let d = tempfile::tempdir().unwrap();
        let p = file(&d, "t.jsonl", format!("{CLAUDE}\n").as_bytes());
        let m = measure(&p, Some(Host::Claude));
        assert_eq!(m.used_tokens, Some(124_000));
        assert_eq!(m.window_tokens, Some(200_000));
        assert_eq!(m.ratio, Some(0.62));
        assert!(m.source.contains("model-table(claude-sonnet-4-5-20250929)"), "{}", m.source);
        assert_eq!(m.percent(), Some(62));
        let (w, how) = claude_window(Some("claude-opus-5-5"));
        assert_eq!(w, CLAUDE_DEFAULT_WINDOW);
        assert!(how.starts_with("window=default-200000"), "{how}");
        assert_eq!(claude_window(Some("claude-sonnet-4-5[1m]")).0, 1_000_000);
    }

    #[test]
    fn codex_token_count_and_null_info() {
        let d = tempfile::tempdir().unwrap();
        let rl = r#"{"type":"event_msg","payload":{"type":"token_count","info":null,"rate_limits":{}}}"#;
        let p = file(&d, "r.jsonl", format!("{CODEX}\n{rl}\n").as_bytes());
        let m = measure(&p, Some(Host::Codex));
        assert_eq!((m.used_tokens, m.window_tokens), (Some(110), Some(258_400)));
        assert_eq!(m.source, "codex-rollout:token_count");
        // No window: a null ratio with a reason, never a guess.
        let nw = r#"{"type":"event_msg","payload":{"type":"token_count","info":{"last_token_usage":{"total_tokens":5},"model_context_window":null}}}"#;
        let p = file(&d, "n.jsonl", format!("{nw}\n").as_bytes());
        let m = measure(&p, None);
        assert_eq!((m.ratio, m.reason.as_deref()), (None, Some(codes::WINDOW_UNKNOWN.as_str())));
        assert!(m.to_json().contains(r#""ratio":null"#) && m.to_json().contains(r#""reason":"window_unknown""#));
    }

    #[test]
    fn truncated_last_line_falls_back_to_the_previous_one() {
        let d = tempfile::tempdir().unwrap();
        let half = &CODEX[..CODEX.len() / 2];
        let p = file(&d, "r.jsonl", format!("{CODEX}\n{half}").as_bytes());
        assert_eq!(measure(&p, Some(Host::Codex)).used_tokens, Some(110));
    }

    #[test]
    fn boundary_after_usage_is_unknown_and_usage_after_boundary_counts() {
        let d = tempfile::tempdir().unwrap();
        let b = r#"{"type":"system","subtype":"compact_boundary","compactMetadata":{"trigger":"manual","preTokens":124000}}"#;
        let p = file(&d, "a.jsonl", format!("{CLAUDE}\n{b}\n").as_bytes());
        assert_eq!(measure(&p, Some(Host::Claude)).reason.as_deref(), Some(codes::COMPACTED.as_str()));
        let p = file(&d, "b.jsonl", format!("{b}\n{CLAUDE}\n").as_bytes());
        assert_eq!(measure(&p, Some(Host::Claude)).used_tokens, Some(124_000));
    }

    #[test]
    fn sidechain_synthetic_and_wrong_host_lines_are_skipped() {
        let d = tempfile::tempdir().unwrap();
        let side = CLAUDE.replace(r#""isSidechain":false"#, r#""isSidechain":true"#).replace("122950", "1");
        let synth = r#"{"type":"assistant","message":{"model":"<synthetic>","usage":{"input_tokens":0}}}"#;
        let p = file(&d, "t.jsonl", format!("{CLAUDE}\n{side}\n{synth}\n{CODEX}\n").as_bytes());
        assert_eq!(measure(&p, Some(Host::Claude)).used_tokens, Some(124_000));
        assert_eq!(measure(&p, Some(Host::Codex)).used_tokens, Some(110));
        assert_eq!(measure(&p, None).used_tokens, Some(110));
    }

    #[test]
    fn the_tail_grows_until_a_usable_line_then_stops_at_the_start() {
        let d = tempfile::tempdir().unwrap();
        let filler = format!("{{\"type\":\"user\",\"pad\":\"{}\"}}\n", "x".repeat(1000));
        let mut body = format!("{CODEX}\n");
        for _ in 0..600 {
            body.push_str(&filler); // ~600 KB after the usable line
        }
        let p = file(&d, "r.jsonl", body.as_bytes());
        assert_eq!(measure(&p, Some(Host::Codex)).used_tokens, Some(110));
        let p = file(&d, "e.jsonl", filler.as_bytes());
        assert_eq!(measure(&p, Some(Host::Codex)).reason.as_deref(), Some(codes::NO_USAGE.as_str()));
        let p = file(&d, "z.jsonl", b"");
        assert_eq!(measure(&p, None).reason.as_deref(), Some(codes::NO_USAGE.as_str()));
    }

    #[test]
    fn unsafe_files_are_refused_with_a_reason() {
        let d = tempfile::tempdir().unwrap();
        let p = file(&d, "t.jsonl", format!("{CODEX}\n").as_bytes());
        let link = d.path().join("link.jsonl");
        std::os::unix::fs::symlink(p.as_path(), &link).unwrap();
        assert_eq!(measure(&AbsPath::from_path(&link).unwrap(), None).reason.as_deref(), Some(transcript::TRANSCRIPT_SYMLINK.as_str()));
        assert_eq!(
            measure(&AbsPath::from_path(d.path()).unwrap(), None).reason.as_deref(),
            Some(transcript::TRANSCRIPT_NOT_REGULAR.as_str())
        );
        let missing = AbsPath::from_path(&d.path().join("nope")).unwrap();
        assert_eq!(measure(&missing, None).reason.as_deref(), Some(transcript::TRANSCRIPT_NOT_FOUND.as_str()));
    }

    #[test]
    fn hostile_numbers_do_not_overflow_or_guess() {
        let d = tempfile::tempdir().unwrap();
        let huge = r#"{"type":"assistant","message":{"model":"claude-opus-4-1","usage":{"input_tokens":18446744073709551615,"cache_read_input_tokens":5}}}"#;
        let neg = r#"{"type":"assistant","message":{"model":"claude-opus-4-1","usage":{"input_tokens":-5}}}"#;
        let p = file(&d, "h.jsonl", format!("{huge}\n").as_bytes());
        assert_eq!(measure(&p, Some(Host::Claude)).used_tokens, Some(u64::MAX));
        let p = file(&d, "n.jsonl", format!("{neg}\n").as_bytes());
        assert_eq!(measure(&p, Some(Host::Claude)).reason.as_deref(), Some(codes::USAGE_INVALID.as_str()));
    }
}
