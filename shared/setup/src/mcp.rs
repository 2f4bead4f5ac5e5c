//! `kijito-setup --mcp`: register `kijito-local mcp` with a host when the
//! config points at kijito-local, and the doctor's `mcp` check
//! (docs/kijito-local.md, "Registering the MCP server with the hosts").
//!
//! - Claude Code 2.1.328 reads a plugin's MCP servers from `.mcp.json` in the
//!   plugin root (`{"mcpServers": {...}}`): kijito-setup writes that file
//!   into the installed Claude plugin root from `hooks/claude/mcp.json.tmpl`.
//! - Codex 0.169 reads `[mcp_servers.<name>]` tables of
//!   `$CODEX_HOME/config.toml`: kijito-setup merges one marked block
//!   (`hooks/codex/mcp_servers.toml.tmpl`) into it, every other line kept.
//!
//! The command is absolute (`<root>/bin/kijito-local`) and the arguments name
//! the same SQLite file `kijito-local serve` uses, plus the config's pointer,
//! lock, persona and project, so the server needs nothing from the host's
//! environment (Codex hands MCP servers only a short list of variables).

use crate::proc;
use kijito_files::config::Config;
use kijito_files::private::{self, FileRules};
use kijito_protocol::error::{Error, Result};
use kijito_protocol::host::HostKind;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// Stable codes of `--mcp`.
pub mod codes {
    kijito_protocol::codes! {
        NEEDS_KIJITO_LOCAL NeedsKijitoLocal = "mcp_needs_kijito_local",
        DB_INVALID DbInvalid = "mcp_db_invalid",
        SERVER_MISSING ServerMissing = "mcp_server_not_installed",
        CONFIG_UNREADABLE ConfigUnreadable = "mcp_config_unreadable",
        CODEX_CONFIG_CONFLICT CodexConfigConflict = "codex_config_conflict",
        CLAUDE_CONFIG_INVALID ClaudeConfigInvalid = "claude_mcp_config_invalid",
        REGISTRATIONS_INVALID RegistrationsInvalid = "mcp_registrations_invalid",
    }
}

/// In a plugin root: every host config file `--mcp --write` wrote, one line
/// each, `<claude|codex> <created|merged> <absolute path>` (created: the file
/// did not exist before), so `--mcp-uninstall` (install.sh --uninstall)
/// removes exactly what was written there.
pub const REGISTRATIONS_FILE: &str = ".kijito-mcp-registrations";

/// The server's name in both hosts' configs.
pub const SERVER_NAME: &str = "kijito";
/// The tools the skill's curation pass and wake checks call: the doctor's
/// check is green only when the registered server lists every one.
pub const REQUIRED_TOOLS: &[&str] =
    &["kijito_recall", "kijito_get", "kijito_remember", "kijito_correct", "kijito_fade", "kijito_anchor_audit", "kijito_wake_check"];
/// The Claude Code template (rendered into `<claude root>/.mcp.json`).
pub const CLAUDE_TEMPLATE: &str = include_str!("../../../hooks/claude/mcp.json.tmpl");
/// The Codex template (merged into `$CODEX_HOME/config.toml`).
pub const CODEX_TEMPLATE: &str = include_str!("../../../hooks/codex/mcp_servers.toml.tmpl");
/// First and last line of kijito-qa's block in Codex's config.toml.
pub const CODEX_BEGIN: &str = "# BEGIN kijito-qa mcp (written by kijito-setup --mcp; run it again to change this block)";
pub const CODEX_END: &str = "# END kijito-qa mcp";
/// Largest config.toml / .mcp.json read.
pub const MAX_FILE_BYTES: u64 = 1024 * 1024;
/// Time the doctor gives the registered server to answer `tools/list`.
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(20);

/// The command a host runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Registration {
    pub command: PathBuf,
    pub args: Vec<String>,
}

impl Registration {
    /// The value of `--db` in the arguments.
    pub fn db(&self) -> Option<&str> {
        self.args.iter().position(|a| a == "--db").and_then(|i| self.args.get(i + 1)).map(String::as_str)
    }

