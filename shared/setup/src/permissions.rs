//! `kijito-setup --allow-helpers --host claude|codex [--root ABS] [--write]`: the
//! exact allow rules that let an unattended session run the kijito-qa helper
//! commands without stopping for approval, and `kijito-doctor`'s
//! `permissions` check (docs/configuration.md, "Permissions").
//!
//! Measured offline on the pinned hosts (tests/hosts/host-e2e, 2026-12-01):
//! - Claude Code 2.1.328: a user-settings rule `Bash(<abs helper> <subcommand>:*)`
//!   in `permissions.allow` lets `claude -p` (no `--allowedTools`) and the TUI in
//!   its default (auto) mode run `<abs helper> <subcommand> ...` unprompted; it
//!   does not cover `<abs helper> <subcommand>x` nor `<abs helper>X` (word
//!   boundary), and each part of a compound line is judged on its own (a
//!   `&& touch ...` still needs approval). Without it `claude -p` answers
//!   "This command requires approval" and the TUI stops the turn on a dialog.
//! - Codex 0.169.0, default approval and sandbox of a trusted project
//!   (`workspace-write`, network restricted, writable roots /tmp and the
//!   project): a helper runs in the sandbox unprompted and its writes outside
//!   those roots fail (`Read-only file system`, os error 30; the data dir
//!   `~/.cache/kijito-qa`, the latch head records, report files); a
//!   `prefix_rule(pattern=[...], decision="allow")` in `$CODEX_HOME/rules/*.rules`
//!   makes it run outside the sandbox, unprompted, and its writes succeed. A
//!   line with `$VAR`, redirections or a second segment is not matched by rules.
//!
//! Every rule is one agent command of the PreToolUse guard's grammar
//! ([`AGENT_COMMANDS`], checked against `kijito_protocol::command::GRAMMARS`
//! by the unit tests): never a hook, `kijito-setup`, `kijito-local`,
//! `kijito-compact worker|codex`, or a user-only memory-latch subcommand. The
//! guard still checks every line against the grammar; a rule only removes the
//! approval prompt.

use kijito_files::private::{self, FileRules};
use kijito_protocol::error::{Error, Result};
use kijito_protocol::host::HostKind;
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};

/// Stable codes of this module.
pub mod codes {
    kijito_protocol::codes! {
        HELPERS_MISSING HelpersMissing = "helpers_not_installed",
        SETTINGS_INVALID SettingsInvalid = "settings_invalid",
        SETTINGS_UNREADABLE SettingsUnreadable = "settings_unreadable",
        RULES_UNREADABLE RulesUnreadable = "rules_unreadable",
        ROOT_UNSAFE RootUnsafe = "root_path_unsafe",
    }
}

/// The helper commands an agent runs in an unattended session: (helper,
/// subcommand; "" for none). Each is a form of the guard's grammar.
pub const AGENT_COMMANDS: &[(&str, &str)] = &[
    ("pointer-digest", ""),
    ("pointer-publish", ""),
    ("pointer-snapshot", ""),
    ("qa-gate", "record"),
    ("qa-gate", "invalidate"),
    ("qa-gate", "status"),
    ("kijito-compact", "request"),
    ("kijito-compact", "status"),
    ("memory-latch", "init"),
    ("memory-latch", "checkpoint"),
    ("memory-latch", "status"),
    ("memory-latch", "verify"),
    ("memory-latch", "consent request"),
    ("memory-latch", "gate"),
    ("memory-latch", "recover"),
    ("memory-latch", "reseed"),
    ("memory-latch", "review"),
    ("memory-latch", "detect"),
    ("wake-check", ""),
];

/// kijito-qa's own Codex rules file, in `$CODEX_HOME/rules/`.
pub const CODEX_RULES_FILE: &str = "kijito-qa.rules";
/// Largest settings or rules file read.
pub const MAX_FILE_BYTES: u64 = 1024 * 1024;
/// Most `*.rules` files the doctor reads.
pub const MAX_RULES_FILES: usize = 256;

pub(crate) fn command_words(bin: &Path, helper: &str, sub: &str) -> Vec<String> {
    let mut w = vec![bin.join(helper).to_string_lossy().into_owned()];
    w.extend(sub.split(' ').filter(|s| !s.is_empty()).map(str::to_owned));
    w
}

