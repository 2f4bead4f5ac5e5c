//! The one integration-test harness of this package (docs/testing.md):
//! every test file is a module of this binary.

mod gate_checks;
mod tokens_ledger;
