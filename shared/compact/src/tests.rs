//! Unit tests: the worker's decisions with a fake tmux and a fake /proc.

use crate::codes;
use crate::pin::{self, PaneCheck, PinEnv};
use crate::procfs::{ProcStat, Procs};
use crate::tmux::Tmux;
use crate::worker::{self, decide, Decision, Facts, Limits, Typing, World};
use kijito_files::private;
use kijito_gate::trigger::{self, Pin, Request, RequestState, Turn, TurnState, Via};
use kijito_gate::{Pass, QaDir};
use kijito_protocol::error::Result;
use kijito_protocol::ids::{AbsPath, Digest, MemoryId, MessageId, SessionId};
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::time::Duration;

const NONCE: &str = "0123456789abcdef0123456789abcdef";
const PANE_PID: u32 = 900;
const HOST_PID: u32 = 901;
const HOST_START: u64 = 5555;

fn sid() -> SessionId {
    SessionId::parse("sess-1").unwrap()
}

fn sock() -> AbsPath {
    AbsPath::parse("/tmp/kijito-test-tmux/sock").unwrap()
}

fn tmux_exe() -> AbsPath {
    AbsPath::parse("/usr/bin/tmux").unwrap()
}

fn tmux_pin() -> Pin {
    Pin { session_id: sid(), via: Via::Tmux { socket: sock(), pane: "%3".into(), host_pid: HOST_PID, host_start: HOST_START, tmux: Some(tmux_exe()) }, pinned_at_ms: 1 }
}

fn req(state: RequestState) -> Request {
    Request { session_id: sid(), via: "tmux".into(), nonce: NONCE.into(), requested_at_ms: 1000, updated_at_ms: 1000, state, ticket_invalidated: false, note: None }
}

/// A turn that began at 500 ms and ended at `at`.
fn ended(at: i64) -> Turn {
    Turn { session_id: sid(), state: TurnState::Ended, at_ms: at, started_at_ms: Some(500) }
}

/// Facts of a request that should be sent once the pane is checked.
fn ready<'a>(r: &'a Request, pin: &'a Pin, turn: &'a Turn) -> Facts<'a> {
    Facts {
        nonce: NONCE,
        request: Some(r),
        pin_at_start: pin,
        pin_now: Some(pin),
        turn: Some(turn),
        pane: PaneCheck::Alive,
        typing: Typing::Quiet,
        deferred_stop_ms: None,
        kill_switch: false,
        pass: Ok(()),
        claim: None,
        now_ms: 2000,
        sent_at_ms: None,
    }
}

fn limits() -> Limits {
    Limits { idle_wait_ms: 60_000, claim_wait_ms: 600_000, settle_ms: 300, enter_gap: Duration::from_millis(300), poll_idle: Duration::from_millis(20), poll_claim: Duration::from_millis(200), hold: None }
}

#[test]
fn sends_only_when_idle_and_the_pane_checks_out() {
    let (r, pin, t) = (req(RequestState::Pending), tmux_pin(), ended(1500));
    assert_eq!(decide(&ready(&r, &pin, &t), &limits()), Decision::Send);
    // Pane not looked at yet: look first.
    let f = Facts { pane: PaneCheck::Unchecked, ..ready(&r, &pin, &t) };
    assert_eq!(decide(&f, &limits()), Decision::CheckPane);
}

