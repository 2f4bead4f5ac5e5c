#![allow(clippy::unwrap_used)]
use super::*;
use kijito_latch::chain::{Depth, REPORT_SCHEMA};
use kijito_latch::tokens::Purpose;
use kijito_latch::{ConsentState, Event, Risk};
use kijito_protocol::error::Kind;
use kijito_protocol::ids::{Digest, MemoryId, MessageId};

const NOW: u64 = 1_800_000_000_000;
const HOUR: u64 = 3_600_000;
const BOOT: &str = "0f0e0d0c-0b0a-0908-0706-050403020100";

fn head(at: u64) -> EntrySummary {
    EntrySummary {
        seq: 7,
        event: Event::Checkpoint,
        updated_at: "t".into(),
        updated_at_ms: at,
        boot_id: BOOT.into(),
        consent_state: ConsentState::Pending,
        irreversible_action_pending: "none".into(),
        action_hash: None,
        risk_level: Risk::Low,
        recovery_attempts: 0,
        silent_witness: false,
        payload_hash: "sha256:00".into(),
        mode: kijito_latch::Mode::Checksum,
    }
}

fn verify(at: u64) -> VerifyReport {
    VerifyReport {
        schema: REPORT_SCHEMA,
        depth: Depth::SealedByHash,
        trusted: true,
        initialised: true,
        mode: ReportMode::Checksum,
        entries: 7,
        segments: 0,
        head: Some(head(at)),
        findings: Vec::new(),
        silent_witness: false,
        notes: Vec::new(),
        tree_head: None,
    }
}

fn latch_at(at: u64) -> LatchState {
    LatchState {
        verify: verify(at),
        lock: Ok(LockProbe { exists: true, held: false, age_ms: 0, interrupted_writes: 0 }),
        tokens: Ok(Vec::new()),
        witness_error: None,
        checkpoint: Ok(None),
        before_wake: None,
    }
}

fn consistency(consistent: bool) -> kijito_latch::checkpoint::Consistency {
    kijito_latch::checkpoint::Consistency {
        consistent,
        from_size: 257,
        to_size: 300,
        from_root: "ab".repeat(32),
        to_root: None,
        proof_hashes: 9,
        signed_by: None,
        message: if consistent { "extends".into() } else { "entry 257 differs: the history was rewritten".into() },
    }
}

fn qa() -> QaState {
    QaState {
        insecure: Vec::new(),
        unreadable: Vec::new(),
        passes: Vec::new(),
        tickets: Vec::new(),
        attempts: Vec::new(),
        reentries: Vec::new(),
        newest_mtime_ms: Some(NOW - HOUR),
        pointer_record: PointerRecord::Missing,
    }
}

/// A healthy world: latch written an hour ago on this boot, an empty QA dir.
fn base() -> Facts {
    Facts {
        now_ms: NOW,
        long_sleep_after_ms: 86_400_000,
        boot_id: Some(BOOT.into()),
        latch: LatchFacts::Present(Box::new(latch_at(NOW - HOUR))),
        qa: QaFacts::Present(qa()),
        live: LiveFacts::NotAsked,
        names: StepNames { data_dir: Some("/d".into()), helpers: Some("/root/bin".into()) },
    }
}

fn latch_mut(f: &mut Facts) -> &mut LatchState {
    match &mut f.latch {
        LatchFacts::Present(l) => l,
        _ => unreachable!(),
    }
}

fn qa_mut(f: &mut Facts) -> &mut QaState {
    match &mut f.qa {
        QaFacts::Present(q) => q,
        QaFacts::Absent(_) => unreachable!(),
    }
}

fn stamp(s: &str, at: u64) -> Stamp {
    Stamp { session: SessionId::parse(s).unwrap(), at_ms: at as i64 }
}

fn token(id: &str, status: TokenStatus) -> TokenState {
    TokenState {
        id: id.into(),
        purpose: Purpose::Consent,
        action_hash: kijito_protocol::ids::ActionHash::of_canonical(b"aa"),
        risk: Risk::High,
        summary: "drop the table".into(),
        issued_at_ms: NOW - HOUR,
        expires_at_ms: NOW - HOUR + 600_000,
        used_at_ms: None,
        confirmed_at_ms: None,
        reconfirmed_at_ms: None,
        failed_attempts: 0,
        status,
    }
}

fn codes_of(r: &Report) -> Vec<&'static str> {
    r.findings.iter().map(|f| f.code).collect()
}

