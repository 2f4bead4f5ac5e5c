//! Private files: owner-only directories (0700) and files (0600), written
//! atomically (temp + fsync + rename + directory fsync) or created
//! exclusively, never following a symlink, and read with identity checks.
//!
//! Every artifact the toolkit writes goes through this module.

use kijito_protocol::error::{Error, Kind, Result};
use std::fs::{self, File, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

/// The effective user id of this process.
#[allow(unsafe_code)]
pub fn current_uid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

/// Identity of an opened file, compared before and after a read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileIdentity {
    pub dev: u64,
    pub ino: u64,
    pub size: u64,
    pub mtime_ms: i64,
    /// Nanosecond part kept so a same-millisecond change is still seen.
    pub mtime_nsec: i64,
}

impl FileIdentity {
    pub fn of(meta: &fs::Metadata) -> Self {
        FileIdentity {
            dev: meta.dev(),
            ino: meta.ino(),
            size: meta.size(),
            mtime_ms: meta.mtime() * 1000 + meta.mtime_nsec() / 1_000_000,
            mtime_nsec: meta.mtime_nsec(),
        }
    }
}

/// What a file must be before we trust its bytes.
#[derive(Debug, Clone, Copy)]
pub struct FileRules {
    /// Refuse group/other permission bits (secrets, private artifacts).
    pub owner_only: bool,
    pub min_bytes: u64,
    pub max_bytes: u64,
}

/// Stable codes of private files and directories (the `files` area).
pub mod codes {
    kijito_protocol::codes! {
        NOT_FOUND NotFound = "file_not_found",
        SYMLINK Symlink = "file_is_symlink",
        NOT_REGULAR NotRegular = "file_not_regular",
        NOT_OWNED NotOwned = "file_not_owned",
        PERMISSIONS Permissions = "file_permissions_too_open",
        TOO_LARGE TooLarge = "file_too_large",
        TOO_SMALL TooSmall = "file_too_small",
        CHANGED Changed = "file_changed_during_read",
        READ Read = "file_read_failed",
        EXISTS Exists = "file_exists",
        WRITE Write = "file_write_failed",
        DIR_SYMLINK DirSymlink = "directory_is_symlink",
        DIR_NOT_DIR DirNotDir = "directory_not_directory",
        DIR_NOT_OWNED DirNotOwned = "directory_not_owned",
        DIR_PERMISSIONS DirPermissions = "directory_permissions_too_open",
        DIR_MISSING DirMissing = "directory_missing",
        DIR_CREATE DirCreate = "directory_create_failed",
    }
}

/// A file of the user could not be used ([`Kind::Local`]); the directory
/// codes stay [`Kind::Refused`].
pub fn file_error(code: impl Into<kijito_protocol::error::ErrorCode>, message: impl Into<String>) -> Error {
    Error::new(code, message).with_kind(Kind::Local)
}

fn open_nofollow(path: &Path) -> std::io::Result<File> {
    OpenOptions::new().read(true).custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC).open(path)
}

/// Read a whole file under `rules`: opened without following a symlink,
/// regular, owned by this user, within the size bounds, and unchanged
/// (device, inode, size, mtime) between before and after the read.
pub fn read_checked(path: &Path, rules: FileRules) -> Result<(Vec<u8>, FileIdentity)> {
    read_checked_with(path, rules, || {})
}

/// [`read_checked`] with a hook run after the file is opened and checked and
/// before it is read: the seam that lets tests change or replace the file
/// mid-read deterministically.
pub fn read_checked_with(path: &Path, rules: FileRules, mid_read: impl FnOnce()) -> Result<(Vec<u8>, FileIdentity)> {
    check_ancestors(path)?;
    read_file_checked(path, rules, mid_read)
}

/// [`read_checked_with`] without the ancestor check (the caller made it).
fn read_file_checked(path: &Path, rules: FileRules, mid_read: impl FnOnce()) -> Result<(Vec<u8>, FileIdentity)> {
    let shown = path.display();
    let file = match open_nofollow(path) {
        Ok(f) => f,
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
            return Err(file_error(codes::SYMLINK, format!("{shown} is a symlink")));
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(file_error(codes::NOT_FOUND, format!("{shown} does not exist")));
        }
        Err(e) => return Err(file_error(codes::READ, format!("cannot open {shown}: {e}"))),
    };
    let before = file.metadata().map_err(|e| file_error(codes::READ, format!("cannot stat {shown}: {e}")))?;
    check_file_meta(path, &before, rules)?;
    mid_read();
    let mut bytes = Vec::with_capacity(before.len() as usize);
    (&file).take(rules.max_bytes + 1).read_to_end(&mut bytes).map_err(|e| file_error(codes::READ, format!("cannot read {shown}: {e}")))?;
    let after = file.metadata().map_err(|e| file_error(codes::READ, format!("cannot stat {shown}: {e}")))?;
    let id = FileIdentity::of(&before);
    if id != FileIdentity::of(&after) || bytes.len() as u64 != before.len() {
        return Err(file_error(codes::CHANGED, format!("{shown} changed while it was read")));
    }
    // The name must still lead to the file we read (not replaced meanwhile).
    match fs::symlink_metadata(path) {
        Ok(now) if now.dev() == id.dev && now.ino() == id.ino => {}
        _ => return Err(file_error(codes::CHANGED, format!("{shown} was replaced while it was read"))),
    }
    Ok((bytes, id))
}

