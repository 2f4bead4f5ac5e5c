//! The two governance knobs the Stop hook drives:
//! `checkpoint_freq_turns` (one `turn_checkpoint` entry every N turns) and
//! `fatigue_trigger_context_ratio` (a `fatigue_checkpoint` entry and
//! one-step mode when the session's context ratio reaches it).
//!
//! **Turns.** A turn is one UserPromptSubmit followed by one Stop of the same
//! (non-subagent) session, counted once per latch in
//! `.memory-latch/turns.json` under the manifest lock: the prompt opens the
//! session's turn, the first Stop after it closes and counts it; a second
//! Stop without a new prompt (a Stop hook that re-fires) counts nothing, and
//! the hooks never call this for a subagent. The file is scheduling state,
//! not evidence: a missing or unreadable file starts the count afresh (a
//! symlink is refused). It is bounded: at most [`MAX_OPEN`] open sessions.
//!
//! **One-step mode.** While the head's `one_step` is set, `gate` adds the
//! check `one_step`: the head must name a `next_single_step` and that step
//! must not have been taken yet (`ready`); a gate pass makes it
//! `step_taken`, and only a `checkpoint` that names the next step
//! (`--next-step`) makes it `ready` again. So at context fatigue the agent
//! acts one gated step per declared checkpoint.

use crate::entry::{Entry, Event, OneStep, NONE};
use crate::{layout, Latch};
use kijito_files::private;
use kijito_protocol::error::{Error, Result};
use kijito_protocol::ids::SessionId;
use serde::{Deserialize, Serialize};

pub const TURNS_FILE: &str = "turns.json";
pub const TURNS_SCHEMA: &str = "memory-latch.turns/v1";
/// Sessions with an open turn remembered at most (the oldest is dropped).
pub const MAX_OPEN: usize = 16;
const MAX_TURNS_BYTES: u64 = 8 * 1024;

/// `.memory-latch/turns.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Turns {
    pub schema: String,
    /// Turns counted for this latch since the file was created.
    pub turns: u64,
    /// Turns counted since the last checkpoint entry of any kind.
    pub since_checkpoint: u64,
    /// The head `entry_seq` when `since_checkpoint` was last reset: a
    /// checkpoint the agent wrote after it resets the count too.
    pub reset_at_seq: u64,
    /// Sessions whose prompt opened a turn not yet closed by a Stop.
    pub open: Vec<OpenTurn>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OpenTurn {
    /// A session id that does not parse makes the whole file invalid: the
    /// count starts afresh, as for any invalid `turns.json`.
    pub session: SessionId,
    pub since_ms: u64,
}

impl Default for Turns {
    fn default() -> Self {
        Turns { schema: TURNS_SCHEMA.into(), turns: 0, since_checkpoint: 0, reset_at_seq: 0, open: Vec::new() }
    }
}

/// What the Stop hook did to the latch.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StopOutcome {
    /// This Stop closed a turn opened by the session's prompt.
    pub counted: bool,
    pub since_checkpoint: u64,
    /// The entry written (`turn_checkpoint`, `fatigue_checkpoint`,
    /// `fatigue_cleared`), if any.
    pub written: Option<(Event, u64)>,
    pub one_step: Option<OneStep>,
    /// The ratio the decision used and the latch's threshold.
    pub ratio: Option<f64>,
    pub threshold: f64,
}

impl StopOutcome {
    /// One line for the user (Stop `systemMessage`), only when an entry was written.
    pub fn message(&self) -> Option<String> {
        let (ratio, threshold) = (self.ratio, self.threshold);
        let pct = |r: f64| (r * 100.0).floor().max(0.0) as u64;
        let (event, seq) = self.written?;
        Some(match event {
            Event::FatigueCheckpoint => format!(
                "memory-latch: context at {}% reached the fatigue threshold ({}%): forced checkpoint (entry {seq}); one-step mode: one gated action per checkpoint that names the next single step.",
                ratio.map(pct).unwrap_or(0),
                pct(threshold)
            ),
            Event::FatigueCleared => format!("memory-latch: context below the fatigue threshold again: one-step mode ended (entry {seq})."),
            _ => format!("memory-latch: automatic checkpoint after {} turns (entry {seq}).", self.since_checkpoint),
        })
    }
}

