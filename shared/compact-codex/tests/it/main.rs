//! The one integration-test harness of this package (docs/testing.md):
//! every test file is a module of this binary.

/// Tests that change process-wide state run alone in a child process.
#[path = "../../../../tests/support/isolated.rs"]
mod isolated;

/// The TUI side of the adapter's WebSocket (shared with the root harness).
#[path = "../../../../tests/support/ws.rs"]
mod ws;

#[path = "../common/mod.rs"]
mod common;

mod adapter_run;
mod find_codex;
mod gatekeeper;
