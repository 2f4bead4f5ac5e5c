//! Pin discovery for the SessionStart hook (docs/adapters.md).
//!
//! - The Codex app-server adapter exports `KIJITO_COMPACT_ADAPTER_ID` (32
//!   lowercase hex) and `KIJITO_COMPACT_SOCKET` (absolute path) to its
//!   app-server; the hooks inherit them → `Via::CodexAppServer`.
//! - A host in tmux: the hook inherits `TMUX=<socket>,<server pid>,<n>` and
//!   `TMUX_PANE=%N`. The host process is decided from the hook's ancestor
//!   chain up to the pane's process (`#{pane_pid}`), see [`host_in_chain`]:
//!   the pane's process itself or its child, never a command shell that
//!   exits with the hook; its start time (field 22 of `/proc/<pid>/stat`)
//!   tells a reused pid apart. When an ancestor is a
//!   Codex shared daemon (`app-server … --managed-daemon`) the pane may be
//!   another session's: refused (`codex_daemon`), the user must run
//!   `codex --no-daemon`.
//! - The pin records the tmux executable this hook found on its PATH (the
//!   host's environment), and the hook asks exactly that one for the pane:
//!   the detached worker later runs the same file, whatever its own PATH.

use crate::codes;
use crate::procfs::Procs;
use crate::tmux::Tmux;
use crate::trigger::{is_adapter_id, is_pane_id, Via};
use kijito_protocol::error::{Error, Result};
use kijito_protocol::ids::AbsPath;

pub const ENV_ADAPTER_ID: &str = "KIJITO_COMPACT_ADAPTER_ID";
pub const ENV_ADAPTER_SOCKET: &str = "KIJITO_COMPACT_SOCKET";

/// How many ancestors are looked at, at most.
pub const MAX_ANCESTORS: usize = 64;

/// The environment variables discovery reads.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PinEnv {
    pub tmux: Option<String>,
    pub tmux_pane: Option<String>,
    pub adapter_id: Option<String>,
    pub adapter_socket: Option<String>,
    /// The tmux executable on this process's PATH ([`crate::tmux::resolve_on_path`]);
    /// `None`: none, or not safe to run. Recorded in a tmux pin.
    pub tmux_program: Option<AbsPath>,
}

impl PinEnv {
    /// From this process's environment (empty values count as absent).
    pub fn from_process() -> PinEnv {
        PinEnv::from_vars(&|k| std::env::var(k).ok())
    }

    /// [`PinEnv::from_process`] over any variable lookup: values empty or
    /// longer than 4096 bytes count as absent, a PATH longer than 64 KiB
    /// names no tmux.
    pub fn from_vars(get: &dyn Fn(&str) -> Option<String>) -> PinEnv {
        let var = |k: &str| get(k).filter(|v| !v.is_empty() && v.len() <= 4096);
        let tmux_program = get("PATH").filter(|p| p.len() <= 64 * 1024).and_then(|p| crate::tmux::resolve_on_path(&p));
        PinEnv {
            tmux: var("TMUX"),
            tmux_pane: var("TMUX_PANE"),
            adapter_id: var(ENV_ADAPTER_ID),
            adapter_socket: var(ENV_ADAPTER_SOCKET),
            tmux_program,
        }
    }
}

/// The tmux socket named by `$TMUX` (`<socket>,<server pid>,<session>`).
pub fn tmux_socket(tmux: &str) -> Result<AbsPath> {
    let mut parts = tmux.rsplitn(3, ',');
    let (Some(session), Some(pid), Some(socket)) = (parts.next(), parts.next(), parts.next()) else {
        return Err(Error::new(codes::TMUX_ENV_INVALID, "$TMUX is not <socket>,<pid>,<session>"));
    };
    if session.parse::<u32>().is_err() || pid.parse::<u32>().is_err() {
        return Err(Error::new(codes::TMUX_ENV_INVALID, "$TMUX is not <socket>,<pid>,<session>"));
    }
    AbsPath::parse(socket).map_err(|_| Error::new(codes::TMUX_ENV_INVALID, "the socket in $TMUX is not an absolute path"))
}

/// Whether argv is a Codex shared app-server daemon.
pub fn is_codex_daemon(argv: &[String]) -> bool {
    argv.iter().any(|a| a == "app-server") && argv.iter().any(|a| a == "--managed-daemon")
}

/// Find the pin for the process `me` (the hook). `Ok(None)`: neither in tmux
/// nor under the app-server adapter (no safe trigger). `Err`: the
/// environment claims an adapter but it cannot be trusted (the code says
/// why); no pin is written then.
pub fn discover(env: &PinEnv, me: u32, procs: &dyn Procs, tmux: &dyn Tmux) -> Result<Option<Via>> {
    match (&env.adapter_id, &env.adapter_socket) {
        (Some(id), Some(sock)) => {
            if !is_adapter_id(id) {
                return Err(Error::new(codes::ADAPTER_ENV_INVALID, format!("{ENV_ADAPTER_ID} is not 32 lowercase hex")));
            }
            let socket = AbsPath::parse(sock)
                .map_err(|_| Error::new(codes::ADAPTER_ENV_INVALID, format!("{ENV_ADAPTER_SOCKET} is not an absolute path")))?;
            return Ok(Some(Via::CodexAppServer { adapter_id: id.clone(), socket }));
        }
        (None, None) => {}
        _ => return Err(Error::new(codes::ADAPTER_ENV_INVALID, format!("only one of {ENV_ADAPTER_ID} and {ENV_ADAPTER_SOCKET} is set"))),
    }
    let (Some(t), Some(pane)) = (&env.tmux, &env.tmux_pane) else {
        return Ok(None);
    };
    let socket = tmux_socket(t)?;
    if !is_pane_id(pane) {
        return Err(Error::new(codes::TMUX_ENV_INVALID, "$TMUX_PANE is not a pane id (%N)"));
    }
    let Some(program) = &env.tmux_program else {
        return Err(Error::new(codes::TMUX_UNAVAILABLE, "no tmux executable on PATH that only root or this user can change"));
    };
    let pane_pid = tmux.pane_pid(&socket, pane)?.ok_or_else(|| Error::new(codes::PANE_GONE, "the pane in $TMUX_PANE does not exist"))?;
    let chain = ancestors_to(me, pane_pid, procs)?;
    let host = host_in_chain(&chain)
        .ok_or_else(|| Error::new(codes::PANE_NOT_ANCESTOR, "the hook itself is the process of $TMUX_PANE: no host process to pin"))?;
    Ok(Some(Via::Tmux { socket, pane: pane.clone(), host_pid: host.pid, host_start: host.start, tmux: Some(program.clone()) }))
}

