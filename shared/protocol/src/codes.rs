//! The error-code registry: every stable code a library error carries, one
//! submodule per area, snake_case values (what binaries print as
//! `kijito_<tool>_failed:<code>`, see `kijito_cli::report_failure`).
//! Constant names are the code in SCREAMING_SNAKE_CASE, shortened within
//! their area. Crates re-export their area as `<module>::codes`. Control flow
//! never matches a code's spelling: it uses [`crate::error::Kind`] or compares
//! with a constant here ([`crate::error::Error::is`]).

/// Codes of the verifier (docs/protocol.md §5).
pub mod snapshot {
    pub const POINTER_RETIRED: &str = "pointer_retired";
    pub const POINTER_DIGEST_MISMATCH: &str = "pointer_digest_mismatch";
    pub const ANCHOR_RETIRED: &str = "current_anchor_retired";
    pub const ANCHOR_DIGEST_MISMATCH: &str = "anchor_digest_mismatch";
    pub const SNAPSHOT_DIGEST_MISMATCH: &str = "snapshot_digest_mismatch";
    pub const REPORT_FILE: &str = "report_file_invalid";
    /// The running executable could not be hashed (`verifierSha256`).
    pub const VERIFIER_UNREADABLE: &str = "verifier_unreadable";
}

/// The helper command grammar and guard (docs/protocol.md §8).
pub mod command {
    pub const EMPTY: &str = "command_empty";
    pub const TOO_LONG: &str = "command_too_long";
    pub const CONTROL: &str = "command_control_character";
    pub const METACHARACTER: &str = "command_metacharacter";
    pub const ENV_ASSIGNMENT: &str = "command_env_assignment";
    pub const PROGRAM_NOT_ABSOLUTE: &str = "command_program_not_absolute";
    pub const PATH_TRAVERSAL: &str = "command_path_traversal";
    pub const UNKNOWN_HELPER: &str = "command_unknown_helper";
    pub const FOREIGN_ROOT: &str = "command_foreign_root";
    pub const MISSING_SUBCOMMAND: &str = "command_missing_subcommand";
    pub const UNKNOWN_SUBCOMMAND: &str = "command_unknown_subcommand";
    pub const UNKNOWN_FLAG: &str = "command_unknown_flag";
    pub const DUPLICATE_FLAG: &str = "command_duplicate_flag";
    pub const MISSING_VALUE: &str = "command_missing_value";
    pub const EXTRA_WORD: &str = "command_extra_word";
    pub const MISSING_FLAG: &str = "command_missing_flag";
    pub const FLAG_CONFLICT: &str = "command_flag_conflict";
    pub const INVALID_ID: &str = "command_invalid_id";
    pub const INVALID_DIGEST: &str = "command_invalid_digest";
    pub const INVALID_SESSION_ID: &str = "command_invalid_session_id";
    pub const INVALID_PATH: &str = "command_invalid_path";
    pub const INVALID_VALUE: &str = "command_invalid_value";
    pub const ROOT_UNKNOWN: &str = "command_root_unknown";
    /// A tool call's argv array that is not one exact helper command.
    pub const ARGV_INVALID: &str = "command_argv_invalid";
    /// A command only the user runs in their own terminal (`memory-latch
    /// approve`): never the agent's, in any form.
    pub const USER_ONLY: &str = "command_user_only";
}

/// Private files and directories.
pub mod files {
    pub const NOT_FOUND: &str = "file_not_found";
    pub const SYMLINK: &str = "file_is_symlink";
    pub const NOT_REGULAR: &str = "file_not_regular";
    pub const NOT_OWNED: &str = "file_not_owned";
    pub const PERMISSIONS: &str = "file_permissions_too_open";
    pub const TOO_LARGE: &str = "file_too_large";
    pub const TOO_SMALL: &str = "file_too_small";
    pub const CHANGED: &str = "file_changed_during_read";
    pub const READ: &str = "file_read_failed";
    pub const EXISTS: &str = "file_exists";
    pub const WRITE: &str = "file_write_failed";
    pub const DIR_SYMLINK: &str = "directory_is_symlink";
    pub const DIR_NOT_DIR: &str = "directory_not_directory";
    pub const DIR_NOT_OWNED: &str = "directory_not_owned";
    pub const DIR_PERMISSIONS: &str = "directory_permissions_too_open";
    pub const DIR_MISSING: &str = "directory_missing";
    pub const DIR_CREATE: &str = "directory_create_failed";
}

/// The config file.
pub mod config {
    pub const INVALID: &str = "config_invalid";
    pub const UNKNOWN_KEY: &str = "config_unknown_key";
    pub const API_URL: &str = "config_api_url_refused";
    pub const HOME: &str = "config_home_unknown";
    pub const PLUGIN_OPTION: &str = "config_plugin_option_invalid";
}

/// The data directory.
pub mod data_dir {
    pub const INVALID: &str = "data_dir_invalid";
    pub const UNUSABLE: &str = "data_dir_unusable";
}

/// The bearer token file.
pub mod token {
    pub const INVALID: &str = "token_invalid";
}

