//! The one bounded child runner: a helper program the toolkit already trusts
//! (the pinned tmux, the installed `memory-latch`) run from a hook or an
//! adapter, and the host CLIs the doctor asks (`claude --help`, ...). A
//! deadline that is never waited past, output bounded per stream and never
//! read past its bound, and no thread: both pipes are non-blocking and read
//! in the wait loop (the hook binaries link no thread machinery). A child
//! that writes more than its bound and a pipe buffer blocks, and is killed at
//! the deadline.

use std::io::Read;
use std::os::fd::AsRawFd;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// How long the output may trail the child's exit (a grandchild holding the
/// pipe open) before it is cut.
pub const TRAIL: Duration = Duration::from_secs(2);

/// Pause between two polls of the child and its pipes.
const POLL: Duration = Duration::from_millis(2);

/// What a [`run`] child left.
#[derive(Debug)]
pub struct Output {
    /// `None`: still running at the deadline (or its state could not be
    /// read): it was killed with its process group and reaped.
    pub status: Option<ExitStatus>,
    /// At most the limit's bytes of stdout.
    pub stdout: Vec<u8>,
    /// At most the limit's bytes of stderr.
    pub stderr: Vec<u8>,
}

/// One pipe read without blocking, up to `limit` bytes; then it is left
/// unread (and open: the writer blocks rather than dying of SIGPIPE).
struct Drain<R> {
    pipe: Option<R>,
    kept: Vec<u8>,
    limit: usize,
}

impl<R: Read + AsRawFd> Drain<R> {
    fn new(pipe: Option<R>, limit: u64) -> Drain<R> {
        if let Some(p) = &pipe {
            set_nonblocking(p.as_raw_fd());
        }
        Drain { pipe, kept: Vec::new(), limit: usize::try_from(limit).unwrap_or(usize::MAX) }
    }

    /// Read what is there now, never past the limit (bounded: 64 reads of
    /// at most 4 KiB per call); at end of file or on an error the pipe is
    /// closed.
    fn read_available(&mut self) {
        let Some(p) = self.pipe.as_mut() else { return };
        let mut buf = [0u8; 4096];
        for _ in 0..64 {
            let room = self.limit.saturating_sub(self.kept.len()).min(buf.len());
            if room == 0 {
                return;
            }
            match p.read(&mut buf[..room]) {
                Ok(0) => {
                    self.pipe = None;
                    return;
                }
                Ok(n) => self.kept.extend_from_slice(&buf[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return,
                Err(_) => {
                    self.pipe = None;
                    return;
                }
            }
        }
    }

    /// More may still come and is wanted.
    fn open(&self) -> bool {
        self.pipe.is_some() && self.kept.len() < self.limit
    }
}

#[allow(unsafe_code)]
fn set_nonblocking(fd: i32) {
    // SAFETY: fcntl on a descriptor owned by the child's pipe handle.
    unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFL);
        if flags >= 0 {
            libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK);
        }
    }
}

