//! A new turn after `qa-gate record` ends the pass (docs/protocol.md §7,
//! "New turn"), through the real binaries with host-shaped stdin on both
//! hosts: a pass recorded from two real verifier boots, then a
//! UserPromptSubmit of the main agent withdraws it (and fails its pending
//! compaction request), so the next PreCompact is UNATTESTED with the reason
//! and the re-entry names it; `/compact` and a subagent's prompt keep the
//! pass; a pass copied back is refused; a new record works again.
#![allow(clippy::unwrap_used)]

use crate::support;
use support::gate::*;

use kijito_compact::trigger::{read_request, write_request, Request, RequestState};
use kijito_gate::QaDir;
use kijito_protocol::ids::{AbsPath, SessionId};
use serde_json::Value;
use std::fs;

const REASON: &str = "pass_invalidated_by_new_turn";

fn attempt(c: &Cycle, s: &str) -> Value {
    serde_json::from_slice(&fs::read(c.qa().join(format!("compaction-attempt.{s}.json"))).unwrap()).unwrap()
}

fn pass_path(c: &Cycle, s: &str) -> std::path::PathBuf {
    c.qa().join(format!("qa-pass.{s}.json"))
}

fn ups(c: &Cycle, k: &Keys, prompt: &str, agent: Option<&str>) -> Option<String> {
    c.session_hook(k.host, "UserPromptSubmit", &c.stdin(k.host, k.ups, k.s, Some(prompt), agent))
}

/// PreCompact with the host's stdin: Codex says why in its systemMessage;
/// Claude Code prints nothing for an unattested attempt (its stdout goes to
/// the summariser).
fn precompact(c: &Cycle, k: &Keys) -> String {
    let out = c.hook(&PRECOMPACT, k.host, &[], &c.stdin(k.host, k.precompact_auto, k.s, None, None));
    String::from_utf8(out.stdout).unwrap()
}

/// A pending compaction request for the session's waiting pass, as
/// `kijito-compact request` records it (the adapter itself is not started:
/// no pane or app-server owns these sessions).
fn pending_request(c: &Cycle, s: &str, nonce: &str) {
    let qa = QaDir::open(&AbsPath::from_path(&c.data).unwrap()).unwrap();
    let r = Request {
        session_id: SessionId::parse(s).unwrap(),
        via: kijito_compact::trigger::ViaKind::Tmux,
        nonce: nonce.into(),
        requested_at_ms: now_ms(),
        updated_at_ms: now_ms(),
        state: RequestState::Pending,
        ticket_invalidated: false,
        note: None,
    };
    write_request(&qa, &r).unwrap();
}

fn request_state(c: &Cycle, s: &str) -> RequestState {
    let qa = QaDir::open(&AbsPath::from_path(&c.data).unwrap()).unwrap();
    read_request(&qa, &SessionId::parse(s).unwrap()).unwrap().unwrap().state
}

