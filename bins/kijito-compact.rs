//! kijito-compact: request the host's native compaction through the adapter
//! that owns the session (docs/adapters.md, docs/protocol.md §9).

use kijito_protocol::cli::{self, Args, Command, Tool};
use kijito_protocol::command;
use kijito_protocol::ids::{AbsPath, SessionId};
use kijito_protocol::Result;

const HELP: &str = "kijito-compact: the compaction adapters of kijito-qa (docs/adapters.md)

  kijito-compact request --session-id S --data-dir ABS
      After `qa-gate record`: record the one compaction request of this pass
      and let the adapter that owns the session (a pinned tmux pane, or
      `kijito-compact codex`) type/send /compact once the turn has ended.
      Prints one line {\"type\":\"kijito.compaction.requested\",...}.
      Fails with kijito_compact_failed:no_safe_trigger when no adapter owns
      the session: then ask the user to run /compact.
  kijito-compact status --session-id S --data-dir ABS
      Print the request's state as JSON (read-only).
  kijito-compact worker --session-id S --data-dir ABS --nonce N
      Internal: the detached tmux worker `request` starts.
";

const TOOL: Tool = Tool {
    name: "kijito-compact",
    code_name: "compact",
    help: HELP,
    commands: &[
        Command { name: "request", flags: command::KIJITO_COMPACT_REQUEST_FLAGS },
        Command { name: "status", flags: command::KIJITO_COMPACT_STATUS_FLAGS },
        Command { name: "worker", flags: command::KIJITO_COMPACT_WORKER_FLAGS },
    ],
};

fn main() {
    std::process::exit(cli::main(&TOOL, run))
}

fn run(args: Args) -> Result<i32> {
    let session: SessionId = args.required("--session-id")?;
    let data: AbsPath = args.required("--data-dir")?;
    match args.subcommand.as_str() {
        "request" => {
            let exe = std::env::current_exe().map_err(|e| kijito_protocol::Error::new(kijito_compact::codes::WORKER_SPAWN_FAILED, e.to_string()))?;
            let line = kijito_compact::request(&data, &session, &exe, kijito_gate::now_ms())?;
            cli::print_stdout(&format!("{line}\n"))?;
            Ok(0)
        }
        "status" => {
            let v = kijito_compact::status(&data, &session)?;
            cli::print_stdout(&format!("{v}\n"))?;
            Ok(0)
        }
        "worker" => {
            let nonce: String = args.required("--nonce")?;
            kijito_compact::run_worker(&data, &session, &nonce)?;
            Ok(0)
        }
        _ => Err(kijito_protocol::Error::usage("unknown_subcommand", "see --help")),
    }
}
