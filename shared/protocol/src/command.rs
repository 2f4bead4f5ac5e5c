//! Helper command grammar (docs/protocol.md §8), one table per helper.
//!
//! The same tables give each helper binary its `cli::Tool` flag list (via
//! [`flags`]) and drive the command guard ([`check_command`]), so what a
//! helper accepts and what the guard lets through cannot drift apart.
//!
//! A command line is accepted only when: the program is an absolute path to
//! one of this toolkit's helpers inside the one installed plugin root
//! (`<root>/bin/<helper>`; the directory of the running executable); every
//! flag is documented for that helper and appears at most once (except the two
//! `--cold-boot-report`); ids are positive decimals, digests lowercase hex,
//! session ids as in section 7, paths absolute without `.`/`..` and without
//! shell metacharacters; nothing else is on the line.

use crate::argv::Flag;
use crate::error::{Error, Result};
use crate::ids::{AbsPath, Digest, MemoryId, MessageId, SessionId, TaggedDigest};
use crate::shell::{Parsed, ShellLine};
use std::path::{Path, PathBuf};

/// What a flag's value must be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    MemoryId,
    MessageId,
    Digest,
    SessionId,
    Path,
    /// Free text (one argv word after shell splitting): at most 2000
    /// characters, no control character.
    Text,
    /// One word of command-safe bytes (a host name, a listen address).
    Word,
    /// A decimal number.
    Number,
    /// One of a fixed set of words.
    Choice(&'static [&'static str]),
    /// `sha256:` and 64 lowercase hex.
    TaggedDigest,
    /// A switch: no value.
    Switch,
}

/// One documented flag of a helper: its argv shape, value kind and whether it
/// is required.
#[derive(Debug, Clone, Copy)]
pub struct ArgSpec {
    pub flag: Flag,
    pub kind: Kind,
    pub required: bool,
}

const fn req(name: &'static str, kind: Kind) -> ArgSpec {
    ArgSpec { flag: Flag::value(name), kind, required: true }
}
const fn opt(name: &'static str, kind: Kind) -> ArgSpec {
    ArgSpec { flag: Flag::value(name), kind, required: false }
}
const fn many(name: &'static str, kind: Kind, max: usize) -> ArgSpec {
    ArgSpec { flag: Flag::repeated(name, max), kind, required: false }
}
const fn switch(name: &'static str) -> ArgSpec {
    ArgSpec { flag: Flag::switch(name), kind: Kind::Switch, required: false }
}

/// The `cli::Flag` list of a spec table, at compile time.
pub const fn flags<const N: usize>(specs: &[ArgSpec; N]) -> [Flag; N] {
    let mut out = [Flag::value(""); N];
    let mut i = 0;
    while i < N {
        out[i] = specs[i].flag;
        i += 1;
    }
    out
}

pub const POINTER_DIGEST_SPECS: [ArgSpec; 2] = [req("--pointer-id", Kind::MemoryId), opt("--token-file", Kind::Path)];
pub const POINTER_DIGEST_FLAGS: &[Flag] = &flags(&POINTER_DIGEST_SPECS);

pub const POINTER_SNAPSHOT_SPECS: [ArgSpec; 6] = [
    req("--pointer-id", Kind::MemoryId),
    req("--lock-message-id", Kind::MessageId),
    opt("--expected-pointer-digest", Kind::Digest),
    opt("--expected-snapshot-digest", Kind::Digest),
    req("--report-file", Kind::Path),
    opt("--token-file", Kind::Path),
];
pub const POINTER_SNAPSHOT_FLAGS: &[Flag] = &flags(&POINTER_SNAPSHOT_SPECS);

/// `--content-file` and `--restore-from` are both optional here; exactly one
/// of them must be given (checked by [`check_args`]).
pub const POINTER_PUBLISH_SPECS: [ArgSpec; 7] = [
    req("--pointer-id", Kind::MemoryId),
    req("--lock-message-id", Kind::MessageId),
    req("--expected-pointer-digest", Kind::Digest),
    opt("--content-file", Kind::Path),
    opt("--restore-from", Kind::Path),
    req("--rollback-file", Kind::Path),
    opt("--token-file", Kind::Path),
];
pub const POINTER_PUBLISH_FLAGS: &[Flag] = &flags(&POINTER_PUBLISH_SPECS);

/// `pointer-publish --release-lease`: release this persona's own lease on
/// the pointer mutex (after a crashed publish); refuses another persona's.
pub const POINTER_PUBLISH_RELEASE_SPECS: [ArgSpec; 3] = [
    ArgSpec { flag: Flag::switch("--release-lease"), kind: Kind::Switch, required: true },
    req("--lock-message-id", Kind::MessageId),
    opt("--token-file", Kind::Path),
];
/// Every flag `pointer-publish` parses (both forms).
pub const POINTER_PUBLISH_ALL_FLAGS: &[Flag] = &[
    POINTER_PUBLISH_FLAGS[0],
    POINTER_PUBLISH_FLAGS[1],
    POINTER_PUBLISH_FLAGS[2],
    POINTER_PUBLISH_FLAGS[3],
    POINTER_PUBLISH_FLAGS[4],
    POINTER_PUBLISH_FLAGS[5],
    POINTER_PUBLISH_FLAGS[6],
    Flag::switch("--release-lease"),
];

/// `--data-dir` is optional for every qa-gate subcommand: without it the
/// data dir is the config's `dataDir`, else the default (like the hooks).
pub const QA_GATE_RECORD_SPECS: [ArgSpec; 7] = [
    req("--session-id", Kind::SessionId),
    req("--transcript", Kind::Path),
    opt("--data-dir", Kind::Path),
    req("--pointer-id", Kind::MemoryId),
    req("--pointer-digest", Kind::Digest),
    ArgSpec { flag: Flag::repeated("--cold-boot-report", 2), kind: Kind::Path, required: true },
    opt("--token-file", Kind::Path),
];
pub const QA_GATE_RECORD_FLAGS: &[Flag] = &flags(&QA_GATE_RECORD_SPECS);

pub const QA_GATE_INVALIDATE_SPECS: [ArgSpec; 2] = [req("--session-id", Kind::SessionId), opt("--data-dir", Kind::Path)];
pub const QA_GATE_INVALIDATE_FLAGS: &[Flag] = &flags(&QA_GATE_INVALIDATE_SPECS);

pub const QA_GATE_STATUS_SPECS: [ArgSpec; 3] =
    [req("--session-id", Kind::SessionId), opt("--data-dir", Kind::Path), opt("--transcript", Kind::Path)];
pub const QA_GATE_STATUS_FLAGS: &[Flag] = &flags(&QA_GATE_STATUS_SPECS);

pub const KIJITO_COMPACT_REQUEST_SPECS: [ArgSpec; 2] = [req("--session-id", Kind::SessionId), req("--data-dir", Kind::Path)];
pub const KIJITO_COMPACT_REQUEST_FLAGS: &[Flag] = &flags(&KIJITO_COMPACT_REQUEST_SPECS);

pub const KIJITO_COMPACT_STATUS_SPECS: [ArgSpec; 2] = [req("--session-id", Kind::SessionId), req("--data-dir", Kind::Path)];
pub const KIJITO_COMPACT_STATUS_FLAGS: &[Flag] = &flags(&KIJITO_COMPACT_STATUS_SPECS);