/// The Kijito service transport (errors of [`crate::error::Kind::Service`] / `HttpStatus`).
pub mod http {
    pub const TIMEOUT: &str = "kijito_timeout";
    pub const INVALID_JSON: &str = "kijito_invalid_json";
    pub const RESPONSE_INVALID: &str = "kijito_response_invalid";
    pub const TOO_LARGE: &str = "kijito_response_too_large";
    pub const REDIRECT: &str = "kijito_redirect_refused";
    pub const NETWORK: &str = "kijito_network_error";
    pub fn http(status: u16) -> String {
        format!("kijito_http_{status}")
    }
}

/// pointer-publish (docs/protocol.md §4).
pub mod publish {
    pub const MUTEX_UNAVAILABLE: &str = "pointer_mutex_unavailable";
    pub const MUTEX_EXPIRED: &str = "pointer_mutex_expired_requires_human";
    pub const CONFLICT: &str = "pointer_publish_conflict";
    pub const OWNERSHIP_LOST: &str = "pointer_mutex_ownership_lost";
    pub const OWNERSHIP_UNVERIFIED: &str = "pointer_mutex_ownership_unverified";
    pub const RECONCILIATION_UNAVAILABLE: &str = "pointer_publish_reconciliation_unavailable";
    pub const RECONCILIATION_FAILED: &str = "pointer_publish_reconciliation_failed";
    pub const NOT_FOUND_OR_FORBIDDEN: &str = "pointer_publish_not_found_or_forbidden";
    pub const NOT_COMMITTED: &str = "pointer_publish_not_committed";
    pub const CLOBBER: &str = "pointer_publish_concurrent_clobber";
    pub const RELEASE_FAILED: &str = "pointer_mutex_release_failed";
    pub const PUBLISH_AND_RELEASE_FAILED: &str = "pointer_publish_and_release_failed";
    pub const CONTENT_FILE: &str = "content_file_invalid";
    pub const ROLLBACK_PATH: &str = "rollback_file_invalid";
    pub const ROLLBACK_ARTIFACT: &str = "rollback_artifact_invalid";
}

/// The QA pass and its transcript binding (docs/protocol.md §7).
pub mod pass {
    pub const PASS_INVALID: &str = "pass_invalid";
    pub const PASS_SESSION: &str = "pass_session_mismatch";
    pub const PASS_STALE: &str = "pass_stale";
    pub const PASS_FUTURE: &str = "pass_from_future";
    pub const PASS_MISSING: &str = "pass_missing";
    /// A new turn (a UserPromptSubmit of the main agent, not `/compact`)
    /// began after `qa-gate record`: the pass was withdrawn (docs/protocol.md §7).
    pub const PASS_WITHDRAWN: &str = "pass_invalidated_by_new_turn";
    /// The pass's nonce was promoted by an earlier PreCompact: a ticket
    /// copied back as the pass attests nothing (docs/protocol.md §7).
    pub const PASS_CONSUMED: &str = "pass_already_consumed";
    /// `qa-spent.<s>.json` (the withdrawn nonces) does not parse: every pass
    /// of the session is refused until it is removed.
    pub const SPENT_INVALID: &str = "spent_nonces_invalid";
    /// The pass's nonce (or one of its reports) is in the spent-nonce ledger
    /// outside the data dir: it was consumed or withdrawn before (docs/protocol.md §7).
    pub const PASS_REPLAYED: &str = "pass_replayed";
    /// The ledger exists but cannot be trusted (not an owner-only regular
    /// file, too large, a line that does not parse): fail closed.
    pub const LEDGER_INVALID: &str = "spent_ledger_invalid";
    /// No state directory for the ledger (no HOME, XDG_STATE_HOME or
    /// MEMORY_LATCH_HEADS_DIR), or it cannot be created or written.
    pub const LEDGER_UNAVAILABLE: &str = "spent_ledger_unavailable";
    pub const TRANSCRIPT_UNKNOWN: &str = "transcript_unknown";
    pub const TRANSCRIPT_NOT_FOUND: &str = "transcript_not_found";
    pub const TRANSCRIPT_SYMLINK: &str = "transcript_symlink";
    pub const TRANSCRIPT_NOT_REGULAR: &str = "transcript_not_regular";
    pub const TRANSCRIPT_NOT_OWNED: &str = "transcript_not_owned";
    pub const TRANSCRIPT_UNREADABLE: &str = "transcript_unreadable";
    pub const TRANSCRIPT_CHANGED: &str = "transcript_changed_during_read";
    pub const TRANSCRIPT_REPLACED: &str = "transcript_replaced";
    pub const TRANSCRIPT_TRUNCATED: &str = "transcript_truncated";
    pub const TRANSCRIPT_GREW: &str = "transcript_grew_too_much";
    pub const TRANSCRIPT_MTIME: &str = "transcript_mtime_earlier";
}