/// The one-step line for the model at UserPromptSubmit. `checkpoint`: the
/// exact `<root>/bin/memory-latch checkpoint --workspace <ws> --next-step
/// <NEXT_STEP>` ([`crate::recover::latch_command`]); `None` names the step
/// without a command (no installed root, or a workspace path no command may
/// hold).
pub fn one_step_context(mode: OneStep, next_step: &str, checkpoint: Option<&str>) -> String {
    let write = match checkpoint {
        Some(c) => format!("write `{c}`"),
        None => "write a memory-latch checkpoint with --next-step".to_owned(),
    };
    match mode {
        OneStep::Ready if next_step != NONE => format!(
            "memory-latch: ONE-STEP MODE (context fatigue). Do only the next single step: \"{next_step}\" (an irreversible call still needs the user's consent token), then {write} naming the next single step before any further action."
        ),
        OneStep::Ready => format!("memory-latch: ONE-STEP MODE (context fatigue). No next single step is recorded: {write} naming exactly one step before acting."),
        OneStep::StepTaken => format!("memory-latch: ONE-STEP MODE (context fatigue). The declared step was taken: {write} naming the next single step before any further action."),
    }
}

impl Latch {
    fn turns_path(&self) -> std::path::PathBuf {
        self.paths.dir.join(TURNS_FILE)
    }

    /// Read `turns.json`; absent or invalid starts afresh, a symlink is refused.
    fn load_turns(&self) -> Result<Turns> {
        let path = self.turns_path();
        layout::refuse_symlink(&path, crate::codes::TURNS_SYMLINK)?;
        if std::fs::symlink_metadata(&path).is_err() {
            return Ok(Turns::default());
        }
        let rules = private::FileRules { owner_only: true, min_bytes: 0, max_bytes: MAX_TURNS_BYTES };
        let Ok((bytes, _)) = private::read_checked(&path, rules) else { return Ok(Turns::default()) };
        match serde_json::from_slice::<Turns>(&bytes) {
            Ok(t) if t.schema == TURNS_SCHEMA && t.open.len() <= MAX_OPEN => Ok(t),
            _ => Ok(Turns::default()),
        }
    }

    fn save_turns(&self, t: &Turns) -> Result<()> {
        let bytes = serde_json::to_vec(t).map_err(|e| Error::new(crate::codes::WRITE_FAILED, e.to_string()))?;
        private::write_atomic(&self.turns_path(), &bytes).map_err(|e| layout::file_error(e, crate::codes::TURNS_SYMLINK))
    }

    /// The turn counter as stored (status, tests).
    pub fn turns(&self) -> Result<Turns> {
        self.load_turns()
    }

    /// The latch's turn count for composting (`None`: the counter cannot be
    /// read, e.g. a symlinked `turns.json`).
    pub(crate) fn turn_count(&self) -> Option<u64> {
        self.load_turns().ok().map(|t| t.turns)
    }

    /// UserPromptSubmit (never for a subagent): open this session's turn.
    /// Returns the head's one-step state and next step, for the model.
    pub fn turn_started(&self, session: &SessionId, now_ms: u64) -> Result<Option<(OneStep, String)>> {
        let _guard = self.lock()?;
        let mut t = self.load_turns()?;
        t.open.retain(|o| o.session != *session);
        t.open.push(OpenTurn { session: session.clone(), since_ms: now_ms });
        let excess = t.open.len().saturating_sub(MAX_OPEN);
        t.open.drain(..excess);
        self.save_turns(&t)?;
        let live = self.load_trusted_readonly()?;
        Ok(live.entries.last().and_then(|h| h.one_step.map(|m| (m, h.next_single_step.clone()))))
    }

