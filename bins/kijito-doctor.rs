//! kijito-doctor: check, per host, everything that makes hooks silently not fire.
use kijito_cli as cli;
use kijito_protocol::argv::{Args, Command, Flag, Tool};
use kijito_protocol::host::HostKind;
use kijito_protocol::ids::AbsPath;
use kijito_protocol::{Error, Result};
use kijito_setup::doctor::{self, Options};

const FLAGS: &[Flag] = &[Flag::value("--host"), Flag::value("--root"), Flag::switch("--offline"), Flag::switch("--json")];

const TOOL: Tool = Tool {
    name: "kijito-doctor",
    code_name: "doctor",
    help: "\
kijito-doctor [--host codex|claude|both] [--root ABS] [--offline] [--json]

Check, per host, what makes hooks silently not fire. Every check (one line
each; docs/configuration.md, kijito-doctor):
  config          the config file's rules (owner-only, known keys, ids)
  token file      the token file's rules (the token is never printed)
  plugin options  (claude) the pointer ids Claude Code hands the hooks
  api             one GET of the configured pointer (--offline skips it)
  layout          the plugin root: bin/, hooks/hooks.json, manifest, skills
  hooks.json      every event, absolute commands inside this root
  hook binaries   every hook binary runs --help
  data dir        the data dir the hooks would use
  hook trust      (codex) Codex loads and trusts these hooks (codex app-server
                  hooks/list; needs codex on PATH)
  validate        (claude) `claude plugin validate --strict` (needs claude on PATH)
  permissions     the allow rules that let an unattended session run the
                  agent's helper commands (fix: kijito-setup --allow-helpers)
  mcp             the host registers kijito-local's MCP server and it lists
                  the curation tools (only when apiUrl is a loopback kijito-local)
  compaction      (codex) no Codex shared daemon runs (codex_daemon)

  --host H    codex, claude or both: check these, red where one is not
              installed. Default: the hosts installed under the root; one
              not installed there is a [skip] line, not red
  --root ABS  the install prefix (install.sh --prefix) or one host's plugin
              root. Default: the install this kijito-doctor was run from
              (<root>/bin/kijito-doctor), else ~/.local/share/kijito-qa
  --offline   do not contact apiUrl (the api line is [skip])
  --json      one JSON object instead of text (status green, yellow, red or
              not_checked)

A check that could not be made (codex or claude not on PATH, --offline, a
host not installed) is a [skip] line, never green; the last line names them.
Exit 0 when nothing is red; 1 when something is (kijito_doctor_failed:red
on stderr), every red line with its fix; 2 usage.
",
    commands: &[Command { name: "", flags: FLAGS }],
};

fn run(args: Args) -> Result<i32> {
    let hosts = match args.raw("--host") {
        None => None,
        Some("both") => Some(vec![HostKind::Codex, HostKind::Claude]),
        Some(h) => Some(vec![HostKind::parse(h)
            .map_err(|_| Error::usage(kijito_protocol::codes::cli::INVALID_HOST, "--host must be codex, claude or both"))?]),
    };
    let root: Option<AbsPath> = args.optional("--root")?;
    let opts = Options::from_process(hosts, root, args.has("--offline"))?;
    let report = doctor::run(&opts)?;
    let text = if args.has("--json") { format!("{}\n", report.to_json()) } else { report.to_text() };
    cli::print_stdout(&text)?;
    if report.ok() {
        Ok(0)
    } else {
        Err(Error::new(kijito_setup::codes::RED, format!("{} check(s) are red; each names its fix", report.red_count())))
    }
}

fn main() {
    std::process::exit(cli::main(&TOOL, run))
}
