//! kijito-core: the Kijito QA memory protocol (see PROTOCOL.md). Every rule
//! lives in this crate, one module per idea; binaries only parse, call, print.
//!
//! | PROTOCOL.md | module |
//! |---|---|
//! | 1 words, typed values | [`ids`] |
//! | argv for every binary | [`cli`] |
//! | owner-only files | [`private`] |
//! | errors and codes | [`error`] |
//! | 4 pointer manifest, canonical JSON, 5 snapshot digest | [`manifest`] |

pub mod cli;
pub mod config;
pub mod error;
pub mod http;
pub mod ids;
pub mod manifest;
pub mod private;
pub mod random;
pub mod token;

pub use error::{Error, Result};