    /// The value of `flag` in the arguments.
    pub fn flag(&self, flag: &str) -> Option<&str> {
        self.args.iter().position(|a| a == flag).and_then(|i| self.args.get(i + 1)).map(String::as_str)
    }
}

/// Whether the config points at kijito-local (plain http, which the config
/// allows only to a loopback host).
pub fn is_kijito_local(config: &Config) -> bool {
    config.api_url.as_str().starts_with("http://")
}

/// What a host should run for `root` (a host's plugin root) and `db`.
pub fn registration(root: &Path, db: &Path, config: &Config) -> Registration {
    let mut args = vec!["mcp".to_owned(), "--db".to_owned(), db.to_string_lossy().into_owned()];
    if let Some(p) = config.pointer_id {
        args.extend(["--pointer-id".to_owned(), p.get().to_string()]);
    }
    if let Some(l) = config.lock_message_id {
        args.extend(["--lock-message-id".to_owned(), l.get().to_string()]);
    }
    args.extend(["--persona".to_owned(), config.persona.as_str().to_owned(), "--project".to_owned(), config.project.clone()]);
    Registration { command: root.join("bin").join("kijito-local"), args }
}

fn render(template: &str, r: &Registration) -> String {
    // A JSON string is a TOML basic string, and a JSON array of strings a TOML array.
    template
        .replace("@SERVER@", SERVER_NAME)
        .replace("@COMMAND@", &Value::String(r.command.to_string_lossy().into_owned()).to_string())
        .replace("@ARGS@", &json!(r.args).to_string())
}

/// `<claude root>/.mcp.json`.
pub fn claude_path(root: &Path) -> PathBuf {
    root.join(".mcp.json")
}

/// `$CODEX_HOME/config.toml`, else `~/.codex/config.toml`.
pub fn codex_config_path(codex_home: Option<&Path>, home: &Path) -> PathBuf {
    codex_home.map(Path::to_path_buf).unwrap_or_else(|| home.join(".codex")).join("config.toml")
}

fn read_optional(path: &Path, code: codes::Code) -> Result<Option<String>> {
    match std::fs::symlink_metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Error::new(code, format!("cannot stat {}: {e}", path.display()))),
        Ok(m) if m.file_type().is_symlink() => {
            return Err(Error::new(code, format!("{} is a symlink; kijito-setup never writes through one", path.display())))
        }
        Ok(_) => {}
    }
    let (bytes, _) = private::read_checked(path, FileRules { owner_only: false, min_bytes: 0, max_bytes: MAX_FILE_BYTES })
        .map_err(|e| Error::new(code, format!("{}: {} ({})", path.display(), e.message(), e.code())))?;
    String::from_utf8(bytes).map(Some).map_err(|_| Error::new(code, format!("{} is not UTF-8", path.display())))
}

/// The line range `[begin, end]` of kijito-qa's block, if any.
fn codex_block(lines: &[&str]) -> std::result::Result<Option<(usize, usize)>, String> {
    let begin = lines.iter().position(|l| l.trim_end() == CODEX_BEGIN);
    let end = lines.iter().position(|l| l.trim_end() == CODEX_END);
    match (begin, end) {
        (None, None) => Ok(None),
        (Some(b), Some(e)) if b < e => Ok(Some((b, e))),
        _ => Err("kijito-qa's block is broken (a BEGIN line without its END line, or the other way round)".to_owned()),
    }
}

/// Whether a line outside our block defines a server of our name.
fn defines_our_server(line: &str) -> bool {
    let t: String = line.split('#').next().unwrap_or("").chars().filter(|c| !c.is_whitespace()).collect();
    t.starts_with(&format!("[mcp_servers.{SERVER_NAME}]"))
        || t.starts_with(&format!("[mcp_servers.{SERVER_NAME}."))
        || t.starts_with(&format!("[mcp_servers.\"{SERVER_NAME}\""))
        || t.starts_with(&format!("mcp_servers.{SERVER_NAME}"))
        || t.starts_with(&format!("{SERVER_NAME}="))
        || t.starts_with(&format!("{SERVER_NAME}."))
        || t.starts_with(&format!("\"{SERVER_NAME}\""))
}

