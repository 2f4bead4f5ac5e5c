//! `kijito-local mcp`: a Model Context Protocol server over stdio (
//! contract in docs/kijito-local.md, "MCP").
//!
//! Transport: JSON-RPC 2.0, one message per line on stdin, one answer per
//! line on stdout (nothing else is ever written there; diagnostics go to
//! stderr). A line longer than [`MAX_LINE_BYTES`] is discarded unread and
//! answered with an `-32600` error naming the bound: nothing is parsed,
//! called or written for it. Notifications (no `id`) are never answered.
//!
//! Store: the same SQLite file as `kijito-local serve`, opened directly
//! ([`Store::open`]: WAL journal, 5 s busy timeout, `synchronous=FULL`), so
//! the agent can curate while no server runs, and both processes can run at
//! once on one database (SQLite serialises writers across processes; every
//! multi-statement write is one IMMEDIATE transaction).
//!
//! Tools carry the hosted service's names and argument shapes; their texts
//! come from [`crate::render`] (the same renderer as `GET /api/memory/{id}`),
//! and their argument rules from [`crate::fields`] (the same as the HTTP API).

use crate::fields::{
    bad, bool_field, count_field, label_field, maybe, memory_id_field, message_field, only_keys, optional, persona_field, string_field,
    unit_field, word_field, Bad, Field,
};
use crate::lease::{MAX_LEASE_SECONDS, MIN_LEASE_SECONDS};
use crate::render::{self, Marker, Memory};
use crate::store::{self, NewMemory, PatchOutcome, Store};
use kijito_protocol::error::{Error, Result};
use kijito_protocol::ids::{AbsPath, SessionId};
use serde_json::{json, Map, Value};
use std::io::{BufRead, Write};

/// Longest accepted line (one JSON-RPC message), newline excluded.
pub const MAX_LINE_BYTES: usize = 1024 * 1024;
/// Protocol revisions this server speaks, newest first. `initialize` answers
/// the client's requested revision when it is one of these, else the newest.
pub const PROTOCOL_VERSIONS: &[&str] = &["2025-11-25", "2025-06-18", "2025-03-26"];
/// Default and bounds of `kijito_recall`'s `limit`.
pub const RECALL_LIMIT: (u64, u64) = (10, 50);
/// Default and bounds of `kijito_recent`'s `limit`.
pub const RECENT_LIMIT: (u64, u64) = (20, 100);
/// Default `kijito_recent` window in hours, and the longest (a year).
pub const RECENT_HOURS: (u64, u64) = (48, 8760);
/// Longest recall query, in characters.
pub const MAX_QUERY_CHARS: usize = 4096;
/// How many memories `kijito_startup` lists in each of its two lists.
pub const STARTUP_LIST: usize = 10;
/// Most corrections `kijito_anchor_audit` lists and follows.
pub const MAX_AUDIT_CHAIN: usize = 64;
/// Longest `long_sleep_after` of `kijito_wake_check`, seconds (ten years).
pub const MAX_LONG_SLEEP_S: u64 = 10 * 366 * 86_400;
/// Default lease of `kijito_hive_claim`, seconds (the hosted default).
pub const DEFAULT_CLAIM_SECONDS: u64 = 60;

/// JSON-RPC error codes.
pub mod rpc {
    pub const PARSE_ERROR: i64 = -32700;
    pub const INVALID_REQUEST: i64 = -32600;
    pub const METHOD_NOT_FOUND: i64 = -32601;
    pub const INVALID_PARAMS: i64 = -32602;
}

/// What the server knows besides the store.
#[derive(Debug, Clone)]
pub struct Options {
    /// The configured current-state pointer: `kijito_update` refuses it.
    pub pointer_id: Option<u64>,
    /// The configured lock message: `kijito_update` refuses that id too.
    pub lock_message_id: Option<u64>,
    /// Default persona of writes and hive calls.
    pub persona: String,
    /// Default project of recall, recent and writes.
    pub project: String,
    /// As `serve --reap-after`, in ms.
    pub reap_after_ms: i64,
    /// `kijito_wake_check`'s default workspace (the server's current directory).
    pub workspace: Option<std::path::PathBuf>,
    /// `kijito_wake_check`'s default data dir (as wake-check resolves it).
    pub data_dir: Option<AbsPath>,
    /// The `live` probe of `kijito_wake_check` (the HTTP client; None: refused).
    pub live: Option<kijito_wake::LiveProbe>,
}

pub struct Mcp {
    store: Store,
    opts: Options,
}

fn wall_ms() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis() as i64).unwrap_or(0)
}

fn rpc_error(id: Value, code: i64, message: impl Into<String>) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "error": { "code": code, "message": message.into() } })
}

fn rpc_result(id: Value, result: Value) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "result": result })
}