fn check_file_meta(path: &Path, meta: &fs::Metadata, rules: FileRules) -> Result<()> {
    let shown = path.display();
    if !meta.file_type().is_file() {
        return Err(file_error(codes::NOT_REGULAR, format!("{shown} is not a regular file")));
    }
    if meta.uid() != current_uid() {
        return Err(file_error(codes::NOT_OWNED, format!("{shown} is not owned by the current user")));
    }
    if rules.owner_only && meta.mode() & 0o077 != 0 {
        return Err(file_error(
            codes::PERMISSIONS,
            format!("{shown} is accessible by group or other (mode {:o}); chmod 600 it", meta.mode() & 0o777),
        ));
    }
    if meta.len() > rules.max_bytes {
        return Err(file_error(codes::TOO_LARGE, format!("{shown} is larger than {} bytes", rules.max_bytes)));
    }
    if meta.len() < rules.min_bytes {
        return Err(file_error(codes::TOO_SMALL, format!("{shown} is smaller than {} bytes", rules.min_bytes)));
    }
    Ok(())
}

/// Stat a file without following a symlink and check it under `rules`.
pub fn stat_checked(path: &Path, rules: FileRules) -> Result<FileIdentity> {
    let meta = match fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(file_error(codes::NOT_FOUND, format!("{} does not exist", path.display())));
        }
        Err(e) => return Err(file_error(codes::READ, format!("cannot stat {}: {e}", path.display()))),
    };
    if meta.file_type().is_symlink() {
        return Err(file_error(codes::SYMLINK, format!("{} is a symlink", path.display())));
    }
    check_file_meta(path, &meta, rules)?;
    Ok(FileIdentity::of(&meta))
}

/// Check every ancestor directory of `path` (its parent up to `/`): none
/// may be a symlink, each must be owned by root or this user, and none may be
/// writable by group or other unless its sticky bit is set (`/tmp`). So no
/// other user can swap a directory on the way to a private file.
pub fn check_ancestors(path: &Path) -> Result<()> {
    let uid = current_uid();
    for dir in path.ancestors().skip(1).filter(|d| !d.as_os_str().is_empty()) {
        let shown = dir.display();
        let meta = match fs::symlink_metadata(dir) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(Error::new(codes::DIR_MISSING, format!("cannot stat {shown}: {e}"))),
        };
        if meta.file_type().is_symlink() {
            return Err(Error::new(codes::DIR_SYMLINK, format!("{shown} (on the way to {}) is a symlink", path.display())));
        }
        if meta.uid() != uid && meta.uid() != 0 {
            return Err(Error::new(codes::DIR_NOT_OWNED, format!("{shown} (on the way to {}) is owned by another user", path.display())));
        }
        if meta.mode() & 0o022 != 0 && meta.mode() & 0o1000 == 0 {
            return Err(Error::new(
                codes::DIR_PERMISSIONS,
                format!(
                    "{shown} (on the way to {}) is writable by group or other without the sticky bit (mode {:o})",
                    path.display(),
                    meta.mode() & 0o7777
                ),
            ));
        }
    }
    Ok(())
}

/// Check that `dir` is a directory (not a symlink) owned by this user and not
/// writable by group or other, and that its ancestors pass
/// [`check_ancestors`]. With `owner_only`, no group/other bits at all.
pub fn check_dir(dir: &Path, owner_only: bool) -> Result<()> {
    check_dir_checked(dir, owner_only).map(|_| ())
}

/// [`check_dir`], returning the proof that it passed.
pub fn check_dir_checked(dir: &Path, owner_only: bool) -> Result<CheckedDir> {
    check_ancestors(dir)?;
    check_dir_itself(dir, owner_only)
}

/// The part of [`check_dir`] about `dir` itself (its ancestors are checked by the caller).
fn check_dir_itself(dir: &Path, owner_only: bool) -> Result<CheckedDir> {
    let shown = dir.display();
    let meta = match fs::symlink_metadata(dir) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(Error::new(codes::DIR_MISSING, format!("directory {shown} does not exist")));
        }
        Err(e) => return Err(Error::new(codes::DIR_MISSING, format!("cannot stat {shown}: {e}"))),
    };
    check_dir_meta(dir, &meta, owner_only)
}

fn check_dir_meta(dir: &Path, meta: &fs::Metadata, owner_only: bool) -> Result<CheckedDir> {
    let shown = dir.display();
    if meta.file_type().is_symlink() {
        return Err(Error::new(codes::DIR_SYMLINK, format!("{shown} is a symlink")));
    }
    if !meta.is_dir() {
        return Err(Error::new(codes::DIR_NOT_DIR, format!("{shown} is not a directory")));
    }
    if meta.uid() != current_uid() {
        return Err(Error::new(codes::DIR_NOT_OWNED, format!("{shown} is not owned by the current user")));
    }
    let mask = if owner_only { 0o077 } else { 0o022 };
    if meta.mode() & mask != 0 {
        return Err(Error::new(
            codes::DIR_PERMISSIONS,
            format!(
                "{shown} has mode {:o}; it must not be {} by group or other",
                meta.mode() & 0o777,
                if owner_only { "accessible" } else { "writable" }
            ),
        ));
    }
    Ok(CheckedDir(dir.to_owned()))
}

/// A directory this process has checked as [`check_dir`] does (a real
/// directory owned by this user, not writable by group or other, and every
/// ancestor as [`check_ancestors`] requires). Files directly in it are read
/// and written through it without checking those ancestors again: each
/// ancestor is owned by this user or root and writable by no one else (or
/// sticky, where no one else may rename our entries), so no other user can
/// swap any directory on the way after the check; only this user or root
/// could, and they can anyway. Each file itself is still checked in full
/// (no symlink, regular, owned, mode, size, unchanged while read).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckedDir(std::path::PathBuf);

