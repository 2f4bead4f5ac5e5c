//! A small, bounded HTTP/1.1 server side over `std::net`: one request at a
//! time per connection (keep-alive, pipelining tolerated), header block at
//! most `MAX_HEADER_BYTES`, bodies only with `Content-Length` and at most
//! `MAX_BODY_BYTES`, no chunked request bodies. Full control over the socket
//! is what lets the fault actions close a connection without answering.

use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Largest request line + headers, bytes.
pub const MAX_HEADER_BYTES: usize = 16 * 1024;
/// Largest request body, bytes (1 MiB); more answers 413.
pub const MAX_BODY_BYTES: usize = 1024 * 1024;
/// Most header lines in one request.
pub const MAX_HEADERS: usize = 64;
/// How long a keep-alive connection may sit idle between requests.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(10);
/// Header deadline: a new connection must deliver its whole request line and
/// headers within this long, and so must every later request once its
/// first byte came.
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(5);
/// How long one request body may take to arrive after its headers.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// Poll interval of blocking reads (to notice a shutdown).
const POLL: Duration = Duration::from_millis(200);

/// A parsed request.
#[derive(Debug, Clone)]
pub struct Request {
    pub method: String,
    /// The target path without the query string.
    pub path: String,
    /// The query string (after `?`, not decoded; empty when none).
    pub query: String,
    /// Header names lowercased, values trimmed, in arrival order.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// Whether the connection may serve another request afterwards.
    pub keep_alive: bool,
}

impl Request {
    /// The first value of header `name` (lowercase).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }
}

/// A response to write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    pub status: u16,
    pub body: Vec<u8>,
    pub etag: Option<String>,
}

impl Response {
    pub fn json(status: u16, value: &serde_json::Value) -> Response {
        Response { status, body: value.to_string().into_bytes(), etag: None }
    }

    pub fn raw(status: u16, body: impl Into<Vec<u8>>) -> Response {
        Response { status, body: body.into(), etag: None }
    }

    /// `{"error":"<code>","message":"<human>"}`.
    pub fn error(status: u16, code: &str, message: &str) -> Response {
        Response::json(status, &serde_json::json!({ "error": code, "message": message }))
    }
}

/// Why no request could be read.
#[derive(Debug)]
pub enum ReadError {
    /// The peer closed, the connection idled out, or the server is stopping,
    /// before a request began: close quietly.
    Closed,
    /// The head carried no valid bearer token: answer 401 and close, without
    /// reading (or allocating) the body.
    Unauthorized { method: String, path: String },
    /// A broken request: answer this (then close). `method`/`path` are set
    /// when the request line was readable.
    Bad { response: Response, method: Option<String>, path: Option<String> },
}

fn bad(status: u16, code: &str, message: &str) -> ReadError {
    ReadError::Bad { response: Response::error(status, code, message), method: None, path: None }
}

/// One accepted connection and its read buffer.
pub struct Conn {
    stream: TcpStream,
    buf: Vec<u8>,
}

impl Conn {
    pub fn new(stream: TcpStream) -> std::io::Result<Conn> {
        stream.set_nodelay(true)?;
        stream.set_read_timeout(Some(POLL))?;
        stream.set_write_timeout(Some(REQUEST_TIMEOUT))?;
        Ok(Conn { stream, buf: Vec::with_capacity(4096) })
    }

