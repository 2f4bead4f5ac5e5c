//! The adversarial sets (fixtures/policy/adversarial/, written apart from
//! the rules to get past them) replayed through this crate's own
//! `classify` and `decide`, so that a change to the classifier that lets
//! an attack through, or stops an ordinary call, fails in the crate that
//! owns the rule (the root harness's `policy_adversarial` runs the same
//! sets through the installed `pretool-hook`, which cargo-mutants' crate
//! runs do not see).
//!
//! Each entry runs in a fixed world: the workspace holds a latch, the
//! config dir, the state dir, the data dir and the plugin root are where
//! the root harness puts them, paths are judged as written (no file is
//! looked up: [`Lexical`]). Entries that need what only the hook has (a
//! file made by their `setup`, a session's earlier calls in `before`) are
//! left to the root harness, and [`HOOK_ONLY`] names, with why, each other
//! entry the hook answers differently (the test checks that list is exact).

#![allow(clippy::unwrap_used)]

use kijito_policy::paths::PathFacts;
use kijito_policy::{classify, decide, ConsentTarget, Env, LatchMode, Modes, ToolCall, Wake};
use serde_json::Value;
use std::sync::Arc;

const HOME: &str = "/home/user";
const WS: &str = "/home/user/project";
const CFG: &str = "/home/user/.config/kijito-qa";
const DATA: &str = "/home/user/.local/share/kijito-qa";
const HEADS: &str = "/home/user/latch-heads";
const ROOT: &str = "/opt/kijito-qa/codex";
const BIN: &str = "/opt/kijito-qa/codex/bin";

/// Paths as written: the workspace is the one latch root, nothing else is
/// looked up.
#[derive(Debug)]
struct Lexical;

impl PathFacts for Lexical {
    fn real(&self, abs: &str) -> Option<String> {
        Some(abs.to_owned())
    }
    fn expand(&self, _pattern: &str) -> Option<Vec<String>> {
        None
    }
    fn same_file_protected(&self, _abs: &str) -> Option<String> {
        None
    }
    fn holds_latch(&self, abs: &str) -> bool {
        abs == WS
    }
    fn latch_roots(&self) -> Vec<String> {
        vec![WS.to_owned()]
    }
    fn which(&self, _name: &str) -> Option<String> {
        None
    }
    fn is_hook_copy(&self, _abs: &str) -> bool {
        false
    }
}

/// The placeholders, as the root harness fills them (a shell expansion
/// `${HOME}` is left as written).
fn fill(s: &str) -> String {
    s.replace("${", "\u{1}")
        .replace("{WS}", WS)
        .replace("{HOME}", HOME)
        .replace("{CFG}", CFG)
        .replace("{BIN}", BIN)
        .replace("{DATA}", DATA)
        .replace("{HEADS}", HEADS)
        .replace('\u{1}', "${")
}

fn fill_value(v: &Value) -> Value {
    match v {
        Value::String(s) => Value::String(fill(s)),
        Value::Array(a) => Value::Array(a.iter().map(fill_value).collect()),
        Value::Object(o) => Value::Object(o.iter().map(|(k, x)| (k.clone(), fill_value(x))).collect()),
        other => other.clone(),
    }
}

/// The hook's command guard (kijito-protocol's command grammar, which
/// PreToolUse runs before the policy) stops these lines; the policy alone
/// does not.
const GUARD: &str = "stopped by the hook's command guard (command_metacharacter) before the policy";

/// Entries without `setup` or `before` whose answer here is the other one,
/// each for a reason outside this crate: `(set, id, why)`. The test checks
/// that each still differs (a fixed one leaves the list).
const HOOK_ONLY: &[(&str, &str, &str)] = &[
    ("calls.jsonl", "pointer_float", POINTER),
    ("calls.jsonl", "pointer_string", POINTER),
    ("calls.jsonl", "pointer_string_float", POINTER),
    ("calls.jsonl", "pointer_array", POINTER),
    ("calls.jsonl", "pointer_key_case", POINTER),
    ("calls.jsonl", "pointer_other_server", POINTER),
    ("calls.jsonl", "pointer_fade", POINTER),
    ("calls.jsonl", "pointer_correct", POINTER),
    ("pass2.jsonl", "p2_xdg_default_policy", GUARD),
    ("pass2.jsonl", "p2_for_loop_write", GUARD),
    ("pass2.jsonl", "p2_while_read_write", GUARD),
    ("pass2.jsonl", "p2_printf_v_path", GUARD),
    ("pass2.jsonl", "p2_prompt_hook_copy_run", "the copy is found by content (FsFacts::is_hook_copy) once `cp` made it"),
    ("unparsed.jsonl", "ref_mcp_command_input", GUARD),
    ("writes.jsonl", "p5_dd_of_glob_loop", GUARD),
    ("unparsed.jsonl", "pua_patch_content_icon", "an honest limit, stopped by the hook too (policy_adversarial's UNPARSED_KNOWN_STOPS)"),
];