/// `kijito-compact worker` is started by `request` only (no grammar row: the
/// guard refuses it from the agent, as it refuses `kijito-compact codex`).
pub const KIJITO_COMPACT_WORKER_FLAGS: &[Flag] = &[Flag::value("--session-id"), Flag::value("--data-dir"), Flag::value("--nonce")];
// memory-latch (docs/memory-latch.md): every subcommand except `consent
// confirm` and `reseed --message`, which only the user's own message may do
// (the UserPromptSubmit hook); the guard denies them before the binary does.
const RISK: Kind = Kind::Choice(&["low", "medium", "high"]);
pub const MEMORY_LATCH_STATUS_SPECS: [ArgSpec; 3] = [opt("--workspace", Kind::Path), opt("--hmac-key-file", Kind::Path), switch("--json")];
pub const MEMORY_LATCH_VERIFY_SPECS: [ArgSpec; 5] = [
    opt("--workspace", Kind::Path),
    opt("--hmac-key-file", Kind::Path),
    switch("--json"),
    opt("--since-checkpoint", Kind::Path),
    opt("--public-key", Kind::Path),
];
pub const MEMORY_LATCH_INIT_SPECS: [ArgSpec; 7] = [
    opt("--workspace", Kind::Path),
    opt("--hmac-key-file", Kind::Path),
    switch("--json"),
    req("--objective", Kind::Text),
    many("--non-negotiable", Kind::Text, 32),
    opt("--next-step", Kind::Text),
    opt("--integrity", Kind::Choice(&["checksum", "hmac"])),
];
pub const MEMORY_LATCH_CHECKPOINT_SPECS: [ArgSpec; 12] = [
    opt("--workspace", Kind::Path),
    opt("--hmac-key-file", Kind::Path),
    switch("--json"),
    opt("--objective", Kind::Text),
    many("--non-negotiable", Kind::Text, 32),
    opt("--blocked-by", Kind::Text),
    opt("--next-step", Kind::Text),
    many("--known", Kind::Text, 32),
    many("--unknown", Kind::Text, 32),
    many("--decision", Kind::Text, 32),
    opt("--last-good-checkpoint", Kind::TaggedDigest),
    opt("--risk", RISK),
];
pub const MEMORY_LATCH_CONSENT_REQUEST_SPECS: [ArgSpec; 8] = [
    opt("--workspace", Kind::Path),
    opt("--hmac-key-file", Kind::Path),
    switch("--json"),
    req("--action-file", Kind::Path),
    req("--summary", Kind::Text),
    req("--risk", RISK),
    opt("--session-id", Kind::SessionId),
    opt("--data-dir", Kind::Path),
];
/// `recover`: the session and data dir whose journal gets its line (docs/protocol.md §13).
pub const MEMORY_LATCH_RECOVER_SPECS: [ArgSpec; 5] = [
    opt("--workspace", Kind::Path),
    opt("--hmac-key-file", Kind::Path),
    switch("--json"),
    opt("--session-id", Kind::SessionId),
    opt("--data-dir", Kind::Path),
];
pub const MEMORY_LATCH_GATE_SPECS: [ArgSpec; 8] = [
    opt("--workspace", Kind::Path),
    opt("--hmac-key-file", Kind::Path),
    switch("--json"),
    req("--action-file", Kind::Path),
    req("--checkpoint", Kind::TaggedDigest),
    many("--target", Kind::Text, 256),
    req("--intended", Kind::Path),
    req("--result", Kind::Path),
];
pub const MEMORY_LATCH_DETECT_SPECS: [ArgSpec; 2] = [req("--message", Kind::Text), switch("--json")];

// wake-check (docs/wake-check.md).
pub const WAKE_CHECK_SPECS: [ArgSpec; 6] = [
    opt("--workspace", Kind::Path),
    opt("--data-dir", Kind::Path),
    opt("--session-id", Kind::SessionId),
    switch("--live"),
    opt("--long-sleep-after", Kind::Number),
    switch("--json"),
];

// kijito-local (docs/kijito-local.md).
pub const KIJITO_LOCAL_SERVE_SPECS: [ArgSpec; 6] = [
    req("--db", Kind::Path),
    req("--token-file", Kind::Path),
    opt("--listen", Kind::Word),
    opt("--reap-after", Kind::Number),
    opt("--faults", Kind::Word),
    opt("--request-log", Kind::Path),
];
pub const KIJITO_LOCAL_DEMO_SPECS: [ArgSpec; 2] = [opt("--host", Kind::Word), switch("--keep")];

/// One helper (or helper subcommand) the agent may run.
#[derive(Debug, Clone, Copy)]
pub struct Grammar {
    pub helper: &'static str,
    /// "" when the helper takes no subcommand.
    pub subcommand: &'static str,
    /// A switch that selects this form among several forms of a helper
    /// without subcommands ("" for the default form).
    pub selector: &'static str,
    pub specs: &'static [ArgSpec],
}

impl Grammar {
    /// A form of a helper: `subcommand` "" for none.
    pub const fn new(helper: &'static str, subcommand: &'static str, specs: &'static [ArgSpec]) -> Grammar {
        Grammar { helper, subcommand, selector: "", specs }
    }

    /// A form of a helper selected by a switch.
    pub const fn selected_by(helper: &'static str, selector: &'static str, specs: &'static [ArgSpec]) -> Grammar {
        Grammar { helper, subcommand: "", selector, specs }
    }
}

/// Every helper command the guard accepts: one row per helper form (add a
/// row for a new helper or subcommand; [`GUARDED_NAMES`] lists the names).
pub const GRAMMARS: &[Grammar] = &[
    Grammar::new("pointer-digest", "", &POINTER_DIGEST_SPECS),
    Grammar::new("pointer-snapshot", "", &POINTER_SNAPSHOT_SPECS),
    Grammar::new("pointer-publish", "", &POINTER_PUBLISH_SPECS),
    Grammar::selected_by("pointer-publish", "--release-lease", &POINTER_PUBLISH_RELEASE_SPECS),
    Grammar::new("qa-gate", "record", &QA_GATE_RECORD_SPECS),
    Grammar::new("qa-gate", "invalidate", &QA_GATE_INVALIDATE_SPECS),
    Grammar::new("qa-gate", "status", &QA_GATE_STATUS_SPECS),
    Grammar::new("kijito-compact", "request", &KIJITO_COMPACT_REQUEST_SPECS),
    Grammar::new("kijito-compact", "status", &KIJITO_COMPACT_STATUS_SPECS),
    Grammar::new("memory-latch", "init", &MEMORY_LATCH_INIT_SPECS),
    Grammar::new("memory-latch", "checkpoint", &MEMORY_LATCH_CHECKPOINT_SPECS),
    Grammar::new("memory-latch", "status", &MEMORY_LATCH_STATUS_SPECS),
    Grammar::new("memory-latch", "verify", &MEMORY_LATCH_VERIFY_SPECS),
    Grammar::new("memory-latch", "consent request", &MEMORY_LATCH_CONSENT_REQUEST_SPECS),
    Grammar::new("memory-latch", "gate", &MEMORY_LATCH_GATE_SPECS),
    Grammar::new("memory-latch", "recover", &MEMORY_LATCH_RECOVER_SPECS),
    Grammar::new("memory-latch", "reseed", &MEMORY_LATCH_STATUS_SPECS),
    Grammar::new("memory-latch", "review", &MEMORY_LATCH_STATUS_SPECS),
    Grammar::new("memory-latch", "detect", &MEMORY_LATCH_DETECT_SPECS),
    Grammar::new("wake-check", "", &WAKE_CHECK_SPECS),
    Grammar::new("kijito-local", "serve", &KIJITO_LOCAL_SERVE_SPECS),
    Grammar::new("kijito-local", "demo", &KIJITO_LOCAL_DEMO_SPECS),
];

