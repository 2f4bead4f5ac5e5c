//! The latch's own lines in the flight recorder (docs/protocol.md §13): what
//! the latch decided about a standalone token or signature the user sent
//! (consent confirmed or refused with its code, Silent Witness or degraded
//! mode left), and the entry its turn end wrote (one-step mode entered or
//! left, a checkpoint). The latch maps its outcome to the line here, once; the hook
//! that called it only says where the session's journal is. No free text:
//! no token, no action summary, only kinds, codes and the risk.
//!
//! The commands the agent or the user runs (`consent request`, `approve`,
//! `recover`) record in the session a hook named for them (`--session-id`
//! with the hook's `--data-dir`: the consent request command PreToolUse
//! gives, the approve command that request prints, the recover command
//! UserPromptSubmit gives); without one, in the data dir's `user` journal
//! ([`CommandFlight`]).

use crate::knobs::StopOutcome;
use crate::{Event, PromptOutcome};
use kijito_files::journal::{self, Kind};
use kijito_protocol::ids::{AbsPath, SessionId};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

/// Characters of free text kept in a line before redaction (§13 item 6).
pub const SUMMARY_CHARS: usize = 160;

/// Free text as a journal line may hold it: control characters turned into
/// spaces, clipped to [`SUMMARY_CHARS`], then redacted as the latch redacts.
pub fn summary_text(text: &str) -> String {
    let clipped: String = text.chars().map(|c| if c.is_control() { ' ' } else { c }).take(SUMMARY_CHARS).collect();
    crate::redact::redact(&clipped)
}

/// A session's journal in a data dir: where the latch records.
#[derive(Debug, Clone, Copy)]
pub struct Flight<'a> {
    pub data_dir: &'a Path,
    pub session: &'a SessionId,
}

impl Flight<'_> {
    /// One line (never fails: a line that cannot be written is noted for
    /// `kijito-report`, [`journal::event`]).
    pub fn record(&self, kind: Kind, fields: Value) {
        journal::event(self.data_dir, self.session, kind, fields);
    }

    /// The latch's answer to the user's standalone message: one line.
    pub fn outcome(&self, o: &PromptOutcome) {
        let (kind, fields) = outcome_line(o);
        self.record(kind, fields);
    }

    /// The entry the latch's turn end wrote, if any: one line.
    pub fn turn_end(&self, o: &StopOutcome) {
        if let Some((kind, fields)) = stop_line(o) {
            self.record(kind, fields);
        }
    }

    /// The message was refused before the latch could answer it (its code).
    pub fn refused(&self, code: &str) {
        self.record(Kind::ConsentRefused, json!({"via": "prompt", "code": code}));
    }
}

/// The kind and fields of the line for one [`PromptOutcome`].
pub fn outcome_line(o: &PromptOutcome) -> (Kind, Value) {
    match o {
        PromptOutcome::Confirmed { risk, .. } => {
            (Kind::ConsentConfirmed, json!({"via": "prompt", "risk": risk.as_str(), "reconfirm_needed": false}))
        }
        PromptOutcome::AwaitingReconfirmation { .. } => {
            (Kind::ConsentConfirmed, json!({"via": "prompt", "risk": crate::Risk::High.as_str(), "reconfirm_needed": true}))
        }
        // A reseed token is issued only in Silent Witness (`reseed_not_needed`).
        PromptOutcome::Reseeded { old_chain_trusted, .. } => {
            (Kind::LatchMode, json!({"mode": "normal", "from": "silent_witness", "via": "reseed", "old_chain_trusted": old_chain_trusted}))
        }
        PromptOutcome::Reviewed { .. } => (Kind::LatchMode, json!({"mode": "normal", "from": "degraded", "via": "review"})),
        PromptOutcome::Refused { code, .. } => (Kind::ConsentRefused, json!({"via": "prompt", "code": code.as_str()})),
        PromptOutcome::Wrong { .. } => {
            (Kind::ConsentRefused, json!({"via": "prompt", "code": crate::codes::CONSENT_TOKEN_UNKNOWN.as_str()}))
        }
    }
}

