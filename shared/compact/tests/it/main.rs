//! The one integration-test harness of this package (docs/testing.md):
//! every test file is a module of this binary.

/// The QA world helpers: one file, kijito-gate's (this crate's tests build
/// the same passes; the spent-nonce ledger stays in the world's own dir).
#[path = "../../../gate/tests/common/mod.rs"]
mod common;

mod trigger_rules;
mod turn_started;
mod withdraw_rules;
