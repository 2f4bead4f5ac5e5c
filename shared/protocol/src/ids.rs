//! Typed protocol values (docs/protocol.md §1). Each type's only
//! constructor validates, so an unchecked value cannot reach protocol code.

use crate::error::{Error, Result};
use std::fmt;
use std::path::{Component, Path, PathBuf};

/// Largest JavaScript safe integer, 2^53 - 1.
pub const MAX_SAFE_INTEGER: u64 = 9_007_199_254_740_991;

/// Parse a protocol id: `^[1-9][0-9]{0,15}$` and at most 2^53-1.
fn parse_id(text: &str) -> Option<u64> {
    let bytes = text.as_bytes();
    if bytes.is_empty() || bytes.len() > 16 || !(b'1'..=b'9').contains(&bytes[0]) {
        return None;
    }
    if !bytes.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let value: u64 = text.parse().ok()?;
    (value <= MAX_SAFE_INTEGER).then_some(value)
}

macro_rules! id_type {
    ($(#[$doc:meta])* $name:ident, $code:expr) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(u64);

        impl $name {
            /// Stable code of a rejected value.
            pub const INVALID: crate::codes::ids::Code = $code;

            pub fn parse(text: &str) -> Result<Self> {
                parse_id(text).map($name).ok_or_else(|| {
                    Error::new($code, format!("expected a positive decimal id without leading zero, at most 2^53-1, got {:?}", crate::ids::clip(text)))
                })
            }

            pub fn new(value: u64) -> Result<Self> {
                if (1..=MAX_SAFE_INTEGER).contains(&value) {
                    Ok($name(value))
                } else {
                    Err(Error::new($code, format!("id {value} is not a positive safe integer")))
                }
            }

            pub fn get(self) -> u64 {
                self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}", self.0)
            }
        }
    };
}

id_type!(
    /// A memory id (the pointer or an anchor).
    MemoryId, crate::codes::ids::MEMORY_ID
);
id_type!(
    /// A hive message id (the pointer's mutex).
    MessageId, crate::codes::ids::MESSAGE_ID
);

/// The pointer is a memory; its id is a `MemoryId`.
pub type PointerId = MemoryId;

/// Shorten untrusted text for an error message.
pub fn clip(text: &str) -> String {
    let mut out: String = text.chars().take(80).collect();
    if out.len() < text.len() {
        out.push('…');
    }
    out
}

/// Lowercase hex SHA-256: `^[a-f0-9]{64}$`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Digest(String);

impl Digest {
    pub const INVALID: crate::codes::ids::Code = crate::codes::ids::DIGEST;

