//! Ed25519 keyed mode: minisign-compatible key files and C2SP signed-note
//! signatures over checkpoints.
//!
//! Keys are minisign keys (the `minisign` crate, by minisign's author: key
//! generation, the secret key's scrypt passphrase encryption and checksum,
//! the `.key` / `.pub` box format), so `minisign -G` keys work here and ours
//! work with `minisign`. Notes are signed with raw Ed25519 (`ed25519-dalek`)
//! as c2sp.org/signed-note says: the minisign crate only makes minisign's own
//! prehashed file signatures, so the key's seed is handed to ed25519-dalek
//! (and the derived public key is checked against the minisign one).
//!
//! Note signature line: `— <name> <base64(key hash (4) || signature (64))>`,
//! key hash = the first 4 bytes of SHA-256(name || 0x0A || 0x01 || public
//! key), name = `memory-latch-<minisign key id, 16 upper-case hex>`.
//!
//! The passphrase never comes from argv or the environment: it is read from
//! the terminal with echo off (rpassword, from `/dev/tty`), or, for scripts
//! and tests, from an owner-only file outside the workspace
//! (`--passphrase-file`). At most [`MAX_PASSPHRASE_BYTES`] bytes, UTF-8, no
//! control characters; it is never printed, logged or put in an error, and
//! its buffers are zeroed when dropped. Without a terminal or a file, a
//! passphrase-protected key fails closed (`passphrase_unavailable`).

use ct_codecs::{Base64, Decoder, Encoder};
use ed25519_dalek::{Signer as _, Verifier as _};
use kijito_files::private;
use kijito_protocol::error::{Error, Result};
use sha2::{Digest as _, Sha256};
use std::path::{Path, PathBuf};
use zeroize::Zeroizing;

/// Longest passphrase accepted (bytes).
pub const MAX_PASSPHRASE_BYTES: usize = 1024;
/// Bounds of key files.
const MAX_KEY_FILE_BYTES: u64 = 4096;
/// The em dash that starts a signed-note signature line.
pub const SIG_PREFIX: &str = "\u{2014} ";
/// Most signature lines read from a note.
pub const MAX_SIGNATURES: usize = 16;
/// Ed25519 signature type byte of c2sp.org/signed-note.
const ALG_ED25519: u8 = 0x01;

/// A passphrase (zeroed on drop; Debug hides it).
pub struct Passphrase(Zeroizing<String>);

impl std::fmt::Debug for Passphrase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Passphrase(..)")
    }
}

impl Passphrase {
    /// Check the bounds: 1..=1024 bytes of UTF-8 without control characters.
    pub fn new(text: String) -> Result<Passphrase> {
        let text = Zeroizing::new(text);
        if text.is_empty() || text.len() > MAX_PASSPHRASE_BYTES || text.chars().any(char::is_control) {
            return Err(Error::new(
                crate::codes::PASSPHRASE_INVALID,
                format!("the passphrase must be 1 to {MAX_PASSPHRASE_BYTES} bytes of text without control characters"),
            ));
        }
        Ok(Passphrase(text))
    }

    fn expose(&self) -> String {
        self.0.as_str().to_owned()
    }
}

/// Where a passphrase comes from.
#[derive(Debug, Clone)]
pub enum PassphraseSource {
    /// An owner-only (0600) regular file outside the workspace: its content,
    /// one trailing LF (or CRLF) removed.
    File(PathBuf),
    /// The controlling terminal, echo off (`/dev/tty`).
    Terminal,
}