/// Merge kijito-qa's block into Codex's config.toml text (`None`: no file):
/// replace the block when it is there, else append it; every other line is
/// kept byte for byte. Refuses (nothing written) when another definition of
/// the server's name is outside the block, or the block is broken.
pub fn merge_codex_config(existing: Option<&str>, r: &Registration, path: &Path) -> Result<String> {
    let block = render(CODEX_TEMPLATE, r);
    let Some(text) = existing.filter(|t| !t.trim().is_empty()) else {
        return Ok(block);
    };
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let bare: Vec<&str> = lines.iter().map(|l| l.trim_end_matches(['\n', '\r'])).collect();
    let range = codex_block(&bare).map_err(|why| {
        Error::new(codes::CODEX_CONFIG_CONFLICT, format!("{}: {why}; fix it by hand, nothing was written", path.display()))
    })?;
    let outside = |i: usize| range.is_none_or(|(b, e)| i < b || i > e);
    if let Some(i) = (0..bare.len()).find(|i| outside(*i) && defines_our_server(bare[*i])) {
        return Err(Error::new(
            codes::CODEX_CONFIG_CONFLICT,
            format!("{} line {} already defines an MCP server named {SERVER_NAME:?} outside kijito-qa's block; remove it by hand (or rename it), then run kijito-setup --mcp again; nothing was written", path.display(), i + 1),
        ));
    }
    Ok(match range {
        Some((b, e)) => {
            let mut out: String = lines[..b].concat();
            out.push_str(&block);
            out.push_str(&lines[e + 1..].concat());
            out
        }
        None => {
            let mut out = text.to_owned();
            if !out.ends_with('\n') {
                out.push('\n');
            }
            out.push('\n');
            out.push_str(&block);
            out
        }
    })
}

/// Merge kijito-qa's server into Claude Code's `.mcp.json` text (`None`: no
/// file): the template alone when the file is missing or holds nothing but
/// our server, else the user's JSON with `mcpServers.kijito` set and every
/// other key and server kept (in its order). Refuses a file that is not a
/// JSON object (nothing written).
pub fn merge_claude_config(existing: Option<&str>, r: &Registration, path: &Path) -> Result<String> {
    let ours = render(CLAUDE_TEMPLATE, r);
    let Some(text) = existing.filter(|t| !t.trim().is_empty()) else {
        return Ok(ours);
    };
    let mut v = parse_claude(text, path)?;
    let entry = serde_json::from_str::<Value>(&ours).ok().and_then(|o| o["mcpServers"].get(SERVER_NAME).cloned()).unwrap_or(Value::Null);
    let top = v.as_object_mut().expect("parse_claude gives an object");
    let Some(servers) = top.entry("mcpServers").or_insert_with(|| json!({})).as_object_mut() else {
        return Err(Error::new(
            codes::CLAUDE_CONFIG_INVALID,
            format!("{}: mcpServers is not an object; fix it by hand, nothing was written", path.display()),
        ));
    };
    servers.insert(SERVER_NAME.to_owned(), entry);
    if top.len() == 1 && map_len(&v) == 1 {
        return Ok(ours);
    }
    Ok(format!("{}\n", serde_json::to_string_pretty(&v).unwrap_or_default()))
}

fn map_len(v: &Value) -> usize {
    v["mcpServers"].as_object().map_or(0, |m| m.len())
}

fn parse_claude(text: &str, path: &Path) -> Result<Value> {
    match serde_json::from_str::<Value>(text) {
        Ok(v) if v.is_object() => Ok(v),
        _ => Err(Error::new(
            codes::CLAUDE_CONFIG_INVALID,
            format!("{} is not a JSON object; fix it by hand (or remove it), nothing was written", path.display()),
        )),
    }
}