    /// Stop (never for a subagent): close and count this session's turn;
    /// then, from the session's context `ratio` (None: unknown, nothing
    /// decided on it), write at most one entry: `fatigue_checkpoint` when the
    /// ratio reached `fatigue_trigger_context_ratio` outside one-step mode,
    /// `fatigue_cleared` when it is below it in one-step mode, else
    /// `turn_checkpoint` once `checkpoint_freq_turns` turns passed since the
    /// last checkpoint entry.
    pub fn turn_ended(&self, session: &SessionId, now_ms: u64, ratio: Option<f64>) -> Result<StopOutcome> {
        let guard = self.lock()?;
        let mut t = self.load_turns()?;
        let before = t.open.len();
        t.open.retain(|o| o.session != *session);
        let counted = t.open.len() != before;
        if counted {
            t.turns = t.turns.saturating_add(1);
            t.since_checkpoint = t.since_checkpoint.saturating_add(1);
            // Saved first: the entry this Stop may write composts by this count.
            self.save_turns(&t)?;
        }
        let live = self.load_trusted_readonly()?;
        let head = live.entries.last().cloned().ok_or_else(|| Error::new(crate::codes::MANIFEST_EMPTY, "no entry"))?;
        // A checkpoint entry written since the last reset (by the agent, or a
        // reseeded chain starting lower) restarts the count: the turns it
        // covers ended with it. A fresh counter starts at the newest one.
        let last_cp = live.entries.iter().rev().find(|e| is_checkpoint(e)).map(|e| e.entry_seq).unwrap_or(head.entry_seq);
        if t.reset_at_seq == 0 {
            t.reset_at_seq = last_cp;
        } else if head.entry_seq < t.reset_at_seq || live.entries.iter().any(|e| e.entry_seq > t.reset_at_seq && is_checkpoint(e)) {
            t.reset_at_seq = last_cp;
            t.since_checkpoint = 0;
        }
        let g = self.governance().clone();
        let freq = u64::from(g.checkpoint_freq_turns.max(1));
        let decided = match (ratio, head.one_step) {
            (Some(r), None) if r >= g.fatigue_trigger_context_ratio => Some(Event::FatigueCheckpoint),
            (Some(r), Some(_)) if r < g.fatigue_trigger_context_ratio => Some(Event::FatigueCleared),
            _ if t.since_checkpoint >= freq => Some(Event::TurnCheckpoint),
            _ => None,
        };
        let since = t.since_checkpoint;
        let mut written = None;
        let mut one_step = head.one_step;
        if let Some(event) = decided {
            let written_entry = self.transact(&guard, now_ms, event, |e, _| {
                e.details = vec![match event {
                    Event::FatigueCheckpoint => {
                        e.one_step = Some(OneStep::Ready);
                        format!(
                            "context ratio {:.3} reached fatigue_trigger_context_ratio {}: forced checkpoint; one-step mode",
                            ratio.unwrap_or(0.0),
                            g.fatigue_trigger_context_ratio
                        )
                    }
                    Event::FatigueCleared => {
                        e.one_step = None;
                        format!(
                            "context ratio {:.3} below fatigue_trigger_context_ratio {}: one-step mode ended",
                            ratio.unwrap_or(0.0),
                            g.fatigue_trigger_context_ratio
                        )
                    }
                    _ => format!("automatic checkpoint after {since} turns (checkpoint_freq_turns {})", g.checkpoint_freq_turns),
                }];
                Ok(())
            });
            let e = match written_entry {
                Ok(e) => e,
                Err(err) => {
                    // Keep the count (the entry is retried at the next Stop).
                    self.save_turns(&t)?;
                    return Err(err);
                }
            };
            t.since_checkpoint = 0;
            t.reset_at_seq = e.entry_seq;
            one_step = e.one_step;
            written = Some((event, e.entry_seq));
        }
        self.save_turns(&t)?;
        Ok(StopOutcome { counted, since_checkpoint: since, written, one_step, ratio, threshold: g.fatigue_trigger_context_ratio })
    }
}

