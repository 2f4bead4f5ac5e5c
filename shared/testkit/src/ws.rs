//! The TUI side of the Codex adapter's WebSocket, as a test drives it
//! (tests/it/compact_codex.rs and shared/compact-codex/tests/it/adapter_run.rs):
//! connect, send, read until a message matches.

use serde_json::Value;
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Duration;
use tungstenite::{Message, WebSocket};

pub type Ws = WebSocket<UnixStream>;

/// Connect to the adapter's socket at `/rpc`, each read bounded by `read_timeout`.
pub fn connect(sock: &Path, read_timeout: Duration) -> tungstenite::Result<Ws> {
    let s = UnixStream::connect(sock).map_err(tungstenite::Error::Io)?;
    s.set_read_timeout(Some(read_timeout)).unwrap();
    tungstenite::client("ws://localhost/rpc", s).map(|(ws, _)| ws).map_err(|e| match e {
        tungstenite::HandshakeError::Failure(e) => e,
        tungstenite::HandshakeError::Interrupted(_) => tungstenite::Error::ConnectionClosed,
    })
}

pub fn send(ws: &mut Ws, v: Value) {
    ws.send(Message::text(v.to_string())).unwrap();
}

/// Read until `pred` matches, at most `limit` messages (each read bounded
/// by the read timeout); everything read goes to `seen`.
pub fn until(ws: &mut Ws, seen: &mut Vec<Value>, what: &str, limit: usize, pred: impl Fn(&Value) -> bool) -> Value {
    for _ in 0..limit {
        let m = match ws.read() {
            // A stop and continue of this process (a loaded or frozen
            // machine) ends a timed socket read with EINTR, even without a
            // handler (signal(7)); the frame read so far stays buffered.
            Err(tungstenite::Error::Io(e)) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            m => m.unwrap_or_else(|e| panic!("reading while waiting for {what}: {e}")),
        };
        let Message::Text(t) = m else { continue };
        let v: Value = serde_json::from_str(t.as_str()).unwrap();
        seen.push(v.clone());
        if pred(&v) {
            return v;
        }
    }
    panic!("no {what} within {limit} messages")
}
