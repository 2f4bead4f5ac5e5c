//! The shared integration-test harness: a real `kijito-local` on an
//! ephemeral 127.0.0.1 port, plus small blocking HTTP helpers over
//! `std::net` (no HTTP client crate needed).
//!
//! Use it from any test file of this package with `mod support;`:
//!
//! ```ignore
//! mod support;
//! use support::LocalServer;
//!
//! let server = LocalServer::start();
//! let id = server.create_memory("hello");
//! let got = server.get(id);
//! assert_eq!(got.status, 200);
//! server.set_faults(&serde_json::json!([{"method":"GET","path":format!("/api/memory/{id}"),"action":{"type":"close_before"}}]));
//! ```
//!
//! Every server runs in its own private temp dir (0700) with a random token
//! in `token` (0600), the database `kijito.db`, a request log `requests.log`
//! and (unless disabled) the faults file `faults.json` (absent until
//! `set_faults`). The child is killed when the `LocalServer` is dropped.
//! Every wait is bounded.

#![allow(dead_code)]

use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// The kijito-local binary built for this test crate.
pub(crate) const KIJITO_LOCAL: &str = env!("CARGO_BIN_EXE_kijito-local");

/// How long a server may take to print its listening line.
const START_TIMEOUT: Duration = Duration::from_secs(30);
/// Socket timeouts of the helpers.
const IO_TIMEOUT: Duration = Duration::from_secs(30);

/// How to start a server.
#[derive(Debug, Clone)]
pub(crate) struct Options {
    /// `--reap-after SECONDS` (server default when None).
    pub reap_after: Option<u64>,
    /// Pass `--faults <dir>/faults.json`.
    pub faults: bool,
    /// Pass `--request-log <dir>/requests.log`.
    pub request_log: bool,
    /// Any further argv.
    pub extra_args: Vec<String>,
}

impl Default for Options {
    fn default() -> Self {
        Options { reap_after: None, faults: true, request_log: true, extra_args: Vec::new() }
    }
}

/// A running `kijito-local serve`.
pub(crate) struct LocalServer {
    dir: tempfile::TempDir,
    child: Option<Child>,
    addr: SocketAddr,
    token: String,
    opts: Options,
}

/// One HTTP answer.
#[derive(Debug, Clone)]
pub(crate) struct HttpResponse {
    pub status: u16,
    /// Header names lowercased.
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl HttpResponse {
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers.iter().find(|(n, _)| *n == name).map(|(_, v)| v.as_str())
    }

    /// The body as JSON (panics if it is not).
    pub(crate) fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("body is not JSON ({e}): {}", self.body))
    }

    /// The `result` string of a GET /api/memory answer.
    pub(crate) fn rendering(&self) -> String {
        assert_eq!(self.status, 200, "{}", self.body);
        self.json()["result"].as_str().expect("result is a string").to_owned()
    }
}

impl LocalServer {
    pub(crate) fn start() -> LocalServer {
        LocalServer::start_with(Options::default())
    }