/// The Claude Code `permissions.allow` entries for the helpers in `bin`.
pub fn claude_rules(bin: &Path) -> Vec<String> {
    AGENT_COMMANDS.iter().map(|(h, s)| format!("Bash({}:*)", command_words(bin, h, s).join(" "))).collect()
}

/// The `prefix_rule(...)` lines for the helpers in `bin`.
pub fn codex_rules(bin: &Path) -> Vec<String> {
    AGENT_COMMANDS
        .iter()
        .map(|(h, s)| {
            let pattern: Vec<String> = command_words(bin, h, s).iter().map(|w| Value::String(w.clone()).to_string()).collect();
            format!("prefix_rule(pattern=[{}], decision=\"allow\")", pattern.join(", "))
        })
        .collect()
}

/// The whole content of kijito-qa's Codex rules file.
pub fn codex_rules_text(bin: &Path) -> String {
    let mut t = format!(
        "# kijito-qa: the helper commands of {} that an unattended Codex session runs\n\
         # (written by kijito-setup --allow-helpers --host codex --write; docs/configuration.md).\n\
         # They run unprompted and outside the sandbox; the kijito-qa PreToolUse guard still\n\
         # checks every command line against the helper grammar.\n",
        bin.display()
    );
    for r in codex_rules(bin) {
        t.push_str(&r);
        t.push('\n');
    }
    t
}

/// The plugin root of `host` for `--root` (an install prefix or the plugin root itself).
pub fn plugin_root(given: &Path, host: HostKind) -> PathBuf {
    let (name, manifest) = match host {
        HostKind::Codex => (host.as_str(), ".codex-plugin"),
        HostKind::Claude => (host.as_str(), ".claude-plugin"),
    };
    if given.join(manifest).is_dir() {
        given.to_path_buf()
    } else {
        given.join(name)
    }
}

/// Claude Code's user settings: `$CLAUDE_CONFIG_DIR/settings.json`, else `~/.claude/settings.json`.
pub fn claude_settings_path(claude_config_dir: Option<&Path>, home: &Path) -> PathBuf {
    claude_config_dir.map(Path::to_path_buf).unwrap_or_else(|| home.join(".claude")).join("settings.json")
}

/// Codex's rules directory: `$CODEX_HOME/rules`, else `~/.codex/rules`.
pub fn codex_rules_dir(codex_home: Option<&Path>, home: &Path) -> PathBuf {
    codex_home.map(Path::to_path_buf).unwrap_or_else(|| home.join(".codex")).join("rules")
}

/// Read a file that may be absent (`Ok(None)`): regular, not a symlink, bounded.
pub(crate) fn read_optional(path: &Path, code: codes::Code) -> Result<Option<Vec<u8>>> {
    match std::fs::symlink_metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Error::new(code, format!("cannot stat {}: {e}", path.display()))),
        Ok(m) if m.file_type().is_symlink() => {
            return Err(Error::new(
                code,
                format!("{} is a symlink; kijito-setup never writes through one (point it at a real file or remove it)", path.display()),
            ))
        }
        Ok(_) => {}
    }
    private::read_checked(path, FileRules { owner_only: false, min_bytes: 0, max_bytes: MAX_FILE_BYTES })
        .map(|(b, _)| Some(b))
        .map_err(|e| Error::new(code, format!("{}: {} ({})", path.display(), e.message(), e.code())))
}

/// Merge `rules` into Claude Code settings text (`None`: no file yet):
/// `permissions.allow` gains the rules it lacks, in order; every other key and
/// entry is kept as it was. Returns the new text and the rules added.
pub fn merge_claude_settings(existing: Option<&[u8]>, rules: &[String], path: &Path) -> Result<(String, Vec<String>)> {
    let invalid = |why: String| {
        Error::new(codes::SETTINGS_INVALID, format!("{}: {why}; fix it by hand, kijito-setup writes nothing then", path.display()))
    };
    let mut root: Value = match existing {
        Some(b) if !b.iter().all(u8::is_ascii_whitespace) => serde_json::from_slice(b).map_err(|e| invalid(format!("not JSON ({e})")))?,
        _ => Value::Object(Map::new()),
    };
    let obj = root.as_object_mut().ok_or_else(|| invalid("not a JSON object".into()))?;
    let perms = obj.entry("permissions").or_insert_with(|| Value::Object(Map::new()));
    let perms = perms.as_object_mut().ok_or_else(|| invalid("\"permissions\" is not an object".into()))?;
    let allow = perms.entry("allow").or_insert_with(|| Value::Array(Vec::new()));
    let allow = allow.as_array_mut().ok_or_else(|| invalid("\"permissions.allow\" is not an array".into()))?;
    let mut added = Vec::new();
    for r in rules {
        if !allow.iter().any(|v| v.as_str() == Some(r)) {
            allow.push(Value::String(r.clone()));
            added.push(r.clone());
        }
    }
    let text = serde_json::to_string_pretty(&root).map_err(|e| invalid(e.to_string()))?;
    Ok((format!("{text}\n"), added))
}

