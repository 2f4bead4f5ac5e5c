//! pointer-digest: print the lowercase SHA-256 of the pointer's content.
use kijito_cli as cli;
use kijito_client::{http, pointer};
use kijito_protocol::argv::{Command, Tool};
use kijito_protocol::command;
use kijito_protocol::ids::{AbsPath, MemoryId};

const TOOL: Tool = Tool {
    name: "pointer-digest",
    code_name: "pointer_digest",
    help: "\
pointer-digest --pointer-id N [--token-file F]

Fetch the pointer memory N, extract its content from the fence of the
configured persona (exactly one fence, nonce rules, no nested fence) and
print the lowercase hex SHA-256 of the exact content bytes.

Exit 0 with the digest on stdout; 1 with kijito_pointer_digest_failed:<code>
on stderr; 2 for usage errors.
",
    commands: &[Command { name: "", flags: command::POINTER_DIGEST_FLAGS }],
};

fn main() {
    std::process::exit(cli::main(&TOOL, |args| {
        let id: MemoryId = args.required("--pointer-id")?;
        let token: Option<AbsPath> = args.optional("--token-file")?;
        let api = http::connect_configured(token.as_ref())?;
        let digest = pointer::pointer_digest(&api, id)?;
        cli::print_stdout(&format!("{digest}\n"))?;
        Ok(0)
    }))
}
