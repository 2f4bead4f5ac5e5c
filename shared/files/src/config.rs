//! Configuration: one optional JSON file `kijito-qa/config.json` under
//! `$XDG_CONFIG_HOME` (default `~/.config`), owner-only under the same rules
//! as the token file. Keys (all optional): `apiUrl` (default
//! `https://api.kijito.ai`), `tokenFile` (default
//! `$XDG_CONFIG_HOME/kijito-qa/token`), `persona` (`codex`), `project`
//! (`Codex`), `pointerId`, `lockMessageId`, `dataDir`, `qaAtContextRatio`
//! (default 0.6: the context ratio at which the hooks nudge for a QA pass),
//! `enforce` (default false: the PreToolUse policy's latch modes and consent
//! apply in every workspace, not only in one with an initialised latch).
//! Unknown keys are
//! refused. `apiUrl` must be https, or http only to a loopback host.
//! `tokenFile` and `dataDir` may start with `~/` (your home directory).
//!
//! Claude Code plugin options (`userConfig` of the plugin manifest) reach
//! hooks as `CLAUDE_PLUGIN_OPTION_POINTER_ID` and
//! `CLAUDE_PLUGIN_OPTION_LOCK_MESSAGE_ID`; [`Config::apply_plugin_options`]
//! fills `pointerId`/`lockMessageId` from them only where the file has none.

use crate::private::{self, FileRules};
use kijito_protocol::error::{Error, Kind, Result};
use kijito_protocol::ids::{AbsPath, MemoryId, MessageId, Persona};
use std::path::{Path, PathBuf};

pub const DEFAULT_API_URL: &str = "https://api.kijito.ai";
pub const DEFAULT_PROJECT: &str = "Codex";
/// Largest accepted config file.
pub const MAX_CONFIG_BYTES: u64 = 64 * 1024;
const KEYS: &[&str] =
    &["apiUrl", "tokenFile", "persona", "project", "pointerId", "lockMessageId", "dataDir", "qaAtContextRatio", "enforce"];
/// Default of `qaAtContextRatio`: nudge for QA when the context is 60% full.
pub const DEFAULT_QA_AT_CONTEXT_RATIO: f64 = 0.6;

/// A config error: a local prerequisite ([`Kind::Local`]).
fn config_error(code: codes::Code, message: impl Into<String>) -> Error {
    Error::new(code, message).with_kind(Kind::Local)
}

/// Stable codes of this module (registered in the workspace by `tests/it/architecture.rs`).
pub mod codes {
    kijito_protocol::codes! {
        INVALID Invalid = "config_invalid",
        UNKNOWN_KEY UnknownKey = "config_unknown_key",
        API_URL ApiUrl = "config_api_url_refused",
        HOME Home = "config_home_unknown",
        PLUGIN_OPTION PluginOption = "config_plugin_option_invalid",
    }
}

/// The Claude Code plugin option variables (userConfig keys `pointer_id`
/// and `lock_message_id`, upper-cased by Claude Code).
pub const OPTION_POINTER_ID: &str = "CLAUDE_PLUGIN_OPTION_POINTER_ID";
pub const OPTION_LOCK_MESSAGE_ID: &str = "CLAUDE_PLUGIN_OPTION_LOCK_MESSAGE_ID";

/// Default token file: `kijito-qa/token` under the config home.
pub fn default_token_file() -> Result<PathBuf> {
    Ok(config_home()?.join("kijito-qa").join("token"))
}

/// A path a user wrote: absolute, or `~/...` (the home directory). Anything
/// else (relative, `~user/...`) is refused with a sentence saying what to write.
pub fn user_path(text: &str, what: &str) -> Result<AbsPath> {
    let expanded = if text == "~" || text.starts_with("~/") {
        let home = home_dir()?;
        format!("{}{}", home.to_string_lossy().trim_end_matches('/'), &text[1..])
    } else if text.starts_with('~') {
        return Err(config_error(
            codes::INVALID,
            format!(
                "{what}: only ~/ (your own home) is expanded; write the absolute path instead of {:?}",
                kijito_protocol::ids::clip(text)
            ),
        ));
    } else {
        text.to_owned()
    };
    AbsPath::parse(&expanded)
        .map_err(|e| config_error(codes::INVALID, format!("{what}: {} (write an absolute path or ~/...)", e.message())))
}