fn is_checkpoint(e: &Entry) -> bool {
    matches!(
        e.event,
        Event::Init | Event::Reseed | Event::Checkpoint | Event::TurnCheckpoint | Event::FatigueCheckpoint | Event::FatigueCleared
    )
}

#[cfg(test)]
mod tests {
    use crate::{CheckpointInput, Config, InitInput, Latch};
    use kijito_protocol::ids::SessionId;

    fn latch(dir: &std::path::Path) -> Latch {
        let ws = dir.join("ws");
        std::fs::create_dir_all(&ws).unwrap();
        let mut c = Config::new(&ws);
        c.heads_dir = Some(dir.join("heads"));
        c.governance = None;
        Latch::open(&c).unwrap()
    }

    #[test]
    fn turns_json_is_written_with_the_session_ids_as_text_and_read_back_typed() {
        let line = r#"{"schema":"memory-latch.turns/v1","turns":7,"since_checkpoint":2,"reset_at_seq":4,"open":[{"session":"sess-1","since_ms":5},{"session":"01a2295e-6929-7981-9da7-935145fb97be","since_ms":6}]}"#;
        let t: super::Turns = serde_json::from_str(line).unwrap();
        assert_eq!(t.open[0].session, SessionId::parse("sess-1").unwrap());
        assert_eq!(serde_json::to_string(&t).unwrap(), line, "the same bytes back");
        // A stored id that is not a session id makes the file invalid (the
        // count then starts afresh, as for any invalid turns.json).
        for bad in ["a b", "", "-x", "../x"] {
            assert!(serde_json::from_str::<super::Turns>(&line.replace("sess-1", bad)).is_err(), "{bad}");
        }
    }

    fn decisions(l: &Latch) -> Vec<(String, Option<u64>)> {
        l.status(1).unwrap().decisions.into_iter().map(|d| (d.text, d.turn)).collect()
    }

    /// Composting retires by turns (seed 000: "retires the prior 20 turns
    /// from the active view"), not by entries: many entries in one turn keep
    /// a decision; the 20th turn after it retires it.
    #[test]
    fn composting_retires_decisions_by_turns_not_entries() {
        let d = tempfile::tempdir().unwrap();
        let l = latch(d.path());
        l.init(1_000, &InitInput { objective: "o".into(), ..Default::default() }).unwrap();
        let mut now = 2_000;
        let mut turn = |l: &Latch| {
            now += 10;
            l.turn_started(&SessionId::parse("s1").unwrap(), now).unwrap();
            l.turn_ended(&SessionId::parse("s1").unwrap(), now + 1, None).unwrap();
        };
        turn(&l);
        turn(&l);
        l.checkpoint(3_000, &CheckpointInput { decisions: vec!["keep the api".into()], ..Default::default() }).unwrap();
        assert_eq!(decisions(&l), [("keep the api".to_owned(), Some(2))]);
        // 30 entries in the same turn: far more than compost_retire_turns (20) entries
        for i in 0..30 {
            l.checkpoint(3_100 + i, &CheckpointInput { next_single_step: Some(format!("step {i}")), ..Default::default() }).unwrap();
        }
        assert_eq!(decisions(&l), [("keep the api".to_owned(), Some(2))], "entries alone retire nothing");
        // 19 turns later it is still in view (the Stop hook's turn checkpoints compost too)
        for _ in 0..19 {
            turn(&l);
        }
        l.checkpoint(9_000, &CheckpointInput::default()).unwrap();
        assert_eq!(l.turns().unwrap().turns, 21);
        assert_eq!(decisions(&l).len(), 1, "19 turns after it");
        // the 20th turn after it: the next entry (here the Stop's own turn checkpoint) retires it
        turn(&l);
        assert_eq!(l.turns().unwrap().turns, 22);
        l.checkpoint(9_500, &CheckpointInput::default()).unwrap();
        assert_eq!(decisions(&l), [], "retired 20 turns after it was made");
        // the chain still verifies
        assert!(l.verify().trusted);
    }
}
