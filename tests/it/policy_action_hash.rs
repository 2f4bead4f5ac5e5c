//! (Here, not in shared/policy: the root package already links kijito-latch, so the policy crate needs no dev-dependency on it.)
//! The policy's action hash equals memory-latch's for the same action: the
//! bytes the hook writes as the action file hash, through
//! `kijito_latch::action_hash` (what `consent request --action-file` binds
//! the token to), to exactly `kijito_policy::action_hash`.

use serde_json::json;

#[test]
fn policy_action_hash_equals_memory_latch_action_hash() {
    let calls = [
        ("Bash", json!({"command": "rm -rf build", "description": "clean the build"})),
        ("shell", json!({"command": ["bash", "-lc", "git push --force origin main"], "workdir": "/w", "timeout_ms": 10000})),
        ("Write", json!({"file_path": "/w/.github/workflows/ci.yml", "content": "on: push\n  jobs:   \r\n\n"})),
        ("mcp__slack__send_message", json!({"channel": "#x", "text": "héllo \u{2028} \t tab\n"})),
        ("apply_patch", json!({"input": "*** Begin Patch\n*** Delete File: a.rs\n*** End Patch\n"})),
    ];
    for (tool, input) in calls {
        let bytes = kijito_policy::action_bytes(tool, &input);
        let latch = kijito_latch::action_hash(&bytes).expect("memory-latch accepts the action file");
        assert_eq!(kijito_policy::action_hash(tool, &input), latch, "{tool}");
        // the bytes are already canonical: memory-latch's canonical form changes nothing
        assert_eq!(kijito_latch::canonical_action(&bytes).unwrap().as_bytes(), &bytes[..]);
    }
}
