//! The wake hold (docs/protocol.md §8a): when SessionStart's local
//! wake checks find a long sleep, a boot change or a clock that went back,
//! writes and irreversible tool calls are held until the agent
//! has run `wake-check --live` for the workspace and it answered; a cautious
//! answer keeps every irreversible call at high risk (the user's second
//! message). One owner-only file per workspace in the QA dir:
//! `qa/wake-hold.<first 16 hex of sha256(workspace)>.json`.

use kijito_gate::QaDir;
use kijito_protocol::error::Result;
use kijito_protocol::ids::SessionId;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

pub const SCHEMA: &str = "kijito-qa.wake-hold/v1";
/// The hold files' name prefix in the QA dir.
pub const PREFIX: &str = "wake-hold.";
/// Largest hold file read.
const MAX_BYTES: usize = 16 * 1024;

/// What the hold asks of the next tool calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hold {
    /// `wake-check --live` has not answered yet: writes and irreversible calls wait.
    Pending,
    /// It answered cautious: irreversible calls need the user's second message.
    Cautious,
}

impl Hold {
    fn as_str(self) -> &'static str {
        match self {
            Hold::Pending => "pending",
            Hold::Cautious => "cautious",
        }
    }
}

/// The hold file of `workspace` in the QA dir `qa_dir`.
pub fn path(qa_dir: &Path, workspace: &Path) -> PathBuf {
    let digest = Sha256::digest(workspace.as_os_str().as_encoded_bytes());
    let hex: String = digest.iter().take(8).map(|b| format!("{b:02x}")).collect();
    qa_dir.join(format!("{PREFIX}{hex}.json"))
}

/// Set the hold of `workspace` (owner-only, atomic); `session`: the session
/// whose SessionStart set it, whose journal records `wake-check --live`'s
/// answer (docs/protocol.md §13).
pub fn set(qa: &QaDir, workspace: &Path, hold: Hold, findings: &[String], session: Option<&SessionId>, now_ms: u64) -> Result<()> {
    let mut body = serde_json::json!({
        "schema": SCHEMA,
        "workspace": workspace.display().to_string(),
        "hold": hold.as_str(),
        "findings": findings,
        "atMs": now_ms,
    });
    if let Some(s) = session {
        body["session"] = serde_json::json!(s.as_str());
    }
    let path = path(qa.path().as_path(), workspace);
    // a killed earlier write's temp file, once older than any live write
    // (docs/protocol.md §7, "Crash recovery"), goes with this one
    let _ = kijito_files::private::remove_stale_temps_older(&path, std::time::Duration::from_secs(30));
    qa.write_atomic(&path, format!("{body}\n").as_bytes())
}

/// Lift the hold of `workspace` (nothing to do when there is none).
pub fn clear(qa: &QaDir, workspace: &Path) -> Result<()> {
    kijito_files::private::remove_owned(&path(qa.path().as_path(), workspace)).map(|_| ())
}

/// The hold of `workspace`, if any. A hold file that is not an owner-only
/// regular file or does not parse counts as [`Hold::Pending`] (fail closed).
pub fn read(qa_dir: &Path, workspace: &Path) -> Option<Hold> {
    let p = path(qa_dir, workspace);
    std::fs::symlink_metadata(&p).ok()?;
    let rules = kijito_files::private::FileRules { owner_only: true, min_bytes: 2, max_bytes: MAX_BYTES as u64 };
    let Ok((bytes, _)) = kijito_files::private::read_checked(&p, rules) else { return Some(Hold::Pending) };
    let v: serde_json::Value = serde_json::from_slice(&bytes).unwrap_or_default();
    Some(match (v.get("schema").and_then(|s| s.as_str()), v.get("hold").and_then(|s| s.as_str())) {
        (Some(SCHEMA), Some("cautious")) => Hold::Cautious,
        _ => Hold::Pending,
    })
}

/// The session a hold of `workspace` names, if it reads and names a valid one.
pub fn session_of(qa_dir: &Path, workspace: &Path) -> Option<SessionId> {
    let rules = kijito_files::private::FileRules { owner_only: true, min_bytes: 2, max_bytes: MAX_BYTES as u64 };
    let (bytes, _) = kijito_files::private::read_checked(&path(qa_dir, workspace), rules).ok()?;
    let v: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
    SessionId::parse(v.get("session")?.as_str()?).ok()
}

/// Whether SessionStart's local report sets the hold: a long sleep, a boot
/// change or a clock that went back, unless degraded (degraded
/// locks the latch itself). Other cautious findings (a consent request the
/// agent itself left pending, say) do not hold writes.
pub fn needed(report: &crate::Report) -> bool {
    let clock_back = report.findings.iter().any(|f| f.code == crate::codes::CLOCK_BACKWARDS.code);
    report.mode != crate::Mode::Degraded && (report.long_sleep || report.boot_changed || clock_back)
}

/// After `wake-check --live` answered: cautious keeps a [`Hold::Cautious`],
/// anything else lifts the hold (degraded locks the latch itself).
pub fn answered(qa: &QaDir, workspace: &Path, report: &crate::Report, session: Option<&SessionId>, now_ms: u64) -> Result<()> {
    if report.mode == crate::Mode::Cautious {
        set(qa, workspace, Hold::Cautious, &report.findings.iter().map(|f| f.code.to_owned()).collect::<Vec<_>>(), session, now_ms)
    } else {
        clear(qa, workspace)
    }
}
