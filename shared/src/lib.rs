//! kijito-core: the Kijito QA memory protocol (see PROTOCOL.md). Every rule
//! lives in this crate, one module per idea; binaries only parse, call, print.
//!
//! | PROTOCOL.md | module |
//! |---|---|
//! | 1 words, typed values | [`ids`] |
//! | argv for every binary | [`cli`] |
//! | owner-only files | [`private`] |
//! | errors and codes | [`error`] |
//! | memory-latch (local tamper-evident manifest, consent, gate, recovery) | [`latch`] |

pub mod cli;
pub mod error;
pub mod ids;
pub mod latch;
pub mod private;
pub mod random;

pub use error::{Error, Result};
