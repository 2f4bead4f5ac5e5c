//! `--message-log`: every JSON-RPC message with its direction, one JSON
//! object per line (`{"t":<s since start>,"dir":...,"msg":...}`), in a new
//! owner-only file (never an existing path, never through a symlink).

use crate::proxy::Dir;
use kijito_protocol::error::{Error, Result};
use kijito_protocol::ids::AbsPath;
use serde_json::{json, Value};
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::time::Instant;

/// Create a new owner-only file for appending (its directory must be the
/// user's and not group/other writable; nothing may exist at the path).
pub fn create_private(path: &Path) -> Result<File> {
    kijito_files::private::check_new_file_path(path)?;
    OpenOptions::new()
        .append(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
        .map_err(|e| Error::new(kijito_protocol::codes::compact_codex::MESSAGE_LOG_FAILED, format!("cannot create {}: {e}", path.display())))
}

pub struct MessageLog {
    file: File,
    t0: Instant,
    failed: bool,
}

impl MessageLog {
    pub fn create(path: &AbsPath) -> Result<MessageLog> {
        Ok(MessageLog { file: create_private(path.as_path())?, t0: Instant::now(), failed: false })
    }

    /// One line per message (one write each). A write error stops logging
    /// and is reported once; it never stops the data path.
    pub fn write(&mut self, dir: Dir, text: &str) {
        if self.failed {
            return;
        }
        let msg: Value = serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_owned()));
        let t = (self.t0.elapsed().as_secs_f64() * 1000.0).round() / 1000.0;
        let mut line = json!({"t": t, "dir": dir.name(), "msg": msg}).to_string();
        line.push('\n');
        if let Err(e) = self.file.write_all(line.as_bytes()) {
            eprintln!("kijito-compact codex: the message log stopped: {e}");
            self.failed = true;
        }
    }
}
