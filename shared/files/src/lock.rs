//! The one lock with a deadline: an advisory `flock` taken through `fd-lock`
//! on a file the caller opened (owner-only, no symlink followed: the caller's
//! rules), polled without blocking until it is taken or the deadline passes.
//! The kernel drops a flock when its holder dies, so a lock is never left
//! behind by a crash; a holder that is alive but stuck makes the waiter give
//! up at its deadline (fail closed with the caller's code).

use std::fs::File;
use std::path::Path;
use std::time::{Duration, Instant};

/// Open the file a lock is taken on: created owner-only (0600) if missing,
/// never truncated, never through a symlink (`O_NOFOLLOW`), not inherited
/// by a child (`O_CLOEXEC`).
pub fn open_file(path: &Path) -> std::io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
}

/// How a waiter polls: the first pause, doubled after each try up to `max`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    pub first: Duration,
    pub max: Duration,
}

/// A held exclusive lock; released when dropped (closing the descriptor).
#[derive(Debug)]
pub struct Held {
    _lock: fd_lock::RwLock<File>,
    /// The locked file's device and inode (0, 0 when it could not be read).
    id: (u64, u64),
}

impl Held {
    /// Whether `path` still names the locked file (a regular file, not a
    /// link): a lock file removed or replaced under its holder lets another
    /// process lock a new file at the same path, and then two hold "the"
    /// lock; the holder checks this before it acts on the lock.
    pub fn still_at(&self, path: &Path) -> bool {
        use std::os::unix::fs::MetadataExt;
        std::fs::symlink_metadata(path).is_ok_and(|m| m.is_file() && (m.dev(), m.ino()) == self.id && self.id != (0, 0))
    }
}

/// Why no lock was taken.
#[derive(Debug)]
pub enum Refused {
    /// Still held by another descriptor at the deadline.
    TimedOut,
    /// `flock` itself failed (not "held by someone").
    Failed(std::io::Error),
}

/// One non-blocking try: `Ok(true)` when taken. An exclusive lock is kept
/// (its guard is forgotten: it lives until the descriptor closes); a shared
/// one is released at once (a probe).
fn try_lock(lock: &mut fd_lock::RwLock<File>, exclusive: bool) -> std::io::Result<bool> {
    let res = if exclusive { lock.try_write().map(std::mem::forget) } else { lock.try_read().map(drop) };
    match res {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock || e.kind() == std::io::ErrorKind::Interrupted => Ok(false),
        Err(e) => Err(e),
    }
}

/// Take the exclusive lock on `file` within `wait`, trying at once and then
/// after each pause of `backoff` (never sleeping past the deadline; at most
/// `wait / backoff.first + 1` tries).
pub fn exclusive_within(file: File, wait: Duration, backoff: Backoff) -> Result<Held, Refused> {
    use std::os::unix::fs::MetadataExt;
    let id = file.metadata().map(|m| (m.dev(), m.ino())).unwrap_or((0, 0));
    let mut lock = fd_lock::RwLock::new(file);
    let start = Instant::now();
    let mut pause = backoff.first;
    loop {
        match try_lock(&mut lock, true) {
            Ok(true) => return Ok(Held { _lock: lock, id }),
            Ok(false) => {}
            Err(e) => return Err(Refused::Failed(e)),
        }
        let elapsed = start.elapsed();
        if elapsed >= wait {
            return Err(Refused::TimedOut);
        }
        std::thread::sleep(pause.min(wait - elapsed));
        pause = (pause * 2).min(backoff.max);
    }
}

/// Whether someone holds `file`'s lock for the whole window: up to
/// `attempts` shared tries `pause` apart (a writer's short hold is not
/// "held"). `Ok(false)`: a shared lock was taken (and released) once.
pub fn held_throughout(file: File, attempts: u32, pause: Duration) -> std::io::Result<bool> {
    let mut lock = fd_lock::RwLock::new(file);
    for attempt in 0..attempts {
        if try_lock(&mut lock, false)? {
            return Ok(false);
        }
        if attempt + 1 < attempts {
            std::thread::sleep(pause);
        }
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn open(path: &std::path::Path) -> File {
        std::fs::OpenOptions::new().read(true).write(true).create(true).truncate(false).open(path).unwrap()
    }

    const FAST: Backoff = Backoff { first: Duration::from_millis(2), max: Duration::from_millis(8) };

    #[test]
    fn a_lock_file_is_made_owner_only_kept_whole_and_never_opened_through_a_link() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x.lock");
        drop(open_file(&p).unwrap());
        assert_eq!(std::fs::metadata(&p).unwrap().permissions().mode() & 0o777, 0o600);
        std::fs::write(&p, b"holder 42").unwrap();
        drop(open_file(&p).unwrap());
        assert_eq!(std::fs::read(&p).unwrap(), b"holder 42", "never truncated");
        let target = dir.path().join("elsewhere");
        let link = dir.path().join("y.lock");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        assert_eq!(open_file(&link).unwrap_err().raw_os_error(), Some(libc::ELOOP));
        assert!(!target.exists(), "nothing made through the link");
    }

    #[test]
    fn one_holder_at_a_time_and_the_drop_releases() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x.lock");
        let held = exclusive_within(open(&p), Duration::from_millis(50), FAST).unwrap();
        assert!(matches!(exclusive_within(open(&p), Duration::from_millis(50), FAST), Err(Refused::TimedOut)));
        assert!(matches!(exclusive_within(open(&p), Duration::ZERO, FAST), Err(Refused::TimedOut)), "a zero wait tries once");
        assert!(held_throughout(open(&p), 3, Duration::from_millis(1)).unwrap());
        drop(held);
        assert!(!held_throughout(open(&p), 3, Duration::from_millis(1)).unwrap());
        let again = exclusive_within(open(&p), Duration::ZERO, FAST).unwrap();
        drop(again);
    }

    #[test]
    fn a_waiter_gets_the_lock_once_the_holder_lets_go() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x.lock");
        let held = exclusive_within(open(&p), Duration::ZERO, FAST).unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let p2 = p.clone();
        let waiter = std::thread::spawn(move || {
            tx.send(()).unwrap();
            exclusive_within(open(&p2), Duration::from_secs(60), FAST).map(drop).is_ok()
        });
        rx.recv().unwrap();
        std::thread::sleep(Duration::from_millis(20));
        drop(held);
        assert!(waiter.join().unwrap(), "taken after the release, long before the deadline");
    }
}
