//! The error-code areas kijito-protocol keeps: its own (ids, command,
//! render, manifest, cli) and those read below the crate that raises them
//! (snapshot, latch, policy); one submodule per area, snake_case values
//! (what binaries print as `kijito_<tool>_failed:<code>`, see
//! `kijito_cli::report_failure`). Every other area is declared in the module
//! that raises it (docs/architecture.md, Error codes); tests/it/architecture.rs
//! lists them all.
//! Each area is a `Code` enum declared with [`crate::codes!`] (its variant
//! and its constant, the code in SCREAMING_SNAKE_CASE shortened within the
//! area). Crates re-export their area as `<module>::codes`. Control flow never
//! matches a code's spelling: it uses [`crate::error::Kind`] or matches the
//! variant ([`crate::error::Error::code_as`]).

/// The typed values of docs/protocol.md §1 ([`crate::ids`]).
pub mod ids {
    crate::codes! {
        MEMORY_ID MemoryId = "invalid_memory_id",
        MESSAGE_ID MessageId = "invalid_message_id",
        DIGEST Digest = "invalid_digest",
        SESSION_ID SessionId = "invalid_session_id",
        PERSONA Persona = "invalid_persona",
        PATH Path = "invalid_path",
        TOOL_USE_ID ToolUseId = "invalid_tool_use_id",
    }
}

/// Codes of the verifier (docs/protocol.md §5).
pub mod snapshot {
    crate::codes! {
        POINTER_RETIRED PointerRetired = "pointer_retired",
        POINTER_DIGEST_MISMATCH PointerDigestMismatch = "pointer_digest_mismatch",
        ANCHOR_RETIRED AnchorRetired = "current_anchor_retired",
        ANCHOR_DIGEST_MISMATCH AnchorDigestMismatch = "anchor_digest_mismatch",
        SNAPSHOT_DIGEST_MISMATCH SnapshotDigestMismatch = "snapshot_digest_mismatch",
        REPORT_FILE ReportFile = "report_file_invalid",
        /// The running executable could not be hashed (`verifierSha256`).
        VERIFIER_UNREADABLE VerifierUnreadable = "verifier_unreadable",
    }
}

/// The helper command grammar and guard (docs/protocol.md §8).
pub mod command {
    crate::codes! {
        EMPTY Empty = "command_empty",
        TOO_LONG TooLong = "command_too_long",
        CONTROL Control = "command_control_character",
        METACHARACTER Metacharacter = "command_metacharacter",
        ENV_ASSIGNMENT EnvAssignment = "command_env_assignment",
        PROGRAM_NOT_ABSOLUTE ProgramNotAbsolute = "command_program_not_absolute",
        PATH_TRAVERSAL PathTraversal = "command_path_traversal",
        UNKNOWN_HELPER UnknownHelper = "command_unknown_helper",
        FOREIGN_ROOT ForeignRoot = "command_foreign_root",
        MISSING_SUBCOMMAND MissingSubcommand = "command_missing_subcommand",
        UNKNOWN_SUBCOMMAND UnknownSubcommand = "command_unknown_subcommand",
        UNKNOWN_FLAG UnknownFlag = "command_unknown_flag",
        DUPLICATE_FLAG DuplicateFlag = "command_duplicate_flag",
        MISSING_VALUE MissingValue = "command_missing_value",
        EXTRA_WORD ExtraWord = "command_extra_word",
        MISSING_FLAG MissingFlag = "command_missing_flag",
        FLAG_CONFLICT FlagConflict = "command_flag_conflict",
        INVALID_ID InvalidId = "command_invalid_id",
        INVALID_DIGEST InvalidDigest = "command_invalid_digest",
        INVALID_SESSION_ID InvalidSessionId = "command_invalid_session_id",
        INVALID_PATH InvalidPath = "command_invalid_path",
        INVALID_VALUE InvalidValue = "command_invalid_value",
        ROOT_UNKNOWN RootUnknown = "command_root_unknown",
        /// A tool call's argv array that is not one exact helper command.
        ARGV_INVALID ArgvInvalid = "command_argv_invalid",
        /// A command only the user runs in their own terminal (`memory-latch
        /// approve`): never the agent's, in any form.
        USER_ONLY UserOnly = "command_user_only",
        /// A journaling helper command (`memory-latch consent request`,
        /// `recover`) whose `--session-id` is not the calling tool call's
        /// session (docs/protocol.md §13).
        SESSION_MISMATCH SessionMismatch = "command_session_mismatch",
    }
}

