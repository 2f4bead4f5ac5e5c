//! `kijito-doctor`: everything that makes hooks silently not fire, per host.
//!
//! Checks (docs/configuration.md, "kijito-doctor"): the plugin root layout
//! install.sh makes; hooks.json (parses, every event, absolute commands
//! inside this root); every hook binary runs `--help`; the data dir the hooks
//! would use; the config file and the token file rules (the token is never
//! printed); the apiUrl answering one GET of the configured pointer (skipped
//! with `offline`); Codex hook trust for this root (`codex app-server`
//! `hooks/list`); `claude plugin validate --strict` for the Claude root.
//! Doctor reads only; it never writes or creates anything.

use crate::explain::{self, Context, Target};
use crate::{claude_options, codex, mcp, permissions, proc};
use kijito_client::http::{Api, ReqwestTransport};
use kijito_client::pointer;
use kijito_client::token::Token;
use kijito_files::config::{self, Config};
use kijito_files::datadir::{self, Source};
use kijito_files::private;
use kijito_protocol::error::{Error, Result};
use kijito_protocol::host::HostKind;
use kijito_protocol::ids::AbsPath;
use serde_json::{json, Value};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// The hooks.json templates install.sh renders (hooks/<host>/hooks.json.tmpl):
/// the one home of the hook event list.
const TEMPLATES: [&str; 2] = [include_str!("../../../hooks/claude/hooks.json.tmpl"), include_str!("../../../hooks/codex/hooks.json.tmpl")];

/// The events install.sh writes into `host`'s hooks.json: the keys of
/// `hooks` in its template, in their order (Claude Code also gets
/// PostToolUse and PostToolUseFailure: host consent, docs/protocol.md §8a).
pub fn events(host: HostKind) -> Vec<String> {
    let t = match host {
        HostKind::Claude => TEMPLATES[0],
        HostKind::Codex => TEMPLATES[1],
    };
    let v: Value = serde_json::from_str(t).unwrap_or(Value::Null);
    v.get("hooks").and_then(Value::as_object).into_iter().flat_map(|o| o.keys().cloned()).collect()
}
/// Largest hooks.json read.
pub const MAX_HOOKS_JSON: u64 = 256 * 1024;
/// Time for one `--help`.
pub const HELP_TIMEOUT: Duration = Duration::from_secs(5);
/// Time for `codex app-server` to list hooks.
pub const CODEX_TIMEOUT: Duration = Duration::from_secs(60);
/// Time for `claude plugin validate`.
pub const CLAUDE_TIMEOUT: Duration = Duration::from_secs(120);

/// Outcome colour of one check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    Green,
    Yellow,
    Red,
    /// Not checked (a tool not on PATH, `--offline`, a host not installed
    /// here): never counted as green.
    NotChecked,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Green => "green",
            Status::Yellow => "yellow",
            Status::Red => "red",
            Status::NotChecked => "not_checked",
        }
    }
    fn tag(self) -> &'static str {
        match self {
            Status::Green => "[ok]  ",
            Status::Yellow => "[warn]",
            Status::Red => "[FAIL]",
            Status::NotChecked => "[skip]",
        }
    }
}

/// One line of the report.
#[derive(Debug, Clone)]
pub struct Check {
    /// `codex`, `claude` or `all`.
    pub host: String,
    pub name: String,
    pub status: Status,
    pub detail: String,
    /// What to do (for red and yellow lines).
    pub fix: Option<String>,
}

/// The whole report.
#[derive(Debug, Clone)]
pub struct Report {
    pub prefix: PathBuf,
    pub checks: Vec<Check>,
}

impl Report {
    pub fn ok(&self) -> bool {
        self.checks.iter().all(|c| c.status != Status::Red)
    }

    pub fn red_count(&self) -> usize {
        self.checks.iter().filter(|c| c.status == Status::Red).count()
    }

    /// The checks that could not be made (`[skip]` lines).
    pub fn not_checked(&self) -> Vec<String> {
        self.checks.iter().filter(|c| c.status == Status::NotChecked).map(|c| format!("{} {}", c.host, c.name)).collect()
    }

    pub fn to_json(&self) -> Value {
        json!({
            "ok": self.ok(),
            "prefix": self.prefix.to_string_lossy(),
            "checks": self.checks.iter().map(|c| json!({"host": c.host, "check": c.name, "status": c.status.as_str(), "detail": c.detail, "fix": c.fix})).collect::<Vec<_>>(),
        })
    }

    pub fn to_text(&self) -> String {
        let mut out = format!("kijito-doctor: install prefix {}\n", self.prefix.display());
        for c in &self.checks {
            out.push_str(&format!("{} {:<6} {:<14} {}\n", c.status.tag(), c.host, c.name, c.detail));
            if let Some(f) = &c.fix {
                out.push_str(&format!("{:>6} {:<6} {:<14} fix: {}\n", "", "", "", f));
            }
        }
        let skipped = self.not_checked();
        out.push_str(&if self.ok() && skipped.is_empty() {
            "kijito-doctor: all green (warnings do not stop hooks)\n".to_owned()
        } else if self.ok() {
            format!("kijito-doctor: nothing red, but {} check(s) not made ({}): see each [skip] line\n", skipped.len(), skipped.join(", "))
        } else {
            format!("kijito-doctor: {} red line(s): these stop hooks from working\n", self.red_count())
        });
        out
    }
}

