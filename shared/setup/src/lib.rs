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

/// Write one file kijito-setup owns or merges into (our config, the hosts'
/// settings, rules and MCP registrations): first the temp file a killed
/// earlier run left for it, once older than any live run's write
/// (docs/testing.md, "Crash explorer"), then the atomic write.
pub(crate) fn write_replacing(path: &std::path::Path, bytes: &[u8]) -> kijito_protocol::error::Result<()> {
    let _ = kijito_files::private::remove_stale_temps_older(path, std::time::Duration::from_secs(30));
    kijito_files::private::write_atomic(path, bytes)
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_killed_runs_temp_file_goes_with_the_next_write_a_live_one_stays() {
        let d = tempfile::tempdir().expect("tempdir");
        let path = d.path().join("settings.json");
        let old = d.path().join(".settings.json.tmp-killed");
        let live = d.path().join(".settings.json.tmp-live");
        for p in [&old, &live] {
            std::fs::write(p, b"{").expect("write");
        }
        let f = std::fs::File::options().write(true).open(&old).expect("open");
        f.set_modified(std::time::SystemTime::now() - std::time::Duration::from_secs(60)).expect("age it");
        super::write_replacing(&path, b"{}\n").expect("write");
        assert_eq!(std::fs::read(&path).expect("read"), b"{}\n");
        assert!(!old.exists() && live.exists());
    }
}
