//! The Claude Code status line (`kijito-context --statusline`) and the QA
//! pass state it shows (also used by the hooks' nudges).

use crate::{codes, measure, Host, Measure};
use kijito_gate::{self as gate, Pass, QaDir};
use kijito_protocol::error::{Error, Result};
use kijito_protocol::ids::{AbsPath, SessionId};
use serde_json::Value;

/// Largest statusline stdin accepted.
pub const MAX_STDIN_BYTES: usize = 256 * 1024;

/// Whether the session has a QA pass that would be accepted now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PassState {
    /// No pass file.
    None,
    /// Accepted now; whole minutes left of its 30.
    Valid { minutes_left: i64 },
    /// A pass exists but would be refused (the code says why).
    Refused(String),
}

impl PassState {
    pub fn is_valid(&self) -> bool {
        matches!(self, PassState::Valid { .. })
    }
}

/// The pass state of `session` in `qa` (read only; the transcript check runs
/// when a transcript path is given).
pub fn pass_state(qa: &QaDir, session: &SessionId, transcript: Option<&AbsPath>, now_ms: i64) -> PassState {
    let path = qa.pass(session);
    if std::fs::symlink_metadata(&path).is_err() {
        return PassState::None;
    }
    let rules = kijito_files::private::FileRules { owner_only: true, min_bytes: 2, max_bytes: gate::STATE_MAX_BYTES };
    let check = kijito_files::private::read_checked(&path, rules).and_then(|(b, _)| Pass::parse(&b)).and_then(|p| {
        match transcript {
            Some(t) => gate::transcript_identity(t).and_then(|id| p.check_valid(session, now_ms, &id)),
            None => p.check_age(session, now_ms),
        }
        .map(|_| p)
    });
    match check {
        Ok(p) => PassState::Valid { minutes_left: (gate::PASS_MAX_AGE_MS - (now_ms - p.recorded_at_ms)).max(0) / 60_000 },
        Err(e) => PassState::Refused(e.code().to_owned()),
    }
}

/// The fields of the statusline JSON this tool reads.
#[derive(Debug, Clone)]
pub struct StatusInput {
    pub session_id: Option<SessionId>,
    pub transcript: Option<AbsPath>,
    pub model_id: Option<String>,
}

impl StatusInput {
    pub fn parse(bytes: &[u8]) -> Result<StatusInput> {
        if bytes.len() > MAX_STDIN_BYTES {
            return Err(Error::new(codes::STDIN, "statusline stdin is larger than 256 KiB"));
        }
        let v: Value = serde_json::from_slice(bytes).map_err(|e| Error::new(codes::STDIN, format!("statusline stdin is not JSON: {e}")))?;
        let o = v.as_object().ok_or_else(|| Error::new(codes::STDIN, "statusline stdin is not a JSON object"))?;
        Ok(StatusInput {
            session_id: o.get("session_id").and_then(Value::as_str).and_then(|s| SessionId::parse(s).ok()),
            transcript: o.get("transcript_path").and_then(Value::as_str).and_then(|s| AbsPath::parse(s).ok()),
            model_id: o.get("model").and_then(|m| m.get("id")).and_then(Value::as_str).map(kijito_protocol::ids::clip),
        })
    }
}

/// Measure a Claude session for the status line: the transcript usage, with
/// the window of the statusline's model id when it names a `[1m]` model.
pub fn measure_status(input: &StatusInput) -> Measure {
    let Some(t) = input.transcript.as_ref() else {
        return Measure {
            used_tokens: None,
            window_tokens: None,
            ratio: None,
            source: "statusline".into(),
            reason: Some(kijito_gate::pass::codes::TRANSCRIPT_NOT_FOUND.into()),
        };
    };
    let m = measure(t, Some(Host::Claude));
    match (input.model_id.as_deref(), m.used_tokens) {
        (Some(id), Some(used)) if id.ends_with("[1m]") && m.reason.is_none() => {
            let (w, how) = crate::claude_window(Some(id));
            Measure::of(used, Some(w), format!("claude-transcript:usage;{how}"))
        }
        _ => m,
    }
}

/// The one short status line: `ctx 62% · QA pass valid 21 min`,
/// `ctx 62% · no QA pass`, `ctx ? · QA pass refused (pass_stale)`.
pub fn line(m: &Measure, pass: &PassState) -> String {
    let ctx = match m.percent() {
        Some(p) => format!("ctx {p}%"),
        None => "ctx ?".to_owned(),
    };
    let qa = match pass {
        PassState::None => "no QA pass".to_owned(),
        PassState::Valid { minutes_left } => format!("QA pass valid {minutes_left} min"),
        PassState::Refused(code) => format!("QA pass refused ({code})"),
    };
    format!("{ctx} · {qa}")
}

/// `kijito-context --statusline`: stdin JSON to the line. The data dir is
/// `data_dir` or the configured/default one; a missing data dir is "no QA
/// pass" (the status line never creates it).
pub fn statusline(stdin: &[u8], data_dir: Option<&AbsPath>, now_ms: i64) -> Result<String> {
    let input = StatusInput::parse(stdin)?;
    let m = measure_status(&input);
    let pass = match (&input.session_id, resolve_existing(data_dir)) {
        (Some(s), Some(qa)) => pass_state(&qa, s, input.transcript.as_ref(), now_ms),
        _ => PassState::None,
    };
    Ok(line(&m, &pass))
}

fn resolve_existing(flag: Option<&AbsPath>) -> Option<QaDir> {
    let config = kijito_files::config::Config::load().ok();
    let data = kijito_files::datadir::resolve(flag, Some(kijito_protocol::host::HostKind::Claude), config.as_ref()).ok()?;
    std::fs::symlink_metadata(QaDir::read_only(&data).ok()?.path().as_path()).ok()?;
    QaDir::open(&data).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_shapes() {
        let m = Measure::of(124_000, Some(200_000), "x".into());
        assert_eq!(line(&m, &PassState::Valid { minutes_left: 21 }), "ctx 62% · QA pass valid 21 min");
        assert_eq!(line(&m, &PassState::None), "ctx 62% · no QA pass");
        let u = Measure::unknown("x", codes::NO_USAGE);
        assert_eq!(line(&u, &PassState::Refused("pass_stale".into())), "ctx ? · QA pass refused (pass_stale)");
    }

    #[test]
    fn statusline_input_is_bounded_and_validated() {
        assert_eq!(StatusInput::parse(b"[]").unwrap_err().code(), codes::STDIN.as_str());
        assert_eq!(StatusInput::parse(&vec![b' '; MAX_STDIN_BYTES + 1]).unwrap_err().code(), codes::STDIN.as_str());
        let i = StatusInput::parse(br#"{"session_id":"../x","transcript_path":"rel/p","model":{"id":"claude-opus-4-1"}}"#).unwrap();
        assert!(i.session_id.is_none() && i.transcript.is_none());
        assert_eq!(measure_status(&i).reason.as_deref(), Some(kijito_gate::pass::codes::TRANSCRIPT_NOT_FOUND.as_str()));
    }
}