    pub(crate) fn start_with(opts: Options) -> LocalServer {
        let dir = tempfile::Builder::new().prefix("kijito-local-test").tempdir().expect("temp dir");
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700)).expect("chmod 0700");
        let token = kijito_files::random::hex(16);
        kijito_files::private::write_atomic(&dir.path().join("token"), format!("{token}\n").as_bytes()).expect("token file");
        let (child, addr) = spawn(dir.path(), &opts);
        LocalServer { dir, child: Some(child), addr, token, opts }
    }

    /// The server process id.
    pub(crate) fn pid(&self) -> u32 {
        self.child.as_ref().expect("running").id()
    }

    pub(crate) fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://127.0.0.1:<port>`.
    pub(crate) fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub(crate) fn dir(&self) -> &Path {
        self.dir.path()
    }

    pub(crate) fn token_file(&self) -> PathBuf {
        self.dir.path().join("token")
    }

    /// The token itself (tests only: to prove it never leaks).
    pub(crate) fn token(&self) -> &str {
        &self.token
    }

    pub(crate) fn db_path(&self) -> PathBuf {
        self.dir.path().join("kijito.db")
    }

    pub(crate) fn faults_path(&self) -> PathBuf {
        self.dir.path().join("faults.json")
    }

    pub(crate) fn request_log_path(&self) -> PathBuf {
        self.dir.path().join("requests.log")
    }

    /// Replace the fault rules (atomically; the server re-reads them on
    /// every request).
    pub(crate) fn set_faults(&self, rules: &Value) {
        assert!(self.opts.faults, "this server was started without --faults");
        kijito_files::private::write_atomic(&self.faults_path(), rules.to_string().as_bytes()).expect("write faults");
    }

    pub(crate) fn clear_faults(&self) {
        self.set_faults(&Value::Array(Vec::new()));
    }

    /// Every request-log line so far.
    pub(crate) fn request_log(&self) -> Vec<Value> {
        let text = std::fs::read_to_string(self.request_log_path()).unwrap_or_default();
        text.lines().map(|l| serde_json::from_str(l).expect("request log line is JSON")).collect()
    }

    /// SIGTERM and wait (bounded; SIGKILL after 10 s).
    pub(crate) fn stop(&mut self) -> Option<ExitStatus> {
        let mut child = self.child.take()?;
        // SAFETY: kill(2) on our own child's pid.
        unsafe {
            libc::kill(child.id() as libc::pid_t, libc::SIGTERM);
        }
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Ok(Some(status)) = child.try_wait() {
                return Some(status);
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                return child.wait().ok();
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Stop (SIGTERM) and start again on the same database and files; the
    /// port changes.
    pub(crate) fn restart(&mut self) -> Option<ExitStatus> {
        let status = self.stop();
        let (child, addr) = spawn(self.dir.path(), &self.opts);
        self.child = Some(child);
        self.addr = addr;
        status
    }

    // ---- HTTP ----

    /// An authenticated request; panics if the connection closes unanswered.
    pub(crate) fn request(&self, method: &str, path: &str, body: Option<&str>, headers: &[(&str, &str)]) -> HttpResponse {
        self.try_request(method, path, body, headers).unwrap_or_else(|e| panic!("{method} {path}: {e}"))
    }

    /// An authenticated request; Err when the connection closes unanswered.
    pub(crate) fn try_request(
        &self,
        method: &str,
        path: &str,
        body: Option<&str>,
        headers: &[(&str, &str)],
    ) -> Result<HttpResponse, String> {
        let auth = format!("Bearer {}", self.token);
        let mut all: Vec<(&str, &str)> = vec![("Authorization", &auth)];
        all.extend_from_slice(headers);
        send(self.addr, &build_request(method, path, body, &all))
    }

    /// A request without the token (plus the given headers).
    pub(crate) fn request_unauthenticated(&self, method: &str, path: &str, body: Option<&str>, headers: &[(&str, &str)]) -> HttpResponse {
        send(self.addr, &build_request(method, path, body, headers)).expect("answer")
    }

    /// Send raw bytes; Err when the connection closes unanswered.
    pub(crate) fn raw(&self, bytes: &[u8]) -> Result<HttpResponse, String> {
        send(self.addr, bytes)
    }

    pub(crate) fn get(&self, id: u64) -> HttpResponse {
        self.request("GET", &format!("/api/memory/{id}"), None, &[])
    }

    /// PATCH with the hosted body shape (persona codex, scope project).
    pub(crate) fn patch(&self, id: u64, content: &str, project: &str, if_match: Option<&str>) -> HttpResponse {
        let body = serde_json::json!({"content": content, "persona": "codex", "scope": "project", "project": project}).to_string();
        let headers: Vec<(&str, &str)> = if_match.map(|v| vec![("If-Match", v)]).unwrap_or_default();
        self.request("PATCH", &format!("/api/memory/{id}"), Some(&body), &headers)
    }

    fn post_ok(&self, path: &str, body: &Value) -> Value {
        let r = self.request("POST", path, Some(&body.to_string()), &[]);
        assert_eq!(r.status, 200, "POST {path}: {}", r.body);
        r.json()
    }

    /// Create a memory (persona codex, project Codex); returns its id.
    pub(crate) fn create_memory(&self, content: &str) -> u64 {
        self.create_memory_with(serde_json::json!({"content": content}))
    }

    /// Create a memory from `fields` (defaults filled in for `persona`,
    /// `scope`, `project`); returns its id.
    pub(crate) fn create_memory_with(&self, mut fields: Value) -> u64 {
        let obj = fields.as_object_mut().expect("fields object");
        obj.entry("persona").or_insert("codex".into());
        obj.entry("scope").or_insert("project".into());
        obj.entry("project").or_insert("Codex".into());
        self.post_ok("/api/memory", &fields)["id"].as_u64().expect("id")
    }

    /// Correct memory `id` with new content; returns the correction's id.
    pub(crate) fn correct(&self, id: u64, content: &str) -> u64 {
        self.post_ok(&format!("/api/memory/{id}/correct"), &serde_json::json!({"content": content}))["id"].as_u64().expect("id")
    }

    pub(crate) fn fade(&self, id: u64) {
        self.post_ok(&format!("/api/memory/{id}/fade"), &serde_json::json!({}));
    }

    pub(crate) fn relate(&self, from: u64, to: u64) {
        self.post_ok(&format!("/api/memory/{from}/relate"), &serde_json::json!({"to": to}));
    }

    /// Send a hive message (e.g. a pointer mutex); returns its id.
    pub(crate) fn send_message(&self, to: &str, from: &str, content: &str) -> u64 {
        self.post_ok("/api/send", &serde_json::json!({"to": to, "from": from, "content": content}))["result"]["id"].as_u64().expect("id")
    }

    pub(crate) fn claim(&self, message_id: u64, persona: &str, lease_seconds: u64) -> HttpResponse {
        let body = serde_json::json!({"message_id": message_id, "persona": persona, "lease_seconds": lease_seconds}).to_string();
        self.request("POST", "/api/claim", Some(&body), &[])
    }

    pub(crate) fn release(&self, message_id: u64, persona: &str) -> HttpResponse {
        let body = serde_json::json!({"message_id": message_id, "persona": persona}).to_string();
        self.request("POST", "/api/release", Some(&body), &[])
    }
}

impl Drop for LocalServer {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Spawn `kijito-local serve` in `dir` and read its port from the first line.
fn spawn(dir: &Path, opts: &Options) -> (Child, SocketAddr) {
    let mut cmd = Command::new(KIJITO_LOCAL);
    cmd.arg("serve").arg("--db").arg(dir.join("kijito.db")).arg("--token-file").arg(dir.join("token")).arg("--listen").arg("127.0.0.1:0");
    if let Some(secs) = opts.reap_after {
        cmd.arg("--reap-after").arg(secs.to_string());
    }
    if opts.faults {
        cmd.arg("--faults").arg(dir.join("faults.json"));
    }
    if opts.request_log {
        cmd.arg("--request-log").arg(dir.join("requests.log"));
    }
    cmd.args(&opts.extra_args).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::inherit());
    let mut child = cmd.spawn().expect("spawn kijito-local");
    let stdout = child.stdout.take().expect("stdout");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut lines = BufReader::new(stdout).lines();
        let _ = tx.send(lines.next());
        for _ in lines {} // drain until the child exits
    });
    let line = match rx.recv_timeout(START_TIMEOUT) {
        Ok(Some(Ok(line))) => line,
        other => {
            let _ = child.kill();
            panic!("kijito-local did not print its listening line: {other:?}");
        }
    };
    let prefix = "kijito-local listening on http://";
    let addr =
        line.strip_prefix(prefix).and_then(|a| a.parse::<SocketAddr>().ok()).unwrap_or_else(|| panic!("unexpected first line {line:?}"));
    assert!(addr.ip().is_loopback());
    (child, addr)
}

