//! The hmac key: an owner-only file outside the workspace. Signatures are
//! HMAC-SHA256 over the canonical payload, written `hmac-sha256:<hex>`.

use hmac::{Hmac, Mac};
use kijito_files::private;
use kijito_protocol::error::{Error, Result};
use sha2::Sha256;
use std::path::Path;

type HmacSha256 = Hmac<Sha256>;

/// Bounds of the key file.
pub const MIN_KEY_BYTES: u64 = 32;
pub const MAX_KEY_BYTES: u64 = 4096;

/// Secret key bytes (never printed; Debug hides them).
#[derive(Clone)]
pub struct HmacKey(Vec<u8>);

impl std::fmt::Debug for HmacKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("HmacKey(..)")
    }
}

impl HmacKey {
    /// Key from raw bytes (tests, benches).
    pub fn from_bytes(bytes: &[u8]) -> Result<HmacKey> {
        if (bytes.len() as u64) < MIN_KEY_BYTES {
            return Err(Error::new(crate::codes::HMAC_KEY_INVALID, format!("the hmac key must be at least {MIN_KEY_BYTES} bytes")));
        }
        Ok(HmacKey(bytes.to_vec()))
    }

    pub fn sign(&self, payload: &[u8]) -> String {
        let mut mac = match HmacSha256::new_from_slice(&self.0) {
            Ok(m) => m,
            Err(_) => return String::new(),
        };
        mac.update(payload);
        let out = mac.finalize().into_bytes();
        format!("hmac-sha256:{}", out.iter().map(|b| format!("{b:02x}")).collect::<String>())
    }

    /// Constant-time check of a `hmac-sha256:<hex>` signature.
    pub fn verify(&self, payload: &[u8], signature: &str) -> bool {
        let Some(hex) = signature.strip_prefix("hmac-sha256:") else { return false };
        if hex.len() != 64 {
            return false;
        }
        let mut raw = [0u8; 32];
        for (i, byte) in raw.iter_mut().enumerate() {
            match u8::from_str_radix(&hex[2 * i..2 * i + 2], 16) {
                Ok(b) => *byte = b,
                Err(_) => return false,
            }
        }
        let Ok(mut mac) = HmacSha256::new_from_slice(&self.0) else { return false };
        mac.update(payload);
        mac.verify_slice(&raw).is_ok()
    }
}

/// Load the key file: `Ok(None)` when it does not exist (the caller decides
/// the fallback); every other problem fails closed.
pub fn load(path: &Path, workspace_root: &Path) -> Result<Option<HmacKey>> {
    match std::fs::symlink_metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        _ => {}
    }
    let rules = private::FileRules { owner_only: true, min_bytes: MIN_KEY_BYTES, max_bytes: MAX_KEY_BYTES };
    let (bytes, _) = private::read_checked(path, rules).map_err(|e| Error::new(crate::codes::HMAC_KEY_INVALID, e.message().to_owned()))?;
    let canon =
        std::fs::canonicalize(path).map_err(|e| Error::new(crate::codes::HMAC_KEY_INVALID, format!("cannot resolve the key path: {e}")))?;
    if canon.starts_with(workspace_root) {
        return Err(Error::new(crate::codes::HMAC_KEY_INSIDE_WORKSPACE, "the hmac key file must live outside the workspace"));
    }
    let trimmed = bytes.strip_suffix(b"\n").unwrap_or(&bytes);
    HmacKey::from_bytes(trimmed).map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sign_and_verify() {
        let k = HmacKey::from_bytes(&[7u8; 32]).unwrap();
        let sig = k.sign(b"payload");
        assert!(k.verify(b"payload", &sig));
        assert!(!k.verify(b"payloaD", &sig));
        assert!(!k.verify(b"payload", "hmac-sha256:00"));
        let other = HmacKey::from_bytes(&[8u8; 32]).unwrap();
        assert!(!other.verify(b"payload", &sig));
        assert!(HmacKey::from_bytes(b"short").is_err());
        assert_eq!(format!("{k:?}"), "HmacKey(..)");
    }
}