#[test]
fn waits_while_the_turn_runs_and_fails_after_the_idle_bound() {
    let (r, pin) = (req(RequestState::Pending), tmux_pin());
    let running = Turn { session_id: sid(), state: TurnState::Running, at_ms: 900, started_at_ms: Some(900) };
    let f = Facts { turn: Some(&running), pane: PaneCheck::Unchecked, ..ready(&r, &pin, &running) };
    assert_eq!(decide(&f, &limits()), Decision::Wait);
    // A Stop recorded before the request is an older turn: still waiting.
    let old = ended(999);
    let f = Facts { turn: Some(&old), pane: PaneCheck::Unchecked, ..ready(&r, &pin, &old) };
    assert_eq!(decide(&f, &limits()), Decision::Wait);
    // No turn record at all: waiting, never guessing.
    let f = Facts { turn: None, pane: PaneCheck::Unchecked, ..ready(&r, &pin, &old) };
    assert_eq!(decide(&f, &limits()), Decision::Wait);
    let f = Facts { turn: Some(&running), now_ms: 1000 + 60_001, ..ready(&r, &pin, &running) };
    assert_eq!(decide(&f, &limits()), Decision::Fail(codes::TURN_NOT_ENDED.into()));
}

#[test]
fn types_only_after_the_settle_time_since_stop() {
    let (r, pin, t) = (req(RequestState::Pending), tmux_pin(), ended(1800));
    let f = Facts { now_ms: 2099, ..ready(&r, &pin, &t) };
    assert_eq!(decide(&f, &limits()), Decision::Wait);
    let f = Facts { now_ms: 2100, ..ready(&r, &pin, &t) };
    assert_eq!(decide(&f, &limits()), Decision::Send);
}

#[test]
fn pane_gone_or_running_another_process_fails() {
    let (r, pin, t) = (req(RequestState::Pending), tmux_pin(), ended(1500));
    let f = Facts { pane: PaneCheck::Gone, ..ready(&r, &pin, &t) };
    assert_eq!(decide(&f, &limits()), Decision::Fail(codes::PANE_GONE.into()));
    let f = Facts { pane: PaneCheck::OtherProcess, ..ready(&r, &pin, &t) };
    assert_eq!(decide(&f, &limits()), Decision::Fail(codes::PANE_PROCESS_CHANGED.into()));
}

#[test]
fn kill_switch_stops_before_anything_is_sent() {
    let (r, pin, t) = (req(RequestState::Pending), tmux_pin(), ended(1500));
    let f = Facts { kill_switch: true, ..ready(&r, &pin, &t) };
    assert_eq!(decide(&f, &limits()), Decision::Fail(codes::KILL_SWITCH.into()));
}

#[test]
fn pass_expired_or_replaced_between_request_and_send_fails() {
    let (r, pin, t) = (req(RequestState::Pending), tmux_pin(), ended(1500));
    let f = Facts { pass: Err("pass_stale".into()), ..ready(&r, &pin, &t) };
    assert_eq!(decide(&f, &limits()), Decision::Fail("pass_stale".into()));
    let f = Facts { pass: Err(codes::REQUEST_SUPERSEDED.into()), ..ready(&r, &pin, &t) };
    assert_eq!(decide(&f, &limits()), Decision::Fail(codes::REQUEST_SUPERSEDED.into()));
}

#[test]
fn a_changed_or_removed_pin_fails() {
    let (r, pin, t) = (req(RequestState::Pending), tmux_pin(), ended(1500));
    let mut other = tmux_pin();
    other.via = Via::Tmux { socket: sock(), pane: "%4".into(), host_pid: HOST_PID, host_start: HOST_START, tmux: Some(tmux_exe()) };
    let f = Facts { pin_now: Some(&other), ..ready(&r, &pin, &t) };
    assert_eq!(decide(&f, &limits()), Decision::Fail(codes::PIN_CHANGED.into()));
    let f = Facts { pin_now: None, ..ready(&r, &pin, &t) };
    assert_eq!(decide(&f, &limits()), Decision::Fail(codes::PIN_CHANGED.into()));
}

#[test]
fn a_claim_before_sending_ends_as_compacted_without_typing() {
    let (r, pin, t) = (req(RequestState::Pending), tmux_pin(), ended(1500));
    let f = Facts { claim: Some((true, "pass_promoted".into())), kill_switch: true, ..ready(&r, &pin, &t) };
    assert_eq!(decide(&f, &limits()), Decision::Compacted { attested: true, reason: "pass_promoted".into() });
}

