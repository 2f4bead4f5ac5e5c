//! The one integration-test harness of this package (docs/testing.md):
//! every test file is a module of this binary. Its QA world and passes come
//! from kijito-testkit.

mod cli_run;
mod compaction_rules;
mod record_rules;
mod summary_rules;
mod withdraw_rules;