impl CheckedDir {
    pub fn path(&self) -> &Path {
        &self.0
    }

    /// `path` is an entry directly in this directory.
    fn holds(&self, path: &Path) -> bool {
        path.parent() == Some(self.0.as_path())
    }

    /// [`read_checked`] for a file of this directory (any other path gets the full check).
    pub fn read_checked(&self, path: &Path, rules: FileRules) -> Result<(Vec<u8>, FileIdentity)> {
        if self.holds(path) {
            read_file_checked(path, rules, || {})
        } else {
            read_checked(path, rules)
        }
    }

    /// [`write_atomic`] for a file of this directory (any other path gets the full check).
    pub fn write_atomic(&self, path: &Path, bytes: &[u8]) -> Result<()> {
        if self.holds(path) {
            write_atomic_here(path, bytes)
        } else {
            write_atomic(path, bytes)
        }
    }

    /// [`write_provisional`] for a file of this directory (any other path gets the full check).
    pub fn write_provisional(&self, path: &Path, bytes: &[u8]) -> Result<()> {
        if !self.holds(path) {
            check_ancestors(path)?;
        }
        write_provisional_here(path, bytes)
    }

    /// [`ensure_private_dir`] for the entry `name` of this directory: its
    /// ancestors are this directory's, already checked.
    pub fn private_subdir(&self, name: &str) -> Result<CheckedDir> {
        let dir = self.0.join(name);
        if !self.holds(&dir) {
            return Err(Error::new(codes::DIR_NOT_DIR, format!("{} is not an entry of {}", dir.display(), self.0.display())));
        }
        match fs::symlink_metadata(&dir) {
            Ok(meta) => check_dir_meta(&dir, &meta, true),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => create_private_dir(&dir).and_then(|_| check_dir_itself(&dir, true)),
            Err(e) => Err(Error::new(codes::DIR_MISSING, format!("cannot stat {}: {e}", dir.display()))),
        }
    }
}

/// A path where a new artifact may be created: its directory is owned by
/// this user, not group/other writable and not a symlink, and nothing
/// (not even a dangling symlink) exists at the path yet.
pub fn check_new_file_path(path: &Path) -> Result<()> {
    check_dir(parent_of(path)?, false)?;
    if fs::symlink_metadata(path).is_ok() {
        return Err(file_error(codes::EXISTS, format!("{} already exists", path.display())));
    }
    Ok(())
}

/// Make sure `dir` exists as a private directory (0700, owned, no symlink),
/// creating it (and missing parents, 0700) if needed.
pub fn ensure_private_dir(dir: &Path) -> Result<()> {
    ensure_private_dir_checked(dir).map(|_| ())
}

/// [`ensure_private_dir`], returning the proof that the directory passed.
pub fn ensure_private_dir_checked(dir: &Path) -> Result<CheckedDir> {
    check_ancestors(dir)?;
    match fs::symlink_metadata(dir) {
        // The ancestors were checked just above.
        Ok(meta) => check_dir_meta(dir, &meta, true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            create_private_dir(dir)?;
            // Missing parents were created too: check the whole way again.
            check_dir_checked(dir, true)
        }
        Err(e) => Err(Error::new(codes::DIR_MISSING, format!("cannot stat {}: {e}", dir.display()))),
    }
}

/// mkdir -p `dir` 0700 (missing parents too), its own mode made exact; the
/// parent of every directory it made is fsynced ([`fsync_parent`]), so a
/// file written into it later never outlives the directory on power loss.
fn create_private_dir(dir: &Path) -> Result<()> {
    let mut missing = Vec::new();
    let mut p = dir;
    while fs::symlink_metadata(p).is_err() {
        missing.push(p);
        match p.parent() {
            Some(q) if !q.as_os_str().is_empty() => p = q,
            _ => break,
        }
    }
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| Error::new(codes::DIR_CREATE, format!("cannot create {}: {e}", dir.display())))?;
    // mkdir honours the umask; make the mode exact.
    fs::set_permissions(dir, fs::Permissions::from_mode(0o700))
        .map_err(|e| Error::new(codes::DIR_CREATE, format!("cannot chmod {}: {e}", dir.display())))?;
    // Outermost first: each new directory's entry in its parent.
    for made in missing.iter().rev() {
        fsync_parent(made)?;
    }
    Ok(())
}

/// fsync a directory so a rename or create in it is durable.
pub fn fsync_dir(dir: &Path) -> Result<()> {
    let f = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(dir)
        .map_err(|e| file_error(codes::WRITE, format!("cannot open directory {}: {e}", dir.display())))?;
    f.sync_all().map_err(|e| file_error(codes::WRITE, format!("cannot fsync directory {}: {e}", dir.display())))
}

/// fsync the directory holding `path`: the one step after every rename,
/// link, unlink or mkdir of `path` that a later step relies on (a power loss
/// then never undoes it behind that step's back).
pub fn fsync_parent(path: &Path) -> Result<()> {
    fsync_dir(parent_of(path)?)
}

/// Rename `from` to `to` (same directory) and make it durable ([`fsync_parent`]).
pub fn rename_durable(from: &Path, to: &Path) -> std::io::Result<()> {
    fs::rename(from, to)?;
    fsync_parent(to).map_err(|e| std::io::Error::other(e.message().to_owned()))
}

