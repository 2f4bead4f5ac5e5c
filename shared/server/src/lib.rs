//! kijito-local: a Kijito-compatible server on loopback with a SQLite store
//! (usage and endpoints in docs/kijito-local.md).
//!
//! | module | idea |
//! |---|---|
//! | [`http`] | bounded HTTP/1.1 request reading and response writing |
//! | [`api`] | authentication, fault injection, routes and handlers |
//! | [`mcp`] | `kijito-local mcp`: the MCP server over stdio on the same store |
//! | [`fields`] | argument rules shared by the HTTP API and the MCP tools |
//! | [`store`] | SQLite store: memories, relations, messages, leases, FTS5 recall |
//! | [`render`] | the rendered memory of docs/protocol.md §3 |
//! | [`lease`] | claim/release advisory semantics |
//! | [`faults`] | the `--faults` rule file |
//! | [`reqlog`] | the `--request-log` JSON lines |
//! | [`view`] | `kijito-local view`: the read-only web viewer of the flight recorder |
//! | [`report`] | `kijito-report`: a session's summary and timeline from its flight recorder |
//!
//! Threads: one acceptor, one thread per connection (at most
//! `MAX_CONNECTIONS`, at most `MAX_PER_SOURCE` per source address). When a
//! limit is reached, the connection that has waited longest without a
//! complete request head (of that source, for the per-source limit) is
//! closed to make room; only when every connection is busy inside a request
//! is the newcomer answered 503. Idle and half-sent connections therefore
//! cannot lock legitimate clients out. A new connection must send
//! its whole head within 5 s (`http::HEADER_TIMEOUT`); an idle keep-alive
//! connection is closed after 10 s. The bearer token is checked on the head,
//! before any fault, request-log line, occurrence count or body buffer.

#![deny(unsafe_code)]

pub mod api;
pub mod cli;
pub mod demo;
pub mod faults;
pub mod fields;
pub mod http;
pub mod lease;
pub mod mcp;
pub mod render;
pub mod report;
pub mod reqlog;
pub mod store;
pub mod view;

use kijito_protocol::error::{Error, Result};
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Most simultaneous connections.
pub const MAX_CONNECTIONS: usize = 256;
/// Most simultaneous connections from one source address. TCP gives no
/// peer credentials (SO_PEERCRED is for Unix sockets), so the source address
/// is the peer; eviction of waiting connections does the rest.
pub const MAX_PER_SOURCE: usize = 64;
/// How often the acceptor looks at the stop flag while no client connects.
const ACCEPT_POLL_MS: i32 = 100;
/// Largest token file (docs/protocol.md §2).
pub const MAX_TOKEN_BYTES: u64 = 16 * 1024;
/// How long a stop waits for in-flight requests.
pub const STOP_GRACE: Duration = Duration::from_secs(3);

/// Stable codes of this module (registered in the workspace by `tests/it/architecture.rs`).
pub mod codes {
    kijito_protocol::codes! {
        LISTEN_INVALID ListenInvalid = "listen_address_invalid",
        LISTEN_NOT_LOOPBACK ListenNotLoopback = "listen_address_not_loopback",
        BIND Bind = "listen_bind_failed",
        TOKEN_INVALID TokenInvalid = "token_file_invalid",
        SIGNALS Signals = "signal_setup_failed",
    }
}

/// Everything `kijito-local serve` needs.
#[derive(Debug, Clone)]
pub struct Config {
    pub db: PathBuf,
    pub token_file: PathBuf,
    pub listen: SocketAddr,
    pub reap_after_seconds: u64,
    pub faults: Option<PathBuf>,
    pub request_log: Option<PathBuf>,
}

/// Parse `--listen`: an IP literal and port on loopback only (127.0.0.0/8
/// or ::1). Anything else is refused.
pub fn parse_listen(text: &str) -> Result<SocketAddr> {
    let addr: SocketAddr = text.parse().map_err(|_| {
        Error::usage(
            codes::LISTEN_INVALID,
            format!("--listen must be IP:PORT (e.g. 127.0.0.1:0), got {:?}", kijito_protocol::ids::clip(text)),
        )
    })?;
    let loopback = match addr.ip() {
        IpAddr::V4(v4) => v4.is_loopback(),
        IpAddr::V6(v6) => v6.is_loopback(),
    };
    if !loopback {
        return Err(Error::usage(
            codes::LISTEN_NOT_LOOPBACK,
            format!("kijito-local listens only on loopback (127.0.0.0/8 or [::1]), not {addr}"),
        ));
    }
    Ok(addr)
}

