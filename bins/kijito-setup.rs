//! kijito-setup: write your own owner-only config for a real pointer, after
//! verifying it (docs/first-pointer.md). The command line lives in
//! `kijito_setup::cli`.

fn main() {
    std::process::exit(kijito_cli::main(&kijito_setup::cli::TOOL, kijito_setup::cli::run))
}
