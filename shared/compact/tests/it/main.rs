//! The one integration-test harness of this package (docs/testing.md):
//! every test file is a module of this binary.

#[path = "../common/mod.rs"]
mod common;

mod trigger_rules;
mod turn_started;
mod withdraw_rules;
