//! Where Claude Code keeps the kijito-qa plugin options (`userConfig`), for
//! `kijito-doctor` (docs/configuration.md, "kijito-doctor").
//!
//! Measured on Claude Code 2.1.328 (`claude plugin marketplace add DIR`,
//! `claude plugin install kijito-qa@local-test`, then
//! `echo '{"pointer_id":"21813","lock_message_id":"77"}' | claude plugin configure kijito-qa@local-test --values-stdin`):
//! the values land in the user settings, `$CLAUDE_CONFIG_DIR/settings.json`
//! (default `~/.claude/settings.json`), as
//! `"pluginConfigs":{"kijito-qa@local-test":{"options":{"pointer_id":21813,"lock_message_id":77}}}`
//! (JSON numbers); the same key under user settings is what a `--plugin-dir`
//! plugin (`kijito-qa@inline`) reads, and Claude Code hands the values to the
//! hooks as `CLAUDE_PLUGIN_OPTION_POINTER_ID` / `..._LOCK_MESSAGE_ID`
//! (tests/hosts `plugin-options`). Project settings (`<cwd>/.claude/settings.json`,
//! `<cwd>/.claude/settings.local.json`) are read too; a later file wins
//! (local over project over user), as in Claude Code.
//!
//! Every file is read bounded, without following a symlink; nothing is written.

use kijito_files::config::{Config, OPTION_LOCK_MESSAGE_ID, OPTION_POINTER_ID};
use kijito_files::private;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// The plugin's name in a `pluginConfigs` / `enabledPlugins` key (`kijito-qa@<marketplace>`).
pub const PLUGIN_NAME: &str = "kijito-qa";
/// Largest settings file read.
pub const MAX_SETTINGS_BYTES: u64 = 1024 * 1024;

/// The settings files Claude Code merges, lowest precedence first.
pub fn settings_files(claude_config_dir: Option<&Path>, home: &Path, cwd: &Path) -> Vec<PathBuf> {
    let user = claude_config_dir.map(Path::to_path_buf).unwrap_or_else(|| home.join(".claude"));
    vec![user.join("settings.json"), cwd.join(".claude/settings.json"), cwd.join(".claude/settings.local.json")]
}

/// What the settings hold for this plugin.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Found {
    /// Raw option values (as Claude Code would put them in the hooks'
    /// environment), with the file and plugin id each came from.
    pub pointer_id: Option<(String, PathBuf, String)>,
    pub lock_message_id: Option<(String, PathBuf, String)>,
    /// Plugin ids seen (`kijito-qa@<marketplace>`) in `pluginConfigs` or `enabledPlugins`.
    pub plugin_ids: Vec<String>,
    /// Files that exist but could not be read or parsed: (file, why).
    pub unreadable: Vec<(PathBuf, String)>,
}

fn option_text(v: &Value) -> Option<String> {
    match v {
        Value::Number(n) => Some(n.to_string()),
        Value::String(s) => Some(s.clone()),
        _ => None,
    }
}