    /// Read more bytes into the buffer. Ok(false) on EOF. Timeouts come back
    /// as `Err(WouldBlock/TimedOut)`.
    fn fill(&mut self) -> std::io::Result<bool> {
        let mut chunk = [0u8; 8192];
        loop {
            match self.stream.read(&mut chunk) {
                Ok(0) => return Ok(false),
                Ok(n) => {
                    self.buf.extend_from_slice(&chunk[..n]);
                    return Ok(true);
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        }
    }

    /// Read the next request. Stops waiting when `stopping` is set while idle.
    /// `first` says this is the connection's first request (then the header
    /// deadline runs from now, not from the first byte). `authorized` sees
    /// the parsed head before any body byte is read; `on_head` runs when a
    /// head is complete (the connection is busy from then on).
    pub fn read_request(
        &mut self,
        stopping: &AtomicBool,
        first: bool,
        authorized: &dyn Fn(&Request) -> bool,
        on_head: &dyn Fn(),
    ) -> Result<Request, ReadError> {
        // Wait for the head.
        let idle_since = Instant::now();
        let mut started: Option<Instant> = if self.buf.is_empty() && !first { None } else { Some(Instant::now()) };
        let mut scanned = 0usize;
        let head_end = loop {
            if let Some(pos) = find(&self.buf[scanned.saturating_sub(3)..], b"\r\n\r\n") {
                break scanned.saturating_sub(3) + pos + 4;
            }
            scanned = self.buf.len();
            if self.buf.len() > MAX_HEADER_BYTES {
                return Err(bad(431, "headers_too_large", "request line and headers exceed 16 KiB"));
            }
            match self.fill() {
                Ok(true) => {
                    started.get_or_insert_with(Instant::now);
                }
                Ok(false) => {
                    return Err(if self.buf.is_empty() {
                        ReadError::Closed
                    } else {
                        bad(400, "request_incomplete", "connection closed mid-request")
                    });
                }
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => match started {
                    None if stopping.load(Ordering::Relaxed) || idle_since.elapsed() > IDLE_TIMEOUT => return Err(ReadError::Closed),
                    None => {}
                    Some(_) if stopping.load(Ordering::Relaxed) && self.buf.is_empty() => return Err(ReadError::Closed),
                    Some(t) if t.elapsed() > HEADER_TIMEOUT => {
                        return Err(if self.buf.is_empty() {
                            ReadError::Closed
                        } else {
                            bad(408, "request_timeout", "the request headers did not arrive in time")
                        })
                    }
                    Some(_) => {}
                },
                Err(_) => return Err(ReadError::Closed),
            }
        };
        if head_end > MAX_HEADER_BYTES {
            return Err(bad(431, "headers_too_large", "request line and headers exceed 16 KiB"));
        }
        let head = self.buf[..head_end - 4].to_vec();
        self.buf.drain(..head_end);
        on_head();
        let mut request = parse_head(&head)?;
        if !authorized(&request) {
            return Err(ReadError::Unauthorized { method: request.method, path: request.path });
        }
        let with_line = |e: ReadError, r: &Request| match e {
            ReadError::Bad { response, .. } => ReadError::Bad { response, method: Some(r.method.clone()), path: Some(r.path.clone()) },
            other => other,
        };

        // Body framing: Content-Length only.
        if request.header("transfer-encoding").is_some() {
            return Err(with_line(
                bad(411, "length_required", "chunked or encoded request bodies are not accepted; send Content-Length"),
                &request,
            ));
        }
        let lengths: Vec<&str> = request.headers.iter().filter(|(n, _)| n == "content-length").map(|(_, v)| v.as_str()).collect();
        let length = match lengths.as_slice() {
            [] => {
                if matches!(request.method.as_str(), "POST" | "PATCH" | "PUT") {
                    return Err(with_line(bad(411, "length_required", "a request body needs Content-Length"), &request));
                }
                0
            }
            [first, rest @ ..] => {
                if rest.iter().any(|v| v != first) || first.is_empty() || first.len() > 12 || !first.bytes().all(|b| b.is_ascii_digit()) {
                    return Err(with_line(bad(400, "content_length_invalid", "Content-Length is not one decimal number"), &request));
                }
                let n: u64 = first.parse().unwrap_or(u64::MAX);
                if n > MAX_BODY_BYTES as u64 {
                    return Err(with_line(bad(413, "body_too_large", "request bodies are limited to 1 MiB"), &request));
                }
                n as usize
            }
        };
        if length > 0
            && request.header("expect").is_some_and(|v| v.eq_ignore_ascii_case("100-continue"))
            && self.buf.len() < length
            && self.stream.write_all(b"HTTP/1.1 100 Continue\r\n\r\n").is_err()
        {
            return Err(ReadError::Closed);
        }
        let started = started.unwrap_or_else(Instant::now);
        while self.buf.len() < length {
            match self.fill() {
                Ok(true) => {}
                Ok(false) => return Err(with_line(bad(400, "request_incomplete", "connection closed mid-body"), &request)),
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                    if started.elapsed() > REQUEST_TIMEOUT {
                        return Err(with_line(bad(408, "request_timeout", "the request body did not arrive in time"), &request));
                    }
                }
                Err(_) => return Err(ReadError::Closed),
            }
        }
        request.body = self.buf.drain(..length).collect();
        Ok(request)
    }

    /// Write a whole response in one go.
    pub fn write_response(&mut self, response: &Response, close: bool) -> std::io::Result<()> {
        let mut out = Vec::with_capacity(response.body.len() + 160);
        out.extend_from_slice(
            format!(
                "HTTP/1.1 {} {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n",
                response.status,
                reason(response.status),
                response.body.len()
            )
            .as_bytes(),
        );
        if let Some(etag) = &response.etag {
            out.extend_from_slice(format!("ETag: {etag}\r\n").as_bytes());
        }
        out.extend_from_slice(if close { b"Connection: close\r\n\r\n" } else { b"Connection: keep-alive\r\n\r\n" });
        out.extend_from_slice(&response.body);
        self.stream.write_all(&out)?;
        self.stream.flush()
    }

    /// Close after an error answer without losing it: stop writing, then
    /// read and discard what the client is still sending (bounded in bytes
    /// and time), so the kernel does not reset the connection and discard
    /// the answer before the client read it.
    pub fn linger_close(mut self) {
        let _ = self.stream.shutdown(Shutdown::Write);
        let deadline = Instant::now() + Duration::from_secs(2);
        let mut drained = 0usize;
        let mut chunk = [0u8; 16384];
        while Instant::now() < deadline && drained < 4 * MAX_BODY_BYTES {
            match self.stream.read(&mut chunk) {
                Ok(0) => break,
                Ok(n) => drained += n,
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted) => {}
                Err(_) => break,
            }
        }
    }