/// Doctor options.
#[derive(Debug, Clone)]
pub struct Options {
    pub hosts: Vec<HostKind>,
    /// `--host` was not given: check only the hosts installed under the
    /// root; one not installed there is a `[skip]` line, not red.
    pub installed_only: bool,
    /// `--root`: the install prefix (or one host's plugin root).
    pub root: Option<AbsPath>,
    /// The plugin root this kijito-doctor was run from (`<root>/bin/kijito-doctor`),
    /// the default `--root` (else `~/.local/share/kijito-qa`).
    pub own_root: Option<PathBuf>,
    pub offline: bool,
    /// Directory Codex lists hooks for (the current directory).
    pub cwd: PathBuf,
    /// `codex` / `claude` found on PATH (None: that check is a yellow skip).
    pub codex: Option<PathBuf>,
    pub claude: Option<PathBuf>,
    /// `CLAUDE_CONFIG_DIR` (absolute), where Claude Code keeps user settings
    /// (else `~/.claude`).
    pub claude_config_dir: Option<PathBuf>,
    /// `CODEX_HOME` (absolute), where Codex keeps its rules (else `~/.codex`).
    pub codex_home: Option<PathBuf>,
}

impl Options {
    /// Options from the real environment: PATH lookups, current directory.
    /// `hosts` None: `--host` not given (check what is installed).
    pub fn from_process(hosts: Option<Vec<HostKind>>, root: Option<AbsPath>, offline: bool) -> Result<Options> {
        let cwd = std::env::current_dir()
            .map_err(|e| Error::new(crate::codes::CWD_UNKNOWN, format!("cannot read the current directory: {e}")))?;
        let dir = |k: &str| std::env::var_os(k).map(PathBuf::from).filter(|p| p.is_absolute());
        Ok(Options {
            installed_only: hosts.is_none(),
            hosts: hosts.unwrap_or_else(|| vec![HostKind::Codex, HostKind::Claude]),
            root,
            own_root: std::env::current_exe().ok().and_then(|e| plugin_root_of(&e)),
            offline,
            cwd,
            codex: proc::which(HostKind::Codex.as_str()),
            claude: proc::which(HostKind::Claude.as_str()),
            claude_config_dir: dir("CLAUDE_CONFIG_DIR"),
            codex_home: dir("CODEX_HOME"),
        })
    }
}

/// The plugin root a binary at `<root>/bin/<name>` belongs to: `<root>`
/// when it holds a host's plugin manifest directory (install.sh's layout).
fn plugin_root_of(exe: &Path) -> Option<PathBuf> {
    let root = exe.parent()?.parent()?;
    [HostKind::Codex, HostKind::Claude].iter().any(|h| root.join(manifest_dir(*h)).is_dir()).then(|| root.to_path_buf())
}

fn manifest_dir(h: HostKind) -> &'static str {
    match h {
        HostKind::Codex => ".codex-plugin",
        HostKind::Claude => ".claude-plugin",
    }
}

struct Out {
    checks: Vec<Check>,
}

impl Out {
    fn push(&mut self, host: &str, name: &str, status: Status, detail: impl Into<String>, fix: Option<String>) {
        self.checks.push(Check { host: host.into(), name: name.into(), status, detail: detail.into(), fix });
    }
    fn green(&mut self, host: &str, name: &str, detail: impl Into<String>) {
        self.push(host, name, Status::Green, detail, None);
    }
    fn yellow(&mut self, host: &str, name: &str, detail: impl Into<String>, fix: impl Into<String>) {
        self.push(host, name, Status::Yellow, detail, Some(fix.into()));
    }
    fn red(&mut self, host: &str, name: &str, detail: impl Into<String>, fix: impl Into<String>) {
        self.push(host, name, Status::Red, detail, Some(fix.into()));
    }
}

/// A directory hooks run binaries from: a real directory (no symlink),
/// owned by you or root, not writable by group or other.
fn check_install_dir(dir: &Path) -> std::result::Result<(), String> {
    let meta = std::fs::symlink_metadata(dir).map_err(|e| format!("{} is missing ({e})", dir.display()))?;
    if meta.file_type().is_symlink() {
        return Err(format!("{} is a symlink", dir.display()));
    }
    if !meta.is_dir() {
        return Err(format!("{} is not a directory", dir.display()));
    }
    if meta.uid() != private::current_uid() && meta.uid() != 0 {
        return Err(format!("{} is owned by uid {}, not by you or root", dir.display(), meta.uid()));
    }
    if meta.permissions().mode() & 0o022 != 0 {
        return Err(format!("{} has mode {:o}: others could replace the hook binaries", dir.display(), meta.permissions().mode() & 0o777));
    }
    Ok(())
}

/// The prefix and each host's root.
fn roots(opts: &Options) -> Result<(PathBuf, Vec<(HostKind, PathBuf)>)> {
    let given = match (&opts.root, &opts.own_root) {
        (Some(r), _) => r.as_path().to_owned(),
        // run from an install: that install's prefix
        (None, Some(own)) => own.parent().map(Path::to_path_buf).unwrap_or_else(|| own.clone()),
        (None, None) => config::home_dir()?.join(".local/share/kijito-qa"),
    };
    // --root may name one host's plugin root directly.
    for h in [HostKind::Codex, HostKind::Claude] {
        if given.join(manifest_dir(h)).is_dir() {
            let prefix = given.parent().map(Path::to_path_buf).unwrap_or_else(|| given.clone());
            let hosts = opts.hosts.iter().filter(|x| **x == h).map(|x| (*x, given.clone())).collect();
            return Ok((prefix, hosts));
        }
    }
    let hosts = opts.hosts.iter().map(|h| (*h, given.join(h.as_str()))).collect();
    Ok((given, hosts))
}

