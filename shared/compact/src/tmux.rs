//! The tmux calls of the adapter, behind a trait (unit tests use a fake).
//!
//! The real implementation runs `tmux -S <socket> ...` with an argv (never a
//! shell), each call bounded in time. The only calls that change anything
//! are the two of [`Tmux::send_literal`] and [`Tmux::send_enter`]:
//! `tmux -S SOCK send-keys -t PANE -l /compact` and, as a separate call,
//! `tmux -S SOCK send-keys -t PANE Enter`.

use crate::codes;
use kijito_protocol::error::{Error, Result};
use kijito_protocol::ids::AbsPath;
use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The literal text the adapter types, and nothing else.
pub const COMPACT_TEXT: &str = "/compact";

/// What the adapter asks of a tmux server.
pub trait Tmux {
    /// `#{pane_pid}` of the pane, `None` when the pane (or the server) is gone.
    fn pane_pid(&self, socket: &AbsPath, pane: &str) -> Result<Option<u32>>;
    /// `send-keys -t PANE -l TEXT`.
    fn send_literal(&self, socket: &AbsPath, pane: &str, text: &str) -> Result<()>;
    /// `send-keys -t PANE Enter`.
    fn send_enter(&self, socket: &AbsPath, pane: &str) -> Result<()>;
}

/// `tmux` found through PATH.
#[derive(Debug, Clone)]
pub struct RealTmux {
    pub program: String,
    /// Bound of one tmux call.
    pub timeout: Duration,
}

impl Default for RealTmux {
    fn default() -> Self {
        RealTmux { program: "tmux".into(), timeout: Duration::from_secs(5) }
    }
}

/// Output of one bounded call: exit success and stdout (at most 4 KiB).
struct Out {
    ok: bool,
    stdout: String,
}

impl RealTmux {
    fn run(&self, args: &[&str]) -> Result<Out> {
        let mut child = Command::new(&self.program)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| Error::new(codes::TMUX_UNAVAILABLE, format!("cannot run tmux: {e}")))?;
        let deadline = Instant::now() + self.timeout;
        let status = loop {
            match child.try_wait() {
                Ok(Some(s)) => break s,
                Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(2)),
                _ => {
                    let _ = child.kill();
                    let _ = child.wait();
                    return Err(Error::new(codes::TMUX_UNAVAILABLE, "a tmux call did not finish in time"));
                }
            }
        };
        let mut stdout = String::new();
        if let Some(out) = child.stdout.take() {
            let _ = out.take(4096).read_to_string(&mut stdout);
        }
        Ok(Out { ok: status.success(), stdout })
    }
}

impl Tmux for RealTmux {
    fn pane_pid(&self, socket: &AbsPath, pane: &str) -> Result<Option<u32>> {
        let out = self.run(&["-S", socket.as_str(), "display-message", "-p", "-t", pane, "#{pane_pid}"])?;
        if !out.ok {
            return Ok(None);
        }
        Ok(out.stdout.trim().parse::<u32>().ok().filter(|p| *p > 1))
    }

    fn send_literal(&self, socket: &AbsPath, pane: &str, text: &str) -> Result<()> {
        let out = self.run(&["-S", socket.as_str(), "send-keys", "-t", pane, "-l", text])?;
        out.ok.then_some(()).ok_or_else(|| Error::new(codes::SEND_FAILED, "tmux send-keys -l failed"))
    }

    fn send_enter(&self, socket: &AbsPath, pane: &str) -> Result<()> {
        let out = self.run(&["-S", socket.as_str(), "send-keys", "-t", pane, "Enter"])?;
        out.ok.then_some(()).ok_or_else(|| Error::new(codes::SEND_FAILED, "tmux send-keys Enter failed"))
    }
}
