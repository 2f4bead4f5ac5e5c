//! The two ends of the adapter, for a single-threaded poll loop:
//! - the app-server child: newline-delimited JSON on its stdin/stdout;
//! - the client: the TUI over WebSocket on the private unix socket (one
//!   JSON-RPC message per text frame, measured on Codex 0.169), or, in the
//!   headless mode, newline-delimited JSON on the adapter's own stdin/stdout.

use crate::proxy::MAX_MESSAGE_BYTES;
use std::io::{self, Write};
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::net::UnixStream;
use std::time::Duration;
use tungstenite::handshake::server::{ErrorResponse, Request, Response};
use tungstenite::protocol::WebSocketConfig;
use tungstenite::{Message, WebSocket};

/// Splits a byte stream into lines (bounded).
#[derive(Debug, Default)]
pub struct LineBuf {
    buf: Vec<u8>,
}

impl LineBuf {
    /// Add bytes; complete lines (without the newline, empty ones skipped)
    /// go to `out`. A line longer than the bound is an error.
    pub fn push(&mut self, bytes: &[u8], out: &mut Vec<String>) -> io::Result<()> {
        self.buf.extend_from_slice(bytes);
        let mut start = 0;
        while let Some(pos) = self.buf[start..].iter().position(|b| *b == b'\n') {
            let line = &self.buf[start..start + pos];
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            if !line.is_empty() {
                out.push(String::from_utf8_lossy(line).into_owned());
            }
            start += pos + 1;
        }
        self.buf.drain(..start);
        if self.buf.len() > MAX_MESSAGE_BYTES {
            return Err(io::Error::new(io::ErrorKind::InvalidData, "a line longer than 16 MiB"));
        }
        Ok(())
    }
}

/// Read once from a readable fd (after poll said so): `Ok(false)` on EOF.
pub fn read_lines(fd: RawFd, lines: &mut LineBuf, out: &mut Vec<String>) -> io::Result<bool> {
    let mut chunk = vec![0u8; 64 * 1024];
    // SAFETY: chunk is a valid, writable buffer of its length.
    let n = unsafe { libc::read(fd, chunk.as_mut_ptr().cast(), chunk.len()) };
    if n < 0 {
        let e = io::Error::last_os_error();
        return match e.kind() {
            io::ErrorKind::Interrupted | io::ErrorKind::WouldBlock => Ok(true),
            _ => Err(e),
        };
    }
    if n == 0 {
        return Ok(false);
    }
    lines.push(&chunk[..n as usize], out)?;
    Ok(true)
}

/// Write one message as a line (blocking).
pub fn write_line(w: &mut impl Write, text: &str) -> io::Result<()> {
    let mut buf = Vec::with_capacity(text.len() + 1);
    buf.extend_from_slice(text.as_bytes());
    buf.push(b'\n');
    w.write_all(&buf)?;
    w.flush()
}

/// A connected client.
pub enum Client {
    Ws(Box<WsClient>),
    Stdio(StdioClient),
}

impl Client {
    pub fn read_fd(&self) -> RawFd {
        match self {
            Client::Ws(w) => w.ws.get_ref().as_raw_fd(),
            Client::Stdio(_) => 0,
        }
    }

    pub fn wants_write(&self) -> bool {
        match self {
            Client::Ws(w) => w.pending,
            Client::Stdio(_) => false,
        }
    }

    /// Read what is available: messages go to `out`; `Ok(false)` when the
    /// client is gone.
    pub fn read(&mut self, out: &mut Vec<String>) -> io::Result<bool> {
        match self {
            Client::Ws(w) => w.read(out),
            Client::Stdio(s) => read_lines(0, &mut s.lines, out),
        }
    }

    pub fn send(&mut self, text: String) -> io::Result<()> {
        match self {
            Client::Ws(w) => w.send(text),
            Client::Stdio(_) => write_line(&mut io::stdout().lock(), &text),
        }
    }

    pub fn flush(&mut self) -> io::Result<()> {
        match self {
            Client::Ws(w) => w.flush(),
            Client::Stdio(_) => Ok(()),
        }
    }

    pub fn close(&mut self) {
        if let Client::Ws(w) = self {
            let _ = w.ws.close(None);
            let _ = w.ws.flush();
        }
    }
}

