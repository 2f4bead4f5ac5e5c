//! The `kijito-setup` command line (bins/kijito-setup.rs is its thin main):
//! write your own owner-only config for a real pointer, after verifying it
//! (docs/first-pointer.md).

use crate::setup::{self, Mode, SetupRequest};
use crate::{mcp, permissions, sandbox};
use kijito_cli as cli;
use kijito_files::config::{user_path, ApiUrl};
use kijito_protocol::argv::{Args, Command, Flag, Tool};
use kijito_protocol::codes::cli as cli_codes;
use kijito_protocol::host::HostKind;
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
    Flag::switch("--allow-helpers"),
    Flag::value("--host"),
    Flag::value("--root"),
    Flag::switch("--write"),
    Flag::switch("--codex-alias"),
    Flag::switch("--mcp"),
    Flag::value("--db"),
    Flag::switch("--mcp-uninstall"),
    Flag::switch("--sandbox"),
    Flag::switch("--uninstall"),
];

pub const TOOL: Tool = Tool {
    name: "kijito-setup",
    code_name: "setup",
    help: "\
kijito-setup [--api-url URL] [--token-file ABS]
             (--pointer-id N --lock-message-id M | --create --anchor-file ABS --title TEXT)
             [--force]
kijito-setup --allow-helpers --host claude|codex [--root ABS] [--write]
kijito-setup --codex-alias [--root ABS]
kijito-setup --mcp --host claude|codex --db ABS [--root ABS] [--write]
kijito-setup --mcp-uninstall --root ABS
kijito-setup --sandbox --host claude|codex [--root ABS] [--write] [--uninstall]

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

--allow-helpers: print the exact allow rules that let an unattended session run
the agent's kijito-qa helper commands (pointer-digest, pointer-publish,
pointer-snapshot, qa-gate record|invalidate|status, kijito-compact
request|status, memory-latch's agent subcommands, wake-check) without stopping
for approval, and where they go: Claude Code permissions.allow entries
Bash(<root>/bin/<helper> [<subcommand>]:*) in $CLAUDE_CONFIG_DIR/settings.json
(default ~/.claude/settings.json); Codex prefix_rule(...) lines in
$CODEX_HOME/rules/kijito-qa.rules (default ~/.codex/rules). --write writes them
(settings merged: every other key and entry kept; atomic, 0600, never through a
symlink). Never a hook, kijito-setup, kijito-local or a user-only subcommand.
  --root ABS           the install prefix or the host's plugin root (default
                       ~/.local/share/kijito-qa)
--mcp: when the config's apiUrl is a loopback kijito-local, register its MCP
server (<root>/bin/kijito-local mcp --db ABS with the config's pointer, lock,
persona and project) with the host: Claude Code <claude root>/.mcp.json, Codex
an [mcp_servers.kijito] block in $CODEX_HOME/config.toml (default ~/.codex;
every other line kept). --db is the SQLite file kijito-local serve uses (it
must exist). Without --write it shows what it would write. Each file written is
recorded in <root>/.kijito-mcp-registrations; --mcp-uninstall --root <host root>
(install.sh --uninstall runs it) takes kijito-qa's server out of those files,
keeping the user's other servers and lines (a file it created goes when empty).
--sandbox: the host's own OS sandbox for the agent's commands (docs/configuration.md,
Sandbox): Claude Code user settings ($CLAUDE_CONFIG_DIR/settings.json) gain
sandbox.enabled, failIfUnavailable, allowUnsandboxedCommands false, the helpers
as excludedCommands (<root>/claude/bin/<helper> [<subcommand>] *),
filesystem.denyWrite over kijito-qa's config, state and data dirs, the prefix,
the hosts' dirs, ~/.ssh and shell startup files, permissions.deny Edit rules for
.memory-latch, .git/hooks, CI files and the hosts' project files, and the API
host as network.allowedDomains; Codex's config.toml gains the permission
profile kijito-qa (default_permissions; the workspace writable, .memory-latch
read-only; a sandbox_mode line of the user's kept as a comment). Shows the
change; --write merges it (every other setting kept; atomic, 0600);
--uninstall takes kijito-qa's entries out.
--codex-alias: print the shell alias that starts Codex through the compaction
adapter (kijito-compact codex), whose sessions can be compacted.

Exit 0 ok; 1 with kijito_setup_failed:<code> and what to do; 2 usage.
See docs/first-pointer.md and docs/configuration.md (Permissions).
",
    commands: &[Command { name: "", flags: FLAGS }],
};