/// The answer to a line over [`MAX_LINE_BYTES`].
pub fn too_long_error() -> Value {
    rpc_error(Value::Null, rpc::INVALID_REQUEST, format!("request_too_large: a message is at most {MAX_LINE_BYTES} bytes on one line; this one was discarded unread and nothing was done"))
}

fn tool_text(text: String, is_error: bool) -> Value {
    json!({ "content": [{ "type": "text", "text": text }], "isError": is_error })
}

fn store_failure(e: &Error) -> Bad {
    eprintln!("kijito-local mcp: {e}");
    bad(e.code(), "internal error (see the server's stderr); nothing is known to be written")
}

fn not_found() -> Bad {
    bad("not_found_or_forbidden", "memory not found or forbidden")
}

/// An integer field in `lo..=hi`, or `default` when absent.
fn bounded(obj: &Map<String, Value>, name: &str, (default, hi): (u64, u64), lo: u64) -> Field<u64> {
    match obj.get(name) {
        None => Ok(default),
        Some(v) => v
            .as_u64()
            .filter(|n| (lo..=hi).contains(n))
            .ok_or_else(|| bad("invalid_field", format!("{name} must be an integer from {lo} to {hi}"))),
    }
}

fn args_object(args: &Map<String, Value>, allowed: &[&str]) -> Field<()> {
    only_keys(args, allowed)
}

impl Mcp {
    pub fn new(store: Store, opts: Options) -> Mcp {
        Mcp { store, opts }
    }

