//! The five gate checks through the library, one failure at a time: each
//! test starts from a state where every check passes and changes exactly one
//! thing (the head, the token ledger on disk, the input), so a gate that
//! skipped that one guard would pass and the test would notice.

#![allow(clippy::unwrap_used)]

use kijito_latch::gate::{remediation, GateInput, GateReport};
use kijito_latch::{self as latch, codes, tokens, Config, ConsentState, Latch, PromptOutcome, Risk};
use std::fs;
use std::os::unix::fs::PermissionsExt;

const T0: u64 = 1_800_000_000_000;
const ACTION: &[u8] = b"rm -rf target\n";

struct Fixture {
    _dir: tempfile::TempDir,
    latch: Latch,
    checkpoint: String,
}

fn setup() -> (tempfile::TempDir, Latch) {
    let d = tempfile::tempdir().unwrap();
    fs::set_permissions(d.path(), fs::Permissions::from_mode(0o700)).unwrap();
    let boot = d.path().join("boot");
    fs::write(&boot, "aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee").unwrap();
    let ws = d.path().join("ws");
    fs::create_dir(&ws).unwrap();
    fs::create_dir(ws.join("src")).unwrap();
    let mut c = Config::new(&ws);
    c.boot_id_file = boot;
    c.heads_dir = Some(d.path().join("heads"));
    let l = Latch::open(&c).unwrap();
    l.init(1_000, &latch::InitInput { objective: "o".into(), ..Default::default() }).unwrap();
    (d, l)
}

/// A latch whose head is authorized for [`ACTION`] at `risk` (confirmed, and
/// reconfirmed when high).
fn authorized(risk: Risk) -> Fixture {
    let (d, l) = setup();
    let issued = l.consent_request(T0, ACTION, "clean", risk).unwrap();
    let checkpoint = issued.entry.as_ref().unwrap().integrity.payload_hash.clone();
    let first = l.user_prompt(T0 + 1, &issued.token).unwrap();
    if risk == Risk::High {
        assert!(matches!(first, Some(PromptOutcome::AwaitingReconfirmation { .. })), "{first:?}");
        let second = l.user_prompt(T0 + 2, &issued.token).unwrap();
        assert!(matches!(second, Some(PromptOutcome::Confirmed { .. })), "{second:?}");
    } else {
        assert!(matches!(first, Some(PromptOutcome::Confirmed { .. })), "{first:?}");
    }
    assert_eq!(l.status(T0 + 3).unwrap().head.consent_state, ConsentState::Authorized);
    Fixture { _dir: d, latch: l, checkpoint }
}

fn input(f: &Fixture) -> GateInput {
    GateInput {
        action_bytes: ACTION.to_vec(),
        checkpoint: Some(f.checkpoint.clone()),
        targets: vec!["src/a.rs".into()],
        intended: Some(b"fn a() {}\n".to_vec()),
        result: Some(b"fn a() {}   \n\n".to_vec()),
        ..Default::default()
    }
}

fn check<'a>(r: &'a GateReport, name: &str) -> &'a kijito_latch::gate::CheckResult {
    r.checks.iter().find(|c| c.name == name).unwrap_or_else(|| panic!("no check {name} in {r:?}"))
}

/// Exactly one check failed, with `code`; the report names its remediation
/// and consumed nothing.
fn only_failure(r: &GateReport, name: &str, code: &str) {
    assert!(!r.passed, "{r:?}");
    assert_eq!(r.entry_seq, None);
    let failed: Vec<_> = r
        .checks
        .iter()
        .filter(|c| !c.passed)
        .map(|c| (c.name.as_str(), c.code.as_ref().map(|c| c.to_string()).unwrap_or_default()))
        .collect();
    assert_eq!(failed, vec![(name, code.to_owned())], "{r:?}");
    let c = check(r, name);
    assert_eq!(c.remediation.as_deref(), remediation(name));
    assert_eq!(r.remediation.as_deref(), remediation(name));
}

