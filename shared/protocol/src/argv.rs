//! Argument parsing shared by every binary: argv becomes validated, typed
//! values in one place.
//!
//! Grammar: `tool [subcommand] --flag value --switch ...`. Only the long form
//! `--flag value` is accepted. Unknown flags, repeated flags, missing values
//! and positional junk are usage errors (exit status 2). `--help` and
//! `--version` anywhere print and exit 0.

use crate::error::{Error, Result};
use crate::ids::{AbsPath, Digest, MemoryId, MessageId, Persona, SessionId};
use std::ffi::OsString;

/// Maximum bytes of one argument value.
pub const MAX_ARG_BYTES: usize = 8192;

/// One documented flag.
#[derive(Debug, Clone, Copy)]
pub struct Flag {
    pub name: &'static str,
    /// Takes a value (`--flag VALUE`) or is a switch (`--flag`).
    pub value: bool,
    /// How many times it may appear (1 for almost every flag).
    pub max: usize,
}

impl Flag {
    pub const fn value(name: &'static str) -> Flag {
        Flag { name, value: true, max: 1 }
    }
    pub const fn switch(name: &'static str) -> Flag {
        Flag { name, value: false, max: 1 }
    }
    pub const fn repeated(name: &'static str, max: usize) -> Flag {
        Flag { name, value: true, max }
    }
}

/// A command (or subcommand) grammar.
#[derive(Debug, Clone, Copy)]
pub struct Command {
    /// Subcommand word, or "" for the tool itself.
    pub name: &'static str,
    pub flags: &'static [Flag],
}

/// A whole tool: name (used in `kijito_<tool>_failed:`), help text and its
/// commands. A tool with one command named "" takes no subcommand; one with
/// others besides "" runs "" when the first word is a flag or absent.
#[derive(Debug, Clone, Copy)]
pub struct Tool {
    pub name: &'static str,
    /// Snake-case name used in failure lines (`pointer_digest`).
    pub code_name: &'static str,
    pub help: &'static str,
    pub commands: &'static [Command],
}

impl Tool {
    /// The flags documented for `subcommand` ("" when the tool has none).
    pub fn flags_of(&self, subcommand: &str) -> Option<&'static [Flag]> {
        self.commands.iter().find(|c| c.name == subcommand).map(|c| c.flags)
    }
}

/// Parsed argv: the subcommand and each flag's values, in order.
#[derive(Debug, Clone, Default)]
pub struct Args {
    pub subcommand: String,
    values: Vec<(&'static str, Option<String>)>,
}

/// What argv asked for.
#[derive(Debug)]
pub enum Parsed {
    Help,
    Version,
    Run(Args),
}

/// Stage one: argv (without the program name) to raw strings per flag.
pub fn parse(tool: &Tool, argv: impl IntoIterator<Item = OsString>) -> Result<Parsed> {
    let mut words = Vec::new();
    for arg in argv {
        let text = arg.into_string().map_err(|_| Error::usage(crate::codes::cli::INVALID_ARGUMENT, "arguments must be valid UTF-8"))?;
        if text.len() > MAX_ARG_BYTES {
            return Err(Error::usage(crate::codes::cli::INVALID_ARGUMENT, format!("an argument is longer than {MAX_ARG_BYTES} bytes")));
        }
        if text == "--help" || text == "-h" {
            return Ok(Parsed::Help);
        }
        if text == "--version" || text == "-V" {
            return Ok(Parsed::Version);
        }
        words.push(text);
    }
    let mut words = words.into_iter().peekable();
    let needs_subcommand = !(tool.commands.len() == 1 && tool.commands[0].name.is_empty());
    // A tool with subcommands and a command named "" runs that one when no
    // subcommand word comes first (`kijito-report --last`, `kijito-report verify`).
    let default_command = tool.commands.iter().any(|c| c.name.is_empty()) && words.peek().is_none_or(|w| w.starts_with('-'));
    let subcommand = if needs_subcommand && !default_command {
        match words.next() {
            Some(word) if tool.commands.iter().any(|c| c.name == word) => word,
            // Two-word commands (`consent request`): the command name holds one space.
            Some(word) if tool.commands.iter().any(|c| c.name.split_once(' ').is_some_and(|(g, _)| g == word)) => {
                let second = words.next().unwrap_or_default();
                let joined = format!("{word} {second}");
                if tool.commands.iter().any(|c| c.name == joined) {
                    joined
                } else {
                    return Err(Error::usage(
                        crate::codes::cli::UNKNOWN_SUBCOMMAND,
                        format!("{word} needs one of its subcommands (see --help), not {:?}", crate::ids::clip(&second)),
                    ));
                }
            }
            Some(word) => {
                return Err(Error::usage(
                    crate::codes::cli::UNKNOWN_SUBCOMMAND,
                    format!("unknown subcommand {:?}", crate::ids::clip(&word)),
                ))
            }
            None => return Err(Error::usage(crate::codes::cli::MISSING_SUBCOMMAND, "a subcommand is required (see --help)")),
        }
    } else {
        String::new()
    };
    let flags = tool.flags_of(&subcommand).unwrap_or(&[]);
    let mut args = Args { subcommand, values: Vec::new() };
    while let Some(word) = words.next() {
        let Some(flag) = flags.iter().find(|f| f.name == word) else {
            if let Some((name, _)) = word.split_once('=').filter(|(n, _)| flags.iter().any(|f| f.name == *n && f.value)) {
                return Err(Error::usage(
                    crate::codes::cli::UNKNOWN_FLAG,
                    format!(
                        "{:?} is not accepted: write `{name} VALUE` (the flag and its value as two words, no `=`)",
                        crate::ids::clip(&word)
                    ),
                ));
            }
            if word.starts_with('-') {
                return Err(Error::usage(crate::codes::cli::UNKNOWN_FLAG, format!("unknown flag {:?}", crate::ids::clip(&word))));
            }
            return Err(Error::usage(crate::codes::cli::UNEXPECTED_ARGUMENT, format!("unexpected argument {:?}", crate::ids::clip(&word))));
        };
        if args.count(flag.name) >= flag.max {
            return Err(Error::usage(crate::codes::cli::REPEATED_FLAG, format!("{} given too many times", flag.name)));
        }
        let value = if flag.value {
            match words.next() {
                Some(v) => Some(v),
                None => return Err(Error::usage(crate::codes::cli::MISSING_VALUE, format!("{} needs a value", flag.name))),
            }
        } else {
            None
        };
        args.values.push((flag.name, value));
    }
    Ok(Parsed::Run(args))
}

impl Args {
    fn count(&self, name: &str) -> usize {
        self.values.iter().filter(|(n, _)| *n == name).count()
    }