/// Read a passphrase (`confirm`: ask twice on a terminal, for keygen).
pub fn read_passphrase(source: &PassphraseSource, workspace: Option<&Path>, confirm: bool) -> Result<Passphrase> {
    match source {
        PassphraseSource::File(p) => {
            refuse_inside(p, workspace, "the passphrase file")?;
            let rules = private::FileRules { owner_only: true, min_bytes: 1, max_bytes: MAX_PASSPHRASE_BYTES as u64 + 2 };
            let (bytes, _) = private::read_checked(p, rules).map_err(|e| {
                Error::new(crate::codes::PASSPHRASE_UNAVAILABLE, format!("--passphrase-file: {} ({})", e.message(), e.code()))
            })?;
            let bytes = Zeroizing::new(bytes);
            let body = bytes.strip_suffix(b"\n").map(|b| b.strip_suffix(b"\r").unwrap_or(b)).unwrap_or(&bytes);
            let text =
                std::str::from_utf8(body).map_err(|_| Error::new(crate::codes::PASSPHRASE_INVALID, "the passphrase file is not UTF-8"))?;
            Passphrase::new(text.to_owned())
        }
        PassphraseSource::Terminal => {
            let ask = |prompt: &str| {
                rpassword::prompt_password(prompt).map_err(|e| {
                    Error::new(
                        crate::codes::PASSPHRASE_UNAVAILABLE,
                        format!(
                            "no terminal to read the passphrase from ({}); give --passphrase-file F (owner-only, outside the workspace)",
                            e.kind()
                        ),
                    )
                })
            };
            let first = Passphrase::new(ask("memory-latch: passphrase of the signing key: ")?)?;
            if confirm {
                let second = Zeroizing::new(ask("memory-latch: the same passphrase again: ")?);
                if second.as_str() != first.0.as_str() {
                    return Err(Error::new(crate::codes::PASSPHRASE_INVALID, "the two passphrases differ; nothing written"));
                }
            }
            Ok(first)
        }
    }
}

fn refuse_inside(path: &Path, workspace: Option<&Path>, what: &str) -> Result<()> {
    let Some(ws) = workspace else { return Ok(()) };
    let parent = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let canon_parent = std::fs::canonicalize(parent)
        .map_err(|e| Error::new(crate::codes::SECRET_KEY_INVALID, format!("{what}: cannot resolve {}: {e}", parent.display())))?;
    if canon_parent.starts_with(ws) {
        return Err(Error::new(
            crate::codes::SECRET_KEY_INSIDE_WORKSPACE,
            format!("{what} must live outside the workspace (the agent works there)"),
        ));
    }
    Ok(())
}

/// The note key name of a minisign key id.
pub fn key_name(keynum: &[u8; 8]) -> String {
    // minisign prints the key id as the little-endian u64 in upper-case hex.
    format!("memory-latch-{:016X}", u64::from_le_bytes(*keynum))
}

/// c2sp.org/signed-note key hash of an Ed25519 key.
pub fn key_hash(name: &str, public: &[u8; 32]) -> [u8; 4] {
    let mut h = Sha256::new();
    h.update(name.as_bytes());
    h.update([b'\n', ALG_ED25519]);
    h.update(public);
    let d = h.finalize();
    [d[0], d[1], d[2], d[3]]
}

fn b64(bytes: &[u8]) -> String {
    Base64::encode_to_string(bytes).unwrap_or_default()
}

fn unb64(text: &str) -> Option<Vec<u8>> {
    Base64::decode_to_vec(text, None).ok().filter(|v| b64(v) == text)
}

/// A secret signing key, decrypted (zeroed on drop by ed25519-dalek).
pub struct SigningKey {
    name: String,
    keynum: [u8; 8],
    key: ed25519_dalek::SigningKey,
}

impl std::fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SigningKey({})", self.name)
    }
}

/// A public key that checks notes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifierKey {
    pub name: String,
    pub keynum: [u8; 8],
    pub public: [u8; 32],
}

impl VerifierKey {
    pub fn hash(&self) -> [u8; 4] {
        key_hash(&self.name, &self.public)
    }

    /// The Go `golang.org/x/mod/sumdb/note` verifier key string
    /// (`<name>+<hash hex>+<base64(0x01 || key)>`), for other note tools.
    pub fn note_vkey(&self) -> String {
        let mut k = vec![ALG_ED25519];
        k.extend_from_slice(&self.public);
        format!("{}+{}+{}", self.name, self.hash().iter().map(|b| format!("{b:02x}")).collect::<String>(), b64(&k))
    }
}

impl SigningKey {
    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn verifier(&self) -> VerifierKey {
        VerifierKey { name: self.name.clone(), keynum: self.keynum, public: self.key.verifying_key().to_bytes() }
    }

    /// The signature line for `text` (the note body, ending in LF).
    pub fn signature_line(&self, text: &str) -> String {
        let sig = self.key.sign(text.as_bytes());
        let mut blob = self.verifier().hash().to_vec();
        blob.extend_from_slice(&sig.to_bytes());
        format!("{SIG_PREFIX}{} {}\n", self.name, b64(&blob))
    }

    /// A raw Ed25519 signature over `bytes` (the key-mode consent approval,
    /// [`crate::consent`]).
    pub fn sign_raw(&self, bytes: &[u8]) -> [u8; 64] {
        self.key.sign(bytes).to_bytes()
    }