    pub fn parse(text: &str) -> Result<Self> {
        if text.len() == 64 && text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
            Ok(Digest(text.to_owned()))
        } else {
            Err(Error::new(Self::INVALID, format!("expected 64 lowercase hex characters, got {:?}", clip(text))))
        }
    }

    /// SHA-256 of exact bytes.
    pub fn of(bytes: &[u8]) -> Self {
        use sha2::{Digest as _, Sha256};
        Digest(format!("{:x}", Sha256::digest(bytes)))
    }

    /// SHA-256 of everything `reader` yields, at most `max_bytes` (more is
    /// an error: `None`). Reads in 64 KiB blocks.
    pub fn of_reader(mut reader: impl std::io::Read, max_bytes: u64) -> std::io::Result<Option<Self>> {
        use sha2::{Digest as _, Sha256};
        let mut hasher = Sha256::new();
        let mut buf = vec![0u8; 64 * 1024];
        let mut total = 0u64;
        loop {
            let n = match reader.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            total += n as u64;
            if total > max_bytes {
                return Ok(None);
            }
            hasher.update(&buf[..n]);
        }
        Ok(Some(Digest(format!("{:x}", hasher.finalize()))))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A tagged SHA-256 digest: `sha256:<64 lowercase hex>`, not all zeros
/// (docs/protocol.md §1). The one formatter ([`TaggedDigest::of`]) and the
/// one validator ([`TaggedDigest::parse`], [`TaggedDigest::is_valid`]);
/// serde reads and writes it as the string.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TaggedDigest(String);

impl TaggedDigest {
    /// The tag before the hex.
    pub const PREFIX: &'static str = "sha256:";
    pub const INVALID: crate::codes::ids::Code = crate::codes::ids::DIGEST;

    /// `sha256:<hex>` of exact bytes.
    pub fn of(bytes: &[u8]) -> Self {
        TaggedDigest(format!("{}{}", Self::PREFIX, Digest::of(bytes)))
    }

    /// Whether `text` is `sha256:<64 lowercase hex>` and not all zeros.
    pub fn is_valid(text: &str) -> bool {
        text.strip_prefix(Self::PREFIX).is_some_and(|hex| Digest::parse(hex).is_ok() && hex.bytes().any(|b| b != b'0'))
    }

    pub fn parse(text: &str) -> Result<Self> {
        if Self::is_valid(text) {
            Ok(TaggedDigest(text.to_owned()))
        } else {
            Err(Error::new(Self::INVALID, format!("expected sha256:<64 lowercase hex>, not all zeros, got {:?}", clip(text))))
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The 64 hex characters after the tag.
    pub fn hex(&self) -> &str {
        &self.0[Self::PREFIX.len()..]
    }
}

impl fmt::Display for TaggedDigest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<TaggedDigest> for String {
    fn from(d: TaggedDigest) -> String {
        d.0
    }
}

impl serde::Serialize for TaggedDigest {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

impl<'de> serde::Deserialize<'de> for TaggedDigest {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        TaggedDigest::parse(&text).map_err(|e| serde::de::Error::custom(e.message()))
    }
}

/// The action hash that binds consent to one tool call: the
/// [`TaggedDigest`] of the action's canonical bytes (docs/protocol.md §8a).
/// The policy hashes the action file it writes (already canonical) and
/// memory-latch the canonical form of the action file it reads, both
/// through [`ActionHash::of_canonical`], the one hash function.
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(transparent)]
pub struct ActionHash(TaggedDigest);

impl ActionHash {
    /// The hash of action bytes already in canonical form.
    pub fn of_canonical(canonical: &[u8]) -> Self {
        ActionHash(TaggedDigest::of(canonical))
    }

    pub fn parse(text: &str) -> Result<Self> {
        TaggedDigest::parse(text).map(ActionHash)
    }

    pub fn as_str(&self) -> &str {
        self.0.as_str()
    }

    pub fn digest(&self) -> &TaggedDigest {
        &self.0
    }
}

impl fmt::Display for ActionHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl PartialEq<ActionHash> for String {
    fn eq(&self, other: &ActionHash) -> bool {
        self == other.as_str()
    }
}

impl From<ActionHash> for String {
    fn from(h: ActionHash) -> String {
        h.0 .0
    }
}

/// A host session id: `^[A-Za-z0-9][A-Za-z0-9-]{0,127}$`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SessionId(String);

impl SessionId {
    pub const INVALID: crate::codes::ids::Code = crate::codes::ids::SESSION_ID;

    pub fn parse(text: &str) -> Result<Self> {
        let b = text.as_bytes();
        let ok =
            !b.is_empty() && b.len() <= 128 && b[0].is_ascii_alphanumeric() && b.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'-');
        if ok {
            Ok(SessionId(text.to_owned()))
        } else {
            Err(Error::new(Self::INVALID, format!("session id must match ^[A-Za-z0-9][A-Za-z0-9-]{{0,127}}$, got {:?}", clip(text))))
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for SessionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Written as the id's text; read through [`SessionId::parse`] (a stored id
/// that does not parse fails the whole record).
impl serde::Serialize for SessionId {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

impl<'de> serde::Deserialize<'de> for SessionId {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        SessionId::parse(&text).map_err(|e| serde::de::Error::custom(e.message()))
    }
}

/// A host's id of one tool call (Claude Code's `toolu_...`, Codex's
/// `call_id`), the same at PreToolUse and PostToolUse:
/// `^[A-Za-z0-9_.:-]{1,128}$`. The host-consent record is keyed and named
/// by it (docs/protocol.md §8a).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ToolUseId(String);

impl ToolUseId {
    pub const INVALID: crate::codes::ids::Code = crate::codes::ids::TOOL_USE_ID;

    pub fn parse(text: &str) -> Result<Self> {
        let ok = !text.is_empty() && text.len() <= 128 && text.bytes().all(|b| b.is_ascii_alphanumeric() || b"_-.:".contains(&b));
        if ok {
            Ok(ToolUseId(text.to_owned()))
        } else {
            Err(Error::new(Self::INVALID, format!("tool_use_id must be 1 to 128 characters of [A-Za-z0-9_.:-], got {:?}", clip(text))))
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for ToolUseId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A write identity: `^[a-z][a-z0-9_-]{0,63}$`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Persona(String);

impl Persona {
    pub const INVALID: crate::codes::ids::Code = crate::codes::ids::PERSONA;

    pub fn parse(text: &str) -> Result<Self> {
        let b = text.as_bytes();
        let ok = !b.is_empty()
            && b.len() <= 64
            && b[0].is_ascii_lowercase()
            && b.iter().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'_' || *c == b'-');
        if ok {
            Ok(Persona(text.to_owned()))
        } else {
            Err(Error::new(Self::INVALID, format!("persona must match ^[a-z][a-z0-9_-]{{0,63}}$, got {:?}", clip(text))))
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl Default for Persona {
    fn default() -> Self {
        Persona("codex".to_owned())
    }
}

impl fmt::Display for Persona {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// An absolute path with no `.`/`..` components, no NUL, valid UTF-8 and at
/// most 4096 bytes. Ownership and permission checks happen where the file is
/// opened (see `private`); this type only guarantees the shape.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct AbsPath(PathBuf);

/// Maximum accepted path length in bytes.
pub const MAX_PATH_BYTES: usize = 4096;

impl AbsPath {
    pub const INVALID: crate::codes::ids::Code = crate::codes::ids::PATH;

    pub fn parse(text: &str) -> Result<Self> {
        let bad = |why: &str| Error::new(Self::INVALID, format!("{why}: {:?}", clip(text)));
        if text.is_empty() || text.len() > MAX_PATH_BYTES {
            return Err(bad("path must be 1 to 4096 bytes"));
        }
        if text.contains('\0') {
            return Err(bad("path contains NUL"));
        }
        let path = Path::new(text);
        if !path.is_absolute() {
            return Err(bad("path must be absolute"));
        }
        for part in text.split('/').skip(1) {
            if part == "." || part == ".." {
                return Err(bad("path must not contain . or .. components"));
            }
        }
        if path.components().any(|c| matches!(c, Component::ParentDir | Component::CurDir)) {
            return Err(bad("path must not contain . or .. components"));
        }
        if path == Path::new("/") {
            return Err(bad("path must not be the root directory"));
        }
        Ok(AbsPath(path.components().collect()))
    }

    pub fn from_path(path: &Path) -> Result<Self> {
        match path.to_str() {
            Some(text) => Self::parse(text),
            None => Err(Error::new(Self::INVALID, "path is not valid UTF-8")),
        }
    }

    pub fn as_path(&self) -> &Path {
        &self.0
    }

    pub fn as_str(&self) -> &str {
        // Constructed from &str only.
        self.0.to_str().unwrap_or_default()
    }

    /// The parent directory (always exists for a non-root absolute path).
    pub fn parent(&self) -> &Path {
        self.0.parent().unwrap_or(Path::new("/"))
    }

    pub fn join(&self, name: &str) -> Result<AbsPath> {
        AbsPath::parse(&format!("{}/{}", self.as_str().trim_end_matches('/'), name))
    }
}

impl fmt::Display for AbsPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_accept_only_canonical_safe_decimals() {
        for good in ["1", "21813", "9007199254740991", "1000000000000000"] {
            assert!(MemoryId::parse(good).is_ok(), "{good}");
            assert!(MessageId::parse(good).is_ok(), "{good}");
        }
        for bad in ["", "0", "01", "-1", "+1", "1.0", "1e3", " 1", "1 ", "9007199254740992", "99999999999999999", "１"] {
            let err = MemoryId::parse(bad).unwrap_err();
            assert_eq!(err.code(), "invalid_memory_id", "{bad}");
            assert_eq!(MessageId::parse(bad).unwrap_err().code(), "invalid_message_id");
        }
        assert!(MemoryId::new(0).is_err());
        assert!(MemoryId::new(MAX_SAFE_INTEGER + 1).is_err());
    }

    #[test]
    fn digests_are_lowercase_hex_sha256() {
        let d = Digest::of(b"known-bad");
        assert_eq!(d.as_str().len(), 64);
        assert!(Digest::parse(d.as_str()).is_ok());
        assert_eq!(Digest::of(b"").as_str(), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
        for bad in
            ["", "E3B0C44298FC1C149AFBF4C8996FB92427AE41E4649B934CA495991B7852B855", &"a".repeat(63), &"a".repeat(65), &"g".repeat(64)]
        {
            assert_eq!(Digest::parse(bad).unwrap_err().code(), "invalid_digest");
        }
    }

    #[test]
    fn tagged_digests_have_one_form() {
        let d = TaggedDigest::of(b"");
        assert_eq!(d.as_str(), "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
        assert_eq!(d.hex(), Digest::of(b"").as_str());
        assert_eq!(TaggedDigest::parse(d.as_str()).unwrap(), d);
        let json = serde_json::to_string(&d).unwrap();
        assert_eq!(json, format!("\"{d}\""));
        assert_eq!(serde_json::from_str::<TaggedDigest>(&json).unwrap(), d);
        let zeros = format!("sha256:{}", "0".repeat(64));
        for bad in ["", d.hex(), &d.as_str().to_uppercase(), "sha256:abc", "sha1:e3b0", &zeros, &format!("{d}0"), &format!(" {d}")] {
            assert!(!TaggedDigest::is_valid(bad), "{bad}");
            assert_eq!(TaggedDigest::parse(bad).unwrap_err().code(), "invalid_digest", "{bad}");
            assert!(serde_json::from_value::<TaggedDigest>(serde_json::Value::String(bad.to_owned())).is_err(), "{bad}");
        }
        let h = ActionHash::of_canonical(b"{}\n");
        assert_eq!(h.digest(), &TaggedDigest::of(b"{}\n"));
        assert_eq!(ActionHash::parse(h.as_str()).unwrap(), h);
        assert_eq!(serde_json::to_string(&h).unwrap(), format!("\"{h}\""));
    }

    #[test]
    fn session_ids_and_personas() {
        assert!(SessionId::parse("01a2295e-6642-71e2-aa07-0ef32226885f").is_ok());
        assert!(SessionId::parse(&"a".repeat(128)).is_ok());
        for bad in ["", "-abc", "a_b", "a b", "a/b", &"a".repeat(129)] {
            assert!(SessionId::parse(bad).is_err(), "{bad}");
        }
        assert!(Persona::parse("codex").is_ok());
        assert!(Persona::parse("a_b-9").is_ok());
        for bad in ["", "Codex", "1abc", "a b", &"a".repeat(65)] {
            assert!(Persona::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn tool_use_ids_are_bounded_words() {
        for good in ["toolu_01ABC", "call_9f.x:1-2", &"x".repeat(128)] {
            assert_eq!(ToolUseId::parse(good).unwrap().as_str(), good);
        }
        for bad in ["", "a/b", "a b", "../x", "toolu_1\n", "é", &"x".repeat(129)] {
            assert_eq!(ToolUseId::parse(bad).unwrap_err().code(), "invalid_tool_use_id", "{bad:?}");
        }
    }

    #[test]
    fn a_session_id_is_stored_as_its_text_and_read_through_parse() {
        let s = SessionId::parse("01a2295e-6929-7981-9da7-935145fb97be").unwrap();
        assert_eq!(serde_json::to_string(&s).unwrap(), "\"01a2295e-6929-7981-9da7-935145fb97be\"");
        assert_eq!(serde_json::from_str::<SessionId>("\"01a2295e-6929-7981-9da7-935145fb97be\"").unwrap(), s);
        for bad in ["\"\"", "\"a b\"", "\"-a\"", "\"../x\"", "7", "null"] {
            assert!(serde_json::from_str::<SessionId>(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn paths_are_absolute_and_clean() {
        assert_eq!(AbsPath::parse("/tmp/x//y/").unwrap().as_str(), "/tmp/x/y");
        for bad in ["", "rel/x", "./x", "/tmp/../etc", "/tmp/./x", "/", "/a\0b"] {
            assert_eq!(AbsPath::parse(bad).unwrap_err().code(), "invalid_path", "{bad:?}");
        }
    }
}
