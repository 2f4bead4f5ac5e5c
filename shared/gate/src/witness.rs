//! Witnessed verifier boots (docs/protocol.md §7, "Witnessed boots"): the
//! PreToolUse hook records every `pointer-snapshot` call it lets run, with
//! the host's agent identity, and `qa-gate record` checks the two reports
//! against those records.
//!
//! `qa-witness.<s>.jsonl` in `<data-dir>/qa/` (owner-only, appended with
//! `O_APPEND` and fsynced, at most [`MAX_WITNESS_BYTES`]; when full it is
//! rewritten without the entries older than the 30 minutes a report is
//! valid), one compact JSON line per call, keys in exactly this order:
//! `{"reportFile":"<abs path>","pointerId":N,"expectedPointerDigest":"<64 hex>"|null,"agentId":"<id>"|null,"seenAtMs":N}`.
//! `agentId` is the hook input's `agent_id` (else `agent_type`): Claude Code
//! 2.1.328 and Codex 0.169.0 both send them on a subagent's tool calls and
//! never on the main agent's (measured, docs/testing.md "Verifier agents"),
//! so `null` is the main agent.
//!
//! The rule [`check_boots`] applies at `record`:
//! - no witness record for the session: nothing was witnessed (a host or an
//!   install whose PreToolUse hook does not record): the rule stays the
//!   skill's, the pass says `bootsWitnessed: false` and `record` says so;
//! - otherwise each report needs its own witnessed call (the latest call
//!   naming its path, seen before the report's `verifiedAtMs`,
//!   `boot_not_witnessed`), both by a subagent (`boot_by_main_agent`), two
//!   distinct ones (`boots_same_agent`); and every other witnessed call for
//!   the same pointer (same pointer id, expected digest equal or absent) seen
//!   after the first green's call must have left a green report for that
//!   pointer: a red, missing or overwritten report resets the count
//!   (`boots_reset_by_red`). Then `bootsWitnessed: true`.

use crate::report::GreenReport;
use crate::{QaDir, REPORT_MAX_AGE_MS};
use kijito_files::private::{self, FileRules};
use kijito_protocol::command::{self, HelperDir};
use kijito_protocol::error::{Error, Result};
use kijito_protocol::ids::{AbsPath, Digest, MemoryId, SessionId};
use serde_json::{json, Value};

/// Stable codes of this module (in the registry, [`crate::record::codes`]).
pub mod codes {
    pub use crate::record::codes::{BOOTS_RESET_BY_RED, BOOTS_SAME_AGENT, BOOT_BY_MAIN_AGENT, BOOT_NOT_WITNESSED, WITNESS_INVALID};
}

/// Largest witness record of one session.
pub const MAX_WITNESS_BYTES: u64 = 256 * 1024;
/// Longest agent identity kept (longer ones are refused as no identity).
pub const MAX_AGENT_ID: usize = 128;

const KEYS: &[&str] = &["reportFile", "pointerId", "expectedPointerDigest", "agentId", "seenAtMs"];

/// One witnessed `pointer-snapshot` call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seen {
    pub report_file: AbsPath,
    pub pointer_id: MemoryId,
    pub expected_pointer_digest: Option<Digest>,
    /// `None`: the main agent.
    pub agent_id: Option<String>,
    pub seen_at_ms: i64,
}

impl Seen {
    /// The line, newline included.
    /// The flight recorder's `boot` fields (docs/protocol.md §13).
    pub fn journal_fields(&self) -> Value {
        serde_json::json!({
            "pointer_id": self.pointer_id.get(),
            "agent": self.agent_id,
            "report_file": self.report_file.as_str(),
            "expected_pointer_digest": self.expected_pointer_digest.as_ref().map(|d| d.as_str()),
        })
    }

    pub fn to_line(&self) -> String {
        let v = json!({
            "reportFile": self.report_file.as_str(),
            "pointerId": self.pointer_id.get(),
            "expectedPointerDigest": self.expected_pointer_digest.as_ref().map(|d| d.as_str()),
            "agentId": self.agent_id,
            "seenAtMs": self.seen_at_ms,
        });
        format!("{v}\n")
    }