#[test]
fn after_sending_waits_for_the_claim_then_times_out() {
    let (r, pin, t) = (req(RequestState::Sent), tmux_pin(), ended(1500));
    let f = Facts { sent_at_ms: Some(2000), now_ms: 3000, ..ready(&r, &pin, &t) };
    assert_eq!(decide(&f, &limits()), Decision::Wait);
    let f = Facts { sent_at_ms: Some(2000), now_ms: 2000 + 600_001, ..ready(&r, &pin, &t) };
    assert_eq!(decide(&f, &limits()), Decision::TimedOut);
    let f = Facts { sent_at_ms: Some(2000), claim: Some((false, "pass_stale".into())), ..ready(&r, &pin, &t) };
    assert_eq!(decide(&f, &limits()), Decision::Compacted { attested: false, reason: "pass_stale".into() });
}

#[test]
fn another_pass_or_a_final_request_is_left_alone() {
    let (pin, t) = (tmux_pin(), ended(1500));
    let mut other = req(RequestState::Pending);
    other.nonce = "ffffffffffffffffffffffffffffffff".into();
    assert_eq!(decide(&ready(&other, &pin, &t), &limits()), Decision::Leave);
    let done = req(RequestState::TimedOut);
    assert_eq!(decide(&ready(&done, &pin, &t), &limits()), Decision::Leave);
    let sent_by_someone = req(RequestState::Sent);
    assert_eq!(decide(&ready(&sent_by_someone, &pin, &t), &limits()), Decision::Leave);
    let f = Facts { request: None, ..ready(&done, &pin, &t) };
    assert_eq!(decide(&f, &limits()), Decision::Leave);
}

// ---------------------------------------------------------------- fakes

#[derive(Default)]
struct FakeProcs {
    procs: HashMap<u32, (ProcStat, Vec<String>)>,
}

impl FakeProcs {
    fn add(&mut self, pid: u32, ppid: u32, start: u64, argv: &[&str]) {
        self.procs.insert(pid, (ProcStat { ppid, start }, argv.iter().map(|s| s.to_string()).collect()));
    }
    /// hook 1000 -> sh 999 -> host 901 -> pane shell 900 -> tmux 2
    fn standard() -> FakeProcs {
        let mut p = FakeProcs::default();
        p.add(1000, 999, 7000, &["session-hook"]);
        p.add(999, HOST_PID, 6999, &["sh", "-c", "session-hook"]);
        p.add(HOST_PID, PANE_PID, HOST_START, &["claude"]);
        p.add(PANE_PID, 2, 100, &["sh"]);
        p.add(2, 1, 50, &["tmux"]);
        p
    }
}

impl Procs for FakeProcs {
    fn stat(&self, pid: u32) -> Option<ProcStat> {
        self.procs.get(&pid).map(|p| p.0)
    }
    fn cmdline(&self, pid: u32) -> Option<Vec<String>> {
        self.procs.get(&pid).map(|p| p.1.clone())
    }
}

type Hook = Box<dyn Fn(&FakeTmux)>;

struct FakeTmux {
    pane_pid: Cell<Option<u32>>,
    /// `#{client_activity}` of the pane's session's clients (`Err`: the
    /// call fails).
    clients: RefCell<std::result::Result<Vec<i64>, &'static str>>,
    log: RefCell<Vec<String>>,
    on_enter: Box<dyn Fn()>,
    /// Runs right after `/compact` is typed (before the Enter's checks).
    on_literal: RefCell<Hook>,
}

impl FakeTmux {
    fn new(on_enter: impl Fn() + 'static) -> FakeTmux {
        FakeTmux {
            pane_pid: Cell::new(Some(PANE_PID)),
            clients: RefCell::new(Ok(vec![])),
            log: RefCell::new(Vec::new()),
            on_enter: Box::new(on_enter),
            on_literal: RefCell::new(Box::new(|_| {})),
        }
    }
}

