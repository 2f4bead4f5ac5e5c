//! The user's policy file applied by the classifier (docs/policy.md, "The
//! user's policy file"): rules removed, re-risked and added (program with
//! argument patterns, MCP tool-name pattern, path prefix for core-config),
//! and a write to the file itself is core-config and a tripwire.

#![allow(clippy::unwrap_used)]

use kijito_policy::classify::{rules as r, tripwires};
use kijito_policy::{classify, decide, Class, Classification, ConsentTarget, Env, LatchMode, Modes, Risk, ToolCall, UserPolicy, Wake};
use serde_json::{json, Value};

const FILE: &str = r#"{
  "schema": "kijito-qa.policy/v1",
  "remove": ["rm_files"],
  "risk": {"git_reset_hard": "high", "http_write": "low"},
  "add": [
    {"name": "make_deploy", "class": "send", "risk": "high", "program": "make", "args": ["deploy*"]},
    {"name": "jira_transition", "class": "public-post", "risk": "medium", "mcp_tool": "mcp__jira__transition_*"},
    {"name": "infra_repo", "risk": "medium", "path_prefix": "~/infra"}
  ]
}"#;

fn env(policy: UserPolicy) -> Env {
    Env {
        home: "/home/user".into(),
        cwd: "/home/user/project".into(),
        config_dir: Some("/home/user/.config/kijito-qa".into()),
        data_dir: Some("/home/user/.local/share/kijito-qa".into()),
        plugin_roots: vec!["/opt/kijito-qa".into()],
        user_policy: policy,
        ..Env::default()
    }
}

fn user() -> Env {
    env(UserPolicy::parse(FILE.as_bytes()).unwrap())
}

fn call(tool: &str, input: Value, env: &Env) -> Classification {
    classify(&ToolCall::parse(tool, &input), env)
}

fn bash(line: &str, env: &Env) -> Classification {
    call("Bash", json!({ "command": line }), env)
}

fn rules(c: &Classification) -> Vec<&'static str> {
    c.irreversible().iter().map(|h| h.rule).collect()
}

#[test]
fn a_removed_rule_makes_a_write_that_the_halting_modes_still_deny() {
    let defaults = env(UserPolicy::default());
    assert_eq!(rules(&bash("rm notes.txt", &defaults)), [r::RM_FILES]);
    let c = bash("rm notes.txt", &user());
    assert!(!c.is_irreversible(), "{c:?}");
    assert!(c.hits.iter().any(|h| h.rule == r::USER_RULE_REMOVED && h.class == Class::Write));
    let target = ConsentTarget {
        helper_dir: "/opt/kijito-qa/bin",
        workspace: "/home/user/project",
        action_file: "/tmp/a.json",
        session_id: "s1",
        data_dir: "/d",
    };
    let normal = Modes { wake: Wake::Clear, latch: LatchMode::Normal, qa_frozen: false, consent_confirmed: false };
    assert!(decide(&c, &normal, &target).allowed());
    assert!(!decide(&c, &Modes { latch: LatchMode::SilentWitness, ..normal }, &target).allowed());
    // Other rules stay: `rm -r` is rm_recursive_force, not rm_files.
    assert_eq!(rules(&bash("rm -r build", &user())), [r::RM_RECURSIVE_FORCE]);
    // In a compound line only the removed rule goes.
    assert_eq!(rules(&bash("rm a.txt && git push --force", &user())), [r::GIT_PUSH_FORCE]);
}

#[test]
fn the_users_risk_is_the_one_the_consent_command_asks_for() {
    let target = ConsentTarget {
        helper_dir: "/opt/kijito-qa/bin",
        workspace: "/home/user/project",
        action_file: "/tmp/a.json",
        session_id: "s1",
        data_dir: "/d",
    };
    let defaults = env(UserPolicy::default());
    assert_eq!(bash("git reset --hard HEAD~1", &defaults).risk(), Risk::Medium);
    let c = bash("git reset --hard HEAD~1", &user());
    assert_eq!(c.risk(), Risk::High);
    assert!(kijito_policy::consent_command(&c, &target).ends_with("--risk high --session-id s1 --data-dir /d"));
    assert_eq!(bash("curl -X POST https://x/y", &defaults).risk(), Risk::Medium);
    assert_eq!(bash("curl -X POST https://x/y", &user()).risk(), Risk::Low);
    // The highest risk of the call's rules, defaults and user's mixed.
    assert_eq!(bash("curl -X POST https://x/y; git push --force", &user()).risk(), Risk::High);
}

#[test]
fn added_rules_fire_through_wrappers_mcp_names_and_written_paths() {
    let u = user();
    for line in ["make deploy-prod", "sudo -u ci make -j4 deploy", "bash -c 'cd x && make deploy'", "echo go | xargs make deploy-eu"] {
        let c = bash(line, &u);
        assert_eq!(rules(&c), ["make_deploy"], "{line}");
        assert_eq!(c.risk(), Risk::High, "{line}");
    }
    assert!(rules(&bash("make test", &u)).is_empty());
    assert!(rules(&bash("make deploy-prod", &env(UserPolicy::default()))).is_empty());
    let m = call("mcp__jira__transition_issue", json!({"issue": "K-1"}), &u);
    assert_eq!(rules(&m), ["jira_transition"]);
    assert!(m.classes().contains(&Class::PublicPost));
    assert!(rules(&call("mcp__jira__get_issue", json!({}), &u)).is_empty());
    for c in [
        call("Write", json!({"file_path": "/home/user/infra/main.tf", "content": "x"}), &u),
        call("Edit", json!({"file_path": "~/infra/modules/a.tf", "old_string": "a", "new_string": "b"}), &u),
        bash("echo x > ~/infra/vars.tf", &u),
        bash("cp a.tf /home/user/infra/", &u),
    ] {
        assert_eq!(rules(&c), ["infra_repo"], "{c:?}");
        assert_eq!(c.risk(), Risk::Medium);
    }
    assert!(rules(&call("Write", json!({"file_path": "/home/user/infrastructure/x", "content": ""}), &u)).is_empty());
}

#[test]
fn a_write_to_the_policy_file_is_core_config_and_a_tripwire() {
    for e in [env(UserPolicy::default()), user()] {
        for c in [
            call("Write", json!({"file_path": "/home/user/.config/kijito-qa/policy.json", "content": "{}"}), &e),
            bash("echo '{}' > ~/.config/kijito-qa/policy.json", &e),
            bash("cp /tmp/p.json /home/user/.config/kijito-qa/policy.json", &e),
            bash("rm ~/.config/kijito-qa/policy.json", &e),
        ] {
            assert!(c.hits.iter().any(|h| h.rule == r::USER_POLICY_WRITE && h.class == Class::CoreConfig), "{c:?}");
            assert!(c.tripwires.iter().any(|t| t.code == tripwires::CONFIG_WRITE), "{c:?}");
        }
    }
    // Reading it is neither.
    let c = bash("cat ~/.config/kijito-qa/policy.json", &user());
    assert!(!c.is_irreversible() && c.tripwires.is_empty());
}
