//! kijito-files: owner-only atomic files ([`private`]), OS randomness
//! ([`random`]), the configuration file ([`config`]) and the data dir
//! ([`datadir`]). Depends only on the protocol crate.

pub mod config;
pub mod datadir;
pub mod private;
pub mod random;
