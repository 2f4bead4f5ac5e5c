//! kijito-compact: request the host's native compaction through the adapter
//! that owns the session (docs/adapters.md, docs/protocol.md §9).

use kijito_compact::cli::CodexArgs;

fn main() {
    std::process::exit(kijito_compact::cli::main(codex))
}

/// `kijito-compact codex`: the Codex app-server adapter.
fn codex(a: CodexArgs) -> kijito_protocol::Result<i32> {
    kijito_compact_codex::run(&kijito_compact_codex::Options {
        data_dir: a.data_dir,
        message_log: a.message_log,
        codex: a.codex,
        stdio_client: a.stdio_client,
        codex_args: a.codex_args,
        bounds: kijito_compact_codex::Bounds::default(),
    })
}