/// Run every check.
pub fn run(opts: &Options) -> Result<Report> {
    let (prefix, mut host_roots) = roots(opts)?;
    let mut out = Out { checks: Vec::new() };
    // Without --host: the hosts installed here; the others are not checked
    // (when none is, every host's layout line says so in red).
    if opts.installed_only && host_roots.iter().any(|(h, r)| r.join(manifest_dir(*h)).is_dir()) {
        host_roots.retain(|(h, root)| {
            let installed = root.join(manifest_dir(*h)).is_dir();
            if !installed {
                let host = h.as_str();
                out.push(
                    host,
                    "layout",
                    Status::NotChecked,
                    format!("{host} is not installed at {}: not checked", root.display()),
                    Some(format!("./install.sh --prefix {} --host {host} adds it", prefix.display())),
                );
            }
            installed
        });
    }
    let mut config = check_config(&mut out);
    let has_plugin_options = |h: &HostKind| match h {
        HostKind::Claude => true,
        HostKind::Codex => false,
    };
    if host_roots.iter().any(|(h, _)| has_plugin_options(h)) {
        if let Some(c) = config.as_mut() {
            check_claude_options(&mut out, opts, c);
        }
    }
    for (h, root) in &host_roots {
        check_host(&mut out, opts, &prefix, *h, root, config.as_ref());
    }
    if host_roots.is_empty() {
        out.red(
            "all",
            "layout",
            format!("{} is not the plugin root of the host(s) asked for", prefix.display()),
            "give --host codex|claude matching the root, or --root the install prefix",
        );
    }
    if let Some(c) = &config {
        check_token_and_api(&mut out, opts, c);
    }
    Ok(Report { prefix, checks: out.checks })
}

fn check_config(out: &mut Out) -> Option<Config> {
    let path = match config::config_path() {
        Ok(p) => p,
        Err(e) => {
            out.red("all", "config", e.message().to_owned(), "set HOME to your home directory");
            return None;
        }
    };
    match Config::load() {
        Ok(c) => {
            let source =
                c.source.as_ref().map(|p| p.display().to_string()).unwrap_or_else(|| format!("no file at {} (defaults)", path.display()));
            match (c.pointer_id, c.lock_message_id) {
                (Some(p), Some(l)) => out.green("all", "config", format!("{source}: pointer {p}, lock {l}, apiUrl {}", c.api_url.as_str())),
                _ => out.yellow(
                    "all",
                    "config",
                    format!("{source}: no pointerId/lockMessageId (hooks run, but cannot name the resume command)"),
                    "run kijito-setup --pointer-id N --lock-message-id M (or, Claude Code only, set them in the plugin's options)",
                ),
            }
            Some(c)
        }
        Err(e) => {
            use kijito_files::config::codes as config;
            use kijito_files::private::codes as files;
            let fix = match (e.code_as(), e.code_as()) {
                (Some(files::PERMISSIONS), _) => format!("chmod 600 {}", path.display()),
                (_, Some(config::UNKNOWN_KEY)) => {
                    format!("remove that key from {} (keys: docs/configuration.md)", path.display())
                }
                _ => format!("fix or rewrite {} (kijito-setup --force writes a valid one)", path.display()),
            };
            out.red("all", "config", format!("{} ({}); every hook runs without it", e.message(), e.code()), fix);
            None
        }
    }
}