/// A validated API base URL: `https://host[:port]` or `http://<loopback>[:port]`,
/// no path, query, fragment or user info.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiUrl {
    base: String,
}

impl ApiUrl {
    pub fn parse(text: &str) -> Result<Self> {
        let refuse = |why: &str| config_error(codes::API_URL, format!("apiUrl {:?} refused: {why}", kijito_protocol::ids::clip(text)));
        let trimmed = text.strip_suffix('/').unwrap_or(text);
        let (scheme, rest) = trimmed.split_once("://").ok_or_else(|| refuse("not a URL"))?;
        if rest.is_empty() || rest.len() > 253 + 6 {
            return Err(refuse("bad host"));
        }
        if rest.contains(['/', '?', '#', '@', '\\', ' ']) || rest.chars().any(|c| c.is_control()) {
            return Err(refuse("a base URL has no path, query, fragment or user info"));
        }
        let host = host_of(rest).ok_or_else(|| refuse("bad host or port"))?;
        match scheme {
            "https" => {}
            "http" if is_loopback_host(&host) => {}
            "http" => return Err(refuse("plain http is allowed only to a loopback host (127.0.0.0/8, ::1, localhost)")),
            _ => return Err(refuse("scheme must be https (or http to loopback)")),
        }
        Ok(ApiUrl { base: format!("{scheme}://{rest}") })
    }

    /// `base` + `/api/...` path.
    pub fn endpoint(&self, path: &str) -> String {
        format!("{}{}", self.base, path)
    }

    pub fn as_str(&self) -> &str {
        &self.base
    }

    /// The host part, lowercased (an IPv6 address without brackets).
    pub fn host(&self) -> String {
        self.base.split_once("://").and_then(|(_, rest)| host_of(rest)).unwrap_or_default()
    }
}

/// Host part of `host[:port]` or `[v6][:port]`, lowercased; None if malformed.
fn host_of(authority: &str) -> Option<String> {
    let (host, port) = if let Some(rest) = authority.strip_prefix('[') {
        let (h, after) = rest.split_once(']')?;
        (h, after.strip_prefix(':'))
    } else if let Some((h, p)) = authority.rsplit_once(':') {
        (h, Some(p))
    } else {
        (authority, None)
    };
    if let Some(p) = port {
        if p.is_empty() || p.len() > 5 || !p.bytes().all(|b| b.is_ascii_digit()) || p.parse::<u32>().ok()? > 65535 {
            return None;
        }
    }
    if host.is_empty() {
        return None;
    }
    Some(host.to_ascii_lowercase())
}

/// 127.0.0.0/8, ::1 or localhost.
pub fn is_loopback_host(host: &str) -> bool {
    if host == "localhost" {
        return true;
    }
    match host.parse::<std::net::IpAddr>() {
        Ok(ip) => ip.is_loopback(),
        Err(_) => false,
    }
}

/// The effective configuration.
#[derive(Debug, Clone)]
pub struct Config {
    pub api_url: ApiUrl,
    pub token_file: PathBuf,
    pub persona: Persona,
    pub project: String,
    pub pointer_id: Option<MemoryId>,
    pub lock_message_id: Option<MessageId>,
    pub data_dir: Option<AbsPath>,
    /// Context ratio (0.05..=1.0) from which the hooks nudge for QA.
    pub qa_at_context_ratio: f64,
    /// `enforce`: the PreToolUse policy applies in every workspace
    /// (docs/protocol.md §8a), not only where a latch is initialised.
    pub enforce: bool,
    /// Where it was loaded from (None: defaults only).
    pub source: Option<PathBuf>,
}

/// The user's home directory from `$HOME`.
pub fn home_dir() -> Result<PathBuf> {
    match std::env::var_os("HOME") {
        Some(h) if Path::new(&h).is_absolute() => Ok(PathBuf::from(h)),
        _ => Err(config_error(codes::HOME, "HOME is not set to an absolute path")),
    }
}

