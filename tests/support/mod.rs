//! The root package's test support, for its integration tests and benches:
//! what needs this package's binaries lives here: [`server`] (a real
//! kijito-local on an ephemeral loopback port, raw HTTP), [`gate`] (QA state
//! worlds run through the binaries, hook stdin, reports), [`latch`] (a
//! memory-latch workspace beside a gate world), [`publish`] (seeded
//! pointers, publish runs), [`snapshot`] (seeded snapshots, reports), and
//! [`bin`], the path of any built binary of the workspace. The rest is the
//! workspace's test-support crate, kijito-testkit (docs/testing.md),
//! re-exported under the same names: [`pass`] (the one hand-built QA pass of
//! every harness), [`isolated`] (a test that changes process-wide state runs
//! alone in a child), [`ws`] (the TUI side of the Codex adapter's WebSocket).

#![allow(dead_code, unused_imports)]

pub(crate) mod gate;
pub(crate) mod latch;
pub(crate) mod publish;
pub(crate) mod server;
pub(crate) mod snapshot;

pub(crate) use kijito_testkit::{isolated, pass, ws};

pub(crate) use server::*;

/// The path of a workspace binary built next to this package's binaries
/// (`target/<profile>/`). The hook binaries belong to the `kijito-hooks`
/// package, so Cargo gives this package no `CARGO_BIN_EXE_` for them, and
/// `cargo test --test it` does not rebuild them: a binary that is missing, or
/// older than any workspace source file its cargo dep-info (`<name>.d` beside
/// it, written by every `cargo build` of it) lists, fails the test loudly
/// instead of testing yesterday's code. `cargo build --workspace` (or
/// `-p <package>`) rebuilds it. A binary only `cargo test` built has no
/// dep-info (cargo writes none for test dependencies) and is taken as is.
///
/// Every `cargo build` rewrites each binary's dep-info in place, even when
/// nothing changed, and a test runs one while others read it
/// (tests/it/install_layout.rs runs `install.sh --debug`): a check that fails
/// is read again, 50 times 20 ms apart, before the test fails. A binary found
/// fresh is not checked again in this process.
pub(crate) fn bin(name: &str) -> String {
    static FRESH: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());
    let dir = std::path::Path::new(env!("CARGO_BIN_EXE_kijito-local")).parent().expect("target dir");
    let p = dir.join(name);
    let path = p.to_string_lossy().into_owned();
    if FRESH.lock().unwrap_or_else(|e| e.into_inner()).contains(&path) {
        return path;
    }
    assert!(p.is_file(), "{} is not built: run `cargo build --workspace` first", p.display());
    let mut checked = fresh(&p);
    for _ in 0..50 {
        if checked.is_ok() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
        checked = fresh(&p);
    }
    if let Err(why) = checked {
        panic!("{} is stale ({why}): run `cargo build --workspace` (or `cargo build -p <its package>`) first", p.display());
    }
    FRESH.lock().unwrap_or_else(|e| e.into_inner()).push(path.clone());
    path
}

/// `Ok` when every workspace source file listed in `exe`'s dep-info exists
/// and is not newer than `exe` (cargo's own rule for a path dependency).
fn fresh(exe: &std::path::Path) -> Result<(), String> {
    let dep_info = exe.with_file_name(format!("{}.d", exe.file_name().and_then(|n| n.to_str()).unwrap_or_default()));
    let text = match std::fs::read_to_string(&dep_info) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(format!("unreadable dep-info {}: {e}", dep_info.display())),
    };
    let built = std::fs::metadata(exe).and_then(|m| m.modified()).map_err(|e| e.to_string())?;
    let dep_info_older = std::fs::metadata(&dep_info).and_then(|m| m.modified()).map(|m| m < built).unwrap_or(true);
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    // "<target>: <dep> <dep> ...", spaces inside a path escaped as "\ ".
    let line = text.lines().next().unwrap_or_default();
    let deps = line.split_once(": ").map(|(_, d)| d).ok_or_else(|| format!("unreadable dep-info {}", dep_info.display()))?;
    let mut checked = 0;
    for dep in deps.replace("\\ ", "\0").split(' ').filter(|d| !d.is_empty()).take(100_000) {
        let path = std::path::PathBuf::from(dep.replace('\0', " "));
        if !path.starts_with(root) {
            continue;
        }
        let modified = match std::fs::metadata(&path).and_then(|m| m.modified()) {
            Ok(m) => m,
            // A `cargo test` relinked the binary after this dep-info was
            // written (it writes none): its list may name a removed file.
            Err(_) if dep_info_older => continue,
            Err(_) => return Err(format!("{} is gone", path.display())),
        };
        if modified > built {
            return Err(format!("{} changed after it was built", path.display()));
        }
        checked += 1;
    }
    if checked == 0 && !dep_info_older {
        return Err(format!("its dep-info {} lists no source of this workspace", dep_info.display()));
    }
    Ok(())
}

