//! prompt-hook: UserPromptSubmit (late re-entry delivery, the new-turn rule,
//! consent/reseed/review tokens from the user's own message, the recovery
//! protocol, the latch knobs and nudges). Always exits 0. Its own binary so
//! that session-hook stays within the size bound (docs/architecture.md).

#![no_main]

use kijito_cli as cli;
use kijito_hooks::{self as hooks, Event, HookArgs, HookEnv};
use kijito_protocol::argv::Tool;

const TOOL: Tool = Tool {
    name: "prompt-hook",
    code_name: "prompt_hook",
    help: "prompt-hook --host codex|claude --expect UserPromptSubmit [--data-dir ABS]\n  Reads the UserPromptSubmit hook JSON on stdin and answers in the host's format (or prints nothing).\n",
    commands: hooks::EVENT_HOOK_FLAGS,
};

kijito_hooks::hook_main!(run);

fn run() -> ! {
    let parsed = HookArgs::parse(&TOOL);
    let (host, data_dir) = match parsed {
        Ok(HookArgs { host, event: Some(Event::UserPromptSubmit), data_dir }) => (host, data_dir),
        Ok(_) => {
            cli::report_failure(
                &TOOL,
                &kijito_protocol::error::Error::usage(kijito_protocol::codes::cli::INVALID_EVENT, "--expect must be UserPromptSubmit"),
            );
            std::process::exit(0)
        }
        Err(e) => {
            cli::report_failure(&TOOL, &e);
            std::process::exit(0)
        }
    };
    hooks::run_hook(hooks::WATCHDOG_SESSION, None, move || {
        let env = HookEnv::from_process(host, data_dir);
        hooks::run::prompt_stdin(&env, hooks::read_bounded(std::io::stdin().lock()))
    })
}
