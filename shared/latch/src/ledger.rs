//! The token ledger and consent: requests, the user's own message
//! ([`Latch::user_prompt`], the only way to confirm), and the reseed.

use crate::chain;
use crate::entry::{ConsentState, Entry, Event, Mode, ReseedRef, Risk, NONE};
use crate::{action_hash, clean_text, layout, tokens, Issued, Latch, PromptOutcome, TokenStatus};
use kijito_files::private;
use kijito_protocol::error::{Error, Result};
use kijito_protocol::ids::ActionHash;

impl Latch {
    /// The ledger, with the user's consent setting and the time attached
    /// ([`tokens::ConsentContext`], not stored): what the one consent
    /// predicate ([`crate::gate`]) reads on every path that loads it.
    pub(crate) fn load_ledger(&self) -> Result<tokens::Ledger> {
        let mut l = if std::fs::symlink_metadata(&self.paths.ledger).is_err() {
            layout::refuse_symlink(&self.paths.ledger, crate::codes::LEDGER_SYMLINK)?;
            tokens::Ledger::default()
        } else {
            let bytes = layout::read_file(&self.paths.ledger, crate::codes::LEDGER_SYMLINK)?;
            tokens::parse_ledger(&bytes)?
        };
        l.context = Some(tokens::ConsentContext { setting: self.consent_setting(), now_ms: crate::time::now_ms() });
        Ok(l)
    }

    pub(crate) fn save_ledger(&self, ledger: &tokens::Ledger) -> Result<()> {
        let bytes = serde_json::to_vec_pretty(ledger).map_err(|e| Error::new(crate::codes::WRITE_FAILED, e.to_string()))?;
        private::write_atomic(&self.paths.ledger, &bytes).map_err(|e| layout::file_error(e, crate::codes::LEDGER_SYMLINK))
    }

    /// Issue a consent token bound to the action file's hash (token mode).
    pub fn consent_request(&self, now_ms: u64, action_bytes: &[u8], summary: &str, risk: Risk) -> Result<Issued> {
        self.consent_request_with(now_ms, action_bytes, summary, risk, &crate::wallet::Setting::Off)
    }

    /// [`Latch::consent_request`] under a wallet setting alone (no consent
    /// file): wallet mode with its `min_risk` as the floor, else token mode.
    pub fn consent_request_with(
        &self,
        now_ms: u64,
        action_bytes: &[u8],
        summary: &str,
        risk: Risk,
        wallet: &crate::wallet::Setting,
    ) -> Result<Issued> {
        self.consent_request_under(now_ms, action_bytes, summary, risk, &crate::consent::Setting::from_wallet(wallet))
    }