/// Claude Code plugin options (`userConfig`): green when the config file
/// already names the pointer (it wins) or Claude Code's settings hold both
/// options; yellow with the exact command otherwise; red when a value is one
/// the hooks would refuse. Options found fill `config` as they fill a Claude
/// hook's (so the api check GETs the pointer the hooks would use).
fn check_claude_options(out: &mut Out, opts: &Options, config: &mut Config) {
    let name = "plugin options";
    let Ok(home) = config::home_dir() else { return };
    let files = claude_options::settings_files(opts.claude_config_dir.as_deref(), &home, &opts.cwd);
    let found = claude_options::find(&files);
    let shown: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
    let unreadable: String = found.unreadable.iter().map(|(f, why)| format!("; {} unreadable: {why}", f.display())).collect();
    let id = found.plugin_id();
    let fix = |p: &str, l: &str| {
        format!(
            "echo '{{\"pointer_id\":\"{p}\",\"lock_message_id\":\"{l}\"}}' | claude plugin configure {id} --values-stdin (or /plugin configure {id} in Claude Code; or kijito-setup --pointer-id N --lock-message-id M)"
        )
    };
    if config.pointer_id.is_some() && config.lock_message_id.is_some() {
        out.green(
            HostKind::Claude.as_str(),
            name,
            format!("not needed: the config file sets pointerId and lockMessageId (it wins over the plugin options){unreadable}"),
        );
        return;
    }
    let before = (config.pointer_id, config.lock_message_id);
    if let Err(e) = found.apply(config) {
        let file = found
            .pointer_id
            .iter()
            .chain(found.lock_message_id.iter())
            .map(|x| format!("{} (pluginConfigs[\"{}\"])", x.1.display(), x.2))
            .collect::<Vec<_>>()
            .join(", ");
        out.red(
            HostKind::Claude.as_str(),
            name,
            format!("{} ({}) in {file}; Claude hooks would run without the pointer ids", e.message(), e.code()),
            fix("N", "M"),
        );
        return;
    }
    match (config.pointer_id, config.lock_message_id) {
        (Some(p), Some(l)) => {
            let mut from: Vec<String> = [&found.pointer_id, &found.lock_message_id]
                .into_iter()
                .flatten()
                .map(|x| format!("{} (pluginConfigs[\"{}\"])", x.1.display(), x.2))
                .collect();
            from.dedup();
            out.green(
                HostKind::Claude.as_str(),
                name,
                format!("pointer_id {p}, lock_message_id {l} from {}; Claude Code hands them to the hooks (the config file has none){unreadable}", from.join(" and ")),
            );
        }
        (p, l) => {
            let missing: Vec<&str> =
                [("pointer_id", p.is_none() && before.0.is_none()), ("lock_message_id", l.is_none() && before.1.is_none())]
                    .into_iter()
                    .filter_map(|(n, m)| m.then_some(n))
                    .collect();
            out.yellow(
                HostKind::Claude.as_str(),
                name,
                format!("no {} in the config file nor in Claude Code's plugin options (looked in {}){unreadable}: Claude hooks cannot name the resume command", missing.join(" and "), shown.join(", ")),
                fix(&p.map_or("N".to_owned(), |v| v.to_string()), &l.map_or("M".to_owned(), |v| v.to_string())),
            );
        }
    }
}

fn check_token_and_api(out: &mut Out, opts: &Options, c: &Config) {
    let cx = |target| Context { api_url: &c.api_url, token_file: &c.token_file, persona: c.persona.as_str(), project: &c.project, target };
    let token = match Token::read(&c.token_file) {
        Ok(t) => {
            let size = std::fs::metadata(&c.token_file).map(|m| m.len()).unwrap_or(0);
            out.green("all", "token file", format!("{}: owner-only, one line ({size} bytes; never printed)", c.token_file.display()));
            t
        }
        Err(e) => {
            out.red("all", "token file", format!("{} ({})", e.message(), e.code()), explain::token_fix(e.code_as(), &c.token_file));
            if !opts.offline {
                out.yellow("all", "api", "not reached (no usable token)", "fix the token file first");
            }
            return;
        }
    };
    if opts.offline {
        out.push(
            "all",
            "api",
            Status::NotChecked,
            format!("{} not contacted (--offline)", c.api_url.as_str()),
            Some("run without --offline to check that it answers".into()),
        );
        return;
    }
    let Some(id) = c.pointer_id else {
        out.yellow("all", "api", format!("{} not contacted: no pointerId configured", c.api_url.as_str()), "run kijito-setup");
        return;
    };
    let result = ReqwestTransport::new(c.api_url.clone(), &token)
        .map(|t| Api::new(t, c.persona.clone(), c.project.clone()))
        .and_then(|api| pointer::read_pointer(&api, id));
    match result {
        Ok(r) if r.is_current() => {
            out.green("all", "api", format!("GET {}/api/memory/{id}: the pointer is current, digest {}", c.api_url.as_str(), r.digest))
        }
        Ok(r) => out.red(
            "all",
            "api",
            format!("pointer {id} is {:?}, not current", r.lifecycle),
            "configure the current pointer id (kijito-setup --force ...)",
        ),
        Err(e) => {
            let code = e.code().to_owned();
            let e = explain::explain(e, &cx(Target::Memory(id)));
            out.red("all", "api", format!("GET pointer {id} failed ({code})"), e.message().to_owned());
        }
    }
}

fn check_host(out: &mut Out, opts: &Options, prefix: &Path, h: HostKind, root: &Path, config: Option<&Config>) {
    let host = h.as_str();
    let reinstall = format!("re-run ./install.sh --prefix {} --host {host} from the kijito-qa checkout", prefix.display());
    // layout
    if std::fs::symlink_metadata(root).is_err() {
        out.red(
            host,
            "layout",
            format!("no plugin root at {}: nothing is installed for {host} there", root.display()),
            format!("run ./install.sh --prefix {} --host {host} from the kijito-qa checkout, or give --root", prefix.display()),
        );
        return;
    }
    let mut problems = Vec::new();
    for dir in [root.to_path_buf(), root.join("bin")] {
        if let Err(p) = check_install_dir(&dir) {
            problems.push(p);
        }
    }
    let manifest = root.join(manifest_dir(h)).join("plugin.json");
    let hooks_json = root.join("hooks/hooks.json");
    for f in [&manifest, &hooks_json] {
        if !f.is_file() {
            problems.push(format!("{} is missing", f.display()));
        }
    }
    let skills = std::fs::read_dir(root.join("skills"))
        .map(|d| d.filter_map(|e| e.ok()).filter(|e| e.path().join("SKILL.md").is_file()).count())
        .unwrap_or(0);
    if skills == 0 {
        problems.push(format!("no skills/*/SKILL.md under {}", root.display()));
    }
    if problems.is_empty() {
        out.green(host, "layout", format!("{}: bin/, hooks/hooks.json, {}/plugin.json, {skills} skills", root.display(), manifest_dir(h)));
    } else {
        let fix = if problems.iter().any(|p| p.contains("mode")) {
            format!("chmod go-w the directories named (or {reinstall})")
        } else {
            reinstall.clone()
        };
        out.red(host, "layout", problems.join("; "), fix);
    }
    // hooks.json
    let binaries = check_hooks_json(out, h, root, &hooks_json, &reinstall);
    // binaries
    check_binaries(out, host, &binaries, &reinstall);
    // data dir
    check_data_dir(out, h, config);
    // host-specific
    match h {
        HostKind::Codex => check_codex_trust(out, opts, root),
        HostKind::Claude => check_claude_validate(out, opts, root),
    }
    check_permissions(out, opts, h, root);
    check_sandbox(out, h, root);
    check_mcp(out, opts, h, root, config);
    match h {
        HostKind::Codex => check_codex_daemon(out, root),
        HostKind::Claude => {}
    }
}

