//! `kijito-compact codex`: the process around the data path. One thread, one
//! poll loop over the app-server child's stdout, the private socket and the
//! client; every wait bounded.

use crate::gatekeeper::{Decision, Gatekeeper};
use crate::msglog::MessageLog;
use crate::proxy::{JobEnd, Out, Proxy};
use crate::transport::{self, Client, LineBuf, StdioClient, WsClient};
use kijito_compact::trigger::{Request, RequestState};
use kijito_protocol::error::{Error, Result};
use kijito_protocol::ids::AbsPath;
use std::ffi::OsString;
use std::os::fd::AsRawFd;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixListener;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::{Duration, Instant};

/// Stable codes of this module (registered in the workspace by `tests/it/architecture.rs`).
pub mod codes {
    kijito_protocol::codes! {
        CODEX_NOT_FOUND CodexNotFound = "codex_not_found",
        SPAWN_FAILED SpawnFailed = "spawn_failed",
        SOCKET_FAILED SocketFailed = "socket_failed",
        SOCKET_PATH_TOO_LONG SocketPathTooLong = "socket_path_too_long",
        APP_SERVER_EXITED AppServerExited = "app_server_exited",
        IO Io = "adapter_io_failed",
        USAGE Usage = "codex_usage",
        MESSAGE_LOG_FAILED MessageLogFailed = "message_log_failed",
    }
}

/// Environment variables the app-server (and so every hook) gets.
pub const ENV_ADAPTER_ID: &str = "KIJITO_COMPACT_ADAPTER_ID";
pub const ENV_SOCKET: &str = "KIJITO_COMPACT_SOCKET";

/// Bounds of the adapter (all waits).
#[derive(Debug, Clone, Copy)]
pub struct Bounds {
    /// How often request files are checked when nothing happens.
    pub poll: Duration,
    /// Longest a client turn/start is held during the adapter's compaction.
    pub hold: Duration,
    /// From thread/compact/start to the compaction turn's turn/completed.
    pub compaction: Duration,
    /// From the compaction turn's end to the claim record.
    pub claim: Duration,
    /// The WebSocket handshake of a connecting client.
    pub handshake: Duration,
    /// Waiting for the app-server to exit after its stdin closed.
    pub shutdown: Duration,
}

impl Default for Bounds {
    fn default() -> Self {
        Bounds {
            poll: Duration::from_millis(250),
            hold: Duration::from_secs(600),
            compaction: Duration::from_secs(600),
            claim: Duration::from_secs(30),
            handshake: Duration::from_secs(5),
            shutdown: Duration::from_secs(5),
        }
    }
}

/// What `kijito-compact codex` was asked to do.
#[derive(Debug, Clone)]
pub struct Options {
    /// The data dir the adapter watches; also exported to the app-server as
    /// `PLUGIN_DATA` so the hooks use the same one.
    pub data_dir: Option<AbsPath>,
    pub message_log: Option<AbsPath>,
    /// The codex executable (default: `codex` found on PATH).
    pub codex: Option<AbsPath>,
    /// Headless: the client is this process's stdin/stdout (JSON lines); no
    /// TUI is started.
    pub stdio_client: bool,
    /// Arguments for the TUI (`codex --remote unix://SOCK ARGS...`).
    pub codex_args: Vec<OsString>,
    pub bounds: Bounds,
}

fn io_err(code: codes::Code, what: &str, e: impl std::fmt::Display) -> Error {
    Error::new(code, format!("{what}: {e}"))
}

/// `codex` on PATH (an absolute, executable regular file).
pub fn find_codex() -> Result<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    for dir in std::env::split_paths(&path) {
        if !dir.is_absolute() {
            continue;
        }
        let p = dir.join(kijito_protocol::host::HostKind::Codex.as_str());
        if let Ok(m) = std::fs::metadata(&p) {
            if m.is_file() && m.permissions().mode() & 0o111 != 0 {
                return Ok(p);
            }
        }
    }
    Err(Error::new(codes::CODEX_NOT_FOUND, "codex is not on PATH; pass --codex ABS"))
}