impl Tmux for FakeTmux {
    fn pane_pid(&self, socket: &AbsPath, pane: &str) -> Result<Option<u32>> {
        self.log.borrow_mut().push(format!("display {socket} {pane}"));
        Ok(self.pane_pid.get())
    }
    fn client_activity(&self, socket: &AbsPath, pane: &str) -> Result<Vec<i64>> {
        self.log.borrow_mut().push(format!("list-clients {socket} {pane}"));
        self.clients.borrow().clone().map_err(|code| kijito_protocol::Error::new(code, "fake"))
    }
    fn send_literal(&self, socket: &AbsPath, pane: &str, text: &str) -> Result<()> {
        self.log.borrow_mut().push(format!("send-keys -S {socket} -t {pane} -l {text}"));
        (self.on_literal.borrow())(self);
        Ok(())
    }
    fn send_enter(&self, socket: &AbsPath, pane: &str) -> Result<()> {
        self.log.borrow_mut().push(format!("send-keys -S {socket} -t {pane} Enter"));
        (self.on_enter)();
        Ok(())
    }
}

fn sends(t: &FakeTmux) -> Vec<String> {
    t.log.borrow().iter().filter(|l| l.starts_with("send-keys")).cloned().collect()
}

// ---------------------------------------------------------------- discovery

fn env(tmux: &str, pane: &str) -> PinEnv {
    PinEnv { tmux: Some(tmux.into()), tmux_pane: Some(pane.into()), tmux_program: Some(tmux_exe()), ..PinEnv::default() }
}

#[test]
fn discovery_pins_the_ancestor_whose_parent_is_the_pane_process() {
    let t = FakeTmux::new(|| {});
    let via = pin::discover(&env("/tmp/kijito-test-tmux/sock,2,0", "%3"), 1000, &FakeProcs::standard(), &t).unwrap().unwrap();
    assert_eq!(via, tmux_pin().via);
    assert!(sends(&t).is_empty(), "discovery never types");
}

#[test]
fn discovery_refuses_the_codex_shared_daemon_and_foreign_panes() {
    let t = FakeTmux::new(|| {});
    let mut p = FakeProcs::standard();
    p.add(999, HOST_PID, 6999, &["/x/codex", "app-server", "--listen", "unix://", "--managed-daemon"]);
    let e = pin::discover(&env("/tmp/kijito-test-tmux/sock,2,0", "%3"), 1000, &p, &t).unwrap_err();
    assert_eq!(e.code(), codes::CODEX_DAEMON);
    assert!(e.message().contains("--no-daemon"));
    // The pane's process is not an ancestor (TMUX_PANE of another session).
    t.pane_pid.set(Some(4444));
    let e = pin::discover(&env("/tmp/kijito-test-tmux/sock,2,0", "%3"), 1000, &FakeProcs::standard(), &t).unwrap_err();
    assert_eq!(e.code(), codes::PANE_NOT_ANCESTOR);
    t.pane_pid.set(None);
    let e = pin::discover(&env("/tmp/kijito-test-tmux/sock,2,0", "%3"), 1000, &FakeProcs::standard(), &t).unwrap_err();
    assert_eq!(e.code(), codes::PANE_GONE);
}

