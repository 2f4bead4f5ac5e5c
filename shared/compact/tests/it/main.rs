//! The one integration-test harness of this package (docs/testing.md):
//! every test file is a module of this binary. Its QA world and passes come
//! from kijito-testkit (kijito-gate's tests build the same ones; the
//! spent-nonce ledger stays in the world's own dir).

mod trigger_rules;
mod turn_started;
mod withdraw_rules;