#[allow(unsafe_code)]
fn kill_group(child: &mut Child) {
    // SAFETY: kill(2) on the process group this module created for the child.
    unsafe {
        libc::kill(-(child.id() as i32), libc::SIGKILL);
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// Run `cmd` (stdin on /dev/null, stdout and stderr piped, its own process
/// group) for at most `timeout`, reading at most `limit` bytes of each
/// stream. A child still running at the deadline is killed with its whole
/// group (no grandchild keeps running); after an exit the output is read
/// until end of file or [`TRAIL`]. Every loop is bounded by those two times.
/// An `Err` is a spawn failure only.
pub fn run(cmd: &mut Command, timeout: Duration, limit: u64) -> std::io::Result<Output> {
    run_with_input(cmd, None, timeout, limit)
}

/// [`run`] with `input` written to the child's stdin (then closed) from a
/// thread, so a child that does not read cannot block the caller.
pub fn run_with_input(cmd: &mut Command, input: Option<Vec<u8>>, timeout: Duration, limit: u64) -> std::io::Result<Output> {
    let stdin = if input.is_some() { Stdio::piped() } else { Stdio::null() };
    let mut child = cmd.process_group(0).stdin(stdin).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn()?;
    if let (Some(bytes), Some(mut pipe)) = (input, child.stdin.take()) {
        std::thread::spawn(move || {
            use std::io::Write;
            let _ = pipe.write_all(&bytes);
        });
    }
    let mut out = Drain::new(child.stdout.take(), limit);
    let mut err = Drain::new(child.stderr.take(), limit);
    let deadline = Instant::now() + timeout;
    let status = loop {
        out.read_available();
        err.read_available();
        match child.try_wait() {
            Ok(Some(s)) => break Some(s),
            Ok(None) if Instant::now() < deadline => std::thread::sleep(POLL),
            _ => {
                kill_group(&mut child);
                break None;
            }
        }
    };
    let trail = Instant::now() + TRAIL;
    loop {
        out.read_available();
        err.read_available();
        if !(out.open() || err.open()) || Instant::now() >= trail {
            break;
        }
        std::thread::sleep(POLL);
    }
    Ok(Output { status, stdout: out.kept, stderr: err.kept })
}

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

/// [`run`] for a helper whose stdout is its answer (stderr is dropped).
pub fn run_bounded(cmd: &mut Command, timeout: Duration, max_stdout: u64) -> std::io::Result<Ran> {
    let o = run(cmd, timeout, max_stdout)?;
    Ok(match o.status {
        Some(status) => Ran::Exited { status, stdout: String::from_utf8(o.stdout).unwrap_or_default() },
        None => Ran::TimedOut,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(script: &str) -> Command {
        let mut c = Command::new("/bin/sh");
        c.args(["-c", script]);
        c
    }

    #[test]
    fn output_is_read_while_it_runs_capped_per_stream_and_never_past_the_bound() {
        // 48 KiB on each stream: read while it runs (the two together exceed
        // one pipe buffer, so a reader of one stream only would deadlock).
        let o = run(&mut sh("head -c 49152 /dev/zero; head -c 49152 /dev/zero >&2; exit 3"), Duration::from_secs(60), 65536).unwrap();
        assert_eq!(o.status.and_then(|s| s.code()), Some(3));
        assert_eq!((o.stdout.len(), o.stderr.len()), (49152, 49152));
        let o = run(&mut sh("head -c 2000 /dev/zero; head -c 2000 /dev/zero >&2"), Duration::from_secs(60), 1000).unwrap();
        assert_eq!((o.stdout.len(), o.stderr.len()), (1000, 1000));
        // Far more than the bound and a pipe buffer: never read, the writer
        // blocks and is killed at the deadline.
        let o = run(&mut sh("head -c 4000000 /dev/zero"), Duration::from_millis(300), 1000).unwrap();
        assert!(o.status.is_none(), "blocked, then killed");
        assert_eq!(o.stdout.len(), 1000);
        let o = run(&mut sh("echo out; echo err >&2"), Duration::from_secs(60), 1000).unwrap();
        assert_eq!((o.stdout.as_slice(), o.stderr.as_slice()), (&b"out\n"[..], &b"err\n"[..]));
        assert!(o.status.unwrap().success());
    }

    #[test]
    fn a_child_past_its_deadline_is_killed_with_its_group() {
        let dir = tempfile::tempdir().unwrap();
        let mark = dir.path().join("grandchild-ran");
        // The grandchild would write the mark after 1 s: killed with the group.
        let script = format!("(sleep 1; touch {}) & echo started; sleep 30", mark.display());
        let o = run(&mut sh(&script), Duration::from_millis(300), 1000).unwrap();
        assert!(o.status.is_none(), "timed out");
        assert_eq!(o.stdout, b"started\n");
        std::thread::sleep(Duration::from_secs(3));
        assert!(!mark.exists(), "the grandchild died with the group");
    }

    #[test]
    #[allow(unsafe_code)]
    fn a_grandchild_holding_the_pipe_does_not_hold_the_caller() {
        // The child exits at once; its background grandchild keeps stdout
        // open for 30 s. The caller reads for at most TRAIL after the exit,
        // so it returns while the grandchild still runs.
        let dir = tempfile::tempdir().unwrap();
        let pidfile = dir.path().join("pid");
        let script = format!("sleep 30 & echo $! > {}; echo parent", pidfile.display());
        let o = run(&mut sh(&script), Duration::from_secs(60), 1000).unwrap();
        assert!(o.status.unwrap().success());
        assert_eq!(o.stdout, b"parent\n");
        let pid: i32 = std::fs::read_to_string(&pidfile).unwrap().trim().parse().unwrap();
        // SAFETY: signal 0 only checks that the process exists.
        let alive = unsafe { libc::kill(pid, 0) } == 0;
        // SAFETY: end the grandchild this test started.
        unsafe { libc::kill(pid, libc::SIGKILL) };
        assert!(alive, "returned before the grandchild closed the pipe");
    }

    #[test]
    fn run_bounded_answers_stdout_or_timed_out_and_a_spawn_failure_is_an_error() {
        match run_bounded(&mut sh("printf 'a\\nb'; echo noise >&2"), Duration::from_secs(60), 64).unwrap() {
            Ran::Exited { status, stdout } => assert_eq!((status.success(), stdout.as_str()), (true, "a\nb")),
            Ran::TimedOut => panic!("it exited"),
        }
        match run_bounded(&mut sh("printf '\\377'"), Duration::from_secs(60), 64).unwrap() {
            Ran::Exited { stdout, .. } => assert_eq!(stdout, "", "not UTF-8 reads as empty"),
            Ran::TimedOut => panic!("it exited"),
        }
        assert!(matches!(run_bounded(&mut sh("sleep 30"), Duration::from_millis(100), 64).unwrap(), Ran::TimedOut));
        assert!(run_bounded(&mut Command::new("/nonexistent/kijito-no-such-program"), Duration::from_secs(1), 64).is_err());
    }
}
