//! Commands after every compaction (docs/protocol.md §7, "Re-entry
//! delivery"): the re-entry, ATTESTED or UNATTESTED, on both hosts, whether
//! SessionStart(compact) or the UserPromptSubmit fallback delivers it,
//! carries the same authoritative command block SessionStart(startup)
//! gives, with this session's current values and fresh paths, and the
//! compaction paragraph from the session's existing pin (never pinned
//! again). Every emitted command line passes the command guard (`qa-gate
//! check-command`, the PreToolUse grammar) and names this session; and the
//! next cycle runs from those lines alone, through the real verifier.
#![allow(clippy::unwrap_used)]

use crate::support;
use support::gate::*;

use kijito_compact::trigger::{write_pin, Pin, Via};
use kijito_gate::QaDir;
use kijito_protocol::ids::{AbsPath, SessionId};
use std::collections::BTreeSet;
use std::fs;

#[derive(Clone, Copy, Debug, PartialEq)]
enum By {
    SessionStart,
    Prompt,
}

/// A pin as SessionStart(startup) writes it inside a tmux pane (this test
/// runs outside tmux: a hook that pinned again would find no pane and
/// remove it).
fn pin(c: &Cycle, s: &str) -> Vec<u8> {
    let qa = QaDir::open(&AbsPath::from_path(&c.data).unwrap()).unwrap();
    let pin = Pin {
        session_id: SessionId::parse(s).unwrap(),
        via: Via::Tmux {
            socket: AbsPath::parse("/tmp/tmux-1000/default").unwrap(),
            pane: "%3".into(),
            host_pid: 4242,
            host_start: 987654,
            tmux: None,
        },
        pinned_at_ms: now_ms(),
    };
    write_pin(&qa, &pin).unwrap();
    fs::read(c.qa().join(format!("compact-pin.{s}.json"))).unwrap()
}

/// Compact (a pass waits or not), then the re-entry as `by` delivers it in
/// the host's order.
fn compact_and_deliver(c: &Cycle, k: &Keys, by: By) -> String {
    c.hook(&PRECOMPACT, k.host, &[], &c.stdin(k.host, k.precompact, k.s, None, None));
    let start = c.stdin(k.host, k.compact_start, k.s, None, None);
    let post = c.stdin(k.host, k.postcompact, k.s, None, None);
    match (by, k.host) {
        (By::SessionStart, "claude") => {
            let t = c.session_hook(k.host, "SessionStart", &start);
            c.hook(&POSTCOMPACT, k.host, &[], &post);
            t
        }
        (By::SessionStart, _) => {
            c.hook(&POSTCOMPACT, k.host, &[], &post);
            c.session_hook(k.host, "SessionStart", &start)
        }
        (By::Prompt, _) => {
            c.hook(&POSTCOMPACT, k.host, &[], &post);
            c.session_hook(k.host, "UserPromptSubmit", &c.stdin(k.host, k.ups, k.s, Some("go on"), None))
        }
    }
    .unwrap_or_else(|| panic!("{} {by:?}: a re-entry is delivered", k.host))
}

/// The helper command lines of a hook text (lines of this installed root).
fn command_lines(text: &str) -> Vec<String> {
    let root = helper_dir();
    text.lines().map(str::trim).filter(|l| l.starts_with(root.to_str().unwrap())).map(str::to_owned).collect()
}

fn helper_of(line: &str) -> &str {
    line.split(' ').next().unwrap().rsplit('/').next().unwrap()
}

fn flag<'a>(line: &'a str, name: &str) -> Option<&'a str> {
    let words: Vec<&str> = line.split(' ').collect();
    words.iter().position(|w| *w == name).map(|i| words[i + 1])
}

/// The command block's placeholders filled as the agent fills them.
fn filled(line: &str, digest: &str, content: &str) -> String {
    line.replace("<EXPECTED_POINTER_DIGEST>", digest).replace("<POINTER_DIGEST>", digest).replace("<CONTENT_FILE>", content)
}