/// Rendered memories, lifecycle and the known-bad control (docs/protocol.md §3).
pub mod render {
    crate::codes! {
        TOO_LARGE TooLarge = "memory_rendering_too_large",
        FENCE_MISSING FenceMissing = "memory_fence_missing",
        FENCE_OPEN_INVALID FenceOpenInvalid = "memory_fence_open_invalid",
        FENCE_ID_MISMATCH FenceIdMismatch = "memory_fence_id_mismatch",
        FENCE_PERSONA_MISMATCH FencePersonaMismatch = "memory_fence_persona_mismatch",
        FENCE_NONCE_INVALID FenceNonceInvalid = "memory_fence_nonce_invalid",
        FENCE_CLOSE_INVALID FenceCloseInvalid = "memory_fence_close_invalid",
        FENCE_DUPLICATED FenceDuplicated = "memory_fence_duplicated",
        FENCE_NESTED FenceNested = "memory_fence_nested",
        HEADER_INVALID HeaderInvalid = "memory_header_invalid",
        METADATA_INVALID MetadataInvalid = "memory_metadata_invalid",
        LIFECYCLE_UNCLASSIFIED LifecycleUnclassified = "memory_lifecycle_unclassified",
        KNOWN_BAD_CONTROL_FAILED KnownBadControlFailed = "known_bad_control_failed",
    }
}

/// The pointer manifest (docs/protocol.md §4).
pub mod manifest {
    crate::codes! {
        /// Any byte difference from the canonical form.
        NOT_CANONICAL NotCanonical = "pointer_manifest_not_canonical",
        /// Every other rejection.
        INVALID Invalid = "pointer_manifest_invalid",
    }
}

/// The shared argv parser ([`crate::argv`]): usage errors, exit status 2.
pub mod cli {
    crate::codes! {
        INVALID_ARGUMENT InvalidArgument = "invalid_argument",
        UNKNOWN_SUBCOMMAND UnknownSubcommand = "unknown_subcommand",
        MISSING_SUBCOMMAND MissingSubcommand = "missing_subcommand",
        UNKNOWN_FLAG UnknownFlag = "unknown_flag",
        UNEXPECTED_ARGUMENT UnexpectedArgument = "unexpected_argument",
        REPEATED_FLAG RepeatedFlag = "repeated_flag",
        MISSING_VALUE MissingValue = "missing_value",
        MISSING_FLAG MissingFlag = "missing_flag",
        CONFLICTING_FLAGS ConflictingFlags = "conflicting_flags",
        INVALID_NUMBER InvalidNumber = "invalid_number",
        INVALID_HOST InvalidHost = "invalid_host",
        INVALID_EVENT InvalidEvent = "invalid_event",
        STDOUT_WRITE_FAILED StdoutWriteFailed = "stdout_write_failed",
        /// `qa-gate check-command` without exactly one argument.
        CHECK_COMMAND_USAGE CheckCommandUsage = "check_command_usage",
        /// Two flags of a command line that exclude each other.
        FLAG_CONFLICT FlagConflict = "flag_conflict",
    }
}