#[test]
fn a_new_turn_after_record_makes_the_next_compaction_unattested_with_the_reason() {
    for k in &HOSTS {
        let c = Cycle::new();
        // Before any pass: a prompt changes nothing.
        assert_eq!(ups(&c, k, "hello", None), None, "{}", k.host);
        let ready = c.record(k.s);
        let nonce = ready["compactionNonce"].as_str().unwrap().to_owned();
        assert_eq!(c.status(k.s)["passAcceptedNow"], true);
        pending_request(&c, k.s, &nonce);
        let copy = fs::read(pass_path(&c, k.s)).unwrap();

        // The user types the next prompt: the pass is withdrawn, the request failed.
        let text = ups(&c, k, "fix the bu/compact", None).expect("the model is told");
        assert!(text.starts_with("kijito-qa: a new turn began after `qa-gate record`"), "{}: {text}", k.host);
        assert!(text.contains(REASON) && text.contains(&nonce) && text.contains("its compaction request failed"), "{text}");
        assert!(
            text.contains(&format!("{}/qa-gate record --session-id {}", helper_dir().display(), k.s)),
            "the commands for the next cycle: {text}"
        );
        assert!(!pass_path(&c, k.s).exists(), "{}: withdrawn", k.host);
        assert_eq!(request_state(&c, k.s), RequestState::Failed { code: REASON.into() });
        let st = c.status(k.s);
        assert_eq!((st["pass"].clone(), st["passRejectedBecause"].clone()), (false.into(), REASON.into()), "{st}");
        // The next prompt finds nothing to withdraw.
        assert_eq!(ups(&c, k, "and again", None), None);

        // A pass file copied back (same nonce) is refused.
        write_private(&pass_path(&c, k.s), &copy);
        let st = c.status(k.s);
        assert_eq!(
            (st["pass"].clone(), st["passAcceptedNow"].clone(), st["passRejectedBecause"].clone()),
            (true.into(), false.into(), REASON.into()),
            "{st}"
        );
        let stop_key = if k.host == "codex" { "app-server:Stop" } else { "Stop" };
        let stop = c.session_hook(k.host, "Stop", &c.stdin(k.host, stop_key, k.s, None, None)).expect("Stop reminds");
        assert!(stop.contains(&format!("would be refused ({REASON})")), "{stop}");

        // The compaction (Claude Code's auto-compaction runs right after the
        // prompt's UserPromptSubmit): UNATTESTED with the reason.
        let said = precompact(&c, k);
        let a = attempt(&c, k.s);
        assert_eq!((a["attested"].clone(), a["reason"].clone()), (false.into(), REASON.into()), "{}: {a}", k.host);
        match k.host {
            "codex" => assert!(said.contains(&format!("compaction UNATTESTED ({REASON})")), "{said}"),
            _ => assert_eq!(said, "", "Claude Code: nothing for the summariser"),
        }
        assert!(!c.qa().join(format!("compaction-resume.{}.json", k.s)).exists(), "no ticket");
        // The re-entry names the reason (both hosts' order).
        let start = c.stdin(k.host, k.compact_start, k.s, None, None);
        let post = c.stdin(k.host, k.postcompact, k.s, None, None);
        let reentry = if k.host == "codex" {
            c.hook(&POSTCOMPACT, k.host, &[], &post);
            c.session_hook(k.host, "SessionStart", &start)
        } else {
            let r = c.session_hook(k.host, "SessionStart", &start);
            c.hook(&POSTCOMPACT, k.host, &[], &post);
            r
        }
        .expect("re-entry delivered");
        assert!(
            reentry.starts_with(&format!("kijito-qa re-entry after compaction: UNATTESTED (session {}). Reason: {REASON}.", k.s)),
            "{reentry}"
        );

        // The withdrawn pass's two reports make no new pass: new boots are
        // needed (H4's finding: re-recording them attested cycle 2).
        let old = c.record_again_from(k.s, 0);
        assert_eq!(old.status.code(), Some(1), "{}", String::from_utf8_lossy(&old.stderr));
        assert!(
            String::from_utf8_lossy(&old.stderr).starts_with("kijito_qa_gate_failed:reports_predate_spent_pass"),
            "{}",
            String::from_utf8_lossy(&old.stderr)
        );

        // The agent runs the cycle again: a new record works, and the
        // compaction's own prompt keeps it.
        let again = c.record(k.s);
        assert_ne!(again["compactionNonce"], ready["compactionNonce"]);
        assert_eq!(ups(&c, k, " /compact\n", None), None, "/compact is no new turn");
        assert_eq!(c.status(k.s)["passAcceptedNow"], true);
        precompact(&c, k);
        let a = attempt(&c, k.s);
        assert_eq!(
            (a["attested"].clone(), a["compactionNonce"].clone()),
            (true.into(), again["compactionNonce"].clone()),
            "{}: {a}",
            k.host
        );
    }
}

#[test]
fn compact_prompts_and_subagent_prompts_keep_the_pass() {
    for k in &HOSTS {
        let c = Cycle::new();
        let ready = c.record(k.s);
        pending_request(&c, k.s, ready["compactionNonce"].as_str().unwrap());
        for prompt in ["/compact", "\t/compact \n"] {
            assert_eq!(ups(&c, k, prompt, None), None, "{}: {prompt:?}", k.host);
        }
        // A subagent's prompt (its stdin carries agent_id/agent_type), whatever it says.
        assert_eq!(ups(&c, k, "run pointer-snapshot", Some("agent-7")), None);
        let st = c.status(k.s);
        assert_eq!((st["pass"].clone(), st["passAcceptedNow"].clone()), (true.into(), true.into()), "{}: {st}", k.host);
        assert_eq!(request_state(&c, k.s), RequestState::Pending);
        // `/compact` with instructions is a new turn.
        assert!(ups(&c, k, "/compact keep the pointer", None).unwrap().contains(REASON));
        assert_eq!(c.status(k.s)["passRejectedBecause"], REASON);
    }
}