/// Remove the temp files a killed [`write_atomic`] or [`create_new`] of
/// `path` left beside it (`.<name>.tmp-*`, regular files owned by this user;
/// anything else is left alone). Call it only under the lock that
/// serialises the writers of `path`, so no live write's temp file is taken.
/// Returns how many were removed (the directory is fsynced when any was).
pub fn remove_stale_temps(path: &Path) -> Result<usize> {
    remove_stale_temps_older(path, std::time::Duration::ZERO)
}

/// [`remove_stale_temps`] of only the temp files last modified more than
/// `age` ago: for a file written without a lock, where no live write lasts
/// that long (a hook's watchdog ends it within seconds).
pub fn remove_stale_temps_older(path: &Path, age: std::time::Duration) -> Result<usize> {
    let dir = parent_of(path)?;
    let prefix = format!(".{}.tmp-", file_name_of(path)?);
    remove_temps_matching(dir, |name, meta| {
        name.starts_with(&prefix) && (age.is_zero() || meta.modified().ok().and_then(|t| t.elapsed().ok()).is_some_and(|e| e > age))
    })
}

/// How old a temp file of a file written without a lock must be before a
/// writer may take it for a killed write's: no live write lasts that long
/// (every hook's and command's watchdog ends it within seconds;
/// docs/protocol.md §7, "Crash recovery").
pub const STALE_TEMP_AGE: std::time::Duration = std::time::Duration::from_secs(30);

/// [`write_atomic`] of a file whose writers share no lock (the compaction
/// request, kijito-setup's files): first the temp files a killed earlier
/// write left for it, once older than [`STALE_TEMP_AGE`], are removed (best
/// effort), then the atomic write. A live writer's temp file is never taken.
pub fn write_atomic_unlocked(path: &Path, bytes: &[u8]) -> Result<()> {
    let _ = remove_stale_temps_older(path, STALE_TEMP_AGE);
    write_atomic(path, bytes)
}

/// [`remove_stale_temps`] for every file of `dir` a killed write left
/// (`.<anything>.tmp-*`); for a directory only one lock's writers write in.
pub fn remove_stale_temps_in(dir: &Path) -> Result<usize> {
    remove_temps_matching(dir, |name, _| is_temp_name(name))
}

/// Remove the temp files a killed write left in `dir` for the files
/// `stale(target, age)` names: `target` is the name the write was
/// replacing (`.<target>.tmp-*`), `age` how long ago the temp file was last
/// modified. One directory listing for many files of one lock's writers.
pub fn remove_stale_temps_for(dir: &Path, stale: impl Fn(&str, std::time::Duration) -> bool) -> Result<usize> {
    remove_temps_matching(dir, |name, meta| {
        let target = name.strip_prefix('.').and_then(|n| n.rsplit_once(".tmp-")).map(|(t, _)| t);
        let age = meta.modified().ok().and_then(|t| t.elapsed().ok()).unwrap_or_default();
        target.is_some_and(|t| stale(t, age))
    })
}

/// Whether `name` is the name of a temp file of [`write_atomic`] / [`create_new`].
pub fn is_temp_name(name: &str) -> bool {
    name.starts_with('.') && name.contains(".tmp-")
}

fn remove_temps_matching(dir: &Path, matches: impl Fn(&str, &fs::Metadata) -> bool) -> Result<usize> {
    let rd = match fs::read_dir(dir) {
        Ok(rd) => rd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(file_error(codes::READ, format!("cannot list {}: {e}", dir.display()))),
    };
    let mut removed = 0;
    for ent in rd.take(100_000).flatten() {
        let name = ent.file_name();
        let hit = match (name.to_str(), ent.metadata()) {
            (Some(n), Ok(meta)) => matches(n, &meta),
            _ => false,
        };
        if hit && remove_owned(&ent.path()).unwrap_or(false) {
            removed += 1;
        }
    }
    if removed > 0 {
        fsync_dir(dir)?;
    }
    Ok(removed)
}

fn parent_of(path: &Path) -> Result<&Path> {
    path.parent()
        .filter(|p| !p.as_os_str().is_empty())
        .ok_or_else(|| file_error(codes::WRITE, format!("{} has no parent directory", path.display())))
}

fn file_name_of(path: &Path) -> Result<String> {
    path.file_name()
        .and_then(|n| n.to_str())
        .map(str::to_owned)
        .ok_or_else(|| file_error(codes::WRITE, format!("{} has no file name", path.display())))
}

/// A fresh owner-only (0600) temp file beside `path` holding `bytes`,
/// fsynced. Created exclusively (O_EXCL, so never through a symlink) under
/// the name `.<name>.tmp-<random>`; removed when dropped unpersisted.
fn write_temp(path: &Path, bytes: &[u8]) -> Result<tempfile::NamedTempFile> {
    let dir = parent_of(path)?;
    let prefix = format!(".{}.tmp-", file_name_of(path)?);
    let mut tmp = tempfile::Builder::new()
        .prefix(&prefix)
        .rand_bytes(16)
        .permissions(fs::Permissions::from_mode(0o600))
        .tempfile_in(dir)
        .map_err(|e| file_error(codes::WRITE, format!("cannot create a temp file in {}: {e}", dir.display())))?;
    let res = tmp
        .write_all(bytes)
        .and_then(|_| tmp.as_file().set_permissions(fs::Permissions::from_mode(0o600)))
        .and_then(|_| tmp.as_file().sync_all());
    if let Err(e) = res {
        return Err(file_error(codes::WRITE, format!("cannot write {}: {e}", tmp.path().display())));
    }
    Ok(tmp)
}

