//! The hook binaries' process entry: `#![no_main]` plus [`hook_main!`].
//!
//! std's start-up (`lang_start`) installs a stack-overflow handler whose
//! main-thread guard lookup reads `/proc/self/maps` (glibc's
//! `pthread_getattr_np`), about 0.14 ms of a hook's ~1.9 ms on the bench
//! machine (docs/testing.md, hook latency). The hooks run on every tool
//! call, prompt and compaction, so they enter through a C `main` and do
//! here only what a hook relies on from that start-up:
//!
//! - file descriptors 0, 1 and 2 are open (a closed one becomes
//!   `/dev/null`), so no state file the hook opens can become its stdout;
//! - SIGPIPE is ignored, so a host that stops reading gets the same
//!   fail-soft path as under std's start-up (an error, not a kill).
//!
//! What is dropped: the guard page message on a stack overflow (the process
//! still dies of SIGSEGV, as it would abort) and the main thread's name in
//! panic messages (the hooks print their own, [`crate::run_hook`]).
//! `std::env::args` still works: std reads argv from glibc's `.init_array`.

/// Make the process what std's start-up would leave for a hook: fds 0-2
/// open and SIGPIPE ignored. Any failure aborts: a hook without its three
/// standard descriptors could write its answer into a state file.
#[allow(unsafe_code)]
pub fn prepare() {
    let mut fds = [0, 1, 2].map(|fd| libc::pollfd { fd, events: 0, revents: 0 });
    // SAFETY: `fds` is a valid array of three pollfd for the whole call.
    let n = unsafe { libc::poll(fds.as_mut_ptr(), 3, 0) };
    if n < 0 {
        fallback_check();
    } else {
        for p in fds {
            if p.revents & libc::POLLNVAL != 0 {
                reopen(p.fd);
            }
        }
    }
    // SAFETY: setting a signal's disposition to SIG_IGN has no preconditions.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_IGN) };
}

/// `poll` refused (EINVAL, ENOMEM, EAGAIN): ask each descriptor instead.
#[allow(unsafe_code)]
fn fallback_check() {
    for fd in 0..3 {
        // SAFETY: F_GETFD on any integer only reads the descriptor table.
        if unsafe { libc::fcntl(fd, libc::F_GETFD) } == -1 && std::io::Error::last_os_error().raw_os_error() == Some(libc::EBADF) {
            reopen(fd);
        }
    }
}

/// Open `/dev/null` where `fd` is closed; the lowest free descriptor is
/// `fd` because the ones below it are open (checked in order).
#[allow(unsafe_code)]
fn reopen(fd: libc::c_int) {
    // SAFETY: a NUL-terminated path literal and plain flags.
    let got = unsafe { libc::open(c"/dev/null".as_ptr(), libc::O_RDWR) };
    if got != fd {
        std::process::abort();
    }
}

/// Define the C `main` of a hook binary (which declares `#![no_main]`):
/// [`prepare`], then `$run`, a function that never returns (it ends with
/// `std::process::exit`, which flushes stdout).
#[macro_export]
macro_rules! hook_main {
    ($run:path) => {
        #[no_mangle]
        pub extern "C" fn main(_argc: ::std::os::raw::c_int, _argv: *const *const ::std::os::raw::c_char) -> ::std::os::raw::c_int {
            $crate::entry::prepare();
            $run()
        }
    };
}

#[cfg(test)]
mod tests {
    /// In a forked child: close `closed` (if any), leave errno at EBADF
    /// (a stale value a check must not trust), run `step`, then exit 0 when
    /// fds 0-2 are open with the closed one on /dev/null and the next free
    /// descriptor is what it was before (nothing else was opened), else 1; an abort is a
    /// failure too.
    #[allow(unsafe_code)]
    fn in_child(closed: Option<libc::c_int>, step: fn()) -> bool {
        // SAFETY: the child only makes async-signal-safe calls (close, poll,
        // open, signal, fcntl, fstat, stat) and ends with _exit.
        unsafe {
            let pid = libc::fork();
            assert!(pid >= 0);
            if pid == 0 {
                // The lowest free descriptor above 0-2 (the test process may hold
                // some, e.g. a jobserver pipe).
                let free = libc::open(c"/dev/null".as_ptr(), libc::O_RDONLY);
                libc::close(free);
                if let Some(fd) = closed {
                    libc::close(fd);
                }
                libc::fcntl(999, libc::F_GETFD);
                step();
                let mut dn: libc::stat = std::mem::zeroed();
                let mut ok = libc::stat(c"/dev/null".as_ptr(), &mut dn) == 0;
                for fd in 0..3 {
                    let mut st: libc::stat = std::mem::zeroed();
                    ok &= libc::fstat(fd, &mut st) == 0 && (Some(fd) != closed || st.st_rdev == dn.st_rdev);
                }
                ok &= free > 2 && libc::open(c"/dev/null".as_ptr(), libc::O_RDONLY) == free;
                libc::_exit(if ok { 0 } else { 1 });
            }
            let mut status = 0;
            assert_eq!(libc::waitpid(pid, &mut status, 0), pid);
            libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0
        }
    }

    #[test]
    fn a_closed_standard_descriptor_becomes_dev_null() {
        for fd in 0..3 {
            assert!(in_child(Some(fd), super::prepare), "prepare, fd {fd} closed");
            assert!(in_child(Some(fd), super::fallback_check), "fallback_check, fd {fd} closed");
        }
    }

    #[test]
    fn open_descriptors_are_left_alone() {
        assert!(in_child(None, super::prepare));
        assert!(in_child(None, super::fallback_check));
    }
}