/// What `--allow-helpers` would write.
#[derive(Debug, Clone)]
pub struct Plan {
    pub host: HostKind,
    pub root: PathBuf,
    /// The settings file (Claude Code) or kijito-qa's rules file (Codex).
    pub path: PathBuf,
    /// Every rule, as written.
    pub rules: Vec<String>,
    /// The rules the file lacks now.
    pub missing: Vec<String>,
    /// The complete new content of `path`.
    pub content: String,
}

impl Plan {
    /// Whether writing would change nothing.
    pub fn unchanged(&self) -> bool {
        self.missing.is_empty()
    }
}

/// Where the rules go and what the file would hold. Refuses when the helpers
/// are not installed in `<root>/bin` or the file cannot be merged safely.
pub fn plan(host: HostKind, root: &Path, claude_config_dir: Option<&Path>, codex_home: Option<&Path>, home: &Path) -> Result<Plan> {
    let bin = root.join("bin");
    check_safe_path(&bin)?;
    let missing_bins: Vec<String> = AGENT_COMMANDS
        .iter()
        .map(|(h, _)| *h)
        .filter(|h| !crate::proc::is_executable(&bin.join(h)))
        .map(str::to_owned)
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    if !missing_bins.is_empty() {
        return Err(Error::new(
            codes::HELPERS_MISSING,
            format!(
                "{} does not hold the helpers {} (is {} a kijito-qa plugin root? install.sh --host {} installs one; give --root)",
                bin.display(),
                missing_bins.join(", "),
                root.display(),
                host.as_str()
            ),
        ));
    }
    match host {
        HostKind::Claude => {
            let path = claude_settings_path(claude_config_dir, home);
            let rules = claude_rules(&bin);
            let existing = read_optional(&path, codes::SETTINGS_UNREADABLE)?;
            let (content, missing) = merge_claude_settings(existing.as_deref(), &rules, &path)?;
            Ok(Plan { host, root: root.to_path_buf(), path, rules, missing, content })
        }
        HostKind::Codex => {
            let path = codex_rules_dir(codex_home, home).join(CODEX_RULES_FILE);
            let rules = codex_rules(&bin);
            let content = codex_rules_text(&bin);
            let existing = read_optional(&path, codes::RULES_UNREADABLE)?;
            let have = existing.as_deref().map(String::from_utf8_lossy).map(|t| normalised_lines(&t)).unwrap_or_default();
            let missing = rules.iter().filter(|r| !have.contains(&normalise(r))).cloned().collect();
            Ok(Plan { host, root: root.to_path_buf(), path, rules, missing, content })
        }
    }
}

/// Write the plan: the directory owner-only when it is created, the file
/// atomically (temp + fsync + rename), mode 0600, never through a symlink.
pub fn write(plan: &Plan) -> Result<()> {
    let dir = plan.path.parent().ok_or_else(|| Error::new(codes::SETTINGS_INVALID, format!("{} has no directory", plan.path.display())))?;
    if std::fs::symlink_metadata(dir).is_err() {
        private::ensure_private_dir(dir)?;
    }
    kijito_files::private::write_atomic_unlocked(&plan.path, plan.content.as_bytes())
}

/// A helper directory that fits a rule as written: absolute, made only of
/// letters, digits and `. _ - + /` (what install.sh accepts for a prefix), so a
/// `Bash(...:*)` rule or a `prefix_rule` pattern cannot be bent by `)`, `:`,
/// quotes, spaces or globs in it.
pub fn check_safe_path(bin: &Path) -> Result<()> {
    let t = bin.to_string_lossy();
    let ok = t.starts_with('/')
        && t.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-+/".contains(&b))
        && !t.split('/').any(|c| c == "." || c == "..");
    if ok {
        Ok(())
    } else {
        Err(Error::new(codes::ROOT_UNSAFE, format!("{t} is not a plain absolute path of letters, digits and . _ - + / (install.sh accepts no other prefix); give the real --root")))
    }
}

