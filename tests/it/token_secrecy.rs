//! The bearer token never leaves its file: not on stdout or stderr of any
//! networked binary, on success or on every kind of failure, nor in any
//! report, receipt, rollback artifact or the server's request log.
#![allow(clippy::unwrap_used)]

use crate::support;
use support::snapshot as support_snapshot;

use serde_json::json;
use std::path::Path;
use support_snapshot::*;

const POINTER_PUBLISH: &str = env!("CARGO_BIN_EXE_pointer-publish");

fn files_under(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let meta = std::fs::symlink_metadata(&path).unwrap();
        if meta.is_dir() {
            files_under(&path, out);
        } else if meta.is_file() {
            out.push(path);
        }
    }
}

#[test]
fn token_never_appears_in_outputs_or_artifacts() {
    let world = World::start();
    let token = world.server.token().to_owned();
    assert!(token.len() >= 16, "a token long enough to be unambiguous");
    let seeded = world.seed(3, 1);
    let mut outputs = Vec::new();
    let p = seeded.pointer_id;
    // Success paths.
    outputs.push(world.digest(p, &[]));
    outputs.push(world.snapshot_to(&seeded, &world.report_path("green.json"), &[]));
    let digest = seeded.pointer_digest();
    let new = seeded.manifest.replacen("\"title\":\"", "\"title\":\"v2 ", 1);
    let content = world.path("new.json");
    write_private(&content, new.as_bytes());
    let publish = |rollback: &str, expected: &str| {
        world
            .command(POINTER_PUBLISH)
            .args(["--pointer-id", &p.to_string(), "--lock-message-id", &seeded.lock_id.to_string(), "--expected-pointer-digest", expected])
            .arg("--content-file")
            .arg(&content)
            .arg("--rollback-file")
            .arg(world.report_path(rollback))
            .output()
            .unwrap()
    };
    outputs.push(publish("rollback-1.json", &digest));
    // Failure paths: every HTTP failure class, a conflict, a red report.
    for (i, action) in [
        json!({"type": "respond", "status": 401, "body": "{\"error\":\"unauthorized\"}"}),
        json!({"type": "respond", "status": 500, "body": "oops"}),
        json!({"type": "respond", "status": 302, "body": ""}),
        json!({"type": "malformed_json"}),
        json!({"type": "close_before"}),
    ]
    .into_iter()
    .enumerate()
    {
        world.server.set_faults(&json!([{"method": "GET", "path": format!("/api/memory/{p}"), "action": action}]));
        outputs.push(world.digest(p, &[]));
        outputs.push(world.snapshot_to(&seeded, &world.report_path(&format!("red-{i}.json")), &[]));
        outputs.push(publish(&format!("rollback-f{i}.json"), &digest));
    }
    world.server.clear_faults();
    outputs.push(publish("rollback-conflict.json", &digest));
    // A token file with bad permissions is refused without echoing it.
    let loose = world.path("loose-token");
    std::fs::write(&loose, format!("{token}\n")).unwrap();
    outputs.push(world.digest(p, &["--token-file", loose.to_str().unwrap()]));

    let failures = outputs.iter().filter(|o| !o.status.success()).count();
    assert!(failures >= 15, "the failure paths really failed ({failures})");
    for o in &outputs {
        assert!(!stdout(o).contains(&token), "token on stdout: {}", stdout(o));
        assert!(!stderr(o).contains(&token), "token on stderr: {}", stderr(o));
    }
    let mut files = Vec::new();
    files_under(&world.reports, &mut files);
    assert!(files.len() >= 7, "reports and rollback artifacts were written: {files:?}");
    files.push(world.server.request_log_path());
    for f in files {
        let bytes = std::fs::read(&f).unwrap();
        assert!(!String::from_utf8_lossy(&bytes).contains(&token), "token in {}", f.display());
    }
}