/// `mcp` (only when the config points at kijito-local): the host's installed
/// config registers `kijito-local mcp` (crate::mcp), and the registered
/// command, run as the host runs it, lists the curation tools.
fn check_mcp(out: &mut Out, opts: &Options, h: HostKind, root: &Path, config: Option<&Config>) {
    let host = h.as_str();
    let Some(config) = config.filter(|c| mcp::is_kijito_local(c)) else { return };
    let Ok(home) = config::home_dir() else { return };
    let fix = format!(
        "{}/bin/kijito-setup --mcp --host {host} --db <the --db of kijito-local serve> --root {} --write",
        root.display(),
        root.display()
    );
    let (path, r) = match mcp::installed(h, root, opts.codex_home.as_deref(), &home) {
        Err(why) => return out.red(host, "mcp", why, fix),
        Ok(None) => {
            let place = match h {
                HostKind::Claude => mcp::claude_path(root),
                HostKind::Codex => mcp::codex_config_path(opts.codex_home.as_deref(), &home),
            };
            return out.yellow(
                host,
                "mcp",
                format!(
                    "the config points at kijito-local ({}) but {} registers no {:?} MCP server: the agent has no recall or curation tools",
                    config.api_url.as_str(),
                    place.display(),
                    mcp::SERVER_NAME
                ),
                fix,
            );
        }
        Ok(Some(found)) => found,
    };
    let want = mcp::registration(root, Path::new(r.db().unwrap_or("")), config);
    if r.command != want.command {
        return out.yellow(
            host,
            "mcp",
            format!("{} registers {} (another install), not {}", path.display(), r.command.display(), want.command.display()),
            fix,
        );
    }
    let Some(db) = r.db() else {
        return out.red(host, "mcp", format!("{} registers {} without --db", path.display(), r.command.display()), fix);
    };
    if let Err(why) = mcp::check_db(Path::new(db)) {
        return out.red(host, "mcp", format!("the registered store {db} {why}"), fix);
    }
    if r.args != want.args {
        return out.yellow(
            host,
            "mcp",
            format!(
                "{} registers `{}`, but the config now means `{}` (pointer, lock, persona or project changed)",
                path.display(),
                r.args.join(" "),
                want.args.join(" ")
            ),
            fix.replace("<the --db of kijito-local serve>", db),
        );
    }
    match mcp::list_tools(&r) {
        Err(why) => out.red(
            host,
            "mcp",
            format!("{} {}: {why}", r.command.display(), r.args.join(" ")),
            fix.replace("<the --db of kijito-local serve>", db),
        ),
        Ok(tools) => {
            let missing: Vec<&str> = mcp::REQUIRED_TOOLS.iter().copied().filter(|t| !tools.iter().any(|x| x == t)).collect();
            if missing.is_empty() {
                out.green(
                    host,
                    "mcp",
                    format!(
                        "{} registers {:?}: {} tools listed ({}), store {db}",
                        path.display(),
                        mcp::SERVER_NAME,
                        tools.len(),
                        mcp::REQUIRED_TOOLS.join(", ")
                    ),
                );
            } else {
                out.red(
                    host,
                    "mcp",
                    format!("the registered server lists {} tools but not {}", tools.len(), missing.join(", ")),
                    format!("re-run ./install.sh (an older kijito-local), then {fix}"),
                );
            }
        }
    }
}

/// `permissions`: the allow rules that let an unattended session run the
/// agent's helper commands without stopping for approval (crate::permissions).
fn check_permissions(out: &mut Out, opts: &Options, h: HostKind, root: &Path) {
    let host = h.as_str();
    let Ok(home) = config::home_dir() else { return };
    let bin = root.join("bin");
    let total = permissions::AGENT_COMMANDS.len();
    let (missing, unreadable, place) = match h {
        HostKind::Claude => {
            let files = claude_options::settings_files(opts.claude_config_dir.as_deref(), &home, &opts.cwd);
            let (m, u) = permissions::missing_claude(&files, &bin);
            (m, u, format!("permissions.allow of {}", files.iter().map(|f| f.display().to_string()).collect::<Vec<_>>().join(", ")))
        }
        HostKind::Codex => {
            let dir = permissions::codex_rules_dir(opts.codex_home.as_deref(), &home);
            let (m, u) = permissions::missing_codex(&dir, &bin);
            (m, u, format!("{}/*.rules", dir.display()))
        }
    };
    let unreadable: String = unreadable.iter().map(|u| format!("; unreadable: {u}")).collect();
    if missing.is_empty() {
        out.green(host, "permissions", format!("all {total} helper commands of {} are allowed ({place}){unreadable}", bin.display()));
    } else {
        let why = match h {
            HostKind::Claude => "Claude Code stops an unattended turn for approval at the first one",
            HostKind::Codex => "Codex runs them in its sandbox, where their writes outside the project fail (or asks for approval)",
        };
        out.yellow(
            host,
            "permissions",
            format!(
                "{} of {total} helper commands have no allow rule in {place} (first: {}): {why}{unreadable}",
                missing.len(),
                missing[0]
            ),
            format!(
                "kijito-setup --allow-helpers --host {host} --root {} --write (without --write it shows the rules first)",
                root.display()
            ),
        );
    }
}