    /// Handle one line (without its newline). Returns the answer to write,
    /// or None (a notification, a response, a blank line).
    pub fn handle_line(&self, line: &[u8]) -> Option<Value> {
        if line.iter().all(u8::is_ascii_whitespace) {
            return None;
        }
        let message: Value = match serde_json::from_slice(line) {
            Ok(v) => v,
            Err(e) => return Some(rpc_error(Value::Null, rpc::PARSE_ERROR, format!("parse error: the line is not JSON ({e})"))),
        };
        let Value::Object(obj) = message else {
            let why = if message.is_array() {
                "batches are not supported (protocol 2025-06-18 removed them); send one message per line"
            } else {
                "a message must be a JSON object"
            };
            return Some(rpc_error(Value::Null, rpc::INVALID_REQUEST, why));
        };
        let id = match obj.get("id") {
            None => None,
            Some(v @ (Value::String(_) | Value::Number(_))) => Some(v.clone()),
            Some(_) => return Some(rpc_error(Value::Null, rpc::INVALID_REQUEST, "id must be a string or a number")),
        };
        if obj.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
            return id.map(|id| rpc_error(id, rpc::INVALID_REQUEST, "jsonrpc must be \"2.0\""));
        }
        let Some(method) = obj.get("method").and_then(Value::as_str) else {
            // A response to a request we never send, or garbage: a request
            // (with an id) without a method is invalid; anything else is ignored.
            let is_response = obj.contains_key("result") || obj.contains_key("error");
            return match (id, is_response) {
                (Some(id), false) => Some(rpc_error(id, rpc::INVALID_REQUEST, "method must be a string")),
                _ => None,
            };
        };
        // Notifications (initialized, cancelled, ...) get no answer.
        let id = id?;
        let params = match obj.get("params") {
            None => Map::new(),
            Some(Value::Object(p)) => p.clone(),
            Some(_) => return Some(rpc_error(id, rpc::INVALID_PARAMS, "params must be an object")),
        };
        Some(match method {
            "initialize" => rpc_result(id, self.initialize(&params)),
            "ping" => rpc_result(id, json!({})),
            "tools/list" => rpc_result(id, json!({ "tools": tool_definitions() })),
            "tools/call" => match self.tools_call(&params) {
                Ok(result) => rpc_result(id, result),
                Err(message) => rpc_error(id, rpc::INVALID_PARAMS, message),
            },
            other => rpc_error(id, rpc::METHOD_NOT_FOUND, format!("method not found: {:?}", kijito_protocol::ids::clip(other))),
        })
    }

    fn initialize(&self, params: &Map<String, Value>) -> Value {
        let asked = params.get("protocolVersion").and_then(Value::as_str);
        let version = asked.filter(|v| PROTOCOL_VERSIONS.contains(v)).unwrap_or(PROTOCOL_VERSIONS[0]);
        json!({
            "protocolVersion": version,
            "capabilities": { "tools": { "listChanged": false } },
            "serverInfo": { "name": "kijito-local", "title": "Kijito (kijito-local)", "version": env!("CARGO_PKG_VERSION") },
            "instructions": "Kijito memory on kijito-local (SQLite on this machine). Recall once before writing; kijito_remember one atomic memory only when missing; kijito_correct a false claim; kijito_fade a stale one. kijito_dream is not available here. The current-state pointer changes only through pointer-publish.",
        })
    }

    /// `tools/call`: Err is a protocol error (unknown tool, bad params);
    /// a tool's own failure is a result with `isError: true`.
    fn tools_call(&self, params: &Map<String, Value>) -> std::result::Result<Value, String> {
        let name = params.get("name").and_then(Value::as_str).ok_or("tools/call needs params.name (a string)")?;
        let args = match params.get("arguments") {
            None | Some(Value::Null) => Map::new(),
            Some(Value::Object(a)) => a.clone(),
            Some(_) => return Err("params.arguments must be an object".into()),
        };
        let outcome = match name {
            "kijito_startup" => self.startup(&args),
            "kijito_recall" => self.recall(&args),
            "kijito_get" => self.get(&args),
            "kijito_recent" => self.recent(&args),
            "kijito_remember" => self.remember(&args),
            "kijito_correct" => self.correct(&args),
            "kijito_fade" => self.fade(&args),
            "kijito_update" => self.update(&args),
            "kijito_dream" => self.dream(&args),
            "kijito_anchor_audit" => self.anchor_audit(&args),
            "kijito_wake_check" => self.wake_check(&args),
            "kijito_hive_send" => self.hive_send(&args),
            "kijito_hive_claim" => self.hive_claim(&args),
            "kijito_hive_release" => self.hive_release(&args),
            other => return Err(format!("unknown tool {:?}", kijito_protocol::ids::clip(other))),
        };
        Ok(match outcome {
            Ok(text) => tool_text(text, false),
            Err(b) => tool_text(format!("{}: {}", b.code, b.message), true),
        })
    }

    fn project_arg(&self, args: &Map<String, Value>) -> Field<String> {
        optional(args, "project", label_field, self.opts.project.clone())
    }

    fn persona_arg(&self, args: &Map<String, Value>) -> Field<String> {
        optional(args, "persona", persona_field, self.opts.persona.clone())
    }

    fn startup(&self, args: &Map<String, Value>) -> Field<String> {
        args_object(args, &["persona", "project"])?;
        let persona = self.persona_arg(args)?;
        let project = self.project_arg(args)?;
        let (total, live) = self.store.counts(&project).map_err(|e| store_failure(&e))?;
        let important = self.store.important(&project, STARTUP_LIST).map_err(|e| store_failure(&e))?;
        let since = wall_ms() - (RECENT_HOURS.0 as i64) * 3_600_000;
        let recent = self.store.recent(since, None, Some(&project), STARTUP_LIST).map_err(|e| store_failure(&e))?;
        let mut out = format!("kijito-local startup\nPersona: {persona}\nProject: {project}\nMemories: {total} ({live} live)\n");
        if let Some(p) = self.opts.pointer_id {
            out.push_str(&format!("Current-state pointer: [{p}] (read it in full with kijito_get)\n"));
        }
        if let Some(l) = self.opts.lock_message_id {
            out.push_str(&format!("Lock message: {l}\n"));
        }
        list_section(&mut out, "Most important (live)", &important);
        list_section(&mut out, &format!("Recent (last {} h)", RECENT_HOURS.0), &recent);
        out.push_str("Previews only: read a memory in full with kijito_get.");
        Ok(out)
    }

    fn recall(&self, args: &Map<String, Value>) -> Field<String> {
        args_object(args, &["query", "scope", "project", "full", "limit"])?;
        let query = string_field(args, "query")?;
        if query.chars().count() > MAX_QUERY_CHARS {
            return Err(bad("invalid_field", format!("query must be at most {MAX_QUERY_CHARS} characters")));
        }
        let phrases = store::fts_phrases(&query);
        if phrases.is_empty() {
            return Err(bad("invalid_field", "query must contain a letter or digit"));
        }
        let scope = maybe(args, "scope", word_field)?;
        let project = self.project_arg(args)?;
        let full = optional(args, "full", bool_field, false)?;
        let limit = bounded(args, "limit", RECALL_LIMIT, 1)?;
        let hits = self.store.recall(&phrases, scope.as_deref(), Some(&project), limit as usize).map_err(|e| store_failure(&e))?;
        if hits.is_empty() {
            return Ok(format!("No memories match {query:?} in project {project}."));
        }
        let mut out = format!("{} result(s) for {query:?} in project {project}, best first:\n", hits.len());
        if full {
            for m in &hits {
                out.push('\n');
                out.push_str(&self.full_text(m)?);
                out.push('\n');
            }
            out.pop();
        } else {
            for m in &hits {
                out.push_str(&render::summary(m));
                out.push('\n');
            }
            out.pop();
        }
        Ok(out)
    }

    /// The full rendering of `memory` with its edges (as `kijito_get`).
    fn full_text(&self, memory: &Memory) -> Field<String> {
        match self.store.memory_with_edges(memory.id).map_err(|e| store_failure(&e))? {
            Some((m, edges, more)) => Ok(render::render(&m, &edges, more, &kijito_files::random::hex(3))),
            None => Err(not_found()),
        }
    }

    fn get(&self, args: &Map<String, Value>) -> Field<String> {
        args_object(args, &["id"])?;
        let id = memory_id_field(args, "id")?;
        match self.store.memory_with_edges(id).map_err(|e| store_failure(&e))? {
            Some((m, edges, more)) => Ok(render::render(&m, &edges, more, &kijito_files::random::hex(3))),
            None => Err(not_found()),
        }
    }

    fn recent(&self, args: &Map<String, Value>) -> Field<String> {
        args_object(args, &["hours", "limit", "scope", "project"])?;
        let hours = bounded(args, "hours", RECENT_HOURS, 1)?;
        let limit = bounded(args, "limit", RECENT_LIMIT, 1)?;
        let scope = maybe(args, "scope", word_field)?;
        let project = self.project_arg(args)?;
        let since = wall_ms() - (hours as i64) * 3_600_000;
        let list = self.store.recent(since, scope.as_deref(), Some(&project), limit as usize).map_err(|e| store_failure(&e))?;
        let mut out = String::new();
        list_section(&mut out, &format!("Recent in project {project} (last {hours} h), newest first"), &list);
        Ok(out.trim_end().to_owned())
    }

    fn remember(&self, args: &Map<String, Value>) -> Field<String> {
        args_object(args, &["content", "persona", "project", "scope", "type", "importance", "confidence", "evidence", "basis", "model"])?;
        if args.contains_key("model") {
            string_field(args, "model")?;
        }
        let new = NewMemory {
            content: string_field(args, "content")?,
            persona: self.persona_arg(args)?,
            project: self.project_arg(args)?,
            scope: optional(args, "scope", word_field, "project".to_owned())?,
            kind: optional(args, "type", word_field, "note".to_owned())?,
            source: "mcp".into(),
            status: "active".into(),
            basis: optional(args, "basis", word_field, "observed".to_owned())?,
            importance: optional(args, "importance", unit_field, 0.5)?,
            confidence: optional(args, "confidence", unit_field, 1.0)?,
            evidence: optional(args, "evidence", count_field, 1)?,
            created_ms: wall_ms(),
        };
        if new.content.trim().is_empty() {
            return Err(bad("invalid_field", "content must not be empty"));
        }
        let id = self.store.create_memory(&new).map_err(|e| store_failure(&e))?;
        Ok(render::answer::created(id))
    }

    /// The configured pointer and lock message change only through
    /// pointer-publish: `kijito_update`, `kijito_correct` and `kijito_fade`
    /// refuse them (`pointer_update_refused`), nothing written.
    fn refuse_protected(&self, id: u64) -> Field<()> {
        let what = if Some(id) == self.opts.pointer_id {
            "the configured current-state pointer"
        } else if Some(id) == self.opts.lock_message_id {
            "the configured lock message's id"
        } else {
            return Ok(());
        };
        Err(bad("pointer_update_refused", format!("{id} is {what}: pointer changes go through pointer-publish; nothing was written")))
    }

    fn correct(&self, args: &Map<String, Value>) -> Field<String> {
        args_object(args, &["id", "content", "persona"])?;
        let id = memory_id_field(args, "id")?;
        self.refuse_protected(id)?;
        let content = string_field(args, "content")?;
        let persona = maybe(args, "persona", persona_field)?;
        match self.store.correct(id, &content, persona.as_deref(), wall_ms()).map_err(|e| store_failure(&e))? {
            Some(new_id) => Ok(render::answer::corrected(id, new_id)),
            None => Err(not_found()),
        }
    }

    fn fade(&self, args: &Map<String, Value>) -> Field<String> {
        args_object(args, &["id"])?;
        let id = memory_id_field(args, "id")?;
        self.refuse_protected(id)?;
        if self.store.set_marker(id, Marker::Faded).map_err(|e| store_failure(&e))? {
            Ok(render::answer::faded(id))
        } else {
            Err(not_found())
        }
    }

    fn update(&self, args: &Map<String, Value>) -> Field<String> {
        args_object(args, &["id", "content", "persona", "scope", "project"])?;
        let id = memory_id_field(args, "id")?;
        let content = string_field(args, "content")?;
        maybe(args, "persona", persona_field)?;
        self.refuse_protected(id)?;
        let (scope, project) = match (maybe(args, "scope", word_field)?, maybe(args, "project", label_field)?) {
            (Some(s), Some(p)) => (s, p),
            (s, p) => {
                let current = self.store.memory(id).map_err(|e| store_failure(&e))?.ok_or_else(not_found)?;
                (s.unwrap_or(current.scope), p.unwrap_or(current.project))
            }
        };
        match self.store.patch(id, &content, &scope, &project, None).map_err(|e| store_failure(&e))? {
            PatchOutcome::Updated => Ok(render::answer::updated(id)),
            PatchOutcome::NotFoundOrForbidden | PatchOutcome::PreconditionFailed => Err(not_found()),
        }
    }

    fn dream(&self, args: &Map<String, Value>) -> Field<String> {
        args_object(args, &["persona", "project"])?;
        Err(bad(
            "not_available",
            "kijito_dream is not available on kijito-local: no consolidation runs here and nothing was changed; record the dream as deferred (reason: kijito-local)",
        ))
    }

    /// The deep audit of one anchor (`kijito_wake::anchor`, the rule's one
    /// home): the verifier's classification of its rendering, its marker,
    /// the chain to the latest correction and what it corrects; scarred when
    /// corrected, eroded or faded.
    fn anchor_audit(&self, args: &Map<String, Value>) -> Field<String> {
        args_object(args, &["id"])?;
        let id = memory_id_field(args, "id")?;
        let Some((memory, edges, more)) = self.store.memory_with_edges(id).map_err(|e| store_failure(&e))? else { return Err(not_found()) };
        let text = render::render(&memory, &edges, more, &kijito_files::random::hex(3));
        let memory_id = kijito_protocol::ids::MemoryId::new(id).map_err(|e| bad(e.code(), e.message()))?;
        let (corrected_by, corrects) = self.store.linked(id, "corrects", MAX_AUDIT_CHAIN).map_err(|e| store_failure(&e))?;
        let chain = kijito_wake::anchor::follow_corrections(id, corrected_by.last().copied(), MAX_AUDIT_CHAIN, |step| {
            self.store.linked(step, "corrects", MAX_AUDIT_CHAIN).map(|(by, _)| by.last().copied()).map_err(|e| store_failure(&e))
        })?;
        let record = kijito_wake::anchor::AnchorRecord {
            id: memory_id,
            rendering: &text,
            marker: memory.marker.as_str(),
            status: &memory.status,
            source: &memory.source,
            corrected_by: &corrected_by,
            corrects: &corrects,
        };
        Ok(kijito_wake::anchor::audit(&record, chain).text(&record))
    }

    /// wake-check's verdict, by the same library run as the `wake-check`
    /// CLI (`kijito_wake::cli::options` + `kijito_wake::run`, the degraded
    /// entry included): the session it is bound to, the trust mode and every
    /// finding with its step, then the `kijito.wake-check/v1` report.
    fn wake_check(&self, args: &Map<String, Value>) -> Field<String> {
        args_object(args, &["workspace", "data_dir", "session_id", "long_sleep_after", "live"])?;
        let path = |name: &str| -> Field<Option<AbsPath>> {
            match args.get(name) {
                None => Ok(None),
                Some(Value::String(s)) => AbsPath::parse(s).map(Some).map_err(|e| bad("invalid_field", format!("{name}: {}", e.message()))),
                Some(_) => Err(bad("invalid_field", format!("{name} must be an absolute path"))),
            }
        };
        let workspace = match path("workspace")? {
            Some(w) => w.as_path().to_owned(),
            None => self
                .opts
                .workspace
                .clone()
                .ok_or_else(|| bad("missing_field", "workspace: the server has no current directory; give an absolute workspace"))?,
        };
        let data_dir = path("data_dir")?.or_else(|| self.opts.data_dir.clone());
        let session = match args.get("session_id") {
            None => None,
            Some(Value::String(s)) => Some(SessionId::parse(s).map_err(|e| bad(e.code(), e.message()))?),
            Some(_) => return Err(bad("invalid_field", "session_id must be a string")),
        };
        let long = bounded(args, "long_sleep_after", (kijito_wake::DEFAULT_LONG_SLEEP_S, MAX_LONG_SLEEP_S), 1)?;
        let live = match optional(args, "live", bool_field, false)? {
            false => None,
            true => Some(self.opts.live.ok_or_else(|| bad("not_available", "live is not available in this server"))?),
        };
        let is_live = live.is_some();
        let opts = kijito_wake::cli::options(workspace.clone(), data_dir.clone(), session.clone(), long, live);
        if is_live {
            kijito_wake::cli::live_target(&opts).map_err(|e| bad(e.code(), e.message()))?;
        }
        let (report, entry) = kijito_wake::run(&opts, true).map_err(|e| bad(e.code(), e.message()))?;
        if is_live {
            // The same answer as `wake-check --live`: the wake hold and the journal line.
            kijito_wake::cli::live_answered(&opts, &report);
        }
        let binding = match &session {
            Some(s) => format!("{} (only this session's QA files)", s.as_str()),
            None => "none (every session's QA files; give session_id to bind the check to yours)".to_owned(),
        };
        Ok(format!(
            "wake-check (kijito-local mcp, the checks of the wake-check CLI)\nSession binding: {binding}\nWorkspace: {}\nData dir: {}\nTrust mode: {}\nFindings: {}\n{}Degraded entry: {}\nReport: {}",
            workspace.display(),
            data_dir.as_ref().map(|d| d.as_str().to_owned()).unwrap_or_else(|| "none".into()),
            report.mode.as_str(),
            report.findings.len(),
            report.human(),
            entry.describe(),
            report.to_json(),
        ))
    }

    fn hive_send(&self, args: &Map<String, Value>) -> Field<String> {
        args_object(args, &["to", "content", "persona", "urgent"])?;
        let to = label_field(args, "to")?;
        let content = string_field(args, "content")?;
        let from = self.persona_arg(args)?;
        if args.contains_key("urgent") {
            bool_field(args, "urgent")?;
        }
        let id = self.store.send(&to, &from, &content, wall_ms()).map_err(|e| store_failure(&e))?;
        Ok(json!({ "id": id }).to_string())
    }

    fn hive_claim(&self, args: &Map<String, Value>) -> Field<String> {
        args_object(args, &["message_id", "persona", "lease_seconds"])?;
        let message = message_field(args)?;
        let persona = self.persona_arg(args)?;
        let lease = match args.get("lease_seconds") {
            None => DEFAULT_CLAIM_SECONDS,
            Some(v) => v
                .as_u64()
                .filter(|s| (MIN_LEASE_SECONDS..=MAX_LEASE_SECONDS).contains(s))
                .ok_or_else(|| bad("invalid_lease_seconds", "lease_seconds must be an integer from 10 to 300"))?,
        };
        let outcome = self.store.claim(message, &persona, lease, wall_ms(), self.opts.reap_after_ms).map_err(|e| store_failure(&e))?;
        crate::api::claim_answer(message, &outcome).map(|v| v.to_string()).ok_or_else(unknown_message)
    }

    fn hive_release(&self, args: &Map<String, Value>) -> Field<String> {
        args_object(args, &["message_id", "persona"])?;
        let message = message_field(args)?;
        let persona = self.persona_arg(args)?;
        match self.store.release(message, &persona, wall_ms(), self.opts.reap_after_ms).map_err(|e| store_failure(&e))? {
            Some(released) => Ok(crate::api::release_answer(message, released).to_string()),
            None => Err(unknown_message()),
        }
    }
}

