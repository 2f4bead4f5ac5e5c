//! The whole QA cycle on a real kijito-local, through the real binaries, in
//! both hosts' hook orders: `kijito-local demo` seeds, publishes, digests,
//! boots the verifier twice, records, compacts (PreCompact, PostCompact and
//! SessionStart(compact) with host-shaped stdin) and then erodes an anchor.
//! These tests check the demo's own verdict and, independently, the table
//! rows, the delivered texts and the private state it leaves behind.
#![allow(clippy::unwrap_used)]

use std::path::PathBuf;
use std::process::Command;

const KIJITO_LOCAL: &str = env!("CARGO_BIN_EXE_kijito-local");

struct DemoRun {
    status: i32,
    stdout: String,
    dir: PathBuf,
}

impl Drop for DemoRun {
    fn drop(&mut self) {
        if self.dir.starts_with(std::env::temp_dir()) && self.dir.to_string_lossy().contains("kijito-demo-") {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

fn demo(host: &str) -> DemoRun {
    let out = Command::new(KIJITO_LOCAL)
        .args(["demo", "--host", host, "--keep"])
        .env_remove("CLAUDE_PLUGIN_DATA")
        .env_remove("PLUGIN_DATA")
        .output()
        .unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    let dir = stdout.lines().find_map(|l| l.strip_prefix("kept ")).map(PathBuf::from).expect("demo prints the kept dir");
    DemoRun { status: out.status.code().unwrap_or(-1), stdout, dir }
}

fn rows<'a>(run: &'a DemoRun, step: &str) -> Vec<&'a str> {
    run.stdout.lines().filter(|l| l.get(4..).map(|r| r.starts_with(step)).unwrap_or(false)).collect()
}

fn section<'a>(run: &'a DemoRun, label: &str) -> &'a str {
    let start = run.stdout.find(&format!("--- re-entry text the resumed model receives ({label}) ---\n")).expect("section present");
    let rest = &run.stdout[start..];
    let body = &rest[rest.find('\n').unwrap() + 1..];
    &body[..body.find("\n---").unwrap()]
}

fn check(host: &str, sessionstart_runs: usize) {
    let run = demo(host);
    assert_eq!(run.status, 0, "{}", run.stdout);
    assert!(run.stdout.contains("demo passed: "), "{}", run.stdout);
    assert!(!run.stdout.contains(" FAIL "), "{}", run.stdout);
    // Both publications and verifications behaved.
    assert!(rows(&run, "pointer-publish manifest v2")[0].contains("published, cas enforced"));
    let boots = rows(&run, "pointer-snapshot boot");
    assert_eq!(boots.len(), 3);
    assert!(boots[0].contains("green") && boots[1].contains("green"));
    assert!(boots[2].contains("current_anchor_retired") && boots[2].contains("verdict red"));
    // Per compaction: exactly one delivery among the SessionStart(compact) runs.
    let starts = rows(&run, "session-hook SessionStart(compact)");
    assert_eq!(starts.len(), 2 * sessionstart_runs, "{}", run.stdout);
    for compaction in starts.chunks(sessionstart_runs) {
        assert_eq!(compaction.iter().filter(|r| r.contains("additionalContext")).count(), 1, "{compaction:?}");
    }
    // The attested text names the exact verifier command of this root.
    let attested = section(&run, "attested");
    assert!(attested.contains("ATTESTED") && !attested.contains("UNATTESTED"));
    let snapshot_cmd = attested.lines().find(|l| l.contains("/pointer-snapshot ")).expect("command line");
    let program = PathBuf::from(KIJITO_LOCAL).with_file_name("pointer-snapshot");
    assert!(snapshot_cmd.starts_with(&format!("{} --pointer-id ", program.display())), "{snapshot_cmd}");
    assert!(snapshot_cmd.contains("--expected-pointer-digest ") && snapshot_cmd.contains("--expected-snapshot-digest "));
    let unattested = section(&run, "unattested");
    assert!(unattested.contains("UNATTESTED") && unattested.contains("Do not resume"));
    // Private state: the ticket was consumed (audit evidence) and nothing is pending.
    let qa = run.dir.join("data/qa");
    let names: Vec<String> = std::fs::read_dir(&qa).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    assert!(names.iter().any(|n| n.starts_with("compaction-resume-consumed.")), "{names:?}");
    assert!(
        !names.iter().any(|n| n.starts_with("qa-pass.") || n.starts_with("compaction-resume.") || n.starts_with("compaction-reentry.")),
        "{names:?}"
    );
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(std::fs::metadata(&qa).unwrap().permissions().mode() & 0o777, 0o700);
}

#[test]
fn codex_order_postcompact_then_sessionstart_twice() {
    check("codex", 2);
}

#[test]
fn claude_order_sessionstart_then_postcompact() {
    check("claude", 1);
}

/// Every file under `dir`, relative, sorted.
fn files_under(dir: &std::path::Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() && !p.is_symlink() {
                stack.push(p);
            } else {
                out.push(p.strip_prefix(dir).unwrap().display().to_string());
            }
        }
    }
    out.sort();
    out
}

#[test]
fn the_demo_writes_nothing_outside_its_temp_dir_and_removes_that() {
    // HOME and every XDG directory of the user, and the temp dir the demo
    // makes its own dir in: after a run without --keep all are empty.
    let home = tempfile::tempdir().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    for host in ["codex", "claude"] {
        let out = Command::new(KIJITO_LOCAL)
            .args(["demo", "--host", host])
            .env("HOME", home.path())
            .env("XDG_CONFIG_HOME", home.path().join("config"))
            .env("XDG_STATE_HOME", home.path().join("state"))
            .env("XDG_CACHE_HOME", home.path().join("cache"))
            .env("XDG_DATA_HOME", home.path().join("data"))
            .env("MEMORY_LATCH_HEADS_DIR", home.path().join("heads"))
            .env("TMPDIR", tmp.path())
            .env_remove("CLAUDE_PLUGIN_DATA")
            .env_remove("PLUGIN_DATA")
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(0), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
        assert!(stdout.starts_with(&format!("kijito-qa demo ({host} host order) in {}/kijito-demo-", tmp.path().display())), "{stdout}");
        assert_eq!(files_under(home.path()), Vec::<String>::new(), "the demo wrote into the user's dirs");
        assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 0, "the demo left its temp dir behind");
    }
}
