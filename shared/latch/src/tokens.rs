//! Consent tokens and their ledger `tokens.json`.
//!
//! A token looks like `ACT-9K2XQ7`: the prefix and six characters from an
//! alphabet without look-alikes (no 0, O, 1, I, L), drawn from the OS random
//! source. The user sees it once; the ledger stores only a salted SHA-256 of
//! it, bound to the action hash, with its expiry and use time.
//!
//! A token is confirmed only by the user's own message (the UserPromptSubmit
//! hook, see [`crate::Latch::user_prompt`]); a token-shaped user message that
//! matches no live token counts as a wrong attempt against every live token,
//! and a token with [`MAX_WRONG_ATTEMPTS`] wrong attempts is locked for good.

use kijito_protocol::error::{Error, Result};
use kijito_protocol::ids::{ActionHash, TaggedDigest};
use serde::{Deserialize, Serialize};

pub const LEDGER_SCHEMA: &str = "memory-latch.tokens/v2";
/// Wrong standalone attempts after which every live token is locked.
pub const MAX_WRONG_ATTEMPTS: u32 = 5;
pub const ALPHABET: &[u8] = b"23456789ABCDEFGHJKMNPQRSTUVWXYZ";
pub const TOKEN_PREFIX: &str = "ACT-";
pub const TOKEN_CHARS: usize = 6;
/// Tokens kept in the ledger (older used/expired ones are pruned first).
pub const MAX_TOKENS: usize = 64;
/// Longest accepted confirmation message.
pub const MAX_MESSAGE_BYTES: usize = 4096;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Purpose {
    Consent,
    Reseed,
    /// Ends degraded mode (consent `locked`) once the user's own message
    /// confirms it.
    Review,
}

/// One ledger record. Never holds the raw token.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TokenRecord {
    /// Public id (`tok_<16 hex>`), what the manifest references.
    pub id: String,
    pub purpose: Purpose,
    /// 32 hex; `token_hash = sha256:<hex of SHA-256(salt ":" TOKEN)>`.
    pub salt: String,
    pub token_hash: String,
    /// What the token binds: the consent's action hash, the manifest's
    /// bytes (reseed) or the head's payload hash (review).
    pub action_hash: ActionHash,
    pub risk: crate::entry::Risk,
    /// Redacted, at most 300 characters.
    pub summary: String,
    pub issued_at_ms: u64,
    pub expires_at_ms: u64,
    /// When the gate consumed it (or the reseed ran).
    pub used_at_ms: Option<u64>,
    /// When the user's standalone message confirmed it.
    pub confirmed_at_ms: Option<u64>,
    /// High risk: when a second, separate standalone user message reconfirmed it.
    pub reconfirmed_at_ms: Option<u64>,
    /// Wrong standalone attempts seen while it was live.
    pub failed_attempts: u32,
    /// Wallet consent mode: the EIP-712 challenge this request must be
    /// signed over (its text token is never shown). Absent in token mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wallet: Option<crate::wallet::Challenge>,
    /// Key consent mode: the nonce and expiry the user's Ed25519 key signs
    /// with `memory-latch approve` (its text token is never shown).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<crate::consent::KeyChallenge>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Ledger {
    pub schema: String,
    pub tokens: Vec<TokenRecord>,
    /// Not stored: the user's consent setting and the time, attached when
    /// the latch loads the ledger ([`crate::Latch`]'s `load_ledger`), so
    /// that [`crate::gate`]'s one consent predicate verifies key and wallet
    /// records alike on every path that loads a ledger.
    #[serde(skip)]
    pub context: Option<ConsentContext>,
}

/// What the consent predicate needs besides the records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsentContext {
    pub setting: crate::consent::Setting,
    pub now_ms: u64,
}

impl Default for Ledger {
    fn default() -> Self {
        Ledger { schema: LEDGER_SCHEMA.into(), tokens: Vec::new(), context: None }
    }
}

/// Token status at a given time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TokenStatus {
    Live,
    Expired,
    Used,
    /// Locked after too many wrong attempts.
    Locked,
}

/// What wake-check and `status` see of a token (no secret in it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TokenState {
    pub id: String,
    pub purpose: Purpose,
    pub action_hash: ActionHash,
    pub risk: crate::entry::Risk,
    pub summary: String,
    pub issued_at_ms: u64,
    pub expires_at_ms: u64,
    pub used_at_ms: Option<u64>,
    pub confirmed_at_ms: Option<u64>,
    pub reconfirmed_at_ms: Option<u64>,
    pub failed_attempts: u32,
    pub status: TokenStatus,
}

