//! kijito-context: how full a session's context window is (from the host's
//! transcript or rollout tail), and the Claude Code status line.
use kijito_cli as cli;
use kijito_protocol::argv::{Command, Tool};

const TOOL: Tool = Tool {
    name: "kijito-context",
    code_name: "context",
    help: "\
kijito-context --session-id S --transcript ABS [--host codex|claude]
kijito-context --statusline [--data-dir ABS]

The first form prints one JSON line
  {\"usedTokens\":N,\"windowTokens\":N,\"ratio\":R,\"source\":\"...\"}
read from the tail of the session file (Claude Code transcript: the last
assistant usage against the model's window; Codex rollout: the last
token_count event). When a number is unknown, ratio is null and \"reason\"
says why; it is never guessed. Exit 0.

The second form reads the Claude Code statusline JSON on stdin and prints
one short line, e.g. `ctx 62% · QA pass valid 21 min` or `ctx 62% · no QA pass`.

Exit 1 with kijito_context_failed:<code> on stderr; 2 for usage errors.
",
    commands: &[Command { name: "", flags: kijito_context::FLAGS }],
};

fn main() {
    std::process::exit(cli::main(&TOOL, |args| {
        let out = kijito_context::run(&args, std::io::stdin().lock(), kijito_gate::now_ms())?;
        cli::print_stdout(&out)?;
        Ok(0)
    }))
}
