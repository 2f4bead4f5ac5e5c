//! The bearer token never goes to a proxy. A capturing
//! "proxy" (a TCP listener on 127.0.0.1 that records every byte it receives)
//! is named in every proxy variable the HTTP stack knows; every networked
//! helper still talks to kijito-local directly and the proxy sees nothing.
#![allow(clippy::unwrap_used)]

use crate::support;
use support::snapshot as support_snapshot;

use std::io::Read;
use std::net::TcpListener;
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use support_snapshot::*;

const POINTER_PUBLISH: &str = env!("CARGO_BIN_EXE_pointer-publish");

/// A listener that records what any client sends it (bounded: 64 KiB per
/// connection, 2 s read timeout), on a thread that lives as long as the test.
fn capturing_proxy() -> (String, Arc<Mutex<Vec<Vec<u8>>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let seen: Arc<Mutex<Vec<Vec<u8>>>> = Arc::default();
    let log = seen.clone();
    std::thread::spawn(move || {
        for conn in listener.incoming().take(1000) {
            let Ok(mut conn) = conn else { continue };
            let _ = conn.set_read_timeout(Some(Duration::from_secs(2)));
            let mut buf = Vec::new();
            let _ = (&mut conn).take(64 * 1024).read_to_end(&mut buf);
            log.lock().unwrap().push(buf);
        }
    });
    (format!("http://{addr}"), seen)
}

fn with_proxy(c: &mut Command, proxy: &str) {
    for var in ["http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "ALL_PROXY", "all_proxy"] {
        c.env(var, proxy);
    }
    c.env_remove("NO_PROXY").env_remove("no_proxy");
}

#[test]
fn no_request_reaches_a_proxy_from_the_environment() {
    let (proxy, seen) = capturing_proxy();
    let world = World::start();
    let seeded = world.seed(2, 0);
    let p = seeded.pointer_id.to_string();
    // pointer-digest
    let mut c = world.command(POINTER_DIGEST);
    c.args(["--pointer-id", &p]);
    with_proxy(&mut c, &proxy);
    let out = c.output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out).trim(), seeded.pointer_digest());
    // pointer-snapshot
    let report = world.report_path("proxy.json");
    let mut c = world.command(POINTER_SNAPSHOT);
    c.args(["--pointer-id", &p, "--lock-message-id", &seeded.lock_id.to_string()]).arg("--report-file").arg(&report);
    with_proxy(&mut c, &proxy);
    let out = c.output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    // pointer-publish (claim, GET, PATCH, release)
    let content = world.path("new.json");
    write_private(&content, seeded.manifest.replacen("\"title\":\"", "\"title\":\"proxy ", 1).as_bytes());
    let mut c = world.command(POINTER_PUBLISH);
    c.args(["--pointer-id", &p, "--lock-message-id", &seeded.lock_id.to_string(), "--expected-pointer-digest", &seeded.pointer_digest()])
        .arg("--content-file")
        .arg(&content)
        .arg("--rollback-file")
        .arg(world.report_path("rollback.json"));
    with_proxy(&mut c, &proxy);
    let out = c.output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    // Every request reached kijito-local ...
    assert!(world.server.request_log().iter().any(|l| l["method"] == "PATCH"));
    // ... and not one connection or byte reached the proxy (a helper that
    // had gone through it would have waited for its answer and failed).
    let seen = seen.lock().unwrap();
    assert!(
        seen.is_empty(),
        "the proxy received {} connection(s): {:?}",
        seen.len(),
        seen.iter().map(|b| String::from_utf8_lossy(b).into_owned()).collect::<Vec<_>>()
    );
}