/// `sandbox`: the host's own OS sandbox is on for the agent's commands, as
/// `kijito-setup --sandbox --write` sets it (crate::sandbox).
fn check_sandbox(out: &mut Out, h: HostKind, root: &Path) {
    let host = h.as_str();
    let paths = match crate::sandbox::Paths::from_env(root) {
        Ok(p) => p,
        Err(e) => return out.yellow(host, "sandbox", e.message().to_owned(), "set HOME to an absolute path"),
    };
    let prefix = paths.root.clone();
    match crate::sandbox::check(h, &paths) {
        Ok(()) => out.green(
            host,
            "sandbox",
            match h {
                HostKind::Claude => "the Bash sandbox is on (no unsandboxed retry; kijito-qa's paths write-denied; the helpers excluded)",
                HostKind::Codex => "the kijito-qa permission profile (the workspace writable, .memory-latch read-only) or the user's sandbox_mode (workspace-write or read-only) confines the agent's commands",
            },
        ),
        Err(why) => out.yellow(
            host,
            "sandbox",
            format!("{why}: the agent's commands are checked only by the hook policy, which decides on command text"),
            format!("kijito-setup --sandbox --host {host} --root {} --write (without --write it shows the change first)", prefix.display()),
        ),
    }
}

/// `compaction` (Codex): Codex in its default shared-daemon mode runs the
/// session in `codex app-server --managed-daemon`, where the tmux adapter
/// refuses to pin (`codex_daemon`, kijito_compact::pin), so
/// `kijito-compact request` answers `no_safe_trigger`.
fn check_codex_daemon(out: &mut Out, root: &Path) {
    let alias = permissions::codex_alias(root);
    let daemons = codex_daemons();
    if daemons.is_empty() {
        out.green(
            HostKind::Codex.as_str(),
            "compaction",
            format!("no Codex shared daemon runs now; start Codex as `codex --no-daemon` inside tmux, or through the adapter ({alias}): plain `codex` starts the daemon, in which no adapter may compact (codex_daemon)"),
        );
    } else {
        out.yellow(
            HostKind::Codex.as_str(),
            "compaction",
            format!(
                "codex_daemon: a Codex shared app-server daemon runs (pid {}): sessions of plain `codex` run in it, the tmux adapter refuses to pin them and kijito-compact request answers no_safe_trigger",
                daemons.iter().map(u32::to_string).collect::<Vec<_>>().join(", ")
            ),
            format!("start Codex as `codex --no-daemon` inside tmux, or through the compaction adapter: {alias} (kijito-setup --codex-alias prints it), then `codex-qa`"),
        );
    }
}

/// Most /proc entries looked at.
const MAX_PROCS: usize = 100_000;

/// Pids of this user's Codex shared daemons (`app-server … --managed-daemon`).
fn codex_daemons() -> Vec<u32> {
    use kijito_compact::procfs::Procs;
    let me = private::current_uid();
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir("/proc") else { return found };
    for e in entries.filter_map(|e| e.ok()).take(MAX_PROCS) {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else { continue };
        if std::fs::metadata(e.path()).map(|m| m.uid()).ok() != Some(me) {
            continue;
        }
        if kijito_compact::procfs::RealProcs.cmdline(pid).is_some_and(|a| kijito_compact::pin::is_codex_daemon(&a)) {
            found.push(pid);
        }
    }
    found.sort_unstable();
    found
}