fn unknown_message() -> Bad {
    bad("message_not_found_or_forbidden", "message not found or forbidden")
}

fn list_section(out: &mut String, title: &str, list: &[Memory]) {
    out.push_str(title);
    out.push_str(":\n");
    if list.is_empty() {
        out.push_str("  (none)\n");
    }
    for m in list {
        out.push_str("  ");
        out.push_str(&render::summary(m));
        out.push('\n');
    }
}

fn schema(properties: Value, required: &[&str]) -> Value {
    json!({ "type": "object", "properties": properties, "required": required, "additionalProperties": false })
}

/// The tools, as `tools/list` answers them (JSON Schema 2020-12 input schemas).
pub fn tool_definitions() -> Value {
    let id = json!({ "type": "integer", "minimum": 1, "maximum": 9007199254740991u64, "description": "memory id" });
    let persona = json!({ "type": "string", "description": "persona (default: the configured persona)" });
    let project = json!({ "type": "string", "minLength": 1, "maxLength": 128, "description": "project (default: the configured project)" });
    let word = |what: &str| json!({ "type": "string", "pattern": "^[a-z][a-z0-9_-]{0,63}$", "description": what });
    let unit = |what: &str| json!({ "type": "number", "minimum": 0, "maximum": 1, "description": what });
    let message_id = json!({ "type": "integer", "minimum": 1, "maximum": 9007199254740991u64, "description": "hive message id" });
    let tool = |name: &str, title: &str, description: &str, input: Value, read_only: bool| json!({ "name": name, "title": title, "description": description, "inputSchema": input, "annotations": { "readOnlyHint": read_only, "openWorldHint": false } });
    json!([
        tool("kijito_startup", "Start a session", "Restore identity and broad context: counts, the configured pointer, the most important and the recent memories of the project (previews; read in full with kijito_get).",
            schema(json!({ "persona": persona, "project": project }), &[]), true),
        tool("kijito_recall", "Recall memories", "Ranked full-text search (SQLite FTS5, BM25) over the project's memories. full=true returns each memory's whole rendering; otherwise one summary line each.",
            schema(json!({
                "query": { "type": "string", "minLength": 1, "maxLength": MAX_QUERY_CHARS, "description": "words to search for; each whitespace-separated chunk is a phrase" },
                "scope": word("only memories of this scope (e.g. project); default any"),
                "project": project,
                "full": { "type": "boolean", "default": false, "description": "return full renderings" },
                "limit": { "type": "integer", "minimum": 1, "maximum": RECALL_LIMIT.1, "default": RECALL_LIMIT.0 },
            }), &["query"]), true),
        tool("kijito_get", "Get a memory", "One memory rendered in full (Status:, Source:, the belief line and its lifecycle suffix, edges, fenced content), exactly as GET /api/memory/{id}.",
            schema(json!({ "id": id }), &["id"]), true),
        tool("kijito_recent", "Recent memories", "The newest memories of the project, newest first (summary lines).",
            schema(json!({
                "hours": { "type": "integer", "minimum": 1, "maximum": RECENT_HOURS.1, "default": RECENT_HOURS.0 },
                "limit": { "type": "integer", "minimum": 1, "maximum": RECENT_LIMIT.1, "default": RECENT_LIMIT.0 },
                "scope": word("only memories of this scope; default any"),
                "project": project,
            }), &[]), true),
        tool("kijito_remember", "Remember", "Create one atomic memory (Source: mcp). Recall first; create only what is missing.",
            schema(json!({
                "content": { "type": "string", "minLength": 1, "description": "the memory's text" },
                "persona": persona, "project": project,
                "scope": word("default project"),
                "type": word("default note"),
                "importance": unit("default 0.5"),
                "confidence": unit("default 1"),
                "evidence": { "type": "integer", "minimum": 0, "maximum": 1_000_000_000, "default": 1 },
                "basis": word("observed or derived; default observed"),
                "model": { "type": "string", "description": "the writing model (accepted, not stored on kijito-local)" },
            }), &["content"]), false),
        tool("kijito_correct", "Correct a memory", "Correct a false or outdated memory: a new memory (Source: correction) corrects it, and it is marked eroded (retired). Refused for the configured pointer and lock message.",
            schema(json!({ "id": id, "content": { "type": "string", "description": "the corrected text" }, "persona": persona }), &["id", "content"]), false),
        tool("kijito_fade", "Fade a memory", "Mark an obsolete-but-true memory faded. Refused for the configured pointer and lock message.",
            schema(json!({ "id": id }), &["id"]), false),
        tool("kijito_update", "Update a memory", "Replace a living memory's content in place. Refused for the configured pointer and lock message: pointer changes go through pointer-publish.",
            schema(json!({ "id": id, "content": { "type": "string" }, "persona": persona, "scope": word("must equal the memory's scope; default its own"), "project": project }), &["id", "content"]), false),
        tool("kijito_dream", "Dream (consolidate)", "Not available on kijito-local: always an error result, nothing changes.",
            schema(json!({ "persona": persona, "project": project }), &[]), false),
        tool("kijito_anchor_audit", "Audit an anchor", "The deep audit of one anchor: the verifier's classification of its rendering (current, retired, or unclassified with the code), its marker, what corrected it (the chain to the latest correction) and what it corrects. A corrected, eroded or faded anchor is scarred.",
            schema(json!({ "id": id }), &["id"]), true),
        tool("kijito_wake_check", "Wake check", "After a long sleep or a cold boot: wake-check's verdict by the same checks as the wake-check CLI (latch chain, lock, consent tokens, Silent Witness, QA state, recorded pointer; live=true also verifies the pointer on the server): the session binding, the trust mode (full_trust, cautious, degraded), every finding with its one step, and the kijito.wake-check/v1 report. In degraded mode a trustworthy latch gets its one degraded_mode entry, as with the CLI.",
            schema(json!({
                "workspace": { "type": "string", "description": "absolute path of the workspace holding .memory-latch (default: the server's current directory)" },
                "data_dir": { "type": "string", "description": "absolute QA data dir (default: as wake-check resolves it)" },
                "session_id": { "type": "string", "description": "check only this session's QA files" },
                "long_sleep_after": { "type": "integer", "minimum": 1, "maximum": MAX_LONG_SLEEP_S, "default": kijito_wake::DEFAULT_LONG_SLEEP_S },
                "live": { "type": "boolean", "default": false, "description": "also verify the recorded pointer against the server" },
            }), &[]), false),
        tool("kijito_hive_send", "Send a hive message", "Send a message (e.g. create the lock message); answers {\"id\":N}.",
            schema(json!({ "to": { "type": "string", "minLength": 1, "maxLength": 128 }, "content": { "type": "string" }, "persona": persona, "urgent": { "type": "boolean" } }), &["to", "content"]), false),
        tool("kijito_hive_claim", "Claim a hive message", "Claim a message lease (the pointer lock); answers as POST /api/claim.",
            schema(json!({ "message_id": message_id, "persona": persona, "lease_seconds": { "type": "integer", "minimum": MIN_LEASE_SECONDS, "maximum": MAX_LEASE_SECONDS, "default": DEFAULT_CLAIM_SECONDS } }), &["message_id"]), false),
        tool("kijito_hive_release", "Release a hive message", "Release a lease you hold; answers as POST /api/release.",
            schema(json!({ "message_id": message_id, "persona": persona }), &["message_id"]), false),
    ])
}