    /// A signed note: `text`, a blank line, the signature line.
    pub fn sign_note(&self, text: &str) -> String {
        format!("{text}\n{}", self.signature_line(text))
    }

    /// From a decrypted minisign secret key.
    fn from_minisign(sk: &minisign::SecretKey) -> Result<SigningKey> {
        // SecretKey::to_bytes: sig_alg(2) kdf_alg(2) chk_alg(2) salt(32)
        // opslimit(8) memlimit(8) keynum(8) sk(64 = seed || public) chk(32).
        let raw = Zeroizing::new(sk.to_bytes());
        let bad = || Error::new(crate::codes::SECRET_KEY_INVALID, "not an Ed25519 minisign secret key");
        if raw.len() != 158 || &raw[..2] != b"Ed" {
            return Err(bad());
        }
        let mut keynum = [0u8; 8];
        keynum.copy_from_slice(&raw[54..62]);
        let mut seed = Zeroizing::new([0u8; 32]);
        seed.copy_from_slice(&raw[62..94]);
        let key = ed25519_dalek::SigningKey::from_bytes(&seed);
        if key.verifying_key().to_bytes()[..] != raw[94..126] {
            return Err(bad());
        }
        Ok(SigningKey { name: key_name(&keynum), keynum, key })
    }
}

/// What `keygen` wrote.
#[derive(Debug, Clone)]
pub struct Keygen {
    pub verifier: VerifierKey,
    pub secret_key_file: PathBuf,
    pub public_key_file: PathBuf,
    pub encrypted: bool,
}

/// Generate a minisign key pair: the secret key (encrypted with the
/// passphrase unless `None`) to `secret`, the public key to `public`. Both
/// created exclusively, owner-only; the secret key never inside `workspace`.
pub fn keygen(secret: &Path, public: &Path, passphrase: Option<&Passphrase>, workspace: Option<&Path>) -> Result<Keygen> {
    refuse_inside(secret, workspace, "the secret key file")?;
    for p in [secret, public] {
        if std::fs::symlink_metadata(p).is_ok() {
            return Err(Error::new(
                crate::codes::SIGNING_KEY_FILE_EXISTS,
                format!("{} already exists; nothing written (keys are never overwritten)", p.display()),
            ));
        }
    }
    let fail = |e: minisign::PError| Error::new(crate::codes::SECRET_KEY_INVALID, format!("key generation failed: {e}"));
    let pair = match passphrase {
        Some(p) => minisign::KeyPair::generate_encrypted_keypair(Some(p.expose())).map_err(fail)?,
        None => minisign::KeyPair::generate_unencrypted_keypair().map_err(fail)?,
    };
    let mut keynum = [0u8; 8];
    keynum.copy_from_slice(pair.pk.keynum());
    let name = key_name(&keynum);
    let sk_box = Zeroizing::new(pair.sk.to_box(Some(&format!("memory-latch secret key {name}"))).map_err(fail)?.into_string());
    let pk_box = pair.pk.to_box().map_err(fail)?.into_string();
    let verifier = parse_public_key(&pk_box)?;
    let write = |p: &Path, bytes: &[u8]| {
        private::create_new(p, bytes).map_err(|e| {
            if e.code_as() == Some(private::codes::EXISTS) {
                Error::new(crate::codes::SIGNING_KEY_FILE_EXISTS, e.message().to_owned())
            } else {
                Error::new(crate::codes::WRITE_FAILED, e.message().to_owned())
            }
        })
    };
    write(secret, sk_box.as_bytes())?;
    write(public, pk_box.as_bytes())?;
    Ok(Keygen { verifier, secret_key_file: secret.to_path_buf(), public_key_file: public.to_path_buf(), encrypted: passphrase.is_some() })
}

/// Whether a secret key file is passphrase-protected (minisign `kdf_alg`).
pub fn secret_key_is_encrypted(path: &Path, workspace: Option<&Path>) -> Result<bool> {
    let text = read_secret_box(path, workspace)?;
    Ok(minisign::SecretKey::from_unencrypted_box(minisign::SecretKeyBox::from_string(&text).map_err(|e| invalid_sk(&e))?).is_err())
}

fn invalid_sk(e: &minisign::PError) -> Error {
    Error::new(crate::codes::SECRET_KEY_INVALID, format!("the secret key file is not a minisign secret key: {e}"))
}