    /// Issue a consent request under the user's consent setting: the risk is
    /// the higher of `risk` (the requester's) and the user's floor; in key
    /// mode the record carries a nonce for `memory-latch approve`, in wallet
    /// mode an EIP-712 challenge, and in both the text token is not shown
    /// (only the user's signature confirms). An unusable setting issues
    /// nothing (fail closed).
    pub fn consent_request_under(
        &self,
        now_ms: u64,
        action_bytes: &[u8],
        summary: &str,
        risk: Risk,
        setting: &crate::consent::Setting,
    ) -> Result<Issued> {
        if let Some(e) = setting.error() {
            return Err(e);
        }
        let risk = setting.effective_risk(risk);
        let signer = match setting.mode {
            crate::consent::Mode::Wallet => setting.wallet.as_ref().map(|c| c.signer),
            _ => None,
        };
        if setting.mode == crate::consent::Mode::Wallet && signer.is_none() {
            return Err(Error::new(crate::codes::CONSENT_CONFIG_INVALID, "wallet consent mode without a configured signer"));
        }
        let key_mode = setting.mode == crate::consent::Mode::Key;
        let hash = action_hash(action_bytes)?;
        let summary = clean_text(summary, "summary", false)?;
        let summary: String = summary.chars().take(300).collect();
        let mut issued = None;
        let entry = self.append_with(now_ms, Event::ConsentRequest, |e, head| {
            if head.consent_state == ConsentState::Locked {
                return Err(Error::new(
                    crate::codes::CONSENT_LOCKED_UNTIL_REVIEW,
                    "consent is locked (degraded mode) until the user reviews: run `memory-latch review` and ask the user to send its token alone as their own message",
                ));
            }
            let mut ledger = self.load_ledger()?;
            let ttl = self.governance.token_ttl_minutes as u64 * 60_000;
            let (token, mut rec) = ledger.issue(tokens::Purpose::Consent, &hash, risk, &summary, now_ms, ttl);
            if let Some(signer) = &signer {
                rec.wallet = Some(crate::wallet::Challenge::new(signer, rec.expires_at_ms));
            }
            if key_mode {
                rec.key = Some(crate::consent::KeyChallenge::new(rec.expires_at_ms));
            }
            if let Some(r) = ledger.tokens.iter_mut().find(|t| t.id == rec.id) {
                r.wallet = rec.wallet.clone();
                r.key = rec.key.clone();
            }
            self.save_ledger(&ledger)?;
            e.consent_state = ConsentState::Pending;
            e.irreversible_action_pending = rec.id.clone();
            e.action_hash = Some(hash.clone());
            e.risk_level = risk;
            e.details = vec![match (&rec.wallet, &rec.key) {
                (Some(c), _) => format!("consent requested ({}, wallet signature from {} required): {summary}", risk.as_str(), c.signer),
                (None, Some(_)) => format!("consent requested ({}, the user's key signature required: memory-latch approve): {summary}", risk.as_str()),
                (None, None) => format!("consent requested ({}): {summary}", risk.as_str()),
            }];
            issued = Some((token, rec));
            Ok(())
        })?;
        let (token, rec) = issued.ok_or_else(|| Error::new(crate::codes::WRITE_FAILED, "the consent request was not issued"))?;
        let wallet = rec.wallet.clone();
        let key = rec.key.clone();
        // Signing modes: the token is never shown (only the signature confirms).
        let token = if wallet.is_some() || key.is_some() { String::new() } else { token };
        Ok(Issued { token, record: rec.state(now_ms), entry: Some(entry), wallet, key })
    }

    /// Key consent mode: the request `memory-latch approve` would sign (the
    /// head's pending record, or `token_id`): live, with a key challenge, not
    /// yet confirmed.
    pub fn pending_approval(&self, now_ms: u64, token_id: Option<&str>) -> Result<tokens::TokenRecord> {
        let nothing = |why: &str| Error::new(crate::codes::APPROVE_NOTHING_PENDING, why.to_owned());
        let live = self.load_trusted_readonly()?;
        let head = live.entries.last().ok_or_else(|| nothing("the latch has no entries"))?;
        let id = token_id.unwrap_or(&head.irreversible_action_pending);
        if id != head.irreversible_action_pending || head.consent_state != ConsentState::Pending {
            return Err(nothing("no key-mode consent request is pending on the latch's head (or --token-id names another one)"));
        }
        let ledger = self.load_ledger()?;
        let rec = ledger.by_id(id).ok_or_else(|| nothing("the pending request is not in the ledger"))?;
        if rec.key.is_none() || rec.purpose != tokens::Purpose::Consent || head.action_hash.as_ref() != Some(&rec.action_hash) {
            return Err(nothing("the pending request is not a key-mode consent request"));
        }
        match rec.status(now_ms) {
            TokenStatus::Live => Ok(rec.clone()),
            TokenStatus::Used => Err(Error::new(crate::codes::CONSENT_SIGNATURE_REPLAYED, "that request was already used (single use)")),
            TokenStatus::Expired => {
                Err(Error::new(crate::codes::CONSENT_SIGNATURE_EXPIRED, "that request has expired; the agent must request consent again"))
            }
            TokenStatus::Locked => Err(Error::new(crate::codes::CONSENT_TOKEN_LOCKED, "that request is locked")),
        }
    }

