//! kijito-local under abuse by a local user without the
//! token. Idle and half-sent connections cannot lock a legitimate client
//! out; unauthenticated requests cost no fault, log line, occurrence count
//! or body buffer; SIGTERM stops a server on any loopback address.
#![allow(clippy::unwrap_used)]

use crate::support;
use support::isolated;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use support::*;

fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status.lines().find(|l| l.starts_with("VmRSS:")).and_then(|l| l.split_whitespace().nth(1)).unwrap().parse().unwrap()
}

/// Connect from `source` (a loopback address) to `to`.
fn connect_from(source: &str, to: SocketAddr) -> Option<TcpStream> {
    use std::os::fd::FromRawFd;
    // std has no bind-before-connect; do it with libc.
    let src: std::net::Ipv4Addr = source.parse().unwrap();
    let SocketAddr::V4(dst) = to else { return None };
    // SAFETY: plain socket calls on a fresh descriptor; sockaddr_in values are
    // fully initialised and live for the calls.
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM, 0);
        if fd < 0 {
            return None;
        }
        let mut a: libc::sockaddr_in = std::mem::zeroed();
        a.sin_family = libc::AF_INET as u16;
        a.sin_addr.s_addr = u32::from(src).to_be();
        if libc::bind(fd, &a as *const _ as *const libc::sockaddr, std::mem::size_of::<libc::sockaddr_in>() as u32) != 0 {
            libc::close(fd);
            return None;
        }
        let mut b: libc::sockaddr_in = std::mem::zeroed();
        b.sin_family = libc::AF_INET as u16;
        b.sin_port = dst.port().to_be();
        b.sin_addr.s_addr = u32::from(*dst.ip()).to_be();
        if libc::connect(fd, &b as *const _ as *const libc::sockaddr, std::mem::size_of::<libc::sockaddr_in>() as u32) != 0 {
            libc::close(fd);
            return None;
        }
        Some(TcpStream::from_raw_fd(fd))
    }
}

/// A legitimate authenticated GET on a fresh connection: its status and how
/// long it took.
fn timed_get(server: &LocalServer, id: u64) -> (u16, Duration) {
    let t = Instant::now();
    let r = server.get(id);
    (r.status, t.elapsed())
}

#[test]
fn idle_and_half_sent_connections_do_not_lock_clients_out() {
    let server = LocalServer::start();
    let id = server.create_memory("still reachable");
    let addr = server.addr();
    // 256 idle connections from one source, then 256 that sent half a head,
    // spread over four more loopback sources.
    let mut held = Vec::new();
    for _ in 0..256 {
        held.push(TcpStream::connect(addr).unwrap());
    }
    let (status, took) = timed_get(&server, id);
    assert_eq!(status, 200);
    assert!(took < Duration::from_secs(1), "answered after {took:?} under 256 idle connections");
    for i in 0..256 {
        let source = format!("127.0.0.{}", 2 + i % 4);
        if let Some(mut s) = connect_from(&source, addr) {
            let _ = s.write_all(b"GET /api/memory/1 HTTP/1.1\r\nHost: x\r\n");
            held.push(s);
        }
    }
    assert!(held.len() >= 400, "the attack really opened its connections ({})", held.len());
    for _ in 0..5 {
        let (status, took) = timed_get(&server, id);
        assert_eq!(status, 200);
        assert!(took < Duration::from_secs(1), "answered after {took:?} under {} idle or half-sent connections", held.len());
    }
    drop(held);
}

#[test]
fn a_connection_that_never_finishes_its_head_is_closed_within_the_deadline() {
    let server = LocalServer::start();
    // The server's header deadline counts from its accept: the clock starts
    // before the connect, so a busy machine can only make `took` longer.
    let t = Instant::now();
    let mut s = TcpStream::connect(server.addr()).unwrap();
    s.write_all(b"GET /api/memory/1 HTTP/1.1\r\n").unwrap();
    s.set_read_timeout(Some(Duration::from_secs(15))).unwrap();
    let mut buf = Vec::new();
    let _ = s.read_to_end(&mut buf);
    let took = t.elapsed();
    assert!(took >= Duration::from_secs(4) && took < Duration::from_secs(12), "closed after {took:?}");
    let text = String::from_utf8_lossy(&buf);
    assert!(text.is_empty() || text.starts_with("HTTP/1.1 408"), "{text}");
    // A silent new connection is closed too (header deadline from accept).
    let t = Instant::now();
    let mut quiet = TcpStream::connect(server.addr()).unwrap();
    quiet.set_read_timeout(Some(Duration::from_secs(15))).unwrap();
    let _ = quiet.read_to_end(&mut buf);
    assert!(t.elapsed() < Duration::from_secs(12), "a silent connection was held {:?}", t.elapsed());
}