fn recorded() -> Recorded {
    Recorded {
        pointer_id: MemoryId::new(5).unwrap(),
        lock_message_id: MessageId::new(6).unwrap(),
        pointer_digest: Digest::of(b"p"),
        snapshot_digest: Digest::of(b"s"),
        recorded_at_ms: (NOW - HOUR) as i64,
    }
}

/// Each minor finding producer, applied k times gives k findings.
fn add_minor(f: &mut Facts, i: usize) {
    match i {
        0 => {
            latch_mut(f).verify.head.as_mut().unwrap().updated_at_ms = NOW - 3 * 86_400_000;
            qa_mut(f).newest_mtime_ms = Some(NOW - 3 * 86_400_000);
        }
        1 => f.boot_id = Some("11111111-2222-3333-4444-555555555555".into()),
        2 => qa_mut(f).passes.push(stamp("s1", NOW - 2 * HOUR)),
        3 => qa_mut(f).tickets.push(SessionId::parse("s2").unwrap()),
        4 => qa_mut(f).attempts.push(stamp("s3", NOW - HOUR)),
        5 => qa_mut(f).reentries.push(stamp("s4", NOW - 2 * HOUR)),
        _ => unreachable!(),
    }
}

#[test]
fn healthy_world_is_full_trust() {
    let r = assess(&base());
    assert_eq!(r.mode, Mode::FullTrust, "{:?}", r.findings);
    assert!(r.findings.is_empty());
    assert_eq!(r.slept_for_seconds, Some(3600));
    assert!(!r.long_sleep && !r.boot_changed);
    assert!(r.checks.iter().all(|c| c.status != CheckStatus::Finding));
    assert_eq!(r.mode.exit_status(), 0);
}

#[test]
fn thresholds_at_0_1_3_4_5_minor_findings() {
    for (n, want) in [(0, Mode::FullTrust), (1, Mode::Cautious), (3, Mode::Cautious), (4, Mode::Degraded), (5, Mode::Degraded)] {
        let mut f = base();
        for i in 0..n {
            add_minor(&mut f, i);
        }
        let r = assess(&f);
        assert_eq!(r.findings.len(), n, "{n}: {:?}", codes_of(&r));
        assert!(r.findings.iter().all(|x| x.severity == Severity::Minor));
        assert_eq!(r.mode, want, "{n} minor findings");
    }
    assert_eq!(Mode::Cautious.exit_status(), 10);
    assert_eq!(Mode::Degraded.exit_status(), 20);
}

#[test]
fn one_degrading_finding_is_degraded_on_its_own() {
    let mut f = base();
    latch_mut(&mut f).verify.silent_witness = true;
    let r = assess(&f);
    assert_eq!(codes_of(&r), vec!["silent_witness"]);
    assert_eq!(r.mode, Mode::Degraded);
}

