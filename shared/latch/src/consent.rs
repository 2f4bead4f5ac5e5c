//! The user's consent configuration: one file, user-owned,
//! outside the workspace, beside the wallet file:
//! `$MEMORY_LATCH_CONSENT_FILE`, else
//! `$XDG_CONFIG_HOME/kijito-qa/memory-latch-consent.json` (else
//! `~/.config/...`), schema `memory-latch.consent/v1`:
//!
//! ```json
//! {"schema":"memory-latch.consent/v1","mode":"key","floor":"low","public_key":"/home/u/.config/kijito-qa/latch.pub"}
//! ```
//!
//! - `mode`: `token` (the user's own message with a token: discipline),
//!   `key` (the user's Ed25519 signature made by `memory-latch approve` in
//!   their own terminal: authority), `wallet` (the EIP-712 signature of the
//!   signer in the wallet file: authority), `host` (the host's own dialog;
//!   Claude Code's TUI only, below high risk; kijito_hooks::consent_host).
//! - `floor` (`low` by default): the lowest risk any consent request has.
//!   A request's risk is the higher of the requester's `--risk` and the
//!   floor, so the agent's `--risk` can raise a risk, never lower it below
//!   the user's floor; in a signing mode every request needs the
//!   signature, whatever `--risk` says.
//! - `public_key` (key mode, required): the minisign public key file
//!   (`memory-latch keygen`); `secret_key` (optional): the default secret
//!   key file `approve` signs with.
//!
//! No consent file at the default place: the wallet file decides, as
//! before (`wallet` mode with its signer, its `min_risk` as the floor;
//! else `token`). A consent file that exists but is malformed, not an
//! owner-only regular file (group/other-writable, another owner, a
//! symlink), or inside the workspace fails closed: no consent request is
//! issued and no consent record passes ([`Setting::invalid`]).
//!
//! The signed approval (key mode), byte-exact (docs/protocol.md §10.3):
//!
//! ```text
//! memory-latch.consent-approval/v1
//! key: <key name, memory-latch-<16 upper hex>>
//! record: <tok_ id>
//! action: sha256:<64 hex>
//! nonce: <64 hex>
//! expires_at: <Unix seconds>
//! ```
//!
//! Ed25519 over those bytes (each line ending in LF); the signature is
//! stored base64 in the record's `key.signature`. Verification uses only
//! the configured public key; the secret key is read only by `approve`.

use crate::entry::Risk;
use crate::wallet;
use ct_codecs::{Base64, Decoder, Encoder};
use kijito_files::private;
use kijito_protocol::error::{Error, Result};
use kijito_protocol::ids::ActionHash;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

pub const CONSENT_ENV: &str = "MEMORY_LATCH_CONSENT_FILE";
pub const CONFIG_SCHEMA: &str = "memory-latch.consent/v1";
pub const APPROVAL_SCHEMA: &str = "memory-latch.consent-approval/v1";
const MAX_CONFIG_BYTES: u64 = 4096;
const MAX_KEY_BYTES: u64 = 4096;

/// How consent is given.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    Token,
    Key,
    Wallet,
    Host,
}

impl Mode {
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Token => "token",
            Mode::Key => "key",
            Mode::Wallet => "wallet",
            Mode::Host => "host",
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct ConfigFile {
    schema: String,
    mode: Mode,
    #[serde(default)]
    floor: Option<Risk>,
    #[serde(default)]
    public_key: Option<PathBuf>,
    #[serde(default)]
    secret_key: Option<PathBuf>,
}

/// The configured public key, decoded from its minisign box (the curve
/// point is checked when a signature is verified, so the hook binaries
/// that only read the setting link no curve code).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublicKey {
    pub name: String,
    pub public: [u8; 32],
}

/// The user's consent setting.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Setting {
    pub mode: Mode,
    /// The lowest risk of any request ([`Setting::effective_risk`]).
    pub floor: Risk,
    /// Key mode: the public key file and the key read from it.
    pub public_key_file: Option<PathBuf>,
    pub public_key: Option<PublicKey>,
    /// Key mode: the secret key `approve` uses when `--secret-key` is not given.
    pub secret_key_file: Option<PathBuf>,
    /// Wallet mode: the signer (from the wallet file).
    pub wallet: Option<wallet::WalletConfig>,
    /// The file it was read from (None: defaults or the wallet file alone).
    pub source: Option<PathBuf>,
    /// Fail closed: the configuration exists but cannot be used (code, message).
    pub invalid: Option<(kijito_protocol::error::ErrorCode, String)>,
    /// Not an error, worth saying (e.g. an unusable wallet file: token mode).
    pub notice: Option<String>,
}

