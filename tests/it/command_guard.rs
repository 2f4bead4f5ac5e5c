//! `qa-gate check-command` (docs/protocol.md §8) through the real binary:
//! the installed root in tests is the directory of the built helpers.
#![allow(clippy::unwrap_used)]

use crate::support;
use support::gate as support_gate;

use kijito_protocol::command::{self, HelperDir};
use support_gate::*;

const D: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
const S: &str = "01a2295e-6929-7981-9da7-935145fb97be";

fn root() -> String {
    helper_dir().to_str().unwrap().to_owned()
}

fn check(w: &World, line: &str) -> (i32, String) {
    let out = w.run(QA_GATE, &["check-command", line], b"");
    (out.status.code().unwrap(), failure_code(&out))
}

/// Valid commands, one or more per helper.
fn valid(r: &str) -> Vec<String> {
    vec![
        format!("{r}/pointer-digest --pointer-id 21813"),
        format!("{r}/pointer-digest --pointer-id 21813 --token-file /home/u/.config/kijito-inbox-monitor/token"),
        format!("{r}/pointer-snapshot --pointer-id 21813 --lock-message-id 1234 --report-file /d/qa/reports/a.json"),
        format!("{r}/pointer-snapshot --pointer-id 21813 --lock-message-id 1234 --expected-pointer-digest {D} --expected-snapshot-digest {D} --report-file /d/r.json"),
        format!("{r}/pointer-snapshot --report-file /d/r.json --lock-message-id 1234 --pointer-id 9007199254740991"),
        format!("{r}/pointer-publish --pointer-id 21813 --lock-message-id 1234 --expected-pointer-digest {D} --content-file /tmp/m.json --rollback-file /d/rb.json"),
        format!("{r}/pointer-publish --pointer-id 21813 --lock-message-id 1234 --expected-pointer-digest {D} --restore-from /d/rb-old.json --rollback-file /d/rb.json --token-file /t"),
        format!("{r}/qa-gate record --session-id {S} --transcript /home/u/.codex/sessions/x.jsonl --data-dir /d --pointer-id 21813 --pointer-digest {D} --cold-boot-report /d/a.json --cold-boot-report /d/b.json"),
        format!("{r}/qa-gate invalidate --session-id {S} --data-dir /d"),
        format!("{r}/qa-gate status --session-id {S} --data-dir /d"),
        format!("{r}/qa-gate   status --session-id {S}  --data-dir /d"),
        format!("{r}/kijito-compact request --session-id {S} --data-dir /d"),
        format!("{r}/kijito-compact status --data-dir /d --session-id {S}"),
    ]
}