/// Every finding code from a crafted fact set; severity and check as in the table.
#[test]
fn every_code_from_crafted_facts() {
    type Craft = fn(&mut Facts);
    let cases: Vec<(&Spec, Craft)> = vec![
        (&codes::LONG_SLEEP, |f| add_minor(f, 0)),
        (&codes::BOOT_CHANGED, |f| add_minor(f, 1)),
        (&codes::CLOCK_BACKWARDS, |f| f.now_ms = NOW - 2 * HOUR),
        (&codes::CONSENT_TOKEN_EXPIRED, |f| {
            let l = latch_mut(f);
            l.verify.head.as_mut().unwrap().irreversible_action_pending = "tok_1".into();
            l.tokens = Ok(vec![token("tok_1", TokenStatus::Expired)]);
        }),
        (&codes::IRREVERSIBLE_ACTION_PENDING, |f| {
            let l = latch_mut(f);
            l.verify.head.as_mut().unwrap().irreversible_action_pending = "tok_1".into();
            l.verify.head.as_mut().unwrap().consent_state = ConsentState::Authorized;
        }),
        (&codes::LATCH_LOCK_STALE, |f| latch_mut(f).lock = Ok(LockProbe { exists: true, held: true, age_ms: 9, interrupted_writes: 0 })),
        (&codes::LATCH_WRITE_INTERRUPTED, |f| {
            latch_mut(f).lock = Ok(LockProbe { exists: true, held: false, age_ms: 9, interrupted_writes: 2 })
        }),
        (&codes::QA_PASS_EXPIRED, |f| add_minor(f, 2)),
        (&codes::QA_TICKET_ORPHANED, |f| add_minor(f, 3)),
        (&codes::QA_ATTEMPT_UNCLAIMED, |f| add_minor(f, 4)),
        (&codes::QA_REENTRY_UNDELIVERED, |f| add_minor(f, 5)),
        (&codes::QA_STATE_UNREADABLE, |f| {
            qa_mut(f).unreadable.push((SessionId::parse("s9").unwrap(), "qa-pass.s9.json: pass_invalid".into()))
        }),
        (&codes::POINTER_RECORD_MISSING, |f| f.live = LiveFacts::NoRecord),
        (&codes::LIVE_UNAVAILABLE, |f| {
            f.live = LiveFacts::Failed { code: "kijito_network_error".into(), message: "down".into(), kind: Kind::Service }
        }),
        (&codes::NOTHING_VERIFIABLE, |f| {
            f.latch = LatchFacts::Absent;
            f.qa = QaFacts::Absent("no data dir".into());
        }),
        (&codes::WORKSPACE_MISSING, |f| f.latch = LatchFacts::WorkspaceMissing("/gone: No such file or directory".into())),
        (&codes::LATCH_DELETED, |f| f.latch = LatchFacts::Deleted { entry_seq: Some(7) }),
        (&codes::LATCH_UNTRUSTED, |f| {
            let v = &mut latch_mut(f).verify;
            v.trusted = false;
            v.findings.push(kijito_latch::Finding::new(kijito_latch::codes::PAYLOAD_HASH_MISMATCH, "entry 3", Some(3)));
        }),
        (&codes::LATCH_UNVERIFIABLE, |f| {
            let v = &mut latch_mut(f).verify;
            v.trusted = false;
            v.mode = ReportMode::Unverifiable;
        }),
        (&codes::SILENT_WITNESS, |f| latch_mut(f).verify.silent_witness = true),
        (&codes::LATCH_DEGRADED_UNREVIEWED, |f| {
            let h = latch_mut(f).verify.head.as_mut().unwrap();
            h.event = Event::DegradedMode;
            h.consent_state = ConsentState::Locked;
        }),
        (&codes::LATCH_STATE_INVALID, |f| latch_mut(f).tokens = Err("latch_ledger_invalid: bad".into())),
        (&codes::LATCH_CHECKPOINT_INCONSISTENT, |f| latch_mut(f).checkpoint = Ok(Some(consistency(false)))),
        (&codes::LATCH_CHECKPOINT_INVALID, |f| {
            latch_mut(f).checkpoint = Err("latch_checkpoint_state_invalid: does not fold to its root".into())
        }),
        (&codes::QA_DIR_INSECURE, |f| qa_mut(f).insecure.push("qa dir: directory_permissions_too_open".into())),
        (&codes::POINTER_RECORD_INVALID, |f| qa_mut(f).pointer_record = PointerRecord::Invalid("not JSON".into())),
        (&codes::LIVE_POINTER_RETIRED, |f| {
            f.live = LiveFacts::Failed { code: "pointer_retired".into(), message: "m".into(), kind: Kind::Refused }
        }),
        (&codes::LIVE_POINTER_CHANGED, |f| {
            f.live = LiveFacts::Failed { code: "pointer_digest_mismatch".into(), message: "m".into(), kind: Kind::Refused }
        }),
        (&codes::LIVE_ANCHOR_RETIRED, |f| {
            f.live = LiveFacts::Failed { code: "current_anchor_retired".into(), message: "m".into(), kind: Kind::Refused }
        }),
        (&codes::LIVE_ANCHOR_CHANGED, |f| {
            f.live = LiveFacts::Failed { code: "anchor_digest_mismatch".into(), message: "m".into(), kind: Kind::Refused }
        }),
        (&codes::LIVE_SNAPSHOT_CHANGED, |f| {
            f.live = LiveFacts::Failed { code: "snapshot_digest_mismatch".into(), message: "m".into(), kind: Kind::Refused }
        }),
        (&codes::LIVE_CONTROL_FAILED, |f| {
            f.live = LiveFacts::Failed { code: "known_bad_control_failed".into(), message: "m".into(), kind: Kind::Refused }
        }),
        (&codes::LIVE_VERIFICATION_FAILED, |f| {
            f.live = LiveFacts::Failed { code: "memory_lifecycle_unclassified".into(), message: "m".into(), kind: Kind::Refused }
        }),
    ];
    assert_eq!(cases.len(), codes::ALL.len(), "one case per code");
    for (spec, craft) in cases {
        let mut f = base();
        if matches!(f.live, LiveFacts::NotAsked) && spec.check == codes::CHECK_LIVE {
            qa_mut(&mut f).pointer_record = PointerRecord::Valid(recorded());
        }
        craft(&mut f);
        let r = assess(&f);
        let found =
            r.findings.iter().find(|x| x.code == spec.code).unwrap_or_else(|| panic!("{} not found in {:?}", spec.code, codes_of(&r)));
        assert_eq!(found.severity, spec.severity, "{}", spec.code);
        assert_eq!(found.check, spec.check, "{}", spec.code);
        assert!(!found.step.is_empty() && !found.message.is_empty());
        let want = if spec.severity == Severity::Degrading { Mode::Degraded } else { Mode::Cautious };
        assert_eq!(r.mode, want, "{}: {:?}", spec.code, codes_of(&r));
        let check = r.checks.iter().find(|c| c.name == spec.check).unwrap();
        assert_eq!(check.status, CheckStatus::Finding, "{}", spec.code);
    }
}

