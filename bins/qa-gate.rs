//! qa-gate: record the one-use QA pass, invalidate it, show status, and check
//! a helper command line against the docs/protocol.md §8 grammar. The command
//! line lives in `kijito_gate::cli`; the one live pointer read of `record`
//! goes through the configured client (kijito-gate has no HTTP).

fn main() {
    std::process::exit(kijito_gate::cli::main(std::env::args_os().skip(1).collect(), &|id, token| {
        kijito_client::pointer::live_pointer_digest(id, token)
    }))
}
