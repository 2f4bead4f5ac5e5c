//! Witnessed verifier boots (docs/protocol.md §7,
//! "Witnessed boots"), through the real binaries: a real kijito-local with a
//! seeded pointer, the real `pointer-snapshot` writing every report, the real
//! `qa-gate record`, and the witness records written by
//! `kijito_gate::witness::observe` exactly as the PreToolUse hook calls it
//! (the line the agent's tool call runs, the hook input's `agent_id`).
//! Finding: "`qa-gate record` accepts two reports the main agent ran itself,
//! and a red report between two greens is invisible".
#![allow(clippy::unwrap_used)]

use crate::support;
use support::gate::*;

use kijito_gate::QaDir;
use kijito_protocol::command::HelperDir;
use kijito_protocol::ids::{AbsPath, SessionId};
use serde_json::Value;
use std::path::{Path, PathBuf};

const S: &str = "2208dc6c-1602-4db0-9c33-9125ee25dc44";

struct W {
    c: Cycle,
    qa: QaDir,
    helpers: HelperDir,
    n: std::cell::Cell<usize>,
}

impl W {
    fn new() -> W {
        let c = Cycle::new();
        let qa = QaDir::open(&AbsPath::from_path(&c.data).unwrap()).unwrap().with_ledger_dir(Some(c.world.home.join("latch-heads")));
        W { c, qa, helpers: HelperDir::new(&helper_dir()).unwrap(), n: Default::default() }
    }

    /// The exact line the hooks print for a cold boot (a fresh report path).
    fn boot_line(&self, extra: &str) -> (String, PathBuf) {
        let n = self.n.get();
        self.n.set(n + 1);
        let report = self.c.world.report_path(&format!("witnessed-{n}.json"));
        let line = format!(
            "{} --pointer-id {} --lock-message-id {} --expected-pointer-digest {}{extra} --report-file {}",
            self.helpers.helper("pointer-snapshot"),
            self.c.seeded.pointer_id,
            self.c.seeded.lock_id,
            self.c.seeded.pointer_digest(),
            report.display()
        );
        (line, report)
    }

    /// One cold boot: the PreToolUse hook sees the call (when `seen`) with
    /// `agent`, then the real verifier runs that very line.
    fn boot(&self, agent: Option<&str>, seen: bool, extra: &str) -> (PathBuf, Option<i32>) {
        let (line, report) = self.boot_line(extra);
        if seen {
            let recorded =
                kijito_gate::witness::observe(&self.qa, &SessionId::parse(S).unwrap(), agent, &line, &self.helpers, now_ms()).unwrap();
            assert!(recorded, "a pointer-snapshot helper command is recorded: {line}");
        }
        let words: Vec<&str> = line.split(' ').collect();
        let out = self.c.run(words[0], &words[1..], b"");
        (report, out.status.code())
    }

    fn green(&self, agent: Option<&str>, seen: bool) -> PathBuf {
        let (r, code) = self.boot(agent, seen, "");
        assert_eq!(code, Some(0), "green boot");
        r
    }

    fn record(&self, a: &Path, b: &Path) -> std::process::Output {
        self.c.record_reports(S, a, b)
    }

    fn pass(&self) -> Value {
        serde_json::from_slice(&std::fs::read(self.c.qa().join(format!("qa-pass.{S}.json"))).unwrap()).unwrap()
    }
}

