//! The API of kijito-local: authentication, fault injection and routes.
//! Hosted endpoints (docs/protocol.md §2) answer byte for byte like the
//! hosted service; local extensions are documented in docs/kijito-local.md.

use crate::faults::{self, Action};
use crate::fields::{
    count_field, label_field, message_field, only_keys, optional, persona_field, string_field, unit_field, word_field, Bad,
};
use crate::http::{Request, Response};
use crate::lease::{MAX_LEASE_SECONDS, MIN_LEASE_SECONDS};
use crate::render::{self, Marker};
use crate::reqlog::{Entry, RequestLog};
use crate::store::{self, ClaimOutcome, NewMemory, PatchOutcome, Store};
use kijito_protocol::ids::MemoryId;
use serde_json::{json, Map, Value};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Mutex;

/// What to do with one request.
#[derive(Debug)]
pub struct Outcome {
    /// None: close the connection without answering.
    pub response: Option<Response>,
    /// Close the connection after this request.
    pub close: bool,
    /// The fault actions applied, joined by `+`.
    pub fault: Option<String>,
}

impl Outcome {
    fn answer(response: Response) -> Outcome {
        Outcome { response: Some(response), close: false, fault: None }
    }
}

/// The application state shared by every connection.
pub struct App {
    store: Store,
    token_digest: [u8; 32],
    reap_after_ms: i64,
    clock_offset_ms: AtomicI64,
    faults: Option<PathBuf>,
    occurrences: Mutex<HashMap<(String, String), u64>>,
    log: Option<RequestLog>,
}

fn sha256(bytes: &[u8]) -> [u8; 32] {
    use sha2::Digest as _;
    sha2::Sha256::digest(bytes).into()
}

/// Constant-time equality of two 32-byte digests.
fn same_digest(a: &[u8; 32], b: &[u8; 32]) -> bool {
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

fn wall_ms() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis() as i64).unwrap_or(0)
}

fn bad_request(code: &str, message: &str) -> Response {
    Response::error(400, code, message)
}

fn forbidden() -> Response {
    Response::error(403, "not_found_or_forbidden", "memory not found or forbidden")
}

fn internal(err: &kijito_protocol::Error) -> Response {
    eprintln!("kijito-local: {err}");
    Response::error(500, err.code(), "internal error")
}

impl App {
    pub fn new(store: Store, token: &[u8], reap_after_seconds: u64, faults: Option<PathBuf>, log: Option<RequestLog>) -> App {
        App {
            store,
            token_digest: sha256(token),
            reap_after_ms: (reap_after_seconds.min(1 << 40) * 1000) as i64,
            clock_offset_ms: AtomicI64::new(0),
            faults,
            occurrences: Mutex::new(HashMap::new()),
            log,
        }
    }

    /// The server clock: wall time plus any `advance_clock` faults.
    pub fn now_ms(&self) -> i64 {
        wall_ms().saturating_add(self.clock_offset_ms.load(Ordering::Relaxed))
    }

    /// Append to the request log, if any (failures go to stderr).
    pub fn log(&self, method: &str, path: &str, status: Option<u16>, body: &[u8], fault: Option<&str>) {
        if let Some(log) = &self.log {
            if let Err(e) = log.append(&Entry { method, path, status, body, fault, at_ms: wall_ms() }) {
                eprintln!("kijito-local: cannot append to the request log: {e}");
            }
        }
    }

    /// Whether the head carries the one valid bearer token.
    pub fn authorized(&self, req: &Request) -> bool {
        let mut values = req.headers.iter().filter(|(n, _)| n == "authorization").map(|(_, v)| v.as_str());
        let (Some(value), None) = (values.next(), values.next()) else { return false };
        let Some((scheme, token)) = value.split_once(' ') else { return false };
        scheme.eq_ignore_ascii_case("bearer") && same_digest(&sha256(token.trim().as_bytes()), &self.token_digest)
    }

    fn next_occurrence(&self, req: &Request) -> u64 {
        let mut map = self.occurrences.lock().unwrap_or_else(|p| p.into_inner());
        let n = map.entry((req.method.clone(), req.path.clone())).or_insert(0);
        *n += 1;
        *n
    }