    /// `memory-latch approve`'s write: sign the pending record `token_id`
    /// with the user's decrypted key (the action hash, the record's nonce and
    /// the expiry: the record's, or `expires_at_s` when that is sooner), store
    /// the signature in the record and confirm it (one `consent_confirm`
    /// entry; a signature counts as the high-risk reconfirmation). The key
    /// must be the configured one.
    pub fn approve(
        &self,
        now_ms: u64,
        token_id: &str,
        key: &crate::sign::SigningKey,
        configured: &crate::consent::PublicKey,
        expires_at_s: Option<u64>,
    ) -> Result<PromptOutcome> {
        if key.verifier().public != configured.public {
            return Err(Error::new(
                crate::codes::CONSENT_SIGNATURE_MISMATCH,
                format!("the secret key ({}) is not the configured public key's ({}); nothing signed", key.name(), configured.name),
            ));
        }
        let guard = self.lock()?;
        let mut ledger = self.load_ledger()?;
        let idx = ledger
            .tokens
            .iter()
            .position(|t| t.id == token_id)
            .ok_or_else(|| Error::new(crate::codes::APPROVE_NOTHING_PENDING, "the request is no longer in the ledger"))?;
        if ledger.tokens[idx].status(now_ms) != TokenStatus::Live {
            return Err(Error::new(crate::codes::APPROVE_NOTHING_PENDING, "the request is no longer live"));
        }
        let rec = &mut ledger.tokens[idx];
        let (id, hash) = (rec.id.clone(), rec.action_hash.clone());
        let c =
            rec.key.as_mut().ok_or_else(|| Error::new(crate::codes::APPROVE_NOTHING_PENDING, "the request is not a key-mode request"))?;
        if let Some(at) = expires_at_s {
            c.expires_at = c.expires_at.min(at);
        }
        crate::consent::sign_challenge(key, &id, &hash, c);
        match self.confirm_locked(&guard, now_ms, &mut ledger, idx, Some(key.name()))? {
            Some(PromptOutcome::Refused { code, message }) => Err(Error::new(code, message)),
            Some(o) => Ok(o),
            None => Err(Error::new(crate::codes::WRITE_FAILED, "no confirmation recorded")),
        }
    }

    /// A tool call may never confirm: consent comes only from the user's own
    /// message through the UserPromptSubmit hook ([`Latch::user_prompt`]).
    pub fn consent_confirm_from_tool(&self) -> Result<Entry> {
        Err(Error::new(
            crate::codes::CONSENT_REQUIRES_USER_MESSAGE,
            "consent is confirmed only by the user's own standalone message (the UserPromptSubmit hook), never by a command; ask the user to send the token as their whole message",
        ))
    }

    /// The UserPromptSubmit hook's entry point: when the user's prompt is,
    /// after trimming, exactly one token (case-insensitive, standalone),
    /// confirm it. `Ok(None)` when the prompt is not a token or this
    /// workspace has no latch (nothing to do, nothing counted).
    pub fn user_prompt(&self, now_ms: u64, prompt: &str) -> Result<Option<PromptOutcome>> {
        let Ok(token) = tokens::standalone_token(prompt) else { return Ok(None) };
        if layout::check_latch_dir(&self.paths.dir, ".memory-latch")?.is_none() {
            return Ok(None);
        }
        let guard = self.lock()?;
        let mut ledger = self.load_ledger()?;
        let refused =
            |code: kijito_protocol::error::ErrorCode, message: &str| Ok(Some(PromptOutcome::Refused { code, message: message.into() }));
        // An unusable consent configuration confirms nothing (fail closed).
        if let Some((code, message)) = ledger.context.as_ref().and_then(|c| c.setting.invalid.clone()) {
            return refused(code, &format!("the user's consent configuration is unusable: {message}"));
        }
        let Some(idx) = ledger.tokens.iter().position(|t| t.matches(&token)) else {
            if !ledger.tokens.iter().any(|t| t.status(now_ms) == TokenStatus::Live) {
                return refused(crate::codes::CONSENT_TOKEN_UNKNOWN.into(), "no live token matches (nothing is waiting for confirmation)");
            }
            let attempts_left = ledger.wrong_attempt(now_ms);
            self.save_ledger(&ledger)?;
            return Ok(Some(PromptOutcome::Wrong { attempts_left }));
        };
        match ledger.tokens[idx].status(now_ms) {
            TokenStatus::Used => return refused(crate::codes::CONSENT_TOKEN_REPLAYED.into(), "that token was already used (single use)"),
            TokenStatus::Expired => {
                return refused(crate::codes::CONSENT_TOKEN_EXPIRED.into(), "that token has expired; request consent again")
            }
            TokenStatus::Locked => {
                return refused(
                    crate::codes::CONSENT_TOKEN_LOCKED.into(),
                    "that token is locked after too many wrong attempts; request consent again",
                )
            }
            TokenStatus::Live => {}
        }
        if ledger.tokens[idx].wallet.is_some() {
            return refused(
                crate::codes::WALLET_SIGNATURE_REQUIRED.into(),
                "this request is in wallet consent mode: only the configured signer's EIP-712 signature confirms it",
            );
        }
        if ledger.tokens[idx].key.is_some() {
            return refused(
                crate::codes::CONSENT_SIGNATURE_REQUIRED.into(),
                "this request is in key consent mode: only the user's signature (`memory-latch approve` in their own terminal) confirms it",
            );
        }
        if ledger.tokens[idx].purpose == tokens::Purpose::Review {
            return match self.review_locked(&guard, now_ms, &mut ledger, idx) {
                Ok(e) => Ok(Some(PromptOutcome::Reviewed { entry_seq: e.entry_seq })),
                Err(e) => refused(e.error_code(), e.message()),
            };
        }
        if ledger.tokens[idx].purpose == tokens::Purpose::Reseed {
            return match self.reseed_locked(now_ms, &mut ledger, idx) {
                Ok(e) => Ok(Some(PromptOutcome::Reseeded {
                    entry_seq: e.entry_seq,
                    old_chain_trusted: e.reseeded_from.as_ref().is_some_and(|r| r.old_chain_trusted),
                })),
                Err(e) => refused(e.error_code(), e.message()),
            };
        }
        self.confirm_locked(&guard, now_ms, &mut ledger, idx, None)
    }

