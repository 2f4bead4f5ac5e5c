//! The latch's clock and timestamps: the shared UTC calendar of `clock`.

pub use kijito_protocol::clock::{now_ms, rfc3339_ms};
