//! `kijito-setup --sandbox --host claude|codex --root ABS [--write] [--uninstall]`:
//! the hosts' own OS sandboxes, set up so that no command the agent runs can
//! write kijito-qa's state, config, data, plugin roots or the latch, whatever
//! it is spelt like; and the doctor's `sandbox` check (docs/configuration.md,
//! "Sandbox"; docs/protocol.md §12 records what each host version blocks).
//!
//! Measured offline on Claude Code 2.1.328 (bubblewrap, tests/hosts/host-e2e,
//! 2026-12-06; docs/protocol.md §12):
//! - with `sandbox.enabled`, a Bash call writes only the project and the
//!   host's temp dir; every other path (home, /tmp, the install prefix) is
//!   read-only, loopback is unreachable;
//! - `sandbox.filesystem.denyWrite` takes absolute paths (and `~/`); a
//!   relative entry or a `**` pattern protects nothing inside the project,
//!   while a `permissions.deny` rule `Edit(<relative>/**)` does (the Bash
//!   sandbox merges Edit deny rules; a `mv` of the directory fails too);
//! - `sandbox.excludedCommands` `<abs helper> *` runs exactly that command
//!   (with or without arguments) outside; a line with any other command,
//!   an assignment prefix (`FOO=1 helper`), a command substitution or
//!   `sh -c` stays sandboxed; a line of excluded commands only (`a; b`) runs
//!   outside, which the PreToolUse guard denies for helper lines.
//!
//! Codex 0.169 (measured the same way, docs/protocol.md §12): the
//! permission profile `kijito-qa` (`default_permissions` at the top of
//! `$CODEX_HOME/config.toml`, the `[permissions.kijito-qa]` tables at its
//! end): the built-in `:workspace` (the project, `/tmp` and `$TMPDIR`
//! writable, network off) with `.memory-latch` read-only in every workspace
//! root, which `sandbox_mode = "workspace-write"` cannot say. A `sandbox_mode`
//! line wins over `default_permissions`, so the user's is kept as a comment
//! (and put back by `--uninstall`). The helpers run outside it through the
//! `--allow-helpers` prefix rules.

use crate::permissions::{self, AGENT_COMMANDS};
use kijito_files::private;
use kijito_protocol::error::{Error, Result};
use kijito_protocol::host::HostKind;
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};

/// Stable codes of `--sandbox`.
pub mod codes {
    kijito_protocol::codes! {
        /// Codex's config.toml cannot be merged safely (not UTF-8).
        CODEX_CONFIG_INVALID CodexConfigInvalid = "sandbox_codex_config_invalid",
    }
}

/// The line kijito-qa writes at the top of Codex's config.toml.
pub const CODEX_LINE: &str = "default_permissions = \"kijito-qa\" # kijito-setup --sandbox";
/// The profile's tables, appended at the end of config.toml after the
/// comment line (a top-level key after a table would land in it). No end
/// marker: Codex appends its own tables (`[tui]`) after the last line.
pub const CODEX_PROFILE: &[&str] = &[
    "# kijito-setup --sandbox: the kijito-qa permission profile (docs/protocol.md §12)",
    "[permissions.kijito-qa]",
    "extends = \":workspace\"",
    "[permissions.kijito-qa.filesystem.\":workspace_roots\"]",
    "\".memory-latch\" = \"read\"",
];
/// The line an earlier kijito-setup wrote instead; taken out by both ways.
const CODEX_OLD_LINE: &str = "sandbox_mode = \"workspace-write\" # kijito-setup --sandbox";
/// The comment that keeps a top-level `sandbox_mode` or
/// `default_permissions` line of the user's that would override or replace
/// the profile (`--uninstall` puts it back).
pub const CODEX_REPLACED: &str = "# kijito-setup --sandbox replaced: ";

/// Where the protected paths are.
#[derive(Debug, Clone)]
pub struct Paths {
    /// The install prefix (`--root`), and every plugin root under it.
    pub root: PathBuf,
    pub home: PathBuf,
    pub claude_dir: PathBuf,
    pub codex_home: PathBuf,
    /// kijito-qa's config directory, its state directory (latch head
    /// records, ledger) and its data directory.
    pub kijito_config: PathBuf,
    pub state: Option<PathBuf>,
    pub data: Option<PathBuf>,
    /// The configured Kijito API host (none for a loopback kijito-local:
    /// the helpers reach it from outside the sandbox).
    pub api_host: Option<String>,
}