/// Cold-boot reports read by the gate.
pub mod report {
    pub const NOT_FOUND: &str = "report_not_found";
    pub const SYMLINK: &str = "report_symlink";
    pub const NOT_OWNED: &str = "report_not_owned";
    pub const PERMISSIONS: &str = "report_permissions";
    pub const NOT_REGULAR: &str = "report_not_regular";
    pub const TOO_LARGE: &str = "report_too_large";
    pub const CHANGED: &str = "report_changed_during_read";
    pub const UNREADABLE: &str = "report_unreadable";
    pub const NOT_JSON: &str = "report_not_json";
    pub const RED: &str = "report_red";
    pub const KEYS: &str = "report_keys_invalid";
    pub const SCHEMA: &str = "report_schema_invalid";
    pub const NOT_GREEN: &str = "report_not_green";
    pub const KNOWN_BAD: &str = "report_known_bad_control_not_passed";
    pub const GRAPH_EDGES: &str = "report_graph_edges_used";
    pub const FIELD: &str = "report_field_invalid";
    pub const POINTER_ID: &str = "report_pointer_id_mismatch";
    pub const POINTER_DIGEST: &str = "report_pointer_digest_mismatch";
    pub const SNAPSHOT_MISMATCH: &str = "report_snapshot_digest_mismatch";
    pub const TOO_OLD: &str = "report_too_old";
    pub const FUTURE: &str = "report_from_future";
    pub const NONCE_REUSED: &str = "report_boot_nonce_reused";
    pub const SNAPSHOT_DIFFERS: &str = "report_snapshot_digest_differs";
    pub const LOCK_DIFFERS: &str = "report_lock_differs";
    pub const COUNT: &str = "report_count_invalid";
    /// The report was not written by the installed `pointer-snapshot`.
    pub const VERIFIER: &str = "report_verifier_mismatch";
}

/// The ticket, attempt, claim and re-entry.
pub mod compaction {
    pub const PROMOTED: &str = "pass_promoted";
    pub const PROMOTE_FAILED: &str = "pass_promotion_failed";
    pub const ATTEMPT_INVALID: &str = "attempt_invalid";
    pub const ATTEMPT_EXPIRED: &str = "attempt_expired";
    pub const ATTEMPT_FUTURE: &str = "attempt_from_future";
    pub const TICKET_MISSING: &str = "ticket_missing";
    pub const TICKET_INVALID: &str = "ticket_invalid";
    pub const TICKET_NONCE: &str = "ticket_nonce_mismatch";
    pub const REENTRY_INVALID: &str = "reentry_invalid";
    /// An attested re-entry record whose compaction nonce no PreCompact
    /// consumed (no `pass_already_consumed` entry in the spent record at or
    /// before its claim): delivered UNATTESTED (docs/protocol.md §7).
    pub const REENTRY_UNBACKED: &str = "reentry_unbacked";
    /// Another PreCompact of this session held the lock for too long.
    pub const PRECOMPACT_BUSY: &str = "precompact_busy";
}

/// The `summaryCheck` of a claim record: whether the compaction summary kept
/// the four pointer values (docs/protocol.md §7).
pub mod summary {
    /// The summary holds all four values (`summaryCarried: true`).
    pub const CARRIED: &str = "carried";
    /// The summary lacks at least one value (`summaryCarried: false`).
    pub const VALUES_MISSING: &str = "values_missing";
    /// Claimed before the host handed any hook the summary (Claude Code:
    /// SessionStart(compact) runs before PostCompact); PostCompact fills it in.
    pub const PENDING: &str = "pending";
    /// The host gave no hook the summary (Codex 0.169.0 never does).
    pub const NO_SUMMARY: &str = "no_summary";
    /// Unattested: nothing was asked to carry.
    pub const UNATTESTED: &str = "unattested";
}

/// `qa-gate record`.
pub mod record {
    pub const VERIFY_FAILED: &str = "pass_verify_failed";
    /// A report was verified before this session's last pass was withdrawn
    /// or consumed: a new pass needs new boots (docs/protocol.md §7).
    pub const REPORTS_PREDATE_SPENT_PASS: &str = "reports_predate_spent_pass";
    /// Witnessed boots (docs/protocol.md §7, "Witnessed boots"): a report
    /// whose `pointer-snapshot` call the PreToolUse hook did not see, while it
    /// saw the other one.
    pub const BOOT_NOT_WITNESSED: &str = "boot_not_witnessed";
    /// A report's `pointer-snapshot` call came from the main agent (no agent
    /// identity in the hook input), not a subagent.
    pub const BOOT_BY_MAIN_AGENT: &str = "boot_by_main_agent";
    /// Both reports come from the same subagent.
    pub const BOOTS_SAME_AGENT: &str = "boots_same_agent";
    /// A red (or missing) report for the same pointer was written after the
    /// first of the two green ones: the count starts again.
    pub const BOOTS_RESET_BY_RED: &str = "boots_reset_by_red";
    /// `qa-witness.<s>.jsonl` cannot be trusted (insecure, too large, a line
    /// that does not parse).
    pub const WITNESS_INVALID: &str = "witness_record_invalid";
    /// The live pointer's digest differs from the one recorded.
    pub const NOT_LIVE: &str = "pointer_digest_not_live";
    /// The installed verifier executable could not be read.
    pub const VERIFIER_UNREADABLE: &str = "verifier_unreadable";
}

/// Hook input and the hook runner.
pub mod hooks {
    pub const STDIN_EMPTY: &str = "hook_stdin_empty";
    /// session-hook was asked for PreToolUse and its sibling pretool-hook could not be run: denied.
    pub const PRETOOL_MISSING: &str = "hook_pretool_missing";
    pub const STDIN_TOO_LARGE: &str = "hook_stdin_too_large";
    pub const STDIN_READ: &str = "hook_stdin_unreadable";
    pub const STDIN_INVALID_JSON: &str = "hook_stdin_invalid_json";
    pub const STDIN_NOT_OBJECT: &str = "hook_stdin_not_object";
    pub const EVENT_MISMATCH: &str = "hook_event_mismatch";
    pub const SESSION_INVALID: &str = "hook_session_id_invalid";
    pub const PANIC: &str = "hook_internal_panic";
    pub const TIMEOUT: &str = "hook_timeout";
    /// SessionStart: the sibling `wake-check --hook` gave no answer (missing, failed, timed out, malformed).
    pub const WAKE_CHECK_FAILED: &str = "hook_wake_check_failed";
}

