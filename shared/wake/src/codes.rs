//! The finding table: every code with its severity, the check that reports
//! it and its one recommended single step. docs/wake-check.md (Findings) mirrors it.

use kijito_protocol::error::Kind;
use serde::Serialize;

/// How much a finding weighs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    /// Counts toward `cautious` (1-3) or `degraded` (4 or more).
    Minor,
    /// An integrity failure, a changed/retired pointer or anchor, an
    /// unverifiable manifest, Silent Witness: `degraded` on its own.
    Degrading,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Minor => "minor",
            Severity::Degrading => "degrading",
        }
    }
}

/// One finding kind.
#[derive(Debug, PartialEq, Eq)]
pub struct Spec {
    pub code: &'static str,
    pub severity: Severity,
    pub check: CheckName,
    pub step: &'static str,
}

/// The checks wake-check runs: each finding names the check that reports it,
/// and each check is listed in the report (pass, finding or skipped).
/// Serialised and printed as its snake_case name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CheckName {
    Chain,
    SilentWitness,
    Lock,
    Consent,
    QaDir,
    QaPass,
    QaTicket,
    QaAttempt,
    QaReentry,
    PointerRecord,
    Live,
    Clock,
    Sleep,
    Boot,
    Checkpoint,
}

impl CheckName {
    pub const ALL: [CheckName; 15] = [
        CheckName::Chain,
        CheckName::SilentWitness,
        CheckName::Lock,
        CheckName::Consent,
        CheckName::QaDir,
        CheckName::QaPass,
        CheckName::QaTicket,
        CheckName::QaAttempt,
        CheckName::QaReentry,
        CheckName::PointerRecord,
        CheckName::Live,
        CheckName::Clock,
        CheckName::Sleep,
        CheckName::Boot,
        CheckName::Checkpoint,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            CheckName::Chain => "latch_chain",
            CheckName::SilentWitness => "silent_witness",
            CheckName::Lock => "latch_lock",
            CheckName::Consent => "consent_tokens",
            CheckName::QaDir => "qa_dir",
            CheckName::QaPass => "qa_pass",
            CheckName::QaTicket => "qa_ticket",
            CheckName::QaAttempt => "qa_attempt",
            CheckName::QaReentry => "qa_reentry",
            CheckName::PointerRecord => "pointer_record",
            CheckName::Live => "live_pointer",
            CheckName::Clock => "clock",
            CheckName::Sleep => "long_sleep",
            CheckName::Boot => "boot_id",
            CheckName::Checkpoint => "latch_checkpoint",
        }
    }
}

