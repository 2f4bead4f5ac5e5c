//! pretool-hook: PreToolUse on every tool call (the section 8 command guard,
//! then the section 8a policy: tripwires, latch modes, the QA freeze,
//! pointer writes, consent for irreversible calls). Always exits 0; a call
//! it cannot decide in time is denied. Its own binary so that the policy
//! is not linked into session-hook (docs/architecture.md).

#![no_main]

use kijito_cli as cli;
use kijito_hooks::{self as hooks, Event, HookArgs, HookEnv};
use kijito_protocol::argv::Tool;

const TOOL: Tool = Tool {
    name: "pretool-hook",
    code_name: "pretool_hook",
    help: "pretool-hook --host codex|claude --expect PreToolUse|PostToolUse|PostToolUseFailure [--data-dir ABS]\n  Reads the PreToolUse hook JSON on stdin and answers in the host's format (or prints nothing: allowed).\n  PostToolUse and PostToolUseFailure (Claude Code, consent mode host): records a call the user allowed\n  in the host's dialog; prints nothing.\n",
    commands: hooks::EVENT_HOOK_FLAGS,
};

kijito_hooks::hook_main!(run);

fn run() -> ! {
    let parsed = HookArgs::parse(&TOOL);
    let deny = hooks::run::session_fallback(Event::PreToolUse);
    let (host, event, data_dir) = match parsed {
        Ok(HookArgs { host, event: Some(ev @ (Event::PreToolUse | Event::PostToolUse | Event::PostToolUseFailure)), data_dir }) => {
            (host, ev, data_dir)
        }
        // A tool call this hook cannot even start deciding is denied.
        Ok(_) => hooks::run_hook(hooks::WATCHDOG_SESSION, deny.clone(), || deny),
        Err(e) => {
            cli::report_failure(&TOOL, &e);
            hooks::run_hook(hooks::WATCHDOG_SESSION, deny.clone(), || deny)
        }
    };
    if event != Event::PreToolUse {
        // The call already ran: nothing to deny, whatever happens here.
        hooks::run_hook(hooks::WATCHDOG_SESSION, None, move || {
            let env = HookEnv::from_process(host, data_dir);
            hooks::read_bounded(std::io::stdin().lock()).ok().and_then(|b| hooks::consent_host::post_tool(&env, event, &b))
        })
    }
    hooks::run_hook(hooks::WATCHDOG_SESSION, deny, move || {
        let env = HookEnv::from_process(host, data_dir);
        hooks::pretool::pretool_stdin(&env, hooks::read_bounded(std::io::stdin().lock()))
    })
}
