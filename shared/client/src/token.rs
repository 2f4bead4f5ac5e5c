//! The bearer token (docs/protocol.md §2): read from a file that is a
//! regular file, not a symlink, owned by the user, without group/other mode
//! bits, at most 16 KiB, one line with no whitespace or control characters.
//! The token never appears in output, logs, receipts or errors: `Token` has
//! no `Display`, and its `Debug` is redacted.

use kijito_files::private::{self, FileRules};
use kijito_protocol::error::{Error, Kind, Result};
use std::fmt;
use std::path::Path;

pub const MAX_TOKEN_FILE_BYTES: u64 = 16 * 1024;

/// Stable codes of the bearer token file (the `token` area).
pub mod codes {
    use kijito_files::private::codes as files;

    kijito_protocol::codes! {
        INVALID Invalid = "token_invalid",
        /// The token file could not be read (`token_` + the kijito-files code, [`file_code`]).
        FILE_NOT_FOUND FileNotFound = "token_file_not_found",
        FILE_SYMLINK FileSymlink = "token_file_is_symlink",
        FILE_NOT_REGULAR FileNotRegular = "token_file_not_regular",
        FILE_NOT_OWNED FileNotOwned = "token_file_not_owned",
        FILE_PERMISSIONS FilePermissions = "token_file_permissions_too_open",
        FILE_TOO_LARGE FileTooLarge = "token_file_too_large",
        FILE_TOO_SMALL FileTooSmall = "token_file_too_small",
        FILE_CHANGED FileChanged = "token_file_changed_during_read",
        FILE_READ FileRead = "token_file_read_failed",
        FILE_EXISTS FileExists = "token_file_exists",
        FILE_WRITE FileWrite = "token_file_write_failed",
        FILE_DIR_SYMLINK FileDirSymlink = "token_directory_is_symlink",
        FILE_DIR_NOT_DIR FileDirNotDir = "token_directory_not_directory",
        FILE_DIR_NOT_OWNED FileDirNotOwned = "token_directory_not_owned",
        FILE_DIR_PERMISSIONS FileDirPermissions = "token_directory_permissions_too_open",
        FILE_DIR_MISSING FileDirMissing = "token_directory_missing",
        FILE_DIR_CREATE FileDirCreate = "token_directory_create_failed",
    }

    /// The token-file code of a kijito-files read failure (`token_` + its code).
    pub fn file_code(code: files::Code) -> Code {
        match code {
            files::NOT_FOUND => FILE_NOT_FOUND,
            files::SYMLINK => FILE_SYMLINK,
            files::NOT_REGULAR => FILE_NOT_REGULAR,
            files::NOT_OWNED => FILE_NOT_OWNED,
            files::PERMISSIONS => FILE_PERMISSIONS,
            files::TOO_LARGE => FILE_TOO_LARGE,
            files::TOO_SMALL => FILE_TOO_SMALL,
            files::CHANGED => FILE_CHANGED,
            files::READ => FILE_READ,
            files::EXISTS => FILE_EXISTS,
            files::WRITE => FILE_WRITE,
            files::DIR_SYMLINK => FILE_DIR_SYMLINK,
            files::DIR_NOT_DIR => FILE_DIR_NOT_DIR,
            files::DIR_NOT_OWNED => FILE_DIR_NOT_OWNED,
            files::DIR_PERMISSIONS => FILE_DIR_PERMISSIONS,
            files::DIR_MISSING => FILE_DIR_MISSING,
            files::DIR_CREATE => FILE_DIR_CREATE,
        }
    }
}

/// A bearer token. Only `bearer_header` exposes it, for the HTTP client.
#[derive(Clone, PartialEq, Eq)]
pub struct Token(String);

impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Token(<redacted>)")
    }
}

impl Token {
    /// Read and validate the token file.
    pub fn read(path: &Path) -> Result<Token> {
        let rules = FileRules { owner_only: true, min_bytes: 1, max_bytes: MAX_TOKEN_FILE_BYTES };
        let (bytes, _) = private::read_checked(path, rules).map_err(|e| {
            // Every read failure is a kijito-files code; anything else reads as a failed read.
            let code = codes::file_code(e.code_as().unwrap_or(private::codes::READ));
            Error::new(code, format!("token file: {}", e.message())).with_kind(Kind::Local)
        })?;
        Token::from_file_bytes(&bytes)
    }

    /// Validate token file bytes: one line (an optional single trailing `\n`
    /// or `\r\n`), non-empty, no whitespace or control characters.
    pub fn from_file_bytes(bytes: &[u8]) -> Result<Token> {
        let invalid = |why: &str| Error::new(codes::INVALID, format!("token file {why}")).with_kind(Kind::Local);
        let text = std::str::from_utf8(bytes).map_err(|_| invalid("is not UTF-8"))?;
        let line = text.strip_suffix("\r\n").or_else(|| text.strip_suffix('\n')).unwrap_or(text);
        if line.is_empty() {
            return Err(invalid("is empty"));
        }
        if line.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(invalid("must hold one line without whitespace or control characters"));
        }
        Ok(Token(line.to_owned()))
    }

    /// `Bearer <token>` for the Authorization header.
    pub fn bearer_header(&self) -> String {
        format!("Bearer {}", self.0)
    }

    /// Whether `text` contains the token (for tests proving it never leaks).
    pub fn appears_in(&self, text: &str) -> bool {
        text.contains(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn token_file_rules() {
        assert!(Token::from_file_bytes(b"abc.DEF-123\n").is_ok());
        assert!(Token::from_file_bytes(b"abc\r\n").is_ok());
        assert!(Token::from_file_bytes(b"abc").is_ok());
        for bad in [&b""[..], b"\n", b"a b", b"a\tb", b"a\nb", b"a\n\n", b"\xff", b"a\x01"] {
            assert_eq!(Token::from_file_bytes(bad).unwrap_err().code(), codes::INVALID.as_str(), "{bad:?}");
        }
    }

    #[test]
    fn token_never_printed() {
        let t = Token::from_file_bytes(b"s3cr3t-token").unwrap();
        assert!(!format!("{t:?}").contains("s3cr3t"));
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("token");
        std::fs::write(&p, "s3cr3t-token\n").unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o640)).unwrap();
        let err = Token::read(&p).unwrap_err();
        assert_eq!(err.code(), "token_file_permissions_too_open");
        assert!(!err.to_string().contains("s3cr3t"));
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(Token::read(&p).unwrap(), t);
    }
}