/// Read `files` (lowest precedence first) for this plugin's options.
pub fn find(files: &[PathBuf]) -> Found {
    let mut found = Found::default();
    for f in files {
        if std::fs::symlink_metadata(f).is_err() {
            continue;
        }
        let rules = private::FileRules { owner_only: false, min_bytes: 0, max_bytes: MAX_SETTINGS_BYTES };
        let v: Value = match private::read_checked(f, rules) {
            Ok((b, _)) if b.iter().all(u8::is_ascii_whitespace) => continue,
            Ok((b, _)) => match serde_json::from_slice(&b) {
                Ok(v) => v,
                Err(e) => {
                    found.unreadable.push((f.clone(), format!("not JSON ({e})")));
                    continue;
                }
            },
            Err(e) => {
                found.unreadable.push((f.clone(), format!("{} ({})", e.message(), e.code())));
                continue;
            }
        };
        let ours = |k: &String| k.split_once('@').is_some_and(|(name, _)| name == PLUGIN_NAME);
        for key in ["enabledPlugins", "pluginConfigs"] {
            for id in v.get(key).and_then(Value::as_object).into_iter().flat_map(|o| o.keys()).filter(|k| ours(k)) {
                if !found.plugin_ids.contains(id) {
                    found.plugin_ids.push(id.clone());
                }
            }
        }
        for (id, cfg) in v.get("pluginConfigs").and_then(Value::as_object).into_iter().flatten().filter(|(k, _)| ours(k)) {
            let options = cfg.get("options");
            if let Some(t) = options.and_then(|o| o.get("pointer_id")).and_then(option_text) {
                found.pointer_id = Some((t, f.clone(), id.clone()));
            }
            if let Some(t) = options.and_then(|o| o.get("lock_message_id")).and_then(option_text) {
                found.lock_message_id = Some((t, f.clone(), id.clone()));
            }
        }
    }
    found
}

impl Found {
    /// The two values through the hooks' own rule ([`Config::apply_plugin_options`]):
    /// `Ok((pointer, lock))` as the hooks would see them, or the error a hook would report.
    pub fn apply(&self, config: &mut Config) -> kijito_protocol::error::Result<()> {
        let p = self.pointer_id.as_ref().map(|x| x.0.clone());
        let l = self.lock_message_id.as_ref().map(|x| x.0.clone());
        config.apply_plugin_options(&move |var| match var {
            OPTION_POINTER_ID => p.clone(),
            OPTION_LOCK_MESSAGE_ID => l.clone(),
            _ => None,
        })
    }

    /// The plugin id to name in a fix: the one seen, else a placeholder.
    pub fn plugin_id(&self) -> String {
        self.plugin_ids.first().cloned().unwrap_or_else(|| format!("{PLUGIN_NAME}@<marketplace>"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
        let p = dir.join(name);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, text).unwrap();
        p
    }

    #[test]
    fn later_files_win_and_other_plugins_are_ignored() {
        let d = tempfile::tempdir().unwrap();
        let user = write(
            d.path(),
            "user/settings.json",
            r#"{"enabledPlugins":{"kijito-qa@mkt":true,"other@mkt":true},"pluginConfigs":{"kijito-qa@mkt":{"options":{"pointer_id":21813,"lock_message_id":77}},"kijito-qa-fork@x":{"options":{"pointer_id":1}}}}"#,
        );
        let local = write(
            d.path(),
            "proj/.claude/settings.local.json",
            r#"{"pluginConfigs":{"kijito-qa@mkt":{"options":{"lock_message_id":"78"}}}}"#,
        );
        let f = find(&[user.clone(), d.path().join("proj/.claude/settings.json"), local.clone()]);
        assert_eq!(f.pointer_id, Some(("21813".into(), user, "kijito-qa@mkt".into())));
        assert_eq!(f.lock_message_id, Some(("78".into(), local, "kijito-qa@mkt".into())));
        assert_eq!(f.plugin_ids, ["kijito-qa@mkt"]);
        assert!(f.unreadable.is_empty());
    }

    #[test]
    fn unreadable_files_are_reported_not_followed() {
        let d = tempfile::tempdir().unwrap();
        let bad = write(d.path(), "bad.json", "{");
        let real = write(d.path(), "real.json", r#"{"pluginConfigs":{"kijito-qa@m":{"options":{"pointer_id":5,"lock_message_id":6}}}}"#);
        let link = d.path().join("link.json");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        let f = find(&[bad.clone(), link.clone(), d.path().join("absent.json")]);
        assert_eq!(f.pointer_id, None);
        assert_eq!(f.unreadable.len(), 2, "{:?}", f.unreadable);
        assert!(f.unreadable[1].1.contains("symlink"), "{:?}", f.unreadable);
        assert_eq!(f.plugin_id(), "kijito-qa@<marketplace>");
    }
}