/// Claude Code's config directory: `$CLAUDE_CONFIG_DIR` (if absolute) else
/// `~/.claude` (its `settings.json`, and its transcripts under `projects/`).
pub fn claude_config_dir() -> Result<PathBuf> {
    match std::env::var_os("CLAUDE_CONFIG_DIR") {
        Some(x) if Path::new(&x).is_absolute() => Ok(PathBuf::from(x)),
        _ => Ok(home_dir()?.join(".claude")),
    }
}

/// Codex's home: `$CODEX_HOME` (if absolute) else `~/.codex` (its
/// `config.toml`, and its transcripts under `sessions/`).
pub fn codex_home() -> Result<PathBuf> {
    match std::env::var_os("CODEX_HOME") {
        Some(x) if Path::new(&x).is_absolute() => Ok(PathBuf::from(x)),
        _ => Ok(home_dir()?.join(".codex")),
    }
}

/// `$XDG_CONFIG_HOME` (if absolute) else `~/.config`.
pub fn config_home() -> Result<PathBuf> {
    match std::env::var_os("XDG_CONFIG_HOME") {
        Some(x) if Path::new(&x).is_absolute() => Ok(PathBuf::from(x)),
        _ => Ok(home_dir()?.join(".config")),
    }
}

/// Path of the config file.
pub fn config_path() -> Result<PathBuf> {
    Ok(config_home()?.join("kijito-qa").join("config.json"))
}

impl Config {
    /// Defaults with no file.
    pub fn defaults() -> Result<Config> {
        Ok(Config {
            api_url: ApiUrl::parse(DEFAULT_API_URL)?,
            token_file: default_token_file()?,
            persona: Persona::default(),
            project: DEFAULT_PROJECT.to_owned(),
            pointer_id: None,
            lock_message_id: None,
            data_dir: None,
            qa_at_context_ratio: DEFAULT_QA_AT_CONTEXT_RATIO,
            enforce: false,
            source: None,
        })
    }

    /// Load the config file if it exists (it is optional), else defaults.
    pub fn load() -> Result<Config> {
        let path = config_path()?;
        match std::fs::symlink_metadata(&path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Config::defaults(),
            _ => Config::load_from(&path),
        }
    }

    /// Load and validate a specific config file.
    pub fn load_from(path: &Path) -> Result<Config> {
        let rules = FileRules { owner_only: true, min_bytes: 0, max_bytes: MAX_CONFIG_BYTES };
        let (bytes, _) = private::read_checked(path, rules).map_err(|e| e.context("config file"))?;
        let mut config = Config::from_json(&bytes)?;
        config.source = Some(path.to_owned());
        Ok(config)
    }

    /// Parse config JSON (defaults fill what is absent).
    pub fn from_json(bytes: &[u8]) -> Result<Config> {
        let invalid = |why: String| config_error(codes::INVALID, why);
        let value: serde_json::Value = serde_json::from_slice(bytes).map_err(|e| invalid(format!("config is not valid JSON: {e}")))?;
        let obj = value.as_object().ok_or_else(|| invalid("config must be a JSON object".into()))?;
        if let Some(key) = obj.keys().find(|k| !KEYS.contains(&k.as_str())) {
            return Err(config_error(codes::UNKNOWN_KEY, format!("unknown config key {:?}", kijito_protocol::ids::clip(key))));
        }
        let string = |key: &str| -> Result<Option<&str>> {
            match obj.get(key) {
                None => Ok(None),
                Some(serde_json::Value::String(s)) => Ok(Some(s.as_str())),
                Some(_) => Err(invalid(format!("{key} must be a string"))),
            }
        };
        let id = |key: &str| -> Result<Option<u64>> {
            match obj.get(key) {
                None => Ok(None),
                Some(v) => v.as_u64().map(Some).ok_or_else(|| invalid(format!("{key} must be a positive integer"))),
            }
        };
        let mut config = Config::defaults()?;
        if let Some(url) = string("apiUrl")? {
            config.api_url = ApiUrl::parse(url)?;
        }
        if let Some(token) = string("tokenFile")? {
            config.token_file = user_path(token, "tokenFile")?.as_path().to_owned();
        }
        if let Some(p) = string("persona")? {
            config.persona = Persona::parse(p).map_err(|e| invalid(format!("persona: {}", e.message())))?;
        }
        if let Some(p) = string("project")? {
            if p.is_empty() || p.len() > 128 || p.chars().any(|c| c.is_control()) || p.trim() != p {
                return Err(invalid("project must be 1 to 128 characters without control characters or surrounding spaces".into()));
            }
            config.project = p.to_owned();
        }
        if let Some(n) = id("pointerId")? {
            config.pointer_id = Some(MemoryId::new(n).map_err(|e| invalid(format!("pointerId: {}", e.message())))?);
        }
        if let Some(n) = id("lockMessageId")? {
            config.lock_message_id = Some(MessageId::new(n).map_err(|e| invalid(format!("lockMessageId: {}", e.message())))?);
        }
        if let Some(d) = string("dataDir")? {
            config.data_dir = Some(user_path(d, "dataDir")?);
        }
        if let Some(v) = obj.get("qaAtContextRatio") {
            config.qa_at_context_ratio = v
                .as_f64()
                .filter(|r| (0.05..=1.0).contains(r))
                .ok_or_else(|| invalid("qaAtContextRatio must be a number from 0.05 to 1.0".into()))?;
        }
        if let Some(v) = obj.get("enforce") {
            config.enforce = v.as_bool().ok_or_else(|| invalid("enforce must be true or false".into()))?;
        }
        Ok(config)
    }