fn normalise(line: &str) -> String {
    line.chars().filter(|c| !c.is_whitespace()).collect()
}

fn normalised_lines(text: &str) -> Vec<String> {
    text.lines().map(str::trim).filter(|l| !l.starts_with('#')).map(normalise).filter(|l| !l.is_empty()).collect()
}

/// The doctor's view: which of this root's rules are missing from Claude
/// Code's settings `files` (any of them may hold a rule), and the files that
/// could not be read.
pub fn missing_claude(files: &[PathBuf], bin: &Path) -> (Vec<String>, Vec<String>) {
    let mut have: Vec<String> = Vec::new();
    let mut unreadable = Vec::new();
    for f in files {
        match read_optional(f, codes::SETTINGS_UNREADABLE) {
            Ok(None) => {}
            Ok(Some(b)) => match serde_json::from_slice::<Value>(&b) {
                Ok(v) => have.extend(
                    v.pointer("/permissions/allow")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                        .filter_map(Value::as_str)
                        .map(str::to_owned),
                ),
                Err(e) => unreadable.push(format!("{}: not JSON ({e})", f.display())),
            },
            Err(e) => unreadable.push(e.message().to_owned()),
        }
    }
    (claude_rules(bin).into_iter().filter(|r| !have.contains(r)).collect(), unreadable)
}

/// The doctor's view for Codex: the rules of this root missing from every
/// `*.rules` file in `dir`, and the files that could not be read.
pub fn missing_codex(dir: &Path, bin: &Path) -> (Vec<String>, Vec<String>) {
    let mut have = Vec::new();
    let mut unreadable = Vec::new();
    if let Ok(entries) = std::fs::read_dir(dir) {
        let mut files: Vec<PathBuf> =
            entries.filter_map(|e| e.ok()).map(|e| e.path()).filter(|p| p.extension().is_some_and(|x| x == "rules")).collect();
        files.sort();
        for f in files.iter().take(MAX_RULES_FILES) {
            match read_optional(f, codes::RULES_UNREADABLE) {
                Ok(Some(b)) => have.extend(normalised_lines(&String::from_utf8_lossy(&b))),
                Ok(None) => {}
                Err(e) => unreadable.push(e.message().to_owned()),
            }
        }
    }
    (codex_rules(bin).into_iter().filter(|r| !have.contains(&normalise(r))).collect(), unreadable)
}

/// The one-line shell alias that starts Codex through the app-server adapter
/// (`kijito-compact codex`), whose sessions the adapter can compact.
pub fn codex_alias(root: &Path) -> String {
    format!("alias codex-qa='{} codex --'", root.join("bin/kijito-compact").display())
}

#[cfg(test)]
mod tests {
    use super::*;
    use kijito_protocol::command::{self, guard_line, HelperDir, Kind, Verdict, GRAMMARS, GUARDED_NAMES};

    /// A valid value of `kind` for a sample command.
    fn sample(kind: Kind) -> String {
        match kind {
            Kind::MemoryId | Kind::MessageId | Kind::Number => "7".into(),
            Kind::Digest => "ab".repeat(32),
            Kind::TaggedDigest => format!("sha256:{}", "ab".repeat(32)),
            Kind::SessionId => "2208dc6c-1602-4db0-9c33-9125ee25dc44".into(),
            Kind::Path => "/home/user/data/file.json".into(),
            Kind::Choice(c) => c[0].into(),
            _ => "word".into(),
        }
    }

    /// Command lines of a grammar row: its selector and required flags, alone
    /// and with each optional flag added (some rows need one of two flags).
    fn sample_lines(bin: &Path, g: &command::Grammar) -> Vec<String> {
        let words = |extra: Option<&command::ArgSpec>| {
            let mut w = command_words(bin, g.helper, g.subcommand);
            if !g.selector.is_empty() {
                w.push(g.selector.into());
            }
            for s in g.specs.iter().filter(|s| s.required || extra.is_some_and(|e| e.flag.name == s.flag.name)) {
                if s.flag.name == g.selector {
                    continue;
                }
                // a required flag of a repeatable kind is required that many times (two reports)
                for _ in 0..if s.required { s.flag.max } else { 1 } {
                    w.push(s.flag.name.into());
                    if s.kind != Kind::Switch {
                        w.push(sample(s.kind));
                    }
                }
            }
            w.join(" ")
        };
        std::iter::once(words(None)).chain(g.specs.iter().filter(|s| !s.required).map(|s| words(Some(s)))).collect()
    }

