//! kijito-local: a Kijito-compatible server on loopback with a SQLite store.
//! Everything lives in `kijito_server` (its command line in
//! `kijito_server::cli`); this file runs it.

fn main() {
    std::process::exit(kijito_cli::main(&kijito_server::cli::TOOL, kijito_server::cli::run))
}
