//! The compaction adapters' part of the hooks (docs/adapters.md): the pin at
//! SessionStart, the turn records at UserPromptSubmit and Stop, and the
//! `kijito-compact request` command in the SessionStart text.

use crate::env::HookEnv;
use crate::HookInput;
pub use kijito_compact::trigger::TurnState;
use kijito_compact::trigger::ViaKind;
use kijito_compact::PinOutcome;

/// Whether the hook input (the parsed stdin object) belongs to a subagent
/// (`agent_id` or `agent_type`).
pub fn is_subagent(input: &serde_json::Map<String, serde_json::Value>) -> bool {
    ["agent_id", "agent_type"].iter().any(|k| input.get(*k).is_some_and(|v| !v.is_null()))
}

/// SessionStart (startup, resume, clear): pin (or unpin) the session and
/// return the paragraph for the commands text.
pub fn session_start(env: &HookEnv, input: &HookInput, subagent: bool) -> Option<String> {
    let (data, qa) = env.qa().ok()?;
    let outcome = kijito_compact::hook_session_start(&qa, &input.session_id, subagent, env.now_ms);
    request_paragraph(env, input, &data, &outcome)
}

/// The same paragraph after a compaction or a withdrawn pass, from the pin
/// SessionStart(startup, resume, clear) left: it reads the pin and never
/// pins the session again (the adapter checks the pane before each send).
pub fn existing_pin(env: &HookEnv, input: &HookInput, subagent: bool) -> Option<String> {
    if subagent {
        return None;
    }
    let (data, qa) = env.qa().ok()?;
    let outcome = match kijito_compact::trigger::pinned_via(&qa, &input.session_id) {
        Ok(Some(via)) => PinOutcome::Pinned(via),
        Ok(None) => PinOutcome::NoTrigger,
        Err(e) => PinOutcome::Refused(e.code().to_owned(), e.message().to_owned()),
    };
    request_paragraph(env, input, &data, &outcome)
}

/// The `kijito-compact request` paragraph of the commands text for a pin outcome.
fn request_paragraph(env: &HookEnv, input: &HookInput, data: &kijito_protocol::ids::AbsPath, outcome: &PinOutcome) -> Option<String> {
    let adapter = match outcome {
        PinOutcome::Pinned(via) => via.what_it_does().to_owned(),
        PinOutcome::NoTrigger => {
            "no adapter owns this session (not in tmux, not under `kijito-compact codex`), so the request will answer no_safe_trigger"
                .to_owned()
        }
        PinOutcome::Subagent => return None,
        PinOutcome::Refused(code, msg) => {
            format!("no adapter may compact this session ({code}: {msg}), so the request will answer no_safe_trigger")
        }
    };
    let helpers = env.helpers.as_ref()?;
    Some(format!(
        "- Right after `qa-gate record` succeeds, request the compaction (the last action of the turn):\n  \
         {bin} request --session-id {s} --data-dir {data}\n  \
         If it fails with kijito_compact_failed:no_safe_trigger, ask the user to run /compact now; on any other failure report the code. \
         Compaction adapter: {adapter}.",
        bin = helpers.helper("kijito-compact"),
        s = input.session_id,
    ))
}

/// UserPromptSubmit / Stop: record whether a turn runs (never for subagents).
pub fn turn(env: &HookEnv, input: &HookInput, subagent: bool, state: TurnState) {
    if subagent {
        return;
    }
    if let Ok((_, qa)) = env.qa() {
        let _ = kijito_compact::hook_turn(&qa, &input.session_id, state, env.now_ms);
    }
}

/// The Stop reminder's advice while a pass waits: whether a compaction
/// request is already on its way.
pub fn stop_advice(env: &HookEnv, input: &HookInput) -> &'static str {
    let pending = env.qa().ok().and_then(|(_, qa)| kijito_compact::pending_request(&qa, &input.session_id));
    match pending {
        Some(r) => match r.via {
            ViaKind::Tmux | ViaKind::CodexAppServer => "compaction was requested; the adapter starts it now",
        },
        None => "run `kijito-compact request` (or ask the user to run /compact) so re-entry is attested",
    }
}
