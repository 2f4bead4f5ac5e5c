//! The stand-in Codex app-server and TUI (`standin-codex.py` beside this
//! crate's Cargo.toml, stdlib Python; what it does is in its docstring): one
//! program for the root package's tests and benches and kijito-compact-codex's
//! tests. It writes what it saw to `$STANDIN_DIR`.

use kijito_protocol::ids::AbsPath;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

/// The stand-in program, run directly as `codex` (it is executable); it
/// needs `STANDIN_DIR` in its environment.
pub const STANDIN: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/standin-codex.py");

/// A `codex` for the adapter to run: a script in `dir` that starts
/// [`STANDIN`] (app-server and TUI) with `STANDIN_DIR` = `dir` and the given
/// environment, so that tests running in parallel, which share the
/// adapter's environment, each get their own.
pub fn standin_codex(dir: &Path, env: &[(&str, &str)]) -> AbsPath {
    let mut text = format!("#!/bin/sh\nexport STANDIN_DIR='{}'\n", dir.display());
    for (k, v) in env {
        text.push_str(&format!("export {k}='{v}'\n"));
    }
    text.push_str(&format!("exec python3 '{STANDIN}' \"$@\"\n"));
    let p = dir.join("codex");
    std::fs::write(&p, text).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o700)).unwrap();
    AbsPath::from_path(&p).unwrap()
}

/// The TUI stand-in in `dir` exits with `code`. The file is written under a
/// temporary name and renamed, so the stand-in, which polls for it, never
/// reads it half-written.
pub fn tui_exit(dir: &Path, code: i32) {
    let tmp = dir.join("tui-exit.tmp");
    std::fs::write(&tmp, code.to_string()).unwrap();
    std::fs::rename(&tmp, dir.join("tui-exit")).unwrap();
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;
    use std::time::{Duration, Instant};

    /// The TUI stand-in takes an empty `tui-exit` (one caught between its
    /// creation and its write) as not yet written, never as exit 0.
    #[test]
    fn the_tui_stand_in_waits_past_an_empty_exit_file() {
        let d = tempfile::tempdir().unwrap();
        let mut tui = Command::new("python3").args([STANDIN, "--remote", "unix:///nowhere"]).env("STANDIN_DIR", d.path()).spawn().unwrap();
        crate::wait_for("the TUI stand-in's tui.json", 15, || d.path().join("tui.json").exists().then_some(()));
        std::fs::write(d.path().join("tui-exit"), "").unwrap();
        let seen_empty = Instant::now() + Duration::from_millis(200); // ten of its polls
        while Instant::now() < seen_empty {
            assert_eq!(tui.try_wait().unwrap(), None, "an empty tui-exit ends nothing");
            std::thread::sleep(Duration::from_millis(20));
        }
        tui_exit(d.path(), 5);
        let status = crate::wait_for("the TUI stand-in to exit", 15, || tui.try_wait().unwrap());
        assert_eq!(status.code(), Some(5));
    }
}
