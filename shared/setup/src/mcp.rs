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
use kijito_files::datadir::HostKind;
use kijito_files::private::{self, FileRules};
use kijito_protocol::error::{Error, Result};
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
    }
}

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
                host_name(host)
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
        HostKind::Claude => render(CLAUDE_TEMPLATE, &registration),
        HostKind::Codex => merge_codex_config(existing.as_deref(), &registration, &path)?,
    };
    let unchanged = existing.as_deref() == Some(content.as_str());
    Ok(Plan { host, registration, path, content, unchanged })
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
/// symlink); Codex's directory is created owner-only when missing.
pub fn write(plan: &Plan) -> Result<()> {
    let dir =
        plan.path.parent().ok_or_else(|| Error::new(codes::CONFIG_UNREADABLE, format!("{} has no directory", plan.path.display())))?;
    if std::fs::symlink_metadata(dir).is_err() {
        private::ensure_private_dir(dir)?;
    }
    private::write_atomic(&plan.path, plan.content.as_bytes())
}

fn host_name(h: HostKind) -> &'static str {
    match h {
        HostKind::Codex => "codex",
        HostKind::Claude => "claude",
    }
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
            assert_eq!(e.code(), codes::CODEX_CONFIG_CONFLICT, "{text}");
        }
        // a different server whose name starts the same is not ours
        assert!(merge_codex_config(Some("[mcp_servers.kijito2]\ncommand = \"y\"\n"), &reg(), path).is_ok());
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
