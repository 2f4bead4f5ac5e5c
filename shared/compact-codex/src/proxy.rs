//! The pure data path of the adapter: JSON-RPC messages in, messages out, no
//! I/O and no clock of its own (callers pass `now`).
//!
//! It forwards every message unchanged (the original text) in both
//! directions and watches what passes: which threads exist on this
//! connection, which have a turn running (turn/started .. turn/completed, or
//! a client `turn/start` not answered yet), the last token usage per thread,
//! and the one compaction the adapter itself started (its own request id,
//! its answer, the compaction turn, the contextCompaction item). While that
//! compaction runs, a client `turn/start` for the same thread is held (the
//! host would refuse it with ActiveTurnNotSteerable) and released when the
//! compaction turn completes, or after a bound.

use serde_json::{json, Value};
use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant};

/// Most threads tracked at once (older, idle ones are dropped beyond it).
pub const MAX_THREADS: usize = 1024;
/// Most client messages held at once; beyond it they are released early.
pub const MAX_HELD: usize = 64;
/// Longest JSON-RPC message accepted from either side.
pub const MAX_MESSAGE_BYTES: usize = 16 * 1024 * 1024;

/// Where a message goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Out {
    /// To the app-server child (one line of JSON, no newline).
    Server(String),
    /// To the attached client (the TUI).
    Client(String),
}

/// What the message log records for each message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dir {
    ClientToServer,
    ServerToClient,
    /// The adapter's own requests (thread/compact/start).
    AdapterToServer,
    /// Answers to the adapter's own requests (never forwarded).
    ServerToAdapter,
    /// A client message held while the adapter's compaction runs.
    Held,
    /// A held message released to the server.
    Released,
    /// A client request the adapter answered itself (an id in its namespace).
    Refused,
    /// A message that was not one line of JSON and was dropped.
    Dropped,
}

impl Dir {
    pub fn name(self) -> &'static str {
        match self {
            Dir::ClientToServer => "client->server",
            Dir::ServerToClient => "server->client",
            Dir::AdapterToServer => "adapter->server",
            Dir::ServerToAdapter => "server->adapter",
            Dir::Held => "held",
            Dir::Released => "released",
            Dir::Refused => "refused",
            Dir::Dropped => "dropped",
        }
    }
}

/// One logged message.
#[derive(Debug, Clone, PartialEq)]
pub struct Logged {
    pub dir: Dir,
    pub text: String,
}

/// Per-thread state seen on the connection.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ThreadInfo {
    /// The running turn (turn/started without turn/completed yet).
    pub active_turn: Option<String>,
    /// Client `turn/start` requests sent but not answered yet.
    pub pending_turn_starts: usize,
    /// When the last turn/completed of this thread passed.
    pub last_completed: Option<Instant>,
    /// `last.totalTokens` and `modelContextWindow` of the last
    /// thread/tokenUsage/updated.
    pub last_tokens: Option<(u64, Option<u64>)>,
    order: u64,
}

impl ThreadInfo {
    pub fn idle(&self) -> bool {
        self.active_turn.is_none() && self.pending_turn_starts == 0
    }
}

/// How the adapter's compaction ended, as seen on the wire.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JobEnd {
    /// The compaction turn completed with a completed contextCompaction item.
    Compacted,
    /// The host answered the request with an error (message clipped).
    Refused(String),
    /// The compaction turn ended without a completed contextCompaction item
    /// (interrupted, failed).
    NotCompacted(String),
}

/// The adapter's one compaction in flight.
#[derive(Debug, Clone, PartialEq)]
pub struct Job {
    pub thread: String,
    pub request_id: String,
    pub sent_at: Instant,
    pub answered: bool,
    pub turn_id: Option<String>,
    pub item_started: bool,
    pub item_completed: bool,
    pub ended: Option<(JobEnd, Instant)>,
}

/// The state machine.
#[derive(Debug)]
pub struct Proxy {
    prefix: String,
    next_id: u64,
    threads: HashMap<String, ThreadInfo>,
    order: u64,
    /// client turn/start id (as JSON text) -> thread id
    turn_starts: HashMap<String, String>,
    job: Option<Job>,
    held: VecDeque<(String, Instant)>,
    hold_bound: Duration,
    pub log: Vec<Logged>,
}

fn id_key(v: &Value) -> String {
    v.to_string()
}

fn one_line(text: &str, v: &Value) -> String {
    if text.contains('\n') || text.contains('\r') {
        v.to_string()
    } else {
        text.to_owned()
    }
}

fn clip(s: &str) -> String {
    s.chars().take(200).collect()
}