#[test]
fn discovery_validates_the_environment() {
    let t = FakeTmux::new(|| {});
    let p = FakeProcs::standard();
    assert_eq!(pin::discover(&PinEnv::default(), 1000, &p, &t).unwrap(), None);
    assert_eq!(pin::discover(&PinEnv { tmux: Some("/s,1,0".into()), ..PinEnv::default() }, 1000, &p, &t).unwrap(), None);
    for (tm, pane) in [("relative,2,0", "%3"), ("/s,x,0", "%3"), ("/s", "%3"), ("/tmp/kijito-test-tmux/sock,2,0", "%3;x"), ("/tmp/kijito-test-tmux/sock,2,0", "3")] {
        assert_eq!(pin::discover(&env(tm, pane), 1000, &p, &t).unwrap_err().code(), codes::TMUX_ENV_INVALID, "{tm} {pane}");
    }
    let a = PinEnv { adapter_id: Some(NONCE.into()), adapter_socket: Some("/run/k/a.sock".into()), ..env("/tmp/kijito-test-tmux/sock,2,0", "%3") };
    assert!(matches!(pin::discover(&a, 1000, &p, &t).unwrap(), Some(Via::CodexAppServer { .. })), "the adapter wins over tmux");
    for (id, s) in [(Some("ABC"), Some("/a")), (Some(NONCE), Some("rel")), (Some(NONCE), None), (None, Some("/a"))] {
        let a = PinEnv { adapter_id: id.map(Into::into), adapter_socket: s.map(Into::into), ..PinEnv::default() };
        assert_eq!(pin::discover(&a, 1000, &p, &t).unwrap_err().code(), codes::ADAPTER_ENV_INVALID);
    }
}

#[test]
fn pane_check_tells_a_reused_pid_apart() {
    let t = FakeTmux::new(|| {});
    let mut p = FakeProcs::standard();
    assert_eq!(pin::check_pane(&tmux_pin().via, &p, &t).unwrap(), PaneCheck::Alive);
    p.add(HOST_PID, PANE_PID, HOST_START + 1, &["vim"]);
    assert_eq!(pin::check_pane(&tmux_pin().via, &p, &t).unwrap(), PaneCheck::OtherProcess);
    p.procs.remove(&HOST_PID);
    assert_eq!(pin::check_pane(&tmux_pin().via, &p, &t).unwrap(), PaneCheck::OtherProcess);
    t.pane_pid.set(None);
    assert_eq!(pin::check_pane(&tmux_pin().via, &FakeProcs::standard(), &t).unwrap(), PaneCheck::Gone);
}

// ---------------------------------------------------------------- run() on real files

struct Dir {
    _tmp: tempfile::TempDir,
    data: AbsPath,
    qa: QaDir,
}

fn data_dir() -> Dir {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path().join("data");
    private::ensure_private_dir(&d).unwrap();
    let data = AbsPath::parse(d.to_str().unwrap()).unwrap();
    let qa = QaDir::open(&data).unwrap();
    Dir { _tmp: tmp, data, qa }
}

fn write_pass(d: &Dir, recorded_at_ms: i64, nonce: &str) {
    let transcript = d.data.join("transcript.jsonl").unwrap();
    std::fs::write(transcript.as_path(), b"{}\n").unwrap();
    let dg = |c: char| Digest::parse(&c.to_string().repeat(64)).unwrap();
    let pass = Pass {
        session_id: sid(),
        recorded_at_ms,
        pointer_id: MemoryId::parse("7").unwrap(),
        lock_message_id: MessageId::parse("8").unwrap(),
        pointer_digest: dg('a'),
        snapshot_digest: dg('b'),
        cold_boot_report_digests: [dg('c'), dg('d')],
        compaction_nonce: nonce.into(),
        transcript: kijito_gate::transcript_identity(&transcript).unwrap(),
    };
    private::write_atomic(&d.qa.pass(&sid()), &pass.to_bytes()).unwrap();
}

struct Clock(Cell<i64>);

fn run_with(d: &Dir, tmux: &FakeTmux, procs: &FakeProcs, clock: &Clock, on_sleep: &dyn Fn(i64)) -> RequestState {
    let now = || clock.0.get();
    let sleep = |dur: Duration| {
        clock.0.set(clock.0.get() + dur.as_millis() as i64);
        on_sleep(clock.0.get());
    };
    let w = World { tmux, procs, now_ms: &now, sleep: &sleep };
    worker::run(&d.data, &sid(), NONCE, &limits(), &w).unwrap()
}

