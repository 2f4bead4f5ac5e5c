//! A hook that panics still answers fail-soft and exits 0: the panic hook
//! installed by `run_hook` prints the fallback and exits before any
//! unwinding, so this holds under the `hooks` profile's `panic = "abort"`
//! as well as here (tests unwind). The hook runs in a child run of this
//! test binary (filtered to one test, named by its module path in the one
//! harness), as a hook binary would.

#![allow(clippy::unwrap_used)]

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const CHILD: &str = "KIJITO_TEST_PANIC_CHILD";

#[test]
fn panicking_hook_child() {
    match std::env::var(CHILD).as_deref() {
        Ok("main") => kijito_hooks::run_hook(Duration::from_secs(3), Some("fallback-answer".into()), || panic!("boom")),
        Ok("thread") => kijito_hooks::run_hook(Duration::from_secs(3), Some("fallback-answer".into()), || {
            // A panic on another thread than the one running the hook's work.
            let _ = std::thread::spawn(|| panic!("boom")).join();
            Some("work-answer".into())
        }),
        _ => {} // not a child run: nothing to do
    }
}

#[test]
fn a_panic_answers_the_fallback_once_and_exits_zero() {
    for mode in ["main", "thread"] {
        let start = Instant::now();
        let out = Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "panic_answer::panicking_hook_child", "--nocapture", "--test-threads=1"])
            .env(CHILD, mode)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{mode}: {stderr}");
        assert_eq!(stdout.matches("fallback-answer").count(), 1, "{mode}: exactly one fail-soft answer: {stdout}");
        assert!(!stdout.contains("work-answer"), "{mode}: {stdout}");
        assert!(stderr.contains(kijito_hooks::codes::PANIC.as_str()), "{mode}: {stderr}");
        assert!(start.elapsed() < Duration::from_secs(3), "{mode}: answered by the panic, not by the watchdog");
    }
}