/// Rewrite the on-disk ledger (tokens.json is plain JSON in the latch dir).
fn edit_ledger(f: &Fixture, edit: impl FnOnce(&mut tokens::Ledger)) {
    let path = &f.latch.paths().ledger;
    let mut l = tokens::parse_ledger(&fs::read(path).unwrap()).unwrap();
    edit(&mut l);
    fs::write(path, serde_json::to_vec_pretty(&l).unwrap()).unwrap();
}

#[test]
fn all_five_checks_pass_once_and_the_pass_consumes_the_token() {
    let f = authorized(Risk::Low);
    let r = f.latch.gate(T0 + 10, &input(&f)).unwrap();
    assert!(r.passed, "{r:?}");
    assert_eq!(r.schema, latch::gate::GATE_SCHEMA);
    assert_eq!(r.action_hash, latch::action_hash(ACTION).unwrap());
    let names: Vec<_> = r.checks.iter().map(|c| c.name).collect();
    assert_eq!(names, ["intent_vs_result", "checkpoint_integrity", "consent_integrity", "path_safety", "risk_gate"]);
    assert!(r.checks.iter().all(|c| c.passed && c.code.is_none() && c.remediation.is_none()), "{r:?}");
    assert_eq!(r.remediation, None);
    let seq = r.entry_seq.expect("a gate_pass entry");
    let st = f.latch.status(T0 + 11).unwrap();
    assert_eq!(st.head.seq, seq);
    assert_eq!(st.head.event, latch::Event::GatePass);
    assert_eq!(st.head.consent_state, ConsentState::Pending);
    assert_eq!(st.head.action_hash, None);
    assert_eq!(st.head.irreversible_action_pending, "none");
    // The ledger record is marked used at the gate's time.
    let toks = f.latch.tokens(T0 + 11).unwrap();
    assert_eq!(toks.len(), 1);
    assert_eq!(toks[0].used_at_ms, Some(T0 + 10));
    assert_eq!(toks[0].status, tokens::TokenStatus::Used);
    // A second gate finds nothing authorized.
    let again = f.latch.gate(T0 + 12, &input(&f)).unwrap();
    assert!(!again.passed);
    assert_eq!(check(&again, "consent_integrity").code.as_deref(), Some(codes::CONSENT_NOT_AUTHORIZED.as_str()));
}

#[test]
fn consent_fails_when_the_ledger_has_no_record_of_the_token() {
    let f = authorized(Risk::Low);
    edit_ledger(&f, |l| l.tokens.clear());
    let r = f.latch.gate(T0 + 10, &input(&f)).unwrap();
    // Risk falls back to the head's (low), so only consent fails.
    only_failure(&r, "consent_integrity", codes::CONSENT_RECORD_MISSING.as_str());
}

#[test]
fn consent_fails_when_the_record_is_already_used() {
    let f = authorized(Risk::Low);
    edit_ledger(&f, |l| l.tokens[0].used_at_ms = Some(T0 + 5));
    only_failure(&f.latch.gate(T0 + 10, &input(&f)).unwrap(), "consent_integrity", codes::CONSENT_RECORD_MISMATCH.as_str());
}

#[test]
fn consent_fails_when_the_record_was_never_confirmed() {
    let f = authorized(Risk::Low);
    edit_ledger(&f, |l| l.tokens[0].confirmed_at_ms = None);
    only_failure(&f.latch.gate(T0 + 10, &input(&f)).unwrap(), "consent_integrity", codes::CONSENT_RECORD_MISMATCH.as_str());
}

#[test]
fn consent_fails_when_the_record_is_a_reseed_token() {
    let f = authorized(Risk::Low);
    edit_ledger(&f, |l| l.tokens[0].purpose = tokens::Purpose::Reseed);
    only_failure(&f.latch.gate(T0 + 10, &input(&f)).unwrap(), "consent_integrity", codes::CONSENT_RECORD_MISMATCH.as_str());
}

#[test]
fn consent_fails_when_the_record_is_bound_to_another_action() {
    let f = authorized(Risk::Low);
    edit_ledger(&f, |l| l.tokens[0].action_hash = latch::action_hash(b"something else\n").unwrap());
    only_failure(&f.latch.gate(T0 + 10, &input(&f)).unwrap(), "consent_integrity", codes::CONSENT_RECORD_MISMATCH.as_str());
}