fn read_secret_box(path: &Path, workspace: Option<&Path>) -> Result<Zeroizing<String>> {
    refuse_inside(path, workspace, "the secret key file")?;
    let rules = private::FileRules { owner_only: true, min_bytes: 1, max_bytes: MAX_KEY_FILE_BYTES };
    let (bytes, _) = private::read_checked(path, rules)
        .map_err(|e| Error::new(crate::codes::SECRET_KEY_INVALID, format!("{} ({})", e.message(), e.code())))?;
    String::from_utf8(bytes)
        .map(Zeroizing::new)
        .map_err(|_| Error::new(crate::codes::SECRET_KEY_INVALID, "the secret key file is not UTF-8"))
}

/// Load a secret key; `passphrase` is asked for only when the key is
/// encrypted (`None` then fails closed with `passphrase_unavailable`).
pub fn load_secret_key(
    path: &Path,
    workspace: Option<&Path>,
    passphrase: impl FnOnce() -> Result<Option<Passphrase>>,
) -> Result<SigningKey> {
    let text = read_secret_box(path, workspace)?;
    let boxed = || minisign::SecretKeyBox::from_string(&text).map_err(|e| invalid_sk(&e));
    let sk = match minisign::SecretKey::from_unencrypted_box(boxed()?) {
        Ok(sk) => sk,
        Err(_) => {
            let p = passphrase()?.ok_or_else(|| {
                Error::new(
                    crate::codes::PASSPHRASE_UNAVAILABLE,
                    "the secret key is passphrase-protected and no passphrase source is available",
                )
            })?;
            minisign::SecretKey::from_box(boxed()?, Some(p.expose())).map_err(|e| match e.kind() {
                minisign::ErrorKind::Verify => Error::new(crate::codes::PASSPHRASE_WRONG, "wrong passphrase for this secret key"),
                _ => invalid_sk(&e),
            })?
        }
    };
    SigningKey::from_minisign(&sk)
}

/// Parse a minisign public key (the `.pub` file: an untrusted comment line
/// and the base64 key, or the base64 key alone).
pub fn parse_public_key(text: &str) -> Result<VerifierKey> {
    let bad = |why: &str| Error::new(crate::codes::PUBLIC_KEY_INVALID, format!("not a minisign Ed25519 public key: {why}"));
    let line = text.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with("untrusted comment:")).collect::<Vec<_>>();
    let [b] = line.as_slice() else { return Err(bad("expected one base64 key line")) };
    let raw = Base64::decode_to_vec(b, None).map_err(|_| bad("bad base64"))?;
    if raw.len() != 42 || &raw[..2] != b"Ed" {
        return Err(bad("wrong length or algorithm"));
    }
    let mut keynum = [0u8; 8];
    keynum.copy_from_slice(&raw[2..10]);
    let mut public = [0u8; 32];
    public.copy_from_slice(&raw[10..42]);
    ed25519_dalek::VerifyingKey::from_bytes(&public).map_err(|_| bad("not a curve point"))?;
    Ok(VerifierKey { name: key_name(&keynum), keynum, public })
}

/// Read a public key file (it may live in the repository: group/other
/// readable is fine; a symlink is not followed).
pub fn load_public_key(path: &Path) -> Result<VerifierKey> {
    let rules = private::FileRules { owner_only: false, min_bytes: 1, max_bytes: MAX_KEY_FILE_BYTES };
    let (bytes, _) = private::read_checked(path, rules)
        .map_err(|e| Error::new(crate::codes::PUBLIC_KEY_INVALID, format!("{} ({})", e.message(), e.code())))?;
    parse_public_key(
        std::str::from_utf8(&bytes).map_err(|_| Error::new(crate::codes::PUBLIC_KEY_INVALID, "the public key file is not UTF-8"))?,
    )
}

/// Whether `sig` is a valid (strict) Ed25519 signature of `bytes` by `public`.
pub fn verify_raw(public: &[u8; 32], bytes: &[u8], sig: &[u8; 64]) -> bool {
    let Ok(vk) = ed25519_dalek::VerifyingKey::from_bytes(public) else { return false };
    let sig = ed25519_dalek::Signature::from_bytes(sig);
    vk.verify_strict(bytes, &sig).is_ok()
}

/// One signature line of a note.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NoteSignature {
    pub name: String,
    pub hash: [u8; 4],
    pub sig: Vec<u8>,
}

/// A note split into its text and signature lines (c2sp.org/signed-note):
/// UTF-8, no control characters but LF, the text ends at the last blank
/// line, every line after it is a signature line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Note {
    pub text: String,
    pub signatures: Vec<NoteSignature>,
}