/// kijito-local serve.
pub mod server {
    pub const LISTEN_INVALID: &str = "listen_address_invalid";
    pub const LISTEN_NOT_LOOPBACK: &str = "listen_address_not_loopback";
    pub const BIND: &str = "listen_bind_failed";
    pub const TOKEN_INVALID: &str = "token_file_invalid";
    pub const SIGNALS: &str = "signal_setup_failed";
}

/// The kijito-local SQLite store.
pub mod store {
    pub const OPEN: &str = "store_open_failed";
    pub const SCHEMA_TOO_NEW: &str = "store_schema_too_new";
    pub const FAILED: &str = "store_failed";
}

/// kijito-local fault injection.
pub mod faults {
    pub const INVALID: &str = "faults_file_invalid";
}

/// Rendered memories, lifecycle and the known-bad control (docs/protocol.md §3).
pub mod render {
    pub const TOO_LARGE: &str = "memory_rendering_too_large";
    pub const FENCE_MISSING: &str = "memory_fence_missing";
    pub const FENCE_OPEN_INVALID: &str = "memory_fence_open_invalid";
    pub const FENCE_ID_MISMATCH: &str = "memory_fence_id_mismatch";
    pub const FENCE_PERSONA_MISMATCH: &str = "memory_fence_persona_mismatch";
    pub const FENCE_NONCE_INVALID: &str = "memory_fence_nonce_invalid";
    pub const FENCE_CLOSE_INVALID: &str = "memory_fence_close_invalid";
    pub const FENCE_DUPLICATED: &str = "memory_fence_duplicated";
    pub const FENCE_NESTED: &str = "memory_fence_nested";
    pub const HEADER_INVALID: &str = "memory_header_invalid";
    pub const METADATA_INVALID: &str = "memory_metadata_invalid";
    pub const LIFECYCLE_UNCLASSIFIED: &str = "memory_lifecycle_unclassified";
    pub const KNOWN_BAD_CONTROL_FAILED: &str = "known_bad_control_failed";
}

/// The pointer manifest (docs/protocol.md §4).
pub mod manifest {
    /// Any byte difference from the canonical form.
    pub const NOT_CANONICAL: &str = "pointer_manifest_not_canonical";
    /// Every other rejection.
    pub const INVALID: &str = "pointer_manifest_invalid";
}

/// The shared argv parser ([`crate::argv`]): usage errors, exit status 2.
pub mod cli {
    pub const INVALID_ARGUMENT: &str = "invalid_argument";
    pub const UNKNOWN_SUBCOMMAND: &str = "unknown_subcommand";
    pub const MISSING_SUBCOMMAND: &str = "missing_subcommand";
    pub const UNKNOWN_FLAG: &str = "unknown_flag";
    pub const UNEXPECTED_ARGUMENT: &str = "unexpected_argument";
    pub const REPEATED_FLAG: &str = "repeated_flag";
    pub const MISSING_VALUE: &str = "missing_value";
    pub const MISSING_FLAG: &str = "missing_flag";
    pub const CONFLICTING_FLAGS: &str = "conflicting_flags";
    pub const INVALID_NUMBER: &str = "invalid_number";
    pub const INVALID_PATH: &str = "invalid_path";
    pub const INVALID_HOST: &str = "invalid_host";
    pub const INVALID_EVENT: &str = "invalid_event";
    pub const STDOUT_WRITE_FAILED: &str = "stdout_write_failed";
    /// `qa-gate check-command` without exactly one argument.
    pub const CHECK_COMMAND_USAGE: &str = "check_command_usage";
    /// `pointer-publish`: not exactly one content source.
    pub const CONTENT_SOURCE_INVALID: &str = "content_source_invalid";
    /// `pointer-publish --release-lease` with a flag it does not take.
    pub const FLAG_CONFLICT: &str = "flag_conflict";
}

/// The QA gate's state directory.
pub mod gate {
    pub const STATE_RENAME_FAILED: &str = "state_rename_failed";
}

/// The verifier's anchor fetches (with [`snapshot`]).
pub mod fetch {
    pub const ANCHOR_FETCH_FAILED: &str = "anchor_fetch_failed";
}

/// wake-check.
pub mod wake {
    pub const WORKSPACE_INVALID: &str = "workspace_invalid";
}