/// What `--mcp` would write.
#[derive(Debug, Clone)]
pub struct Plan {
    pub host: HostKind,
    pub registration: Registration,
    pub path: PathBuf,
    /// The complete new content of `path`.
    pub content: String,
    /// Whether `path` already holds exactly that.
    pub unchanged: bool,
    /// The host's plugin root (where [`REGISTRATIONS_FILE`] lives).
    pub root: PathBuf,
    /// Whether `path` does not exist yet.
    pub created: bool,
}

/// Check the config and the database, and say what to write where.
pub fn plan(host: HostKind, root: &Path, db: &Path, config: &Config, codex_home: Option<&Path>, home: &Path) -> Result<Plan> {
    if !is_kijito_local(config) {
        return Err(Error::new(
            codes::NEEDS_KIJITO_LOCAL,
            format!(
                "the config's apiUrl is {} (the hosted service, whose own MCP server your host registers); --mcp registers kijito-local's, for a config whose apiUrl is a loopback kijito-local (kijito-setup --api-url http://127.0.0.1:PORT ...)",
                config.api_url.as_str()
            ),
        ));
    }
    crate::permissions::check_safe_path(&root.join("bin"))?;
    let registration = registration(root, db, config);
    if !proc::is_executable(&registration.command) {
        return Err(Error::new(
            codes::SERVER_MISSING,
            format!(
                "{} is not installed (is {} a kijito-qa plugin root? install.sh --host {} installs one; give --root)",
                registration.command.display(),
                root.display(),
                host.as_str()
            ),
        ));
    }
    check_db(db).map_err(|why| Error::new(codes::DB_INVALID, format!("--db {}: {why}", db.display())))?;
    let (path, existing) = match host {
        HostKind::Claude => {
            let path = claude_path(root);
            let existing = read_optional(&path, codes::CONFIG_UNREADABLE)?;
            (path, existing)
        }
        HostKind::Codex => {
            let path = codex_config_path(codex_home, home);
            let existing = read_optional(&path, codes::CONFIG_UNREADABLE)?;
            (path, existing)
        }
    };
    let content = match host {
        HostKind::Claude => merge_claude_config(existing.as_deref(), &registration, &path)?,
        HostKind::Codex => merge_codex_config(existing.as_deref(), &registration, &path)?,
    };
    let unchanged = existing.as_deref() == Some(content.as_str());
    Ok(Plan { host, registration, path, content, unchanged, root: root.to_path_buf(), created: existing.is_none() })
}

/// The store must be the one `kijito-local serve` already made: a regular
/// file you own, not a symlink (a missing file would make `mcp` start an
/// empty store the agent would curate by mistake).
pub fn check_db(db: &Path) -> std::result::Result<(), String> {
    if !db.is_absolute() {
        return Err("must be an absolute path".into());
    }
    let m = std::fs::symlink_metadata(db).map_err(|e| format!("{e} (give the --db that kijito-local serve uses; it creates the file)"))?;
    if m.file_type().is_symlink() {
        return Err("is a symlink".into());
    }
    if !m.is_file() {
        return Err("is not a regular file".into());
    }
    use std::os::unix::fs::MetadataExt;
    if m.uid() != private::current_uid() {
        return Err(format!("is owned by uid {}, not by you", m.uid()));
    }
    Ok(())
}

/// Write the plan atomically (temp + fsync + rename, 0600, never through a
/// symlink); Codex's directory is created owner-only when missing. The file
/// is recorded in the root's [`REGISTRATIONS_FILE`] first, so an uninstall
/// finds everything that may have been written.
pub fn write(plan: &Plan) -> Result<()> {
    let mut lines = read_registrations(&plan.root)?;
    if !lines.iter().any(|l| l.path == plan.path) {
        lines.push(Recorded { host: plan.host, created: plan.created, path: plan.path.clone() });
        let text: String = lines
            .iter()
            .map(|l| format!("{} {} {}\n", l.host.as_str(), if l.created { "created" } else { "merged" }, l.path.display()))
            .collect();
        kijito_files::private::write_atomic_unlocked(&plan.root.join(REGISTRATIONS_FILE), text.as_bytes())?;
    }
    let dir =
        plan.path.parent().ok_or_else(|| Error::new(codes::CONFIG_UNREADABLE, format!("{} has no directory", plan.path.display())))?;
    if std::fs::symlink_metadata(dir).is_err() {
        private::ensure_private_dir(dir)?;
    }
    kijito_files::private::write_atomic_unlocked(&plan.path, plan.content.as_bytes())
}

