//! Unit tests: the worker's decisions with a fake tmux and a fake /proc.

use crate::codes;
use crate::pin::{self, PaneCheck, PinEnv};
use crate::procfs::{ProcStat, Procs};
use crate::tmux::Tmux;
use crate::trigger::{self, Pin, Request, RequestState, Turn, TurnState, Via, ViaKind};
use crate::worker::{self, decide, Decision, Facts, Limits, Typing, World};
use kijito_files::private;
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
    Pin {
        session_id: sid(),
        via: Via::Tmux { socket: sock(), pane: "%3".into(), host_pid: HOST_PID, host_start: HOST_START, tmux: Some(tmux_exe()) },
        pinned_at_ms: 1,
    }
}

fn req(state: RequestState) -> Request {
    Request {
        session_id: sid(),
        via: ViaKind::Tmux,
        nonce: NONCE.into(),
        requested_at_ms: 1000,
        updated_at_ms: 1000,
        state,
        ticket_invalidated: false,
        note: None,
    }
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
    Limits {
        idle_wait_ms: 60_000,
        claim_wait_ms: 600_000,
        settle_ms: 300,
        enter_gap: Duration::from_millis(300),
        poll_idle: Duration::from_millis(20),
        poll_claim: Duration::from_millis(200),
        hold: None,
    }
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
    /// Make `send-keys -l` / `send-keys Enter` fail (`send_failed`).
    fail_literal: Cell<bool>,
    fail_enter: Cell<bool>,
}

