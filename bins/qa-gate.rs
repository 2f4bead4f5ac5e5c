//! qa-gate: record the one-use QA pass, invalidate it, show status, and check
//! a helper command line against the docs/protocol.md §8 grammar. The command
//! line lives in `kijito_gate::cli`.

fn main() {
    std::process::exit(kijito_gate::cli::main())
}