/// Read the bearer token: owner-only regular file (no symlink), at most
/// 16 KiB, one line of visible ASCII (an optional final newline).
pub fn read_token(path: &Path) -> Result<Vec<u8>> {
    let rules = kijito_files::private::FileRules { owner_only: true, min_bytes: 1, max_bytes: MAX_TOKEN_BYTES };
    let (mut bytes, _) = kijito_files::private::read_checked(path, rules).map_err(|e| e.context("token file"))?;
    if bytes.last() == Some(&b'\n') {
        bytes.pop();
    }
    if bytes.is_empty() || !bytes.iter().all(|b| b.is_ascii_graphic()) {
        return Err(Error::new(codes::TOKEN_INVALID, "the token file must hold one line of visible ASCII without whitespace"));
    }
    Ok(bytes)
}

/// A bound server, ready to run.
pub struct Server {
    listener: TcpListener,
    app: Arc<api::App>,
    stopping: Arc<AtomicBool>,
    active: Arc<AtomicUsize>,
}

/// Stops a running server from another thread.
#[derive(Clone)]
pub struct StopHandle {
    stopping: Arc<AtomicBool>,
}

impl StopHandle {
    /// Ask the server to stop: no new connections, idle connections close,
    /// in-flight requests finish (up to `STOP_GRACE`). The acceptor polls the
    /// flag, so this works on every loopback address (a wake-up connection
    /// cannot reach e.g. 127.255.255.255).
    pub fn stop(&self) {
        self.stopping.store(true, Ordering::SeqCst);
    }
}

/// The open connections: who they come from and since when they wait for a
/// request head (`None` while a request is being handled).
#[derive(Default)]
struct Registry {
    slots: std::sync::Mutex<Vec<Slot>>,
    next_id: std::sync::atomic::AtomicU64,
}

struct Slot {
    id: u64,
    source: IpAddr,
    waiting_since: Option<Instant>,
    stream: TcpStream,
}

