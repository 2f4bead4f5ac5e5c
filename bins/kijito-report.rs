//! kijito-report: what happened in a session, from its flight recorder
//! (docs/protocol.md, Flight recorder). The command line lives in
//! `kijito_server::report`.

use kijito_cli as cli;

fn main() {
    std::process::exit(cli::main(&kijito_server::report::TOOL, kijito_server::report::run))
}