/// Everything a re-entry text must carry, checked line by line.
fn check_reentry(c: &Cycle, k: &Keys, text: &str, attested: bool, seen_paths: &mut BTreeSet<String>) {
    let kind = if attested { "ATTESTED" } else { "UNATTESTED" };
    assert!(text.starts_with(&format!("kijito-qa re-entry after compaction: {kind} (session {}).", k.s)), "{text}");
    let block = format!("\n\nkijito-qa (trusted hook output) for session {}, data dir {}.\n", k.s, c.data.display());
    assert!(text.contains(&block), "the command block follows the re-entry: {text}");
    assert!(text.contains(&format!("Pointer id {}, lock message id {}.", c.seeded.pointer_id, c.seeded.lock_id)), "{text}");
    assert!(text.contains("this session's tmux pane is pinned"), "the adapter paragraph from the existing pin: {text}");
    assert!(text.contains("kijito_compact_failed:no_safe_trigger, ask the user to run /compact"), "{text}");
    let lines = command_lines(text);
    let helpers: Vec<&str> = lines.iter().map(|l| helper_of(l)).collect();
    let block = COMMAND_BLOCK;
    let expected: Vec<&str> = if attested { ["pointer-snapshot"].iter().chain(block.iter()).copied().collect() } else { block.to_vec() };
    assert_eq!(helpers, expected, "{} {kind}: {text}", k.host);
    let content = c.world.path("manifest.json");
    let digest = c.seeded.pointer_digest();
    for line in &lines {
        let ready = filled(line, &digest, content.to_str().unwrap());
        c.check_command(&ready).unwrap_or_else(|e| panic!("{} {kind}: the guard refuses {ready}: {e}", k.host));
        if ready != *line {
            assert!(c.check_command(line).is_err(), "a placeholder never passes: {line}");
        }
        if let Some(s) = flag(line, "--session-id") {
            assert_eq!(s, k.s, "{line}");
        }
        if let Some(d) = flag(line, "--data-dir") {
            assert_eq!(d, c.data_arg(), "{line}");
        }
        if let Some(t) = flag(line, "--transcript") {
            assert_eq!(t, c.transcript.to_str().unwrap(), "the transcript path from the hook input: {line}");
        }
        for f in ["--report-file", "--rollback-file", "--cold-boot-report"] {
            if let Some(p) = flag(line, f) {
                assert!(p.starts_with(c.qa().to_str().unwrap()), "{line}");
                assert!(!std::path::Path::new(p).exists(), "fresh: {line}");
            }
        }
        if let Some(p) = flag(line, "--report-file").or(flag(line, "--rollback-file")) {
            assert!(seen_paths.insert(p.to_owned()), "a path never emitted before: {line}");
        }
    }
    for named in ["qa-gate", "kijito-compact"] {
        assert!(lines.iter().filter(|l| helper_of(l) == named).all(|l| flag(l, "--session-id") == Some(k.s)), "{named} names the session");
    }
}

#[test]
fn every_reentry_carries_the_command_block_on_both_hosts_and_both_delivering_hooks() {
    for k in &HOSTS {
        let c = Cycle::new();
        let mut seen = BTreeSet::new();
        let startup = c.session_hook(k.host, "SessionStart", &c.stdin(k.host, k.startup, k.s, None, None)).unwrap();
        for l in command_lines(&startup) {
            if let Some(p) = flag(&l, "--report-file").or(flag(&l, "--rollback-file")) {
                seen.insert(p.to_owned());
            }
        }
        let pinned = pin(&c, k.s);
        for by in [By::SessionStart, By::Prompt] {
            for attested in [true, false] {
                if attested {
                    c.record(k.s);
                }
                let text = compact_and_deliver(&c, k, by);
                check_reentry(&c, k, &text, attested, &mut seen);
                assert_eq!(
                    fs::read(c.qa().join(format!("compact-pin.{}.json", k.s))).unwrap(),
                    pinned,
                    "{} {by:?}: the pin is read, never rewritten",
                    k.host
                );
            }
        }
    }
}

/// Run one emitted line (no shell: the guard admits no quoting anyway).
fn run_line(c: &Cycle, line: &str) -> std::process::Output {
    let mut words = line.split(' ');
    let program = words.next().unwrap();
    let args: Vec<&str> = words.collect();
    c.run(program, &args, b"")
}

