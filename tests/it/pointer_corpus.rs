//! Runs every manifest of `fixtures/pointers/` through `parse_manifest` and
//! checks the labelled protocol code and rule exactly; checks that every rule
//! of the `manifest` module's doc table is exercised by at least one file.

use kijito_protocol::ids::{MemoryId, MessageId};
use kijito_protocol::manifest::{self, parse_manifest, parse_manifest_unbound, rule_of};
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::PathBuf;

fn corpus_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/pointers")
}

fn index() -> Vec<(String, Value)> {
    let text = std::fs::read_to_string(corpus_dir().join("index.json")).expect("read index.json");
    let value: Value = serde_json::from_str(&text).expect("index.json is JSON");
    value.as_object().expect("index is an object").iter().map(|(k, v)| (k.clone(), v.clone())).collect()
}

/// Rule codes listed in the module doc table of shared/protocol/src/manifest.rs.
fn documented_rules() -> Vec<String> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("shared/protocol/src/manifest.rs");
    let source = std::fs::read_to_string(path).expect("read manifest.rs");
    source
        .lines()
        .filter_map(|line| line.strip_prefix("//! | `"))
        .filter_map(|rest| rest.split_once('`').map(|(rule, _)| rule.to_owned()))
        .collect()
}

#[test]
fn every_corpus_file_gets_its_labelled_code_and_rule() {
    let entries = index();
    assert!(entries.len() >= 60, "corpus has only {} files", entries.len());
    let mut failures = Vec::new();
    for (file, want) in &entries {
        let bytes = std::fs::read(corpus_dir().join(file)).expect("read corpus file");
        let pid = MemoryId::new(want["pointerId"].as_u64().expect("pointerId")).expect("pointer id");
        let lock = MessageId::new(want["lockMessageId"].as_u64().expect("lockMessageId")).expect("lock id");
        let want_code = want["code"].as_str().expect("code");
        let want_rule = want["rule"].as_str();
        let got = parse_manifest(&bytes, pid, lock);
        let (code, rule) = match &got {
            Ok(m) => {
                // A valid manifest re-serialises to its exact bytes.
                assert_eq!(m.to_canonical().as_bytes(), &bytes[..], "{file}: round trip");
                assert_eq!(m.pointer_id, pid);
                assert_eq!(m.lock_message_id, lock);
                ("ok".to_owned(), None)
            }
            Err(e) => (e.code().to_owned(), rule_of(e).map(str::to_owned)),
        };
        if code != want_code || rule.as_deref() != want_rule {
            failures.push(format!("{file}: want {want_code}/{want_rule:?}, got {code}/{rule:?} ({got:?})"));
        }
        // The unbound parser agrees except for the two id equalities.
        let unbound = parse_manifest_unbound(&bytes);
        match want_rule {
            Some("pointer_id_mismatch" | "lock_message_id_mismatch") => {
                assert!(unbound.is_ok(), "{file}: unbound parse should accept")
            }
            _ => assert_eq!(unbound.as_ref().err().and_then(|e| rule_of(e)), want_rule, "{file}: unbound parse"),
        }
    }
    assert!(failures.is_empty(), "{} mismatches:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn every_documented_rule_is_in_the_corpus_and_in_rules() {
    let documented = documented_rules();
    let table: Vec<&str> = manifest::RULES.iter().map(|(rule, _)| *rule).collect();
    assert_eq!(documented, table, "module doc table and RULES differ");
    let covered: BTreeSet<String> = index().iter().filter_map(|(_, want)| want["rule"].as_str().map(str::to_owned)).collect();
    let missing: Vec<&str> = table.iter().copied().filter(|rule| !covered.contains(*rule)).collect();
    assert!(missing.is_empty(), "rules without a corpus file: {missing:?}");
    // No label names a rule the module does not have.
    let unknown: Vec<&String> = covered.iter().filter(|rule| !table.contains(&rule.as_str())).collect();
    assert!(unknown.is_empty(), "labels with unknown rules: {unknown:?}");
    // The labelled code is the rule's code, and valid files say "ok".
    for (file, want) in index() {
        let code = match want["rule"].as_str() {
            Some(rule) => manifest::RULES.iter().find(|(r, _)| *r == rule).map(|(_, c)| c.as_str()),
            None => Some("ok"),
        };
        assert_eq!(code, want["code"].as_str(), "{file}");
    }
}

#[test]
fn corpus_files_end_without_newline_unless_that_is_the_case() {
    for (file, want) in index() {
        let bytes = std::fs::read(corpus_dir().join(&file)).expect("read");
        if want["rule"].as_str() != Some("whitespace") {
            assert!(!bytes.ends_with(b"\n"), "{file} ends with a newline");
        }
    }
}

#[test]
fn corpus_has_the_javascript_specific_and_boundary_cases() {
    let names: Vec<String> = index().into_iter().map(|(file, _)| file).collect();
    for needle in [
        "escape-solidus",
        "escape-u0041",
        "number-1e3",
        "number-1.0",
        "number-minus-zero",
        "duplicate-key",
        "key-order",
        "whitespace-trailing-newline",
        "1000-astral-2000-units",
        "1000-astral-plus-1",
        "purpose-500",
        "purpose-501",
        "feff",
        "nbsp",
        "ideographic-space",
        "lone-surrogate-high",
        "valid-64-anchors",
        "valid-100-item-lists",
        "valid-complete",
        "valid-retired-anchors",
    ] {
        assert!(names.iter().any(|n| n.contains(needle)), "no corpus file for {needle}");
    }
}