    /// Fill `pointerId` / `lockMessageId` from the Claude Code plugin
    /// options where this config has none (the config file wins). `env`
    /// looks up a variable (injected for tests). A present but malformed
    /// option is an error naming the variable.
    pub fn apply_plugin_options(&mut self, env: &dyn Fn(&str) -> Option<String>) -> Result<()> {
        let read = |var: &str| -> Result<Option<u64>> {
            match env(var).map(|v| v.trim().to_owned()).filter(|v| !v.is_empty()) {
                None => Ok(None),
                Some(v) => v
                    .parse::<u64>()
                    .ok()
                    .filter(|n| *n > 0 && v.bytes().all(|b| b.is_ascii_digit()))
                    .map(Some)
                    // the value is not echoed: hook output reaches the model
                    .ok_or_else(|| {
                        config_error(
                            codes::PLUGIN_OPTION,
                            format!("{var} must be a positive integer (got {} characters that are not one)", v.chars().count()),
                        )
                    }),
            }
        };
        if self.pointer_id.is_none() {
            if let Some(n) = read(OPTION_POINTER_ID)? {
                self.pointer_id = Some(
                    MemoryId::new(n).map_err(|e| config_error(codes::PLUGIN_OPTION, format!("{OPTION_POINTER_ID}: {}", e.message())))?,
                );
            }
        }
        if self.lock_message_id.is_none() {
            if let Some(n) = read(OPTION_LOCK_MESSAGE_ID)? {
                self.lock_message_id = Some(
                    MessageId::new(n)
                        .map_err(|e| config_error(codes::PLUGIN_OPTION, format!("{OPTION_LOCK_MESSAGE_ID}: {}", e.message())))?,
                );
            }
        }
        Ok(())
    }

    /// The config file (or defaults) with the Claude Code plugin options
    /// applied from the real environment: what a Claude Code hook uses.
    pub fn load_with_plugin_options() -> Result<Config> {
        let mut config = Config::load()?;
        config.apply_plugin_options(&|k| std::env::var(k).ok())?;
        Ok(config)
    }
}

/// The user's policy file (docs/policy.md): its name in
/// `kijito-qa/` under the config home, next to `config.json`
/// (`kijito_policy::user::USER_POLICY_FILE`).
pub const USER_POLICY_FILE: &str = "policy.json";
/// Largest accepted user policy file.
pub const MAX_USER_POLICY_BYTES: u64 = 64 * 1024;

/// Path of the user's policy file.
pub fn user_policy_path() -> Result<PathBuf> {
    Ok(config_home()?.join("kijito-qa").join(USER_POLICY_FILE))
}

/// Read the user's policy file ([`user_policy_path`]): `Ok(None)` when
/// there is none; otherwise its bytes, read as the config file is (not
/// through a symlink `file_symlink`, a regular file of this user
/// `file_not_owned`, owner-only `file_permissions`, at most
/// [`MAX_USER_POLICY_BYTES`] `file_too_large`, safe ancestors, unchanged
/// while read). The caller parses them (`kijito_policy::UserPolicy::load`)
/// and fails closed on an error.
pub fn read_user_policy() -> Result<Option<Vec<u8>>> {
    read_user_policy_from(&user_policy_path()?)
}