    /// Confirm the consent record at `idx` (caller holds the lock): one
    /// `consent_confirm` entry bound to its action hash. `signer`: the
    /// user's wallet signature (already verified) confirmed it, which counts
    /// as the reconfirmation of a high-risk request.
    pub(crate) fn confirm_locked(
        &self,
        guard: &crate::lock::LockGuard,
        now_ms: u64,
        ledger: &mut tokens::Ledger,
        idx: usize,
        signer: Option<&str>,
    ) -> Result<Option<PromptOutcome>> {
        let refused =
            |code: kijito_protocol::error::ErrorCode, message: &str| Ok(Some(PromptOutcome::Refused { code, message: message.into() }));
        let mut outcome = None;
        let written = self.transact(guard, now_ms, Event::ConsentConfirm, |e, head| {
            let rec = &mut ledger.tokens[idx];
            if head.irreversible_action_pending != rec.id || head.action_hash.as_ref() != Some(&rec.action_hash) {
                return Err(Error::new(
                    crate::codes::CONSENT_TOKEN_SUPERSEDED,
                    "a newer consent request (or a changed action) replaced this token",
                ));
            }
            if head.consent_state == ConsentState::Authorized {
                return Err(Error::new(crate::codes::CONSENT_ALREADY_CONFIRMED, "this token is already confirmed"));
            }
            let high = rec.risk == Risk::High;
            let first = rec.confirmed_at_ms.is_none() && signer.is_none();
            if signer.is_some() {
                rec.confirmed_at_ms = Some(now_ms);
                rec.reconfirmed_at_ms = Some(now_ms);
            } else if first {
                rec.confirmed_at_ms = Some(now_ms);
            } else {
                rec.reconfirmed_at_ms = Some(now_ms);
            }
            let authorized = !high || !first;
            e.consent_state = if authorized { ConsentState::Authorized } else { ConsentState::Pending };
            e.irreversible_action_pending = rec.id.clone();
            e.action_hash = Some(rec.action_hash.clone());
            e.details = vec![match (high, first) {
                _ if signer.is_some_and(|s| s.starts_with("memory-latch-")) => {
                    format!(
                        "consent confirmed by the user's Ed25519 signature with key {} (memory-latch approve)",
                        signer.unwrap_or_default()
                    )
                }
                _ if signer.is_some() => {
                    format!("consent confirmed by the user's EIP-712 wallet signature from {}", signer.unwrap_or_default())
                }
                (false, _) => "consent confirmed by the user's standalone message".to_owned(),
                (true, true) => {
                    "high risk: first confirmation by the user's standalone message; a second separate message is required".to_owned()
                }
                (true, false) => "high risk: reconfirmed by a second, separate standalone user message".to_owned(),
            }];
            outcome = Some((authorized, rec.id.clone(), rec.action_hash.clone(), rec.risk));
            self.save_ledger(ledger)
        });
        let entry = match written {
            Ok(e) => e,
            Err(e) => return refused(e.error_code(), e.message()),
        };
        let (authorized, token_id, action_hash, risk) =
            outcome.ok_or_else(|| Error::new(crate::codes::WRITE_FAILED, "no confirmation recorded"))?;
        Ok(Some(if authorized {
            PromptOutcome::Confirmed { token_id, action_hash, risk, entry_seq: entry.entry_seq }
        } else {
            PromptOutcome::AwaitingReconfirmation { token_id, action_hash, entry_seq: entry.entry_seq }
        }))
    }