/// memory-latch (kijito-latch `codes`): errors, verify findings and gate check codes.
pub mod latch {
    /// The latch failed verification; nothing was written.
    pub const UNTRUSTED: &str = "latch_untrusted";
    /// hmac entries and no key: the latch cannot be verified.
    pub const UNVERIFIABLE: &str = "latch_unverifiable";
    /// Silent Witness is active: writes are refused.
    pub const SILENT_WITNESS_ACTIVE: &str = "silent_witness_active";
    /// A latch file changed while it was read.
    pub const FILE_CHANGED: &str = "latch_file_changed";
    pub const WORKSPACE_INVALID: &str = "latch_workspace_invalid";
    pub const INTEGRITY_INVALID: &str = "latch_integrity_invalid";
    pub const ACTION_FILE_INVALID: &str = "action_file_invalid";
    pub const OUTPUT_FAILED: &str = "output_failed";
    pub const GATE_FAILED: &str = "gate_failed";
    /// `verify --since-checkpoint`: the file is not a tree head.
    pub const CHECKPOINT_FILE_INVALID: &str = "checkpoint_file_invalid";
    pub const HMAC_KEY_INVALID: &str = "hmac_key_invalid";
    pub const HMAC_KEY_INSIDE_WORKSPACE: &str = "hmac_key_inside_workspace";
    pub const NOT_INITIALISED: &str = "latch_not_initialised";
    pub const FILE_MISSING: &str = "latch_file_missing";
    pub const IO_FAILED: &str = "latch_io_failed";
    pub const LOCK_SYMLINK: &str = "latch_lock_symlink";
    pub const LEDGER_SYMLINK: &str = "latch_ledger_symlink";
    pub const MANIFEST_SYMLINK: &str = "latch_manifest_symlink";
    pub const SEGMENT_SYMLINK: &str = "latch_segment_symlink";
    pub const LOCK_MISSING: &str = "latch_lock_missing";
    pub const LOCK_FAILED: &str = "latch_lock_failed";
    pub const LOCK_INSECURE: &str = "latch_lock_insecure";
    pub const LOCK_TIMEOUT: &str = "latch_lock_timeout";
    pub const WRITE_FAILED: &str = "latch_write_failed";
    pub const CONSENT_REQUIRES_USER_MESSAGE: &str = "consent_requires_user_message";
    pub const CONSENT_TOKEN_SUPERSEDED: &str = "consent_token_superseded";
    pub const CONSENT_ALREADY_CONFIRMED: &str = "consent_already_confirmed";
    pub const RESEED_NOT_NEEDED: &str = "reseed_not_needed";
    pub const REVIEW_NOT_NEEDED: &str = "review_not_needed";
    pub const CONSENT_LOCKED_UNTIL_REVIEW: &str = "consent_locked_until_review";
    pub const CONSENT_ACTION_CHANGED: &str = "consent_action_changed";
    pub const DIR_SYMLINK: &str = "latch_dir_symlink";
    pub const WITNESS_SYMLINK: &str = "latch_witness_symlink";
    pub const RISK_INVALID: &str = "latch_risk_invalid";
    pub const HMAC_KEY_REQUIRED: &str = "hmac_key_required";
    pub const MANIFEST_EMPTY: &str = "manifest_empty";
    pub const ENTRY_SEQ_GAP: &str = "entry_seq_gap";
    pub const HMAC_KEY_MISSING: &str = "hmac_key_missing";
    pub const ALREADY_INITIALISED: &str = "latch_already_initialised";
    pub const HEAD_RECORD_EXISTS: &str = "latch_head_record_exists";
    pub const CHECKPOINT_INVALID: &str = "latch_checkpoint_invalid";
    pub const DIR_INVALID: &str = "latch_dir_invalid";
    pub const DIR_INSECURE: &str = "latch_dir_insecure";
    pub const GATE_TARGET_INVALID: &str = "gate_target_invalid";
    pub const GATE_TARGET_TRAVERSAL: &str = "gate_target_traversal";
    pub const GATE_TARGET_OUTSIDE_WORKSPACE: &str = "gate_target_outside_workspace";
    pub const GATE_TARGET_PROTECTED: &str = "gate_target_protected";
    pub const GATE_TARGET_SYMLINK: &str = "gate_target_symlink";
    pub const FILE_INSECURE: &str = "latch_file_insecure";
    pub const FILE_TOO_LARGE: &str = "latch_file_too_large";
    pub const FILE_EXISTS: &str = "latch_file_exists";
    pub const CONSENT_MESSAGE_NOT_STANDALONE: &str = "consent_message_not_standalone";
    pub const LEDGER_INVALID: &str = "ledger_invalid";
    pub const GATE_INTENT_INCOMPLETE: &str = "gate_intent_incomplete";
    pub const TEXT_INVALID: &str = "latch_text_invalid";
    pub const WITNESS_INVALID: &str = "latch_witness_invalid";
    pub const HEAD_RECORD_INVALID: &str = "latch_head_record_invalid";
    pub const HEAD_WRITE_FAILED: &str = "latch_head_write_failed";
    pub const ENTRY_TRUNCATED: &str = "entry_truncated";
    pub const ENTRY_RENDERING_MISMATCH: &str = "entry_rendering_mismatch";
    pub const FILE_NOT_UTF8: &str = "file_not_utf8";
    pub const MANIFEST_HEADER_INVALID: &str = "manifest_header_invalid";
    pub const SEGMENT_REF_MISMATCH: &str = "segment_ref_mismatch";
    pub const HISTORY_UNEXPECTED_FILE: &str = "history_unexpected_file";
    pub const SEGMENT_MISSING: &str = "segment_missing";
    pub const MANIFEST_MISSING: &str = "manifest_missing";
    pub const SEGMENT_EMPTY: &str = "segment_empty";
    pub const SEGMENT_UNREFERENCED: &str = "segment_unreferenced";
    pub const ENTRY_SCHEMA_INVALID: &str = "entry_schema_invalid";
    pub const CHAIN_BROKEN: &str = "chain_broken";
    pub const CHAIN_ORIGIN_INVALID: &str = "chain_origin_invalid";
    pub const ENTRY_TIME_INCONSISTENT: &str = "entry_time_inconsistent";
    pub const ENTRY_FIELD_INVALID: &str = "entry_field_invalid";
    pub const INTEGRITY_FIELD_MISSING: &str = "integrity_field_missing";
    pub const PAYLOAD_HASH_MISMATCH: &str = "payload_hash_mismatch";
    pub const INTEGRITY_DOWNGRADE: &str = "integrity_downgrade";
    pub const INTEGRITY_FIELD_INVALID: &str = "integrity_field_invalid";
    pub const HMAC_SIGNATURE_INVALID: &str = "hmac_signature_invalid";
    pub const CONSENT_TOKEN_UNKNOWN: &str = "consent_token_unknown";
    pub const CONSENT_TOKEN_REPLAYED: &str = "consent_token_replayed";
    pub const CONSENT_TOKEN_EXPIRED: &str = "consent_token_expired";
    pub const CONSENT_TOKEN_LOCKED: &str = "consent_token_locked";
    pub const ENTRY_MALFORMED: &str = "entry_malformed";
    pub const ENTRY_NOT_CANONICAL: &str = "entry_not_canonical";
    pub const INTENT_RESULT_MISMATCH: &str = "intent_result_mismatch";
    pub const INTENT_RESULT_UNREADABLE: &str = "intent_result_unreadable";
    pub const INTENT_UNDECLARED: &str = "intent_undeclared";
    pub const GATE_CHECKPOINT_UNKNOWN: &str = "gate_checkpoint_unknown";
    pub const GATE_CHECKPOINT_MISSING: &str = "gate_checkpoint_missing";
    pub const CONSENT_NOT_AUTHORIZED: &str = "consent_not_authorized";
    pub const CONSENT_RECORD_MISSING: &str = "consent_record_missing";
    pub const CONSENT_RECORD_MISMATCH: &str = "consent_record_mismatch";
    pub const GATE_TARGET_MISSING: &str = "gate_target_missing";
    pub const RISK_RECONFIRMATION_REQUIRED: &str = "risk_reconfirmation_required";
    pub const CHECKPOINT_INCONSISTENT: &str = "checkpoint_inconsistent";
    /// Ed25519 keyed mode (kijito-latch `sign`, `checkpoint`).
    pub const SIGNING_KEY_FILE_EXISTS: &str = "signing_key_file_exists";
    pub const SECRET_KEY_INVALID: &str = "secret_key_invalid";
    pub const SECRET_KEY_INSIDE_WORKSPACE: &str = "secret_key_inside_workspace";
    pub const PUBLIC_KEY_INVALID: &str = "public_key_invalid";
    pub const PASSPHRASE_WRONG: &str = "passphrase_wrong";
    pub const PASSPHRASE_INVALID: &str = "passphrase_invalid";
    pub const PASSPHRASE_UNAVAILABLE: &str = "passphrase_unavailable";
    /// A signature line by the given key does not verify (a tampered note).
    pub const CHECKPOINT_SIGNATURE_INVALID: &str = "checkpoint_signature_invalid";
    /// The note carries no signature by the given key (a wrong key).
    pub const CHECKPOINT_NOT_SIGNED_BY_KEY: &str = "checkpoint_not_signed_by_key";
    /// The checkpoint names another chain (its origin).
    pub const CHECKPOINT_ORIGIN_MISMATCH: &str = "checkpoint_origin_mismatch";
    /// The saved checkpoint outside the workspace is unreadable or does not fold to its root.
    pub const CHECKPOINT_STATE_INVALID: &str = "latch_checkpoint_state_invalid";
    /// The head record comparison (kijito-latch `head::codes`).
    pub const ROLLED_BACK: &str = "latch_rolled_back";
    pub const TRUNCATED: &str = "latch_truncated";
    pub const MODE_DOWNGRADE: &str = "latch_mode_downgrade";
    pub const HEAD_RECORD_MISSING: &str = "latch_head_record_missing";
    pub const HEAD_RECORD_STALE: &str = "latch_head_record_stale";
    pub const DELETED: &str = "latch_deleted";
    pub const HEAD_DIR_UNAVAILABLE: &str = "latch_head_dir_unavailable";
    /// The workspace index beside the head records (kijito-latch `index`):
    /// exists but cannot be trusted, or cannot be written by `init`.
    pub const INDEX_INVALID: &str = "latch_index_invalid";
    pub const INDEX_UNAVAILABLE: &str = "latch_index_unavailable";
    /// One-step mode (context fatigue, kijito-latch `knobs`).
    pub const ONE_STEP_CHECKPOINT_REQUIRED: &str = "one_step_checkpoint_required";
    pub const ONE_STEP_NEXT_STEP_REQUIRED: &str = "one_step_next_step_required";
    pub const TURNS_SYMLINK: &str = "latch_turns_symlink";
    /// The user's governance file (kijito-latch `governance`): unreadable,
    /// not the user's, a symlink, inside the workspace, or not the schema.
    pub const GOVERNANCE_CONFIG_INVALID: &str = "governance_config_invalid";
    /// A governance knob outside its documented range.
    pub const GOVERNANCE_VALUE_INVALID: &str = "governance_value_invalid";
    /// Wallet consent mode (kijito-latch `wallet`).
    pub const WALLET_CONFIG_INVALID: &str = "wallet_config_invalid";
    pub const WALLET_SIGNATURE_REQUIRED: &str = "wallet_signature_required";
    pub const WALLET_SIGNATURE_INVALID: &str = "wallet_signature_invalid";
    pub const WALLET_SIGNATURE_MALLEABLE: &str = "wallet_signature_malleable";
    pub const WALLET_SIGNATURE_UNMATCHED: &str = "wallet_signature_unmatched";
    pub const WALLET_EXPIRED: &str = "wallet_expired";
    pub const WALLET_NONCE_REPLAYED: &str = "wallet_nonce_replayed";
    /// The UserPromptSubmit hook could not run the signer recovery
    /// (`memory-latch wallet-recover` missing, failed, timed out or answered
    /// malformed): nothing was confirmed.
    pub const WALLET_RECOVERY_FAILED: &str = "wallet_recovery_failed";
    /// The user's consent configuration (kijito-latch `consent`,
    /// `memory-latch.consent/v1`): malformed, or not owner-only / a symlink.
    pub const CONSENT_CONFIG_INVALID: &str = "consent_config_invalid";
    pub const CONSENT_CONFIG_INSECURE: &str = "consent_config_insecure";
    /// Key consent mode: the record carries no signature by the user's key.
    pub const CONSENT_SIGNATURE_REQUIRED: &str = "consent_signature_required";
    /// The record's signature does not verify with the configured public key
    /// over this action, this record's nonce and the signed expiry.
    pub const CONSENT_SIGNATURE_MISMATCH: &str = "consent_signature_mismatch";
    pub const CONSENT_SIGNATURE_EXPIRED: &str = "consent_signature_expired";
    /// The signed record was already used (single use).
    pub const CONSENT_SIGNATURE_REPLAYED: &str = "consent_signature_replayed";
    /// `memory-latch approve` found no terminal to read the passphrase from.
    pub const APPROVE_NEEDS_TTY: &str = "approve_needs_tty";
    /// `memory-latch approve`: no pending key-mode request (or not the one named).
    pub const APPROVE_NOTHING_PENDING: &str = "approve_nothing_pending";
    /// `memory-latch approve` while the consent mode is not `key`.
    pub const APPROVE_NOT_KEY_MODE: &str = "approve_not_key_mode";
    /// Token mode, the UserPromptSubmit confirmation refused (nothing confirmed):
    /// the input names a subagent (`agent_id`/`agent_type`);
    pub const CONSENT_FROM_SUBAGENT: &str = "consent_from_subagent";
    /// the token string appeared in a tool call's input or output in the
    /// transcript before the user's message;
    pub const CONSENT_TOKEN_SEEN_BY_TOOL: &str = "consent_token_seen_by_tool";
    /// the prompt is not the newest user entry of the transcript (or the
    /// transcript cannot be read).
    pub const CONSENT_PROMPT_NOT_NEWEST: &str = "consent_prompt_not_newest";
    pub const CONSENT_TRANSCRIPT_UNREADABLE: &str = "consent_transcript_unreadable";
}

