//! PreToolUse's consent path past the latch (docs/protocol.md §8a step 7),
//! in this crate (docs/mutants.md): the consent check runs in a real
//! `memory-latch tool-gate`, the hook's sibling in its helper dir.
//!
//! This binary is its own harness and that sibling: started under the name
//! `memory-latch` (a symlink in the test's helper dir) it is memory-latch,
//! the one line of bins/memory-latch.rs; started with `--pretool DATA BIN`
//! it is the hook (stdin in, its answer out, for the consent mode host
//! test's terminal parent); otherwise it runs the tests one after another.
//! Each test sets the environment the latch reads for its own world, which
//! the sibling inherits, so they share no state.

#![allow(clippy::unwrap_used)]

use kijito_hooks::consent_host::{asked_path, post_tool};
use kijito_hooks::{pretool::pretool, Event, HookEnv, Host};
use kijito_latch::{self as latch, Config, Latch};
use kijito_protocol::command::HelperDir;
use kijito_protocol::ids::{AbsPath, ToolUseId};
use kijito_testkit::world::sid;
use serde_json::{json, Value};
use std::ffi::OsStr;
use std::fs;
use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

fn main() {
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if Path::new(&args[0]).file_name() == Some(OsStr::new("memory-latch")) {
        std::process::exit(kijito_cli::main(&kijito_latch::cli::TOOL, kijito_latch::cli::run));
    }
    if args.get(1).is_some_and(|a| a == "--pretool") {
        let mut stdin = Vec::new();
        std::io::stdin().read_to_end(&mut stdin).unwrap();
        let env = hook_env(Path::new(&args[2]), Path::new(&args[3]));
        print!("{}", pretool(&env, &stdin).unwrap_or_default());
        return;
    }
    let tests: [(&str, fn()); 6] = [
        ("a_consent_the_user_confirmed_passes_the_call_once", a_consent_the_user_confirmed_passes_the_call_once),
        (
            "the_siblings_answer_is_read_up_to_64_kib_and_must_be_a_json_object",
            the_siblings_answer_is_read_up_to_64_kib_and_must_be_a_json_object,
        ),
        ("consent_mode_host_says_why_the_token_flow_still_applies", consent_mode_host_says_why_the_token_flow_still_applies),
        ("consent_mode_host_asks_in_the_hosts_dialog_under_a_terminal", consent_mode_host_asks_in_the_hosts_dialog_under_a_terminal),
        ("the_call_the_user_allowed_is_recorded_once_as_it_ended", the_call_the_user_allowed_is_recorded_once_as_it_ended),
        ("an_asked_record_that_does_not_match_records_nothing", an_asked_record_that_does_not_match_records_nothing),
    ];
    let only = args.get(1).and_then(|a| a.to_str()).filter(|a| !a.starts_with('-'));
    let mut passed = 0;
    for (name, test) in tests.iter().filter(|(n, _)| only.is_none_or(|o| n.contains(o))) {
        test();
        println!("test {name} ... ok");
        passed += 1;
    }
    println!("pretool_consent: {passed} tests passed");
}

fn now_ms() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as u64
}

/// The hooks' environment for Claude Code on `data` with the helper dir `bin`.
fn hook_env(data: &Path, bin: &Path) -> HookEnv {
    HookEnv::new(Host::Claude, Some(AbsPath::from_path(data).unwrap()), None, None, Some(HelperDir::new(bin).unwrap()), now_ms() as i64)
}

/// A private temporary dir with a workspace `ws` holding an initialised
/// latch, a data dir, a config home, and a helper dir `root/bin` for the
/// sibling.
struct World {
    d: tempfile::TempDir,
    ws: PathBuf,
    data: PathBuf,
    bin: PathBuf,
    latch: Latch,
}

