//! A test that changes process-wide state (an environment variable the
//! library reads, say) runs alone in a child process of its own test binary.
//! Each package has one integration-test binary (docs/testing.md), so its
//! tests share one process: a `std::env::set_var` in one test would be seen
//! by every test that runs beside it (and by the children they spawn).
//!
//! ```ignore
//! #[test]
//! fn sets_the_environment() {
//!     if !kijito_testkit::isolated::alone(module_path!(), "sets_the_environment") {
//!         return; // it ran, and passed, in the child
//!     }
//!     std::env::set_var("XDG_CONFIG_HOME", dir); // only this test's process
//! }
//! ```
//!
//! Std only.

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Set (to the test's name) in the child that runs one test alone.
pub const CHILD_ENV: &str = "KIJITO_TEST_ALONE";

/// How long the child may take: a bound, not a speed claim.
const BOUND: Duration = Duration::from_secs(600);

/// `true` in the child that runs the test `name` of module `module`
/// (`module_path!()`): the caller goes on with its body. Elsewhere it runs
/// that test alone (`<path> --exact --test-threads=1`) in a child of the
/// current test binary, asserts it ran and passed (its output in the
/// message when not), and returns `false`: the caller returns.
pub fn alone(module: &str, name: &str) -> bool {
    // libtest names a test by its path below the crate root.
    let path = match module.split_once("::") {
        Some((_crate, rest)) => format!("{rest}::{name}"),
        None => name.to_owned(),
    };
    if std::env::var_os(CHILD_ENV).is_some_and(|v| v == path.as_str()) {
        return true;
    }
    let exe = std::env::current_exe().expect("the test binary");
    let mut child = Command::new(exe)
        .args([path.as_str(), "--exact", "--test-threads=1", "--nocapture"])
        .env(CHILD_ENV, &path)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn the test binary");
    let drain = |mut r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut s = Vec::new();
            let _ = r.read_to_end(&mut s);
            String::from_utf8_lossy(&s).into_owned()
        })
    };
    let out = drain(Box::new(child.stdout.take().expect("stdout")));
    let err = drain(Box::new(child.stderr.take().expect("stderr")));
    let start = Instant::now();
    let status = loop {
        match child.try_wait().expect("wait for the child") {
            Some(s) => break s,
            None if start.elapsed() > BOUND => {
                let _ = child.kill();
                let _ = child.wait();
                panic!("{path} did not finish alone within {BOUND:?}");
            }
            None => std::thread::sleep(Duration::from_millis(20)),
        }
    };
    let (out, err) = (out.join().unwrap_or_default(), err.join().unwrap_or_default());
    assert!(status.success(), "{path}, run alone, failed ({status}):\n{out}\n{err}");
    assert!(out.contains("test result: ok. 1 passed"), "{path}: the child ran no such test:\n{out}\n{err}");
    false
}
