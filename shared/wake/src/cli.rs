//! The `wake-check` command line (bins/wake-check.rs is its thin main):
//! flags, environment (MEMORY_LATCH_HMAC_KEY_FILE, MEMORY_LATCH_BOOT_ID_FILE),
//! the run and what it prints.

use crate::LiveProbe;
use kijito_cli as cli;
use kijito_files::{config, datadir};
use kijito_latch as latch;
use kijito_protocol::argv::{Args, Command, Flag, Tool};
use kijito_protocol::clock;
use kijito_protocol::ids::{AbsPath, SessionId};
use kijito_protocol::Result;
use std::path::PathBuf;

/// Stable codes of the command line (the `wake` area; the findings are
/// [`crate::codes`]).
pub mod codes {
    kijito_protocol::codes! {
        WORKSPACE_INVALID WorkspaceInvalid = "workspace_invalid",
    }
}

pub const FLAGS: &[Flag] = &[
    Flag::value("--workspace"),
    Flag::value("--data-dir"),
    Flag::value("--session-id"),
    Flag::switch("--live"),
    Flag::value("--long-sleep-after"),
    Flag::switch("--json"),
    Flag::switch("--hook"),
];

pub const TOOL: Tool = Tool {
    name: "wake-check",
    code_name: "wake_check",
    help: "\
wake-check [--workspace DIR] [--data-dir DIR] [--session-id S] [--live]
           [--long-sleep-after SECONDS] [--json | --hook]

After a long sleep or a cold boot: verify the memory-latch chain, its lock,
pending consent tokens and Silent Witness state, the QA private state and the
recorded pointer expectation (and with --live the pointer and anchors on the
server), detect a long sleep, a changed boot id or a clock that went back,
and answer with a trust mode. In degraded mode a trustworthy latch gets one
visible degraded_mode entry that locks consent until the user reviews: every
later entry keeps it locked (the agent's checkpoint does not end it); only the
user's own message with the token of `memory-latch review` does.

Checks (docs/wake-check.md, Checks; each pass, finding or skipped):
  latch_chain       the whole memory-latch chain verifies
  latch_checkpoint  consistency from the last saved checkpoint to now (an
                    RFC 6962 proof: history rewritten or rolled back since it
                    is latch_checkpoint_inconsistent); with
                    MEMORY_LATCH_PUBLIC_KEY_FILE only a user-signed one counts.
                    To check from a checkpoint you saved yourself:
                    memory-latch verify --since-checkpoint FILE
  silent_witness    the latch is not in Silent Witness
  latch_lock        no stale manifest lock, no interrupted write
  consent_tokens    expired or still-open consent tokens
  qa_dir            the QA data dir and its files are owner-only
  qa_pass, qa_ticket, qa_attempt, qa_reentry   stale QA state files
  pointer_record    the recorded pointer expectation parses
  live_pointer      (--live) the pointer and anchors on the server
  clock             the clock did not go back
  long_sleep        time since the newest verified record
  boot_id           the boot id changed since the verified head

  --workspace ABS           where .memory-latch lives (default: current dir)
  --data-dir ABS            QA data dir (default: config dataDir, else ~/.cache/kijito-qa)
  Paths are absolute, as for every kijito-qa helper.
  --session-id S            check only this session's QA files
  --live                    also verify the recorded pointer against the server
  --long-sleep-after SECS   long-sleep threshold (default 86400)
  --json                    print the kijito.wake-check/v1 report
  --hook                    SessionStart's local run (session-hook runs it; no
                            --live, no --json): print the kijito.wake-check.hook/v1
                            answer; without --workspace no latch is checked

Exit status: 0 full_trust, 10 cautious, 20 degraded, 1 could not run, 2 usage.
Environment: MEMORY_LATCH_HMAC_KEY_FILE (hmac key of the latch),
MEMORY_LATCH_BOOT_ID_FILE (test hook: where the boot id is read).
",
    commands: &[Command { name: "", flags: FLAGS }],
};

fn env_path(name: &str) -> Option<PathBuf> {
    std::env::var_os(name).filter(|v| !v.is_empty()).map(PathBuf::from)
}

/// The options of one run, built the same way by every caller (this CLI and
/// `kijito-local mcp`'s `kijito_wake_check`): the latch's hmac key, the
/// user's public key and the boot id file from the environment
/// (MEMORY_LATCH_HMAC_KEY_FILE, MEMORY_LATCH_PUBLIC_KEY_FILE,
/// MEMORY_LATCH_BOOT_ID_FILE), the helpers next to the running binary.
pub fn options(
    workspace: PathBuf,
    data_dir: Option<AbsPath>,
    session: Option<SessionId>,
    long_sleep_after_s: u64,
    live: Option<LiveProbe>,
) -> crate::Options {
    let mut opts = crate::Options::new(Some(workspace), clock::now_ms());
    opts.data_dir = data_dir;
    opts.session = session;
    opts.long_sleep_after_s = long_sleep_after_s;
    opts.hmac_key_file = env_path(latch::HMAC_KEY_ENV);
    opts.signed_checkpoint = env_path(latch::checkpoint::PUBLIC_KEY_ENV).map(crate::SignedCheckpoint::from_key_file);
    if let Some(p) = env_path("MEMORY_LATCH_BOOT_ID_FILE") {
        opts.boot_id_file = p;
    }
    opts.live = live;
    opts.helpers = std::env::current_exe().ok().and_then(|p| p.parent().map(|d| d.to_owned()));
    opts
}