/// One line of [`REGISTRATIONS_FILE`].
#[derive(Debug, Clone, PartialEq, Eq)]
struct Recorded {
    host: HostKind,
    created: bool,
    path: PathBuf,
}

fn read_registrations(root: &Path) -> Result<Vec<Recorded>> {
    let file = root.join(REGISTRATIONS_FILE);
    let Some(text) = read_optional(&file, codes::REGISTRATIONS_INVALID)? else { return Ok(Vec::new()) };
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let mut parts = l.splitn(3, ' ');
            let (h, how, path) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""), parts.next().unwrap_or(""));
            let host = HostKind::parse(h).ok();
            let path = PathBuf::from(path);
            match (host, how) {
                (Some(host), "created" | "merged") if path.is_absolute() => Ok(Recorded { host, created: how == "created", path }),
                _ => Err(Error::new(
                    codes::REGISTRATIONS_INVALID,
                    format!("{}: cannot read the line {l:?}; nothing was removed", file.display()),
                )),
            }
        })
        .collect()
}

/// Claude Code's `.mcp.json` without our server: None when nothing else is
/// left (the file goes), else the rest (every other key and server kept).
/// Our server is removed only when it runs `root`'s kijito-local.
pub fn unmerge_claude_config(text: &str, root: &Path, path: &Path) -> Result<Option<String>> {
    let mut v = parse_claude(text, path)?;
    let ours = root.join("bin").join("kijito-local");
    let top = v.as_object_mut().expect("parse_claude gives an object");
    if let Some(servers) = top.get_mut("mcpServers").and_then(Value::as_object_mut) {
        if servers.get(SERVER_NAME).and_then(|s| s["command"].as_str()) == Some(&*ours.to_string_lossy()) {
            servers.shift_remove(SERVER_NAME);
        }
        if servers.is_empty() {
            top.shift_remove("mcpServers");
        }
    }
    if top.is_empty() {
        return Ok(None);
    }
    Ok(Some(format!("{}\n", serde_json::to_string_pretty(&v).unwrap_or_default())))
}

/// Codex's config.toml without kijito-qa's block (and the blank line
/// `--mcp` put before it when appending): every other line byte for byte.
pub fn unmerge_codex_config(text: &str, path: &Path) -> Result<String> {
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let bare: Vec<&str> = lines.iter().map(|l| l.trim_end_matches(['\n', '\r'])).collect();
    let range = codex_block(&bare).map_err(|why| {
        Error::new(codes::CODEX_CONFIG_CONFLICT, format!("{}: {why}; fix it by hand, nothing was removed", path.display()))
    })?;
    let Some((b, e)) = range else { return Ok(text.to_owned()) };
    let from = if b > 0 && bare[b - 1].trim().is_empty() { b - 1 } else { b };
    Ok(format!("{}{}", lines[..from].concat(), lines[e + 1..].concat()))
}