    /// Write bytes as they are (a response whose head the caller built: the
    /// viewer's pages and its event stream).
    pub fn write_raw(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.stream.write_all(bytes)?;
        self.stream.flush()
    }

    /// Close the connection at once, answering nothing.
    pub fn abort(self) {
        let _ = self.stream.shutdown(Shutdown::Both);
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

fn is_token(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

/// Parse the request line and headers (without the final CRLFCRLF).
fn parse_head(head: &[u8]) -> Result<Request, ReadError> {
    let text = std::str::from_utf8(head).map_err(|_| bad(400, "request_invalid", "request head is not UTF-8"))?;
    let mut lines = text.split("\r\n");
    let line = lines.next().unwrap_or_default();
    let mut parts = line.split(' ');
    let (Some(method), Some(target), Some(version), None) = (parts.next(), parts.next(), parts.next(), parts.next()) else {
        return Err(bad(400, "request_line_invalid", "request line is not METHOD TARGET VERSION"));
    };
    if !is_token(method) || method.len() > 16 {
        return Err(bad(400, "request_line_invalid", "bad method"));
    }
    if !target.starts_with('/') || !target.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(bad(400, "request_line_invalid", "bad request target"));
    }
    let (path, query) = target.split_once('?').map_or((target.to_owned(), String::new()), |(p, q)| (p.to_owned(), q.to_owned()));
    let keep_alive_default = match version {
        "HTTP/1.1" => true,
        "HTTP/1.0" => false,
        _ => {
            return Err(ReadError::Bad {
                response: Response::error(505, "http_version_not_supported", "only HTTP/1.1 and HTTP/1.0"),
                method: Some(method.to_owned()),
                path: Some(path),
            })
        }
    };
    let mut headers = Vec::new();
    for line in lines {
        let Some((name, value)) = line.split_once(':') else {
            return Err(ReadError::Bad {
                response: Response::error(400, "header_invalid", "a header line has no colon"),
                method: Some(method.to_owned()),
                path: Some(path),
            });
        };
        if !is_token(name) || value.bytes().any(|b| b.is_ascii_control() && b != b'\t') {
            return Err(ReadError::Bad {
                response: Response::error(400, "header_invalid", "bad header name or value"),
                method: Some(method.to_owned()),
                path: Some(path),
            });
        }
        headers.push((name.to_ascii_lowercase(), value.trim_matches([' ', '\t']).to_owned()));
        if headers.len() > MAX_HEADERS {
            return Err(ReadError::Bad {
                response: Response::error(431, "headers_too_large", "too many header lines"),
                method: Some(method.to_owned()),
                path: Some(path),
            });
        }
    }
    let connection = headers.iter().filter(|(n, _)| n == "connection").map(|(_, v)| v.to_ascii_lowercase()).collect::<Vec<_>>();
    let keep_alive = if connection.iter().any(|v| v.split(',').any(|t| t.trim() == "close")) {
        false
    } else if connection.iter().any(|v| v.split(',').any(|t| t.trim() == "keep-alive")) {
        true
    } else {
        keep_alive_default
    };
    Ok(Request { method: method.to_owned(), path, query, headers, body: Vec::new(), keep_alive })
}

/// Reason phrase of a status code.
pub fn reason(status: u16) -> &'static str {
    match status {
        100 => "Continue",
        200 => "OK",
        201 => "Created",
        204 => "No Content",
        303 => "See Other",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        409 => "Conflict",
        411 => "Length Required",
        412 => "Precondition Failed",
        413 => "Content Too Large",
        415 => "Unsupported Media Type",
        429 => "Too Many Requests",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        505 => "HTTP Version Not Supported",
        _ => "Status",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Request, ReadError> {
        parse_head(text.as_bytes())
    }

    #[test]
    fn parses_a_request_head() {
        let r = parse("GET /api/memory/5?x=1 HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer t\r\nConnection: close").unwrap();
        assert_eq!(r.method, "GET");
        assert_eq!(r.path, "/api/memory/5");
        assert_eq!(r.header("authorization"), Some("Bearer t"));
        assert!(!r.keep_alive);
        assert!(parse("GET / HTTP/1.1").unwrap().keep_alive);
        assert!(!parse("GET / HTTP/1.0").unwrap().keep_alive);
    }

    #[test]
    fn rejects_broken_heads() {
        for (text, status) in [
            ("GET /  HTTP/1.1", 400),
            ("GET x HTTP/1.1", 400),
            ("GET / HTTP/2", 505),
            ("GET / HTTP/1.1\r\nno colon", 400),
            ("GET / HTTP/1.1\r\n folded: x", 400),
            ("G(T / HTTP/1.1", 400),
        ] {
            match parse(text) {
                Err(ReadError::Bad { response, .. }) => assert_eq!(response.status, status, "{text}"),
                other => panic!("{text}: {other:?}"),
            }
        }
    }
}
