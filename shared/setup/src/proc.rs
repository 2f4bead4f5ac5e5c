//! Running a child process with a bounded time and bounded output, and
//! finding a program on `PATH`.

use kijito_protocol::error::{Error, Result};
use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// What a finished (or killed) child left.
#[derive(Debug, Clone)]
pub struct Output {
    /// Exit code; None when killed by a signal or by the timeout.
    pub status: Option<i32>,
    pub timed_out: bool,
    pub stdout: String,
    pub stderr: String,
}

impl Output {
    pub fn success(&self) -> bool {
        self.status == Some(0) && !self.timed_out
    }

    /// The last `n` characters of stderr and stdout, on one line.
    pub fn tail(&self, n: usize) -> String {
        let text = format!("{} {}", self.stderr.trim(), self.stdout.trim());
        let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
        let count = text.chars().count();
        if count <= n {
            text
        } else {
            format!("...{}", text.chars().skip(count - n).collect::<String>())
        }
    }
}

fn drain(pipe: Option<impl Read + Send + 'static>, limit: u64) -> std::sync::mpsc::Receiver<Vec<u8>> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut buf = Vec::new();
        if let Some(p) = pipe {
            let mut limited = p.take(limit);
            let _ = limited.read_to_end(&mut buf);
            let _ = tx.send(buf);
            // keep reading (and dropping) so the child never blocks on a full pipe
            let mut rest = limited.into_inner();
            let _ = std::io::copy(&mut rest, &mut std::io::sink());
        } else {
            let _ = tx.send(buf);
        }
    });
    rx
}

/// How long the output may trail the child's exit (a grandchild holding the pipe).
const TRAIL: Duration = Duration::from_secs(2);

/// Run `cmd` (stdin closed) for at most `timeout`, keeping at most `limit`
/// bytes of each stream. The child gets its own process group; a child still
/// running at the deadline is killed with its whole group (so no grandchild
/// keeps the pipes open).
pub fn run(cmd: Command, timeout: Duration, limit: u64) -> Result<Output> {
    run_inner(cmd, None, timeout, limit)
}

/// As [`run`], with `input` written to the child's stdin (then closed) from
/// a thread, so a child that does not read cannot block the caller.
pub fn run_with_input(cmd: Command, input: Vec<u8>, timeout: Duration, limit: u64) -> Result<Output> {
    run_inner(cmd, Some(input), timeout, limit)
}

fn run_inner(mut cmd: Command, input: Option<Vec<u8>>, timeout: Duration, limit: u64) -> Result<Output> {
    let mut child = cmd
        .process_group(0)
        .stdin(if input.is_some() { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| Error::new(crate::codes::SPAWN_FAILED, format!("cannot run {:?}: {e}", cmd.get_program())))?;
    if let (Some(bytes), Some(mut stdin)) = (input, child.stdin.take()) {
        std::thread::spawn(move || {
            use std::io::Write;
            let _ = stdin.write_all(&bytes);
        });
    }
    let out = drain(child.stdout.take(), limit);
    let err = drain(child.stderr.take(), limit);
    let deadline = Instant::now() + timeout;
    let mut status = None;
    let mut timed_out = false;
    // bounded: at most timeout / 5 ms iterations
    while Instant::now() < deadline {
        match child.try_wait() {
            Ok(Some(s)) => {
                status = Some(s.code());
                break;
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(5)),
            Err(e) => return Err(Error::new(crate::codes::SPAWN_FAILED, format!("waiting for {:?}: {e}", cmd.get_program()))),
        }
    }
    if status.is_none() {
        timed_out = true;
        // SAFETY: kill(2) on the process group this function created for the child.
        unsafe {
            libc::kill(-(child.id() as i32), libc::SIGKILL);
        }
        let _ = child.kill();
        let _ = child.wait();
    }
    let stdout = String::from_utf8_lossy(&out.recv_timeout(TRAIL).unwrap_or_default()).into_owned();
    let stderr = String::from_utf8_lossy(&err.recv_timeout(TRAIL).unwrap_or_default()).into_owned();
    Ok(Output { status: status.flatten(), timed_out, stdout, stderr })
}

/// Whether `path` is a regular file with an execute bit.
pub fn is_executable(path: &Path) -> bool {
    std::fs::metadata(path).map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0).unwrap_or(false)
}

/// The first executable `name` in `path_var` (a `PATH` value); only
/// absolute `PATH` entries count.
pub fn which_in(name: &str, path_var: Option<&str>) -> Option<PathBuf> {
    path_var?
        .split(':')
        .filter(|d| d.starts_with('/'))
        .map(|d| Path::new(d).join(name))
        .find(|p| is_executable(p))
}

/// `which_in` on the real `PATH`.
pub fn which(name: &str) -> Option<PathBuf> {
    which_in(name, std::env::var("PATH").ok().as_deref())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounded_run_kills_on_timeout_and_caps_output() {
        let mut c = Command::new("/bin/sh");
        c.args(["-c", "yes | head -c 100000; sleep 5"]);
        let start = Instant::now();
        let o = run(c, Duration::from_millis(300), 1000).unwrap();
        assert!(o.timed_out);
        assert!(start.elapsed() < Duration::from_secs(4));
        assert_eq!(o.stdout.len(), 1000);
        let mut c = Command::new("/bin/sh");
        c.args(["-c", "echo out; echo err >&2; exit 3"]);
        let o = run(c, Duration::from_secs(10), 1000).unwrap();
        assert_eq!((o.status, o.stdout.as_str(), o.stderr.as_str()), (Some(3), "out\n", "err\n"));
        assert_eq!(o.tail(100), "err out");
    }

    #[test]
    fn which_finds_only_absolute_executables() {
        assert!(which_in("sh", Some("relative:/bin:/usr/bin")).is_some());
        assert!(which_in("sh", Some("relative")).is_none());
        assert!(which_in("definitely-not-a-program-kijito", Some("/bin:/usr/bin")).is_none());
        assert!(which_in("sh", None).is_none());
    }
}
