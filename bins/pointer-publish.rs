//! pointer-publish: lease-guarded read-verify-write (docs/protocol.md §6).
use kijito_cli as cli;
use kijito_client::http;
use kijito_client::publish::{self, Plan};
use kijito_protocol::argv::{Command, Tool};
use kijito_protocol::command;
use kijito_protocol::ids::{AbsPath, Digest, MemoryId, MessageId};
use kijito_protocol::{clock, Error};

const TOOL: Tool = Tool {
    name: "pointer-publish",
    code_name: "pointer_publish",
    help: "\
pointer-publish --pointer-id N --lock-message-id M --expected-pointer-digest D
                --content-file ABS --rollback-file ABS [--token-file F]
pointer-publish --restore-from ROLLBACK --pointer-id N --lock-message-id M
                --expected-pointer-digest D --rollback-file NEWABS [--token-file F]
pointer-publish --release-lease --lock-message-id M [--token-file F]

Publish a new canonical pointer manifest (or restore a rollback artifact's
content) through the lease-guarded read-verify-write of docs/protocol.md §6:
claim, read and verify, write the rollback artifact, verify ownership, PATCH
exactly once, re-read, release. Nothing is retried.

Success: one receipt JSON line on stdout, exit 0. Failure:
kijito_pointer_publish_failed:<code> on stderr, then a JSON detail line when
there is one (claimed_by, observedDigest, patchOutcome), then a sentence;
exit 1 (2 for usage errors).

--release-lease releases this persona's own lease on the mutex M (left
held by a crashed publish) and prints one JSON line
{\"schemaVersion\":1,\"type\":\"kijito.pointer-lease.released\",...,\"wasHeld\":B};
another persona's lease is refused (pointer_mutex_unavailable), never
taken over.
",
    commands: &[Command { name: "", flags: command::POINTER_PUBLISH_ALL_FLAGS }],
};

fn main() {
    std::process::exit(cli::main(&TOOL, |args| {
        command::check_form(TOOL.name, &args.given()).map_err(Error::as_usage)?;
        if args.has("--release-lease") {
            let lock: MessageId = args.required("--lock-message-id")?;
            let token: Option<AbsPath> = args.optional("--token-file")?;
            let api = http::connect_configured(token.as_ref())?;
            let held = publish::release_own_lease(&api, lock)?;
            cli::print_stdout(&format!("{}\n", publish::released_line(lock, held)))?;
            return Ok(0);
        }
        let pointer_id: MemoryId = args.required("--pointer-id")?;
        let lock: MessageId = args.required("--lock-message-id")?;
        let expected: Digest = args.required("--expected-pointer-digest")?;
        let rollback: AbsPath = args.required("--rollback-file")?;
        let token: Option<AbsPath> = args.optional("--token-file")?;
        // check_form: exactly one of --content-file and --restore-from.
        let plan = match args.optional::<AbsPath>("--restore-from")? {
            Some(artifact) => Plan::from_rollback_artifact(pointer_id, lock, expected, &artifact, rollback)?,
            None => Plan::from_content_file(pointer_id, lock, expected, &args.required("--content-file")?, rollback)?,
        };
        let api = http::connect_configured(token.as_ref())?;
        let receipt = publish::publish(&api, &plan, clock::now_ms())?;
        cli::print_stdout(&format!("{}\n", receipt.to_json()))?;
        Ok(0)
    }))
}
