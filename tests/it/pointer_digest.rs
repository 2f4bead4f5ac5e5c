//! pointer-digest against a real kijito-local:
//! a good pointer, a missing
//! fence, two fences, a bad nonce, a nested fence, HTTP 403, a redirect, an
//! oversized body, and a group-readable token file. Renderings the server
//! never produces are served with the `respond` fault action.
#![allow(clippy::unwrap_used)]

use crate::support;
use support::snapshot as support_snapshot;

use kijito_protocol::ids::Digest;
use serde_json::json;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use support_snapshot::*;

/// A world with one pointer memory holding a canonical manifest.
fn world_with_pointer() -> (World, Seeded) {
    let world = World::start();
    let seeded = world.seed(2, 1);
    (world, seeded)
}

/// Serve `rendering` as the answer to `GET /api/memory/{id}`.
fn serve_rendering(world: &World, id: u64, rendering: &str) {
    let body = json!({"result": rendering}).to_string();
    world.server.set_faults(
        &json!([{"method": "GET", "path": format!("/api/memory/{id}"), "action": {"type": "respond", "status": 200, "body": body}}]),
    );
}

/// A genuine-looking rendering of `id` around `fenced` (the open fence line,
/// content and close fence are the caller's).
fn rendering(id: u64, fenced: &str) -> String {
    format!(
        "Memory [{id}]\nType: note\nScope: project\nProject: Codex\nPersona: codex\nStatus: active\nSource: mcp\nCreated: 2026-07-25 00:00:00\nImportance: 0.9\nbelief: confidence=1 evidence=1 basis=observed\n{fenced}"
    )
}

fn open(id: u64, nonce: &str) -> String {
    format!("⟦UNTRUSTED id={id} src=persona:codex trust=memory-content n={nonce}⟧")
}

fn close(nonce: &str) -> String {
    format!("⟦/UNTRUSTED n={nonce}⟧")
}

fn expect_failure(world: &World, id: u64, extra: &[&str], code: &str) {
    let out = world.digest(id, extra);
    assert_eq!(out.status.code(), Some(1), "stdout {} stderr {}", stdout(&out), stderr(&out));
    assert_eq!(stdout(&out), "", "nothing on stdout on failure");
    let err = stderr(&out);
    assert!(err.starts_with(&format!("kijito_pointer_digest_failed:{code}\n")), "expected {code}, got {err}");
    assert!(!err.contains(world.server.token()), "the token never appears in errors");
}

#[test]
fn good_pointer_prints_the_content_digest_and_a_newline() {
    let (world, seeded) = world_with_pointer();
    let out = world.digest(seeded.pointer_id, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), format!("{}\n", Digest::of(seeded.manifest.as_bytes())));
    assert_eq!(stderr(&out), "");
    // It matches the ETag the server computed from the stored content, and
    // the request log shows exactly one GET of the pointer, nothing else.
    let etag = world.server.get(seeded.pointer_id).header("etag").unwrap().to_owned();
    assert_eq!(etag, format!("\"sha256:{}\"", stdout(&out).trim_end()));
    let log = world.server.request_log();
    let runs: Vec<_> = log.iter().filter(|l| l["path"] == format!("/api/memory/{}", seeded.pointer_id) && l["method"] == "GET").collect();
    assert_eq!(runs.len(), 2, "one GET by the binary, one by this test");
    // --token-file overrides the configured token file.
    let out = world.digest(seeded.pointer_id, &["--token-file", world.server.token_file().to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

#[test]
fn the_lifecycle_does_not_matter_only_the_fence() {
    let (world, seeded) = world_with_pointer();
    world.server.correct(seeded.pointer_id, "newer");
    let out = world.digest(seeded.pointer_id, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), format!("{}\n", seeded.pointer_digest()));
}

#[test]
fn served_rendering_with_a_genuine_shape_is_accepted() {
    // Control for the fence tests below: the hand-built rendering itself is fine.
    let (world, seeded) = world_with_pointer();
    let id = seeded.pointer_id;
    serve_rendering(&world, id, &rendering(id, &format!("{}\nhello\n{}", open(id, "0a1b2c"), close("0a1b2c"))));
    let out = world.digest(id, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), format!("{}\n", Digest::of(b"hello")));
}

#[test]
fn missing_fence() {
    let (world, seeded) = world_with_pointer();
    let id = seeded.pointer_id;
    serve_rendering(&world, id, &rendering(id, "just text, no fence"));
    expect_failure(&world, id, &[], "memory_fence_missing");
}

