//! The Kijito REST client (docs/protocol.md §2).
//!
//! `Transport` is the small seam unit tests use to inject faults; the real
//! one is blocking reqwest with rustls, a named User-Agent, no proxy (the
//! proxy environment variables are ignored), no redirects, a
//! 1 MiB response cap and per-call timeouts (10 s memory calls, 5 s
//! claim/release). `Api` speaks the four calls on top of any transport.
//!
//! Error codes: `kijito_http_<status>` (non-2xx), `kijito_timeout`,
//! `kijito_invalid_json` (answer is not JSON), `kijito_response_invalid`
//! (JSON of the wrong shape), `kijito_response_too_large` (> 1 MiB),
//! `kijito_redirect_refused` (any 3xx), `kijito_network_error` (connection
//! failed or reset).

use crate::token::Token;
use kijito_files::config::ApiUrl;
use kijito_protocol::error::{Error, Kind, Result};
use kijito_protocol::ids::{Digest, MemoryId, MessageId, Persona};
use serde_json::{json, Value};
use std::io::Read;
use std::time::Duration;

pub const MAX_RESPONSE_BYTES: usize = 1024 * 1024;
pub const MEMORY_TIMEOUT: Duration = Duration::from_secs(10);
pub const LEASE_TIMEOUT: Duration = Duration::from_secs(5);
pub const USER_AGENT: &str = concat!("kijito-qa/", env!("CARGO_PKG_VERSION"), " (+memory-qa helper)");

/// Stable codes of the service transport (the `http` area; errors of
/// [`Kind::Service`] / [`Kind::HttpStatus`]).
pub mod codes {
    kijito_protocol::codes! {
        TIMEOUT Timeout = "kijito_timeout",
        INVALID_JSON InvalidJson = "kijito_invalid_json",
        RESPONSE_INVALID ResponseInvalid = "kijito_response_invalid",
        TOO_LARGE TooLarge = "kijito_response_too_large",
        REDIRECT Redirect = "kijito_redirect_refused",
        NETWORK Network = "kijito_network_error",
    }
    /// `kijito_http_<status>` (with [`kijito_protocol::error::Kind::HttpStatus`]).
    pub fn http(status: u16) -> kijito_protocol::error::ErrorCode {
        kijito_protocol::error::ErrorCode::http_status(status)
    }
}

/// A failure of the service itself (unreachable, slow, redirecting,
/// oversize or malformed answer): [`Kind::Service`].
pub fn service_error(code: codes::Code, message: impl Into<String>) -> Error {
    Error::new(code, message).with_kind(Kind::Service)
}

/// The service answered a non-success HTTP status: `kijito_http_<status>`,
/// [`Kind::HttpStatus`].
pub fn status_error(status: u16) -> Error {
    Error::new(codes::http(status), format!("the Kijito service answered HTTP {status}")).with_kind(Kind::HttpStatus(status))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    Get,
    Post,
    Patch,
}

/// One HTTP request as the protocol needs it.
#[derive(Debug, Clone)]
pub struct Request {
    pub method: Method,
    /// Path under the base URL, e.g. `/api/memory/21813`.
    pub path: String,
    pub body: Option<Vec<u8>>,
    pub if_match: Option<String>,
    pub timeout: Duration,
}

/// A 2xx answer (anything else is an error by the time it leaves the transport).
#[derive(Debug, Clone, PartialEq)]
pub struct Response {
    pub status: u16,
    pub etag: Option<String>,
    pub body: Vec<u8>,
}

/// Sends one request, applying the section 2 rules (status mapping, cap,
/// redirects, timeouts). `Sync` so a verifier can fetch concurrently.
pub trait Transport: Send + Sync {
    fn send(&self, request: &Request) -> Result<Response>;
}

/// The real transport.
pub struct ReqwestTransport {
    client: reqwest::blocking::Client,
    base: ApiUrl,
    bearer: String,
}

impl ReqwestTransport {
    pub fn new(base: ApiUrl, token: &Token) -> Result<Self> {
        let client = reqwest::blocking::Client::builder()
            .user_agent(USER_AGENT)
            // Never a proxy: `http_proxy`/`HTTPS_PROXY`/`ALL_PROXY` in the
            // environment would otherwise receive the bearer token and could
            // forge every answer.
            .no_proxy()
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(LEASE_TIMEOUT)
            .timeout(MEMORY_TIMEOUT)
            .build()
            .map_err(|e| service_error(codes::NETWORK, format!("cannot build the HTTP client: {e}")))?;
        Ok(ReqwestTransport { client, base, bearer: token.bearer_header() })
    }
}