impl TokenRecord {
    pub fn status(&self, now_ms: u64) -> TokenStatus {
        if self.used_at_ms.is_some() {
            TokenStatus::Used
        } else if self.failed_attempts >= MAX_WRONG_ATTEMPTS {
            TokenStatus::Locked
        } else if now_ms >= self.expires_at_ms {
            TokenStatus::Expired
        } else {
            TokenStatus::Live
        }
    }

    pub fn state(&self, now_ms: u64) -> TokenState {
        TokenState {
            id: self.id.clone(),
            purpose: self.purpose,
            action_hash: self.action_hash.clone(),
            risk: self.risk,
            summary: self.summary.clone(),
            issued_at_ms: self.issued_at_ms,
            expires_at_ms: self.expires_at_ms,
            used_at_ms: self.used_at_ms,
            confirmed_at_ms: self.confirmed_at_ms,
            reconfirmed_at_ms: self.reconfirmed_at_ms,
            failed_attempts: self.failed_attempts,
            status: self.status(now_ms),
        }
    }

    /// What `approve` shows as the action's class: the consent kind and
    /// the signature it needs (the action's own class is the PreToolUse
    /// policy's, carried in the summary).
    pub fn purpose_class(&self) -> &'static str {
        match (self.purpose, self.key.is_some(), self.wallet.is_some()) {
            (Purpose::Consent, true, _) => "irreversible action (key-signed consent)",
            (Purpose::Consent, _, true) => "irreversible action (wallet-signed consent)",
            (Purpose::Consent, _, _) => "irreversible action (token consent)",
            (Purpose::Reseed, _, _) => "reseed",
            (Purpose::Review, _, _) => "review",
        }
    }

    pub fn matches(&self, token_upper: &str) -> bool {
        hash_token(&self.salt, token_upper) == self.token_hash
    }
}

pub fn hash_token(salt: &str, token_upper: &str) -> String {
    String::from(TaggedDigest::of(format!("{salt}:{token_upper}").as_bytes()))
}

/// A fresh token from the OS random source (rejection sampling, no bias).
pub fn new_token() -> String {
    let mut out = String::from(TOKEN_PREFIX);
    let limit = (256 / ALPHABET.len() * ALPHABET.len()) as u8;
    while out.len() < TOKEN_PREFIX.len() + TOKEN_CHARS {
        let mut buf = [0u8; 16];
        kijito_files::random::fill(&mut buf);
        for b in buf {
            if b < limit && out.len() < TOKEN_PREFIX.len() + TOKEN_CHARS {
                out.push(ALPHABET[(b as usize) % ALPHABET.len()] as char);
            }
        }
    }
    out
}

/// Accept a confirmation message only if, after trimming surrounding
/// whitespace, it is exactly one token (case-insensitive). Returns the
/// uppercase token.
pub fn standalone_token(message: &str) -> Result<String> {
    if message.len() > MAX_MESSAGE_BYTES {
        return Err(Error::new(crate::codes::CONSENT_MESSAGE_NOT_STANDALONE, "the confirmation message is too long to be a token"));
    }
    let t = message.trim();
    let upper = t.to_ascii_uppercase();
    let ok = upper.len() == TOKEN_PREFIX.len() + TOKEN_CHARS
        && upper.starts_with(TOKEN_PREFIX)
        && upper[TOKEN_PREFIX.len()..].bytes().all(|b| ALPHABET.contains(&b));
    if !ok {
        return Err(Error::new(
            crate::codes::CONSENT_MESSAGE_NOT_STANDALONE,
            "the confirmation must be a standalone message that is exactly the token (nothing else)",
        ));
    }
    Ok(upper)
}

/// Parse and validate ledger bytes.
pub fn parse_ledger(bytes: &[u8]) -> Result<Ledger> {
    let ledger: Ledger = serde_json::from_slice(bytes)
        .map_err(|e| Error::new(crate::codes::LEDGER_INVALID, format!("tokens.json is not a valid ledger: {e}")))?;
    if ledger.schema != LEDGER_SCHEMA || ledger.tokens.len() > MAX_TOKENS * 2 {
        return Err(Error::new(crate::codes::LEDGER_INVALID, "tokens.json has an unknown schema or too many tokens"));
    }
    for t in &ledger.tokens {
        // `action_hash` is typed: a malformed one failed the parse above.
        if !TaggedDigest::is_valid(&t.token_hash) {
            return Err(Error::new(crate::codes::LEDGER_INVALID, format!("token {} has a malformed hash", t.id)));
        }
    }
    Ok(ledger)
}