/// The private directory for the socket: `$XDG_RUNTIME_DIR/kijito-compact/<id>`
/// (`runtime_dir`, when absolute) when that fits a unix socket path, else
/// `<data-dir>/compact-codex/<id>`.
fn socket_dir(runtime_dir: Option<OsString>, data_dir: &AbsPath, adapter_id: &str) -> Result<(PathBuf, PathBuf)> {
    let mut bases = vec![];
    if let Some(x) = runtime_dir.map(PathBuf::from).filter(|p| p.is_absolute()) {
        bases.push(x.join("kijito-compact"));
    }
    bases.push(data_dir.as_path().join("compact-codex"));
    for base in bases {
        let dir = base.join(adapter_id);
        let sock = dir.join("rpc.sock");
        if sock.as_os_str().len() < 100 {
            return Ok((dir, sock));
        }
    }
    Err(Error::new(codes::SOCKET_PATH_TOO_LONG, "no socket path under $XDG_RUNTIME_DIR or the data dir fits a unix socket (100 bytes)"))
}

struct Ends {
    child: Child,
    child_in: Option<ChildStdin>,
    child_out: std::process::ChildStdout,
    listener: UnixListener,
    sock: PathBuf,
    dir: PathBuf,
}

impl Drop for Ends {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.sock);
        let _ = std::fs::remove_dir(&self.dir);
    }
}

/// Run the adapter until the TUI exits (or, headless, stdin closes).
/// Returns the exit status: the TUI's, or 0 headless.
#[allow(unsafe_code)]
pub fn run(opts: &Options) -> Result<i32> {
    if opts.stdio_client && !opts.codex_args.is_empty() {
        return Err(Error::usage(codes::USAGE, "--stdio-client starts no TUI: codex arguments after -- are not allowed"));
    }
    let config = kijito_files::config::Config::load().ok();
    let data_dir = kijito_files::datadir::resolve(opts.data_dir.as_ref(), Some(kijito_protocol::host::HostKind::Codex), config.as_ref())?;
    let codex = match &opts.codex {
        Some(p) => p.as_path().to_owned(),
        None => find_codex()?,
    };
    let adapter_id = kijito_files::random::hex(16);
    let (dir, sock) = socket_dir(std::env::var_os("XDG_RUNTIME_DIR"), &data_dir, &adapter_id)?;
    kijito_files::private::ensure_private_dir(&dir)?;
    let listener = UnixListener::bind(&sock).map_err(|e| io_err(codes::SOCKET_FAILED, "cannot bind the adapter socket", e))?;
    let _ = std::fs::set_permissions(&sock, std::fs::Permissions::from_mode(0o600));
    listener.set_nonblocking(true).map_err(|e| io_err(codes::SOCKET_FAILED, "socket", e))?;
    let mut log = match &opts.message_log {
        Some(p) => Some(MessageLog::create(p)?),
        None => None,
    };
    let mut cmd = Command::new(&codex);
    cmd.arg("app-server")
        .env(ENV_ADAPTER_ID, &adapter_id)
        .env(ENV_SOCKET, &sock)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .process_group(0);
    if let Some(d) = &opts.data_dir {
        cmd.env("PLUGIN_DATA", d.as_path());
    }
    match &opts.message_log {
        Some(p) => {
            let f = crate::msglog::create_private(&PathBuf::from(format!("{}.app-server.stderr", p.as_str())))?;
            cmd.stderr(f);
        }
        None => {
            cmd.stderr(Stdio::null());
        }
    }
    let mut child = cmd.spawn().map_err(|e| io_err(codes::SPAWN_FAILED, &format!("cannot start {} app-server", codex.display()), e))?;
    let (Some(child_in), Some(child_out)) = (child.stdin.take(), child.stdout.take()) else {
        let _ = child.kill();
        return Err(Error::new(codes::SPAWN_FAILED, "the app-server child has no pipes"));
    };
    let mut ends = Ends { child, child_in: Some(child_in), child_out, listener, sock: sock.clone(), dir };
    let gate = Gatekeeper { data_dir, adapter_id: adapter_id.clone() };

    let mut tui = None;
    let mut client = None;
    if opts.stdio_client {
        client = Some(Client::Stdio(StdioClient::default()));
    } else {
        let mut c = Command::new(&codex);
        c.arg("--remote").arg(format!("unix://{}", sock.display())).args(&opts.codex_args);
        tui = Some(c.spawn().map_err(|e| io_err(codes::SPAWN_FAILED, "cannot start the codex TUI", e))?);
    }
    let status = serve(&mut ends, &mut client, &mut tui, &gate, &adapter_id, &mut log, &opts.bounds);
    if let Some(c) = client.as_mut() {
        c.close();
    }
    // Close the app-server's stdin, wait (bounded), then kill its group.
    drop(ends.child_in.take());
    let child = &mut ends.child;
    let end = Instant::now() + opts.bounds.shutdown;
    while Instant::now() < end && matches!(child.try_wait(), Ok(None)) {
        std::thread::sleep(Duration::from_millis(20));
    }
    if matches!(child.try_wait(), Ok(None)) {
        // SAFETY: kill(2) on the child's own process group (process_group(0)).
        unsafe { libc::kill(-(child.id() as i32), libc::SIGTERM) };
        let _ = child.wait();
    }
    if let Some(mut t) = tui {
        if matches!(t.try_wait(), Ok(None)) {
            let _ = t.kill();
            let _ = t.wait();
        }
    }
    status
}