fn transport_error(err: &reqwest::Error) -> Error {
    if err.is_timeout() {
        service_error(codes::TIMEOUT, "the Kijito service did not answer in time")
    } else if err.is_redirect() {
        service_error(codes::REDIRECT, "the Kijito service answered a redirect; redirects are never followed")
    } else {
        // reqwest errors never contain request headers, so no token here.
        service_error(codes::NETWORK, format!("request failed: {}", without_url(err)))
    }
}

fn without_url(err: &reqwest::Error) -> String {
    let mut text = err.to_string();
    if let Some(url) = err.url() {
        text = text.replace(url.as_str(), "<url>");
    }
    text
}

impl Transport for ReqwestTransport {
    fn send(&self, request: &Request) -> Result<Response> {
        let url = self.base.endpoint(&request.path);
        let method = match request.method {
            Method::Get => reqwest::Method::GET,
            Method::Post => reqwest::Method::POST,
            Method::Patch => reqwest::Method::PATCH,
        };
        let mut builder = self
            .client
            .request(method, url)
            .timeout(request.timeout)
            .header(reqwest::header::AUTHORIZATION, &self.bearer)
            .header(reqwest::header::ACCEPT, "application/json");
        if let Some(tag) = &request.if_match {
            builder = builder.header(reqwest::header::IF_MATCH, tag);
        }
        if let Some(body) = &request.body {
            builder = builder.header(reqwest::header::CONTENT_TYPE, "application/json").body(body.clone());
        }
        let response = builder.send().map_err(|e| transport_error(&e))?;
        let status = response.status().as_u16();
        if response.status().is_redirection() {
            return Err(service_error(codes::REDIRECT, format!("the Kijito service answered {status}; redirects are never followed")));
        }
        let etag = response.headers().get(reqwest::header::ETAG).and_then(|v| v.to_str().ok()).map(str::to_owned);
        if let Some(len) = response.content_length() {
            if len > MAX_RESPONSE_BYTES as u64 {
                return Err(service_error(codes::TOO_LARGE, format!("the answer is larger than {MAX_RESPONSE_BYTES} bytes")));
            }
        }
        let mut body = Vec::new();
        response.take(MAX_RESPONSE_BYTES as u64 + 1).read_to_end(&mut body).map_err(|e| {
            if e.kind() == std::io::ErrorKind::TimedOut || e.to_string().contains("timed out") {
                service_error(codes::TIMEOUT, "the Kijito service did not finish its answer in time")
            } else {
                service_error(codes::NETWORK, format!("reading the answer failed: {e}"))
            }
        })?;
        if body.len() > MAX_RESPONSE_BYTES {
            return Err(service_error(codes::TOO_LARGE, format!("the answer is larger than {MAX_RESPONSE_BYTES} bytes")));
        }
        if !(200..300).contains(&status) {
            return Err(status_error(status));
        }
        Ok(Response { status, etag, body })
    }
}

/// A fetched memory: the rendered text and, from a self-hosted server, the
/// content digest of its `ETag: "sha256:<digest>"`.
#[derive(Debug, Clone, PartialEq)]
pub struct Fetched {
    pub rendering: String,
    pub etag: Option<String>,
}

impl Fetched {
    /// The digest named by a well-formed `"sha256:<digest>"` ETag.
    pub fn etag_digest(&self) -> Option<Digest> {
        let inner = self.etag.as_deref()?.strip_prefix('"')?.strip_suffix('"')?;
        kijito_protocol::ids::TaggedDigest::parse(inner).ok().and_then(|t| Digest::parse(t.hex()).ok())
    }
}

/// Answer to a claim.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Claim {
    Claimed,
    Refused { reason: String, claimed_by: String, lease_expired: bool },
}

/// The four calls of section 2 on any transport.
pub struct Api<T: Transport> {
    pub transport: T,
    pub persona: Persona,
    pub project: String,
}

fn parse_json(body: &[u8]) -> Result<Value> {
    serde_json::from_slice(body).map_err(|_| service_error(codes::INVALID_JSON, "the answer is not valid JSON"))
}

fn shape(what: &str) -> Error {
    service_error(codes::RESPONSE_INVALID, format!("the answer to {what} has an unexpected shape"))
}

impl<T: Transport> Api<T> {
    pub fn new(transport: T, persona: Persona, project: String) -> Self {
        Api { transport, persona, project }
    }

    /// `GET /api/memory/{id}` -> the rendered memory.
    pub fn get_memory(&self, id: MemoryId) -> Result<Fetched> {
        let response = self.transport.send(&Request {
            method: Method::Get,
            path: format!("/api/memory/{id}"),
            body: None,
            if_match: None,
            timeout: MEMORY_TIMEOUT,
        })?;
        let value = parse_json(&response.body)?;
        let rendering = value.get("result").and_then(Value::as_str).ok_or_else(|| shape("GET memory"))?;
        Ok(Fetched { rendering: rendering.to_owned(), etag: response.etag })
    }

