//! The advisory lock on `_manifest.lock`, taken through `fd-lock` (flock on
//! Unix). Acquired with bounded backoff (2, 4, ... 64 ms) up to the 800 ms
//! governance timeout, then fail closed with `latch_lock_timeout`.
//! The kernel drops a flock when its holder dies, so a lock can only be
//! "stale" when its holder is alive but stuck; [`probe`] reports that.

use kijito_protocol::error::{Error, Result};
use kijito_files::private;
use std::fs::{File, OpenOptions};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::Path;
use std::time::{Duration, Instant};

/// A held lock; released on drop (closing the fd releases the flock).
#[derive(Debug)]
pub struct LockGuard {
    _lock: fd_lock::RwLock<File>,
}

fn open_lock(path: &Path, create: bool) -> Result<File> {
    let mut opts = OpenOptions::new();
    opts.read(true).custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC);
    if create {
        opts.write(true).create(true).mode(0o600);
    }
    let file = opts.open(path).map_err(|e| {
        if e.raw_os_error() == Some(libc::ELOOP) {
            Error::new(crate::codes::LOCK_SYMLINK, format!("{} is a symlink; refusing to follow it", path.display()))
        } else if e.kind() == std::io::ErrorKind::NotFound {
            Error::new(crate::codes::LOCK_MISSING, format!("{} does not exist", path.display()))
        } else {
            Error::new(crate::codes::LOCK_FAILED, format!("cannot open {}: {e}", path.display()))
        }
    })?;
    let meta = file.metadata().map_err(|e| Error::new(crate::codes::LOCK_FAILED, format!("cannot stat {}: {e}", path.display())))?;
    if !meta.is_file() || meta.uid() != private::current_uid() || meta.mode() & 0o077 != 0 {
        return Err(Error::new(crate::codes::LOCK_INSECURE, format!("{} must be a regular 0600 file owned by the current user", path.display())));
    }
    Ok(file)
}

/// One non-blocking attempt: `Ok(true)` when taken. An exclusive lock is kept
/// (its guard is forgotten, so the lock lives until the fd closes with the
/// [`LockGuard`]); a shared probe lock is released at once.
fn try_lock(lock: &mut fd_lock::RwLock<File>, exclusive: bool) -> std::io::Result<bool> {
    let res = if exclusive { lock.try_write().map(std::mem::forget) } else { lock.try_read().map(drop) };
    match res {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock || e.kind() == std::io::ErrorKind::Interrupted => Ok(false),
        Err(e) => Err(e),
    }
}

/// Acquire the exclusive lock within `timeout_ms` (backoff 2, 4, ... 64 ms).
pub fn acquire(path: &Path, timeout_ms: u64) -> Result<LockGuard> {
    let mut lock = fd_lock::RwLock::new(open_lock(path, true)?);
    let start = Instant::now();
    let mut wait = Duration::from_millis(2);
    loop {
        match try_lock(&mut lock, true) {
            Ok(true) => return Ok(LockGuard { _lock: lock }),
            Ok(false) => {}
            Err(e) => return Err(Error::new(crate::codes::LOCK_FAILED, format!("flock {}: {e}", path.display()))),
        }
        let elapsed = start.elapsed();
        let limit = Duration::from_millis(timeout_ms);
        if elapsed >= limit {
            return Err(Error::new(
                crate::codes::LOCK_TIMEOUT,
                format!("{} is held by another writer; gave up after {} ms (fail closed)", path.display(), timeout_ms),
            ));
        }
        std::thread::sleep(wait.min(limit - elapsed));
        wait = (wait * 2).min(Duration::from_millis(64));
    }
}

/// What a lock probe saw.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct LockProbe {
    pub exists: bool,
    /// Someone holds the lock right now.
    pub held: bool,
    /// Milliseconds since the lock file was last modified (0 if absent).
    pub age_ms: u64,
    /// Leftover temp files of an interrupted atomic write in `.memory-latch`.
    pub interrupted_writes: u64,
}

/// How often, and how far apart, `probe` tries the lock before calling it
/// held: 20 tries 10 ms apart, about 200 ms at most.
const PROBE_ATTEMPTS: u32 = 20;
const PROBE_PAUSE: std::time::Duration = std::time::Duration::from_millis(10);

/// Probe the lock with shared non-blocking attempts over a short window.
pub fn probe(path: &Path, now_ms: u64) -> Result<LockProbe> {
    let dir = path.parent().unwrap_or(Path::new("/"));
    let interrupted_writes = std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .filter(|e| e.file_name().to_str().is_some_and(|n| n.starts_with('.') && n.contains(".tmp-")))
                .count() as u64
        })
        .unwrap_or(0);
    let file = match open_lock(path, false) {
        Ok(f) => f,
        Err(e) if e.is(crate::codes::LOCK_MISSING) => return Ok(LockProbe { exists: false, held: false, age_ms: 0, interrupted_writes }),
        Err(e) => return Err(e),
    };
    let mtime_ms = file.metadata().map(|m| (m.mtime().max(0) as u64) * 1000).unwrap_or(0);
    let mut lock = fd_lock::RwLock::new(file);
    // Held means held for the whole probe window: a writer's append (a few
    // ms) or a forked child that has not yet exec'd its copy of the fd away
    // is not a stale lock.
    let mut got = false;
    for attempt in 0..PROBE_ATTEMPTS {
        got = try_lock(&mut lock, false).map_err(|e| Error::new(crate::codes::LOCK_FAILED, format!("flock {}: {e}", path.display())))?;
        if got {
            break;
        }
        if attempt + 1 < PROBE_ATTEMPTS {
            std::thread::sleep(PROBE_PAUSE);
        }
    }
    Ok(LockProbe { exists: true, held: !got, age_ms: now_ms.saturating_sub(mtime_ms), interrupted_writes })
}