impl Proxy {
    /// `adapter_id` makes the adapter's request ids (`kijito-compact-<id>-<n>`)
    /// impossible to guess for a client; `hold_bound` is the longest a client
    /// `turn/start` is held.
    pub fn new(adapter_id: &str, hold_bound: Duration) -> Proxy {
        Proxy {
            prefix: format!("kijito-compact-{adapter_id}-"),
            next_id: 1,
            threads: HashMap::new(),
            order: 0,
            turn_starts: HashMap::new(),
            job: None,
            held: VecDeque::new(),
            hold_bound,
            log: Vec::new(),
        }
    }

    pub fn thread(&self, id: &str) -> Option<&ThreadInfo> {
        self.threads.get(id)
    }

    /// Thread ids seen on this connection (newest first).
    pub fn thread_ids(&self) -> Vec<String> {
        let mut v: Vec<(&String, u64)> = self.threads.iter().map(|(k, t)| (k, t.order)).collect();
        v.sort_by_key(|x| std::cmp::Reverse(x.1));
        v.into_iter().map(|(k, _)| k.clone()).collect()
    }

    pub fn job(&self) -> Option<&Job> {
        self.job.as_ref()
    }

    pub fn held_count(&self) -> usize {
        self.held.len()
    }

    fn note(&mut self, dir: Dir, text: &str) {
        self.log.push(Logged { dir, text: text.to_owned() });
    }

    /// Take the log entries gathered since the last call.
    pub fn drain_log(&mut self) -> Vec<Logged> {
        std::mem::take(&mut self.log)
    }

    fn see_thread(&mut self, id: &str) {
        if id.is_empty() || id.len() > 128 {
            return;
        }
        self.order += 1;
        let order = self.order;
        if let Some(t) = self.threads.get_mut(id) {
            t.order = order;
            return;
        }
        if self.threads.len() >= MAX_THREADS {
            let job_thread = self.job.as_ref().map(|j| j.thread.clone());
            let oldest = self
                .threads
                .iter()
                .filter(|(k, t)| t.idle() && Some(*k) != job_thread.as_ref())
                .min_by_key(|(_, t)| t.order)
                .map(|(k, _)| k.clone());
            match oldest {
                Some(k) => {
                    self.threads.remove(&k);
                }
                None => return,
            }
        }
        self.threads.insert(id.to_owned(), ThreadInfo { order, ..ThreadInfo::default() });
    }

    fn thread_mut(&mut self, id: &str) -> Option<&mut ThreadInfo> {
        self.see_thread(id);
        self.threads.get_mut(id)
    }

    /// A message from the client (the TUI).
    pub fn from_client(&mut self, text: &str, now: Instant) -> Vec<Out> {
        let v: Value = match serde_json::from_str(text) {
            Ok(v) => v,
            Err(_) => {
                // Not JSON: the app-server would reject it anyway. Forward when
                // it is one line; a multi-line blob cannot go on the line
                // protocol without changing it, so it is dropped (logged).
                if text.contains('\n') || text.contains('\r') {
                    self.note(Dir::Dropped, text);
                    return vec![];
                }
                self.note(Dir::ClientToServer, text);
                return vec![Out::Server(text.to_owned())];
            }
        };
        let line = one_line(text, &v);
        let method = v.get("method").and_then(Value::as_str);
        let id = v.get("id");
        if let (Some(_), Some(id)) = (method, id) {
            if id.as_str().is_some_and(|s| s.starts_with("kijito-compact-")) {
                // The adapter's id namespace: never forwarded, so an answer
                // can never be mistaken for the adapter's own.
                self.note(Dir::Refused, &line);
                let answer = json!({"id": id, "error": {"code": -32600, "message": "request ids starting with kijito-compact- are reserved by the kijito-compact adapter"}});
                return vec![Out::Client(answer.to_string())];
            }
        }
        if method == Some("turn/start") {
            let thread = v.pointer("/params/threadId").and_then(Value::as_str).unwrap_or("").to_owned();
            let compacting = self.job.as_ref().is_some_and(|j| j.thread == thread && j.ended.is_none());
            if compacting {
                if self.held.len() >= MAX_HELD {
                    let mut out = self.release_all();
                    out.extend(self.forward_turn_start(&v, line, &thread));
                    return out;
                }
                self.note(Dir::Held, &line);
                self.held.push_back((line, now));
                return vec![];
            }
            return self.forward_turn_start(&v, line, &thread);
        }
        self.note(Dir::ClientToServer, &line);
        vec![Out::Server(line)]
    }

    fn forward_turn_start(&mut self, v: &Value, line: String, thread: &str) -> Vec<Out> {
        if let Some(id) = v.get("id") {
            self.turn_starts.insert(id_key(id), thread.to_owned());
            if let Some(t) = self.thread_mut(thread) {
                t.pending_turn_starts += 1;
            }
        }
        self.note(Dir::ClientToServer, &line);
        vec![Out::Server(line)]
    }