impl Ledger {
    /// Add a fresh record and return the raw token (shown once).
    pub fn issue(
        &mut self,
        purpose: Purpose,
        action_hash: &ActionHash,
        risk: crate::entry::Risk,
        summary: &str,
        now_ms: u64,
        ttl_ms: u64,
    ) -> (String, TokenRecord) {
        let token = new_token();
        let salt = kijito_files::random::hex(16);
        let rec = TokenRecord {
            id: format!("tok_{}", kijito_files::random::hex(8)),
            purpose,
            token_hash: hash_token(&salt, &token),
            salt,
            action_hash: action_hash.clone(),
            risk,
            summary: summary.to_owned(),
            issued_at_ms: now_ms,
            expires_at_ms: now_ms.saturating_add(ttl_ms),
            used_at_ms: None,
            confirmed_at_ms: None,
            reconfirmed_at_ms: None,
            failed_attempts: 0,
            wallet: None,
            key: None,
        };
        self.tokens.push(rec.clone());
        self.prune(now_ms);
        (token, rec)
    }

    /// Keep the ledger bounded: drop the oldest used or expired records.
    pub fn prune(&mut self, now_ms: u64) {
        while self.tokens.len() > MAX_TOKENS {
            let pos = self.tokens.iter().position(|t| t.status(now_ms) != TokenStatus::Live).unwrap_or(0);
            self.tokens.remove(pos);
        }
    }

    /// Find the record a token belongs to.
    pub fn find_mut(&mut self, token_upper: &str) -> Option<&mut TokenRecord> {
        self.tokens.iter_mut().find(|t| t.matches(token_upper))
    }

    /// Count one wrong standalone attempt against every live token; returns
    /// the attempts left before they lock (0 when none is live any more).
    pub fn wrong_attempt(&mut self, now_ms: u64) -> u32 {
        let mut left = 0;
        for t in self.tokens.iter_mut().filter(|t| t.status(now_ms) == TokenStatus::Live) {
            t.failed_attempts += 1;
            left = left.max(MAX_WRONG_ATTEMPTS.saturating_sub(t.failed_attempts));
        }
        left
    }

    pub fn by_id(&self, id: &str) -> Option<&TokenRecord> {
        self.tokens.iter().find(|t| t.id == id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::entry::Risk;

    #[test]
    fn tokens_use_the_unambiguous_alphabet() {
        for _ in 0..200 {
            let t = new_token();
            assert_eq!(t.len(), 10);
            assert!(t[4..].bytes().all(|b| ALPHABET.contains(&b)));
            assert!(!t[4..].contains(['0', 'O', '1', 'I', 'L']));
        }
    }

    #[test]
    fn standalone_rules() {
        assert_eq!(standalone_token("  act-9k2xq7 \n").unwrap(), "ACT-9K2XQ7");
        for bad in ["yes ACT-9K2XQ7", "ACT-9K2XQ7 please", "ACT-9K2XQ", "ACT-9K2XQ70", "ACT-0K2XQ7", "'ACT-9K2XQ7'", ""] {
            assert_eq!(standalone_token(bad).unwrap_err().code(), "consent_message_not_standalone", "{bad}");
        }
    }

    #[test]
    fn ledger_stores_only_a_salted_hash() {
        let mut l = Ledger::default();
        let action = ActionHash::of_canonical(b"a");
        let (token, rec) = l.issue(Purpose::Consent, &action, Risk::Low, "s", 1000, 600_000);
        let json = serde_json::to_string(&l).unwrap();
        assert!(!json.contains(&token) && !json.contains(&token[4..]));
        assert!(rec.matches(&token));
        assert_eq!(rec.status(1000), TokenStatus::Live);
        assert_eq!(rec.status(601_000), TokenStatus::Expired);
        assert_eq!(parse_ledger(json.as_bytes()).unwrap(), l);
        assert!(json.contains("failed_attempts"));
        for _ in 0..4 {
            assert!(l.wrong_attempt(1000) > 0);
        }
        assert_eq!(l.wrong_attempt(1000), 0);
        assert_eq!(l.tokens[0].status(1000), TokenStatus::Locked);
        for _ in 0..100 {
            l.issue(Purpose::Consent, &action, Risk::Low, "s", 1000, 1);
        }
        assert!(l.tokens.len() <= MAX_TOKENS);
    }
}
