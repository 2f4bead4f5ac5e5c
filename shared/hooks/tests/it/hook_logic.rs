//! The hook logic through the library (kijito_hooks::run with an injected
//! clock, a private temporary data dir and a helper dir), one answer at a
//! time: what each event prints for each state of the QA gate, and the
//! fail-closed answers for input that cannot be read.

#![allow(clippy::unwrap_used)]

use kijito_gate::Pass;
use kijito_hooks::{messages, Event, Host};
use kijito_hooks::{run, HookEnv};
use kijito_protocol::command::HelperDir;
use kijito_protocol::ids::{AbsPath, MemoryId, MessageId, SessionId};
use kijito_testkit::world::{pass_for, Layout, World, NONCE, T0};
use serde_json::{json, Value};
use std::os::unix::fs::PermissionsExt;

/// kijito-testkit's QA world laid out for the hooks ([`Layout::HOOKS`]: a
/// private data dir, its QA dir, a helper dir `bin`, `sess-1`).
fn world() -> World {
    World::laid_out(Layout::HOOKS)
}

/// What the hooks read from a [`World`]: their environment, their stdin and
/// the session's pass.
trait HookWorld {
    fn env(&self, host: Host, now: i64) -> HookEnv;
    fn stdin(&self, event: &str, extra: Value) -> Vec<u8>;
    /// The pass of `sess-1` recorded at `at`, written to the QA dir.
    fn pass(&self, at: i64) -> Pass;
}

impl HookWorld for World {
    fn env(&self, host: Host, now: i64) -> HookEnv {
        HookEnv::new(host, Some(self.data.clone()), None, None, Some(HelperDir::new(&self.path("bin")).unwrap()), now)
            .with_ledger_dir(self.qa.ledger_dir().map(std::path::Path::to_path_buf))
    }
    fn stdin(&self, event: &str, extra: Value) -> Vec<u8> {
        let mut v = json!({"hook_event_name": event, "session_id": "sess-1", "transcript_path": self.transcript.as_str()});
        for (k, x) in extra.as_object().unwrap() {
            v[k] = x.clone();
        }
        v.to_string().into_bytes()
    }
    fn pass(&self, at: i64) -> Pass {
        self.write_pass(&self.s, at, NONCE);
        pass_for(self, self.s.as_str(), at, NONCE)
    }
}

fn sid() -> SessionId {
    kijito_testkit::world::sid("sess-1")
}

fn json_of(s: &str) -> Value {
    serde_json::from_str(s).unwrap()
}

fn context(reply: Option<String>) -> String {
    let v = json_of(&reply.expect("a reply"));
    v["hookSpecificOutput"]["additionalContext"].as_str().unwrap().to_owned()
}

#[test]
fn precompact_on_codex_says_what_happened() {
    let w = world();
    let env = w.env(Host::Codex, T0);
    let pre = w.stdin("PreCompact", json!({"trigger": "auto"}));
    let unattested = run::precompact(&env, &pre).unwrap();
    assert_eq!(
        json_of(&unattested),
        json!({"continue": true, "systemMessage": messages::fill(messages::PRECOMPACT_UNATTESTED, "pass_missing")})
    );
    w.pass(T0);
    let attested = run::precompact(&env, &pre).unwrap();
    assert_eq!(json_of(&attested), json!({"continue": true, "systemMessage": messages::PRECOMPACT_ATTESTED}));
    // Unreadable stdin: still an answer, UNATTESTED with the code.
    let bad = run::precompact(&env, b"{").unwrap();
    assert_eq!(json_of(&bad)["systemMessage"], messages::fill(messages::PRECOMPACT_UNATTESTED, "hook_stdin_invalid_json"));
}

#[test]
fn precompact_on_claude_speaks_only_to_the_summariser_when_attested() {
    let w = world();
    let env = w.env(Host::Claude, T0);
    let pre = w.stdin("PreCompact", json!({"trigger": "manual"}));
    assert_eq!(run::precompact(&env, &pre), None);
    let p = w.pass(T0);
    let text = run::precompact(&env, &pre).expect("summary request");
    for line in [
        format!("kijito-pointer-id: {}", p.pointer_id),
        format!("kijito-lock-message-id: {}", p.lock_message_id),
        format!("kijito-pointer-digest: {}", p.pointer_digest),
        format!("kijito-snapshot-digest: {}", p.snapshot_digest),
    ] {
        assert!(text.lines().any(|l| l == line), "{line} in {text}");
    }
    let bin = w.dir.path().join("bin/pointer-snapshot");
    let resume = text.lines().find(|l| l.starts_with("kijito-resume-command: ")).unwrap();
    assert!(
        resume.starts_with(&format!(
            "kijito-resume-command: {} --pointer-id 21813 --lock-message-id 1234 --expected-pointer-digest {}",
            bin.display(),
            p.pointer_digest
        )),
        "{resume}"
    );
    assert_eq!(run::precompact(&env, b"{"), None);
    // No helper dir: nothing to print.
    let w = world();
    let mut env = w.env(Host::Claude, T0);
    env.helpers = None;
    w.pass(T0);
    assert_eq!(run::precompact(&env, &w.stdin("PreCompact", json!({}))), None);
}

#[test]
fn the_summary_request_needs_the_ticket_of_this_attempt() {
    let w = world();
    let env = w.env(Host::Claude, T0);
    let qa = &w.qa;
    w.pass(T0);
    let a = kijito_gate::precompact(qa, &sid(), Some(&w.transcript), "auto", T0).unwrap();
    assert!(kijito_hooks::summary::request_text(&env, qa, &sid(), &a).is_some());
    let mut other = a.clone();
    other.compaction_nonce = Some("f".repeat(32));
    assert_eq!(kijito_hooks::summary::request_text(&env, qa, &sid(), &other), None);
    let mut unattested = a.clone();
    unattested.attested = false;
    assert_eq!(kijito_hooks::summary::request_text(&env, qa, &sid(), &unattested), None);
    std::fs::remove_file(qa.ticket(&sid())).unwrap();
    assert_eq!(kijito_hooks::summary::request_text(&env, qa, &sid(), &a), None);
}

