//! Running a helper program the toolkit already trusts (the pinned tmux,
//! the installed `memory-latch`) from a hook or an adapter: a deadline that
//! is never waited past and a bounded stdout.

use std::io::Read;
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// How a [`run_bounded`] child ended.
#[derive(Debug)]
pub enum Ran {
    /// It exited; at most the bound's bytes of its stdout (a stdout that is
    /// not UTF-8 reads as empty).
    Exited { status: ExitStatus, stdout: String },
    /// Still running at the deadline, or its state could not be read: it was
    /// killed and reaped.
    TimedOut,
}

/// Spawn `cmd` with stdin and stderr on /dev/null and stdout piped; poll
/// every 2 ms (bounded: at most `timeout` / 2 ms polls) until it exits or
/// `timeout` passes. Stdout is read after the exit, at most `max_stdout`
/// bytes: callers keep the bound below the pipe buffer (64 KiB), so a child
/// never blocks on a full pipe. An `Err` is a spawn failure only.
pub fn run_bounded(cmd: &mut Command, timeout: Duration, max_stdout: u64) -> std::io::Result<Ran> {
    let mut child = cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::null()).spawn()?;
    let deadline = Instant::now() + timeout;
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break s,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(2)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return Ok(Ran::TimedOut);
            }
        }
    };
    let mut stdout = String::new();
    if let Some(out) = child.stdout.take() {
        let _ = out.take(max_stdout).read_to_string(&mut stdout);
    }
    Ok(Ran::Exited { status, stdout })
}