/// kijito-local: the request log and the demo.
pub mod local {
    pub const REQUEST_LOG_OPEN_FAILED: &str = "request_log_open_failed";
    pub const DEMO_SPAWN_FAILED: &str = "demo_spawn_failed";
    pub const DEMO_SERVER_FAILED: &str = "demo_server_failed";
    pub const DEMO_SEED_FAILED: &str = "demo_seed_failed";
    pub const DEMO_STEP_FAILED: &str = "demo_step_failed";
    pub const DEMO_BIN_DIR_UNKNOWN: &str = "demo_bin_dir_unknown";
}

/// The compaction adapters' state: pin, turn and request (kijito-gate `trigger`).
pub mod trigger {
    pub const NO_SAFE_TRIGGER: &str = "no_safe_trigger";
    pub const PASS_MISSING: &str = "pass_missing";
    pub const REQUEST_EXISTS: &str = "request_exists";
    pub const PIN_INVALID: &str = "pin_invalid";
    pub const TURN_INVALID: &str = "turn_invalid";
    pub const REQUEST_INVALID: &str = "request_invalid";
    pub const NO_REQUEST: &str = "no_request";
    pub const REQUEST_SUPERSEDED: &str = "request_superseded";
}

/// kijito-setup and kijito-doctor.
pub mod setup {
    pub const SPAWN_FAILED: &str = "spawn_failed";
    pub const CODEX_HOOKS_LIST_FAILED: &str = "codex_hooks_list_failed";
    pub const CWD_UNKNOWN: &str = "cwd_unknown";
    pub const RED: &str = "red";
}

