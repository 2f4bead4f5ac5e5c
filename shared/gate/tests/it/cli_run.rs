//! `qa-gate` subcommands through `cli::run` (argv parsed by the shared
//! parser, the live-pointer read injected): what each one does to the QA
//! state, and that `record` reads the live pointer only for valid reports.

#![allow(clippy::unwrap_used)]

use kijito_files::private;
use kijito_gate::cli::{run, TOOL};
use kijito_gate::QaDir;
use kijito_protocol::argv::{parse, Args, Parsed};
use kijito_protocol::ids::{AbsPath, Digest, SessionId};
use std::os::unix::fs::PermissionsExt;

fn args(argv: &[&str]) -> Args {
    match parse(&TOOL, argv.iter().map(|a| std::ffi::OsString::from(*a))).unwrap() {
        Parsed::Run(a) => a,
        other => panic!("{other:?}"),
    }
}

fn private_dir() -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
    d
}

#[test]
fn invalidate_and_status_act_on_the_named_data_dir() {
    let d = private_dir();
    let data = d.path().to_str().unwrap();
    let never = |_: kijito_protocol::ids::MemoryId, _: Option<&AbsPath>| -> kijito_protocol::Result<Digest> { panic!("no live read") };
    // status creates nothing.
    assert_eq!(run(args(&["status", "--session-id", "s1", "--data-dir", data]), &never).unwrap(), 0);
    assert!(std::fs::symlink_metadata(d.path().join("qa")).is_err());
    let qa = QaDir::open(&AbsPath::from_path(d.path()).unwrap()).unwrap();
    let s = SessionId::parse("s1").unwrap();
    private::write_atomic(&qa.pass(&s), b"{}").unwrap();
    private::write_atomic(&qa.attempt(&s), b"{}").unwrap();
    assert_eq!(run(args(&["invalidate", "--session-id", "s1", "--data-dir", data]), &never).unwrap(), 0);
    assert!(std::fs::symlink_metadata(qa.pass(&s)).is_err() && std::fs::symlink_metadata(qa.attempt(&s)).is_err());
}

#[test]
fn record_reads_the_live_pointer_only_after_the_reports() {
    let d = private_dir();
    let data = d.path().join("data");
    std::fs::create_dir(&data).unwrap();
    std::fs::set_permissions(&data, std::fs::Permissions::from_mode(0o700)).unwrap();
    let t = d.path().join("t.jsonl");
    std::fs::write(&t, b"x").unwrap();
    let digest = Digest::of(b"pointer");
    let base = [
        "record",
        "--session-id",
        "s1",
        "--transcript",
        t.to_str().unwrap(),
        "--data-dir",
        data.to_str().unwrap(),
        "--pointer-id",
        "21813",
        "--pointer-digest",
        digest.as_str(),
    ];
    let asked = std::cell::Cell::new(false);
    let live = |id: kijito_protocol::ids::MemoryId, token: Option<&AbsPath>| -> kijito_protocol::Result<Digest> {
        asked.set(true);
        assert_eq!(id.get(), 21813);
        assert_eq!(token.map(|p| p.as_str().to_owned()), Some("/k/token".to_owned()));
        Err(kijito_protocol::Error::new(kijito_client::http::codes::TIMEOUT, "t"))
    };
    // One report: refused before anything is read.
    let mut one = base.to_vec();
    one.extend(["--cold-boot-report", "/nope/a.json"]);
    let e = run(args(&one), &live).unwrap_err();
    assert_eq!(e.code(), kijito_protocol::codes::cli::MISSING_FLAG.as_str());
    assert!(!asked.get());
    // Two reports that do not exist: refused before the live read.
    let mut two = one.clone();
    two.extend(["--cold-boot-report", "/nope/b.json", "--token-file", "/k/token"]);
    assert_eq!(run(args(&two), &live).unwrap_err().code(), "report_not_found");
    assert!(!asked.get());
    // Two green reports: now the live pointer is read, with the id and token given.
    let now = kijito_gate::now_ms();
    let write = |name: &str, nonce: &str| {
        let pid = kijito_protocol::ids::MemoryId::new(21813).unwrap();
        let lock = kijito_protocol::ids::MessageId::new(1234).unwrap();
        let snapshot = kijito_protocol::manifest::snapshot_digest(pid, &digest, lock, &[]);
        let v = serde_json::json!({
            "schema": kijito_gate::report::SCHEMA, "verdict": "green", "knownBadControl": "passed", "graphEdgesUsed": false,
            "pointerId": 21813, "lockMessageId": 1234, "pointerDigest": digest.as_str(), "snapshotDigest": snapshot.as_str(), "state": "active",
            "task": {"title": "Ship it", "nextAction": null, "done": [], "remaining": [], "doneWhen": ["tests pass"],
                     "gate": {"requiredConsecutiveGreens": 2, "consecutiveGreens": 0, "artifactDigest": null}},
            "anchorDigests": [], "bootNonce": nonce, "verifiedAtMs": now - 1000, "verifierSha256": Digest::of(b"v").as_str(),
        });
        let p = d.path().join(name);
        private::write_atomic(&p, v.to_string().as_bytes()).unwrap();
        p.to_str().unwrap().to_owned()
    };
    let a = write("a.json", "0123456789abcdef0123456789abcdef");
    let b = write("b.json", "fedcba9876543210fedcba9876543210");
    let mut good = base.to_vec();
    good.extend(["--cold-boot-report", &a, "--cold-boot-report", &b, "--token-file", "/k/token"]);
    assert_eq!(run(args(&good), &live).unwrap_err().code(), "kijito_timeout");
    assert!(asked.get());
    assert!(std::fs::symlink_metadata(data.join("qa").join("qa-pass.s1.json")).is_err(), "nothing recorded");
}