#[test]
fn consent_fails_when_the_action_file_changed() {
    let f = authorized(Risk::Low);
    let mut i = input(&f);
    i.action_bytes = b"rm -rf /\n".to_vec();
    let r = f.latch.gate(T0 + 10, &i).unwrap();
    only_failure(&r, "consent_integrity", codes::CONSENT_ACTION_CHANGED.as_str());
    assert_eq!(r.action_hash, latch::action_hash(b"rm -rf /\n").unwrap());
}

#[test]
fn consent_fails_when_the_ledger_cannot_be_read() {
    let f = authorized(Risk::Low);
    fs::write(&f.latch.paths().ledger, b"{\"schema\":\"nope\"}").unwrap();
    let r = f.latch.gate(T0 + 10, &input(&f)).unwrap();
    // Without a ledger record the risk falls back to the head's (low).
    only_failure(&r, "consent_integrity", codes::LEDGER_INVALID.as_str());
}

#[test]
fn consent_fails_while_only_pending() {
    let (d, l) = setup();
    let issued = l.consent_request(T0, ACTION, "clean", Risk::Low).unwrap();
    let f = Fixture { _dir: d, latch: l, checkpoint: issued.entry.unwrap().integrity.payload_hash };
    let r = f.latch.gate(T0 + 10, &input(&f)).unwrap();
    only_failure(&r, "consent_integrity", codes::CONSENT_NOT_AUTHORIZED.as_str());
    assert!(check(&r, "consent_integrity").message.contains("pending"), "{r:?}");
}

#[test]
fn high_risk_needs_the_second_message() {
    let f = authorized(Risk::High);
    let r = f.latch.gate(T0 + 10, &input(&f)).unwrap();
    assert!(r.passed, "{r:?}");
    assert_eq!(check(&r, "risk_gate").message, "risk high");

    // Authorized on the head, but the ledger lost the reconfirmation.
    let f = authorized(Risk::High);
    edit_ledger(&f, |l| l.tokens[0].reconfirmed_at_ms = None);
    only_failure(&f.latch.gate(T0 + 10, &input(&f)).unwrap(), "risk_gate", codes::RISK_RECONFIRMATION_REQUIRED.as_str());
    // ... or the confirmation (then consent fails too).
    let f = authorized(Risk::High);
    edit_ledger(&f, |l| l.tokens[0].confirmed_at_ms = None);
    let r = f.latch.gate(T0 + 10, &input(&f)).unwrap();
    assert_eq!(check(&r, "risk_gate").code.as_deref(), Some(codes::RISK_RECONFIRMATION_REQUIRED.as_str()));
    assert_eq!(check(&r, "consent_integrity").code.as_deref(), Some(codes::CONSENT_RECORD_MISMATCH.as_str()));
    // The ledger's risk wins over the head's: a record made high needs the
    // second message even though the head says low.
    let f = authorized(Risk::Low);
    edit_ledger(&f, |l| l.tokens[0].risk = Risk::High);
    only_failure(&f.latch.gate(T0 + 10, &input(&f)).unwrap(), "risk_gate", codes::RISK_RECONFIRMATION_REQUIRED.as_str());
    // No record at all: the head's risk decides (high here).
    let f = authorized(Risk::High);
    edit_ledger(&f, |l| l.tokens.clear());
    let r = f.latch.gate(T0 + 10, &input(&f)).unwrap();
    assert_eq!(check(&r, "risk_gate").code.as_deref(), Some(codes::RISK_RECONFIRMATION_REQUIRED.as_str()));
}

