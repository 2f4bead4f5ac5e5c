//! The `kijito-local` command line (bins/kijito-local.rs is its thin main):
//! `serve`, `mcp` and `demo`.

use crate::{self as server, lease, Config};
use kijito_cli as cli;
use kijito_protocol::argv::{Args, Command, Flag, Tool};
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

  kijito-local mcp --db FILE [--pointer-id N] [--lock-message-id N]
                   [--persona P] [--project J] [--reap-after SECONDS]

mcp:
  A Model Context Protocol server on stdin/stdout (JSON-RPC 2.0, one message
  per line, at most 1 MiB each) over the same SQLite store as serve (both
  may run at once). Tools: kijito_startup, kijito_recall, kijito_get,
  kijito_recent, kijito_remember, kijito_correct, kijito_fade, kijito_update,
  kijito_dream (not available here: an error result), kijito_anchor_audit,
  kijito_wake_check (wake-check's verdict),
  kijito_hive_send, kijito_hive_claim, kijito_hive_release. --pointer-id and
  --lock-message-id (default: pointerId/lockMessageId of the kijito-qa
  config) are refused by kijito_update, kijito_correct and kijito_fade;
  --persona/--project (default: the config's) are the defaults of the
  tools' arguments. Exits 0 at the end of stdin.

  kijito-local demo [--host codex|claude] [--keep]

demo:
  Run the toolkit's main job on the embedded default, with no account and
  no network: a temporary kijito-local on 127.0.0.1, seeded pointer and
  anchors, publish, two context-free verifier boots, record, and a
  compaction in the host's real hook order with the attested re-entry; then
  an eroded anchor turns the verifier red and the next compaction is
  UNATTESTED. Prints a step table; exit 0 only if every step behaved as
  expected. --keep keeps the temporary directory.

  kijito-local view [--listen 127.0.0.1:0] [--open] [--data-dir D] [--db PATH]

view:
  A read-only web viewer of the flight recorder (every session's journal in
  <data-dir>/journal): sessions, a session's timeline with ATTESTED and
  UNATTESTED badges and its context chart, live by Server-Sent Events; with
  --db the configured pointer, any memory and a search. Loopback only; the
  printed URL holds this launch's secret (exchanged for a cookie); GET
  only. --open also asks the desktop (xdg-open) to open the URL.

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

pub const MCP_FLAGS: &[Flag] = &[
    Flag::value("--db"),
    Flag::value("--pointer-id"),
    Flag::value("--lock-message-id"),
    Flag::value("--persona"),
    Flag::value("--project"),
    Flag::value("--reap-after"),
];

pub const VIEW_FLAGS: &[Flag] = &[Flag::value("--listen"), Flag::switch("--open"), Flag::value("--data-dir"), Flag::value("--db")];

pub const TOOL: Tool = Tool {
    name: "kijito-local",
    code_name: "local",
    help: HELP,
    commands: &[
        Command { name: "serve", flags: SERVE_FLAGS },
        Command { name: "mcp", flags: MCP_FLAGS },
        Command { name: "demo", flags: &[Flag::value("--host"), Flag::switch("--keep")] },
        Command { name: "view", flags: VIEW_FLAGS },
    ],
};

/// One `kijito-local` run from parsed argv; returns the exit status.
pub fn run(args: Args) -> Result<i32> {
    match args.subcommand.as_str() {
        "serve" => serve(&args),
        "mcp" => mcp(&args),
        "demo" => demo(&args),
        "view" => view(&args),
        other => Err(Error::usage(kijito_protocol::codes::cli::UNKNOWN_SUBCOMMAND, format!("unknown subcommand {other:?}"))),
    }
}

fn path_flag(args: &Args, name: &str) -> Result<Option<PathBuf>> {
    match args.raw(name) {
        None => Ok(None),
        Some("") => Err(Error::usage(kijito_protocol::codes::ids::PATH, format!("{name} must not be empty"))),
        Some(p) => Ok(Some(PathBuf::from(p))),
    }
}

fn serve(args: &Args) -> Result<i32> {
    let required = |name: &str| {
        path_flag(args, name)?.ok_or_else(|| Error::usage(kijito_protocol::codes::cli::MISSING_FLAG, format!("{name} is required")))
    };
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

#[allow(unsafe_code)]
fn mcp(args: &Args) -> Result<i32> {
    let db = path_flag(args, "--db")?.ok_or_else(|| Error::usage(kijito_protocol::codes::cli::MISSING_FLAG, "--db is required"))?;
    let config = kijito_files::config::Config::load_with_plugin_options()?;
    let id_flag = |name: &str| -> Result<Option<u64>> {
        match args.raw(name) {
            None => Ok(None),
            Some(text) => kijito_protocol::ids::MemoryId::parse(text).map(|id| Some(id.get())).map_err(|e| e.as_usage()),
        }
    };
    let persona = match args.raw("--persona") {
        None => config.persona.as_str().to_owned(),
        Some(p) => kijito_protocol::ids::Persona::parse(p).map_err(|e| e.as_usage())?.as_str().to_owned(),
    };
    let project = match args.raw("--project") {
        None => config.project.clone(),
        Some(p) if !p.is_empty() && p.chars().count() <= 128 && !p.chars().any(char::is_control) && p.trim() == p => p.to_owned(),
        Some(_) => {
            return Err(Error::usage(
                kijito_protocol::codes::cli::INVALID_ARGUMENT,
                "--project must be 1-128 characters, one line, no surrounding whitespace",
            ))
        }
    };
    let reap_after = args.optional::<u64>("--reap-after")?.unwrap_or(lease::DEFAULT_REAP_AFTER_SECONDS);
    let options = crate::mcp::Options {
        pointer_id: id_flag("--pointer-id")?.or(config.pointer_id.map(|p| p.get())),
        lock_message_id: id_flag("--lock-message-id")?.or(config.lock_message_id.map(|l| l.get())),
        persona,
        project,
        reap_after_ms: (reap_after.min(1 << 40) * 1000) as i64,
        workspace: std::env::current_dir().ok(),
        data_dir: kijito_files::datadir::resolve(None, None, Some(&config)).ok(),
        live: Some(live_probe),
    };
    // Owner-only for everything SQLite creates beside the database (-wal, -shm).
    // SAFETY: umask has no preconditions.
    unsafe {
        libc::umask(0o077);
    }
    let store = crate::store::Store::open(&db)?;
    let server = crate::mcp::Mcp::new(store, options);
    let stdin = std::io::stdin();
    let stdout = std::io::stdout();
    crate::mcp::serve(&server, &mut stdin.lock(), &mut stdout.lock())?;
    Ok(0)
}

/// `kijito_wake_check` with `live`: the recorded expectation checked through
/// the Kijito client (as the wake-check binary's --live).
fn live_probe(r: &kijito_wake::Recorded) -> Result<()> {
    kijito_client::snapshot::verify_recorded(r.pointer_id, r.lock_message_id, &r.pointer_digest, &r.snapshot_digest)
}

/// `kijito-local view`: print the URL (with this launch's secret), serve until killed.
fn view(args: &Args) -> Result<i32> {
    let config = kijito_files::config::Config::load().ok();
    let flag: Option<kijito_protocol::ids::AbsPath> = args.optional("--data-dir")?;
    let data = kijito_files::datadir::resolve(flag.as_ref(), None, config.as_ref())?;
    let listen = server::parse_listen(args.raw("--listen").unwrap_or("127.0.0.1:0"))?;
    let pointer = config.as_ref().and_then(|c| c.pointer_id).map(|p| p.get());
    let viewer = crate::view::Viewer::bind(&crate::view::options(listen, data.as_path(), path_flag(args, "--db")?, pointer))?;
    let url = viewer.url()?;
    cli::print_stdout(&format!("kijito-local view on {url}\n"))?;
    if args.has("--open") {
        // The desktop's opener, if any; the URL is printed either way.
        let _ = std::process::Command::new("xdg-open")
            .arg(&url)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn();
    }
    viewer.run()?;
    Ok(0)
}

fn demo(args: &Args) -> Result<i32> {
    let host = match args.raw("--host") {
        None => kijito_protocol::host::HostKind::Codex,
        Some(h) => kijito_protocol::host::HostKind::parse(h).map_err(|e| e.as_usage())?,
    };
    let exe = std::env::current_exe().map_err(|e| Error::new(crate::demo::codes::DEMO_BIN_DIR_UNKNOWN, e.to_string()))?;
    let bin = exe.parent().ok_or_else(|| Error::new(crate::demo::codes::DEMO_BIN_DIR_UNKNOWN, "the executable has no directory"))?;
    let ok = crate::demo::run(bin, crate::demo::Options { host, keep: args.has("--keep") }, Box::new(std::io::stdout()))?;
    Ok(if ok { 0 } else { 1 })
}