/// memory-latch (kijito-latch `codes`): errors, verify findings and gate check codes.
pub mod latch {
    crate::codes! {
        /// The latch failed verification; nothing was written.
        UNTRUSTED Untrusted = "latch_untrusted",
        /// hmac entries and no key: the latch cannot be verified.
        UNVERIFIABLE Unverifiable = "latch_unverifiable",
        /// Silent Witness is active: writes are refused.
        SILENT_WITNESS_ACTIVE SilentWitnessActive = "silent_witness_active",
        /// A latch file changed while it was read.
        FILE_CHANGED FileChanged = "latch_file_changed",
        WORKSPACE_INVALID WorkspaceInvalid = "latch_workspace_invalid",
        INTEGRITY_INVALID IntegrityInvalid = "latch_integrity_invalid",
        ACTION_FILE_INVALID ActionFileInvalid = "action_file_invalid",
        OUTPUT_FAILED OutputFailed = "output_failed",
        GATE_FAILED GateFailed = "gate_failed",
        /// `verify --since-checkpoint`: the file is not a tree head.
        CHECKPOINT_FILE_INVALID CheckpointFileInvalid = "checkpoint_file_invalid",
        HMAC_KEY_INVALID HmacKeyInvalid = "hmac_key_invalid",
        HMAC_KEY_INSIDE_WORKSPACE HmacKeyInsideWorkspace = "hmac_key_inside_workspace",
        NOT_INITIALISED NotInitialised = "latch_not_initialised",
        FILE_MISSING FileMissing = "latch_file_missing",
        IO_FAILED IoFailed = "latch_io_failed",
        LOCK_SYMLINK LockSymlink = "latch_lock_symlink",
        LEDGER_SYMLINK LedgerSymlink = "latch_ledger_symlink",
        MANIFEST_SYMLINK ManifestSymlink = "latch_manifest_symlink",
        SEGMENT_SYMLINK SegmentSymlink = "latch_segment_symlink",
        LOCK_MISSING LockMissing = "latch_lock_missing",
        LOCK_FAILED LockFailed = "latch_lock_failed",
        LOCK_INSECURE LockInsecure = "latch_lock_insecure",
        LOCK_TIMEOUT LockTimeout = "latch_lock_timeout",
        WRITE_FAILED WriteFailed = "latch_write_failed",
        CONSENT_REQUIRES_USER_MESSAGE ConsentRequiresUserMessage = "consent_requires_user_message",
        CONSENT_TOKEN_SUPERSEDED ConsentTokenSuperseded = "consent_token_superseded",
        CONSENT_ALREADY_CONFIRMED ConsentAlreadyConfirmed = "consent_already_confirmed",
        RESEED_NOT_NEEDED ReseedNotNeeded = "reseed_not_needed",
        REVIEW_NOT_NEEDED ReviewNotNeeded = "review_not_needed",
        CONSENT_LOCKED_UNTIL_REVIEW ConsentLockedUntilReview = "consent_locked_until_review",
        CONSENT_ACTION_CHANGED ConsentActionChanged = "consent_action_changed",
        DIR_SYMLINK DirSymlink = "latch_dir_symlink",
        WITNESS_SYMLINK WitnessSymlink = "latch_witness_symlink",
        RISK_INVALID RiskInvalid = "latch_risk_invalid",
        HMAC_KEY_REQUIRED HmacKeyRequired = "hmac_key_required",
        MANIFEST_EMPTY ManifestEmpty = "manifest_empty",
        ENTRY_SEQ_GAP EntrySeqGap = "entry_seq_gap",
        HMAC_KEY_MISSING HmacKeyMissing = "hmac_key_missing",
        ALREADY_INITIALISED AlreadyInitialised = "latch_already_initialised",
        HEAD_RECORD_EXISTS HeadRecordExists = "latch_head_record_exists",
        CHECKPOINT_INVALID CheckpointInvalid = "latch_checkpoint_invalid",
        DIR_INVALID DirInvalid = "latch_dir_invalid",
        DIR_INSECURE DirInsecure = "latch_dir_insecure",
        GATE_TARGET_INVALID GateTargetInvalid = "gate_target_invalid",
        GATE_TARGET_TRAVERSAL GateTargetTraversal = "gate_target_traversal",
        GATE_TARGET_OUTSIDE_WORKSPACE GateTargetOutsideWorkspace = "gate_target_outside_workspace",
        GATE_TARGET_PROTECTED GateTargetProtected = "gate_target_protected",
        GATE_TARGET_SYMLINK GateTargetSymlink = "gate_target_symlink",
        FILE_INSECURE FileInsecure = "latch_file_insecure",
        FILE_TOO_LARGE FileTooLarge = "latch_file_too_large",
        FILE_EXISTS FileExists = "latch_file_exists",
        CONSENT_MESSAGE_NOT_STANDALONE ConsentMessageNotStandalone = "consent_message_not_standalone",
        LEDGER_INVALID LedgerInvalid = "ledger_invalid",
        GATE_INTENT_INCOMPLETE GateIntentIncomplete = "gate_intent_incomplete",
        TEXT_INVALID TextInvalid = "latch_text_invalid",
        WITNESS_INVALID WitnessInvalid = "latch_witness_invalid",
        HEAD_RECORD_INVALID HeadRecordInvalid = "latch_head_record_invalid",
        HEAD_WRITE_FAILED HeadWriteFailed = "latch_head_write_failed",
        ENTRY_TRUNCATED EntryTruncated = "entry_truncated",
        ENTRY_RENDERING_MISMATCH EntryRenderingMismatch = "entry_rendering_mismatch",
        FILE_NOT_UTF8 FileNotUtf8 = "file_not_utf8",
        MANIFEST_HEADER_INVALID ManifestHeaderInvalid = "manifest_header_invalid",
        SEGMENT_REF_MISMATCH SegmentRefMismatch = "segment_ref_mismatch",
        HISTORY_UNEXPECTED_FILE HistoryUnexpectedFile = "history_unexpected_file",
        SEGMENT_MISSING SegmentMissing = "segment_missing",
        MANIFEST_MISSING ManifestMissing = "manifest_missing",
        SEGMENT_EMPTY SegmentEmpty = "segment_empty",
        SEGMENT_UNREFERENCED SegmentUnreferenced = "segment_unreferenced",
        ENTRY_SCHEMA_INVALID EntrySchemaInvalid = "entry_schema_invalid",
        CHAIN_BROKEN ChainBroken = "chain_broken",
        CHAIN_ORIGIN_INVALID ChainOriginInvalid = "chain_origin_invalid",
        ENTRY_TIME_INCONSISTENT EntryTimeInconsistent = "entry_time_inconsistent",
        ENTRY_FIELD_INVALID EntryFieldInvalid = "entry_field_invalid",
        INTEGRITY_FIELD_MISSING IntegrityFieldMissing = "integrity_field_missing",
        PAYLOAD_HASH_MISMATCH PayloadHashMismatch = "payload_hash_mismatch",
        INTEGRITY_DOWNGRADE IntegrityDowngrade = "integrity_downgrade",
        INTEGRITY_FIELD_INVALID IntegrityFieldInvalid = "integrity_field_invalid",
        HMAC_SIGNATURE_INVALID HmacSignatureInvalid = "hmac_signature_invalid",
        CONSENT_TOKEN_UNKNOWN ConsentTokenUnknown = "consent_token_unknown",
        CONSENT_TOKEN_REPLAYED ConsentTokenReplayed = "consent_token_replayed",
        CONSENT_TOKEN_EXPIRED ConsentTokenExpired = "consent_token_expired",
        CONSENT_TOKEN_LOCKED ConsentTokenLocked = "consent_token_locked",
        ENTRY_MALFORMED EntryMalformed = "entry_malformed",
        ENTRY_NOT_CANONICAL EntryNotCanonical = "entry_not_canonical",
        INTENT_RESULT_MISMATCH IntentResultMismatch = "intent_result_mismatch",
        INTENT_RESULT_UNREADABLE IntentResultUnreadable = "intent_result_unreadable",
        INTENT_UNDECLARED IntentUndeclared = "intent_undeclared",
        GATE_CHECKPOINT_UNKNOWN GateCheckpointUnknown = "gate_checkpoint_unknown",
        GATE_CHECKPOINT_MISSING GateCheckpointMissing = "gate_checkpoint_missing",
        CONSENT_NOT_AUTHORIZED ConsentNotAuthorized = "consent_not_authorized",
        CONSENT_RECORD_MISSING ConsentRecordMissing = "consent_record_missing",
        CONSENT_RECORD_MISMATCH ConsentRecordMismatch = "consent_record_mismatch",
        GATE_TARGET_MISSING GateTargetMissing = "gate_target_missing",
        RISK_RECONFIRMATION_REQUIRED RiskReconfirmationRequired = "risk_reconfirmation_required",
        /// `memory-latch tool-record`: a bad `--outcome` or `--tool-use-id`.
        HOST_OUTCOME_INVALID HostOutcomeInvalid = "host_outcome_invalid",
        CHECKPOINT_INCONSISTENT CheckpointInconsistent = "checkpoint_inconsistent",
        /// Ed25519 keyed mode (kijito-latch `sign`, `checkpoint`).
        SIGNING_KEY_FILE_EXISTS SigningKeyFileExists = "signing_key_file_exists",
        SECRET_KEY_INVALID SecretKeyInvalid = "secret_key_invalid",
        SECRET_KEY_INSIDE_WORKSPACE SecretKeyInsideWorkspace = "secret_key_inside_workspace",
        PUBLIC_KEY_INVALID PublicKeyInvalid = "public_key_invalid",
        PASSPHRASE_WRONG PassphraseWrong = "passphrase_wrong",
        PASSPHRASE_INVALID PassphraseInvalid = "passphrase_invalid",
        PASSPHRASE_UNAVAILABLE PassphraseUnavailable = "passphrase_unavailable",
        /// A signature line by the given key does not verify (a tampered note).
        CHECKPOINT_SIGNATURE_INVALID CheckpointSignatureInvalid = "checkpoint_signature_invalid",
        /// The note carries no signature by the given key (a wrong key).
        CHECKPOINT_NOT_SIGNED_BY_KEY CheckpointNotSignedByKey = "checkpoint_not_signed_by_key",
        /// The checkpoint names another chain (its origin).
        CHECKPOINT_ORIGIN_MISMATCH CheckpointOriginMismatch = "checkpoint_origin_mismatch",
        /// The saved checkpoint outside the workspace is unreadable or does not fold to its root.
        CHECKPOINT_STATE_INVALID CheckpointStateInvalid = "latch_checkpoint_state_invalid",
        /// The head record comparison (kijito-latch `head::codes`).
        ROLLED_BACK RolledBack = "latch_rolled_back",
        TRUNCATED Truncated = "latch_truncated",
        MODE_DOWNGRADE ModeDowngrade = "latch_mode_downgrade",
        HEAD_RECORD_MISSING HeadRecordMissing = "latch_head_record_missing",
        HEAD_RECORD_STALE HeadRecordStale = "latch_head_record_stale",
        DELETED Deleted = "latch_deleted",
        HEAD_DIR_UNAVAILABLE HeadDirUnavailable = "latch_head_dir_unavailable",
        /// The workspace index beside the head records (kijito-latch `index`):
        /// exists but cannot be trusted, or cannot be written by `init`.
        INDEX_INVALID IndexInvalid = "latch_index_invalid",
        INDEX_UNAVAILABLE IndexUnavailable = "latch_index_unavailable",
        /// One-step mode (context fatigue, kijito-latch `knobs`).
        ONE_STEP_CHECKPOINT_REQUIRED OneStepCheckpointRequired = "one_step_checkpoint_required",
        ONE_STEP_NEXT_STEP_REQUIRED OneStepNextStepRequired = "one_step_next_step_required",
        TURNS_SYMLINK TurnsSymlink = "latch_turns_symlink",
        /// The user's governance file (kijito-latch `governance`): unreadable,
        /// not the user's, a symlink, inside the workspace, or not the schema.
        GOVERNANCE_CONFIG_INVALID GovernanceConfigInvalid = "governance_config_invalid",
        /// A governance knob outside its documented range.
        GOVERNANCE_VALUE_INVALID GovernanceValueInvalid = "governance_value_invalid",
        /// Wallet consent mode (kijito-latch `wallet`).
        WALLET_CONFIG_INVALID WalletConfigInvalid = "wallet_config_invalid",
        WALLET_SIGNATURE_REQUIRED WalletSignatureRequired = "wallet_signature_required",
        WALLET_SIGNATURE_INVALID WalletSignatureInvalid = "wallet_signature_invalid",
        WALLET_SIGNATURE_MALLEABLE WalletSignatureMalleable = "wallet_signature_malleable",
        WALLET_SIGNATURE_UNMATCHED WalletSignatureUnmatched = "wallet_signature_unmatched",
        WALLET_EXPIRED WalletExpired = "wallet_expired",
        WALLET_NONCE_REPLAYED WalletNonceReplayed = "wallet_nonce_replayed",
        /// The UserPromptSubmit hook could not run the signer recovery
        /// (`memory-latch wallet-recover` missing, failed, timed out or answered
        /// malformed): nothing was confirmed.
        WALLET_RECOVERY_FAILED WalletRecoveryFailed = "wallet_recovery_failed",
        /// The user's consent configuration (kijito-latch `consent`,
        /// `memory-latch.consent/v1`): malformed, or not owner-only / a symlink.
        CONSENT_CONFIG_INVALID ConsentConfigInvalid = "consent_config_invalid",
        CONSENT_CONFIG_INSECURE ConsentConfigInsecure = "consent_config_insecure",
        /// Key consent mode: the record carries no signature by the user's key.
        CONSENT_SIGNATURE_REQUIRED ConsentSignatureRequired = "consent_signature_required",
        /// The record's signature does not verify with the configured public key
        /// over this action, this record's nonce and the signed expiry.
        CONSENT_SIGNATURE_MISMATCH ConsentSignatureMismatch = "consent_signature_mismatch",
        CONSENT_SIGNATURE_EXPIRED ConsentSignatureExpired = "consent_signature_expired",
        /// The signed record was already used (single use).
        CONSENT_SIGNATURE_REPLAYED ConsentSignatureReplayed = "consent_signature_replayed",
        /// `memory-latch approve` found no terminal to read the passphrase from.
        APPROVE_NEEDS_TTY ApproveNeedsTty = "approve_needs_tty",
        /// `memory-latch approve`: no pending key-mode request (or not the one named).
        APPROVE_NOTHING_PENDING ApproveNothingPending = "approve_nothing_pending",
        /// `memory-latch approve` while the consent mode is not `key`.
        APPROVE_NOT_KEY_MODE ApproveNotKeyMode = "approve_not_key_mode",
        /// Token mode, the UserPromptSubmit confirmation refused (nothing confirmed):
        /// the input names a subagent (`agent_id`/`agent_type`);
        CONSENT_FROM_SUBAGENT ConsentFromSubagent = "consent_from_subagent",
        /// the token string appeared in a tool call's input or output in the
        /// transcript before the user's message;
        CONSENT_TOKEN_SEEN_BY_TOOL ConsentTokenSeenByTool = "consent_token_seen_by_tool",
        /// the prompt is not the newest user entry of the transcript (or the
        /// transcript cannot be read).
        CONSENT_PROMPT_NOT_NEWEST ConsentPromptNotNewest = "consent_prompt_not_newest",
        CONSENT_TRANSCRIPT_UNREADABLE ConsentTranscriptUnreadable = "consent_transcript_unreadable",
        /// The transcript the input names does not exist: a token is issued by
        /// a tool call the host wrote to its session's transcript, so a prompt
        /// without one answers nothing (docs/protocol.md §10.4).
        CONSENT_TRANSCRIPT_MISSING ConsentTranscriptMissing = "consent_transcript_missing",
        /// The transcript is not under the host's own transcript directory
        /// (Claude Code `<config dir>/projects/`, Codex `<CODEX_HOME>/sessions/`).
        CONSENT_TRANSCRIPT_FOREIGN ConsentTranscriptForeign = "consent_transcript_foreign",
        /// The transcript's file name names another session than the input's `session_id`.
        CONSENT_TRANSCRIPT_OTHER_SESSION ConsentTranscriptOtherSession = "consent_transcript_other_session",
        /// The transcript is not a file the host wrote: a symlink, not a regular
        /// file, another owner, or writable by group or others.
        CONSENT_TRANSCRIPT_NOT_HOST ConsentTranscriptNotHost = "consent_transcript_not_host",
    }
}