#[test]
fn intent_versus_result() {
    let f = authorized(Risk::Low);
    let mut i = input(&f);
    i.result = Some(b"fn b() {}\n".to_vec());
    only_failure(&f.latch.gate(T0 + 10, &i).unwrap(), "intent_vs_result", codes::INTENT_RESULT_MISMATCH.as_str());
    // Leading whitespace is content; only trailing whitespace is ignored.
    i.result = Some(b" fn a() {}\n".to_vec());
    only_failure(&f.latch.gate(T0 + 10, &i).unwrap(), "intent_vs_result", codes::INTENT_RESULT_MISMATCH.as_str());
    i.result = Some(vec![0xff, 0xfe]);
    only_failure(&f.latch.gate(T0 + 10, &i).unwrap(), "intent_vs_result", codes::INTENT_RESULT_UNREADABLE.as_str());
    i.intended = None;
    i.result = None;
    only_failure(&f.latch.gate(T0 + 10, &i).unwrap(), "intent_vs_result", codes::INTENT_UNDECLARED.as_str());
    // One without the other is a usage error, not a report.
    i.intended = Some(b"x".to_vec());
    assert_eq!(f.latch.gate(T0 + 10, &i).unwrap_err().code(), codes::GATE_INTENT_INCOMPLETE.as_str());
    i.intended = None;
    i.result = Some(b"x".to_vec());
    assert_eq!(f.latch.gate(T0 + 10, &i).unwrap_err().code(), codes::GATE_INTENT_INCOMPLETE.as_str());
    // Nothing was consumed by the failures.
    assert!(f.latch.gate(T0 + 10, &input(&f)).unwrap().passed);
}

#[test]
fn checkpoint_must_be_given_and_known() {
    let f = authorized(Risk::Low);
    let mut i = input(&f);
    i.checkpoint = None;
    only_failure(&f.latch.gate(T0 + 10, &i).unwrap(), "checkpoint_integrity", codes::GATE_CHECKPOINT_MISSING.as_str());
    i.checkpoint = Some(latch::action_hash(b"not an entry\n").unwrap().into());
    only_failure(&f.latch.gate(T0 + 10, &i).unwrap(), "checkpoint_integrity", codes::GATE_CHECKPOINT_UNKNOWN.as_str());
    assert!(f.latch.gate(T0 + 10, &input(&f)).unwrap().passed);
}

#[test]
fn targets_are_required_bounded_and_inside() {
    let f = authorized(Risk::Low);
    let mut i = input(&f);
    i.targets = vec![];
    only_failure(&f.latch.gate(T0 + 10, &i).unwrap(), "path_safety", codes::GATE_TARGET_MISSING.as_str());
    // Every target is checked, not only the first.
    i.targets = vec!["src/a.rs".into(), "../outside".into()];
    only_failure(&f.latch.gate(T0 + 10, &i).unwrap(), "path_safety", codes::GATE_TARGET_TRAVERSAL.as_str());
    i.targets = vec!["src/a.rs".into(); 257];
    assert_eq!(f.latch.gate(T0 + 10, &i).unwrap_err().code(), codes::GATE_TARGET_INVALID.as_str());
    i.targets = vec!["src/a.rs".into(); 256];
    let r = f.latch.gate(T0 + 10, &i).unwrap();
    assert!(r.passed, "{r:?}");
    assert_eq!(check(&r, "path_safety").message, "256 target(s) inside the workspace");
}

#[test]
fn every_check_has_its_own_remediation() {
    let names = ["intent_vs_result", "checkpoint_integrity", "consent_integrity", "path_safety", "risk_gate"];
    let texts: Vec<&str> = names.iter().map(|n| remediation(n).unwrap()).collect();
    for (i, a) in texts.iter().enumerate() {
        for b in &texts[i + 1..] {
            assert_ne!(a, b);
        }
    }
    assert!(texts[0].contains("--intended F --result F"));
    assert!(texts[1].contains("memory-latch verify"));
    assert!(texts[2].contains("memory-latch consent request"));
    assert!(texts[3].contains("inside the workspace"));
    assert!(texts[4].contains("second, separate message"));
    // A name that is no check has no remediation (the check names are an enum
    // with one remediation each; nothing falls back to risk_gate's).
    assert_eq!(remediation("anything else"), None);
    assert!(remediation("one_step").unwrap().contains("memory-latch checkpoint --next-step"));
    assert!(!texts.contains(&remediation("one_step").unwrap()));
}

