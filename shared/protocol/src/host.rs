//! The agent hosts kijito-qa runs under: the one spelling of their names
//! (`codex`, `claude`) in the Rust code (docs/architecture.md, *Where new
//! things go*). A new host is a variant here; the compiler then names every
//! `match` that must answer for it. tests/it/architecture.rs
//! `host_names_are_spelled_only_by_host_kind` fails on a host name as a
//! string literal elsewhere in shared/ and bins/ (outside test code).

use crate::error::{Error, Result};
use std::fmt;

/// Which host runs us.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HostKind {
    Codex,
    Claude,
}

impl HostKind {
    /// Every host, in the order of `--host`'s help.
    pub const ALL: [HostKind; 2] = [HostKind::Codex, HostKind::Claude];

    /// The host's name: the value of `--host`, its CLI executable, its
    /// plugin directory under an installed root.
    pub fn as_str(self) -> &'static str {
        match self {
            HostKind::Codex => "codex",
            HostKind::Claude => "claude",
        }
    }

    /// The product's name for the user (`Codex`, `Claude Code`).
    pub fn product(self) -> &'static str {
        match self {
            HostKind::Codex => "Codex",
            HostKind::Claude => "Claude Code",
        }
    }

    /// The host named exactly `text`, if any.
    pub fn from_name(text: &str) -> Option<HostKind> {
        HostKind::ALL.into_iter().find(|h| h.as_str() == text)
    }

    pub fn parse(text: &str) -> Result<HostKind> {
        HostKind::from_name(text).ok_or_else(|| {
            Error::usage(crate::codes::cli::INVALID_HOST, format!("--host must be codex or claude, got {:?}", crate::ids::clip(text)))
        })
    }

    /// The environment variable naming the plugin's data directory.
    pub fn data_var(self) -> &'static str {
        match self {
            HostKind::Codex => "PLUGIN_DATA",
            HostKind::Claude => "CLAUDE_PLUGIN_DATA",
        }
    }
}

impl fmt::Display for HostKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl crate::argv::FromArg for HostKind {
    fn from_arg(text: &str) -> Result<Self> {
        HostKind::parse(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_names_parse_back() {
        for h in HostKind::ALL {
            assert_eq!(HostKind::parse(h.as_str()).ok(), Some(h));
            assert_eq!(h.to_string(), h.as_str());
        }
        for bad in ["", "Codex", "claude ", "gemini"] {
            assert_eq!(HostKind::from_name(bad), None);
            assert_eq!(HostKind::parse(bad).err().map(|e| e.code().to_owned()), Some("invalid_host".to_owned()), "{bad:?}");
        }
    }
}