fn path_arg(args: &Args, flag: &str) -> Result<Option<AbsPath>> {
    match args.raw(flag) {
        None => Ok(None),
        Some(t) => user_path(t, flag).map(Some).map_err(|e| Error::usage(kijito_protocol::codes::ids::PATH, e.message().to_owned())),
    }
}

const PERMISSION_FLAGS: &[&str] = &["--allow-helpers", "--host", "--root", "--write", "--codex-alias"];

fn root_arg(args: &Args) -> Result<std::path::PathBuf> {
    match path_arg(args, "--root")? {
        Some(p) => Ok(p.as_path().to_owned()),
        None => Ok(kijito_files::config::home_dir()?.join(".local/share/kijito-qa")),
    }
}

/// `--allow-helpers` and `--codex-alias`.
fn run_permissions(args: &Args) -> Result<i32> {
    if let Some(f) = FLAGS.iter().map(|f| f.name).find(|f| !PERMISSION_FLAGS.contains(f) && args.has(f)) {
        return Err(Error::usage(cli_codes::CONFLICTING_FLAGS, format!("{f} does not go with --allow-helpers / --codex-alias")));
    }
    let given = root_arg(args)?;
    if args.has("--codex-alias") {
        if args.has("--allow-helpers") || args.has("--host") || args.has("--write") {
            return Err(Error::usage(cli_codes::CONFLICTING_FLAGS, "--codex-alias takes only --root"));
        }
        let root = permissions::plugin_root(&given, HostKind::Codex);
        cli::print_stdout(&format!(
            "{}
",
            permissions::codex_alias(&root)
        ))?;
        eprintln!("kijito-setup: put that line in your shell profile and start Codex as `codex-qa` (it runs `kijito-compact codex`, docs/adapters.md), or run `codex --no-daemon` inside tmux: in Codex's default shared-daemon mode no adapter can compact the session (codex_daemon)");
        return Ok(0);
    }
    let host = match args.raw("--host") {
        Some(h) => HostKind::parse(h).map_err(|_| Error::usage(cli_codes::INVALID_HOST, "--host must be claude or codex"))?,
        None => return Err(Error::usage(cli_codes::MISSING_FLAG, "--allow-helpers needs --host claude|codex")),
    };
    let root = permissions::plugin_root(&given, host);
    let home = kijito_files::config::home_dir()?;
    let env_dir = |k: &str| std::env::var_os(k).map(std::path::PathBuf::from).filter(|p| p.is_absolute());
    let plan = permissions::plan(host, &root, env_dir("CLAUDE_CONFIG_DIR").as_deref(), env_dir("CODEX_HOME").as_deref(), &home)?;
    let mut out = match host {
        HostKind::Claude => format!(
            "kijito-setup: Claude Code permission rules for the kijito-qa helpers of {} ({} rules), for \"permissions\": {{\"allow\": [...]}} in {}:\n",
            plan.root.display(),
            plan.rules.len(),
            plan.path.display()
        ),
        HostKind::Codex => format!("kijito-setup: Codex rules for the kijito-qa helpers of {} ({} rules), as {}:\n", plan.root.display(), plan.rules.len(), plan.path.display()),
    };
    for r in &plan.rules {
        out.push_str(&format!("  {r}\n"));
    }
    let already = plan.rules.len() - plan.missing.len();
    if plan.unchanged() {
        out.push_str(&format!("kijito-setup: all {} rules are already in {}; nothing to write\n", plan.rules.len(), plan.path.display()));
    } else if args.has("--write") {
        permissions::write(&plan)?;
        out.push_str(&match host {
            HostKind::Claude => format!(
                "kijito-setup: merged {} new rule(s) into {} ({already} were there; every other setting kept; 0600)\n",
                plan.missing.len(),
                plan.path.display()
            ),
            HostKind::Codex => format!(
                "kijito-setup: wrote {} ({} rules; 0600); Codex reads it at its next start\n",
                plan.path.display(),
                plan.rules.len()
            ),
        });
    } else {
        out.push_str(&format!(
            "kijito-setup: nothing written ({} of {} missing there); to write them: kijito-setup --allow-helpers --host {} --root {} --write\n",
            plan.missing.len(),
            plan.rules.len(),
            host.as_str(),
            plan.root.display()
        ));
    }
    match host {
        HostKind::Codex => out.push_str(&format!(
            "kijito-setup: start Codex with `codex --no-daemon` inside tmux, or through the compaction adapter; its alias: {}\n",
            permissions::codex_alias(&plan.root)
        )),
        HostKind::Claude => {}
    }
    cli::print_stdout(&out)?;
    Ok(0)
}

