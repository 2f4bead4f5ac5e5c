//! The `qa-gate` command line (bins/qa-gate.rs is its thin main): record the
//! one-use QA pass, invalidate it, show status, and check a helper command
//! line against the docs/protocol.md §8 grammar.

use crate::{self as gate, record::invalidated_line, QaDir, RecordRequest};
use kijito_cli as cli;
use kijito_protocol::argv::{Args, Command, Tool};
use kijito_protocol::command::{self, HelperDir};
use kijito_protocol::ids::{AbsPath, Digest, MemoryId, SessionId};
use kijito_protocol::Result;
use std::ffi::OsString;

pub const HELP: &str = "qa-gate: the QA gate of kijito-qa (docs/protocol.md §7)

  qa-gate record --session-id S --transcript ABS [--data-dir ABS] --pointer-id N
                 --pointer-digest D --cold-boot-report ABS --cold-boot-report ABS
                 [--token-file F]
      Read the live pointer once (it must still have digest D), validate two
      green cold-boot reports written by the installed pointer-snapshot, and
      write the one-use pass. The only stdout line is the ready signal
      (kijito.compaction.ready).
  qa-gate invalidate --session-id S [--data-dir ABS]
      Remove this session's pass, ticket, attempt and pending re-entry record.
  qa-gate status --session-id S [--data-dir ABS] [--transcript ABS]
      Print what exists for the session and whether its pass would be
      accepted. Read-only: creates nothing.

  The data dir is --data-dir, else the config's dataDir, else
  ~/.cache/kijito-qa (as for the hooks).
  qa-gate check-command '<command line>'
      Print the PreToolUse guard's verdict on the line (allow or deny). Exit 0
      if the line is a valid helper command of this installed root, else 1
      with kijito_qa_gate_failed:<code>.
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

/// Reads the live pointer's digest once (pointer id, optional token file):
/// given by the binary, which may use the HTTP client.
pub type LiveRead<'a> = &'a dyn Fn(MemoryId, Option<&AbsPath>) -> Result<Digest>;

/// The whole `qa-gate` run on `argv` (without the program name):
/// `check-command` takes its one line verbatim (it is not a flag list);
/// everything else goes through the shared parser. The helper directory is
/// the running executable's.
pub fn main(argv: Vec<OsString>, live: LiveRead<'_>) -> i32 {
    if argv.first().map(|a| a == "check-command").unwrap_or(false) {
        return check_command(&argv[1..], &cli::helper_dir());
    }
    cli::main_args(&TOOL, argv, |args| run(args, live))
}

/// `check-command`'s answer on one line.
#[derive(Debug)]
pub enum CheckAnswer {
    /// A valid helper command of this installed root: `allow`, exit 0.
    Helper,
    /// Denied by the guard: `deny`, and why.
    Deny(kijito_protocol::Error),
    /// The line reaches no kijito-qa executable: `allow` (the guard lets it
    /// run), but it is not a helper command either; why not.
    Unrelated(kijito_protocol::Error),
}

/// The guard's verdict on the one argument (the same function the
/// PreToolUse hook uses), for the installed root `dir`.
pub fn check_answer(rest: &[OsString], dir: &Result<HelperDir>) -> Result<CheckAnswer> {
    let [line] = rest else {
        return Err(kijito_protocol::Error::usage(
            kijito_protocol::codes::cli::CHECK_COMMAND_USAGE,
            "check-command takes exactly one argument: the command line",
        ));
    };
    let line = line.to_str().ok_or_else(|| kijito_protocol::Error::new(command::codes::CONTROL, "command is not UTF-8"))?;
    Ok(match command::guard_line(line, dir.as_ref().ok()) {
        command::Verdict::Helper(_) => CheckAnswer::Helper,
        command::Verdict::Deny(e) => CheckAnswer::Deny(e),
        // Not a helper command; the guard lets such a line run. The code
        // says why it is not one.
        command::Verdict::Unrelated => {
            CheckAnswer::Unrelated(match dir.as_ref().map_err(Clone::clone).and_then(|d| command::check_command(line, d).map(|_| ())) {
                Err(e) => e,
                Ok(()) => kijito_protocol::Error::new(command::codes::UNKNOWN_HELPER, "not a helper command"),
            })
        }
    })
}

