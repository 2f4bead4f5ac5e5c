//! wake-check: the long-sleep verification suite and graduated trust
//! (docs/wake-check.md). Exit 0 full trust, 10 cautious, 20 degraded,
//! 1 could not run, 2 usage. The command line lives in `kijito_wake::cli`;
//! this binary injects the `--live` probe (the HTTP client).

use kijito_cli as cli;
use kijito_wake as wake;

fn main() {
    std::process::exit(cli::main(&wake::cli::TOOL, |args| wake::cli::run(&args, live_probe)))
}

/// `--live`: the recorded expectation checked through the Kijito client.
fn live_probe(r: &wake::Recorded) -> kijito_protocol::Result<()> {
    kijito_client::snapshot::verify_recorded(r.pointer_id, r.lock_message_id, &r.pointer_digest, &r.snapshot_digest)
}
