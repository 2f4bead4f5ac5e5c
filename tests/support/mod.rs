//! The one test support module of the integration tests and benches:
//! [`server`] (a real kijito-local on an ephemeral loopback port, raw HTTP),
//! [`gate`] (QA state worlds, hook stdin, reports), [`publish`] (seeded
//! pointers, publish runs), [`snapshot`] (seeded snapshots, reports), and
//! [`bin`], the path of any built binary of the workspace.

#![allow(dead_code, unused_imports)]

pub mod gate;
pub mod publish;
pub mod server;
pub mod snapshot;

pub use server::*;

/// The path of a workspace binary built next to this package's binaries
/// (`target/<profile>/`). The hook binaries belong to the `kijito-hooks`
/// package, so Cargo gives this package no `CARGO_BIN_EXE_` for them;
/// `cargo test --workspace` builds them (that package has an integration
/// test) before any test runs.
pub fn bin(name: &str) -> String {
    let dir = std::path::Path::new(env!("CARGO_BIN_EXE_kijito-local")).parent().expect("target dir");
    let p = dir.join(name);
    assert!(p.is_file(), "{} is not built: run `cargo test --workspace`", p.display());
    p.to_string_lossy().into_owned()
}
