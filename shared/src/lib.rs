//! kijito-core: the Kijito QA memory protocol (see PROTOCOL.md). Every rule
//! lives in this crate, one module per idea; binaries only parse, call, print.
//!
//! | PROTOCOL.md | module |
//! |---|---|
//! | 1 words, typed values | [`ids`] |
//! | 2 REST API, token file | [`http`], [`token`] |
//! | 3 rendered memory, lifecycle, known-bad control | [`render`] |
//! | 4 pointer manifest, canonical JSON | [`manifest`] |
//! | 3+4 reading the pointer and anchors | [`pointer`] |
//! | 5 snapshot report (verifier) | [`snapshot`] |
//! | 6 publication | [`publish`] |
//! | configuration file | [`config`] |
//! | argv for every binary | [`cli`] |
//! | owner-only files | [`private`] |
//! | errors and codes | [`error`] |
//! | OS randomness, clock | [`random`], [`clock`] |
//! | 2-3 the local server (kijito-local) | [`server`] |

pub mod cli;
pub mod clock;
pub mod config;
pub mod error;
pub mod http;
pub mod ids;
pub mod manifest;
pub mod pointer;
pub mod private;
pub mod publish;
pub mod random;
pub mod render;
pub mod snapshot;
pub mod token;
pub mod server;

pub use error::{Error, Result};
