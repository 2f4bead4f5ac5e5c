//! pointer-snapshot: the context-free verifier (docs/protocol.md §5).
use kijito_cli as cli;
use kijito_client::{http, snapshot};
use kijito_protocol::argv::{Command, Tool};
use kijito_protocol::clock;
use kijito_protocol::command;
use kijito_protocol::ids::{AbsPath, Digest, MemoryId, MessageId};

const TOOL: Tool = Tool {
    name: "pointer-snapshot",
    code_name: "pointer_snapshot",
    help: "\
pointer-snapshot --pointer-id N --lock-message-id M [--expected-pointer-digest D]
                 [--expected-snapshot-digest S] --report-file ABS [--token-file F]

Verify the pointer and every current anchor from a fresh process: the
known-bad control first, then the pointer (current, at D when given), its
manifest (against N and M), and each current anchor (current, matching its
sha256). Writes the green report (section 5) to ABS, which must be absolute
and new, in a directory owned by you and not group/other writable, and
prints the same JSON line. On failure writes a red report to ABS instead,
prints kijito_pointer_snapshot_failed:<code> on stderr and exits 1.
",
    commands: &[Command { name: "", flags: command::POINTER_SNAPSHOT_FLAGS }],
};

fn main() {
    std::process::exit(cli::main(&TOOL, |args| {
        let request = snapshot::Request {
            pointer_id: args.required::<MemoryId>("--pointer-id")?,
            lock_message_id: args.required::<MessageId>("--lock-message-id")?,
            expected_pointer_digest: args.optional::<Digest>("--expected-pointer-digest")?,
            expected_snapshot_digest: args.optional::<Digest>("--expected-snapshot-digest")?,
        };
        let report_file: AbsPath = args.required("--report-file")?;
        let token: Option<AbsPath> = args.optional("--token-file")?;
        snapshot::check_report_path(&report_file)?;
        let nonce = snapshot::boot_nonce();
        let verifier = snapshot::running_verifier()?;
        let outcome = http::connect_configured(token.as_ref()).and_then(|api| snapshot::verify(&api, &request));
        match outcome {
            Ok(snap) => {
                let line = snapshot::write_report(&report_file, &snap.green_report(&nonce, clock::now_ms(), &verifier))?;
                cli::print_stdout(&format!("{line}\n"))?;
                Ok(0)
            }
            Err(failure) => {
                // Best effort: the red report explains the failure to machines.
                let _ = snapshot::write_report(
                    &report_file,
                    &snapshot::red_report(request.pointer_id, &failure, &nonce, clock::now_ms(), &verifier),
                );
                Err(failure)
            }
        }
    }))
}
