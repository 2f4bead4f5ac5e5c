//! The doctor's bounded runs of the host CLIs (the one runner is
//! [`kijito_files::child::run`]) and finding a program on `PATH`.

use kijito_files::child;
use kijito_protocol::error::{Error, Result};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

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

/// Run `cmd` (stdin closed) for at most `timeout`, keeping at most `limit`
/// bytes of each stream: [`kijito_files::child::run`] (its own process group,
/// killed with it at the deadline), the output as text.
pub fn run(cmd: Command, timeout: Duration, limit: u64) -> Result<Output> {
    run_inner(cmd, None, timeout, limit)
}

/// As [`run`], with `input` written to the child's stdin (then closed).
pub fn run_with_input(cmd: Command, input: Vec<u8>, timeout: Duration, limit: u64) -> Result<Output> {
    run_inner(cmd, Some(input), timeout, limit)
}

fn run_inner(mut cmd: Command, input: Option<Vec<u8>>, timeout: Duration, limit: u64) -> Result<Output> {
    let o = child::run_with_input(&mut cmd, input, timeout, limit)
        .map_err(|e| Error::new(crate::codes::SPAWN_FAILED, format!("cannot run {:?}: {e}", cmd.get_program())))?;
    Ok(Output {
        status: o.status.and_then(|s| s.code()),
        timed_out: o.status.is_none(),
        stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
    })
}

/// Whether `path` is a regular file with an execute bit.
pub fn is_executable(path: &Path) -> bool {
    std::fs::metadata(path).map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0).unwrap_or(false)
}

/// The first executable `name` in `path_var` (a `PATH` value); only
/// absolute `PATH` entries count.
pub fn which_in(name: &str, path_var: Option<&str>) -> Option<PathBuf> {
    path_var?.split(':').filter(|d| d.starts_with('/')).map(|d| Path::new(d).join(name)).find(|p| is_executable(p))
}

/// `which_in` on the real `PATH`.
pub fn which(name: &str) -> Option<PathBuf> {
    which_in(name, std::env::var("PATH").ok().as_deref())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

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
