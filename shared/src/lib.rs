//! kijito-core: the Kijito QA memory protocol (see PROTOCOL.md). Every rule
//! lives in this crate, one module per idea; binaries only parse, call, print.
//!
//! | PROTOCOL.md | module |
//! |---|---|
//! | 1 words, typed values | [`ids`] |
//! | 2 REST API, token file | [`http`], [`token`] |
//! | 2-3 the local server (kijito-local) | [`server`] |
//! | 3 rendered memory, lifecycle, known-bad control | [`render`] |
//! | 4 pointer manifest, canonical JSON | [`manifest`] |
//! | 3+4 reading the pointer and anchors | [`pointer`] |
//! | 5 snapshot report (verifier) | [`snapshot`] |
//! | 6 publication | [`publish`] |
//! | 7 QA gate: pass, ticket, attempt, claim, re-entry | [`gate`] |
//! | 7 host hook I/O, replies, re-entry text, emitted commands | [`hooks`] |
//! | 8 helper command grammar and guard | [`command`] |
//! | data dir resolution | [`datadir`] |
//! | the demo (`kijito-local demo`) | [`demo`] |
//! | configuration file | [`config`] |
//! | argv for every binary | [`cli`] |
//! | owner-only files | [`private`] |
//! | errors and codes | [`error`] |
//! | OS randomness, clock | [`random`], [`clock`] |
//! | memory-latch (local tamper-evident manifest, consent, gate, recovery) | [`latch`] |
//! | wake-check (long-sleep verification, graduated trust) | [`wake`] |

pub mod cli;
pub mod clock;
pub mod command;
pub mod config;
pub mod datadir;
pub mod demo;
pub mod error;
pub mod gate;
pub mod hooks;
pub mod http;
pub mod ids;
pub mod manifest;
pub mod pointer;
pub mod latch;
pub mod private;
pub mod publish;
pub mod random;
pub mod render;
pub mod server;
pub mod snapshot;
pub mod token;
pub mod wake;

pub use error::{Error, Result};