    fn parse(line: &[u8]) -> Option<Seen> {
        let v: Value = serde_json::from_slice(line).ok()?;
        let o = v.as_object().filter(|o| crate::has_keys(o, KEYS))?;
        let s = Seen {
            report_file: o["reportFile"].as_str().and_then(|p| AbsPath::parse(p).ok())?,
            pointer_id: o["pointerId"].as_u64().and_then(|n| MemoryId::new(n).ok())?,
            expected_pointer_digest: match &o["expectedPointerDigest"] {
                Value::Null => None,
                d => Some(d.as_str().and_then(|d| Digest::parse(d).ok())?),
            },
            agent_id: match &o["agentId"] {
                Value::Null => None,
                a => Some(a.as_str().filter(|a| valid_agent(a))?.to_owned()),
            },
            seen_at_ms: o["seenAtMs"].as_i64().filter(|n| *n >= 0)?,
        };
        (s.to_line().as_bytes() == [line, b"\n"].concat().as_slice()).then_some(s)
    }
}

fn valid_agent(a: &str) -> bool {
    !a.is_empty() && a.len() <= MAX_AGENT_ID && !a.chars().any(char::is_control)
}

fn invalid(why: impl Into<String>) -> Error {
    Error::new(codes::WITNESS_INVALID, why)
}

/// Called by the PreToolUse hook for each shell command line it allows:
/// when `line` is a `pointer-snapshot` command of this installed root,
/// record the call with `agent` (the hook input's `agent_id`, else
/// `agent_type`; `None` for the main agent). A line that does not contain
/// `pointer-snapshot` costs no I/O at all (`Ok(false)`); `Ok(true)` when a
/// call was recorded.
pub fn observe(qa: &QaDir, session: &SessionId, agent: Option<&str>, line: &str, helpers: &HelperDir, now_ms: i64) -> Result<bool> {
    if !line.contains("pointer-snapshot") {
        return Ok(false);
    }
    let Ok(cmd) = command::check_command(line.trim_end_matches([' ', '\n']), helpers) else {
        // Not a helper command: the guard denies it, nothing runs.
        return Ok(false);
    };
    if cmd.helper != "pointer-snapshot" {
        return Ok(false);
    }
    let arg = |flag: &str| cmd.args.iter().find(|(f, _)| *f == flag).map(|(_, v)| v.as_str());
    let (Some(report), Some(pointer)) = (arg("--report-file"), arg("--pointer-id")) else { return Ok(false) };
    let seen = Seen {
        report_file: AbsPath::parse(report)?,
        pointer_id: pointer.parse::<u64>().ok().and_then(|n| MemoryId::new(n).ok()).ok_or_else(|| invalid("--pointer-id"))?,
        expected_pointer_digest: arg("--expected-pointer-digest").map(Digest::parse).transpose()?,
        agent_id: agent.filter(|a| valid_agent(a)).map(str::to_owned),
        seen_at_ms: now_ms,
    };
    append(qa, session, &seen, now_ms)?;
    kijito_files::journal::event(qa.path().parent(), session, kijito_files::journal::Kind::Boot, seen.journal_fields());
    Ok(true)
}

/// The PreToolUse hook's one call, after the guard allowed the call:
/// [`observe`] every shell command line of the call (`lines`: the hook's
/// one reading of `tool_input`, `kijito_policy::ParsedCall::lines`, which
/// the guard checked) with `agent` (the hook input's `agent_id`; `None` for
/// the main agent). `qa` opens the QA dir and runs only when a line names
/// `pointer-snapshot`, so any other tool call costs no I/O. Returns how
/// many calls were recorded.
pub fn observe_tool_call<L: AsRef<str>>(
    lines: &[std::result::Result<L, String>],
    agent: Option<&str>,
    session: &SessionId,
    qa: &dyn Fn() -> Result<QaDir>,
    helpers: &HelperDir,
    now_ms: i64,
) -> Result<usize> {
    if !lines.iter().any(|l| l.as_ref().is_ok_and(|l| l.as_ref().contains("pointer-snapshot"))) {
        return Ok(0);
    }
    let qa = qa()?;
    let mut n = 0;
    for line in lines.iter().flatten() {
        if observe(&qa, session, agent, line.as_ref(), helpers, now_ms)? {
            n += 1;
        }
    }
    Ok(n)
}

