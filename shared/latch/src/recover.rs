//! The recovery protocol and Silent Witness.
//!
//! `recover` prints Known vs Unknown from verified state only, one question,
//! and exactly one next step (at most 2 lines). Each call counts an attempt
//! (a checkpoint resets the count); once `max_recovery_attempts` attempts
//! have failed, the next call enters Silent Witness: consent locked, every
//! write or irreversible command refused, a 3-line incident summary. A chain
//! that fails verification enters Silent Witness too (by a marker file, as
//! nothing may be appended to an untrusted chain).

use crate::entry::{ConsentState, Entry, Event};
use crate::{Latch, ReportMode};
use kijito_protocol::command::{self, HelperDir};
use kijito_protocol::error::{Error, Result};
use serde::Serialize;
use std::path::Path;

pub const QUESTION: &str = "What was the last moment that felt aligned/correct?";
/// Characters per line of the next step (at most 2 lines).
pub const STEP_LINE_CHARS: usize = 100;

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Protocol {
    /// The Re-Latch phase, in this order: blocking dependency
    /// (`blocked_by`), current objective, anchor (last confirmed checkpoint).
    pub relatch: Vec<String>,
    pub known: Vec<String>,
    pub unknown: Vec<String>,
    pub question: &'static str,
    /// At most 2 lines.
    pub next_step: String,
    pub attempt: u32,
    pub max_attempts: u32,
    pub entry_seq: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Incident {
    /// Exactly 3 lines: current block, attempted recoveries, required input.
    pub lines: Vec<String>,
    pub reason: String,
    /// Whether this call entered Silent Witness (else it was already active).
    pub entered_now: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum RecoverOutcome {
    Protocol(Protocol),
    SilentWitness(Incident),
}

/// Wrap a one-line step into at most 2 lines of [`STEP_LINE_CHARS`].
pub fn two_lines(step: &str) -> String {
    let chars: Vec<char> = step.chars().collect();
    if chars.len() <= STEP_LINE_CHARS {
        return step.to_owned();
    }
    let cut = chars[..STEP_LINE_CHARS].iter().rposition(|c| *c == ' ').filter(|&p| p > 0).unwrap_or(STEP_LINE_CHARS);
    let first: String = chars[..cut].iter().collect();
    let rest: Vec<char> = chars[cut..].iter().copied().skip_while(|c| *c == ' ').collect();
    let second: String =
        if rest.len() > STEP_LINE_CHARS { rest[..STEP_LINE_CHARS - 3].iter().collect::<String>() + "..." } else { rest.iter().collect() };
    format!("{first}\n{second}")
}

/// The three incident lines. `reseed_command`: the exact absolute
/// `<root>/bin/memory-latch reseed --workspace <ws>` ([`latch_command`]); when
/// none could be built, the line names the step without a command.
pub fn incident_lines(block: &str, attempts: u32, max: u32, reseed_command: Option<&str>) -> Vec<String> {
    let required = match reseed_command {
        Some(c) => format!("Required user input: after `{c}` prints a token, the user sends that token alone as their own message."),
        None => "Required user input: the user has this workspace's latch reseeded (memory-latch reseed prints a token) and sends that token alone as their own message.".to_owned(),
    };
    vec![format!("Current block: {block}"), format!("Attempted recoveries: {attempts} of {max}"), required]
}

/// `<dir>/memory-latch <subcommand> --workspace <workspace><rest>`, the exact
/// command the agent may run, only when the command guard accepts it as a
/// helper command of `dir` (`<UPPERCASE>` placeholders in `rest` are checked
/// as a one-word value and left in place for the agent to fill in). `None`
/// when there is no installed root or the workspace path cannot appear in a
/// command (the caller then names the step without a command).
pub fn latch_command(dir: Option<&HelperDir>, workspace: &Path, subcommand: &str, rest: &str) -> Option<String> {
    let dir = dir?;
    let line = format!("{} {subcommand} --workspace {}{rest}", dir.helper("memory-latch"), workspace.to_str()?);
    let sample: String =
        line.split(' ').map(|w| if w.starts_with('<') && w.ends_with('>') { "x" } else { w }).collect::<Vec<_>>().join(" ");
    matches!(command::guard_line(&sample, Some(dir)), command::Verdict::Helper(_)).then_some(line)
}

/// The text `recover` prints for a protocol outcome.
pub fn protocol_text(p: &Protocol) -> String {
    let mut s = String::from("RECOVERY PROTOCOL (from verified latch state only)\n\nRe-Latch (in this order):\n");
    for (i, r) in p.relatch.iter().enumerate() {
        s.push_str(&format!("{}. {r}\n", i + 1));
    }
    s.push_str("\nKnown:\n");
    for k in &p.known {
        s.push_str(&format!("- {k}\n"));
    }
    s.push_str("\nUnknown:\n");
    for u in &p.unknown {
        s.push_str(&format!("- {u}\n"));
    }
    s.push_str(&format!("\nQuestion: {}\n\nNext step:\n{}\n", p.question, p.next_step));
    s.push_str(&format!("\n(recovery attempt {} of {})\n", p.attempt, p.max_attempts));
    s
}

/// The text printed in Silent Witness.
pub fn incident_text(i: &Incident) -> String {
    format!("SILENT WITNESS ({})\n{}\n", i.reason, i.lines.join("\n"))
}

/// Additional context a host hook injects when a user prompt signals a
/// continuity break (see [`crate::detect::continuity_break`]).
/// `recover_command` is the exact command to run: the absolute
/// `<root>/bin/memory-latch recover --workspace <cwd>` the hook built and the
/// command guard accepts (a bare `memory-latch recover` would be denied as
/// not absolute), or `None` when the hook could not build one; the text then
/// says so instead of naming a command the guard denies.
pub fn hook_context(signal: &str, recover_command: Option<&str>) -> String {
    let run = match recover_command {
        Some(c) => format!("run exactly `{c}`"),
        None => "ask the user how to run this workspace's memory-latch recovery (the hook could not build the exact command: no installed root or no usable working directory; a command guessed from memory is denied)".to_owned(),
    };
    format!(
        "Continuity break signalled by the user (\"{signal}\"). Follow the memory-latch recovery protocol: \
do not resume remembered actions; {run} and use only its verified Known/Unknown state; \
ask the user: \"{QUESTION}\"; then take exactly the one next step it prints. If it reports SILENT WITNESS, \
stop and show the user its 3-line incident summary."
    )
}

fn protocol_from(e: &Entry) -> Protocol {
    let mut known = vec![format!("objective: {}", e.objective)];
    if e.last_good_checkpoint != crate::entry::NONE {
        known.push(format!("last good checkpoint: {}", e.last_good_checkpoint));
    }
    known.extend(e.non_negotiables.iter().map(|n| format!("non-negotiable: {n}")));
    known.extend(e.known_state.iter().cloned());
    known.push(format!("latest verified entry: {} ({}, {})", e.entry_seq, e.event.as_str(), e.updated_at));
    let mut unknown = e.unknown_state.clone();
    unknown.push("anything not recorded in the verified latch (treat memory of it as unconfirmed)".into());
    let relatch = vec![
        format!("blocking dependency: {}", e.blocked_by),
        format!("current objective: {}", e.objective),
        format!("anchor (last confirmed checkpoint): {}", e.last_good_checkpoint),
    ];
    Protocol {
        relatch,
        known,
        unknown,
        question: QUESTION,
        next_step: two_lines(&e.next_single_step),
        attempt: e.recovery_attempts,
        max_attempts: e.governance.max_recovery_attempts,
        entry_seq: e.entry_seq,
    }
}

pub(crate) fn run(latch: &Latch, now_ms: u64) -> Result<RecoverOutcome> {
    let guard = latch.lock()?;
    let max = latch.governance().max_recovery_attempts;
    // The binary running this (memory-latch, a hook, wake-check) lives in
    // this installed root's bin/: the reseed command names that root.
    let reseed = latch_command(kijito_cli::helper_dir().ok().as_ref(), &latch.paths().root, "reseed", "");
    let incident_lines = |block: &str, attempts: u32, max: u32| incident_lines(block, attempts, max, reseed.as_deref());
    let full = latch.full_verify(false);
    if !full.report.trusted {
        if full.report.mode == ReportMode::Unverifiable && full.report.findings.is_empty() {
            return Err(Error::new(
                crate::codes::UNVERIFIABLE,
                "the manifest holds hmac entries and no key was given; recovery needs verified state",
            ));
        }
        let codes: Vec<String> = full.report.findings.iter().map(|f| f.code.to_string()).collect();
        let already = latch.witness_marker()?.is_some();
        latch.write_witness(now_ms, "verification failed", codes.clone())?;
        let block = format!("the latch failed verification ({})", codes.first().map(String::as_str).unwrap_or("unknown"));
        let attempts = full.head.as_ref().map(|h| h.recovery_attempts).unwrap_or(0);
        return Ok(RecoverOutcome::SilentWitness(Incident {
            lines: incident_lines(&block, attempts, max),
            reason: "verification failed".into(),
            entered_now: !already,
        }));
    }
    let live = latch.load_for_write(now_ms)?;
    let head = live.entries.last().cloned().ok_or_else(|| Error::new(crate::codes::MANIFEST_EMPTY, "no entry"))?;
    if let Some(reason) = latch.witness_active(&live)? {
        return Ok(RecoverOutcome::SilentWitness(Incident {
            lines: incident_lines(&head.blocked_by, head.recovery_attempts, max),
            reason,
            entered_now: false,
        }));
    }
    if head.recovery_attempts >= max {
        let lines = incident_lines(&head.blocked_by, head.recovery_attempts, max);
        latch.transact(&guard, now_ms, Event::SilentWitness, |e, _| {
            e.silent_witness = true;
            e.consent_state = ConsentState::Locked;
            e.details = lines.clone();
            Ok(())
        })?;
        return Ok(RecoverOutcome::SilentWitness(Incident { lines, reason: "recovery attempts exhausted".into(), entered_now: true }));
    }
    let e = latch.transact(&guard, now_ms, Event::RecoveryAttempt, |e, h| {
        e.recovery_attempts = h.recovery_attempts + 1;
        Ok(())
    })?;
    Ok(RecoverOutcome::Protocol(protocol_from(&e)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn next_step_is_at_most_two_lines() {
        assert_eq!(two_lines("short"), "short");
        let long = "word ".repeat(100);
        let t = two_lines(long.trim());
        assert_eq!(t.lines().count(), 2);
        assert!(t.lines().all(|l| l.chars().count() <= STEP_LINE_CHARS));
    }

    #[test]
    fn incident_has_three_lines() {
        assert_eq!(incident_lines("x", 3, 3, None).len(), 3);
        let dir = HelperDir::new(Path::new("/opt/kq/bin")).unwrap();
        let reseed = latch_command(Some(&dir), Path::new("/w/s"), "reseed", "").unwrap();
        assert_eq!(reseed, "/opt/kq/bin/memory-latch reseed --workspace /w/s");
        assert!(
            incident_lines("x", 3, 3, Some(&reseed))[2].contains("after `/opt/kq/bin/memory-latch reseed --workspace /w/s` prints a token")
        );
        assert!(!incident_lines("x", 3, 3, None)[2].contains('`'));
        // a placeholder is checked as a one-word value and kept
        assert_eq!(
            latch_command(Some(&dir), Path::new("/w"), "checkpoint", " --next-step <NEXT_STEP>").as_deref(),
            Some("/opt/kq/bin/memory-latch checkpoint --workspace /w --next-step <NEXT_STEP>")
        );
        // a workspace path the grammar refuses, an unknown subcommand, no root: no command
        assert_eq!(latch_command(Some(&dir), Path::new("/w/a b"), "reseed", ""), None);
        assert_eq!(latch_command(Some(&dir), Path::new("/w"), "confirm", ""), None);
        assert_eq!(latch_command(None, Path::new("/w"), "reseed", ""), None);
        let p = Protocol {
            relatch: vec![
                "blocking dependency: b".into(),
                "current objective: o".into(),
                "anchor (last confirmed checkpoint): none".into(),
            ],
            known: vec![],
            unknown: vec![],
            question: QUESTION,
            next_step: "s".into(),
            attempt: 1,
            max_attempts: 3,
            entry_seq: 2,
        };
        let t = protocol_text(&p);
        let (b, o, a) = (t.find("1. blocking").unwrap(), t.find("2. current objective").unwrap(), t.find("3. anchor").unwrap());
        assert!(b < o && o < a);
        assert!(hook_context("you forgot", None).contains(QUESTION));
        let c = hook_context("you forgot", Some("/r/bin/memory-latch recover --workspace /w"));
        assert!(c.contains("run exactly `/r/bin/memory-latch recover --workspace /w`"), "{c}");
        assert!(!hook_context("you forgot", None).contains("run `memory-latch recover`"));
    }
}
