//! Message leases (claims) with the hosted service's advisory semantics
//! (docs/protocol.md §2), as pure functions of the stored lease and `now`.
//!
//! A lease is live until `expires_at_ms`. After that it is *expired* but
//! still held: nobody else gets it until the reaper has removed it, which
//! happens `reap_after_ms` after expiry (default six hours, like the hosted
//! reaper). Reaping is lazy: a lease past its reap time counts as absent.

/// Shortest and longest lease a claim may ask for, in seconds.
pub const MIN_LEASE_SECONDS: u64 = 10;
pub const MAX_LEASE_SECONDS: u64 = 300;
/// Default `--reap-after`, seconds after expiry.
pub const DEFAULT_REAP_AFTER_SECONDS: u64 = 21_600;

/// A stored lease.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lease {
    pub persona: String,
    pub expires_at_ms: i64,
}

impl Lease {
    /// Whether the reaper has (logically) removed this lease at `now`.
    pub fn reaped(&self, now_ms: i64, reap_after_ms: i64) -> bool {
        now_ms >= self.expires_at_ms.saturating_add(reap_after_ms)
    }

    pub fn expired(&self, now_ms: i64) -> bool {
        now_ms >= self.expires_at_ms
    }
}

/// Why a claim was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    AlreadyClaimed,
    SelfClaimed,
}

impl Reason {
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::AlreadyClaimed => "already_claimed",
            Reason::SelfClaimed => "self_claimed",
        }
    }
}

/// What a claim does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClaimDecision {
    /// Grant: store this lease (replacing a reaped one, if any).
    Grant(Lease),
    /// Refuse with the advisory; nothing changes (a self-claim does not
    /// extend the lease).
    Refuse { reason: Reason, claimed_by: String, lease_expired: bool },
}

/// Decide a claim by `persona` for `lease_seconds` against the `current` lease.
pub fn decide_claim(current: Option<&Lease>, persona: &str, lease_seconds: u64, now_ms: i64, reap_after_ms: i64) -> ClaimDecision {
    match current {
        Some(lease) if !lease.reaped(now_ms, reap_after_ms) => ClaimDecision::Refuse {
            reason: if lease.persona == persona { Reason::SelfClaimed } else { Reason::AlreadyClaimed },
            claimed_by: lease.persona.clone(),
            lease_expired: lease.expired(now_ms),
        },
        _ => {
            ClaimDecision::Grant(Lease { persona: persona.to_owned(), expires_at_ms: now_ms.saturating_add((lease_seconds * 1000) as i64) })
        }
    }
}

/// Whether a release by `persona` removes the `current` lease: only its
/// holder releases, expired or not, as long as it has not been reaped.
pub fn decide_release(current: Option<&Lease>, persona: &str, now_ms: i64, reap_after_ms: i64) -> bool {
    matches!(current, Some(lease) if lease.persona == persona && !lease.reaped(now_ms, reap_after_ms))
}

#[cfg(test)]
mod tests {
    use super::*;

    const REAP: i64 = 5_000;

    fn held(by: &str, expires: i64) -> Lease {
        Lease { persona: by.into(), expires_at_ms: expires }
    }

    #[test]
    fn free_or_reaped_is_granted() {
        assert_eq!(decide_claim(None, "codex", 10, 1_000, REAP), ClaimDecision::Grant(held("codex", 11_000)));
        let old = held("other", 1_000);
        assert_eq!(decide_claim(Some(&old), "codex", 300, 6_000, REAP), ClaimDecision::Grant(held("codex", 306_000)));
    }

    #[test]
    fn live_and_expired_leases_stay_held() {
        let lease = held("other", 10_000);
        let refuse = |persona: &str, now| decide_claim(Some(&lease), persona, 10, now, REAP);
        assert_eq!(
            refuse("codex", 9_999),
            ClaimDecision::Refuse { reason: Reason::AlreadyClaimed, claimed_by: "other".into(), lease_expired: false }
        );
        assert_eq!(
            refuse("other", 9_999),
            ClaimDecision::Refuse { reason: Reason::SelfClaimed, claimed_by: "other".into(), lease_expired: false }
        );
        assert_eq!(
            refuse("codex", 10_000),
            ClaimDecision::Refuse { reason: Reason::AlreadyClaimed, claimed_by: "other".into(), lease_expired: true }
        );
        assert_eq!(
            refuse("other", 14_999),
            ClaimDecision::Refuse { reason: Reason::SelfClaimed, claimed_by: "other".into(), lease_expired: true }
        );
        assert!(matches!(refuse("codex", 15_000), ClaimDecision::Grant(_)));
    }

    #[test]
    fn only_the_holder_releases_until_reaped() {
        let lease = held("other", 10_000);
        assert!(decide_release(Some(&lease), "other", 1, REAP));
        assert!(decide_release(Some(&lease), "other", 14_999, REAP));
        assert!(!decide_release(Some(&lease), "other", 15_000, REAP));
        assert!(!decide_release(Some(&lease), "codex", 1, REAP));
        assert!(!decide_release(None, "codex", 1, REAP));
    }
}
