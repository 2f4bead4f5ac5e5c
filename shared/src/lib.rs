//! kijito-core: the Kijito QA memory protocol (see PROTOCOL.md). Every rule
//! lives in this crate, one module per idea; binaries only parse, call, print.
//!
//! | PROTOCOL.md | module |
//! |---|---|
//! | 1 words, typed values | [`ids`] |
//! | argv for every binary | [`cli`] |
//! | owner-only files | [`private`] |
//! | errors and codes | [`error`] |
//! | 2-3 the local server (kijito-local) | [`server`] |

pub mod cli;
pub mod error;
pub mod ids;
pub mod private;
pub mod random;
pub mod server;

pub use error::{Error, Result};
