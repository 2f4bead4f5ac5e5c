//! The labelled classifier corpus (fixtures/policy/corpus.jsonl, issue 21):
//! every call of both hosts' shapes is classified and compared with its
//! hand-written label. Prints the false-negative count (an irreversible or
//! tripwire call classified as neither), the false-positive count (a benign
//! call classified irreversible or as a tripwire) and the wrong-rule count
//! (right verdict, but other rules, tripwire codes or classes), per
//! category; all three must be 0.
//!
//! Run: `cargo test -p kijito-policy --test corpus -- --nocapture`

use kijito_policy::{classify, Class, Env, ToolCall};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

fn env() -> Env {
    Env {
        home: "/home/user".into(),
        cwd: "/home/user/project".into(),
        config_dir: Some("/home/user/.config/kijito-qa".into()),
        data_dir: Some("/home/user/.local/share/kijito-qa".into()),
        plugin_roots: vec!["/opt/kijito-qa".into()],
    }
}

fn strings(v: &Value) -> BTreeSet<String> {
    v.as_array().expect("a label list").iter().map(|s| s.as_str().expect("a string").to_owned()).collect()
}

#[test]
fn corpus_has_no_false_negatives_false_positives_or_wrong_rules() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../fixtures/policy/corpus.jsonl");
    let text = std::fs::read_to_string(path).expect("fixtures/policy/corpus.jsonl");
    let env = env();
    let (mut fneg, mut fpos, mut wrong) = (Vec::new(), Vec::new(), Vec::new());
    let mut per_category: BTreeMap<String, usize> = BTreeMap::new();
    let mut per_kind: BTreeMap<String, usize> = BTreeMap::new();
    let mut hosts: BTreeMap<String, usize> = BTreeMap::new();
    let mut forms: BTreeSet<String> = BTreeSet::new();
    for line in text.lines() {
        let e: Value = serde_json::from_str(line).expect("one JSON object a line");
        let kind = e["kind"].as_str().unwrap().to_owned();
        *per_kind.entry(kind.clone()).or_default() += 1;
        *per_category.entry(e["category"].as_str().unwrap().to_owned()).or_default() += 1;
        *hosts.entry(e["host"].as_str().unwrap().to_owned()).or_default() += 1;
        forms.insert(e["form"].as_str().unwrap().to_owned());
        let call = ToolCall::parse(e["tool_name"].as_str().unwrap(), &e["tool_input"]);
        let got = classify(&call, &env);
        let got_classes: BTreeSet<String> = got.classes().iter().map(|c| c.as_str().to_owned()).collect();
        let got_rules: BTreeSet<String> = got.irreversible().iter().map(|h| h.rule.to_owned()).collect();
        let got_trips: BTreeSet<String> = got.tripwires.iter().map(|t| t.code.to_owned()).collect();
        let want_classes = strings(&e["expect"]["classes"]);
        let want_rules = strings(&e["expect"]["rules"]);
        let want_trips = strings(&e["expect"]["tripwires"]);
        for c in &want_classes {
            assert!(Class::parse(c).is_some(), "{}: unknown class {c}", e["id"]);
        }
        let flagged = got.is_irreversible() || !got.tripwires.is_empty();
        let report = format!(
            "{} [{} {}] {}: {}\n    want classes {want_classes:?} rules {want_rules:?} tripwires {want_trips:?}\n    got  classes {got_classes:?} rules {got_rules:?} tripwires {got_trips:?}",
            e["id"].as_str().unwrap(),
            e["host"].as_str().unwrap(),
            e["form"].as_str().unwrap(),
            e["tool_name"].as_str().unwrap(),
            e["tool_input"]
        );
        if kind == "benign" {
            assert!(want_rules.is_empty() && want_trips.is_empty(), "{report}");
            if flagged {
                fpos.push(report);
                continue;
            }
        } else if !flagged {
            fneg.push(report);
            continue;
        }
        if got_classes != want_classes || got_rules != want_rules || got_trips != want_trips {
            wrong.push(report);
        }
    }
    let total: usize = per_kind.values().sum();
    println!("policy corpus: {total} calls; by kind {per_kind:?}; by category {per_category:?}; by host {hosts:?}; {} forms", forms.len());
    for (name, list) in [("false negatives", &fneg), ("false positives", &fpos), ("wrong rules", &wrong)] {
        println!("{name}: {}", list.len());
        for r in list.iter() {
            println!("  {r}");
        }
    }
    assert!(total >= 500, "{total} calls");
    assert!(per_kind.get("irreversible").copied().unwrap_or(0) >= 250);
    assert!(per_kind.get("benign").copied().unwrap_or(0) >= 200);
    for cat in ["delete", "send", "public-post", "wallet-transfer", "core-config", "tripwire"] {
        assert!(per_category.get(cat).copied().unwrap_or(0) >= 10, "category {cat}");
    }
    assert_eq!((fneg.len(), fpos.len(), wrong.len()), (0, 0, 0), "false negatives, false positives, wrong rules");
}
