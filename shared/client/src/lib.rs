//! kijito-client: everything that talks to a Kijito server.
//!
//! | docs/protocol.md | module |
//! |---|---|
//! | §2 REST API | [`http`] |
//! | §2 token file | [`token`] |
//! | §3+§4 reading the pointer and anchors | [`pointer`] |
//! | §5 snapshot report (verifier) | [`snapshot`] |
//! | §6 publication | [`publish`] |

#![forbid(unsafe_code)]

pub mod http;
pub mod pointer;
pub mod publish;
pub mod snapshot;
pub mod token;
