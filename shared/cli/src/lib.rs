//! kijito-cli: the process side of every binary, the only I/O of argument
//! handling. The grammar itself is pure and lives in
//! [`kijito_protocol::argv`]; this crate reads the process's argv, prints
//! help, version and results on stdout, prints failures in the toolkit's
//! format on stderr and turns a result into an exit
//! status.

#![forbid(unsafe_code)]

use kijito_protocol::argv::{parse, Args, Parsed, Tool};
use kijito_protocol::command::HelperDir;
use kijito_protocol::{codes, Error, Result};
use std::ffi::OsString;
use std::io::Write;

/// Print a failure in the toolkit's format: `kijito_<tool>_failed:<code>` on
/// the first stderr line, then the human message, then (if any) the JSON
/// detail on its own line.
pub fn report_failure(tool: &Tool, err: &Error) {
    let mut stderr = std::io::stderr().lock();
    let _ = writeln!(stderr, "kijito_{}_failed:{}", tool.code_name, err.code());
    if let Some(detail) = err.detail() {
        let _ = writeln!(stderr, "{detail}");
    }
    let _ = writeln!(stderr, "{}", err.message());
}

/// Write stdout text; a closed pipe is not an error worth reporting.
pub fn print_stdout(text: &str) -> Result<()> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|_| out.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        Err(e) => Err(Error::new(codes::cli::STDOUT_WRITE_FAILED, e.to_string())),
    }
}

/// Argument parsing for a hook binary, which must never fail its host:
/// `--help`/`--version` print and exit 0 here; any other problem comes back
/// as an error for the hook to report on stderr before its fail-soft answer.
pub fn hook_args(tool: &Tool) -> Result<Args> {
    match parse(tool, std::env::args_os().skip(1))? {
        Parsed::Run(args) => Ok(args),
        Parsed::Help => {
            let _ = print_stdout(tool.help);
            std::process::exit(0)
        }
        Parsed::Version => {
            let _ = print_stdout(&format!("{} {}\n", tool.name, env!("CARGO_PKG_VERSION")));
            std::process::exit(0)
        }
    }
}

/// The whole `main` of a binary: parse argv, handle help/version, run, print
/// failures, and return the exit status. `run` returns the exit status of a
/// successful run (normally 0).
pub fn main(tool: &Tool, run: impl FnOnce(Args) -> Result<i32>) -> i32 {
    main_args(tool, std::env::args_os().skip(1), run)
}

/// [`main`] on given arguments (without the program name): for a binary
/// that looks at its argv first (`qa-gate check-command`).
pub fn main_args(tool: &Tool, argv: impl IntoIterator<Item = OsString>, run: impl FnOnce(Args) -> Result<i32>) -> i32 {
    match parse(tool, argv) {
        Ok(Parsed::Help) => {
            let _ = print_stdout(tool.help);
            0
        }
        Ok(Parsed::Version) => {
            let _ = print_stdout(&format!("{} {}\n", tool.name, env!("CARGO_PKG_VERSION")));
            0
        }
        Ok(Parsed::Run(args)) => match run(args) {
            Ok(status) => status,
            Err(err) => {
                report_failure(tool, &err);
                err.exit_status()
            }
        },
        Err(err) => {
            report_failure(tool, &err);
            2
        }
    }
}

/// Where this installed plugin root keeps its executables: the directory of
/// the running executable, canonicalised (`<root>/bin`, or `target/debug` in
/// tests).
pub fn helper_dir() -> Result<HelperDir> {
    let exe = std::env::current_exe()
        .and_then(|p| p.canonicalize())
        .map_err(|e| Error::new(codes::command::ROOT_UNKNOWN, format!("cannot locate the running executable: {e}")))?;
    let dir = exe.parent().ok_or_else(|| Error::new(codes::command::ROOT_UNKNOWN, "the running executable has no directory"))?;
    HelperDir::new(dir)
}