const MCP_FLAGS: &[&str] = &["--mcp", "--host", "--root", "--write", "--db"];

/// `--mcp-uninstall --root ROOT` (install.sh --uninstall runs it for each
/// host root): take kijito-qa's server out of every file `--mcp --write`
/// recorded in ROOT, keeping everything the user wrote.
fn run_mcp_uninstall(args: &Args) -> Result<i32> {
    if let Some(f) = FLAGS.iter().map(|f| f.name).find(|f| !["--mcp-uninstall", "--root"].contains(f) && args.has(f)) {
        return Err(Error::usage(cli_codes::CONFLICTING_FLAGS, format!("{f} does not go with --mcp-uninstall")));
    }
    let root = path_arg(args, "--root")?
        .ok_or_else(|| Error::usage(cli_codes::MISSING_FLAG, "--mcp-uninstall needs --root ABS (a host's plugin root)"))?;
    let done = mcp::unregister(root.as_path())?;
    let mut out = String::new();
    for line in &done {
        out.push_str(&format!("kijito-setup: {line}\n"));
    }
    if done.is_empty() {
        out.push_str(&format!("kijito-setup: no MCP registration recorded in {}\n", root.as_str()));
    }
    cli::print_stdout(&out)?;
    Ok(0)
}

/// `--mcp`: register kijito-local's MCP server with one host.
fn run_mcp(args: &Args) -> Result<i32> {
    if let Some(f) = FLAGS.iter().map(|f| f.name).find(|f| !MCP_FLAGS.contains(f) && args.has(f)) {
        return Err(Error::usage(cli_codes::CONFLICTING_FLAGS, format!("{f} does not go with --mcp")));
    }
    let host = match args.raw("--host") {
        Some(h) => HostKind::parse(h).map_err(|_| Error::usage(cli_codes::INVALID_HOST, "--host must be claude or codex"))?,
        None => return Err(Error::usage(cli_codes::MISSING_FLAG, "--mcp needs --host claude|codex")),
    };
    let db = path_arg(args, "--db")?
        .ok_or_else(|| Error::usage(cli_codes::MISSING_FLAG, "--mcp needs --db ABS (the SQLite file kijito-local serve uses)"))?;
    let root = permissions::plugin_root(&root_arg(args)?, host);
    let config = kijito_files::config::Config::load()?;
    let home = kijito_files::config::home_dir()?;
    let codex_home = std::env::var_os("CODEX_HOME").map(std::path::PathBuf::from).filter(|p| p.is_absolute());
    let plan = mcp::plan(host, &root, db.as_path(), &config, codex_home.as_deref(), &home)?;
    let r = &plan.registration;
    let mut out = format!(
        "kijito-setup: the kijito-local MCP server {:?} for {}: {} {}\n",
        mcp::SERVER_NAME,
        plan.path.display(),
        r.command.display(),
        r.args.join(" ")
    );
    if plan.unchanged {
        out.push_str(&format!("kijito-setup: {} already registers it; nothing to write\n", plan.path.display()));
    } else if args.has("--write") {
        mcp::write(&plan)?;
        out.push_str(&format!("kijito-setup: wrote {} (0600); the host starts the server at its next start\n", plan.path.display()));
    } else {
        out.push_str(&format!("kijito-setup: nothing written; the new {}:\n{}", plan.path.display(), plan.content));
        if !plan.content.ends_with('\n') {
            out.push('\n');
        }
        out.push_str(&format!(
            "kijito-setup: to write it: kijito-setup --mcp --host {} --db {} --root {} --write\n",
            host.as_str(),
            db.as_str(),
            root.display()
        ));
    }
    cli::print_stdout(&out)?;
    Ok(0)
}

const SANDBOX_FLAGS: &[&str] = &["--sandbox", "--host", "--root", "--write", "--uninstall"];