#[test]
fn a_tampered_chain_fails_the_checkpoint_and_enters_silent_witness() {
    let f = authorized(Risk::Low);
    assert!(f.latch.witness_marker().unwrap().is_none());
    let path = f.latch.paths().manifest.clone();
    let original = fs::read_to_string(&path).unwrap();
    let tampered = original.replacen("consent requested", "consent requestee", 1);
    assert_ne!(tampered, original);
    fs::write(&path, tampered).unwrap();
    assert!(!f.latch.verify().trusted);
    let r = f.latch.gate(T0 + 10, &input(&f)).unwrap();
    assert!(!r.passed);
    assert_eq!(r.entry_seq, None);
    let cp = check(&r, "checkpoint_integrity");
    assert_eq!(cp.code.as_deref(), Some(codes::UNTRUSTED.as_str()));
    assert!(cp.message.starts_with("the latch chain is not trusted ("), "{}", cp.message);
    assert!(!cp.message.contains(codes::UNVERIFIABLE.as_str()), "names the first finding: {}", cp.message);
    // No head is read from an untrusted chain, so there is no consent either.
    assert_eq!(check(&r, "consent_integrity").code.as_deref(), Some(codes::UNTRUSTED.as_str()));
    assert_eq!(r.remediation.as_deref(), remediation("checkpoint_integrity"));
    // The failed verification wrote the Silent Witness marker; from now on
    // the gate refuses outright, naming why.
    let marker = f.latch.witness_marker().unwrap().expect("a witness marker");
    assert_eq!(marker.reason, "verification failed");
    assert!(!marker.findings.is_empty());
    let e = f.latch.gate(T0 + 11, &input(&f)).unwrap_err();
    assert_eq!(e.code(), codes::SILENT_WITNESS_ACTIVE.as_str());
    assert!(e.message().contains("(verification failed)"), "{}", e.message());
}

/// An hmac chain read without its key is unverifiable: the checkpoint check
/// fails (naming that), but nothing was found wrong, so no Silent Witness.
#[test]
fn an_unverifiable_chain_fails_the_checkpoint_without_a_witness() {
    let d = tempfile::tempdir().unwrap();
    fs::set_permissions(d.path(), fs::Permissions::from_mode(0o700)).unwrap();
    let boot = d.path().join("boot");
    fs::write(&boot, "aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee").unwrap();
    let ws = d.path().join("ws");
    fs::create_dir_all(ws.join("src")).unwrap();
    let mut c = Config::new(&ws);
    c.boot_id_file = boot;
    c.heads_dir = Some(d.path().join("heads"));
    let key = kijito_latch::integrity::HmacKey::from_bytes(&[7u8; 64]).unwrap();
    let keyed = Latch::open(&c).unwrap().with_key(key);
    keyed.init(1_000, &latch::InitInput { objective: "o".into(), want_hmac: true, ..Default::default() }).unwrap();
    let issued = keyed.consent_request(T0, ACTION, "clean", Risk::Low).unwrap();
    let checkpoint = issued.entry.as_ref().unwrap().integrity.payload_hash.clone();
    let keyless = Latch::open(&c).unwrap();
    let report = keyless.verify();
    assert!(!report.trusted && report.findings.is_empty(), "{report:?}");
    let f = Fixture { _dir: d, latch: keyless, checkpoint };
    let r = f.latch.gate(T0 + 10, &input(&f)).unwrap();
    let cp = check(&r, "checkpoint_integrity");
    assert_eq!(cp.code.as_deref(), Some(codes::UNTRUSTED.as_str()));
    assert_eq!(cp.message, format!("the latch chain is not trusted ({})", codes::UNVERIFIABLE));
    assert!(f.latch.witness_marker().unwrap().is_none(), "no witness without a finding");
}