impl std::fmt::Display for CheckName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for CheckName {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl PartialEq<&str> for CheckName {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

pub const CHECK_CHAIN: CheckName = CheckName::Chain;
pub const CHECK_SILENT_WITNESS: CheckName = CheckName::SilentWitness;
pub const CHECK_LOCK: CheckName = CheckName::Lock;
pub const CHECK_CONSENT: CheckName = CheckName::Consent;
pub const CHECK_QA_DIR: CheckName = CheckName::QaDir;
pub const CHECK_QA_PASS: CheckName = CheckName::QaPass;
pub const CHECK_QA_TICKET: CheckName = CheckName::QaTicket;
pub const CHECK_QA_ATTEMPT: CheckName = CheckName::QaAttempt;
pub const CHECK_QA_REENTRY: CheckName = CheckName::QaReentry;
pub const CHECK_POINTER_RECORD: CheckName = CheckName::PointerRecord;
pub const CHECK_LIVE: CheckName = CheckName::Live;
pub const CHECK_CLOCK: CheckName = CheckName::Clock;
pub const CHECK_SLEEP: CheckName = CheckName::Sleep;
pub const CHECK_BOOT: CheckName = CheckName::Boot;
pub const CHECK_CHECKPOINT: CheckName = CheckName::Checkpoint;

use Severity::{Degrading, Minor};

macro_rules! spec {
    ($name:ident, $code:literal, $sev:expr, $check:expr, $step:literal) => {
        pub const $name: Spec = Spec { code: $code, severity: $sev, check: $check, step: $step };
    };
}

spec!(LONG_SLEEP, "long_sleep", Minor, CHECK_SLEEP,
    "Reload state only from verified sources (memory-latch status, then the pointer) before resuming; treat remembered plans as unconfirmed.");
spec!(
    BOOT_CHANGED,
    "boot_changed",
    Minor,
    CHECK_BOOT,
    "Treat everything not in the verified latch as lost and resume only from its next single step (memory-latch status)."
);
spec!(
    CLOCK_BACKWARDS,
    "clock_backwards",
    Minor,
    CHECK_CLOCK,
    "Correct the system clock (NTP) before trusting any expiry or age, then rerun wake-check."
);
spec!(
    CONSENT_TOKEN_EXPIRED,
    "consent_token_expired",
    Minor,
    CHECK_CONSENT,
    "Request consent again (memory-latch consent request) before the action; the expired token can never authorize it."
);
spec!(
    IRREVERSIBLE_ACTION_PENDING,
    "irreversible_action_pending",
    Minor,
    CHECK_CONSENT,
    "Ask the user to reconfirm the pending irreversible action with a fresh memory-latch consent request before running it."
);
spec!(LATCH_LOCK_STALE, "latch_lock_stale", Minor, CHECK_LOCK,
    "Find the process holding .memory-latch/_manifest.lock and let it finish or stop it (never delete the lock file), then rerun wake-check.");
spec!(
    LATCH_WRITE_INTERRUPTED,
    "latch_write_interrupted",
    Minor,
    CHECK_LOCK,
    "Run memory-latch verify; if it is trusted, remove the leftover .tmp- files in .memory-latch."
);
spec!(QA_PASS_EXPIRED, "qa_pass_expired", Minor, CHECK_QA_PASS, "Invalidate the expired pass with qa-gate invalidate for its session.");
spec!(
    QA_TICKET_ORPHANED,
    "qa_ticket_orphaned",
    Minor,
    CHECK_QA_TICKET,
    "Invalidate the orphaned ticket with qa-gate invalidate for its session (it is never reused)."
);
spec!(
    QA_ATTEMPT_UNCLAIMED,
    "qa_attempt_unclaimed",
    Minor,
    CHECK_QA_ATTEMPT,
    "Invalidate the unclaimed attempt with qa-gate invalidate for its session."
);
spec!(
    QA_REENTRY_UNDELIVERED,
    "qa_reentry_undelivered",
    Minor,
    CHECK_QA_REENTRY,
    "Invalidate the undelivered re-entry record with qa-gate invalidate and re-verify the pointer before resuming that session."
);
spec!(
    QA_STATE_UNREADABLE,
    "qa_state_unreadable",
    Minor,
    CHECK_QA_DIR,
    "Invalidate the unreadable state with qa-gate invalidate for its session."
);
spec!(
    POINTER_RECORD_MISSING,
    "pointer_record_missing",
    Minor,
    CHECK_POINTER_RECORD,
    "Record a QA pass (qa-gate record after two green pointer-snapshot reports) so wake-check --live has an expectation."
);
spec!(
    LIVE_UNAVAILABLE,
    "live_unavailable",
    Minor,
    CHECK_LIVE,
    "Check the network, the config and the token file, then rerun wake-check --live."
);
spec!(NOTHING_VERIFIABLE, "nothing_verifiable", Minor, CHECK_CHAIN,
    "Nothing local could be verified (no latch and no QA state): confirm the objective and every remembered plan with the user before acting.");
spec!(
    WORKSPACE_MISSING,
    "workspace_missing",
    Minor,
    CHECK_CHAIN,
    "The workspace does not exist: confirm with the user where work continues, then run wake-check --workspace DIR there."
);
spec!(LATCH_DELETED, "latch_deleted", Degrading, CHECK_CHAIN,
    "The latch was deleted since its head record: stop, show the user, and let a person decide (restore .memory-latch, or remove the head record and init).");
spec!(LATCH_UNTRUSTED, "latch_untrusted", Degrading, CHECK_CHAIN,
    "Stop and show the user memory-latch verify's findings; write nothing until a human reviews (memory-latch reseed with the user's token).");
spec!(
    LATCH_UNVERIFIABLE,
    "latch_unverifiable",
    Degrading,
    CHECK_CHAIN,
    "Provide the hmac key (MEMORY_LATCH_HMAC_KEY_FILE) and rerun wake-check; until then treat the latch as untrusted."
);
spec!(
    SILENT_WITNESS,
    "silent_witness",
    Degrading,
    CHECK_SILENT_WITNESS,
    "Stay in Silent Witness: show the user the incident summary (memory-latch recover) and wait for a reseed token."
);
spec!(LATCH_DEGRADED_UNREVIEWED, "latch_degraded_unreviewed", Degrading, CHECK_CHAIN,
    "Show the user the findings, run memory-latch review and ask the user to send its token alone as their own message (a checkpoint does not end degraded mode).");
spec!(
    LATCH_STATE_INVALID,
    "latch_state_invalid",
    Degrading,
    CHECK_CHAIN,
    "Show the user the error (memory-latch verify and status) and fix the latch files before any write."
);
spec!(
    QA_DIR_INSECURE,
    "qa_dir_insecure",
    Degrading,
    CHECK_QA_DIR,
    "Show the user the listed paths and restore owner-only state (qa/ 0700, files 0600, no symlinks); trust no gate state until then."
);
spec!(
    POINTER_RECORD_INVALID,
    "pointer_record_invalid",
    Degrading,
    CHECK_POINTER_RECORD,
    "Trust no recorded pointer: verify the pointer by its configured id with pointer-snapshot and record a fresh pass."
);
spec!(
    LIVE_POINTER_RETIRED,
    "live_pointer_retired",
    Degrading,
    CHECK_LIVE,
    "Do not resume the pointer's nextAction: show the user that the pointer is retired and wait for a new pointer id."
);
spec!(
    LIVE_POINTER_CHANGED,
    "live_pointer_changed",
    Degrading,
    CHECK_LIVE,
    "Do not resume the remembered nextAction: re-verify the pointer with pointer-snapshot and review the change with the user."
);
spec!(
    LIVE_ANCHOR_RETIRED,
    "live_anchor_retired",
    Degrading,
    CHECK_LIVE,
    "Do not rely on the eroded anchor: show the user and publish a reviewed pointer that retires it."
);
spec!(
    LIVE_ANCHOR_CHANGED,
    "live_anchor_changed",
    Degrading,
    CHECK_LIVE,
    "Do not rely on the changed anchor: show the user the digest difference and publish a reviewed pointer."
);
spec!(
    LIVE_SNAPSHOT_CHANGED,
    "live_snapshot_changed",
    Degrading,
    CHECK_LIVE,
    "Do not resume: re-verify with pointer-snapshot and review the snapshot change with the user."
);
spec!(
    LIVE_CONTROL_FAILED,
    "live_control_failed",
    Degrading,
    CHECK_LIVE,
    "Stop: the known-bad control failed, so this build cannot classify memories; reinstall the toolkit."
);
spec!(
    LIVE_VERIFICATION_FAILED,
    "live_verification_failed",
    Degrading,
    CHECK_LIVE,
    "Do not resume: show the user the verification failure and re-verify with pointer-snapshot."
);
spec!(LATCH_CHECKPOINT_INCONSISTENT, "latch_checkpoint_inconsistent", Degrading, CHECK_CHECKPOINT,
    "Stop: the history was rewritten or rolled back since the last checkpoint; show the user memory-latch verify --since-checkpoint with their saved checkpoint and write nothing until a human reviews.");
spec!(LATCH_CHECKPOINT_INVALID, "latch_checkpoint_invalid", Degrading, CHECK_CHECKPOINT,
    "Show the user the error and memory-latch verify; trust no history older than the last entry until a human reviews the saved checkpoint.");

/// Every finding kind (docs and tests iterate this).
pub const ALL: &[&Spec] = &[
    &LONG_SLEEP,
    &BOOT_CHANGED,
    &CLOCK_BACKWARDS,
    &CONSENT_TOKEN_EXPIRED,
    &IRREVERSIBLE_ACTION_PENDING,
    &LATCH_LOCK_STALE,
    &LATCH_WRITE_INTERRUPTED,
    &QA_PASS_EXPIRED,
    &QA_TICKET_ORPHANED,
    &QA_ATTEMPT_UNCLAIMED,
    &QA_REENTRY_UNDELIVERED,
    &QA_STATE_UNREADABLE,
    &POINTER_RECORD_MISSING,
    &LIVE_UNAVAILABLE,
    &NOTHING_VERIFIABLE,
    &WORKSPACE_MISSING,
    &LATCH_DELETED,
    &LATCH_UNTRUSTED,
    &LATCH_UNVERIFIABLE,
    &SILENT_WITNESS,
    &LATCH_DEGRADED_UNREVIEWED,
    &LATCH_STATE_INVALID,
    &LATCH_CHECKPOINT_INCONSISTENT,
    &LATCH_CHECKPOINT_INVALID,
    &QA_DIR_INSECURE,
    &POINTER_RECORD_INVALID,
    &LIVE_POINTER_RETIRED,
    &LIVE_POINTER_CHANGED,
    &LIVE_ANCHOR_RETIRED,
    &LIVE_ANCHOR_CHANGED,
    &LIVE_SNAPSHOT_CHANGED,
    &LIVE_CONTROL_FAILED,
    &LIVE_VERIFICATION_FAILED,
];

/// The finding for a failed `--live` verification, by error kind and code.
/// Service, token, config and local file failures ([`Kind::Service`],
/// [`Kind::HttpStatus`], [`Kind::Local`]) only make the check unavailable
/// (minor); a changed or retired pointer or anchor degrades; anything unknown
/// degrades (fail closed).
pub fn live_spec(code: &str, kind: Kind) -> &'static Spec {
    use kijito_protocol::codes::snapshot as s;
    if kind.is_service() || kind == Kind::Local {
        return &LIVE_UNAVAILABLE;
    }
    match s::Code::parse(code) {
        Some(s::POINTER_RETIRED) => &LIVE_POINTER_RETIRED,
        Some(s::POINTER_DIGEST_MISMATCH) => &LIVE_POINTER_CHANGED,
        Some(s::ANCHOR_RETIRED) => &LIVE_ANCHOR_RETIRED,
        Some(s::ANCHOR_DIGEST_MISMATCH) => &LIVE_ANCHOR_CHANGED,
        Some(s::SNAPSHOT_DIGEST_MISMATCH) => &LIVE_SNAPSHOT_CHANGED,
        _ if kijito_protocol::render::Code::parse(code) == Some(kijito_protocol::render::KNOWN_BAD_CONTROL_FAILED) => &LIVE_CONTROL_FAILED,
        _ => &LIVE_VERIFICATION_FAILED,
    }
}
