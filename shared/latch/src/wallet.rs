//! Wallet consent mode: opt-in, off by default. With a
//! configured signer address, consent requests at or above the configured
//! risk (`high` by default) are confirmed not by a text token but by an
//! EIP-712 signature over (action hash, nonce, expiry) from that address,
//! which the user sends as their whole message (the UserPromptSubmit hook,
//! like tokens; never a tool call). Verified by secp256k1 public-key
//! recovery (`k256`) and Keccak-256 (`sha3`).
//!
//! The typed data, byte-exact (docs/protocol.md §10.2):
//!
//! ```text
//! EIP712Domain(string name,string version)      name "memory-latch", version "1" (no chainId, no contract)
//! MemoryLatchConsent(bytes32 actionHash,bytes32 nonce,uint256 expiresAt)
//! digest = keccak256(0x19 0x01 ‖ domainSeparator ‖ hashStruct(message))
//! ```
//!
//! Configuration: `memory-latch.wallet/v1` JSON in
//! `$MEMORY_LATCH_WALLET_FILE`, else `$XDG_CONFIG_HOME/kijito-qa/memory-latch-wallet.json`
//! (else `~/.config/...`). No file at the default place: token mode, silently
//! (the default). A named file that is missing, or any file that is
//! malformed, insecure or inside the workspace: token mode with a notice
//! (fail closed: a token from the user's own message is still required).

use crate::entry::Risk;
use crate::{layout, Latch, PromptOutcome, TokenStatus};
use k256::ecdsa::{RecoveryId, Signature, VerifyingKey};
use kijito_files::private;
use kijito_protocol::error::{Error, Result};
use kijito_protocol::ids::{ActionHash, TaggedDigest};
use serde::{Deserialize, Serialize};
use sha3::{Digest as _, Keccak256};
use std::path::{Path, PathBuf};

pub const WALLET_ENV: &str = "MEMORY_LATCH_WALLET_FILE";
pub const CONFIG_SCHEMA: &str = "memory-latch.wallet/v1";
pub const DOMAIN_TYPE: &str = "EIP712Domain(string name,string version)";
pub const DOMAIN_NAME: &str = "memory-latch";
pub const DOMAIN_VERSION: &str = "1";
pub const PRIMARY_TYPE: &str = "MemoryLatchConsent";
pub const CONSENT_TYPE: &str = "MemoryLatchConsent(bytes32 actionHash,bytes32 nonce,uint256 expiresAt)";
const MAX_CONFIG_BYTES: u64 = 4096;

/// The secp256k1 group order n (big endian).
const ORDER: [u8; 32] = [
    0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfe, 0xba, 0xae, 0xdc, 0xe6, 0xaf, 0x48,
    0xa0, 0x3b, 0xbf, 0xd2, 0x5e, 0x8c, 0xd0, 0x36, 0x41, 0x41,
];

/// secp256k1 group order / 2 (big endian): a signature's `s` above it is
/// the malleable twin of a low-s signature and is refused.
const HALF_ORDER: [u8; 32] = [
    0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x5d, 0x57, 0x6e, 0x73, 0x57, 0xa4,
    0x50, 0x1d, 0xdf, 0xe9, 0x2f, 0x46, 0x68, 0x1b, 0x20, 0xa0,
];

pub fn keccak(bytes: &[u8]) -> [u8; 32] {
    Keccak256::digest(bytes).into()
}

/// Lowercase hex of bytes.
pub fn hex(bytes: &[u8]) -> String {
    hex_lower(bytes)
}

