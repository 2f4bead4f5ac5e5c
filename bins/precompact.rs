//! precompact: the PreCompact hook. Never blocks compaction; always exits 0.

#![no_main]

use kijito_cli as cli;
use kijito_hooks::{self as hooks, HookArgs, HookEnv};
use kijito_protocol::argv::Tool;

const TOOL: Tool = Tool {
    name: "precompact",
    code_name: "precompact",
    help: "precompact --host codex|claude [--data-dir ABS]\n  PreCompact hook: reads the hook JSON on stdin, promotes a valid QA pass or records an\n  unattested attempt. Codex answer: {\"continue\":true,\"systemMessage\":...}; Claude Code: no output.\n",
    commands: hooks::COMPACT_HOOK_FLAGS,
};

kijito_hooks::hook_main!(run);

fn run() -> ! {
    let parsed = HookArgs::parse(&TOOL);
    let (host, data_dir) = match parsed {
        Ok(a) => (a.host, a.data_dir),
        Err(e) => {
            // A broken install must still never block compaction.
            cli::report_failure(&TOOL, &e);
            std::process::exit(0)
        }
    };
    let fallback = hooks::precompact_reply(host, hooks::messages::PRECOMPACT_TIMEOUT);
    hooks::run_hook(hooks::WATCHDOG, fallback, move || {
        let stdin = match hooks::read_bounded(std::io::stdin().lock()) {
            Ok(b) => b,
            Err(e) => return hooks::precompact_reply(host, &hooks::messages::fill(hooks::messages::PRECOMPACT_UNATTESTED, e.code())),
        };
        let env = HookEnv::from_process(host, data_dir);
        hooks::run::precompact(&env, &stdin)
    })
}
