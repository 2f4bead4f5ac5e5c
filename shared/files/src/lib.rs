//! kijito-files: owner-only atomic files ([`private`]), OS randomness
//! ([`random`]), the configuration file ([`config`]), the data dir
//! ([`datadir`]), bounded runs of a child program ([`child`]) and the lock
//! with a deadline ([`lock`]), and the flight recorder ([`journal`]).
//! Depends only on the protocol crate.

#![deny(unsafe_code)]

pub mod child;
pub mod config;
pub mod datadir;
pub mod journal;
pub mod lock;
pub mod private;
pub mod random;