impl Default for Setting {
    fn default() -> Self {
        Setting {
            mode: Mode::Token,
            floor: Risk::Low,
            public_key_file: None,
            public_key: None,
            secret_key_file: None,
            wallet: None,
            source: None,
            invalid: None,
            notice: None,
        }
    }
}

pub(crate) fn rank(r: Risk) -> u8 {
    match r {
        Risk::Low => 0,
        Risk::Medium => 1,
        Risk::High => 2,
    }
}

impl Setting {
    /// A signing mode: every consent request needs the user's signature.
    pub fn signing(&self) -> bool {
        matches!(self.mode, Mode::Key | Mode::Wallet)
    }

    /// The risk a request really has: the higher of the requester's and the floor.
    pub fn effective_risk(&self, requested: Risk) -> Risk {
        if rank(requested) >= rank(self.floor) {
            requested
        } else {
            self.floor
        }
    }

    /// The fail-closed error, when the configuration is unusable.
    pub fn error(&self) -> Option<Error> {
        self.invalid.as_ref().map(|(c, m)| Error::new(c.clone(), m.clone()))
    }

    fn invalid(code: crate::codes::Code, message: String, source: Option<PathBuf>) -> Setting {
        Setting { invalid: Some((code.into(), message)), source, ..Setting::default() }
    }

    /// From the environment (see the module docs).
    pub fn from_env(workspace_root: &Path) -> Setting {
        let var = |n: &str| std::env::var_os(n).filter(|v| !v.is_empty()).map(PathBuf::from);
        let wallet = wallet::Setting::from_env(workspace_root);
        if let Some(p) = var(CONSENT_ENV) {
            return Setting::load(&p, true, workspace_root, &wallet);
        }
        let base = var("XDG_CONFIG_HOME")
            .filter(|p| p.is_absolute())
            .or_else(|| var("HOME").filter(|p| p.is_absolute()).map(|h| h.join(".config")));
        match base {
            Some(b) => Setting::load(&b.join("kijito-qa").join("memory-latch-consent.json"), false, workspace_root, &wallet),
            None => Setting::from_wallet(&wallet),
        }
    }

    /// No consent file: the wallet file alone decides (compatible with
    /// `memory-latch.wallet/v1`: its `min_risk` is the floor).
    pub fn from_wallet(wallet: &wallet::Setting) -> Setting {
        match wallet {
            wallet::Setting::On(c) => Setting { mode: Mode::Wallet, floor: c.min_risk, wallet: Some(c.clone()), ..Setting::default() },
            wallet::Setting::Fallback(n) => Setting { notice: Some(n.clone()), ..Setting::default() },
            wallet::Setting::Off => Setting::default(),
        }
    }