    /// `PATCH /api/memory/{id}` once. Returns the raw JSON answer; whether it
    /// is the clean ACK is the caller's rule (see [`is_clean_ack`]).
    pub fn patch_memory(&self, id: MemoryId, content: &str, if_match: Option<&str>) -> Result<Vec<u8>> {
        let body = json!({"content": content, "persona": self.persona.as_str(), "scope": "project", "project": self.project});
        let response = self.transport.send(&Request {
            method: Method::Patch,
            path: format!("/api/memory/{id}"),
            body: Some(body.to_string().into_bytes()),
            if_match: if_match.map(str::to_owned),
            timeout: MEMORY_TIMEOUT,
        })?;
        Ok(response.body)
    }

    /// `POST /api/claim`.
    pub fn claim(&self, message: MessageId, lease_seconds: u32) -> Result<Claim> {
        let value = self.lease_call(
            "/api/claim",
            "claim",
            message,
            json!({"message_id": message.get(), "persona": self.persona.as_str(), "lease_seconds": lease_seconds}),
        )?;
        match value.get("claimed").and_then(Value::as_bool) {
            Some(true) => Ok(Claim::Claimed),
            Some(false) => {
                let advisory = value.get("advisory").and_then(Value::as_object).ok_or_else(|| shape("claim"))?;
                let text = |k: &str| advisory.get(k).and_then(Value::as_str).map(str::to_owned).ok_or_else(|| shape("claim"));
                Ok(Claim::Refused {
                    reason: text("reason")?,
                    claimed_by: text("claimed_by")?,
                    lease_expired: advisory.get("lease_expired").and_then(Value::as_bool).ok_or_else(|| shape("claim"))?,
                })
            }
            None => Err(shape("claim")),
        }
    }

    /// `POST /api/release` -> whether the lease was released.
    pub fn release(&self, message: MessageId) -> Result<bool> {
        let value =
            self.lease_call("/api/release", "release", message, json!({"message_id": message.get(), "persona": self.persona.as_str()}))?;
        value.get("released").and_then(Value::as_bool).ok_or_else(|| shape("release"))
    }

    /// One claim/release call: POST with the lease timeout; the answer must
    /// be JSON naming the same message.
    fn lease_call(&self, path: &str, what: &str, message: MessageId, body: Value) -> Result<Value> {
        let response = self.transport.send(&Request {
            method: Method::Post,
            path: path.into(),
            body: Some(body.to_string().into_bytes()),
            if_match: None,
            timeout: LEASE_TIMEOUT,
        })?;
        let value = parse_json(&response.body)?;
        if value.get("message_id").and_then(Value::as_u64) != Some(message.get()) {
            return Err(shape(what));
        }
        Ok(value)
    }
}

/// The clean PATCH ACK: the parsed JSON value is exactly
/// `{"result":"Updated [<id>]"}` (whitespace and formatting do not matter;
/// another key or value does). It only classifies the outcome: the
/// unconditional re-read after the PATCH decides whether it was published.
pub fn is_clean_ack(body: &[u8], id: MemoryId) -> bool {
    let Ok(serde_json::Value::Object(o)) = serde_json::from_slice::<serde_json::Value>(body) else {
        return false;
    };
    o.len() == 1 && o.get("result").and_then(|v| v.as_str()) == Some(format!("Updated [{id}]").as_str())
}

/// Build the real API client from the configuration and the token file.
pub fn connect(config: &kijito_files::config::Config, token_file: &std::path::Path) -> Result<Api<ReqwestTransport>> {
    let token = Token::read(token_file)?;
    Ok(Api::new(ReqwestTransport::new(config.api_url.clone(), &token)?, config.persona.clone(), config.project.clone()))
}

/// What every networked binary does first: load the config, let
/// `--token-file` override the token file for this run, and connect.
pub fn connect_configured(token_file: Option<&kijito_protocol::ids::AbsPath>) -> Result<Api<ReqwestTransport>> {
    let config = kijito_files::config::Config::load()?;
    let path = token_file.map(|p| p.as_path().to_owned()).unwrap_or_else(|| config.token_file.clone());
    connect(&config, &path)
}

/// A scripted transport for unit tests: answers in order, records every
/// request, and fails with `script_exhausted` when it runs out.
#[cfg(test)]
pub(crate) mod script {
    use super::*;
    use std::sync::Mutex;

    pub(crate) struct Script {
        pub answers: Mutex<Vec<Result<Response>>>,
        pub seen: Mutex<Vec<Request>>,
    }