impl World {
    fn new() -> World {
        let d = tempfile::tempdir().unwrap();
        fs::set_permissions(d.path(), fs::Permissions::from_mode(0o700)).unwrap();
        // the helper dir's parent is the plugin root, which no call may write
        let [ws, data, root, bin, config] = ["ws", "data", "root", "root/bin", "config"].map(|n| d.path().join(n));
        for dir in [&ws, &data, &root, &bin, &config] {
            fs::create_dir(dir).unwrap();
            fs::set_permissions(dir, fs::Permissions::from_mode(0o700)).unwrap();
        }
        let boot = d.path().join("boot");
        fs::write(&boot, "aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee").unwrap();
        let heads = d.path().join("heads");
        // What the latch reads, here and in the sibling (which inherits it).
        std::env::set_var(latch::head::HEADS_ENV, &heads);
        std::env::set_var("MEMORY_LATCH_BOOT_ID_FILE", &boot);
        std::env::set_var(latch::HMAC_KEY_ENV, "");
        std::env::set_var("XDG_CONFIG_HOME", &config);
        std::env::remove_var(latch::consent::CONSENT_ENV);
        std::env::remove_var(kijito_hooks::consent_host::ENTRYPOINT_ENV);
        let mut c = Config::new(&ws);
        c.boot_id_file = boot;
        c.heads_dir = Some(heads);
        let latch = Latch::open(&c).unwrap();
        latch.init(now_ms(), &latch::InitInput { objective: "o".into(), ..Default::default() }).unwrap();
        World { d, ws, data, bin, latch }
    }

    /// This binary as the `memory-latch` of the helper dir.
    fn with_real_sibling(self) -> World {
        std::os::unix::fs::symlink(std::env::current_exe().unwrap(), self.bin.join("memory-latch")).unwrap();
        self
    }

    /// A shell script as the `memory-latch` of the helper dir.
    fn with_script_sibling(self, body: &str) -> World {
        self.script_sibling(body);
        self
    }

    /// (Re)write the helper dir's `memory-latch` as a shell script.
    fn script_sibling(&self, body: &str) {
        let p = self.bin.join("memory-latch");
        let tmp = self.bin.join(".memory-latch.new");
        fs::write(&tmp, format!("#!/bin/sh\n{body}\n")).unwrap();
        fs::set_permissions(&tmp, fs::Permissions::from_mode(0o700)).unwrap();
        fs::rename(&tmp, &p).unwrap();
    }

    /// The user's consent setting: mode host.
    fn consent_mode_host(&self) {
        let cfg = self.d.path().join("config/kijito-qa/memory-latch-consent.json");
        fs::create_dir_all(cfg.parent().unwrap()).unwrap();
        fs::write(&cfg, json!({"schema": "memory-latch.consent/v1", "mode": "host"}).to_string()).unwrap();
        fs::set_permissions(&cfg, fs::Permissions::from_mode(0o600)).unwrap();
    }

    fn env(&self) -> HookEnv {
        hook_env(&self.data, &self.bin)
    }

    /// The PreToolUse stdin of a Claude Code Bash call in the workspace.
    fn bash(&self, command: &str) -> Vec<u8> {
        json!({"hook_event_name": "PreToolUse", "session_id": "s1", "cwd": self.ws, "tool_name": "Bash",
               "tool_input": {"command": command}, "tool_use_id": "toolu_01"})
        .to_string()
        .into_bytes()
    }

    /// The action files the deny reasons named, by content.
    fn action_files(&self) -> Vec<Vec<u8>> {
        fs::read_dir(self.data.join("actions")).unwrap().map(|e| fs::read(e.unwrap().path()).unwrap()).collect()
    }
}

/// The reason of a deny answer (panics on anything else).
fn denied(answer: Option<String>) -> String {
    let a = answer.expect("a denial");
    let v: Value = serde_json::from_str(&a).unwrap();
    assert_eq!(v["hookSpecificOutput"]["permissionDecision"], "deny", "{a}");
    v["hookSpecificOutput"]["permissionDecisionReason"].as_str().unwrap().to_owned()
}