fn hex_lower(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn parse_hex<const N: usize>(text: &str) -> Option<[u8; N]> {
    let h = text.strip_prefix("0x")?;
    if h.len() != N * 2 || !h.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let mut out = [0u8; N];
    for (i, o) in out.iter_mut().enumerate() {
        *o = u8::from_str_radix(&h[i * 2..i * 2 + 2], 16).ok()?;
    }
    Some(out)
}

/// An Ethereum address (20 bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Address(pub [u8; 20]);

impl Address {
    /// `0x` + 40 hex: all lowercase, all uppercase, or a valid EIP-55 checksum.
    pub fn parse(text: &str) -> Result<Address> {
        let bad = |why: &str| Error::new(crate::codes::WALLET_CONFIG_INVALID, format!("signer address {why}"));
        let bytes = parse_hex::<20>(text).ok_or_else(|| bad("must be 0x followed by 40 hex digits"))?;
        let a = Address(bytes);
        let body = &text[2..];
        let mixed = body.bytes().any(|b| b.is_ascii_lowercase()) && body.bytes().any(|b| b.is_ascii_uppercase());
        if mixed && a.checksummed() != text {
            return Err(bad("has a wrong EIP-55 checksum (a mistyped address)"));
        }
        Ok(a)
    }

    /// The address of an uncompressed public key.
    pub fn of_key(key: &VerifyingKey) -> Address {
        let point = key.to_encoded_point(false);
        let h = keccak(&point.as_bytes()[1..]);
        let mut a = [0u8; 20];
        a.copy_from_slice(&h[12..]);
        Address(a)
    }

    pub fn lower(&self) -> String {
        format!("0x{}", hex_lower(&self.0))
    }

    /// EIP-55 mixed-case checksum form.
    pub fn checksummed(&self) -> String {
        let lower = hex_lower(&self.0);
        let h = keccak(lower.as_bytes());
        let mut out = String::from("0x");
        for (i, c) in lower.chars().enumerate() {
            let nibble = (h[i / 2] >> (if i % 2 == 0 { 4 } else { 0 })) & 0xf;
            out.push(if c.is_ascii_alphabetic() && nibble >= 8 { c.to_ascii_uppercase() } else { c });
        }
        out
    }
}

/// `memory-latch.wallet/v1`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct ConfigFile {
    schema: String,
    signer: String,
    #[serde(default)]
    min_risk: Option<Risk>,
}

/// A valid wallet configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WalletConfig {
    pub signer: Address,
    /// Requests at or above this risk need the signature (default high).
    pub min_risk: Risk,
}

impl WalletConfig {
    pub fn applies_to(&self, risk: Risk) -> bool {
        risk >= self.min_risk
    }
}

/// What the configuration says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Setting {
    /// Nothing configured: token mode (the default), no notice.
    Off,
    On(WalletConfig),
    /// Configured but unusable: token mode, with this notice.
    Fallback(String),
}

impl Setting {
    pub fn config(&self) -> Option<&WalletConfig> {
        match self {
            Setting::On(c) => Some(c),
            _ => None,
        }
    }

    pub fn notice(&self) -> Option<&str> {
        match self {
            Setting::Fallback(n) => Some(n),
            _ => None,
        }
    }

    /// From the environment: `MEMORY_LATCH_WALLET_FILE` (explicit), else
    /// the default file under the user's config directory.
    pub fn from_env(workspace_root: &Path) -> Setting {
        let var = |n: &str| std::env::var_os(n).filter(|v| !v.is_empty()).map(PathBuf::from);
        if let Some(p) = var(WALLET_ENV) {
            return Setting::load(&p, true, workspace_root);
        }
        let base = var("XDG_CONFIG_HOME")
            .filter(|p| p.is_absolute())
            .or_else(|| var("HOME").filter(|p| p.is_absolute()).map(|h| h.join(".config")));
        match base {
            Some(b) => Setting::load(&b.join("kijito-qa").join("memory-latch-wallet.json"), false, workspace_root),
            None => Setting::Off,
        }
    }

    /// Load `path`; `explicit`: it was named, so its absence is a notice.
    pub fn load(path: &Path, explicit: bool, workspace_root: &Path) -> Setting {
        let fallback = |why: String| {
            Setting::Fallback(format!(
                "wallet consent mode is configured but unusable ({}: {why}); falling back to token mode (the user's own message with the token)",
                crate::codes::WALLET_CONFIG_INVALID
            ))
        };
        match std::fs::symlink_metadata(path) {
            Err(_) if !explicit => return Setting::Off,
            Err(_) => return fallback(format!("{WALLET_ENV} names {}, which does not exist", path.display())),
            Ok(_) => {}
        }
        if !path.is_absolute() || path.starts_with(workspace_root) {
            return fallback(format!("{} must be an absolute path outside the workspace", path.display()));
        }
        let rules = private::FileRules { owner_only: true, min_bytes: 2, max_bytes: MAX_CONFIG_BYTES };
        let bytes = match private::read_checked(path, rules) {
            Ok((b, _)) => b,
            Err(e) => return fallback(format!("{}: {}", path.display(), e.message())),
        };
        let file: ConfigFile = match serde_json::from_slice(&bytes) {
            Ok(f) => f,
            Err(e) => return fallback(format!("{} is not a {CONFIG_SCHEMA} file: {e}", path.display())),
        };
        if file.schema != CONFIG_SCHEMA {
            return fallback(format!("{} has schema {:?}, not {CONFIG_SCHEMA}", path.display(), file.schema));
        }
        match Address::parse(&file.signer) {
            Ok(signer) if signer.0 != [0u8; 20] => Setting::On(WalletConfig { signer, min_risk: file.min_risk.unwrap_or(Risk::Low) }),
            Ok(_) => fallback("the zero address cannot sign".into()),
            Err(e) => fallback(e.message().to_owned()),
        }
    }
}