    /// Load `path`; `explicit`: it was named, so its absence is an error.
    pub fn load(path: &Path, explicit: bool, workspace_root: &Path, wallet: &wallet::Setting) -> Setting {
        let src = Some(path.to_path_buf());
        let bad = |why: String| Setting::invalid(crate::codes::CONSENT_CONFIG_INVALID, format!("{}: {why}", path.display()), src.clone());
        let insecure =
            |why: String| Setting::invalid(crate::codes::CONSENT_CONFIG_INSECURE, format!("{}: {why}", path.display()), src.clone());
        match std::fs::symlink_metadata(path) {
            Err(_) if !explicit => return Setting::from_wallet(wallet),
            Err(_) => return bad(format!("{CONSENT_ENV} names a file that does not exist")),
            Ok(m) if m.file_type().is_symlink() => {
                return insecure("is a symlink (the consent configuration is never followed through a link)".into())
            }
            Ok(_) => {}
        }
        if !path.is_absolute()
            || path.starts_with(workspace_root)
            || std::fs::canonicalize(path).is_ok_and(|c| c.starts_with(workspace_root))
        {
            return insecure("must be an absolute path outside the workspace (the agent works there)".into());
        }
        let rules = private::FileRules { owner_only: true, min_bytes: 2, max_bytes: MAX_CONFIG_BYTES };
        let bytes = match private::read_checked(path, rules) {
            Ok((b, _)) => b,
            Err(e)
                if matches!(
                    e.code_as(),
                    Some(private::codes::SYMLINK | private::codes::PERMISSIONS | private::codes::NOT_OWNED | private::codes::NOT_REGULAR)
                ) =>
            {
                return insecure(format!("{} ({}): it must be an owner-only (0600) regular file of this user", e.message(), e.code()))
            }
            Err(e) => return bad(format!("{} ({})", e.message(), e.code())),
        };
        let file: ConfigFile = match serde_json::from_slice(&bytes) {
            Ok(f) => f,
            Err(e) => return bad(format!("not a {CONFIG_SCHEMA} file: {e}")),
        };
        if file.schema != CONFIG_SCHEMA {
            return bad(format!("schema {:?}, not {CONFIG_SCHEMA}", file.schema));
        }
        let mut s = Setting { mode: file.mode, floor: file.floor.unwrap_or(Risk::Low), source: src.clone(), ..Setting::default() };
        match file.mode {
            Mode::Key => {
                let Some(pk) = file.public_key else {
                    return bad("key mode needs \"public_key\" (the file `memory-latch keygen --public-key` wrote)".into());
                };
                if !pk.is_absolute() {
                    return bad("\"public_key\" must be an absolute path".into());
                }
                match load_public_key(&pk) {
                    Ok(k) => s.public_key = Some(k),
                    Err(e) => return bad(format!("\"public_key\": {} ({})", e.message(), e.code())),
                }
                s.public_key_file = Some(pk);
                if let Some(sk) = file.secret_key {
                    if !sk.is_absolute() || sk.starts_with(workspace_root) {
                        return insecure("\"secret_key\" must be an absolute path outside the workspace".into());
                    }
                    s.secret_key_file = Some(sk);
                }
            }
            Mode::Wallet => match wallet {
                wallet::Setting::On(c) => s.wallet = Some(c.clone()),
                wallet::Setting::Fallback(n) => return bad(format!("wallet mode, but the wallet file is unusable: {n}")),
                wallet::Setting::Off => return bad("wallet mode, but no wallet file (memory-latch-wallet.json) names a signer".into()),
            },
            Mode::Token | Mode::Host => {
                if file.public_key.is_some() || file.secret_key.is_some() {
                    return bad(format!("\"public_key\"/\"secret_key\" belong to key mode, not {}", file.mode.as_str()));
                }
            }
        }
        s
    }
}

/// Read and decode a minisign public key file (group/other readable is
/// fine: it is public; never through a symlink). No curve code here.
pub fn load_public_key(path: &Path) -> Result<PublicKey> {
    let bad = |why: String| Error::new(crate::codes::PUBLIC_KEY_INVALID, why);
    let rules = private::FileRules { owner_only: false, min_bytes: 1, max_bytes: MAX_KEY_BYTES };
    let (bytes, _) = private::read_checked(path, rules).map_err(|e| bad(format!("{} ({})", e.message(), e.code())))?;
    let text = std::str::from_utf8(&bytes).map_err(|_| bad("the public key file is not UTF-8".into()))?;
    let lines: Vec<&str> = text.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with("untrusted comment:")).collect();
    let [b] = lines.as_slice() else { return Err(bad("not a minisign public key: expected one base64 key line".into())) };
    let raw = Base64::decode_to_vec(b, None).map_err(|_| bad("not a minisign public key: bad base64".into()))?;
    if raw.len() != 42 || &raw[..2] != b"Ed" {
        return Err(bad("not a minisign Ed25519 public key: wrong length or algorithm".into()));
    }
    let mut keynum = [0u8; 8];
    keynum.copy_from_slice(&raw[2..10]);
    let mut public = [0u8; 32];
    public.copy_from_slice(&raw[10..42]);
    Ok(PublicKey { name: crate::sign::key_name(&keynum), public })
}

/// What a key-mode ledger record carries besides the token fields.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KeyChallenge {
    /// 32 random bytes, 64 lowercase hex: single use.
    pub nonce: String,
    /// Unix seconds; `approve` may shorten it (never lengthen it past the record's expiry).
    pub expires_at: u64,
    /// The key name the user signed with (`approve`).
    #[serde(default)]
    pub key_name: Option<String>,
    /// base64 of the 64-byte Ed25519 signature over [`approval_message`].
    #[serde(default)]
    pub signature: Option<String>,
}

impl KeyChallenge {
    pub fn new(expires_at_ms: u64) -> KeyChallenge {
        KeyChallenge { nonce: kijito_files::random::hex(32), expires_at: expires_at_ms / 1000, key_name: None, signature: None }
    }
}

/// The exact bytes the user's key signs.
pub fn approval_message(key_name: &str, record_id: &str, action_hash: &ActionHash, nonce: &str, expires_at: u64) -> String {
    format!("{APPROVAL_SCHEMA}\nkey: {key_name}\nrecord: {record_id}\naction: {action_hash}\nnonce: {nonce}\nexpires_at: {expires_at}\n")
}