/// A live check answered (`wake-check --live`, and kijito-local's MCP
/// `kijito_wake_check` with `live`: the same run): the wake hold of this
/// workspace (set by SessionStart's local checks) lifts, or stays as
/// cautious (docs/protocol.md §8a), and the answer is one line of the
/// journal of the run's session, else of the session whose SessionStart set
/// the hold (§13; neither: no line). A hold that cannot be updated stays
/// (said on stderr).
pub fn live_answered(opts: &crate::Options, report: &crate::Report) {
    let mut session = opts.session.clone();
    if let (Some(qa), Some(ws)) =
        (opts.data_dir.as_ref().and_then(|d| kijito_gate::QaDir::existing(d).ok().flatten()), opts.workspace.as_ref())
    {
        session = session.or_else(|| crate::hold::session_of(qa.path().as_path(), ws));
        if let Err(e) = crate::hold::answered(&qa, ws, report, session.as_ref(), report.checked_at_ms) {
            eprintln!("wake-check: the wake hold could not be updated ({}: {})", e.code(), e.message());
        }
    }
    if let (Some(d), Some(s)) = (opts.data_dir.as_ref(), session.as_ref()) {
        kijito_files::journal::event(d.as_path(), s, kijito_files::journal::Kind::WakeCheckLive, crate::live_line(report));
    }
}

/// Before a live check runs (`--live`, the MCP tool's `live`): a session it
/// names must be one a hook journals in, in a data dir a hook journals in
/// (`kijito_files::journal::named_target`), so the answer (the hold's
/// session and the journal line) never goes to a made-up session, the
/// user's journal or a directory that is not a data dir; nothing runs
/// otherwise (docs/protocol.md §13).
pub fn live_target(opts: &crate::Options) -> Result<()> {
    match (&opts.session, &opts.data_dir) {
        (Some(s), Some(d)) => kijito_files::journal::named_target(d.as_path(), Some(s)),
        _ => Ok(()),
    }
}

/// One `wake-check` run from parsed argv; `live` is the `--live` probe the
/// binary injects (this crate links no HTTP code). Returns the exit status.
pub fn run(args: &Args, live: LiveProbe) -> Result<i32> {
    let hook = args.has("--hook");
    if hook && (args.has("--live") || args.has("--json")) {
        return Err(kijito_protocol::Error::usage(
            kijito_protocol::codes::cli::CONFLICTING_FLAGS,
            "--hook is SessionStart's local run: not with --live or --json",
        ));
    }
    // One rule for every path flag of the toolkit: absolute.
    let workspace_flag = args.optional::<kijito_protocol::ids::AbsPath>("--workspace")?;
    let workspace = match &workspace_flag {
        Some(w) => w.as_path().to_owned(),
        None => std::env::current_dir()
            .map_err(|e| kijito_protocol::Error::new(codes::WORKSPACE_INVALID, format!("cannot read the current directory: {e}")))?,
    };
    let data_flag: Option<AbsPath> = args.optional("--data-dir")?;
    let session: Option<SessionId> = args.optional("--session-id")?;
    let long_sleep: Option<u64> = args.optional("--long-sleep-after")?;
    if long_sleep == Some(0) {
        return Err(kijito_protocol::Error::usage(
            kijito_protocol::codes::cli::INVALID_NUMBER,
            "--long-sleep-after must be at least 1 second",
        ));
    }
    let json = args.has("--json");
    let config = config::Config::load().ok();
    let data_dir = datadir::resolve(data_flag.as_ref(), None, config.as_ref()).ok();
    let mut opts =
        options(workspace, data_dir, session, long_sleep.unwrap_or(crate::DEFAULT_LONG_SLEEP_S), args.has("--live").then_some(live));
    if hook {
        // The hook's cwd is the workspace; without one only the QA state is checked.
        opts.workspace = workspace_flag.map(|w| w.as_path().to_owned());
        let (report, entry) = crate::run(&opts, true)?;
        cli::print_stdout(&format!("{}\n", crate::hook_answer(&report, &entry)))?;
        return Ok(report.mode.exit_status());
    }
    if args.has("--live") {
        live_target(&opts)?;
    }
    let (report, entry) = crate::run(&opts, true)?;
    if args.has("--live") {
        live_answered(&opts, &report);
    }
    if json {
        cli::print_stdout(&format!("{}\n", report.to_json()))?;
    } else {
        cli::print_stdout(&format!("{}{}\n", report.human(), entry.describe()))?;
    }
    if json && entry != crate::DegradedEntry::NotNeeded {
        eprintln!("wake-check: {}", entry.describe());
    }
    Ok(report.mode.exit_status())
}