/// kijito-context: the reasons of a null ratio and the failure codes of the binary.
pub mod context {
    pub const NOT_FOUND: &str = "transcript_not_found";
    pub const SYMLINK: &str = "transcript_symlink";
    pub const NOT_REGULAR: &str = "transcript_not_regular";
    pub const NOT_OWNED: &str = "transcript_not_owned";
    pub const UNREADABLE: &str = "transcript_unreadable";
    pub const NO_USAGE: &str = "no_usage_in_tail";
    pub const COMPACTED: &str = "compacted_since_last_usage";
    pub const WINDOW_UNKNOWN: &str = "window_unknown";
    pub const USAGE_INVALID: &str = "usage_invalid";
    pub const STDIN: &str = "statusline_stdin_invalid";
    pub const STATUSLINE_FLAGS: &str = "statusline_flags";
    pub const DATA_DIR_FLAG: &str = "data_dir_flag";
}

/// kijito-compact codex: the Codex app-server adapter and its message log.
pub mod compact_codex {
    pub const CODEX_NOT_FOUND: &str = "codex_not_found";
    pub const SPAWN_FAILED: &str = "spawn_failed";
    pub const SOCKET_FAILED: &str = "socket_failed";
    pub const SOCKET_PATH_TOO_LONG: &str = "socket_path_too_long";
    pub const APP_SERVER_EXITED: &str = "app_server_exited";
    pub const IO: &str = "adapter_io_failed";
    pub const USAGE: &str = "codex_usage";
    pub const MESSAGE_LOG_FAILED: &str = "message_log_failed";
}