impl Note {
    pub fn parse(note: &str) -> Result<Note> {
        let bad = |why: &str| Error::new(crate::codes::CHECKPOINT_FILE_INVALID, format!("not a signed note: {why}"));
        if note.chars().any(|c| c.is_control() && c != '\n') || !note.ends_with('\n') {
            return Err(bad("control characters, or no final newline"));
        }
        let Some(split) = note.rfind("\n\n") else {
            // An unsigned checkpoint: the text alone.
            return Ok(Note { text: note.to_owned(), signatures: Vec::new() });
        };
        let text = &note[..split + 1];
        let mut signatures = Vec::new();
        for line in note[split + 2..].lines() {
            if signatures.len() >= MAX_SIGNATURES {
                return Err(bad("too many signature lines"));
            }
            let rest = line.strip_prefix(SIG_PREFIX).ok_or_else(|| bad("a line after the blank line is not a signature line"))?;
            let (name, blob) = rest.split_once(' ').ok_or_else(|| bad("a signature line has no key name"))?;
            if name.is_empty() || name.contains('+') || name.chars().any(char::is_whitespace) {
                return Err(bad("a signature line has an invalid key name"));
            }
            let raw = unb64(blob).filter(|r| r.len() >= 5).ok_or_else(|| bad("a signature is not base64"))?;
            signatures.push(NoteSignature { name: name.to_owned(), hash: [raw[0], raw[1], raw[2], raw[3]], sig: raw[4..].to_vec() });
        }
        if signatures.is_empty() {
            return Err(bad("a blank line with no signature after it"));
        }
        Ok(Note { text: text.to_owned(), signatures })
    }