/// `--mcp-uninstall`: take kijito-qa's server out of every file the root's
/// [`REGISTRATIONS_FILE`] lists (a file `--mcp` created goes when nothing
/// else is left in it; a merged one keeps everything else), then remove the
/// list. Fails closed (nothing more removed) on a file it cannot read or
/// parse. Returns one sentence per file.
pub fn unregister(root: &Path) -> Result<Vec<String>> {
    let mut done = Vec::new();
    for rec in read_registrations(root)? {
        let Some(text) = read_optional(&rec.path, codes::CONFIG_UNREADABLE)? else {
            done.push(format!("{}: already gone", rec.path.display()));
            continue;
        };
        let rest = match rec.host {
            // A file of the user's stays, as an empty object if nothing else is left.
            HostKind::Claude => unmerge_claude_config(&text, root, &rec.path)?.or_else(|| (!rec.created).then(|| "{}\n".to_owned())),
            HostKind::Codex => Some(unmerge_codex_config(&text, &rec.path)?).filter(|t| !(rec.created && t.trim().is_empty())),
        };
        match rest {
            None => {
                private::remove_owned(&rec.path)?;
                private::fsync_parent(&rec.path)?;
                done.push(format!("{}: removed (it held only kijito-qa's server)", rec.path.display()));
            }
            Some(t) if t == text => done.push(format!("{}: no kijito-qa server in it; left as it is", rec.path.display())),
            Some(t) => {
                kijito_files::private::write_atomic_unlocked(&rec.path, t.as_bytes())?;
                done.push(format!("{}: kijito-qa's server removed, everything else kept", rec.path.display()));
            }
        }
    }
    // each removal is made durable before the next step relies on it
    // (docs/protocol.md §7, "Crash recovery")
    if private::remove_owned(&root.join(REGISTRATIONS_FILE))? {
        private::fsync_parent(&root.join(REGISTRATIONS_FILE))?;
    }
    Ok(done)
}

/// What the installed host config registers under [`SERVER_NAME`]:
/// Ok(None) when nothing is registered; Err(why) when the file cannot be
/// read or the entry is not one this module wrote.
pub fn installed(
    host: HostKind,
    root: &Path,
    codex_home: Option<&Path>,
    home: &Path,
) -> std::result::Result<Option<(PathBuf, Registration)>, String> {
    let (path, text) = match host {
        HostKind::Claude => {
            let p = claude_path(root);
            let t = read_optional(&p, codes::CONFIG_UNREADABLE).map_err(|e| e.message().to_owned())?;
            (p, t)
        }
        HostKind::Codex => {
            let p = codex_config_path(codex_home, home);
            let t = read_optional(&p, codes::CONFIG_UNREADABLE).map_err(|e| e.message().to_owned())?;
            (p, t)
        }
    };
    let Some(text) = text else { return Ok(None) };
    let parse = |command: &Value, args: &Value| -> std::result::Result<Registration, String> {
        let command = command.as_str().ok_or("command is not a string")?;
        let args = args
            .as_array()
            .ok_or("args is not an array")?
            .iter()
            .map(|a| a.as_str().map(str::to_owned).ok_or("an argument is not a string"))
            .collect::<std::result::Result<Vec<_>, _>>()?;
        Ok(Registration { command: PathBuf::from(command), args })
    };
    let r = match host {
        HostKind::Claude => {
            let v: Value = serde_json::from_str(&text).map_err(|e| format!("{}: not JSON ({e})", path.display()))?;
            let Some(s) = v.get("mcpServers").and_then(|m| m.get(SERVER_NAME)) else {
                return Ok(None);
            };
            parse(&s["command"], &s["args"]).map_err(|why| format!("{}: {why}", path.display()))?
        }
        HostKind::Codex => {
            let lines: Vec<&str> = text.lines().collect();
            let Some((b, e)) = codex_block(&lines).map_err(|why| format!("{}: {why}", path.display()))? else {
                return match lines.iter().position(|l| defines_our_server(l)) {
                    Some(i) => Err(format!("{} line {} defines {SERVER_NAME:?} by hand, not kijito-setup's block", path.display(), i + 1)),
                    None => Ok(None),
                };
            };
            let value = |key: &str| -> std::result::Result<Value, String> {
                let line = lines[b..e]
                    .iter()
                    .find_map(|l| l.strip_prefix(key).and_then(|r| r.trim_start().strip_prefix('=')))
                    .ok_or(format!("no {key} line in kijito-qa's block"))?;
                serde_json::from_str(line.trim()).map_err(|_| format!("the {key} line of kijito-qa's block was edited by hand"))
            };
            parse(&value("command")?, &value("args")?).map_err(|why| format!("{}: {why}", path.display()))?
        }
    };
    Ok(Some((path, r)))
}