/// Which memory id is the agent's pointer is the hook's config
/// (`pointerId`, pretool.rs `pointer_write`).
const POINTER: &str = "the configured pointer id is the hook's (pretool.rs pointer_write)";

/// Whether this crate stops the entry (deny or ask), as the hook would
/// with no consent given.
fn stops(e: &Value) -> bool {
    let cwd = e["cwd"].as_str().map(fill).unwrap_or_else(|| WS.to_owned());
    let env = Env {
        home: HOME.into(),
        cwd,
        config_dir: Some(CFG.into()),
        data_dir: Some(DATA.into()),
        plugin_roots: vec![ROOT.into(), "/opt/kijito-qa".into()],
        state_dirs: vec![HEADS.into()],
        host_rules_dirs: vec![format!("{HOME}/.codex/rules")],
        facts: Some(Arc::new(Lexical)),
        ..Env::default()
    };
    let input = fill_value(&e["input"]);
    let call = ToolCall::parse(e["tool"].as_str().unwrap(), &input);
    let env = Env { mcp_paths: kijito_policy::paths::mcp_paths(&input), ..env };
    let cls = classify(&call, &env);
    let latch = match e["mode"].as_str().unwrap() {
        "normal" => LatchMode::Normal,
        "silent_witness" => LatchMode::SilentWitness,
        m => panic!("{}: mode {m}", e["id"]),
    };
    let modes = Modes { latch, wake: Wake::Clear, qa_frozen: false, consent_confirmed: false };
    let target = ConsentTarget { helper_dir: BIN, workspace: WS, action_file: "/home/user/a.json", session_id: "s1", data_dir: DATA };
    !decide(&cls, &modes, &target).allowed()
}

#[test]
fn the_adversarial_sets_through_classify_and_decide() {
    let (mut runs, mut with_files) = (0, 0);
    let (mut wrong, mut listed) = (Vec::new(), Vec::new());
    for set in ["calls.jsonl", "pass2.jsonl", "unparsed.jsonl", "interp.jsonl", "writes.jsonl"] {
        let path = format!("{}/../../fixtures/policy/adversarial/{set}", env!("CARGO_MANIFEST_DIR"));
        let text = std::fs::read_to_string(&path).expect("an adversarial set");
        for line in text.lines() {
            let e: Value = serde_json::from_str(line).unwrap();
            let id = e["id"].as_str().unwrap().to_owned();
            // Files made first, or a session's earlier calls: the hook's world.
            if e.get("setup").is_some() || e.get("before").is_some() {
                with_files += 1;
                continue;
            }
            runs += 1;
            let want = e["expect"] == "stop";
            let got = stops(&e);
            let hook_only = HOOK_ONLY.iter().any(|(s, i, _)| *s == set && *i == id);
            if hook_only {
                listed.push(format!("{set} {id}"));
            }
            if (got != want) != hook_only {
                wrong.push(format!(
                    "{set} {id}: expected {}{}, got {}: {}",
                    e["expect"],
                    if hook_only { " (listed as hook-only)" } else { "" },
                    if got { "stop" } else { "pass" },
                    e["input"]
                ));
            }
        }
    }
    println!("adversarial sets through classify and decide: {runs} calls ({} of them the hook's alone), {with_files} with files or earlier calls left to the root harness; {} wrong", listed.len(), wrong.len());
    for w in &wrong {
        println!("  {w}");
    }
    assert_eq!(listed.len(), HOOK_ONLY.len(), "every entry of HOOK_ONLY is in a set: {listed:?}");
    assert!(wrong.is_empty(), "{} wrong", wrong.len());
    assert!(runs >= 600, "{runs} calls");
}