/// Pass, pin, request at t=1000, turn running.
fn setup(d: &Dir) {
    write_pass(d, 900, NONCE);
    trigger::write_pin(&d.qa, &tmux_pin()).unwrap();
    trigger::record_turn(&d.qa, &sid(), TurnState::Running, 950).unwrap();
    let (r, _) = trigger::create_request(&d.qa, &sid(), 1000).unwrap();
    assert_eq!(r.nonce, NONCE);
}

#[test]
fn worker_types_exactly_compact_and_enter_after_stop_then_records_the_claim() {
    let d = data_dir();
    setup(&d);
    let qa = d.qa.clone();
    let tr = d.data.join("transcript.jsonl").unwrap();
    // The "host": on Enter, PreCompact promotes and PostCompact claims.
    let tmux = FakeTmux::new(move || {
        kijito_gate::precompact(&qa, &sid(), Some(&tr), "manual", 1500).unwrap();
        kijito_gate::claim(&qa, &sid(), 1600).unwrap();
    });
    let qa2 = d.qa.clone();
    let clock = Clock(Cell::new(1000));
    let state = run_with(&d, &tmux, &FakeProcs::standard(), &clock, &move |now| {
        if (1200..1220).contains(&now) {
            trigger::record_turn(&qa2, &sid(), TurnState::Ended, now).unwrap();
        }
    });
    assert_eq!(state, RequestState::Compacted { attested: true, reason: "pass_promoted".into() });
    assert_eq!(sends(&tmux), vec!["send-keys -S /tmp/kijito-test-tmux/sock -t %3 -l /compact", "send-keys -S /tmp/kijito-test-tmux/sock -t %3 Enter"]);
    let r = trigger::read_request(&d.qa, &sid()).unwrap().unwrap();
    assert_eq!(r.state, state);
    let st = crate::status(&d.data, &sid()).unwrap();
    assert_eq!(st["state"], "compacted");
    assert_eq!(st["attested"], true);
}

#[test]
fn worker_times_out_and_invalidates_a_promoted_unclaimed_ticket() {
    let d = data_dir();
    setup(&d);
    trigger::record_turn(&d.qa, &sid(), TurnState::Ended, 1001).unwrap();
    let qa = d.qa.clone();
    let tr = d.data.join("transcript.jsonl").unwrap();
    // The host ran PreCompact (ticket promoted) but never claimed.
    let tmux = FakeTmux::new(move || {
        let a = kijito_gate::precompact(&qa, &sid(), Some(&tr), "manual", 1500).unwrap();
        assert!(a.attested);
    });
    let clock = Clock(Cell::new(1000));
    let state = run_with(&d, &tmux, &FakeProcs::standard(), &clock, &|_| {});
    assert_eq!(state, RequestState::TimedOut);
    assert_eq!(sends(&tmux).len(), 2);
    let r = trigger::read_request(&d.qa, &sid()).unwrap().unwrap();
    assert!(r.ticket_invalidated);
    assert!(std::fs::symlink_metadata(d.qa.ticket(&sid())).is_err(), "the stale ticket is gone");
    assert_eq!(crate::status(&d.data, &sid()).unwrap()["ticketInvalidated"], true);
}

#[test]
fn worker_never_types_into_a_gone_pane_or_with_the_kill_switch() {
    for case in ["gone", "other", "kill", "expired"] {
        let d = data_dir();
        setup(&d);
        trigger::record_turn(&d.qa, &sid(), TurnState::Ended, 1001).unwrap();
        let tmux = FakeTmux::new(|| {});
        let mut procs = FakeProcs::standard();
        let clock = Clock(Cell::new(1000));
        let want = match case {
            "gone" => {
                tmux.pane_pid.set(None);
                codes::PANE_GONE
            }
            "other" => {
                procs.add(HOST_PID, PANE_PID, 1, &["bash"]);
                codes::PANE_PROCESS_CHANGED
            }
            "kill" => {
                std::fs::write(trigger::kill_switch(&d.data), b"").unwrap();
                codes::KILL_SWITCH
            }
            _ => {
                clock.0.set(900 + kijito_gate::PASS_MAX_AGE_MS + 1);
                "pass_stale"
            }
        };
        let state = run_with(&d, &tmux, &procs, &clock, &|_| {});
        assert_eq!(state, RequestState::Failed { code: want.into() }, "{case}");
        assert!(sends(&tmux).is_empty(), "{case}: nothing typed");
    }
}

