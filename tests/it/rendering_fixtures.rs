//! Golden renderings (docs/protocol.md §3): every file in
//! `fixtures/renderings/` is listed in `index.json` with its exact expected
//! outcome, and every error code (and detail rule) documented in the
//! `render` module is exercised by at least one fixture.

use kijito_protocol::ids::{Digest, MemoryId, Persona};
use kijito_protocol::render::{self, Lifecycle};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

const CONTROL_FIXTURE: &str = include_str!("../../fixtures/renderings/known-bad-control.txt");
const RENDER_SOURCE: &str = include_str!("../../shared/protocol/src/render.rs");

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures").join("renderings")
}

fn index() -> serde_json::Map<String, Value> {
    let text = std::fs::read_to_string(dir().join("index.json")).expect("read index.json");
    match serde_json::from_str(&text).expect("index.json is JSON") {
        Value::Object(map) => map,
        other => panic!("index.json is not an object: {other}"),
    }
}

/// `(code, rule)` pairs of the module doc's code table; rule is "" when the
/// row names no rules.
fn documented() -> BTreeMap<String, BTreeSet<String>> {
    let mut out = BTreeMap::new();
    for line in RENDER_SOURCE.lines() {
        let Some(row) = line.strip_prefix("//! | `") else { continue };
        let (code, rest) = row.split_once('`').expect("code cell");
        let rules: BTreeSet<String> = rest
            .split('`')
            .skip(1)
            .step_by(2)
            .filter(|w| !w.is_empty() && w.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'))
            .map(str::to_owned)
            .collect();
        assert!(out.insert(code.to_owned(), rules).is_none(), "code {code} documented twice");
    }
    out
}

/// Run one fixture; returns (code, rule, lifecycle, content digest).
fn run(text: &str, entry: &Value) -> (Option<String>, Option<String>, Option<String>, Option<String>) {
    let id = MemoryId::new(entry["id"].as_u64().expect("id")).expect("valid id");
    let persona = entry["fencePersona"].as_str().map(|p| Persona::parse(p).expect("valid persona"));
    let err_parts = |e: kijito_protocol::Error| {
        let rule = e.detail().and_then(|d| d["rule"].as_str()).map(str::to_owned);
        (Some(e.code().to_owned()), rule, None, None)
    };
    match entry["mode"].as_str().expect("mode") {
        "parse" => match render::parse_and_classify(text, id, persona.as_ref()) {
            Ok((r, l)) => {
                assert_eq!(r.id, id);
                assert!(r.header.starts_with(&format!("Memory [{id}]\n")));
                let lifecycle = match l {
                    Lifecycle::Current => "current",
                    Lifecycle::Retired => "retired",
                };
                assert_eq!(lifecycle, l.as_str());
                (None, None, Some(lifecycle.to_owned()), Some(render::content_digest(&r).to_string()))
            }
            Err(e) => err_parts(e),
        },
        "control" => {
            assert_eq!(id.get(), 9, "control fixtures are memory 9");
            match render::check_control(text) {
                Ok(()) => (None, None, None, None),
                Err(e) => err_parts(e),
            }
        }
        other => panic!("unknown mode {other}"),
    }
}

#[test]
fn every_fixture_has_its_exact_outcome() {
    let index = index();
    let files: BTreeSet<String> = std::fs::read_dir(dir())
        .expect("read fixtures dir")
        .map(|e| e.expect("entry").file_name().into_string().expect("utf-8 name"))
        .filter(|n| n.ends_with(".txt"))
        .collect();
    let listed: BTreeSet<String> = index.keys().cloned().collect();
    assert_eq!(files, listed, "every .txt fixture is in index.json and every entry has a file");
    assert!(index.len() >= 60, "fixture corpus shrank: {}", index.len());

    for (name, entry) in &index {
        let mut text = std::fs::read_to_string(dir().join(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
        if let Some(total) = entry.get("padToBytes").and_then(Value::as_u64) {
            let total = usize::try_from(total).expect("size");
            let at = text.rfind("\n⟦/UNTRUSTED").expect("padded fixture has a close fence");
            assert!(total > text.len(), "{name}: padding must grow the text");
            text.insert_str(at, &"x".repeat(total - text.len()));
            assert_eq!(text.len(), total);
        }
        let got = run(&text, entry);
        let want = (
            entry["code"].as_str().map(str::to_owned),
            entry["rule"].as_str().map(str::to_owned),
            entry["lifecycle"].as_str().map(str::to_owned),
            entry["contentSha256"].as_str().map(str::to_owned),
        );
        let want = if entry["mode"] == "control" { (want.0, want.1, None, None) } else { want };
        assert_eq!(got, want, "fixture {name}");
        if let Some(d) = entry["contentSha256"].as_str() {
            assert!(Digest::parse(d).is_ok(), "{name}: digest shape");
        }
    }
}

#[test]
fn every_documented_code_and_rule_is_exercised() {
    let documented = documented();
    let codes: BTreeSet<String> = render::CODES.iter().map(|c| c.to_string()).collect();
    assert_eq!(documented.keys().cloned().collect::<BTreeSet<_>>(), codes, "doc table == render::CODES");

    let index = index();
    let mut seen: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for entry in index.values() {
        if let Some(code) = entry["code"].as_str() {
            let rule = entry["rule"].as_str().unwrap_or("").to_owned();
            seen.entry(code.to_owned()).or_default().insert(rule);
        }
    }
    for (code, rules) in &documented {
        let got = seen.get(code).unwrap_or_else(|| panic!("no fixture exercises {code}"));
        for rule in rules {
            assert!(got.contains(rule), "no fixture exercises {code} rule {rule}");
        }
    }
    for code in seen.keys() {
        assert!(documented.contains_key(code), "fixture expects undocumented code {code}");
    }
    for entry in index.values() {
        if entry["lifecycle"].is_null() && entry["mode"] == "parse" {
            assert!(entry["code"].is_string(), "a rejected fixture names its code: {entry}");
        }
    }
}

#[test]
fn both_lifecycles_and_edges_fixtures_are_present() {
    let index = index();
    let lifecycles: BTreeSet<&str> = index.values().filter_map(|e| e["lifecycle"].as_str()).collect();
    assert_eq!(lifecycles, BTreeSet::from(["current", "retired"]));
    let has_more = index
        .iter()
        .filter(|(_, e)| e["code"].is_null())
        .filter(|(name, _)| {
            let text = std::fs::read_to_string(dir().join(name.as_str())).expect("read");
            text.contains("\nedges:\n") && text.contains("has_more=true")
        })
        .count();
    assert!(has_more >= 2, "accepted fixtures with an edges block and has_more=true: {has_more}");
}

#[test]
fn known_bad_control_is_the_fixture_and_passes() {
    assert_eq!(render::KNOWN_BAD_CONTROL, CONTROL_FIXTURE);
    render::run_known_bad_control().expect("known-bad control");
    let id = MemoryId::new(9).expect("id");
    let (r, l) = render::parse_and_classify(CONTROL_FIXTURE, id, Some(&Persona::default())).expect("control");
    assert_eq!(l, Lifecycle::Retired);
    assert_eq!(render::content_digest(&r), Digest::of(b"known-bad"));
}