    fn release_all(&mut self) -> Vec<Out> {
        let mut out = vec![];
        while let Some((line, _)) = self.held.pop_front() {
            let v: Value = serde_json::from_str(&line).unwrap_or(Value::Null);
            let thread = v.pointer("/params/threadId").and_then(Value::as_str).unwrap_or("").to_owned();
            if let Some(id) = v.get("id") {
                self.turn_starts.insert(id_key(id), thread.clone());
                if let Some(t) = self.thread_mut(&thread) {
                    t.pending_turn_starts += 1;
                }
            }
            self.note(Dir::Released, &line);
            out.push(Out::Server(line));
        }
        out
    }

    /// A message from the app-server child.
    pub fn from_server(&mut self, text: &str, now: Instant) -> Vec<Out> {
        let Ok(v) = serde_json::from_str::<Value>(text) else {
            self.note(Dir::ServerToClient, text);
            return vec![Out::Client(text.to_owned())];
        };
        let method = v.get("method").and_then(Value::as_str);
        let is_response = method.is_none() && v.get("id").is_some() && (v.get("result").is_some() || v.get("error").is_some());
        if is_response {
            let id = &v["id"];
            let ours = self.job.as_ref().is_some_and(|j| id.as_str() == Some(j.request_id.as_str()));
            if ours {
                self.note(Dir::ServerToAdapter, text);
                if let Some(j) = self.job.as_mut() {
                    j.answered = true;
                    if let Some(e) = v.get("error") {
                        let msg = e.get("message").and_then(Value::as_str).unwrap_or("error");
                        if j.ended.is_none() {
                            j.ended = Some((JobEnd::Refused(clip(msg)), now));
                        }
                    }
                }
                let mut out = vec![];
                if self.job.as_ref().is_some_and(|j| j.ended.is_some()) {
                    out = self.release_all();
                }
                return out;
            }
            if id.as_str().is_some_and(|s| s.starts_with(&self.prefix)) {
                // A late answer to an earlier request of the adapter.
                self.note(Dir::ServerToAdapter, text);
                return vec![];
            }
            if let Some(thread) = self.turn_starts.remove(&id_key(id)) {
                if let Some(t) = self.threads.get_mut(&thread) {
                    t.pending_turn_starts = t.pending_turn_starts.saturating_sub(1);
                    // The turn runs from its accepted turn/start (an answer
                    // with the turn) even if turn/started comes later.
                    if t.active_turn.is_none() {
                        if let Some(turn) = v.pointer("/result/turn/id").and_then(Value::as_str) {
                            t.active_turn = Some(turn.to_owned());
                        }
                    }
                }
            }
            if let Some(thread) = v.pointer("/result/thread/id").and_then(Value::as_str) {
                let thread = thread.to_owned();
                self.see_thread(&thread);
            }
        } else if let Some(m) = method {
            self.observe(m, &v, now);
        }
        self.note(Dir::ServerToClient, text);
        let mut out = vec![Out::Client(text.to_owned())];
        if self.job.as_ref().is_some_and(|j| j.ended.is_some()) && !self.held.is_empty() {
            out.extend(self.release_all());
        }
        out
    }

    fn observe(&mut self, method: &str, v: &Value, now: Instant) {
        let p = v.get("params").unwrap_or(&Value::Null);
        let thread = p.get("threadId").and_then(Value::as_str).map(str::to_owned);
        let turn = p.pointer("/turn/id").and_then(Value::as_str).map(str::to_owned);
        match method {
            "thread/started" => {
                if let Some(id) = p.pointer("/thread/id").and_then(Value::as_str) {
                    let id = id.to_owned();
                    self.see_thread(&id);
                }
            }
            "thread/closed" => {
                if let Some(t) = &thread {
                    if self.job.as_ref().is_none_or(|j| &j.thread != t) {
                        self.threads.remove(t);
                    }
                }
            }
            "turn/started" => {
                let (Some(t), Some(turn)) = (thread, turn) else { return };
                if let Some(info) = self.thread_mut(&t) {
                    info.active_turn = Some(turn.clone());
                }
                if let Some(j) = self.job.as_mut() {
                    if j.thread == t && j.answered && j.turn_id.is_none() && j.ended.is_none() {
                        j.turn_id = Some(turn);
                    }
                }
            }
            "turn/completed" => {
                let (Some(t), Some(turn)) = (thread, turn) else { return };
                if let Some(info) = self.thread_mut(&t) {
                    // Any turn/completed of the thread ends its running turn
                    // (also one whose turn/started never passed).
                    info.active_turn = None;
                    info.last_completed = Some(now);
                }
                if let Some(j) = self.job.as_mut() {
                    if j.thread == t && j.turn_id.as_deref() == Some(turn.as_str()) && j.ended.is_none() {
                        let status = p.pointer("/turn/status").and_then(Value::as_str).unwrap_or("unknown");
                        let end = if j.item_completed && status == "completed" {
                            JobEnd::Compacted
                        } else {
                            JobEnd::NotCompacted(format!(
                                "compaction turn ended {status}{}",
                                if j.item_completed { "" } else { " without a completed contextCompaction item" }
                            ))
                        };
                        j.ended = Some((end, now));
                    }
                }
            }
            "item/started" | "item/completed" => {
                let is_compaction = p.pointer("/item/type").and_then(Value::as_str) == Some("contextCompaction");
                let (Some(t), Some(j)) = (thread, self.job.as_mut()) else { return };
                let turn_id = p.get("turnId").and_then(Value::as_str);
                if is_compaction && j.thread == t && j.turn_id.is_some() && j.turn_id.as_deref() == turn_id {
                    if method == "item/started" {
                        j.item_started = true;
                    } else {
                        j.item_completed = true;
                    }
                }
            }
            "thread/tokenUsage/updated" => {
                let Some(t) = thread else { return };
                let total = p.pointer("/tokenUsage/last/totalTokens").and_then(Value::as_u64);
                let window = p.pointer("/tokenUsage/modelContextWindow").and_then(Value::as_u64);
                if let (Some(total), Some(info)) = (total, self.thread_mut(&t)) {
                    info.last_tokens = Some((total, window));
                }
            }
            _ => {
                if let Some(t) = thread {
                    if self.threads.contains_key(&t) {
                        self.see_thread(&t);
                    }
                }
            }
        }
    }

