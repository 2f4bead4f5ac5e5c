//! kijito-doctor: check, per host, everything that makes hooks silently not fire.
use kijito_cli as cli;
use kijito_files::datadir::HostKind;
use kijito_protocol::argv::{Args, Command, Flag, Tool};
use kijito_protocol::ids::AbsPath;
use kijito_protocol::{Error, Result};
use kijito_setup::doctor::{self, Options};

const FLAGS: &[Flag] = &[Flag::value("--host"), Flag::value("--root"), Flag::switch("--offline"), Flag::switch("--json")];

const TOOL: Tool = Tool {
    name: "kijito-doctor",
    code_name: "doctor",
    help: "\
kijito-doctor [--host codex|claude|both] [--root ABS] [--offline] [--json]

Check, per host, what makes hooks silently not fire: the plugin root layout,
absolute commands in hooks/hooks.json, every hook binary running --help, the data
dir, the config and token files (the token is never printed), the apiUrl answering
one GET of the configured pointer (--offline skips it), Codex hook trust for this
root (codex app-server hooks/list; needs codex on PATH),
`claude plugin validate --strict` (needs claude on PATH), the allow rules that
let an unattended session run the agent's helper commands (permissions; the fix
is kijito-setup --allow-helpers), and whether a Codex shared daemon runs, in
which no adapter may compact the session (compaction: codex_daemon).

  --host H    codex, claude or both (default both): check only what you
              installed (install.sh --host H prints this command)
  --root ABS  the install prefix (install.sh --prefix; default
              ~/.local/share/kijito-qa) or one host's plugin root
  --json      one JSON object instead of text

Exit 0 when nothing is red; 1 when something is (kijito_doctor_failed:red
on stderr), every red line with its fix; 2 usage.
",
    commands: &[Command { name: "", flags: FLAGS }],
};

fn run(args: Args) -> Result<i32> {
    let hosts = match args.raw("--host").unwrap_or("both") {
        "both" => vec![HostKind::Codex, HostKind::Claude],
        h => vec![HostKind::parse(h)
            .map_err(|_| Error::usage(kijito_protocol::codes::cli::INVALID_HOST, "--host must be codex, claude or both"))?],
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
