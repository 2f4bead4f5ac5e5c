//! A memory-latch world: a [`World`] (QA data dir, transcript, HOME), a
//! canonical workspace directory and a fixed boot id file, plus the real
//! `session-hook` run with a host payload whose `cwd` is that workspace
//! (tests/memory_latch_consent.rs, tests/hooks_wake.rs, tests/memory_latch_knobs.rs,
//! tests/memory_latch_wallet.rs).

#![allow(clippy::unwrap_used)]

use super::gate::{wait_bounded, World, SESSION_HOOK};
use serde_json::Value;
use std::fs;
use std::path::PathBuf;
use std::process::Output;

/// The boot id every latch world's boot id file holds.
pub const BOOT: &str = "11111111-2222-3333-4444-555555555555";

pub struct Env {
    pub w: World,
    /// The workspace (canonical path, so the latch's own checks agree).
    pub ws: PathBuf,
    /// The boot id file (`MEMORY_LATCH_BOOT_ID_FILE`), holding [`BOOT`].
    pub boot: PathBuf,
}

/// A fresh world with an empty workspace and the boot id file.
pub fn env() -> Env {
    let w = World::new();
    let ws = fs::canonicalize(w.tmp.path()).unwrap().join("ws");
    fs::create_dir(&ws).unwrap();
    let boot = w.tmp.path().join("boot_id");
    fs::write(&boot, format!("{BOOT}\n")).unwrap();
    Env { w, ws, boot }
}

/// The host-e2e payload key of a UserPromptSubmit hook on `host`.
pub fn ups(host: &str) -> &'static str {
    if host == "codex" {
        "app-server:UserPromptSubmit"
    } else {
        "UserPromptSubmit"
    }
}

impl Env {
    /// Run the real `session-hook --expect <expect>` with `stdin` on this
    /// world's data dir and boot id file (bounded: 30 s); it must exit 0.
    pub fn session_hook(&self, host: &str, expect: &str, stdin: &Value) -> Output {
        let mut c = self.w.command(&SESSION_HOOK);
        c.args(["--host", host, "--expect", expect, "--data-dir", &self.w.data_arg()]).env("MEMORY_LATCH_BOOT_ID_FILE", &self.boot);
        let mut child = c.spawn().unwrap();
        {
            use std::io::Write;
            child.stdin.take().unwrap().write_all(stdin.to_string().as_bytes()).unwrap();
        }
        let out = wait_bounded(child, 30);
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
        out
    }
}