/// The EIP-712 domain separator of memory-latch.
pub fn domain_separator() -> [u8; 32] {
    let mut b = Vec::with_capacity(96);
    b.extend_from_slice(&keccak(DOMAIN_TYPE.as_bytes()));
    b.extend_from_slice(&keccak(DOMAIN_NAME.as_bytes()));
    b.extend_from_slice(&keccak(DOMAIN_VERSION.as_bytes()));
    keccak(&b)
}

/// `hashStruct(MemoryLatchConsent{actionHash, nonce, expiresAt})`.
pub fn struct_hash(action_hash: &[u8; 32], nonce: &[u8; 32], expires_at: u64) -> [u8; 32] {
    let mut b = Vec::with_capacity(128);
    b.extend_from_slice(&keccak(CONSENT_TYPE.as_bytes()));
    b.extend_from_slice(action_hash);
    b.extend_from_slice(nonce);
    let mut n = [0u8; 32];
    n[24..].copy_from_slice(&expires_at.to_be_bytes());
    b.extend_from_slice(&n);
    keccak(&b)
}

/// The digest the wallet signs.
pub fn consent_digest(action_hash: &[u8; 32], nonce: &[u8; 32], expires_at: u64) -> [u8; 32] {
    let mut b = Vec::with_capacity(66);
    b.extend_from_slice(&[0x19, 0x01]);
    b.extend_from_slice(&domain_separator());
    b.extend_from_slice(&struct_hash(action_hash, nonce, expires_at));
    keccak(&b)
}

/// The 32 raw bytes of `sha256:<hex>`.
pub fn action_bytes(action_hash: &str) -> Result<[u8; 32]> {
    action_hash
        .strip_prefix(TaggedDigest::PREFIX)
        .and_then(|h| parse_hex::<32>(&format!("0x{h}")))
        .ok_or_else(|| Error::new(crate::codes::LEDGER_INVALID, "action hash is not sha256:<64 hex>"))
}

/// What a wallet-mode ledger record carries besides the token fields.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Challenge {
    /// The configured signer at request time (lowercase `0x` + 40 hex).
    pub signer: String,
    /// 32 random bytes, `0x` + 64 hex: single use.
    pub nonce: String,
    /// Unix seconds (the record's `expires_at_ms` / 1000).
    pub expires_at: u64,
    /// The accepted signature (`0x` + 130 hex), once the user sent it.
    pub signature: Option<String>,
}

impl Challenge {
    pub fn new(signer: &Address, expires_at_ms: u64) -> Challenge {
        let mut nonce = [0u8; 32];
        kijito_files::random::fill(&mut nonce);
        Challenge { signer: signer.lower(), nonce: format!("0x{}", hex_lower(&nonce)), expires_at: expires_at_ms / 1000, signature: None }
    }

    pub fn digest(&self, action_hash: &ActionHash) -> Result<[u8; 32]> {
        let nonce =
            parse_hex::<32>(&self.nonce).ok_or_else(|| Error::new(crate::codes::LEDGER_INVALID, "wallet nonce is not 0x + 64 hex"))?;
        Ok(consent_digest(&action_bytes(action_hash.as_str())?, &nonce, self.expires_at))
    }

    /// The `eth_signTypedData_v4` argument the user's wallet signs.
    pub fn typed_data(&self, action_hash: &ActionHash) -> serde_json::Value {
        serde_json::json!({
            "types": {
                "EIP712Domain": [{"name": "name", "type": "string"}, {"name": "version", "type": "string"}],
                PRIMARY_TYPE: [{"name": "actionHash", "type": "bytes32"}, {"name": "nonce", "type": "bytes32"}, {"name": "expiresAt", "type": "uint256"}],
            },
            "primaryType": PRIMARY_TYPE,
            "domain": {"name": DOMAIN_NAME, "version": DOMAIN_VERSION},
            "message": {"actionHash": format!("0x{}", action_hash.digest().hex()), "nonce": self.nonce, "expiresAt": self.expires_at},
        })
    }

