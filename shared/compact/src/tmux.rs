//! The tmux calls of the adapter, behind a trait (unit tests use a fake).
//!
//! The real implementation runs `tmux -S <socket> ...` with an argv (never a
//! shell), each call bounded in time. The only calls that change anything
//! are the two of [`Tmux::send_literal`] and [`Tmux::send_enter`]:
//! `tmux -S SOCK send-keys -t PANE -l /compact` and, as a separate call,
//! `tmux -S SOCK send-keys -t PANE Enter`. The executable is the one the
//! SessionStart hook resolved on its PATH and recorded in the pin
//! ([`resolve_on_path`], [`program_is_safe`]), not whatever `tmux` the
//! worker's own PATH names (a login shell may reset PATH).

use crate::codes;
use crate::trigger::{is_pane_id, is_tmux_program, Via};
use kijito_files::child::{self, Ran};
use kijito_protocol::error::{Error, Result};
use kijito_protocol::ids::AbsPath;
use std::process::Command;
use std::time::Duration;

/// The literal text the adapter types, and nothing else.
pub const COMPACT_TEXT: &str = "/compact";

/// What the adapter asks of a tmux server.
pub trait Tmux {
    /// `#{pane_pid}` of the pane, `None` when the pane (or the server) is gone.
    fn pane_pid(&self, socket: &AbsPath, pane: &str) -> Result<Option<u32>>;
    /// `#{client_activity}` (whole seconds since the epoch: the last key,
    /// mouse event or attach) of every client attached to a session that
    /// holds the pane, or whose last session (`#{client_last_session}`)
    /// does: the keystroke rule's input (docs/adapters.md). Empty: no such
    /// client.
    fn client_activity(&self, socket: &AbsPath, pane: &str) -> Result<Vec<i64>>;
    /// `send-keys -t PANE -l TEXT`.
    fn send_literal(&self, socket: &AbsPath, pane: &str, text: &str) -> Result<()>;
    /// `send-keys -t PANE Enter`.
    fn send_enter(&self, socket: &AbsPath, pane: &str) -> Result<()>;
}

/// The real tmux: `tmux` found through PATH, or (pins with a recorded
/// executable) that absolute path, checked with [`program_is_safe`] before
/// every call.
#[derive(Debug, Clone)]
pub struct RealTmux {
    pub program: String,
    /// Run `program` only while [`program_is_safe`] holds for it.
    pub check_program: bool,
    /// Bound of one tmux call.
    pub timeout: Duration,
}

impl Default for RealTmux {
    fn default() -> Self {
        RealTmux { program: "tmux".into(), check_program: false, timeout: Duration::from_secs(5) }
    }
}

impl RealTmux {
    /// The tmux of a pin: the executable recorded by the hook, else `tmux`
    /// on PATH (pins written before it was recorded).
    pub fn for_via(via: &Via) -> RealTmux {
        match via {
            Via::Tmux { tmux: Some(p), .. } => RealTmux::at(p),
            _ => RealTmux::default(),
        }
    }

    /// The executable at `program` (absolute), checked before every call.
    pub fn at(program: &AbsPath) -> RealTmux {
        RealTmux { program: program.as_str().to_owned(), check_program: true, ..RealTmux::default() }
    }
}

/// How many PATH entries are looked at, at most.
pub const MAX_PATH_ENTRIES: usize = 256;

/// Whether `path` may be run as tmux by the adapter: an absolute path whose
/// file name is `tmux`; the file it resolves to is a regular file with an
/// execute bit, owned by root or by this user, not writable by group or
/// others, in a directory with the same properties. A tmux another user
/// could replace is refused rather than run with this user's rights.
pub fn program_is_safe(path: &std::path::Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    let Some(p) = path.to_str() else { return false };
    if !is_tmux_program(p) {
        return false;
    }
    let Ok(real) = std::fs::canonicalize(path) else { return false };
    let me = kijito_files::private::current_uid();
    let owned_ok = |m: &std::fs::Metadata| (m.uid() == 0 || m.uid() == me) && m.mode() & 0o022 == 0;
    let (Ok(file), Some(dir)) = (std::fs::metadata(&real), real.parent()) else { return false };
    let Ok(dir_meta) = std::fs::metadata(dir) else { return false };
    file.is_file() && file.mode() & 0o111 != 0 && owned_ok(&file) && dir_meta.is_dir() && owned_ok(&dir_meta)
}