#[test]
fn the_next_cycle_runs_from_the_reentry_commands_alone() {
    for k in &HOSTS {
        let c = Cycle::new();
        pin(&c, k.s);
        // Cycle 1 (its commands came from SessionStart(startup)), compacted attested.
        c.record(k.s);
        let mut text = compact_and_deliver(&c, k, By::SessionStart);
        // Cycles 2 and 3 take every command from the previous re-entry text.
        for cycle in 2..=3 {
            assert!(text.contains("ATTESTED") && !text.contains("UNATTESTED"), "cycle {cycle}: {text}");
            let lines = command_lines(&text);
            let line = |name: &str, nth: usize| {
                lines.iter().filter(|l| helper_of(l) == name && !l.contains("--expected-snapshot-digest")).nth(nth).unwrap().clone()
            };
            // The re-entry's own verification first.
            let verify = run_line(&c, &lines[0]);
            assert_eq!(verify.status.code(), Some(0), "cycle {cycle}, re-entry check: {}", String::from_utf8_lossy(&verify.stderr));
            let out = run_line(&c, &line("pointer-digest", 0));
            assert_eq!(out.status.code(), Some(0));
            let digest = String::from_utf8(out.stdout).unwrap().trim().to_owned();
            assert_eq!(digest, c.seeded.pointer_digest());
            for nth in 0..2 {
                let boot = run_line(&c, &filled(&line("pointer-snapshot", nth), &digest, ""));
                assert_eq!(boot.status.code(), Some(0), "cycle {cycle}, boot {nth}: {}", String::from_utf8_lossy(&boot.stderr));
            }
            let record = lines.iter().find(|l| l.contains(" record ")).unwrap();
            let out = run_line(&c, &filled(record, &digest, ""));
            assert_eq!(out.status.code(), Some(0), "cycle {cycle}, record: {}", String::from_utf8_lossy(&out.stderr));
            text = compact_and_deliver(&c, k, if cycle == 2 { By::Prompt } else { By::SessionStart });
        }
        assert!(text.starts_with("kijito-qa re-entry after compaction: ATTESTED"), "{} after cycle 3: {text}", k.host);
    }
}

/// A delivery whose print fails (the host died or closed the hook's stdout:
/// EPIPE, the hooks ignore SIGPIPE) is not marked delivered: `qa-gate
/// status` shows it as `reentryDelivering`, the next UserPromptSubmit
/// delivers it again UNATTESTED (`delivery_interrupted`), and the next
/// cycle is ATTESTED (docs/protocol.md §7, "Crash recovery"; the real-host
/// kill scenarios of tests/hosts, crash-*, kill the host around it).
#[test]
fn a_reentry_whose_print_failed_is_shown_delivering_and_delivered_again() {
    for k in &HOSTS {
        let c = Cycle::new();
        c.record(k.s);
        c.hook(&PRECOMPACT, k.host, &[], &c.stdin(k.host, k.precompact, k.s, None, None));
        c.hook(&POSTCOMPACT, k.host, &[], &c.stdin(k.host, k.postcompact, k.s, None, None));
        let keys = ["reentryPending", "reentryDelivering", "reentryDelivered"];
        let state = |c: &Cycle| keys.map(|key| c.status(k.s)[key].as_bool().unwrap());
        assert_eq!(state(&c), [true, false, false], "{}: claimed, waiting for delivery", k.host);
        // the delivering hook's stdout is a pipe nobody reads any more
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let data = c.data_arg();
        let mut child = c
            .command(&SESSION_HOOK)
            .args(["--host", k.host, "--expect", "UserPromptSubmit", "--data-dir", &data])
            .stdout(writer)
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        {
            use std::io::Write;
            let mut stdin = child.stdin.take().unwrap();
            stdin.write_all(&c.stdin(k.host, k.ups, k.s, Some("go on"), None)).unwrap();
        }
        let out = wait_bounded(child, 30);
        assert_eq!(out.status.code(), Some(0), "{}: the hook exits 0 even when its print fails", k.host);
        assert_eq!(state(&c), [false, true, false], "{}: printed into a closed pipe, so not delivered", k.host);
        let again = c.session_hook(k.host, "UserPromptSubmit", &c.stdin(k.host, k.ups, k.s, Some("go on"), None)).unwrap();
        assert!(
            again.contains("re-entry after compaction: UNATTESTED") && again.contains("delivery_interrupted"),
            "{}: delivered again, UNATTESTED: {again}",
            k.host
        );
        assert!(!again.contains("re-entry after compaction: ATTESTED"), "{}: never ATTESTED twice", k.host);
        assert_eq!(state(&c), [false, false, true], "{}: now delivered", k.host);
        assert_eq!(c.session_hook(k.host, "UserPromptSubmit", &c.stdin(k.host, k.ups, k.s, Some("go on"), None)), None);
        // the next cycle is whole again
        c.record(k.s);
        let text = compact_and_deliver(&c, k, By::SessionStart);
        assert!(text.contains("re-entry after compaction: ATTESTED"), "{}: the next cycle is ATTESTED: {text}", k.host);
    }
}
