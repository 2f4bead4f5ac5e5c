//! `kijito-local view` (docs/kijito-local.md, *view*) over a journal the
//! real hooks wrote (an ATTESTED and an UNATTESTED compaction after
//! `qa-gate record` against a real kijito-local) and that kijito-local's
//! database: 401 without the launch's secret, the secret exchanged for an
//! HttpOnly SameSite=Strict cookie, write methods refused, a memory holding
//! `<script>` rendered as text, a new journal line delivered by the event
//! stream within a bounded wait, and the pages loaded in a real headless
//! Chromium (skipped, saying why, when it is not installed).

#![allow(clippy::unwrap_used)]

use crate::support;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use support::gate::{World, POSTCOMPACT, PRECOMPACT, SESSION_HOOK};

const LOCAL: &str = env!("CARGO_BIN_EXE_kijito-local");
const S: &str = "2208dc6c-1602-4db0-9c33-9125ee25dc44";
const XSS: &str = "<script>alert('xss')</script><img src=x onerror=alert(1)> anchor";

pub(crate) struct View {
    child: Child,
    addr: String,
    secret: String,
}

impl Drop for View {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn hook(w: &World, bin: &str, args: &[&str], key: &str) {
    let mut all = vec!["--host", "claude", "--data-dir"];
    let data = w.data_arg();
    all.push(&data);
    all.extend_from_slice(args);
    let out = w.run(bin, &all, &w.hook_stdin("claude", key, S));
    assert_eq!(out.status.code(), Some(0));
}

/// A journal with one ATTESTED and one UNATTESTED compaction, and a
/// database holding a memory with markup in it.
fn world() -> (World, u64) {
    let w = World::new();
    w.record_ok(S);
    let id = w.live().create_memory(XSS);
    hook(&w, &PRECOMPACT, &[], "PreCompact(manual, no args)");
    hook(&w, &SESSION_HOOK, &["--expect", "SessionStart"], "SessionStart(source=compact)");
    hook(&w, &POSTCOMPACT, &[], "PostCompact(manual)");
    hook(&w, &PRECOMPACT, &[], "PreCompact(manual, no args)");
    hook(&w, &SESSION_HOOK, &["--expect", "SessionStart"], "SessionStart(source=compact)");
    (w, id)
}

pub(crate) fn view(w: &World) -> View {
    let mut child = w
        .command(LOCAL)
        .args(["view", "--data-dir", &w.data_arg(), "--db", w.live().db_path().to_str().unwrap()])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let url = line.trim().strip_prefix("kijito-local view on http://").unwrap_or_else(|| panic!("{line}")).to_owned();
    let (addr, secret) = url.split_once("/?k=").unwrap();
    View { child, addr: addr.to_owned(), secret: secret.to_owned() }
}

/// One request; the status, the head and the body.
pub(crate) fn request(v: &View, method: &str, target: &str, cookie: Option<&str>) -> (u16, String, String) {
    let mut s = TcpStream::connect(&v.addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let cookie = cookie.map(|c| format!("Cookie: {c}\r\n")).unwrap_or_default();
    let len = if method == "GET" { String::new() } else { "Content-Length: 0\r\n".into() };
    write!(s, "{method} {target} HTTP/1.1\r\nHost: {}\r\n{cookie}{len}Connection: close\r\n\r\n", v.addr).unwrap();
    let mut bytes = Vec::new();
    let _ = s.read_to_end(&mut bytes);
    let text = String::from_utf8_lossy(&bytes).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head.split(' ').nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    (status, head.to_owned(), body.to_owned())
}

/// The cookie the secret is exchanged for.
pub(crate) fn sign_in(v: &View) -> String {
    let (status, head, _) = request(v, "GET", &format!("/?k={}", v.secret), None);
    assert_eq!(status, 303, "{head}");
    let set = head.lines().find_map(|l| l.strip_prefix("Set-Cookie: ")).unwrap();
    assert!(set.contains("HttpOnly") && set.contains("SameSite=Strict"), "{set}");
    assert!(head.lines().any(|l| l == "Location: /"), "the secret leaves the URL: {head}");
    set.split(';').next().unwrap().to_owned()
}

#[test]
fn the_secret_the_cookie_and_read_only() {
    let (w, _) = world();
    let v = view(&w);
    let (status, _, body) = request(&v, "GET", &format!("/s/{S}"), None);
    assert_eq!(status, 401);
    assert!(!body.contains("UNATTESTED"), "nothing of the journal without the secret");
    assert_eq!(request(&v, "GET", "/?k=0123456789abcdef0123456789abcdef", None).0, 401, "a wrong secret");
    let cookie = sign_in(&v);
    let (status, head, body) = request(&v, "GET", &format!("/s/{S}"), Some(&cookie));
    assert_eq!(status, 200, "{head}");
    assert!(head.contains("Content-Security-Policy: default-src 'none'; style-src 'self'; script-src 'self'"), "{head}");
    assert!(body.contains("data-total=\"2\" data-attested=\"1\" data-unattested=\"1\""), "{body}");
    assert!(body.contains("data-reason=\"pass_missing\""), "{body}");
    for m in ["POST", "PUT", "DELETE", "PATCH"] {
        let (status, head, _) = request(&v, m, &format!("/s/{S}"), Some(&cookie));
        assert_eq!(status, 405, "{m}: {head}");
        assert!(head.contains("Allow: GET"), "{head}");
    }
    // The API bearer token is nowhere on a page.
    for page in ["/", &format!("/s/{S}"), "/search?q=anchor"] {
        assert!(!request(&v, "GET", page, Some(&cookie)).2.contains(w.live().token()), "{page}");
    }
    // A Host that is not loopback (DNS rebinding) is refused.
    let mut s = TcpStream::connect(&v.addr).unwrap();
    write!(s, "GET / HTTP/1.1\r\nHost: evil.example\r\n{cookie}\r\nConnection: close\r\n\r\n", cookie = format_args!("Cookie: {cookie}"))
        .unwrap();
    let mut text = String::new();
    let _ = s.read_to_string(&mut text);
    assert!(text.starts_with("HTTP/1.1 403"), "{text}");
}

#[test]
fn a_memory_with_markup_renders_as_text() {
    let (w, id) = world();
    let v = view(&w);
    let cookie = sign_in(&v);
    for page in [format!("/m/{id}"), "/search?q=anchor".to_owned()] {
        let (status, _, body) = request(&v, "GET", &page, Some(&cookie));
        assert_eq!(status, 200, "{page}");
        assert!(body.contains("&lt;script&gt;alert(&#39;xss&#39;)&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;"), "{page}: {body}");
        assert!(!body.contains("<script>alert") && !body.contains("<img src=x"), "{page}: {body}");
    }
}

#[test]
fn the_event_stream_delivers_a_new_line() {
    let (w, _) = world();
    let v = view(&w);
    let cookie = sign_in(&v);
    let (_, _, page) = request(&v, "GET", &format!("/s/{S}"), Some(&cookie));
    let last: u64 = page.split("data-last-seq=\"").nth(1).unwrap().split('"').next().unwrap().parse().unwrap();
    let mut s = TcpStream::connect(&v.addr).unwrap();
    s.set_read_timeout(Some(Duration::from_millis(200))).unwrap();
    write!(s, "GET /events/{S}?after={last} HTTP/1.1\r\nHost: {}\r\nCookie: {cookie}\r\n\r\n", v.addr).unwrap();
    let mut got = Vec::new();
    let read_until = |s: &mut TcpStream, got: &mut Vec<u8>, want: &str| {
        let deadline = Instant::now() + Duration::from_secs(20);
        let mut chunk = [0u8; 4096];
        while Instant::now() < deadline && !String::from_utf8_lossy(got).contains(want) {
            if let Ok(n) = s.read(&mut chunk) {
                got.extend_from_slice(&chunk[..n]);
            }
        }
        String::from_utf8_lossy(got).contains(want)
    };
    assert!(read_until(&mut s, &mut got, "retry:"), "the stream starts: {}", String::from_utf8_lossy(&got));
    assert!(String::from_utf8_lossy(&got).starts_with("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream"));
    // A hook writes a line: the stream sends it.
    hook(&w, &PRECOMPACT, &[], "PreCompact(auto)");
    let want = format!("id: {}\nevent: line\ndata: ", last + 1);
    assert!(read_until(&mut s, &mut got, &want), "{}", String::from_utf8_lossy(&got));
    assert!(String::from_utf8_lossy(&got).contains("\"kind\":\"precompact\""), "{}", String::from_utf8_lossy(&got));
}

/// The headless browser's command line (the options the brief of this test names).
fn chromium(profile: &Path) -> Command {
    let mut c = Command::new("/usr/bin/chromium");
    c.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
    ])
    .arg(format!("--user-data-dir={}", profile.display()))
    .stdin(Stdio::null())
    .stderr(Stdio::null());
    c
}

