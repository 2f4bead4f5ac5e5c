//! Compaction triggers (docs/protocol.md §9): the pin that names the one
//! adapter allowed to make the host compact a session, the turn state the
//! hooks record, and the one compaction request per pass.
//!
//! Files in `<data-dir>/qa/` (0600, never symlinks, bounded):
//!
//! | file | written by | meaning |
//! |---|---|---|
//! | `compact-pin.<s>.json` | SessionStart hook | which adapter owns the session (tmux pane or app-server adapter) |
//! | `compact-turn.<s>.json` | UserPromptSubmit / Stop hooks | whether a turn is running |
//! | `compact-request.<s>.json` | `kijito-compact request`, then the adapter | the request for this pass and its state |
//!
//! The kill switch is `<data-dir>/compact-disabled`: while it exists no
//! adapter sends anything.

use kijito_files::private;
use kijito_gate::state::read_optional;
use kijito_gate::{has_keys, is_hex32, QaDir};
use kijito_protocol::error::{Error, Result};
use kijito_protocol::ids::{AbsPath, SessionId};
use serde_json::{json, Map, Value};
use std::path::PathBuf;

/// Stable codes of this module (registered in the workspace by `tests/it/architecture.rs`).
pub mod codes {
    kijito_protocol::codes! {
        NO_SAFE_TRIGGER NoSafeTrigger = "no_safe_trigger",
        REQUEST_EXISTS RequestExists = "request_exists",
        PIN_INVALID PinInvalid = "pin_invalid",
        TURN_INVALID TurnInvalid = "turn_invalid",
        REQUEST_INVALID RequestInvalid = "request_invalid",
        NO_REQUEST NoRequest = "no_request",
        REQUEST_SUPERSEDED RequestSuperseded = "request_superseded",
    }
}

/// The name of the kill-switch file in the data dir.
pub const KILL_SWITCH: &str = "compact-disabled";

/// The kill switch of a data dir: while this path exists (any type), every
/// adapter refuses to send.
pub fn kill_switch(data_dir: &AbsPath) -> PathBuf {
    data_dir.as_path().join(KILL_SWITCH)
}

/// Whether the kill switch is present (a symlink counts as present).
pub fn kill_switch_on(data_dir: &AbsPath) -> bool {
    std::fs::symlink_metadata(kill_switch(data_dir)).is_ok()
}

fn bad(code: codes::Code, what: &str) -> Error {
    Error::new(code, format!("{what} is not valid"))
}

fn get_str<'a>(o: &'a Map<String, Value>, k: &str) -> Option<&'a str> {
    o.get(k).and_then(Value::as_str)
}

fn get_u64(o: &Map<String, Value>, k: &str) -> Option<u64> {
    o.get(k).and_then(Value::as_u64)
}

/// A tmux pane id: `%` followed by 1 to 9 digits.
pub fn is_pane_id(s: &str) -> bool {
    s.len() >= 2 && s.len() <= 10 && s.starts_with('%') && s[1..].bytes().all(|b| b.is_ascii_digit())
}

/// A recorded tmux executable: an absolute path whose file name is `tmux`
/// (whether the file is safe to run is checked again where it is run).
pub fn is_tmux_program(p: &str) -> bool {
    p.starts_with('/') && p.len() <= 4096 && std::path::Path::new(p).file_name().is_some_and(|n| n == "tmux")
}

/// An adapter id: 32 lowercase hex.
pub fn is_adapter_id(s: &str) -> bool {
    is_hex32(s)
}

/// The adapters by kind: the `via` of pins and requests. The one place an
/// adapter's name is spelled ([`ViaKind::as_str`]) and read back
/// ([`ViaKind::parse`]); everything else matches the enum, so a new adapter
/// is one arm here and in [`Via`], and the compiler names every match that
/// must say what it does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ViaKind {
    /// A CLI host in a tmux pane (the tmux worker types `/compact`).
    Tmux,
    /// A Codex app-server run by `kijito-compact codex`.
    CodexAppServer,
}

impl ViaKind {
    pub const ALL: [ViaKind; 2] = [ViaKind::Tmux, ViaKind::CodexAppServer];

    /// The name in the files and lines (`tmux`, `codex-app-server`).
    pub fn as_str(self) -> &'static str {
        match self {
            ViaKind::Tmux => "tmux",
            ViaKind::CodexAppServer => "codex-app-server",
        }
    }

    /// The kind named `name`, if any.
    pub fn parse(name: &str) -> Option<ViaKind> {
        ViaKind::ALL.into_iter().find(|k| k.as_str() == name)
    }

    /// What the adapter does once asked (the hooks' commands text).
    pub fn what_it_does(self) -> &'static str {
        match self {
            ViaKind::Tmux => "this session's tmux pane is pinned: the adapter types /compact there once the turn has ended",
            ViaKind::CodexAppServer => {
                "this session runs under `kijito-compact codex`: the adapter compacts the thread once the turn has ended"
            }
        }
    }
}