impl Paths {
    /// From the real environment and config (`root` is `--root`: the install
    /// prefix, or one host's plugin root under it, which counts as its prefix).
    pub fn from_env(root: &Path) -> Result<Paths> {
        use kijito_files::config;
        let plugin = [".claude-plugin", ".codex-plugin"].iter().any(|m| root.join(m).is_dir());
        let root = if plugin { root.parent().unwrap_or(root) } else { root };
        let cfg = config::Config::load().ok();
        let state = kijito_files::datadir::heads_dir().map(|h| {
            if h.ends_with("kijito-qa/latch-heads") {
                h.parent().map(Path::to_path_buf).unwrap_or(h)
            } else {
                h
            }
        });
        let data = kijito_files::datadir::resolve(None, None, cfg.as_ref()).ok().map(|p| p.as_path().to_path_buf());
        let api_host = cfg.as_ref().map(|c| c.api_url.host()).filter(|h| !h.is_empty() && !config::is_loopback_host(h));
        Ok(Paths {
            root: root.to_path_buf(),
            home: config::home_dir()?,
            claude_dir: config::claude_config_dir()?,
            codex_home: config::codex_home()?,
            kijito_config: config::config_home()?.join("kijito-qa"),
            state,
            data,
            api_host,
        })
    }
}

/// Shell startup files and directories under HOME that run on the user's
/// next login or shell.
const SHELL_FILES: &[&str] =
    &[".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".profile", ".zshrc", ".zshenv", ".zprofile", ".zlogin", ".config/fish"];

/// Project-relative paths the Bash sandbox must not write, as Claude Code
/// `permissions.deny` rules (a relative `denyWrite` entry protects nothing,
/// measured): the latch, git hooks, CI workflows and the hosts' project files.
pub const PROJECT_DENY: &[&str] = &[
    "Edit(.memory-latch/**)",
    "Edit(.git/hooks/**)",
    "Edit(.github/workflows/**)",
    "Edit(.gitlab-ci.yml)",
    "Edit(.claude/**)",
    "Edit(.mcp.json)",
    "Edit(.codex/**)",
];

/// What kijito-qa puts into Claude Code's user settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaudeEntries {
    /// `sandbox.excludedCommands`: one `<abs helper> [sub] *` per agent command.
    pub excluded: Vec<String>,
    /// `sandbox.filesystem.denyWrite`: absolute paths.
    pub deny_write: Vec<String>,
    /// `permissions.deny`: [`PROJECT_DENY`].
    pub deny_edit: Vec<String>,
    /// `sandbox.network.allowedDomains`.
    pub domains: Vec<String>,
}

/// The switches: on, a missing sandbox stops the host, no unsandboxed retry.
pub const CLAUDE_SWITCHES: &[(&str, bool)] = &[("enabled", true), ("failIfUnavailable", true), ("allowUnsandboxedCommands", false)];

/// The entries for the helpers of `<root>/<claude plugin root>/bin`.
pub fn claude_entries(p: &Paths) -> ClaudeEntries {
    let bin = permissions::plugin_root(&p.root, HostKind::Claude).join("bin");
    let excluded = AGENT_COMMANDS.iter().map(|(h, s)| format!("{} *", permissions::command_words(&bin, h, s).join(" "))).collect();
    let mut deny: Vec<PathBuf> = vec![p.root.clone(), p.kijito_config.clone()];
    deny.extend(p.state.iter().cloned());
    deny.extend(p.data.iter().cloned());
    deny.extend([p.claude_dir.clone(), p.home.join(".claude.json"), p.codex_home.clone(), p.home.join(".ssh")]);
    deny.extend(SHELL_FILES.iter().map(|f| p.home.join(f)));
    let mut deny_write: Vec<String> = Vec::new();
    for d in deny {
        let s = d.to_string_lossy().into_owned();
        if !deny_write.contains(&s) {
            deny_write.push(s);
        }
    }
    ClaudeEntries {
        excluded,
        deny_write,
        deny_edit: PROJECT_DENY.iter().map(|s| (*s).to_owned()).collect(),
        domains: p.api_host.iter().cloned().collect(),
    }
}