#[test]
fn postcompact_claims_once() {
    let w = world();
    let env = w.env(Host::Codex, T0);
    let post = w.stdin("PostCompact", json!({"trigger": "auto"}));
    assert_eq!(run::postcompact(&env, &post), r#"{"continue":true}"#);
    w.pass(T0);
    run::precompact(&env, &w.stdin("PreCompact", json!({}))).unwrap();
    assert_eq!(json_of(&run::postcompact(&env, &post)), json!({"continue": true, "systemMessage": messages::POSTCOMPACT_ATTESTED}));
    assert_eq!(run::postcompact(&env, &post), r#"{"continue":true}"#, "claimed already");
    // Unattested.
    run::precompact(&env, &w.stdin("PreCompact", json!({}))).unwrap();
    assert_eq!(json_of(&run::postcompact(&env, &post))["systemMessage"], messages::fill(messages::POSTCOMPACT_UNATTESTED, "pass_missing"));
    // Unreadable.
    assert_eq!(
        json_of(&run::postcompact(&env, b"[]"))["systemMessage"],
        messages::fill(messages::POSTCOMPACT_FAILED, "hook_stdin_not_object")
    );
}

#[test]
fn session_start_after_compaction_delivers_the_reentry_once() {
    let w = world();
    let env = w.env(Host::Codex, T0);
    let start = w.stdin("SessionStart", json!({"source": "compact"}));
    // A compaction no PreCompact recorded (not run, or killed before its
    // first write) still gets its re-entry: UNATTESTED.
    let t = context(run::session(&env, Event::SessionStart, &start));
    assert!(t.starts_with("kijito-qa re-entry after compaction: UNATTESTED (session sess-1). Reason: compaction_unrecorded."), "{t}");
    // with the commands and the compaction paragraph of the session's pin
    // (none here: no SessionStart(startup) pinned it)
    let request = format!("{} request --session-id sess-1 --data-dir {}", w.dir.path().join("bin/kijito-compact").display(), w.data);
    assert!(
        t.contains(&format!(
            "\n\n- Right after `qa-gate record` succeeds, request the compaction (the last action of the turn):\n  {request}\n"
        )),
        "{t}"
    );
    assert!(
        t.ends_with(
            "Compaction adapter: no adapter owns this session (not in tmux, not under `kijito-compact codex`), so the request will answer \
             no_safe_trigger."
        ),
        "{t}"
    );
    w.pass(T0);
    run::precompact(&env, &w.stdin("PreCompact", json!({}))).unwrap();
    // SessionStart claims first when PostCompact did not.
    let t = context(run::session(&env, Event::SessionStart, &start));
    assert!(t.starts_with("kijito-qa re-entry after compaction: ATTESTED (session sess-1)."), "{t}");
    assert!(t.contains(&format!("{} --pointer-id 21813", w.dir.path().join("bin/pointer-snapshot").display())), "{t}");
    assert!(t.contains("\nNo hook witnessed the two cold boots (bootsWitnessed: false): "), "{t}");
    assert!(kijito_hooks::text::boots_line(Some(true)).ends_with("run by two distinct subagents (bootsWitnessed: true)."));
    assert_eq!(run::session(&env, Event::SessionStart, &start), None, "delivered once");
    // Unattested.
    run::precompact(&env, &w.stdin("PreCompact", json!({}))).unwrap();
    let t = context(run::session(&env, Event::SessionStart, &start));
    assert!(t.starts_with("kijito-qa re-entry after compaction: UNATTESTED (session sess-1). Reason: pass_missing."), "{t}");
}

#[test]
fn an_unreadable_session_start_that_may_follow_compaction_is_unattested() {
    let w = world();
    let env = w.env(Host::Codex, T0);
    let unattested = |reply: Option<String>, code: &str| {
        let t = context(reply);
        assert!(t.starts_with("kijito-qa re-entry after compaction: UNATTESTED."), "{t}");
        assert!(t.contains(&format!("({code})")), "{t}");
    };
    unattested(
        run::session(&env, Event::SessionStart, br#"{"hook_event_name":"SessionStart","source":"compact"}"#),
        "hook_session_id_invalid",
    );
    unattested(run::session(&env, Event::SessionStart, br#"{"hook_event_name":"SessionStart"}"#), "hook_session_id_invalid");
    unattested(run::session(&env, Event::SessionStart, b"not json"), "hook_stdin_invalid_json");
    assert_eq!(run::session(&env, Event::SessionStart, br#"{"hook_event_name":"SessionStart","source":"startup"}"#), None);
    // The other events answer nothing for unreadable stdin.
    assert_eq!(run::session(&env, Event::Stop, b"not json"), None);
    assert_eq!(run::session(&env, Event::UserPromptSubmit, b"not json"), None);
    // A stdin that could not be read at all.
    let e = || Err(kijito_protocol::Error::new(kijito_hooks::codes::STDIN_TOO_LARGE, "big"));
    unattested(run::session_stdin(&env, Event::SessionStart, e()), "hook_stdin_too_large");
    assert_eq!(run::session_stdin(&env, Event::Stop, e()), None);
    assert_eq!(run::session_stdin(&env, Event::UserPromptSubmit, e()), None);
    let deny = json_of(&run::session_stdin(&env, Event::PreToolUse, e()).unwrap());
    assert_eq!(deny["hookSpecificOutput"]["permissionDecision"], "deny");
    assert!(deny["hookSpecificOutput"]["permissionDecisionReason"].as_str().unwrap().contains("hook_stdin_too_large"));
    // A stdin that was read goes through.
    assert_eq!(run::session_stdin(&env, Event::Stop, Ok(b"not json".to_vec())), None);
    assert!(run::session_stdin(&env, Event::SessionStart, Ok(w.stdin("SessionStart", json!({"source": "clear"})))).is_some());
}

#[test]
fn session_start_prints_the_commands() {
    let w = world();
    let env = w.env(Host::Codex, T0);
    let t = context(run::session(&env, Event::SessionStart, &w.stdin("SessionStart", json!({"source": "clear"}))));
    assert!(t.starts_with(&format!("kijito-qa (trusted hook output) for session sess-1, data dir {}.", w.data)), "{t}");
    assert!(t.contains("No pointer is configured"), "{t}");
    assert!(
        t.contains(&format!("{} invalidate --session-id sess-1 --data-dir {}", w.dir.path().join("bin/qa-gate").display(), w.data)),
        "{t}"
    );
    // The rollback dir is created owner-only.
    let rb = w.qa.path().as_path().join("rollback");
    assert_eq!(std::fs::metadata(&rb).unwrap().permissions().mode() & 0o777, 0o700);
    // A pending re-entry goes first.
    w.pass(T0);
    run::precompact(&env, &w.stdin("PreCompact", json!({}))).unwrap();
    run::postcompact(&env, &w.stdin("PostCompact", json!({})));
    let t = context(run::session(&env, Event::SessionStart, &w.stdin("SessionStart", json!({"source": "clear"}))));
    assert!(t.starts_with("kijito-qa re-entry after compaction: ATTESTED"), "{t}");
    assert!(t.contains("\n\nkijito-qa (trusted hook output)"), "{t}");
    // Without a helper dir: the commands are unavailable, said plainly.
    let mut env = w.env(Host::Codex, T0);
    env.helpers = None;
    let t = context(run::session(&env, Event::SessionStart, &w.stdin("SessionStart", json!({"source": "clear"}))));
    assert!(t.starts_with("kijito-qa: the helper commands are unavailable (command_root_unknown:"), "{t}");
}

#[test]
fn user_prompt_submit_delivers_a_pending_reentry_and_records_the_turn() {
    let w = world();
    let env = w.env(Host::Codex, T0);
    let ups = w.stdin("UserPromptSubmit", json!({"prompt": "hello"}));
    assert_eq!(run::session(&env, Event::UserPromptSubmit, &ups), None);
    let turn = kijito_compact::trigger::read_turn(&w.qa, &sid()).unwrap().unwrap();
    assert_eq!((turn.state, turn.at_ms), (kijito_compact::trigger::TurnState::Running, T0));
    w.pass(T0);
    run::precompact(&env, &w.stdin("PreCompact", json!({}))).unwrap();
    run::postcompact(&env, &w.stdin("PostCompact", json!({})));
    let v = json_of(&run::session(&env, Event::UserPromptSubmit, &ups).unwrap());
    assert_eq!(v["hookSpecificOutput"]["hookEventName"], "UserPromptSubmit");
    assert!(v["hookSpecificOutput"]["additionalContext"].as_str().unwrap().starts_with("kijito-qa re-entry after compaction: ATTESTED"));
    assert_eq!(run::session(&env, Event::UserPromptSubmit, &ups), None, "once");
    // prompt-hook's two entries deliver it the same way
    for entry in ["prompt", "prompt_stdin"] {
        w.pass(T0);
        run::precompact(&env, &w.stdin("PreCompact", json!({}))).unwrap();
        run::postcompact(&env, &w.stdin("PostCompact", json!({})));
        let reply = if entry == "prompt" { run::prompt(&env, &ups) } else { run::prompt_stdin(&env, Ok(ups.clone())) };
        assert!(context(reply).starts_with("kijito-qa re-entry after compaction: "), "{entry}");
        assert_eq!(run::prompt(&env, &ups), None, "{entry}: once");
    }
    // A continuity-break prompt gets the recovery protocol.
    let broke = w.stdin("UserPromptSubmit", json!({"prompt": "you forgot what we were doing"}));
    assert!(run::session(&env, Event::UserPromptSubmit, &broke).is_some());
    // with the session's cwd: the exact recover command, naming this session
    let ws = tempfile::tempdir().unwrap();
    let broke = w.stdin("UserPromptSubmit", json!({"prompt": "you forgot what we were doing", "cwd": ws.path()}));
    let recover = format!(
        "{} recover --workspace {} --session-id sess-1 --data-dir {}",
        w.dir.path().join("bin/memory-latch").display(),
        ws.path().display(),
        w.data
    );
    let t = context(run::session(&env, Event::UserPromptSubmit, &broke));
    assert!(t.contains(&recover), "{t}");
    // A subagent's prompt does not touch the session's turn record.
    let w = world();
    let env = w.env(Host::Codex, T0);
    run::session(&env, Event::UserPromptSubmit, &w.stdin("UserPromptSubmit", json!({"agent_id": "a1"})));
    assert_eq!(kijito_compact::trigger::read_turn(&w.qa, &sid()).unwrap(), None);
}

#[test]
fn stop_reminds_of_a_waiting_pass() {
    let w = world();
    let env = w.env(Host::Codex, T0 + 60_000);
    let stop = w.stdin("Stop", json!({}));
    assert_eq!(run::session(&env, Event::Stop, &stop), None);
    assert_eq!(kijito_compact::trigger::read_turn(&w.qa, &sid()).unwrap().unwrap().state, kijito_compact::trigger::TurnState::Ended);
    w.pass(T0);
    let v = json_of(&run::session(&env, Event::Stop, &stop).unwrap());
    let expected = messages::fill(messages::STOP_WAITING, "29").replacen(
        "<advice>",
        "run `kijito-compact request` (or ask the user to run /compact) so re-entry is attested",
        1,
    );
    assert_eq!(v, json!({"systemMessage": expected}));
    // A requested compaction changes the advice.
    let qa = &w.qa;
    kijito_compact::trigger::write_pin(
        qa,
        &kijito_compact::trigger::Pin {
            session_id: sid(),
            via: kijito_compact::trigger::Via::CodexAppServer { adapter_id: NONCE.into(), socket: AbsPath::parse("/run/x.sock").unwrap() },
            pinned_at_ms: T0,
        },
    )
    .unwrap();
    kijito_compact::trigger::create_request(qa, &sid(), T0 + 1).unwrap();
    let v = json_of(&run::session(&env, Event::Stop, &stop).unwrap());
    assert!(v["systemMessage"].as_str().unwrap().ends_with("; compaction was requested; the adapter starts it now"), "{v}");
    // Near the end of its life: 0 minutes, never negative.
    let env = w.env(Host::Codex, T0 + kijito_gate::PASS_MAX_AGE_MS);
    assert!(json_of(&run::session(&env, Event::Stop, &stop).unwrap())["systemMessage"].as_str().unwrap().contains("about 0 more min"));
    // Stale: refused, with the code.
    let env = w.env(Host::Codex, T0 + kijito_gate::PASS_MAX_AGE_MS + 1);
    assert_eq!(
        json_of(&run::session(&env, Event::Stop, &stop).unwrap()),
        json!({"systemMessage": messages::fill(messages::STOP_REFUSED, "pass_stale")})
    );
}

fn bash(w: &World, command: Value) -> Vec<u8> {
    w.stdin("PreToolUse", json!({"tool_name": "Bash", "tool_input": {"command": command}}))
}

fn denied(reply: Option<String>) -> String {
    let v = json_of(&reply.expect("a deny"));
    assert_eq!(v["hookSpecificOutput"]["hookEventName"], "PreToolUse");
    assert_eq!(v["hookSpecificOutput"]["permissionDecision"], "deny");
    v["hookSpecificOutput"]["permissionDecisionReason"].as_str().unwrap().to_owned()
}

#[test]
fn pre_tool_use_guards_every_shell_form() {
    let w = world();
    let env = w.env(Host::Claude, T0);
    let bin = w.dir.path().join("bin");
    assert_eq!(run::session(&env, Event::PreToolUse, &bash(&w, json!("ls -la"))), None);
    let ok = format!("{}/qa-gate status --session-id sess-1", bin.display());
    assert_eq!(run::session(&env, Event::PreToolUse, &bash(&w, json!(ok))), None);
    let why = denied(run::session(&env, Event::PreToolUse, &bash(&w, json!(format!("{ok}; echo INJECTED")))));
    assert!(why.starts_with("kijito-qa command guard: denied (command_metacharacter:"), "{why}");
    assert!(why.contains(&format!("{}/<helper>", bin.display())), "{why}");
    // The argv forms.
    assert_eq!(run::session(&env, Event::PreToolUse, &bash(&w, json!(["ls", "-la"]))), None);
    denied(run::session(&env, Event::PreToolUse, &bash(&w, json!(["bash", "-lc", "qa-gate status"]))));
    denied(run::session(&env, Event::PreToolUse, &bash(&w, json!(["/bin/sh", "-c", "qa-gate status"]))));
    denied(run::session(
        &env,
        Event::PreToolUse,
        &bash(&w, json!([format!("{}/qa-gate", bin.display()), "status", "--session-id", "a b"])),
    ));
    assert!(denied(run::session(&env, Event::PreToolUse, &bash(&w, json!(["ls", 7])))).contains("command_argv_invalid"));
    assert!(denied(run::session(&env, Event::PreToolUse, &bash(&w, json!({"a": 1})))).contains("command_argv_invalid"));
    // `cmd` is read as well as `command`.
    let cmd = w.stdin("PreToolUse", json!({"tool_name": "exec_command", "tool_input": {"cmd": "qa-gate status"}}));
    denied(run::session(&env, Event::PreToolUse, &cmd));
    // A tool that is not a shell and names no command: allowed.
    let read = w.stdin("PreToolUse", json!({"tool_name": "Read", "tool_input": {"file_path": "/etc/hosts"}}));
    assert_eq!(run::session(&env, Event::PreToolUse, &read), None);
    // Unreadable tool calls are denied.
    assert!(denied(run::session(&env, Event::PreToolUse, b"{")).contains("hook_stdin_invalid_json"));
    let no_session = br#"{"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"ls"}}"#;
    assert!(denied(run::session(&env, Event::PreToolUse, no_session)).contains("hook_session_id_invalid"));
    let not_shell = br#"{"hook_event_name":"PreToolUse","tool_name":"Read","tool_input":{"file_path":"/x"}}"#;
    assert_eq!(run::session(&env, Event::PreToolUse, not_shell), None);
    // No helper dir: every line that reaches a helper is denied.
    let mut env = w.env(Host::Claude, T0);
    env.helpers = None;
    assert!(denied(run::session(&env, Event::PreToolUse, &bash(&w, json!(ok)))).contains("command_root_unknown"));
    assert!(denied(run::session(&env, Event::PreToolUse, &bash(&w, json!(ok)))).contains("<root>/bin/<helper>"));
    // The watchdog's answer.
    assert!(denied(run::session_fallback(Event::PreToolUse)).contains("hook_timeout"));
    for e in [Event::SessionStart, Event::UserPromptSubmit, Event::Stop] {
        assert_eq!(run::session_fallback(e), None);
    }
}

#[test]
fn events_replies_and_bounds() {
    for e in [Event::SessionStart, Event::UserPromptSubmit, Event::Stop, Event::PreToolUse, Event::PostToolUse, Event::PostToolUseFailure] {
        assert_eq!(Event::parse(e.name()).unwrap(), e);
    }
    assert_eq!(Event::parse("PreCompact").unwrap_err().code(), kijito_protocol::codes::cli::INVALID_EVENT.as_str());
    let max = kijito_hooks::MAX_STDIN_BYTES;
    assert_eq!(kijito_hooks::read_bounded(&vec![b' '; max][..]).unwrap().len(), max);
    assert_eq!(kijito_hooks::read_bounded(&vec![b' '; max + 1][..]).unwrap_err().code(), "hook_stdin_too_large");
    assert_eq!(kijito_hooks::parse_input(b" \n\t", "Stop").unwrap_err().code(), "hook_stdin_empty");
    let mut big = br#"{"hook_event_name":"Stop","session_id":"a","x":""#.to_vec();
    big.resize(max + 1, b'a');
    assert_eq!(kijito_hooks::parse_input(&big, "Stop").unwrap_err().code(), "hook_stdin_too_large");
    let i = kijito_hooks::parse_input(
        br#"{"hook_event_name":"PreToolUse","session_id":"a","transcript_path":"rel/x","trigger":"auto","tool_name":"Bash","tool_input":{"command":"ls"}}"#,
        "PreToolUse",
    )
    .unwrap();
    assert_eq!((i.event.as_str(), i.trigger.as_deref(), i.tool_name.as_deref()), ("PreToolUse", Some("auto"), Some("Bash")));
    assert_eq!(i.transcript_path, None, "a relative transcript path is no path");
    assert_eq!(i.tool_input, Some(json!({"command": "ls"})));
    assert_eq!(kijito_hooks::parse_input(br#"{"session_id":"a"}"#, "Stop").unwrap_err().code(), "hook_event_mismatch");
    // Replies.
    assert_eq!(
        kijito_hooks::context_reply(Event::SessionStart, "t"),
        r#"{"hookSpecificOutput":{"hookEventName":"SessionStart","additionalContext":"t"}}"#
    );
    assert_eq!(kijito_hooks::postcompact_reply(Some("a\tb ")), r#"{"continue":true,"systemMessage":"a b"}"#);
    assert!(kijito_hooks::deny_reply("because").contains(r#""permissionDecisionReason":"because""#));
    assert!(kijito_hooks::deny_reply("  ").contains("denied by the kijito-qa command guard"));
    // one_line counts characters, not bytes.
    let wide = "é".repeat(messages::MAX_MESSAGE_CHARS);
    assert_eq!(kijito_hooks::one_line(&wide), wide);
    assert_eq!(kijito_hooks::one_line(&format!("{wide}é")), format!("{wide}…"));
    assert_eq!(kijito_hooks::one_line("  a\u{7}b  "), "a b");
    assert_eq!(kijito_hooks::guarded(|| -> u8 { panic!("{}", String::from("owned")) }).unwrap_err(), "owned");
    assert_eq!(kijito_hooks::guarded(|| 7), Ok(7));
    assert!(kijito_hooks::WATCHDOG_SESSION < std::time::Duration::from_secs(kijito_hooks::HOOK_TIMEOUT_SECS));
    assert!(kijito_hooks::WATCHDOG < kijito_hooks::WATCHDOG_SESSION);
}

#[test]
fn message_templates_fill_their_one_slot() {
    assert_eq!(messages::fill(messages::PRECOMPACT_UNATTESTED, "r"), "kijito-qa: compaction UNATTESTED (r); compaction proceeds");
    assert_eq!(messages::fill(messages::POSTCOMPACT_FAILED, "c"), "kijito-qa: PostCompact could not claim (c)");
    assert!(messages::fill(messages::STOP_WAITING, "12").contains("valid for about 12 more min"));
}

#[test]
fn texts() {
    let h = HelperDir::new(std::path::Path::new("/opt/kq/bin")).unwrap();
    let report = AbsPath::parse("/d/qa/reports/r.json").unwrap();
    let p = MemoryId::new(5).unwrap();
    let l = MessageId::new(6).unwrap();
    assert_eq!(
        kijito_hooks::text::snapshot_command(&h, p, l, None, None, &report),
        "/opt/kq/bin/pointer-snapshot --pointer-id 5 --lock-message-id 6 --report-file /d/qa/reports/r.json"
    );
    assert_eq!(
        kijito_hooks::text::snapshot_command(&h, p, l, Some("D1"), Some("D2"), &report),
        "/opt/kq/bin/pointer-snapshot --pointer-id 5 --lock-message-id 6 --expected-pointer-digest D1 --expected-snapshot-digest D2 --report-file /d/qa/reports/r.json"
    );
    let paths = kijito_hooks::text::FreshPaths {
        report_a: AbsPath::parse("/d/a.json").unwrap(),
        report_b: AbsPath::parse("/d/b.json").unwrap(),
        rollback: AbsPath::parse("/d/rb.json").unwrap(),
    };
    let data = AbsPath::parse("/d").unwrap();
    let t = kijito_hooks::text::commands_text(
        &sid(),
        Some(&AbsPath::parse("/t/x.jsonl").unwrap()),
        Some((p, l)),
        Some("bad config"),
        &h,
        &data,
        &paths,
    );
    assert!(t.contains("Configuration problem: bad config.\n"), "{t}");
    assert!(t.contains("Pointer id 5, lock message id 6."), "{t}");
    assert!(t.contains("/opt/kq/bin/qa-gate record --session-id sess-1 --transcript /t/x.jsonl --data-dir /d --pointer-id 5"), "{t}");
    assert!(t.contains("--cold-boot-report /d/a.json --cold-boot-report /d/b.json"), "{t}");
    assert!(t.contains("--rollback-file /d/rb.json"), "{t}");
    assert!(t.contains("/opt/kq/bin/pointer-digest --pointer-id 5"), "{t}");
    // A transcript path with a character commands may not carry: placeholder.
    let odd = AbsPath::parse("/t/x y.jsonl").unwrap();
    let t = kijito_hooks::text::commands_text(&sid(), Some(&odd), Some((p, l)), None, &h, &data, &paths);
    assert!(t.contains("--transcript <TRANSCRIPT_PATH>"), "{t}");
    assert!(!t.contains("Configuration problem"), "{t}");
    let t = kijito_hooks::text::commands_text(&sid(), None, Some((p, l)), None, &h, &data, &paths);
    assert!(t.contains("--transcript <TRANSCRIPT_PATH>"), "{t}");
}

#[test]
fn subagents_are_recognised() {
    let m = |v: Value| v.as_object().unwrap().clone();
    assert!(kijito_hooks::compact::is_subagent(&m(json!({"agent_id": "a"}))));
    assert!(kijito_hooks::compact::is_subagent(&m(json!({"agent_type": "explore"}))));
    assert!(!kijito_hooks::compact::is_subagent(&m(json!({"agent_id": null}))));
    assert!(!kijito_hooks::compact::is_subagent(&m(json!({}))));
}

#[test]
fn a_token_prompt_confirms_only_through_a_latch() {
    use kijito_hooks::latch_hook::confirm_from_prompt;
    assert_eq!(confirm_from_prompt(None, None, 1), None);
    assert_eq!(confirm_from_prompt(None, Some("hello"), 1), None);
    let no_latch = confirm_from_prompt(None, Some("ACT-22ZZ99"), 1).unwrap();
    assert!(no_latch.contains("no readable latch"), "{no_latch}");
    let d = tempfile::tempdir().unwrap();
    assert!(confirm_from_prompt(Some(d.path()), Some("ACT-22ZZ99"), 1).unwrap().contains("no readable latch"));
    assert!(kijito_hooks::latch_hook::open_latch(d.path()).is_none());
}

/// The stdin bound is 1 MiB exactly (docs/protocol.md §8), as a number.
#[test]
fn the_stdin_bound_is_one_mebibyte() {
    let mut stdin = br#"{"hook_event_name":"Stop","session_id":"a","pad":""#.to_vec();
    stdin.resize(1_048_576 - 2, b'x');
    stdin.extend_from_slice(b"\"}");
    assert_eq!(stdin.len(), 1_048_576);
    assert!(kijito_hooks::parse_input(&stdin, "Stop").is_ok());
    assert_eq!(kijito_hooks::read_bounded(&stdin[..]).unwrap().len(), 1_048_576);
    let mut over = stdin.clone();
    over.push(b' ');
    assert_eq!(kijito_hooks::parse_input(&over, "Stop").unwrap_err().code(), "hook_stdin_too_large");
    assert_eq!(kijito_hooks::read_bounded(&over[..]).unwrap_err().code(), "hook_stdin_too_large");
}

/// Append one usage line of the host's real shape: `used` tokens of a
/// 200000 (Claude) or 258400 (Codex) window.
fn grow(w: &World, host: Host, used: u64) {
    use std::io::Write;
    let line = match host {
        Host::Claude => {
            json!({"type": "assistant", "isSidechain": false, "message": {"model": "claude-sonnet-4-5-20250929", "role": "assistant",
            "usage": {"input_tokens": 10, "cache_creation_input_tokens": 0, "cache_read_input_tokens": used - 10, "output_tokens": 5}}})
        }
        Host::Codex => json!({"type": "event_msg", "payload": {"type": "token_count", "info": {
            "last_token_usage": {"input_tokens": used, "total_tokens": used}, "model_context_window": 258_400}}}),
    };
    let mut f = std::fs::OpenOptions::new().append(true).open(w.transcript.as_path()).unwrap();
    writeln!(f, "{line}").unwrap();
}

fn ups_context(env: &HookEnv, w: &World) -> Option<String> {
    run::session(env, Event::UserPromptSubmit, &w.stdin("UserPromptSubmit", json!({"prompt": "go on"}))).map(|r| context(Some(r)))
}

fn stop_message(env: &HookEnv, w: &World) -> Option<String> {
    run::session(env, Event::Stop, &w.stdin("Stop", json!({}))).map(|r| json_of(&r)["systemMessage"].as_str().unwrap().to_owned())
}

#[test]
fn the_context_nudge_fires_once_per_ten_points() {
    for (host, window) in [(Host::Claude, 200_000f64), (Host::Codex, 258_400f64)] {
        let w = world();
        let env = w.env(host, T0);
        let at = |r: f64| (window * r) as u64;
        grow(&w, host, at(0.41));
        assert_eq!(ups_context(&env, &w), None);
        assert_eq!(stop_message(&env, &w), None);
        grow(&w, host, at(0.635));
        assert_eq!(
            ups_context(&env, &w).as_deref(),
            Some("kijito-qa: context at 63% (QA threshold 60%) and no valid QA pass: run the kijito-memory-qa skill now, then request compaction.")
        );
        assert_eq!(ups_context(&env, &w), None, "once per band");
        assert_eq!(
            stop_message(&env, &w).as_deref(),
            Some("kijito-qa: context at 63% and no valid QA pass; run the kijito-memory-qa skill before compacting, or the compaction will be UNATTESTED.")
        );
        assert_eq!(stop_message(&env, &w), None, "once per band");
        grow(&w, host, at(0.715));
        assert!(ups_context(&env, &w).unwrap().starts_with("kijito-qa: context at 71% "));
        assert!(stop_message(&env, &w).unwrap().starts_with("kijito-qa: context at 71% "));
        // The remembered bands are this session's, owner-only.
        let state = w.qa.path().as_path().join("nudge.sess-1.json");
        let v: Value = serde_json::from_slice(&std::fs::read(&state).unwrap()).unwrap();
        assert_eq!((v["sessionId"].as_str(), v["promptBand"].as_u64(), v["stopBand"].as_u64()), (Some("sess-1"), Some(7), Some(7)));
        assert_eq!(std::fs::metadata(&state).unwrap().permissions().mode() & 0o777, 0o600);
        // Below the threshold the band resets, so crossing again nudges again.
        grow(&w, host, at(0.3));
        assert_eq!(ups_context(&env, &w), None);
        assert_eq!(stop_message(&env, &w), None);
        let v: Value = serde_json::from_slice(&std::fs::read(&state).unwrap()).unwrap();
        assert_eq!((v["promptBand"].clone(), v["stopBand"].clone()), (Value::Null, Value::Null));
        grow(&w, host, at(0.72));
        assert!(ups_context(&env, &w).is_some());
        // Another session's state file (or a band out of range) is not ours.
        std::fs::write(
            &state,
            json!({"schemaVersion": 1, "sessionId": "other", "promptBand": 7, "stopBand": 7, "claimNoticed": null}).to_string(),
        )
        .unwrap();
        assert!(ups_context(&env, &w).is_some());
        std::fs::write(
            &state,
            json!({"schemaVersion": 1, "sessionId": "sess-1", "promptBand": 11, "stopBand": 7, "claimNoticed": null}).to_string(),
        )
        .unwrap();
        assert!(ups_context(&env, &w).is_some());
        assert_eq!(stop_message(&env, &w), None, "the valid stop band is kept");
    }
}

#[test]
fn no_nudge_with_a_valid_pass_and_the_threshold_from_the_config() {
    let w = world();
    let env = w.env(Host::Claude, T0);
    grow(&w, Host::Claude, 150_000);
    w.pass(T0);
    // The compaction's own prompt keeps the pass (any other prompt withdraws it).
    let compact = w.stdin("UserPromptSubmit", json!({"prompt": "/compact"}));
    assert_eq!(run::session(&env, Event::UserPromptSubmit, &compact), None);
    assert!(stop_message(&env, &w).unwrap().contains("waits for compaction"));
    // A higher threshold from the config.
    let w = world();
    let mut env = w.env(Host::Claude, T0);
    let mut c = kijito_files::config::Config::from_json(br#"{}"#).unwrap();
    c.qa_at_context_ratio = 0.8;
    env.config = Some(c);
    grow(&w, Host::Claude, 150_000);
    assert_eq!(ups_context(&env, &w), None);
    grow(&w, Host::Claude, 165_000);
    assert_eq!(
        ups_context(&env, &w).as_deref(),
        Some("kijito-qa: context at 82% (QA threshold 80%) and no valid QA pass: run the kijito-memory-qa skill now, then request compaction.")
    );
    // No transcript: no measurement, no nudge.
    let env = w.env(Host::Claude, T0);
    let no_t = br#"{"hook_event_name":"UserPromptSubmit","session_id":"sess-1","prompt":"x"}"#;
    assert_eq!(run::session(&env, Event::UserPromptSubmit, no_t), None);
}

#[test]
fn stop_notices_a_claimed_pass_once() {
    let w = world();
    let env = w.env(Host::Codex, T0);
    w.pass(T0);
    run::precompact(&env, &w.stdin("PreCompact", json!({}))).unwrap();
    run::postcompact(&env, &w.stdin("PostCompact", json!({})));
    let notice = "kijito-qa: a QA pass covers one compaction; the next compaction of this session will be UNATTESTED unless the kijito-memory-qa skill runs again.";
    assert_eq!(stop_message(&env, &w).as_deref(), Some(notice));
    assert_eq!(stop_message(&env, &w), None, "once per claim");
    // A new claim is noticed again.
    w.pass(T0);
    run::precompact(&env, &w.stdin("PreCompact", json!({}))).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(5));
    let claimed = w.qa.attempt_claimed(&sid());
    std::fs::remove_file(&claimed).unwrap();
    run::postcompact(&env, &w.stdin("PostCompact", json!({})));
    assert_eq!(stop_message(&env, &w).as_deref(), Some(notice));
}

#[test]
fn the_nudge_fires_at_the_threshold_itself() {
    use kijito_hooks::nudge::due;
    assert_eq!(due(Some(0.6), 0.6, false, None), (Some(6), true));
    assert_eq!(due(Some(0.5999), 0.6, false, Some(5)), (None, false));
    assert_eq!(due(Some(0.0), 0.0, false, None), (Some(0), true));
}

#[test]
fn session_start_names_the_compaction_request_and_the_adapter() {
    let w = world();
    let env = w.env(Host::Codex, T0);
    let t = context(run::session(&env, Event::SessionStart, &w.stdin("SessionStart", json!({"source": "clear"}))));
    let request = format!("{} request --session-id sess-1 --data-dir {}", w.dir.path().join("bin/kijito-compact").display(), w.data);
    assert!(
        t.contains(&format!(
            "- Right after `qa-gate record` succeeds, request the compaction (the last action of the turn):\n  {request}\n"
        )),
        "{t}"
    );
    assert!(t.contains("Compaction adapter: "), "{t}");
    // A subagent's SessionStart gets the commands but no adapter text.
    let t = context(run::session(&env, Event::SessionStart, &w.stdin("SessionStart", json!({"source": "clear", "agent_id": "a1"}))));
    assert!(t.starts_with("kijito-qa (trusted hook output)"), "{t}");
    assert!(!t.contains("Compaction adapter"), "{t}");
}

/// Only `<sh> -c|-lc <line>` (exactly three words) runs its third word as
/// the line; any other argv is judged whole.
#[test]
fn only_a_three_word_shell_c_runs_its_third_word() {
    let w = world();
    let env = w.env(Host::Claude, T0);
    denied(run::session(&env, Event::PreToolUse, &bash(&w, json!(["qa-gate", "-c", "status"]))));
    denied(run::session(&env, Event::PreToolUse, &bash(&w, json!(["bash", "-lc", "ls", "qa-gate"]))));
    denied(run::session(&env, Event::PreToolUse, &bash(&w, json!(["zsh", "-x", "qa-gate"]))));
    assert_eq!(run::session(&env, Event::PreToolUse, &bash(&w, json!(["/usr/bin/bash", "-c", "ls -la"]))), None);
}

#[test]
fn stop_advice_for_a_tmux_request() {
    let w = world();
    let env = w.env(Host::Codex, T0 + 60_000);
    w.pass(T0);
    let qa = &w.qa;
    kijito_compact::trigger::write_pin(
        qa,
        &kijito_compact::trigger::Pin {
            session_id: sid(),
            via: kijito_compact::trigger::Via::Tmux {
                socket: AbsPath::parse("/tmp/tmux-0/default").unwrap(),
                pane: "%1".into(),
                host_pid: 4242,
                host_start: 1,
                tmux: None,
            },
            pinned_at_ms: T0,
        },
    )
    .unwrap();
    let (r, _) = kijito_compact::trigger::create_request(qa, &sid(), T0 + 1).unwrap();
    assert_eq!(r.via.as_str(), "tmux");
    let v = json_of(&run::session(&env, Event::Stop, &w.stdin("Stop", json!({}))).unwrap());
    assert!(v["systemMessage"].as_str().unwrap().ends_with("; compaction was requested; the adapter starts it now"), "{v}");
}

/// Claude Code: SessionStart(compact) claims first (summary pending), then
/// PostCompact, with nothing left to claim, notes its `compact_summary` and
/// tells the user the verdict once.
#[test]
fn postcompact_after_the_claim_notes_the_summary() {
    for (keep, message) in [(true, messages::POSTCOMPACT_SUMMARY_CARRIED), (false, messages::POSTCOMPACT_SUMMARY_MISSING)] {
        let w = world();
        let env = w.env(Host::Claude, T0);
        w.pass(T0);
        let request = run::precompact(&env, &w.stdin("PreCompact", json!({"trigger": "manual"}))).expect("summary request");
        let values: Vec<&str> = request.lines().skip(1).collect();
        assert_eq!(values.len(), 5, "{request}");
        let summary =
            if keep { format!("The user and I worked on X.\n{}", values.join("\n")) } else { "The user and I worked on X.".to_owned() };
        let t = context(run::session(&env, Event::SessionStart, &w.stdin("SessionStart", json!({"source": "compact"}))));
        assert!(t.starts_with("kijito-qa re-entry after compaction: ATTESTED"), "{t}");
        assert!(t.contains("(summaryCarried: pending; the kijito-compact status subcommand shows the result)"), "{t}");
        let post = w.stdin("PostCompact", json!({"trigger": "manual", "compact_summary": summary}));
        assert_eq!(json_of(&run::postcompact(&env, &post)), json!({"continue": true, "systemMessage": message}), "keep {keep}");
        assert_eq!(run::postcompact(&env, &post), r#"{"continue":true}"#, "noted once");
    }
}

/// The lines of `sess-1`'s flight recorder for `kind`, in order.
fn journal(w: &World, kind: &str) -> Vec<Value> {
    kijito_testkit::journal_lines(w.data.as_path(), "sess-1", kind)
}

/// Each hook event leaves its line in the session's flight recorder, with
/// the fields the report reads: the host, how the session started, the
/// prompt's length and hash (never its text), each decision on a tool call
/// that was not a plain read, the compaction's record, claim and delivery,
/// the wake check and the context ratio.
#[test]
fn each_hook_event_leaves_its_line_in_the_flight_recorder() {
    let w = world();
    let env = w.env(Host::Codex, T0);
    let one = |kind: &str| -> Value {
        let [line] = journal(&w, kind).try_into().unwrap_or_else(|l: Vec<Value>| panic!("{kind}: {l:?}"));
        line
    };
    // SessionStart: the host, the version, the source; the wake check
    run::session(&env, Event::SessionStart, &w.stdin("SessionStart", json!({"source": "startup", "cwd": w.dir.path()})));
    let s = one("session_start");
    assert_eq!((&s["host"], &s["version"], &s["source"]), (&json!("codex"), &json!(env!("CARGO_PKG_VERSION")), &json!("startup")));
    assert_eq!(s["cwd"], json!(w.dir.path()));
    let wake = one("wake_check");
    assert_eq!((&wake["findings"], &wake["hold"]), (&json!(["hook_wake_check_failed"]), &json!(false)), "{wake}");
    assert!(wake["failed"].as_str().unwrap().contains("bin/wake-check"), "{wake}");
    // PreCompact, PostCompact's claim, the re-entry's delivery
    w.pass(T0);
    run::precompact(&env, &w.stdin("PreCompact", json!({"trigger": "auto"})));
    let pc = one("precompact");
    assert_eq!((&pc["attested"], &pc["trigger"]), (&json!(true), &json!("auto")), "{pc}");
    run::postcompact(&env, &w.stdin("PostCompact", json!({})));
    let c = one("claim");
    assert_eq!((&c["hook"], &c["attested"]), (&json!("PostCompact"), &json!(true)), "{c}");
    let env = w.env(Host::Codex, T0 + 1000);
    run::session(&env, Event::SessionStart, &w.stdin("SessionStart", json!({"source": "compact"})));
    let d = one("delivery");
    assert_eq!((&d["hook"], &d["attested"], &d["pointer_id"]), (&json!("SessionStart"), &json!(true), &json!(21813)), "{d}");
    let hex64 = |v: &Value| v.as_str().is_some_and(|s| s.len() == 64 && s.bytes().all(|b| b.is_ascii_hexdigit()));
    assert!(hex64(&d["pointer_digest"]) && hex64(&d["snapshot_digest"]) && d["pointer_digest"] != d["snapshot_digest"], "{d}");
    // UserPromptSubmit: the length and SHA-256 of the prompt, never its text
    run::prompt(&env, &w.stdin("UserPromptSubmit", json!({"prompt": "hello"})));
    let p = one("prompt");
    assert_eq!((&p["length"], &p["subagent"]), (&json!(5), &json!(false)));
    assert_eq!(p["sha256"], "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824");
    assert!(!p.to_string().contains("hello"), "{p}");
    // a new turn withdraws the pass of the last one
    w.pass(T0);
    let t = context(run::prompt(&env, &w.stdin("UserPromptSubmit", json!({"prompt": "go on"}))));
    assert_eq!(one("pass_withdrawn")["reason"], "new_turn");
    assert!(
        t.starts_with(
            "kijito-qa: a new turn began after `qa-gate record`, so this session's waiting QA pass was withdrawn \
             (pass_invalidated_by_new_turn; compaction nonce "
        ),
        "{t}"
    );
    // PreToolUse: a deny, two allowed writes (an argv and a file), the
    // command guard; an allowed read leaves no line
    let decisions = |n: usize| journal(&w, "tool_decision").into_iter().nth(n).unwrap();
    run::session(&env, Event::PreToolUse, &bash(&w, json!("rm -rf /")));
    run::session(&env, Event::PreToolUse, &bash(&w, json!(["rm", "-rf", "build"])));
    let ws = tempfile::tempdir().unwrap();
    let file = ws.path().join("notes.txt");
    run::session(
        &env,
        Event::PreToolUse,
        &w.stdin("PreToolUse", json!({"tool_name": "Write", "cwd": ws.path(), "tool_input": {"file_path": file, "content": "x"}})),
    );
    let bin = w.dir.path().join("bin");
    run::session(&env, Event::PreToolUse, &bash(&w, json!(format!("{}/qa-gate status; echo INJECTED", bin.display()))));
    run::session(&env, Event::PreToolUse, &bash(&w, json!("ls")));
    assert_eq!(journal(&w, "tool_decision").len(), 4);
    let d = decisions(0);
    assert_eq!(
        (&d["tool"], &d["decision"], &d["latch_mode"], &d["summary"]),
        (&json!("Bash"), &json!("deny"), &json!("absent"), &json!("rm -rf /"))
    );
    assert!(d["code"].as_str().unwrap().starts_with("tripwire_"), "{d}");
    assert!(d["rules"].as_array().unwrap().contains(&json!("rm_recursive_force")), "{d}");
    // (no latch here, so no consent: tests/pretool_consent.rs has those lines)
    let d = decisions(1);
    assert_eq!((&d["decision"], &d["code"], &d["summary"]), (&json!("allow"), &Value::Null, &json!("rm -rf build")), "{d}");
    let d = decisions(2);
    assert_eq!((&d["tool"], &d["decision"], &d["code"]), (&json!("Write"), &json!("allow"), &Value::Null), "{d}");
    assert_eq!(d["summary"], json!(file), "{d}");
    let d = decisions(3);
    assert_eq!((&d["decision"], &d["code"], &d["rules"]), (&json!("deny"), &Value::Null, &json!(["command_guard"])), "{d}");
    assert!(d["summary"].as_str().unwrap().ends_with("/bin/qa-gate status; echo INJECTED"), "{d}");
    // SessionStart claims when PostCompact did not: its own claim line
    w.pass(T0);
    let env = w.env(Host::Codex, T0 + 2000);
    run::precompact(&env, &w.stdin("PreCompact", json!({"trigger": "manual"})));
    run::session(&env, Event::SessionStart, &w.stdin("SessionStart", json!({"source": "compact"})));
    let claims = journal(&w, "claim");
    assert_eq!(claims.len(), 2, "{claims:?}");
    // (unattested: the prompts above withdrew the pass of their turn)
    assert_eq!((&claims[1]["hook"], &claims[1]["reason"]), (&json!("SessionStart"), &json!("pass_invalidated_by_new_turn")), "{claims:?}");
    assert_eq!(journal(&w, "delivery").len(), 2);
    // Stop: the context ratio the transcript gives
    grow(&w, Host::Codex, 129_200);
    run::session(&env, Event::Stop, &w.stdin("Stop", json!({})));
    assert_eq!(one("context_sample")["ratio"], json!(0.5));
}

/// PostToolUse and PostToolUseFailure go to the consent mode host record
/// (consent_host::post_tool): with no asked record nothing is said; with a
/// malformed one the user is told the call could not be recorded.
#[test]
fn post_tool_events_answer_for_the_asked_record() {
    use std::os::unix::fs::PermissionsExt as _;
    let w = world();
    let env = w.env(Host::Claude, T0);
    let id = kijito_protocol::ids::ToolUseId::parse("toolu_1").unwrap();
    let asked = kijito_hooks::consent_host::asked_path(w.data.as_path(), &sid(), &id);
    for event in [Event::PostToolUse, Event::PostToolUseFailure] {
        let stdin = w.stdin(event.name(), json!({"tool_name": "Bash", "tool_input": {"command": "ls"}, "tool_use_id": "toolu_1"}));
        assert_eq!(run::session(&env, event, &stdin), None, "{event:?}");
        std::fs::create_dir_all(asked.parent().unwrap()).unwrap();
        std::fs::write(&asked, "{}\n").unwrap();
        std::fs::set_permissions(&asked, std::fs::Permissions::from_mode(0o600)).unwrap();
        let v = json_of(&run::session(&env, event, &stdin).unwrap());
        assert!(v["systemMessage"].as_str().unwrap().contains("(policy_host_consent: the asked record is malformed)"), "{v}");
        assert!(!asked.exists());
    }
}

/// session-hook's PreToolUse, reached only when its sibling pretool-hook
/// could not be run: denied, with the code and what to do.
#[test]
fn session_hook_denies_a_tool_call_it_cannot_hand_on() {
    let w = world();
    let env = w.env(Host::Claude, T0);
    let why = denied(run::session_without_prompt(&env, Event::PreToolUse, &bash(&w, json!("ls"))));
    assert_eq!(
        why,
        "kijito-qa: denied (hook_pretool_missing): this installed root's pretool-hook, which decides every tool call, could not be run; \
         reinstall kijito-qa (install.sh) or ask the user."
    );
    // a tool call it cannot read is denied all the same
    assert!(denied(run::session_without_prompt(&env, Event::PreToolUse, b"{")).contains("hook_stdin_invalid_json"));
}
