//! memory-latch's governance knobs in the hooks, for the
//! latch in the hook input's `cwd`: UserPromptSubmit opens the session's
//! turn (and reminds the model of one-step mode), Stop closes and counts it,
//! writes the `checkpoint_freq_turns` checkpoint and, from the session's
//! context ratio (the number `kijito-context` and the nudges use), enters or
//! leaves one-step mode (`kijito_latch::knobs`). Never for a subagent (hook
//! input with `agent_id`/`agent_type`): its turns are the session's turn.
//! Fail-soft: a latch that cannot be opened or written changes nothing here
//! (the write itself enters Silent Witness on a verification failure).

use crate::env::HookEnv;
use crate::HookInput;
use std::path::Path;

/// UserPromptSubmit: one line for the model while one-step mode is on.
pub fn prompt(env: &HookEnv, input: &HookInput, cwd: Option<&Path>, subagent: bool) -> Option<String> {
    if subagent {
        return None;
    }
    let latch = crate::latch_hook::open_latch(cwd?)?;
    let (mode, step) = latch.turn_started(&input.session_id, now(env)).ok()??;
    let checkpoint =
        kijito_latch::recover::latch_command(env.helpers.as_ref(), &latch.paths().root, "checkpoint", " --next-step <NEXT_STEP>");
    Some(kijito_latch::knobs::one_step_context(mode, &step, checkpoint.as_deref()))
}

/// Stop: count the turn and act on the knobs; one line for the user when an
/// entry was written.
pub fn stop(
    env: &HookEnv,
    input: &HookInput,
    cwd: Option<&Path>,
    subagent: bool,
    flight: Option<&kijito_latch::flight::Flight>,
) -> Option<String> {
    if subagent {
        return None;
    }
    let latch = crate::latch_hook::open_latch(cwd?)?;
    let ratio = crate::nudge::session_ratio(env, input);
    let outcome = latch.turn_ended(&input.session_id, now(env), ratio).ok()?;
    flight.inspect(|f| f.turn_end(&outcome));
    outcome.message()
}

/// Join the latch's Stop line to another Stop answer (a `systemMessage`
/// reply), so neither is lost.
pub fn join_stop(reply: Option<String>, note: Option<String>) -> Option<String> {
    let Some(note) = note else { return reply };
    let Some(reply) = reply else { return Some(crate::stop_reply(&note)) };
    let first = serde_json::from_str::<serde_json::Value>(&reply)
        .ok()
        .and_then(|v| v.get("systemMessage").and_then(serde_json::Value::as_str).map(str::to_owned));
    Some(match first {
        Some(m) => crate::stop_reply(&format!("{m} {note}")),
        None => reply,
    })
}

fn now(env: &HookEnv) -> u64 {
    u64::try_from(env.now_ms).unwrap_or(0)
}