/// Every executable name of this toolkit that the guard watches for: the
/// agent-run helpers plus the hooks and `kijito-setup` (which the agent never
/// runs: `kijito-setup --force` would re-point the config at another pointer
/// or server, so no grammar accepts it and only the user runs it).
pub const GUARDED_NAMES: &[&str] = &[
    "pointer-digest",
    "pointer-snapshot",
    "pointer-publish",
    "qa-gate",
    "kijito-compact",
    "memory-latch",
    "wake-check",
    "kijito-local",
    "precompact",
    "postcompact",
    "session-hook",
    "prompt-hook",
    "pretool-hook",
    "kijito-setup",
];

/// Programs that run their arguments as a program.
const WRAPPERS: &[&str] = &[
    "env", "sudo", "doas", "exec", "command", "builtin", "nohup", "time", "nice", "ionice", "timeout", "xargs", "eval", "source", ".",
    "sh", "bash", "dash", "zsh", "ksh", "setsid", "stdbuf", "chroot", "unshare", "strace",
];

/// Longest command line the guard looks at.
pub const MAX_COMMAND_BYTES: usize = 8192;

/// Stable codes of this module (they live in the registry, [`crate::codes::command`]).
pub mod codes {
    pub use crate::codes::command::*;
}

/// Where this installed plugin root keeps its executables (`<root>/bin`, or
/// `target/debug` in tests); `kijito_cli::helper_dir` finds it from the
/// running executable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HelperDir(PathBuf);

impl HelperDir {
    /// A given directory (must be absolute, clean and free of characters the
    /// grammar refuses, or no command of it could ever pass).
    pub fn new(dir: &Path) -> Result<HelperDir> {
        let text = dir.to_str().ok_or_else(|| Error::new(codes::ROOT_UNKNOWN, "the helper directory is not UTF-8"))?;
        let abs = AbsPath::parse(text).map_err(|e| Error::new(codes::ROOT_UNKNOWN, e.message().to_owned()))?;
        if !abs.as_str().bytes().all(is_word_byte) {
            return Err(Error::new(codes::ROOT_UNKNOWN, format!("helper directory {} contains characters commands may not use", abs)));
        }
        Ok(HelperDir(abs.as_path().to_owned()))
    }

    pub fn path(&self) -> &Path {
        &self.0
    }

    /// Absolute path of one helper, as text.
    pub fn helper(&self, name: &str) -> String {
        format!("{}/{}", self.0.display(), name)
    }
}

/// Bytes allowed inside a command word.
fn is_word_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'/' | b'.' | b'_' | b'-' | b'=' | b':' | b'+' | b',' | b'@' | b'%')
}

/// Whether `s` is one word of a helper command as printed and checked
/// ([`check_command`]): not empty, only the bytes a command word may hold.
pub fn is_command_word(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(is_word_byte)
}

/// An accepted helper command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HelperCommand {
    pub helper: &'static str,
    pub subcommand: &'static str,
    /// (flag, value) in command order.
    pub args: Vec<(&'static str, String)>,
}

fn fail(code: codes::Code, msg: impl Into<String>) -> Error {
    Error::new(code, msg)
}

