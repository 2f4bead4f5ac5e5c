//! memory-latch: local tamper-evident continuity, consent tokens,
//! deterministic gate checks and recovery. The command line (renderers, exit
//! policy) lives in `kijito_latch::cli`: 0 ok, 1 failure or untrusted,
//! 2 usage.

fn main() {
    std::process::exit(kijito_cli::main(&kijito_latch::cli::TOOL, kijito_latch::cli::run));
}