/// `qa-gate check-command`: stdout `allow` or `deny`; exit 0 only for a
/// valid helper command of this installed root, else the failure on stderr.
pub fn check_command(rest: &[OsString], dir: &Result<HelperDir>) -> i32 {
    let answer = match check_answer(rest, dir) {
        Ok(a) => a,
        Err(e) => {
            cli::report_failure(&TOOL, &e);
            return e.exit_status();
        }
    };
    let word = if matches!(answer, CheckAnswer::Deny(_)) { "deny" } else { "allow" };
    if cli::print_stdout(&format!("{word}\n")).is_err() {
        return 1;
    }
    match answer {
        CheckAnswer::Helper => {
            eprintln!("the command is a valid helper command of this installed root");
            0
        }
        CheckAnswer::Deny(e) => {
            cli::report_failure(&TOOL, &e);
            e.exit_status()
        }
        CheckAnswer::Unrelated(e) => {
            cli::report_failure(&TOOL, &e);
            eprintln!("the line reaches no kijito-qa executable: the PreToolUse guard lets it run, but it is not a helper command");
            e.exit_status()
        }
    }
}

/// `--data-dir`, else the config's `dataDir`, else the default: the hooks'
/// rule without a host variable (docs/configuration.md).
fn data_dir(args: &Args) -> Result<AbsPath> {
    let flag: Option<AbsPath> = args.optional("--data-dir")?;
    let config = match &flag {
        Some(_) => None,
        None => Some(kijito_files::config::Config::load()?),
    };
    kijito_files::datadir::resolve(flag.as_ref(), None, config.as_ref())
}

pub fn run(args: Args, live: LiveRead<'_>) -> Result<i32> {
    let now = gate::now_ms();
    match args.subcommand.as_str() {
        "record" => {
            let data_dir = data_dir(&args)?;
            let req = RecordRequest {
                session_id: args.required("--session-id")?,
                transcript: args.required("--transcript")?,
                data_dir,
                pointer_id: args.required("--pointer-id")?,
                pointer_digest: args.required("--pointer-digest")?,
                reports: args.all("--cold-boot-report")?,
            };
            if req.reports.len() != 2 {
                return Err(kijito_protocol::Error::usage(
                    kijito_protocol::codes::cli::MISSING_FLAG,
                    "--cold-boot-report is required twice",
                ));
            }
            let token: Option<AbsPath> = args.optional("--token-file")?;
            let evidence = || {
                Ok(gate::Evidence {
                    live_pointer_digest: live(req.pointer_id, token.as_ref())?,
                    installed_verifier: gate::installed_verifier(&cli::helper_dir()?)?,
                })
            };
            let ready = gate::record(&req, evidence, now)?;
            kijito_files::journal::event(
                req.data_dir.as_path(),
                &ready.pass.session_id,
                kijito_files::journal::Kind::PassRecorded,
                ready.journal_fields(),
            );
            cli::print_stdout(&format!("{}\n", ready.signal))?;
            eprintln!(
                "QA pass recorded for session {} (pointer {}, snapshot {}); it is valid for 30 minutes and one compaction.",
                ready.pass.session_id, ready.pass.pointer_id, ready.pass.snapshot_digest
            );
            match &ready.boots {
                gate::witness::Boots::Witnessed { agents } => {
                    eprintln!("bootsWitnessed: true: the PreToolUse hook saw the two cold boots run by two distinct subagents ({}, {}).", agents[0], agents[1])
                }
                gate::witness::Boots::SkillOnly => eprintln!(
                    "bootsWitnessed: false: no PreToolUse hook witnessed this session's cold boots, so that they ran in fresh subagents rests on the skill alone (the re-entry will say so)."
                ),
            }
            Ok(0)
        }
        "invalidate" => {
            let session: SessionId = args.required("--session-id")?;
            let qa = QaDir::open(&data_dir(&args)?)?;
            let n = gate::invalidate(&qa, &session)?;
            cli::print_stdout(&format!("{}\n", invalidated_line(&session, n)))?;
            Ok(0)
        }
        "status" => {
            let session: SessionId = args.required("--session-id")?;
            let transcript: Option<AbsPath> = args.optional("--transcript")?;
            let status = gate::status_of(&data_dir(&args)?, &session, transcript.as_ref(), now);
            cli::print_stdout(&format!("{status}\n"))?;
            Ok(0)
        }
        _ => Err(kijito_protocol::Error::usage(kijito_protocol::codes::cli::UNKNOWN_SUBCOMMAND, "see --help")),
    }
}