/// The deny before anything was authorized: the plain instruction, with no
/// consent-check failure and no consent mode host note.
fn assert_plain_consent_request(reason: &str) {
    assert!(reason.contains("policy_consent_required"), "{reason}");
    assert!(!reason.contains("Consent check:") && !reason.contains("Consent mode host"), "{reason}");
}

/// Nothing authorized: the sibling answers `consent_not_authorized` and the
/// hook denies with the plain instruction; once the user confirmed a
/// consent for exactly this call's action file, the call passes, and only
/// once (the sibling consumed it).
fn a_consent_the_user_confirmed_passes_the_call_once() {
    let w = World::new().with_real_sibling();
    let env = w.env();
    let call = w.bash("rm -rf build");
    assert_plain_consent_request(&denied(pretool(&env, &call)));
    let [action] = w.action_files().try_into().unwrap();
    let issued = w.latch.consent_request(now_ms(), &action, "remove build", latch::entry::Risk::High).unwrap();
    for _ in 0..2 {
        // high risk: the user's token twice
        w.latch.user_prompt(now_ms(), &issued.token).unwrap().unwrap();
    }
    assert_eq!(pretool(&env, &call), None);
    assert_plain_consent_request(&denied(pretool(&env, &call)));
    // the flight recorder: each decision "consent", two requests, one spend
    let decisions = w.journal("tool_decision");
    assert_eq!(decisions.len(), 3);
    for d in &decisions {
        assert_eq!(
            (&d["decision"], &d["code"], &d["summary"]),
            (&json!("consent"), &json!("policy_consent_required"), &json!("rm -rf build"))
        );
    }
    let requested = w.journal("consent_requested");
    assert_eq!(requested.len(), 2);
    assert_eq!((&requested[0]["via"], &requested[0]["code"]), (&json!("token"), &Value::Null));
    let [spent] = w.journal("consent_spent").try_into().unwrap();
    assert_eq!(spent["via"], "token");
    assert!(w.journal("consent_refused").is_empty());
}

/// The sibling's answer is one JSON object read whole up to 64 KiB: a
/// refusal of exactly that size reaches the reason with its code and
/// message; a JSON answer that is not an object is malformed output.
fn the_siblings_answer_is_read_up_to_64_kib_and_must_be_a_json_object() {
    let head = r#"{"passed":false,"code":"consent_expired","message":""#;
    let tail = "\"}\n";
    let message = "m".repeat(64 * 1024 - head.len() - tail.len());
    let w = World::new();
    let answer = w.d.path().join("answer.json");
    fs::write(&answer, format!("{head}{message}{tail}")).unwrap();
    assert_eq!(fs::metadata(&answer).unwrap().len(), 64 * 1024);
    let w = w.with_script_sibling(&format!("cat {}", answer.display()));
    let reason = denied(pretool(&w.env(), &w.bash("rm -rf build")));
    assert!(reason.contains(&format!("(Consent check: consent_expired: {message}.)")), "{}", &reason[..300.min(reason.len())]);
    let [refused] = w.journal("consent_refused").try_into().unwrap();
    assert_eq!((&refused["via"], &refused["code"]), (&json!("token"), &json!("consent_expired")));
    assert!(w.journal("consent_requested").is_empty());

    let w = World::new().with_script_sibling("echo '[1]'");
    let reason = denied(pretool(&w.env(), &w.bash("rm -rf build")));
    let exe = w.bin.join("memory-latch");
    assert!(
        reason.contains(&format!("(Consent check: policy_consent_check_failed: {} tool-gate answered malformed output.)", exe.display())),
        "{reason}"
    );
}