    /// Issue a reseed token (only in Silent Witness), bound to the current
    /// manifest bytes.
    pub fn reseed_request(&self, now_ms: u64) -> Result<Issued> {
        let _guard = self.lock()?;
        let reason = self
            .silent_witness_reason()?
            .ok_or_else(|| Error::new(crate::codes::RESEED_NOT_NEEDED, "Silent Witness is not active; reseed is refused"))?;
        let state = self.state_hash()?;
        let mut ledger = self.load_ledger()?;
        let ttl = self.governance.token_ttl_minutes as u64 * 60_000;
        let summary = clean_text(&format!("reseed: archive the current chain and start a new one ({reason})"), "summary", false)?;
        let (token, rec) = ledger.issue(tokens::Purpose::Reseed, &state, Risk::High, &summary, now_ms, ttl);
        self.save_ledger(&ledger)?;
        Ok(Issued { token, record: rec.state(now_ms), entry: None, wallet: None, key: None })
    }

    /// Issue a review token: only while consent is `locked` by degraded mode
    /// (a `degraded_mode` entry, carried by every later entry until a
    /// review) and not in Silent Witness (which only a reseed ends). The
    /// token is bound to the head it was issued on (`action_hash` = that
    /// head's payload hash), for the record; any later head that is still
    /// locked may be reviewed with it.
    pub fn review_request(&self, now_ms: u64) -> Result<Issued> {
        let _guard = self.lock()?;
        if let Some(reason) = self.silent_witness_reason()? {
            return Err(Error::new(
                crate::codes::SILENT_WITNESS_ACTIVE,
                format!("Silent Witness is active ({reason}): only a reseed ends it"),
            ));
        }
        let live = chain::load_live(&self.paths, self.key.as_ref())?;
        let head = live.entries.last().ok_or_else(|| Error::new(crate::codes::NOT_INITIALISED, "the latch has no entries"))?;
        if head.consent_state != ConsentState::Locked {
            return Err(Error::new(crate::codes::REVIEW_NOT_NEEDED, "consent is not locked: there is no degraded mode to review"));
        }
        let mut ledger = self.load_ledger()?;
        let ttl = self.governance.token_ttl_minutes as u64 * 60_000;
        let summary =
            clean_text(&format!("review: the user has seen the degraded-mode findings (head entry {})", head.entry_seq), "summary", false)?;
        let bound = ActionHash::parse(&head.integrity.payload_hash)?;
        let (token, rec) = ledger.issue(tokens::Purpose::Review, &bound, Risk::High, &summary, now_ms, ttl);
        self.save_ledger(&ledger)?;
        Ok(Issued { token, record: rec.state(now_ms), entry: None, wallet: None, key: None })
    }

    /// End degraded mode with the review token at `idx`, confirmed by the
    /// user's message (caller holds the lock): one `review` entry, consent
    /// back to `pending`.
    pub(crate) fn review_locked(
        &self,
        guard: &crate::lock::LockGuard,
        now_ms: u64,
        ledger: &mut tokens::Ledger,
        idx: usize,
    ) -> Result<Entry> {
        if let Some(reason) = self.silent_witness_reason()? {
            return Err(Error::new(
                crate::codes::SILENT_WITNESS_ACTIVE,
                format!("Silent Witness is active ({reason}): only a reseed ends it"),
            ));
        }
        self.transact(guard, now_ms, Event::Review, |e, head| {
            if head.consent_state != ConsentState::Locked {
                return Err(Error::new(crate::codes::REVIEW_NOT_NEEDED, "consent is not locked: there is no degraded mode to review"));
            }
            let rec = &mut ledger.tokens[idx];
            rec.used_at_ms = Some(now_ms);
            rec.confirmed_at_ms = Some(now_ms);
            e.consent_state = ConsentState::Pending;
            e.irreversible_action_pending = NONE.into();
            e.action_hash = None;
            e.details =
                vec![format!("degraded mode reviewed: the user confirmed review token {} with their own standalone message", rec.id)];
            self.save_ledger(ledger)
        })
    }