    /// Handle one request: authenticate, apply faults, route.
    pub fn handle(&self, req: &Request) -> Outcome {
        // Authentication first: an unauthenticated request is never counted.
        if !self.authorized(req) {
            return Outcome::answer(Response::error(401, "unauthorized", "missing or wrong bearer token"));
        }
        let occurrence = if self.faults.is_some() { self.next_occurrence(req) } else { 0 };
        let Some(faults_path) = &self.faults else { return Outcome::answer(self.route(req)) };
        let rules = match faults::load(faults_path) {
            Ok(rules) => rules,
            Err(e) => return Outcome::answer(internal(&e)),
        };
        let mut applied: Vec<&'static str> = Vec::new();
        let mut terminal: Option<Action> = None;
        let mut no_etag = false;
        for rule in rules.iter().filter(|r| r.matches(&req.method, &req.path, occurrence)) {
            let target = rule.target().unwrap_or(0);
            let done = match &rule.action {
                Action::Delay { ms } => {
                    std::thread::sleep(std::time::Duration::from_millis(*ms));
                    Ok(true)
                }
                Action::Clobber { content } => self.store.set_content(target, content),
                Action::Erode => self.store.set_marker(target, Marker::Eroded),
                Action::Fade => self.store.set_marker(target, Marker::Faded),
                Action::AdvanceClock { ms } => {
                    self.clock_offset_ms.fetch_add(*ms as i64, Ordering::Relaxed);
                    Ok(true)
                }
                Action::NoEtag => {
                    no_etag = true;
                    Ok(true)
                }
                action if terminal.is_none() => {
                    terminal = Some(action.clone());
                    Ok(true)
                }
                _ => Ok(false),
            };
            match done {
                Ok(true) => applied.push(rule.action.name()),
                Ok(false) => {}
                Err(e) => return Outcome::answer(internal(&e)),
            }
        }
        let fault = (!applied.is_empty()).then(|| applied.join("+"));
        let (mut response, close) = match terminal {
            None => (Some(self.route(req)), false),
            Some(Action::Respond { status, body }) => (Some(Response::raw(status, body)), false),
            Some(Action::MalformedJson) => (Some(Response::raw(200, faults::MALFORMED_BODY)), false),
            Some(Action::CloseBefore) => (None, true),
            Some(Action::ApplyThenClose) => {
                let _ = self.route(req);
                (None, true)
            }
            Some(Action::ApplyThenRespond { status, body }) => {
                let _ = self.route(req);
                (Some(Response::raw(status, body)), false)
            }
            Some(_) => (Some(self.route(req)), false),
        };
        if no_etag {
            if let Some(r) = response.as_mut() {
                r.etag = None;
            }
        }
        Outcome { response, close, fault }
    }

    /// Route an authenticated request.
    pub fn route(&self, req: &Request) -> Response {
        let method = req.method.as_str();
        let Some(rest) = req.path.strip_prefix("/api/") else { return not_found() };
        let parts: Vec<&str> = rest.split('/').collect();
        let allow = |allowed: &str, handler: &dyn Fn() -> Response| if method == allowed { handler() } else { not_allowed() };
        match parts.as_slice() {
            ["memory"] => allow("POST", &|| self.create(req)),
            ["claim"] => allow("POST", &|| self.claim(req)),
            ["release"] => allow("POST", &|| self.release(req)),
            ["send"] => allow("POST", &|| self.send(req)),
            ["memory", id] => match MemoryId::parse(id) {
                Err(_) => not_found(),
                Ok(id) => match method {
                    "GET" => self.get(id.get()),
                    "PATCH" => self.patch(id.get(), req),
                    _ => not_allowed(),
                },
            },
            ["memory", id, verb] => match (MemoryId::parse(id), *verb) {
                (Ok(id), "correct") => allow("POST", &|| self.correct(id.get(), req)),
                (Ok(id), "fade") => allow("POST", &|| self.fade(id.get(), req)),
                (Ok(id), "relate") => allow("POST", &|| self.relate(id.get(), req)),
                _ => not_found(),
            },
            _ => not_found(),
        }
    }

    fn get(&self, id: u64) -> Response {
        match self.store.memory_with_edges(id) {
            Ok(Some((memory, edges, has_more))) => {
                let text = render::render(&memory, &edges, has_more, &kijito_files::random::hex(3));
                let mut response = Response::json(200, &json!({ "result": text }));
                response.etag = Some(store::etag_of(&memory.content));
                response
            }
            Ok(None) => forbidden(),
            Err(e) => internal(&e),
        }
    }