    /// Every form the guard lets the agent run gets a decision here: a rule,
    /// or a place on this list of forms the unattended agent never needs.
    #[test]
    fn every_guard_form_is_a_rule_or_left_out_on_purpose() {
        const LEFT_OUT: &[(&str, &str)] = &[("kijito-local", "serve"), ("kijito-local", "demo")];
        for g in GRAMMARS {
            let form = (g.helper, g.subcommand);
            assert!(AGENT_COMMANDS.contains(&form) != LEFT_OUT.contains(&form), "{form:?}: add it to AGENT_COMMANDS or to LEFT_OUT");
        }
    }

    #[test]
    fn every_rule_is_a_command_the_guard_allows_the_agent() {
        let bin = Path::new("/opt/kq/claude/bin");
        let dir = HelperDir::new(bin).unwrap();
        for (h, s) in AGENT_COMMANDS {
            let rows: Vec<&command::Grammar> = GRAMMARS.iter().filter(|g| g.helper == *h && g.subcommand == *s).collect();
            assert!(!rows.is_empty(), "{h} {s}: no guard grammar row");
            for g in rows {
                let lines = sample_lines(bin, g);
                let allowed: Vec<&String> = lines
                    .iter()
                    .filter(|line| match guard_line(line, Some(&dir)) {
                        Verdict::Helper(c) => (c.helper, c.subcommand) == (*h, *s),
                        _ => false,
                    })
                    .collect();
                assert!(!allowed.is_empty(), "{h} {s}: the guard allows none of {lines:#?}");
                // the rule's prefix is exactly the start of those allowed lines
                let prefix = command_words(bin, h, s).join(" ");
                for line in allowed {
                    assert!(line == &prefix || line.starts_with(&format!("{prefix} ")), "{line}");
                }
            }
        }
        // rendered rules: one per command, nothing else
        assert_eq!(claude_rules(bin).len(), AGENT_COMMANDS.len());
        assert_eq!(codex_rules(bin).len(), AGENT_COMMANDS.len());
        assert_eq!(claude_rules(bin)[3], "Bash(/opt/kq/claude/bin/qa-gate record:*)");
        assert_eq!(
            codex_rules(bin)[12],
            "prefix_rule(pattern=[\"/opt/kq/claude/bin/memory-latch\", \"consent\", \"request\"], decision=\"allow\")"
        );
    }

    #[test]
    fn no_rule_allows_a_hook_setup_a_server_or_a_user_only_command() {
        let bin = Path::new("/opt/kq/codex/bin");
        let agent_helpers: Vec<&str> = GRAMMARS.iter().map(|g| g.helper).collect();
        // the hooks and kijito-setup: guarded names that no grammar row accepts
        let never: Vec<&str> = GUARDED_NAMES.iter().copied().filter(|n| !agent_helpers.contains(n)).collect();
        assert_eq!(never, ["precompact", "postcompact", "session-hook", "prompt-hook", "pretool-hook", "kijito-setup"]);
        for rule in claude_rules(bin).iter().chain(codex_rules(bin).iter()) {
            for n in never.iter().chain(["kijito-local", "kijito-doctor"].iter()) {
                assert!(
                    !rule.contains(&format!("/bin/{n}\""))
                        && !rule.contains(&format!("/bin/{n} "))
                        && !rule.contains(&format!("/bin/{n}:")),
                    "{rule} allows {n}"
                );
            }
            for sub in ["worker", "codex", "consent confirm", "wallet-recover", "keygen", "serve", "demo", "check-command"] {
                assert!(!rule.contains(&format!(" {sub}:")) && !rule.contains(&format!("\"{sub}\"")), "{rule} allows {sub}");
            }
        }
        // the user-only subcommands are refused by the guard, so a rule for them could never be right
        let dir = HelperDir::new(bin).unwrap();
        for line in [
            "/opt/kq/codex/bin/memory-latch consent confirm --token ACT-ABCDEF",
            "/opt/kq/codex/bin/memory-latch wallet-recover --signature 0x00 --digest 0x00",
            "/opt/kq/codex/bin/kijito-compact worker --session-id 2208dc6c-1602-4db0-9c33-9125ee25dc44 --data-dir /d --nonce n",
            "/opt/kq/codex/bin/kijito-compact codex",
            "/opt/kq/codex/bin/kijito-setup --force",
            "/opt/kq/codex/bin/session-hook --host codex --expect Stop",
        ] {
            assert!(!guard_line(line, Some(&dir)).allowed(), "{line}");
        }
        // kijito-local serve is in the guard's grammar (a user may let the agent start it) but never in the rules
        assert!(AGENT_COMMANDS.iter().all(|(h, _)| *h != "kijito-local"));
    }