fn append(qa: &QaDir, session: &SessionId, seen: &Seen, now_ms: i64) -> Result<()> {
    let path = qa.witness(session);
    let line = seen.to_line();
    match private::append_private(&path, line.as_bytes(), MAX_WITNESS_BYTES) {
        Err(e) if e.code_as() == Some(private::codes::TOO_LARGE) => {
            let mut kept = read(qa, session)?;
            kept.retain(|s| now_ms - s.seen_at_ms <= REPORT_MAX_AGE_MS);
            let mut bytes: Vec<u8> = kept.iter().flat_map(|s| s.to_line().into_bytes()).collect();
            bytes.extend_from_slice(line.as_bytes());
            if bytes.len() as u64 > MAX_WITNESS_BYTES {
                return Err(invalid("the witness record is full of calls from the last 30 minutes"));
            }
            qa.write_atomic(&path, &bytes)
        }
        other => other,
    }
}

/// Every witnessed call of the session, oldest first (`None`: no record).
pub fn read_optional(qa: &QaDir, session: &SessionId) -> Result<Option<Vec<Seen>>> {
    let path = qa.witness(session);
    if std::fs::symlink_metadata(&path).is_err() {
        return Ok(None);
    }
    let rules = FileRules { owner_only: true, min_bytes: 0, max_bytes: MAX_WITNESS_BYTES };
    let (bytes, _) = qa.read_checked(&path, rules).map_err(|e| invalid(format!("{}: {} ({})", path.display(), e.message(), e.code())))?;
    if bytes.last().is_some_and(|b| *b != b'\n') {
        return Err(invalid(format!("{} ends in a partial line", path.display())));
    }
    let seen = bytes
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| Seen::parse(l).ok_or_else(|| invalid(format!("{} holds a line that does not parse", path.display()))))
        .collect::<Result<Vec<_>>>()?;
    Ok(Some(seen))
}

fn read(qa: &QaDir, session: &SessionId) -> Result<Vec<Seen>> {
    read_optional(qa, session).map(Option::unwrap_or_default)
}

/// The verdict on the two reports ([`check_boots`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Boots {
    /// Two distinct subagents ran the two boots, and no red came between.
    Witnessed { agents: [String; 2] },
    /// Nothing witnessed this session: the rule stays the skill's.
    SkillOnly,
}