    fn patch(&self, id: u64, req: &Request) -> Response {
        let parsed = body_object(req).and_then(|obj| {
            only_keys(&obj, &["content", "persona", "scope", "project", "preserve_history"])?;
            let content = string_field(&obj, "content")?;
            persona_field(&obj, "persona")?;
            let scope = word_field(&obj, "scope")?;
            let project = label_field(&obj, "project")?;
            Ok((content, scope, project))
        });
        let (content, scope, project) = match parsed {
            Ok(v) => v,
            Err(r) => return r,
        };
        match self.store.patch(id, &content, &scope, &project, req.header("if-match")) {
            Ok(PatchOutcome::Updated) => Response::json(200, &json!({ "result": render::answer::updated(id) })),
            Ok(PatchOutcome::NotFoundOrForbidden) => forbidden(),
            Ok(PatchOutcome::PreconditionFailed) => {
                Response::error(412, "precondition_failed", "If-Match does not match the current content; nothing written")
            }
            Err(e) => internal(&e),
        }
    }

    fn create(&self, req: &Request) -> Response {
        let parsed = body_object(req).and_then(|obj| {
            only_keys(
                &obj,
                &[
                    "content",
                    "persona",
                    "scope",
                    "project",
                    "type",
                    "importance",
                    "source",
                    "status",
                    "created",
                    "confidence",
                    "evidence",
                    "basis",
                ],
            )?;
            let created_ms = match obj.get("created") {
                None => self.now_ms(),
                Some(v) => v
                    .as_str()
                    .and_then(kijito_protocol::clock::parse_utc_seconds)
                    .ok_or_else(|| bad_request("invalid_created", "created must be \"YYYY-MM-DD HH:MM:SS\" (UTC, from 1970)"))?,
            };
            Ok(NewMemory {
                content: string_field(&obj, "content")?,
                persona: persona_field(&obj, "persona")?,
                scope: word_field(&obj, "scope")?,
                project: label_field(&obj, "project")?,
                kind: optional(&obj, "type", word_field, "note".to_owned())?,
                source: optional(&obj, "source", word_field, "mcp".to_owned())?,
                status: optional(&obj, "status", word_field, "active".to_owned())?,
                basis: optional(&obj, "basis", word_field, "observed".to_owned())?,
                importance: optional(&obj, "importance", unit_field, 0.5)?,
                confidence: optional(&obj, "confidence", unit_field, 1.0)?,
                evidence: optional(&obj, "evidence", count_field, 1)?,
                created_ms,
            })
        });
        let new = match parsed {
            Ok(v) => v,
            Err(r) => return r,
        };
        match self.store.create_memory(&new) {
            Ok(id) => Response::json(200, &json!({ "result": render::answer::created(id), "id": id })),
            Err(e) => internal(&e),
        }
    }

    fn correct(&self, id: u64, req: &Request) -> Response {
        let parsed = body_object(req).and_then(|obj| {
            only_keys(&obj, &["content", "persona"])?;
            let persona = match obj.get("persona") {
                None => None,
                Some(_) => Some(persona_field(&obj, "persona")?),
            };
            Ok((string_field(&obj, "content")?, persona))
        });
        let (content, persona) = match parsed {
            Ok(v) => v,
            Err(r) => return r,
        };
        match self.store.correct(id, &content, persona.as_deref(), self.now_ms()) {
            Ok(Some(new_id)) => Response::json(200, &json!({ "result": render::answer::corrected(id, new_id), "id": new_id })),
            Ok(None) => forbidden(),
            Err(e) => internal(&e),
        }
    }

    fn fade(&self, id: u64, req: &Request) -> Response {
        if let Err(r) = body_object(req).and_then(|obj| Ok(only_keys(&obj, &[])?)) {
            return r;
        }
        match self.store.set_marker(id, Marker::Faded) {
            Ok(true) => Response::json(200, &json!({ "result": render::answer::faded(id) })),
            Ok(false) => forbidden(),
            Err(e) => internal(&e),
        }
    }

    fn relate(&self, id: u64, req: &Request) -> Response {
        let parsed = body_object(req).and_then(|obj| {
            only_keys(&obj, &["to", "kind"])?;
            let to = obj
                .get("to")
                .and_then(Value::as_u64)
                .and_then(|n| MemoryId::new(n).ok())
                .ok_or_else(|| bad_request("invalid_to", "to must be a memory id"))?;
            Ok((to.get(), optional(&obj, "kind", word_field, "relates_to".to_owned())?))
        });
        let (to, kind) = match parsed {
            Ok(v) => v,
            Err(r) => return r,
        };
        match self.store.relate(id, to, &kind) {
            Ok(true) => Response::json(200, &json!({ "result": format!("Related [{id}] -> [{to}]") })),
            Ok(false) => forbidden(),
            Err(e) => internal(&e),
        }
    }