fn invalid(path: &Path, why: &str) -> Error {
    Error::new(permissions::codes::SETTINGS_INVALID, format!("{}: {why}; fix it by hand, kijito-setup writes nothing then", path.display()))
}

/// The object at `keys` under `root`, created when missing.
fn object_at<'a>(root: &'a mut Value, keys: &[&str], path: &Path) -> Result<&'a mut Map<String, Value>> {
    let mut cur = root;
    for k in keys {
        let o = cur.as_object_mut().ok_or_else(|| invalid(path, &format!("\"{k}\"'s parent is not an object")))?;
        cur = o.entry(*k).or_insert_with(|| Value::Object(Map::new()));
    }
    cur.as_object_mut().ok_or_else(|| invalid(path, &format!("\"{}\" is not an object", keys.join("."))))
}

/// The array lists of [`ClaudeEntries`]: (object path, key, entries).
fn lists(e: &ClaudeEntries) -> [(&'static [&'static str], &'static str, &Vec<String>); 4] {
    [
        (&["sandbox"], "excludedCommands", &e.excluded),
        (&["sandbox", "filesystem"], "denyWrite", &e.deny_write),
        (&["permissions"], "deny", &e.deny_edit),
        (&["sandbox", "network"], "allowedDomains", &e.domains),
    ]
}

/// Merge (or, `uninstall`, take out) kijito-qa's sandbox entries in Claude
/// Code settings text (`None`: no file): array entries added in order or
/// removed; the switches set, or removed where they still hold kijito-qa's
/// value; every other key and entry kept. Returns the new text and one line
/// per change.
pub fn merge_claude(existing: Option<&[u8]>, e: &ClaudeEntries, path: &Path, uninstall: bool) -> Result<(String, Vec<String>)> {
    let mut root: Value = match existing {
        Some(b) if !b.iter().all(u8::is_ascii_whitespace) => {
            serde_json::from_slice(b).map_err(|err| invalid(path, &format!("not JSON ({err})")))?
        }
        _ => Value::Object(Map::new()),
    };
    if !root.is_object() {
        return Err(invalid(path, "not a JSON object"));
    }
    let mut changes = Vec::new();
    let present = |root: &Value, keys: &[&str]| keys.iter().try_fold(root, |v, k| v.get(*k)).is_some();
    for (keys, key, entries) in lists(e) {
        if uninstall && !present(&root, keys) {
            continue;
        }
        let o = object_at(&mut root, keys, path)?;
        if uninstall && !o.contains_key(key) {
            continue;
        }
        let arr = o.entry(key).or_insert_with(|| Value::Array(Vec::new()));
        let arr = arr.as_array_mut().ok_or_else(|| invalid(path, &format!("\"{}.{key}\" is not an array", keys.join("."))))?;
        for entry in entries {
            let at = arr.iter().position(|v| v.as_str() == Some(entry));
            match (uninstall, at) {
                (false, None) => {
                    arr.push(Value::String(entry.clone()));
                    changes.push(format!("+ {}.{key}: {entry}", keys.join(".")));
                }
                (true, Some(i)) => {
                    arr.remove(i);
                    changes.push(format!("- {}.{key}: {entry}", keys.join(".")));
                }
                _ => {}
            }
        }
        if uninstall && arr.is_empty() {
            o.remove(key);
        }
    }
    if !uninstall || present(&root, &["sandbox"]) {
        let sb = object_at(&mut root, &["sandbox"], path)?;
        for (k, v) in CLAUDE_SWITCHES {
            match (uninstall, sb.get(*k).and_then(Value::as_bool)) {
                (false, cur) if cur != Some(*v) => {
                    sb.insert((*k).to_owned(), Value::Bool(*v));
                    changes.push(format!("= sandbox.{k}: {v}"));
                }
                (true, Some(cur)) if cur == *v => {
                    sb.remove(*k);
                    changes.push(format!("- sandbox.{k}"));
                }
                _ => {}
            }
        }
    }
    if uninstall {
        prune_empty(&mut root, &["sandbox", "filesystem"]);
        prune_empty(&mut root, &["sandbox", "network"]);
        prune_empty(&mut root, &["sandbox"]);
        prune_empty(&mut root, &["permissions"]);
    }
    let text = serde_json::to_string_pretty(&root).map_err(|err| invalid(path, &err.to_string()))?;
    Ok((format!("{text}\n"), changes))
}