fn check_hooks_json(out: &mut Out, h: HostKind, root: &Path, path: &Path, reinstall: &str) -> Vec<PathBuf> {
    let host = h.as_str();
    let bytes = match private::read_checked(path, private::FileRules { owner_only: false, min_bytes: 1, max_bytes: MAX_HOOKS_JSON }) {
        Ok((b, _)) => b,
        Err(e) => {
            out.red(host, "hooks.json", format!("{} ({})", e.message(), e.code()), reinstall.to_owned());
            return vec![];
        }
    };
    let value: Value = match serde_json::from_slice(&bytes) {
        Ok(v) => v,
        Err(e) => {
            out.red(
                host,
                "hooks.json",
                format!("{} is not JSON ({e}); the host ignores every hook in it", path.display()),
                reinstall.to_owned(),
            );
            return vec![];
        }
    };
    let mut problems = Vec::new();
    let mut bins: Vec<PathBuf> = Vec::new();
    let bin_dir = root.join("bin");
    let events = value.get("hooks").and_then(Value::as_object);
    let expected = self::events(h);
    for ev in &expected {
        if events.and_then(|e| e.get(ev)).is_none() {
            problems.push(format!("no {ev} hook"));
        }
    }
    let mut count = 0;
    for (ev, groups) in events.into_iter().flatten() {
        for g in groups.as_array().into_iter().flatten() {
            for hk in g.get("hooks").and_then(Value::as_array).into_iter().flatten() {
                count += 1;
                let cmd = hk.get("command").and_then(Value::as_str).unwrap_or("");
                let first = cmd.split_whitespace().next().unwrap_or("");
                let p = Path::new(first);
                if !p.is_absolute() {
                    problems.push(format!("{ev}: command {:?} does not start with an absolute path (hosts run it from the session's directory, so it would not be found)", kijito_protocol::ids::clip(cmd)));
                } else if !p.starts_with(&bin_dir) {
                    problems.push(format!("{ev}: {first} is outside {}", bin_dir.display()));
                } else if !bins.iter().any(|b| b == p) {
                    bins.push(p.to_path_buf());
                }
            }
        }
    }
    if problems.is_empty() {
        out.green(
            host,
            "hooks.json",
            format!("{}: {count} hooks on {} events, absolute commands in {}", path.display(), expected.len(), bin_dir.display()),
        );
    } else {
        out.red(host, "hooks.json", problems.join("; "), format!("{reinstall} (it writes absolute paths into hooks.json)"));
    }
    bins
}

fn check_binaries(out: &mut Out, host: &str, bins: &[PathBuf], reinstall: &str) {
    if bins.is_empty() {
        return;
    }
    let mut bad = Vec::new();
    for b in bins {
        if !proc::is_executable(b) {
            bad.push(format!("{} is missing or not executable", b.display()));
            continue;
        }
        let mut cmd = Command::new(b);
        cmd.arg("--help");
        match proc::run(cmd, HELP_TIMEOUT, 64 * 1024) {
            Ok(o) if o.success() => {}
            Ok(o) if o.timed_out => bad.push(format!("{} --help did not finish within {} s", b.display(), HELP_TIMEOUT.as_secs())),
            Ok(o) => bad.push(format!("{} --help exited {:?}: {}", b.display(), o.status, o.tail(200))),
            Err(e) => bad.push(format!("{}: {}", b.display(), e.message())),
        }
    }
    let names: Vec<String> = bins.iter().filter_map(|b| b.file_name()).map(|n| n.to_string_lossy().into_owned()).collect();
    if bad.is_empty() {
        out.green(host, "hook binaries", format!("{} run --help", names.join(", ")));
    } else {
        out.red(host, "hook binaries", bad.join("; "), reinstall.to_owned());
    }
}

fn check_data_dir(out: &mut Out, h: HostKind, config: Option<&Config>) {
    let host = h.as_str();
    let (dir, source) = match datadir::choose(None, Some(h), config, &|k| std::env::var(k).ok()) {
        Ok(x) => x,
        Err(e) => {
            out.red(host, "data dir", format!("{} ({})", e.message(), e.code()), "set dataDir in the config to an absolute path");
            return;
        }
    };
    let from = match source {
        Source::HostVariable => format!("from {}", h.data_var()),
        Source::Config => "from dataDir in the config".to_owned(),
        Source::Default | Source::Flag => "the default".to_owned(),
    };
    let note = match h {
        HostKind::Claude if source != Source::HostVariable => "; Claude Code hooks get CLAUDE_PLUGIN_DATA instead, which the host creates",
        HostKind::Claude | HostKind::Codex => "",
    };
    match std::fs::symlink_metadata(dir.as_path()) {
        Err(_) => out.green(host, "data dir", format!("{dir} ({from}) does not exist yet; the first hook creates it 0700{note}")),
        Ok(_) => {
            if let Err(e) = private::check_dir(dir.as_path(), false) {
                out.red(
                    host,
                    "data dir",
                    format!("{dir} ({from}): {} ({}); every hook would answer fail-soft", e.message(), e.code()),
                    format!("chmod 700 {dir} (it must be a directory you own, not a symlink)"),
                );
                return;
            }
            let qa = match datadir::qa_path(&dir) {
                Ok(q) => q,
                Err(e) => {
                    return out.red(
                        host,
                        "data dir",
                        format!("{dir}: {} ({})", e.message(), e.code()),
                        "set dataDir in the config to an absolute path",
                    )
                }
            };
            let qa = qa.as_path();
            if qa.exists() || std::fs::symlink_metadata(qa).is_ok() {
                if let Err(e) = private::check_dir(qa, true) {
                    out.red(
                        host,
                        "data dir",
                        format!("{}: {} ({})", qa.display(), e.message(), e.code()),
                        format!("chmod 700 {}", qa.display()),
                    );
                    return;
                }
            }
            out.green(host, "data dir", format!("{dir} ({from}): yours, not writable by others{note}"));
        }
    }
}