/// One-step mode (context fatigue) adds the sixth check: a head naming no
/// next step fails it, a named step passes once (the pass marks it taken),
/// and only a checkpoint naming the next step makes the mode ready again.
#[test]
fn one_step_mode_allows_one_gated_action_per_declared_step() {
    let f = authorized(Risk::Low);
    // Context fatigue: the forced checkpoint turns the mode on (no next step in the head).
    let fatigue = f.latch.turn_ended(&kijito_protocol::ids::SessionId::parse("s1").unwrap(), T0 + 4, Some(0.9)).unwrap();
    assert_eq!(fatigue.one_step, Some(latch::entry::OneStep::Ready));
    assert_eq!(f.latch.status(T0 + 5).unwrap().head.consent_state, ConsentState::Authorized);
    let r = f.latch.gate(T0 + 10, &input(&f)).unwrap();
    only_failure(&r, "one_step", codes::ONE_STEP_NEXT_STEP_REQUIRED.as_str());
    assert_eq!(r.checks.len(), 6);
    // A checkpoint naming the step: the gate passes, with the sixth check.
    f.latch.checkpoint(T0 + 11, &latch::CheckpointInput { next_single_step: Some("delete target".into()), ..Default::default() }).unwrap();
    let r = f.latch.gate(T0 + 12, &input(&f)).unwrap();
    assert!(r.passed, "{r:?}");
    let names: Vec<_> = r.checks.iter().map(|c| c.name).collect();
    assert_eq!(names, ["intent_vs_result", "checkpoint_integrity", "consent_integrity", "path_safety", "risk_gate", "one_step"]);
    assert_eq!(check(&r, "one_step").message, "one-step mode: the declared single step \"delete target\"");
    assert_eq!(r.remediation, None);
    assert_eq!(f.latch.status(T0 + 13).unwrap().head.event, latch::Event::GatePass);
    // The next action, authorized like the first: the step was taken, so it fails.
    let issued = f.latch.consent_request(T0 + 20, ACTION, "clean again", Risk::Low).unwrap();
    assert!(matches!(f.latch.user_prompt(T0 + 21, &issued.token).unwrap(), Some(PromptOutcome::Confirmed { .. })));
    let r = f.latch.gate(T0 + 22, &input(&f)).unwrap();
    only_failure(&r, "one_step", codes::ONE_STEP_CHECKPOINT_REQUIRED.as_str());
    // A checkpoint without a next step is refused in the mode; one with it makes the mode ready.
    let e = f.latch.checkpoint(T0 + 23, &latch::CheckpointInput::default()).unwrap_err();
    assert_eq!(e.code(), codes::ONE_STEP_NEXT_STEP_REQUIRED.as_str());
    f.latch
        .checkpoint(T0 + 24, &latch::CheckpointInput { next_single_step: Some("delete it again".into()), ..Default::default() })
        .unwrap();
    let r = f.latch.gate(T0 + 25, &input(&f)).unwrap();
    assert!(r.passed, "{r:?}");
    // The context fell again: the mode ends, and the gate has its five checks.
    let cleared = f.latch.turn_ended(&kijito_protocol::ids::SessionId::parse("s1").unwrap(), T0 + 26, Some(0.1)).unwrap();
    assert_eq!(cleared.one_step, None);
    let issued = f.latch.consent_request(T0 + 30, ACTION, "clean once more", Risk::Low).unwrap();
    f.latch.user_prompt(T0 + 31, &issued.token).unwrap();
    let r = f.latch.gate(T0 + 32, &input(&f)).unwrap();
    assert!(r.passed && r.checks.len() == 5, "{r:?}");
}

/// A token-confirmed pass says so (not the wallet's wording).
#[test]
fn a_token_confirmed_pass_names_the_token() {
    let f = authorized(Risk::High);
    let r = f.latch.gate(T0 + 10, &input(&f)).unwrap();
    assert!(r.passed, "{r:?}");
    assert_eq!(check(&r, "consent_integrity").message, "authorized by a confirmed single-use token bound to this action");
}

mod wallet_consent {
    use super::*;
    use k256::ecdsa::SigningKey;
    use kijito_latch::wallet::{self, Setting};

