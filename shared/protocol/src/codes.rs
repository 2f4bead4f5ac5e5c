//! Error codes shared across crates (the registry grows here; see docs/protocol.md).

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
