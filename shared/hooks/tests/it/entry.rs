//! The hook binaries enter through `kijito_hooks::hook_main!` (no std
//! start-up): what they relied on from std's start-up still holds.

use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Command, Stdio};

const HOOKS: [&str; 3] = [env!("CARGO_BIN_EXE_precompact"), env!("CARGO_BIN_EXE_postcompact"), env!("CARGO_BIN_EXE_session-hook")];

fn hook(exe: &str) -> Command {
    let mut c = Command::new(exe);
    c.args(["--host", "codex"]);
    if exe.ends_with("session-hook") {
        c.args(["--expect", "SessionStart"]);
    }
    c.env_clear().env("HOME", "/nonexistent").arg("--data-dir").arg(std::env::temp_dir().join("kijito-entry-test-absent"));
    c
}

/// A hook started with stdin, stdout or stderr closed gets `/dev/null` there:
/// the answer goes nowhere instead of into the first file the hook opens, and
/// the hook still exits 0.
#[test]
fn closed_standard_descriptors_are_reopened_on_dev_null() {
    for exe in HOOKS {
        for fd in 0..3 {
            let mut c = hook(exe);
            c.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
            // SAFETY: close() is async-signal-safe; run in the child before exec.
            unsafe {
                c.pre_exec(move || {
                    libc::close(fd);
                    Ok(())
                })
            };
            let out = c.output().unwrap_or_else(|e| panic!("{exe}: {e}"));
            assert_eq!(out.status.code(), Some(0), "{exe} with fd {fd} closed: {out:?}");
            if fd == 0 && !exe.ends_with("session-hook") {
                // An empty stdin (the reopened /dev/null): the fail-soft answer with its code.
                assert!(String::from_utf8_lossy(&out.stdout).contains("hook_stdin_empty"), "{exe}: {out:?}");
            }
        }
    }
}

/// A host that stops reading (stdout a pipe with no reader) never kills the
/// hook with SIGPIPE: it exits 0 as under std's start-up.
#[test]
fn a_closed_stdout_pipe_is_not_a_kill() {
    for exe in HOOKS {
        let mut fds = [0; 2];
        // SAFETY: `fds` holds two ints for pipe() to fill.
        assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
        // SAFETY: pipe() returned two fresh descriptors we own.
        let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        drop(read);
        let status = hook(exe).stdin(Stdio::null()).stdout(Stdio::from(write)).stderr(Stdio::null()).status().unwrap();
        assert_eq!(status.signal(), None, "{exe} was killed: {status:?}");
        assert_eq!(status.code(), Some(0), "{exe}: {status:?}");
    }
}
