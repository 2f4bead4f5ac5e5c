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
#[allow(unsafe_code)]
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

/// Nothing more to do now; poll again. EINTR counts: a stopped and
/// continued adapter (Ctrl-Z, `fg`) must keep its TUI.
fn would_block(e: &tungstenite::Error) -> bool {
    matches!(e, tungstenite::Error::Io(io) if matches!(io.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted))
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use std::os::fd::FromRawFd;

    #[allow(unsafe_code)]
    fn pipe() -> (std::fs::File, std::fs::File) {
        let mut fds = [0; 2];
        // SAFETY: fds is a valid array of two ints.
        assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
        // SAFETY: both descriptors were just created and are owned here.
        unsafe { (std::fs::File::from_raw_fd(fds[0]), std::fs::File::from_raw_fd(fds[1])) }
    }

    #[test]
    #[allow(unsafe_code)]
    fn read_lines_reads_what_is_there_and_reports_the_end() {
        let (r, mut w) = pipe();
        let mut lines = LineBuf::default();
        let mut out = vec![];
        w.write_all(b"{\"a\":1}\n{\"b\"").unwrap();
        assert!(read_lines(r.as_raw_fd(), &mut lines, &mut out).unwrap());
        assert_eq!(out, ["{\"a\":1}"]);
        w.write_all(b":2}\n").unwrap();
        assert!(read_lines(r.as_raw_fd(), &mut lines, &mut out).unwrap());
        assert_eq!(out, ["{\"a\":1}", "{\"b\":2}"]);
        // nothing there on a non-blocking fd: still open, nothing read
        // SAFETY: fcntl on a valid descriptor.
        unsafe { libc::fcntl(r.as_raw_fd(), libc::F_SETFL, libc::O_NONBLOCK) };
        assert!(read_lines(r.as_raw_fd(), &mut lines, &mut out).unwrap());
        assert_eq!(out.len(), 2);
        drop(w);
        assert!(!read_lines(r.as_raw_fd(), &mut lines, &mut out).unwrap(), "end of file");
        // a descriptor that cannot be read is an error
        let (_r, w) = pipe();
        let e = read_lines(w.as_raw_fd(), &mut lines, &mut out).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::EBADF));
    }

    #[test]
    fn write_line_ends_each_message_with_one_newline() {
        let mut buf = vec![];
        write_line(&mut buf, "{\"id\":1}").unwrap();
        write_line(&mut buf, "x").unwrap();
        assert_eq!(buf, b"{\"id\":1}\nx\n");
    }

    #[test]
    fn the_headless_client_is_the_processs_stdin_and_stdout() {
        let mut c = Client::Stdio(StdioClient::default());
        assert_eq!(c.read_fd(), 0);
        assert!(!c.wants_write(), "stdout is written blocking");
        assert!(c.flush().is_ok());
        c.close();
    }

    type Peer = WebSocket<UnixStream>;

    /// A WebSocket client on one end of a socket pair (as the TUI connects,
    /// to `path`) and the adapter's side on the other.
    fn connect(path: &str) -> (io::Result<WsClient>, tungstenite::Result<Peer>) {
        let (a, b) = UnixStream::pair().unwrap();
        b.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let url = format!("ws://localhost{path}");
        let peer = std::thread::spawn(move || {
            tungstenite::client(url.as_str(), b).map(|(ws, _)| ws).map_err(|e| match e {
                tungstenite::HandshakeError::Failure(e) => e,
                tungstenite::HandshakeError::Interrupted(_) => tungstenite::Error::ConnectionClosed,
            })
        });
        let server = WsClient::accept(a, Duration::from_secs(10));
        (server, peer.join().unwrap())
    }

    fn read_all(c: &mut Client) -> (Vec<String>, bool) {
        let mut out = vec![];
        let open = c.read(&mut out).unwrap();
        (out, open)
    }

    /// Read from `c` until `n` messages came (bounded: the peer sent them
    /// already; a non-blocking read returns at once when nothing is there).
    fn read_n(c: &mut Client, n: usize) -> Vec<String> {
        let mut out = vec![];
        for _ in 0..2000 {
            assert!(c.read(&mut out).unwrap(), "closed");
            if out.len() >= n {
                return out;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        panic!("only {} of {n} messages", out.len())
    }

    #[test]
    fn the_tui_connection_carries_text_frames_both_ways_and_answers_pings() {
        for path in ["/rpc", "/"] {
            let (server, peer) = connect(path);
            let mut c = Client::Ws(Box::new(server.unwrap()));
            let mut peer = peer.unwrap();
            assert!(c.read_fd() > 2, "the socket, not stdin");
            assert!(!c.wants_write());
            assert_eq!(read_all(&mut c), (vec![], true), "nothing yet");
            peer.send(Message::text("{\"id\":1}")).unwrap();
            peer.send(Message::binary(b"{\"id\":2}".to_vec())).unwrap();
            assert_eq!(read_n(&mut c, 2), ["{\"id\":1}", "{\"id\":2}"]);
            // a ping is answered at once (the pong flushed by the read)
            peer.send(Message::Ping(b"p".to_vec().into())).unwrap();
            assert!(read_n_or_none(&mut c).is_empty());
            match peer.read().unwrap() {
                Message::Pong(p) => assert_eq!(&p[..], b"p"),
                m => panic!("{m:?}"),
            }
            c.send("{\"id\":1,\"result\":{}}".into()).unwrap();
            assert_eq!(peer.read().unwrap(), Message::text("{\"id\":1,\"result\":{}}"));
            assert!(c.flush().is_ok());
            // the TUI closes: the read says so
            peer.close(None).unwrap();
            let mut out = vec![];
            let mut open = true;
            for _ in 0..2000 {
                open = c.read(&mut out).unwrap();
                if !open {
                    break;
                }
                std::thread::sleep(Duration::from_millis(5));
            }
            assert!(!open, "the close frame ends the client");
            assert!(out.is_empty());
            assert!(c.send("{}".into()).is_err(), "nothing goes out after the close");
        }
    }

    /// Read until the pong went out (the peer's ping has been read).
    fn read_n_or_none(c: &mut Client) -> Vec<String> {
        let mut out = vec![];
        for _ in 0..20 {
            assert!(c.read(&mut out).unwrap());
            std::thread::sleep(Duration::from_millis(5));
        }
        out
    }

    #[test]
    fn a_dropped_connection_ends_the_client() {
        let (server, peer) = connect("/rpc");
        let mut c = Client::Ws(Box::new(server.unwrap()));
        drop(peer.unwrap());
        assert!(c.send("{}".into()).is_err(), "writing to a gone TUI fails");
        let mut out = vec![];
        let mut ended = false;
        for _ in 0..2000 {
            match c.read(&mut out) {
                Ok(true) => std::thread::sleep(Duration::from_millis(5)),
                Ok(false) | Err(_) => {
                    ended = true;
                    break;
                }
            }
        }
        assert!(ended);
    }

    #[test]
    fn closing_sends_the_tui_a_close_frame() {
        let (server, peer) = connect("/rpc");
        let mut c = Client::Ws(Box::new(server.unwrap()));
        let mut peer = peer.unwrap();
        c.close();
        assert!(matches!(peer.read().unwrap(), Message::Close(_)));
    }

    #[test]
    fn a_message_over_16_mib_is_refused_even_in_fragments() {
        use tungstenite::protocol::frame::coding::{Data, OpCode};
        use tungstenite::protocol::frame::Frame;
        let (server, peer) = connect("/rpc");
        let mut c = Client::Ws(Box::new(server.unwrap()));
        let mut peer = peer.unwrap();
        let mib = vec![b'x'; 1024 * 1024];
        let writer = std::thread::spawn(move || {
            for i in 0..17 {
                let op = if i == 0 { OpCode::Data(Data::Text) } else { OpCode::Data(Data::Continue) };
                if peer.write(Message::Frame(Frame::message(mib.clone(), op, i == 16))).and_then(|_| peer.flush()).is_err() {
                    break;
                }
            }
        });
        let mut out = vec![];
        let mut refused = false;
        for _ in 0..20_000 {
            match c.read(&mut out) {
                Ok(true) => std::thread::sleep(Duration::from_millis(1)),
                Ok(false) => break,
                Err(e) => {
                    refused = e.kind() == io::ErrorKind::InvalidData;
                    break;
                }
            }
        }
        assert!(refused, "refused as too long");
        assert!(out.is_empty());
        drop(c);
        writer.join().unwrap();
    }

    #[test]
    fn only_the_rpc_path_is_upgraded() {
        let (server, peer) = connect("/other");
        let e = server.err().unwrap();
        assert_eq!(e.kind(), io::ErrorKind::InvalidData);
        match peer {
            Err(tungstenite::Error::Http(r)) => assert_eq!(r.status(), 404),
            other => panic!("{:?}", other.map(|_| ())),
        }
    }

    #[test]
    fn a_slow_reader_gets_every_message_in_order_once_it_reads() {
        let (server, peer) = connect("/rpc");
        let mut c = Client::Ws(Box::new(server.unwrap()));
        let mut peer = peer.unwrap();
        // far more than the socket buffers hold: the rest waits in the adapter
        let big = "x".repeat(256 * 1024);
        let n = 32;
        for i in 0..n {
            c.send(format!("{{\"n\":{i},\"pad\":\"{big}\"}}")).unwrap();
        }
        assert!(c.wants_write(), "the socket is full: the adapter waits to write");
        let reader = std::thread::spawn(move || {
            let mut got = vec![];
            while got.len() < n {
                match peer.read().unwrap() {
                    Message::Text(t) => got.push(serde_json::from_str::<serde_json::Value>(t.as_str()).unwrap()["n"].as_u64().unwrap()),
                    m => panic!("{m:?}"),
                }
            }
            got
        });
        // the poll loop's part: flush while the socket takes more
        for _ in 0..20_000 {
            if !c.wants_write() {
                break;
            }
            c.flush().unwrap();
            std::thread::sleep(Duration::from_millis(1));
        }
        assert!(!c.wants_write(), "everything written");
        let got = reader.join().unwrap();
        assert_eq!(got, (0..n as u64).collect::<Vec<_>>());
    }

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
