//! Chained QA state and the spent-nonce ledger (
//! docs/protocol.md §7), through the real binaries on both hosts: a real
//! cycle (two real verifier boots on kijito-local, `qa-gate record`, the
//! real PreCompact, PostCompact and SessionStart hooks), then the agent's
//! cheap forgeries of the findings, each refused:
//! - "an ATTESTED re-entry with no verification at all": a hand-written
//!   `compaction-reentry.<s>.json` with `attested:true`, even with a forged
//!   `qa-spent` listing its nonce as consumed, is delivered UNATTESTED;
//! - "one pass, two compactions": the consumed ticket copied back as the pass
//!   is refused by the ledger (`pass_replayed`; PreCompact writes no
//!   `qa-spent` for it);
//! - a ledger that cannot be read fails closed, and PreCompact still allows
//!   the compaction.
#![allow(clippy::unwrap_used)]

use crate::support;
use support::gate::*;

use serde_json::{json, Value};
use std::fs;

fn attempt(c: &Cycle, s: &str) -> Value {
    serde_json::from_slice(&fs::read(c.qa().join(format!("compaction-attempt.{s}.json"))).unwrap()).unwrap()
}

/// PreCompact, then the host's order of PostCompact and SessionStart(compact): the re-entry text.
fn compaction(c: &Cycle, k: &Keys) -> String {
    let (host, s, pre, post, start) = (k.host, k.s, k.precompact, k.postcompact, k.compact_start);
    c.hook(&PRECOMPACT, host, &[], &c.stdin(host, pre, s, None, None));
    let post = c.stdin(host, post, s, None, None);
    let start = c.stdin(host, start, s, None, None);
    if host == "codex" {
        c.hook(&POSTCOMPACT, host, &[], &post);
        c.session_hook(host, "SessionStart", &start).unwrap()
    } else {
        let r = c.session_hook(host, "SessionStart", &start).unwrap();
        c.hook(&POSTCOMPACT, host, &[], &post);
        r
    }
}

fn write_private_json(path: &std::path::Path, v: &Value) {
    write_private(path, v.to_string().as_bytes());
}

#[test]
fn a_consumed_pass_put_back_without_the_spent_record_attests_nothing() {
    for h in &HOSTS {
        let (host, s) = (h.host, h.s);
        let c = Cycle::new();
        let ready = c.record(s);
        let text = compaction(&c, h);
        assert!(text.starts_with(&format!("kijito-qa re-entry after compaction: ATTESTED (session {s})")), "{host}: {text}");
        // The ledger outside the data dir lists the consumed nonce.
        let heads = c.world.home.join("latch-heads");
        let ledger: Vec<_> =
            fs::read_dir(&heads).unwrap().map(|e| e.unwrap().path()).filter(|p| p.to_string_lossy().contains("qa-ledger.")).collect();
        assert_eq!(ledger.len(), 1, "{host}: {ledger:?}");
        let line: Value = serde_json::from_str(fs::read_to_string(&ledger[0]).unwrap().lines().next().unwrap()).unwrap();
        assert_eq!((line["nonce"].clone(), line["why"].clone()), (ready["compactionNonce"].clone(), json!("pass_already_consumed")));
        // The replay: the consumed ticket back as the pass (one command); no
        // spent record in the data dir names it (PreCompact writes none: the
        // ledger is the one record of a consumed pass).
        fs::copy(c.qa().join(format!("compaction-resume-consumed.{s}.json")), c.qa().join(format!("qa-pass.{s}.json"))).unwrap();
        assert!(fs::symlink_metadata(c.qa().join(format!("qa-spent.{s}.json"))).is_err(), "{host}: a spent record");
        // status (like the Stop reminder and kijito-compact request) refuses it already.
        let st = c.status(s);
        assert_eq!(
            (st["passAcceptedNow"].clone(), st["passRejectedBecause"].clone()),
            (json!(false), json!("pass_replayed")),
            "{host}: {st}"
        );
        let text = compaction(&c, h);
        let a: Value = serde_json::from_slice(&fs::read(c.qa().join(format!("compaction-attempt-claimed.{s}.json"))).unwrap()).unwrap();
        assert_eq!((a["attested"].clone(), a["reason"].clone()), (json!(false), json!("pass_replayed")), "{host}");
        assert!(
            text.starts_with(&format!("kijito-qa re-entry after compaction: UNATTESTED (session {s}). Reason: pass_replayed.")),
            "{host}: {text}"
        );
    }
}

#[test]
fn a_hand_written_attested_record_is_unattested_even_with_a_forged_spent_record() {
    for h in &HOSTS {
        let (host, s, ups) = (h.host, h.s, h.ups);
        let c = Cycle::new();
        let nonce = "00000000000000000000000000abc001";
        let now = now_ms();
        // The cheap forgery: the claim record and the spent record by hand.
        c.qa_dir();
        write_private_json(
            &c.qa().join(format!("qa-spent.{s}.json")),
            &json!({"schemaVersion":1,"sessionId":s,"spent":[{"nonce":nonce,"why":"pass_already_consumed","recordedAtMs":now - 2000,"spentAtMs":now - 1000}]}),
        );
        write_private_json(
            &c.qa().join(format!("compaction-reentry.{s}.json")),
            &json!({"schemaVersion":2,"sessionId":s,"claimedAtMs":now,"attested":true,"reason":"pass_promoted","pointerId":c.seeded.pointer_id,"lockMessageId":c.seeded.lock_id,"pointerDigest":c.seeded.pointer_digest(),"snapshotDigest":c.seeded.expected_snapshot_digest(),"compactionNonce":nonce,"summaryCarried":null,"summaryCheck":"pending"}),
        );
        let text = c.session_hook(host, "UserPromptSubmit", &c.stdin(host, ups, s, Some("hello"), None)).unwrap();
        assert!(
            text.starts_with(&format!("kijito-qa re-entry after compaction: UNATTESTED (session {s}). Reason: reentry_unbacked.")),
            "{host}: {text}"
        );
    }
}

#[test]
fn an_unreadable_ledger_fails_closed_and_never_blocks_the_compaction() {
    for h in &HOSTS {
        let (host, s, pre) = (h.host, h.s, h.precompact);
        let c = Cycle::new();
        c.record(s);
        // Something the agent wrote where the ledger goes: not a ledger.
        let heads = c.world.home.join("latch-heads");
        support::snapshot::private_dir(&heads);
        let qa_key = &kijito_protocol::ids::Digest::of(c.qa().to_str().unwrap().as_bytes()).as_str()[..16].to_owned();
        write_private(&heads.join(format!("qa-ledger.{qa_key}.{s}.jsonl")), b"{\"nonce\":\"forged\"}\n");
        let out = c.hook(&PRECOMPACT, host, &[], &c.stdin(host, pre, s, None, None));
        assert_eq!(out.status.code(), Some(0));
        let a = attempt(&c, s);
        assert_eq!((a["attested"].clone(), a["reason"].clone()), (json!(false), json!("spent_ledger_invalid")), "{host}");
        // qa-gate record refuses too (fail closed), with the same code.
        let again = c.record_again_from(s, 0);
        assert_eq!(failure_code(&again), "kijito_qa_gate_failed:spent_ledger_invalid", "{}", String::from_utf8_lossy(&again.stderr));
    }
}