/// Remove the object at `keys` when it is empty.
fn prune_empty(root: &mut Value, keys: &[&str]) {
    let Some((last, parents)) = keys.split_last() else { return };
    let parent = parents.iter().try_fold(&mut *root, |v, k| v.get_mut(*k));
    if let Some(Value::Object(o)) = parent {
        if o.get(*last).and_then(Value::as_object).is_some_and(Map::is_empty) {
            o.remove(*last);
        }
    }
}

/// The top-level value of `key` in Codex config.toml text: (line index, value).
fn codex_top(text: &str, key: &str) -> Option<(usize, String)> {
    for (i, l) in text.lines().enumerate() {
        let t = l.trim();
        if t.starts_with('[') {
            return None;
        }
        if let Some(rest) = t.strip_prefix(key) {
            if let Some(v) = rest.trim_start().strip_prefix('=') {
                let v = v.split('#').next().unwrap_or("").trim().trim_matches(['"', '\'']);
                return Some((i, v.to_owned()));
            }
        }
    }
    None
}

/// The top-level `sandbox_mode` of Codex config.toml text: (line index, value).
pub fn codex_mode(text: &str) -> Option<(usize, String)> {
    codex_top(text, "sandbox_mode")
}

/// Merge (or take out) the kijito-qa permission profile in Codex
/// config.toml text: [`CODEX_LINE`] first, [`CODEX_PROFILE`] last; a
/// top-level `sandbox_mode` or `default_permissions` of the user's kept as a
/// comment and put back by `uninstall`; every other line kept. Returns the
/// text and the changes.
pub fn merge_codex(existing: &str, uninstall: bool) -> (String, Vec<String>) {
    let mut lines: Vec<String> = existing.lines().map(str::to_owned).collect();
    let mut changes = Vec::new();
    if let Some(i) = lines.iter().position(|l| l.trim() == CODEX_OLD_LINE) {
        lines.remove(i);
        changes.push("- sandbox_mode = \"workspace-write\" (an earlier kijito-setup's line)".to_owned());
    }
    let line_at = |lines: &[String]| lines.iter().position(|l| l.trim() == CODEX_LINE);
    // the comment line and the profile's lines that follow it (a damaged
    // profile is taken out whole too)
    let block_at = |lines: &[String]| {
        let b = lines.iter().position(|l| l == CODEX_PROFILE[0])?;
        let n = lines[b..].iter().take_while(|l| CODEX_PROFILE.contains(&l.as_str())).count();
        Some((b, b + n - 1))
    };
    let whole = |lines: &[String]| block_at(lines).is_some_and(|(b, e)| lines[b..=e] == *CODEX_PROFILE);
    if uninstall {
        if let Some((b, e)) = block_at(&lines) {
            let from = if b > 0 && lines[b - 1].trim().is_empty() { b - 1 } else { b };
            lines.drain(from..=e);
            changes.push("- [permissions.kijito-qa]".to_owned());
        }
        if let Some(i) = line_at(&lines) {
            lines.remove(i);
            changes.push("- default_permissions = \"kijito-qa\"".to_owned());
        }
        for l in lines.iter_mut() {
            if let Some(orig) = l.strip_prefix(CODEX_REPLACED) {
                *l = orig.to_owned();
                changes.push(format!("= the user's line put back: {l}"));
            }
        }
    } else if line_at(&lines).is_none() || !whole(&lines) {
        let top = lines.iter().position(|l| l.trim().starts_with('[')).unwrap_or(lines.len());
        for l in lines[..top].iter_mut() {
            let t = l.trim();
            let key = ["sandbox_mode", "default_permissions"].into_iter().find(|k| codex_top(t, k).is_some());
            if let (Some(k), false) = (key, t == CODEX_LINE) {
                changes.push(format!("= {k}: the user's line kept as a comment ({t})"));
                *l = format!("{CODEX_REPLACED}{l}");
            }
        }
        if line_at(&lines).is_none() {
            lines.insert(0, CODEX_LINE.to_owned());
            changes.push("+ default_permissions = \"kijito-qa\"".to_owned());
        }
        if let Some((b, e)) = block_at(&lines) {
            lines.drain(b..=e);
        }
        if lines.last().is_some_and(|l| !l.trim().is_empty()) {
            lines.push(String::new());
        }
        lines.extend(CODEX_PROFILE.iter().map(|l| (*l).to_owned()));
        changes.push("+ [permissions.kijito-qa]: extends :workspace, .memory-latch read-only".to_owned());
    }
    let mut text = lines.join("\n");
    if !text.is_empty() {
        text.push('\n');
    }
    (text, changes)
}