    /// Whether a switch (or any flag) was given.
    pub fn has(&self, name: &str) -> bool {
        self.count(name) > 0
    }

    /// Every flag given, in order, with its raw value ("" for a switch).
    pub fn given(&self) -> Vec<(&'static str, String)> {
        self.values.iter().map(|(n, v)| (*n, v.clone().unwrap_or_default())).collect()
    }

    /// The raw value of a flag given at most once.
    pub fn raw(&self, name: &str) -> Option<&str> {
        self.values.iter().find(|(n, _)| *n == name).and_then(|(_, v)| v.as_deref())
    }

    /// Every raw value of a repeatable flag, in order.
    pub fn raw_all(&self, name: &str) -> Vec<&str> {
        self.values.iter().filter(|(n, _)| *n == name).filter_map(|(_, v)| v.as_deref()).collect()
    }

    /// Stage two: a required, typed value. Validation failures are usage errors.
    pub fn required<T: FromArg>(&self, name: &str) -> Result<T> {
        match self.raw(name) {
            Some(v) => T::from_arg(v).map_err(|e| e.context(name).as_usage()),
            None => Err(Error::usage(crate::codes::cli::MISSING_FLAG, format!("{name} is required"))),
        }
    }

    /// An optional typed value.
    pub fn optional<T: FromArg>(&self, name: &str) -> Result<Option<T>> {
        self.raw(name).map(|v| T::from_arg(v).map_err(|e| e.context(name).as_usage())).transpose()
    }