/// Consent mode host where the host cannot ask (no Claude Code TUI here):
/// the token flow applies and the reason says why, for a high-risk call
/// that the host's dialog never takes, and for another one.
fn consent_mode_host_says_why_the_token_flow_still_applies() {
    let w = World::new().with_real_sibling();
    w.consent_mode_host();
    let env = w.env();
    let reason = denied(pretool(&env, &w.bash("rm -rf build")));
    assert!(reason.contains("policy_consent_required"), "{reason}");
    assert!(reason.contains(" (Consent mode host: this host cannot ask the user itself, so the token flow applies.)"), "{reason}");
    let reason = denied(pretool(&env, &w.bash("git push --force origin main")));
    assert!(reason.contains(" (Consent mode host: a high-risk call still needs the user's token, twice.)"), "{reason}");
}

/// The host stand-in (as tests/it/consent_host.rs has it): puts a new
/// pseudo-terminal on its own fd 0, as Claude Code's TUI has, and runs
/// argv[1:] with the stdin it was given, passing its stdout on.
const TUI_PARENT: &str = r#"
import os, subprocess, sys
data = sys.stdin.buffer.read()
m, s = os.openpty()
os.dup2(s, 0)
r = subprocess.run(sys.argv[1:], input=data, stdout=subprocess.PIPE, timeout=60)
sys.stdout.buffer.write(r.stdout)
sys.exit(r.returncode)
"#;

/// Consent mode host on Claude Code's TUI (`CLAUDE_CODE_ENTRYPOINT=cli`,
/// a terminal on the hook's parent's fd 0): an irreversible call below high
/// risk is put to the user in the host's dialog (`ask`), with an asked
/// record kept for its PostToolUse; the token check does not run.
fn consent_mode_host_asks_in_the_hosts_dialog_under_a_terminal() {
    let w = World::new().with_script_sibling("exit 9");
    w.consent_mode_host();
    let v = w.ask_under_a_terminal("rm -rf build");
    assert_eq!(v["hookSpecificOutput"]["permissionDecision"], "ask", "{v}");
    let reason = v["hookSpecificOutput"]["permissionDecisionReason"].as_str().unwrap();
    assert!(reason.contains("policy_host_consent") && reason.contains("rm -rf build"), "{reason}");
    let asked: Vec<_> = fs::read_dir(w.data.join("actions"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("asked-"))
        .collect();
    assert_eq!(asked.len(), 1, "{asked:?}");
}

impl World {
    /// PreToolUse for `command` (tool_use_id `toolu_01`) run as the hook of
    /// Claude Code's TUI (`CLAUDE_CODE_ENTRYPOINT=cli`, a terminal on its
    /// parent's fd 0): its answer.
    fn ask_under_a_terminal(&self, command: &str) -> Value {
        let mut child = Command::new("python3")
            .arg("-c")
            .arg(TUI_PARENT)
            .arg(std::env::current_exe().unwrap())
            .arg("--pretool")
            .args([&self.data, &self.bin])
            .env(kijito_hooks::consent_host::ENTRYPOINT_ENV, "cli")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(&self.bash(command)).unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "{out:?}");
        serde_json::from_slice(&out.stdout).unwrap()
    }

    /// The asked record of `toolu_01` (the ask's), taken out of its place.
    fn take_asked_record(&self) -> Value {
        let path = asked_path(&self.data, &sid("s1"), &tuid("toolu_01"));
        let rec = serde_json::from_slice(&fs::read(&path).unwrap()).unwrap();
        fs::remove_file(&path).unwrap();
        rec
    }

    /// `rec` as the asked record of session `s1`'s call `id`, owner-only.
    fn put_asked_record(&self, id: &str, rec: &Value) {
        let path = asked_path(&self.data, &sid("s1"), &tuid(id));
        fs::write(&path, format!("{rec}\n")).unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(0o600)).unwrap();
    }

    /// The PostToolUse (or PostToolUseFailure) stdin of a Claude Code Bash call.
    fn post(&self, event: Event, id: &str, command: &str) -> Vec<u8> {
        json!({"hook_event_name": event.name(), "session_id": "s1", "cwd": self.ws, "tool_name": "Bash",
               "tool_input": {"command": command}, "tool_use_id": id, "tool_response": {"stdout": ""}})
        .to_string()
        .into_bytes()
    }

    /// The manifest's `host_consent` entries, as text.
    fn host_consent_entries(&self) -> Vec<String> {
        fs::read_to_string(&self.latch.paths().manifest)
            .unwrap()
            .lines()
            .filter(|l| l.contains("\"host_consent\""))
            .map(str::to_owned)
            .collect()
    }

    /// The journal's lines of session `s1` of `kind`.
    fn journal(&self, kind: &str) -> Vec<Value> {
        kijito_testkit::journal_lines(&self.data, "s1", kind)
    }
}

