//! kijito-setup: from the demo to your own pointer, and the doctor that
//! says why hooks would silently not fire (docs/first-pointer.md,
//! docs/configuration.md "kijito-setup" and "kijito-doctor").
//!
//! | module | what |
//! |---|---|
//! | [`setup`] | `kijito-setup`: owner-only config, token check, pointer read, one claim+release; `--create` seeds kijito-local |
//! | [`doctor`] | `kijito-doctor`: per-host checks, text or JSON, red/yellow/green |
//! | [`explain`] | error messages that say what to do (401, 403, network, token file) |
//! | [`claude_options`] | where Claude Code keeps the plugin options (settings `pluginConfigs`) |
//! | [`codex`] | Codex hook trust through `codex app-server` `hooks/list` |
//! | [`mcp`] | `kijito-setup --mcp`: register `kijito-local mcp` with Claude Code (plugin `.mcp.json`) and Codex (`mcp_servers` in config.toml); the doctor's `mcp` check |
//! | [`permissions`] | `kijito-setup --allow-helpers`: the hosts' allow rules for the agent's helper commands; the doctor's `permissions` check |
//! | [`sandbox`] | `kijito-setup --sandbox`: the hosts' own OS sandboxes (Claude Code `sandbox` settings, Codex `sandbox_mode`); the doctor's `sandbox` check |
//! | [`proc`] | running a child with bounded time and output |

#![forbid(unsafe_code)]

/// Stable codes of this module (registered in the workspace by `tests/it/architecture.rs`).
pub mod codes {
    kijito_protocol::codes! {
        SPAWN_FAILED SpawnFailed = "program_spawn_failed",
        CODEX_HOOKS_LIST_FAILED CodexHooksListFailed = "codex_hooks_list_failed",
        CWD_UNKNOWN CwdUnknown = "cwd_unknown",
        RED Red = "red",
    }
}
pub mod claude_options;
pub mod cli;
pub mod codex;
pub mod doctor;
pub mod explain;
pub mod mcp;
pub mod permissions;
pub mod proc;
pub mod sandbox;
pub mod setup;
