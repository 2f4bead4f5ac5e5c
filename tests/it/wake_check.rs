//! wake-check through the real binary: crafted latch and QA states on disk,
//! exit codes, the degraded-mode entry, and `--live` against a real
//! kijito-local.

#![allow(clippy::unwrap_used)]

use crate::support;
use support::publish as support_publish;

use kijito_gate::{Attempt, Pass, Reentry, TranscriptId};
use kijito_latch::{self as latch, Latch};
use kijito_protocol::ids::{Digest, MemoryId, MessageId, SessionId};
use serde_json::{json, Value};
use std::fs;
use std::os::fd::AsRawFd;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_wake-check");
const LATCH_BIN: &str = env!("CARGO_BIN_EXE_memory-latch");
const BOOT_A: &str = "11111111-2222-3333-4444-555555555555";
const BOOT_B: &str = "99999999-8888-7777-6666-555555555555";
const DAY: u64 = 86_400_000;

fn now() -> u64 {
    kijito_protocol::clock::now_ms()
}

struct World {
    _dir: tempfile::TempDir,
    root: PathBuf,
    ws: PathBuf,
    data: PathBuf,
    home: PathBuf,
    boot: PathBuf,
}

fn world() -> World {
    let dir = tempfile::tempdir().unwrap();
    fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o700)).unwrap();
    let root = fs::canonicalize(dir.path()).unwrap();
    for d in ["ws", "home"] {
        fs::create_dir(root.join(d)).unwrap();
    }
    let boot = root.join("boot_id");
    fs::write(&boot, format!("{BOOT_A}\n")).unwrap();
    World { ws: root.join("ws"), data: root.join("data"), home: root.join("home"), boot, root, _dir: dir }
}

impl World {
    fn latch(&self) -> Latch {
        Latch::open(&self.config()).unwrap()
    }

    fn config(&self) -> latch::Config {
        let mut c = latch::Config::new(&self.ws);
        c.boot_id_file = self.boot.clone();
        c.heads_dir = Some(self.root.join("heads"));
        c
    }

    fn init_latch(&self) {
        self.latch().init(now(), &latch::InitInput { objective: "ship it".into(), ..Default::default() }).unwrap();
    }

    fn set_boot(&self, id: &str) {
        fs::write(&self.boot, format!("{id}\n")).unwrap();
    }

    fn qa(&self) -> PathBuf {
        support::gate::qa_dir(&self.data)
    }

    fn put(&self, name: &str, bytes: &[u8]) {
        kijito_files::private::write_atomic(&self.qa().join(name), bytes).unwrap();
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut c = Command::new(BIN);
        c.args(args)
            .arg("--workspace")
            .arg(&self.ws)
            .arg("--data-dir")
            .arg(&self.data)
            .env("HOME", &self.home)
            .env_remove("XDG_CONFIG_HOME")
            .env_remove("PLUGIN_DATA")
            .env_remove("CLAUDE_PLUGIN_DATA")
            .env_remove("MEMORY_LATCH_HMAC_KEY_FILE")
            .env("MEMORY_LATCH_HEADS_DIR", self.root.join("heads"))
            .env("MEMORY_LATCH_BOOT_ID_FILE", &self.boot);
        c
    }

    fn run(&self, args: &[&str]) -> Output {
        self.command(args).output().unwrap()
    }

    /// `--json` run: (exit status, report).
    fn json(&self, args: &[&str]) -> (i32, Value) {
        let mut a = vec!["--json"];
        a.extend_from_slice(args);
        let o = self.run(&a);
        let v: Value = serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&o.stderr)));
        (o.status.code().unwrap(), v)
    }

    fn latch_verify(&self) -> Value {
        let o = Command::new(LATCH_BIN)
            .args(["verify", "--json", "--workspace"])
            .arg(&self.ws)
            .env("MEMORY_LATCH_HEADS_DIR", self.root.join("heads"))
            .env("MEMORY_LATCH_BOOT_ID_FILE", &self.boot)
            .output()
            .unwrap();
        serde_json::from_slice(&o.stdout).unwrap()
    }
}