    const VECTORS: &str = include_str!("../../../../fixtures/wallet/eip712-vectors.json");

    fn vector(name: &str) -> String {
        let v: serde_json::Value = serde_json::from_str(VECTORS).unwrap();
        v[name].as_str().unwrap().to_owned()
    }

    fn key(which: &str) -> SigningKey {
        let hex = vector(which).trim_start_matches("0x").to_owned();
        let bytes: Vec<u8> = (0..32).map(|i| u8::from_str_radix(&hex[i * 2..i * 2 + 2], 16).unwrap()).collect();
        SigningKey::from_slice(&bytes).unwrap()
    }

    /// `0x` + r ‖ s ‖ v (v = 27/28), as a wallet's eth_signTypedData_v4 returns it.
    fn sign(k: &SigningKey, digest: &[u8; 32]) -> String {
        let (sig, recid) = k.sign_prehash_recoverable(digest).unwrap();
        format!("0x{}{:02x}", wallet::hex(&sig.to_bytes()), 27 + recid.to_byte())
    }

    fn setting(d: &std::path::Path, ws: &std::path::Path, name: &str, signer: &str) -> Setting {
        let p = d.join(name);
        fs::write(&p, serde_json::json!({"schema": "memory-latch.wallet/v1", "signer": signer}).to_string()).unwrap();
        fs::set_permissions(&p, fs::Permissions::from_mode(0o600)).unwrap();
        let s = Setting::load(&p, true, ws);
        assert!(s.config().is_some(), "{s:?}");
        s
    }

    /// The gate verifies a wallet-confirmed record's stored signature again:
    /// over this action, by its recorded signer, who is the one configured
    /// now (when the caller names one). Each forgery changes one thing.
    #[test]
    fn the_gate_verifies_the_stored_signature_again() {
        let (d, l) = setup();
        let ws = l.paths().root.clone();
        let signer = setting(d.path(), &ws, "wallet.json", &vector("signer_address"));
        let other = setting(d.path(), &ws, "other.json", &vector("other_address"));
        let issued = l.consent_request_with(T0, ACTION, "clean", Risk::High, &signer).unwrap();
        assert!(issued.token.is_empty());
        let challenge = issued.wallet.clone().unwrap();
        let digest = challenge.digest(&issued.record.action_hash).unwrap();
        let good = sign(&key("signer_private_key"), &digest);
        let confirmed = l.user_signature(T0 + 1, &good, &signer).unwrap();
        assert!(matches!(confirmed, Some(PromptOutcome::Confirmed { .. })), "{confirmed:?}");
        let f = Fixture { _dir: d, latch: l, checkpoint: issued.entry.as_ref().unwrap().integrity.payload_hash.clone() };
        let with = |s: &Setting| GateInput { wallet: s.config().cloned(), ..input(&f) };
        let original = fs::read(&f.latch.paths().ledger).unwrap();
        let restore = || fs::write(&f.latch.paths().ledger, &original).unwrap();

        // Another key's signature over the same challenge, stored in its place.
        edit_ledger(&f, |t| t.tokens[0].wallet.as_mut().unwrap().signature = Some(sign(&key("other_private_key"), &digest)));
        only_failure(&f.latch.gate(T0 + 10, &with(&signer)).unwrap(), "consent_integrity", codes::CONSENT_RECORD_MISMATCH.as_str());
        // ... and the record's signer rewritten to that key: it verifies, but not as the configured signer.
        edit_ledger(&f, |t| t.tokens[0].wallet.as_mut().unwrap().signer = vector("other_address").to_lowercase());
        only_failure(&f.latch.gate(T0 + 10, &with(&signer)).unwrap(), "consent_integrity", codes::CONSENT_RECORD_MISMATCH.as_str());
        restore();
        // The signature erased, or the signer not an address.
        edit_ledger(&f, |t| t.tokens[0].wallet.as_mut().unwrap().signature = None);
        only_failure(&f.latch.gate(T0 + 10, &with(&signer)).unwrap(), "consent_integrity", codes::CONSENT_RECORD_MISMATCH.as_str());
        restore();
        edit_ledger(&f, |t| t.tokens[0].wallet.as_mut().unwrap().signer = "0x1234".into());
        only_failure(&f.latch.gate(T0 + 10, &with(&signer)).unwrap(), "consent_integrity", codes::CONSENT_RECORD_MISMATCH.as_str());
        restore();
        // A different signer is configured now.
        only_failure(&f.latch.gate(T0 + 10, &with(&other)).unwrap(), "consent_integrity", codes::CONSENT_RECORD_MISMATCH.as_str());
        // The genuine record with the configured signer passes, once, and says how it was authorized.
        let r = f.latch.gate(T0 + 11, &with(&signer)).unwrap();
        assert!(r.passed, "{r:?}");
        assert_eq!(
            check(&r, "consent_integrity").message,
            "authorized by the configured signer's EIP-712 signature over this action (single-use nonce)"
        );
        assert_eq!(check(&r, "risk_gate").message, "risk high");
        assert_eq!(f.latch.tokens(T0 + 12).unwrap()[0].used_at_ms, Some(T0 + 11));
    }

