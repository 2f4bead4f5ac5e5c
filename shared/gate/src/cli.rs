//! The `qa-gate` command line (bins/qa-gate.rs is its thin main): record the
//! one-use QA pass, invalidate it, show status, and check a helper command
//! line against the docs/protocol.md §8 grammar.

use kijito_protocol::cli::{self, Args, Command, Tool};
use kijito_protocol::command::{self, HelperDir};
use crate::{self as gate, record::invalidated_line, QaDir, RecordRequest};
use kijito_protocol::ids::{AbsPath, SessionId};
use kijito_protocol::Result;

pub const HELP: &str = "qa-gate: the QA gate of kijito-qa (docs/protocol.md §7)

  qa-gate record --session-id S --transcript ABS --data-dir ABS --pointer-id N
                 --pointer-digest D --cold-boot-report ABS --cold-boot-report ABS
      Validate two green cold-boot reports and write the one-use pass. The only
      stdout line is the ready signal (kijito.compaction.ready).
  qa-gate invalidate --session-id S --data-dir ABS
      Remove this session's pass, ticket, attempt and pending re-entry record.
  qa-gate status --session-id S --data-dir ABS [--transcript ABS]
      Print what exists for the session and whether its pass would be accepted.
  qa-gate check-command '<command line>'
      Exit 0 if the line is a valid helper command of this installed root,
      else 1 with kijito_qa_gate_failed:<code>.
";

pub const TOOL: Tool = Tool {
    name: "qa-gate",
    code_name: "qa_gate",
    help: HELP,
    commands: &[
        Command { name: "record", flags: command::QA_GATE_RECORD_FLAGS },
        Command { name: "invalidate", flags: command::QA_GATE_INVALIDATE_FLAGS },
        Command { name: "status", flags: command::QA_GATE_STATUS_FLAGS },
        Command { name: "check-command", flags: &[] },
    ],
};

/// The whole `qa-gate` run: `check-command` takes its one line verbatim (it
/// is not a flag list); everything else goes through the shared parser.
pub fn main() -> i32 {
    let argv: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    if argv.first().map(|a| a == "check-command").unwrap_or(false) {
        return check_command(&argv[1..]);
    }
    cli::main(&TOOL, run)
}

fn check_line(rest: &[std::ffi::OsString]) -> Result<()> {
    let [line] = rest else {
        return Err(kijito_protocol::Error::usage(kijito_protocol::codes::cli::CHECK_COMMAND_USAGE, "check-command takes exactly one argument: the command line"));
    };
    let line = line.to_str().ok_or_else(|| kijito_protocol::Error::new(command::codes::CONTROL, "command is not UTF-8"))?;
    let dir = HelperDir::current()?;
    command::check_command(line, &dir).map(|_| ())
}

fn check_command(rest: &[std::ffi::OsString]) -> i32 {
    match check_line(rest) {
        Ok(()) => {
            eprintln!("the command is a valid helper command of this installed root");
            0
        }
        Err(e) => {
            cli::report_failure(&TOOL, &e);
            e.exit_status()
        }
    }
}

pub fn run(args: Args) -> Result<i32> {
    let now = gate::now_ms();
    match args.subcommand.as_str() {
        "record" => {
            let req = RecordRequest {
                session_id: args.required("--session-id")?,
                transcript: args.required("--transcript")?,
                data_dir: args.required("--data-dir")?,
                pointer_id: args.required("--pointer-id")?,
                pointer_digest: args.required("--pointer-digest")?,
                reports: args.all("--cold-boot-report")?,
            };
            if req.reports.len() != 2 {
                return Err(kijito_protocol::Error::usage(kijito_protocol::codes::cli::MISSING_FLAG, "--cold-boot-report is required twice"));
            }
            let ready = gate::record(&req, now)?;
            cli::print_stdout(&format!("{}\n", ready.signal))?;
            eprintln!(
                "QA pass recorded for session {} (pointer {}, snapshot {}); it is valid for 30 minutes and one compaction.",
                ready.pass.session_id, ready.pass.pointer_id, ready.pass.snapshot_digest
            );
            Ok(0)
        }
        "invalidate" => {
            let session: SessionId = args.required("--session-id")?;
            let data: AbsPath = args.required("--data-dir")?;
            let qa = QaDir::open(&data)?;
            let n = gate::invalidate(&qa, &session)?;
            cli::print_stdout(&format!("{}\n", invalidated_line(&session, n)))?;
            Ok(0)
        }
        "status" => {
            let session: SessionId = args.required("--session-id")?;
            let data: AbsPath = args.required("--data-dir")?;
            let transcript: Option<AbsPath> = args.optional("--transcript")?;
            let qa = QaDir::open(&data)?;
            let status = gate::status(&qa, &session, transcript.as_ref(), now);
            cli::print_stdout(&format!("{status}\n"))?;
            Ok(0)
        }
        _ => Err(kijito_protocol::Error::usage(kijito_protocol::codes::cli::UNKNOWN_SUBCOMMAND, "see --help")),
    }
}