/// Write `bytes` as the kijito-qa file `name` (`config.json`, `policy.json`,
/// ...) under the config home `config_home` (`$XDG_CONFIG_HOME`, or
/// `$HOME/.config`): `<config_home>/kijito-qa` made owner-only if missing,
/// the file owner-only and atomic; its path. Every test's config file is
/// written here.
pub(crate) fn write_config_file(config_home: &std::path::Path, name: &str, bytes: &[u8]) -> std::path::PathBuf {
    let dir = config_home.join("kijito-qa");
    kijito_files::private::ensure_private_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    let path = dir.join(name);
    kijito_files::private::write_atomic(&path, bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    path
}

/// The python program of install.sh's `render()`.
fn render_program() -> String {
    let script = std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("install.sh")).expect("install.sh");
    let start = script.find("render() {").expect("render() in install.sh");
    let body = &script[start..];
    let from = body.find("<<'PY'\n").expect("the heredoc of render()") + "<<'PY'\n".len();
    let to = body[from..].find("\nPY\n").expect("the end of the heredoc");
    body[from..from + to].to_owned()
}

/// Render the skill `src` for `host` into `dest` as install.sh does (its
/// `render()` heredoc, run with python3, installed root `root`); Err(stderr)
/// on refusal (tests/it/skills.rs, tests/it/skill_commands.rs).
pub(crate) fn render_skill(src: &std::path::Path, dest: &std::path::Path, root: &std::path::Path, host: &str) -> Result<String, String> {
    let mut child = std::process::Command::new("python3")
        .args(["-", &*src.to_string_lossy(), &*dest.to_string_lossy(), &*root.to_string_lossy(), host, "/opt/kq", "0.1.0"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("python3");
    std::io::Write::write_all(&mut child.stdin.take().expect("piped stdin"), render_program().as_bytes()).expect("write the program");
    let out = child.wait_with_output().expect("python3 ran");
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    Ok(std::fs::read_to_string(dest).unwrap_or_else(|e| panic!("{}: {e}", dest.display())))
}

/// `bash install.sh --debug` (the repository's), to which the caller adds
/// arguments and environment. Without the variables `cargo test` sets for
/// this package (`CARGO_MANIFEST_DIR`, `CARGO_PKG_*`, `CARGO_BIN_EXE_*`,
/// ...): its `cargo build` would otherwise see them, rebuild the crates
/// whose build scripts read them (ring reads `CARGO_MANIFEST_DIR` and
/// `CARGO_PKG_NAME`), relink the workspace's binaries in `target/debug`
/// while other tests run them (a `qa-gate` that cannot find its own
/// executable answers `command_root_unknown`), and make the next `cargo
/// test` rebuild them again.
pub(crate) fn install_sh() -> std::process::Command {
    let mut c = std::process::Command::new("bash");
    c.arg(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("install.sh")).arg("--debug");
    for (k, _) in std::env::vars_os() {
        if k.to_str().is_some_and(set_by_cargo_test) {
            c.env_remove(k);
        }
    }
    c
}

/// Whether `cargo test` sets the variable `name` for this package's test
/// process (`CARGO`, the path of cargo itself, and the user's own `CARGO_HOME`,
/// `CARGO_TARGET_DIR`, ... are not such).
fn set_by_cargo_test(name: &str) -> bool {
    ["CARGO_PKG_", "CARGO_BIN_", "CARGO_CRATE_", "CARGO_MANIFEST_"].iter().any(|p| name.starts_with(p))
        || matches!(name, "CARGO_PRIMARY_PACKAGE" | "CARGO_TARGET_TMPDIR" | "OUT_DIR")
}

/// A loopback TCP port that refuses connections and that nothing else can
/// take while the returned socket lives: bound, never listening (a port read
/// from a dropped listener could be handed to another test's server in the
/// same process before the check connects).
#[allow(unsafe_code)]
pub(crate) fn closed_port() -> (std::os::fd::OwnedFd, u16) {
    use std::os::fd::FromRawFd;
    // SAFETY: socket(2) returns a new descriptor or -1; on success we own it.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0) };
    assert!(fd >= 0, "socket: {}", std::io::Error::last_os_error());
    // SAFETY: fd is a fresh descriptor nothing else owns.
    let owned = unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) };
    let mut addr = libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: 0,
        sin_addr: libc::in_addr { s_addr: u32::from(std::net::Ipv4Addr::LOCALHOST).to_be() },
        sin_zero: [0; 8],
    };
    let mut len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
    // SAFETY: addr is a valid sockaddr_in of `len` bytes for both calls.
    let rc = unsafe { libc::bind(fd, (&raw const addr).cast(), len) };
    assert_eq!(rc, 0, "bind: {}", std::io::Error::last_os_error());
    // SAFETY: as above; getsockname writes at most `len` bytes into addr.
    let rc = unsafe { libc::getsockname(fd, (&raw mut addr).cast(), &mut len) };
    assert_eq!(rc, 0, "getsockname: {}", std::io::Error::last_os_error());
    (owned, u16::from_be(addr.sin_port))
}