    /// Whether `sig` is this challenge's valid signature by `signer` over `action_hash`.
    pub fn verify(&self, action_hash: &ActionHash, sig: &Sig, signer: &Address) -> bool {
        self.signer == signer.lower() && self.digest(action_hash).ok().and_then(|d| sig.recover(&d).ok()).is_some_and(|a| a == *signer)
    }
}

/// A 65-byte Ethereum signature `r ‖ s ‖ v`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sig {
    bytes: [u8; 65],
}

impl Sig {
    /// A standalone user message that is a signature: after trimming,
    /// exactly `0x` + 130 hex digits (either case), nothing else.
    pub fn standalone(message: &str) -> Option<Sig> {
        if message.len() > 512 {
            return None;
        }
        let t = message.trim();
        let t = t.strip_prefix("0X").map(|r| format!("0x{r}")).unwrap_or_else(|| t.to_owned());
        parse_hex::<65>(&t).map(|bytes| Sig { bytes })
    }

    pub fn hex(&self) -> String {
        format!("0x{}", hex_lower(&self.bytes))
    }

    /// The signature from `0x` + 130 hex digits (exactly; no trimming).
    pub fn parse(text: &str) -> Option<Sig> {
        parse_hex::<65>(text).map(|bytes| Sig { bytes })
    }

    /// Structural rules before any recovery: `v` is 27/28 (or 0/1), `s` is
    /// in the lower half of the order (the high-s twin is refused: no
    /// malleability), `r` and `s` are valid scalars (non-zero, below the
    /// order). No curve arithmetic: the hooks check this in process and
    /// leave only the recovery to `memory-latch wallet-recover`. Returns the
    /// recovery id (0 or 1).
    pub fn check_form(&self) -> Result<u8> {
        let invalid = |why: &str| Error::new(crate::codes::WALLET_SIGNATURE_INVALID, format!("the signature {why}"));
        let v = match self.bytes[64] {
            27 | 28 => self.bytes[64] - 27,
            0 | 1 => self.bytes[64],
            _ => return Err(invalid("has a recovery byte v other than 27/28")),
        };
        if self.bytes[32..64] > HALF_ORDER[..] {
            return Err(Error::new(
                crate::codes::WALLET_SIGNATURE_MALLEABLE,
                "the signature has a high s value (the malleable twin of a valid signature); only low-s signatures are accepted",
            ));
        }
        let (r, s) = (&self.bytes[..32], &self.bytes[32..64]);
        if r.iter().all(|b| *b == 0) || s.iter().all(|b| *b == 0) || r >= &ORDER[..] || s >= &ORDER[..] {
            return Err(invalid("has an r or s outside the curve order (or zero)"));
        }
        Ok(v)
    }

    /// [`Sig::check_form`], then the `k256` signature and recovery id.
    pub fn check(&self) -> Result<(Signature, RecoveryId)> {
        let invalid = |why: &str| Error::new(crate::codes::WALLET_SIGNATURE_INVALID, format!("the signature {why}"));
        let v = self.check_form()?;
        let sig = Signature::from_slice(&self.bytes[..64]).map_err(|_| invalid("has an r or s outside the curve order (or zero)"))?;
        let recid = RecoveryId::from_byte(v).ok_or_else(|| invalid("has an invalid recovery id"))?;
        Ok((sig, recid))
    }

    /// The signer address recovered over `digest`.
    pub fn recover(&self, digest: &[u8; 32]) -> Result<Address> {
        let (sig, recid) = self.check()?;
        let key = VerifyingKey::recover_from_prehash(digest, &sig, recid)
            .map_err(|_| Error::new(crate::codes::WALLET_SIGNATURE_INVALID, "no public key recovers from this signature"))?;
        Ok(Address::of_key(&key))
    }
}

/// Recovers the signer of one signature over several digests, in order
/// (`None`: no public key recovers over that digest). [`InProcess`] does it
/// here (`k256`); the UserPromptSubmit hook runs the installed
/// `memory-latch wallet-recover` instead (kijito-hooks' `latch_wallet`), so
/// that the binary that runs on every prompt and tool call links no
/// secp256k1 code. `Err`: the recovery could not be run at all.
pub trait Recoverer {
    fn recover_all(&self, sig: &Sig, digests: &[[u8; 32]]) -> Result<Vec<Option<Address>>>;
}

