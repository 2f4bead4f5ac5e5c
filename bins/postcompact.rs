//! postcompact: the PostCompact hook. Claims the attempt if first; answers
//! {"continue":true} (+ one line) on both hosts; always exits 0.

#![no_main]

use kijito_cli as cli;
use kijito_hooks::{self as hooks, HookArgs, HookEnv};
use kijito_protocol::argv::Tool;

const TOOL: Tool = Tool {
    name: "postcompact",
    code_name: "postcompact",
    help: "postcompact --host codex|claude [--data-dir ABS]\n  PostCompact hook: claims the compaction attempt (first of PostCompact and\n  SessionStart(compact)) and writes the re-entry record. Answers {\"continue\":true}.\n",
    commands: hooks::COMPACT_HOOK_FLAGS,
};

kijito_hooks::hook_main!(run);

fn run() -> ! {
    let fallback = Some(hooks::postcompact_reply(None));
    let parsed = HookArgs::parse(&TOOL);
    let (host, data_dir) = match parsed {
        Ok(a) => (a.host, a.data_dir),
        Err(e) => {
            cli::report_failure(&TOOL, &e);
            hooks::run_hook(hooks::WATCHDOG_SESSION, fallback.clone(), move || fallback)
        }
    };
    hooks::run_hook(hooks::WATCHDOG_SESSION, fallback.clone(), move || {
        let stdin = match hooks::read_bounded(std::io::stdin().lock()) {
            Ok(b) => b,
            Err(_) => return fallback,
        };
        let env = HookEnv::from_process(host, data_dir);
        Some(hooks::run::postcompact(&env, &stdin))
    })
}
