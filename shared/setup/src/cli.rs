//! The `kijito-setup` command line (bins/kijito-setup.rs is its thin main):
//! write your own owner-only config for a real pointer, after verifying it
//! (docs/first-pointer.md).

use crate::setup::{self, Mode, SetupRequest};
use kijito_files::config::{user_path, ApiUrl};
use kijito_protocol::cli::{self, Args, Command, Flag, Tool};
use kijito_protocol::codes::cli as cli_codes;
use kijito_protocol::ids::AbsPath;
use kijito_protocol::{Error, Result};

pub const FLAGS: &[Flag] = &[
    Flag::value("--api-url"),
    Flag::value("--token-file"),
    Flag::value("--pointer-id"),
    Flag::value("--lock-message-id"),
    Flag::switch("--create"),
    Flag::value("--anchor-file"),
    Flag::value("--title"),
    Flag::switch("--force"),
];

pub const TOOL: Tool = Tool {
    name: "kijito-setup",
    code_name: "setup",
    help: "\
kijito-setup [--api-url URL] [--token-file ABS]
             (--pointer-id N --lock-message-id M | --create --anchor-file ABS --title TEXT)
             [--force]

Write $XDG_CONFIG_HOME/kijito-qa/config.json (default ~/.config/kijito-qa/config.json,
mode 0600) with apiUrl, tokenFile, pointerId and lockMessageId, after checking the
token file (owner-only, one line) and verifying the pointer: it is read (current,
a valid manifest naming this pointer and lock) and its lock's lease is claimed and
released once. An existing config is never replaced without --force.

  --api-url URL        default https://api.kijito.ai (http only to loopback)
  --token-file ABS     default ~/.config/kijito-qa/token
  --create             kijito-local only: create the lock message, one anchor from
                       --anchor-file and the pointer with a valid first manifest
                       titled --title, then configure them

Prints one JSON line (config path, ids, pointer digest; never the token).
Exit 0 ok; 1 with kijito_setup_failed:<code> and what to do; 2 usage.
See docs/first-pointer.md.
",
    commands: &[Command { name: "", flags: FLAGS }],
};

fn path_arg(args: &Args, flag: &str) -> Result<Option<AbsPath>> {
    match args.raw(flag) {
        None => Ok(None),
        Some(t) => user_path(t, flag).map(Some).map_err(|e| Error::usage(cli_codes::INVALID_PATH, e.message().to_owned())),
    }
}

/// One `kijito-setup` run from parsed argv: flags to a [`SetupRequest`],
/// the run, its JSON line and the human sentence. Returns the exit status.
pub fn run(args: Args) -> Result<i32> {
    let api_url = match args.raw("--api-url") {
        None => None,
        Some(u) => Some(ApiUrl::parse(u).map_err(|e| Error::usage(e.code().to_owned(), e.message().to_owned()))?),
    };
    let existing = args.has("--pointer-id") || args.has("--lock-message-id");
    let mode = if args.has("--create") {
        if existing {
            return Err(Error::usage(cli_codes::CONFLICTING_FLAGS, "give either --pointer-id N --lock-message-id M, or --create --anchor-file ABS --title TEXT"));
        }
        let anchor_file = path_arg(&args, "--anchor-file")?.ok_or_else(|| Error::usage(cli_codes::MISSING_FLAG, "--create needs --anchor-file ABS"))?;
        let title: String = args.required("--title")?;
        Mode::Create { anchor_file, title }
    } else {
        if args.has("--anchor-file") || args.has("--title") {
            return Err(Error::usage(cli_codes::CONFLICTING_FLAGS, "--anchor-file and --title go with --create"));
        }
        Mode::Existing { pointer_id: args.required("--pointer-id")?, lock_message_id: args.required("--lock-message-id")? }
    };
    let req = SetupRequest { api_url, token_file: path_arg(&args, "--token-file")?, mode, force: args.has("--force") };
    let outcome = setup::run(&req)?;
    cli::print_stdout(&format!("{}\n", outcome.to_json()))?;
    eprintln!(
        "kijito-setup: wrote {} (0600): pointer {}, lock {}; the pointer was read and its lease claimed and released once.",
        outcome.config_path.display(),
        outcome.pointer_id,
        outcome.lock_message_id
    );
    Ok(0)
}
