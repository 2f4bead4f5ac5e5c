//! The user's policy file end to end with real files
//! (docs/policy.md): kijito-files reads `<config home>/kijito-qa/policy.json`
//! (owner-only, not a symlink, the user's own, bounded), kijito-policy
//! parses and applies it, and a write to that very path is core-config and a
//! tripwire for the classifier given the config dir the hook gives it.

#![allow(clippy::unwrap_used)]

use crate::support::isolated;
use kijito_files::config;
use kijito_policy::classify::{rules, tripwires};
use kijito_policy::{classify, Env, ToolCall, UserPolicy};
use serde_json::json;
use std::os::unix::fs::PermissionsExt;

#[test]
fn the_file_kijito_files_reads_is_the_file_the_policy_applies_and_guards() {
    if !isolated::alone(module_path!(), "the_file_kijito_files_reads_is_the_file_the_policy_applies_and_guards") {
        return; // it ran alone in a child process of this binary
    }
    let home = tempfile::tempdir().unwrap();
    // Alone in its own process (support::isolated): no other test sees the variable.
    std::env::set_var("XDG_CONFIG_HOME", home.path());
    let path = config::user_policy_path().unwrap();
    assert_eq!(config::USER_POLICY_FILE, kijito_policy::user::USER_POLICY_FILE);
    assert_eq!(path, home.path().join("kijito-qa").join(kijito_policy::user::USER_POLICY_FILE));
    let config_dir = path.parent().unwrap().to_str().unwrap().to_owned();
    let env = |user_policy: UserPolicy| Env {
        home: "/home/u".into(),
        cwd: "/home/u/p".into(),
        config_dir: Some(config_dir.clone()),
        user_policy,
        ..Env::default()
    };
    let deploy = ToolCall::parse("Bash", &json!({"command": "make deploy"}));

    // No file: the defaults.
    let none = UserPolicy::load(config::read_user_policy()).unwrap();
    assert!(none.is_empty());
    assert!(!classify(&deploy, &env(none)).is_irreversible());

    // The user's own 0600 file adds a rule.
    std::fs::create_dir(path.parent().unwrap()).unwrap();
    std::fs::write(&path, br#"{"schema":"kijito-qa.policy/v1","add":[{"name":"make_deploy","class":"send","risk":"high","program":"make","args":["deploy"]}]}"#).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    let policy = UserPolicy::load(config::read_user_policy()).unwrap();
    let cls = classify(&deploy, &env(policy.clone()));
    assert_eq!(cls.irreversible().iter().map(|h| h.rule).collect::<Vec<_>>(), ["make_deploy"]);

    // Writing that file is core-config and a tripwire.
    let write = ToolCall::parse("Write", &json!({"file_path": path.to_str().unwrap(), "content": "{}"}));
    let cls = classify(&write, &env(policy));
    assert!(cls.hits.iter().any(|h| h.rule == rules::USER_POLICY_WRITE), "{cls:?}");
    assert!(cls.tripwires.iter().any(|t| t.code == tripwires::CONFIG_WRITE), "{cls:?}");

    // Group- or other-writable, or a symlink: refused with a stable code.
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o660)).unwrap();
    assert_eq!(UserPolicy::load(config::read_user_policy()).unwrap_err().code(), "file_permissions_too_open");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    let real = path.with_file_name("real.json");
    std::fs::rename(&path, &real).unwrap();
    std::os::unix::fs::symlink(&real, &path).unwrap();
    assert_eq!(UserPolicy::load(config::read_user_policy()).unwrap_err().code(), "file_is_symlink");
    // A file it cannot parse is refused too (the hook fails closed on it).
    std::fs::remove_file(&path).unwrap();
    std::fs::write(&path, br#"{"schema":"kijito-qa.policy/v1","remove":["no_such_rule"]}"#).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    assert_eq!(UserPolicy::load(config::read_user_policy()).unwrap_err().code(), "policy_user_rule_unknown");
}
