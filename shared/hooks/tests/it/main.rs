//! The one integration-test harness of this package (docs/testing.md):
//! every test file is a module of this binary.

/// Tests that change process-wide state run alone in a child process.
#[path = "../../../../tests/support/isolated.rs"]
mod isolated;

/// The one hand-built pass of every harness.
#[path = "../../../../tests/support/pass.rs"]
mod pass;

mod entry;
mod hook_bins;
mod hook_bins_answer;
mod hook_logic;
mod latch_prompt;
mod latch_wallet_sibling;
mod panic_answer;
mod pretool_decision;
mod wake_start;