/// What `--sandbox` would write.
#[derive(Debug, Clone)]
pub struct Plan {
    pub host: HostKind,
    pub path: PathBuf,
    /// One line per change (empty: nothing to write).
    pub changes: Vec<String>,
    pub content: String,
    /// Whether the file exists now.
    pub exists: bool,
}

/// Claude Code's user settings or Codex's config.toml, and the change.
pub fn plan(host: HostKind, p: &Paths, uninstall: bool) -> Result<Plan> {
    match host {
        HostKind::Claude => {
            let path = p.claude_dir.join("settings.json");
            let existing = permissions::read_optional(&path, permissions::codes::SETTINGS_UNREADABLE)?;
            let (content, changes) = merge_claude(existing.as_deref(), &claude_entries(p), &path, uninstall)?;
            Ok(Plan { host, path, changes, content, exists: existing.is_some() })
        }
        HostKind::Codex => {
            let path = p.codex_home.join("config.toml");
            let existing = permissions::read_optional(&path, permissions::codes::SETTINGS_UNREADABLE)?;
            let text = match &existing {
                Some(b) => String::from_utf8(b.clone())
                    .map_err(|_| Error::new(codes::CODEX_CONFIG_INVALID, format!("{} is not UTF-8; fix it by hand", path.display())))?,
                None => String::new(),
            };
            let (content, changes) = merge_codex(&text, uninstall);
            Ok(Plan { host, path, changes, content, exists: existing.is_some() })
        }
    }
}

/// Write the plan: the directory owner-only when it is created, the file
/// atomically (temp, fsync, rename, fsync of the directory), 0600, never
/// through a symlink.
pub fn write(plan: &Plan) -> Result<()> {
    let dir = plan.path.parent().ok_or_else(|| invalid(&plan.path, "no directory"))?;
    if std::fs::symlink_metadata(dir).is_err() {
        private::ensure_private_dir(dir)?;
    }
    kijito_files::private::write_atomic_unlocked(&plan.path, plan.content.as_bytes())
}