/// Which adapter owns a session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Via {
    /// A CLI host in a tmux pane: the pane, its tmux server socket, the host
    /// process (pid and its start time in clock ticks since boot, so a
    /// reused pid is told apart), and the tmux executable the hook resolved
    /// on its PATH at pin time (`None` in pins written before it was
    /// recorded: then `tmux` on the worker's PATH).
    Tmux { socket: AbsPath, pane: String, host_pid: u32, host_start: u64, tmux: Option<AbsPath> },
    /// A Codex app-server run by `kijito-compact codex`: the adapter's id and
    /// its private control socket.
    CodexAppServer { adapter_id: String, socket: AbsPath },
}

impl Via {
    pub fn kind(&self) -> ViaKind {
        match self {
            Via::Tmux { .. } => ViaKind::Tmux,
            Via::CodexAppServer { .. } => ViaKind::CodexAppServer,
        }
    }

    /// [`ViaKind::as_str`] of this adapter.
    pub fn name(&self) -> &'static str {
        self.kind().as_str()
    }
}

/// `compact-pin.<s>.json`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pin {
    pub session_id: SessionId,
    pub via: Via,
    pub pinned_at_ms: i64,
}

const PIN_KEYS: &[&str] = &["schemaVersion", "sessionId", "via", "pinnedAtMs", "target"];

impl Pin {
    pub fn to_value(&self) -> Value {
        let target = match &self.via {
            Via::Tmux { socket, pane, host_pid, host_start, tmux } => {
                let mut t = json!({"socket": socket.as_str(), "pane": pane, "hostPid": host_pid, "hostStart": host_start});
                if let Some(program) = tmux {
                    t["tmux"] = json!(program.as_str());
                }
                t
            }
            Via::CodexAppServer { adapter_id, socket } => json!({"adapterId": adapter_id, "socket": socket.as_str()}),
        };
        json!({
            "schemaVersion": 1,
            "sessionId": self.session_id.as_str(),
            "via": self.via.name(),
            "pinnedAtMs": self.pinned_at_ms,
            "target": target,
        })
    }

    pub fn parse(bytes: &[u8]) -> Result<Pin> {
        let err = || bad(codes::PIN_INVALID, "the pin");
        let v: Value = serde_json::from_slice(bytes).map_err(|_| err())?;
        let o = v.as_object().filter(|o| has_keys(o, PIN_KEYS)).ok_or_else(err)?;
        if o["schemaVersion"] != 1 {
            return Err(err());
        }
        let session_id = SessionId::parse(get_str(o, "sessionId").ok_or_else(err)?).map_err(|_| err())?;
        let pinned_at_ms = o["pinnedAtMs"].as_i64().filter(|t| *t >= 0).ok_or_else(err)?;
        let t = o["target"].as_object().ok_or_else(err)?;
        let via = match get_str(o, "via").and_then(ViaKind::parse).ok_or_else(err)? {
            ViaKind::Tmux
                if has_keys(t, &["socket", "pane", "hostPid", "hostStart"])
                    || has_keys(t, &["socket", "pane", "hostPid", "hostStart", "tmux"]) =>
            {
                let socket = AbsPath::parse(get_str(t, "socket").ok_or_else(err)?).map_err(|_| err())?;
                let pane = get_str(t, "pane").filter(|p| is_pane_id(p)).ok_or_else(err)?.to_owned();
                let host_pid = get_u64(t, "hostPid").filter(|p| *p > 1 && *p <= u32::MAX as u64).ok_or_else(err)? as u32;
                let host_start = get_u64(t, "hostStart").ok_or_else(err)?;
                let tmux = match t.get("tmux") {
                    None => None,
                    Some(v) => Some(v.as_str().filter(|p| is_tmux_program(p)).and_then(|p| AbsPath::parse(p).ok()).ok_or_else(err)?),
                };
                Via::Tmux { socket, pane, host_pid, host_start, tmux }
            }
            ViaKind::CodexAppServer if has_keys(t, &["adapterId", "socket"]) => {
                let adapter_id = get_str(t, "adapterId").filter(|a| is_adapter_id(a)).ok_or_else(err)?.to_owned();
                let socket = AbsPath::parse(get_str(t, "socket").ok_or_else(err)?).map_err(|_| err())?;
                Via::CodexAppServer { adapter_id, socket }
            }
            _ => return Err(err()),
        };
        Ok(Pin { session_id, via, pinned_at_ms })
    }
}

