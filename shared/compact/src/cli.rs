//! The `kijito-compact` command line: argv through the shared parser, one
//! library call per subcommand. The Codex app-server adapter lives in its
//! own crate (`kijito-compact-codex`); the binary hands it in as
//! [`CodexAdapter`], so this crate links none of it.

use kijito_cli as cli;
use kijito_protocol::argv::{self, Args, Command, Flag, Tool};
use kijito_protocol::command;
use kijito_protocol::ids::{AbsPath, SessionId};
use kijito_protocol::Result;

pub const HELP: &str = "kijito-compact: the compaction adapters of kijito-qa (docs/adapters.md)

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
  kijito-compact codex [--data-dir ABS] [--message-log ABS] [--codex ABS] [--stdio-client] [-- CODEX_ARGS...]
      The Codex app-server adapter: runs `codex app-server` as its child,
      serves a private unix socket and starts the TUI as
      `codex --remote unix://SOCK CODEX_ARGS...` in the foreground; compacts
      a pinned thread (thread/compact/start) when `kijito-compact request`
      asked for it and the thread is idle. --stdio-client: headless, the
      client speaks JSON lines on this process's stdin/stdout (no TUI).
      --message-log: every JSON-RPC message with its direction (new 0600 file).
";

pub const CODEX_FLAGS: &[Flag] =
    &[Flag::value("--data-dir"), Flag::value("--message-log"), Flag::value("--codex"), Flag::switch("--stdio-client")];

pub const TOOL: Tool = Tool {
    name: "kijito-compact",
    code_name: "compact",
    help: HELP,
    commands: &[
        Command { name: "request", flags: command::KIJITO_COMPACT_REQUEST_FLAGS },
        Command { name: "status", flags: command::KIJITO_COMPACT_STATUS_FLAGS },
        Command { name: "worker", flags: command::KIJITO_COMPACT_WORKER_FLAGS },
        Command { name: "codex", flags: CODEX_FLAGS },
    ],
};

/// What `kijito-compact codex` was given (flags before `--`, and the words
/// after it for the TUI).
#[derive(Debug, Clone)]
pub struct CodexArgs {
    pub data_dir: Option<AbsPath>,
    pub message_log: Option<AbsPath>,
    pub codex: Option<AbsPath>,
    pub stdio_client: bool,
    pub codex_args: Vec<std::ffi::OsString>,
}

/// Runs the Codex app-server adapter; returns the exit status.
pub type CodexAdapter = fn(CodexArgs) -> Result<i32>;

/// The whole binary: returns the process exit status.
pub fn main(adapter: CodexAdapter) -> i32 {
    main_args(std::env::args_os().skip(1).collect(), adapter)
}

/// [`main`] on given arguments (without the program name).
pub fn main_args(argv: Vec<std::ffi::OsString>, adapter: CodexAdapter) -> i32 {
    if argv.first().is_some_and(|a| a == "codex") {
        return codex(argv, adapter);
    }
    cli::main_args(&TOOL, argv, run)
}

fn codex_args(args: &Args, tail: Vec<std::ffi::OsString>) -> Result<CodexArgs> {
    Ok(CodexArgs {
        data_dir: args.optional("--data-dir")?,
        message_log: args.optional("--message-log")?,
        codex: args.optional("--codex")?,
        stdio_client: args.has("--stdio-client"),
        codex_args: tail,
    })
}

/// `codex`: the flags before `--` go through the shared parser; the words
/// after it go to the TUI unchanged.
fn codex(argv: Vec<std::ffi::OsString>, adapter: CodexAdapter) -> i32 {
    let (head, tail) = match argv.iter().position(|a| a == "--") {
        Some(i) => (argv[..i].to_vec(), argv[i + 1..].to_vec()),
        None => (argv, vec![]),
    };
    let args = match argv::parse(&TOOL, head) {
        Ok(argv::Parsed::Run(a)) => a,
        Ok(argv::Parsed::Help) => {
            let _ = cli::print_stdout(HELP);
            return 0;
        }
        Ok(argv::Parsed::Version) => {
            let _ = cli::print_stdout(&format!("kijito-compact {}\n", env!("CARGO_PKG_VERSION")));
            return 0;
        }
        Err(e) => {
            cli::report_failure(&TOOL, &e);
            return 2;
        }
    };
    match codex_args(&args, tail).and_then(adapter) {
        Ok(status) => status,
        Err(e) => {
            cli::report_failure(&TOOL, &e);
            e.exit_status()
        }
    }
}

fn run(args: Args) -> Result<i32> {
    let session: SessionId = args.required("--session-id")?;
    let data: AbsPath = args.required("--data-dir")?;
    match args.subcommand.as_str() {
        "request" => {
            let exe = std::env::current_exe().map_err(|e| kijito_protocol::Error::new(crate::codes::WORKER_SPAWN_FAILED, e.to_string()))?;
            let line = crate::request(&data, &session, &exe, kijito_gate::now_ms())?;
            cli::print_stdout(&format!("{line}\n"))?;
            Ok(0)
        }
        "status" => {
            let v = crate::status(&data, &session)?;
            cli::print_stdout(&format!("{v}\n"))?;
            Ok(0)
        }
        "worker" => {
            let nonce: String = args.required("--nonce")?;
            crate::run_worker(&data, &session, &nonce)?;
            Ok(0)
        }
        _ => Err(kijito_protocol::Error::usage(kijito_protocol::codes::cli::UNKNOWN_SUBCOMMAND, "see --help")),
    }
}