    /// Whether the adapter may start a compaction of `thread` now: the thread
    /// was seen on this connection, no turn runs or is starting there, and no
    /// compaction of the adapter is in flight.
    pub fn can_compact(&self, thread: &str) -> bool {
        self.job.is_none() && self.held.is_empty() && self.threads.get(thread).is_some_and(ThreadInfo::idle)
    }

    /// Start the adapter's compaction of `thread` (check [`Proxy::can_compact`]
    /// first): the request to send, with the adapter's own id.
    pub fn start_compaction(&mut self, thread: &str, now: Instant) -> Option<Out> {
        if !self.can_compact(thread) {
            return None;
        }
        let request_id = format!("{}{}", self.prefix, self.next_id);
        self.next_id += 1;
        let line = json!({"id": request_id, "method": "thread/compact/start", "params": {"threadId": thread}}).to_string();
        self.note(Dir::AdapterToServer, &line);
        self.job = Some(Job {
            thread: thread.to_owned(),
            request_id,
            sent_at: now,
            answered: false,
            turn_id: None,
            item_started: false,
            item_completed: false,
            ended: None,
        });
        Some(Out::Server(line))
    }

    /// Forget the finished (or abandoned) compaction and release anything
    /// held. The id stays in the adapter's namespace, so a late answer is
    /// still swallowed.
    pub fn clear_job(&mut self) -> Vec<Out> {
        self.job = None;
        self.release_all()
    }

