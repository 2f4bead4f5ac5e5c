//! kijito-compact-codex: the Codex app-server compaction adapter
//! (`kijito-compact codex`, docs/adapters.md).
//!
//! It runs `codex app-server` as its own child and is that app-server's only
//! client; the user's TUI attaches through it (`codex --remote unix://SOCK`,
//! a WebSocket on a unix socket in a private 0700 directory). It forwards
//! every JSON-RPC message unchanged and, when `kijito-compact request`
//! recorded a compaction request for a thread pinned to this adapter and
//! that thread is idle, sends `thread/compact/start` with an id of its own.
//!
//! Never: `thread/resume`, a second connection to the app-server, a thread
//! it did not see on its connection or that is not pinned to it, a
//! compaction while a turn runs, a second compaction while one runs.

#![deny(unsafe_code)]

pub mod adapter;
pub mod gatekeeper;
pub mod msglog;
pub mod proxy;
pub mod transport;

pub use adapter::{run, Bounds, Options};