#[test]
fn a_second_request_for_one_pass_is_refused() {
    let d = data_dir();
    setup(&d);
    let e = trigger::create_request(&d.qa, &sid(), 1100).unwrap_err();
    assert_eq!(e.code(), codes::REQUEST_EXISTS);
    // A fresh pass (new nonce) may be requested again.
    write_pass(&d, 1200, "ffffffffffffffffffffffffffffffff");
    assert!(trigger::create_request(&d.qa, &sid(), 1300).is_ok());
    // ... and the worker of the old pass leaves it alone.
    let tmux = FakeTmux::new(|| {});
    let clock = Clock(Cell::new(1300));
    let state = run_with(&d, &tmux, &FakeProcs::standard(), &clock, &|_| {});
    assert_eq!(state, RequestState::Pending);
    assert!(sends(&tmux).is_empty());
}

#[test]
fn request_without_pass_or_pin() {
    let d = data_dir();
    let exe = std::path::Path::new("/nonexistent/kijito-compact");
    assert_eq!(crate::request(&d.data, &sid(), exe, 1000).unwrap_err().code(), codes::PASS_MISSING);
    write_pass(&d, 900, NONCE);
    let e = crate::request(&d.data, &sid(), exe, 1000).unwrap_err();
    assert_eq!(e.code(), codes::NO_SAFE_TRIGGER);
    assert!(e.message().contains("ask the user to run /compact"));
    // An app-server pin only records the request.
    let pin = Pin { session_id: sid(), via: Via::CodexAppServer { adapter_id: NONCE.into(), socket: sock() }, pinned_at_ms: 1 };
    trigger::write_pin(&d.qa, &pin).unwrap();
    std::fs::write(trigger::kill_switch(&d.data), b"").unwrap();
    assert_eq!(crate::request(&d.data, &sid(), exe, 1000).unwrap_err().code(), codes::NO_SAFE_TRIGGER);
    std::fs::remove_file(trigger::kill_switch(&d.data)).unwrap();
    let line = crate::request(&d.data, &sid(), exe, 1000).unwrap();
    assert_eq!(line, format!(r#"{{"type":"kijito.compaction.requested","sessionId":"sess-1","via":"codex-app-server","nonce":"{NONCE}"}}"#));
    assert_eq!(crate::status(&d.data, &sid()).unwrap()["state"], "pending");
}

// ---------------------------------------------------------------- the tmux executable

#[test]
fn discovery_without_a_safe_tmux_on_path_pins_nothing() {
    let t = FakeTmux::new(|| {});
    let e = pin::discover(&PinEnv { tmux_program: None, ..env("/tmp/kijito-test-tmux/sock,2,0", "%3") }, 1000, &FakeProcs::standard(), &t).unwrap_err();
    assert_eq!(e.code(), codes::TMUX_UNAVAILABLE);
    assert!(t.log.borrow().is_empty(), "no tmux call without a safe executable");
}

fn exe(dir: &std::path::Path, name: &str, mode: u32, body: &str) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(dir).unwrap();
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
    p
}

#[test]
fn the_tmux_on_path_is_resolved_like_a_shell_and_refused_when_others_can_change_it() {
    use crate::tmux::{program_is_safe, resolve_on_path};
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().unwrap();
    let base = std::fs::canonicalize(tmp.path()).unwrap();
    std::fs::set_permissions(&base, std::fs::Permissions::from_mode(0o755)).unwrap();
    let a = exe(&base.join("a"), "tmux", 0o755, "exit 0");
    let b = exe(&base.join("b"), "tmux", 0o755, "exit 0");
    let (da, db) = (base.join("a"), base.join("b"));
    let path = |dirs: &[&str]| dirs.join(":");
    // first absolute entry with a tmux wins; empty and relative entries (the cwd) are skipped
    let got = resolve_on_path(&path(&["", "rel", base.join("none").to_str().unwrap(), da.to_str().unwrap(), db.to_str().unwrap()])).unwrap();
    assert_eq!(got.as_str(), a.to_str().unwrap());
    assert!(program_is_safe(&b));
    // group/world-writable file: refused, and not skipped for the next one
    std::fs::set_permissions(&a, std::fs::Permissions::from_mode(0o757)).unwrap();
    assert!(!program_is_safe(&a));
    assert_eq!(resolve_on_path(&path(&[da.to_str().unwrap(), db.to_str().unwrap()])), None);
    std::fs::set_permissions(&a, std::fs::Permissions::from_mode(0o755)).unwrap();
    // a world-writable directory: refused
    std::fs::set_permissions(&da, std::fs::Permissions::from_mode(0o777)).unwrap();
    assert!(!program_is_safe(&a));
    std::fs::set_permissions(&da, std::fs::Permissions::from_mode(0o755)).unwrap();
    // not executable, not named tmux, a directory, missing
    std::fs::set_permissions(&a, std::fs::Permissions::from_mode(0o644)).unwrap();
    assert!(!program_is_safe(&a));
    let other = exe(&base.join("c"), "sh", 0o755, "exit 0");
    assert!(!program_is_safe(&other));
    assert!(!program_is_safe(&base.join("a")));
    assert!(!program_is_safe(&base.join("missing/tmux")));
    // a symlink named tmux to a safe file is judged by the file it resolves to
    std::os::unix::fs::symlink(&b, base.join("c/tmux")).unwrap();
    assert!(program_is_safe(&base.join("c/tmux")));
}

#[test]
fn a_pinned_tmux_is_checked_again_before_every_call() {
    use crate::tmux::RealTmux;
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().unwrap();
    let base = std::fs::canonicalize(tmp.path()).unwrap();
    std::fs::set_permissions(&base, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mark = base.join("ran");
    let prog = exe(&base.join("bin"), "tmux", 0o755, &format!("echo \"$@\" >> '{}'; echo 4242", mark.display()));
    let abs = AbsPath::parse(prog.to_str().unwrap()).unwrap();
    let via = Via::Tmux { socket: sock(), pane: "%3".into(), host_pid: HOST_PID, host_start: HOST_START, tmux: Some(abs.clone()) };
    let t = RealTmux::for_via(&via);
    assert_eq!(t.program, prog.to_str().unwrap());
    assert_eq!(t.pane_pid(&sock(), "%3").unwrap(), Some(4242));
    t.send_literal(&sock(), "%3", "/compact").unwrap();
    let log = std::fs::read_to_string(&mark).unwrap();
    assert_eq!(log, "-S /tmp/kijito-test-tmux/sock display-message -p -t %3 #{pane_pid}\n-S /tmp/kijito-test-tmux/sock send-keys -t %3 -l /compact\n");
    // someone else could now change it: refused, not run
    std::fs::set_permissions(&prog, std::fs::Permissions::from_mode(0o777)).unwrap();
    assert_eq!(t.send_enter(&sock(), "%3").unwrap_err().code(), codes::TMUX_UNAVAILABLE);
    assert_eq!(std::fs::read_to_string(&mark).unwrap(), log, "the unsafe program did not run");
    // a pin written before the executable was recorded: tmux on PATH
    let old = Via::Tmux { socket: sock(), pane: "%3".into(), host_pid: HOST_PID, host_start: HOST_START, tmux: None };
    assert_eq!(RealTmux::for_via(&old).program, "tmux");
}
