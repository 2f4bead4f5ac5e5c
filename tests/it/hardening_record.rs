//! Forged reports are not recorded. `qa-gate record`
//! reads the live pointer once (its digest must equal the reports' and the
//! command line's) and requires both reports to name the installed
//! `pointer-snapshot` (`verifierSha256`). The attacks: two hand-written
//! "green" reports for a pointer digest that never existed; reports for the
//! pointer as it was before it changed; reports naming another verifier.
//! Each is refused, no pass exists, and the next compaction is UNATTESTED.
#![allow(clippy::unwrap_used)]

use crate::support;
use support::gate as support_gate;

use kijito_protocol::ids::Digest;
use serde_json::Value;
use std::path::PathBuf;
use support_gate::*;

const S: &str = "01a2295e-6929-7981-9da7-935145fb97be";

fn write_pair(w: &World, label: &str, spec: &ReportSpec) -> (PathBuf, PathBuf) {
    let a = w.path(&format!("{label}-a.json"));
    let b = w.path(&format!("{label}-b.json"));
    write_private(&a, green_report(spec).to_string().as_bytes());
    write_private(&b, green_report(&ReportSpec { boot_nonce: nonce(9), ..spec.clone() }).to_string().as_bytes());
    (a, b)
}

fn assert_refused_and_unattested(w: &World, out: &std::process::Output, code: &str) {
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(failure_code(out), format!("kijito_qa_gate_failed:{code}"));
    assert!(out.stdout.is_empty(), "no ready signal");
    assert!(!w.qa().join(format!("qa-pass.{S}.json")).exists(), "no pass was written");
    let stdin = w.hook_stdin("codex", "app-server:PreCompact:manual", S);
    let pre = w.run(&PRECOMPACT, &["--host", "codex", "--data-dir", &w.data_arg()], &stdin);
    let v: Value = serde_json::from_slice(&pre.stdout).unwrap();
    let msg = v["systemMessage"].as_str().unwrap();
    assert!(msg.contains("UNATTESTED") && !msg.contains("attested (QA"), "{msg}");
}

#[test]
fn reports_for_a_digest_that_never_existed_are_refused() {
    let w = World::new();
    let spec = ReportSpec { pointer_digest: Digest::of(b"a pointer that never existed").as_str().to_owned(), ..ReportSpec::new(now_ms()) };
    let (a, b) = write_pair(&w, "forged", &spec);
    let out = w.record(S, &spec.pointer_digest, &a, &b);
    assert_refused_and_unattested(&w, &out, "pointer_digest_not_live");
    // The request really went to the live pointer: exactly one GET of it.
    let gets = w.live().request_log().iter().filter(|l| l["method"] == "GET" && l["path"] == format!("/api/memory/{POINTER}")).count();
    assert_eq!(gets, 1);
}

#[test]
fn reports_for_a_pointer_that_changed_since_are_refused() {
    let w = World::new();
    let (a, b, digest) = w.green_pair("old", now_ms());
    let r = w.live().patch(POINTER, "the pointer moved on", "Codex", None);
    assert_eq!(r.status, 200, "{}", r.body);
    let out = w.record(S, &digest, &a, &b);
    assert_refused_and_unattested(&w, &out, "pointer_digest_not_live");
}

#[test]
fn reports_from_another_verifier_are_refused() {
    let w = World::new();
    // Hand-written reports that name no real verifier, or a plausible one.
    for (i, verifier) in [Digest::of(b"a forged verifier").as_str().to_owned(), "0".repeat(64)].into_iter().enumerate() {
        let spec = ReportSpec { verifier, ..ReportSpec::new(now_ms()) };
        let (a, b) = write_pair(&w, &format!("verifier-{i}"), &spec);
        let out = w.record(S, &spec.pointer_digest, &a, &b);
        assert_refused_and_unattested(&w, &out, "report_verifier_mismatch");
    }
    // One report right, one wrong: still refused.
    let good = ReportSpec::new(now_ms());
    let a = w.path("mixed-a.json");
    let b = w.path("mixed-b.json");
    write_private(&a, green_report(&good).to_string().as_bytes());
    write_private(&b, green_report(&ReportSpec { boot_nonce: nonce(7), verifier: "1".repeat(64), ..good.clone() }).to_string().as_bytes());
    let out = w.record(S, &good.pointer_digest, &a, &b);
    assert_refused_and_unattested(&w, &out, "report_verifier_mismatch");
    // And the honest pair records.
    w.record_ok(S);
}