/// The tmux executable a shell with this PATH would run: the first absolute
/// PATH entry holding a file named `tmux` (relative and empty entries, which
/// name the working directory, are skipped). `None` when there is none, or
/// when that first one is not [`program_is_safe`] (it is not skipped for a
/// later one: that would not be the tmux the host's environment runs).
pub fn resolve_on_path(path_var: &str) -> Option<AbsPath> {
    for dir in path_var.split(':').take(MAX_PATH_ENTRIES) {
        if !dir.starts_with('/') {
            continue;
        }
        let candidate = std::path::Path::new(dir).join("tmux");
        if std::fs::metadata(&candidate).is_err() {
            continue;
        }
        return if program_is_safe(&candidate) { candidate.to_str().and_then(|p| AbsPath::parse(p).ok()) } else { None };
    }
    None
}

/// Most bytes read from one tmux call.
pub const MAX_OUTPUT: u64 = 4096;

/// The `list-clients -F` format of [`Tmux::client_activity`]: per client
/// `#{client_activity}` when its session, or its last session, holds `pane`
/// (tmux's nested window/pane loops), else `-`. `pane` must be a pane id
/// (`%N`, checked by the caller): it is the only text put into the format.
pub fn client_activity_format(pane: &str) -> String {
    let holds = format!("#{{W:#{{P:#{{?#{{==:#{{pane_id}},{pane}}},Y,}}}}}}");
    format!("#{{?{holds}#{{S:#{{?#{{==:#{{session_name}},#{{client_last_session}}}},{holds},}}}},#{{client_activity}},-}}")
}

/// The lines of that format: digits (a relevant client's activity) or `-`.
/// Anything else, or output that may have been cut at [`MAX_OUTPUT`], is
/// refused (`tmux_unavailable`): a client that cannot be read counts.
pub fn parse_client_activity(stdout: &str) -> Result<Vec<i64>> {
    let bad = || Error::new(codes::TMUX_UNAVAILABLE, "unexpected tmux list-clients output");
    if stdout.len() as u64 >= MAX_OUTPUT {
        return Err(bad());
    }
    let mut out = Vec::new();
    for line in stdout.lines() {
        match line {
            "-" => {}
            l if !l.is_empty() && l.len() <= 18 && l.bytes().all(|b| b.is_ascii_digit()) => out.push(l.parse::<i64>().map_err(|_| bad())?),
            _ => return Err(bad()),
        }
    }
    Ok(out)
}

/// Output of one bounded call: exit success and stdout (at most 4 KiB).
struct Out {
    ok: bool,
    stdout: String,
}

impl RealTmux {
    fn run(&self, args: &[&str]) -> Result<Out> {
        if self.check_program && !program_is_safe(std::path::Path::new(&self.program)) {
            return Err(Error::new(
                codes::TMUX_UNAVAILABLE,
                format!("refusing to run {}: not a tmux executable only root or this user can change", self.program),
            ));
        }
        match child::run_bounded(Command::new(&self.program).args(args), self.timeout, MAX_OUTPUT)
            .map_err(|e| Error::new(codes::TMUX_UNAVAILABLE, format!("cannot run tmux: {e}")))?
        {
            Ran::Exited { status, stdout } => Ok(Out { ok: status.success(), stdout }),
            Ran::TimedOut => Err(Error::new(codes::TMUX_UNAVAILABLE, "a tmux call did not finish in time")),
        }
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

    fn client_activity(&self, socket: &AbsPath, pane: &str) -> Result<Vec<i64>> {
        if !is_pane_id(pane) {
            return Err(Error::new(codes::TMUX_ENV_INVALID, "not a pane id"));
        }
        let out = self.run(&["-S", socket.as_str(), "list-clients", "-F", &client_activity_format(pane)])?;
        // No server (or no client ever): `list-clients` fails; the pane
        // check right before tells a gone server apart.
        if !out.ok {
            return Err(Error::new(codes::TMUX_UNAVAILABLE, "tmux list-clients failed"));
        }
        parse_client_activity(&out.stdout)
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
