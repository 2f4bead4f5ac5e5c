//! The one error type of the toolkit.
//!
//! Every rejection carries a stable snake_case `code` (what binaries print as
//! `kijito_<tool>_failed:<code>`), a human `message`, optionally a JSON
//! `detail` for scripts (printed as a second stderr line), and whether it is a
//! usage error (exit status 2) or a runtime failure (exit status 1).

use std::fmt;

/// Boxed so `Result<T, Error>` stays one pointer wide on the happy path.
#[derive(Debug, Clone, PartialEq)]
pub struct Error(Box<Inner>);

#[derive(Debug, Clone, PartialEq)]
struct Inner {
    code: String,
    message: String,
    detail: Option<serde_json::Value>,
    usage: bool,
    kind: Kind,
}

/// What sort of failure an error is, for the callers whose control flow
/// depends on it: they match on this, never on the code string.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A rule refused the input or the state (the default).
    Refused,
    /// The Kijito service could not be reached or did not answer usably
    /// (network, timeout, redirect, oversize or malformed answer).
    Service,
    /// The Kijito service answered this non-success HTTP status.
    HttpStatus(u16),
    /// A local prerequisite could not be used: the config, the token file,
    /// a private file.
    Local,
}

impl Kind {
    /// The service was unreachable or answered with an error status.
    pub fn is_service(self) -> bool {
        matches!(self, Kind::Service | Kind::HttpStatus(_))
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// A runtime failure with a stable code.
    pub fn new(code: impl Into<String>, message: impl Into<String>) -> Self {
        Error(Box::new(Inner { code: code.into(), message: message.into(), detail: None, usage: false, kind: Kind::Refused }))
    }

    /// A usage error (bad argv): exit status 2.
    pub fn usage(code: impl Into<String>, message: impl Into<String>) -> Self {
        Error::new(code, message).as_usage()
    }

    /// Attach machine-readable detail (never a secret).
    pub fn with_detail(mut self, detail: serde_json::Value) -> Self {
        self.0.detail = Some(detail);
        self
    }

    /// Set the kind (see [`Kind`]).
    pub fn with_kind(mut self, kind: Kind) -> Self {
        self.0.kind = kind;
        self
    }

    pub fn kind(&self) -> Kind {
        self.0.kind
    }

    /// This error carries `code` (a registry constant).
    pub fn is(&self, code: &str) -> bool {
        self.0.code == code
    }

    /// Mark (or unmark) this error as a usage error.
    pub fn as_usage(mut self) -> Self {
        self.0.usage = true;
        self
    }

    pub fn code(&self) -> &str {
        &self.0.code
    }

    pub fn message(&self) -> &str {
        &self.0.message
    }

    pub fn detail(&self) -> Option<&serde_json::Value> {
        self.0.detail.as_ref()
    }

    pub fn is_usage(&self) -> bool {
        self.0.usage
    }

    /// Exit status for this error: 2 for usage, 1 otherwise.
    pub fn exit_status(&self) -> i32 {
        if self.0.usage {
            2
        } else {
            1
        }
    }

    /// Prefix the message with context, keeping the code.
    pub fn context(mut self, what: &str) -> Self {
        self.0.message = format!("{what}: {}", self.0.message);
        self
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.0.code, self.0.message)
    }
}

impl std::error::Error for Error {}

/// Map an I/O error to a toolkit error with the given code.
pub fn io_error(code: &str, what: &str, err: &std::io::Error) -> Error {
    Error::new(code, format!("{what}: {err}"))
}
