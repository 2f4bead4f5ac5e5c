//! The one integration-test harness of this package (docs/testing.md):
//! every test file is a module of this binary. The run-alone helper, the
//! WebSocket client side, the QA world and the stand-in Codex come from
//! kijito-testkit; `tests/common` adds this crate's state files.

#[path = "../common/mod.rs"]
mod common;

mod adapter_run;
mod find_codex;
mod gatekeeper;
