//! Benchmark: `GET /api/memory/{id}` against a real kijito-local (built with
//! the bench profile, i.e. release) from several concurrent keep-alive
//! clients, a fixed number of requests each. Prints requests/s and latency
//! percentiles. Target on the 2-core dev machine: >= 5000 req/s, p99 < 5 ms.
//!
//! Run: `cargo bench --bench kijito_local_get`

#[path = "../tests/support/mod.rs"]
mod support;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};
use support::{LocalServer, Options};

const CLIENTS: usize = 4;
const WARMUP_PER_CLIENT: usize = 500;
const REQUESTS_PER_CLIENT: usize = 5_000;

/// Read one response (headers + Content-Length body) from a keep-alive stream.
fn read_response(stream: &mut TcpStream, buf: &mut Vec<u8>) -> u16 {
    buf.clear();
    let mut chunk = [0u8; 8192];
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = std::str::from_utf8(&buf[..end]).expect("head");
            let status: u16 = head[9..12].parse().expect("status");
            let length: usize =
                head.split("\r\n").find_map(|l| l.strip_prefix("Content-Length: ")).and_then(|v| v.parse().ok()).expect("content-length");
            while buf.len() < end + 4 + length {
                let n = stream.read(&mut chunk).expect("read body");
                assert!(n > 0, "closed");
                buf.extend_from_slice(&chunk[..n]);
            }
            assert_eq!(buf.len(), end + 4 + length, "no pipelining here");
            return status;
        }
        let n = stream.read(&mut chunk).expect("read head");
        assert!(n > 0, "closed");
        buf.extend_from_slice(&chunk[..n]);
    }
}

fn client(server: &LocalServer, id: u64, count: usize) -> Vec<Duration> {
    let mut stream = TcpStream::connect(server.addr()).expect("connect");
    stream.set_nodelay(true).expect("nodelay");
    stream.set_read_timeout(Some(Duration::from_secs(30))).expect("timeout");
    let request = format!(
        "GET /api/memory/{id} HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: kijito-bench\r\nAccept: application/json\r\nAuthorization: Bearer {}\r\n\r\n",
        server.token()
    );
    let mut buf = Vec::with_capacity(4096);
    let mut latencies = Vec::with_capacity(count);
    for _ in 0..count {
        let start = Instant::now();
        stream.write_all(request.as_bytes()).expect("write");
        assert_eq!(read_response(&mut stream, &mut buf), 200);
        latencies.push(start.elapsed());
    }
    latencies
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let index = ((sorted.len() as f64 * p).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[index]
}

fn main() {
    let server = LocalServer::start_with(Options { faults: false, request_log: false, ..Options::default() });
    let target = server.create_memory(&"pointer manifest content ".repeat(40));
    for i in 0..3 {
        let other = server.create_memory(&format!("anchor {i}"));
        server.relate(target, other);
    }
    let run = |per_client: usize| -> (Duration, Vec<Duration>) {
        let start = Instant::now();
        let mut all: Vec<Duration> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..CLIENTS).map(|_| s.spawn(|| client(&server, target, per_client))).collect();
            handles.into_iter().flat_map(|h| h.join().expect("client")).collect()
        });
        let elapsed = start.elapsed();
        all.sort();
        (elapsed, all)
    };
    run(WARMUP_PER_CLIENT);
    let (elapsed, sorted) = run(REQUESTS_PER_CLIENT);
    let total = sorted.len();
    let rps = total as f64 / elapsed.as_secs_f64();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!(
        "kijito_local_get: {total} GETs, {CLIENTS} keep-alive clients, {:.2} s: {rps:.0} req/s, p50 {:.3} ms, p99 {:.3} ms, p99.9 {:.3} ms, max {:.3} ms",
        elapsed.as_secs_f64(),
        ms(percentile(&sorted, 0.50)),
        ms(percentile(&sorted, 0.99)),
        ms(percentile(&sorted, 0.999)),
        ms(sorted[total - 1]),
    );
    println!(
        "targets: >= 5000 req/s ({}), p99 < 5 ms ({})",
        if rps >= 5000.0 { "met" } else { "MISSED" },
        if percentile(&sorted, 0.99) < Duration::from_millis(5) { "met" } else { "MISSED" }
    );
}
