//! The advisory lock on `_manifest.lock`, taken with the one lock with a
//! deadline ([`kijito_files::lock`], `fd-lock`: flock on Unix). Acquired
//! with bounded backoff (2, 4, ... 64 ms) up to the 800 ms governance timeout, then fail closed with `latch_lock_timeout`.
//! The kernel drops a flock when its holder dies, so a lock can only be
//! "stale" when its holder is alive but stuck; [`probe`] reports that.

use kijito_files::{lock, private};
use kijito_protocol::error::{Error, Result};
use std::fs::{File, OpenOptions};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::Path;
use std::time::Duration;

/// A held lock; released on drop (closing the fd releases the flock).
#[derive(Debug)]
pub struct LockGuard {
    _lock: lock::Held,
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
        return Err(Error::new(
            crate::codes::LOCK_INSECURE,
            format!("{} must be a regular 0600 file owned by the current user", path.display()),
        ));
    }
    Ok(file)
}

/// Acquire the exclusive lock within `timeout_ms` (backoff 2, 4, ... 64 ms;
/// the one lock with a deadline, [`kijito_files::lock`]).
pub fn acquire(path: &Path, timeout_ms: u64) -> Result<LockGuard> {
    let backoff = lock::Backoff { first: Duration::from_millis(2), max: Duration::from_millis(64) };
    match lock::exclusive_within(open_lock(path, true)?, Duration::from_millis(timeout_ms), backoff) {
        Ok(held) => Ok(LockGuard { _lock: held }),
        Err(lock::Refused::Failed(e)) => Err(Error::new(crate::codes::LOCK_FAILED, format!("flock {}: {e}", path.display()))),
        Err(lock::Refused::TimedOut) => Err(Error::new(
            crate::codes::LOCK_TIMEOUT,
            format!("{} is held by another writer; gave up after {} ms (fail closed)", path.display(), timeout_ms),
        )),
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
            rd.filter_map(|e| e.ok()).filter(|e| e.file_name().to_str().is_some_and(|n| n.starts_with('.') && n.contains(".tmp-"))).count()
                as u64
        })
        .unwrap_or(0);
    let file = match open_lock(path, false) {
        Ok(f) => f,
        Err(e) if e.code_as() == Some(crate::codes::LOCK_MISSING) => {
            return Ok(LockProbe { exists: false, held: false, age_ms: 0, interrupted_writes })
        }
        Err(e) => return Err(e),
    };
    let mtime_ms = file.metadata().map(|m| (m.mtime().max(0) as u64) * 1000).unwrap_or(0);
    // Held means held for the whole probe window: a writer's append (a few
    // ms) or a forked child that has not yet exec'd its copy of the fd away
    // is not a stale lock.
    let held = lock::held_throughout(file, PROBE_ATTEMPTS, PROBE_PAUSE)
        .map_err(|e| Error::new(crate::codes::LOCK_FAILED, format!("flock {}: {e}", path.display())))?;
    Ok(LockProbe { exists: true, held, age_ms: now_ms.saturating_sub(mtime_ms), interrupted_writes })
}