/// Run the browser, bounded (60 s): its stdout.
fn browse(c: &mut Command) -> String {
    let mut child = c.stdout(Stdio::piped()).spawn().unwrap();
    let mut out = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = out.read_to_string(&mut s);
        s
    });
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let _ = child.kill();
    let _ = child.wait();
    reader.join().unwrap()
}

#[test]
fn the_pages_in_a_headless_chromium() {
    if !Path::new("/usr/bin/chromium").is_file() {
        println!("SKIP the_pages_in_a_headless_chromium: /usr/bin/chromium is not installed (.ci/run installs it with apt-get)");
        return;
    }
    let (w, id) = world();
    let v = view(&w);
    let profile = w.path("chromium-profile");
    // The secret in the URL is exchanged for the cookie by the browser itself.
    let sessions = browse(chromium(&profile).args(["--dump-dom", &format!("http://{}/?k={}", v.addr, v.secret)]));
    assert!(sessions.contains(&format!("data-session=\"{S}\"")), "{sessions}");
    assert!(sessions.contains("data-attested=\"1\" data-total=\"2\""), "{sessions}");
    let session = browse(chromium(&profile).args(["--dump-dom", &format!("http://{}/s/{S}?k={}", v.addr, v.secret)]));
    assert!(session.contains("<span class=\"badge attested\">ATTESTED</span>"), "{session}");
    assert!(session.contains("<span class=\"badge unattested\">UNATTESTED</span>"), "{session}");
    assert!(session.contains("data-unattested=\"1\"") && session.contains("data-reason=\"pass_missing\""), "{session}");
    assert!(session.contains("data-kind=\"delivery\""), "{session}");
    let memory = browse(chromium(&profile).args(["--dump-dom", &format!("http://{}/m/{id}?k={}", v.addr, v.secret)]));
    assert!(memory.contains("&lt;script&gt;alert('xss')&lt;/script&gt;"), "the markup is text in the DOM: {memory}");
    assert!(!memory.contains("<img src=\"x\""), "{memory}");
    // A screenshot of the session page (docs/viewer-session.png when
    // KIJITO_VIEWER_SCREENSHOT names that file).
    let shot = std::env::var_os("KIJITO_VIEWER_SCREENSHOT").map(std::path::PathBuf::from).unwrap_or_else(|| w.path("session.png"));
    browse(chromium(&profile).args([
        &format!("--screenshot={}", shot.display()),
        "--window-size=1200,900",
        &format!("http://{}/s/{S}?k={}", v.addr, v.secret),
    ]));
    let png = std::fs::read(&shot).unwrap();
    assert!(png.starts_with(b"\x89PNG\r\n\x1a\n") && png.len() > 1000, "a PNG screenshot");
}
