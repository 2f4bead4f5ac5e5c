//! Codex hook trust: ask `codex app-server` (stdio JSON-RPC, one JSON object
//! per line) for `hooks/list`, exactly as the real-host harness does
//! (tests/hosts/lib/he2e/codex.py). Measured on Codex 0.169.0: each hook has
//! `command`, `eventName`, `sourcePath`, `currentHash` and `trustStatus`
//! `"trusted"`, `"untrusted"` (never trusted) or `"modified"` (its entry
//! changed after it was trusted: hash mismatch).

use kijito_protocol::error::{Error, Result};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Largest accepted answer line.
pub const MAX_LINE_BYTES: u64 = 8 * 1024 * 1024;
/// Most lines read before giving up.
pub const MAX_LINES: usize = 10_000;

/// One hook as Codex lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedHook {
    pub event: String,
    pub command: String,
    pub trust_status: String,
    pub source_path: String,
}

/// The listing: hooks plus the errors and warnings Codex reported.
#[derive(Debug, Clone, Default)]
pub struct Listing {
    pub hooks: Vec<ListedHook>,
    pub errors: Vec<String>,
    pub warnings: Vec<String>,
}

struct Guard(Child);

impl Drop for Guard {
    fn drop(&mut self) {
        drop(self.0.stdin.take());
        let deadline = Instant::now() + Duration::from_secs(3);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.0.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Parse a `hooks/list` result.
pub fn parse_listing(result: &Value) -> Listing {
    let mut out = Listing::default();
    for d in result.get("data").and_then(Value::as_array).into_iter().flatten() {
        let text = |v: &Value| v.as_str().map(str::to_owned).unwrap_or_else(|| v.to_string());
        out.errors.extend(d.get("errors").and_then(Value::as_array).into_iter().flatten().map(text));
        out.warnings.extend(d.get("warnings").and_then(Value::as_array).into_iter().flatten().map(text));
        for h in d.get("hooks").and_then(Value::as_array).into_iter().flatten() {
            let s = |k: &str| h.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
            out.hooks.push(ListedHook {
                event: s("eventName"),
                command: s("command"),
                trust_status: s("trustStatus"),
                source_path: s("sourcePath"),
            });
        }
    }
    out
}

/// Start `codex app-server` (environment inherited: the user's CODEX_HOME),
/// initialize, and return `hooks/list` for `cwd`, within `timeout` overall.
pub fn list_hooks(codex: &Path, cwd: &Path, timeout: Duration) -> Result<Listing> {
    let fail = |why: String| Error::new(crate::codes::CODEX_HOOKS_LIST_FAILED, why);
    let mut child = Command::new(codex)
        .arg("app-server")
        .current_dir(cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| fail(format!("cannot start {} app-server: {e}", codex.display())))?;
    let stdout = child.stdout.take().ok_or_else(|| fail("no stdout".into()))?;
    let mut guard = Guard(child);
    let (tx, rx) = mpsc::channel::<Option<Vec<u8>>>();
    std::thread::spawn(move || {
        let mut reader = BufReader::new(stdout);
        for _ in 0..MAX_LINES {
            let mut line = Vec::new();
            match (&mut reader).take(MAX_LINE_BYTES).read_until(b'\n', &mut line) {
                Ok(0) | Err(_) => break,
                Ok(_) => {
                    if tx.send(Some(line)).is_err() {
                        return;
                    }
                }
            }
        }
        let _ = tx.send(None);
    });
    let deadline = Instant::now() + timeout;
    let mut send = |msg: Value| -> Result<()> {
        let stdin = guard.0.stdin.as_mut().ok_or_else(|| fail("stdin closed".into()))?;
        stdin
            .write_all(format!("{msg}\n").as_bytes())
            .and_then(|_| stdin.flush())
            .map_err(|e| fail(format!("writing to codex app-server: {e}")))
    };
    let wait_for = |id: u64, method: &str| -> Result<Value> {
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = match rx.recv_timeout(left) {
                Ok(Some(l)) => l,
                Ok(None) | Err(mpsc::RecvTimeoutError::Disconnected) => {
                    return Err(fail(format!("codex app-server exited before answering {method}")))
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    return Err(fail(format!("codex app-server did not answer {method} within {} s", timeout.as_secs())))
                }
            };
            let Ok(msg) = serde_json::from_slice::<Value>(&line) else { continue };
            if msg.get("id").and_then(Value::as_u64) == Some(id) {
                if let Some(e) = msg.get("error") {
                    return Err(fail(format!("{method} failed: {}", kijito_protocol::ids::clip(&e.to_string()))));
                }
                return msg.get("result").cloned().ok_or_else(|| fail(format!("{method}: answer without result")));
            }
        }
    };
    send(
        json!({"id": 1, "method": "initialize", "params": {"clientInfo": {"name": "kijito-doctor", "title": "kijito-doctor", "version": env!("CARGO_PKG_VERSION")}, "capabilities": {"experimentalApi": true}}}),
    )?;
    wait_for(1, "initialize")?;
    send(json!({"method": "initialized"}))?;
    send(json!({"id": 2, "method": "hooks/list", "params": {"cwds": [cwd.to_string_lossy()]}}))?;
    let result = wait_for(2, "hooks/list")?;
    Ok(parse_listing(&result))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_measured_shape() {
        let v = json!({"data": [{"cwd": "/p", "errors": [], "warnings": ["w"], "hooks": [
            {"key": "/h/hooks.json:stop:0:0", "eventName": "stop", "command": "/r/bin/session-hook --host codex --expect Stop", "sourcePath": "/h/hooks.json", "currentHash": "sha256:x", "trustStatus": "modified"}
        ]}]});
        let l = parse_listing(&v);
        assert_eq!(l.warnings, vec!["w".to_owned()]);
        assert_eq!(l.hooks[0].trust_status, "modified");
        assert_eq!(l.hooks[0].event, "stop");
        assert!(parse_listing(&json!({})).hooks.is_empty());
    }
}