/// Read one line of at most [`MAX_LINE_BYTES`] (newline excluded).
/// Ok(None) at end of input; Ok(Some(Err(()))) for an over-long line, which
/// is consumed through its newline without being kept.
fn read_line(input: &mut dyn BufRead, line: &mut Vec<u8>) -> std::io::Result<Option<std::result::Result<(), ()>>> {
    line.clear();
    let mut too_long = false;
    let mut any = false;
    loop {
        let buf = match input.fill_buf() {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if buf.is_empty() {
            return Ok(if !any {
                None
            } else if too_long {
                Some(Err(()))
            } else {
                Some(Ok(()))
            });
        }
        any = true;
        let (chunk, done) = match buf.iter().position(|b| *b == b'\n') {
            Some(i) => (&buf[..i], Some(i + 1)),
            None => (buf, None),
        };
        if !too_long {
            if line.len() + chunk.len() > MAX_LINE_BYTES {
                too_long = true;
                line.clear();
                line.shrink_to(64 * 1024);
            } else {
                line.extend_from_slice(chunk);
            }
        }
        let used = done.unwrap_or(buf.len());
        input.consume(used);
        if done.is_some() {
            if line.last() == Some(&b'\r') {
                line.pop();
            }
            return Ok(Some(if too_long { Err(()) } else { Ok(()) }));
        }
    }
}

/// Serve until end of input: one answer line per request, flushed.
pub fn serve(mcp: &Mcp, input: &mut dyn BufRead, output: &mut dyn Write) -> Result<()> {
    let io = |e: std::io::Error| Error::new(kijito_protocol::codes::cli::INVALID_ARGUMENT, format!("stdio failed: {e}"));
    let mut line = Vec::with_capacity(4096);
    while let Some(read) = read_line(input, &mut line).map_err(io)? {
        let answer = match read {
            Ok(()) => mcp.handle_line(&line),
            Err(()) => Some(too_long_error()),
        };
        if let Some(answer) = answer {
            let mut bytes = serde_json::to_vec(&answer).map_err(|e| Error::new(store::codes::FAILED, e.to_string()))?;
            bytes.push(b'\n');
            match output.write_all(&bytes).and_then(|_| output.flush()) {
                Ok(()) => {}
                // The client went away: nothing more to say.
                Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => return Ok(()),
                Err(e) => return Err(io(e)),
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_bounded_and_split() {
        let big = vec![b'x'; MAX_LINE_BYTES + 10];
        let mut data = b"one\r\n".to_vec();
        data.extend_from_slice(&big);
        data.extend_from_slice(b"\ntwo\nlast");
        let mut input = std::io::BufReader::with_capacity(4096, &data[..]);
        let mut line = Vec::new();
        assert_eq!(read_line(&mut input, &mut line).unwrap(), Some(Ok(())));
        assert_eq!(line, b"one");
        assert_eq!(read_line(&mut input, &mut line).unwrap(), Some(Err(())));
        assert!(line.is_empty());
        assert_eq!(read_line(&mut input, &mut line).unwrap(), Some(Ok(())));
        assert_eq!(line, b"two");
        assert_eq!(read_line(&mut input, &mut line).unwrap(), Some(Ok(())));
        assert_eq!(line, b"last");
        assert_eq!(read_line(&mut input, &mut line).unwrap(), None);
        let exact = vec![b'y'; MAX_LINE_BYTES];
        let mut input = std::io::BufReader::new(&exact[..]);
        assert_eq!(read_line(&mut input, &mut line).unwrap(), Some(Ok(())));
        assert_eq!(line.len(), MAX_LINE_BYTES);
    }

    #[test]
    fn every_tool_schema_is_a_closed_object() {
        let tools = tool_definitions();
        let tools = tools.as_array().unwrap();
        assert_eq!(tools.len(), 14);
        for t in tools {
            let s = &t["inputSchema"];
            assert_eq!(s["type"], "object", "{}", t["name"]);
            assert_eq!(s["additionalProperties"], false, "{}", t["name"]);
            for r in s["required"].as_array().unwrap() {
                assert!(s["properties"].get(r.as_str().unwrap()).is_some(), "{} requires an undeclared {r}", t["name"]);
            }
        }
    }
}