/// Active compaction bookkeeping (the request on disk).
struct Active {
    request: Request,
}

#[allow(clippy::too_many_arguments)]
#[allow(unsafe_code)]
fn serve(
    ends: &mut Ends,
    client: &mut Option<Client>,
    tui: &mut Option<Child>,
    gate: &Gatekeeper,
    adapter_id: &str,
    log: &mut Option<MessageLog>,
    b: &Bounds,
) -> Result<i32> {
    let mut proxy = Proxy::new(adapter_id, b.hold);
    let mut child_lines = LineBuf::default();
    let mut active: Option<Active> = None;
    let mut last_poll = Instant::now() - b.poll;
    let mut pending_to_client: Vec<String> = vec![];
    // Headless: after stdin closed, the app-server's last answers are still
    // forwarded until it exits (bounded).
    let mut draining: Option<Instant> = None;
    loop {
        if draining.is_some_and(|end| Instant::now() >= end) {
            flush_log(&mut proxy, log);
            return Ok(0);
        }
        // The TUI's exit ends the adapter.
        if let Some(t) = tui.as_mut() {
            if let Ok(Some(st)) = t.try_wait() {
                return Ok(st.code().unwrap_or(1));
            }
        }
        let mut fds = vec![
            libc::pollfd { fd: ends.child_out.as_raw_fd(), events: libc::POLLIN, revents: 0 },
            libc::pollfd { fd: ends.listener.as_raw_fd(), events: libc::POLLIN, revents: 0 },
        ];
        if let Some(c) = client.as_ref().filter(|_| draining.is_none()) {
            let ev = libc::POLLIN | if c.wants_write() { libc::POLLOUT } else { 0 };
            fds.push(libc::pollfd { fd: c.read_fd(), events: ev, revents: 0 });
        }
        let timeout = b.poll.min(Duration::from_millis(100)).as_millis() as i32;
        // SAFETY: fds is a valid array of pollfd of the given length.
        let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, timeout) };
        if n < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() != std::io::ErrorKind::Interrupted {
                return Err(io_err(codes::IO, "poll", e));
            }
            continue;
        }
        let now = Instant::now();
        let mut outs = vec![];
        let mut turn_ended = false;
        // app-server -> adapter
        if fds[0].revents != 0 {
            let mut lines = vec![];
            let open = transport::read_lines(fds[0].fd, &mut child_lines, &mut lines)
                .map_err(|e| io_err(codes::IO, "reading the app-server", e))?;
            for l in lines {
                turn_ended |= l.contains("\"turn/completed\"");
                outs.extend(proxy.from_server(&l, now));
            }
            if !open {
                send_all(ends, client, &mut pending_to_client, outs, &mut proxy, log)?;
                if draining.is_some() {
                    return Ok(0);
                }
                return Err(Error::new(codes::APP_SERVER_EXITED, "codex app-server exited"));
            }
        }
        // a client connects
        if fds[1].revents != 0 {
            while let Ok((stream, _)) = ends.listener.accept() {
                if client.is_some() {
                    // A second client is refused: a WebSocket close would
                    // need a handshake, so the connection is simply closed
                    // (accepted with SOCK_CLOEXEC: no other process holds it);
                    // the TUI reports it could not connect.
                    drop(stream);
                    continue;
                }
                let _ = stream.set_nonblocking(false);
                match WsClient::accept(stream, b.handshake) {
                    Ok(ws) => *client = Some(Client::Ws(Box::new(ws))),
                    Err(e) => eprintln!("kijito-compact codex: a client failed the handshake: {e}"),
                }
            }
        }
        // client -> adapter
        if let Some(pfd) = fds.get(2) {
            if pfd.revents & libc::POLLOUT != 0 {
                if let Some(c) = client.as_mut() {
                    let _ = c.flush();
                }
            }
            if pfd.revents & (libc::POLLIN | libc::POLLHUP | libc::POLLERR) != 0 {
                let mut msgs = vec![];
                let open = client.as_mut().map(|c| c.read(&mut msgs).unwrap_or(false)).unwrap_or(false);
                for m in msgs {
                    outs.extend(proxy.from_client(&m, now));
                }
                if !open {
                    if tui.is_none() {
                        // headless: stdin closed; close the app-server's and drain.
                        send_all(ends, client, &mut pending_to_client, std::mem::take(&mut outs), &mut proxy, log)?;
                        drop(ends.child_in.take());
                        draining = Some(now + b.shutdown);
                    } else {
                        *client = None;
                    }
                }
            }
        }
        outs.extend(proxy.tick(now));
        send_all(ends, client, &mut pending_to_client, outs, &mut proxy, log)?;

        // The adapter's compaction.
        if active.is_some() {
            if let Some(st) = settle(&mut proxy, &mut active, gate, b, now) {
                let outs = proxy.clear_job();
                send_all(ends, client, &mut pending_to_client, outs, &mut proxy, log)?;
                eprintln!("kijito-compact codex: compaction request ended {st}");
            }
        } else if turn_ended || now.duration_since(last_poll) >= b.poll {
            last_poll = now;
            for thread in proxy.thread_ids() {
                if !proxy.can_compact(&thread) {
                    continue;
                }
                match gate.decide(&thread, kijito_gate::now_ms()) {
                    Ok(Decision::Send(r)) => {
                        if let Some(out) = proxy.start_compaction(&thread, Instant::now()) {
                            send_all(ends, client, &mut pending_to_client, vec![out], &mut proxy, log)?;
                            active = Some(Active { request: r });
                        }
                        break;
                    }
                    Ok(Decision::Failed(code)) => {
                        eprintln!("kijito-compact codex: request for thread {thread} failed before sending: {code}")
                    }
                    Ok(Decision::Nothing) => {}
                    Err(e) => eprintln!("kijito-compact codex: {} ({})", e.message(), e.code()),
                }
            }
        }
    }
}