/// Check one command line against the grammar for the helpers in `dir`.
pub fn check_command(line: &str, dir: &HelperDir) -> Result<HelperCommand> {
    if line.len() > MAX_COMMAND_BYTES {
        return Err(fail(codes::TOO_LONG, format!("command longer than {MAX_COMMAND_BYTES} bytes")));
    }
    if line.trim_matches(' ').is_empty() {
        return Err(fail(codes::EMPTY, "empty command"));
    }
    if let Some(c) = line.chars().find(|c| c.is_control()) {
        return Err(fail(codes::CONTROL, format!("command contains control character U+{:04X}", c as u32)));
    }
    if let Some(c) = line.bytes().find(|b| *b != b' ' && !is_word_byte(*b)) {
        return Err(fail(codes::METACHARACTER, format!("command contains {:?}, which is not allowed", c as char)));
    }
    let words: Vec<&str> = line.split(' ').filter(|w| !w.is_empty()).collect();
    let program = words[0];
    if program.contains('=') {
        return Err(fail(codes::ENV_ASSIGNMENT, "environment assignments are not allowed"));
    }
    if !program.starts_with('/') {
        return Err(fail(codes::PROGRAM_NOT_ABSOLUTE, "the program must be an absolute path"));
    }
    if program.split('/').any(|p| p == "." || p == "..") {
        return Err(fail(codes::PATH_TRAVERSAL, "the program path contains . or .."));
    }
    let (prog_dir, name) = program.rsplit_once('/').unwrap_or(("", program));
    let Some(helper) = GRAMMARS.iter().map(|g| g.helper).find(|h| *h == name) else {
        return Err(fail(codes::UNKNOWN_HELPER, format!("{:?} is not a helper of this toolkit", crate::ids::clip(name))));
    };
    if Path::new(if prog_dir.is_empty() { "/" } else { prog_dir }) != dir.path() || program.contains("//") {
        return Err(fail(codes::FOREIGN_ROOT, format!("{program} is not inside this installed root ({})", dir.path().display())));
    }
    let mut rest = &words[1..];
    let candidates: Vec<&Grammar> = GRAMMARS.iter().filter(|g| g.helper == helper).collect();
    let grammar = if candidates.iter().all(|g| g.subcommand.is_empty()) {
        let selected = candidates.iter().find(|g| !g.selector.is_empty() && rest.contains(&g.selector));
        match selected.or_else(|| candidates.iter().find(|g| g.selector.is_empty())) {
            Some(g) => g,
            None => return Err(fail(codes::UNKNOWN_HELPER, format!("{helper} has no form the guard accepts"))),
        }
    } else {
        let Some(sub) = rest.first() else {
            return Err(fail(codes::MISSING_SUBCOMMAND, format!("{helper} needs a subcommand")));
        };
        // A subcommand may be two words (`consent request`).
        let words_of = |g: &Grammar| g.subcommand.split(' ').count();
        let Some(g) = candidates.iter().find(|g| rest.len() >= words_of(g) && rest[..words_of(g)].join(" ") == g.subcommand) else {
            return Err(fail(
                codes::UNKNOWN_SUBCOMMAND,
                format!("{helper} has no subcommand {:?} the guard accepts", crate::ids::clip(sub)),
            ));
        };
        rest = &rest[words_of(g)..];
        g
    };
    let mut args: Vec<(&'static str, String)> = Vec::new();
    let mut i = 0;
    while i < rest.len() {
        let word = rest[i];
        let Some(spec) = grammar.specs.iter().find(|s| s.flag.name == word) else {
            if word.starts_with('-') {
                return Err(fail(codes::UNKNOWN_FLAG, format!("{:?} is not a documented flag of {helper}", crate::ids::clip(word))));
            }
            return Err(fail(codes::EXTRA_WORD, format!("unexpected word {:?}", crate::ids::clip(word))));
        };
        if args.iter().filter(|(n, _)| *n == spec.flag.name).count() >= spec.flag.max {
            return Err(fail(codes::DUPLICATE_FLAG, format!("{} given too many times", spec.flag.name)));
        }
        if spec.kind == Kind::Switch {
            args.push((spec.flag.name, String::new()));
            i += 1;
            continue;
        }
        let Some(value) = rest.get(i + 1) else {
            return Err(fail(codes::MISSING_VALUE, format!("{} needs a value", spec.flag.name)));
        };
        check_value(spec, value)?;
        args.push((spec.flag.name, (*value).to_owned()));
        i += 2;
    }
    check_args(grammar, &args)?;
    Ok(HelperCommand { helper: grammar.helper, subcommand: grammar.subcommand, args })
}

fn check_value(spec: &ArgSpec, value: &str) -> Result<()> {
    let name = spec.flag.name;
    let ok = match spec.kind {
        Kind::MemoryId => MemoryId::parse(value).map(|_| ()).map_err(|e| fail(codes::INVALID_ID, format!("{name}: {}", e.message()))),
        Kind::MessageId => MessageId::parse(value).map(|_| ()).map_err(|e| fail(codes::INVALID_ID, format!("{name}: {}", e.message()))),
        Kind::Digest => Digest::parse(value).map(|_| ()).map_err(|e| fail(codes::INVALID_DIGEST, format!("{name}: {}", e.message()))),
        Kind::SessionId => {
            SessionId::parse(value).map(|_| ()).map_err(|e| fail(codes::INVALID_SESSION_ID, format!("{name}: {}", e.message())))
        }
        Kind::Switch => Ok(()),
        Kind::Path => {
            if value.split('/').any(|p| p == "." || p == "..") {
                Err(fail(codes::PATH_TRAVERSAL, format!("{name}: path contains . or ..")))
            } else {
                AbsPath::parse(value).map(|_| ()).map_err(|e| fail(codes::INVALID_PATH, format!("{name}: {}", e.message())))
            }
        }
        Kind::Text => {
            if value.is_empty() || value.chars().count() > 2000 || value.chars().any(char::is_control) {
                Err(fail(codes::INVALID_VALUE, format!("{name}: text must be 1 to 2000 characters without control characters")))
            } else {
                Ok(())
            }
        }
        Kind::Word => {
            if !value.is_empty() && value.len() <= 256 && value.bytes().all(is_word_byte) {
                Ok(())
            } else {
                Err(fail(codes::INVALID_VALUE, format!("{name}: expected one plain word")))
            }
        }
        Kind::Number => {
            if !value.is_empty() && value.len() <= 19 && value.bytes().all(|b| b.is_ascii_digit()) {
                Ok(())
            } else {
                Err(fail(codes::INVALID_VALUE, format!("{name}: expected a decimal number")))
            }
        }
        Kind::Choice(options) => {
            if options.contains(&value) {
                Ok(())
            } else {
                Err(fail(codes::INVALID_VALUE, format!("{name}: expected one of {}", options.join(", "))))
            }
        }
        Kind::TaggedDigest => {
            TaggedDigest::parse(value).map(|_| ()).map_err(|e| fail(codes::INVALID_DIGEST, format!("{name}: {}", e.message())))
        }
    };
    ok
}

/// Required flags present, the right number of repeats, no conflicts.
pub fn check_args(grammar: &Grammar, args: &[(&'static str, String)]) -> Result<()> {
    check_required(grammar, args)?;
    check_conflicts(grammar, args)
}

/// The form of a helper without subcommands that its own flags `given`
/// select (by [`Grammar::selector`]), checked for what its argv parser does
/// not know: a flag of another form, and the grammar's conflicts
/// ([`check_args`]'s rule, `command_flag_conflict`). The helper's main calls
/// this first, so the guard and the helper apply one rule.
pub fn check_form(helper: &str, given: &[(&'static str, String)]) -> Result<()> {
    let forms: Vec<&Grammar> = GRAMMARS.iter().filter(|g| g.helper == helper && g.subcommand.is_empty()).collect();
    let selected = forms.iter().find(|g| !g.selector.is_empty() && given.iter().any(|(f, _)| *f == g.selector));
    let Some(grammar) = selected.or_else(|| forms.iter().find(|g| g.selector.is_empty())) else {
        return Err(fail(codes::UNKNOWN_HELPER, format!("{helper} has no form without a subcommand")));
    };
    if let Some((flag, _)) = given.iter().find(|(f, _)| !grammar.specs.iter().any(|s| s.flag.name == *f)) {
        let form = if grammar.selector.is_empty() { String::new() } else { format!(" {}", grammar.selector) };
        return Err(fail(codes::FLAG_CONFLICT, format!("{flag} does not go with {helper}{form}")));
    }
    check_conflicts(grammar, given)
}

fn check_required(grammar: &Grammar, args: &[(&'static str, String)]) -> Result<()> {
    for spec in grammar.specs.iter().filter(|s| s.required) {
        let n = args.iter().filter(|(f, _)| *f == spec.flag.name).count();
        if n < spec.flag.max {
            return Err(fail(
                codes::MISSING_FLAG,
                format!(
                    "{} is required{}",
                    spec.flag.name,
                    if spec.flag.max > 1 { format!(" {} times", spec.flag.max) } else { String::new() }
                ),
            ));
        }
    }
    if grammar.helper == "memory-latch" && grammar.subcommand == "gate" && !args.iter().any(|(f, _)| *f == "--target") {
        return Err(fail(codes::MISSING_FLAG, "memory-latch gate needs at least one --target"));
    }
    Ok(())
}

fn check_conflicts(grammar: &Grammar, args: &[(&'static str, String)]) -> Result<()> {
    if grammar.helper == "pointer-publish" && grammar.selector.is_empty() {
        let content = args.iter().any(|(f, _)| *f == "--content-file");
        let restore = args.iter().any(|(f, _)| *f == "--restore-from");
        if content == restore {
            return Err(fail(codes::FLAG_CONFLICT, "pointer-publish needs exactly one of --content-file and --restore-from"));
        }
    }
    Ok(())
}

/// What the guard decides about one shell command line. The one decision
/// function, [`guard_line`], is used by the PreToolUse hook and by
/// `qa-gate check-command`, so the two cannot disagree.
#[derive(Debug, Clone)]
pub enum Verdict {
    /// The line cannot reach a kijito-qa executable: the guard lets it run.
    Unrelated,
    /// An exact helper command of this installed root: allowed.
    Helper(HelperCommand),
    /// Denied, with the reason.
    Deny(Error),
}

impl Verdict {
    pub fn allowed(&self) -> bool {
        !matches!(self, Verdict::Deny(_))
    }
}

/// Characters the shell removes or expands inside a word (quoting, escape,
/// glob, parameter and command expansion, brace and tilde expansion).
const SHELL_SPECIAL: &[char] = &['\\', '\'', '"', '*', '?', '[', ']', '$', '`', '{', '}', '~'];
/// Characters that expand to text computed at run time.
const EXPANSION: &[char] = &['$', '`'];

/// Fragments of the executable names: a line that expands anything (`$`,
/// backtick) and contains one of these (after quote removal) could assemble
/// a helper name, so it is held to the grammar.
pub const NAME_FRAGMENTS: &[&str] = &[
    "pointer",
    "digest",
    "snapshot",
    "publish",
    "qa-gate",
    "precompact",
    "postcompact",
    "session-hook",
    "prompt-hook",
    "pretool-hook",
    "kijito",
    "latch",
    "wake-check",
];

/// The shell command strings a tool call would run, if it is a shell call:
/// every `tool_input.command`/`cmd` string as is; an argv array as the line
/// the program sees (`[sh, -c|-lc, LINE]` as `LINE`, words with a space or
/// empty words quoted for the shell). `Err` for a value that is neither.
/// Used by the PreToolUse command guard and the policy classifier.
pub fn tool_command_lines(tool_input: Option<&serde_json::Value>) -> Vec<std::result::Result<String, String>> {
    let Some(obj) = tool_input.and_then(|v| v.as_object()) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for key in ["command", "cmd"] {
        match obj.get(key) {
            Some(serde_json::Value::String(s)) => out.push(Ok(s.clone())),
            Some(serde_json::Value::Array(a)) => {
                let words: Vec<&str> = a.iter().filter_map(|w| w.as_str()).collect();
                if words.len() != a.len() {
                    out.push(Err("a command array with non-string elements".into()));
                } else if words.len() == 3
                    && matches!(words[1], "-c" | "-lc")
                    && words[0].rsplit('/').next().is_some_and(|s| s.ends_with("sh"))
                {
                    out.push(Ok(words[2].to_owned()));
                } else if words.iter().any(|w| w.contains(' ') || w.is_empty()) {
                    // What the program receives, quoted for the shell: a
                    // helper argv with a multi-word element fails the grammar.
                    out.push(Ok(shell_words::join(&words)));
                } else {
                    out.push(Ok(words.join(" ")));
                }
            }
            Some(serde_json::Value::Null) | None => {}
            Some(_) => out.push(Err(format!("tool_input.{key} is neither a string nor an array"))),
        }
    }
    out
}

/// Decide on one shell command line (docs/gate-and-hooks.md, "Command grammar
/// and guard"). A line that could reach a toolkit executable — directly, or
/// through quoting, escapes, globs, expansions, braces or tildes — must be
/// exactly one helper command of this root ([`check_command`]); any other
/// line is [`Verdict::Unrelated`]. `dir` is `None` when this installed root
/// is unknown: then every line that could reach a helper is denied.
pub fn guard_line(line: &str, dir: Option<&HelperDir>) -> Verdict {
    guard(&LineParse::new(line, None), dir)
}

/// [`guard_line`] on a tool call's line, reading its one parse
/// ([`ShellLine::as_written`]) instead of parsing again.
pub fn guard_shell_line(line: &ShellLine, dir: Option<&HelperDir>) -> Verdict {
    guard(&LineParse::new(line.text(), Some(line)), dir)
}

/// The line being guarded and its one parse, made on first need (the
/// plain-text rules decide most lines without it).
struct LineParse<'a> {
    line: &'a str,
    given: Option<&'a ShellLine>,
    made: std::cell::OnceCell<std::borrow::Cow<'a, Parsed>>,
}

impl<'a> LineParse<'a> {
    fn new(line: &'a str, given: Option<&'a ShellLine>) -> LineParse<'a> {
        LineParse { line, given, made: std::cell::OnceCell::new() }
    }

    /// No variables are known to the guard (`$HOME` stays `$HOME`).
    fn get(&self) -> &Parsed {
        self.made.get_or_init(|| match self.given {
            Some(l) => l.as_written(),
            None => std::borrow::Cow::Owned(crate::shell::parse(self.line, &std::collections::HashMap::new())),
        })
    }
}

fn guard(lp: &LineParse<'_>, dir: Option<&HelperDir>) -> Verdict {
    let line = lp.line;
    if !reaches_helper_in(lp, dir) {
        return Verdict::Unrelated;
    }
    if names_user_only(lp) {
        return Verdict::Deny(fail(
            codes::USER_ONLY,
            "memory-latch approve is the user's own command, run in their own terminal with their key's passphrase; the agent never runs it (ask the user to)",
        ));
    }
    let Some(dir) = dir else {
        return Verdict::Deny(fail(codes::ROOT_UNKNOWN, "this installed root is unknown"));
    };
    match check_command(line.trim_end_matches([' ', '\n']), dir) {
        Ok(c) => Verdict::Helper(c),
        Err(e) => Verdict::Deny(e),
    }
}

/// The helper commands whose `--session-id` names the journal their line
/// goes to (docs/protocol.md §13): run by the agent, only for its own
/// session (the tool call's), as the hooks name them.
const SESSION_BOUND: &[(&str, &str)] = &[("memory-latch", "consent request"), ("memory-latch", "recover")];

/// A helper command the guard accepted, run by the tool call of `session`:
/// `command_session_mismatch` when it journals into another session.
pub fn session_bound(c: &HelperCommand, session: &str) -> Result<()> {
    if !SESSION_BOUND.contains(&(c.helper, c.subcommand)) {
        return Ok(());
    }
    match c.args.iter().find(|(f, _)| *f == "--session-id") {
        Some((_, s)) if s != session => Err(fail(
            codes::SESSION_MISMATCH,
            format!("{} {} records in session {s}; this tool call is session {session}'s (the hooks name its own)", c.helper, c.subcommand),
        )),
        _ => Ok(()),
    }
}

/// Whether the line runs `memory-latch approve` in some form: in the raw
/// line with quotes and backslashes removed, and in every simple command
/// the shell model ([`crate::shell`]: quotes, ANSI-C decoding, brace
/// expansion, nested `sh -c`) yields, a word `approve` after a word naming
/// `memory-latch` that is not a flag's value. A line the model cannot read
/// whole counts when it mentions `approve` at all (fail closed).
fn names_user_only(lp: &LineParse<'_>) -> bool {
    let line = lp.line;
    let runs_approve = |words: &[String]| {
        let Some(at) = words.iter().position(|a| a == "memory-latch" || a.ends_with("/memory-latch")) else { return false };
        words.iter().enumerate().skip(at + 1).any(|(i, a)| {
            let after_value_flag = words[i - 1].starts_with('-') && words[i - 1] != "--json";
            !after_value_flag && (a == "approve" || a.split_whitespace().any(|x| x == "approve"))
        })
    };
    let plain: String = line.chars().filter(|c| !matches!(c, '\\' | '\'' | '"')).collect();
    let raw: Vec<String> =
        plain.split(|c: char| c.is_whitespace() || ";|&()<>`".contains(c)).filter(|w| !w.is_empty()).map(str::to_owned).collect();
    if runs_approve(&raw) {
        return true;
    }
    let parsed = lp.get();
    if parsed.exceeded {
        return line.to_ascii_lowercase().contains("approve");
    }
    parsed.commands.iter().any(|c| runs_approve(&c.argv))
}

/// Whether the line could reach a toolkit executable, judged on what the
/// shell will run rather than on the raw text:
/// 1. the raw line and the line with quotes and backslashes removed each
///    [`mentions_helper`];
/// 2. the words the shell model ([`crate::shell`]) yields — after quote
///    removal, ANSI-C `$'..'` decoding, brace expansion and the line's own
///    plain assignments, in every simple command, substitution and
///    redirection: each command's argv [`mentions_helper`]; a yielded word
///    that is not written as such in the line (the shell makes it) and names
///    a toolkit executable, lies under the plugin root or in the helper
///    directory; with an expansion on the line, a yielded word holding a
///    helper name fragment; a line the model cannot read whole (a bound of
///    [`crate::shell`] reached, an over-long brace expansion among them) is
///    held to the grammar;
/// 3. any word naming a file in the helper directory (`<root>/bin/...`);
/// 4. a word holding a backslash, quote, glob character, `$`, backtick,
///    brace or tilde that, once those are removed, names a toolkit
///    executable or lies under the plugin root, or that as a glob pattern
///    matches a toolkit executable;
/// 5. a line with an expansion (`$`, backtick) that contains a helper name
///    fragment ([`NAME_FRAGMENTS`]) or the plugin root once quotes are removed.
pub fn reaches_helper(line: &str, dir: Option<&HelperDir>) -> bool {
    reaches_helper_in(&LineParse::new(line, None), dir)
}

fn reaches_helper_in(lp: &LineParse<'_>, dir: Option<&HelperDir>) -> bool {
    let line = lp.line;
    if mentions_helper(line) {
        return true;
    }
    let unquoted: String = line.chars().filter(|c| !matches!(c, '\\' | '\'' | '"')).collect();
    if mentions_helper(&unquoted) {
        return true;
    }
    let helper_dir = dir.and_then(|d| d.path().to_str()).map(|d| format!("{d}/"));
    let root = dir.and_then(|d| d.path().parent()).and_then(|p| p.to_str()).filter(|r| r.len() > 1).map(str::to_owned);
    let raw_words: Vec<&str> = line.split(|c: char| c.is_whitespace() || ";|&()<>".contains(c)).filter(|w| !w.is_empty()).collect();
    if model_reaches_helper(lp, &raw_words, helper_dir.as_deref(), root.as_deref()) {
        return true;
    }
    let stripped: String = line.chars().filter(|c| !SHELL_SPECIAL.contains(c)).collect();
    for raw in &raw_words {
        // The whole word (a command word may contain `=`: `/r/bin/x=y` runs
        // the file `x=y`) and, for `NAME=value`, the value.
        let value = raw.split_once('=').map(|(_, v)| v);
        for word in std::iter::once(*raw).chain(value) {
            if word_reaches_helper(word, helper_dir.as_deref(), root.as_deref()) {
                return true;
            }
        }
    }
    if line.contains(EXPANSION) {
        let lower = stripped.to_ascii_lowercase();
        if NAME_FRAGMENTS.iter().any(|f| lower.contains(f)) || root.as_deref().is_some_and(|r| stripped.contains(r)) {
            return true;
        }
    }
    false
}

/// Rule 2 of [`reaches_helper`]: the words the shell model yields. No
/// variables are known to the guard (`$HOME` stays `$HOME`); the line's own
/// plain assignments are followed.
fn model_reaches_helper(lp: &LineParse<'_>, raw_words: &[&str], helper_dir: Option<&str>, root: Option<&str>) -> bool {
    let (line, parsed) = (lp.line, lp.get());
    if parsed.exceeded {
        return true;
    }
    let expands = line.contains(EXPANSION);
    let in_dir = |w: &str, d: &str| w.starts_with(d) || w == d.trim_end_matches('/');
    // A word the shell makes (it is not written so on the line) is judged
    // like a disguised one; a word written as is was judged on the raw text.
    let made = |w: &str| !raw_words.iter().any(|r| *r == w || r.split_once('=').is_some_and(|(_, v)| v == w));
    let judge = |w: &str| {
        (made(w) && (names_executable(w) || root.is_some_and(|r| w.starts_with(r)) || helper_dir.is_some_and(|d| in_dir(w, d))))
            || (expands && {
                let lower = w.to_ascii_lowercase();
                NAME_FRAGMENTS.iter().any(|f| lower.contains(f))
            })
    };
    parsed.commands.iter().any(|cmd| {
        mentions_helper(&cmd.argv.join(" "))
            || program_words(&cmd.argv).iter().any(|w| w.contains(['*', '?', '[']) && glob_names_executable(&unquoted(w), helper_dir))
            || cmd.argv.iter().any(|w| judge(w))
            || cmd.redirects.iter().any(|r| judge(&r.target))
            || cmd.assigns.iter().any(|(_, v)| judge(v))
    })
}

/// Rules 2 and 3 of [`reaches_helper`] for one word.
fn word_reaches_helper(word: &str, helper_dir: Option<&str>, root: Option<&str>) -> bool {
    let plain: String = word.chars().filter(|c| !SHELL_SPECIAL.contains(c)).collect();
    let in_dir = |w: &str, d: &str| w.starts_with(d) || w == d.trim_end_matches('/');
    if helper_dir.is_some_and(|d| in_dir(&plain, d) || in_dir(word, d)) {
        return true;
    }
    if !word.contains(SHELL_SPECIAL) {
        return false;
    }
    if names_executable(&plain) || root.is_some_and(|r| plain.starts_with(r)) {
        return true;
    }
    // Brace expansion (`{bin/session-hook,--host}` runs `bin/session-hook
    // --host`) is judged on the words the shell model makes (rule 2). A glob
    // made of wildcards only (`*`, `***`) names a helper only as the program
    // ([`model_reaches_helper`]): as an argument it is ordinary work (`ls *`,
    // `git add *`, a patch's `*** Begin Patch` line); any other glob that
    // matches a helper name counts wherever it stands (`ls qa-gat?`). Quotes
    // do not count: `find . -name 'of=*'` names no helper.
    let pattern = unquoted(word);
    let wild_only = pattern.chars().all(|c| matches!(c, '*' | '?'));
    word.contains(['*', '?', '[']) && !wild_only && glob_names_executable(&pattern, helper_dir)
}

/// `word` without its quotes and backslashes: the pattern a glob word is.
fn unquoted(word: &str) -> String {
    word.chars().filter(|c| !matches!(c, '\\' | '\'' | '"')).collect()
}

/// The words of `argv` that may be run as a program: the first (after the
/// line's own assignments) and, when that is a wrapper (`env`, `sudo`,
/// `xargs`, `nice`, ...: it runs its arguments), every word after it.
fn program_words(argv: &[String]) -> Vec<&str> {
    let Some(first) = argv.iter().position(|w| !w.contains('=') || w.starts_with('=')) else { return Vec::new() };
    let base = argv[first].rsplit('/').next().unwrap_or(&argv[first]);
    if WRAPPERS.contains(&base) {
        argv[first..].iter().map(String::as_str).collect()
    } else {
        vec![argv[first].as_str()]
    }
}

/// `name` or `.../name` for a toolkit executable name.
fn names_executable(word: &str) -> bool {
    let base = word.rsplit('/').next().unwrap_or(word);
    GUARDED_NAMES.contains(&base)
}

/// Whether a glob pattern ([`unquoted`]) could match a toolkit executable:
/// its last component matches an executable name and, when it has a
/// directory part, the whole pattern matches `<helper dir>/<name>` (or the
/// directory part is itself a pattern).
fn glob_names_executable(pattern: &str, helper_dir: Option<&str>) -> bool {
    if pattern.len() > 1024 {
        return true;
    }
    let (dir_part, base) = match pattern.rsplit_once('/') {
        Some((d, b)) => (Some(d), b),
        None => (None, pattern),
    };
    GUARDED_NAMES.iter().any(|name| {
        glob_match(base.as_bytes(), name.as_bytes())
            && match (dir_part, helper_dir) {
                (None, _) => true,
                // A relative directory depends on the working directory.
                (Some(d), Some(h)) => {
                    !d.starts_with('/') || glob_match(d.as_bytes(), h.trim_end_matches('/').as_bytes()) || d.contains(['*', '?', '['])
                }
                (Some(d), None) => d.contains(['*', '?', '[']) || !d.is_empty(),
            }
    })
}

/// Shell glob match (`*`, `?`, `[...]`; `*` does not cross `/`), iterative
/// with backtracking to the last `*`: O(pattern × text).
pub fn glob_match(pattern: &[u8], text: &[u8]) -> bool {
    let (mut p, mut t) = (0usize, 0usize);
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        if p < pattern.len() {
            match pattern[p] {
                b'*' => {
                    star = Some((p, t));
                    p += 1;
                    continue;
                }
                b'?' if text[t] != b'/' => {
                    p += 1;
                    t += 1;
                    continue;
                }
                b'[' => {
                    if let Some((matched, len)) = class_match(&pattern[p..], text[t]) {
                        if matched {
                            p += len;
                            t += 1;
                            continue;
                        }
                    } else if text[t] == b'[' {
                        p += 1;
                        t += 1;
                        continue;
                    }
                }
                c if c == text[t] => {
                    p += 1;
                    t += 1;
                    continue;
                }
                _ => {}
            }
        }
        match star {
            Some((sp, st)) if text[st] != b'/' => {
                star = Some((sp, st + 1));
                p = sp + 1;
                t = st + 1;
            }
            _ => return false,
        }
    }
    pattern[p..].iter().all(|c| *c == b'*')
}

/// A `[...]` class at the start of `pattern`: (matches `c`, its length), or
/// `None` when unterminated.
fn class_match(pattern: &[u8], c: u8) -> Option<(bool, usize)> {
    let mut i = 1;
    let negate = matches!(pattern.get(i), Some(b'!') | Some(b'^'));
    if negate {
        i += 1;
    }
    let mut matched = false;
    let mut first = true;
    while i < pattern.len() {
        if pattern[i] == b']' && !first {
            return Some((matched != negate, i + 1));
        }
        first = false;
        if i + 2 < pattern.len() && pattern[i + 1] == b'-' && pattern[i + 2] != b']' {
            matched |= pattern[i] <= c && c <= pattern[i + 2];
            i += 3;
        } else {
            matched |= pattern[i] == c;
            i += 1;
        }
    }
    None
}

/// Whether a shell command line mentions a toolkit executable in a way that
/// could run it: a word ending in `/<name>` anywhere, or `<name>` as the first
/// word of a shell segment. Such a command must pass [`check_command`] whole.
/// This is the plain-text part of [`reaches_helper`].
pub fn mentions_helper(line: &str) -> bool {
    let is_sep = |c: char| c.is_whitespace() || ";|&()<>{}`'\"$\\!".contains(c);
    let is_segment_break = |c: char| c == '\n' || ";|&()<>{}`'\"$\\!".contains(c);
    for word in line.split(is_sep).filter(|w| !w.is_empty()) {
        if GUARDED_NAMES.iter().any(|n| word.strip_suffix(n).is_some_and(|w| w.ends_with('/'))) {
            return true;
        }
    }
    for segment in line.split(is_segment_break) {
        let mut words = segment.split_whitespace().skip_while(|w| w.contains('=') && !w.starts_with('-'));
        if let Some(first) = words.next() {
            if GUARDED_NAMES.contains(&first) {
                return true;
            }
            // `env qa-gate ...`, `sudo qa-gate ...`, `xargs qa-gate ...`: a
            // wrapper runs its argument as a program.
            let wrapper = first.rsplit('/').next().unwrap_or(first);
            if WRAPPERS.contains(&wrapper) && words.any(|w| GUARDED_NAMES.contains(&w)) {
                return true;
            }
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flag_tables_follow_the_specs() {
        assert_eq!(POINTER_SNAPSHOT_FLAGS.len(), POINTER_SNAPSHOT_SPECS.len());
        for (f, s) in POINTER_PUBLISH_FLAGS.iter().zip(POINTER_PUBLISH_SPECS.iter()) {
            assert_eq!(f.name, s.flag.name);
        }
        assert_eq!(QA_GATE_RECORD_FLAGS[5].max, 2);
    }

    #[test]
    fn memory_latch_approve_is_denied_to_the_agent_in_every_form() {
        let dir = HelperDir::new(Path::new("/opt/kq/bin")).unwrap();
        for line in [
            "/opt/kq/bin/memory-latch approve",
            "/opt/kq/bin/memory-latch approve --workspace /w --token-id tok_0123456789abcdef",
            "/opt/kq/bin/memory-latch --json approve",
            "memory-latch approve",
            "cd /w && /opt/kq/bin/memory-latch approve < /dev/null",
            "/opt/kq/bin/memory-latch 'approve'",
            "/opt/kq/bin/memory-latch \"appr\"ove",
            "/opt/kq/bin/memory-latch ap\\prove",
            "/opt/kq/bin/memory-latch $'\\x61pprove'",
            "/opt/kq/bin/memory-latch app{r,x}ove",
            "/opt/kq/bin/{memory-latch,x} approve",
            "bash -c '/opt/kq/bin/memory-latch approve'",
            "env A=1 /opt/kq/bin/memory-latch approve",
            "script -qc '/opt/kq/bin/memory-latch approve' /dev/null",
            "setsid /opt/kq/bin/memory-latch approve",
        ] {
            match guard_line(line, Some(&dir)) {
                Verdict::Deny(e) => assert_eq!(e.code(), codes::USER_ONLY.as_str(), "{line}"),
                v => panic!("{line}: {v:?}"),
            }
        }
        // the word as a value is not the subcommand
        assert!(matches!(
            guard_line("/opt/kq/bin/memory-latch consent request --action-file /w/a --summary approve --risk low", Some(&dir)),
            Verdict::Helper(_)
        ));
    }

    #[test]
    fn memory_latch_wake_check_and_kijito_local_grammar() {
        let dir = HelperDir::new(Path::new("/opt/kq/bin")).unwrap();
        let ok = |line: &str| check_command(line, &dir).map(|c| (c.helper, c.subcommand)).unwrap_or_else(|e| panic!("{line}: {e:?}"));
        let no = |line: &str| check_command(line, &dir).map(|_| ()).unwrap_err().code().to_owned();
        let cp = format!("sha256:{}", "ab".repeat(32));
        assert_eq!(ok("/opt/kq/bin/memory-latch status --json"), ("memory-latch", "status"));
        assert_eq!(
            ok("/opt/kq/bin/memory-latch consent request --action-file /w/a.txt --summary deploy --risk high"),
            ("memory-latch", "consent request")
        );
        assert_eq!(ok(&format!("/opt/kq/bin/memory-latch gate --action-file /w/a --checkpoint {cp} --target src/a.rs --target b --intended /w/i --result /w/r")), ("memory-latch", "gate"));
        assert_eq!(ok("/opt/kq/bin/memory-latch reseed --workspace /w"), ("memory-latch", "reseed"));
        assert_eq!(ok("/opt/kq/bin/wake-check --json --workspace /w --long-sleep-after 60"), ("wake-check", ""));
        assert_eq!(ok("/opt/kq/bin/kijito-local serve --db /d/db --token-file /d/t --listen 127.0.0.1:0"), ("kijito-local", "serve"));
        // What only the user may do, and flags that do not exist.
        assert_eq!(
            no("/opt/kq/bin/memory-latch consent confirm --action-file /w/a --message ACT-23456A"),
            codes::UNKNOWN_SUBCOMMAND.as_str()
        );
        assert_eq!(no("/opt/kq/bin/memory-latch reseed --message ACT-23456A"), codes::UNKNOWN_FLAG.as_str());
        // Signing is the user's, in their own terminal; the agent may verify with a public key.
        assert_eq!(no("/opt/kq/bin/memory-latch keygen --secret-key /k/a.key --public-key /k/a.pub"), codes::UNKNOWN_SUBCOMMAND.as_str());
        assert_eq!(
            no("/opt/kq/bin/memory-latch checkpoint --sign --secret-key /k/a.key --passphrase-file /k/p"),
            codes::UNKNOWN_FLAG.as_str()
        );
        assert_eq!(
            ok("/opt/kq/bin/memory-latch verify --since-checkpoint /k/cp.note --public-key /w/latch.pub"),
            ("memory-latch", "verify")
        );
        assert_eq!(
            no(&format!("/opt/kq/bin/memory-latch gate --action-file /w/a --checkpoint {cp} --intended /w/i --result /w/r --reconfirmed")),
            codes::UNKNOWN_FLAG.as_str()
        );
        assert_eq!(
            no(&format!("/opt/kq/bin/memory-latch gate --action-file /w/a --checkpoint {cp} --intended /w/i --result /w/r")),
            codes::MISSING_FLAG.as_str()
        );
        assert_eq!(
            no("/opt/kq/bin/memory-latch consent request --action-file /w/a --summary s --risk extreme"),
            codes::INVALID_VALUE.as_str()
        );
        assert_eq!(no("/opt/kq/bin/memory-latch checkpoint --last-good-checkpoint abc"), codes::INVALID_DIGEST.as_str());
        assert_eq!(no("/opt/kq/bin/memory-latch status --json --json"), codes::DUPLICATE_FLAG.as_str());
        assert_eq!(no("/opt/kq/bin/memory-latch consent"), codes::UNKNOWN_SUBCOMMAND.as_str());
        assert_eq!(no("/opt/kq/bin/wake-check --long-sleep-after soon"), codes::INVALID_VALUE.as_str());
        assert_eq!(no("/elsewhere/memory-latch status"), codes::FOREIGN_ROOT.as_str());
        assert_eq!(no("memory-latch status"), codes::PROGRAM_NOT_ABSOLUTE.as_str());
        assert!(mentions_helper("memory-latch consent confirm --message ACT-23456A"));
        assert!(mentions_helper("cd /w && wake-check --json"));
        assert!(mentions_helper("env kijito-local serve"));
    }

    #[test]
    fn detection_of_helper_mentions() {
        assert!(mentions_helper("/x/bin/qa-gate record"));
        assert!(mentions_helper("cd /tmp && qa-gate status"));
        assert!(mentions_helper("bash -c \"pointer-publish --x\""));
        assert!(mentions_helper("FOO=1 pointer-digest --pointer-id 1"));
        assert!(mentions_helper("kijito-setup --pointer-id 9 --lock-message-id 9 --force"));
        assert!(mentions_helper("/x/bin/kijito-setup --create"));
        assert!(!mentions_helper("kijito-doctor --offline"));
        assert!(mentions_helper("ls; /evil/pointer-snapshot"));
        assert!(mentions_helper("env qa-gate status"));
        assert!(mentions_helper("sudo -E qa-gate status"));
        assert!(mentions_helper("echo x | xargs qa-gate"));
        assert!(mentions_helper("/usr/bin/timeout 5 pointer-publish --x"));
        assert!(!mentions_helper("grep qa-gate README.md"));
        assert!(!mentions_helper("cargo build --bin qa-gate"));
        assert!(!mentions_helper("ls -la"));
    }

    #[test]
    fn glob_matching() {
        assert!(glob_match(b"pointer-dige?t", b"pointer-digest"));
        assert!(glob_match(b"*-digest", b"pointer-digest"));
        assert!(glob_match(b"q[a-z]-gate", b"qa-gate"));
        assert!(glob_match(b"[!x]a-gate", b"qa-gate"));
        assert!(!glob_match(b"*", b"a/b"));
        assert!(!glob_match(b"q?-gates", b"qa-gate"));
        assert!(glob_match(b"/r/*/q*", b"/r/bin/qa-gate"));
    }

    #[test]
    fn guard_reads_what_the_shell_runs() {
        let dir = HelperDir::new(Path::new("/opt/kq/bin")).unwrap();
        let deny = |l: &str| !guard_line(l, Some(&dir)).allowed();
        assert!(deny("/opt/kq/bin/pointer\\-digest --pointer-id 3; echo INJECTED"));
        assert!(deny("/opt/kq/bin/pointer-dige?t --pointer-id 3; echo INJECTED"));
        assert!(deny("P=pointer-digest; /opt/kq/bin/$P --pointer-id 3; echo INJECTED"));
        assert!(deny("'/opt/kq/bin/pointer-digest' --pointer-id 3"));
        assert!(deny("/opt/kq/bin/sh -c id"));
        assert!(deny("~/kq/bin/qa-gate status"));
        assert!(deny("R=/opt/kq; $R/bin/x"));
        // Found by fuzz/fuzz_targets/guard.rs: a command word with `=` is a
        // command, not an assignment.
        assert!(deny("/opt/kq/bin/qa-Pgate=p o"));
        assert!(deny("X=/opt/kq/bin/qa-gate"));
        assert!(!deny("/opt/kq/bin/pointer-digest --pointer-id 3"));
        assert!(!deny("ls -la *.rs"));
        assert!(!deny("grep qa-gate README.md"));
        assert!(!deny("echo \"$HOME\""));
        assert!(matches!(guard_line("ls", Some(&dir)), Verdict::Unrelated));
        assert!(
            matches!(guard_line("/opt/kq/bin/qa-gate status --session-id a --data-dir /d", None), Verdict::Deny(e) if e.code_as() == Some(codes::ROOT_UNKNOWN))
        );
    }
}

#[cfg(test)]
#[path = "command_tests.rs"]
mod rule_tests;