fn tuid(s: &str) -> ToolUseId {
    ToolUseId::parse(s).unwrap()
}

/// The `systemMessage` the post hook prints when the call could not be recorded.
fn not_recorded(code: &str, message: &str) -> String {
    json!({"systemMessage": format!(
        "kijito-qa: the call you allowed ran, but the memory-latch manifest could not record it ({code}: {message})."
    )})
    .to_string()
}

/// Consent mode host, after the user's Yes: the call's PostToolUse records
/// it in the manifest through the real sibling (`host_consent`, "ran"), and
/// its PostToolUseFailure as "failed"; the asked record is used once, and
/// a post event with no asked record records nothing.
fn the_call_the_user_allowed_is_recorded_once_as_it_ended() {
    let w = World::new().with_real_sibling();
    w.consent_mode_host();
    let env = w.env();
    assert_eq!(w.ask_under_a_terminal("rm -rf build")["hookSpecificOutput"]["permissionDecision"], "ask");
    let asked = asked_path(&w.data, &sid("s1"), &tuid("toolu_01"));
    assert!(asked.exists());
    assert_eq!(post_tool(&env, Event::PostToolUse, &w.post(Event::PostToolUse, "toolu_01", "rm -rf build")), None);
    assert!(!asked.exists(), "used once");
    let [entry] = w.host_consent_entries().try_into().unwrap();
    assert!(entry.contains("tool call ran after the user's Yes") && entry.contains("tool_use_id toolu_01"), "{entry}");
    let [spent] = w.journal("consent_spent").try_into().unwrap();
    assert_eq!((&spent["via"], &spent["tool"]), (&json!("host"), &json!("Bash")), "{spent}");
    // the same event again: no record, nothing recorded
    assert_eq!(post_tool(&env, Event::PostToolUse, &w.post(Event::PostToolUse, "toolu_01", "rm -rf build")), None);
    assert_eq!(w.host_consent_entries().len(), 1);
    // a call that failed
    w.ask_under_a_terminal("rm -rf build");
    let rec = with(&w.take_asked_record(), "toolUseId", json!("toolu_02"));
    w.put_asked_record("toolu_02", &rec);
    assert_eq!(post_tool(&env, Event::PostToolUseFailure, &w.post(Event::PostToolUseFailure, "toolu_02", "rm -rf build")), None);
    let entries = w.host_consent_entries();
    assert_eq!(entries.len(), 2);
    assert!(entries[1].contains("tool call failed after the user's Yes") && entries[1].contains("tool_use_id toolu_02"), "{}", entries[1]);
}

/// `rec` with the field `k` set to `v`.
fn with(rec: &Value, k: &str, v: Value) -> Value {
    let mut rec = rec.clone();
    rec[k] = v;
    rec
}