    /// Silent Witness reason from the marker or a trusted head (no lock).
    pub fn silent_witness_reason(&self) -> Result<Option<String>> {
        if let Some(m) = self.witness_marker()? {
            return Ok(Some(m.reason));
        }
        match chain::load_live(&self.paths, self.key.as_ref()) {
            Ok(live) => self.witness_active(&live),
            Err(_) => Ok(None),
        }
    }

    /// What a reseed token binds: the hash of the manifest's bytes as they
    /// are (none: of no bytes).
    pub(crate) fn state_hash(&self) -> Result<ActionHash> {
        match layout::read_file(&self.paths.manifest, crate::codes::MANIFEST_SYMLINK) {
            Ok(b) => Ok(ActionHash::of_canonical(&b)),
            Err(e) if e.code_as() == Some(crate::codes::FILE_MISSING) => Ok(ActionHash::of_canonical(b"")),
            Err(e) => Err(e),
        }
    }

    /// Leave Silent Witness with the reseed token at `idx`, confirmed by the
    /// user's message (caller holds the lock): archive the old chain and
    /// start a new one recording the old head's hash.
    pub(crate) fn reseed_locked(&self, now_ms: u64, ledger: &mut tokens::Ledger, idx: usize) -> Result<Entry> {
        if self.silent_witness_reason()?.is_none() {
            return Err(Error::new(crate::codes::RESEED_NOT_NEEDED, "Silent Witness is not active; reseed is refused"));
        }
        let state = self.state_hash()?;
        let rec = &mut ledger.tokens[idx];
        if rec.action_hash != state {
            return Err(Error::new(crate::codes::CONSENT_ACTION_CHANGED, "the manifest changed since the reseed token was issued"));
        }
        rec.used_at_ms = Some(now_ms);
        rec.confirmed_at_ms = Some(now_ms);
        self.save_ledger(ledger)?;
        let full = self.full_verify(false);
        let trusted = full.report.trusted;
        let old_head = full.head;
        // Archive the old chain.
        let name = format!("chain-{}-{}", now_ms, kijito_files::random::hex(4));
        private::ensure_private_dir(&self.paths.archive).map_err(|e| layout::file_error(e, crate::codes::DIR_SYMLINK))?;
        let dest = self.paths.archive.join(&name);
        private::ensure_private_dir(&dest).map_err(|e| layout::file_error(e, crate::codes::DIR_SYMLINK))?;
        for (from, to) in [(&self.paths.manifest, dest.join(layout::MANIFEST)), (&self.paths.history, dest.join(layout::HISTORY))] {
            if std::fs::symlink_metadata(from).is_ok() {
                std::fs::rename(from, &to)
                    .map_err(|e| Error::new(crate::codes::WRITE_FAILED, format!("cannot archive {}: {e}", from.display())))?;
            }
        }
        private::fsync_dir(&dest)?;
        private::fsync_dir(&self.paths.dir)?;
        private::remove_owned(&self.paths.witness).map_err(|e| layout::file_error(e, crate::codes::WITNESS_SYMLINK))?;
        let mode = if self.key.is_some() { Mode::Hmac } else { Mode::Checksum };
        let objective = match &old_head {
            Some(h) if trusted => h.objective.clone(),
            _ => "restate the objective: the previous chain failed verification".to_owned(),
        };
        let mut e = self.genesis(now_ms, Event::Reseed, mode, objective);
        if let (true, Some(h)) = (trusted, &old_head) {
            e.non_negotiables = h.non_negotiables.clone();
            e.known_state = h.known_state.clone();
            e.unknown_state = h.unknown_state.clone();
            e.next_single_step = h.next_single_step.clone();
        }
        e.reseeded_from = Some(ReseedRef {
            old_head_payload_hash: old_head.as_ref().map(|h| h.integrity.payload_hash.clone()).unwrap_or_else(|| NONE.into()),
            old_head_seq: old_head.as_ref().map(|h| h.entry_seq).unwrap_or(0),
            old_manifest_sha256: state.into(),
            old_chain_trusted: trusted,
            archive: format!("{}/{}", layout::ARCHIVE, name),
        });
        e.details = vec!["reseeded from a confirmed user token; the old chain is archived".into()];
        self.finalize(&mut e, now_ms)?;
        self.write_manifest(std::slice::from_ref(&e))?;
        Ok(e)
    }
}
