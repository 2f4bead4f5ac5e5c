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
/// `create_new` is `O_CREAT | O_EXCL`, which never follows a symlink (the
/// open fails with EEXIST, whatever the link names); std opens every file
/// `O_CLOEXEC`, so no child inherits it.
pub fn create_private(path: &Path) -> Result<File> {
    kijito_files::private::check_new_file_path(path)?;
    OpenOptions::new()
        .append(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .map_err(|e| Error::new(crate::adapter::codes::MESSAGE_LOG_FAILED, format!("cannot create {}: {e}", path.display())))
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use std::os::unix::fs::PermissionsExt;
    use std::time::Duration;

    fn private_tmp() -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
        d
    }

    #[test]
    fn the_log_is_a_new_owner_only_file_never_an_existing_path_or_a_symlink() {
        let d = private_tmp();
        let p = d.path().join("m.jsonl");
        let log = MessageLog::create(&AbsPath::from_path(&p).unwrap()).unwrap();
        drop(log);
        assert_eq!(std::fs::metadata(&p).unwrap().permissions().mode() & 0o777, 0o600);
        // the same path again: refused, the file untouched
        std::fs::write(&p, b"kept").unwrap();
        assert_eq!(create_private(&p).unwrap_err().code(), "file_exists");
        assert_eq!(std::fs::read(&p).unwrap(), b"kept");
        // a symlink, dangling or not, is never followed
        let target = d.path().join("target");
        let link = d.path().join("link.jsonl");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        assert_eq!(create_private(&link).unwrap_err().code(), "file_exists");
        assert!(!target.exists(), "nothing created through the link");
    }

    #[test]
    fn one_json_line_per_message_with_its_direction_and_time_in_seconds() {
        let d = private_tmp();
        let p = d.path().join("m.jsonl");
        let mut log = MessageLog::create(&AbsPath::from_path(&p).unwrap()).unwrap();
        // the adapter has run for 1.5 s when these pass
        log.t0 = Instant::now() - Duration::from_millis(1500);
        let before = log.t0.elapsed().as_secs_f64();
        log.write(Dir::ClientToServer, r#"{"id":1,"method":"thread/start"}"#);
        log.write(Dir::Dropped, "not json");
        let after = log.t0.elapsed().as_secs_f64();
        let text = std::fs::read_to_string(&p).unwrap();
        let lines: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        assert!(text.ends_with('\n'));
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0]["dir"], "client->server");
        assert_eq!(lines[0]["msg"], json!({"id": 1, "method": "thread/start"}));
        assert_eq!(lines[1]["dir"], "dropped");
        assert_eq!(lines[1]["msg"], "not json");
        for l in &lines {
            let t = l["t"].as_f64().unwrap();
            assert!(t >= before - 0.0005 && t <= after + 0.0005, "t {t} s, not within [{before}, {after}]");
            assert!(((t * 1000.0) - (t * 1000.0).round()).abs() < 1e-6, "t {t} is rounded to the millisecond");
        }
    }

    #[test]
    fn a_write_error_stops_the_log_without_stopping_the_caller() {
        let full = OpenOptions::new().append(true).open("/dev/full").unwrap();
        let mut log = MessageLog { file: full, t0: Instant::now(), failed: false };
        log.write(Dir::ServerToClient, "{}");
        log.write(Dir::ServerToClient, "{}");
        assert!(log.failed);
    }
}