fn codes(v: &Value) -> Vec<String> {
    v["findings"].as_array().unwrap().iter().map(|f| f["code"].as_str().unwrap().to_owned()).collect()
}

fn check_status(v: &Value, name: &str) -> String {
    v["checks"].as_array().unwrap().iter().find(|c| c["name"] == name).unwrap()["status"].as_str().unwrap().to_owned()
}

fn sid(s: &str) -> SessionId {
    SessionId::parse(s).unwrap()
}

fn pass(session: &str, at: u64) -> Pass {
    support::pass::pass(&sid(session), at as i64, "0123456789abcdef0123456789abcdef", TranscriptId { dev: 1, ino: 2, size: 3, mtime_ms: 4 })
}

fn attempt(session: &str, at: u64) -> Vec<u8> {
    Attempt {
        session_id: sid(session),
        recorded_at_ms: at as i64,
        trigger: "auto".into(),
        attested: false,
        reason: "no_pass".into(),
        compaction_nonce: None,
    }
    .to_value()
    .to_string()
    .into_bytes()
}

fn reentry(session: &str, at: u64) -> Vec<u8> {
    Reentry { session_id: sid(session), claimed_at_ms: at as i64, reason: "no_pass".into(), attested: None }
        .to_value()
        .to_string()
        .into_bytes()
}

#[test]
fn a_fresh_latch_and_clean_qa_dir_are_full_trust() {
    let w = world();
    w.init_latch();
    w.qa();
    let (code, v) = w.json(&[]);
    assert_eq!(code, 0, "{v}");
    let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(keys, ["schema", "mode", "sleptForSeconds", "longSleep", "bootChanged", "findings", "checks", "checkedAtMs"]);
    assert_eq!(v["schema"], "kijito.wake-check/v1");
    assert_eq!(v["mode"], "full_trust");
    assert_eq!(v["longSleep"], false);
    assert_eq!(v["bootChanged"], false);
    assert!(v["sleptForSeconds"].as_u64().unwrap() < 60);
    assert_eq!(check_status(&v, "latch_chain"), "pass");
    assert_eq!(check_status(&v, "live_pointer"), "skipped");
    // The human summary says the same.
    let o = w.run(&[]);
    assert_eq!(o.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&o.stdout).starts_with("wake-check: FULL_TRUST"));
}

#[test]
fn long_sleep_boot_change_and_clock_backwards_from_the_latch() {
    // Long sleep: the newest verified entry is 3 days old.
    let w = world();
    w.latch().seed_history(3, now() - 3 * DAY).unwrap();
    let (code, v) = w.json(&[]);
    assert_eq!((code, codes(&v)), (10, vec!["long_sleep".to_owned()]), "{v}");
    assert_eq!(v["longSleep"], true);
    assert!(v["sleptForSeconds"].as_u64().unwrap() >= 3 * 86_400 - 60);
    // A shorter threshold than the default; the default (1 day) is not hit by 1 hour.
    let w = world();
    w.latch().seed_history(2, now() - 3_600_000).unwrap();
    assert_eq!(w.json(&[]).0, 0);
    let (code, v) = w.json(&["--long-sleep-after", "1800"]);
    assert_eq!((code, codes(&v)), (10, vec!["long_sleep".to_owned()]));

    // Boot changed since the head entry.
    let w = world();
    w.init_latch();
    w.set_boot(BOOT_B);
    let (code, v) = w.json(&[]);
    assert_eq!((code, codes(&v)), (10, vec!["boot_changed".to_owned()]), "{v}");
    assert_eq!(v["bootChanged"], true);

    // The clock is earlier than the newest recorded time.
    let w = world();
    w.latch().seed_history(2, now() + 10 * DAY).unwrap();
    let (code, v) = w.json(&[]);
    assert_eq!((code, codes(&v)), (10, vec!["clock_backwards".to_owned()]), "{v}");
    assert_eq!(v["sleptForSeconds"], Value::Null);
}