#[test]
fn unauthenticated_requests_cost_nothing() {
    // Alone in a child process (support::isolated): its 60 s bound on 3,000
    // requests held in a binary of its own, not beside the rest of the suite.
    if !isolated::alone(module_path!(), "unauthenticated_requests_cost_nothing") {
        return; // it ran alone in a child process of this binary
    }
    let server = LocalServer::start(); // --faults and --request-log on
    server.set_faults(&serde_json::json!([{"method": "GET", "path": "/api/memory/1", "action": {"type": "delay", "ms": 2000}}]));
    let before_log = server.request_log().len();
    let rss_before = rss_kib(server.pid());
    let t = Instant::now();
    let mut answered = 0;
    for i in 0..3000u32 {
        // Distinct paths (each would be a new occurrence-count key), one
        // request per connection, the delay fault's own path included.
        let path = if i == 0 { "/api/memory/1".to_owned() } else { format!("/api/memory/{}?pad={}", i, "p".repeat(2000)) };
        let r = server.request_unauthenticated("GET", &path, None, &[]);
        assert_eq!(r.status, 401);
        answered += 1;
    }
    assert!(t.elapsed() < Duration::from_secs(60));
    // A large declared body is refused on the head, without reading it (on a
    // connection opened now: one opened before the 3,000 requests met the
    // server's header deadline when they took longer, on a loaded machine).
    let mut stream = TcpStream::connect(server.addr()).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let head = "PATCH /api/memory/1 HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000000\r\n\r\n";
    stream.write_all(head.as_bytes()).unwrap();
    let mut reader = BufReader::new(&stream);
    let mut status_line = String::new();
    reader.read_line(&mut status_line).unwrap();
    assert!(status_line.starts_with("HTTP/1.1 401"), "{status_line}");
    assert_eq!(answered, 3000);
    assert_eq!(server.request_log().len(), before_log, "no request-log line for an unauthenticated request");
    let grown = rss_kib(server.pid()).saturating_sub(rss_before);
    assert!(grown < 16 * 1024, "the server grew by {grown} KiB on unauthenticated requests");
    // The fault applies only to an authenticated request, and counting
    // starts there: its first occurrence is the authenticated one.
    let t = Instant::now();
    assert_eq!(server.get(1).status, 403);
    assert!(t.elapsed() >= Duration::from_millis(1900), "the delay fault ran for the first authenticated GET");
}

#[test]
fn sigterm_stops_a_server_on_any_loopback_address() {
    for listen in ["127.255.255.255:0", "127.0.0.1:0", "127.1.2.3:0", "[::1]:0"] {
        let dir = tempfile::tempdir().unwrap();
        let token = dir.path().join("token");
        kijito_files::private::write_atomic(&token, b"t0k3n-for-the-sigterm-test\n").unwrap();
        let mut child = Command::new(KIJITO_LOCAL)
            .args(["serve", "--listen", listen, "--db"])
            .arg(dir.path().join("db"))
            .arg("--token-file")
            .arg(&token)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        if line.is_empty() {
            // This address cannot be bound here (e.g. no IPv6): nothing to stop.
            let out = child.wait_with_output().unwrap();
            assert!(String::from_utf8_lossy(&out.stderr).contains("listen_bind_failed"), "{listen}");
            continue;
        }
        assert!(line.starts_with("kijito-local listening on http://"), "{line}");
        // The clock starts before the signal it bounds.
        let t = Instant::now();
        // SAFETY: kill with a pid we spawned.
        unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
        let status = loop {
            if let Some(s) = child.try_wait().unwrap() {
                break s;
            }
            assert!(t.elapsed() < Duration::from_secs(5), "{listen}: still running {:?} after SIGTERM", t.elapsed());
            std::thread::sleep(Duration::from_millis(20));
        };
        assert!(status.success(), "{listen}: {status:?}");
    }
}
