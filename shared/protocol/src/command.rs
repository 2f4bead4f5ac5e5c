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

use crate::cli::Flag;
use crate::error::{Error, Result};
use crate::ids::{AbsPath, Digest, MemoryId, MessageId, SessionId};
use std::path::{Path, PathBuf};

/// What a flag's value must be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    MemoryId,
    MessageId,
    Digest,
    SessionId,
    Path,
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

pub const QA_GATE_RECORD_SPECS: [ArgSpec; 6] = [
    req("--session-id", Kind::SessionId),
    req("--transcript", Kind::Path),
    req("--data-dir", Kind::Path),
    req("--pointer-id", Kind::MemoryId),
    req("--pointer-digest", Kind::Digest),
    ArgSpec { flag: Flag::repeated("--cold-boot-report", 2), kind: Kind::Path, required: true },
];
pub const QA_GATE_RECORD_FLAGS: &[Flag] = &flags(&QA_GATE_RECORD_SPECS);

pub const QA_GATE_INVALIDATE_SPECS: [ArgSpec; 2] = [req("--session-id", Kind::SessionId), req("--data-dir", Kind::Path)];
pub const QA_GATE_INVALIDATE_FLAGS: &[Flag] = &flags(&QA_GATE_INVALIDATE_SPECS);

pub const QA_GATE_STATUS_SPECS: [ArgSpec; 3] =
    [req("--session-id", Kind::SessionId), req("--data-dir", Kind::Path), opt("--transcript", Kind::Path)];
pub const QA_GATE_STATUS_FLAGS: &[Flag] = &flags(&QA_GATE_STATUS_SPECS);

/// One helper (or helper subcommand) the agent may run.
#[derive(Debug, Clone, Copy)]
pub struct Grammar {
    pub helper: &'static str,
    /// "" when the helper takes no subcommand.
    pub subcommand: &'static str,
    pub specs: &'static [ArgSpec],
}

/// Every helper command the guard accepts.
pub const GRAMMARS: &[Grammar] = &[
    Grammar { helper: "pointer-digest", subcommand: "", specs: &POINTER_DIGEST_SPECS },
    Grammar { helper: "pointer-snapshot", subcommand: "", specs: &POINTER_SNAPSHOT_SPECS },
    Grammar { helper: "pointer-publish", subcommand: "", specs: &POINTER_PUBLISH_SPECS },
    Grammar { helper: "qa-gate", subcommand: "record", specs: &QA_GATE_RECORD_SPECS },
    Grammar { helper: "qa-gate", subcommand: "invalidate", specs: &QA_GATE_INVALIDATE_SPECS },
    Grammar { helper: "qa-gate", subcommand: "status", specs: &QA_GATE_STATUS_SPECS },
];

/// Every executable name of this toolkit that the guard watches for: the
/// agent-run helpers plus the hooks and `kijito-setup` (which the agent never
/// runs: `kijito-setup --force` would re-point the config at another pointer
/// or server, so no grammar accepts it and only the user runs it).
pub const GUARDED_NAMES: &[&str] =
    &["pointer-digest", "pointer-snapshot", "pointer-publish", "qa-gate", "precompact", "postcompact", "session-hook", "kijito-setup"];

/// Programs that run their arguments as a program.
const WRAPPERS: &[&str] = &[
    "env", "sudo", "doas", "exec", "command", "builtin", "nohup", "time", "nice", "ionice", "timeout", "xargs", "eval", "source", ".",
    "sh", "bash", "dash", "zsh", "ksh", "setsid", "stdbuf", "chroot", "unshare", "strace",
];

/// Longest command line the guard looks at.
pub const MAX_COMMAND_BYTES: usize = 8192;

