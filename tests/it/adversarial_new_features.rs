//! The attacking pass on the features that landed without one (docs/testing.md,
//! "Yardsticks the policy's rules were not written from"): an agent with a
//! shell and the user's uid tries to get past each, through the real binaries,
//! real files and a real kijito-local / tmux where needed. Each test runs its
//! attempts, prints how many got past and how many ordinary calls were
//! stopped, and asserts both are 0. (The fourth feature, the shell model's
//! unreadable lines, is attacked by tool calls: policy_adversarial's
//! `unparsed.jsonl`.)
//!
//! - `--session-id` / `--data-dir` on `memory-latch consent request`,
//!   `approve` and `recover` (journaling only: docs/protocol.md §13);
//! - kijito-local's MCP `kijito_wake_check` with `live` (the wake hold and its
//!   journal line);
//! - the tmux worker's lock and its 3 s start wait (docs/adapters.md):
//!   held by a live process, a symlink or a FIFO in its place, a second
//!   worker, a crash.

#![allow(clippy::unwrap_used)]

use crate::compact_tmux as ct;
use crate::report::{pretool, reason_of, session_start};
use crate::support;

use serde_json::{json, Value};
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use support::latch::Env;

/// What one attempt did: an attack held (refused, nothing written) or got
/// past; an ordinary call passed or was stopped.
struct Tally {
    feature: &'static str,
    attacks: Vec<(&'static str, Option<String>)>,
    ordinary: Vec<(&'static str, Option<String>)>,
}

impl Tally {
    fn new(feature: &'static str) -> Tally {
        Tally { feature, attacks: Vec::new(), ordinary: Vec::new() }
    }
    /// An attack: `past` says what got through, `None` when it was held.
    fn attack(&mut self, name: &'static str, past: Option<String>) {
        self.attacks.push((name, past));
    }
    /// Ordinary work: `stopped` says how it was stopped, `None` when it passed.
    fn ordinary(&mut self, name: &'static str, stopped: Option<String>) {
        self.ordinary.push((name, stopped));
    }
    /// Print the figures and assert nothing got past, nothing ordinary stopped.
    fn finish(self) {
        let past: Vec<_> = self.attacks.iter().filter(|(_, p)| p.is_some()).collect();
        let stopped: Vec<_> = self.ordinary.iter().filter(|(_, s)| s.is_some()).collect();
        println!("{}:", self.feature);
        for (name, p) in &self.attacks {
            println!("  attack   {name:<60} {}", p.as_deref().map(|p| format!("GOT PAST: {}", clip(p))).unwrap_or_else(|| "held".into()));
        }
        for (name, s) in &self.ordinary {
            println!("  ordinary {name:<60} {}", s.as_deref().map(|s| format!("STOPPED: {}", clip(s))).unwrap_or_else(|| "passed".into()));
        }
        println!(
            "  attacks: {} attempts, {} got past; ordinary: {} calls, {} stopped",
            self.attacks.len(),
            past.len(),
            self.ordinary.len(),
            stopped.len()
        );
        assert!(past.is_empty() && stopped.is_empty(), "{}: see the lines above", self.feature);
    }
}

/// One line of at most 240 characters.
fn clip(s: &str) -> String {
    s.replace('\n', " | ").chars().take(240).collect()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The journal files of a data dir (names), sorted.
fn journals(data: &Path) -> Vec<String> {
    let mut v: Vec<String> = fs::read_dir(data.join("journal"))
        .map(|d| d.map(|f| f.unwrap().file_name().to_string_lossy().into_owned()).collect())
        .unwrap_or_default();
    v.sort();
    v
}

/// The bytes of every journal file of a data dir.
fn journal_bytes(data: &Path) -> Vec<(String, Vec<u8>)> {
    journals(data).into_iter().map(|n| (n.clone(), fs::read(data.join("journal").join(&n)).unwrap())).collect()
}

/// The consent ledger of the latch (its records).
fn ledger(e: &Env) -> Vec<u8> {
    fs::read(e.ws.join(".memory-latch/tokens.json")).unwrap_or_default()
}

/// A private directory of its own (0700) under the world's tmp.
fn private_dir(e: &Env, name: &str) -> PathBuf {
    let d = e.w.dir().join(name);
    fs::create_dir_all(&d).unwrap();
    fs::set_permissions(&d, fs::Permissions::from_mode(0o700)).unwrap();
    d
}

/// A latch command with journal flags must be refused (exit 1 or 2), leave
/// the journals, the ledger and `also` as they were: `None`; else what got past.
fn refused_writing_nothing(e: &Env, args: &[&str], also: &[&Path]) -> Option<String> {
    let before = (journal_bytes(&e.w.data), ledger(e));
    let o = e.latch(args);
    let after = (journal_bytes(&e.w.data), ledger(e));
    let mut past = Vec::new();
    if o.status.success() {
        past.push("exit 0".to_owned());
    }
    if before.0 != after.0 {
        past.push(format!("journals changed: {:?} -> {:?}", before.0.iter().map(|j| &j.0).collect::<Vec<_>>(), journals(&e.w.data)));
    }
    if before.1 != after.1 {
        past.push("the consent ledger changed".into());
    }
    for p in also {
        if fs::symlink_metadata(p).is_ok() {
            past.push(format!("{} written", p.display()));
        }
    }
    if !o.status.success() && stderr(&o).lines().next().is_none_or(|l| !l.contains("failed:")) {
        past.push(format!("no stable code: {}", stderr(&o)));
    }
    (!past.is_empty()).then(|| past.join("; "))
}

/// A latch world with a started session `s1` (its journal exists).
fn latch_world() -> Env {
    let e = support::latch::env();
    e.ok(&["init", "--objective", "attack the flags", "--next-step", "try each"]);
    session_start(&e, "startup");
    e
}

#[test]
fn the_latch_commands_journal_flags_attacked() {
    let mut t = Tally::new("memory-latch --session-id / --data-dir (consent request, recover)");
    let e = latch_world();
    let data = e.w.data_arg();
    let action = e.file("action.txt", "rm -rf build\n");
    let request = |extra: &[&str]| -> Vec<String> {
        let mut v: Vec<String> =
            ["consent", "request", "--action-file", &action, "--summary", "clean", "--risk", "low"].iter().map(|s| s.to_string()).collect();
        v.extend(extra.iter().map(|s| s.to_string()));
        v
    };
    let run = |args: Vec<String>, also: &[&Path]| {
        let a: Vec<&str> = args.iter().map(String::as_str).collect();
        refused_writing_nothing(&e, &a, also)
    };

    // A session no hook started: a journal nobody's session wrote.
    t.attack("consent request into a made-up session", run(request(&["--session-id", "decoy", "--data-dir", &data]), &[]));
    t.attack(
        "recover into a made-up session",
        run(vec!["recover".into(), "--session-id".into(), "decoy".into(), "--data-dir".into(), data.clone()], &[]),
    );
    // The user's own journal: lines that say the user ran it by hand.
    t.attack("consent request as the user (--session-id user)", run(request(&["--session-id", "user", "--data-dir", &data]), &[]));
    t.attack(
        "recover as the user (--session-id user)",
        run(vec!["recover".into(), "--session-id".into(), "user".into(), "--data-dir".into(), data.clone()], &[]),
    );
    // A directory that is not the data dir: a journal written outside it.
    let elsewhere = private_dir(&e, "elsewhere");
    t.attack(
        "consent request into another private dir",
        run(request(&["--session-id", "s1", "--data-dir", elsewhere.to_str().unwrap()]), &[&elsewhere.join("journal")]),
    );
    let open_dir = e.w.dir().join("open");
    fs::create_dir(&open_dir).unwrap();
    fs::set_permissions(&open_dir, fs::Permissions::from_mode(0o755)).unwrap();
    t.attack(
        "recover into a 0755 dir (a home, a project)",
        run(vec!["recover".into(), "--data-dir".into(), open_dir.to_str().unwrap().into()], &[&open_dir.join("journal")]),
    );
    // A symlink to the data dir, a data dir that is not there.
    let link = e.w.dir().join("data-link");
    std::os::unix::fs::symlink(&e.w.data, &link).unwrap();
    t.attack(
        "consent request through a symlinked data dir",
        run(request(&["--session-id", "s1", "--data-dir", link.to_str().unwrap()]), &[]),
    );
    let missing = e.w.dir().join("missing");
    t.attack(
        "consent request with a missing data dir",
        run(request(&["--session-id", "s1", "--data-dir", missing.to_str().unwrap()]), &[&missing]),
    );
    // A session journal that is a symlink (planted): the request would go unrecorded.
    std::os::unix::fs::symlink("/etc/hostname", e.w.data.join("journal/s9.jsonl")).unwrap();
    t.attack("consent request into a symlinked session journal", run(request(&["--session-id", "s9", "--data-dir", &data]), &[]));
    fs::remove_file(e.w.data.join("journal/s9.jsonl")).unwrap();
    // Another session a hook really started, named by this session's tool call.
    let mut p = support::gate::payload("claude", "SessionStart(source=startup)");
    p["session_id"] = json!("s2");
    p["transcript_path"] = json!(e.w.transcript.to_str().unwrap());
    p["cwd"] = json!(e.ws.to_str().unwrap());
    e.session_hook("claude", "SessionStart", &p);
    let latch_bin = support::gate::helper_dir().join("memory-latch");
    let other = format!(
        "{} consent request --action-file {action} --summary clean --risk low --workspace {} --session-id s2 --data-dir {data}",
        latch_bin.display(),
        e.ws.display()
    );
    t.attack(
        "the agent's own tool call naming another started session",
        match pretool(&e, "claude", &other) {
            Some(a) if reason_of(&a).contains("command_session_mismatch") => None,
            Some(a) => Some(format!("stopped for another reason: {}", reason_of(&a))),
            None => Some("PreToolUse allowed it".into()),
        },
    );
    // Ids and paths the flags' parsers must refuse.
    for (name, sid, dir) in [
        ("a session id with a path in it", "../s1", data.as_str()),
        ("an empty session id", "", data.as_str()),
        ("a relative data dir", "s1", "data"),
        ("a data dir with ..", "s1", &*format!("{data}/../data")),
    ] {
        let name: &'static str = Box::leak(format!("consent request with {name}").into_boxed_str());
        t.attack(name, run(request(&["--session-id", sid, "--data-dir", dir]), &[]));
    }
    // Many writers at once (a hook and the commands): one chain, still intact.
    let children: Vec<_> = (0..6)
        .map(|_| {
            let mut c = e.command(&support::bin("memory-latch"));
            c.args(request(&["--session-id", "s1", "--data-dir", &data])).arg("--workspace").arg(&e.ws);
            c.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap()
        })
        .collect();
    let pre = pretool(&e, "claude", "rm -rf build");
    let failed: Vec<String> =
        children.into_iter().map(|c| c.wait_with_output().unwrap()).filter(|o| !o.status.success()).map(|o| stderr(&o)).collect();
    let verify = crate::report::report(&e, &["verify", "--session", "s1"]);
    let issued = e.w.journal("s1").iter().filter(|l| l["kind"] == "consent_issued").count();
    t.attack(
        "six concurrent consent requests and a hook: break the chain",
        (verify.status.code() != Some(0) || issued != 6 || !failed.is_empty() || pre.is_none())
            .then(|| format!("verify {:?}, {issued} issued, failures {failed:?}", verify.status.code())),
    );

    // Ordinary: the commands as the hooks name them, and the user's by hand.
    let reason = reason_of(&pretool(&e, "claude", "rm -rf build").expect("consent asked"));
    let cmd = reason.split('`').nth(1).unwrap().to_owned();
    let words = shell_words::split(&cmd).unwrap();
    let o = e.command(&words[0]).args(&words[1..]).stdin(Stdio::null()).output().unwrap();
    let lines = e.w.journal("s1").iter().filter(|l| l["kind"] == "consent_issued").count();
    t.ordinary(
        "the consent request PreToolUse names",
        (!o.status.success() || lines != 7).then(|| format!("{lines} issued: {}", stderr(&o))),
    );
    // (A latch of its own: the attacks above may have used up the recovery attempts.)
    let e = latch_world();
    let data = e.w.data_arg();
    let ctx = e.user_says("claude", "you forgot everything").unwrap_or_default();
    let named = ctx.split('`').nth(1).filter(|c| c.contains(" recover ")).map(str::to_owned);
    t.ordinary(
        "the recover UserPromptSubmit names",
        match named {
            None => Some(format!("no recover command in {ctx}")),
            Some(c) => {
                let w = shell_words::split(&c).unwrap();
                let o = e.command(&w[0]).args(&w[1..]).stdin(Stdio::null()).output().unwrap();
                (!o.status.success()).then(|| stderr(&o))
            }
        },
    );
    let o = e.latch(&["recover"]);
    t.ordinary("the user's recover by hand, no flags", (!o.status.success()).then(|| stderr(&o)));
    let o = e.latch(&["recover", "--data-dir", &data]);
    let user_lines = e.w.journal("user").len();
    t.ordinary("the user's recover by hand into the data dir", (!o.status.success() || user_lines == 0).then(|| stderr(&o)));
    t.finish();
}

/// The printed `approve` command (key consent mode) is the user's to run:
/// what the agent gives in `--data-dir` must not change what it approves.
#[test]
fn the_approve_command_a_key_request_prints_is_not_steered_by_the_flags() {
    let mut t = Tally::new("memory-latch consent request (key mode): the approve command it prints");
    let k = crate::consent_key::key_world();
    let e = &k.e;
    session_start(e, "startup");
    let action = e.file("action.txt", "git push --force\n");
    // A data dir the agent made, whose name carries more flags and a command.
    let tricky = e.w.dir().join("d --token-id forged; touch pwned #");
    fs::create_dir_all(tricky.join("journal")).unwrap();
    fs::set_permissions(&tricky, fs::Permissions::from_mode(0o700)).unwrap();
    fs::set_permissions(tricky.join("journal"), fs::Permissions::from_mode(0o700)).unwrap();
    fs::write(tricky.join("journal/s1.jsonl"), b"").unwrap();
    fs::set_permissions(tricky.join("journal/s1.jsonl"), fs::Permissions::from_mode(0o600)).unwrap();
    let args = ["consent", "request", "--action-file", &action, "--summary", "push", "--risk", "low", "--session-id", "s1", "--data-dir"];
    let mut a: Vec<&str> = args.to_vec();
    a.push(tricky.to_str().unwrap());
    let o = e.latch(&a);
    let printed = String::from_utf8_lossy(&o.stdout).into_owned();
    let approve = printed.lines().find_map(|l| l.trim().strip_prefix("memory-latch approve ")).map(str::to_owned);
    t.attack(
        "a data dir named with flags and a command",
        match (o.status.success(), approve) {
            (false, _) => None,
            (true, None) => Some(format!("no approve command: {printed}")),
            (true, Some(cmd)) => {
                let words = shell_words::split(&cmd).unwrap_or_default();
                let ids = words.iter().filter(|w| *w == "--token-id").count();
                let dir = words.iter().skip_while(|w| *w != "--data-dir").nth(1).cloned().unwrap_or_default();
                (ids != 1 || dir != tricky.to_str().unwrap() || cmd.contains("; touch"))
                    .then(|| format!("the user would run: memory-latch approve {cmd}"))
            }
        },
    );
    // Ordinary: the request as PreToolUse names it prints the approve command with the same flags.
    let reason = reason_of(&pretool(e, "claude", "rm -rf build").expect("consent asked"));
    let cmd = reason.split('`').nth(1).unwrap().to_owned();
    let words = shell_words::split(&cmd).unwrap();
    let o = e.command(&words[0]).args(&words[1..]).stdin(Stdio::null()).output().unwrap();
    let printed = String::from_utf8_lossy(&o.stdout).into_owned();
    let tail = format!(" --session-id s1 --data-dir {}", e.w.data_arg());
    t.ordinary(
        "the request PreToolUse names prints approve with the same flags",
        (!o.status.success() || !printed.lines().any(|l| l.trim().starts_with("memory-latch approve ") && l.ends_with(&tail)))
            .then(|| format!("{printed}{}", stderr(&o))),
    );
    t.finish();
}

/// The wake hold file of the world's workspace, if any (its `hold`).
fn hold_of(e: &Env) -> Option<String> {
    let f = fs::read_dir(e.w.qa_dir())
        .ok()?
        .map(|f| f.unwrap().path())
        .find(|p| p.file_name().unwrap().to_str().unwrap().starts_with("wake-hold."))?;
    let v: Value = serde_json::from_slice(&fs::read(f).ok()?).ok()?;
    v["hold"].as_str().map(str::to_owned)
}

/// A latch world whose SessionStart (session `s1`) found a boot change: a wake hold.
fn held_world() -> Env {
    let e = latch_world();
    fs::write(&e.boot, "99999999-8888-7777-6666-555555555555\n").unwrap();
    session_start(&e, "resume");
    assert_eq!(hold_of(&e).as_deref(), Some("pending"));
    e
}

fn mcp(e: &Env) -> crate::kijito_local_mcp::Mcp {
    let db = e.w.dir().join("mcp.db");
    let mut c = e.command(env!("CARGO_BIN_EXE_kijito-local"));
    c.args(["mcp", "--db", db.to_str().unwrap()]).current_dir(&e.ws);
    let mut m = crate::kijito_local_mcp::Mcp::spawn(c);
    m.initialize("2025-06-18");
    m
}

/// A `kijito_wake_check` call: (is_error, text).
fn wake_call(m: &mut crate::kijito_local_mcp::Mcp, args: Value) -> (bool, String) {
    let (text, is_error) = m.call("kijito_wake_check", args);
    (is_error, text)
}

#[test]
fn the_mcp_live_wake_check_attacked() {
    let mut t = Tally::new("kijito-local MCP kijito_wake_check with live");
    let e = held_world();
    let ws = e.ws.to_str().unwrap().to_owned();
    let data = e.w.data_arg();
    let mut m = mcp(&e);

    // Without live: the hold must stay.
    let (_, _) = wake_call(&mut m, json!({"workspace": ws, "data_dir": data}));
    t.attack("a check without live lifts the hold", (hold_of(&e).as_deref() != Some("pending")).then(|| format!("hold {:?}", hold_of(&e))));
    // Crafted arguments.
    for (name, args) in [
        ("live as a string", json!({"workspace": ws, "data_dir": data, "live": "true"})),
        ("live as 1", json!({"workspace": ws, "data_dir": data, "live": 1})),
        ("an unknown argument beside live", json!({"workspace": ws, "data_dir": data, "live": true, "hold": "lifted"})),
        ("a relative workspace", json!({"workspace": "ws", "data_dir": data, "live": true})),
        ("a session id with a path", json!({"workspace": ws, "data_dir": data, "live": true, "session_id": "../s1"})),
    ] {
        let before = (hold_of(&e), journal_bytes(&e.w.data));
        let (err, text) = wake_call(&mut m, args);
        let after = (hold_of(&e), journal_bytes(&e.w.data));
        t.attack(name, (!err || before != after).then(|| format!("error {err}, changed {}: {text}", before != after)));
    }
    // A made-up session, the user's journal, a data dir that is not one.
    let elsewhere = private_dir(&e, "elsewhere");
    fs::create_dir_all(elsewhere.join("qa")).unwrap();
    fs::set_permissions(elsewhere.join("qa"), fs::Permissions::from_mode(0o700)).unwrap();
    for (name, args, also) in [
        ("live into a made-up session", json!({"workspace": ws, "data_dir": data, "live": true, "session_id": "decoy"}), None),
        ("live into the user's journal", json!({"workspace": ws, "data_dir": data, "live": true, "session_id": "user"}), None),
        (
            "live with another private dir as the data dir",
            json!({"workspace": ws, "data_dir": elsewhere.to_str().unwrap(), "live": true, "session_id": "s1"}),
            Some(elsewhere.join("journal")),
        ),
    ] {
        let before = (hold_of(&e), journal_bytes(&e.w.data));
        let (err, text) = wake_call(&mut m, args);
        let after = (hold_of(&e), journal_bytes(&e.w.data));
        let wrote = also.as_ref().is_some_and(|p| p.exists());
        t.attack(
            name,
            (!err || before != after || wrote).then(|| format!("error {err}, changed {}, wrote {wrote}: {text}", before != after)),
        );
    }
    // Two live checks at once from two servers: one answer each, one chain.
    let mut m2 = mcp(&e);
    let a = std::thread::scope(|s| {
        let h = s.spawn(|| wake_call(&mut m2, json!({"workspace": ws, "data_dir": data, "live": true})));
        let mine = wake_call(&mut m, json!({"workspace": ws, "data_dir": data, "live": true}));
        (mine, h.join().unwrap())
    });
    let lives = e.w.journal("s1").iter().filter(|l| l["kind"] == "wake_check_live").count();
    let verify = crate::report::report(&e, &["verify", "--session", "s1"]);
    t.attack(
        "two concurrent live checks: break the chain or lose a line",
        (a.0 .0 || a.1 .0 || lives != 2 || verify.status.code() != Some(0))
            .then(|| format!("{lives} lines, verify {:?}", verify.status.code())),
    );
    // Ordinary: the live check of the held session's workspace answers it.
    t.ordinary(
        "the live check answers the hold (cautious: the boot changed)",
        (hold_of(&e).as_deref() != Some("cautious")).then(|| format!("hold {:?}", hold_of(&e))),
    );
    m.finish();
    m2.finish();
    t.finish();
}

/// `compact-worker.<S>.lock` in the world's QA dir.
fn worker_lock(w: &support::gate::World) -> PathBuf {
    w.qa().join(format!("compact-worker.{}.lock", ct::S))
}

/// The pids of the `kijito-compact worker` processes of this data dir.
fn workers(w: &support::gate::World) -> Vec<u32> {
    let data = w.data_arg();
    fs::read_dir("/proc")
        .unwrap()
        .filter_map(|p| p.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let argv = fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            let words: Vec<&[u8]> = argv.split(|b| *b == 0).collect();
            words.iter().any(|w| w.ends_with(b"kijito-compact")) && words.contains(&&b"worker"[..]) && words.contains(&data.as_bytes())
        })
        .collect()
}

/// `kijito-compact worker` for the request `nonce`, started by hand as a
/// script would (the PreToolUse guard denies it on the command line).
fn worker_by_hand(w: &support::gate::World, nonce: &str) -> std::process::Child {
    w.command(env!("CARGO_BIN_EXE_kijito-compact"))
        .args(["worker", "--session-id", ct::S, "--data-dir", &w.data_arg(), "--nonce", nonce])
        .env_remove("TMUX")
        .env_remove("TMUX_PANE")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

/// How often `/compact` reached the pane within `secs` (waiting the whole
/// time once it is typed, so a second typing is seen).
fn typed_after(p: &ct::Pane, secs: u64) -> usize {
    let end = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    while std::time::Instant::now() < end {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    ct::typed(&p.typed).matches("/compact").count()
}

/// Typed once, or what went wrong.
fn once(n: usize) -> Option<String> {
    match n {
        1 => None,
        0 => Some("nothing typed: compaction wedged".into()),
        n => Some(format!("/compact typed {n} times")),
    }
}

#[test]
fn the_tmux_workers_lock_attacked() {
    let mut t = Tally::new("kijito-compact tmux worker lock (compact-worker.<s>.lock, 3 s start wait)");
    // A live process of the agent's holds the lock through the request, then lets go.
    if let Some((w, p)) = ct::stand_in(ct::Shape::ShellChild) {
        let lock = worker_lock(&w);
        let mut holder = Command::new("flock").args(["-F", "-x"]).arg(&lock).args(["sleep", "600"]).stdin(Stdio::null()).spawn().unwrap();
        ct::wait_for("the holder's lock", 10, || {
            Command::new("flock").args(["-n", "-s"]).arg(&lock).arg("true").status().is_ok_and(|s| !s.success())
        });
        ct::request_in_turn(&w, &[]);
        ct::stop(&w);
        let while_held = typed_after(&p, 5);
        holder.kill().unwrap();
        holder.wait().unwrap();
        let again = ct::request(&w, &[]);
        let after = typed_after(&p, 6);
        t.attack(
            "hold the lock with a live process, then let go",
            (while_held != 0 || !again.status.success() || after != 1).then(|| {
                format!("typed {while_held} while held; request again: {:?} {}; typed {after} after", again.status.code(), stderr(&again))
            }),
        );
    }
    // A symlink or a FIFO planted where the lock goes (the QA dir written by
    // hand): held when the request is refused with a code and nothing is
    // typed, or `/compact` is typed once; never a request left pending with
    // no worker.
    for (name, plant) in [("a symlink planted at the lock path", "symlink"), ("a FIFO planted at the lock path", "fifo")] {
        let Some((w, p)) = ct::stand_in(ct::Shape::ShellChild) else { continue };
        let lock = worker_lock(&w);
        match plant {
            "symlink" => std::os::unix::fs::symlink(w.path("elsewhere.lock"), &lock).unwrap(),
            _ => assert!(Command::new("mkfifo").arg(&lock).status().unwrap().success()),
        }
        assert_eq!(ct::session_hook(&w, "UserPromptSubmit", "UserPromptSubmit").status.code(), Some(0));
        w.record_ok(ct::S);
        let r = ct::request(&w, &[]);
        ct::stop(&w);
        let n = typed_after(&p, 5);
        let refused = !r.status.success() && stderr(&r).starts_with("kijito_compact_failed:");
        let nothing_recorded = !w.qa().join(format!("compact-request.{}.json", ct::S)).exists();
        t.attack(
            name,
            (!(refused && n == 0 && nothing_recorded) && n != 1 || w.path("elsewhere.lock").exists()).then(|| {
                format!("request {:?} {}, typed {n}, request recorded: {}", r.status.code(), clip(&stderr(&r)), !nothing_recorded)
            }),
        );
    }
    // A second worker for the same request, started by hand while the first waits.
    if let Some((w, p)) = ct::stand_in(ct::Shape::ShellChild) {
        ct::request_in_turn(&w, &[]);
        let nonce = ct::status(&w)["nonce"].as_str().unwrap().to_owned();
        let mut second = worker_by_hand(&w, &nonce);
        ct::stop(&w);
        t.attack("a second worker by hand for the same request", once(typed_after(&p, 6)));
        let _ = second.kill();
        let _ = second.wait();
    }
    // The lock file removed under the waiting worker, then a second worker by hand.
    if let Some((w, p)) = ct::stand_in(ct::Shape::ShellChild) {
        ct::request_in_turn(&w, &[]);
        let nonce = ct::status(&w)["nonce"].as_str().unwrap().to_owned();
        ct::wait_for("the first worker", 10, || !workers(&w).is_empty());
        fs::remove_file(worker_lock(&w)).unwrap();
        let mut second = worker_by_hand(&w, &nonce);
        std::thread::sleep(std::time::Duration::from_millis(300));
        ct::stop(&w);
        t.attack("the lock file unlinked, then a second worker by hand", once(typed_after(&p, 6)));
        let _ = second.kill();
        let _ = second.wait();
    }
    // A crash: the worker SIGKILLed before the turn ends, then the request again.
    if let Some((w, p)) = ct::stand_in(ct::Shape::ShellChild) {
        ct::request_in_turn(&w, &[]);
        ct::wait_for("the worker", 10, || !workers(&w).is_empty());
        for pid in workers(&w) {
            assert!(Command::new("kill").args(["-9", &pid.to_string()]).status().unwrap().success());
        }
        ct::wait_for("the worker gone", 10, || workers(&w).is_empty());
        let again = ct::request(&w, &[]);
        ct::stop(&w);
        let n = typed_after(&p, 6);
        t.attack(
            "the worker killed before the Stop, then the request again",
            (!again.status.success() || n != 1).then(|| format!("request again {:?} {}; typed {n}", again.status.code(), stderr(&again))),
        );
    }
    // Ordinary: a request in a turn is typed once after the Stop.
    if let Some((w, p)) = ct::stand_in(ct::Shape::ShellChild) {
        ct::request_in_turn(&w, &[]);
        ct::stop(&w);
        t.ordinary("a request, then the Stop", once(typed_after(&p, 4)));
    }
    t.finish();
}
