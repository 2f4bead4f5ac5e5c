//! session-hook: SessionStart (re-entry delivery, emitted commands) and
//! Stop (pass reminder); for UserPromptSubmit and PreToolUse it execs its
//! sibling `prompt-hook` / `pretool-hook` with the same arguments
//! (hooks.json names them directly; this keeps an older hooks.json
//! working). Always exits 0.

#![no_main]

use kijito_cli as cli;
use kijito_hooks::{self as hooks, Event, HookArgs, HookEnv};
use kijito_protocol::argv::Tool;

const TOOL: Tool = Tool {
    name: "session-hook",
    code_name: "session_hook",
    help: "session-hook --host codex|claude --expect SessionStart|UserPromptSubmit|Stop|PreToolUse [--data-dir ABS]\n  Reads the hook JSON on stdin and answers in the host's format (or prints nothing).\n",
    commands: hooks::EVENT_HOOK_FLAGS,
};

kijito_hooks::hook_main!(run);

fn run() -> ! {
    let parsed = HookArgs::parse(&TOOL);
    let (host, event, data_dir) = match parsed {
        Ok(HookArgs { host, event: Some(event), data_dir }) => (host, event, data_dir),
        Ok(_) => unreachable!("session-hook declares --expect"),
        Err(e) => {
            cli::report_failure(&TOOL, &e);
            std::process::exit(0)
        }
    };
    if event == Event::UserPromptSubmit {
        // Nothing read yet: the sibling gets the untouched stdin. If it
        // cannot be run, the prompt gets no answer (nothing is confirmed).
        hooks::exec_sibling("prompt-hook");
        std::process::exit(0)
    }
    if event == Event::PreToolUse {
        // The guard and the policy live in pretool-hook (an older
        // hooks.json names session-hook); if it cannot be run, the call is
        // denied below (hook_pretool_missing).
        hooks::exec_sibling("pretool-hook");
    }
    hooks::run_hook(hooks::WATCHDOG_SESSION, hooks::run::session_fallback(event), move || {
        let env = HookEnv::from_process(host, data_dir);
        hooks::run::session_stdin_without_prompt(&env, event, hooks::read_bounded(std::io::stdin().lock()))
    })
}