/// Move the active request to its final state when the wire says so (or a
/// bound passes). Returns the final state's name once done.
fn settle(proxy: &mut Proxy, active: &mut Option<Active>, gate: &Gatekeeper, b: &Bounds, now: Instant) -> Option<&'static str> {
    let job = proxy.job()?.clone();
    let a = active.as_mut()?;
    let now_ms = kijito_gate::now_ms();
    let finish = |a: &mut Active, st: RequestState| {
        let name = st.name();
        if let Err(e) = gate.finish(&mut a.request, st, now_ms) {
            eprintln!("kijito-compact codex: cannot record the request's end: {} ({})", e.message(), e.code());
        }
        name
    };
    let done = match &job.ended {
        Some((JobEnd::Refused(_), _)) => Some(finish(a, RequestState::Failed { code: "host_refused".into() })),
        Some((end, at)) => match gate.claimed(&a.request) {
            Ok(Some(st)) => Some(finish(a, st)),
            _ if now.duration_since(*at) >= b.claim => Some(match end {
                JobEnd::Compacted => finish(a, RequestState::TimedOut),
                _ => finish(a, RequestState::Failed { code: "not_compacted".into() }),
            }),
            _ => None,
        },
        None if now.duration_since(job.sent_at) >= b.compaction => Some(finish(a, RequestState::TimedOut)),
        None => None,
    };
    if done.is_some() {
        *active = None;
    }
    done
}