/// Atomically replace (or create) `path` with `bytes`, owner-only: temp file,
/// fsync, rename over, fsync the directory. Refuses when `path` is a symlink
/// or a non-regular file.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    check_ancestors(path)?;
    write_atomic_here(path, bytes)
}

/// [`write_atomic`] without the ancestor check (the caller made it).
fn write_atomic_here(path: &Path, bytes: &[u8]) -> Result<()> {
    write_synced_file_here(path, bytes)?;
    fsync_parent(path)
}

fn write_synced_file_here(path: &Path, bytes: &[u8]) -> Result<()> {
    if let Ok(meta) = fs::symlink_metadata(path) {
        if meta.file_type().is_symlink() {
            return Err(file_error(codes::SYMLINK, format!("{} is a symlink", path.display())));
        }
        if !meta.is_file() {
            return Err(file_error(codes::NOT_REGULAR, format!("{} is not a regular file", path.display())));
        }
    }
    let tmp = write_temp(path, bytes)?;
    // Rename over `path`; on failure the temp file is removed.
    if let Err(e) = tmp.persist(path) {
        return Err(file_error(codes::WRITE, format!("cannot rename into {}: {}", path.display(), e.error)));
    }
    Ok(())
}

/// [`write_atomic`] without either fsync, for a record that a later write of
/// the same operation replaces durably (that write's directory fsync then
/// also covers this rename): a kill leaves it whole (rename), and a power
/// loss may leave it missing or torn, which its reader must refuse (fail
/// closed). PreCompact's provisional attempt (docs/protocol.md §7).
pub fn write_provisional(path: &Path, bytes: &[u8]) -> Result<()> {
    check_ancestors(path)?;
    write_provisional_here(path, bytes)
}

fn write_provisional_here(path: &Path, bytes: &[u8]) -> Result<()> {
    if let Ok(meta) = fs::symlink_metadata(path) {
        if meta.file_type().is_symlink() {
            return Err(file_error(codes::SYMLINK, format!("{} is a symlink", path.display())));
        }
        if !meta.is_file() {
            return Err(file_error(codes::NOT_REGULAR, format!("{} is not a regular file", path.display())));
        }
    }
    let dir = parent_of(path)?;
    let mut tmp = tempfile::Builder::new()
        .prefix(&format!(".{}.tmp-", file_name_of(path)?))
        .rand_bytes(16)
        .permissions(fs::Permissions::from_mode(0o600))
        .tempfile_in(dir)
        .map_err(|e| file_error(codes::WRITE, format!("cannot create a temp file in {}: {e}", dir.display())))?;
    tmp.write_all(bytes).map_err(|e| file_error(codes::WRITE, format!("cannot write {}: {e}", tmp.path().display())))?;
    tmp.persist(path).map(|_| ()).map_err(|e| file_error(codes::WRITE, format!("cannot rename into {}: {}", path.display(), e.error)))
}

/// Create `path` exclusively with `bytes`, owner-only: the complete content is
/// written and fsynced under a temp name, then moved to `path` without
/// replacing anything (`persist_noclobber`: rename with RENAME_NOREPLACE, or
/// link and unlink; fails if anything exists there, symlinks included), so a
/// crash never leaves a partial file at `path`.
pub fn create_new(path: &Path, bytes: &[u8]) -> Result<()> {
    check_ancestors(path)?;
    if fs::symlink_metadata(path).is_ok() {
        return Err(file_error(codes::EXISTS, format!("{} already exists", path.display())));
    }
    let tmp = write_temp(path, bytes)?;
    match tmp.persist_noclobber(path).map_err(|e| e.error) {
        Ok(_) => fsync_parent(path),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            Err(file_error(codes::EXISTS, format!("{} already exists", path.display())))
        }
        Err(e) => Err(file_error(codes::WRITE, format!("cannot create {}: {e}", path.display()))),
    }
}

/// Remove a file only if it is a regular file owned by this user (never a
/// symlink target). Returns whether something was removed.
pub fn remove_owned(path: &Path) -> Result<bool> {
    match fs::symlink_metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(file_error(codes::READ, format!("cannot stat {}: {e}", path.display()))),
        Ok(meta) => {
            if meta.file_type().is_symlink() {
                return Err(file_error(codes::SYMLINK, format!("{} is a symlink; refusing to touch it", path.display())));
            }
            if !meta.is_file() {
                return Err(file_error(codes::NOT_REGULAR, format!("{} is not a regular file", path.display())));
            }
            if meta.uid() != current_uid() {
                return Err(file_error(codes::NOT_OWNED, format!("{} is not owned by the current user", path.display())));
            }
            match fs::remove_file(path) {
                Ok(()) => Ok(true),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
                Err(e) => Err(file_error(codes::WRITE, format!("cannot remove {}: {e}", path.display()))),
            }
        }
    }
}

