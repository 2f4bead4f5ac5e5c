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
