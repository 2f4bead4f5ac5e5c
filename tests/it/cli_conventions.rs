//! Every binary follows the shared conventions: `--help` and `--version`
//! exit 0; unknown flags, repeated flags, missing values and positional junk
//! are usage errors (exit 2, `kijito_<tool>_failed:<code>` on stderr) except
//! for the hooks, which report the same line but exit 0 because a hook must
//! never fail its host.
#![allow(clippy::unwrap_used)]

use crate::support;

use std::process::{Command, Stdio};

struct Bin {
    /// `None`: a binary of another package (found by [`support::bin`]).
    path: Option<&'static str>,
    name: &'static str,
    code_name: &'static str,
    /// argv prefix that selects a command taking `--data-dir`-style flags.
    prefix: &'static [&'static str],
    /// a flag of that command that takes a value
    value_flag: &'static str,
    hook: bool,
}

const BINS: &[Bin] = &[
    Bin {
        path: Some(env!("CARGO_BIN_EXE_pointer-digest")),
        name: "pointer-digest",
        code_name: "pointer_digest",
        prefix: &[],
        value_flag: "--pointer-id",
        hook: false,
    },
    Bin {
        path: Some(env!("CARGO_BIN_EXE_pointer-publish")),
        name: "pointer-publish",
        code_name: "pointer_publish",
        prefix: &[],
        value_flag: "--pointer-id",
        hook: false,
    },
    Bin {
        path: Some(env!("CARGO_BIN_EXE_pointer-snapshot")),
        name: "pointer-snapshot",
        code_name: "pointer_snapshot",
        prefix: &[],
        value_flag: "--pointer-id",
        hook: false,
    },
    Bin {
        path: Some(env!("CARGO_BIN_EXE_qa-gate")),
        name: "qa-gate",
        code_name: "qa_gate",
        prefix: &["invalidate"],
        value_flag: "--session-id",
        hook: false,
    },
    Bin { path: None, name: "precompact", code_name: "precompact", prefix: &[], value_flag: "--host", hook: true },
    Bin { path: None, name: "postcompact", code_name: "postcompact", prefix: &[], value_flag: "--host", hook: true },
    Bin { path: None, name: "session-hook", code_name: "session_hook", prefix: &[], value_flag: "--host", hook: true },
    Bin { path: None, name: "kijito-context", code_name: "context", prefix: &[], value_flag: "--session-id", hook: false },
    Bin {
        path: Some(env!("CARGO_BIN_EXE_kijito-local")),
        name: "kijito-local",
        code_name: "local",
        prefix: &["serve"],
        value_flag: "--db",
        hook: false,
    },
    Bin {
        path: Some(env!("CARGO_BIN_EXE_memory-latch")),
        name: "memory-latch",
        code_name: "memory_latch",
        prefix: &["status"],
        value_flag: "--workspace",
        hook: false,
    },
    Bin {
        path: Some(env!("CARGO_BIN_EXE_wake-check")),
        name: "wake-check",
        code_name: "wake_check",
        prefix: &[],
        value_flag: "--workspace",
        hook: false,
    },
    Bin {
        path: Some(env!("CARGO_BIN_EXE_kijito-compact")),
        name: "kijito-compact",
        code_name: "compact",
        prefix: &["status"],
        value_flag: "--session-id",
        hook: false,
    },
    Bin {
        path: Some(env!("CARGO_BIN_EXE_kijito-setup")),
        name: "kijito-setup",
        code_name: "setup",
        prefix: &[],
        value_flag: "--pointer-id",
        hook: false,
    },
    Bin {
        path: Some(env!("CARGO_BIN_EXE_kijito-doctor")),
        name: "kijito-doctor",
        code_name: "doctor",
        prefix: &[],
        value_flag: "--root",
        hook: false,
    },
    Bin {
        path: Some(env!("CARGO_BIN_EXE_kijito-report")),
        name: "kijito-report",
        code_name: "report",
        prefix: &["verify"],
        value_flag: "--session",
        hook: false,
    },
];

fn run(bin: &Bin, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(bin.path.map(str::to_owned).unwrap_or_else(|| support::bin(bin.name)))
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn help_and_version_exit_zero() {
    for bin in BINS {
        let (status, out, _) = run(bin, &["--help"]);
        assert_eq!(status, 0, "{} --help", bin.name);
        assert!(out.contains(bin.name), "{} --help names the tool: {out}", bin.name);
        let (status, out, _) = run(bin, &["--version"]);
        assert_eq!(status, 0, "{} --version", bin.name);
        assert_eq!(out, format!("{} {}\n", bin.name, env!("CARGO_PKG_VERSION")), "{} --version", bin.name);
    }
}

#[test]
fn bad_argv_is_a_usage_error_with_a_code() {
    for bin in BINS {
        let with = |extra: &[&str]| -> Vec<String> { bin.prefix.iter().chain(extra).map(|s| s.to_string()).collect() };
        let cases: Vec<(Vec<String>, &str)> = vec![
            (with(&["--no-such-flag"]), "unknown_flag"),
            (with(&["stray"]), "unexpected_argument"),
            (with(&[bin.value_flag]), "missing_value"),
            (with(&[bin.value_flag, "1", bin.value_flag, "1"]), "repeated_flag"),
        ];
        for (argv, code) in cases {
            let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
            let (status, _, err) = run(bin, &argv);
            let expected_status = if bin.hook { 0 } else { 2 };
            assert_eq!(status, expected_status, "{} {argv:?}: {err}", bin.name);
            assert_eq!(err.lines().next().unwrap_or(""), format!("kijito_{}_failed:{code}", bin.code_name), "{} {argv:?}", bin.name);
        }
    }
}
