//! The request log (`--request-log FILE`): one JSON line per request,
//! appended with a single `write` before the response is sent, so a client
//! holding an answer can already read its line:
//!
//! `{"method":"PATCH","path":"/api/memory/7","status":200,"bodySha256":"<hex>","fault":null,"atMs":1767225600000}`
//!
//! `status` is null when the connection was closed without an answer;
//! `fault` names the fault actions applied (joined by `+`), or null. The
//! token and the body itself are never logged.

use kijito_protocol::error::{Error, Result};
use kijito_protocol::ids::Digest;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::sync::Mutex;

/// Stable codes of this module (registered in the workspace by `tests/it/architecture.rs`).
pub mod codes {
    kijito_protocol::codes! {
        REQUEST_LOG_OPEN_FAILED RequestLogOpenFailed = "request_log_open_failed",
    }
}

pub struct RequestLog {
    file: Mutex<File>,
}

/// One logged request.
pub struct Entry<'a> {
    pub method: &'a str,
    pub path: &'a str,
    pub status: Option<u16>,
    pub body: &'a [u8],
    pub fault: Option<&'a str>,
    pub at_ms: i64,
}

impl RequestLog {
    /// Open (create 0600, never through a symlink) for appending.
    pub fn open(path: &Path) -> Result<RequestLog> {
        let file = OpenOptions::new()
            .append(true)
            .create(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(path)
            .map_err(|e| Error::new(codes::REQUEST_LOG_OPEN_FAILED, format!("cannot open {}: {e}", path.display())))?;
        let meta = file.metadata().map_err(|e| Error::new(codes::REQUEST_LOG_OPEN_FAILED, e.to_string()))?;
        use std::os::unix::fs::MetadataExt;
        if !meta.is_file() || meta.uid() != kijito_files::private::current_uid() || meta.mode() & 0o077 != 0 {
            return Err(Error::new(
                codes::REQUEST_LOG_OPEN_FAILED,
                format!("{} must be a regular owner-only file of this user", path.display()),
            ));
        }
        Ok(RequestLog { file: Mutex::new(file) })
    }

    /// Append one line (a single write of the whole line).
    pub fn append(&self, entry: &Entry<'_>) -> std::io::Result<()> {
        let mut line = line_of(entry).into_bytes();
        line.push(b'\n');
        let mut file = self.file.lock().unwrap_or_else(|p| p.into_inner());
        file.write_all(&line)
    }
}

/// The JSON text of one entry (keys in this order).
pub fn line_of(entry: &Entry<'_>) -> String {
    serde_json::json!({
        "method": entry.method,
        "path": entry.path,
        "status": entry.status,
        "bodySha256": Digest::of(entry.body).as_str(),
        "fault": entry.fault,
        "atMs": entry.at_ms,
    })
    .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_has_fixed_keys() {
        let line = line_of(&Entry { method: "GET", path: "/api/memory/1", status: None, body: b"", fault: Some("close_before"), at_ms: 5 });
        assert_eq!(
            line,
            r#"{"method":"GET","path":"/api/memory/1","status":null,"bodySha256":"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855","fault":"close_before","atMs":5}"#
        );
    }
}