impl FakeTmux {
    fn new(on_enter: impl Fn() + 'static) -> FakeTmux {
        FakeTmux {
            pane_pid: Cell::new(Some(PANE_PID)),
            clients: RefCell::new(Ok(vec![])),
            log: RefCell::new(Vec::new()),
            on_enter: Box::new(on_enter),
            on_literal: RefCell::new(Box::new(|_| {})),
            fail_literal: Cell::new(false),
            fail_enter: Cell::new(false),
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
        self.clients
            .borrow()
            .clone()
            .map_err(|code| kijito_protocol::Error::new(crate::codes::Code::parse(code).expect("a compact code"), "fake"))
    }
    fn send_literal(&self, socket: &AbsPath, pane: &str, text: &str) -> Result<()> {
        if self.fail_literal.get() {
            return Err(kijito_protocol::Error::new(codes::SEND_FAILED, "fake"));
        }
        self.log.borrow_mut().push(format!("send-keys -S {socket} -t {pane} -l {text}"));
        (self.on_literal.borrow())(self);
        Ok(())
    }
    fn send_enter(&self, socket: &AbsPath, pane: &str) -> Result<()> {
        if self.fail_enter.get() {
            return Err(kijito_protocol::Error::new(codes::SEND_FAILED, "fake"));
        }
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
    assert_eq!(e.code(), codes::CODEX_DAEMON.as_str());
    assert!(e.message().contains("--no-daemon"));
    // The pane's process is not an ancestor (TMUX_PANE of another session).
    t.pane_pid.set(Some(4444));
    let e = pin::discover(&env("/tmp/kijito-test-tmux/sock,2,0", "%3"), 1000, &FakeProcs::standard(), &t).unwrap_err();
    assert_eq!(e.code(), codes::PANE_NOT_ANCESTOR.as_str());
    t.pane_pid.set(None);
    let e = pin::discover(&env("/tmp/kijito-test-tmux/sock,2,0", "%3"), 1000, &FakeProcs::standard(), &t).unwrap_err();
    assert_eq!(e.code(), codes::PANE_GONE.as_str());
}

#[test]
fn discovery_validates_the_environment() {
    let t = FakeTmux::new(|| {});
    let p = FakeProcs::standard();
    assert_eq!(pin::discover(&PinEnv::default(), 1000, &p, &t).unwrap(), None);
    assert_eq!(pin::discover(&PinEnv { tmux: Some("/s,1,0".into()), ..PinEnv::default() }, 1000, &p, &t).unwrap(), None);
    for (tm, pane) in [
        ("relative,2,0", "%3"),
        ("/s,x,0", "%3"),
        ("/s", "%3"),
        ("/tmp/kijito-test-tmux/sock,2,0", "%3;x"),
        ("/tmp/kijito-test-tmux/sock,2,0", "3"),
    ] {
        assert_eq!(pin::discover(&env(tm, pane), 1000, &p, &t).unwrap_err().code(), codes::TMUX_ENV_INVALID.as_str(), "{tm} {pane}");
    }
    let a = PinEnv {
        adapter_id: Some(NONCE.into()),
        adapter_socket: Some("/run/k/a.sock".into()),
        ..env("/tmp/kijito-test-tmux/sock,2,0", "%3")
    };
    assert!(matches!(pin::discover(&a, 1000, &p, &t).unwrap(), Some(Via::CodexAppServer { .. })), "the adapter wins over tmux");
    for (id, s) in [(Some("ABC"), Some("/a")), (Some(NONCE), Some("rel")), (Some(NONCE), None), (None, Some("/a"))] {
        let a = PinEnv { adapter_id: id.map(Into::into), adapter_socket: s.map(Into::into), ..PinEnv::default() };
        assert_eq!(pin::discover(&a, 1000, &p, &t).unwrap_err().code(), codes::ADAPTER_ENV_INVALID.as_str());
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
    let w = World { tmux, procs, now_ms: &now, sleep: &sleep, lock_kept: &|| true };
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
    assert_eq!(
        sends(&tmux),
        vec!["send-keys -S /tmp/kijito-test-tmux/sock -t %3 -l /compact", "send-keys -S /tmp/kijito-test-tmux/sock -t %3 Enter"]
    );
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
                codes::PANE_GONE.as_str()
            }
            "other" => {
                procs.add(HOST_PID, PANE_PID, 1, &["bash"]);
                codes::PANE_PROCESS_CHANGED.as_str()
            }
            "kill" => {
                std::fs::write(trigger::kill_switch(&d.data), b"").unwrap();
                codes::KILL_SWITCH.as_str()
            }
            _ => {
                clock.0.set(900 + kijito_gate::PASS_MAX_AGE_MS + 1);
                kijito_gate::pass::codes::PASS_STALE.as_str()
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
    assert_eq!(e.code(), codes::REQUEST_EXISTS.as_str());
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
    assert_eq!(crate::request(&d.data, &sid(), exe, 1000).unwrap_err().code(), kijito_gate::pass::codes::PASS_MISSING.as_str());
    write_pass(&d, 900, NONCE);
    let e = crate::request(&d.data, &sid(), exe, 1000).unwrap_err();
    assert_eq!(e.code(), codes::NO_SAFE_TRIGGER.as_str());
    assert!(e.message().contains("ask the user to run /compact"));
    // An app-server pin only records the request.
    let pin = Pin { session_id: sid(), via: Via::CodexAppServer { adapter_id: NONCE.into(), socket: sock() }, pinned_at_ms: 1 };
    trigger::write_pin(&d.qa, &pin).unwrap();
    std::fs::write(trigger::kill_switch(&d.data), b"").unwrap();
    assert_eq!(crate::request(&d.data, &sid(), exe, 1000).unwrap_err().code(), codes::NO_SAFE_TRIGGER.as_str());
    std::fs::remove_file(trigger::kill_switch(&d.data)).unwrap();
    let line = crate::request(&d.data, &sid(), exe, 1000).unwrap();
    assert_eq!(
        line,
        format!(r#"{{"type":"kijito.compaction.requested","sessionId":"sess-1","via":"codex-app-server","nonce":"{NONCE}"}}"#)
    );
    assert_eq!(crate::status(&d.data, &sid()).unwrap()["state"], "pending");
}

// ---------------------------------------------------------------- the tmux executable

#[test]
fn discovery_without_a_safe_tmux_on_path_pins_nothing() {
    let t = FakeTmux::new(|| {});
    let e = pin::discover(&PinEnv { tmux_program: None, ..env("/tmp/kijito-test-tmux/sock,2,0", "%3") }, 1000, &FakeProcs::standard(), &t)
        .unwrap_err();
    assert_eq!(e.code(), codes::TMUX_UNAVAILABLE.as_str());
    assert!(t.log.borrow().is_empty(), "no tmux call without a safe executable");
}

fn exe(dir: &std::path::Path, name: &str, mode: u32, body: &str) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(dir).unwrap();
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    let p = dir.join(name);
    kijito_testkit::write_executable(&p, &format!("#!/bin/sh\n{body}\n"), mode);
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
    let got =
        resolve_on_path(&path(&["", "rel", base.join("none").to_str().unwrap(), da.to_str().unwrap(), db.to_str().unwrap()])).unwrap();
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
    assert_eq!(
        log,
        "-S /tmp/kijito-test-tmux/sock display-message -p -t %3 #{pane_pid}\n-S /tmp/kijito-test-tmux/sock send-keys -t %3 -l /compact\n"
    );
    // someone else could now change it: refused, not run
    std::fs::set_permissions(&prog, std::fs::Permissions::from_mode(0o777)).unwrap();
    assert_eq!(t.send_enter(&sock(), "%3").unwrap_err().code(), codes::TMUX_UNAVAILABLE.as_str());
    assert_eq!(std::fs::read_to_string(&mark).unwrap(), log, "the unsafe program did not run");
    // a pin written before the executable was recorded: tmux on PATH
    let old = Via::Tmux { socket: sock(), pane: "%3".into(), host_pid: HOST_PID, host_start: HOST_START, tmux: None };
    assert_eq!(RealTmux::for_via(&old).program, "tmux");
}

// ---------------------------------------------------------------- pinning: the two pane shapes

fn tmux_env() -> PinEnv {
    env("/tmp/kijito-test-tmux/sock,2,0", "%3")
}

fn pinned(p: &FakeProcs, pane_pid: u32) -> std::result::Result<(u32, u64), String> {
    let t = FakeTmux::new(|| {});
    t.pane_pid.set(Some(pane_pid));
    match pin::discover(&tmux_env(), 1000, p, &t) {
        Ok(Some(Via::Tmux { host_pid, host_start, .. })) => Ok((host_pid, host_start)),
        Ok(other) => panic!("no tmux pin: {other:?}"),
        Err(e) => Err(e.code().to_owned()),
    }
}

#[test]
fn discovery_pins_the_host_that_is_the_panes_own_process() {
    // `tmux new-session claude`: hook 1000 -> sh -c 999 -> claude 900 (the pane's process)
    let mut p = FakeProcs::default();
    p.add(1000, 999, 7000, &["session-hook"]);
    p.add(999, 900, 6999, &["/bin/sh", "-c", "session-hook --host claude"]);
    p.add(900, 2, 100, &["claude"]);
    p.add(2, 1, 50, &["tmux"]);
    assert_eq!(pinned(&p, 900), Ok((900, 100)), "the pane's process, never the hook's shell");
    // a host that runs the hook with no shell in between
    p.add(1000, 900, 7000, &["session-hook"]);
    assert_eq!(pinned(&p, 900), Ok((900, 100)));
    // only shells up to the pane (its command is a shell running the host's script): the pane's process
    p.add(1000, 999, 7000, &["session-hook"]);
    p.add(900, 2, 100, &["sh", "-c", "exec-ish host; sleep 600"]);
    assert_eq!(pinned(&p, 900), Ok((900, 100)));
    // the hook is the pane's process itself: nothing outlives it
    assert_eq!(pinned(&p, 1000), Err(codes::PANE_NOT_ANCESTOR.into()));
}

#[test]
fn discovery_pins_the_child_of_the_panes_shell() {
    // Claude from a pane shell: hook -> sh -c -> claude 901 -> sh 900 (pane)
    assert_eq!(pinned(&FakeProcs::standard(), PANE_PID), Ok((HOST_PID, HOST_START)));
    // Codex --no-daemon, measured: hook -> codex 110 -> node 96 -> sh -c 94 (pane): the launcher
    let mut p = FakeProcs::default();
    p.add(1000, 110, 7000, &["python3", "probe.py"]);
    p.add(110, 96, 600, &["/x/codex", "--no-daemon"]);
    p.add(96, 94, 500, &["node", "/x/.bin/codex", "--no-daemon"]);
    p.add(94, 93, 400, &["/bin/sh", "-c", "/x/.bin/codex --no-daemon; echo exited; sleep 600"]);
    p.add(93, 1, 300, &["tmux: server"]);
    assert_eq!(pinned(&p, 94), Ok((96, 500)));
    // the native codex as the pane's command: the launcher-less chain pins codex
    assert_eq!(pinned(&p, 96), Ok((110, 600)));
    assert_eq!(pinned(&p, 110), Ok((110, 600)));
    // a launcher between the host and the pane shell: the pane's child
    let mut p = FakeProcs::standard();
    p.add(HOST_PID, 950, HOST_START, &["claude"]);
    p.add(950, PANE_PID, 940, &["node", "/x/claude-launcher"]);
    assert_eq!(pinned(&p, PANE_PID), Ok((950, 940)));
    // the Claude chain of the harness: hook -> sh -c -> claude -> sh -c (pane)
    let mut p = FakeProcs::standard();
    p.add(PANE_PID, 2, 100, &["/bin/sh", "-c", "claude --session-id x"]);
    assert_eq!(pinned(&p, PANE_PID), Ok((HOST_PID, HOST_START)));
}

#[test]
fn discovery_fails_closed_on_a_broken_chain() {
    let mut p = FakeProcs::standard();
    // an ancestor vanished mid-walk
    p.procs.remove(&HOST_PID);
    assert_eq!(pinned(&p, PANE_PID), Err(codes::PANE_NOT_ANCESTOR.into()));
    // the chain reaches init without the pane
    let mut p = FakeProcs::standard();
    p.add(1, 0, 1, &["init"]);
    assert_eq!(pinned(&p, 4444), Err(codes::PANE_NOT_ANCESTOR.into()));
    // a Codex daemon as the pane's own process is refused too
    let mut p = FakeProcs::standard();
    p.add(PANE_PID, 2, 100, &["codex", "app-server", "--managed-daemon"]);
    assert_eq!(pinned(&p, PANE_PID), Err(codes::CODEX_DAEMON.into()));
    // ... but the hook's own argv never counts
    let mut p = FakeProcs::standard();
    p.add(1000, 999, 7000, &["codex", "app-server", "--managed-daemon"]);
    assert_eq!(pinned(&p, PANE_PID), Ok((HOST_PID, HOST_START)));
    // a chain longer than the bound
    let mut p = FakeProcs::default();
    for pid in 1000..1000 + pin::MAX_ANCESTORS as u32 + 2 {
        p.add(pid, pid + 1, 1, &["x"]);
    }
    assert_eq!(pinned(&p, 1000 + pin::MAX_ANCESTORS as u32 + 1), Err(codes::PANE_NOT_ANCESTOR.into()));
    assert!(pinned(&p, 1000 + pin::MAX_ANCESTORS as u32 - 1).is_ok(), "the last pid inside the bound");
}

#[test]
fn command_shells_are_told_from_hosts_and_interactive_shells() {
    let v = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    for yes in [
        &["sh", "-c", "x"][..],
        &["/bin/bash", "-lc", "x"],
        &["-bash", "-c", "x"],
        &["bash", "--norc", "-o", "pipefail", "-c", "x"],
        &["zsh", "+o", "nomatch", "-e", "+x", "-c", "x"],
        &["/usr/bin/dash", "-ec", "x"],
    ] {
        assert!(pin::is_command_shell(&v(yes)), "{yes:?}");
    }
    for no in [
        &[][..],
        &["bash"],
        &["-bash"],
        &["sh", "script.sh"],
        &["sh", "script.sh", "-c", "x"],
        &["sh", "-", "-c"],
        &["sh", "-o"],
        &["sh", "-e"],
        &["sh", "+c"],
        &["claude", "-c", "x"],
        &["/x/shc", "-c", "x"],
        &["fish", "-c", "x"],
    ] {
        assert!(!pin::is_command_shell(&v(no)), "{no:?}");
    }
}

#[test]
fn pane_check_accepts_both_shapes_and_tells_a_reused_pid_apart() {
    let t = FakeTmux::new(|| {});
    // the pinned host is the pane's process
    let mut p = FakeProcs::default();
    p.add(PANE_PID, 2, 100, &["claude"]);
    let own = Via::Tmux { socket: sock(), pane: "%3".into(), host_pid: PANE_PID, host_start: 100, tmux: Some(tmux_exe()) };
    assert_eq!(pin::check_pane(&own, &p, &t).unwrap(), PaneCheck::Alive);
    // the pane's pid reused by another process (respawned pane, same pid): another start time
    p.add(PANE_PID, 2, 101, &["claude"]);
    assert_eq!(pin::check_pane(&own, &p, &t).unwrap(), PaneCheck::OtherProcess);
    // the pane now runs another process: the pinned pid neither is it nor its child
    t.pane_pid.set(Some(777));
    p.add(PANE_PID, 2, 100, &["claude"]);
    assert_eq!(pin::check_pane(&own, &p, &t).unwrap(), PaneCheck::OtherProcess);
    // a child shape pin whose start time matches but whose parent is not the pane
    let mut p = FakeProcs::standard();
    t.pane_pid.set(Some(PANE_PID));
    p.add(HOST_PID, 1, HOST_START, &["claude"]);
    assert_eq!(pin::check_pane(&tmux_pin().via, &p, &t).unwrap(), PaneCheck::OtherProcess);
    // an app-server pin is never a pane
    let app = Via::CodexAppServer { adapter_id: NONCE.into(), socket: sock() };
    assert_eq!(pin::check_pane(&app, &p, &t).unwrap(), PaneCheck::Gone);
}

// ---------------------------------------------------------------- the keystroke rule

fn turn(started: Option<i64>, stop: i64) -> Turn {
    Turn { session_id: sid(), state: TurnState::Ended, at_ms: stop, started_at_ms: started }
}

#[test]
fn keys_count_from_the_second_the_turn_began() {
    use worker::user_typed;
    // began at 10.5 s, ended at 20 s
    let t = turn(Some(10_500), 20_000);
    assert!(!user_typed(&[], &t, 0), "no client");
    assert!(!user_typed(&[9], &t, 0), "the last key before the turn");
    assert!(!user_typed(&[10], &t, 0), "the submit key's second");
    assert!(user_typed(&[11], &t, 0), "a key during the turn");
    assert!(user_typed(&[20], &t, 0), "a key after the Stop");
    assert!(user_typed(&[3, 11], &t, 0), "any client");
    // the whole turn in one second: a key after the Stop may hide in it
    let t = turn(Some(10_100), 10_900);
    assert!(user_typed(&[10], &t, 0));
    assert!(!user_typed(&[9], &t, 0));
    // a start in second 10, a stop in second 11
    let t = turn(Some(10_999), 11_000);
    assert!(!user_typed(&[10], &t, 0));
    assert!(user_typed(&[11], &t, 0));
    // no recorded start: keys since the pin's second, that second included
    let t = turn(None, 20_000);
    assert!(!user_typed(&[4], &t, 5_500));
    assert!(user_typed(&[5], &t, 5_500));
    assert!(user_typed(&[6], &t, 5_500));
}

#[test]
fn the_keystroke_check_orders_kill_switch_pane_then_keys() {
    use worker::keystroke_check as k;
    assert_eq!(k(false, PaneCheck::Alive, &Typing::Quiet), None);
    assert_eq!(k(true, PaneCheck::Alive, &Typing::Quiet), Some(codes::KILL_SWITCH.into()));
    assert_eq!(k(true, PaneCheck::Gone, &Typing::Typed), Some(codes::KILL_SWITCH.into()));
    assert_eq!(k(false, PaneCheck::Gone, &Typing::Typed), Some(codes::PANE_GONE.into()));
    assert_eq!(k(false, PaneCheck::Unchecked, &Typing::Quiet), Some(codes::PANE_GONE.into()));
    assert_eq!(k(false, PaneCheck::OtherProcess, &Typing::Typed), Some(codes::PANE_PROCESS_CHANGED.into()));
    assert_eq!(k(false, PaneCheck::Alive, &Typing::Typed), Some(codes::USER_TYPED.into()));
    assert_eq!(k(false, PaneCheck::Alive, &Typing::Unknown("tmux_unavailable".into())), Some("tmux_unavailable".into()));
    assert_eq!(k(false, PaneCheck::Alive, &Typing::Unchecked), Some(codes::TMUX_UNAVAILABLE.into()));
}

#[test]
fn decide_defers_on_keys_and_waits_for_a_later_stop() {
    let (r, pin, t) = (req(RequestState::Pending), tmux_pin(), ended(1500));
    let f = Facts { typing: Typing::Typed, ..ready(&r, &pin, &t) };
    assert_eq!(decide(&f, &limits()), Decision::Defer { reason: codes::USER_TYPED.into(), stop_ms: 1500 });
    // the pane is checked before the keys count
    let f = Facts { typing: Typing::Typed, pane: PaneCheck::OtherProcess, ..ready(&r, &pin, &t) };
    assert_eq!(decide(&f, &limits()), Decision::Fail(codes::PANE_PROCESS_CHANGED.into()));
    // the clients not read yet: read them
    let f = Facts { typing: Typing::Unchecked, ..ready(&r, &pin, &t) };
    assert_eq!(decide(&f, &limits()), Decision::CheckPane);
    let f = Facts { typing: Typing::Unchecked, pane: PaneCheck::Gone, ..ready(&r, &pin, &t) };
    assert_eq!(decide(&f, &limits()), Decision::Fail(codes::PANE_GONE.into()));
    let f = Facts { typing: Typing::Unknown(codes::TMUX_UNAVAILABLE.into()), ..ready(&r, &pin, &t) };
    assert_eq!(decide(&f, &limits()), Decision::Fail(codes::TMUX_UNAVAILABLE.into()));
    // the Stop already declined (and any before it) is not a new one
    for declined in [1500, 1600] {
        let f = Facts { deferred_stop_ms: Some(declined), ..ready(&r, &pin, &t) };
        assert_eq!(decide(&f, &limits()), Decision::Wait, "{declined}");
    }
    let f = Facts { deferred_stop_ms: Some(1499), ..ready(&r, &pin, &t) };
    assert_eq!(decide(&f, &limits()), Decision::Send);
    // the idle bound after a declined Stop says why
    let f = Facts { deferred_stop_ms: Some(1500), now_ms: 1000 + 60_001, ..ready(&r, &pin, &t) };
    assert_eq!(decide(&f, &limits()), Decision::Fail(codes::USER_TYPED.into()));
}

#[test]
fn decide_timing_boundaries() {
    let (r, pin) = (req(RequestState::Pending), tmux_pin());
    // a Stop exactly at the request counts
    let t = ended(1000);
    assert_eq!(decide(&ready(&r, &pin, &t), &limits()), Decision::Send);
    // settle: exactly settle_ms after the Stop
    let t = ended(1700);
    assert_eq!(decide(&Facts { now_ms: 2000, ..ready(&r, &pin, &t) }, &limits()), Decision::Send);
    assert_eq!(decide(&Facts { now_ms: 1999, ..ready(&r, &pin, &t) }, &limits()), Decision::Wait);
    // idle bound: exactly idle_wait_ms after the request is still waiting
    let running = Turn { session_id: sid(), state: TurnState::Running, at_ms: 900, started_at_ms: Some(900) };
    assert_eq!(decide(&Facts { now_ms: 61_000, ..ready(&r, &pin, &running) }, &limits()), Decision::Wait);
    assert_eq!(decide(&Facts { now_ms: 61_001, ..ready(&r, &pin, &running) }, &limits()), Decision::Fail(codes::TURN_NOT_ENDED.into()));
    // a running turn that began after the request is not an end
    let later = Turn { session_id: sid(), state: TurnState::Running, at_ms: 1900, started_at_ms: Some(1900) };
    assert_eq!(decide(&ready(&r, &pin, &later), &limits()), Decision::Wait);
    // claim wait: exactly claim_wait_ms after sending is still waiting
    let (sent, t) = (req(RequestState::Sent), ended(1500));
    assert_eq!(decide(&Facts { sent_at_ms: Some(2000), now_ms: 602_000, ..ready(&sent, &pin, &t) }, &limits()), Decision::Wait);
    assert_eq!(decide(&Facts { sent_at_ms: Some(2000), now_ms: 602_001, ..ready(&sent, &pin, &t) }, &limits()), Decision::TimedOut);
    // after sending, a pending request (rewritten by someone) is left alone
    let pending = req(RequestState::Pending);
    assert_eq!(decide(&Facts { sent_at_ms: Some(2000), ..ready(&pending, &pin, &t) }, &limits()), Decision::Leave);
    // an app-server pin never sends keys
    let app = Pin { session_id: sid(), via: Via::CodexAppServer { adapter_id: NONCE.into(), socket: sock() }, pinned_at_ms: 1 };
    assert_eq!(
        decide(&Facts { pin_at_start: &app, pin_now: Some(&app), ..ready(&r, &pin, &t) }, &limits()),
        Decision::Fail(codes::PIN_CHANGED.into())
    );
}

#[test]
fn limits_can_only_be_shortened_and_the_hold_must_be_absolute() {
    let vars =
        |pairs: &'static [(&'static str, &'static str)]| move |k: &str| pairs.iter().find(|(n, _)| *n == k).map(|(_, v)| v.to_string());
    assert_eq!(Limits::from_vars(&vars(&[])), Limits::default());
    let l = Limits::from_vars(&vars(&[
        (worker::ENV_IDLE_WAIT_MS, "100"),
        (worker::ENV_CLAIM_WAIT_MS, "1500"),
        (worker::ENV_SETTLE_MS, "0"),
        (worker::ENV_ENTER_GAP_MS, "0"),
        (worker::ENV_TEST_HOLD, "/tmp/h"),
    ]));
    assert_eq!((l.idle_wait_ms, l.claim_wait_ms, l.settle_ms, l.enter_gap), (100, 1500, 0, Duration::ZERO));
    assert_eq!(l.hold.as_deref(), Some(std::path::Path::new("/tmp/h")));
    let d = Limits::default();
    let l = Limits::from_vars(&vars(&[
        (worker::ENV_IDLE_WAIT_MS, "99"),
        (worker::ENV_CLAIM_WAIT_MS, "999999999999"),
        (worker::ENV_SETTLE_MS, "-1"),
        (worker::ENV_ENTER_GAP_MS, "5000"),
        (worker::ENV_TEST_HOLD, "rel/h"),
    ]));
    assert_eq!(l, d, "too small, longer, negative or relative: ignored");
    let l = Limits::from_vars(&vars(&[(worker::ENV_SETTLE_MS, "999"), (worker::ENV_IDLE_WAIT_MS, "x")]));
    assert_eq!((l.settle_ms, l.idle_wait_ms), (999, d.idle_wait_ms));
    // the poll budget covers both waits and the settle
    assert_eq!(limits().max_polls(), 60_000 / 20 + 600_000 / 200 + 300 / 20 + 16);
    assert_eq!(d.max_polls(), 1_800_000 / 20 + 600_000 / 200 + 1000 / 20 + 16);
}

// ---------------------------------------------------------------- run(): the keys and the checks between keystrokes

fn write_turn(d: &Dir, t: &Turn) {
    private::write_atomic(&d.qa.turn(&sid()), format!("{}\n", t.to_value()).as_bytes()).unwrap();
}

/// The "host" of the run() tests: on Enter, PreCompact promotes and
/// PostCompact claims.
fn compacting_tmux(d: &Dir) -> FakeTmux {
    let qa = d.qa.clone();
    let tr = d.data.join("transcript.jsonl").unwrap();
    FakeTmux::new(move || {
        kijito_gate::precompact(&qa, &sid(), Some(&tr), "manual", 1500).unwrap();
        kijito_gate::claim(&qa, &sid(), 1600).unwrap();
    })
}

#[test]
fn worker_waits_after_the_user_typed_and_types_after_a_later_quiet_stop() {
    let d = data_dir();
    setup(&d);
    // the turn began at 950, ended at 1100; a client pressed a key in second 2
    write_turn(&d, &turn(Some(950), 1100));
    let tmux = compacting_tmux(&d);
    *tmux.clients.borrow_mut() = Ok(vec![0, 2]);
    let qa = d.qa.clone();
    let seen = Cell::new(None);
    let clock = Clock(Cell::new(1000));
    let state = run_with(&d, &tmux, &FakeProcs::standard(), &clock, &|now| {
        let r = trigger::read_request(&qa, &sid()).unwrap().unwrap();
        if seen.get().is_none() && r.note.as_deref() == Some(codes::USER_TYPED.as_str()) {
            seen.set(Some(now));
            assert_eq!(r.state, RequestState::Pending);
            assert_eq!(crate::status(&d.data, &sid()).unwrap()["reason"], codes::USER_TYPED);
            assert!(sends(&tmux).is_empty(), "nothing typed into the user's text");
        }
        // a new turn begins after the keys (its prompt submitted them) and ends
        if (3000..3020).contains(&now) {
            write_turn(&d, &turn(Some(3000), 3000));
        }
    });
    let at = seen.get().expect("the request said user_typed");
    assert!((1400..1500).contains(&at), "declined at the first check after the settle: {at}");
    assert_eq!(state, RequestState::Compacted { attested: true, reason: "pass_promoted".into() });
    assert_eq!(sends(&tmux).len(), 2, "typed after the later quiet Stop");
    let reads = tmux.log.borrow().iter().filter(|l| l.starts_with("list-clients")).count();
    assert_eq!(reads, 3, "once at the declined Stop (not again for it), then before each keystroke");
    assert!(clock.0.get() >= 3300, "not before the later Stop's settle");
}

#[test]
fn worker_sends_nothing_more_when_a_check_fails_between_the_keystrokes() {
    type Between = fn(&FakeTmux, &Dir);
    let cases: [(&str, Between, &str); 5] = [
        ("kill switch", |_, d| std::fs::write(trigger::kill_switch(&d.data), b"").unwrap(), codes::KILL_SWITCH.as_str()),
        ("pane gone", |t, _| t.pane_pid.set(None), codes::PANE_GONE.as_str()),
        ("respawned", |t, _| t.pane_pid.set(Some(4444)), codes::PANE_PROCESS_CHANGED.as_str()),
        ("user typed", |t, _| *t.clients.borrow_mut() = Ok(vec![99]), codes::USER_TYPED.as_str()),
        ("clients unreadable", |t, _| *t.clients.borrow_mut() = Err(codes::TMUX_UNAVAILABLE.as_str()), codes::TMUX_UNAVAILABLE.as_str()),
    ];
    for (name, between, code) in cases {
        let d = std::rc::Rc::new(data_dir());
        setup(&d);
        write_turn(&d, &turn(Some(950), 1001));
        let tmux = FakeTmux::new(|| {});
        let d2 = d.clone();
        *tmux.on_literal.borrow_mut() = Box::new(move |t| between(t, &d2));
        let clock = Clock(Cell::new(1000));
        let state = run_with(&d, &tmux, &FakeProcs::standard(), &clock, &|_| {});
        assert_eq!(state, RequestState::Failed { code: code.into() }, "{name}");
        assert_eq!(sends(&tmux), vec!["send-keys -S /tmp/kijito-test-tmux/sock -t %3 -l /compact"], "{name}: no Enter");
        let r = trigger::read_request(&d.qa, &sid()).unwrap().unwrap();
        assert_eq!(r.note.as_deref(), Some(codes::COMPACT_LEFT_IN_COMPOSER.as_str()), "{name}");
        assert_eq!(crate::status(&d.data, &sid()).unwrap()["reason"], codes::COMPACT_LEFT_IN_COMPOSER, "{name}");
    }
}

#[test]
fn worker_send_failures_and_unreadable_clients() {
    // the Enter call fails: /compact was typed and is left behind
    let d = data_dir();
    setup(&d);
    write_turn(&d, &turn(Some(950), 1001));
    let tmux = FakeTmux::new(|| {});
    tmux.fail_enter.set(true);
    let state = run_with(&d, &tmux, &FakeProcs::standard(), &Clock(Cell::new(1000)), &|_| {});
    assert_eq!(state, RequestState::Failed { code: codes::SEND_FAILED.into() });
    assert_eq!(trigger::read_request(&d.qa, &sid()).unwrap().unwrap().note.as_deref(), Some(codes::COMPACT_LEFT_IN_COMPOSER.as_str()));
    // the literal fails: nothing typed, nothing left behind
    let d = data_dir();
    setup(&d);
    write_turn(&d, &turn(Some(950), 1001));
    let tmux = FakeTmux::new(|| {});
    tmux.fail_literal.set(true);
    let state = run_with(&d, &tmux, &FakeProcs::standard(), &Clock(Cell::new(1000)), &|_| {});
    assert_eq!(state, RequestState::Failed { code: codes::SEND_FAILED.into() });
    assert_eq!(trigger::read_request(&d.qa, &sid()).unwrap().unwrap().note, None);
    assert!(sends(&tmux).is_empty());
    // the clients cannot be read before /compact: fail closed, nothing typed
    let d = data_dir();
    setup(&d);
    write_turn(&d, &turn(Some(950), 1001));
    let tmux = FakeTmux::new(|| {});
    *tmux.clients.borrow_mut() = Err(codes::TMUX_UNAVAILABLE.as_str());
    let state = run_with(&d, &tmux, &FakeProcs::standard(), &Clock(Cell::new(1000)), &|_| {});
    assert_eq!(state, RequestState::Failed { code: codes::TMUX_UNAVAILABLE.into() });
    assert!(sends(&tmux).is_empty());
    assert_eq!(trigger::read_request(&d.qa, &sid()).unwrap().unwrap().note, None);
    // a turn record without a start: keys since the pin (pinned at 1 ms: second 0)
    let d = data_dir();
    setup(&d);
    write_turn(&d, &turn(None, 1001));
    let tmux = FakeTmux::new(|| {});
    *tmux.clients.borrow_mut() = Ok(vec![0]);
    let clock = Clock(Cell::new(1000));
    let state = run_with(&d, &tmux, &FakeProcs::standard(), &clock, &|now| {
        if now > 5000 {
            std::fs::write(trigger::kill_switch(&d.data), b"").unwrap();
        }
    });
    assert_eq!(state, RequestState::Failed { code: codes::KILL_SWITCH.into() });
    assert!(sends(&tmux).is_empty());
    assert_eq!(
        trigger::read_request(&d.qa, &sid()).unwrap().unwrap().note.as_deref(),
        Some(codes::USER_TYPED.as_str()),
        "the last waiting reason is kept"
    );
}

#[test]
fn the_test_hold_only_delays_each_keystroke_and_is_bounded() {
    let tmp = tempfile::tempdir().unwrap();
    let hold = tmp.path().join("hold");
    let run_held = |release: &[u8]| {
        for n in release {
            std::fs::write(format!("{}.{n}", hold.display()), b"").unwrap();
        }
        let d = data_dir();
        setup(&d);
        write_turn(&d, &turn(Some(950), 1001));
        let tmux = compacting_tmux(&d);
        let clock = Clock(Cell::new(1000));
        let now = || clock.0.get();
        let sleep = |dur: Duration| clock.0.set(clock.0.get() + dur.as_millis() as i64);
        let w = World { tmux: &tmux, procs: &FakeProcs::standard(), now_ms: &now, sleep: &sleep, lock_kept: &|| true };
        let l = Limits { hold: Some(hold.clone()), ..limits() };
        let state = worker::run(&d.data, &sid(), NONCE, &l, &w).unwrap();
        for n in [1u8, 2] {
            let _ = std::fs::remove_file(format!("{}.{n}", hold.display()));
        }
        assert_eq!(state, RequestState::Compacted { attested: true, reason: "pass_promoted".into() });
        assert_eq!(sends(&tmux).len(), 2);
        clock.0.get()
    };
    let free = run_held(&[1, 2]);
    let one = run_held(&[2]);
    let none = run_held(&[]);
    assert_eq!(one - free, worker::HOLD_MAX_MS as i64, "held before /compact, at most the bound");
    assert_eq!(none - free, 2 * worker::HOLD_MAX_MS as i64, "held before each keystroke, at most the bound");
}

// ---------------------------------------------------------------- tmux: the clients

#[test]
fn the_client_activity_format_and_its_output() {
    use crate::tmux::{client_activity_format, parse_client_activity, MAX_OUTPUT};
    assert_eq!(
        client_activity_format("%3"),
        "#{?#{W:#{P:#{?#{==:#{pane_id},%3},Y,}}}#{S:#{?#{==:#{session_name},#{client_last_session}},#{W:#{P:#{?#{==:#{pane_id},%3},Y,}}},}},#{client_activity},-}"
    );
    assert_eq!(parse_client_activity("").unwrap(), Vec::<i64>::new());
    assert_eq!(parse_client_activity("-\n1796148253\n-\n7\n").unwrap(), vec![1796148253, 7]);
    for bad in ["x\n", "12 3\n", "-1\n", "\n", "1234567890123456789\n"] {
        assert_eq!(parse_client_activity(bad).unwrap_err().code(), codes::TMUX_UNAVAILABLE.as_str(), "{bad:?}");
    }
    // output that may have been cut at the bound is refused
    let full = "-\n".repeat(MAX_OUTPUT as usize / 2);
    assert!(parse_client_activity(&full).is_err());
    assert!(parse_client_activity(&full[2..]).is_ok());
}

#[test]
fn the_pinned_tmux_lists_the_clients_of_the_pane() {
    use crate::tmux::RealTmux;
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().unwrap();
    let base = std::fs::canonicalize(tmp.path()).unwrap();
    std::fs::set_permissions(&base, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mark = base.join("ran");
    let prog = exe(
        &base.join("bin"),
        "tmux",
        0o755,
        &format!(
            "printf '%s\\n' \"$@\" >> '{}'; [ -e '{}' ] && exit 1; printf -- '-\\n17\\n'",
            mark.display(),
            base.join("fail").display()
        ),
    );
    let t = RealTmux::at(&AbsPath::parse(prog.to_str().unwrap()).unwrap());
    assert_eq!(t.client_activity(&sock(), "%3").unwrap(), vec![17]);
    let args = std::fs::read_to_string(&mark).unwrap();
    assert_eq!(args, format!("-S\n/tmp/kijito-test-tmux/sock\nlist-clients\n-F\n{}\n", crate::tmux::client_activity_format("%3")));
    // a failing call, and a pane id that is not one (never put into a format)
    std::fs::write(base.join("fail"), b"").unwrap();
    assert_eq!(t.client_activity(&sock(), "%3").unwrap_err().code(), codes::TMUX_UNAVAILABLE.as_str());
    assert_eq!(t.client_activity(&sock(), "%3}").unwrap_err().code(), codes::TMUX_ENV_INVALID.as_str());
    assert_eq!(std::fs::read_to_string(&mark).unwrap().lines().count(), 2 * 5, "the bad pane id ran nothing");
}

// ---------------------------------------------------------------- request, the worker's start, the command line

fn our_stat() -> ProcStat {
    crate::procfs::RealProcs.stat(std::process::id()).unwrap()
}

/// A tmux pin on a stand-in `tmux` (a script): `display-message` prints
/// `pane_pid` (or fails when `pane_pid` is None), naming this test process
/// as the host (its parent as the pane's process).
fn scripted_tmux_pin(d: &Dir, pane_pid: Option<u32>) -> Pin {
    use std::os::unix::fs::PermissionsExt;
    let bin = d._tmp.path().join("bin");
    let body = match pane_pid {
        Some(p) => format!("echo {p}"),
        None => "exit 1".into(),
    };
    let prog = exe(&bin, "tmux", 0o755, &body);
    std::fs::set_permissions(d._tmp.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let me = our_stat();
    Pin {
        session_id: sid(),
        via: Via::Tmux {
            socket: sock(),
            pane: "%3".into(),
            host_pid: std::process::id(),
            host_start: me.start,
            tmux: Some(AbsPath::parse(prog.to_str().unwrap()).unwrap()),
        },
        pinned_at_ms: 1,
    }
}

fn wait_for_file(p: &std::path::Path) -> String {
    for _ in 0..500 {
        if let Ok(t) = std::fs::read_to_string(p) {
            if t.ends_with('\n') {
                return t;
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("{} never written", p.display());
}

#[test]
fn request_for_a_tmux_pin_checks_the_pane_and_starts_the_worker_in_its_own_session() {
    let d = data_dir();
    write_pass(&d, 900, NONCE);
    trigger::write_pin(&d.qa, &scripted_tmux_pin(&d, Some(our_stat().ppid))).unwrap();
    let out = d._tmp.path().join("worker-ran");
    let worker = exe(
        &d._tmp.path().join("w"),
        "worker",
        0o755,
        &format!("echo \"$* sid=$(ps -o sid= -p $$ | tr -d ' ') pid=$$\" > '{}'", out.display()),
    );
    let line = crate::request(&d.data, &sid(), &worker, 1000).unwrap();
    assert_eq!(line, format!(r#"{{"type":"kijito.compaction.requested","sessionId":"sess-1","via":"tmux","nonce":"{NONCE}"}}"#));
    let ran = wait_for_file(&out);
    let (args, ids) = ran.trim_end().split_once(" sid=").unwrap();
    assert_eq!(args, format!("worker --session-id sess-1 --data-dir {} --nonce {NONCE}", d.data));
    let (sid_s, pid_s) = ids.split_once(" pid=").unwrap();
    assert_eq!(sid_s, pid_s, "the worker leads its own session (setsid)");
    assert_eq!(request_state(&d), RequestState::Pending);
}

/// A worker slow to start (0.3 s before it takes the session's worker lock,
/// as on a loaded machine): `request` answers only once the worker holds
/// the lock, so a second `request` right after it finds the worker and
/// answers `request_exists` instead of starting a second worker (without
/// the wait it saw a free lock and started one).
#[test]
fn a_request_right_after_a_request_finds_its_slow_worker_by_its_lock() {
    let d = data_dir();
    write_pass(&d, 900, NONCE);
    trigger::write_pin(&d.qa, &scripted_tmux_pin(&d, Some(our_stat().ppid))).unwrap();
    let lock = d.qa.path().as_path().join("compact-worker.sess-1.lock");
    let started = d._tmp.path().join("workers");
    let worker = exe(
        &d._tmp.path().join("w"),
        "worker",
        0o755,
        &format!(
            "echo $$ >> '{}'; sleep 0.3; exec python3 -c 'import fcntl, os, sys, time; f = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o600); fcntl.flock(f, fcntl.LOCK_EX); time.sleep(20)' '{}'",
            started.display(),
            lock.display()
        ),
    );
    let line = crate::request(&d.data, &sid(), &worker, 1000).unwrap();
    assert!(line.contains("kijito.compaction.requested"), "{line}");
    let held = crate::worker::lock(&d.qa, &sid()).unwrap();
    let again = crate::request(&d.data, &sid(), &worker, 1001);
    let workers = std::fs::read_to_string(&started).unwrap();
    for pid in workers.lines() {
        let _ = std::process::Command::new("kill").arg(pid).status();
    }
    assert!(held.is_none(), "the worker holds the lock when request answers");
    assert_eq!(again.unwrap_err().code(), codes::REQUEST_EXISTS.as_str());
    assert_eq!(workers.lines().count(), 1, "one worker: {workers}");
}

fn request_state(d: &Dir) -> RequestState {
    trigger::read_request(&d.qa, &sid()).unwrap().unwrap().state
}

#[test]
fn request_for_a_tmux_pin_refuses_a_gone_pane_and_a_worker_that_cannot_start() {
    // the pane is gone: no_safe_trigger, nothing recorded
    let d = data_dir();
    write_pass(&d, 900, NONCE);
    trigger::write_pin(&d.qa, &scripted_tmux_pin(&d, None)).unwrap();
    let e = crate::request(&d.data, &sid(), std::path::Path::new("/bin/true"), 1000).unwrap_err();
    assert_eq!(e.code(), codes::NO_SAFE_TRIGGER.as_str());
    assert!(e.message().contains("no longer runs this session's host") && e.message().ends_with(crate::ASK_USER), "{}", e.message());
    assert_eq!(trigger::read_request(&d.qa, &sid()).unwrap(), None);
    // the pane runs another process (this process is not its child)
    trigger::write_pin(&d.qa, &scripted_tmux_pin(&d, Some(4242))).unwrap();
    assert_eq!(
        crate::request(&d.data, &sid(), std::path::Path::new("/bin/true"), 1000).unwrap_err().code(),
        codes::NO_SAFE_TRIGGER.as_str()
    );
    // the worker cannot start: the request is recorded as failed
    trigger::write_pin(&d.qa, &scripted_tmux_pin(&d, Some(our_stat().ppid))).unwrap();
    let e = crate::request(&d.data, &sid(), std::path::Path::new("/nonexistent/kijito-compact"), 1000).unwrap_err();
    assert_eq!(e.code(), codes::NO_SAFE_TRIGGER.as_str());
    assert!(e.message().contains("the tmux worker could not start") && e.message().ends_with(crate::ASK_USER), "{}", e.message());
    assert_eq!(request_state(&d), RequestState::Failed { code: codes::WORKER_SPAWN_FAILED.into() });
}

#[test]
fn request_messages_ask_the_user_only_without_a_safe_trigger() {
    let d = data_dir();
    let exe = std::path::Path::new("/bin/true");
    let e = crate::request(&d.data, &sid(), exe, 1000).unwrap_err();
    assert_eq!(e.code(), kijito_gate::pass::codes::PASS_MISSING.as_str());
    assert!(!e.message().contains(crate::ASK_USER), "{}", e.message());
    write_pass(&d, 900, NONCE);
    let e = crate::request(&d.data, &sid(), exe, 1000).unwrap_err();
    assert_eq!(e.code(), codes::NO_SAFE_TRIGGER.as_str());
    assert!(e.message().ends_with(crate::ASK_USER), "{}", e.message());
}

#[test]
fn turn_hook_pending_request_and_worker_arguments() {
    let d = data_dir();
    crate::hook_turn(&d.qa, &sid(), TurnState::Running, 77).unwrap();
    assert_eq!(trigger::read_turn(&d.qa, &sid()).unwrap().unwrap().at_ms, 77);
    assert_eq!(crate::pending_request(&d.qa, &sid()), None);
    trigger::write_request(&d.qa, &req(RequestState::Sent)).unwrap();
    assert_eq!(crate::pending_request(&d.qa, &sid()), Some(req(RequestState::Sent)));
    trigger::write_request(&d.qa, &req(RequestState::TimedOut)).unwrap();
    assert_eq!(crate::pending_request(&d.qa, &sid()), None, "a final request is not pending");
    assert_eq!(crate::hook_session_start(&d.qa, &sid(), true, 1), crate::PinOutcome::Subagent);
    // the worker: a nonce that is not one is a usage error; no pin ends it at once
    let e = crate::run_worker(&d.data, &sid(), "xyz").unwrap_err();
    assert_eq!((e.code(), e.exit_status()), (kijito_protocol::codes::cli::INVALID_ARGUMENT.as_str(), 2));
    assert_eq!(crate::run_worker(&d.data, &sid(), NONCE).unwrap_err().code(), codes::PIN_CHANGED.as_str());
}

thread_local! {
    static CODEX_SEEN: RefCell<Option<crate::cli::CodexArgs>> = const { RefCell::new(None) };
}

fn fake_codex(a: crate::cli::CodexArgs) -> Result<i32> {
    let failing = a.codex_args.is_empty();
    CODEX_SEEN.with(|s| *s.borrow_mut() = Some(a));
    if failing {
        return Err(kijito_protocol::Error::new(crate::codes::SEND_FAILED, "no TUI args"));
    }
    Ok(7)
}

fn argv(words: &[&str]) -> Vec<std::ffi::OsString> {
    words.iter().map(Into::into).collect()
}

#[test]
fn the_command_line_runs_each_subcommand_and_hands_codex_its_args() {
    use crate::cli::main_args;
    let status = main_args(argv(&["codex", "--data-dir", "/d", "--stdio-client", "--", "--no-daemon", "--", "x"]), fake_codex);
    assert_eq!(status, 7);
    let seen = CODEX_SEEN.with(|s| s.borrow_mut().take()).unwrap();
    assert_eq!(seen.data_dir.as_ref().map(|p| p.as_str()), Some("/d"));
    assert!(seen.stdio_client && seen.message_log.is_none() && seen.codex.is_none());
    assert_eq!(seen.codex_args, argv(&["--no-daemon", "--", "x"]));
    // no `--`: no TUI args (the fake then fails: its error's exit status)
    assert_eq!(main_args(argv(&["codex", "--codex", "/x/codex"]), fake_codex), 1);
    assert_eq!(CODEX_SEEN.with(|s| s.borrow_mut().take()).unwrap().codex.map(|p| p.as_str().to_owned()), Some("/x/codex".into()));
    assert_eq!(main_args(argv(&["codex", "--help"]), fake_codex), 0);
    assert_eq!(main_args(argv(&["codex", "--version"]), fake_codex), 0);
    assert_eq!(main_args(argv(&["codex", "--bogus"]), fake_codex), 2);
    assert!(CODEX_SEEN.with(|s| s.borrow().is_none()), "help, version and usage errors never start the adapter");
    // the other subcommands
    let d = data_dir();
    let base = |sub: &str| vec![sub.to_owned(), "--session-id".into(), "sess-1".into(), "--data-dir".into(), d.data.as_str().to_owned()];
    let run = |words: Vec<String>| main_args(words.into_iter().map(Into::into).collect(), fake_codex);
    assert_eq!(run(base("status")), 1, "no request");
    trigger::write_request(&d.qa, &req(RequestState::Pending)).unwrap();
    assert_eq!(run(base("status")), 0);
    assert_eq!(run(base("request")), 1, "a request of a pass that is missing: pass_missing");
    let mut w = base("worker");
    w.extend(["--nonce".to_owned(), NONCE.to_owned()]);
    assert_eq!(run(w), 1, "no pin: the worker ends at once");
    assert_eq!(run(base("bogus")), 2);
    assert_eq!(main_args(argv(&["--help"]), fake_codex), 0);
}

#[test]
fn the_pin_environment_ignores_empty_and_oversized_values() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().unwrap();
    let base = std::fs::canonicalize(tmp.path()).unwrap();
    std::fs::set_permissions(&base, std::fs::Permissions::from_mode(0o755)).unwrap();
    let prog = exe(&base.join("bin"), "tmux", 0o755, "exit 0");
    let dir = base.join("bin").to_str().unwrap().to_owned();
    let with =
        |pairs: Vec<(&'static str, String)>| PinEnv::from_vars(&move |k| pairs.iter().find(|(n, _)| *n == k).map(|(_, v)| v.clone()));
    let e = with(vec![
        ("TMUX", "/s,1,0".into()),
        ("TMUX_PANE", "%3".into()),
        (pin::ENV_ADAPTER_ID, NONCE.into()),
        (pin::ENV_ADAPTER_SOCKET, "/a".into()),
        ("PATH", dir.clone()),
    ]);
    assert_eq!(e.tmux.as_deref(), Some("/s,1,0"));
    assert_eq!(e.tmux_pane.as_deref(), Some("%3"));
    assert_eq!(e.adapter_id.as_deref(), Some(NONCE));
    assert_eq!(e.adapter_socket.as_deref(), Some("/a"));
    assert_eq!(e.tmux_program.as_ref().map(|p| p.as_str()), prog.to_str());
    assert_eq!(with(vec![]), PinEnv::default());
    let e = with(vec![("TMUX", String::new()), ("TMUX_PANE", "x".repeat(4097)), (pin::ENV_ADAPTER_ID, "y".repeat(4096))]);
    assert_eq!((e.tmux, e.tmux_pane, e.adapter_id.map(|v| v.len())), (None, None, Some(4096)));
    // a PATH longer than 64 KiB names no tmux; one at the bound still does
    let long = format!("{}:{dir}", "/".repeat(64 * 1024 - dir.len() - 1));
    assert_eq!(long.len(), 64 * 1024);
    assert!(with(vec![("PATH", long.clone())]).tmux_program.is_some());
    assert_eq!(with(vec![("PATH", format!("/{long}"))]).tmux_program, None);
    // from_process reads this process's own environment the same way
    assert_eq!(PinEnv::from_process(), PinEnv::from_vars(&|k| std::env::var(k).ok()));
}

#[test]
fn a_codex_daemon_needs_both_words() {
    let v = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    assert!(pin::is_codex_daemon(&v(&["/x/codex", "app-server", "--listen", "unix://", "--managed-daemon"])));
    assert!(!pin::is_codex_daemon(&v(&["/x/codex", "app-server", "--listen", "unix://"])), "a plain app-server (the adapter's own)");
    assert!(!pin::is_codex_daemon(&v(&["x", "--managed-daemon"])));
    assert!(!pin::is_codex_daemon(&v(&["app-server", "y"])));
    assert!(!pin::is_codex_daemon(&v(&["app-server"])));
    assert!(!pin::is_codex_daemon(&[]));
}

#[test]
fn a_pane_pid_of_1_or_junk_is_no_pane() {
    use crate::tmux::RealTmux;
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().unwrap();
    let base = std::fs::canonicalize(tmp.path()).unwrap();
    std::fs::set_permissions(&base, std::fs::Permissions::from_mode(0o755)).unwrap();
    for (out, want) in [("1", None), ("0", None), ("x", None), ("2", Some(2))] {
        let prog = exe(&base.join(format!("bin{out}")), "tmux", 0o755, &format!("echo {out}"));
        let t = RealTmux::at(&AbsPath::parse(prog.to_str().unwrap()).unwrap());
        assert_eq!(t.pane_pid(&sock(), "%3").unwrap(), want, "{out}");
    }
}

#[test]
fn a_tmux_owned_by_another_user_is_refused() {
    use crate::tmux::program_is_safe;
    use std::os::unix::fs::PermissionsExt;
    let me = kijito_files::private::current_uid();
    let tmp = tempfile::tempdir().unwrap();
    let base = std::fs::canonicalize(tmp.path()).unwrap();
    std::fs::set_permissions(&base, std::fs::Permissions::from_mode(0o755)).unwrap();
    let prog = exe(&base.join("bin"), "tmux", 0o755, "exit 0");
    assert!(program_is_safe(&prog), "owned by this user");
    if me == 0 {
        // root can give the file (then its directory) to another account
        std::os::unix::fs::chown(&prog, Some(4321), None).unwrap();
        assert!(!program_is_safe(&prog), "a file of uid 4321");
        std::os::unix::fs::chown(&prog, Some(0), None).unwrap();
        std::os::unix::fs::chown(base.join("bin"), Some(4321), None).unwrap();
        assert!(!program_is_safe(&prog), "in a directory of uid 4321");
    } else if let Ok(m) = std::fs::metadata("/usr/bin/tmux") {
        use std::os::unix::fs::MetadataExt;
        if m.uid() == 0 && m.mode() & 0o022 == 0 {
            assert!(program_is_safe(std::path::Path::new("/usr/bin/tmux")), "root's tmux is safe for any user");
        }
    }
}

/// `Limits::from_env` reads this process's environment: checked in a child
/// run of this test binary with the variables set (setting them here would
/// race the other tests).
#[test]
fn limits_come_from_the_environment() {
    const CHILD: &str = "KIJITO_COMPACT_TEST_LIMITS_CHILD";
    if std::env::var_os(CHILD).is_some() {
        let l = Limits::from_env();
        assert_eq!((l.settle_ms, l.enter_gap, l.hold.as_deref()), (5, Duration::from_millis(7), Some(std::path::Path::new("/tmp/h"))));
        return;
    }
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "tests::limits_come_from_the_environment", "--nocapture", "--test-threads", "1"])
        .env(CHILD, "1")
        .env(worker::ENV_SETTLE_MS, "5")
        .env(worker::ENV_ENTER_GAP_MS, "7")
        .env(worker::ENV_TEST_HOLD, "/tmp/h")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && text.contains("1 passed"), "{text}{}", String::from_utf8_lossy(&out.stderr));
}

/// A clock that stands still: the poll budget ends the worker, never a loop
/// without end; what it records then.
#[test]
fn a_frozen_clock_ends_the_worker_at_its_poll_budget() {
    let l = Limits { idle_wait_ms: 2000, claim_wait_ms: 2000, ..limits() };
    let budget = l.max_polls();
    let frozen = |d: &Dir, tmux: &FakeTmux, on_sleep: &dyn Fn(u64)| {
        let n = Cell::new(0u64);
        let now = || 2000;
        let sleep = |_: Duration| {
            n.set(n.get() + 1);
            on_sleep(n.get());
        };
        let w = World { tmux, procs: &FakeProcs::standard(), now_ms: &now, sleep: &sleep, lock_kept: &|| true };
        let state = worker::run(&d.data, &sid(), NONCE, &l, &w).unwrap();
        (state, n.get())
    };
    // no Stop ever: turn_not_ended once the budget is spent
    let d = data_dir();
    setup(&d);
    let (state, polls) = frozen(&d, &FakeTmux::new(|| {}), &|_| {});
    assert_eq!(state, RequestState::Failed { code: codes::TURN_NOT_ENDED.into() });
    assert_eq!(polls, budget);
    assert_eq!(request_state(&d), state);
    // sent, never claimed: timed_out
    let d = data_dir();
    setup(&d);
    write_turn(&d, &turn(Some(950), 1000));
    let tmux = FakeTmux::new(|| {});
    let (state, _) = frozen(&d, &tmux, &|_| {});
    assert_eq!(state, RequestState::TimedOut);
    assert_eq!(sends(&tmux).len(), 2);
    // another pass's request appears at the very end: left alone
    let d = data_dir();
    setup(&d);
    let other = Request { nonce: "ffffffffffffffffffffffffffffffff".into(), ..req(RequestState::Pending) };
    let (state, _) = frozen(&d, &FakeTmux::new(|| {}), &|n| {
        if n == budget {
            trigger::write_request(&d.qa, &other).unwrap();
        }
    });
    assert_eq!(state, RequestState::Pending);
    assert_eq!(trigger::read_request(&d.qa, &sid()).unwrap().unwrap(), other, "untouched");
}

/// `cli::main` parses this process's own argv: in a child run of this test
/// binary that argv is the test harness's (`--exact NAME ...`), a usage
/// error (exit status 2) for kijito-compact, as `main_args` says.
#[test]
fn main_reads_the_process_argv() {
    const CHILD: &str = "KIJITO_COMPACT_TEST_MAIN_CHILD";
    if std::env::var_os(CHILD).is_some() {
        let status = crate::cli::main(fake_codex);
        assert_eq!(status, 2);
        assert_eq!(status, crate::cli::main_args(std::env::args_os().skip(1).collect(), fake_codex));
        return;
    }
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "tests::main_reads_the_process_argv", "--nocapture", "--test-threads", "1"])
        .env(CHILD, "1")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && text.contains("1 passed"), "{text}{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("kijito_compact_failed:"), "the usage error was reported");
}

#[test]
fn each_request_state_is_a_journal_line() {
    let d = data_dir();
    trigger::write_request(&d.qa, &req(RequestState::Pending)).unwrap();
    trigger::write_request(&d.qa, &req(RequestState::Sent)).unwrap();
    let j = kijito_files::journal::read(d.data.as_path(), &sid()).unwrap();
    let kinds: Vec<&str> = j.events.iter().map(|e| e["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["compaction_requested", "compaction_triggered"]);
    assert_eq!((j.events[1]["via"].as_str(), j.events[1]["state"].as_str()), (Some("tmux"), Some("sent")));
    assert!(j.broken.is_none());
}