#[test]
fn clock_backwards_hides_the_sleep_length() {
    let mut f = base();
    f.now_ms = NOW - 3 * HOUR;
    let r = assess(&f);
    assert_eq!(codes_of(&r), vec!["clock_backwards"]);
    assert_eq!(r.slept_for_seconds, None);
    assert!(!r.long_sleep);
    // Within the tolerance it is not a finding.
    f.now_ms = NOW - HOUR - CLOCK_TOLERANCE_MS;
    assert!(assess(&f).findings.is_empty());
}

/// A wake-check's own `wake_findings` record does not end the long sleep or
/// the boot change for the next check: both are measured from the newest
/// entry before it that is not one.
#[test]
fn a_wake_findings_head_is_measured_from_the_entry_before_it() {
    let mut f = base();
    f.qa = QaFacts::Absent("none".into());
    let l = latch_mut(&mut f);
    let mut earlier = l.verify.head.clone().unwrap();
    earlier.updated_at_ms = NOW - 3 * 24 * HOUR;
    earlier.boot_id = "11111111-2222-3333-4444-555555555555".into();
    let h = l.verify.head.as_mut().unwrap();
    h.event = kijito_latch::Event::WakeFindings;
    h.updated_at_ms = NOW - 60_000;
    l.before_wake = Some(earlier);
    let r = assess(&f);
    assert!(r.long_sleep && r.boot_changed, "{:?}", codes_of(&r));
    assert_eq!(r.slept_for_seconds, Some(3 * 24 * 3600));
    // Any other head event is measured from the head itself.
    latch_mut(&mut f).verify.head.as_mut().unwrap().event = kijito_latch::Event::Checkpoint;
    let r = assess(&f);
    assert!(!r.long_sleep && !r.boot_changed, "{:?}", codes_of(&r));
}

#[test]
fn long_sleep_uses_the_newest_of_latch_and_qa_and_the_threshold() {
    let mut f = base();
    latch_mut(&mut f).verify.head.as_mut().unwrap().updated_at_ms = NOW - 10 * HOUR;
    qa_mut(&mut f).newest_mtime_ms = Some(NOW - 2 * HOUR);
    f.long_sleep_after_ms = 3 * HOUR;
    let r = assess(&f);
    assert_eq!(r.slept_for_seconds, Some(7200));
    assert!(!r.long_sleep);
    f.long_sleep_after_ms = 2 * HOUR;
    assert!(assess(&f).long_sleep);
    // An untrusted head does not count as a verified record.
    let mut f = base();
    f.qa = QaFacts::Absent("none".into());
    latch_mut(&mut f).verify.trusted = false;
    assert_eq!(assess(&f).slept_for_seconds, None);
}

#[test]
fn unknown_boot_ids_are_not_a_change() {
    let mut f = base();
    f.boot_id = None;
    assert!(!assess(&f).boot_changed);
    let mut f = base();
    latch_mut(&mut f).verify.head.as_mut().unwrap().boot_id = "unknown".into();
    f.boot_id = Some("11111111-2222-3333-4444-555555555555".into());
    let r = assess(&f);
    assert!(!r.boot_changed);
    assert_eq!(r.checks.iter().find(|c| c.name == codes::CHECK_BOOT).unwrap().status, CheckStatus::Skipped);
}