/// One process of the hook's ancestor chain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ancestor {
    pub pid: u32,
    pub start: u64,
    /// argv (empty when unreadable).
    pub argv: Vec<String>,
}

/// The chain from `me` (first) up to the pane's process `pane_pid` (last),
/// at most [`MAX_ANCESTORS`] long. Refused with `codex_daemon` when a
/// process above `me` is a Codex shared daemon; `pane_not_ancestor` when the
/// walk ends (pid 1, or the bound) without reaching the pane's process.
pub fn ancestors_to(me: u32, pane_pid: u32, procs: &dyn Procs) -> Result<Vec<Ancestor>> {
    let mut chain = Vec::new();
    let mut pid = me;
    for _ in 0..MAX_ANCESTORS {
        let st = procs
            .stat(pid)
            .ok_or_else(|| Error::new(codes::PANE_NOT_ANCESTOR, "an ancestor process vanished while the pane was pinned"))?;
        let argv = procs.cmdline(pid).unwrap_or_default();
        if pid != me && is_codex_daemon(&argv) {
            return Err(Error::new(
                codes::CODEX_DAEMON,
                "this Codex session runs in the shared app-server daemon, whose hooks may name another session's pane; start Codex with `codex --no-daemon` in tmux",
            ));
        }
        chain.push(Ancestor { pid, start: st.start, argv });
        if pid == pane_pid {
            return Ok(chain);
        }
        if st.ppid <= 1 {
            break;
        }
        pid = st.ppid;
    }
    Err(Error::new(codes::PANE_NOT_ANCESTOR, "the hook does not run under the process of $TMUX_PANE"))
}

/// The shells hosts run hook commands through (`sh -c '<hook command>'`).
const SHELLS: &[&str] = &["sh", "bash", "dash", "zsh", "ksh", "mksh", "ash"];

/// Whether argv is a shell running a command string (`sh -c CMD`, `bash
/// -lc CMD`, `bash --norc -o pipefail -c CMD`): the way both hosts run a
/// hook command, a process that exits with the hook. A login or
/// interactive shell (`-bash`, `bash`, `sh script.sh`) is not one.
pub fn is_command_shell(argv: &[String]) -> bool {
    let Some(first) = argv.first() else { return false };
    let name = first.rsplit('/').next().unwrap_or(first).trim_start_matches('-');
    if !SHELLS.contains(&name) {
        return false;
    }
    let mut args = argv.iter().skip(1);
    while let Some(a) = args.next() {
        if matches!(a.as_str(), "-o" | "+o" | "-O" | "+O") {
            args.next();
            continue;
        }
        if a.starts_with("--") {
            continue;
        }
        if !a.starts_with(['-', '+']) || a.len() < 2 {
            return false;
        }
        if a.starts_with('-') && a.contains('c') {
            return true;
        }
    }
    false
}

/// The process to pin in a chain hook → ... → pane's process: the host is
/// the first process above the hook that is not a command shell running it
/// (skipping those: they exit with the hook). When that is the pane's
/// process itself (a host started as the pane's command, `tmux new-session
/// claude`) it is pinned; otherwise the chain's process whose parent is the
/// pane's process (the host started from the pane's shell, or a launcher of
/// it such as Codex's npm wrapper) is. `None` when the chain holds only the
/// hook (the hook is the pane's process: nothing outlives it).
pub fn host_in_chain(chain: &[Ancestor]) -> Option<&Ancestor> {
    let k = chain.len().checked_sub(1).filter(|k| *k >= 1)?;
    let host = (1..k).find(|i| !is_command_shell(&chain[*i].argv)).unwrap_or(k);
    chain.get(if host == k { k } else { k - 1 })
}

/// Whether the pinned host still runs in its pane: the pane exists, and the
/// pinned pid has the pinned start time and is the pane's process or its
/// child (the two shapes [`host_in_chain`] pins).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PaneCheck {
    /// Not looked at yet (the worker only asks tmux when it is about to send).
    Unchecked,
    Alive,
    Gone,
    OtherProcess,
}

/// Check a tmux pin now.
pub fn check_pane(via: &Via, procs: &dyn Procs, tmux: &dyn Tmux) -> Result<PaneCheck> {
    let Via::Tmux { socket, pane, host_pid, host_start, .. } = via else {
        return Ok(PaneCheck::Gone);
    };
    let Some(pane_pid) = tmux.pane_pid(socket, pane)? else {
        return Ok(PaneCheck::Gone);
    };
    Ok(match procs.stat(*host_pid) {
        Some(st) if st.start == *host_start && (*host_pid == pane_pid || st.ppid == pane_pid) => PaneCheck::Alive,
        _ => PaneCheck::OtherProcess,
    })
}