/// [`Recoverer`] in this process ([`Sig::recover`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct InProcess;

impl Recoverer for InProcess {
    fn recover_all(&self, sig: &Sig, digests: &[[u8; 32]]) -> Result<Vec<Option<Address>>> {
        Ok(digests.iter().map(|d| sig.recover(d).ok()).collect())
    }
}

/// `memory-latch wallet-recover`: one output line per digest, the recovered
/// address (lowercase `0x` + 40 hex) or `none`.
pub fn recover_lines(sig: &Sig, digests: &[[u8; 32]]) -> String {
    digests.iter().map(|d| sig.recover(d).map(|a| a.lower()).unwrap_or_else(|_| "none".into()) + "\n").collect()
}

/// A digest argument: `0x` + 64 hex.
pub fn parse_digest(text: &str) -> Option<[u8; 32]> {
    parse_hex::<32>(text)
}

/// Parse [`recover_lines`]: exactly `n` lines, each an address or `none`.
pub fn parse_recover_lines(text: &str, n: usize) -> Option<Vec<Option<Address>>> {
    let lines: Vec<&str> = text.strip_suffix('\n').unwrap_or(text).split('\n').collect();
    if text.is_empty() || !text.ends_with('\n') || lines.len() != n {
        return (n == 0 && text.is_empty()).then(Vec::new);
    }
    lines
        .into_iter()
        .map(|l| match l {
            "none" => Some(None),
            a if a.len() == 42 && !a[2..].bytes().any(|b| b.is_ascii_uppercase()) => parse_hex::<20>(a).map(|b| Some(Address(b))),
            _ => None,
        })
        .collect()
}

impl Latch {
    /// The UserPromptSubmit hook's entry point for wallet mode: when the
    /// user's prompt is exactly a signature (`0x` + 130 hex), verify it
    /// against the configured signer and the pending wallet request, and
    /// confirm through the same flow as a token (one `consent_confirm`
    /// entry bound to the action hash). `Ok(None)`: not a signature, or no latch.
    pub fn user_signature(&self, now_ms: u64, prompt: &str, setting: &Setting) -> Result<Option<PromptOutcome>> {
        self.user_signature_with(now_ms, prompt, setting, &InProcess)
    }