fn refused(out: &std::process::Output, code: &str) {
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(failure_code(out), format!("kijito_qa_gate_failed:{code}"), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn two_distinct_subagents_are_witnessed_and_the_reentry_says_so() {
    let w = W::new();
    let a = w.green(Some("agent-a1"), true);
    let b = w.green(Some("agent-b2"), true);
    let out = w.record(&a, &b);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("bootsWitnessed: true") && stderr.contains("agent-a1") && stderr.contains("agent-b2"), "{stderr}");
    let pass = w.pass();
    assert_eq!((pass["schemaVersion"].clone(), pass["bootsWitnessed"].clone()), (6.into(), true.into()));
    // The compaction that uses it: the attested re-entry names the witness.
    let pre = w.c.stdin("claude", "PreCompact(manual, no args)", S, None, None);
    w.c.hook(&PRECOMPACT, "claude", &[], &pre);
    let text = w.c.session_hook("claude", "SessionStart", &w.c.stdin("claude", "SessionStart(source=compact)", S, None, None)).unwrap();
    assert!(text.contains("ATTESTED (session"), "{text}");
    assert!(text.contains("(bootsWitnessed: true)"), "{text}");
}

#[test]
fn boots_the_main_agent_ran_are_refused() {
    let w = W::new();
    // Both by the main agent (its tool calls carry no agent_id).
    let a = w.green(None, true);
    let b = w.green(None, true);
    refused(&w.record(&a, &b), "boot_by_main_agent");
    // One by a subagent, one by the main agent.
    let c = w.green(Some("agent-c"), true);
    refused(&w.record(&c, &b), "boot_by_main_agent");
    // One subagent for both.
    let d = w.green(Some("agent-c"), true);
    refused(&w.record(&c, &d), "boots_same_agent");
    // A boot the hook never saw (a script, another tool) while it saw the other.
    let e = w.green(Some("agent-e"), false);
    refused(&w.record(&c, &e), "boot_not_witnessed");
    assert!(!w.c.qa().join(format!("qa-pass.{S}.json")).exists(), "no pass was written");
}

#[test]
fn a_red_boot_between_two_greens_resets_the_count() {
    let w = W::new();
    let a = w.green(Some("agent-1"), true);
    // A red verdict for the same pointer (the verifier's own failure: the
    // snapshot is not the one expected), by another subagent.
    let (red, code) = w.boot(Some("agent-2"), true, &format!(" --expected-snapshot-digest {}", "0".repeat(64)));
    assert_eq!(code, Some(1), "red boot");
    let v: Value = serde_json::from_slice(&std::fs::read(&red).unwrap()).unwrap();
    assert_eq!(v["verdict"], "red");
    let b = w.green(Some("agent-3"), true);
    refused(&w.record(&a, &b), "boots_reset_by_red");
    // A witnessed boot whose report is gone counts as red too (deleting the red report hides nothing).
    std::fs::remove_file(&red).unwrap();
    refused(&w.record(&a, &b), "boots_reset_by_red");
    // Two fresh greens after the red: the count restarts, and record passes.
    let c = w.green(Some("agent-4"), true);
    let out = w.record(&b, &c);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(w.pass()["bootsWitnessed"], true);
}

#[test]
fn without_any_witness_the_rule_is_the_skills_and_record_says_so() {
    let w = W::new();
    let a = w.green(None, false);
    let b = w.green(None, false);
    let out = w.record(&a, &b);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("bootsWitnessed: false"));
    assert_eq!(w.pass()["bootsWitnessed"], false);
    let pre = w.c.stdin("codex", "app-server:PreCompact:manual", S, None, None);
    w.c.hook(&PRECOMPACT, "codex", &[], &pre);
    w.c.hook(&POSTCOMPACT, "codex", &[], &w.c.stdin("codex", "app-server:PostCompact:manual", S, None, None));
    let text = w.c.session_hook("codex", "SessionStart", &w.c.stdin("codex", "app-server:SessionStart:compact", S, None, None)).unwrap();
    assert!(text.contains("ATTESTED (session") && text.contains("(bootsWitnessed: false)"), "{text}");
}

#[test]
fn observe_ignores_every_other_line_without_touching_the_disk() {
    let w = W::new();
    let s = SessionId::parse(S).unwrap();
    let file = w.qa.witness(&s);
    for line in [
        "ls -la".to_owned(),
        format!("{} --pointer-id 1", w.helpers.helper("pointer-digest")),
        // Names pointer-snapshot but is no helper command of this root (the guard denies it).
        "echo pointer-snapshot".to_owned(),
        format!(
            "/elsewhere/bin/pointer-snapshot --pointer-id 1 --lock-message-id 2 --report-file {}",
            w.c.world.report_path("x.json").display()
        ),
    ] {
        assert!(!kijito_gate::witness::observe(&w.qa, &s, Some("a"), &line, &w.helpers, now_ms()).unwrap(), "{line}");
    }
    assert!(!file.exists(), "nothing recorded");
    // A record that does not parse fails record closed.
    let (line, _) = w.boot_line("");
    assert!(kijito_gate::witness::observe(&w.qa, &s, Some("a"), &line, &w.helpers, now_ms()).unwrap());
    let meta = std::fs::metadata(&file).unwrap();
    assert_eq!(std::os::unix::fs::PermissionsExt::mode(&meta.permissions()) & 0o777, 0o600);
    std::fs::write(&file, b"not json\n").unwrap();
    let a = w.green(Some("x"), false);
    let b = w.green(Some("y"), false);
    refused(&w.record(&a, &b), "witness_record_invalid");
}