#[test]
fn check_command_cases() {
    let w = World::new();
    let r = root();
    for line in valid(&r) {
        let (code, err) = check(&w, &line);
        assert_eq!(code, 0, "{line}: {err}");
    }
    let base = format!("{r}/qa-gate invalidate --session-id {S} --data-dir /d");
    let bad: Vec<(String, &str)> = vec![
        // metacharacters
        (format!("{base}; rm -rf /"), "command_metacharacter"),
        (format!("{base} | tee /tmp/x"), "command_metacharacter"),
        (format!("{base} && echo ok"), "command_metacharacter"),
        (format!("{base} &"), "command_metacharacter"),
        (format!("{r}/qa-gate invalidate --session-id $SESSION --data-dir /d"), "command_metacharacter"),
        (format!("{r}/qa-gate invalidate --session-id `id` --data-dir /d"), "command_metacharacter"),
        (format!("{base} > /tmp/out"), "command_metacharacter"),
        (format!("{base} < /dev/null"), "command_metacharacter"),
        (format!("{base} 2>&1"), "command_metacharacter"),
        (format!("{r}/qa-gate invalidate --session-id {S} --data-dir '/d'"), "command_metacharacter"),
        (format!("{r}/qa-gate invalidate --session-id {S} --data-dir \"/d\""), "command_metacharacter"),
        (format!("{r}/qa-gate invalidate --session-id {S} --data-dir ~/d"), "command_metacharacter"),
        (format!("{r}/qa-gate invalidate --session-id {S} --data-dir /d/*"), "command_metacharacter"),
        (format!("{base}\nid"), "command_control_character"),
        (format!("{base}\tx"), "command_control_character"),
        // environment assignments
        (format!("FOO=1 {base}"), "command_env_assignment"),
        (format!("LD_PRELOAD=/x.so {base}"), "command_env_assignment"),
        // relative program, `..`, another root, unknown helper
        (format!("qa-gate invalidate --session-id {S} --data-dir /d"), "command_program_not_absolute"),
        (format!("./qa-gate invalidate --session-id {S} --data-dir /d"), "command_program_not_absolute"),
        (format!("{r}/../debug/qa-gate invalidate --session-id {S} --data-dir /d"), "command_path_traversal"),
        (format!("/opt/other-root/bin/qa-gate invalidate --session-id {S} --data-dir /d"), "command_foreign_root"),
        (format!("{r}/bin/qa-gate invalidate --session-id {S} --data-dir /d"), "command_foreign_root"),
        (format!("{r}/qa-gate-evil invalidate --session-id {S} --data-dir /d"), "command_unknown_helper"),
        (format!("{r}/precompact --host codex"), "command_unknown_helper"),
        // the agent never re-points the config (hostile memory could ask it to)
        (format!("{r}/kijito-setup --pointer-id 666 --lock-message-id 666 --force"), "command_unknown_helper"),
        (format!("{r}/sh -c id"), "command_unknown_helper"),
        // subcommands
        (format!("{r}/qa-gate"), "command_missing_subcommand"),
        (format!("{r}/qa-gate check-command x"), "command_unknown_subcommand"),
        (format!("{r}/kijito-compact worker --session-id {S} --data-dir /d --nonce 0123456789abcdef0123456789abcdef"), "command_unknown_subcommand"),
        (format!("{r}/kijito-compact codex"), "command_unknown_subcommand"),
        (format!("{r}/kijito-compact"), "command_missing_subcommand"),
        (format!("{r}/kijito-compact request --session-id {S}"), "command_missing_flag"),
        (format!("{r}/kijito-compact request --session-id {S} --data-dir /d --nonce 0123456789abcdef0123456789abcdef"), "command_unknown_flag"),
        (format!("/tmp/kijito-compact request --session-id {S} --data-dir /d"), "command_foreign_root"),
        // extra words, duplicate and unknown flags, missing values/flags
        (format!("{base} extra"), "command_extra_word"),
        (format!("{base} --data-dir /e"), "command_duplicate_flag"),
        (format!("{r}/pointer-digest --pointer-id 1 --pointer-id 2"), "command_duplicate_flag"),
        (format!("{r}/qa-gate record --session-id {S} --transcript /t --data-dir /d --pointer-id 1 --pointer-digest {D} --cold-boot-report /a --cold-boot-report /b --cold-boot-report /c"), "command_duplicate_flag"),
        (format!("{base} --force"), "command_unknown_flag"),
        (format!("{r}/pointer-digest --pointer-id=21813"), "command_unknown_flag"),
        (format!("{r}/pointer-digest --pointer-id"), "command_missing_value"),
        (format!("{r}/pointer-digest --token-file /t"), "command_missing_flag"),
        (format!("{r}/qa-gate record --session-id {S} --transcript /t --data-dir /d --pointer-id 1 --pointer-digest {D} --cold-boot-report /a"), "command_missing_flag"),
        (format!("{r}/pointer-publish --pointer-id 1 --lock-message-id 2 --expected-pointer-digest {D} --rollback-file /r"), "command_flag_conflict"),
        (format!("{r}/pointer-publish --pointer-id 1 --lock-message-id 2 --expected-pointer-digest {D} --content-file /c --restore-from /x --rollback-file /r"), "command_flag_conflict"),
        // digests, ids, session ids, paths
        (format!("{r}/pointer-snapshot --pointer-id 1 --lock-message-id 2 --expected-pointer-digest {} --report-file /r", D.to_uppercase()), "command_invalid_digest"),
        (format!("{r}/pointer-snapshot --pointer-id 1 --lock-message-id 2 --expected-snapshot-digest {} --report-file /r", &D[..63]), "command_invalid_digest"),
        (format!("{r}/pointer-digest --pointer-id 021813"), "command_invalid_id"),
        (format!("{r}/pointer-digest --pointer-id +21813"), "command_invalid_id"),
        (format!("{r}/pointer-digest --pointer-id -1"), "command_invalid_id"),
        (format!("{r}/pointer-digest --pointer-id 0"), "command_invalid_id"),
        (format!("{r}/pointer-digest --pointer-id 9007199254740992"), "command_invalid_id"),
        (format!("{r}/pointer-snapshot --pointer-id 1 --lock-message-id 01 --report-file /r"), "command_invalid_id"),
        (format!("{r}/qa-gate invalidate --session-id -abc --data-dir /d"), "command_invalid_session_id"),
        (format!("{r}/qa-gate invalidate --session-id a_b --data-dir /d"), "command_invalid_session_id"),
        (format!("{r}/qa-gate invalidate --session-id {S} --data-dir relative/d"), "command_invalid_path"),
        (format!("{r}/qa-gate invalidate --session-id {S} --data-dir /d/../etc"), "command_path_traversal"),
        (format!("{r}/pointer-snapshot --pointer-id 1 --lock-message-id 2 --report-file /d/./r"), "command_path_traversal"),
        (String::new(), "command_empty"),
        ("   ".to_owned(), "command_empty"),
        ("x".repeat(9000), "command_too_long"),
    ];
    assert!(bad.len() + valid(&r).len() >= 40);
    for (line, want) in &bad {
        let (code, err) = check(&w, line);
        assert_eq!(code, 1, "{line:?} must be refused");
        assert_eq!(err, format!("kijito_qa_gate_failed:{want}"), "{line:?}");
    }
    // argv shape of check-command itself
    let out = w.run(QA_GATE, &["check-command"], b"");
    assert_eq!(out.status.code(), Some(2));
    let out = w.run(QA_GATE, &["check-command", &valid(&r)[0], "extra"], b"");
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn library_agrees_with_the_binary_and_the_tool_tables() {
    let dir = HelperDir::new(&helper_dir()).unwrap();
    for line in valid(&root()) {
        let cmd = command::check_command(&line, &dir).unwrap();
        // Every accepted flag is one the helper's cli::Tool declares.
        let flags = match (cmd.helper, cmd.subcommand) {
            ("pointer-digest", _) => command::POINTER_DIGEST_FLAGS,
            ("pointer-snapshot", _) => command::POINTER_SNAPSHOT_FLAGS,
            ("pointer-publish", _) => command::POINTER_PUBLISH_FLAGS,
            ("qa-gate", "record") => command::QA_GATE_RECORD_FLAGS,
            ("qa-gate", "invalidate") => command::QA_GATE_INVALIDATE_FLAGS,
            ("qa-gate", "status") => command::QA_GATE_STATUS_FLAGS,
            ("kijito-compact", "request") => command::KIJITO_COMPACT_REQUEST_FLAGS,
            ("kijito-compact", "status") => command::KIJITO_COMPACT_STATUS_FLAGS,
            other => panic!("unexpected {other:?}"),
        };
        for (flag, _) in &cmd.args {
            assert!(flags.iter().any(|f| f.name == *flag), "{flag}");
        }
    }
    // qa-gate's own argv parser accepts what the guard accepts (same table):
    // a guard-valid status command runs (exit 0) with the real binary.
    let w = World::new();
    let line = format!("{}/qa-gate status --session-id {S} --data-dir {}", root(), w.data.display());
    assert!(command::check_command(&line, &dir).is_ok());
    let words: Vec<&str> = line.split(' ').collect();
    let out = w.run(words[0], &words[1..], b"");
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
}