#[test]
fn consent_tokens_expired_and_pending() {
    let w = world();
    w.init_latch();
    let action = b"drop the production table\n";
    // Requested an hour ago: the 10-minute token has expired unconfirmed.
    w.latch().consent_request(now() - 3_600_000, action, "drop it", latch::Risk::High).unwrap();
    let (code, v) = w.json(&[]);
    assert_eq!((code, codes(&v)), (10, vec!["consent_token_expired".to_owned()]), "{v}");
    // A live request is an irreversible action pending across the sleep.
    w.latch().consent_request(now(), action, "drop it", latch::Risk::High).unwrap();
    let (code, v) = w.json(&[]);
    assert_eq!((code, codes(&v)), (10, vec!["irreversible_action_pending".to_owned()]), "{v}");
}

#[test]
fn a_held_lock_and_an_interrupted_write_are_minor() {
    let w = world();
    w.init_latch();
    let lock = fs::OpenOptions::new().read(true).write(true).open(w.ws.join(".memory-latch/_manifest.lock"));
    let lock = match lock {
        Ok(f) => f,
        Err(_) => {
            let p = w.ws.join(".memory-latch/_manifest.lock");
            kijito_files::private::write_atomic(&p, b"").unwrap();
            fs::OpenOptions::new().read(true).write(true).open(p).unwrap()
        }
    };
    // (Bounded retry: a child forked by a parallel test may briefly hold an
    // inherited copy of the latch's own lock fd until its exec.)
    let mut rc = -1;
    for _ in 0..200 {
        // SAFETY: flock on a valid fd owned by `lock`.
        rc = unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
        if rc == 0 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert_eq!(rc, 0, "{}", std::io::Error::last_os_error());
    let (code, v) = w.json(&[]);
    assert_eq!((code, codes(&v)), (10, vec!["latch_lock_stale".to_owned()]), "{v}");
    drop(lock);
    kijito_files::private::write_atomic(&w.ws.join(".memory-latch/._manifest.md.tmp-deadbeef"), b"x").unwrap();
    let (code, v) = w.json(&[]);
    assert_eq!((code, codes(&v)), (10, vec!["latch_write_interrupted".to_owned()]), "{v}");
}

#[test]
fn qa_state_findings_each_from_files() {
    let t = now();
    type Craft = Box<dyn Fn(&World)>;
    let cases: Vec<(&str, Craft)> = vec![
        ("qa_pass_expired", Box::new(move |w: &World| w.put("qa-pass.s1.json", &pass("s1", t - 3_600_000).to_bytes()))),
        ("qa_ticket_orphaned", Box::new(move |w: &World| w.put("compaction-resume.s2.json", &pass("s2", t - 60_000).to_bytes()))),
        ("qa_attempt_unclaimed", Box::new(move |w: &World| w.put("compaction-attempt.s3.json", &attempt("s3", t - 600_000)))),
        ("qa_reentry_undelivered", Box::new(move |w: &World| w.put("compaction-reentry.s4.json", &reentry("s4", t - 3_600_000)))),
        ("qa_state_unreadable", Box::new(|w: &World| w.put("compaction-attempt.s5.json", b"{}"))),
        ("pointer_record_invalid", Box::new(|w: &World| w.put("current-pointer.json", br#"{"schemaVersion":1}"#))),
        (
            "qa_dir_insecure",
            Box::new(|w: &World| {
                let q = w.qa();
                fs::set_permissions(q, fs::Permissions::from_mode(0o750)).unwrap();
            }),
        ),
    ];
    for (code, craft) in cases {
        let w = world();
        w.init_latch();
        w.qa();
        craft(&w);
        let (exit, v) = w.json(&[]);
        assert_eq!(codes(&v), vec![code.to_owned()], "{code}: {v}");
        let degrading = v["findings"][0]["severity"] == "degrading";
        assert_eq!(exit, if degrading { 20 } else { 10 }, "{code}");
    }
    // A fresh pass, a ticket with a live attempt and a recent re-entry are fine.
    let w = world();
    w.qa();
    w.put("qa-pass.ok.json", &pass("ok", t - 60_000).to_bytes());
    w.put("compaction-resume.c.json", &pass("c", t - 60_000).to_bytes());
    w.put("compaction-attempt.c.json", &attempt("c", t - 60_000));
    w.put("compaction-reentry.r.json", &reentry("r", t - 60_000));
    let (code, v) = w.json(&[]);
    assert_eq!(code, 0, "{v}");
    // --session-id restricts the QA checks to one session.
    w.put("qa-pass.old.json", &pass("old", t - 3_600_000).to_bytes());
    assert_eq!(codes(&w.json(&[]).1), vec!["qa_pass_expired".to_owned()]);
    assert_eq!(w.json(&["--session-id", "ok"]).0, 0);
}

#[test]
fn three_minor_findings_are_cautious_and_four_degraded() {
    let t = now();
    let w = world();
    w.qa();
    w.put("qa-pass.a.json", &pass("a", t - 3_600_000).to_bytes());
    w.put("compaction-resume.b.json", &pass("b", t - 60_000).to_bytes());
    w.put("compaction-attempt.c.json", &attempt("c", t - 600_000));
    assert_eq!(w.json(&[]).0, 10);
    w.put("compaction-reentry.d.json", &reentry("d", t - 3_600_000));
    let (code, v) = w.json(&[]);
    assert_eq!(codes(&v).len(), 4);
    assert!(v["findings"].as_array().unwrap().iter().all(|f| f["severity"] == "minor"));
    assert_eq!((code, v["mode"].as_str().unwrap()), (20, "degraded"));
}

#[test]
fn degraded_entry_is_written_once_on_a_trustworthy_latch() {
    let w = world();
    w.init_latch();
    w.put("current-pointer.json", b"not json");
    let before = w.latch_verify()["entries"].as_u64().unwrap();
    let o = w.run(&[]);
    assert_eq!(o.status.code(), Some(20));
    assert!(String::from_utf8_lossy(&o.stdout).contains("degraded_mode entry"), "{}", String::from_utf8_lossy(&o.stdout));
    let v = w.latch_verify();
    assert_eq!(v["trusted"], true);
    assert_eq!(v["entries"].as_u64().unwrap(), before + 1);
    assert_eq!(v["head"]["event"], "degraded_mode");
    assert_eq!(v["head"]["consent_state"], "locked");
    let manifest = fs::read_to_string(w.ws.join(".memory-latch/_manifest.md")).unwrap();
    assert!(manifest.contains("pointer_record_invalid (degrading)"));
    // Again: the same findings are already recorded; the unreviewed entry is
    // itself reported, and nothing is appended.
    let (code, r) = w.json(&[]);
    assert_eq!(code, 20);
    assert_eq!(codes(&r), vec!["latch_degraded_unreviewed".to_owned(), "pointer_record_invalid".to_owned()]);
    assert_eq!(w.latch_verify()["entries"].as_u64().unwrap(), before + 1);
    // The state is fixed and the agent checkpoints: still degraded, since
    // consent stays locked until the user reviews.
    w.latch().checkpoint(now(), &latch::CheckpointInput { next_single_step: Some("reviewed".into()), ..Default::default() }).unwrap();
    fs::remove_file(w.qa().join("current-pointer.json")).unwrap();
    let (code, r) = w.json(&[]);
    assert_eq!((code, codes(&r)), (20, vec!["latch_degraded_unreviewed".to_owned()]));
    // The user's own message with the review token: full trust again.
    let issued = w.latch().review_request(now()).unwrap();
    let outcome = w.latch().user_prompt(now(), &issued.token).unwrap();
    assert!(matches!(outcome, Some(latch::PromptOutcome::Reviewed { .. })), "{outcome:?}");
    assert_eq!(w.json(&[]).0, 0);
}

#[test]
fn nothing_is_written_to_an_untrusted_latch() {
    let w = world();
    w.init_latch();
    w.latch().checkpoint(now(), &latch::CheckpointInput { next_single_step: Some("step two".into()), ..Default::default() }).unwrap();
    let m = w.ws.join(".memory-latch/_manifest.md");
    let tampered = fs::read_to_string(&m).unwrap().replacen("step two", "step 2!!", 1);
    fs::write(&m, &tampered).unwrap();
    let (code, v) = w.json(&[]);
    assert_eq!(code, 20);
    assert!(codes(&v).contains(&"latch_untrusted".to_owned()), "{v}");
    assert_eq!(fs::read_to_string(&m).unwrap(), tampered, "an untrusted latch is never written");
    let o = w.run(&[]);
    assert!(String::from_utf8_lossy(&o.stdout).contains("nothing was written"));
}

#[test]
fn silent_witness_and_unverifiable_hmac_are_degraded() {
    let w = world();
    w.init_latch();
    let l = w.latch();
    for _ in 0..4 {
        let _ = l.recover(now());
    }
    let (code, v) = w.json(&[]);
    assert_eq!(code, 20, "{v}");
    assert!(codes(&v).contains(&"silent_witness".to_owned()), "{v}");

    let w = world();
    let key = w.root.join("key");
    kijito_files::private::write_atomic(&key, &[7u8; 32]).unwrap();
    let mut c = w.config();
    c.hmac_key_file = Some(key.clone());
    Latch::open(&c).unwrap().init(now(), &latch::InitInput { objective: "o".into(), ..Default::default() }).unwrap();
    let (code, v) = w.json(&[]);
    assert_eq!((code, codes(&v)), (20, vec!["latch_unverifiable".to_owned()]), "{v}");
    let o = w.command(&["--json"]).env("MEMORY_LATCH_HMAC_KEY_FILE", &key).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stdout));
}

#[test]
fn usage_errors_exit_2() {
    let w = world();
    for args in
        [&["--long-sleep-after", "soon"][..], &["--long-sleep-after", "0"], &["--session-id", "a/b"], &["--nope"], &["--json", "--json"]]
    {
        let o = w.run(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        assert!(String::from_utf8_lossy(&o.stderr).starts_with("kijito_wake_check_failed:"));
    }
    let o = Command::new(BIN).arg("--help").output().unwrap();
    assert_eq!(o.status.code(), Some(0));
}

// ----- --live against kijito-local ------------------------------------------------------

fn live_world(s: &support_publish::Seeded) -> World {
    let w = world();
    let anchors: Vec<(MemoryId, Digest)> =
        s.anchors.iter().map(|(id, d)| (MemoryId::new(*id).unwrap(), Digest::parse(d).unwrap())).collect();
    let pid = MemoryId::new(s.pointer_id).unwrap();
    let lock = MessageId::new(s.lock_id).unwrap();
    let pd = Digest::parse(&s.pointer_digest()).unwrap();
    let sd = kijito_protocol::manifest::snapshot_digest(pid, &pd, lock, &anchors);
    let record = json!({
        "schemaVersion": 2, "pointerId": s.pointer_id, "lockMessageId": s.lock_id,
        "pointerDigest": pd.as_str(), "snapshotDigest": sd.as_str(), "recordedAtMs": now(),
    });
    w.put("current-pointer.json", record.to_string().as_bytes());
    w
}

fn live_run(s: &support_publish::Seeded, w: &World) -> (i32, Value) {
    let o = w
        .command(&["--json", "--live"])
        .env("HOME", s.tmp.path().join("home"))
        .env("XDG_CONFIG_HOME", s.tmp.path().join("config"))
        .output()
        .unwrap();
    (o.status.code().unwrap(), serde_json::from_slice(&o.stdout).unwrap())
}

#[test]
fn live_pointer_unchanged_changed_and_anchor_eroded() {
    let s = support_publish::Seeded::new();
    let w = live_world(&s);
    let (code, v) = live_run(&s, &w);
    assert_eq!((code, codes(&v)), (0, vec![]), "{v}");
    assert_eq!(check_status(&v, "live_pointer"), "pass");

    // An anchor eroded: degraded.
    s.server.correct(s.anchors[1].0, "anchor two, corrected");
    let (code, v) = live_run(&s, &w);
    assert_eq!((code, codes(&v)), (20, vec!["live_anchor_retired".to_owned()]), "{v}");

    // The pointer changed: degraded.
    let s = support_publish::Seeded::new();
    let w = live_world(&s);
    let r = s.server.patch(s.pointer_id, &s.manifest("someone else's state"), "Codex", None);
    assert_eq!(r.status, 200);
    let (code, v) = live_run(&s, &w);
    assert_eq!((code, codes(&v)), (20, vec!["live_pointer_changed".to_owned()]), "{v}");
}

#[test]
fn live_without_a_record_or_a_server() {
    let w = world();
    w.qa();
    let (code, v) = w.json(&["--live"]);
    assert_eq!((code, codes(&v)), (10, vec!["pointer_record_missing".to_owned()]), "{v}");
    // A record but no reachable server (config points at a closed port).
    let s = support_publish::Seeded::new();
    let w = live_world(&s);
    let mut s = s;
    s.server.stop();
    let (code, v) = live_run(&s, &w);
    assert_eq!((code, codes(&v)), (10, vec!["live_unavailable".to_owned()]), "{v}");
}

#[test]
fn nothing_verifiable_is_never_full_trust() {
    // No latch and no QA state.
    let w = world();
    let (code, v) = w.json(&[]);
    assert_eq!((code, v["mode"].as_str()), (10, Some("cautious")), "{v}");
    assert_eq!(codes(&v), ["nothing_verifiable"]);
    // A workspace that does not exist.
    let o = Command::new(BIN)
        .args(["--json", "--workspace"])
        .arg(w.root.join("no-such-ws"))
        .arg("--data-dir")
        .arg(&w.data)
        .env("HOME", &w.home)
        .env("MEMORY_LATCH_HEADS_DIR", w.root.join("heads"))
        .env("MEMORY_LATCH_BOOT_ID_FILE", &w.boot)
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!((o.status.code(), v["mode"].as_str()), (Some(10), Some("cautious")), "{v}");
    assert!(codes(&v).contains(&"workspace_missing".to_owned()), "{v}");
}

#[test]
fn a_deleted_latch_is_degraded_and_a_rolled_back_one_untrusted() {
    let w = world();
    w.init_latch();
    w.qa();
    let l = w.latch();
    let older = fs::read(&l.paths().manifest).unwrap();
    l.checkpoint(now(), &latch::CheckpointInput { next_single_step: Some("two".into()), ..Default::default() }).unwrap();
    l.checkpoint(now(), &latch::CheckpointInput { next_single_step: Some("three".into()), ..Default::default() }).unwrap();
    fs::write(&l.paths().manifest, &older).unwrap();
    let (code, v) = w.json(&[]);
    assert_eq!(code, 20, "{v}");
    let untrusted = v["findings"].as_array().unwrap().iter().find(|f| f["code"] == "latch_untrusted").unwrap();
    assert!(untrusted["message"].as_str().unwrap().contains("latch_rolled_back"), "{v}");
    // Deleting .memory-latch altogether is not a clean slate.
    fs::remove_dir_all(w.ws.join(".memory-latch")).unwrap();
    let (code, v) = w.json(&[]);
    assert_eq!((code, codes(&v)), (20, vec!["latch_deleted".to_owned()]), "{v}");
}