/// An HTTP/1.1 request with `Connection: close`.
pub(crate) fn build_request(method: &str, path: &str, body: Option<&str>, headers: &[(&str, &str)]) -> Vec<u8> {
    let mut out = format!(
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: kijito-qa-tests\r\nAccept: application/json\r\nConnection: close\r\n"
    );
    for (name, value) in headers {
        out.push_str(&format!("{name}: {value}\r\n"));
    }
    if let Some(body) = body {
        out.push_str(&format!("Content-Type: application/json\r\nContent-Length: {}\r\n", body.len()));
    }
    out.push_str("\r\n");
    let mut bytes = out.into_bytes();
    if let Some(body) = body {
        bytes.extend_from_slice(body.as_bytes());
    }
    bytes
}

/// Send raw request bytes on a fresh connection and read the answer to EOF.
pub(crate) fn send(addr: SocketAddr, request: &[u8]) -> Result<HttpResponse, String> {
    let mut stream = TcpStream::connect_timeout(&addr, IO_TIMEOUT).map_err(|e| format!("connect: {e}"))?;
    stream.set_read_timeout(Some(IO_TIMEOUT)).map_err(|e| e.to_string())?;
    stream.set_write_timeout(Some(IO_TIMEOUT)).map_err(|e| e.to_string())?;
    // The server may answer (413, 411) and close before reading everything.
    let _ = stream.write_all(request);
    let mut raw = Vec::new();
    let _ = stream.take(8 * 1024 * 1024).read_to_end(&mut raw);
    parse_response(&raw)
}

/// Parse one complete HTTP/1.1 response (with Content-Length).
pub(crate) fn parse_response(raw: &[u8]) -> Result<HttpResponse, String> {
    if raw.is_empty() {
        return Err("connection closed without an answer".into());
    }
    let end = raw.windows(4).position(|w| w == b"\r\n\r\n").ok_or("no header end")?;
    let head = std::str::from_utf8(&raw[..end]).map_err(|e| e.to_string())?;
    let mut lines = head.split("\r\n");
    let status_line = lines.next().ok_or("no status line")?;
    let status: u16 =
        status_line.split(' ').nth(1).and_then(|s| s.parse().ok()).ok_or_else(|| format!("bad status line {status_line:?}"))?;
    let headers: Vec<(String, String)> =
        lines.filter_map(|l| l.split_once(':')).map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned())).collect();
    let body = &raw[end + 4..];
    let length: usize = headers.iter().find(|(n, _)| n == "content-length").and_then(|(_, v)| v.parse().ok()).ok_or("no Content-Length")?;
    if body.len() < length {
        return Err(format!("body truncated: {} of {length} bytes", body.len()));
    }
    let body = String::from_utf8(body[..length].to_vec()).map_err(|e| e.to_string())?;
    Ok(HttpResponse { status, headers, body })
}