/// The doctor's view: `Ok(())` when the host's sandbox is set up as
/// `--sandbox --write` would, else what is missing (at most a few items).
pub fn check(host: HostKind, p: &Paths) -> std::result::Result<(), String> {
    match plan(host, p, false) {
        Ok(plan) if plan.changes.is_empty() => Ok(()),
        Ok(plan) => match host {
            HostKind::Codex => {
                let text = std::fs::read_to_string(&plan.path).unwrap_or_default();
                match codex_mode(&text) {
                    Some((_, m)) if m == "workspace-write" || m == "read-only" => Ok(()),
                    Some((_, m)) => Err(format!("sandbox_mode is {m:?} in {}", plan.path.display())),
                    None => Err(format!("no kijito-qa permission profile (nor a sandbox_mode) in {}", plan.path.display())),
                }
            }
            HostKind::Claude => {
                let n = plan.changes.len();
                let first: Vec<&str> = plan.changes.iter().take(3).map(|c| c.trim_start_matches(['+', '=', ' '])).collect();
                Err(format!("{n} setting(s) missing in {} ({}{})", plan.path.display(), first.join("; "), if n > 3 { "; ..." } else { "" }))
            }
        },
        Err(e) => Err(e.message().to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paths() -> Paths {
        Paths {
            root: "/opt/kq".into(),
            home: "/h".into(),
            claude_dir: "/h/.claude".into(),
            codex_home: "/h/.codex".into(),
            kijito_config: "/h/.config/kijito-qa".into(),
            state: Some("/h/.local/state/kijito-qa".into()),
            data: Some("/h/.cache/kijito-qa".into()),
            api_host: Some("api.kijito.ai".into()),
        }
    }

    #[test]
    fn claude_settings_merge_keep_the_users_and_unmerge_to_them() {
        let e = claude_entries(&paths());
        assert_eq!(e.excluded[0], "/opt/kq/claude/bin/pointer-digest *");
        assert!(e.excluded.contains(&"/opt/kq/claude/bin/memory-latch consent request *".to_owned()));
        assert!(e.deny_write.iter().any(|d| d == "/h/.ssh") && e.deny_write.iter().any(|d| d == "/opt/kq"));
        let user = br#"{"model":"x","permissions":{"deny":["Bash(curl:*)"]},"sandbox":{"excludedCommands":["docker *"]}}"#;
        let path = Path::new("/h/.claude/settings.json");
        let (text, changes) = merge_claude(Some(user), &e, path, false).unwrap();
        assert!(!changes.is_empty());
        let v: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["model"], "x");
        assert_eq!(v["sandbox"]["enabled"], true);
        assert_eq!(v["sandbox"]["allowUnsandboxedCommands"], false);
        assert_eq!(v["sandbox"]["excludedCommands"][0], "docker *");
        assert_eq!(v["permissions"]["deny"][0], "Bash(curl:*)");
        assert_eq!(v["sandbox"]["network"]["allowedDomains"][0], "api.kijito.ai");
        let (again, none) = merge_claude(Some(text.as_bytes()), &e, path, false).unwrap();
        assert!(none.is_empty() && again == text);
        let (back, _) = merge_claude(Some(text.as_bytes()), &e, path, true).unwrap();
        let u: Value = serde_json::from_slice(user).unwrap();
        assert_eq!(serde_json::from_str::<Value>(&back).unwrap(), u);
        assert!(merge_claude(Some(b"[1]"), &e, path, false).is_err());
        assert!(merge_claude(Some(br#"{"sandbox":{"excludedCommands":"x"}}"#), &e, path, false).is_err());
    }

    #[test]
    fn codex_config_gains_the_profile_and_gets_the_users_back() {
        let user = "model = \"m\"\nsandbox_mode = \"danger-full-access\"\n\n[features]\nhooks = true\n";
        let (text, changes) = merge_codex(user, false);
        assert_eq!(changes.len(), 3, "{changes:?}");
        assert!(text.starts_with(&format!("{CODEX_LINE}\n")), "{text}");
        assert!(text.ends_with(&format!("hooks = true\n\n{}\n", CODEX_PROFILE.join("\n"))), "{text}");
        assert_eq!(codex_mode(&text), None, "the user's sandbox_mode would override the profile: a comment now");
        assert!(text.contains(&format!("{CODEX_REPLACED}sandbox_mode = \"danger-full-access\"")));
        assert_eq!(merge_codex(&text, false).1.len(), 0);
        assert_eq!(merge_codex(&text, true).0, user);
        for base in ["[features]\nhooks = true\n", "", "default_permissions = \":read-only\"\n"] {
            let (fresh, _) = merge_codex(base, false);
            assert!(fresh.starts_with(CODEX_LINE), "{fresh}");
            assert_eq!(merge_codex(&fresh, true).0, base);
        }
        let old = format!("{CODEX_OLD_LINE}\n[features]\nhooks = true\n");
        let (moved, _) = merge_codex(&old, false);
        assert!(!moved.contains("sandbox_mode"), "an earlier kijito-setup's line goes: {moved}");
        assert_eq!(merge_codex(&old, true).0, "[features]\nhooks = true\n");
        let cut = text.replace("extends = \":workspace\"\n", "");
        let (fixed, c) = merge_codex(&cut, false);
        assert!(!c.is_empty() && fixed == text, "a damaged profile is written whole again: {fixed}");
        let codex_added = format!("{text}\n[tui]\nscreen_reader_detection_done = true\n");
        assert_eq!(merge_codex(&codex_added, false).1.len(), 0, "Codex's own tables after ours");
        assert_eq!(merge_codex(&codex_added, true).0, format!("{user}\n[tui]\nscreen_reader_detection_done = true\n"));
        assert_eq!(codex_mode("[x]\nsandbox_mode = \"read-only\"\n"), None, "a table's key is not the top level");
    }
}