/// Write (or replace) the pin of a session.
pub fn write_pin(qa: &QaDir, pin: &Pin) -> Result<()> {
    private::write_atomic(&qa.pin(&pin.session_id), format!("{}\n", pin.to_value()).as_bytes())
}

/// The pin of a session, if any. A pin for another session id (a copied
/// file) is invalid.
pub fn read_pin(qa: &QaDir, s: &SessionId) -> Result<Option<Pin>> {
    let Some(bytes) = read_optional(&qa.pin(s))? else { return Ok(None) };
    let pin = Pin::parse(&bytes)?;
    if &pin.session_id != s {
        return Err(bad(codes::PIN_INVALID, "the pin (another session's)"));
    }
    Ok(Some(pin))
}

/// Which adapter the pin of a session names, if any: a light read for the hooks' text (the adapter reads the whole pin
/// with [`read_pin`] and checks its target before each send). A pin of
/// another session or with an unknown `via` is invalid.
pub fn pinned_via(qa: &QaDir, s: &SessionId) -> Result<Option<ViaKind>> {
    let Some(bytes) = read_optional(&qa.pin(s))? else { return Ok(None) };
    let v: Value = serde_json::from_slice(&bytes).map_err(|_| bad(codes::PIN_INVALID, "the pin"))?;
    if v["schemaVersion"] != 1 || v["sessionId"].as_str() != Some(s.as_str()) {
        return Err(bad(codes::PIN_INVALID, "the pin"));
    }
    v["via"].as_str().and_then(ViaKind::parse).map(Some).ok_or_else(|| bad(codes::PIN_INVALID, "the pin"))
}

/// Remove the pin of a session (SessionEnd, or a subagent never pinned).
pub fn remove_pin(qa: &QaDir, s: &SessionId) -> Result<bool> {
    private::remove_owned(&qa.pin(s))
}

/// Whether a turn is running, as the hooks last recorded it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TurnState {
    /// UserPromptSubmit fired and no Stop yet.
    Running,
    /// Stop fired after the last UserPromptSubmit.
    Ended,
}

/// `compact-turn.<s>.json`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Turn {
    pub session_id: SessionId,
    pub state: TurnState,
    pub at_ms: i64,
    /// When the turn began (its UserPromptSubmit; `atMs` of a `running`
    /// record, carried into the `ended` one by [`record_turn`]). `None`: not
    /// known (no `running` record before this Stop, or a record written
    /// before the field existed). The tmux worker's keystroke rule counts the
    /// user's keys from here (docs/adapters.md).
    pub started_at_ms: Option<i64>,
}

const TURN_KEYS: &[&str] = &["schemaVersion", "sessionId", "state", "atMs", "startedAtMs"];
/// The keys of a turn record written before `startedAtMs` existed (still read).
const TURN_KEYS_V0: &[&str] = &["schemaVersion", "sessionId", "state", "atMs"];

impl Turn {
    pub fn to_value(&self) -> Value {
        let state = match self.state {
            TurnState::Running => "running",
            TurnState::Ended => "ended",
        };
        json!({"schemaVersion": 1, "sessionId": self.session_id.as_str(), "state": state, "atMs": self.at_ms, "startedAtMs": self.started_at_ms})
    }

    pub fn parse(bytes: &[u8]) -> Result<Turn> {
        let err = || bad(codes::TURN_INVALID, "the turn record");
        let v: Value = serde_json::from_slice(bytes).map_err(|_| err())?;
        let o = v.as_object().filter(|o| has_keys(o, TURN_KEYS) || has_keys(o, TURN_KEYS_V0)).ok_or_else(err)?;
        if o["schemaVersion"] != 1 {
            return Err(err());
        }
        let session_id = SessionId::parse(get_str(o, "sessionId").ok_or_else(err)?).map_err(|_| err())?;
        let state = match get_str(o, "state") {
            Some("running") => TurnState::Running,
            Some("ended") => TurnState::Ended,
            _ => return Err(err()),
        };
        let at_ms = o["atMs"].as_i64().filter(|t| *t >= 0).ok_or_else(err)?;
        // `startedAtMs`: absent (old record), null, or a time not after `atMs`.
        let started_at_ms = match o.get("startedAtMs") {
            None | Some(Value::Null) => None,
            Some(v) => Some(v.as_i64().filter(|t| (0..=at_ms).contains(t)).ok_or_else(err)?),
        };
        Ok(Turn { session_id, state, at_ms, started_at_ms })
    }
}