fn os(argv: &[&str]) -> Vec<std::ffi::OsString> {
    argv.iter().map(std::ffi::OsString::from).collect()
}

fn never(_: kijito_protocol::ids::MemoryId, _: Option<&AbsPath>) -> kijito_protocol::Result<Digest> {
    panic!("no live read")
}

#[test]
fn main_sends_check_command_to_the_guard_and_the_rest_to_the_parser() {
    let d = private_dir();
    let data = d.path().to_str().unwrap();
    // A subcommand through the shared parser: status runs, exit 0.
    assert_eq!(kijito_gate::cli::main(os(&["status", "--session-id", "s1", "--data-dir", data]), &never), 0);
    assert_eq!(kijito_gate::cli::main(os(&["--version"]), &never), 0);
    // Usage errors are 2: an unknown flag, check-command without its line.
    assert_eq!(kijito_gate::cli::main(os(&["status", "--session-id", "s1", "--bogus"]), &never), 2);
    assert_eq!(kijito_gate::cli::main(os(&["check-command"]), &never), 2);
    // check-command's line is not parsed as flags: a line that only mentions
    // no helper is refused as "not a helper command" (exit 1), not usage.
    assert_eq!(kijito_gate::cli::main(os(&["check-command", "ls --session-id s1"]), &never), 1);
    assert!(std::fs::symlink_metadata(d.path().join("qa")).is_err(), "status created nothing");
}

#[test]
fn check_command_answers_for_the_given_root() {
    use kijito_gate::cli::{check_answer, check_command, CheckAnswer};
    use kijito_protocol::command::{codes, HelperDir};
    let d = private_dir();
    let dir = HelperDir::new(d.path()).unwrap();
    let r = dir.path().to_str().unwrap().to_owned();
    let valid = format!("{r}/qa-gate invalidate --session-id s1 --data-dir /d");
    let root: kijito_protocol::Result<HelperDir> = Ok(dir.clone());
    assert!(matches!(check_answer(&os(&[&valid]), &root).unwrap(), CheckAnswer::Helper));
    assert_eq!(check_command(&os(&[&valid]), &root), 0);
    // Denied: the guard's code.
    let denied = format!("{valid}; rm -rf /");
    match check_answer(&os(&[&denied]), &root).unwrap() {
        CheckAnswer::Deny(e) => assert_eq!(e.code(), codes::METACHARACTER.as_str()),
        other => panic!("{other:?}"),
    }
    assert_eq!(check_command(&os(&[&denied]), &root), 1);
    // Unrelated: allowed by the guard, but the code says why it is no
    // helper command, judged on the line itself.
    for (line, code) in [("/bin/ls -la", codes::UNKNOWN_HELPER), ("ls -la", codes::PROGRAM_NOT_ABSOLUTE)] {
        match check_answer(&os(&[line]), &root).unwrap() {
            CheckAnswer::Unrelated(e) => assert_eq!(e.code(), code.as_str(), "{line}"),
            other => panic!("{line}: {other:?}"),
        }
        assert_eq!(check_command(&os(&[line]), &root), 1, "{line}");
    }
    // An unknown installed root: a helper line is denied, an unrelated one
    // says the root is unknown.
    let unknown: kijito_protocol::Result<HelperDir> = Err(kijito_protocol::Error::new(codes::ROOT_UNKNOWN, "test"));
    match check_answer(&os(&[&valid]), &unknown).unwrap() {
        CheckAnswer::Deny(e) => assert_eq!(e.code(), codes::ROOT_UNKNOWN.as_str()),
        other => panic!("{other:?}"),
    }
    match check_answer(&os(&["/bin/ls -la"]), &unknown).unwrap() {
        CheckAnswer::Unrelated(e) => assert_eq!(e.code(), codes::ROOT_UNKNOWN.as_str()),
        other => panic!("{other:?}"),
    }
    // Exactly one argument.
    assert_eq!(check_answer(&os(&[]), &root).unwrap_err().code(), kijito_protocol::codes::cli::CHECK_COMMAND_USAGE.as_str());
    assert_eq!(check_command(&os(&[&valid, "extra"]), &root), 2);
}
