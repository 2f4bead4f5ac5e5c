//! Conformance, durability, concurrency, CAS, fault and security tests of
//! kijito-local, all against the real binary on 127.0.0.1.

#![allow(clippy::unwrap_used)]

use crate::support;

use serde_json::{json, Value};
use std::process::Command;
use support::{LocalServer, Options};

const KNOWN_BAD: &str = include_str!("../../fixtures/renderings/known-bad-control.txt");

fn sha256_hex(text: &str) -> String {
    kijito_protocol::ids::Digest::of(text.as_bytes()).as_str().to_owned()
}

/// The nonce of a rendering (checked to be 6 lowercase hex, used in both
/// fences) and the rendering with it replaced by `a1b2c3`.
fn normalize_nonce(text: &str) -> (String, String) {
    let open = text.find(" n=").expect("open fence nonce") + 3;
    let nonce = &text[open..open + 6];
    assert!(nonce.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')), "nonce {nonce:?}");
    assert_eq!(text.matches(&format!("n={nonce}⟧")).count(), 2, "both fences carry the nonce");
    assert!(text.ends_with(&format!("\n⟦/UNTRUSTED n={nonce}⟧")));
    (nonce.to_owned(), text.replace(&format!("n={nonce}⟧"), "n=a1b2c3⟧"))
}

fn control_fields() -> Value {
    json!({"content":"known-bad","type":"correction","created":"2026-07-25 00:00:00","importance":0.9,"confidence":0.95,"evidence":9,"basis":"observed"})
}

#[test]
fn known_bad_control_is_reproduced_by_create_and_correct() {
    let server = LocalServer::start();
    for i in 1..=8 {
        assert_eq!(server.create_memory(&format!("filler {i}")), i);
    }
    let id = server.create_memory_with(control_fields());
    assert_eq!(id, 9);
    let correction = server.correct(id, "known-good");
    assert_eq!(correction, 10);

    let answer = server.get(id);
    assert_eq!(answer.header("content-type"), Some("application/json"));
    assert_eq!(answer.header("etag"), Some(format!("\"sha256:{}\"", sha256_hex("known-bad")).as_str()));
    // The body is exactly {"result":"<rendering>"}.
    let text = answer.rendering();
    assert_eq!(answer.body, json!({ "result": text }).to_string());
    let (_, normalized) = normalize_nonce(&text);
    assert_eq!(normalized, KNOWN_BAD);

    // A fresh nonce per response.
    let nonces: std::collections::BTreeSet<String> = (0..4).map(|_| normalize_nonce(&server.get(id).rendering()).0).collect();
    assert!(nonces.len() > 1, "nonces repeat: {nonces:?}");

    // The correction is current, has Source: correction and links to the old one.
    let fixed = server.get(correction).rendering();
    assert!(fixed.contains("\nSource: correction\n"), "{fixed}");
    assert!(fixed.contains("\nedges:\n  -> corrects [9] known-bad\n⟦UNTRUSTED id=10 src=persona:codex "), "{fixed}");
    assert!(!fixed.contains("eroded"));
}

#[test]
fn hosted_answers_are_byte_exact() {
    let server = LocalServer::start();
    let id = server.create_memory("v1");
    let created =
        server.request("POST", "/api/memory", Some(r#"{"content":"x","persona":"codex","scope":"project","project":"Codex"}"#), &[]);
    assert_eq!(created.body, format!("{{\"result\":\"Created [{}]\",\"id\":{}}}", id + 1, id + 1));

    // PATCH: the clean ACK, preserve_history accepted and ignored.
    let body = r#"{"content":"v2","persona":"codex","scope":"project","project":"Codex","preserve_history":true}"#;
    let patched = server.request("PATCH", &format!("/api/memory/{id}"), Some(body), &[]);
    assert_eq!((patched.status, patched.body.as_str()), (200, format!("{{\"result\":\"Updated [{id}]\"}}").as_str()));
    assert_eq!(patched.header("content-type"), Some("application/json"));
    let text = server.get(id).rendering();
    assert!(text.ends_with(&format!("\nv2\n⟦/UNTRUSTED n={}⟧", normalize_nonce(&text).0)));
    assert!(text.starts_with(&format!(
        "Memory [{id}]\nType: note\nScope: project\nProject: Codex\nPersona: codex\nStatus: active\nSource: mcp\nCreated: "
    )));
    assert!(text.contains("\nImportance: 0.5\nbelief: confidence=1 evidence=1 basis=observed\n⟦UNTRUSTED "), "{text}");

    // Messages, claims and releases.
    let sent = server.request("POST", "/api/send", Some(r#"{"to":"codex","from":"codex","content":"pointer mutex"}"#), &[]);
    let m = sent.json()["result"]["id"].as_u64().unwrap();
    assert_eq!(sent.body, format!("{{\"result\":{{\"id\":{m}}}}}"));
    assert_eq!(server.claim(m, "codex", 300).body, format!("{{\"claimed\":true,\"message_id\":{m}}}"));
    assert_eq!(
        server.claim(m, "codex", 300).body,
        format!("{{\"claimed\":false,\"message_id\":{m},\"advisory\":{{\"reason\":\"self_claimed\",\"claimed_by\":\"codex\",\"lease_expired\":false}}}}")
    );
    assert_eq!(
        server.claim(m, "other", 10).body,
        format!("{{\"claimed\":false,\"message_id\":{m},\"advisory\":{{\"reason\":\"already_claimed\",\"claimed_by\":\"codex\",\"lease_expired\":false}}}}")
    );
    assert_eq!(server.release(m, "other").body, format!("{{\"released\":false,\"message_id\":{m}}}"));
    assert_eq!(server.release(m, "codex").body, format!("{{\"released\":true,\"message_id\":{m}}}"));
    assert_eq!(server.release(m, "codex").body, format!("{{\"released\":false,\"message_id\":{m}}}"));
    assert_eq!(server.claim(m, "other", 10).body, format!("{{\"claimed\":true,\"message_id\":{m}}}"));

    // Lease bounds and unknown messages.
    for lease in [0, 9, 301] {
        let r = server.claim(m, "codex", lease);
        assert_eq!((r.status, r.json()["error"].as_str()), (400, Some("invalid_lease_seconds")), "lease {lease}");
    }
    let unknown = server.claim(m + 1000, "codex", 10);
    assert_eq!((unknown.status, unknown.json()["error"].as_str()), (403, Some("message_not_found_or_forbidden")));
    assert_eq!(server.release(m + 1000, "codex").status, 403);
}

#[test]
fn edges_previews_and_markers_render() {
    let server = LocalServer::start();
    let hub = server.create_memory("hub");
    let mut targets = Vec::new();
    for i in 0..7 {
        let t = server.create_memory(&format!("target {i} line one\nline two {}", "z".repeat(100)));
        server.relate(hub, t);
        targets.push(t);
    }
    let text = server.get(hub).rendering();
    let expected_first = format!(
        "\nedges:\n  -> relates_to [{}] target 0 line one line two {}\n",
        targets[0],
        "z".repeat(60 - "target 0 line one line two ".len())
    );
    assert!(text.contains(&expected_first), "{text}");
    assert_eq!(text.matches("\n  -> relates_to [").count(), 5);
    assert!(text.contains("\n  has_more=true\n⟦UNTRUSTED "));

    let lone = server.create_memory("lone");
    assert!(!server.get(lone).rendering().contains("edges:"));
    server.fade(lone);
    assert!(server.get(lone).rendering().contains(" basis=observed · faded\n⟦UNTRUSTED "));
    // Unknown targets are refused as not found or forbidden.
    assert_eq!(server.request("POST", &format!("/api/memory/{lone}/relate"), Some(r#"{"to":999999}"#), &[]).status, 403);
    assert_eq!(server.request("POST", "/api/memory/999999/fade", Some("{}"), &[]).status, 403);
    assert_eq!(server.request("POST", "/api/memory/999999/correct", Some(r#"{"content":"x"}"#), &[]).status, 403);
}

#[test]
fn patch_is_scoped_and_missing_memories_are_forbidden() {
    let server = LocalServer::start();
    let id = server.create_memory("mine");
    let other = server.patch(id, "stolen", "OtherProject", None);
    assert_eq!((other.status, other.json()["error"].as_str()), (403, Some("not_found_or_forbidden")));
    let scope = server.request(
        "PATCH",
        &format!("/api/memory/{id}"),
        Some(r#"{"content":"x","persona":"codex","scope":"global","project":"Codex"}"#),
        &[],
    );
    assert_eq!(scope.status, 403);
    assert_eq!(server.patch(id + 1, "x", "Codex", None).status, 403);
    assert_eq!(server.request("GET", &format!("/api/memory/{}", id + 1), None, &[]).status, 403);
    assert!(server.get(id).rendering().contains("\nmine\n"));
}

#[test]
fn compare_and_swap_with_if_match() {
    let server = LocalServer::start();
    let id = server.create_memory("one");
    let etag = server.get(id).header("etag").unwrap().to_owned();
    assert_eq!(etag, format!("\"sha256:{}\"", sha256_hex("one")));
    // Someone else writes (no If-Match: last writer wins, like the hosted service).
    assert_eq!(server.patch(id, "two", "Codex", None).status, 200);
    // Our stale If-Match gets 412 and nothing changes.
    let stale = server.patch(id, "three", "Codex", Some(&etag));
    assert_eq!((stale.status, stale.json()["error"].as_str()), (412, Some("precondition_failed")));
    let now = server.get(id);
    assert!(now.rendering().contains("\ntwo\n"));
    assert_eq!(now.header("etag").unwrap(), format!("\"sha256:{}\"", sha256_hex("two")));
    // The fresh ETag works.
    let fresh = now.header("etag").unwrap().to_owned();
    assert_eq!(server.patch(id, "three", "Codex", Some(&fresh)).body, format!("{{\"result\":\"Updated [{id}]\"}}"));
    assert!(server.get(id).rendering().contains("\nthree\n"));
    // 403 wins over 412 for another project.
    assert_eq!(server.patch(id, "x", "Other", Some("\"sha256:00\"")).status, 403);
}

#[test]
fn data_survives_a_restart_and_ids_are_not_reused() {
    let mut server = LocalServer::start();
    let a = server.create_memory("durable");
    assert_eq!(server.patch(a, "durable v2", "Codex", None).status, 200);
    let b = server.create_memory("second");
    let m = server.send_message("codex", "codex", "mutex");
    assert_eq!(server.claim(m, "codex", 300).json()["claimed"], true);
    let status = server.restart().expect("exit status");
    assert!(status.success(), "SIGTERM stops cleanly: {status:?}");

    assert!(server.get(a).rendering().contains("\ndurable v2\n"));
    assert!(server.get(b).rendering().contains("\nsecond\n"));
    let advisory = server.claim(m, "other", 10).json();
    assert_eq!(advisory["advisory"]["reason"], "already_claimed");
    assert_eq!(advisory["advisory"]["claimed_by"], "codex");
    assert!(server.create_memory("third") > b);

    use std::os::unix::fs::MetadataExt;
    for name in ["kijito.db", "requests.log"] {
        assert_eq!(std::fs::metadata(server.dir().join(name)).unwrap().mode() & 0o077, 0, "{name} is owner-only");
    }
}

#[test]
fn eight_concurrent_claims_yield_exactly_one_winner() {
    let server = LocalServer::start();
    let m = server.send_message("codex", "codex", "mutex");
    let barrier = std::sync::Barrier::new(8);
    let answers: Vec<Value> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..8)
            .map(|i| {
                let (server, barrier) = (&server, &barrier);
                s.spawn(move || {
                    barrier.wait();
                    server.claim(m, &format!("agent{i}"), 60).json()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let winners: Vec<&Value> = answers.iter().filter(|a| a["claimed"] == true).collect();
    assert_eq!(winners.len(), 1, "{answers:?}");
    let winner_index = answers.iter().position(|a| a["claimed"] == true).unwrap();
    for (i, a) in answers.iter().enumerate().filter(|(i, _)| *i != winner_index) {
        assert_eq!(a["advisory"]["reason"], "already_claimed", "{i}: {a}");
        assert_eq!(a["advisory"]["claimed_by"], format!("agent{winner_index}"));
    }
}

#[test]
fn expired_leases_stay_held_until_reaped() {
    // The server clock is moved with the advance_clock fault: no sleeping.
    let server = LocalServer::start_with(Options { reap_after: Some(5), ..Options::default() });
    let m = server.send_message("codex", "codex", "mutex");
    server.set_faults(&json!([
        {"method":"POST","path":"/api/claim","occurrence":2,"action":{"type":"advance_clock","ms":11000}},
        {"method":"POST","path":"/api/claim","occurrence":5,"action":{"type":"advance_clock","ms":5000}}
    ]));
    assert_eq!(server.claim(m, "holder", 10).json()["claimed"], true); // 1
    let expired = server.claim(m, "other", 10); // 2: 11 s later, lease expired, not reaped
    assert_eq!(
        expired.body,
        format!("{{\"claimed\":false,\"message_id\":{m},\"advisory\":{{\"reason\":\"already_claimed\",\"claimed_by\":\"holder\",\"lease_expired\":true}}}}")
    );
    let own = server.claim(m, "holder", 10).json(); // 3
    assert_eq!(own["advisory"], json!({"reason":"self_claimed","claimed_by":"holder","lease_expired":true}));
    assert_eq!(server.claim(m, "other", 10).json()["advisory"]["lease_expired"], true); // 4
    let reaped = server.claim(m, "other", 10); // 5: 16 s after the claim, 6 s after expiry: reaped
    assert_eq!(reaped.body, format!("{{\"claimed\":true,\"message_id\":{m}}}"));
    assert_eq!(server.release(m, "holder").json()["released"], false);
    assert_eq!(server.release(m, "other").json()["released"], true);
    let log = server.request_log();
    let faulted: Vec<&Value> = log.iter().filter(|l| l["fault"] == "advance_clock").collect();
    assert_eq!(faulted.len(), 2);
}

#[test]
fn every_fault_action() {
    let server = LocalServer::start();
    let id = server.create_memory("original");
    let path = format!("/api/memory/{id}");
    let patch_body = |c: &str| json!({"content": c, "persona":"codex","scope":"project","project":"Codex"}).to_string();
    server.set_faults(&json!([
        {"method":"GET","path":path,"occurrence":1,"action":{"type":"delay","ms":50}},
        {"method":"GET","path":path,"occurrence":2,"action":{"type":"respond","status":503,"body":"busy, try later"}},
        {"method":"GET","path":path,"occurrence":3,"action":{"type":"malformed_json"}},
        {"method":"PATCH","path":path,"occurrence":1,"action":{"type":"close_before"}},
        {"method":"PATCH","path":path,"occurrence":2,"action":{"type":"apply_then_close"}},
        {"method":"PATCH","path":path,"occurrence":3,"action":{"type":"apply_then_respond","status":500,"body":"{\"error\":\"boom\"}"}},
        {"method":"PATCH","path":path,"occurrence":4,"action":{"type":"clobber","content":"clobbered"}},
        {"method":"GET","path":path,"occurrence":4,"action":{"type":"erode"}},
        {"method":"POST","path":"/api/send","memory_id":id,"action":{"type":"fade"}}
    ]));

    // delay: answered normally.
    let delayed = server.get(id);
    assert!(delayed.rendering().contains("\noriginal\n"));
    // respond: the given status and raw body.
    let responded = server.get(id);
    assert_eq!((responded.status, responded.body.as_str()), (503, "busy, try later"));
    // malformed_json: 200 with a truncated JSON body.
    let malformed = server.get(id);
    assert_eq!(malformed.status, 200);
    assert!(serde_json::from_str::<Value>(&malformed.body).is_err());
    // close_before: no answer, nothing written.
    assert!(server.try_request("PATCH", &path, Some(&patch_body("lost")), &[]).is_err());
    // apply_then_close: no answer, but written.
    assert!(server.try_request("PATCH", &path, Some(&patch_body("applied")), &[]).is_err());
    // erode (GET #4) before handling: the answer already shows it.
    let eroded = server.get(id).rendering();
    assert!(eroded.contains("\napplied\n"), "{eroded}");
    assert!(eroded.contains(" · eroded\n"));
    // apply_then_respond: written, answered with the given status.
    let odd = server.request("PATCH", &path, Some(&patch_body("applied again")), &[]);
    assert_eq!((odd.status, odd.body.as_str()), (500, "{\"error\":\"boom\"}"));
    assert!(server.get(id).rendering().contains("\napplied again\n"));
    // clobber: a concurrent writer overwrites just before the PATCH, whose
    // If-Match (taken before) is now stale.
    let etag = server.get(id).header("etag").unwrap().to_owned();
    let cas = server.patch(id, "mine", "Codex", Some(&etag));
    assert_eq!(cas.status, 412);
    assert!(server.get(id).rendering().contains("\nclobbered\n"));
    // fade through memory_id on another path.
    server.send_message("codex", "codex", "m");
    assert!(server.get(id).rendering().contains(" · faded\n"));
    // Occurrences are spent: the next requests are normal.
    assert_eq!(server.patch(id, "final", "Codex", None).status, 200);

    let log = server.request_log();
    let faults: Vec<(String, Option<u64>, String)> = log
        .iter()
        .filter(|l| !l["fault"].is_null())
        .map(|l| (l["method"].as_str().unwrap().to_owned(), l["status"].as_u64(), l["fault"].as_str().unwrap().to_owned()))
        .collect();
    let expect = |m: &str, s: Option<u64>, f: &str| (m.to_owned(), s, f.to_owned());
    assert_eq!(
        faults,
        vec![
            expect("GET", Some(200), "delay"),
            expect("GET", Some(503), "respond"),
            expect("GET", Some(200), "malformed_json"),
            expect("PATCH", None, "close_before"),
            expect("PATCH", None, "apply_then_close"),
            expect("GET", Some(200), "erode"),
            expect("PATCH", Some(500), "apply_then_respond"),
            expect("PATCH", Some(412), "clobber"),
            expect("POST", Some(200), "fade"),
        ]
    );
    // The log carries the body digest, never the token.
    let close_line = log.iter().find(|l| l["fault"] == "close_before").unwrap();
    assert_eq!(close_line["bodySha256"], sha256_hex(&patch_body("lost")));
    assert!(close_line["atMs"].as_u64().unwrap() > 0);
    let text = std::fs::read_to_string(server.request_log_path()).unwrap();
    assert!(!text.contains(server.token()));

    // A broken faults file fails closed (500), a fixed one recovers.
    kijito_files::private::write_atomic(&server.faults_path(), b"[{").unwrap();
    assert_eq!(server.get(id).status, 500);
    server.clear_faults();
    assert_eq!(server.get(id).status, 200);
}

#[test]
fn without_the_faults_flag_no_rule_applies() {
    let server = LocalServer::start_with(Options { faults: false, ..Options::default() });
    let id = server.create_memory("safe");
    let rules = json!([{"method":"GET","path":format!("/api/memory/{id}"),"action":{"type":"close_before"}}]);
    kijito_files::private::write_atomic(&server.faults_path(), rules.to_string().as_bytes()).unwrap();
    assert!(server.get(id).rendering().contains("\nsafe\n"));
    assert!(server.request_log().iter().all(|l| l["fault"].is_null()));
}

#[test]
fn authentication_is_required() {
    let server = LocalServer::start();
    let id = server.create_memory("secret stuff");
    let path = format!("/api/memory/{id}");
    let wrong = format!("Bearer {}x", server.token());
    let basic = format!("Basic {}", server.token());
    for headers in
        [vec![], vec![("Authorization", wrong.as_str())], vec![("Authorization", basic.as_str())], vec![("Authorization", "Bearer")]]
    {
        let r = server.request_unauthenticated("GET", &path, None, &headers);
        assert_eq!((r.status, r.json()["error"].as_str()), (401, Some("unauthorized")), "{headers:?}");
        assert!(!r.body.contains("secret stuff"));
    }
    // Unauthenticated writes change nothing.
    let body = r#"{"content":"x","persona":"codex","scope":"project","project":"Codex"}"#;
    assert_eq!(server.request_unauthenticated("PATCH", &path, Some(body), &[]).status, 401);
    assert!(server.get(id).rendering().contains("\nsecret stuff\n"));
    assert_eq!(server.request_unauthenticated("GET", "/nope", None, &[]).status, 401);
}

#[test]
fn malformed_requests_are_refused_with_json_errors() {
    let server = LocalServer::start();
    let id = server.create_memory("keep");
    let path = format!("/api/memory/{id}");
    let code = |r: &support::HttpResponse| (r.status, r.json()["error"].as_str().unwrap_or_default().to_owned());

    // Unknown paths and methods.
    for p in ["/", "/api", "/api/memory/0", "/api/memory/abc", "/api/memory/1/nope", "/api/memories", "/api/memory/01"] {
        assert_eq!(code(&server.request("GET", p, None, &[])), (404, "not_found".into()), "{p}");
    }
    assert_eq!(server.request("DELETE", &path, None, &[]).status, 405);
    assert_eq!(server.request("GET", "/api/claim", None, &[]).status, 405);

    // Bodies.
    for (body, err) in [
        ("{", "body_not_json"),
        ("[1]", "body_not_object"),
        (r#"{"content":"x","persona":"codex","scope":"project"}"#, "missing_field"),
        (r#"{"content":1,"persona":"codex","scope":"project","project":"Codex"}"#, "invalid_field"),
        (r#"{"content":"x","persona":"Codex","scope":"project","project":"Codex"}"#, "invalid_persona"),
        (r#"{"content":"x","persona":"codex","scope":"project","project":"Codex","extra":1}"#, "unknown_field"),
    ] {
        assert_eq!(code(&server.request("PATCH", &path, Some(body), &[])), (400, err.into()), "{body}");
    }
    for body in [
        r#"{"message_id":0,"persona":"codex","lease_seconds":10}"#,
        r#"{"message_id":1.5,"persona":"codex","lease_seconds":10}"#,
        r#"{"message_id":"1","persona":"codex","lease_seconds":10}"#,
    ] {
        assert_eq!(server.request("POST", "/api/claim", Some(body), &[]).status, 400, "{body}");
    }
    for fields in [
        json!({"content":"x","importance":1.5}),
        json!({"content":"x","created":"2026-02-30 00:00:00"}),
        json!({"content":"x","type":"Bad Type"}),
    ] {
        let mut f = fields.clone();
        f["persona"] = "codex".into();
        f["scope"] = "project".into();
        f["project"] = "Codex".into();
        assert_eq!(server.request("POST", "/api/memory", Some(&f.to_string()), &[]).status, 400, "{fields}");
    }
    assert!(server.get(id).rendering().contains("\nkeep\n"));

    // Framing: wrong media type, chunked, no length, too large.
    let auth = format!("Authorization: Bearer {}\r\n", server.token());
    let raw = |head: &str, body: &[u8]| {
        let mut bytes = format!("{head}\r\n{auth}Connection: close\r\n").into_bytes();
        bytes.extend_from_slice(body);
        server.raw(&bytes).expect("answer")
    };
    let text_plain = raw(&format!("PATCH {path} HTTP/1.1\r\nContent-Type: text/plain\r\nContent-Length: 2"), b"\r\n{}");
    assert_eq!(code(&text_plain), (415, "unsupported_media_type".into()));
    let chunked =
        raw(&format!("PATCH {path} HTTP/1.1\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked"), b"\r\n2\r\n{}\r\n0\r\n\r\n");
    assert_eq!(code(&chunked), (411, "length_required".into()));
    let no_length = raw("POST /api/claim HTTP/1.1\r\nContent-Type: application/json", b"\r\n");
    assert_eq!(code(&no_length), (411, "length_required".into()));
    let big = "x".repeat(1024 * 1024 + 1);
    let too_large = server.request("PATCH", &path, Some(&big), &[]);
    assert_eq!(code(&too_large), (413, "body_too_large".into()));
    let huge_header = raw(&format!("GET {path} HTTP/1.1\r\nX-Big: {}", "a".repeat(20_000)), b"\r\n");
    assert_eq!(code(&huge_header), (431, "headers_too_large".into()));
    assert_eq!(server.raw(b"BROKEN\r\n\r\n").expect("answer").status, 400);

    // A body of exactly 1 MiB is accepted (content just under it).
    let content = "y".repeat(1024 * 1024 - 100);
    let body = json!({"content": content, "persona":"codex","scope":"project","project":"Codex"}).to_string();
    assert!(body.len() <= 1024 * 1024);
    assert_eq!(server.request("PATCH", &path, Some(&body), &[]).status, 200);
}

#[test]
fn keep_alive_serves_several_requests_on_one_connection() {
    use std::io::{Read, Write};
    let server = LocalServer::start();
    let id = server.create_memory("ka");
    let mut stream = std::net::TcpStream::connect(server.addr()).unwrap();
    stream.set_read_timeout(Some(std::time::Duration::from_secs(10))).unwrap();
    let req = format!("GET /api/memory/{id} HTTP/1.1\r\nAuthorization: Bearer {}\r\n\r\n", server.token());
    // Two pipelined requests, then one more after reading.
    stream.write_all(format!("{req}{req}").as_bytes()).unwrap();
    let mut seen = 0;
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    while seen < 2 {
        let n = stream.read(&mut chunk).unwrap();
        assert!(n > 0, "closed early");
        buf.extend_from_slice(&chunk[..n]);
        seen = String::from_utf8_lossy(&buf).matches("\\nka\\n").count();
    }
    assert_eq!(String::from_utf8_lossy(&buf).matches("HTTP/1.1 200 OK\r\n").count(), 2);
    assert!(String::from_utf8_lossy(&buf).contains("Connection: keep-alive"));
}

fn run_serve(args: &[&str]) -> std::process::Output {
    Command::new(support::KIJITO_LOCAL).args(args).output().unwrap()
}

#[test]
fn refuses_non_loopback_listen_and_bad_token_files() {
    let server = LocalServer::start();
    let db = server.dir().join("other.db");
    let token = server.token_file();
    for addr in ["0.0.0.0:0", "10.1.2.3:0", "[::]:0"] {
        let out = run_serve(&["serve", "--db", db.to_str().unwrap(), "--token-file", token.to_str().unwrap(), "--listen", addr]);
        assert_eq!(out.status.code(), Some(2), "{addr}");
        assert!(String::from_utf8_lossy(&out.stderr).starts_with("kijito_local_failed:listen_address_not_loopback\n"), "{addr}");
        assert!(out.stdout.is_empty());
    }
    let out = run_serve(&["serve", "--db", db.to_str().unwrap(), "--token-file", token.to_str().unwrap(), "--listen", "localhost:0"]);
    assert!(String::from_utf8_lossy(&out.stderr).starts_with("kijito_local_failed:listen_address_invalid\n"));

    use std::os::unix::fs::PermissionsExt;
    let open_token = server.dir().join("open-token");
    std::fs::write(&open_token, "tok\n").unwrap();
    std::fs::set_permissions(&open_token, std::fs::Permissions::from_mode(0o644)).unwrap();
    let out = run_serve(&["serve", "--db", db.to_str().unwrap(), "--token-file", open_token.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).starts_with("kijito_local_failed:file_permissions_too_open\n"));
    let link = server.dir().join("token-link");
    std::os::unix::fs::symlink(&token, &link).unwrap();
    let out = run_serve(&["serve", "--db", db.to_str().unwrap(), "--token-file", link.to_str().unwrap()]);
    assert!(String::from_utf8_lossy(&out.stderr).starts_with("kijito_local_failed:file_is_symlink\n"));
    // Missing flags are usage errors.
    let out = run_serve(&["serve", "--db", db.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).starts_with("kijito_local_failed:missing_flag\n"));
}