    /// Every typed value of a repeatable flag.
    pub fn all<T: FromArg>(&self, name: &str) -> Result<Vec<T>> {
        self.raw_all(name).into_iter().map(|v| T::from_arg(v).map_err(|e| e.context(name).as_usage())).collect()
    }
}

/// A value that can be parsed from one argument.
pub trait FromArg: Sized {
    fn from_arg(text: &str) -> Result<Self>;
}

impl FromArg for MemoryId {
    fn from_arg(text: &str) -> Result<Self> {
        MemoryId::parse(text)
    }
}
impl FromArg for MessageId {
    fn from_arg(text: &str) -> Result<Self> {
        MessageId::parse(text)
    }
}
impl FromArg for Digest {
    fn from_arg(text: &str) -> Result<Self> {
        Digest::parse(text)
    }
}
impl FromArg for SessionId {
    fn from_arg(text: &str) -> Result<Self> {
        SessionId::parse(text)
    }
}
impl FromArg for Persona {
    fn from_arg(text: &str) -> Result<Self> {
        Persona::parse(text)
    }
}
impl FromArg for AbsPath {
    fn from_arg(text: &str) -> Result<Self> {
        AbsPath::parse(text)
    }
}
impl FromArg for String {
    fn from_arg(text: &str) -> Result<Self> {
        Ok(text.to_owned())
    }
}
impl FromArg for u64 {
    fn from_arg(text: &str) -> Result<Self> {
        if !text.is_empty() && text.len() <= 19 && text.bytes().all(|b| b.is_ascii_digit()) && (text == "0" || !text.starts_with('0')) {
            if let Ok(v) = text.parse() {
                return Ok(v);
            }
        }
        Err(Error::usage(
            crate::codes::cli::INVALID_NUMBER,
            format!("expected a non-negative decimal integer, got {:?}", crate::ids::clip(text)),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FLAGS: &[Flag] = &[Flag::value("--pointer-id"), Flag::switch("--json"), Flag::repeated("--report", 2)];
    const TOOL: Tool = Tool { name: "t", code_name: "t", help: "help\n", commands: &[Command { name: "", flags: FLAGS }] };
    const SUB: Tool = Tool {
        name: "s",
        code_name: "s",
        help: "help\n",
        commands: &[Command { name: "record", flags: FLAGS }, Command { name: "status", flags: &[] }],
    };

    fn run(tool: &Tool, argv: &[&str]) -> Result<Parsed> {
        parse(tool, argv.iter().map(OsString::from))
    }

    fn code(tool: &Tool, argv: &[&str]) -> String {
        let err = run(tool, argv).unwrap_err();
        assert!(err.is_usage());
        err.code().to_owned()
    }

    #[test]
    fn parses_typed_values() {
        let Parsed::Run(args) = run(&TOOL, &["--pointer-id", "21813", "--json", "--report", "/a", "--report", "/b"]).unwrap() else {
            panic!()
        };
        assert_eq!(args.required::<MemoryId>("--pointer-id").unwrap().get(), 21813);
        assert!(args.has("--json"));
        assert_eq!(args.all::<AbsPath>("--report").unwrap().len(), 2);
        assert!(args.optional::<Digest>("--missing").unwrap().is_none());
    }

    #[test]
    fn rejects_bad_argv_with_codes() {
        assert_eq!(code(&TOOL, &["--nope"]), "unknown_flag");
        assert_eq!(code(&TOOL, &["--pointer-id=1"]), "unknown_flag");
        let eq = run(&TOOL, &["--pointer-id=1"]).unwrap_err();
        assert!(eq.message().contains("write `--pointer-id VALUE`"), "{}", eq.message());
        assert!(!run(&TOOL, &["--json=1"]).unwrap_err().message().contains("VALUE"));
        assert_eq!(code(&TOOL, &["junk"]), "unexpected_argument");
        assert_eq!(code(&TOOL, &["--pointer-id"]), "missing_value");
        assert_eq!(code(&TOOL, &["--json", "--json"]), "repeated_flag");
        assert_eq!(code(&TOOL, &["--report", "/a", "--report", "/b", "--report", "/c"]), "repeated_flag");
        assert_eq!(code(&SUB, &[]), "missing_subcommand");
        assert_eq!(code(&SUB, &["nope"]), "unknown_subcommand");
        assert_eq!(code(&SUB, &["status", "--json"]), "unknown_flag");
        let Parsed::Run(args) = run(&TOOL, &["--pointer-id", "01"]).unwrap() else { panic!() };
        let err = args.required::<MemoryId>("--pointer-id").unwrap_err();
        assert!(err.is_usage());
        assert_eq!(err.code(), "invalid_memory_id");
        let Parsed::Run(args) = run(&TOOL, &[]).unwrap() else { panic!() };
        assert_eq!(args.required::<MemoryId>("--pointer-id").unwrap_err().code(), "missing_flag");
    }

    #[test]
    fn two_word_subcommands() {
        const TWO: Tool = Tool {
            name: "w",
            code_name: "w",
            help: "help\n",
            commands: &[Command { name: "consent request", flags: FLAGS }, Command { name: "status", flags: &[] }],
        };
        let Parsed::Run(args) = run(&TWO, &["consent", "request", "--json"]).unwrap() else { panic!() };
        assert_eq!(args.subcommand, "consent request");
        assert!(args.has("--json"));
        assert_eq!(code(&TWO, &["consent"]), "unknown_subcommand");
        assert_eq!(code(&TWO, &["consent", "nope"]), "unknown_subcommand");
        assert_eq!(code(&TWO, &["request"]), "unknown_subcommand");
    }

    #[test]
    fn help_and_version_win() {
        assert!(matches!(run(&TOOL, &["--nope", "--help"]).unwrap(), Parsed::Help));
        assert!(matches!(run(&SUB, &["--version"]).unwrap(), Parsed::Version));
    }
}
