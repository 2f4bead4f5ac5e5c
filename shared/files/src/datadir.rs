//! Data directory resolution and the private `qa/` state
//! directory inside it (docs/protocol.md §7).
//!
//! Order: `--data-dir`, else the host's plugin data variable
//! (`CLAUDE_PLUGIN_DATA` for Claude Code, `PLUGIN_DATA` for Codex), else
//! `dataDir` from the config, else `~/.cache/kijito-qa`.
//!
//! The data directory is created 0700 when missing; when it exists it must be
//! a real directory (not a symlink) owned by the user and not writable by
//! group or other (a host may create its plugin data directory 0755). The
//! `qa/` directory inside it, which holds every gate file, must be exactly
//! owner-only (0700) and is created so.

use crate::config::Config;
use crate::private;
use kijito_protocol::error::{Error, Result};
use kijito_protocol::host::HostKind;
use kijito_protocol::ids::AbsPath;

/// Stable codes of this module (registered in the workspace by `tests/it/architecture.rs`).
pub mod codes {
    kijito_protocol::codes! {
        INVALID Invalid = "data_dir_invalid",
        UNUSABLE Unusable = "data_dir_unusable",
    }
}

/// Where a data dir came from (for status and messages).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    Flag,
    HostVariable,
    Config,
    Default,
}

/// Pick the data directory without touching the filesystem. `env` looks up
/// an environment variable (injected for tests).
pub fn choose(
    flag: Option<&AbsPath>,
    host: Option<HostKind>,
    config: Option<&Config>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<(AbsPath, Source)> {
    if let Some(p) = flag {
        return Ok((p.clone(), Source::Flag));
    }
    if let Some(h) = host {
        if let Some(v) = env(h.data_var()).filter(|v| !v.is_empty()) {
            let p = AbsPath::parse(&v).map_err(|e| Error::new(codes::INVALID, format!("{}: {}", h.data_var(), e.message())))?;
            return Ok((p, Source::HostVariable));
        }
    }
    if let Some(p) = config.and_then(|c| c.data_dir.as_ref()) {
        return Ok((p.clone(), Source::Config));
    }
    let home = env("HOME").filter(|h| h.starts_with('/')).ok_or_else(|| Error::new(codes::INVALID, "HOME is not set; give --data-dir"))?;
    let p = AbsPath::parse(&format!("{}/.cache/kijito-qa", home.trim_end_matches('/')))
        .map_err(|e| Error::new(codes::INVALID, format!("default data dir: {}", e.message())))?;
    Ok((p, Source::Default))
}

/// Resolve from the real environment and config.
pub fn resolve(flag: Option<&AbsPath>, host: Option<HostKind>, config: Option<&Config>) -> Result<AbsPath> {
    choose(flag, host, config, &|k| std::env::var(k).ok()).map(|(p, _)| p)
}

/// Make sure the data dir is usable and return its private `qa/` directory.
pub fn qa_dir(data_dir: &AbsPath) -> Result<AbsPath> {
    qa_dir_checked(data_dir).map(|(qa, _)| qa)
}

/// The name of the QA state directory in a data dir.
pub const QA_DIR: &str = "qa";

/// `<data-dir>/qa/`, the one place the path is built (checked or created by
/// [`qa_dir_checked`]; `kijito_gate::QaDir` wraps it).
pub fn qa_path(data_dir: &AbsPath) -> Result<AbsPath> {
    data_dir.join(QA_DIR)
}

/// [`qa_dir`] with the proof that it (and every directory on the way) was
/// checked: the ancestors are checked once, for the data dir.
pub fn qa_dir_checked(data_dir: &AbsPath) -> Result<(AbsPath, private::CheckedDir)> {
    let wrap = |e: Error| Error::new(codes::UNUSABLE, format!("data dir {data_dir}: {} ({})", e.message(), e.code()));
    let data = match std::fs::symlink_metadata(data_dir.as_path()) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => private::ensure_private_dir_checked(data_dir.as_path()),
        _ => private::check_dir_checked(data_dir.as_path(), false),
    }
    .map_err(wrap)?;
    let qa = qa_path(data_dir)?;
    let checked = data.private_subdir(QA_DIR).map_err(wrap)?;
    Ok((qa, checked))
}