/// Record a turn start (UserPromptSubmit) or end (Stop). A start records its
/// own time as `startedAtMs`; an end carries `startedAtMs` over from the
/// session's previous record (null when there is none, or it is unreadable).
pub fn record_turn(qa: &QaDir, s: &SessionId, state: TurnState, now_ms: i64) -> Result<()> {
    let started_at_ms = match state {
        TurnState::Running => Some(now_ms),
        TurnState::Ended => read_turn(qa, s).ok().flatten().and_then(|t| t.started_at_ms).filter(|t| *t <= now_ms),
    };
    let t = Turn { session_id: s.clone(), state, at_ms: now_ms, started_at_ms };
    private::write_atomic(&qa.turn(s), format!("{}\n", t.to_value()).as_bytes())
}

/// The last recorded turn state of a session, if any.
pub fn read_turn(qa: &QaDir, s: &SessionId) -> Result<Option<Turn>> {
    let Some(bytes) = read_optional(&qa.turn(s))? else { return Ok(None) };
    let t = Turn::parse(&bytes)?;
    if &t.session_id != s {
        return Err(bad(codes::TURN_INVALID, "the turn record (another session's)"));
    }
    Ok(Some(t))
}

/// The state of a compaction request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RequestState {
    /// Recorded; nothing sent yet (waiting for the turn to end).
    Pending,
    /// The adapter asked the host to compact.
    Sent,
    /// The claim record of this pass's compaction was found.
    Compacted { attested: bool, reason: String },
    /// The adapter gave up without sending, or the host refused.
    Failed { code: String },
    /// Sent, but no claim record within the bound.
    TimedOut,
}

impl RequestState {
    pub fn name(&self) -> &'static str {
        match self {
            RequestState::Pending => "pending",
            RequestState::Sent => "sent",
            RequestState::Compacted { .. } => "compacted",
            RequestState::Failed { .. } => "failed",
            RequestState::TimedOut => "timed_out",
        }
    }

    /// No adapter will change this state again.
    pub fn is_final(&self) -> bool {
        matches!(self, RequestState::Compacted { .. } | RequestState::Failed { .. } | RequestState::TimedOut)
    }
}

/// `compact-request.<s>.json`: one per pass (bound by the pass's nonce).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    pub session_id: SessionId,
    pub via: ViaKind,
    pub nonce: String,
    pub requested_at_ms: i64,
    pub updated_at_ms: i64,
    pub state: RequestState,
    /// Set when a failure invalidated a promoted, unclaimed ticket.
    pub ticket_invalidated: bool,
    /// The `reason` of a `pending` request (why the adapter still waits,
    /// e.g. `user_typed`) or of a `failed` one (what was left behind, e.g.
    /// `compact_left_in_composer`); `None` otherwise. A `compacted`
    /// request's `reason` is the claim's, in its state.
    pub note: Option<String>,
}

const REQUEST_KEYS: &[&str] = &[
    "schemaVersion",
    "sessionId",
    "via",
    "nonce",
    "requestedAtMs",
    "updatedAtMs",
    "state",
    "attested",
    "reason",
    "code",
    "ticketInvalidated",
];

impl Request {
    pub fn to_value(&self) -> Value {
        let (attested, reason, code) = match &self.state {
            RequestState::Compacted { attested, reason } => (json!(attested), json!(reason), Value::Null),
            RequestState::Failed { code } => (Value::Null, json!(self.note), json!(code)),
            RequestState::Pending => (Value::Null, json!(self.note), Value::Null),
            _ => (Value::Null, Value::Null, Value::Null),
        };
        json!({
            "schemaVersion": 1,
            "sessionId": self.session_id.as_str(),
            "via": self.via.as_str(),
            "nonce": self.nonce,
            "requestedAtMs": self.requested_at_ms,
            "updatedAtMs": self.updated_at_ms,
            "state": self.state.name(),
            "attested": attested,
            "reason": reason,
            "code": code,
            "ticketInvalidated": self.ticket_invalidated,
        })
    }