    fn send(&self, req: &Request) -> Response {
        let parsed = body_object(req).and_then(|obj| {
            only_keys(&obj, &["to", "from", "content"])?;
            Ok((label_field(&obj, "to")?, label_field(&obj, "from")?, string_field(&obj, "content")?))
        });
        let (to, from, content) = match parsed {
            Ok(v) => v,
            Err(r) => return r,
        };
        match self.store.send(&to, &from, &content, self.now_ms()) {
            Ok(id) => Response::json(200, &json!({ "result": { "id": id } })),
            Err(e) => internal(&e),
        }
    }

    fn claim(&self, req: &Request) -> Response {
        let parsed = body_object(req).and_then(|obj| {
            only_keys(&obj, &["message_id", "persona", "lease_seconds"])?;
            let message = message_field(&obj)?;
            let persona = persona_field(&obj, "persona")?;
            let lease = obj
                .get("lease_seconds")
                .and_then(Value::as_u64)
                .filter(|s| (MIN_LEASE_SECONDS..=MAX_LEASE_SECONDS).contains(s))
                .ok_or_else(|| bad_request("invalid_lease_seconds", "lease_seconds must be an integer from 10 to 300"))?;
            Ok((message, persona, lease))
        });
        let (message, persona, lease) = match parsed {
            Ok(v) => v,
            Err(r) => return r,
        };
        match self.store.claim(message, &persona, lease, self.now_ms(), self.reap_after_ms) {
            Ok(outcome) => match claim_answer(message, &outcome) {
                Some(answer) => Response::json(200, &answer),
                None => unknown_message(),
            },
            Err(e) => internal(&e),
        }
    }

    fn release(&self, req: &Request) -> Response {
        let parsed = body_object(req).and_then(|obj| {
            only_keys(&obj, &["message_id", "persona"])?;
            Ok((message_field(&obj)?, persona_field(&obj, "persona")?))
        });
        let (message, persona) = match parsed {
            Ok(v) => v,
            Err(r) => return r,
        };
        match self.store.release(message, &persona, self.now_ms(), self.reap_after_ms) {
            Ok(Some(released)) => Response::json(200, &release_answer(message, released)),
            Ok(None) => unknown_message(),
            Err(e) => internal(&e),
        }
    }
}

/// The answer body of a claim (also the `kijito_hive_claim` tool's text);
/// None for an unknown message.
pub fn claim_answer(message: u64, outcome: &ClaimOutcome) -> Option<Value> {
    match outcome {
        ClaimOutcome::Claimed => Some(json!({ "claimed": true, "message_id": message })),
        ClaimOutcome::Refused { reason, claimed_by, lease_expired } => Some(
            json!({ "claimed": false, "message_id": message, "advisory": { "reason": reason.as_str(), "claimed_by": claimed_by, "lease_expired": lease_expired } }),
        ),
        ClaimOutcome::UnknownMessage => None,
    }
}

/// The answer body of a release (also the `kijito_hive_release` tool's text).
pub fn release_answer(message: u64, released: bool) -> Value {
    json!({ "released": released, "message_id": message })
}

fn not_found() -> Response {
    Response::error(404, "not_found", "no such endpoint")
}

fn not_allowed() -> Response {
    Response::error(405, "method_not_allowed", "method not allowed on this endpoint")
}

fn unknown_message() -> Response {
    Response::error(403, "message_not_found_or_forbidden", "message not found or forbidden")
}

type Field<T> = Result<T, Response>;

impl From<Bad> for Response {
    fn from(b: Bad) -> Response {
        bad_request(&b.code, &b.message)
    }
}

/// The request body as a JSON object (an empty body is `{}`).
fn body_object(req: &Request) -> Field<Map<String, Value>> {
    if req.body.is_empty() {
        return Ok(Map::new());
    }
    let media = req.header("content-type").map(|v| v.split(';').next().unwrap_or_default().trim().to_ascii_lowercase());
    if media.as_deref() != Some("application/json") {
        return Err(Response::error(415, "unsupported_media_type", "request bodies must be Content-Type: application/json"));
    }
    match serde_json::from_slice::<Value>(&req.body) {
        Ok(Value::Object(obj)) => Ok(obj),
        Ok(_) => Err(bad_request("body_not_object", "the body must be a JSON object")),
        Err(_) => Err(bad_request("body_not_json", "the body is not valid JSON")),
    }
}