fn send_all(
    ends: &mut Ends,
    client: &mut Option<Client>,
    pending_to_client: &mut Vec<String>,
    outs: Vec<Out>,
    proxy: &mut Proxy,
    log: &mut Option<MessageLog>,
) -> Result<()> {
    flush_log(proxy, log);
    for o in outs {
        match o {
            Out::Server(line) => {
                let Some(w) = ends.child_in.as_mut() else { continue };
                transport::write_line(w, &line).map_err(|e| io_err(codes::APP_SERVER_EXITED, "writing to the app-server", e))?
            }
            Out::Client(text) => match client.as_mut() {
                Some(c) => {
                    // Messages that arrived before the client connected go first.
                    for p in pending_to_client.drain(..) {
                        let _ = c.send(p);
                    }
                    if c.send(text).is_err() {
                        *client = None;
                    }
                }
                None => {
                    if pending_to_client.len() < 4096 {
                        pending_to_client.push(text);
                    }
                }
            },
        }
    }
    Ok(())
}

fn flush_log(proxy: &mut Proxy, log: &mut Option<MessageLog>) {
    let entries = proxy.drain_log();
    if let Some(l) = log.as_mut() {
        for e in entries {
            l.write(e.dir, &e.text);
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    const ID: &str = "0123456789abcdef0123456789abcdef";

    #[test]
    fn the_socket_goes_under_the_runtime_dir_when_its_path_fits() {
        let data = AbsPath::parse("/home/u/.local/share/kijito-qa/codex").unwrap();
        let (dir, sock) = socket_dir(Some("/run/user/1000".into()), &data, ID).unwrap();
        assert_eq!(dir, PathBuf::from(format!("/run/user/1000/kijito-compact/{ID}")));
        assert_eq!(sock, dir.join("rpc.sock"));
        // none, or a relative one: the data dir
        for rt in [None, Some(OsString::from("run/user/1000"))] {
            let (dir, sock) = socket_dir(rt, &data, ID).unwrap();
            assert_eq!(dir, PathBuf::from(format!("/home/u/.local/share/kijito-qa/codex/compact-codex/{ID}")));
            assert_eq!(sock, dir.join("rpc.sock"));
        }
    }

    #[test]
    fn a_socket_path_is_at_most_99_bytes() {
        // "<base>/kijito-compact/<32 hex>/rpc.sock": 56 bytes after the base
        let fixed = "/kijito-compact/".len() + ID.len() + "/rpc.sock".len();
        let base = |n: usize| format!("/{}", "r".repeat(n - 1 - fixed));
        let data = AbsPath::parse("/d").unwrap();
        let (_, sock) = socket_dir(Some(base(99).into()), &data, ID).unwrap();
        assert_eq!(sock.as_os_str().len(), 99);
        assert!(sock.starts_with(base(99)));
        // 100 bytes: the data dir instead
        let (_, sock) = socket_dir(Some(base(100).into()), &data, ID).unwrap();
        assert_eq!(sock, PathBuf::from(format!("/d/compact-codex/{ID}/rpc.sock")));
        // neither fits
        let long = AbsPath::parse(&format!("/{}", "d".repeat(80))).unwrap();
        let e = socket_dir(Some(base(100).into()), &long, ID).unwrap_err();
        assert_eq!(e.code(), codes::SOCKET_PATH_TOO_LONG.as_str());
    }
}
