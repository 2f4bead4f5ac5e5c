//! kijito-policy: one PreToolUse policy over every tool call,
//! pure (no I/O, no HTTP stack).
//!
//! | step | module |
//! |---|---|
//! | a host's PreToolUse call, parsed at the edge | [`call`] ([`ToolCall`]) |
//! | the shell model (compound commands, wrappers' input, quoting), from kijito-protocol | [`shell`] |
//! | tool call to classes with the rule that fired, tripwires | [`classify`] |
//! | allow / deny by latch mode, QA freeze and consent | [`decide`] |
//! | the user's policy file: rules removed, added, re-risked | [`user`] |
//! | MCP tools by name and SQL, Kijito stores on any server, memory ids | [`mcp`] |
//! | what the shell model cannot resolve (`opaque`), the halting modes' allow-list | [`opaque`] |
//!
//! Classes: read, write, delete, send, public-post, wallet-transfer,
//! core-config, helper, opaque; the five after write are the seed's
//! irreversible categories, and `opaque` (what the shell model cannot
//! resolve to known programs and literal arguments) needs consent as they
//! do. An unknown program with literal arguments is a `write`; the halting
//! modes (Silent Witness, degraded, one-step without a step, an invalid
//! governance file, the wake hold) pass only the allow-list of read-only
//! programs with read-only options (docs/policy.md). The
//! classifier reads what the shell would run (compound lists, pipelines,
//! subshells, command substitution, `bash -c`/`sh -c` and `eval`
//! recursively up to [`shell::MAX_DEPTH`], `env`, `sudo`, `xargs`,
//! `find -exec/-execdir/-ok`, `parallel`, `watch`, `flock`, `script -c`,
//! `su -c`, `runuser`, `nice`, `timeout`, `nohup`, brace expansion, ANSI-C
//! quoting, quotes, backslashes and the line's own plain assignments);
//! it does not know what a script file, an alias, a variable set outside the
//! line, a Makefile target or an SQL file redirected into a client will do.
//! A command it cannot read whole is a tripwire (`tripwire_shell_unparsed`).

#![forbid(unsafe_code)]

pub mod call;
pub mod classify;
pub mod decide;
pub mod mcp;
pub mod opaque;
pub mod paths;
pub mod user;
/// The shell model lives once, in kijito-protocol (the command guard reads
/// the same words).
pub use kijito_protocol::shell;

pub use call::{ParsedCall, ToolCall};
pub use classify::{classify, Class, Classification, Env, Hit, Risk, Tripwire};
pub use decide::{action_bytes, action_hash, consent_command, decide, ConsentTarget, Decision, LatchMode, Modes, Wake};
pub use user::UserPolicy;
