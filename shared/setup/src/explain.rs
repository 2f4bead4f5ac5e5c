//! Error messages that say what to do. The stable code of an error never
//! changes here; only its sentence grows a cause and a fix: 401 names the
//! token file, 403 names the memory (or message) id, persona and scope,
//! network errors name the host and port, token file problems name the file
//! and the command that fixes them. The token itself never appears.

use kijito_client::{http::codes as http, token::codes as token};
use kijito_files::config::ApiUrl;
use kijito_protocol::error::Error;
use kijito_protocol::error::ErrorCode;
use kijito_protocol::ids::{MemoryId, MessageId};
use std::path::Path;

/// What a failed call was about.
#[derive(Debug, Clone, Copy)]
pub enum Target {
    Memory(MemoryId),
    Message(MessageId),
    Other,
}

/// Everything a message may name.
#[derive(Debug, Clone, Copy)]
pub struct Context<'a> {
    pub api_url: &'a ApiUrl,
    pub token_file: &'a Path,
    pub persona: &'a str,
    pub project: &'a str,
    pub target: Target,
}

/// `(host, port)` of a base URL (default ports 443/80).
pub fn host_port(api: &ApiUrl) -> (String, u16) {
    let (scheme, authority) = api.as_str().split_once("://").unwrap_or(("https", api.as_str()));
    let default = if scheme == "http" { 80 } else { 443 };
    if let Some(rest) = authority.strip_prefix('[') {
        let (h, after) = rest.split_once(']').unwrap_or((rest, ""));
        let port = after.strip_prefix(':').and_then(|p| p.parse().ok()).unwrap_or(default);
        return (format!("[{h}]"), port);
    }
    match authority.rsplit_once(':') {
        Some((h, p)) => (h.to_owned(), p.parse().unwrap_or(default)),
        None => (authority.to_owned(), default),
    }
}

/// The fix for a token file problem (code `token_file_*` / `token_invalid`).
pub fn token_fix(code: Option<token::Code>, path: &Path) -> String {
    let p = path.display();
    match code {
        Some(token::FILE_NOT_FOUND) => format!("put your token in {p} (one line) and make it owner-only: `chmod 600 {p}`"),
        Some(token::FILE_PERMISSIONS) => format!("make it owner-only: `chmod 600 {p}`"),
        Some(token::FILE_SYMLINK) => format!("{p} must be the file itself, not a symlink: copy the token into a regular file there"),
        Some(token::FILE_NOT_OWNED) => format!("{p} must be owned by you: copy the token into a file you own"),
        Some(token::INVALID | token::FILE_TOO_SMALL) => format!("{p} must hold exactly one line, the token, without spaces"),
        _ => format!("check {p}: a regular owner-only file (chmod 600) holding one line, the token"),
    }
}

/// Rewrite `err`'s sentence with its cause and fix (same code).
pub fn explain(err: Error, cx: &Context<'_>) -> Error {
    let code = err.error_code();
    let original = err.message().to_owned();
    let (host, port) = host_port(cx.api_url);
    let sentence = if code == ErrorCode::http_status(401) {
        format!(
            "the service at {} refused the token in {} (HTTP 401): put a valid token for this service in that file (one line, chmod 600), or pass --token-file ABS",
            cx.api_url.as_str(),
            cx.token_file.display()
        )
    } else if code == ErrorCode::http_status(403) {
        match cx.target {
            Target::Memory(id) => format!(
                "memory {id} is not found or not visible (HTTP 403) to persona {:?} with scope \"project\" and project {:?}: check the id, and that the memory was created with scope \"project\" and project {:?} by the account of the token in {}",
                cx.persona,
                cx.project,
                cx.project,
                cx.token_file.display()
            ),
            Target::Message(id) => format!(
                "message {id} (the pointer's lock) is not found or not visible (HTTP 403) to persona {:?}: check lockMessageId, and that the message was sent to this account",
                cx.persona
            ),
            Target::Other => format!("the service refused the request (HTTP 403): {original}"),
        }
    } else if matches!(err.code_as(), Some(http::NETWORK | http::TIMEOUT)) {
        format!(
            "cannot reach {host} port {port} ({original}): check that the service is running there (kijito-local: `kijito-local serve --db ABS --token-file ABS --listen 127.0.0.1:{port}`) and that apiUrl {} is right",
            cx.api_url.as_str()
        )
    } else if let Some(t) = err.code_as::<token::Code>() {
        format!("{original}: {}", token_fix(Some(t), cx.token_file))
    } else {
        return err;
    };
    let mut out = Error::new(code, sentence);
    if let Some(d) = err.detail() {
        out = out.with_detail(d.clone());
    }
    if err.is_usage() {
        out = out.as_usage();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_what_to_fix() {
        let api = ApiUrl::parse("http://127.0.0.1:4711").unwrap();
        let tf = Path::new("/home/u/.config/kijito-qa/token");
        let cx = |target| Context { api_url: &api, token_file: tf, persona: "codex", project: "Codex", target };
        let e = explain(Error::new(ErrorCode::http_status(401), "x"), &cx(Target::Other));
        assert_eq!(e.code(), "kijito_http_401");
        assert!(e.message().contains("/home/u/.config/kijito-qa/token"));
        let e = explain(Error::new(ErrorCode::http_status(403), "x"), &cx(Target::Memory(MemoryId::new(42).unwrap())));
        assert!(e.message().contains("memory 42") && e.message().contains("scope \"project\""), "{}", e.message());
        let e = explain(Error::new(ErrorCode::http_status(403), "x"), &cx(Target::Message(MessageId::new(9).unwrap())));
        assert!(e.message().contains("message 9"));
        let e = explain(Error::new(http::NETWORK, "refused"), &cx(Target::Other));
        assert!(e.message().contains("127.0.0.1 port 4711"), "{}", e.message());
        let e = explain(Error::new(token::FILE_PERMISSIONS, "token file: too open"), &cx(Target::Other));
        assert!(e.message().contains("chmod 600 /home/u/.config/kijito-qa/token"));
        let e = explain(Error::new(crate::codes::RED, "same"), &cx(Target::Other));
        assert_eq!(e.message(), "same");
    }

    #[test]
    fn host_and_port() {
        assert_eq!(host_port(&ApiUrl::parse("https://api.kijito.ai").unwrap()), ("api.kijito.ai".into(), 443));
        assert_eq!(host_port(&ApiUrl::parse("http://localhost").unwrap()), ("localhost".into(), 80));
        assert_eq!(host_port(&ApiUrl::parse("http://[::1]:9").unwrap()), ("[::1]".into(), 9));
    }
}
