//! kijito-files: owner-only atomic files ([`private`]), OS randomness
//! ([`random`]), the configuration file ([`config`]), the data dir
//! ([`datadir`]) and bounded runs of a trusted helper program ([`child`]).
//! Depends only on the protocol crate.

pub mod child;
pub mod config;
pub mod datadir;
pub mod private;
pub mod random;