fn check_codex_trust(out: &mut Out, opts: &Options, root: &Path) {
    let Some(codex) = &opts.codex else {
        out.push(
            HostKind::Codex.as_str(),
            "hook trust",
            Status::NotChecked,
            "codex is not on PATH: whether Codex loads and trusts these hooks is not checked",
            Some("put codex on PATH and run kijito-doctor again (Codex ignores untrusted hooks)".into()),
        );
        return;
    };
    let listing = match codex::list_hooks(codex, &opts.cwd, CODEX_TIMEOUT) {
        Ok(l) => l,
        Err(e) => {
            out.red(
                HostKind::Codex.as_str(),
                "hook trust",
                format!("{} ({})", e.message(), e.code()),
                format!("check that `{} app-server` starts", codex.display()),
            );
            return;
        }
    };
    let bin_dir = root.join("bin");
    let ours: Vec<&codex::ListedHook> = listing
        .hooks
        .iter()
        .filter(|h| h.command.split_whitespace().next().map(|f| Path::new(f).starts_with(&bin_dir)).unwrap_or(false))
        .collect();
    if !listing.errors.is_empty() {
        out.red(
            HostKind::Codex.as_str(),
            "hook trust",
            format!("Codex rejects a hooks config: {}", kijito_protocol::ids::clip(&listing.errors.join("; "))),
            "fix the file named in the error (or re-run install.sh)",
        );
        return;
    }
    if ours.is_empty() {
        out.red(
            HostKind::Codex.as_str(),
            "hook trust",
            format!("Codex (for {}) loads no hook of {}: none will fire", opts.cwd.display(), root.display()),
            format!("cp {}/hooks/hooks.json \"${{CODEX_HOME:-$HOME/.codex}}/hooks.json\" (or install {} as a Codex plugin, docs/configuration.md), with `[features] hooks = true` in config.toml, then trust the hooks with /hooks in codex", root.display(), root.display()),
        );
        return;
    }
    let of = |status: &str| ours.iter().filter(|h| h.trust_status == status).map(|h| h.event.clone()).collect::<Vec<_>>();
    let (modified, untrusted) = (of("modified"), of("untrusted"));
    let other: Vec<String> = ours
        .iter()
        .filter(|h| !["trusted", "modified", "untrusted"].contains(&h.trust_status.as_str()))
        .map(|h| format!("{}={}", h.event, h.trust_status))
        .collect();
    let sources: Vec<String> = {
        let mut s: Vec<String> = ours.iter().map(|h| h.source_path.clone()).collect();
        s.sort();
        s.dedup();
        s
    };
    if !modified.is_empty() {
        out.red(
            HostKind::Codex.as_str(),
            "hook trust",
            format!(
                "{} hook(s) changed since you trusted them (hash mismatch), Codex does not run them: {}",
                modified.len(),
                modified.join(", ")
            ),
            format!("review {} and trust the changed hooks again: run codex, type /hooks, trust each kijito-qa hook", sources.join(", ")),
        );
    } else if !untrusted.is_empty() {
        out.red(
            HostKind::Codex.as_str(),
            "hook trust",
            format!("{} hook(s) are not trusted, Codex does not run them: {}", untrusted.len(), untrusted.join(", ")),
            format!("run codex, type /hooks and trust the {} kijito-qa hooks (commands under {})", ours.len(), bin_dir.display()),
        );
    } else if !other.is_empty() {
        out.red(
            HostKind::Codex.as_str(),
            "hook trust",
            format!("unexpected trust status: {}", other.join(", ")),
            "open /hooks in codex and trust the kijito-qa hooks",
        );
    } else {
        out.green(HostKind::Codex.as_str(), "hook trust", format!("{} hooks of this root trusted ({})", ours.len(), sources.join(", ")));
    }
}

fn check_claude_validate(out: &mut Out, opts: &Options, root: &Path) {
    let Some(claude) = &opts.claude else {
        out.push(
            HostKind::Claude.as_str(),
            "validate",
            Status::NotChecked,
            "claude is not on PATH: `claude plugin validate --strict` not run",
            Some(format!("run `claude plugin validate --strict {}` where claude is installed", root.display())),
        );
        return;
    };
    let mut cmd = Command::new(claude);
    cmd.args(["plugin", "validate", "--strict"]).arg(root);
    match proc::run(cmd, CLAUDE_TIMEOUT, 64 * 1024) {
        Ok(o) if o.success() => {
            out.green(HostKind::Claude.as_str(), "validate", format!("claude plugin validate --strict {}: passed", root.display()))
        }
        Ok(o) => out.red(
            HostKind::Claude.as_str(),
            "validate",
            format!(
                "claude plugin validate --strict {} {}: {}",
                root.display(),
                if o.timed_out { "timed out".to_owned() } else { format!("exited {:?}", o.status) },
                o.tail(400)
            ),
            format!("fix what it names in {}/.claude-plugin/plugin.json or hooks/hooks.json (or re-run install.sh)", root.display()),
        ),
        Err(e) => out.red(HostKind::Claude.as_str(), "validate", e.message().to_owned(), format!("check that {} runs", claude.display())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_event_list_is_each_templates_keys() {
        let common = ["SessionStart", "UserPromptSubmit", "PreToolUse", "Stop", "PreCompact", "PostCompact"];
        assert_eq!(events(HostKind::Codex), common);
        let mut claude: Vec<&str> = common.to_vec();
        claude.splice(3..3, ["PostToolUse", "PostToolUseFailure"]);
        assert_eq!(events(HostKind::Claude), claude);
        for (host, t) in [(HostKind::Claude, TEMPLATES[0]), (HostKind::Codex, TEMPLATES[1])] {
            let v: Value = serde_json::from_str(t).expect("a template is JSON before rendering");
            let keys: Vec<&String> = v["hooks"].as_object().expect("hooks").keys().collect();
            assert_eq!(keys, events(host).iter().collect::<Vec<_>>());
        }
    }
}