/// Append `bytes` (one whole record, e.g. a JSON line) to the owner-only
/// file `path`, creating it 0600: opened with `O_APPEND` without following a
/// symlink, checked regular, owned by this user and without group/other bits,
/// refused when the file would exceed `max_bytes` (`file_too_large`: the
/// caller decides how to bound it), then fsynced (and the directory when the
/// file was created). An append-only record (the QA ledger, the latch
/// workspace index) is written only through here.
pub fn append_private(path: &Path, bytes: &[u8], max_bytes: u64) -> Result<()> {
    check_ancestors(path)?;
    let existed = fs::symlink_metadata(path).is_ok();
    let mut f = OpenOptions::new()
        .append(true)
        .create(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
        .map_err(|e| match e.raw_os_error() {
            Some(libc::ELOOP) => file_error(codes::SYMLINK, format!("{} is a symlink", path.display())),
            _ => file_error(codes::WRITE, format!("cannot open {} for appending: {e}", path.display())),
        })?;
    let meta = f.metadata().map_err(|e| file_error(codes::READ, format!("cannot stat {}: {e}", path.display())))?;
    if !meta.is_file() {
        return Err(file_error(codes::NOT_REGULAR, format!("{} is not a regular file", path.display())));
    }
    if meta.uid() != current_uid() {
        return Err(file_error(codes::NOT_OWNED, format!("{} is not owned by the current user", path.display())));
    }
    if meta.mode() & 0o077 != 0 {
        return Err(file_error(codes::PERMISSIONS, format!("{} is readable or writable by group or others", path.display())));
    }
    if meta.size().saturating_add(bytes.len() as u64) > max_bytes {
        return Err(file_error(codes::TOO_LARGE, format!("{} would exceed {max_bytes} bytes", path.display())));
    }
    f.write_all(bytes)
        .and_then(|_| f.sync_all())
        .map_err(|e| file_error(codes::WRITE, format!("cannot append to {}: {e}", path.display())))?;
    if !existed {
        fsync_dir(parent_of(path)?)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    const RULES: FileRules = FileRules { owner_only: true, min_bytes: 0, max_bytes: 1024 };

    fn private_tmp() -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        fs::set_permissions(d.path(), fs::Permissions::from_mode(0o700)).unwrap();
        d
    }

    #[test]
    fn atomic_write_is_owner_only_and_replaces() {
        let d = private_tmp();
        let p = d.path().join("a.json");
        write_atomic(&p, b"one").unwrap();
        write_atomic(&p, b"two").unwrap();
        assert_eq!(fs::read(&p).unwrap(), b"two");
        assert_eq!(fs::metadata(&p).unwrap().mode() & 0o777, 0o600);
        assert_eq!(fs::read_dir(d.path()).unwrap().count(), 1, "no temp file left behind");
        let (bytes, _) = read_checked(&p, RULES).unwrap();
        assert_eq!(bytes, b"two");
    }

    #[test]
    fn create_new_is_exclusive() {
        let d = private_tmp();
        let p = d.path().join("r.json");
        create_new(&p, b"x").unwrap();
        assert_eq!(create_new(&p, b"y").unwrap_err().code(), codes::EXISTS.as_str());
        assert_eq!(fs::read(&p).unwrap(), b"x");
        let link = d.path().join("dangling");
        symlink(d.path().join("nowhere"), &link).unwrap();
        assert_eq!(create_new(&link, b"y").unwrap_err().code(), codes::EXISTS.as_str());
        assert!(!d.path().join("nowhere").exists());
    }

    #[test]
    fn symlinks_are_refused() {
        let d = private_tmp();
        let real = d.path().join("real");
        write_atomic(&real, b"secret").unwrap();
        let link = d.path().join("link");
        symlink(&real, &link).unwrap();
        assert_eq!(read_checked(&link, RULES).unwrap_err().code(), codes::SYMLINK.as_str());
        assert_eq!(write_atomic(&link, b"x").unwrap_err().code(), codes::SYMLINK.as_str());
        assert_eq!(remove_owned(&link).unwrap_err().code(), codes::SYMLINK.as_str());
        let dlink = d.path().join("dlink");
        symlink(d.path(), &dlink).unwrap();
        assert_eq!(check_dir(&dlink, true).unwrap_err().code(), codes::DIR_SYMLINK.as_str());
        assert_eq!(ensure_private_dir(&dlink).unwrap_err().code(), codes::DIR_SYMLINK.as_str());
    }

    #[test]
    fn permissions_and_sizes_are_enforced() {
        let d = private_tmp();
        let p = d.path().join("f");
        write_atomic(&p, b"abc").unwrap();
        fs::set_permissions(&p, fs::Permissions::from_mode(0o640)).unwrap();
        assert_eq!(read_checked(&p, RULES).unwrap_err().code(), codes::PERMISSIONS.as_str());
        fs::set_permissions(&p, fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(read_checked(&p, FileRules { max_bytes: 2, ..RULES }).unwrap_err().code(), codes::TOO_LARGE.as_str());
        assert_eq!(read_checked(&p, FileRules { min_bytes: 4, ..RULES }).unwrap_err().code(), codes::TOO_SMALL.as_str());
        assert_eq!(read_checked(&d.path().join("none"), RULES).unwrap_err().code(), codes::NOT_FOUND.as_str());
        assert_eq!(read_checked(d.path(), RULES).unwrap_err().code(), codes::NOT_REGULAR.as_str());
        fs::set_permissions(d.path(), fs::Permissions::from_mode(0o770)).unwrap();
        assert_eq!(check_dir(d.path(), false).unwrap_err().code(), codes::DIR_PERMISSIONS.as_str());
        fs::set_permissions(d.path(), fs::Permissions::from_mode(0o750)).unwrap();
        assert!(check_dir(d.path(), false).is_ok());
        assert_eq!(check_dir(d.path(), true).unwrap_err().code(), codes::DIR_PERMISSIONS.as_str());
    }

    #[test]
    fn new_file_path_needs_a_safe_dir_and_no_file() {
        let d = private_tmp();
        let p = d.path().join("new.json");
        check_new_file_path(&p).unwrap();
        write_atomic(&p, b"x").unwrap();
        assert_eq!(check_new_file_path(&p).unwrap_err().code(), codes::EXISTS.as_str());
        let dangling = d.path().join("dangling");
        symlink(d.path().join("nowhere"), &dangling).unwrap();
        assert_eq!(check_new_file_path(&dangling).unwrap_err().code(), codes::EXISTS.as_str());
        let dlink = d.path().join("dlink");
        symlink(d.path(), &dlink).unwrap();
        assert_eq!(check_new_file_path(&dlink.join("r.json")).unwrap_err().code(), codes::DIR_SYMLINK.as_str());
        fs::set_permissions(d.path(), fs::Permissions::from_mode(0o770)).unwrap();
        assert_eq!(check_new_file_path(&p.with_file_name("other.json")).unwrap_err().code(), codes::DIR_PERMISSIONS.as_str());
        fs::set_permissions(d.path(), fs::Permissions::from_mode(0o700)).unwrap();
        assert_eq!(check_new_file_path(&d.path().join("missing/r.json")).unwrap_err().code(), codes::DIR_MISSING.as_str());
    }

    #[test]
    fn every_ancestor_is_checked() {
        let d = private_tmp();
        let deep = d.path().join("a/b/c");
        ensure_private_dir(&deep).unwrap();
        write_atomic(&deep.join("f"), b"x").unwrap();
        // A group-writable ancestor (no sticky bit) two levels up.
        fs::set_permissions(d.path().join("a"), fs::Permissions::from_mode(0o777)).unwrap();
        for err in [
            check_new_file_path(&deep.join("g")).unwrap_err(),
            write_atomic(&deep.join("f"), b"y").unwrap_err(),
            read_checked(&deep.join("f"), FileRules { owner_only: true, min_bytes: 0, max_bytes: 10 }).unwrap_err(),
            ensure_private_dir(&deep.join("d")).unwrap_err(),
        ] {
            assert_eq!(err.code(), codes::DIR_PERMISSIONS.as_str(), "{err:?}");
        }
        // With the sticky bit (like /tmp) it is accepted.
        fs::set_permissions(d.path().join("a"), fs::Permissions::from_mode(0o1777)).unwrap();
        check_new_file_path(&deep.join("g")).unwrap();
        fs::set_permissions(d.path().join("a"), fs::Permissions::from_mode(0o700)).unwrap();
        // A symlinked ancestor anywhere on the way.
        symlink(d.path().join("a"), d.path().join("alias")).unwrap();
        let via = d.path().join("alias/b/c/f");
        assert_eq!(
            read_checked(&via, FileRules { owner_only: true, min_bytes: 0, max_bytes: 10 }).unwrap_err().code(),
            codes::DIR_SYMLINK.as_str()
        );
        assert_eq!(write_atomic(&via, b"z").unwrap_err().code(), codes::DIR_SYMLINK.as_str());
    }

    #[test]
    fn a_checked_dir_still_checks_each_file_and_any_other_path_in_full() {
        let d = private_tmp();
        let data = ensure_private_dir_checked(&d.path().join("data")).unwrap();
        let qa = data.private_subdir("qa").unwrap();
        assert_eq!(fs::metadata(qa.path()).unwrap().mode() & 0o777, 0o700);
        assert_eq!(data.private_subdir("qa").unwrap(), qa, "an existing private subdir is accepted");
        let f = qa.path().join("f.json");
        qa.write_atomic(&f, b"one").unwrap();
        assert_eq!(fs::metadata(&f).unwrap().mode() & 0o777, 0o600);
        assert_eq!(qa.read_checked(&f, RULES).unwrap().0, b"one");
        // The file itself: symlink, permissions, size.
        let link = qa.path().join("link");
        symlink(&f, &link).unwrap();
        assert_eq!(qa.read_checked(&link, RULES).unwrap_err().code(), codes::SYMLINK.as_str());
        assert_eq!(qa.write_atomic(&link, b"x").unwrap_err().code(), codes::SYMLINK.as_str());
        assert_eq!(fs::read(&f).unwrap(), b"one");
        fs::set_permissions(&f, fs::Permissions::from_mode(0o644)).unwrap();
        assert_eq!(qa.read_checked(&f, RULES).unwrap_err().code(), codes::PERMISSIONS.as_str());
        // A path not directly in the checked dir gets the full ancestor check.
        let deep = qa.path().join("sub");
        fs::create_dir(&deep).unwrap();
        fs::set_permissions(&deep, fs::Permissions::from_mode(0o777)).unwrap();
        assert_eq!(qa.write_atomic(&deep.join("g"), b"x").unwrap_err().code(), codes::DIR_PERMISSIONS.as_str());
        assert_eq!(qa.read_checked(&deep.join("g"), RULES).unwrap_err().code(), codes::DIR_PERMISSIONS.as_str());
        // Subdirs: only a direct entry, never a symlink, never an open one.
        assert_eq!(qa.private_subdir("../x").unwrap_err().code(), codes::DIR_NOT_DIR.as_str());
        symlink(d.path(), qa.path().join("dlink")).unwrap();
        assert_eq!(qa.private_subdir("dlink").unwrap_err().code(), codes::DIR_SYMLINK.as_str());
        assert_eq!(qa.private_subdir("sub").unwrap_err().code(), codes::DIR_PERMISSIONS.as_str());
        // Checking a dir with an open ancestor fails in the first place.
        assert_eq!(check_dir_checked(&deep, false).unwrap_err().code(), codes::DIR_PERMISSIONS.as_str());
        assert_eq!(ensure_private_dir_checked(&deep.join("new")).unwrap_err().code(), codes::DIR_PERMISSIONS.as_str());
    }

    /// The durability order each atomic write promises, seen in its system
    /// calls: the writes run in a child of this test binary under `strace`
    /// (Linux; without strace the test says so and checks nothing).
    /// - [`write_atomic`]: content fsynced, rename, directory fsynced;
    /// - [`write_provisional`]: rename, and no fsync at all.
    #[test]
    fn each_atomic_write_orders_its_fsyncs_and_rename_as_documented() {
        const CHILD: &str = "KIJITO_FILES_TRACED_WRITES";
        if let Some(dir) = std::env::var_os(CHILD) {
            let dir = Path::new(&dir);
            write_atomic(&dir.join("atomic"), b"a").unwrap();
            write_provisional(&dir.join("provisional"), b"c").unwrap();
            return;
        }
        let Some(strace) = ["/usr/bin/strace", "/bin/strace"].into_iter().find(|p| Path::new(p).exists()) else {
            println!("strace is not installed: the write order is not checked");
            return;
        };
        let d = private_tmp();
        let work = d.path().join("w");
        ensure_private_dir(&work).unwrap();
        let log = d.path().join("trace");
        let st = std::process::Command::new(strace)
            .args(["-f", "-qq", "-y", "-e", "trace=fsync,fdatasync,rename,renameat,renameat2", "-o"])
            .arg(&log)
            .arg(std::env::current_exe().unwrap())
            .args(["private::tests::each_atomic_write_orders_its_fsyncs_and_rename_as_documented", "--exact", "--test-threads=1"])
            .env(CHILD, &work)
            .stdout(std::process::Stdio::null())
            .status()
            .unwrap();
        assert!(st.success());
        let w = work.to_str().unwrap().to_owned();
        let calls: Vec<String> = fs::read_to_string(&log)
            .unwrap()
            .lines()
            .filter(|l| l.contains(&w) && l.ends_with("= 0"))
            .map(|l| {
                l.split_once(' ')
                    .filter(|(pid, _)| pid.bytes().all(|b| b.is_ascii_digit()))
                    .map_or(l, |(_, rest)| rest.trim_start())
                    .to_owned()
            })
            .collect();
        let at = |what: &str, pick: &dyn Fn(&str) -> bool| {
            calls.iter().position(|l| pick(l)).unwrap_or_else(|| panic!("no {what} in:\n{}", calls.join("\n")))
        };
        let renamed = |name: &str| {
            let to = format!("{w}/{name}\")");
            move |l: &str| l.starts_with("rename") && l.contains(&to)
        };
        let content_synced = |name: &str| {
            let temp = format!("<{w}/.{name}.tmp-");
            move |l: &str| (l.starts_with("fsync(") || l.starts_with("fdatasync(")) && l.contains(&temp)
        };
        let dir_synced = |l: &str| (l.starts_with("fsync(") || l.starts_with("fdatasync(")) && l.contains(&format!("<{w}>"));
        // write_atomic: content, rename, directory.
        let (c, r) = (at("atomic's content fsync", &content_synced("atomic")), at("atomic's rename", &renamed("atomic")));
        let dir = at("atomic's directory fsync", &dir_synced);
        assert!(c < r && r < dir, "write_atomic: content {c}, rename {r}, directory {dir}:\n{}", calls.join("\n"));
        // write_provisional: a rename, no fsync of anything.
        at("provisional's rename", &renamed("provisional"));
        assert!(!calls.iter().any(|l| content_synced("provisional")(l)), "write_provisional fsynced:\n{}", calls.join("\n"));
        assert_eq!(calls.iter().filter(|l| dir_synced(l)).count(), 1, "one directory fsync, write_atomic's:\n{}", calls.join("\n"));
        for (name, bytes) in [("atomic", b"a"), ("provisional", b"c")] {
            assert_eq!(fs::read(work.join(name)).unwrap(), bytes);
            assert_eq!(fs::metadata(work.join(name)).unwrap().mode() & 0o777, 0o600);
        }
        assert_eq!(fs::read_dir(&work).unwrap().count(), 2, "no temp file left");
    }

    #[test]
    fn an_unlocked_write_takes_a_killed_writes_old_temp_file_never_a_live_ones() {
        let d = private_tmp();
        let path = d.path().join("settings.json");
        let old = d.path().join(".settings.json.tmp-killed");
        let live = d.path().join(".settings.json.tmp-live");
        let other = d.path().join(".other.json.tmp-killed");
        for p in [&old, &live, &other] {
            fs::write(p, b"{").unwrap();
        }
        for p in [&old, &other] {
            let f = File::options().write(true).open(p).unwrap();
            f.set_modified(std::time::SystemTime::now() - STALE_TEMP_AGE - std::time::Duration::from_secs(5)).unwrap();
        }
        write_atomic_unlocked(&path, b"{}\n").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"{}\n");
        assert_eq!(fs::metadata(&path).unwrap().mode() & 0o777, 0o600);
        assert!(!old.exists(), "the killed write's temp file goes");
        assert!(live.exists(), "a live write's (younger) temp file stays");
        assert!(other.exists(), "another file's temp file stays");
    }

    #[test]
    fn ensure_private_dir_creates_0700() {
        let d = private_tmp();
        let sub = d.path().join("a/b");
        ensure_private_dir(&sub).unwrap();
        assert_eq!(fs::metadata(&sub).unwrap().mode() & 0o777, 0o700);
        ensure_private_dir(&sub).unwrap();
    }
}