    pub fn parse(bytes: &[u8]) -> Result<Request> {
        let err = || bad(codes::REQUEST_INVALID, "the compaction request");
        let v: Value = serde_json::from_slice(bytes).map_err(|_| err())?;
        let o = v.as_object().filter(|o| has_keys(o, REQUEST_KEYS)).ok_or_else(err)?;
        if o["schemaVersion"] != 1 {
            return Err(err());
        }
        let session_id = SessionId::parse(get_str(o, "sessionId").ok_or_else(err)?).map_err(|_| err())?;
        let via = get_str(o, "via").and_then(ViaKind::parse).ok_or_else(err)?;
        let nonce = get_str(o, "nonce").filter(|n| is_hex32(n)).ok_or_else(err)?.to_owned();
        let requested_at_ms = o["requestedAtMs"].as_i64().filter(|t| *t >= 0).ok_or_else(err)?;
        let updated_at_ms = o["updatedAtMs"].as_i64().filter(|t| *t >= requested_at_ms).ok_or_else(err)?;
        let short = |k: &str| {
            get_str(o, k)
                .filter(|s| !s.is_empty() && s.len() <= 64 && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-'))
        };
        let state = match get_str(o, "state") {
            Some("pending") => RequestState::Pending,
            Some("sent") => RequestState::Sent,
            Some("compacted") => RequestState::Compacted {
                attested: o["attested"].as_bool().ok_or_else(err)?,
                reason: short("reason").ok_or_else(err)?.to_owned(),
            },
            Some("failed") => RequestState::Failed { code: short("code").ok_or_else(err)?.to_owned() },
            Some("timed_out") => RequestState::TimedOut,
            _ => return Err(err()),
        };
        let ticket_invalidated = o["ticketInvalidated"].as_bool().ok_or_else(err)?;
        let note = match (&state, &o["reason"]) {
            (RequestState::Pending | RequestState::Failed { .. }, Value::Null) => None,
            (RequestState::Pending | RequestState::Failed { .. }, _) => Some(short("reason").ok_or_else(err)?.to_owned()),
            _ => None,
        };
        Ok(Request { session_id, via, nonce, requested_at_ms, updated_at_ms, state, ticket_invalidated, note })
    }
}

/// The compaction request of a session, if any (read-only).
pub fn read_request(qa: &QaDir, s: &SessionId) -> Result<Option<Request>> {
    let Some(bytes) = read_optional(&qa.request(s))? else { return Ok(None) };
    let r = Request::parse(&bytes)?;
    if &r.session_id != s {
        return Err(bad(codes::REQUEST_INVALID, "the compaction request (another session's)"));
    }
    Ok(Some(r))
}

/// Replace the request file (the adapter's state transitions).
pub fn write_request(qa: &QaDir, r: &Request) -> Result<()> {
    let path = qa.request(&r.session_id);
    // a killed earlier write's temp file, once older than any live write
    // (docs/protocol.md §7, "Crash recovery"), goes with this one
    private::write_atomic_unlocked(&path, format!("{}\n", r.to_value()).as_bytes())?;
    kijito_files::journal::event(qa.path().parent(), &r.session_id, journal_kind(&r.state), request_fields(r));
    Ok(())
}

/// The flight recorder's kind for a request state (docs/protocol.md §13):
/// a new request is `compaction_requested`, every later state `compaction_triggered`.
fn journal_kind(state: &RequestState) -> kijito_files::journal::Kind {
    match state {
        RequestState::Pending => kijito_files::journal::Kind::CompactionRequested,
        _ => kijito_files::journal::Kind::CompactionTriggered,
    }
}

/// A request's journal fields: the adapter, the state and its outcome keys.
fn request_fields(r: &Request) -> Value {
    let v = r.to_value();
    json!({"via": r.via.as_str(), "state": r.state.name(), "attested": v["attested"], "reason": v["reason"], "code": v["code"]})
}

/// Fail the session's request for the pass `nonce` with `code` when it is
/// still `pending` or `sent` (the UserPromptSubmit hook, when a new turn
/// withdraws that pass). Only `state`, `code` and `updatedAtMs` change, in
/// place: every other key, its value and the key order stay as the adapter
/// wrote them (the hook binary links no second request writer).
pub fn fail_pending(
    qa: &QaDir,
    s: &SessionId,
    nonce: &str,
    code: impl Into<kijito_protocol::error::ErrorCode>,
    now_ms: i64,
) -> Result<bool> {
    let Some(r) = read_request(qa, s)? else { return Ok(false) };
    if r.nonce != nonce || r.state.is_final() {
        return Ok(false);
    }
    let Some(bytes) = read_optional(&qa.request(s))? else { return Ok(false) };
    let mut v: Value = serde_json::from_slice(&bytes).map_err(|_| bad(codes::REQUEST_INVALID, "the compaction request"))?;
    if let Some(o) = v.as_object_mut() {
        // `insert` keeps an existing key where it is (preserve_order).
        o.insert("state".into(), json!("failed"));
        o.insert("code".into(), json!(code.into()));
        o.insert("updatedAtMs".into(), json!(now_ms.max(r.requested_at_ms)));
    }
    let text = format!("{v}\n");
    Request::parse(text.as_bytes())?;
    private::write_atomic(&qa.request(s), text.as_bytes())?;
    Ok(true)
}

/// UserPromptSubmit's new turn: [`kijito_gate::withdraw::new_turn`] with
/// this module's part of it, a pending or sent request for the withdrawn
/// pass failed in place with `pass_invalidated_by_new_turn` ([`fail_pending`]).
pub fn new_turn(qa: &QaDir, s: &SessionId, now_ms: i64) -> Result<Option<kijito_gate::withdraw::Withdrawn>> {
    let withdrawn = kijito_gate::pass::codes::PASS_WITHDRAWN;
    kijito_gate::withdraw::new_turn(qa, s, now_ms, &|nonce| fail_pending(qa, s, nonce, withdrawn, now_ms).unwrap_or(false))
}

/// `kijito-compact request`: requires a valid, unconsumed pass and a pin for
/// the session; records one request per pass (a second request for the same
/// pass's nonce is `request_exists`). Returns the request and the pin.
pub fn create_request(qa: &QaDir, s: &SessionId, now_ms: i64) -> Result<(Request, Pin)> {
    let pass_bytes = match read_optional(&qa.pass(s))? {
        Some(b) => b,
        None if kijito_gate::withdraw::was_withdrawn(qa, s) => return Err(withdrawn_error()),
        None => {
            return Err(Error::new(
                kijito_gate::pass::codes::PASS_MISSING,
                "no recorded QA pass for this session: run the QA cycle and `qa-gate record` first",
            ))
        }
    };
    let pass = kijito_gate::Pass::parse(&pass_bytes)?;
    pass.check_age(s, now_ms)?;
    kijito_gate::withdraw::check_unspent(qa, s, &pass.compaction_nonce)?;
    let pin = read_pin(qa, s)?.ok_or_else(|| {
        Error::new(
            codes::NO_SAFE_TRIGGER,
            "no adapter owns this session (not in a pinned tmux pane, not under `kijito-compact codex`): ask the user to run /compact now",
        )
    })?;
    if let Some(old) = read_request(qa, s)? {
        if old.nonce == pass.compaction_nonce {
            return Err(Error::new(
                codes::REQUEST_EXISTS,
                format!("compaction was already requested for this pass (state {})", old.state.name()),
            ));
        }
    }
    let r = Request {
        session_id: s.clone(),
        via: pin.via.kind(),
        nonce: pass.compaction_nonce.clone(),
        requested_at_ms: now_ms,
        updated_at_ms: now_ms,
        state: RequestState::Pending,
        ticket_invalidated: false,
        note: None,
    };
    write_request(qa, &r)?;
    Ok((r, pin))
}

/// Whether the pass this request was made for is still waiting and valid
/// (same nonce, not expired). `Err` carries the refusal code: `pass_missing`
/// when the pass is gone (consumed or withdrawn), `request_superseded` when
/// a newer pass replaced it, or the pass's own age/session code.
pub fn pass_still_valid(qa: &QaDir, r: &Request, now_ms: i64) -> Result<()> {
    let Some(bytes) = read_optional(&qa.pass(&r.session_id))? else {
        if kijito_gate::withdraw::was_withdrawn(qa, &r.session_id) {
            return Err(withdrawn_error());
        }
        return Err(Error::new(kijito_gate::pass::codes::PASS_MISSING, "the pass of this request is gone (consumed or withdrawn)"));
    };
    let pass = kijito_gate::Pass::parse(&bytes)?;
    if pass.compaction_nonce != r.nonce {
        return Err(Error::new(codes::REQUEST_SUPERSEDED, "a newer QA pass replaced the one this request was made for"));
    }
    pass.check_age(&r.session_id, now_ms)?;
    kijito_gate::withdraw::check_unspent(qa, &r.session_id, &pass.compaction_nonce)
}

/// The refusal when the session's last pass was withdrawn by a new turn.
fn withdrawn_error() -> Error {
    Error::new(
        kijito_gate::pass::codes::PASS_WITHDRAWN,
        "a new turn began after `qa-gate record`, so that pass was withdrawn: run the QA cycle again (two cold boots, record) in the turn that requests the compaction",
    )
}

/// The one stdout line of a successful `kijito-compact request`.
pub fn requested_line(r: &Request) -> String {
    json!({"type": "kijito.compaction.requested", "sessionId": r.session_id.as_str(), "via": r.via.as_str(), "nonce": r.nonce}).to_string()
}

/// The claim record of this request's compaction, if the host compacted and
/// PostCompact (or SessionStart(compact)) claimed: the claimed attempt with
/// the request's nonce, or an unattested claimed attempt recorded after the
/// request.
pub fn claim_for(qa: &QaDir, r: &Request) -> Result<Option<kijito_gate::Attempt>> {
    let Some(bytes) = read_optional(&qa.attempt_claimed(&r.session_id))? else { return Ok(None) };
    let a = kijito_gate::Attempt::parse(&bytes)?;
    let ours = a.session_id == r.session_id
        && (a.compaction_nonce.as_deref() == Some(r.nonce.as_str()) || (!a.attested && a.recorded_at_ms >= r.requested_at_ms));
    Ok(ours.then_some(a))
}

/// Move a request to a final failure state. When a ticket was promoted for
/// this pass but never claimed, invalidate the session's QA state (as
/// `qa-gate invalidate` does) so a later compaction cannot consume it.
pub fn finish_failed(qa: &QaDir, r: &mut Request, state: RequestState, now_ms: i64) -> Result<()> {
    debug_assert!(matches!(state, RequestState::Failed { .. } | RequestState::TimedOut));
    let ticket_waiting = std::fs::symlink_metadata(qa.ticket(&r.session_id)).is_ok();
    if ticket_waiting && claim_for(qa, r)?.is_none() {
        kijito_gate::invalidate(qa, &r.session_id)?;
        r.ticket_invalidated = true;
    }
    r.state = state;
    r.updated_at_ms = now_ms.max(r.requested_at_ms);
    write_request(qa, r)
}

/// `kijito-compact status`: the request's state as JSON, read-only. A
/// `sent` request whose claim record exists is shown as `compacted` with the
/// claim's attestation and reason; `summaryCarried` and `summaryCheck` come
/// from the claim (re-entry) record of this request's compaction.
pub fn status(data_dir: &AbsPath, s: &SessionId) -> Result<Value> {
    let qa = QaDir::existing(data_dir)?;
    let Some(qa) = qa else {
        return Err(Error::new(codes::NO_REQUEST, "no QA state in this data dir"));
    };
    let Some(mut r) = read_request(&qa, s)? else {
        return Err(Error::new(codes::NO_REQUEST, "no compaction request for this session"));
    };
    if matches!(r.state, RequestState::Sent | RequestState::Pending) {
        if let Some(a) = claim_for(&qa, &r)? {
            r.state = RequestState::Compacted { attested: a.attested, reason: a.reason };
        }
    }
    // The claim record's summary check (docs/protocol.md §7): null until
    // this request's compaction was claimed, or when no record names it.
    let (carried, check) = match &r.state {
        RequestState::Compacted { attested: false, .. } => (Value::Null, json!(kijito_gate::summary::codes::UNATTESTED)),
        RequestState::Compacted { attested: true, .. } => {
            match kijito_gate::summary::record_for(&qa, s, &r.nonce)?.and_then(|c| c.attested) {
                Some(a) => (a.summary.carried().map_or(Value::Null, |b| json!(b)), json!(a.summary.code())),
                None => (Value::Null, Value::Null),
            }
        }
        _ => (Value::Null, Value::Null),
    };
    let mut v = r.to_value();
    if let Some(o) = v.as_object_mut() {
        o.insert("summaryCarried".into(), carried);
        o.insert("summaryCheck".into(), check);
        o.insert("type".into(), json!("kijito.compaction.status"));
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sid() -> SessionId {
        SessionId::parse("sess-1").unwrap()
    }

    #[test]
    fn pins_round_trip_and_reject_junk() {
        let tmux = Pin {
            session_id: sid(),
            via: Via::Tmux {
                socket: AbsPath::parse("/tmp/tmux-0/default").unwrap(),
                pane: "%3".into(),
                host_pid: 4242,
                host_start: 99,
                tmux: None,
            },
            pinned_at_ms: 5,
        };
        let text = tmux.to_value().to_string();
        assert_eq!(Pin::parse(text.as_bytes()).unwrap(), tmux);
        // with the tmux executable the hook resolved
        let mut with = tmux.clone();
        with.via = Via::Tmux {
            socket: AbsPath::parse("/tmp/tmux-0/default").unwrap(),
            pane: "%3".into(),
            host_pid: 4242,
            host_start: 99,
            tmux: Some(AbsPath::parse("/usr/bin/tmux").unwrap()),
        };
        let wtext = with.to_value().to_string();
        assert!(wtext.ends_with(r#""hostStart":99,"tmux":"/usr/bin/tmux"}}"#), "{wtext}");
        assert_eq!(Pin::parse(wtext.as_bytes()).unwrap(), with);
        for junk in [
            wtext.replace("/usr/bin/tmux", "/usr/bin/sh"),
            wtext.replace("/usr/bin/tmux", "bin/tmux"),
            wtext.replace("\"/usr/bin/tmux\"", "7"),
            wtext.replace("\"tmux\":\"/usr/bin/tmux\"", "\"tmuxx\":\"/usr/bin/tmux\""),
        ] {
            assert!(Pin::parse(junk.as_bytes()).is_err(), "{junk}");
        }
        let codex = Pin {
            session_id: sid(),
            via: Via::CodexAppServer {
                adapter_id: "0123456789abcdef0123456789abcdef".into(),
                socket: AbsPath::parse("/run/k/ctl.sock").unwrap(),
            },
            pinned_at_ms: 5,
        };
        let ctext = codex.to_value().to_string();
        assert_eq!(Pin::parse(ctext.as_bytes()).unwrap(), codex);
        // The Codex target has exactly its two keys, in order.
        for junk in [
            ctext.replace("\"socket\":\"/run/k/ctl.sock\"", "\"socket\":\"/run/k/ctl.sock\",\"pane\":\"%3\""),
            ctext.replace(
                "\"adapterId\":\"0123456789abcdef0123456789abcdef\",\"socket\":\"/run/k/ctl.sock\"",
                "\"socket\":\"/run/k/ctl.sock\",\"adapterId\":\"0123456789abcdef0123456789abcdef\"",
            ),
        ] {
            assert_ne!(junk, ctext);
            assert!(Pin::parse(junk.as_bytes()).is_err(), "{junk}");
        }
        for junk in [
            text.replace("%3", "3"),
            text.replace("%3", "%3; rm -rf /"),
            text.replace("4242", "1"),
            text.replace("\"tmux\"", "\"screen\""),
            text.replace("/tmp/tmux-0/default", "relative/sock"),
            text.replace("\"schemaVersion\":1", "\"schemaVersion\":2"),
        ] {
            assert!(Pin::parse(junk.as_bytes()).is_err(), "{junk}");
        }
        assert!(is_pane_id("%0") && is_pane_id("%123456789"));
        assert!(!is_pane_id("%") && !is_pane_id("%1234567890") && !is_pane_id("%1a") && !is_pane_id("1"));
    }

    #[test]
    fn requests_round_trip_every_state() {
        for state in [
            RequestState::Pending,
            RequestState::Sent,
            RequestState::Compacted { attested: true, reason: "pass_valid".into() },
            RequestState::Failed { code: "pane_gone".into() },
            RequestState::TimedOut,
        ] {
            let r = Request {
                session_id: sid(),
                via: ViaKind::Tmux,
                nonce: "0123456789abcdef0123456789abcdef".into(),
                requested_at_ms: 10,
                updated_at_ms: 20,
                state,
                ticket_invalidated: false,
                note: None,
            };
            assert_eq!(Request::parse(r.to_value().to_string().as_bytes()).unwrap(), r);
        }
        let bad = r#"{"schemaVersion":1,"sessionId":"sess-1","via":"tmux","nonce":"0123456789abcdef0123456789abcdef","requestedAtMs":30,"updatedAtMs":20,"state":"sent","attested":null,"reason":null,"code":null,"ticketInvalidated":false}"#;
        assert!(Request::parse(bad.as_bytes()).is_err(), "updated before requested");
    }

    #[test]
    fn each_adapter_kind_is_spelled_once_and_says_what_it_does() {
        for k in ViaKind::ALL {
            assert_eq!(ViaKind::parse(k.as_str()), Some(k));
        }
        assert_eq!(ViaKind::ALL.map(ViaKind::as_str), ["tmux", "codex-app-server"]);
        for junk in ["", "Tmux", "tmux ", "screen", "codex"] {
            assert_eq!(ViaKind::parse(junk), None, "{junk:?}");
        }
        // The hooks' commands text carries these sentences byte for byte.
        assert_eq!(
            ViaKind::Tmux.what_it_does(),
            "this session's tmux pane is pinned: the adapter types /compact there once the turn has ended"
        );
        assert_eq!(
            ViaKind::CodexAppServer.what_it_does(),
            "this session runs under `kijito-compact codex`: the adapter compacts the thread once the turn has ended"
        );
    }

    #[test]
    fn turns_round_trip() {
        let t = Turn { session_id: sid(), state: TurnState::Ended, at_ms: 7, started_at_ms: Some(5) };
        assert_eq!(Turn::parse(t.to_value().to_string().as_bytes()).unwrap(), t);
        assert!(Turn::parse(br#"{"schemaVersion":1,"sessionId":"sess-1","state":"idle","atMs":7}"#).is_err());
    }
}
