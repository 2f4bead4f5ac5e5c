//! Durability order of the PreCompact hook on paper (docs/protocol.md §7,
//! "Crash recovery", "Durability"): the real `precompact` promoting a real
//! pass, traced with `strace -y`, and its system calls checked in the order
//! a power loss could cut them:
//!
//! - the spent-nonce ledger's line is fsynced before anything in the data
//!   dir moves the pass (the ticket's link, the pass's unlink); the ledger
//!   is the one record of the consumed nonce: no `qa-spent` is written;
//! - the attempt, whose rename a reader relies on, has its content fsynced
//!   under its temp name before the rename (`kijito_files::private::write_atomic`),
//!   so no power loss leaves a torn record under the real name;
//! - after the last rename, link or unlink in `qa/`, one fsync of `qa/`
//!   before the hook answers: what the host is told is durable.
//!
//! Linux with `strace` only (`.ci/run` installs it); without it the test
//! says so and checks nothing, as the crash explorer does.
#![allow(clippy::unwrap_used)]

use crate::support;
use support::gate::*;

use std::fs;
use std::path::Path;
use std::process::Command;

fn strace() -> Option<&'static str> {
    ["/usr/bin/strace", "/bin/strace"].into_iter().find(|p| Path::new(p).exists())
}

/// The calls of a PreCompact that promotes a pass: each line strace printed
/// (`-y`: descriptors shown with their paths), in order.
fn traced_precompact(w: &World, k: &Keys) -> Vec<String> {
    let log = w.path("precompact.trace");
    let mut c = w.command(strace().unwrap());
    c.args(["-qq", "-y", "-e", "trace=openat,write,rename,renameat,renameat2,link,linkat,unlink,unlinkat,mkdir,mkdirat,fsync,fdatasync"])
        .arg("-o")
        .arg(&log)
        .args(["--", PRECOMPACT.as_str(), "--host", k.host, "--data-dir", &w.data_arg()]);
    let out = wait_bounded(feed(c, &w.hook_stdin(k.host, k.precompact, k.s)), 60);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    fs::read_to_string(&log).unwrap().lines().map(str::to_owned).collect()
}

fn feed(mut c: Command, stdin: &[u8]) -> std::process::Child {
    use std::io::Write;
    let mut child = c.spawn().unwrap();
    let mut pipe = child.stdin.take().unwrap();
    let bytes = stdin.to_vec();
    std::thread::spawn(move || {
        let _ = pipe.write_all(&bytes);
    });
    child
}

/// The index of the first line `pick` accepts after `from`.
fn find(calls: &[String], from: usize, what: &str, pick: impl Fn(&str) -> bool) -> usize {
    calls[from..]
        .iter()
        .position(|l| pick(l))
        .map(|i| from + i)
        .unwrap_or_else(|| panic!("no {what} after line {from} in:\n{}", calls.join("\n")))
}

fn is_fsync_of(l: &str, path_part: &str) -> bool {
    (l.starts_with("fsync(") || l.starts_with("fdatasync("))
        && l.split(')').next().is_some_and(|fd| fd.contains(path_part))
        && l.ends_with("= 0")
}

fn is_rename_into(l: &str, name: &str) -> bool {
    l.starts_with("rename") && l.split('"').rev().nth(1).is_some_and(|to| to.ends_with(&format!("/{name}"))) && l.ends_with("= 0")
}

/// Check the order of one promoting PreCompact's `calls` (see the module
/// doc); returns how many fsyncs it made.
fn check_order(w: &World, k: &Keys, calls: &[String], label: &str) -> usize {
    let qa = w.qa();
    let qa = qa.to_str().unwrap();
    let spent = format!("qa-spent.{}.json", k.s);
    let attempt = format!("compaction-attempt.{}.json", k.s);
    let ticket = format!("compaction-resume.{}.json", k.s);
    // The ledger line, fsynced, before the data dir moves the pass; the
    // ledger is the one record of the consumed nonce (no `qa-spent` write).
    let ledger_synced = find(calls, 0, "fsync of the ledger", |l| is_fsync_of(l, "/qa-ledger."));
    let linked =
        find(calls, 0, "the ticket's link", |l| l.starts_with("link") && l.contains(&format!("/{ticket}\"")) && l.ends_with("= 0"));
    assert!(ledger_synced < linked, "{label}: ledger {ledger_synced}, link {linked}");
    assert!(!calls.iter().any(|l| is_rename_into(l, &spent)), "{label}: PreCompact wrote {spent}");
    // The attempt's content fsynced under its temp name before its rename.
    let renamed = calls.iter().rposition(|l| is_rename_into(l, &attempt)).unwrap();
    let temp = calls[renamed].split('"').nth(1).unwrap().rsplit('/').next().unwrap().to_owned();
    assert!(
        calls[..renamed].iter().any(|l| is_fsync_of(l, &format!("/{temp}"))),
        "{label}: {attempt} renamed from {temp} before its content was fsynced"
    );
    // After the last change in qa/, qa/ fsynced before the answer.
    let last_change = calls
        .iter()
        .rposition(|l| {
            ["rename", "link", "unlink"].iter().any(|c| l.starts_with(c)) && l.contains(&format!("\"{qa}/")) && l.ends_with("= 0")
        })
        .unwrap();
    let synced = find(calls, last_change, "fsync of qa/", |l| is_fsync_of(l, &format!("<{qa}>")));
    let answer = find(calls, 0, "the answer", |l| l.starts_with("write(1<"));
    assert!(synced < answer, "{label}: answered at {answer} before qa/ was fsynced at {synced}");
    calls.iter().filter(|l| l.starts_with("fsync(") || l.starts_with("fdatasync(")).count()
}

#[test]
fn a_promoting_precompact_makes_the_ledger_durable_first_each_record_whole_and_everything_durable_before_it_answers() {
    if strace().is_none() {
        println!("durability: strace is not installed; nothing checked (.ci/run installs it)");
        return;
    }
    for k in &HOSTS {
        let w = World::new();
        w.record_ok(k.s);
        // The session's first compaction: the state directory and the ledger are created.
        let first = check_order(&w, k, &traced_precompact(&w, k), &format!("{} first", k.host));
        let data = w.data_arg();
        let hook = |bin: &str, extra: &[&str], key: &str| {
            let mut args = vec!["--host", k.host];
            args.extend_from_slice(extra);
            args.extend(["--data-dir", data.as_str()]);
            let out = w.run(bin, &args, &w.hook_stdin(k.host, key, k.s));
            assert_eq!(out.status.code(), Some(0), "{bin}: {}", String::from_utf8_lossy(&out.stderr));
        };
        hook(&POSTCOMPACT, &[], k.postcompact);
        hook(&SESSION_HOOK, &["--expect", "SessionStart"], k.compact_start);
        // The next one: the steady state of a data dir (ledger and spent record exist).
        let (a, b, digest) = w.green_pair("next", now_ms());
        let out = w.record(k.s, &digest, &a, &b);
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
        let steady = check_order(&w, k, &traced_precompact(&w, k), &format!("{} steady", k.host));
        println!("durability: {} precompact promoting a pass: {first} fsyncs the session's first time, {steady} after", k.host);
    }
}