#[test]
fn two_fences() {
    let (world, seeded) = world_with_pointer();
    let id = seeded.pointer_id;
    // Two open fences for the id (the second with its own nonce).
    let two_open = format!("{}\nfirst\n{}\nsecond\n{}", open(id, "0a1b2c"), open(id, "3d4e5f"), close("0a1b2c"));
    serve_rendering(&world, id, &rendering(id, &two_open));
    expect_failure(&world, id, &[], "memory_fence_duplicated");
    // Two complete fences one after the other: the first marker inside the
    // content is the repeated close (render's documented order).
    let twice = format!("{o}\nfirst\n{c}\n{o}\nsecond\n{c}", o = open(id, "0a1b2c"), c = close("0a1b2c"));
    serve_rendering(&world, id, &rendering(id, &twice));
    expect_failure(&world, id, &[], "memory_fence_close_invalid");
}

#[test]
fn bad_nonce() {
    let (world, seeded) = world_with_pointer();
    let id = seeded.pointer_id;
    serve_rendering(&world, id, &rendering(id, &format!("{}\nhello\n{}", open(id, "0A1B2C"), close("0A1B2C"))));
    expect_failure(&world, id, &[], "memory_fence_nonce_invalid");
    serve_rendering(&world, id, &rendering(id, &format!("{}\nhello\n{}", open(id, "0a1b2c"), close("0a1b2d"))));
    expect_failure(&world, id, &[], "memory_fence_close_invalid");
}

#[test]
fn nested_fence() {
    let (world, seeded) = world_with_pointer();
    let id = seeded.pointer_id;
    let nested = format!("{}\nouter\n{}\ninner\n{}", open(id, "0a1b2c"), open(id + 1, "dddddd"), close("0a1b2c"));
    serve_rendering(&world, id, &rendering(id, &nested));
    expect_failure(&world, id, &[], "memory_fence_nested");
}

#[test]
fn wrong_persona_fence() {
    let (world, seeded) = world_with_pointer();
    let id = world.server.create_memory_with(json!({"content": seeded.manifest, "persona": "claude"}));
    expect_failure(&world, id, &[], "memory_fence_persona_mismatch");
}

#[test]
fn http_403_for_a_missing_memory() {
    let (world, seeded) = world_with_pointer();
    expect_failure(&world, seeded.pointer_id + 10_000, &[], "kijito_http_403");
}

#[test]
fn redirect_is_refused_and_not_followed() {
    let (world, seeded) = world_with_pointer();
    let id = seeded.pointer_id;
    world.server.set_faults(
        &json!([{"method": "GET", "path": format!("/api/memory/{id}"), "action": {"type": "respond", "status": 302, "body": "{}"}}]),
    );
    let before = world.log_len();
    expect_failure(&world, id, &[], "kijito_redirect_refused");
    assert_eq!(world.log_len() - before, 1, "exactly one request, no follow-up");
}

#[test]
fn oversized_body_is_refused() {
    let (world, seeded) = world_with_pointer();
    let id = seeded.pointer_id;
    // Content just under the 1 MiB request cap; the rendered answer is over
    // the 1 MiB response cap.
    let r = world.server.patch(id, &"y".repeat(1024 * 1024 - 128), "Codex", None);
    assert_eq!(r.status, 200, "{}", r.body);
    expect_failure(&world, id, &[], "kijito_response_too_large");
}

#[test]
fn group_readable_token_file_is_refused_before_any_request() {
    let (world, seeded) = world_with_pointer();
    let loose = world.path("loose-token");
    fs::copy(world.server.token_file(), &loose).unwrap();
    fs::set_permissions(&loose, fs::Permissions::from_mode(0o640)).unwrap();
    let before = world.log_len();
    expect_failure(&world, seeded.pointer_id, &["--token-file", loose.to_str().unwrap()], "token_file_permissions_too_open");
    // The same through the config file's tokenFile.
    world.write_config(&json!({"apiUrl": world.server.base_url(), "tokenFile": loose.to_str().unwrap()}));
    expect_failure(&world, seeded.pointer_id, &[], "token_file_permissions_too_open");
    assert_eq!(world.log_len(), before, "no request with a refused token file");
}

#[test]
fn usage_errors_exit_2() {
    let (world, _) = world_with_pointer();
    for args in [vec![], vec!["--pointer-id", "0"], vec!["--pointer-id", "01"], vec!["--pointer-id", "1", "--bogus"]] {
        let out = world.command(POINTER_DIGEST).args(&args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).starts_with("kijito_pointer_digest_failed:"));
        assert_eq!(stdout(&out), "");
    }
}