/// Check the two green `reports` (at `paths`, in the same order) against the
/// session's witness record (module docs). `now_ms` bounds what is read.
pub fn check_boots(qa: &QaDir, session: &SessionId, paths: &[AbsPath], reports: &[GreenReport; 2], now_ms: i64) -> Result<Boots> {
    let Some(seen) = read_optional(qa, session)? else { return Ok(Boots::SkillOnly) };
    if seen.is_empty() {
        return Ok(Boots::SkillOnly);
    }
    let witness_of = |i: usize| -> Result<&Seen> {
        let (path, r) = (&paths[i], &reports[i]);
        seen.iter()
            .filter(|s| &s.report_file == path && s.seen_at_ms <= r.verified_at_ms && r.verified_at_ms - s.seen_at_ms <= REPORT_MAX_AGE_MS)
            .max_by_key(|s| s.seen_at_ms)
            .ok_or_else(|| {
                Error::new(
                    codes::BOOT_NOT_WITNESSED,
                    format!("the PreToolUse hook saw no pointer-snapshot call writing {path} before it was verified: run each cold boot as the printed command, in a fresh subagent"),
                )
            })
    };
    let (a, b) = (witness_of(0)?, witness_of(1)?);
    let (Some(ida), Some(idb)) = (&a.agent_id, &b.agent_id) else {
        return Err(Error::new(
            codes::BOOT_BY_MAIN_AGENT,
            "a cold boot was run by the main agent (its tool call carried no subagent identity): each boot must run in its own fresh subagent",
        ));
    };
    if ida == idb {
        return Err(Error::new(
            codes::BOOTS_SAME_AGENT,
            format!("both cold boots were run by the same subagent {ida}: two distinct fresh subagents are required"),
        ));
    }
    // Red resets the count: every other call for this pointer after the first green's.
    let pointer = reports[0].pointer_id;
    let digest = &reports[0].pointer_digest;
    let first = if reports[0].verified_at_ms <= reports[1].verified_at_ms { a } else { b };
    for s in &seen {
        if std::ptr::eq(s, a) || std::ptr::eq(s, b) || s.pointer_id != pointer || s.seen_at_ms < first.seen_at_ms || s.seen_at_ms > now_ms {
            continue;
        }
        if s.expected_pointer_digest.as_ref().is_some_and(|d| d != digest) {
            continue;
        }
        let overwritten = paths.contains(&s.report_file);
        let green = !overwritten && crate::report::validate_report(&s.report_file, pointer, digest, now_ms).is_ok();
        if !green {
            return Err(Error::new(
                codes::BOOTS_RESET_BY_RED,
                format!(
                    "the cold boot writing {} (seen after the first green one) is not green for this pointer: a red boot resets the count to 0/2; run two fresh cold boots again",
                    s.report_file
                ),
            ));
        }
    }
    Ok(Boots::Witnessed { agents: [ida.clone(), idb.clone()] })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// [`observe_tool_call`] on a raw hook stdin object: its `tool_input`'s
    /// lines, and its `agent_id` (else `agent_type`).
    fn observe_hook_input(
        stdin: &Value,
        session: &SessionId,
        qa: &dyn Fn() -> Result<QaDir>,
        helpers: &HelperDir,
        now_ms: i64,
    ) -> Result<usize> {
        let agent = ["agent_id", "agent_type"].iter().find_map(|k| stdin.get(*k).and_then(Value::as_str));
        observe_tool_call(&command::tool_command_lines(stdin.get("tool_input")), agent, session, qa, helpers, now_ms)
    }

    #[test]
    fn the_hook_input_is_read_as_the_host_sends_it_and_other_calls_cost_nothing() {
        let d = tempfile::tempdir().unwrap();
        std::fs::set_permissions(d.path(), std::os::unix::fs::PermissionsExt::from_mode(0o700)).unwrap();
        let data = AbsPath::from_path(&d.path().join("data")).unwrap();
        let helpers = HelperDir::new(std::path::Path::new("/opt/kijito-qa/bin")).unwrap();
        let s = SessionId::parse("s-1").unwrap();
        let never = || -> Result<QaDir> { panic!("no I/O for a call that runs no pointer-snapshot") };
        for input in [
            json!({"tool_name": "Bash", "tool_input": {"command": "ls -la"}, "agent_id": "a"}),
            json!({"tool_name": "Read", "tool_input": {"file_path": "/x"}}),
            json!({"tool_name": "Bash"}),
        ] {
            assert_eq!(observe_hook_input(&input, &s, &never, &helpers, 5).unwrap(), 0);
        }
        let open = || QaDir::open(&data);
        let line = "/opt/kijito-qa/bin/pointer-snapshot --pointer-id 7 --lock-message-id 8 --report-file /r/a.json";
        // Claude Code's subagent call (`agent_id` and `agent_type`), and Codex's argv form.
        let claude = json!({"tool_name": "Bash", "tool_input": {"command": line}, "agent_id": "a1b2", "agent_type": "general-purpose"});
        assert_eq!(observe_hook_input(&claude, &s, &open, &helpers, 5).unwrap(), 1);
        let codex = json!({"tool_name": "Bash", "tool_input": {"command": ["bash", "-lc", line]}, "agent_type": "default"});
        assert_eq!(observe_hook_input(&codex, &s, &open, &helpers, 6).unwrap(), 1);
        let main = json!({"tool_name": "Bash", "tool_input": {"command": line}});
        assert_eq!(observe_hook_input(&main, &s, &open, &helpers, 7).unwrap(), 1);
        let qa = open().unwrap();
        let seen = read_optional(&qa, &s).unwrap().unwrap();
        let agents: Vec<Option<&str>> = seen.iter().map(|x| x.agent_id.as_deref()).collect();
        assert_eq!(agents, [Some("a1b2"), Some("default"), None]);
        assert_eq!(seen[0].report_file.as_str(), "/r/a.json");
        assert_eq!((seen[0].pointer_id.get(), seen[0].expected_pointer_digest.clone(), seen[2].seen_at_ms), (7, None, 7));
        assert_eq!(Seen::parse(seen[0].to_line().trim_end().as_bytes()), Some(seen[0].clone()));
    }
}
