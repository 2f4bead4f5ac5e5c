//! [`HookEnv`]: everything a hook needs besides its stdin, read by the
//! dispatcher ([`crate::run`]) and by every hook module alike (so that no
//! module reaches into the dispatcher for it).

use crate::Host;
use kijito_files::config::Config;
use kijito_gate::{self as gate, QaDir};
use kijito_protocol::command::{self, HelperDir};
use kijito_protocol::error::{Error, Result};
use kijito_protocol::ids::AbsPath;

/// Everything a hook needs besides its stdin.
#[derive(Debug, Clone)]
pub struct HookEnv {
    pub host: Host,
    pub data_dir_flag: Option<AbsPath>,
    pub config: Option<Config>,
    /// Why the config could not be loaded (then `config` is None).
    pub config_error: Option<String>,
    pub helpers: Option<HelperDir>,
    pub now_ms: i64,
    /// Where the spent-nonce ledger is.
    ledger: Ledger,
    /// [`HookEnv::data_dir`], resolved once per process.
    data: std::sync::OnceLock<Result<AbsPath>>,
    /// [`HookEnv::qa`], resolved (and the private directory ensured) once per process.
    qa: std::sync::OnceLock<Result<(AbsPath, QaDir)>>,
}

/// Where a hook's spent-nonce ledger is.
#[derive(Debug, Clone)]
enum Ledger {
    /// The [`QaDir`]'s own: the environment's state directory, resolved
    /// only when the QA dir is opened, not at every hook start.
    Own,
    /// Set by [`HookEnv::with_ledger_dir`]: a directory, or none (unavailable).
    Set(Option<std::path::PathBuf>),
}

impl HookEnv {
    /// From the real process: config file, current executable, clock.
    pub fn from_process(host: Host, data_dir_flag: Option<AbsPath>) -> HookEnv {
        // Claude Code: plugin userConfig options fill what the config file lacks.
        let loaded = match host {
            Host::Claude => Config::load_with_plugin_options(),
            Host::Codex => Config::load(),
        };
        let (config, config_error) = match loaded {
            Ok(c) => (Some(c), None),
            Err(e) => (None, Some(format!("{} ({})", e.message(), e.code()))),
        };
        HookEnv::new(host, data_dir_flag, config, config_error, kijito_cli::helper_dir().ok(), gate::now_ms())
    }

    /// From explicit parts (tests, embedders); [`HookEnv::qa`] is resolved on first use.
    pub fn new(
        host: Host,
        data_dir_flag: Option<AbsPath>,
        config: Option<Config>,
        config_error: Option<String>,
        helpers: Option<HelperDir>,
        now_ms: i64,
    ) -> HookEnv {
        HookEnv {
            host,
            data_dir_flag,
            config,
            config_error,
            helpers,
            now_ms,
            ledger: Ledger::Own,
            data: Default::default(),
            qa: Default::default(),
        }
    }

    /// The same with the spent-nonce ledger in `dir` (a test's own dir,
    /// never the user's state directory).
    pub fn with_ledger_dir(mut self, dir: Option<std::path::PathBuf>) -> HookEnv {
        self.ledger = Ledger::Set(dir);
        self
    }

    /// The data dir (flag, config, default), resolved on the first call
    /// only; nothing is created (PreToolUse reads through it).
    pub(crate) fn data_dir(&self) -> Result<AbsPath> {
        self.data.get_or_init(|| kijito_files::datadir::resolve(self.data_dir_flag.as_ref(), Some(self.host), self.config.as_ref())).clone()
    }

    /// The data dir ([`HookEnv::data_dir`]) and its private `qa/`: resolved
    /// and ensured on the first call only (one event asks several times).
    pub(crate) fn qa(&self) -> Result<(AbsPath, QaDir)> {
        self.qa
            .get_or_init(|| {
                let data = self.data_dir()?;
                let qa = QaDir::open(&data)?;
                let qa = match &self.ledger {
                    Ledger::Set(dir) => qa.with_ledger_dir(dir.clone()),
                    Ledger::Own => qa,
                };
                Ok((data, qa))
            })
            .clone()
    }

    pub(crate) fn helpers(&self) -> Result<&HelperDir> {
        self.helpers.as_ref().ok_or_else(|| Error::new(command::codes::ROOT_UNKNOWN, "cannot locate this installed root"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env_in(data: &std::path::Path) -> HookEnv {
        HookEnv::new(Host::Codex, Some(AbsPath::from_path(data).unwrap()), None, None, None, 0)
    }

    #[test]
    fn the_ledger_dir_is_the_qa_dirs_own_unless_one_is_set() {
        let d = tempfile::tempdir().unwrap();
        let data = d.path().join("data");
        std::fs::create_dir(&data).unwrap();
        let (_, own) = env_in(&data).qa().unwrap();
        assert_eq!(own.ledger_dir().map(|p| p.to_path_buf()), kijito_files::datadir::heads_dir());
        let set = d.path().join("heads");
        let (_, qa) = env_in(&data).with_ledger_dir(Some(set.clone())).qa().unwrap();
        assert_eq!(qa.ledger_dir(), Some(set.as_path()));
        let (_, none) = env_in(&data).with_ledger_dir(None).qa().unwrap();
        assert_eq!(none.ledger_dir(), None);
    }
}