/// [`read_user_policy`] of a given path.
pub fn read_user_policy_from(path: &Path) -> Result<Option<Vec<u8>>> {
    if let Err(e) = std::fs::symlink_metadata(path) {
        if e.kind() == std::io::ErrorKind::NotFound {
            return Ok(None);
        }
    }
    let rules = FileRules { owner_only: true, min_bytes: 0, max_bytes: MAX_USER_POLICY_BYTES };
    let (bytes, _) = private::read_checked(path, rules).map_err(|e| e.context("user policy file"))?;
    Ok(Some(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_user_policy_file_is_read_only_when_it_is_the_users_own_and_private() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(USER_POLICY_FILE);
        assert_eq!(read_user_policy_from(&path).unwrap(), None);
        std::fs::write(&path, b"{}").unwrap();
        let chmod = |mode: u32| std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
        chmod(0o600);
        assert_eq!(read_user_policy_from(&path).unwrap().as_deref(), Some(&b"{}"[..]));
        for mode in [0o620, 0o602, 0o640, 0o644] {
            chmod(mode);
            assert_eq!(read_user_policy_from(&path).unwrap_err().code(), crate::private::codes::PERMISSIONS.as_str(), "{mode:o}");
        }
        chmod(0o600);
        let link = dir.path().join("link.json");
        std::os::unix::fs::symlink(&path, &link).unwrap();
        assert_eq!(read_user_policy_from(&link).unwrap_err().code(), crate::private::codes::SYMLINK.as_str());
        let dangling = dir.path().join("dangling.json");
        std::os::unix::fs::symlink(dir.path().join("nowhere"), &dangling).unwrap();
        assert_eq!(read_user_policy_from(&dangling).unwrap_err().code(), crate::private::codes::SYMLINK.as_str());
        std::fs::write(&path, vec![b' '; MAX_USER_POLICY_BYTES as usize + 1]).unwrap();
        assert_eq!(read_user_policy_from(&path).unwrap_err().code(), crate::private::codes::TOO_LARGE.as_str());
        std::fs::write(&path, vec![b' '; MAX_USER_POLICY_BYTES as usize]).unwrap();
        assert_eq!(read_user_policy_from(&path).unwrap().map(|b| b.len()), Some(MAX_USER_POLICY_BYTES as usize));
        let sub = dir.path().join("d");
        std::fs::create_dir(&sub).unwrap();
        assert_eq!(read_user_policy_from(&sub).unwrap_err().code(), crate::private::codes::NOT_REGULAR.as_str());
        // Another user's file (the tests may run as root, who can hand it over).
        if crate::private::current_uid() == 0 {
            std::os::unix::fs::chown(&path, Some(65534), Some(65534)).unwrap();
            assert_eq!(read_user_policy_from(&path).unwrap_err().code(), crate::private::codes::NOT_OWNED.as_str());
        }
    }

    #[test]
    fn api_url_rules() {
        for good in [
            "https://api.kijito.ai",
            "https://api.kijito.ai/",
            "http://127.0.0.1:8080",
            "http://127.1.2.3",
            "http://[::1]:9",
            "http://localhost:1",
            "https://[2001:db8::1]",
        ] {
            assert!(ApiUrl::parse(good).is_ok(), "{good}");
        }
        for bad in [
            "http://api.kijito.ai",
            "http://10.0.0.1",
            "ftp://x",
            "https://",
            "https://a/b",
            "https://u@a",
            "https://a?x",
            "https://a:99999",
            "http://localhost.evil.com",
            "api.kijito.ai",
            "http://[::2]",
        ] {
            assert_eq!(ApiUrl::parse(bad).unwrap_err().code(), codes::API_URL.as_str(), "{bad}");
        }
        assert_eq!(ApiUrl::parse("https://x/").unwrap().endpoint("/api/claim"), "https://x/api/claim");
    }

    #[test]
    fn config_keys_are_strict() {
        std::env::set_var("HOME", "/home/test");
        let c = Config::from_json(br#"{"apiUrl":"http://127.0.0.1:1","pointerId":21813,"lockMessageId":7,"persona":"codex","project":"Codex","dataDir":"/tmp/d","tokenFile":"/tmp/t"}"#).unwrap();
        assert_eq!(c.pointer_id.unwrap().get(), 21813);
        assert_eq!(c.lock_message_id.unwrap().get(), 7);
        assert_eq!(Config::from_json(br#"{"nope":1}"#).unwrap_err().code(), codes::UNKNOWN_KEY.as_str());
        for bad in [
            &br#"{"pointerId":0}"#[..],
            br#"{"pointerId":"1"}"#,
            br#"{"persona":"X"}"#,
            br#"{"dataDir":"rel"}"#,
            br#"[]"#,
            b"{",
            br#"{"project":" a"}"#,
        ] {
            assert_eq!(Config::from_json(bad).unwrap_err().code(), codes::INVALID.as_str());
        }
        assert_eq!(Config::from_json(br#"{"apiUrl":"http://example.com"}"#).unwrap_err().code(), codes::API_URL.as_str());
        let d = Config::from_json(b"{}").unwrap();
        assert_eq!(d.api_url.as_str(), DEFAULT_API_URL);
        assert_eq!(d.token_file, config_home().unwrap().join("kijito-qa/token"));
        let t = Config::from_json(br#"{"tokenFile":"~/.config/kijito-qa/t","dataDir":"~/d"}"#).unwrap();
        assert_eq!(t.token_file, PathBuf::from("/home/test/.config/kijito-qa/t"));
        assert_eq!(t.data_dir.unwrap().as_str(), "/home/test/d");
        for bad in [&br#"{"tokenFile":"~root/t"}"#[..], br#"{"tokenFile":"t"}"#, br#"{"dataDir":"~/../x"}"#] {
            assert_eq!(Config::from_json(bad).unwrap_err().code(), codes::INVALID.as_str());
        }
        assert_eq!(d.persona.as_str(), "codex");
        assert_eq!(d.project, "Codex");
        assert_eq!(d.qa_at_context_ratio, DEFAULT_QA_AT_CONTEXT_RATIO);
        assert_eq!(Config::from_json(br#"{"qaAtContextRatio":0.75}"#).unwrap().qa_at_context_ratio, 0.75);
        assert!(!d.enforce);
        assert!(Config::from_json(br#"{"enforce":true}"#).unwrap().enforce);
        assert!(Config::from_json(br#"{"enforce":"yes"}"#).is_err());
        for bad in [
            &br#"{"qaAtContextRatio":0}"#[..],
            br#"{"qaAtContextRatio":1.5}"#,
            br#"{"qaAtContextRatio":"0.6"}"#,
            br#"{"qaAtContextRatio":null}"#,
        ] {
            assert_eq!(Config::from_json(bad).unwrap_err().code(), codes::INVALID.as_str());
        }
    }

    #[test]
    fn plugin_options_fill_only_what_the_file_lacks() {
        std::env::set_var("HOME", "/home/test");
        let env = |k: &str| match k {
            OPTION_POINTER_ID => Some("21813".to_owned()),
            OPTION_LOCK_MESSAGE_ID => Some("7".to_owned()),
            _ => None,
        };
        let mut c = Config::from_json(b"{}").unwrap();
        c.apply_plugin_options(&env).unwrap();
        assert_eq!((c.pointer_id.unwrap().get(), c.lock_message_id.unwrap().get()), (21813, 7));
        let mut c = Config::from_json(br#"{"pointerId":5,"lockMessageId":6}"#).unwrap();
        c.apply_plugin_options(&env).unwrap();
        assert_eq!((c.pointer_id.unwrap().get(), c.lock_message_id.unwrap().get()), (5, 6));
        let mut c = Config::from_json(b"{}").unwrap();
        c.apply_plugin_options(&|_| None).unwrap();
        assert!(c.pointer_id.is_none());
        for bad in ["0", "-1", "1.5", "x", "+3", "99999999999999999999"] {
            let mut c = Config::from_json(b"{}").unwrap();
            let env = |k: &str| (k == OPTION_POINTER_ID).then(|| bad.to_owned());
            assert_eq!(c.apply_plugin_options(&env).unwrap_err().code(), codes::PLUGIN_OPTION.as_str(), "{bad}");
        }
    }
}