    /// [`Latch::user_signature`] with the recovery done by `recoverer`
    /// (the hook: the installed `memory-latch wallet-recover`). Every other
    /// step (form, lock, ledger, status, confirmation) runs here.
    pub fn user_signature_with(
        &self,
        now_ms: u64,
        prompt: &str,
        setting: &Setting,
        recoverer: &dyn Recoverer,
    ) -> Result<Option<PromptOutcome>> {
        let Some(sig) = Sig::standalone(prompt) else { return Ok(None) };
        if layout::check_latch_dir(&self.paths.dir, ".memory-latch")?.is_none() {
            return Ok(None);
        }
        let refused =
            |code: kijito_protocol::error::ErrorCode, message: &str| Ok(Some(PromptOutcome::Refused { code, message: message.into() }));
        let cfg = match setting {
            Setting::On(c) => c,
            Setting::Fallback(n) => return refused(crate::codes::WALLET_CONFIG_INVALID.into(), n),
            Setting::Off => {
                return refused(crate::codes::WALLET_CONFIG_INVALID.into(), "no wallet signer is configured; consent uses tokens")
            }
        };
        if let Err(e) = sig.check_form() {
            return refused(e.error_code(), e.message());
        }
        let guard = self.lock()?;
        let mut ledger = self.load_ledger()?;
        // The requests made for the configured signer, with their digests
        // ([`Challenge::verify`], the recovery done by `recoverer`).
        let signer = cfg.signer.lower();
        let candidates: Vec<(usize, [u8; 32])> = ledger
            .tokens
            .iter()
            .enumerate()
            .filter_map(|(i, t)| {
                t.wallet.as_ref().filter(|c| c.signer == signer).and_then(|c| c.digest(&t.action_hash).ok()).map(|d| (i, d))
            })
            .collect();
        let digests: Vec<[u8; 32]> = candidates.iter().map(|(_, d)| *d).collect();
        let recovered = if digests.is_empty() { Vec::new() } else { recoverer.recover_all(&sig, &digests)? };
        if recovered.len() != digests.len() {
            return Err(Error::new(
                crate::codes::WALLET_RECOVERY_FAILED,
                "the signature recovery answered for a different number of requests",
            ));
        }
        let found = candidates.iter().zip(&recovered).find(|(_, a)| **a == Some(cfg.signer)).map(|((i, _), _)| *i);
        let Some(idx) = found else {
            if ledger.tokens.iter().any(|t| t.wallet.is_some() && t.status(now_ms) == TokenStatus::Live) {
                ledger.wrong_attempt(now_ms);
                self.save_ledger(&ledger)?;
            }
            return refused(crate::codes::WALLET_SIGNATURE_UNMATCHED.into(),
                "the signature is not the configured signer's signature over any wallet consent request of this latch (another action, another signer, or another request)",
            );
        };
        let expires_at = ledger.tokens[idx].wallet.as_ref().map(|c| c.expires_at).unwrap_or(0);
        match ledger.tokens[idx].status(now_ms) {
            TokenStatus::Used => {
                return refused(crate::codes::WALLET_NONCE_REPLAYED.into(), "that request's nonce was already used (single use)")
            }
            TokenStatus::Locked => {
                return refused(
                    crate::codes::CONSENT_TOKEN_LOCKED.into(),
                    "that request is locked after too many wrong attempts; request consent again",
                )
            }
            TokenStatus::Expired => {
                return refused(crate::codes::WALLET_EXPIRED.into(), "that signed request has expired; request consent again")
            }
            TokenStatus::Live if now_ms / 1000 >= expires_at => {
                return refused(crate::codes::WALLET_EXPIRED.into(), "the signed expiry has passed; request consent again")
            }
            TokenStatus::Live => {}
        }
        if let Some(c) = ledger.tokens[idx].wallet.as_mut() {
            c.signature = Some(sig.hex());
        }
        self.confirm_locked(&guard, now_ms, &mut ledger, idx, Some(&cfg.signer.lower()))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// Produced by eth_account 0.14.0 (fixtures/wallet/README.md).
    const VECTORS: &str = include_str!("../../../fixtures/wallet/eip712-vectors.json");

    fn v() -> serde_json::Value {
        serde_json::from_str(VECTORS).unwrap()
    }
    fn b32(s: &serde_json::Value) -> [u8; 32] {
        parse_hex::<32>(s.as_str().unwrap()).unwrap()
    }
    fn sig(s: &serde_json::Value) -> Sig {
        Sig::standalone(s.as_str().unwrap()).unwrap()
    }

    #[test]
    fn digest_matches_eth_account() {
        let v = v();
        assert_eq!(format!("0x{}", hex(&domain_separator())), v["domain_separator"]);
        let action = action_bytes(v["action_hash"].as_str().unwrap()).unwrap();
        let nonce = b32(&v["nonce"]);
        let at = v["expires_at"].as_u64().unwrap();
        assert_eq!(format!("0x{}", hex(&struct_hash(&action, &nonce, at))), v["struct_hash"]);
        assert_eq!(consent_digest(&action, &nonce, at), b32(&v["digest"]));
        let other = action_bytes(v["other_action_hash"].as_str().unwrap()).unwrap();
        assert_eq!(consent_digest(&other, &nonce, at), b32(&v["other_action_digest"]));
        // the typed data we print is the one eth_account signed
        let c = Challenge { signer: String::new(), nonce: v["nonce"].as_str().unwrap().into(), expires_at: at, signature: None };
        assert_eq!(c.typed_data(&ActionHash::parse(v["action_hash"].as_str().unwrap()).unwrap()), v["typed_data"]);
        assert_eq!(c.digest(&ActionHash::parse(v["action_hash"].as_str().unwrap()).unwrap()).unwrap(), b32(&v["digest"]));
    }

    #[test]
    fn recovery_matches_and_every_attack_fails() {
        let v = v();
        let signer = Address::parse(v["signer_address"].as_str().unwrap()).unwrap();
        let other = Address::parse(v["other_address"].as_str().unwrap()).unwrap();
        assert_eq!(signer.checksummed(), v["signer_address"]);
        let digest = b32(&v["digest"]);
        assert_eq!(sig(&v["signature"]).recover(&digest).unwrap(), signer);
        // wrong signer: recovers to the other key, not the configured one
        assert_eq!(sig(&v["signature_by_other_key"]).recover(&digest).unwrap(), other);
        // another action hash: over this digest it recovers to some unrelated address
        assert_ne!(sig(&v["signature_over_other_action"]).recover(&digest).unwrap(), signer);
        assert_eq!(sig(&v["signature_over_other_action"]).recover(&b32(&v["other_action_digest"])).unwrap(), signer);
        // the malleable high-s twin (eth_account recovers it to the signer) is refused
        assert_eq!(sig(&v["signature_high_s_twin"]).recover(&digest).unwrap_err().code(), "wallet_signature_malleable");
        let c = Challenge {
            signer: signer.lower(),
            nonce: v["nonce"].as_str().unwrap().into(),
            expires_at: v["expires_at"].as_u64().unwrap(),
            signature: None,
        };
        let ah = &ActionHash::parse(v["action_hash"].as_str().unwrap()).unwrap();
        assert!(c.verify(ah, &sig(&v["signature"]), &signer));
        assert!(!c.verify(ah, &sig(&v["signature_by_other_key"]), &signer));
        assert!(!c.verify(ah, &sig(&v["signature"]), &other));
        assert!(!c.verify(&ActionHash::parse(v["other_action_hash"].as_str().unwrap()).unwrap(), &sig(&v["signature"]), &signer));
        // v as 0/1 is the same signature; any other v is invalid
        let mut raw = sig(&v["signature"]).bytes;
        raw[64] -= 27;
        assert_eq!(Sig { bytes: raw }.recover(&digest).unwrap(), signer);
        raw[64] = 29;
        assert_eq!(Sig { bytes: raw }.recover(&digest).unwrap_err().code(), "wallet_signature_invalid");
        // r = 0 is invalid
        let mut raw = sig(&v["signature"]).bytes;
        raw[..32].fill(0);
        assert_eq!(Sig { bytes: raw }.recover(&digest).unwrap_err().code(), "wallet_signature_invalid");
    }

    #[test]
    fn standalone_signature_and_address_rules() {
        let s = v()["signature"].as_str().unwrap().to_owned();
        assert!(Sig::standalone(&format!("  {s}\n")).is_some());
        assert!(Sig::standalone(&s.to_uppercase().replacen("0X", "0x", 1)).is_some());
        for bad in [format!("sign {s}"), format!("{s}00"), s[..s.len() - 2].to_owned(), s[2..].to_owned(), format!("'{s}'")] {
            assert!(Sig::standalone(&bad).is_none(), "{bad}");
        }
        let a = v()["signer_address"].as_str().unwrap().to_owned();
        assert!(Address::parse(&a.to_lowercase()).is_ok());
        assert!(Address::parse(&a).is_ok());
        // one flipped case letter: a mistyped checksum
        let pos = a[2..].find(|c: char| c.is_ascii_alphabetic()).unwrap() + 2;
        let mut m: Vec<char> = a.chars().collect();
        m[pos] = if m[pos].is_ascii_uppercase() { m[pos].to_ascii_lowercase() } else { m[pos].to_ascii_uppercase() };
        let m: String = m.into_iter().collect();
        assert_eq!(Address::parse(&m).unwrap_err().code(), "wallet_config_invalid");
        assert!(Address::parse("0x1234").is_err());
    }

    /// The hook's curve-free form check agrees with k256's parsing: on the
    /// edges of r and s (0, 1, n/2, n/2 + 1, n - 1, n, 2^256 - 1) and on
    /// random bytes, `check_form` passes exactly when `check` does, with
    /// the same code when it does not.
    #[test]
    fn the_form_check_without_curve_code_agrees_with_k256() {
        let mut n_minus_1 = ORDER;
        n_minus_1[31] -= 1;
        let mut half_plus_1 = HALF_ORDER;
        half_plus_1[31] += 1;
        let mut one = [0u8; 32];
        one[31] = 1;
        let edges = [[0u8; 32], one, HALF_ORDER, half_plus_1, n_minus_1, ORDER, [0xff; 32]];
        let mut cases = Vec::new();
        for r in &edges {
            for s in &edges {
                for v in [0u8, 1, 2, 26, 27, 28, 29] {
                    let mut b = [0u8; 65];
                    b[..32].copy_from_slice(r);
                    b[32..64].copy_from_slice(s);
                    b[64] = v;
                    cases.push(Sig { bytes: b });
                }
            }
        }
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..2000 {
            let mut b = [0u8; 65];
            for byte in b.iter_mut() {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                *byte = x as u8;
            }
            b[64] = [0, 1, 27, 28, 5][(x >> 8) as usize % 5];
            cases.push(Sig { bytes: b });
        }
        for sig in &cases {
            match (sig.check_form(), sig.check()) {
                (Ok(_), Ok(_)) => {}
                (Err(a), Err(b)) => assert_eq!((a.code(), a.message()), (b.code(), b.message()), "{}", sig.hex()),
                (a, b) => panic!("{}: check_form {:?} but check {:?}", sig.hex(), a.err(), b.err()),
            }
        }
    }

    #[test]
    fn recover_lines_round_trip_and_anything_else_is_refused() {
        let v = v();
        let s = sig(&v["signature"]);
        let digests = [b32(&v["digest"]), b32(&v["other_action_digest"])];
        let text = recover_lines(&s, &digests);
        let parsed = parse_recover_lines(&text, 2).unwrap();
        assert_eq!(parsed, InProcess.recover_all(&s, &digests).unwrap());
        assert_eq!(parsed[0], Some(Address::parse(v["signer_address"].as_str().unwrap()).unwrap()));
        assert_eq!(parse_recover_lines("none\n", 1), Some(vec![None]));
        assert_eq!(parse_recover_lines("", 0), Some(vec![]));
        let a = parsed[0].unwrap().lower();
        for bad in [
            String::new(),
            a.clone(),
            format!("{a}\n{a}\n"),
            format!("{}\n", parsed[0].unwrap().checksummed()),
            format!("{}\n", &a[..41]),
            format!("{a} \n"),
            "NONE\n".into(),
            "\n".into(),
        ] {
            assert_eq!(parse_recover_lines(&bad, 1), None, "{bad:?}");
        }
    }

    #[test]
    fn configuration_falls_back_to_tokens_with_a_notice() {
        use std::os::unix::fs::PermissionsExt;
        let d = tempfile::tempdir().unwrap();
        let ws = d.path().join("ws");
        std::fs::create_dir(&ws).unwrap();
        let f = d.path().join("wallet.json");
        // absent: off (default place) or a notice (named)
        assert_eq!(Setting::load(&f, false, &ws), Setting::Off);
        assert!(Setting::load(&f, true, &ws).notice().unwrap().contains("wallet_config_invalid"));
        let write = |text: &str, mode: u32| {
            std::fs::write(&f, text).unwrap();
            std::fs::set_permissions(&f, std::fs::Permissions::from_mode(mode)).unwrap();
        };
        let addr = v()["signer_address"].as_str().unwrap().to_owned();
        write(&format!(r#"{{"schema":"memory-latch.wallet/v1","signer":"{addr}"}}"#), 0o600);
        let on = Setting::load(&f, false, &ws);
        // No floor: every action needs the signature.
        assert_eq!(on.config().unwrap().min_risk, Risk::Low);
        assert!([Risk::Low, Risk::Medium, Risk::High].into_iter().all(|r| on.config().unwrap().applies_to(r)));
        write(&format!(r#"{{"schema":"memory-latch.wallet/v1","signer":"{addr}","min_risk":"high"}}"#), 0o600);
        let high = Setting::load(&f, false, &ws);
        assert!(high.config().unwrap().applies_to(Risk::High) && !high.config().unwrap().applies_to(Risk::Medium));
        for (text, mode) in [
            (format!(r#"{{"schema":"memory-latch.wallet/v1","signer":"{addr}"}}"#), 0o644),
            (r#"{"schema":"memory-latch.wallet/v1","signer":"0xnothex"}"#.to_owned(), 0o600),
            (r#"{"schema":"memory-latch.wallet/v1","signer":"0x0000000000000000000000000000000000000000"}"#.to_owned(), 0o600),
            (format!(r#"{{"schema":"memory-latch.wallet/v2","signer":"{addr}"}}"#), 0o600),
            (format!(r#"{{"schema":"memory-latch.wallet/v1","signer":"{addr}","extra":1}}"#), 0o600),
            ("not json".to_owned(), 0o600),
        ] {
            write(&text, mode);
            assert!(Setting::load(&f, false, &ws).notice().is_some(), "{text} {mode:o}");
        }
        // inside the workspace: refused
        let inside = ws.join("wallet.json");
        std::fs::write(&inside, format!(r#"{{"schema":"memory-latch.wallet/v1","signer":"{addr}"}}"#)).unwrap();
        std::fs::set_permissions(&inside, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert!(Setting::load(&inside, true, &ws).notice().is_some());
    }
}