    /// Release held messages older than the hold bound.
    pub fn tick(&mut self, now: Instant) -> Vec<Out> {
        if self.held.front().is_some_and(|(_, at)| now.duration_since(*at) >= self.hold_bound) {
            return self.release_all();
        }
        vec![]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: &str = "0123456789abcdef0123456789abcdef";
    const T: &str = "019a0000-0000-7000-8000-000000000001";

    fn p() -> Proxy {
        Proxy::new(A, Duration::from_secs(120))
    }

    fn started(p: &mut Proxy, now: Instant) {
        let out = p.from_server(
            &format!(r#"{{"id":"startup-thread-start-x","result":{{"thread":{{"id":"{T}","status":{{"type":"idle"}}}}}}}}"#),
            now,
        );
        assert_eq!(out.len(), 1);
    }

    fn turn(p: &mut Proxy, method: &str, turn: &str, status: &str, now: Instant) -> Vec<Out> {
        p.from_server(
            &format!(r#"{{"method":"{method}","params":{{"threadId":"{T}","turn":{{"id":"{turn}","status":"{status}"}}}}}}"#),
            now,
        )
    }

    #[test]
    fn forwards_unchanged_both_ways() {
        let mut p = p();
        let now = Instant::now();
        let raw = r#"{"id":7,  "method":"model/list","params":{"big":9007199254740993}}"#;
        assert_eq!(p.from_client(raw, now), vec![Out::Server(raw.to_owned())]);
        let raw = r#"{"id":7,"result":{"data":[]},"x":1.50}"#;
        assert_eq!(p.from_server(raw, now), vec![Out::Client(raw.to_owned())]);
        let note = r#"{"method":"warning","params":{"message":"m"}}"#;
        assert_eq!(p.from_server(note, now), vec![Out::Client(note.to_owned())]);
        // server -> client requests (approvals) and their answers pass too
        let req = r#"{"id":0,"method":"item/commandExecution/requestApproval","params":{}}"#;
        assert_eq!(p.from_server(req, now), vec![Out::Client(req.to_owned())]);
        let ans = r#"{"id":0,"result":{"decision":"decline"}}"#;
        assert_eq!(p.from_client(ans, now), vec![Out::Server(ans.to_owned())]);
        // a multi-line JSON message becomes one line (only whitespace changes)
        let out = p.from_client("{\"id\":1,\n \"method\":\"x\"}", now);
        assert_eq!(out, vec![Out::Server(r#"{"id":1,"method":"x"}"#.to_owned())]);
        // a multi-line non-JSON blob is dropped, never split into two lines
        assert!(p.from_client("junk\n{\"id\":1}", now).is_empty());
        assert_eq!(p.drain_log().last().map(|l| l.dir), Some(Dir::Dropped));
    }

    #[test]
    fn tracks_idle_per_thread_including_unanswered_turn_start() {
        let mut p = p();
        let now = Instant::now();
        started(&mut p, now);
        assert!(p.can_compact(T));
        p.from_client(&format!(r#"{{"id":6,"method":"turn/start","params":{{"threadId":"{T}","input":[]}}}}"#), now);
        assert!(!p.can_compact(T), "a turn/start in flight is not idle");
        p.from_server(r#"{"id":6,"result":{"turn":{"id":"turn-1","status":"inProgress"}}}"#, now);
        assert!(!p.can_compact(T));
        turn(&mut p, "turn/started", "turn-1", "inProgress", now);
        assert!(!p.can_compact(T));
        turn(&mut p, "turn/completed", "turn-1", "completed", now);
        assert!(p.can_compact(T));
        // a refused turn/start leaves the thread idle
        p.from_client(&format!(r#"{{"id":"u-1","method":"turn/start","params":{{"threadId":"{T}","input":[]}}}}"#), now);
        p.from_server(r#"{"id":"u-1","error":{"code":-32603,"message":"no"}}"#, now);
        assert!(p.can_compact(T));
        // an unknown thread is never compacted
        assert!(!p.can_compact("019a0000-0000-7000-8000-00000000ffff"));
        // another thread's turn does not make this one busy
        p.from_server(r#"{"method":"turn/started","params":{"threadId":"title-thread","turn":{"id":"t9"}}}"#, now);
        assert!(p.can_compact(T));
        assert!(!p.can_compact("title-thread"));
    }

    #[test]
    fn own_request_id_is_unique_and_its_answer_is_swallowed() {
        let mut p = p();
        let now = Instant::now();
        started(&mut p, now);
        let Some(Out::Server(line)) = p.start_compaction(T, now) else { panic!("no request") };
        let v: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(v["method"], "thread/compact/start");
        assert_eq!(v["params"]["threadId"], T);
        let id = v["id"].as_str().unwrap().to_owned();
        assert_eq!(id, format!("kijito-compact-{A}-1"));
        assert!(p.start_compaction(T, now).is_none(), "never a second one while one is in flight");
        assert!(p.from_server(&format!(r#"{{"id":"{id}","result":{{}}}}"#), now).is_empty(), "answer consumed");
        assert!(p.job().unwrap().answered);
        // a client request in the adapter's namespace is answered by the adapter
        let out = p.from_client(&format!(r#"{{"id":"{id}","method":"thread/list","params":{{}}}}"#), now);
        let [Out::Client(err)] = out.as_slice() else { panic!("{out:?}") };
        assert!(err.contains("reserved"));
    }

    #[test]
    fn a_full_compaction_and_holding_turn_start() {
        let mut p = p();
        let t0 = Instant::now();
        started(&mut p, t0);
        let Some(Out::Server(line)) = p.start_compaction(T, t0) else { panic!() };
        let id = serde_json::from_str::<Value>(&line).unwrap()["id"].as_str().unwrap().to_owned();
        // the user types while the compaction is being started: held
        let ts = format!(r#"{{"id":8,"method":"turn/start","params":{{"threadId":"{T}","input":[]}}}}"#);
        assert!(p.from_client(&ts, t0).is_empty());
        assert_eq!(p.held_count(), 1);
        // another thread's turn/start is not held
        let other = r#"{"id":9,"method":"turn/start","params":{"threadId":"title","input":[]}}"#;
        assert_eq!(p.from_client(other, t0).len(), 1);
        p.from_server(&format!(r#"{{"id":"{id}","result":{{}}}}"#), t0);
        turn(&mut p, "turn/started", "c-1", "inProgress", t0);
        assert_eq!(p.job().unwrap().turn_id.as_deref(), Some("c-1"));
        let item = |m: &str| {
            format!(r#"{{"method":"{m}","params":{{"threadId":"{T}","turnId":"c-1","item":{{"type":"contextCompaction","id":"i"}}}}}}"#)
        };
        p.from_server(&item("item/started"), t0);
        p.from_server(&item("item/completed"), t0);
        assert!(p.job().unwrap().item_completed);
        let t1 = t0 + Duration::from_millis(80);
        let out = turn(&mut p, "turn/completed", "c-1", "completed", t1);
        // the completion goes to the client, then the held turn/start to the server
        assert_eq!(out.len(), 2);
        assert!(matches!(&out[0], Out::Client(c) if c.contains("turn/completed")));
        assert_eq!(out[1], Out::Server(ts.clone()));
        assert_eq!(p.job().unwrap().ended, Some((JobEnd::Compacted, t1)));
        assert!(!p.can_compact(T), "the released turn/start is now in flight");
        assert!(p.clear_job().is_empty());
        let dirs: Vec<Dir> = p.drain_log().iter().map(|l| l.dir).collect();
        assert_eq!(dirs.iter().filter(|d| **d == Dir::AdapterToServer).count(), 1);
        assert!(dirs.contains(&Dir::Held) && dirs.contains(&Dir::Released) && dirs.contains(&Dir::ServerToAdapter));
    }

    #[test]
    fn refused_or_interrupted_compactions_end_the_job() {
        let mut p = p();
        let now = Instant::now();
        started(&mut p, now);
        let Some(Out::Server(line)) = p.start_compaction(T, now) else { panic!() };
        let id = serde_json::from_str::<Value>(&line).unwrap()["id"].as_str().unwrap().to_owned();
        p.from_server(&format!(r#"{{"id":"{id}","error":{{"code":-32600,"message":"thread not found"}}}}"#), now);
        assert!(matches!(p.job().unwrap().ended, Some((JobEnd::Refused(ref m), _)) if m == "thread not found"));
        p.clear_job();
        let Some(Out::Server(line)) = p.start_compaction(T, now) else { panic!() };
        let id = serde_json::from_str::<Value>(&line).unwrap()["id"].as_str().unwrap().to_owned();
        assert!(id.ends_with("-2"));
        p.from_server(&format!(r#"{{"id":"{id}","result":{{}}}}"#), now);
        turn(&mut p, "turn/started", "c-2", "inProgress", now);
        turn(&mut p, "turn/completed", "c-2", "interrupted", now);
        assert!(matches!(p.job().unwrap().ended, Some((JobEnd::NotCompacted(_), _))));
    }

    #[test]
    fn held_messages_are_released_after_the_bound() {
        let mut p = Proxy::new(A, Duration::from_millis(100));
        let t0 = Instant::now();
        started(&mut p, t0);
        p.start_compaction(T, t0);
        let ts = format!(r#"{{"id":8,"method":"turn/start","params":{{"threadId":"{T}","input":[]}}}}"#);
        p.from_client(&ts, t0);
        assert!(p.tick(t0 + Duration::from_millis(50)).is_empty());
        assert_eq!(p.tick(t0 + Duration::from_millis(100)), vec![Out::Server(ts)]);
    }

    #[test]
    fn token_usage_and_thread_close() {
        let mut p = p();
        let now = Instant::now();
        started(&mut p, now);
        p.from_server(&format!(r#"{{"method":"thread/tokenUsage/updated","params":{{"threadId":"{T}","turnId":"x","tokenUsage":{{"total":{{"totalTokens":220}},"last":{{"totalTokens":110}},"modelContextWindow":258400}}}}}}"#), now);
        assert_eq!(p.thread(T).unwrap().last_tokens, Some((110, Some(258400))));
        p.from_server(&format!(r#"{{"method":"thread/closed","params":{{"threadId":"{T}"}}}}"#), now);
        assert!(p.thread(T).is_none());
    }

    const U: &str = "019a0000-0000-7000-8000-000000000002";

    fn turn_of(p: &mut Proxy, method: &str, thread: &str, turn: &str, status: &str, now: Instant) -> Vec<Out> {
        p.from_server(
            &format!(r#"{{"method":"{method}","params":{{"threadId":"{thread}","turn":{{"id":"{turn}","status":"{status}"}}}}}}"#),
            now,
        )
    }

    fn thread_started(p: &mut Proxy, id: &str, now: Instant) {
        p.from_server(&format!(r#"{{"method":"thread/started","params":{{"thread":{{"id":"{id}"}}}}}}"#), now);
    }

    fn item(p: &mut Proxy, method: &str, thread: &str, turn: &str, kind: &str, now: Instant) {
        p.from_server(
            &format!(r#"{{"method":"{method}","params":{{"threadId":"{thread}","turnId":"{turn}","item":{{"type":"{kind}","id":"i"}}}}}}"#),
            now,
        );
    }

    /// The adapter's compaction of T, answered, its turn `c-1` started.
    fn compacting(p: &mut Proxy, now: Instant) -> String {
        let Some(Out::Server(line)) = p.start_compaction(T, now) else { panic!("no request") };
        let id = serde_json::from_str::<Value>(&line).unwrap()["id"].as_str().unwrap().to_owned();
        p.from_server(&format!(r#"{{"id":"{id}","result":{{}}}}"#), now);
        turn(p, "turn/started", "c-1", "inProgress", now);
        assert_eq!(p.job().unwrap().turn_id.as_deref(), Some("c-1"));
        id
    }

    #[test]
    fn messages_up_to_16_mib_pass() {
        let mut b = crate::transport::LineBuf::default();
        let mut out = vec![];
        let line = vec![b'x'; 16 * 1024 * 1024];
        assert!(b.push(&line, &mut out).is_ok(), "16 MiB without its newline yet");
        assert!(b.push(b"\n", &mut out).is_ok());
        assert_eq!(out[0].len(), 16 * 1024 * 1024);
        assert!(b.push(&line, &mut out).is_ok());
        assert!(b.push(b"x", &mut out).is_err(), "one byte more");
    }

    #[test]
    fn threads_are_known_from_thread_started_and_listed_newest_first() {
        let mut p = p();
        let now = Instant::now();
        // a thread the app-server started on its own (no thread/start answer)
        thread_started(&mut p, T, now);
        assert!(p.can_compact(T));
        thread_started(&mut p, U, now);
        assert_eq!(p.thread_ids(), [U, T]);
        // any message of a known thread makes it the newest
        p.from_server(&format!(r#"{{"method":"thread/status/changed","params":{{"threadId":"{T}","status":{{"type":"idle"}}}}}}"#), now);
        assert_eq!(p.thread_ids(), [T, U]);
        // a message of an unknown thread adds nothing
        p.from_server(r#"{"method":"thread/status/changed","params":{"threadId":"x-unknown"}}"#, now);
        assert_eq!(p.thread_ids(), [T, U]);
        // ids are non-empty and at most 128 bytes
        thread_started(&mut p, "", now);
        let at_most = "a".repeat(128);
        thread_started(&mut p, &at_most, now);
        thread_started(&mut p, &"a".repeat(129), now);
        assert_eq!(p.thread_ids(), [at_most.as_str(), T, U]);
    }

    #[test]
    fn beyond_the_thread_bound_the_oldest_idle_thread_goes_never_a_busy_one_or_the_compacting_one() {
        let mut p = p();
        let now = Instant::now();
        let id = |i: usize| format!("t-{i:04}");
        for i in 0..MAX_THREADS {
            thread_started(&mut p, &id(i), now);
        }
        // t-0000 runs a turn; t-0001 is being compacted (idle until its turn starts)
        turn_of(&mut p, "turn/started", &id(0), "u-1", "inProgress", now);
        thread_started(&mut p, &id(0), now);
        assert!(p.start_compaction(&id(1), now).is_some());
        // t-0000 was touched last, so the oldest now are t-0001, t-0002, ...
        thread_started(&mut p, "t-new", now);
        assert!(p.thread("t-new").is_some());
        assert!(p.thread(&id(0)).is_some() && p.thread(&id(1)).is_some(), "neither the busy nor the compacting thread goes");
        assert!(p.thread(&id(2)).is_none(), "the oldest idle one went");
        assert!(p.thread(&id(3)).is_some());
        assert_eq!(p.thread_ids().len(), MAX_THREADS);
        // all busy: a new thread is not tracked
        let mut p = p_full_busy();
        thread_started(&mut p, "t-new", now);
        assert!(p.thread("t-new").is_none());
        assert_eq!(p.thread_ids().len(), MAX_THREADS);
    }

    fn p_full_busy() -> Proxy {
        let mut p = p();
        let now = Instant::now();
        for i in 0..MAX_THREADS {
            turn_of(&mut p, "turn/started", &format!("b-{i:04}"), "u", "inProgress", now);
        }
        p
    }

    #[test]
    fn turn_start_answers_are_matched_by_their_id() {
        let mut p = p();
        let now = Instant::now();
        started(&mut p, now);
        thread_started(&mut p, U, now);
        p.from_client(&format!(r#"{{"id":1,"method":"turn/start","params":{{"threadId":"{T}","input":[]}}}}"#), now);
        p.from_client(&format!(r#"{{"id":"1","method":"turn/start","params":{{"threadId":"{U}","input":[]}}}}"#), now);
        assert!(!p.can_compact(T) && !p.can_compact(U));
        // the answer to id 1 (the number) is T's, not U's (the string "1")
        p.from_server(r#"{"id":1,"error":{"code":-32603,"message":"no"}}"#, now);
        assert!(p.can_compact(T));
        assert!(!p.can_compact(U));
        p.from_server(r#"{"id":"1","result":{"turn":{"id":"u-1","status":"inProgress"}}}"#, now);
        assert!(!p.can_compact(U), "the accepted turn runs");
        assert_eq!(p.thread(U).unwrap().active_turn.as_deref(), Some("u-1"));
        // a turn/completed ends the thread's turn, whichever id it names
        turn_of(&mut p, "turn/completed", U, "u-other", "completed", now);
        assert!(p.can_compact(U));
    }

    #[test]
    fn only_an_answer_counts_as_the_answer_to_the_adapters_request() {
        let mut p = p();
        let now = Instant::now();
        started(&mut p, now);
        let Some(Out::Server(line)) = p.start_compaction(T, now) else { panic!() };
        let id = serde_json::from_str::<Value>(&line).unwrap()["id"].as_str().unwrap().to_owned();
        // a message with the adapter's id but neither result nor error, and
        // a server request that reuses it: neither is the answer
        p.from_server(&format!(r#"{{"id":"{id}"}}"#), now);
        p.from_server(&format!(r#"{{"id":"{id}","method":"item/tool/call","params":{{}},"result":{{}}}}"#), now);
        assert!(!p.job().unwrap().answered);
        // a turn that starts before the answer is not the compaction's
        turn(&mut p, "turn/started", "u-1", "inProgress", now);
        assert_eq!(p.job().unwrap().turn_id, None);
        turn(&mut p, "turn/completed", "u-1", "interrupted", now);
        p.from_server(&format!(r#"{{"id":"{id}","result":{{}}}}"#), now);
        assert!(p.job().unwrap().answered);
        // another thread's turn is not the compaction's either
        turn_of(&mut p, "turn/started", U, "u-9", "inProgress", now);
        assert_eq!(p.job().unwrap().turn_id, None);
        turn(&mut p, "turn/started", "c-1", "inProgress", now);
        assert_eq!(p.job().unwrap().turn_id.as_deref(), Some("c-1"));
        // nor does a later turn/started replace it
        turn_of(&mut p, "turn/started", U, "u-10", "inProgress", now);
        assert_eq!(p.job().unwrap().turn_id.as_deref(), Some("c-1"));
        assert_eq!(p.job().unwrap().ended, None);
    }

    #[test]
    fn only_the_compaction_turns_own_end_and_contextcompaction_item_count() {
        let mut p = p();
        let now = Instant::now();
        started(&mut p, now);
        thread_started(&mut p, U, now);
        compacting(&mut p, now);
        // other items of the compaction turn, compaction items of other turns or threads
        item(&mut p, "item/completed", T, "c-1", "agentMessage", now);
        item(&mut p, "item/completed", T, "u-1", "contextCompaction", now);
        item(&mut p, "item/completed", U, "c-1", "contextCompaction", now);
        assert!(!p.job().unwrap().item_completed);
        item(&mut p, "item/started", T, "c-1", "contextCompaction", now);
        assert!(p.job().unwrap().item_started);
        assert!(!p.job().unwrap().item_completed, "started is not completed");
        // the interrupted user turn and another thread's turn ending do not end the job
        turn(&mut p, "turn/completed", "u-1", "interrupted", now);
        turn_of(&mut p, "turn/completed", U, "c-1", "completed", now);
        assert_eq!(p.job().unwrap().ended, None);
        // the compaction turn completes with only item/started: not compacted
        let t1 = now + Duration::from_millis(5);
        turn(&mut p, "turn/completed", "c-1", "completed", t1);
        assert!(
            matches!(&p.job().unwrap().ended, Some((JobEnd::NotCompacted(m), at)) if m.contains("without a completed contextCompaction item") && *at == t1)
        );
        // a completed item in an interrupted turn: not compacted either
        p.clear_job();
        let mut p2 = self::p();
        started(&mut p2, now);
        compacting(&mut p2, now);
        item(&mut p2, "item/completed", T, "c-1", "contextCompaction", now);
        turn(&mut p2, "turn/completed", "c-1", "interrupted", now);
        assert!(matches!(&p2.job().unwrap().ended, Some((JobEnd::NotCompacted(m), _)) if m == "compaction turn ended interrupted"));
    }

    #[test]
    fn the_compacting_thread_is_kept_when_closed_others_go() {
        let mut p = p();
        let now = Instant::now();
        started(&mut p, now);
        thread_started(&mut p, U, now);
        compacting(&mut p, now);
        for t in [T, U] {
            p.from_server(&format!(r#"{{"method":"thread/closed","params":{{"threadId":"{t}"}}}}"#), now);
        }
        assert!(p.thread(T).is_some());
        assert!(p.thread(U).is_none());
    }

    #[test]
    fn a_released_turn_start_keeps_the_thread_busy_until_answered() {
        let mut p = p();
        let now = Instant::now();
        started(&mut p, now);
        compacting(&mut p, now);
        p.from_client(&format!(r#"{{"id":8,"method":"turn/start","params":{{"threadId":"{T}","input":[]}}}}"#), now);
        assert_eq!(p.held_count(), 1);
        let out = turn(&mut p, "turn/completed", "c-1", "completed", now);
        assert_eq!(out.len(), 2, "the end, then the released turn/start");
        assert_eq!(p.held_count(), 0);
        assert!(p.clear_job().is_empty());
        assert!(!p.can_compact(T), "the released turn/start is in flight");
        p.from_server(r#"{"id":8,"error":{"code":-32603,"message":"no"}}"#, now);
        assert!(p.can_compact(T));
    }
}
