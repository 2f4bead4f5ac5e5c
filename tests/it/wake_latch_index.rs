//! The latch index (docs/wake-check.md, docs/memory-latch.md "Workspace
//! index"), through the real binaries: `memory-latch init` lists the
//! workspace in the index beside the head records, so deleting the latch
//! AND its head record no longer turns `degraded` into `full_trust`:
//! wake-check answers degraded with `latch_deleted`. A workspace that never
//! had a latch is not degraded for it.
#![allow(clippy::unwrap_used)]

use crate::support;
use support::latch::env;

use std::fs;

fn codes(v: &serde_json::Value) -> Vec<String> {
    v["findings"].as_array().unwrap().iter().map(|f| f["code"].as_str().unwrap().to_owned()).collect()
}

#[test]
fn deleting_the_latch_and_its_head_record_is_still_degraded() {
    let e = env();
    let heads = e.w.home.join("latch-heads");
    e.ok(&["init", "--objective", "ship it"]);
    // What init left beside the head record: the index, owner-only, naming the workspace.
    let index = heads.join("latch-workspaces.jsonl");
    let text = fs::read_to_string(&index).unwrap();
    assert_eq!(text.lines().count(), 1, "{text}");
    let line: serde_json::Value = serde_json::from_str(text.trim_end()).unwrap();
    assert_eq!((line["schema"].as_str(), line["workspace"].as_str()), (Some("memory-latch.workspace/v1"), e.ws.to_str()));
    assert_eq!(std::os::unix::fs::PermissionsExt::mode(&fs::metadata(&index).unwrap().permissions()) & 0o777, 0o600);
    // The two commands: the latch and its head record.
    fs::remove_dir_all(e.ws.join(".memory-latch")).unwrap();
    let records: Vec<_> =
        fs::read_dir(&heads).unwrap().map(|d| d.unwrap().path()).filter(|p| p.file_name().unwrap() != "latch-workspaces.jsonl").collect();
    assert_eq!(records.len(), 1, "the head record: {records:?}");
    fs::remove_file(&records[0]).unwrap();
    let (code, v) = e.wake(&[]);
    assert_eq!(code, 20, "{v}");
    assert!(codes(&v).contains(&"latch_deleted".to_owned()), "{v}");
    assert_eq!(v["mode"], "degraded", "{v}");
    // An index that is not one fails closed the same way.
    fs::write(&index, b"garbage\n").unwrap();
    let (code, v) = e.wake(&[]);
    assert_eq!((code, codes(&v).contains(&"latch_deleted".to_owned())), (20, true), "{v}");
}

#[test]
fn a_workspace_that_never_had_a_latch_is_not_latch_deleted() {
    let e = env();
    // Another workspace had one; this one never did.
    let other = e.ws.with_file_name("other-ws");
    fs::create_dir(&other).unwrap();
    let o = {
        let mut c = std::process::Command::new(support::bin("memory-latch"));
        c.args(["init", "--objective", "elsewhere", "--workspace"]).arg(&other);
        c.env("HOME", &e.w.home).env("MEMORY_LATCH_HEADS_DIR", e.w.home.join("latch-heads")).env("MEMORY_LATCH_BOOT_ID_FILE", &e.boot);
        c.env_remove("MEMORY_LATCH_HMAC_KEY_FILE").output().unwrap()
    };
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let (_, v) = e.wake(&[]);
    assert!(!codes(&v).contains(&"latch_deleted".to_owned()), "{v}");
}