/// kijito-compact: requests and the tmux worker (with [`trigger`]).
pub mod compact {
    pub const KILL_SWITCH: &str = "kill_switch";
    pub const PIN_CHANGED: &str = "pin_changed";
    pub const PANE_GONE: &str = "pane_gone";
    pub const PANE_PROCESS_CHANGED: &str = "pane_process_changed";
    pub const PANE_NOT_ANCESTOR: &str = "pane_not_ancestor";
    pub const TURN_NOT_ENDED: &str = "turn_not_ended";
    pub const CODEX_DAEMON: &str = "codex_daemon";
    pub const TMUX_ENV_INVALID: &str = "tmux_env_invalid";
    pub const ADAPTER_ENV_INVALID: &str = "adapter_env_invalid";
    pub const TMUX_UNAVAILABLE: &str = "tmux_unavailable";
    pub const SEND_FAILED: &str = "send_failed";
    pub const WORKER_SPAWN_FAILED: &str = "worker_spawn_failed";
    /// A client of the pane's tmux session pressed a key since the turn
    /// began (the keystroke rule, docs/adapters.md).
    pub const USER_TYPED: &str = "user_typed";
    /// The `reason` of a request that failed after `/compact` was typed and
    /// before its Enter: the text stays in the host's composer.
    pub const COMPACT_LEFT_IN_COMPOSER: &str = "compact_left_in_composer";
}

/// The PreToolUse policy (shared/policy): decisions by mode and tripwires.
pub mod policy {
    /// Normal mode: an irreversible call without a confirmed consent token for its action hash.
    pub const CONSENT_REQUIRED: &str = "policy_consent_required";
    /// Silent Witness: every mutating call is denied.
    pub const SILENT_WITNESS: &str = "policy_silent_witness";
    /// Degraded mode (until a human reviews): every mutating call is denied.
    pub const DEGRADED: &str = "policy_degraded";
    /// One-step mode without a named next step: every mutating call is denied.
    pub const ONE_STEP_NO_STEP: &str = "policy_one_step_no_next_step";
    /// QA freeze after `qa-gate record`: Kijito graph writes are denied.
    pub const QA_FROZEN: &str = "policy_qa_frozen";
    pub const TRIPWIRE_QA_STATE_WRITE: &str = "tripwire_qa_state_write";
    pub const TRIPWIRE_LATCH_WRITE: &str = "tripwire_latch_write";
    pub const TRIPWIRE_CONFIG_WRITE: &str = "tripwire_config_write";
    pub const TRIPWIRE_PLUGIN_ROOT_WRITE: &str = "tripwire_plugin_root_write";
    pub const TRIPWIRE_HOOK_BINARY: &str = "tripwire_hook_binary";
    pub const TRIPWIRE_TERMINAL_INPUT: &str = "tripwire_terminal_input";
    /// A command the policy cannot read whole (nested too deep, too long, not a string).
    pub const TRIPWIRE_SHELL_UNPARSED: &str = "tripwire_shell_unparsed";
    /// An MCP write to the configured pointer or lock message (only `pointer-publish` changes them).
    pub const POINTER_WRITE: &str = "policy_pointer_write";
    /// The wake hold: SessionStart's local wake checks found a long sleep, a boot change or findings; `wake-check --live` has not answered.
    pub const WAKE_PENDING: &str = "policy_wake_pending";
    /// The installed `memory-latch tool-gate` could not be run or answered malformed output: nothing passes.
    pub const CONSENT_CHECK_FAILED: &str = "policy_consent_check_failed";
    /// The user's memory-latch governance file is refused: every mutating call is denied until the user fixes it.
    pub const GOVERNANCE_INVALID: &str = "policy_governance_invalid";
    /// Enforcement is on (`"enforce": true`) and the workspace has no latch to hold consent.
    pub const LATCH_REQUIRED: &str = "policy_latch_required";
    /// The call's canonical action is larger than memory-latch accepts as an action file.
    pub const ACTION_TOO_LARGE: &str = "policy_action_too_large";
    /// The user's policy file is not a valid `kijito-qa.policy/v1` document.
    pub const USER_POLICY_INVALID: &str = "policy_user_file_invalid";
    /// The user's policy file names a rule that does not exist (or is not irreversible).
    pub const USER_RULE_UNKNOWN: &str = "policy_user_rule_unknown";
    /// A rule of the user's policy file is malformed (name, class, risk, matcher, bounds).
    pub const USER_RULE_INVALID: &str = "policy_user_rule_invalid";
}