/// Headless mode: the adapter's own stdin/stdout.
#[derive(Debug, Default)]
pub struct StdioClient {
    lines: LineBuf,
}

/// The TUI over WebSocket on a unix socket (non-blocking after the handshake).
pub struct WsClient {
    ws: WebSocket<UnixStream>,
    pending: bool,
}

fn ws_config() -> WebSocketConfig {
    WebSocketConfig::default().max_message_size(Some(MAX_MESSAGE_BYTES)).max_frame_size(Some(MAX_MESSAGE_BYTES))
}

fn would_block(e: &tungstenite::Error) -> bool {
    matches!(e, tungstenite::Error::Io(io) if io.kind() == io::ErrorKind::WouldBlock)
}

impl WsClient {
    /// The server side of the upgrade (`GET /rpc`, as Codex's TUI sends it),
    /// bounded by `timeout`. The zstd compression the TUI offers is not
    /// accepted (no header echoed), so frames are plain text.
    // The callback's error type is tungstenite's (an HTTP response).
    #[allow(clippy::result_large_err)]
    pub fn accept(stream: UnixStream, timeout: Duration) -> io::Result<WsClient> {
        stream.set_read_timeout(Some(timeout))?;
        stream.set_write_timeout(Some(timeout))?;
        let check = |req: &Request, resp: Response| -> Result<Response, ErrorResponse> {
            if req.uri().path() != "/rpc" && req.uri().path() != "/" {
                let mut e = ErrorResponse::new(Some("not found".into()));
                *e.status_mut() = tungstenite::http::StatusCode::NOT_FOUND;
                return Err(e);
            }
            Ok(resp)
        };
        let ws = tungstenite::accept_hdr_with_config(stream, check, Some(ws_config()))
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, format!("websocket handshake failed: {e}")))?;
        ws.get_ref().set_read_timeout(None)?;
        ws.get_ref().set_write_timeout(None)?;
        ws.get_ref().set_nonblocking(true)?;
        Ok(WsClient { ws, pending: false })
    }

    fn read(&mut self, out: &mut Vec<String>) -> io::Result<bool> {
        loop {
            match self.ws.read() {
                Ok(Message::Text(t)) => out.push(t.as_str().to_owned()),
                Ok(Message::Binary(b)) => out.push(String::from_utf8_lossy(&b).into_owned()),
                Ok(Message::Close(_)) => {
                    let _ = self.ws.flush();
                    return Ok(false);
                }
                Ok(_) => {
                    // ping/pong: tungstenite queued the pong; flush it.
                    self.flush()?;
                }
                Err(e) if would_block(&e) => return Ok(true),
                Err(tungstenite::Error::ConnectionClosed | tungstenite::Error::AlreadyClosed) => return Ok(false),
                Err(tungstenite::Error::Io(e)) => return Err(e),
                Err(e) => return Err(io::Error::new(io::ErrorKind::InvalidData, e.to_string())),
            }
        }
    }

    fn send(&mut self, text: String) -> io::Result<()> {
        match self.ws.write(Message::text(text)) {
            Ok(()) => {}
            Err(e) if would_block(&e) => {
                self.pending = true;
                return Ok(());
            }
            Err(e) => return Err(io::Error::other(e.to_string())),
        }
        self.flush()
    }

    fn flush(&mut self) -> io::Result<()> {
        match self.ws.flush() {
            Ok(()) => {
                self.pending = false;
                Ok(())
            }
            Err(e) if would_block(&e) => {
                self.pending = true;
                Ok(())
            }
            Err(e) => Err(io::Error::other(e.to_string())),
        }
    }
}

/// Refuse a second client: a WebSocket close would need a handshake; the
/// connection is simply shut (the TUI reports it could not connect).
pub fn refuse(stream: UnixStream) {
    let _ = stream.shutdown(std::net::Shutdown::Both);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_split_and_bound() {
        let mut b = LineBuf::default();
        let mut out = vec![];
        b.push(b"{\"a\":1}\n{\"b\"", &mut out).unwrap();
        assert_eq!(out, vec!["{\"a\":1}"]);
        b.push(b":2}\r\n\n", &mut out).unwrap();
        assert_eq!(out, vec!["{\"a\":1}", "{\"b\":2}"]);
        let big = vec![b'x'; MAX_MESSAGE_BYTES + 1];
        assert!(b.push(&big, &mut out).is_err());
    }
}
