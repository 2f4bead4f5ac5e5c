//! The life of a hook process under `kijito_hooks::run_hook` (docs/architecture.md):
//! its watchdog is a `SIGALRM` timer, not a thread; the fallback is printed
//! once when the work runs late, even to a host that stopped reading; the
//! steps after the answer run only when the answer was written; and
//! `exec_sibling` replaces the process with its sibling. Each hook runs in a
//! child run of this test binary (filtered to `run_hook_life::child`), as a
//! hook binary would.

#![allow(clippy::unwrap_used)]

use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::process::ExitStatusExt;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

const CHILD: &str = "KIJITO_TEST_RUN_HOOK_CHILD";
const MARKER: &str = "KIJITO_TEST_RUN_HOOK_MARKER";
const CLOSED: &str = "KIJITO_TEST_RUN_HOOK_STDOUT_CLOSED";

/// This process's threads.
fn threads() -> usize {
    std::fs::read_dir("/proc/self/task").unwrap().count()
}

#[test]
fn child() {
    let Ok(mode) = std::env::var(CHILD) else { return }; // not a child run
    if std::env::var_os(CLOSED).is_some() {
        // the host stops reading before the hook answers (after libtest's
        // own lines: the answer is the first write that fails)
        let _ = std::io::Write::flush(&mut std::io::stdout());
        let write = closed_pipe();
        // SAFETY: dup2 onto fd 1 of descriptors this process owns.
        assert_eq!(unsafe { libc::dup2(std::os::fd::AsRawFd::as_raw_fd(&write), 1) }, 1);
    }
    let fallback = Some("fallback-answer".to_owned());
    match mode.as_str() {
        // the work outlives the watchdog
        "late" => kijito_hooks::run_hook(Duration::from_millis(300), fallback, || {
            std::thread::sleep(Duration::from_secs(20));
            Some("work-answer".into())
        }),
        // the work counts the threads the watchdog took
        "threads" => {
            let before = threads();
            kijito_hooks::run_hook(Duration::from_secs(20), fallback, move || Some(format!("threads {before} {}", threads())))
        }
        // a step after the answer leaves a marker file
        "after" => kijito_hooks::run_hook(Duration::from_secs(20), fallback, || {
            kijito_hooks::after_answer(|| std::fs::write(std::env::var(MARKER).unwrap(), "ran").unwrap());
            Some("work-answer".into())
        }),
        "exec" => {
            kijito_hooks::exec_sibling("sibling");
            println!("returned");
        }
        other => panic!("unknown child mode {other}"),
    }
}

/// A child run of `exe` in `mode`; `closed`: its stdout stops being read
/// before the hook answers.
fn spawn(exe: &std::path::Path, mode: &str, closed: bool, marker: Option<&std::path::Path>) -> Child {
    let mut c = Command::new(exe);
    c.args(["--exact", "run_hook_life::child", "--nocapture", "--test-threads=1"]).env(CHILD, mode);
    if let Some(m) = marker {
        c.env(MARKER, m);
    }
    if closed {
        c.env(CLOSED, "1");
    }
    c.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap()
}

/// Its output, waiting at most 15 s (then it is killed: a wedged hook).
fn finished(mut child: Child) -> Output {
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > Duration::from_secs(15) {
            child.kill().unwrap();
            panic!("the hook did not exit within 15 s: {:?}", child.wait_with_output());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

/// A pipe whose read end is already closed: a host that stopped reading.
fn closed_pipe() -> OwnedFd {
    let mut fds = [0; 2];
    // SAFETY: `fds` holds two ints for pipe() to fill.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    // SAFETY: pipe() returned two fresh descriptors we own.
    let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    drop(read);
    write
}

fn exe() -> std::path::PathBuf {
    std::env::current_exe().unwrap()
}

/// Work that runs late: the watchdog prints the fallback, once, says so on
/// stderr, and exits 0; to a host that stopped reading as well, without
/// retrying the failed write.
#[test]
fn late_work_answers_the_fallback_once() {
    let start = Instant::now();
    let out = finished(spawn(&exe(), "late", false, None));
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stdout.contains("fallback-answer\n") && stdout.matches("fallback-answer").count() == 1, "{stdout}");
    assert!(!stdout.contains("work-answer"), "{stdout}");
    assert!(stderr.contains(&format!("kijito hook: {}: answered fail-soft\n", kijito_hooks::codes::TIMEOUT)), "{stderr}");
    assert!(start.elapsed() < Duration::from_secs(15));
    let out = finished(spawn(&exe(), "late", true, None));
    assert_eq!((out.status.code(), out.status.signal()), (Some(0), None), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("answered fail-soft"), "{out:?}");
}

/// The watchdog is a timer: arming it starts no thread (a thread costs
/// about as much as the rest of a PreToolUse read decision).
#[test]
fn the_watchdog_starts_no_thread() {
    let out = finished(spawn(&exe(), "threads", false, None));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout.lines().find_map(|l| l.split_once("threads ")).unwrap_or_else(|| panic!("{out:?}")).1;
    let n: Vec<usize> = line.split(' ').map(|n| n.parse().unwrap()).collect();
    assert_eq!(n[0], n[1], "{line}");
}

/// The steps after the answer run once the answer is written, and never
/// when the host stopped reading.
#[test]
fn steps_after_the_answer_run_only_when_it_was_written() {
    let tmp = tempfile::tempdir().unwrap();
    let marker = tmp.path().join("marker");
    let out = finished(spawn(&exe(), "after", false, Some(&marker)));
    assert!(String::from_utf8_lossy(&out.stdout).contains("work-answer\n"), "{out:?}");
    assert_eq!(std::fs::read_to_string(&marker).unwrap(), "ran");
    std::fs::remove_file(&marker).unwrap();
    let out = finished(spawn(&exe(), "after", true, Some(&marker)));
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(!marker.exists(), "a step ran after an answer nobody read");
}

/// `exec_sibling` replaces the process with the sibling of the same
/// directory, run with this process's arguments; it returns only when there
/// is no such sibling. (This binary runs from a link in a directory of its
/// own, so that directory is its helper dir.)
#[test]
fn exec_sibling_runs_the_sibling_with_the_same_arguments() {
    let here = exe();
    let dir = tempfile::tempdir_in(here.parent().unwrap()).unwrap();
    let link = dir.path().join("hook");
    kijito_testkit::link_executable(&here, &link);
    let out = finished(spawn(&link, "exec", false, None));
    assert!(String::from_utf8_lossy(&out.stdout).contains("returned\n"), "no sibling: {out:?}");
    let sibling = dir.path().join("sibling");
    std::fs::write(&sibling, "#!/bin/sh\necho \"sibling $*\"\n").unwrap();
    std::fs::set_permissions(&sibling, std::os::unix::fs::PermissionsExt::from_mode(0o700)).unwrap();
    let out = finished(spawn(&link, "exec", false, None));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.ends_with(" ... sibling --exact run_hook_life::child --nocapture --test-threads=1\n"), "{out:?}");
    assert!(!stdout.contains("returned"), "{out:?}");
}