/// The line for a turn end that wrote an entry: `entry` (its event), `note`
/// (the user's line, [`summary_text`]), and for one-step mode entered or
/// left, `mode` and `from`.
pub fn stop_line(o: &StopOutcome) -> Option<(Kind, Value)> {
    let (event, _) = o.written?;
    let mut fields = json!({"entry": event.as_str(), "note": summary_text(&o.message()?)});
    let change = match event {
        Event::FatigueCheckpoint => Some(("one_step", "normal")),
        Event::FatigueCleared => Some(("normal", "one_step")),
        _ => None,
    };
    if let Some((mode, from)) = change {
        fields["mode"] = json!(mode);
        fields["from"] = json!(from);
    }
    Some((Kind::LatchMode, fields))
}

/// The journal a latch command records in (docs/protocol.md §13): the
/// session a hook named (`--session-id`, in `--data-dir`), else the data
/// dir's [`journal::USER_SESSION`] journal. The data dir is `--data-dir`,
/// else resolved as `kijito-report` resolves it (the config's `dataDir`,
/// else `~/.cache/kijito-qa`). Either flag given: the target must be one a
/// hook journals in ([`journal::named_target`]), else the command fails
/// before it does anything; neither: a data dir that does not exist gets no
/// line (a command never creates one only to record in it).
#[derive(Debug, Clone)]
pub struct CommandFlight {
    pub data_dir: PathBuf,
    pub session: SessionId,
    /// The session came from `--session-id` (else: the `user` journal).
    pub named: bool,
}

impl CommandFlight {
    pub fn resolve(session: Option<SessionId>, data_dir: Option<&AbsPath>) -> kijito_protocol::error::Result<Option<CommandFlight>> {
        let config = kijito_files::config::Config::load().ok();
        let flagged = session.is_some() || data_dir.is_some();
        let data = match kijito_files::datadir::resolve(data_dir, None, config.as_ref()) {
            Ok(d) => d,
            Err(e) if flagged => return Err(e),
            Err(_) => return Ok(None),
        };
        if flagged {
            journal::named_target(data.as_path(), session.as_ref())?;
        } else if !std::fs::symlink_metadata(data.as_path()).is_ok_and(|m| m.is_dir()) {
            return Ok(None);
        }
        let named = session.is_some();
        let session = match session {
            Some(s) => s,
            None => SessionId::parse(journal::USER_SESSION)?,
        };
        Ok(Some(CommandFlight { data_dir: data.as_path().to_path_buf(), session, named }))
    }

    /// One line (never fails).
    pub fn record(&self, kind: Kind, fields: Value) {
        journal::event(&self.data_dir, &self.session, kind, fields);
    }

    /// ` --session-id S --data-dir D` for a command this one prints (the
    /// user's `approve`), when a hook named the session; else empty.
    pub fn flags(&self) -> String {
        if self.named {
            format!(" --session-id {} --data-dir {}", self.session, self.data_dir.display())
        } else {
            String::new()
        }
    }
}

/// `consent request` issued a challenge: how the user answers it (`via`:
/// `token`, `wallet`, `key`), its risk, the ledger record's id, its expiry
/// and the request's summary (clipped and redacted). Never the token.
pub fn issued_line(via: &str, record: &crate::tokens::TokenState, workspace: &Path) -> Value {
    json!({
        "via": via,
        "risk": record.risk.as_str(),
        "record": record.id,
        "expires_at_ms": record.expires_at_ms,
        "summary": summary_text(&record.summary),
        "workspace": workspace.display().to_string(),
    })
}

/// `memory-latch approve`'s outcome: the line of the same outcome by a
/// token message, `via` `key`, with the record's id.
pub fn approve_line(o: &PromptOutcome, record: &str, workspace: &Path) -> (Kind, Value) {
    let (kind, mut fields) = outcome_line(o);
    fields["via"] = json!("key");
    fields["record"] = json!(record);
    fields["workspace"] = json!(workspace.display().to_string());
    (kind, fields)
}

/// `memory-latch recover`: the protocol printed (its attempt of the
/// maximum), or Silent Witness (why, and whether this call entered it).
pub fn recovery_line(o: &crate::recover::RecoverOutcome, workspace: &Path) -> Value {
    let ws = workspace.display().to_string();
    match o {
        crate::recover::RecoverOutcome::Protocol(p) => {
            json!({"outcome": "protocol", "attempt": p.attempt, "max_attempts": p.max_attempts, "workspace": ws})
        }
        crate::recover::RecoverOutcome::SilentWitness(i) => {
            json!({"outcome": "silent_witness", "reason": summary_text(&i.reason), "entered_now": i.entered_now, "workspace": ws})
        }
    }
}