#[test]
fn a_fresh_ticket_with_a_live_attempt_is_not_orphaned() {
    let mut f = base();
    qa_mut(&mut f).tickets.push(SessionId::parse("s").unwrap());
    qa_mut(&mut f).attempts.push(stamp("s", NOW - 60_000));
    assert!(assess(&f).findings.is_empty());
    // The same attempt past its window: both the attempt and the ticket.
    qa_mut(&mut f).attempts[0].at_ms = (NOW - 6 * 60_000) as i64;
    let r = assess(&f);
    assert_eq!(codes_of(&r), vec!["qa_ticket_orphaned", "qa_attempt_unclaimed"]);
}

#[test]
fn qa_steps_name_the_session_and_the_exact_helper() {
    let mut f = base();
    add_minor(&mut f, 2);
    let r = assess(&f);
    assert_eq!(r.findings[0].step, "Run `/root/bin/qa-gate invalidate --session-id s1 --data-dir /d`.");
}

#[test]
fn json_report_has_exactly_the_documented_keys() {
    let mut f = base();
    add_minor(&mut f, 1);
    let v = assess(&f).to_json();
    let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(keys, ["schema", "mode", "sleptForSeconds", "longSleep", "bootChanged", "findings", "checks", "checkedAtMs"]);
    assert_eq!(v["schema"], SCHEMA);
    assert_eq!(v["mode"], "cautious");
    assert_eq!(v["findings"][0]["code"], "boot_changed");
    assert_eq!(v["findings"][0]["severity"], "minor");
    assert_eq!(v["checkedAtMs"], NOW);
}

#[test]
fn degraded_details_exclude_the_unreviewed_marker_and_are_bounded() {
    let mut r = assess(&base());
    let one = Finding { code: "x", severity: Severity::Minor, check: codes::CHECK_CHAIN, message: "m".into(), step: "do\tit".into() };
    r.findings = vec![one; 40];
    r.findings.push(Finding {
        code: codes::LATCH_DEGRADED_UNREVIEWED.code,
        severity: Severity::Degrading,
        check: codes::CHECK_CHAIN,
        message: "m".into(),
        step: "s".into(),
    });
    let d = degraded_details(&r);
    assert_eq!(d.len(), latch::MAX_LIST_ITEMS);
    assert_eq!(d[0], "x (minor): do it");
    assert!(d.last().unwrap().starts_with("and 9 more"));
    assert!(d.iter().all(|l| !l.contains("latch_degraded_unreviewed")));
}

#[test]
fn live_codes_map_fail_closed() {
    assert_eq!(codes::live_spec("kijito_http_500", Kind::HttpStatus(500)).code, "live_unavailable");
    assert_eq!(codes::live_spec("token_file_not_found", Kind::Local).code, "live_unavailable");
    assert_eq!(codes::live_spec("pointer_manifest_invalid", Kind::Refused).code, "live_verification_failed");
    assert_eq!(codes::live_spec("anything_new", Kind::Refused).severity, Severity::Degrading);
}

#[test]
fn hook_context_names_mode_findings_and_steps() {
    let mut f = base();
    add_minor(&mut f, 0);
    let t = assess(&f).hook_context();
    assert!(t.contains("CAUTIOUS") && t.contains("Long sleep detected") && t.contains("long_sleep (minor)") && t.contains("Step: Reload"));
}

#[test]
fn live_mapping_follows_the_kind_not_the_spelling() {
    // A refusal whose code merely looks like a transport code still degrades.
    assert_eq!(codes::live_spec("kijito_network_error", Kind::Refused).code, "live_verification_failed");
    assert_eq!(codes::live_spec("pointer_retired", Kind::Service).code, "live_unavailable");
}

#[test]
fn the_checkpoint_check_passes_skips_and_is_not_asked_on_an_untrusted_chain() {
    let status = |f: &Facts| assess(f).checks.iter().find(|c| c.name == codes::CHECK_CHECKPOINT).unwrap().status;
    let mut f = base();
    assert_eq!(status(&f), CheckStatus::Skipped);
    latch_mut(&mut f).checkpoint = Ok(Some(consistency(true)));
    assert_eq!((status(&f), assess(&f).mode), (CheckStatus::Pass, Mode::FullTrust));
    latch_mut(&mut f).checkpoint = Ok(Some(consistency(false)));
    latch_mut(&mut f).verify.trusted = false;
    latch_mut(&mut f).verify.findings.push(kijito_latch::Finding::new(kijito_latch::codes::CHAIN_BROKEN, "entry 3", Some(3)));
    let r = assess(&f);
    assert_eq!(status(&f), CheckStatus::Skipped);
    assert!(!codes_of(&r).contains(&"latch_checkpoint_inconsistent"));
}