    /// With no signer configured now (the caller names none), the stored
    /// signature still has to verify for its recorded signer.
    #[test]
    fn without_a_configured_signer_the_recorded_one_must_still_verify() {
        let (d, l) = setup();
        let ws = l.paths().root.clone();
        let signer = setting(d.path(), &ws, "wallet.json", &vector("signer_address"));
        let issued = l.consent_request_with(T0, ACTION, "clean", Risk::High, &signer).unwrap();
        let digest = issued.wallet.clone().unwrap().digest(&issued.record.action_hash).unwrap();
        let good = sign(&key("signer_private_key"), &digest);
        assert!(matches!(l.user_signature(T0 + 1, &good, &signer).unwrap(), Some(PromptOutcome::Confirmed { .. })));
        let f = Fixture { _dir: d, latch: l, checkpoint: issued.entry.as_ref().unwrap().integrity.payload_hash.clone() };
        edit_ledger(&f, |t| t.tokens[0].wallet.as_mut().unwrap().signature = Some(sign(&key("other_private_key"), &digest)));
        only_failure(&f.latch.gate(T0 + 10, &input(&f)).unwrap(), "consent_integrity", codes::CONSENT_RECORD_MISMATCH.as_str());
        edit_ledger(&f, |t| t.tokens[0].wallet.as_mut().unwrap().signature = Some(good.clone()));
        let r = f.latch.gate(T0 + 11, &input(&f)).unwrap();
        assert!(r.passed, "{r:?}");
    }
}

#[test]
fn a_manifest_whose_stored_action_hash_does_not_parse_is_untrusted_with_a_bad_field() {
    let f = authorized(Risk::Low);
    let hash = latch::action_hash(ACTION).unwrap();
    assert_eq!(f.latch.status(T0 + 4).unwrap().head.action_hash, Some(hash.clone()));
    let path = &f.latch.paths().manifest;
    let text = fs::read_to_string(path).unwrap();
    assert!(text.contains(hash.as_str()));
    fs::write(path, text.replace(hash.as_str(), "sha256:xyz")).unwrap();
    let r = f.latch.verify_since(None);
    assert!(!r.trusted, "{r:?}");
    assert!(r.findings.iter().any(|x| x.code == codes::ENTRY_FIELD_INVALID), "{:?}", r.findings);
}

#[test]
fn the_heads_action_hash_is_written_as_none_or_the_hash_text() {
    let (_d, l) = setup();
    let head = |l: &Latch| serde_json::to_value(&l.status(T0 + 9).unwrap().head).unwrap();
    assert_eq!(head(&l)["action_hash"], "none");
    let f = authorized(Risk::Low);
    assert_eq!(head(&f.latch)["action_hash"], latch::action_hash(ACTION).unwrap().as_str());
    let r = f.latch.gate(T0 + 10, &input(&f)).unwrap();
    assert_eq!(serde_json::to_value(&r).unwrap()["action_hash"], latch::action_hash(ACTION).unwrap().as_str());
}