/// Sign a challenge (only `approve` calls this, with the key it decrypted).
pub fn sign_challenge(key: &crate::sign::SigningKey, record_id: &str, action_hash: &ActionHash, c: &mut KeyChallenge) {
    let msg = approval_message(key.name(), record_id, action_hash, &c.nonce, c.expires_at);
    c.key_name = Some(key.name().to_owned());
    c.signature = Some(Base64::encode_to_string(key.sign_raw(msg.as_bytes())).unwrap_or_default());
}

/// Why a signed record does not authorize (a stable code), or Ok.
pub fn verify_challenge(
    key: &PublicKey,
    record_id: &str,
    action_hash: &ActionHash,
    c: &KeyChallenge,
    now_ms: u64,
) -> std::result::Result<(), (crate::codes::Code, String)> {
    let (Some(name), Some(sig)) = (&c.key_name, &c.signature) else {
        return Err((
            crate::codes::CONSENT_SIGNATURE_REQUIRED,
            "key consent mode: the record carries no signature by the user's key (run `memory-latch approve` in the user's own terminal)"
                .into(),
        ));
    };
    let mismatch = |why: &str| {
        Err((
            crate::codes::CONSENT_SIGNATURE_MISMATCH,
            format!("the record's signature does not verify with the configured public key {}: {why}", key.name),
        ))
    };
    if *name != key.name {
        return mismatch("signed by another key");
    }
    let Some(raw) = Base64::decode_to_vec(sig, None).ok().and_then(|v| <[u8; 64]>::try_from(v.as_slice()).ok()) else {
        return mismatch("not a base64 Ed25519 signature");
    };
    let msg = approval_message(name, record_id, action_hash, &c.nonce, c.expires_at);
    if !crate::sign::verify_raw(&key.public, msg.as_bytes(), &raw) {
        return mismatch("it was made over another action, nonce, record or expiry");
    }
    if now_ms / 1000 >= c.expires_at {
        return Err((crate::codes::CONSENT_SIGNATURE_EXPIRED, "the signed approval has expired; request consent again".into()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn dir() -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
        d
    }

    #[test]
    fn the_setting_is_read_from_one_owner_only_file_and_fails_closed() {
        let d = dir();
        let ws = d.path().join("ws");
        std::fs::create_dir(&ws).unwrap();
        let (sk, pk) = (d.path().join("k.key"), d.path().join("k.pub"));
        crate::sign::keygen(&sk, &pk, None, Some(&ws)).unwrap();
        let f = d.path().join("consent.json");
        let write = |text: &str, mode: u32| {
            let _ = std::fs::remove_file(&f);
            std::fs::write(&f, text).unwrap();
            std::fs::set_permissions(&f, std::fs::Permissions::from_mode(mode)).unwrap();
        };
        let off = wallet::Setting::Off;
        // absent at the default place: token mode, floor low
        let s = Setting::load(&f, false, &ws, &off);
        assert_eq!((s.mode, s.floor, s.invalid.is_none()), (Mode::Token, Risk::Low, true));
        assert_eq!(Setting::load(&f, true, &ws, &off).invalid.unwrap().0.as_str(), "consent_config_invalid");
        write(&format!(r#"{{"schema":"memory-latch.consent/v1","mode":"key","public_key":"{}"}}"#, pk.display()), 0o600);
        let s = Setting::load(&f, false, &ws, &off);
        assert!(s.invalid.is_none(), "{s:?}");
        assert_eq!((s.mode, s.floor, s.signing()), (Mode::Key, Risk::Low, true));
        assert_eq!(s.public_key.unwrap().name, crate::sign::load_public_key(&pk).unwrap().name);
        // floor: the higher of the request's risk and the floor
        write(r#"{"schema":"memory-latch.consent/v1","mode":"token","floor":"high"}"#, 0o600);
        let s = Setting::load(&f, false, &ws, &off);
        assert_eq!((s.mode, s.effective_risk(Risk::Low), s.effective_risk(Risk::Medium)), (Mode::Token, Risk::High, Risk::High));
        write(r#"{"schema":"memory-latch.consent/v1","mode":"host","floor":"medium"}"#, 0o600);
        let s = Setting::load(&f, false, &ws, &off);
        assert_eq!((s.mode, s.effective_risk(Risk::Low), s.effective_risk(Risk::High)), (Mode::Host, Risk::Medium, Risk::High));
        // insecure: group/other writable or readable, a symlink, inside the workspace
        for mode in [0o620, 0o602, 0o644] {
            write(r#"{"schema":"memory-latch.consent/v1","mode":"token"}"#, mode);
            assert_eq!(Setting::load(&f, false, &ws, &off).invalid.unwrap().0.as_str(), "consent_config_insecure", "{mode:o}");
        }
        write(r#"{"schema":"memory-latch.consent/v1","mode":"token"}"#, 0o600);
        let link = d.path().join("link.json");
        std::os::unix::fs::symlink(&f, &link).unwrap();
        assert_eq!(Setting::load(&link, true, &ws, &off).invalid.unwrap().0.as_str(), "consent_config_insecure");
        let inside = ws.join("consent.json");
        std::fs::write(&inside, r#"{"schema":"memory-latch.consent/v1","mode":"token"}"#).unwrap();
        std::fs::set_permissions(&inside, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(Setting::load(&inside, true, &ws, &off).invalid.unwrap().0.as_str(), "consent_config_insecure");
        // malformed
        for text in [
            r#"{"schema":"memory-latch.consent/v2","mode":"token"}"#.to_owned(),
            r#"{"schema":"memory-latch.consent/v1","mode":"psychic"}"#.to_owned(),
            r#"{"schema":"memory-latch.consent/v1","mode":"key"}"#.to_owned(),
            r#"{"schema":"memory-latch.consent/v1","mode":"key","public_key":"rel.pub"}"#.to_owned(),
            format!(r#"{{"schema":"memory-latch.consent/v1","mode":"key","public_key":"{}"}}"#, sk.display()),
            format!(r#"{{"schema":"memory-latch.consent/v1","mode":"token","public_key":"{}"}}"#, pk.display()),
            r#"{"schema":"memory-latch.consent/v1","mode":"wallet"}"#.to_owned(),
            r#"{"schema":"memory-latch.consent/v1","mode":"token","extra":1}"#.to_owned(),
            "not json".to_owned(),
        ] {
            write(&text, 0o600);
            assert_eq!(Setting::load(&f, false, &ws, &off).invalid.unwrap().0.as_str(), "consent_config_invalid", "{text}");
        }
    }

    #[test]
    fn a_signed_challenge_verifies_only_for_its_record_action_nonce_expiry_and_key() {
        let d = dir();
        let (sk, pk) = (d.path().join("k.key"), d.path().join("k.pub"));
        let (sk2, pk2) = (d.path().join("o.key"), d.path().join("o.pub"));
        crate::sign::keygen(&sk, &pk, None, None).unwrap();
        crate::sign::keygen(&sk2, &pk2, None, None).unwrap();
        let key = crate::sign::load_secret_key(&sk, None, || Ok(None)).unwrap();
        let public = load_public_key(&pk).unwrap();
        let other = load_public_key(&pk2).unwrap();
        let a = ActionHash::of_canonical(b"a");
        let b = ActionHash::of_canonical(b"b");
        let mut c = KeyChallenge::new(2_000_000);
        assert_eq!(verify_challenge(&public, "tok_1", &a, &c, 1000).unwrap_err().0.as_str(), "consent_signature_required");
        sign_challenge(&key, "tok_1", &a, &mut c);
        assert_eq!(verify_challenge(&public, "tok_1", &a, &c, 1000), Ok(()));
        let code = |r: std::result::Result<(), (crate::codes::Code, String)>| r.unwrap_err().0.as_str();
        assert_eq!(code(verify_challenge(&public, "tok_1", &b, &c, 1000)), "consent_signature_mismatch");
        assert_eq!(code(verify_challenge(&public, "tok_2", &a, &c, 1000)), "consent_signature_mismatch");
        assert_eq!(code(verify_challenge(&other, "tok_1", &a, &c, 1000)), "consent_signature_mismatch");
        assert_eq!(code(verify_challenge(&public, "tok_1", &a, &c, 2_000_000)), "consent_signature_expired");
        let mut longer = c.clone();
        longer.expires_at += 60;
        assert_eq!(code(verify_challenge(&public, "tok_1", &a, &longer, 1000)), "consent_signature_mismatch");
        let mut renonced = c.clone();
        renonced.nonce = kijito_files::random::hex(32);
        assert_eq!(code(verify_challenge(&public, "tok_1", &a, &renonced, 1000)), "consent_signature_mismatch");
        let mut other_name = c.clone();
        other_name.key_name = Some(other.name.clone());
        assert_eq!(code(verify_challenge(&other, "tok_1", &a, &other_name, 1000)), "consent_signature_mismatch");
        assert_eq!(
            approval_message("memory-latch-0123456789ABCDEF", "tok_1", &a, "00", 7),
            format!("memory-latch.consent-approval/v1\nkey: memory-latch-0123456789ABCDEF\nrecord: tok_1\naction: {a}\nnonce: 00\nexpires_at: 7\n")
        );
    }
}