/// `--sandbox`: show, write or take out the host's sandbox settings.
fn run_sandbox(args: &Args) -> Result<i32> {
    if let Some(f) = FLAGS.iter().map(|f| f.name).find(|f| !SANDBOX_FLAGS.contains(f) && args.has(f)) {
        return Err(Error::usage(cli_codes::CONFLICTING_FLAGS, format!("{f} does not go with --sandbox")));
    }
    let host = match args.raw("--host") {
        Some(h) => HostKind::parse(h).map_err(|_| Error::usage(cli_codes::INVALID_HOST, "--host must be claude or codex"))?,
        None => return Err(Error::usage(cli_codes::MISSING_FLAG, "--sandbox needs --host claude|codex")),
    };
    let root = root_arg(args)?;
    permissions::check_safe_path(&root)?;
    let uninstall = args.has("--uninstall");
    let plan = sandbox::plan(host, &sandbox::Paths::from_env(&root)?, uninstall)?;
    let name = host.as_str();
    let mut out = format!(
        "kijito-setup: {} the {} sandbox settings of kijito-qa ({}) {} {}:\n",
        if uninstall { "taking out" } else { "setting" },
        host.product(),
        root.display(),
        if uninstall { "from" } else { "in" },
        plan.path.display()
    );
    for c in &plan.changes {
        out.push_str(&format!("  {c}\n"));
    }
    if plan.changes.is_empty() {
        out.push_str(&format!(
            "kijito-setup: {} already {}; nothing to write\n",
            plan.path.display(),
            if uninstall { "holds none of them" } else { "holds them all" }
        ));
    } else if args.has("--write") {
        sandbox::write(&plan)?;
        out.push_str(&format!(
            "kijito-setup: wrote {} ({} change(s); every other setting kept; 0600); the host reads it at its next start\n",
            plan.path.display(),
            plan.changes.len()
        ));
    } else {
        out.push_str(&format!(
            "kijito-setup: nothing written; to write it: kijito-setup --sandbox --host {name} --root {}{} --write\n",
            root.display(),
            if uninstall { " --uninstall" } else { "" }
        ));
    }
    if !uninstall {
        out.push_str(&format!(
            "kijito-setup: the helpers run outside the sandbox only with their allow rules: kijito-setup --allow-helpers --host {name} --root {} --write\n",
            root.display()
        ));
    }
    cli::print_stdout(&out)?;
    Ok(0)
}

/// One `kijito-setup` run from parsed argv: flags to a [`SetupRequest`],
/// the run, its JSON line and the human sentence. Returns the exit status.
pub fn run(args: Args) -> Result<i32> {
    if args.has("--mcp-uninstall") {
        return run_mcp_uninstall(&args);
    }
    if args.has("--mcp") {
        return run_mcp(&args);
    }
    if args.has("--db") {
        return Err(Error::usage(cli_codes::CONFLICTING_FLAGS, "--db goes with --mcp"));
    }
    if args.has("--sandbox") {
        return run_sandbox(&args);
    }
    if args.has("--uninstall") {
        return Err(Error::usage(cli_codes::CONFLICTING_FLAGS, "--uninstall goes with --sandbox"));
    }
    if args.has("--allow-helpers") || args.has("--codex-alias") {
        return run_permissions(&args);
    }
    if let Some(f) = ["--host", "--root", "--write"].into_iter().find(|f| args.has(f)) {
        return Err(Error::usage(cli_codes::CONFLICTING_FLAGS, format!("{f} goes with --allow-helpers")));
    }
    let api_url = match args.raw("--api-url") {
        None => None,
        Some(u) => Some(ApiUrl::parse(u).map_err(|e| Error::usage(e.error_code(), e.message().to_owned()))?),
    };
    let existing = args.has("--pointer-id") || args.has("--lock-message-id");
    let mode = if args.has("--create") {
        if existing {
            return Err(Error::usage(
                cli_codes::CONFLICTING_FLAGS,
                "give either --pointer-id N --lock-message-id M, or --create --anchor-file ABS --title TEXT",
            ));
        }
        let anchor_file =
            path_arg(&args, "--anchor-file")?.ok_or_else(|| Error::usage(cli_codes::MISSING_FLAG, "--create needs --anchor-file ABS"))?;
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