impl Registry {
    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Slot>> {
        self.slots.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Make room for a connection from `source` (closing the longest-waiting
    /// connection if a limit is reached) and register it; `None` when every
    /// connection in the way is busy.
    fn admit(&self, source: IpAddr, stream: &TcpStream) -> Option<u64> {
        let handle = stream.try_clone().ok()?;
        let mut slots = self.lock();
        let same = slots.iter().filter(|s| s.source == source).count();
        let limit_source = same >= MAX_PER_SOURCE;
        if limit_source || slots.len() >= MAX_CONNECTIONS {
            let victim = slots
                .iter()
                .enumerate()
                .filter(|(_, s)| s.waiting_since.is_some() && (!limit_source || s.source == source))
                .min_by_key(|(_, s)| s.waiting_since)
                .map(|(i, _)| i)?;
            let evicted = slots.swap_remove(victim);
            let _ = evicted.stream.shutdown(std::net::Shutdown::Both);
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        slots.push(Slot { id, source, waiting_since: Some(Instant::now()), stream: handle });
        Some(id)
    }

    fn set_waiting(&self, id: u64, waiting: bool) {
        if let Some(s) = self.lock().iter_mut().find(|s| s.id == id) {
            s.waiting_since = waiting.then(Instant::now);
        }
    }

    fn remove(&self, id: u64) {
        self.lock().retain(|s| s.id != id);
    }
}

/// Wait up to `ms` for the listener to become readable (a connection to
/// accept).
#[allow(unsafe_code)]
fn wait_readable(listener: &TcpListener, ms: i32) -> bool {
    use std::os::fd::AsRawFd;
    let mut pfd = libc::pollfd { fd: listener.as_raw_fd(), events: libc::POLLIN, revents: 0 };
    // SAFETY: one valid pollfd for the duration of the call.
    let rc = unsafe { libc::poll(&mut pfd, 1, ms) };
    rc > 0
}

impl Server {
    /// Open the store, read the token, open the request log and bind.
    pub fn bind(config: &Config) -> Result<Server> {
        let token = read_token(&config.token_file)?;
        let store = store::Store::open(&config.db)?;
        let log = config.request_log.as_deref().map(reqlog::RequestLog::open).transpose()?;
        let listener =
            TcpListener::bind(config.listen).map_err(|e| Error::new(codes::BIND, format!("cannot listen on {}: {e}", config.listen)))?;
        let app = api::App::new(store, &token, config.reap_after_seconds, config.faults.clone(), log);
        Ok(Server { listener, app: Arc::new(app), stopping: Arc::new(AtomicBool::new(false)), active: Arc::new(AtomicUsize::new(0)) })
    }

    pub fn local_addr(&self) -> Result<SocketAddr> {
        self.listener.local_addr().map_err(|e| Error::new(codes::BIND, e.to_string()))
    }

    pub fn stop_handle(&self) -> Result<StopHandle> {
        Ok(StopHandle { stopping: self.stopping.clone() })
    }

    /// Accept and serve until stopped.
    pub fn run(self) -> Result<()> {
        let registry = Arc::new(Registry::default());
        self.listener.set_nonblocking(true).map_err(|e| Error::new(codes::BIND, format!("cannot poll the listener: {e}")))?;
        while !self.stopping.load(Ordering::SeqCst) {
            if !wait_readable(&self.listener, ACCEPT_POLL_MS) {
                continue;
            }
            let (stream, peer) = match self.listener.accept() {
                Ok(pair) => pair,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
                Err(_) => {
                    // E.g. out of file descriptors: back off instead of spinning.
                    std::thread::sleep(Duration::from_millis(10));
                    continue;
                }
            };
            if stream.set_nonblocking(false).is_err() {
                continue;
            }
            let Some(id) = registry.admit(peer.ip(), &stream) else {
                refuse_busy(stream);
                continue;
            };
            self.active.fetch_add(1, Ordering::SeqCst);
            let (app, stopping, active, reg) = (self.app.clone(), self.stopping.clone(), self.active.clone(), registry.clone());
            let spawned = std::thread::Builder::new().name("kijito-conn".into()).stack_size(512 * 1024).spawn(move || {
                serve_connection(&app, stream, &stopping, &|waiting| reg.set_waiting(id, waiting));
                reg.remove(id);
                active.fetch_sub(1, Ordering::SeqCst);
            });
            if spawned.is_err() {
                registry.remove(id);
                self.active.fetch_sub(1, Ordering::SeqCst);
            }
        }
        let deadline = Instant::now() + STOP_GRACE;
        while self.active.load(Ordering::SeqCst) > 0 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(())
    }
}

fn refuse_busy(stream: TcpStream) {
    if let Ok(mut conn) = http::Conn::new(stream) {
        let _ = conn.write_response(&http::Response::error(503, "too_many_connections", "too many connections"), true);
    }
}

/// Serve one connection until it closes. `waiting(true)` marks it as
/// waiting for a request head (evictable), `waiting(false)` as busy.
fn serve_connection(app: &api::App, stream: TcpStream, stopping: &AtomicBool, waiting: &dyn Fn(bool)) {
    let Ok(mut conn) = http::Conn::new(stream) else { return };
    let mut first = true;
    loop {
        waiting(true);
        let read = conn.read_request(stopping, first, &|r| app.authorized(r), &|| waiting(false));
        first = false;
        let req = match read {
            Ok(req) => req,
            Err(http::ReadError::Closed) => return,
            Err(http::ReadError::Unauthorized { .. }) => {
                // Nothing logged, counted or buffered for an unauthenticated peer.
                let response = http::Response::error(401, "unauthorized", "missing or wrong bearer token");
                if conn.write_response(&response, true).is_ok() {
                    conn.linger_close();
                }
                return;
            }
            Err(http::ReadError::Bad { response, method, path }) => {
                app.log(method.as_deref().unwrap_or(""), path.as_deref().unwrap_or(""), Some(response.status), b"", None);
                if conn.write_response(&response, true).is_ok() {
                    conn.linger_close();
                }
                return;
            }
        };
        let outcome = app.handle(&req);
        let status = outcome.response.as_ref().map(|r| r.status);
        app.log(&req.method, &req.path, status, &req.body, outcome.fault.as_deref());
        let Some(response) = outcome.response else {
            conn.abort();
            return;
        };
        let close = outcome.close || !req.keep_alive || stopping.load(Ordering::SeqCst);
        if conn.write_response(&response, close).is_err() || close {
            return;
        }
    }
}

/// Termination signals (SIGTERM, SIGINT), taken synchronously: block them in
/// the calling thread before any other thread starts (threads inherit the
/// mask), then `wait` in a dedicated thread.
pub mod signals {
    use super::codes;
    use kijito_protocol::error::{Error, Result};

    pub struct Blocked {
        set: libc::sigset_t,
    }

    #[allow(unsafe_code)]
    // SAFETY: a sigset_t is plain data.
    unsafe impl Send for Blocked {}

    /// Block SIGTERM and SIGINT in this thread (and every thread it spawns).
    #[allow(unsafe_code)]
    pub fn block() -> Result<Blocked> {
        // SAFETY: sigemptyset/sigaddset initialise the local set;
        // pthread_sigmask only reads it.
        unsafe {
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            libc::sigaddset(&mut set, libc::SIGTERM);
            libc::sigaddset(&mut set, libc::SIGINT);
            if libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) != 0 {
                return Err(Error::new(codes::SIGNALS, "cannot block SIGTERM/SIGINT"));
            }
            Ok(Blocked { set })
        }
    }

    impl Blocked {
        /// Wait until SIGTERM or SIGINT arrives; returns the signal number.
        #[allow(unsafe_code)]
        pub fn wait(&self) -> i32 {
            let mut sig: libc::c_int = 0;
            loop {
                // SAFETY: the set was initialised by `block`; sig is a valid out pointer.
                let rc = unsafe { libc::sigwait(&self.set, &mut sig) };
                if rc == 0 {
                    return sig;
                }
            }
        }
    }
}

/// Run `serve` until SIGTERM/SIGINT: block the signals, bind, call `ready`
/// with the bound address (print the listening line there), serve, and stop
/// cleanly when a signal arrives.
#[allow(unsafe_code)]
pub fn serve_until_signal(config: &Config, ready: impl FnOnce(SocketAddr) -> Result<()>) -> Result<()> {
    let blocked = signals::block()?;
    // Owner-only for everything SQLite creates beside the database (-wal, -shm).
    // SAFETY: umask has no preconditions.
    unsafe {
        libc::umask(0o077);
    }
    let server = Server::bind(config)?;
    let handle = server.stop_handle()?;
    ready(server.local_addr()?)?;
    std::thread::Builder::new()
        .name("kijito-signals".into())
        .spawn(move || {
            blocked.wait();
            handle.stop();
        })
        .map_err(|e| Error::new(codes::SIGNALS, format!("cannot start the signal thread: {e}")))?;
    server.run()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listen_is_loopback_only() {
        assert!(parse_listen("127.0.0.1:0").is_ok());
        assert!(parse_listen("127.1.2.3:8080").is_ok());
        assert!(parse_listen("[::1]:0").is_ok());
        for bad in ["0.0.0.0:0", "10.0.0.1:80", "[::]:0", "192.168.1.1:1"] {
            assert_eq!(parse_listen(bad).unwrap_err().code(), codes::LISTEN_NOT_LOOPBACK.as_str(), "{bad}");
        }
        for bad in ["localhost:0", "127.0.0.1", "", "127.0.0.1:99999"] {
            assert_eq!(parse_listen(bad).unwrap_err().code(), codes::LISTEN_INVALID.as_str(), "{bad}");
        }
    }

    #[test]
    fn token_file_rules() {
        use std::os::unix::fs::PermissionsExt;
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("token");
        kijito_files::private::write_atomic(&p, b"abc123\n").unwrap();
        assert_eq!(read_token(&p).unwrap(), b"abc123");
        for bad in [&b"a b"[..], b"two\nlines", b"\n", b"tab\tx"] {
            kijito_files::private::write_atomic(&p, bad).unwrap();
            assert_eq!(read_token(&p).unwrap_err().code(), codes::TOKEN_INVALID.as_str());
        }
        kijito_files::private::write_atomic(&p, b"ok").unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert_eq!(read_token(&p).unwrap_err().code(), kijito_files::private::codes::PERMISSIONS.as_str());
    }
}
