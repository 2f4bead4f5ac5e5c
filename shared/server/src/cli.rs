//! The `kijito-local` command line (bins/kijito-local.rs is its thin main):
//! `serve` and `demo`.

use crate::{self as server, lease, Config};
use kijito_protocol::cli::{self, Args, Command, Flag, Tool};
use kijito_protocol::{Error, Result};
use std::path::PathBuf;

pub const HELP: &str = "\
kijito-local: a Kijito-compatible memory server on loopback (SQLite store)

Usage:
  kijito-local serve --db FILE --token-file FILE [--listen 127.0.0.1:0]
                     [--reap-after SECONDS] [--faults FILE] [--request-log FILE]

serve:
  --db FILE            SQLite database (created owner-only if missing)
  --token-file FILE    bearer token file (owner-only, one line)
  --listen ADDR        loopback IP:PORT to listen on (default 127.0.0.1:0)
  --reap-after SECS    seconds after a lease expires before it is reaped
                       (default 21600)
  --faults FILE        fault-injection rules for tests (JSON list, re-read
                       on every request)
  --request-log FILE   append one JSON line per request

  kijito-local demo [--host codex|claude] [--keep]

demo:
  Run the toolkit's main job on the embedded default, with no account and
  no network: a temporary kijito-local on 127.0.0.1, seeded pointer and
  anchors, publish, two context-free verifier boots, record, and a
  compaction in the host's real hook order with the attested re-entry; then
  an eroded anchor turns the verifier red and the next compaction is
  UNATTESTED. Prints a step table; exit 0 only if every step behaved as
  expected. --keep keeps the temporary directory.

The first stdout line of serve is `kijito-local listening on http://<addr>`.
SIGTERM or SIGINT stops the server cleanly. See docs/kijito-local.md.
";

pub const SERVE_FLAGS: &[Flag] = &[
    Flag::value("--db"),
    Flag::value("--token-file"),
    Flag::value("--listen"),
    Flag::value("--reap-after"),
    Flag::value("--faults"),
    Flag::value("--request-log"),
];

pub const TOOL: Tool = Tool {
    name: "kijito-local",
    code_name: "local",
    help: HELP,
    commands: &[
        Command { name: "serve", flags: SERVE_FLAGS },
        Command { name: "demo", flags: &[Flag::value("--host"), Flag::switch("--keep")] },
    ],
};

/// One `kijito-local` run from parsed argv; returns the exit status.
pub fn run(args: Args) -> Result<i32> {
    match args.subcommand.as_str() {
        "serve" => serve(&args),
        "demo" => demo(&args),
        other => Err(Error::usage(kijito_protocol::codes::cli::UNKNOWN_SUBCOMMAND, format!("unknown subcommand {other:?}"))),
    }
}

fn path_flag(args: &Args, name: &str) -> Result<Option<PathBuf>> {
    match args.raw(name) {
        None => Ok(None),
        Some("") => Err(Error::usage(kijito_protocol::codes::cli::INVALID_PATH, format!("{name} must not be empty"))),
        Some(p) => Ok(Some(PathBuf::from(p))),
    }
}

fn serve(args: &Args) -> Result<i32> {
    let required = |name: &str| path_flag(args, name)?.ok_or_else(|| Error::usage(kijito_protocol::codes::cli::MISSING_FLAG, format!("{name} is required")));
    let config = Config {
        db: required("--db")?,
        token_file: required("--token-file")?,
        listen: server::parse_listen(args.raw("--listen").unwrap_or("127.0.0.1:0"))?,
        reap_after_seconds: args.optional::<u64>("--reap-after")?.unwrap_or(lease::DEFAULT_REAP_AFTER_SECONDS),
        faults: path_flag(args, "--faults")?,
        request_log: path_flag(args, "--request-log")?,
    };
    server::serve_until_signal(&config, |addr| cli::print_stdout(&format!("kijito-local listening on http://{addr}\n")))?;
    Ok(0)
}

fn demo(args: &Args) -> Result<i32> {
    let host = match args.raw("--host") {
        None => kijito_files::datadir::HostKind::Codex,
        Some(h) => kijito_files::datadir::HostKind::parse(h).map_err(|e| e.as_usage())?,
    };
    let exe = std::env::current_exe().map_err(|e| Error::new(kijito_protocol::codes::local::DEMO_BIN_DIR_UNKNOWN, e.to_string()))?;
    let bin = exe.parent().ok_or_else(|| Error::new(kijito_protocol::codes::local::DEMO_BIN_DIR_UNKNOWN, "the executable has no directory"))?;
    let ok = crate::demo::run(bin, crate::demo::Options { host, keep: args.has("--keep") }, Box::new(std::io::stdout()))?;
    Ok(if ok { 0 } else { 1 })
}