/// An asked record is taken at face value only when it is whole: its
/// schema, session and call match the post event, it is at most an hour
/// old (and at most a minute ahead of the clock), at most 8 KiB, and it
/// names the action hash of the call that ran. Otherwise nothing is
/// recorded, and the user is told unless the record had merely expired.
/// A sibling that does not record is reported with its code.
fn an_asked_record_that_does_not_match_records_nothing() {
    let w = World::new().with_script_sibling(r#"echo '{"recorded":false,"code":"latch_x","message":"m"}'"#);
    w.consent_mode_host();
    let env = w.env();
    w.ask_under_a_terminal("rm -rf build");
    let rec = w.take_asked_record();
    let now = env.now_ms;
    let n = std::cell::Cell::new(10);
    let next_id = || {
        n.set(n.get() + 1);
        format!("toolu_{}", n.get())
    };
    // the record `rec` of a new call: what post_tool answers for it
    let answer = |rec: Value, command: &str| {
        let id = next_id();
        w.put_asked_record(&id, &with(&rec, "toolUseId", json!(id)));
        let answer = post_tool(&env, Event::PostToolUse, &w.post(Event::PostToolUse, &id, command));
        assert!(!asked_path(&w.data, &sid("s1"), &tuid(&id)).exists(), "used once, whatever it held");
        answer
    };
    let sibling_refused = Some(not_recorded("latch_x", "m"));
    assert_eq!(answer(rec.clone(), "rm -rf build"), sibling_refused);
    let other_call = Some(not_recorded("policy_host_consent", "the call that ran is not the call the user was asked about"));
    assert_eq!(answer(rec.clone(), "rm -rf dist"), other_call);
    // malformed: another schema, session or call
    let malformed = Some(not_recorded("policy_host_consent", "the asked record is malformed"));
    assert_eq!(answer(with(&rec, "schema", json!("kijito-qa.host-ask/v2")), "rm -rf build"), malformed);
    assert_eq!(answer(with(&rec, "sessionId", json!("s2")), "rm -rf build"), malformed);
    let id = next_id();
    w.put_asked_record(&id, &with(&rec, "toolUseId", json!("toolu_99")));
    assert_eq!(post_tool(&env, Event::PostToolUse, &w.post(Event::PostToolUse, &id, "rm -rf build")), malformed);
    // the age bounds, to the millisecond: an hour old, a minute ahead
    let at = |ms: i64| with(&rec, "atMs", json!(ms));
    assert_eq!(answer(at(now - 3_600_000), "rm -rf dist"), other_call);
    assert_eq!(answer(at(now - 3_600_001), "rm -rf dist"), None);
    assert_eq!(answer(at(now + 60_000), "rm -rf dist"), other_call);
    assert_eq!(answer(at(now + 60_001), "rm -rf dist"), None);
    // the size bound: 8 KiB whole (the record padded with spaces)
    for (size, expect) in [(8 * 1024, other_call.clone()), (8 * 1024 + 1, None)] {
        let id = next_id();
        let body = with(&rec, "toolUseId", json!(id)).to_string();
        let path = asked_path(&w.data, &sid("s1"), &tuid(&id));
        fs::write(&path, format!("{body}{}", " ".repeat(size - body.len()))).unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(0o600)).unwrap();
        let got = post_tool(&env, Event::PostToolUse, &w.post(Event::PostToolUse, &id, "rm -rf dist"));
        match expect {
            Some(e) => assert_eq!(got, Some(e)),
            None => assert!(got.as_deref().is_some_and(|g| g.contains("(file_too_large: ")), "{got:?}"),
        }
    }
    // the sibling's answer without a code, and no answer at all
    w.script_sibling(r#"echo '{"recorded":false}'"#);
    assert_eq!(answer(rec.clone(), "rm -rf build"), Some(not_recorded("latch_error", "")));
    w.script_sibling("exit 9");
    let got = answer(rec.clone(), "rm -rf build").unwrap();
    assert!(
        got.starts_with(
            r#"{"systemMessage":"kijito-qa: the call you allowed ran, but the memory-latch manifest could not record it (policy_consent_check_failed: "#
        ),
        "{got}"
    );
    assert!(w.host_consent_entries().is_empty());
}
