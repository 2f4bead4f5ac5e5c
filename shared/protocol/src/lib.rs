//! kijito-protocol: the pure rules of the contract (`docs/protocol.md`), no I/O.
//!
//! | docs/protocol.md | module |
//! |---|---|
//! | §1 words, typed values | [`ids`] |
//! | §3 rendered memory, lifecycle, known-bad control | [`render`] |
//! | §4 pointer manifest | [`manifest`] |
//! | §4 canonical JSON printer, strict parser | [`json`] |
//! | §5 the cold-boot snapshot report | [`snapshot_report`] |
//! | §8 helper command grammar and guard | [`command`] |
//! | §8 the shell model the guard and the policy read | [`shell`] |
//! | consent risk (latch, policy, wallet) | [`risk`] |
//! | argv grammar of every binary (the process side: kijito-cli) | [`argv`] |
//! | the agent hosts (`codex`, `claude`) | [`host`] |
//! | errors and codes | [`error`] |
//! | the UTC calendar | [`clock`] |

#![forbid(unsafe_code)]

pub mod argv;
pub mod clock;
pub mod codes;
pub mod command;
pub mod error;
pub mod host;
pub mod ids;
pub mod json;
pub mod manifest;
pub mod render;
pub mod risk;
pub mod shell;
pub mod snapshot_report;

pub use error::{Error, Result};

#[doc(hidden)]
pub use serde as __serde;
#[doc(hidden)]
pub use serde_json as __serde_json;