    #[test]
    fn merging_keeps_everything_and_adds_only_what_is_missing() {
        let p = Path::new("/home/u/.claude/settings.json");
        let rules = vec!["Bash(/r/bin/a:*)".to_owned(), "Bash(/r/bin/b x:*)".to_owned()];
        let existing = br#"{"theme":"dark","permissions":{"allow":["Read","Bash(/r/bin/a:*)"],"deny":["Bash(rm:*)"],"defaultMode":"default"},"pluginConfigs":{"kijito-qa@inline":{"options":{"pointer_id":7}}},"hooks":{}}"#;
        let (text, added) = merge_claude_settings(Some(existing), &rules, p).unwrap();
        assert_eq!(added, vec!["Bash(/r/bin/b x:*)".to_owned()]);
        let v: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["permissions"]["allow"], serde_json::json!(["Read", "Bash(/r/bin/a:*)", "Bash(/r/bin/b x:*)"]));
        assert_eq!(v["permissions"]["deny"], serde_json::json!(["Bash(rm:*)"]));
        assert_eq!(v["permissions"]["defaultMode"], "default");
        assert_eq!(v["pluginConfigs"]["kijito-qa@inline"]["options"]["pointer_id"], 7);
        assert_eq!(v["theme"], "dark");
        // key order kept (theme first, as the user wrote it)
        assert!(text.find("\"theme\"").unwrap() < text.find("\"permissions\"").unwrap());
        // again: nothing to add, same text
        let (again, added) = merge_claude_settings(Some(text.as_bytes()), &rules, p).unwrap();
        assert!(added.is_empty());
        assert_eq!(again, text);
        // no file, or an empty one: just the rules
        for e in [None, Some(&b"  \n"[..])] {
            let (t, added) = merge_claude_settings(e, &rules, p).unwrap();
            assert_eq!(added.len(), 2);
            assert_eq!(serde_json::from_str::<Value>(&t).unwrap(), serde_json::json!({"permissions": {"allow": rules}}));
        }
        // refusals: never guess at a file that is not what Claude Code reads
        for bad in [&b"not json"[..], b"[1]", br#"{"permissions":[]}"#, br#"{"permissions":{"allow":"Bash"}}"#] {
            let e = merge_claude_settings(Some(bad), &rules, p).unwrap_err();
            assert_eq!(e.code(), codes::SETTINGS_INVALID.as_str(), "{}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn a_root_that_could_bend_a_rule_is_refused() {
        for bad in ["/p q/bin", "/p)/bin", "/p:*/bin", "/p\"/bin", "/p/*/bin", "/p/../bin", "relative/bin", "/p$HOME/bin"] {
            assert_eq!(check_safe_path(Path::new(bad)).unwrap_err().code(), codes::ROOT_UNSAFE.as_str(), "{bad}");
            let e = plan(HostKind::Claude, Path::new(bad).parent().unwrap(), None, None, Path::new("/home/u")).unwrap_err();
            assert_eq!(e.code(), codes::ROOT_UNSAFE.as_str(), "{bad}");
        }
        assert!(check_safe_path(Path::new("/home/u/.local/share/kijito-qa/claude/bin")).is_ok());
    }

    #[test]
    fn the_codex_rules_file_and_the_alias() {
        let t = codex_rules_text(Path::new("/p/codex/bin"));
        assert!(
            t.lines()
                .filter(|l| !l.starts_with('#'))
                .all(|l| l.starts_with("prefix_rule(pattern=[\"/p/codex/bin/") && l.ends_with("], decision=\"allow\")")),
            "{t}"
        );
        assert_eq!(normalised_lines(&t).len(), AGENT_COMMANDS.len());
        assert!(t.contains("prefix_rule(pattern=[\"/p/codex/bin/qa-gate\", \"record\"], decision=\"allow\")\n"));
        assert_eq!(codex_alias(Path::new("/p/codex")), "alias codex-qa='/p/codex/bin/kijito-compact codex --'");
        assert_eq!(plugin_root(Path::new("/nonexistent/prefix"), HostKind::Claude), Path::new("/nonexistent/prefix/claude"));
    }
}
