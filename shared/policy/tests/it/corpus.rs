//! The labelled classifier corpus (fixtures/policy/corpus.jsonl):
//! every call of both hosts' shapes is classified and compared with its
//! hand-written label. Prints the false-negative count (an irreversible or
//! tripwire call classified as neither), the false-positive count (a benign
//! call classified irreversible or as a tripwire) and the wrong-rule count
//! (right verdict, but other rules, tripwire codes or classes), per
//! category; all three must be 0.
//!
//! Run: `cargo test -p kijito-policy --test it corpus:: -- --nocapture`

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
        ..Env::default()
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
        for h in &got.hits {
            assert!(
                kijito_policy::classify::rule(h.rule).is_some_and(|(c, _)| c == h.class),
                "{}: rule {} not in RULES as {:?}",
                e["id"],
                h.rule,
                h.class
            );
        }
        let got_classes: BTreeSet<String> = got.classes().iter().map(|c| c.as_str().to_owned()).collect();
        let got_rules: BTreeSet<String> = got.irreversible().iter().map(|h| h.rule.to_owned()).collect();
        let got_trips: BTreeSet<String> = got.tripwires.iter().map(|t| t.code.to_string()).collect();
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
    let benign = per_kind.get("benign").copied().unwrap_or(0);
    println!(
        "false-positive rate: {} of {benign} benign calls ({:.2} %, bound 1 %)",
        fpos.len(),
        100.0 * fpos.len() as f64 / benign.max(1) as f64
    );
    assert!(fpos.len() * 100 <= benign, "more than 1 % of the benign calls flagged");
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

/// The decision over the whole corpus, from the labels: Silent Witness,
/// degraded and one-step without a step deny every call labelled with a
/// mutating class (write, delete, send, public-post, wallet-transfer,
/// core-config, opaque) or a tripwire, and the calls labelled `"halting":
/// "deny"` (off the allow-list); they pass the calls labelled `"halting":
/// "allow"`; normal mode denies exactly
/// the irreversible and tripwire calls, and with a confirmed token only
/// the tripwires; without a latch only the tripwires.
#[test]
fn decisions_by_mode_follow_the_labels() {
    use kijito_policy::{decide, ConsentTarget, LatchMode, Modes, Wake};
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../fixtures/policy/corpus.jsonl");
    let text = std::fs::read_to_string(path).expect("fixtures/policy/corpus.jsonl");
    let env = env();
    let target = ConsentTarget {
        helper_dir: "/opt/kijito-qa/bin",
        workspace: "/home/user/project",
        action_file: "/home/user/a.json",
        session_id: "s1",
        data_dir: "/d",
    };
    let mut denied = [0usize; 5];
    let mut lines = 0;
    let (mut unlabelled_reads, mut reads_off_the_list) = (0usize, 0usize);
    for line in text.lines() {
        let e: Value = serde_json::from_str(line).unwrap();
        let classes: BTreeSet<Class> = strings(&e["expect"]["classes"]).iter().map(|c| Class::parse(c).unwrap()).collect();
        let trip = !strings(&e["expect"]["tripwires"]).is_empty();
        let mutating = classes.iter().any(|c| c.is_mutation());
        let irreversible = classes.iter().any(|c| c.is_irreversible());
        let cls = classify(&ToolCall::parse(e["tool_name"].as_str().unwrap(), &e["tool_input"]), &env);
        // the halting modes' allow-list: a call labelled `"halting": "allow"` passes, `"deny"` is
        // denied; a read without that label may be either (it is counted below)
        let halting = match e["expect"]["halting"].as_str() {
            Some("allow") => {
                assert!(!trip && !mutating, "{}: a mutating call labelled halting allow", e["id"]);
                false
            }
            Some("deny") => true,
            Some(other) => panic!("{}: halting label {other}", e["id"]),
            None if trip || mutating => true,
            None => {
                unlabelled_reads += 1;
                let d = decide(
                    &cls,
                    &Modes { wake: Wake::Clear, latch: LatchMode::SilentWitness, qa_frozen: false, consent_confirmed: false },
                    &target,
                );
                reads_off_the_list += usize::from(!d.allowed());
                !d.allowed()
            }
        };
        let cases = [
            (LatchMode::SilentWitness, false, halting),
            (LatchMode::Degraded, false, halting),
            (LatchMode::OneStepWithoutStep, false, halting),
            (LatchMode::Normal, false, trip || irreversible),
            (LatchMode::Normal, true, trip),
        ];
        for (k, (latch, confirmed, want_deny)) in cases.into_iter().enumerate() {
            let d = decide(&cls, &Modes { wake: Wake::Clear, latch, qa_frozen: false, consent_confirmed: confirmed }, &target);
            assert_eq!(!d.allowed(), want_deny, "{} in {latch:?} (token {confirmed}): {d:?}", e["id"]);
            denied[k] += usize::from(!d.allowed());
        }
        let absent =
            decide(&cls, &Modes { wake: Wake::Clear, latch: LatchMode::Absent, qa_frozen: false, consent_confirmed: false }, &target);
        assert_eq!(!absent.allowed(), trip, "{} without a latch", e["id"]);
        lines += 1;
    }
    println!(
        "decisions over {lines} calls: denied in silent witness {}, degraded {}, one-step without step {}, normal {}, normal with token {}",
        denied[0], denied[1], denied[2], denied[3], denied[4]
    );
    println!(
        "halting modes: {reads_off_the_list} of {unlabelled_reads} read calls without a halting label are off the allow-list (denied)"
    );
}

/// The PreToolUse stdin Codex 0.169 really sent (fixtures/policy/recorded,
/// measured with the tests/hosts harness): `tool_name: "Bash"`,
/// `tool_input: {"command": CMD}` for `exec_command`, also for an
/// `apply_patch` heredoc. Each recorded call is in the corpus with exactly
/// its tool name and input, and is classified as labelled there.
#[test]
fn the_recorded_codex_calls_are_in_the_corpus() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../fixtures/policy");
    let corpus: Vec<Value> =
        std::fs::read_to_string(format!("{dir}/corpus.jsonl")).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let recorded = std::fs::read_to_string(format!("{dir}/recorded/codex-0.169-pretooluse.jsonl")).unwrap();
    let mut n = 0;
    for line in recorded.lines() {
        let stdin: Value = serde_json::from_str(line).unwrap();
        assert_eq!(stdin["hook_event_name"], "PreToolUse");
        let entry = corpus
            .iter()
            .find(|e| e["host"] == "codex" && e["tool_name"] == stdin["tool_name"] && e["tool_input"] == stdin["tool_input"])
            .unwrap_or_else(|| panic!("recorded call not in the corpus: {line}"));
        let got = classify(&ToolCall::parse(stdin["tool_name"].as_str().unwrap(), &stdin["tool_input"]), &env());
        let rules: BTreeSet<String> = got.irreversible().iter().map(|h| h.rule.to_owned()).collect();
        assert_eq!(rules, strings(&entry["expect"]["rules"]), "{line}");
        n += 1;
    }
    assert_eq!(n, 2);
}