    impl Transport for Script {
        fn send(&self, request: &Request) -> Result<Response> {
            self.seen.lock().unwrap().push(request.clone());
            let mut answers = self.answers.lock().unwrap();
            if answers.is_empty() {
                return Err(Error::new(codes::NETWORK, "no more answers"));
            }
            answers.remove(0)
        }
    }

    /// An `Api` (persona codex, project Codex) answering `answers` in order.
    pub(crate) fn api(answers: Vec<Result<Response>>) -> Api<Script> {
        Api::new(Script { answers: Mutex::new(answers), seen: Mutex::new(vec![]) }, Persona::default(), "Codex".into())
    }

    /// A 200 answer with `body`.
    pub(crate) fn ok(body: &str) -> Result<Response> {
        Ok(Response { status: 200, etag: None, body: body.as_bytes().to_vec() })
    }
}

#[cfg(test)]
mod tests {
    use super::script::{api, ok};
    use super::*;

    #[test]
    fn claim_answers_are_parsed_strictly() {
        let m = MessageId::new(7).unwrap();
        assert_eq!(api(vec![ok(r#"{"claimed":true,"message_id":7}"#)]).claim(m, 300).unwrap(), Claim::Claimed);
        let refused = api(vec![ok(
            r#"{"claimed":false,"message_id":7,"advisory":{"reason":"self_claimed","claimed_by":"codex","lease_expired":false}}"#,
        )]);
        assert_eq!(
            refused.claim(m, 300).unwrap(),
            Claim::Refused { reason: "self_claimed".into(), claimed_by: "codex".into(), lease_expired: false }
        );
        let body = String::from_utf8(refused.transport.seen.lock().unwrap()[0].body.clone().unwrap()).unwrap();
        assert_eq!(body, r#"{"message_id":7,"persona":"codex","lease_seconds":300}"#);
        assert_eq!(api(vec![ok(r#"{"claimed":true,"message_id":8}"#)]).claim(m, 300).unwrap_err().code(), codes::RESPONSE_INVALID.as_str());
        assert_eq!(api(vec![ok("nope")]).claim(m, 300).unwrap_err().code(), codes::INVALID_JSON.as_str());
        assert_eq!(
            api(vec![ok(r#"{"claimed":false,"message_id":7}"#)]).claim(m, 300).unwrap_err().code(),
            codes::RESPONSE_INVALID.as_str()
        );
    }

    #[test]
    fn transport_errors_pass_through() {
        let m = MemoryId::new(5).unwrap();
        let a = api(vec![Err(service_error(codes::TIMEOUT, "t"))]);
        assert_eq!(a.get_memory(m).unwrap_err().code(), codes::TIMEOUT.as_str());
        assert_eq!(api(vec![ok(r#"{"result":5}"#)]).get_memory(m).unwrap_err().code(), codes::RESPONSE_INVALID.as_str());
        let f = api(vec![ok(r#"{"result":"x"}"#)]).get_memory(m).unwrap();
        assert_eq!(f.rendering, "x");
    }

    #[test]
    fn patch_body_and_ack() {
        let id = MemoryId::new(21813).unwrap();
        let a = api(vec![ok(r#"{"result":"Updated [21813]"}"#)]);
        let ack = a.patch_memory(id, "c/\"", Some("\"sha256:x\"")).unwrap();
        assert!(is_clean_ack(&ack, id));
        // Judged on the parsed value: formatting does not matter.
        assert!(is_clean_ack(br#"{"result":"Updated [21813]"} "#, id));
        assert!(is_clean_ack(br#"{ "result" : "Updated [21813]" }"#, id));
        assert!(!is_clean_ack(br#"{"result":"Updated [21813]","x":1}"#, id));
        assert!(!is_clean_ack(br#"["Updated [21813]"]"#, id));
        assert!(!is_clean_ack(br#"{"result":"Updated [2181]"}"#, id));
        let seen = a.transport.seen.lock().unwrap();
        assert_eq!(
            String::from_utf8(seen[0].body.clone().unwrap()).unwrap(),
            r#"{"content":"c/\"","persona":"codex","scope":"project","project":"Codex"}"#
        );
        assert_eq!(seen[0].if_match.as_deref(), Some("\"sha256:x\""));
        assert_eq!(seen[0].method, Method::Patch);
    }

    #[test]
    fn etag_digest_parses_only_the_local_form() {
        let d = Digest::of(b"x");
        let f = Fetched { rendering: String::new(), etag: Some(format!("\"sha256:{d}\"")) };
        assert_eq!(f.etag_digest(), Some(d.clone()));
        let f = Fetched { rendering: String::new(), etag: Some(format!("sha256:{d}")) };
        assert_eq!(f.etag_digest(), None);
    }
}