/// Stable codes of this module.
pub mod codes {
    pub const EMPTY: &str = "command_empty";
    pub const TOO_LONG: &str = "command_too_long";
    pub const CONTROL: &str = "command_control_character";
    pub const METACHARACTER: &str = "command_metacharacter";
    pub const ENV_ASSIGNMENT: &str = "command_env_assignment";
    pub const PROGRAM_NOT_ABSOLUTE: &str = "command_program_not_absolute";
    pub const PATH_TRAVERSAL: &str = "command_path_traversal";
    pub const UNKNOWN_HELPER: &str = "command_unknown_helper";
    pub const FOREIGN_ROOT: &str = "command_foreign_root";
    pub const MISSING_SUBCOMMAND: &str = "command_missing_subcommand";
    pub const UNKNOWN_SUBCOMMAND: &str = "command_unknown_subcommand";
    pub const UNKNOWN_FLAG: &str = "command_unknown_flag";
    pub const DUPLICATE_FLAG: &str = "command_duplicate_flag";
    pub const MISSING_VALUE: &str = "command_missing_value";
    pub const EXTRA_WORD: &str = "command_extra_word";
    pub const MISSING_FLAG: &str = "command_missing_flag";
    pub const FLAG_CONFLICT: &str = "command_flag_conflict";
    pub const INVALID_ID: &str = "command_invalid_id";
    pub const INVALID_DIGEST: &str = "command_invalid_digest";
    pub const INVALID_SESSION_ID: &str = "command_invalid_session_id";
    pub const INVALID_PATH: &str = "command_invalid_path";
    pub const ROOT_UNKNOWN: &str = "command_root_unknown";
    /// A tool call's argv array that is not one exact helper command.
    pub const ARGV_INVALID: &str = "command_argv_invalid";
}

/// Where this installed plugin root keeps its executables: the directory of
/// the running executable, canonicalised (`<root>/bin`, or `target/debug` in
/// tests).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HelperDir(PathBuf);

impl HelperDir {
    /// The directory of the current executable.
    pub fn current() -> Result<HelperDir> {
        let exe = std::env::current_exe()
            .and_then(|p| p.canonicalize())
            .map_err(|e| Error::new(codes::ROOT_UNKNOWN, format!("cannot locate the running executable: {e}")))?;
        let dir = exe.parent().ok_or_else(|| Error::new(codes::ROOT_UNKNOWN, "the running executable has no directory"))?;
        HelperDir::new(dir)
    }

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

/// An accepted helper command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HelperCommand {
    pub helper: &'static str,
    pub subcommand: &'static str,
    /// (flag, value) in command order.
    pub args: Vec<(&'static str, String)>,
}

fn fail(code: &str, msg: impl Into<String>) -> Error {
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
    let grammar = if candidates.len() == 1 && candidates[0].subcommand.is_empty() {
        candidates[0]
    } else {
        let Some(sub) = rest.first() else {
            return Err(fail(codes::MISSING_SUBCOMMAND, format!("{helper} needs a subcommand")));
        };
        let Some(g) = candidates.iter().find(|g| g.subcommand == *sub) else {
            return Err(fail(codes::UNKNOWN_SUBCOMMAND, format!("{helper} has no subcommand {:?} the guard accepts", crate::ids::clip(sub))));
        };
        rest = &rest[1..];
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
        Kind::Path => {
            if value.split('/').any(|p| p == "." || p == "..") {
                Err(fail(codes::PATH_TRAVERSAL, format!("{name}: path contains . or ..")))
            } else {
                AbsPath::parse(value).map(|_| ()).map_err(|e| fail(codes::INVALID_PATH, format!("{name}: {}", e.message())))
            }
        }
    };
    ok
}

/// Required flags present, the right number of repeats, no conflicts.
pub fn check_args(grammar: &Grammar, args: &[(&'static str, String)]) -> Result<()> {
    for spec in grammar.specs.iter().filter(|s| s.required) {
        let n = args.iter().filter(|(f, _)| *f == spec.flag.name).count();
        if n < spec.flag.max {
            return Err(fail(codes::MISSING_FLAG, format!("{} is required{}", spec.flag.name, if spec.flag.max > 1 { format!(" {} times", spec.flag.max) } else { String::new() })));
        }
    }
    if grammar.helper == "pointer-publish" {
        let content = args.iter().any(|(f, _)| *f == "--content-file");
        let restore = args.iter().any(|(f, _)| *f == "--restore-from");
        if content == restore {
            return Err(fail(codes::FLAG_CONFLICT, "pointer-publish needs exactly one of --content-file and --restore-from"));
        }
    }
    Ok(())
}

/// Whether a shell command line mentions a toolkit executable in a way that
/// could run it: a word ending in `/<name>` anywhere, or `<name>` as the first
/// word of a shell segment. Such a command must pass [`check_command`] whole.
pub fn mentions_helper(line: &str) -> bool {
    let is_sep = |c: char| c.is_whitespace() || ";|&()<>{}`'\"$\\!".contains(c);
    let is_segment_break = |c: char| c == '\n' || ";|&()<>{}`'\"$\\!".contains(c);
    for word in line.split(is_sep).filter(|w| !w.is_empty()) {
        if GUARDED_NAMES.iter().any(|n| word.ends_with(&format!("/{n}"))) {
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
}
