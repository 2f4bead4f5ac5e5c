//! kijito-core: the Kijito QA memory protocol (see PROTOCOL.md). Every rule
//! lives in this crate, one module per idea; binaries only parse, call, print.
//!
//! | PROTOCOL.md | module |
//! |---|---|
//! | 1 words, typed values | [`ids`] |
//! | argv for every binary | [`cli`] |
//! | owner-only files | [`private`] |
//! | errors and codes | [`error`] |
//! | 7 QA gate: pass, ticket, attempt, claim, re-entry | [`gate`] |
//! | 7 host hook I/O, replies, re-entry text, emitted commands | [`hooks`] |
//! | 8 helper command grammar and guard | [`command`] |
//! | data dir resolution | [`datadir`] |

pub mod cli;
pub mod command;
pub mod config;
pub mod datadir;
pub mod error;
pub mod gate;
pub mod hooks;
pub mod ids;
pub mod manifest;
pub mod private;
pub mod random;

pub use error::{Error, Result};