/// Run the registered command as the host does and ask it for `tools/list`
/// (initialize, initialized, tools/list, then end of input). Returns the
/// tool names it lists, or why not.
pub fn list_tools(r: &Registration) -> std::result::Result<Vec<String>, String> {
    let init = json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"kijito-doctor","version":env!("CARGO_PKG_VERSION")}}});
    let list = json!({"jsonrpc":"2.0","id":2,"method":"tools/list"});
    let input = format!("{init}\n{}\n{list}\n", json!({"jsonrpc":"2.0","method":"notifications/initialized"}));
    let mut cmd = Command::new(&r.command);
    cmd.args(&r.args);
    let out = proc::run_with_input(cmd, input.into_bytes(), PROBE_TIMEOUT, 4 * 1024 * 1024).map_err(|e| e.message().to_owned())?;
    if out.timed_out {
        return Err(format!("no answer within {} s", PROBE_TIMEOUT.as_secs()));
    }
    let answer = out.stdout.lines().filter_map(|l| serde_json::from_str::<Value>(l).ok()).find(|v| v["id"] == 2);
    let Some(answer) = answer else {
        return Err(format!("no tools/list answer (exit {:?}): {}", out.status, out.tail(200)));
    };
    let tools = answer["result"]["tools"]
        .as_array()
        .ok_or_else(|| format!("tools/list failed: {}", kijito_protocol::ids::clip(&answer.to_string())))?;
    Ok(tools.iter().filter_map(|t| t["name"].as_str().map(str::to_owned)).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reg() -> Registration {
        Registration {
            command: PathBuf::from("/p/codex/bin/kijito-local"),
            args: vec!["mcp".into(), "--db".into(), "/d/a \"b\".db".into()],
        }
    }

    #[test]
    fn the_codex_block_is_appended_then_replaced_and_every_other_line_kept() {
        let path = Path::new("/h/.codex/config.toml");
        let user = "model = \"o3\"\n\n[mcp_servers.other]\ncommand = \"x\"\n";
        let once = merge_codex_config(Some(user), &reg(), path).unwrap();
        assert!(once.starts_with(user));
        assert!(once.ends_with(&format!("{CODEX_BEGIN}\n[mcp_servers.kijito]\ncommand = \"/p/codex/bin/kijito-local\"\nargs = [\"mcp\",\"--db\",\"/d/a \\\"b\\\".db\"]\n{CODEX_END}\n")), "{once}");
        let mut other = reg();
        other.args.push("--project".into());
        other.args.push("P".into());
        let tail = "\n[profiles.x]\nmodel = \"y\"\n";
        let twice = merge_codex_config(Some(&format!("{once}{tail}")), &other, path).unwrap();
        assert!(twice.starts_with(user) && twice.ends_with(tail), "{twice}");
        assert_eq!(twice.matches(CODEX_BEGIN).count(), 1);
        assert!(twice.contains("\"--project\",\"P\""));
        // nothing: the block alone
        assert_eq!(merge_codex_config(None, &reg(), path).unwrap(), render(CODEX_TEMPLATE, &reg()));
    }

    #[test]
    fn a_hand_written_server_of_the_same_name_or_a_broken_block_is_refused() {
        let path = Path::new("/h/.codex/config.toml");
        for text in [
            "[mcp_servers.kijito]\ncommand = \"y\"\n",
            "[mcp_servers]\nkijito = { command = \"y\" }\n",
            "mcp_servers.kijito.command = \"y\"\n",
            &format!("{CODEX_BEGIN}\n[mcp_servers.kijito]\n"),
        ] {
            let e = merge_codex_config(Some(text), &reg(), path).unwrap_err();
            assert_eq!(e.code(), codes::CODEX_CONFIG_CONFLICT.as_str(), "{text}");
        }
        // a different server whose name starts the same is not ours
        assert!(merge_codex_config(Some("[mcp_servers.kijito2]\ncommand = \"y\"\n"), &reg(), path).is_ok());
    }

    #[test]
    fn claude_config_keeps_the_users_servers_and_unmerges_to_them() {
        let path = Path::new("/p/claude/.mcp.json");
        let root = Path::new("/p/codex");
        // Nothing there, or only our server: the template's bytes.
        assert_eq!(merge_claude_config(None, &reg(), path).unwrap(), render(CLAUDE_TEMPLATE, &reg()));
        let ours = render(CLAUDE_TEMPLATE, &reg());
        assert_eq!(merge_claude_config(Some(&ours), &reg(), path).unwrap(), ours);
        assert_eq!(unmerge_claude_config(&ours, root, path).unwrap(), None);
        // The user's servers and keys kept, in their order; ours added, then taken out.
        let user = r#"{"z": 1, "mcpServers": {"docs": {"command": "/d"}}}"#;
        let merged = merge_claude_config(Some(user), &reg(), path).unwrap();
        let v: Value = serde_json::from_str(&merged).unwrap();
        assert_eq!(v.as_object().unwrap().keys().collect::<Vec<_>>(), ["z", "mcpServers"]);
        assert_eq!(v["mcpServers"]["kijito"]["command"], "/p/codex/bin/kijito-local");
        let back: Value = serde_json::from_str(&unmerge_claude_config(&merged, root, path).unwrap().unwrap()).unwrap();
        assert_eq!(back, serde_json::from_str::<Value>(user).unwrap());
        // A "kijito" server that runs something else is the user's: kept.
        let theirs = r#"{"mcpServers": {"kijito": {"command": "/elsewhere"}}}"#;
        let kept: Value = serde_json::from_str(&unmerge_claude_config(theirs, root, path).unwrap().unwrap()).unwrap();
        assert_eq!(kept, serde_json::from_str::<Value>(theirs).unwrap());
        // Not a JSON object: refused both ways.
        for bad in ["[]", "{ nope", r#"{"mcpServers": 3}"#] {
            assert_eq!(merge_claude_config(Some(bad), &reg(), path).unwrap_err().code(), codes::CLAUDE_CONFIG_INVALID.as_str(), "{bad}");
        }
        assert_eq!(unmerge_claude_config("{ nope", root, path).unwrap_err().code(), codes::CLAUDE_CONFIG_INVALID.as_str());
    }

    #[test]
    fn the_codex_block_unmerges_to_the_users_bytes() {
        let path = Path::new("/h/.codex/config.toml");
        let user = "model = \"o3\"\n\n[mcp_servers.other]\ncommand = \"x\"\n";
        let once = merge_codex_config(Some(user), &reg(), path).unwrap();
        assert_eq!(unmerge_codex_config(&once, path).unwrap(), user);
        let tail = "\n[profiles.x]\nmodel = \"y\"\n";
        assert_eq!(unmerge_codex_config(&format!("{once}{tail}"), path).unwrap(), format!("{user}{tail}"));
        assert_eq!(unmerge_codex_config(&merge_codex_config(None, &reg(), path).unwrap(), path).unwrap(), "");
        assert_eq!(unmerge_codex_config(user, path).unwrap(), user);
        assert_eq!(unmerge_codex_config(&format!("{CODEX_BEGIN}\n"), path).unwrap_err().code(), codes::CODEX_CONFIG_CONFLICT.as_str());
    }

    #[test]
    fn templates_render_to_what_installed_reads_back() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("claude");
        std::fs::create_dir(&root).unwrap();
        std::fs::write(claude_path(&root), render(CLAUDE_TEMPLATE, &reg())).unwrap();
        let (_, back) = installed(HostKind::Claude, &root, None, dir.path()).unwrap().unwrap();
        assert_eq!(back, reg());
        let home = dir.path().join("codexhome");
        std::fs::create_dir(&home).unwrap();
        std::fs::write(codex_config_path(Some(&home), dir.path()), merge_codex_config(Some("a = 1\n"), &reg(), Path::new("x")).unwrap())
            .unwrap();
        let (_, back) = installed(HostKind::Codex, &root, Some(&home), dir.path()).unwrap().unwrap();
        assert_eq!(back, reg());
        assert_eq!(back.db(), Some("/d/a \"b\".db"));
    }
}