/// The PreToolUse policy (shared/policy): decisions by mode and tripwires.
pub mod policy {
    crate::codes! {
        /// Normal mode: an irreversible call without a confirmed consent token for its action hash.
        CONSENT_REQUIRED ConsentRequired = "policy_consent_required",
        /// Consent mode host, Claude Code's TUI: the call is put to the user in the host's own dialog (`permissionDecision: "ask"`).
        HOST_CONSENT_ASK HostConsentAsk = "policy_host_consent",
        /// Silent Witness: every mutating call is denied.
        SILENT_WITNESS SilentWitness = "policy_silent_witness",
        /// Degraded mode (until a human reviews): every mutating call is denied.
        DEGRADED Degraded = "policy_degraded",
        /// One-step mode without a named next step: every mutating call is denied.
        ONE_STEP_NO_STEP OneStepNoStep = "policy_one_step_no_next_step",
        /// QA freeze after `qa-gate record`: Kijito graph writes are denied.
        QA_FROZEN QaFrozen = "policy_qa_frozen",
        TRIPWIRE_QA_STATE_WRITE TripwireQaStateWrite = "tripwire_qa_state_write",
        TRIPWIRE_LATCH_WRITE TripwireLatchWrite = "tripwire_latch_write",
        TRIPWIRE_CONFIG_WRITE TripwireConfigWrite = "tripwire_config_write",
        TRIPWIRE_PLUGIN_ROOT_WRITE TripwirePluginRootWrite = "tripwire_plugin_root_write",
        TRIPWIRE_HOOK_BINARY TripwireHookBinary = "tripwire_hook_binary",
        /// A write, move or deletion in the private state dir (latch head records, workspace index, spent-nonce ledger).
        TRIPWIRE_STATE_WRITE TripwireStateWrite = "tripwire_state_write",
        /// A write to a host's rules (`$CODEX_HOME/rules`) or an `.mcp.json`.
        TRIPWIRE_HOST_RULES_WRITE TripwireHostRulesWrite = "tripwire_host_rules_write",
        /// A write to a shell startup file or another file that runs code at the next login or session (docs/policy.md).
        TRIPWIRE_STARTUP_WRITE TripwireStartupWrite = "tripwire_startup_write",
        TRIPWIRE_TERMINAL_INPUT TripwireTerminalInput = "tripwire_terminal_input",
        /// A command the policy cannot read whole (nested too deep, too long, not a string).
        TRIPWIRE_SHELL_UNPARSED TripwireShellUnparsed = "tripwire_shell_unparsed",
        /// An MCP write to the configured pointer or lock message (only `pointer-publish` changes them).
        POINTER_WRITE PointerWrite = "policy_pointer_write",
        /// The wake hold: SessionStart's local wake checks found a long sleep, a boot change or findings; `wake-check --live` has not answered.
        WAKE_PENDING WakePending = "policy_wake_pending",
        /// The installed `memory-latch tool-gate` could not be run or answered malformed output: nothing passes.
        CONSENT_CHECK_FAILED ConsentCheckFailed = "policy_consent_check_failed",
        /// The user's memory-latch governance file is refused: every mutating call is denied until the user fixes it.
        GOVERNANCE_INVALID GovernanceInvalid = "policy_governance_invalid",
        /// Enforcement is on (`"enforce": true`) and the workspace has no latch to hold consent.
        LATCH_REQUIRED LatchRequired = "policy_latch_required",
        /// Enforcement is on (`"enforce": true`) and the call has no usable working directory to find its workspace from.
        CWD_UNUSABLE CwdUnusable = "policy_cwd_unusable",
        /// The call's canonical action is larger than memory-latch accepts as an action file.
        ACTION_TOO_LARGE ActionTooLarge = "policy_action_too_large",
        /// The user's policy file is not a valid `kijito-qa.policy/v1` document.
        USER_POLICY_INVALID UserPolicyInvalid = "policy_user_file_invalid",
        /// The user's policy file names a rule that does not exist (or is not irreversible).
        USER_RULE_UNKNOWN UserRuleUnknown = "policy_user_rule_unknown",
        /// A rule of the user's policy file is malformed (name, class, risk, matcher, bounds).
        USER_RULE_INVALID UserRuleInvalid = "policy_user_rule_invalid",
    }
}