/// The variable that names the state directory outside every workspace and
/// data dir (tests; named after its first user, the latch head records).
pub const HEADS_ENV: &str = "MEMORY_LATCH_HEADS_DIR";

/// The private state directory outside the workspace and the data dir: the
/// latch head records, the latch workspace index and the QA spent-nonce
/// ledger live here. `$MEMORY_LATCH_HEADS_DIR` if set (absolute), else
/// `$XDG_STATE_HOME/kijito-qa/latch-heads`, else
/// `$HOME/.local/state/kijito-qa/latch-heads`; `None` without any of them.
pub fn heads_dir() -> Option<std::path::PathBuf> {
    use std::path::PathBuf;
    let var = |n: &str| std::env::var_os(n).filter(|v| !v.is_empty()).map(PathBuf::from).filter(|p| p.is_absolute());
    if let Some(d) = var(HEADS_ENV) {
        return Some(d);
    }
    let state = var("XDG_STATE_HOME").or_else(|| var("HOME").map(|h| h.join(".local/state")))?;
    Some(state.join("kijito-qa").join("latch-heads"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn order_flag_host_config_default() {
        let env = |k: &str| match k {
            "CLAUDE_PLUGIN_DATA" => Some("/p/claude".to_owned()),
            "PLUGIN_DATA" => Some("/p/codex".to_owned()),
            "HOME" => Some("/home/u".to_owned()),
            _ => None,
        };
        let flag = AbsPath::parse("/f").unwrap();
        assert_eq!(choose(Some(&flag), Some(HostKind::Claude), None, &env).unwrap(), (flag.clone(), Source::Flag));
        assert_eq!(choose(None, Some(HostKind::Claude), None, &env).unwrap().0.as_str(), "/p/claude");
        assert_eq!(choose(None, Some(HostKind::Codex), None, &env).unwrap().0.as_str(), "/p/codex");
        let mut config = Config {
            api_url: crate::config::ApiUrl::parse("https://api.kijito.ai").unwrap(),
            token_file: "/t".into(),
            persona: Default::default(),
            project: "Codex".into(),
            pointer_id: None,
            lock_message_id: None,
            data_dir: Some(AbsPath::parse("/c").unwrap()),
            qa_at_context_ratio: crate::config::DEFAULT_QA_AT_CONTEXT_RATIO,
            enforce: false,
            source: None,
        };
        assert_eq!(choose(None, None, Some(&config), &env).unwrap(), (AbsPath::parse("/c").unwrap(), Source::Config));
        config.data_dir = None;
        assert_eq!(choose(None, None, Some(&config), &env).unwrap().0.as_str(), "/home/u/.cache/kijito-qa");
        let bad = |k: &str| (k == "PLUGIN_DATA").then(|| "relative".to_owned());
        assert_eq!(choose(None, Some(HostKind::Codex), None, &bad).unwrap_err().code(), codes::INVALID.as_str());
    }

    #[test]
    fn qa_dir_is_private_and_symlinks_refused() {
        let t = tempfile::tempdir().unwrap();
        let data = AbsPath::from_path(&t.path().join("d")).unwrap();
        let qa = qa_dir(&data).unwrap();
        assert_eq!(std::fs::metadata(qa.as_path()).unwrap().permissions().mode() & 0o777, 0o700);
        let link = AbsPath::from_path(&t.path().join("l")).unwrap();
        std::os::unix::fs::symlink(data.as_path(), link.as_path()).unwrap();
        assert_eq!(qa_dir(&link).unwrap_err().code(), codes::UNUSABLE.as_str());
        std::fs::set_permissions(data.as_path(), std::fs::Permissions::from_mode(0o777)).unwrap();
        assert_eq!(qa_dir(&data).unwrap_err().code(), codes::UNUSABLE.as_str());
    }
}
