//! The error-code registry: every stable code a library error carries, one
//! submodule per area, snake_case values (what binaries print as
//! `kijito_<tool>_failed:<code>`, see [`crate::cli::report_failure`]).
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
    /// Another PreCompact of this session held the lock for too long.
    pub const PRECOMPACT_BUSY: &str = "precompact_busy";
}

/// `qa-gate record`.
pub mod record {
    pub const VERIFY_FAILED: &str = "pass_verify_failed";
    /// The live pointer's digest differs from the one recorded.
    pub const NOT_LIVE: &str = "pointer_digest_not_live";
    /// The installed verifier executable could not be read.
    pub const VERIFIER_UNREADABLE: &str = "verifier_unreadable";
}

/// Hook input and the hook runner.
pub mod hooks {
    pub const STDIN_EMPTY: &str = "hook_stdin_empty";
    pub const STDIN_TOO_LARGE: &str = "hook_stdin_too_large";
    pub const STDIN_READ: &str = "hook_stdin_unreadable";
    pub const STDIN_INVALID_JSON: &str = "hook_stdin_invalid_json";
    pub const STDIN_NOT_OBJECT: &str = "hook_stdin_not_object";
    pub const EVENT_MISMATCH: &str = "hook_event_mismatch";
    pub const SESSION_INVALID: &str = "hook_session_id_invalid";
    pub const PANIC: &str = "hook_internal_panic";
    pub const TIMEOUT: &str = "hook_timeout";
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

/// The shared argv parser ([`crate::cli`]): usage errors, exit status 2.
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

/// memory-latch (the codes its command line and other crates use).
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