    /// Check the note with `key`: every signature line by this key (name
    /// and key hash) must verify and there must be at least one.
    pub fn verify(&self, key: &VerifierKey) -> Result<()> {
        let hash = key.hash();
        let mine: Vec<&NoteSignature> = self.signatures.iter().filter(|s| s.name == key.name && s.hash == hash).collect();
        if mine.is_empty() {
            return Err(Error::new(
                crate::codes::CHECKPOINT_NOT_SIGNED_BY_KEY,
                format!("the checkpoint carries no signature by {} (a different key, or unsigned)", key.name),
            ));
        }
        let vk = ed25519_dalek::VerifyingKey::from_bytes(&key.public)
            .map_err(|_| Error::new(crate::codes::PUBLIC_KEY_INVALID, "not a curve point"))?;
        for s in mine {
            let ok = <[u8; 64]>::try_from(s.sig.as_slice())
                .map(|b| ed25519_dalek::Signature::from_bytes(&b))
                .is_ok_and(|sig| vk.verify_strict(self.text.as_bytes(), &sig).is_ok() && vk.verify(self.text.as_bytes(), &sig).is_ok());
            if !ok {
                return Err(Error::new(
                    crate::codes::CHECKPOINT_SIGNATURE_INVALID,
                    format!("the signature by {} does not verify: the checkpoint was changed after signing", key.name),
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir() -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        std::fs::set_permissions(d.path(), std::os::unix::fs::PermissionsExt::from_mode(0o700)).unwrap();
        d
    }

    #[test]
    fn keys_round_trip_with_a_passphrase_and_sign_notes() {
        let d = dir();
        let (sk, pk) = (d.path().join("k.key"), d.path().join("k.pub"));
        let pass = Passphrase::new("correct horse".into()).unwrap();
        let kg = keygen(&sk, &pk, Some(&pass), None).unwrap();
        assert!(kg.encrypted && secret_key_is_encrypted(&sk, None).unwrap());
        let mode = |p: &Path| std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(p).unwrap().permissions()) & 0o777;
        assert_eq!((mode(&sk), mode(&pk)), (0o600, 0o600));
        assert!(keygen(&sk, &pk, Some(&pass), None).unwrap_err().code_as() == Some(crate::codes::SIGNING_KEY_FILE_EXISTS));
        // wrong passphrase, none at all
        let wrong = load_secret_key(&sk, None, || Ok(Some(Passphrase::new("nope".into()).unwrap()))).unwrap_err();
        assert!(wrong.code_as() == Some(crate::codes::PASSPHRASE_WRONG), "{wrong:?}");
        assert!(load_secret_key(&sk, None, || Ok(None)).unwrap_err().code_as() == Some(crate::codes::PASSPHRASE_UNAVAILABLE));
        let key = load_secret_key(&sk, None, || Ok(Some(Passphrase::new("correct horse".into()).unwrap()))).unwrap();
        let vk = load_public_key(&pk).unwrap();
        assert_eq!(key.verifier(), vk);
        assert_eq!(vk, kg.verifier);
        let text = "example.com/log\n3\nAAAA\n";
        let note = key.sign_note(text);
        let parsed = Note::parse(&note).unwrap();
        assert_eq!(parsed.text, text);
        parsed.verify(&vk).unwrap();
        // tampered text
        let forged = Note::parse(&note.replacen("\n3\n", "\n4\n", 1)).unwrap();
        assert!(forged.verify(&vk).unwrap_err().code_as() == Some(crate::codes::CHECKPOINT_SIGNATURE_INVALID));
        // another key
        let (sk2, pk2) = (d.path().join("o.key"), d.path().join("o.pub"));
        keygen(&sk2, &pk2, None, None).unwrap();
        assert!(!secret_key_is_encrypted(&sk2, None).unwrap());
        let other = load_public_key(&pk2).unwrap();
        assert!(parsed.verify(&other).unwrap_err().code_as() == Some(crate::codes::CHECKPOINT_NOT_SIGNED_BY_KEY));
        let k2 = load_secret_key(&sk2, None, || panic!("an unencrypted key needs no passphrase")).unwrap();
        // a signature under the right name and hash but by another key
        let line = k2.signature_line(text);
        let blob = line.rsplit(' ').next().unwrap().trim_end();
        let mut raw = Base64::decode_to_vec(blob, None).unwrap();
        raw[..4].copy_from_slice(&vk.hash());
        let spoof = format!("{text}\n{SIG_PREFIX}{} {}\n", vk.name, b64(&raw));
        assert!(Note::parse(&spoof).unwrap().verify(&vk).unwrap_err().code_as() == Some(crate::codes::CHECKPOINT_SIGNATURE_INVALID));
        assert!(format!("{pass:?} {key:?}").contains("Passphrase(..)"));
        assert!(!format!("{key:?}").contains("correct"));
    }

    #[test]
    fn note_signatures_follow_c2sp_signed_note() {
        // The key hash of c2sp.org/signed-note: SHA-256(name || 0x0A || 0x01 || key)[:4].
        let vk = VerifierKey { name: "PeterNeumann".into(), keynum: [0; 8], public: [7; 32] };
        let mut h = Sha256::new();
        h.update(b"PeterNeumann\n\x01");
        h.update([7u8; 32]);
        assert_eq!(vk.hash()[..], h.finalize()[..4]);
        assert!(vk.note_vkey().starts_with("PeterNeumann+"));
        for bad in ["no newline", "a\n\nnot a signature\n", "a\n\n\u{2014} name !!!\n", "a\x07\n", "a\n\n"] {
            assert!(Note::parse(bad).is_err(), "{bad:?}");
        }
        assert_eq!(Note::parse("origin\n1\nAAAA\n").unwrap().signatures.len(), 0);
    }

    #[test]
    fn passphrases_are_bounded_and_files_owner_only() {
        assert!(Passphrase::new(String::new()).is_err());
        assert!(Passphrase::new("a\u{7}b".into()).is_err());
        assert!(Passphrase::new("x".repeat(MAX_PASSPHRASE_BYTES + 1)).is_err());
        assert!(Passphrase::new("x".repeat(MAX_PASSPHRASE_BYTES)).is_ok());
        let d = dir();
        let f = d.path().join("pass");
        std::fs::write(&f, "secret words\n").unwrap();
        std::fs::set_permissions(&f, std::os::unix::fs::PermissionsExt::from_mode(0o644)).unwrap();
        let e = read_passphrase(&PassphraseSource::File(f.clone()), None, false).unwrap_err();
        assert!(e.code_as() == Some(crate::codes::PASSPHRASE_UNAVAILABLE), "{e:?}");
        std::fs::set_permissions(&f, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
        assert_eq!(read_passphrase(&PassphraseSource::File(f.clone()), None, false).unwrap().expose(), "secret words");
        let e = read_passphrase(&PassphraseSource::File(f), Some(&std::fs::canonicalize(d.path()).unwrap()), false).unwrap_err();
        assert!(e.code_as() == Some(crate::codes::SECRET_KEY_INSIDE_WORKSPACE), "{e:?}");
    }
}
