//! The one integration-test harness of this package (docs/testing.md):
//! every test file is a module of this binary. Its QA world, hand-built pass
//! and run-alone helper come from kijito-testkit.

mod entry;
mod hook_bins;
mod hook_bins_answer;
mod hook_logic;
mod latch_prompt;
mod latch_wallet_sibling;
mod panic_answer;
mod pretool_decision;
mod pretool_places;
mod run_hook_life;
mod wake_start;
