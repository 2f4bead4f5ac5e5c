//! The crash explorer (docs/testing.md, "Crash explorer"): every writer of
//! the compaction cycle and the latch is run under `strace`, its mutating
//! system calls listed (a file created, written, renamed, linked, unlinked,
//! a directory made, an fsync, the hook's answer written to stdout), then run
//! again from the same starting state once per call with `SIGKILL` injected
//! at that call (`strace -e inject=CALL:signal=KILL:when=N`), and the flow
//! goes on as a host would: the rest of the hooks of that compaction, one
//! more prompt, then a whole next cycle. After each kill the invariants of
//! docs/protocol.md §7 ("Crash recovery") and docs/memory-latch.md
//! ("Crashes") are checked:
//!
//! - every compaction gets a re-entry text from a hook that was not killed,
//!   and never two ATTESTED ones (a killed hook's complete answer counts too);
//! - nothing is wedged: the next cycle's pass is promoted and delivered
//!   ATTESTED exactly once; the latch is TRUSTED and takes the next write;
//! - no temp file of a killed write is left once the next write ran.
//!
//! A hook that forks a helper (SessionStart's `wake-check --hook`,
//! PreToolUse's `memory-latch tool-gate`) is traced as one tree (`strace
//! -f`), and a point of the child is killed in the child alone, through a
//! wrapper in a private bin dir ([`Forking`]); the tmux worker `request`
//! starts is explored by running it as `request` runs it.
//!
//! The static power-loss check reads the same traces: every rename, link,
//! unlink or mkdir must be followed by an fsync of its parent directory
//! (one documented exception: the `-delivered` mark of a re-entry, see
//! `kijito_gate::compaction::Delivery::commit`).
//!
//! `cargo test` explores every third point of each writer (a bounded
//! sample); `KIJITO_CRASH_FULL=1` explores every point and prints the figures
//! docs/testing.md quotes. Linux with `strace` only (`.ci/run` installs it);
//! without it the test says so and explores nothing.
#![allow(clippy::unwrap_used)]

use crate::support;
use support::gate::*;

use serde_json::Value;
use std::fs;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// The system calls that change state (an `openat` only with `O_CREAT`, a
/// `write` only to a descriptor other than stderr).
const TRACED: &str = "openat,write,pwrite64,rename,renameat,renameat2,link,linkat,unlink,unlinkat,mkdir,mkdirat,fsync,fdatasync,ftruncate";

fn strace() -> Option<&'static str> {
    ["/usr/bin/strace", "/bin/strace"].into_iter().find(|p| Path::new(p).exists())
}

/// One traced call: its name, its number among the calls of that name
/// (what `when=` counts), and the line strace printed.
#[derive(Debug, Clone)]
struct Call {
    name: String,
    nth: usize,
    line: String,
    /// In a process tree ([`traced_tree`]): the child helper this call was
    /// made by (its file name), `None` for the traced command itself.
    child: Option<String>,
}

impl Call {
    fn mutating(&self) -> bool {
        match self.name.as_str() {
            "openat" => self.line.contains("O_CREAT"),
            "write" | "pwrite64" => !self.line.starts_with(&format!("{}(2<", self.name)),
            _ => true,
        }
    }
    fn ok(&self) -> bool {
        self.line.rsplit_once(") = ").is_some_and(|(_, r)| r.starts_with('0'))
    }
    /// The quoted path arguments.
    fn paths(&self) -> Vec<String> {
        self.line.split('"').skip(1).step_by(2).map(str::to_owned).collect()
    }
}

/// `cmd` wrapped in strace with `strace_args` (environment kept).
fn wrapped(cmd: &Command, strace_args: &[String]) -> Command {
    let mut c = Command::new(strace().unwrap());
    c.args(["-qq"]).args(strace_args).arg("--").arg(cmd.get_program()).args(cmd.get_args());
    for (k, v) in cmd.get_envs() {
        match v {
            Some(v) => c.env(k, v),
            None => c.env_remove(k),
        };
    }
    c.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
    c
}

fn feed(mut c: Command, stdin: &[u8]) -> Output {
    use std::io::Write;
    let mut child = c.spawn().unwrap();
    let mut pipe = child.stdin.take().unwrap();
    let bytes = stdin.to_vec();
    std::thread::spawn(move || {
        let _ = pipe.write_all(&bytes);
    });
    wait_bounded(child, 60)
}

/// Run `cmd` traced: its output and every call of [`TRACED`], in order.
fn traced(cmd: &Command, stdin: &[u8], scratch: &Path) -> (Output, Vec<Call>) {
    let log = scratch.join("trace.log");
    let args = ["-y".to_owned(), "-e".into(), format!("trace={TRACED}"), "-o".into(), log.to_str().unwrap().to_owned()];
    let out = feed(wrapped(cmd, &args), stdin);
    let mut counts = std::collections::HashMap::<String, usize>::new();
    let calls = fs::read_to_string(&log)
        .unwrap()
        .lines()
        .filter_map(|l| {
            let name = l.split('(').next()?.to_owned();
            if !TRACED.split(',').any(|t| t == name) {
                return None;
            }
            let n = counts.entry(name.clone()).or_default();
            *n += 1;
            Some(Call { name, nth: *n, line: l.to_owned(), child: None })
        })
        .collect();
    (out, calls)
}

/// Run `cmd` and every process it starts traced (`strace -f`): its output
/// and every call of [`TRACED`] made by the command itself or by one of the
/// `children` (the real helpers behind a [`Forking`] bin dir's wrappers),
/// each numbered within its own process from that helper's `execve` on (what
/// `when=` counts in a process traced on its own).
fn traced_tree(cmd: &Command, stdin: &[u8], scratch: &Path, children: &[&str]) -> (Output, Vec<Call>) {
    let log = scratch.join("trace.log");
    let args = ["-f".to_owned(), "-y".into(), "-e".into(), format!("trace={TRACED},execve"), "-o".into(), log.to_str().unwrap().to_owned()];
    let out = feed(wrapped(cmd, &args), stdin);
    let mut root = None;
    // pid -> (child helper it runs, or None for the command; counts per call name)
    let mut procs = std::collections::HashMap::<String, (Option<String>, std::collections::HashMap<String, usize>)>::new();
    let mut calls = Vec::new();
    for l in fs::read_to_string(&log).unwrap().lines() {
        let Some((pid, line)) = l.split_once(' ') else { continue };
        let line = line.trim_start();
        let root = root.get_or_insert_with(|| pid.to_owned());
        let Some(name) = line.split('(').next() else { continue };
        let p = procs.entry(pid.to_owned()).or_insert_with(|| (None, Default::default()));
        if name == "execve" {
            if line.contains(") = 0") || !line.contains(") = ") {
                let exe = line.split('"').nth(1).unwrap_or("");
                p.0 = children.iter().find(|c| exe == support::bin(c)).map(|c| (*c).to_owned());
                p.1.clear();
            }
            continue;
        }
        if !TRACED.split(',').any(|t| t == name) || (pid != root && p.0.is_none()) {
            continue;
        }
        let n = p.1.entry(name.to_owned()).or_default();
        *n += 1;
        calls.push(Call { name: name.to_owned(), nth: *n, line: line.to_owned(), child: p.0.clone() });
    }
    (out, calls)
}

/// A private bin dir for a hook whose forked children are explored: the
/// hooks hard-linked (they find their helpers beside themselves), and each
/// child helper a wrapper that runs the real one, under `strace` with the
/// arguments in `KIJITO_CRASH_CHILD` when set: the kill lands in the child
/// alone, the hook itself runs untraced and sees its child die.
struct Forking {
    /// The plugin root (`<root>/bin` the bin dir), apart from the world's files.
    _root: tempfile::TempDir,
    dir: PathBuf,
}

impl Forking {
    fn new(hooks: &[&str], children: &[&str]) -> Forking {
        use std::os::unix::fs::PermissionsExt;
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("bin");
        fs::create_dir_all(&dir).unwrap();
        for h in hooks {
            fs::hard_link(support::bin(h), dir.join(h)).unwrap();
        }
        for c in children {
            let real = support::bin(c);
            let script = format!(
                "#!/bin/sh\nif [ -n \"$KIJITO_CRASH_CHILD\" ]; then exec {} -qq $KIJITO_CRASH_CHILD -- {real} \"$@\"; fi\nexec {real} \"$@\"\n",
                strace().unwrap()
            );
            write_private(&dir.join(c), script.as_bytes());
            fs::set_permissions(dir.join(c), fs::Permissions::from_mode(0o700)).unwrap();
        }
        Forking { _root: root, dir }
    }
    fn bin(&self, name: &str) -> String {
        self.dir.join(name).to_str().unwrap().to_owned()
    }
}

/// Explore a hook and the helpers it forks: traced once as a tree
/// ([`traced_tree`]), then killed at each [`sample`] point from the state
/// `restore` puts back: a point of the hook itself with the hook run under
/// strace, a point of a child through its [`Forking`] wrapper, the hook
/// untraced. `check` gets the hook's output (killed or not) and whether
/// the kill was the child's before its answer.
fn explore_tree(
    writer: &str,
    scratch: &Path,
    restore: &dyn Fn(),
    cmd: &dyn Fn() -> Command,
    stdin: &[u8],
    children: &[&str],
    check: &dyn Fn(&str, &Output, bool, &mut Tally),
) -> Tally {
    let _ = fs::create_dir_all(scratch);
    restore();
    let (_, calls) = traced_tree(&cmd(), stdin, scratch, children);
    let mut t = Tally { unsynced: unsynced(&calls).into_iter().map(|l| format!("{writer}: {l}")).collect(), ..Tally::default() };
    let points: Vec<&Call> = calls.iter().filter(|c| c.mutating()).collect();
    assert!(points.iter().any(|c| c.child.is_some()), "{writer}: no child made a mutating call: {calls:#?}");
    t.points = points.len();
    for p in sample(&points) {
        t.explored += 1;
        restore();
        let out = match &p.child {
            None => killed_at(&cmd(), stdin, &p.name, p.nth),
            Some(_) => {
                let mut c = cmd();
                c.env("KIJITO_CRASH_CHILD", format!("-o /dev/null -e trace={n} -e inject={n}:signal=KILL:when={}", p.nth, n = p.name));
                feed_plain(c, stdin)
            }
        };
        // The child's answer to the hook is its write to stdout: killed at
        // it or before it, the child answered nothing.
        let at = calls.iter().position(|c| std::ptr::eq(c, p)).unwrap();
        let before_answer = p.child.is_some() && calls[at..].iter().any(|c| c.child == p.child && c.line.starts_with("write(1<"));
        let who = p.child.as_deref().map_or_else(|| "the hook".to_owned(), |c| format!("its child {c}"));
        check(&format!("{writer} killed in {who} at {}#{} ({})", p.name, p.nth, p.line), &out, before_answer, &mut t);
    }
    t.print(writer);
    t
}

/// Run `c` with `stdin` (no strace around it).
fn feed_plain(mut c: Command, stdin: &[u8]) -> Output {
    c.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
    feed(c, stdin)
}

/// Run `cmd` killed (SIGKILL) at the `nth` call of `name`.
fn killed_at(cmd: &Command, stdin: &[u8], name: &str, nth: usize) -> Output {
    let args = [
        "-o".to_owned(),
        "/dev/null".into(),
        "-e".into(),
        format!("trace={name}"),
        "-e".into(),
        format!("inject={name}:signal=KILL:when={nth}"),
    ];
    feed(wrapped(cmd, &args), stdin)
}

/// The static power-loss check: every successful rename, link, unlink or
/// mkdir not followed by an fsync of its parent directory.
fn unsynced(calls: &[Call]) -> Vec<String> {
    let mut missing = Vec::new();
    for (i, c) in calls.iter().enumerate() {
        let target = match c.name.as_str() {
            "rename" | "renameat" | "renameat2" | "link" | "linkat" => c.paths().last().cloned(),
            "unlink" | "unlinkat" | "mkdir" | "mkdirat" => c.paths().first().cloned(),
            _ => None,
        };
        let Some(target) = target.filter(|_| c.ok()) else { continue };
        // The one exception (kijito_gate::compaction::Delivery::commit): losing
        // the `-delivered` mark re-delivers, UNATTESTED; a fsync after the
        // print would be one more point where a kill loses the text.
        if target.contains("/compaction-reentry-delivered.") {
            continue;
        }
        let parent = Path::new(&target).parent().unwrap().to_str().unwrap().to_owned();
        let synced = calls[i + 1..].iter().any(|l| (l.name == "fsync" || l.name == "fdatasync") && l.line.contains(&format!("<{parent}>")));
        if !synced {
            missing.push(c.line.clone());
        }
    }
    missing
}

/// Temp files of killed writes (`.<name>.tmp-*`) under `dir`.
fn temp_files(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let Ok(rd) = fs::read_dir(dir) else { return found };
    for e in rd.flatten() {
        let p = e.path();
        let name = e.file_name().to_string_lossy().into_owned();
        if e.file_type().unwrap().is_dir() {
            found.extend(temp_files(&p));
        } else if name.starts_with('.') && name.contains(".tmp-") {
            found.push(p);
        }
    }
    found
}

fn copy_tree(from: &Path, to: &Path) {
    if to.exists() {
        fs::remove_dir_all(to).unwrap();
    }
    if from.exists() {
        let st = Command::new("cp").arg("-a").arg(from).arg(to).status().unwrap();
        assert!(st.success());
    }
}

/// Every `n`th point (`KIJITO_CRASH_FULL=1`: every point).
fn stride() -> usize {
    if std::env::var_os("KIJITO_CRASH_FULL").is_some() {
        1
    } else {
        3
    }
}

/// The points explored: every [`stride`]th, and the first call of each
/// system call name, so the `cargo test` sample kills every writer at every
/// kind of call it makes at least once.
fn sample<'a>(points: &[&'a Call]) -> Vec<&'a Call> {
    let mut seen = std::collections::HashSet::new();
    points
        .iter()
        .enumerate()
        .filter(|(i, c)| seen.insert((c.child.as_deref(), c.name.as_str())) | (i % stride() == 0))
        .map(|(_, c)| *c)
        .collect()
}

/// Age every temp file of a killed write under `dirs` by a minute: the next
/// write comes later than any live write lasts (docs/protocol.md §7, "Crash
/// recovery": temp files of files written beside the hooks are removed once
/// older than 30 s).
fn age_temps(dirs: &[PathBuf]) {
    for t in dirs.iter().flat_map(|d| temp_files(d)) {
        let st = Command::new("touch").args(["-h", "-d", "-60 seconds"]).arg(&t).status().unwrap();
        assert!(st.success());
    }
}

/// Explore one writer run alone: traced once from the starting state
/// `restore` puts back, then killed at each [`sample`] point from that state,
/// and `check` runs what comes next and records what it finds.
fn explore_alone(
    writer: &str,
    scratch: &Path,
    restore: &dyn Fn(),
    cmd: &dyn Fn() -> Command,
    stdin: &[u8],
    check: &dyn Fn(&str, &Output, &mut Tally),
) -> Tally {
    let _ = fs::create_dir_all(scratch);
    restore();
    let (_, calls) = traced(&cmd(), stdin, scratch);
    let mut t = Tally { unsynced: unsynced(&calls).into_iter().map(|l| format!("{writer}: {l}")).collect(), ..Tally::default() };
    let points: Vec<&Call> = calls.iter().filter(|c| c.mutating()).collect();
    t.points = points.len();
    for p in sample(&points) {
        t.explored += 1;
        restore();
        let out = killed_at(&cmd(), stdin, &p.name, p.nth);
        check(&format!("{writer} killed at {}#{} ({})", p.name, p.nth, p.line), &out, &mut t);
    }
    t.print(writer);
    t
}

/// The tallies' violations and unsynced calls, asserted empty.
fn assert_clean(all: &[Tally]) {
    let violations: Vec<&String> = all.iter().flat_map(|t| &t.violations).collect();
    let unsynced: Vec<&String> = all.iter().flat_map(|t| &t.unsynced).collect();
    assert!(
        violations.is_empty(),
        "{} violations:\n{}",
        violations.len(),
        violations.iter().map(|s| s.as_str()).collect::<Vec<_>>().join("\n")
    );
    assert!(unsynced.is_empty(), "without a parent fsync:\n{}", unsynced.iter().map(|s| s.as_str()).collect::<Vec<_>>().join("\n"));
}

/// What one writer's exploration found.
#[derive(Default)]
struct Tally {
    points: usize,
    explored: usize,
    states: usize,
    violations: Vec<String>,
    unsynced: Vec<String>,
}

impl Tally {
    fn print(&self, writer: &str) {
        println!(
            "crash explorer: {writer}: {} points, {} explored, {} states checked, {} violations, {} renames/links/unlinks/mkdirs without a parent fsync",
            self.points,
            self.explored,
            self.states,
            self.violations.len(),
            self.unsynced.len()
        );
        for v in self.violations.iter().chain(&self.unsynced).take(20) {
            println!("  {v}");
        }
    }
}

/// One hook run of a compaction cycle.
#[derive(Clone)]
struct Step {
    label: &'static str,
    bin: String,
    args: Vec<String>,
    stdin: Vec<u8>,
}

/// The re-entry lines a hook answered (`ATTESTED` / `UNATTESTED ... Reason: x.`).
fn reentries(stdout: &[u8]) -> Vec<String> {
    let Ok(v) = serde_json::from_slice::<Value>(stdout) else { return Vec::new() };
    let text = v["hookSpecificOutput"]["additionalContext"].as_str().unwrap_or("");
    text.lines().filter(|l| l.starts_with("kijito-qa re-entry after compaction:")).map(str::to_owned).collect()
}

struct Compaction {
    w: World,
    k: &'static Keys,
    snap: PathBuf,
}

impl Compaction {
    /// A world whose session has a recorded pass, saved as the starting state.
    fn new(k: &'static Keys) -> Compaction {
        let w = World::new();
        w.record_ok(k.s);
        let snap = w.path("snap");
        fs::create_dir(&snap).unwrap();
        let c = Compaction { w, k, snap };
        copy_tree(&c.w.data, &c.snap.join("data"));
        copy_tree(&c.heads(), &c.snap.join("heads"));
        c
    }
    fn heads(&self) -> PathBuf {
        self.w.home.join("latch-heads")
    }
    fn restore(&self) {
        copy_tree(&self.snap.join("data"), &self.w.data);
        copy_tree(&self.snap.join("heads"), &self.heads());
    }
    fn step(&self, label: &'static str, bin: &str, expect: Option<&str>, key: &str) -> Step {
        let mut args = vec!["--host".to_owned(), self.k.host.to_owned()];
        if let Some(e) = expect {
            args.extend(["--expect".to_owned(), e.to_owned()]);
        }
        args.extend(["--data-dir".to_owned(), self.w.data_arg()]);
        Step { label, bin: bin.to_owned(), args, stdin: self.w.hook_stdin(self.k.host, key, self.k.s) }
    }
    fn precompact(&self) -> Step {
        self.step("precompact", &PRECOMPACT, None, self.k.precompact)
    }
    fn postcompact(&self) -> Step {
        self.step("postcompact", &POSTCOMPACT, None, self.k.postcompact)
    }
    fn session_start(&self) -> Step {
        self.step("session-hook SessionStart(compact)", &SESSION_HOOK, Some("SessionStart"), self.k.compact_start)
    }
    fn prompt(&self) -> Step {
        self.step("prompt-hook UserPromptSubmit", &support::bin("prompt-hook"), Some("UserPromptSubmit"), self.k.ups)
    }
    /// The hooks of one compaction in this host's order, then one more prompt.
    fn cycle(&self, late: bool) -> Vec<Step> {
        let mut steps = vec![self.precompact()];
        match (self.k.host, late) {
            // The UserPromptSubmit fallback: no SessionStart(compact) delivered.
            (_, true) => steps.extend([self.postcompact(), self.prompt()]),
            ("claude", _) => steps.extend([self.session_start(), self.postcompact(), self.prompt()]),
            _ => steps.extend([self.postcompact(), self.session_start(), self.prompt()]),
        }
        steps.push(self.prompt());
        steps
    }
    fn command(&self, s: &Step) -> Command {
        let mut c = self.w.command(&s.bin);
        c.args(&s.args);
        c
    }

    /// Explore the writer at `index` of the cycle.
    fn explore(&self, late: bool, index: usize, tally: &mut Tally) {
        let steps = self.cycle(late);
        let writer = &steps[index];
        let scratch = self.scratch();
        self.restore();
        for s in &steps[..index] {
            self.command(s).output_with(&s.stdin);
        }
        let (_, calls) = traced(&self.command(writer), &writer.stdin, &scratch);
        tally.unsynced.extend(unsynced(&calls).into_iter().map(|l| format!("{}: {l}", writer.label)));
        let points: Vec<&Call> = calls.iter().filter(|c| c.mutating()).collect();
        tally.points += points.len();
        for p in sample(&points) {
            tally.explored += 1;
            self.restore();
            let mut delivered = Vec::new();
            let mut attested = 0;
            for (i, s) in steps.iter().enumerate() {
                let out = if i < index {
                    self.command(s).output_with(&s.stdin)
                } else if i == index {
                    killed_at(&self.command(s), &s.stdin, &p.name, p.nth)
                } else {
                    self.command(s).output_with(&s.stdin)
                };
                let killed = out.status.signal().is_some();
                for r in reentries(&out.stdout) {
                    attested += usize::from(r.contains(": ATTESTED"));
                    if !killed {
                        delivered.push(r);
                    }
                }
            }
            tally.states += 1;
            let at = format!("{} {} killed at {}#{} ({})", self.k.host, writer.label, p.name, p.nth, p.line);
            if delivered.is_empty() {
                tally.violations.push(format!("{at}: no re-entry delivered"));
            }
            if attested > 1 {
                tally.violations.push(format!("{at}: ATTESTED {attested} times"));
            }
            self.next_cycle(&at, tally);
        }
    }

    /// The next cycle: a new pass is recorded, promoted and delivered
    /// ATTESTED once, and no temp file is left after these writes.
    fn next_cycle(&self, at: &str, tally: &mut Tally) {
        let out = self.w.record(self.k.s, &self.w.green_pair("next", now_ms()).2, &self.w.path("next-a.json"), &self.w.path("next-b.json"));
        tally.states += 1;
        if !out.status.success() {
            tally.violations.push(format!("{at}: the next record failed: {}", String::from_utf8_lossy(&out.stderr)));
            return;
        }
        let next = if self.k.host == "claude" {
            vec![self.precompact(), self.session_start(), self.postcompact()]
        } else {
            vec![self.precompact(), self.postcompact(), self.session_start()]
        };
        let mut again = Vec::new();
        for s in &next {
            again.extend(reentries(&self.command(s).output_with(&s.stdin).stdout));
        }
        if again.len() != 1 || !again[0].contains(": ATTESTED") {
            tally.violations.push(format!("{at}: the next cycle delivered {again:?}"));
        }
        let temps = self.temps();
        if !temps.is_empty() {
            tally.violations.push(format!("{at}: temp files left after the next writes: {temps:?}"));
        }
    }

    fn temps(&self) -> Vec<PathBuf> {
        [self.w.data.clone(), self.heads()].iter().flat_map(|d| temp_files(d)).collect()
    }

    /// The session's spent-nonce ledger in the state directory
    /// (`kijito_gate::ledger`).
    fn ledger(&self) -> PathBuf {
        let qa = kijito_gate::QaDir::open(&kijito_protocol::ids::AbsPath::from_path(&self.w.data).unwrap())
            .unwrap()
            .with_ledger_dir(Some(self.heads()));
        kijito_gate::ledger::path(&qa, &kijito_protocol::ids::SessionId::parse(self.k.s).unwrap()).unwrap()
    }

    /// [`Compaction::new`] whose ledger has no room for one more entry, with
    /// entries nothing uses any more, so PreCompact's append rewrites it
    /// (`kijito_gate::ledger::append`).
    fn with_full_ledger(k: &'static Keys) -> Compaction {
        let c = Compaction::new(k);
        let old = now_ms() - 10 * kijito_gate::ledger::RETAIN_MS;
        let mut bytes = String::new();
        for n in 0u32.. {
            let line = kijito_gate::ledger::LedgerEntry {
                nonce: format!("{n:032x}"),
                why: kijito_gate::ledger::codes::PASS_CONSUMED,
                pass_sha256: kijito_protocol::ids::Digest::of(b"old pass"),
                reports: [kijito_protocol::ids::Digest::of(b"a"), kijito_protocol::ids::Digest::of(b"b")],
                recorded_at_ms: old,
                spent_at_ms: old + 1,
            }
            .to_line();
            if (bytes.len() + line.len()) as u64 > kijito_gate::ledger::MAX_LEDGER_BYTES {
                break;
            }
            bytes.push_str(&line);
        }
        kijito_files::private::ensure_private_dir(&c.heads()).unwrap();
        write_private(&c.ledger(), bytes.as_bytes());
        copy_tree(&c.heads(), &c.snap.join("heads"));
        c
    }
}

trait OutputWith {
    fn output_with(self, stdin: &[u8]) -> Output;
}

impl OutputWith for &mut Command {
    fn output_with(self, stdin: &[u8]) -> Output {
        use std::io::Write;
        let mut child = self.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
        let mut pipe = child.stdin.take().unwrap();
        let bytes = stdin.to_vec();
        std::thread::spawn(move || {
            let _ = pipe.write_all(&bytes);
        });
        wait_bounded(child, 60)
    }
}

impl OutputWith for Command {
    fn output_with(mut self, stdin: &[u8]) -> Output {
        (&mut self).output_with(stdin)
    }
}

#[test]
fn every_compaction_gets_its_reentry_whatever_hook_is_killed_where() {
    if strace().is_none() {
        println!("crash explorer: strace is not installed; nothing explored (.ci/run installs it)");
        return;
    }
    let mut all = Vec::new();
    for k in &HOSTS {
        let c = Compaction::new(k);
        // (writer, cycle with the UserPromptSubmit fallback, its index)
        let writers: &[(&str, bool, usize)] = if k.host == "claude" {
            &[
                ("precompact", false, 0),
                ("session-hook SessionStart(compact) claim+delivery", false, 1),
                ("prompt-hook late delivery", true, 2),
            ]
        } else {
            &[
                ("postcompact claim", false, 1),
                ("session-hook SessionStart(compact) delivery", false, 2),
                ("prompt-hook late delivery", true, 2),
                ("precompact", false, 0),
            ]
        };
        for (name, late, index) in writers {
            let mut t = Tally::default();
            c.explore(*late, *index, &mut t);
            t.print(&format!("{} {name}", k.host));
            all.push(t);
        }
    }
    // PreCompact whose ledger append rewrites the full ledger.
    let c = Compaction::with_full_ledger(&HOSTS[0]);
    let mut t = Tally::default();
    c.explore(false, 0, &mut t);
    t.print("codex precompact (ledger rewrite)");
    all.push(t);
    assert_clean(&all);
}

/// A saved starting state that a kill-at-one-point test runs from.
trait Saved {
    /// Put the starting state back.
    fn restore(&self);
    /// Where the traces go (created).
    fn scratch(&self) -> PathBuf;
    /// The one set-up of every kill-at-one-point test: from the starting
    /// state (then `before`), run `cmd` traced, pick the first mutating call
    /// `pick` accepts, then from the same state again run it killed
    /// (`SIGKILL`) at that call.
    fn kill_point(&self, before: &dyn Fn(), cmd: &Command, stdin: &[u8], pick: impl Fn(&Call) -> bool) -> Output
    where
        Self: Sized,
    {
        let prepare = || {
            self.restore();
            before();
        };
        prepare();
        let (_, calls) = traced(cmd, stdin, &self.scratch());
        let at = calls.iter().find(|c| c.mutating() && pick(c)).unwrap_or_else(|| panic!("no such call in {calls:#?}"));
        prepare();
        let out = killed_at(cmd, stdin, &at.name, at.nth);
        assert_eq!(out.status.signal(), Some(9), "killed at {}", at.line);
        out
    }
}

impl Saved for Compaction {
    fn restore(&self) {
        Compaction::restore(self)
    }
    fn scratch(&self) -> PathBuf {
        let d = self.w.path("scratch");
        fs::create_dir_all(&d).unwrap();
        d
    }
}

impl Compaction {
    /// [`Saved::kill_point`] of hook `s`, after the hooks `before` ran.
    fn kill_step(&self, before: &[Step], s: &Step, pick: impl Fn(&Call) -> bool) -> Output {
        self.kill_point(
            &|| {
                for b in before {
                    self.command(b).output_with(&b.stdin);
                }
            },
            &self.command(s),
            &s.stdin,
            pick,
        )
    }
}

fn renames_into(c: &Call, name: &str) -> bool {
    c.name.starts_with("rename") && c.paths().last().is_some_and(|p| p.ends_with(&format!("/{name}")))
}

fn context(out: &Output) -> String {
    context_of(&out.stdout).unwrap_or_default()
}

#[test]
fn a_precompact_killed_before_its_attempt_rename_still_gets_an_unattested_reentry_naming_the_spent_pass() {
    if strace().is_none() {
        return;
    }
    for k in &HOSTS {
        let c = Compaction::new(k);
        let attempt = format!("compaction-attempt.{}.json", k.s);
        // The second rename into the attempt: the real one, after the pass
        // was spent and promoted (the first is the provisional attempt).
        let seen = std::cell::Cell::new(0);
        c.kill_step(&[], &c.precompact(), |call| {
            if renames_into(call, &attempt) {
                seen.set(seen.get() + 1);
            }
            seen.get() == 2 && renames_into(call, &attempt)
        });
        let t = context(&c.command(&c.session_start()).output_with(&c.session_start().stdin));
        assert!(
            t.starts_with(&format!(
                "kijito-qa re-entry after compaction: UNATTESTED (session {}). Reason: pass_spent_by_interrupted_precompact.",
                k.s
            )),
            "{}: {t}",
            k.host
        );
    }
}

#[test]
fn a_claim_killed_between_its_renames_is_finished_unattested_by_the_next_hook() {
    if strace().is_none() {
        return;
    }
    let k = &HOSTS[0];
    let c = Compaction::new(k);
    // After the attempt (and the ticket) were renamed, before the record.
    let record = format!("compaction-reentry.{}.json", k.s);
    c.kill_step(&[c.precompact()], &c.postcompact(), |call| renames_into(call, &record));
    assert!(c.w.qa().join(format!("compaction-attempt-claimed.{}.json", k.s)).exists());
    let t = context(&c.command(&c.session_start()).output_with(&c.session_start().stdin));
    assert!(
        t.starts_with(&format!("kijito-qa re-entry after compaction: UNATTESTED (session {}). Reason: claim_interrupted.", k.s)),
        "{t}"
    );
    // Delivered once.
    assert!(!context(&c.command(&c.prompt()).output_with(&c.prompt().stdin)).contains("re-entry after compaction"));
}

#[test]
fn a_delivery_killed_before_its_print_is_delivered_by_the_next_prompt_and_never_attested_twice() {
    if strace().is_none() {
        return;
    }
    let k = &HOSTS[1];
    let c = Compaction::new(k);
    // The answer's write to stdout: the record was taken for delivery.
    let out = c.kill_step(&[c.precompact()], &c.session_start(), |call| call.name == "write" && call.line.starts_with("write(1<"));
    assert!(out.stdout.is_empty(), "killed before the print");
    assert!(c.w.qa().join(format!("compaction-reentry-delivering.{}.json", k.s)).exists());
    let t = context(&c.command(&c.prompt()).output_with(&c.prompt().stdin));
    assert!(
        t.starts_with(&format!("kijito-qa re-entry after compaction: UNATTESTED (session {}). Reason: delivery_interrupted.", k.s)),
        "{t}"
    );
    assert!(!context(&c.command(&c.prompt()).output_with(&c.prompt().stdin)).contains("re-entry after compaction"), "once");
}

/// A latch whose next append seals a segment (128 live entries), saved.
struct Sealing {
    e: support::latch::Env,
    snap: PathBuf,
}

impl Sealing {
    fn new() -> Sealing {
        let e = support::latch::env();
        let mut cfg = kijito_latch::Config::new(&e.ws);
        cfg.boot_id_file = e.boot.clone();
        cfg.heads_dir = Some(e.w.home.join("latch-heads"));
        kijito_latch::Latch::open(&cfg).unwrap().seed_history(128, now_ms() as u64 - 60_000).unwrap();
        let snap = e.w.path("snap");
        fs::create_dir(&snap).unwrap();
        let s = Sealing { e, snap };
        copy_tree(&s.e.ws.join(".memory-latch"), &s.snap.join("latch"));
        copy_tree(&s.e.w.home.join("latch-heads"), &s.snap.join("heads"));
        s
    }
    fn restore(&self) {
        copy_tree(&self.snap.join("latch"), &self.e.ws.join(".memory-latch"));
        copy_tree(&self.snap.join("heads"), &self.e.w.home.join("latch-heads"));
    }
    fn checkpoint(&self, step: &str) -> Command {
        let mut c = self.e.command(&support::bin("memory-latch"));
        c.args(["checkpoint", "--next-step", step, "--workspace"]).arg(&self.e.ws);
        c
    }
    fn verify(&self) -> (i32, Value) {
        let mut c = self.e.command(&support::bin("memory-latch"));
        c.args(["verify", "--json", "--workspace"]).arg(&self.e.ws);
        let o = c.output_with(b"");
        (o.status.code().unwrap_or(-1), serde_json::from_slice(&o.stdout).unwrap_or(Value::Null))
    }
    fn temps(&self) -> Vec<PathBuf> {
        [self.e.ws.join(".memory-latch"), self.e.w.home.join("latch-heads")].iter().flat_map(|d| temp_files(d)).collect()
    }
}

impl Saved for Sealing {
    fn restore(&self) {
        Sealing::restore(self)
    }
    fn scratch(&self) -> PathBuf {
        let d = self.e.w.path("scratch");
        fs::create_dir_all(&d).unwrap();
        d
    }
}

#[test]
fn a_seal_killed_before_its_rename_leaves_a_trusted_latch_that_the_next_write_cleans() {
    if strace().is_none() {
        return;
    }
    let s = Sealing::new();
    // The segment's temp file is written; killed before it becomes history/segment-000001.md.
    s.kill_point(&|| {}, &s.checkpoint("seal"), b"", |c| {
        (c.name.starts_with("rename") || c.name.starts_with("link"))
            && c.paths().last().is_some_and(|p| p.ends_with("/history/segment-000001.md"))
    });
    assert!(!s.temps().is_empty(), "the killed seal left its temp file");
    let (code, v) = s.verify();
    assert_eq!((code, &v["trusted"]), (0, &Value::Bool(true)), "verify and the hooks agree: TRUSTED: {v}");
    assert!(s.checkpoint("after").output_with(b"").status.success());
    assert!(s.temps().is_empty(), "the next write removed it: {:?}", s.temps());
    assert_eq!(s.verify().0, 0);
}

#[test]
fn no_kill_of_a_latch_write_wedges_the_latch() {
    if strace().is_none() {
        return;
    }
    let s = Sealing::new();
    s.restore();
    let (_, calls) = traced(&s.checkpoint("seal"), b"", &s.scratch());
    let mut t = Tally { unsynced: unsynced(&calls), ..Tally::default() };
    let points: Vec<&Call> = calls.iter().filter(|c| c.mutating()).collect();
    t.points = points.len();
    for p in sample(&points) {
        t.explored += 1;
        s.restore();
        killed_at(&s.checkpoint("seal"), b"", &p.name, p.nth);
        let at = format!("memory-latch checkpoint (seal) killed at {}#{} ({})", p.name, p.nth, p.line);
        let next = s.checkpoint("after").output_with(b"");
        t.states += 1;
        if !next.status.success() {
            t.violations.push(format!("{at}: the next checkpoint failed: {}", String::from_utf8_lossy(&next.stderr)));
        }
        let (code, v) = s.verify();
        if code != 0 {
            t.violations.push(format!("{at}: UNTRUSTED after the next write: {v}"));
        }
        if !s.temps().is_empty() {
            t.violations.push(format!("{at}: temp files left after the next write: {:?}", s.temps()));
        }
    }
    t.print("memory-latch checkpoint (segment seal)");
    assert!(t.violations.is_empty(), "{}", t.violations.join("\n"));
    assert!(t.unsynced.is_empty(), "without a parent fsync:\n{}", t.unsynced.join("\n"));
}

/// Concurrency stays proven (docs/testing.md, "Crash explorer"): sixteen
/// identical PreToolUse calls racing after one consent allow exactly one.
#[test]
fn sixteen_identical_tool_calls_after_one_consent_allow_exactly_one() {
    let e = support::latch::env();
    e.ok(&["init", "--objective", "race the gate"]);
    let host = "claude";
    let rm = serde_json::json!({"command": "rm -rf build", "description": "clean"});
    let mut stdin = support::gate::pre_tool_use(host, "s1", "Bash", rm.clone());
    stdin["transcript_path"] = serde_json::json!(e.w.transcript.to_str().unwrap());
    stdin["cwd"] = serde_json::json!(e.ws.to_str().unwrap());
    stdin["permission_mode"] = serde_json::json!("default");
    let pretool = support::bin("pretool-hook");
    let first = e.hook_bin(&pretool, host, "PreToolUse", &stdin);
    let reason = String::from_utf8(first.stdout).unwrap();
    assert!(reason.contains("policy_consent_required"), "{reason}");
    // The consent request the reason names, run as the agent would.
    let cmd = reason.split('`').nth(1).unwrap().replace("\\\"", "\"");
    let words = shell_words::split(&cmd).unwrap();
    let out = e.command(&words[0]).args(&words[1..]).stdin(Stdio::null()).output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let token = &text[text.find("ACT-").expect("a token")..][..10];
    assert!(e.user_says_to(&support::bin("prompt-hook"), host, token).unwrap().contains("confirmed"));
    let children: Vec<_> = (0..16)
        .map(|_| {
            let mut c = e.command(&pretool);
            c.args(["--host", host, "--expect", "PreToolUse", "--data-dir", &e.w.data_arg()]);
            let mut child = c.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
            use std::io::Write;
            child.stdin.take().unwrap().write_all(stdin.to_string().as_bytes()).unwrap();
            child
        })
        .collect();
    let outs: Vec<Output> = children.into_iter().map(|c| wait_bounded(c, 60)).collect();
    let allowed = outs.iter().filter(|o| o.stdout.iter().all(u8::is_ascii_whitespace)).count();
    assert_eq!(allowed, 1, "{:?}", outs.iter().map(|o| String::from_utf8_lossy(&o.stdout).into_owned()).collect::<Vec<_>>());
}

/// Two sessions of one workspace and data dir compacting at the same time:
/// each gets its own ATTESTED re-entry, once.
#[test]
fn two_sessions_compacting_at_once_each_get_their_own_reentry() {
    let w = World::new();
    let sessions = ["sess-a", "sess-b"];
    for s in sessions {
        w.record_ok(s);
    }
    let run_all = |key: &str, expect: Option<&str>, bin: &str| -> Vec<Output> {
        let children: Vec<_> = sessions
            .iter()
            .map(|s| {
                let mut args = vec!["--host", "claude"];
                if let Some(e) = expect {
                    args.extend(["--expect", e]);
                }
                let data = w.data_arg();
                args.extend(["--data-dir", &data]);
                w.spawn(bin, &args, &w.hook_stdin("claude", key, s))
            })
            .collect();
        children.into_iter().map(|c| wait_bounded(c, 60)).collect()
    };
    run_all("PreCompact(manual, no args)", None, &PRECOMPACT);
    let outs = run_all("SessionStart(source=compact)", Some("SessionStart"), &SESSION_HOOK);
    for (s, o) in sessions.iter().zip(&outs) {
        let r = reentries(&o.stdout);
        assert_eq!(r.len(), 1, "{s}: {r:?}");
        assert!(r[0].starts_with(&format!("kijito-qa re-entry after compaction: ATTESTED (session {s}).")), "{s}: {r:?}");
    }
    let again = run_all("SessionStart(source=compact)", Some("SessionStart"), &SESSION_HOOK);
    assert!(again.iter().all(|o| reentries(&o.stdout).is_empty()), "delivered once each");
}

#[test]
fn a_ledger_rewrite_killed_before_its_rename_is_cleaned_by_the_next_hook_of_the_session() {
    if strace().is_none() {
        return;
    }
    let k = &HOSTS[0];
    let c = Compaction::with_full_ledger(k);
    let ledger = c.ledger();
    let name = ledger.file_name().unwrap().to_str().unwrap().to_owned();
    // The rewritten ledger is written and fsynced; killed before it replaces the old one.
    c.kill_step(&[], &c.precompact(), |call| renames_into(call, &name));
    let left: Vec<PathBuf> = temp_files(&c.heads());
    assert!(left.iter().any(|t| t.file_name().unwrap().to_str().unwrap().starts_with(&format!(".{name}.tmp-"))), "{left:?}");
    // The next hook of the session takes the session's lock and removes it.
    c.command(&c.postcompact()).output_with(&c.postcompact().stdin);
    assert!(c.temps().is_empty(), "{:?}", c.temps());
    let t = context(&c.command(&c.session_start()).output_with(&c.session_start().stdin));
    assert!(t.starts_with("kijito-qa re-entry after compaction: UNATTESTED"), "{t}");
    let mut tally = Tally::default();
    c.next_cycle("after the ledger rewrite was killed", &mut tally);
    assert!(tally.violations.is_empty(), "{:?}", tally.violations);
}

#[test]
fn a_witness_rewrite_killed_before_its_rename_is_cleaned_once_stale_by_the_next_hook_of_the_session() {
    if strace().is_none() {
        return;
    }
    let k = &HOSTS[1];
    let c = Compaction::new(k);
    // A witness record with no room for one more call, every call older than a report lives.
    let witness = c.w.qa().join(format!("qa-witness.{}.jsonl", k.s));
    let old = now_ms() - 2 * 3_600_000;
    let line = |n: usize| {
        format!("{{\"reportFile\":\"/tmp/old-{n:06}.json\",\"pointerId\":1,\"expectedPointerDigest\":null,\"agentId\":null,\"seenAtMs\":{old}}}\n")
    };
    let mut bytes = String::new();
    while (bytes.len() + line(0).len()) as u64 <= kijito_gate::witness::MAX_WITNESS_BYTES {
        bytes.push_str(&line(bytes.len()));
    }
    write_private(&witness, bytes.as_bytes());
    copy_tree(&c.w.data, &c.snap.join("data"));
    // The PreToolUse hook sees a verifier boot (docs/protocol.md §7, "Witnessed boots").
    let boot = format!(
        "{}/pointer-snapshot --pointer-id {POINTER} --lock-message-id 2 --expected-pointer-digest {} --report-file {}",
        helper_dir().display(),
        "a".repeat(64),
        c.w.path("boot.json").display()
    );
    let stdin = pre_tool_use_stdin(k.host, k.s, "Bash", serde_json::json!({ "command": boot }));
    let mut pretool = c.w.command(&support::bin("pretool-hook"));
    pretool.args(["--host", k.host, "--expect", "PreToolUse", "--data-dir", &c.w.data_arg()]);
    let name = witness.file_name().unwrap().to_str().unwrap().to_owned();
    c.kill_point(&|| {}, &pretool, &stdin, |call| renames_into(call, &name));
    assert!(!c.temps().is_empty(), "the killed rewrite left its temp file");
    // PreToolUse may run beside the session's hooks: its temp file is
    // removed once older than any live write (30 s), by the next hook
    // holding the session's lock.
    age_temps(std::slice::from_ref(&c.w.data));
    let t = context(&c.command(&c.session_start()).output_with(&c.session_start().stdin));
    assert!(t.starts_with("kijito-qa re-entry after compaction:"), "{t}");
    assert!(c.temps().is_empty(), "{:?}", c.temps());
}

/// Every writer beside the compaction hooks (docs/testing.md, "Crash
/// explorer"): `qa-gate record` and `qa-gate invalidate`, killed at each
/// mutating call, then the command again and a whole next cycle: the pass
/// is the old or the new one, the next cycle ATTESTED once, no temp file
/// left.
#[test]
fn no_kill_of_qa_gate_record_or_invalidate_wedges_the_next_cycle() {
    if strace().is_none() {
        return;
    }
    let mut all = Vec::new();
    for k in &HOSTS {
        let c = Compaction::new(k);
        let scratch = c.w.path("scratch");
        let (a, b, digest) = c.w.green_pair("again", now_ms());
        let record = || {
            let mut cmd = c.w.command(QA_GATE);
            cmd.args(record_args(k.s, &c.w.transcript, Some(&c.w.data), POINTER, &digest, [&a, &b]));
            cmd
        };
        let pass = c.w.qa().join(format!("qa-pass.{}.json", k.s));
        let old = fs::read(&pass).unwrap();
        all.push(explore_alone(&format!("{} qa-gate record", k.host), &scratch, &|| c.restore(), &record, b"", &|at, _, t| {
            t.states += 1;
            match fs::read(&pass) {
                Ok(now) if now == old || serde_json::from_slice::<Value>(&now).is_ok() => {}
                other => t.violations.push(format!("{at}: the pass is neither old nor new: {other:?}")),
            }
            age_temps(&[c.w.data.clone(), c.heads()]);
            c.next_cycle(at, t);
        }));
        let invalidate = || {
            let mut cmd = c.w.command(QA_GATE);
            cmd.args(["invalidate", "--session-id", k.s, "--data-dir", &c.w.data_arg()]);
            cmd
        };
        all.push(explore_alone(&format!("{} qa-gate invalidate", k.host), &scratch, &|| c.restore(), &invalidate, b"", &|at, _, t| {
            t.states += 1;
            let again = invalidate().output_with(b"");
            if !again.status.success() || pass.exists() {
                t.violations.push(format!("{at}: invalidate again: {:?} {}", again.status, String::from_utf8_lossy(&again.stderr)));
            }
            age_temps(&[c.w.data.clone(), c.heads()]);
            c.next_cycle(at, t);
        }));
    }
    assert_clean(&all);
}

/// A latch with a confirmed consent for `action`, saved (docs/memory-latch.md, "Crashes").
struct Consented {
    e: support::latch::Env,
    snap: PathBuf,
    action: String,
    gate: Vec<String>,
}

impl Consented {
    fn new() -> Consented {
        let e = support::latch::env();
        e.ok(&["init", "--objective", "crash the consent"]);
        let action = e.file("action.txt", "git push --force origin main\n");
        let token = e.request_token(&action, "low");
        assert!(e.user_says_to(&support::bin("prompt-hook"), "claude", &token).unwrap().contains("confirmed"));
        let gate = e.gate_args(&action, &[]);
        let snap = e.w.path("snap");
        fs::create_dir(&snap).unwrap();
        let c = Consented { e, snap, action, gate };
        copy_tree(&c.e.ws.join(".memory-latch"), &c.snap.join("latch"));
        copy_tree(&c.e.w.home.join("latch-heads"), &c.snap.join("heads"));
        c
    }
    fn restore(&self) {
        copy_tree(&self.snap.join("latch"), &self.e.ws.join(".memory-latch"));
        copy_tree(&self.snap.join("heads"), &self.e.w.home.join("latch-heads"));
    }
    fn latch(&self, args: &[&str]) -> Command {
        let mut c = self.e.command(&support::bin("memory-latch"));
        c.args(args).arg("--workspace").arg(&self.e.ws);
        c
    }
    fn seq(&self) -> Option<u64> {
        let o = self.latch(&["status", "--json"]).output_with(b"");
        serde_json::from_slice::<Value>(&o.stdout).ok()?["head"]["seq"].as_u64()
    }
    fn temps(&self) -> Vec<PathBuf> {
        [self.e.ws.join(".memory-latch"), self.e.w.home.join("latch-heads")].iter().flat_map(|d| temp_files(d)).collect()
    }
    /// After a kill: the next write (a checkpoint) succeeds with `entry_seq`
    /// one or two past `start`, `verify` says TRUSTED, no temp file is left.
    fn next_write(&self, start: u64, at: &str, t: &mut Tally) {
        t.states += 1;
        let next = self.latch(&["checkpoint", "--next-step", "after"]).output_with(b"");
        if !next.status.success() {
            t.violations.push(format!("{at}: the next checkpoint failed: {}", String::from_utf8_lossy(&next.stderr)));
        }
        let seq = self.seq();
        if !matches!(seq, Some(n) if n == start + 1 || n == start + 2) {
            t.violations.push(format!("{at}: entry_seq {seq:?} after the next write (was {start})"));
        }
        let v = self.latch(&["verify", "--json"]).output_with(b"");
        if !v.status.success() {
            t.violations.push(format!("{at}: UNTRUSTED after the next write: {}", String::from_utf8_lossy(&v.stdout)));
        }
        if !self.temps().is_empty() {
            t.violations.push(format!("{at}: temp files left after the next write: {:?}", self.temps()));
        }
    }
}

/// Passed: a complete answer of `memory-latch gate --json` / `tool-gate`
/// that says so.
fn passed(out: &Output) -> bool {
    serde_json::from_slice::<Value>(&out.stdout).is_ok_and(|v| v["passed"] == Value::Bool(true))
}

/// `memory-latch consent request`, `gate` and `tool-gate` killed at each
/// mutating call: the latch TRUSTED after the next write with `entry_seq`
/// +1 or +2, no temp file left, and no consent used twice (the killed run's
/// complete answer counts).
#[test]
fn no_kill_of_a_consent_write_wedges_the_latch_or_passes_a_consent_twice() {
    if strace().is_none() {
        return;
    }
    let c = Consented::new();
    let scratch = c.e.w.path("scratch");
    let start = c.seq().unwrap();
    let other = c.e.file("other.txt", "rm -rf build\n");
    let mut all = Vec::new();
    let request = || c.latch(&["consent", "request", "--action-file", &other, "--summary", "clean", "--risk", "low"]);
    all.push(explore_alone("memory-latch consent request", &scratch, &|| c.restore(), &request, b"", &|at, _, t| {
        c.next_write(start, at, t)
    }));
    let gate = || c.latch(&c.gate.iter().map(String::as_str).collect::<Vec<_>>());
    let tool_gate = || c.latch(&["tool-gate", "--json", "--action-file", &c.action, "--min-risk", "low"]);
    for (name, cmd) in [("memory-latch gate", &gate as &dyn Fn() -> Command), ("memory-latch tool-gate", &tool_gate)] {
        // From the starting state the consent passes (so a kill is what stops it).
        c.restore();
        let first = cmd().output_with(b"");
        assert!(
            passed(&first),
            "{name} passes from the starting state: {} {}",
            String::from_utf8_lossy(&first.stdout),
            String::from_utf8_lossy(&first.stderr)
        );
        all.push(explore_alone(name, &scratch, &|| c.restore(), cmd, b"", &|at, out, t| {
            c.next_write(start, at, t);
            // (`gate` again would name the checkpoint the next write replaced.)
            let passes = usize::from(passed(out)) + (0..2).filter(|_| passed(&tool_gate().output_with(b""))).count();
            if passes > 1 {
                t.violations.push(format!("{at}: the consent passed {passes} times"));
            }
        }));
    }
    assert_clean(&all);
}

#[test]
fn a_record_killed_while_it_writes_the_current_pointer_leaves_a_temp_file_the_next_hook_removes_once_stale() {
    if strace().is_none() {
        return;
    }
    let k = &HOSTS[1];
    let c = Compaction::new(k);
    let (a, b, digest) = c.w.green_pair("again", now_ms());
    let mut record = c.w.command(QA_GATE);
    record.args(record_args(k.s, &c.w.transcript, Some(&c.w.data), POINTER, &digest, [&a, &b]));
    // `current-pointer.json`'s temp file is written; killed at its fsync.
    c.kill_point(&|| {}, &record, b"", |call| call.name == "fsync" && call.line.contains("/.current-pointer.json.tmp-"));
    assert!(c.temps().iter().any(|t| t.to_str().unwrap().contains("/.current-pointer.json.tmp-")), "{:?}", c.temps());
    // Written by `qa-gate record` of any session beside the hooks: removed
    // by the next hook holding a session's lock once older than 30 s.
    age_temps(std::slice::from_ref(&c.w.data));
    let mut tally = Tally::default();
    c.next_cycle("after a record was killed at the current pointer", &mut tally);
    assert!(tally.violations.is_empty(), "{:?}", tally.violations);
}

/// `pointer-publish` killed at each mutating call, against a real
/// kijito-local (docs/publish.md): the pointer is exactly the old or the new
/// content, never the new one without its rollback artifact on disk, and the
/// lease never stays wedged: the next publish goes through, after
/// `pointer-publish --release-lease` when the killed run left its lease.
#[test]
fn no_kill_of_pointer_publish_tears_the_pointer_or_wedges_the_lease() {
    if strace().is_none() {
        return;
    }
    let s = support::publish::Seeded::new();
    let scratch = s.path("scratch");
    fs::create_dir_all(&scratch).unwrap();
    let n = std::cell::Cell::new(0);
    // A publish of fresh content over the current pointer, with its own rollback path.
    let next = || {
        let i = n.get();
        n.set(i + 1);
        let content = s.manifest(&format!("publish {i}"));
        let file = s.content_file(&format!("p{i}.json"), &content);
        let rollback = s.path(&format!("p{i}.rollback.json"));
        let mut c = s.command();
        c.args(s.publish_args(&s.pointer_digest(), &file, &rollback));
        (c, content, rollback)
    };
    let (cmd, content, _) = next();
    let (out, calls) = traced(&cmd, b"", &scratch);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(s.pointer_content(), content, "a publish leaves exactly its content");
    let mut t = Tally { unsynced: unsynced(&calls).into_iter().map(|l| format!("pointer-publish: {l}")).collect(), ..Tally::default() };
    let points: Vec<&Call> = calls.iter().filter(|c| c.mutating()).collect();
    t.points = points.len();
    let mut rollback_temps = 0;
    for p in sample(&points) {
        t.explored += 1;
        t.states += 1;
        let at = format!("pointer-publish killed at {}#{} ({})", p.name, p.nth, p.line);
        let old = s.pointer_content();
        let (cmd, new, rollback) = next();
        killed_at(&cmd, b"", &p.name, p.nth);
        let now = s.pointer_content();
        if now != old && now != new {
            t.violations.push(format!("{at}: the pointer is neither the old nor the new content"));
        }
        if now == new && now != old && !rollback.is_file() {
            t.violations.push(format!("{at}: published without its rollback artifact"));
        }
        let (cmd, new, _) = next();
        let mut out = cmd.output_with(b"");
        if !out.status.success() {
            let release = s.run(&["--release-lease".into(), "--lock-message-id".into(), s.lock_id.to_string()]);
            if !release.status.success() {
                t.violations.push(format!("{at}: --release-lease failed: {}", String::from_utf8_lossy(&release.stderr)));
            }
            let (cmd, again, _) = next();
            out = cmd.output_with(b"");
            if out.status.success() && s.pointer_content() != again {
                t.violations.push(format!("{at}: the publish after the release left other content"));
            }
        } else if s.pointer_content() != new {
            t.violations.push(format!("{at}: the next publish left other content"));
        }
        if !out.status.success() {
            t.violations.push(format!("{at}: the lease is wedged: {}", String::from_utf8_lossy(&out.stderr)));
        }
        rollback_temps = temp_files(&s.work()).len();
    }
    t.print("pointer-publish");
    // Each publish names its own fresh rollback path (the hooks print a new
    // one each time), so a killed run's temp file of that path is never
    // replaced; nothing reads it (docs/testing.md, "Crash explorer").
    println!("crash explorer: pointer-publish: {rollback_temps} temp files of killed rollback writes left in the work dir");
    assert_clean(&[t]);
}

/// `kijito-setup` writing the configuration (`--force` over an existing
/// one), killed at each mutating call: `config.json` is exactly the old or
/// the new file, owner-only, and the next run succeeds and leaves no temp
/// file (docs/setup.md).
#[test]
fn no_kill_of_kijito_setup_tears_the_config_or_leaves_a_temp_file() {
    if strace().is_none() {
        return;
    }
    use std::os::unix::fs::PermissionsExt;
    let s = support::publish::Seeded::new();
    let scratch = s.path("scratch");
    let config_dir = s.tmp.path().join("config");
    let config = config_dir.join("kijito-qa/config.json");
    let snap = s.path("config-snap");
    copy_tree(&config_dir, &snap);
    let restore = || copy_tree(&snap, &config_dir);
    let setup = || {
        let mut c = Command::new(env!("CARGO_BIN_EXE_kijito-setup"));
        c.env("HOME", s.tmp.path().join("home")).env("XDG_CONFIG_HOME", &config_dir).args([
            "--api-url".to_owned(),
            s.server.base_url(),
            "--token-file".to_owned(),
            s.server.token_file().to_str().unwrap().to_owned(),
            "--pointer-id".to_owned(),
            s.pointer_id.to_string(),
            "--lock-message-id".to_owned(),
            s.lock_id.to_string(),
            "--force".to_owned(),
        ]);
        c
    };
    restore();
    let old = fs::read(&config).unwrap();
    let first = setup().output_with(b"");
    assert!(first.status.success(), "{}", String::from_utf8_lossy(&first.stderr));
    let new = fs::read(&config).unwrap();
    assert_ne!(old, new, "the run writes a new configuration");
    let t = explore_alone("kijito-setup (config.json)", &scratch, &restore, &setup, b"", &|at, _, t| {
        t.states += 1;
        match fs::read(&config) {
            Ok(b) if b == old || b == new => {}
            other => t.violations.push(format!("{at}: config.json is neither old nor new: {other:?}")),
        }
        // The next run comes later than any live run lasts: its temp files
        // of a killed run are over 30 s old.
        age_temps(std::slice::from_ref(&config_dir));
        let mut next = setup().output_with(b"");
        if !next.status.success() && String::from_utf8_lossy(&next.stderr).starts_with("kijito_setup_failed:lease_held") {
            // Killed between its claim of the lease and the release: the
            // lease this installation holds is released as after a killed
            // publish, then setup runs again. The refusal names that command.
            if !String::from_utf8_lossy(&next.stderr).contains("pointer-publish --release-lease --lock-message-id") {
                t.violations.push(format!("{at}: lease_held does not name the release: {}", String::from_utf8_lossy(&next.stderr)));
            }
            let release = s.run(&["--release-lease".into(), "--lock-message-id".into(), s.lock_id.to_string()]);
            if !release.status.success() {
                t.violations.push(format!("{at}: --release-lease failed: {}", String::from_utf8_lossy(&release.stderr)));
            }
            next = setup().output_with(b"");
        }
        if !next.status.success() {
            t.violations.push(format!("{at}: the next run failed: {}", String::from_utf8_lossy(&next.stderr)));
        }
        if fs::read(&config).ok().as_deref() != Some(new.as_slice())
            || fs::metadata(&config).map(|m| m.permissions().mode() & 0o777).ok() != Some(0o600)
        {
            t.violations.push(format!("{at}: config.json after the next run is not the new owner-only file"));
        }
        let temps = temp_files(&config_dir);
        if !temps.is_empty() {
            t.violations.push(format!("{at}: temp files left after the next run: {temps:?}"));
        }
    });
    assert_clean(&[t]);
}

/// `kijito-setup --sandbox` and `--allow-helpers` with `--write` merge into
/// the hosts' own files (Claude Code's `settings.json`, Codex's `config.toml`
/// and rules): killed at any step, each file is the user's old one or the
/// new one (0600), and the next run finishes the job and leaves no temp file.
#[test]
fn no_kill_of_kijito_setups_host_writes_tears_a_settings_file_or_leaves_a_temp_file() {
    if strace().is_none() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let prefix = tmp.path().join("prefix");
    for host in ["claude", "codex"] {
        crate::setup_doctor::link_helpers(&crate::setup_doctor::install_root(&prefix, host));
    }
    let world = tmp.path().join("world");
    let (home, codex_home) = (world.join("home"), world.join("codex-home"));
    let settings = home.join(".claude/settings.json");
    let config = codex_home.join("config.toml");
    fs::create_dir_all(settings.parent().unwrap()).unwrap();
    fs::create_dir_all(codex_home.join("rules")).unwrap();
    kijito_files::private::write_atomic(&settings, br#"{"model":"opus","permissions":{"allow":["Bash(ls:*)"]}}"#).unwrap();
    kijito_files::private::write_atomic(&config, b"model = \"gpt\"\n\n[features]\nhooks = true\n").unwrap();
    let snap = tmp.path().join("world-snap");
    copy_tree(&world, &snap);
    let restore = || copy_tree(&snap, &world);
    let scratch = tmp.path().join("scratch");
    let mut all = Vec::new();
    for (what, host) in [("--sandbox", "claude"), ("--allow-helpers", "claude"), ("--sandbox", "codex"), ("--allow-helpers", "codex")] {
        let setup = || {
            let mut c = Command::new(env!("CARGO_BIN_EXE_kijito-setup"));
            c.env("HOME", &home).env("CODEX_HOME", &codex_home).env_remove("CLAUDE_CONFIG_DIR").args([
                what,
                "--host",
                host,
                "--root",
                prefix.to_str().unwrap(),
                "--write",
            ]);
            c
        };
        all.push(explore_world(&format!("kijito-setup {what} --host {host} --write"), &world, &scratch, &restore, &setup));
    }
    assert_clean(&all);
}

/// Every file under `dir` and its bytes.
fn world_files(dir: &Path) -> std::collections::BTreeMap<PathBuf, Vec<u8>> {
    let mut m = std::collections::BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).into_iter().flatten().flatten() {
            if e.file_type().unwrap().is_dir() {
                stack.push(e.path());
            } else {
                m.insert(e.path(), fs::read(e.path()).unwrap());
            }
        }
    }
    m
}

/// Explore a writer of files under `world` (the user's own settings among
/// them): run once whole from the state `restore` puts back, then killed at
/// each point: every file is the old or the new one (owner-only where
/// written), and the next run succeeds, ends with exactly the files one
/// whole run writes and leaves no temp file.
fn explore_world(writer: &str, world: &Path, scratch: &Path, restore: &dyn Fn(), cmd: &dyn Fn() -> Command) -> Tally {
    use std::os::unix::fs::PermissionsExt;
    restore();
    let old = world_files(world);
    let first = cmd().output_with(b"");
    assert!(first.status.success(), "{writer}: {}", String::from_utf8_lossy(&first.stderr));
    let new = world_files(world);
    assert_ne!(old, new, "{writer} writes something");
    explore_alone(writer, scratch, restore, cmd, b"", &|at, _, t| {
        t.states += 1;
        let now = world_files(world);
        for (p, bytes) in now.iter().filter(|(p, _)| !temp_files(p.parent().unwrap()).contains(p)) {
            if old.get(p) != Some(bytes) && new.get(p) != Some(bytes) {
                t.violations.push(format!("{at}: {} is neither old nor new", p.display()));
            }
            if new.contains_key(p) && fs::metadata(p).unwrap().permissions().mode() & 0o077 != 0 && old.get(p) != Some(bytes) {
                t.violations.push(format!("{at}: {} is not owner-only", p.display()));
            }
        }
        age_temps(&[world.to_path_buf()]);
        let next = cmd().output_with(b"");
        if !next.status.success() {
            t.violations.push(format!("{at}: the next run failed: {}", String::from_utf8_lossy(&next.stderr)));
        }
        if world_files(world) != new {
            t.violations.push(format!("{at}: the next run did not end with the files one whole run writes"));
        }
        let left = temp_files(world);
        if !left.is_empty() {
            t.violations.push(format!("{at}: temp files left after the next run: {left:?}"));
        }
    })
}

/// `kijito-setup --mcp --write` registering kijito-local's MCP server with
/// both hosts (Claude Code's plugin `.mcp.json` beside the user's own
/// servers, Codex's `config.toml` in a `CODEX_HOME` it creates, and the
/// root's `.kijito-mcp-registrations`), then `--mcp-uninstall` taking it
/// out again: killed at any step, each file is the old or the new one
/// (0600 where written), and the next run finishes the job and leaves no
/// temp file (docs/setup.md).
#[test]
fn no_kill_of_kijito_setup_mcp_tears_a_host_file_or_leaves_a_temp_file() {
    if strace().is_none() {
        return;
    }
    let s = support::publish::Seeded::new();
    let world = s.tmp.path().join("world");
    let prefix = world.join("prefix");
    for host in ["claude", "codex"] {
        let bin = prefix.join(host).join("bin");
        fs::create_dir_all(&bin).unwrap();
        fs::hard_link(support::bin("kijito-local"), bin.join("kijito-local")).unwrap();
    }
    let (home, codex_home) = (s.tmp.path().join("home"), world.join("codex-home"));
    write_private(
        &prefix.join("claude/.mcp.json"),
        b"{\n  \"mcpServers\": {\n    \"docs\": {\n      \"command\": \"/usr/bin/docs-mcp\"\n    }\n  }\n}\n",
    );
    let snap = s.path("world-snap");
    copy_tree(&world, &snap);
    let restore = || copy_tree(&snap, &world);
    let scratch = s.path("scratch");
    let setup = |args: &[&str]| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_kijito-setup"));
        c.env("HOME", &home)
            .env("XDG_CONFIG_HOME", s.tmp.path().join("config"))
            .env("CODEX_HOME", &codex_home)
            .env_remove("CLAUDE_CONFIG_DIR")
            .args(args);
        c
    };
    let db = s.server.db_path();
    let mcp = |host: &'static str| {
        let (db, prefix) = (db.to_str().unwrap().to_owned(), prefix.to_str().unwrap().to_owned());
        move || setup(&["--mcp", "--host", host, "--db", &db, "--root", &prefix, "--write"])
    };
    let mut all = vec![
        explore_world("kijito-setup --mcp --host claude --write", &world, &scratch, &restore, &mcp("claude")),
        explore_world("kijito-setup --mcp --host codex --write", &world, &scratch, &restore, &mcp("codex")),
    ];
    // Uninstall from the state both registrations left.
    restore();
    for host in ["claude", "codex"] {
        let o = mcp(host)().output_with(b"");
        assert!(o.status.success(), "{host}: {}", String::from_utf8_lossy(&o.stderr));
    }
    let registered = s.path("world-registered");
    copy_tree(&world, &registered);
    let restore = || copy_tree(&registered, &world);
    for host in ["claude", "codex"] {
        let root = prefix.join(host);
        let uninstall = || setup(&["--mcp-uninstall", "--root", root.to_str().unwrap()]);
        all.push(explore_world(&format!("kijito-setup --mcp-uninstall ({host} root)"), &world, &scratch, &restore, &uninstall));
    }
    assert_clean(&all);
}

/// `kijito-compact request`, the session pinned to a Codex app-server
/// adapter (so the request is only written, no worker started): killed at
/// any step, the request file is absent or whole, the pass untouched, the
/// next request goes through (or the killed run's request stands:
/// `request_exists`) and leaves no temp file, and the next cycle is
/// re-entered ATTESTED exactly once.
#[test]
fn no_kill_of_kijito_compact_request_tears_the_request_or_wedges_the_next_cycle() {
    if strace().is_none() {
        return;
    }
    use kijito_compact::trigger::{self, Pin, Via};
    use kijito_gate::QaDir;
    use kijito_protocol::ids::{AbsPath, SessionId};
    let mut all = Vec::new();
    for k in &HOSTS {
        let c = Compaction::new(k);
        let scratch = c.w.path("scratch");
        let data = AbsPath::parse(&c.w.data_arg()).unwrap();
        let qa = QaDir::open(&data).unwrap();
        let s = SessionId::parse(k.s).unwrap();
        let socket = AbsPath::parse(c.w.path("adapter.sock").to_str().unwrap()).unwrap();
        let via = Via::CodexAppServer { adapter_id: "a".repeat(32), socket };
        trigger::write_pin(&qa, &Pin { session_id: s.clone(), via, pinned_at_ms: now_ms() }).unwrap();
        copy_tree(&c.w.data, &c.snap.join("data"));
        let pass = c.w.qa().join(format!("qa-pass.{}.json", k.s));
        let pass_bytes = fs::read(&pass).unwrap();
        let request = || {
            let mut cmd = c.w.command(env!("CARGO_BIN_EXE_kijito-compact"));
            cmd.args(["request", "--session-id", k.s, "--data-dir", &c.w.data_arg()]);
            cmd
        };
        all.push(explore_alone(&format!("{} kijito-compact request", k.host), &scratch, &|| c.restore(), &request, b"", &|at, _, t| {
            t.states += 1;
            if let Err(e) = trigger::read_request(&qa, &s) {
                t.violations.push(format!("{at}: the request is torn: {}", e.code()));
            }
            if fs::read(&pass).ok().as_deref() != Some(pass_bytes.as_slice()) {
                t.violations.push(format!("{at}: the pass changed"));
            }
            age_temps(std::slice::from_ref(&c.w.data));
            let next = request().output_with(b"");
            let err = String::from_utf8_lossy(&next.stderr);
            if !next.status.success() && !err.starts_with("kijito_compact_failed:request_exists") {
                t.violations.push(format!("{at}: the next request failed: {err}"));
            }
            if !matches!(trigger::read_request(&qa, &s), Ok(Some(_))) {
                t.violations.push(format!("{at}: no request after the next one"));
            }
            if !c.temps().is_empty() {
                t.violations.push(format!("{at}: temp files left after the next request: {:?}", c.temps()));
            }
            c.next_cycle(at, t);
        }));
    }
    assert_clean(&all);
}

/// A latch world saved whole: the workspace's `.memory-latch`, the head
/// records beside it and the data dir.
struct Latched {
    e: support::latch::Env,
    snap: PathBuf,
}

impl Latched {
    fn new(e: support::latch::Env) -> Latched {
        let snap = e.w.path("snap");
        fs::create_dir(&snap).unwrap();
        Latched { e, snap }
    }
    /// Save the world as it is now as the starting state.
    fn save(&self) {
        for (from, to) in self.dirs() {
            copy_tree(&from, &self.snap.join(to));
        }
    }
    fn dirs(&self) -> [(PathBuf, &'static str); 3] {
        [(self.e.ws.join(".memory-latch"), "latch"), (self.e.w.home.join("latch-heads"), "heads"), (self.e.w.data.clone(), "data")]
    }
    fn latch(&self, args: &[&str]) -> Command {
        let mut c = self.e.command(&support::bin("memory-latch"));
        c.args(args).arg("--workspace").arg(&self.e.ws);
        c
    }
    fn seq(&self) -> Option<u64> {
        let o = self.latch(&["status", "--json"]).output_with(b"");
        serde_json::from_slice::<Value>(&o.stdout).ok()?["head"]["seq"].as_u64()
    }
    fn temps(&self) -> Vec<PathBuf> {
        self.dirs().iter().flat_map(|(d, _)| temp_files(d)).collect()
    }
    /// After a kill: the next write (a checkpoint) succeeds with `entry_seq`
    /// one or two past `start`, `verify` says TRUSTED and, once the killed
    /// run's temp files are older than any live write, none is left.
    fn next_write(&self, start: u64, at: &str, t: &mut Tally) {
        t.states += 1;
        age_temps(&self.dirs().map(|(d, _)| d));
        let next = self.latch(&["checkpoint", "--next-step", "after"]).output_with(b"");
        if !next.status.success() {
            t.violations.push(format!("{at}: the next checkpoint failed: {}", String::from_utf8_lossy(&next.stderr)));
        }
        let seq = self.seq();
        if !matches!(seq, Some(n) if n == start + 1 || n == start + 2) {
            t.violations.push(format!("{at}: entry_seq {seq:?} after the next write (was {start})"));
        }
        let v = self.latch(&["verify", "--json"]).output_with(b"");
        if !v.status.success() {
            t.violations.push(format!("{at}: UNTRUSTED after the next write: {}", String::from_utf8_lossy(&v.stdout)));
        }
        if !self.temps().is_empty() {
            t.violations.push(format!("{at}: temp files left after the next write: {:?}", self.temps()));
        }
    }
}

impl Saved for Latched {
    fn restore(&self) {
        for (to, from) in self.dirs() {
            copy_tree(&self.snap.join(from), &to);
        }
    }
    fn scratch(&self) -> PathBuf {
        let d = self.e.w.path("scratch");
        fs::create_dir_all(&d).unwrap();
        d
    }
}

/// SessionStart(startup) after a long sleep, and the `wake-check --hook`
/// it forks (docs/wake-check.md, "Hook integration"), which appends the
/// `wake_findings` entry to the latch: killed in the hook or in the child
/// at each mutating call. The hook, when it lives, always answers with
/// wake-check's text (its child's answer, or that it could not run, writes
/// held: fail closed); a wake hold on disk is whole; the next start
/// (resume) gets wake-check's real answer; the latch is TRUSTED after the
/// next write with `entry_seq` one or two on, and no temp file is left.
#[test]
fn no_kill_of_session_start_or_its_wake_check_child_loses_the_answer_or_wedges_the_latch() {
    if strace().is_none() {
        return;
    }
    let mut all = Vec::new();
    for host in ["claude", "codex"] {
        let e = support::latch::env();
        let mut cfg = kijito_latch::Config::new(&e.ws);
        cfg.boot_id_file = e.boot.clone();
        cfg.heads_dir = Some(e.w.home.join("latch-heads"));
        kijito_latch::Latch::open(&cfg).unwrap().seed_history(3, now_ms() as u64 - 3 * 86_400_000).unwrap();
        let l = Latched::new(e);
        l.save();
        let start = l.seq().unwrap();
        let bin = Forking::new(&["session-hook"], &["wake-check"]);
        let stdin = |key: &str| {
            let mut p = payload(host, key);
            p["session_id"] = serde_json::json!("s1");
            p["transcript_path"] = serde_json::json!(l.e.w.transcript.to_str().unwrap());
            p["cwd"] = serde_json::json!(l.e.ws.to_str().unwrap());
            p.to_string().into_bytes()
        };
        let (startup, resume) = if host == "codex" {
            // (no Codex resume payload: the next start is a startup again)
            ("app-server:SessionStart:startup", "app-server:SessionStart:startup")
        } else {
            ("SessionStart(source=startup)", "SessionStart(source=resume)")
        };
        let hook = || {
            let mut c = l.e.command(&bin.bin("session-hook"));
            c.args(["--host", host, "--expect", "SessionStart", "--data-dir", &l.e.w.data_arg()]);
            c
        };
        let hold = kijito_wake::hold::path(&l.e.w.qa(), &l.e.ws);
        let wake_text = "kijito-qa wake-check (local checks)";
        l.restore();
        let whole = context(&hook().output_with(&stdin(startup)));
        assert!(whole.contains(&format!("{wake_text}: trust mode CAUTIOUS")), "{whole}");
        let writer = format!("{host} session-hook SessionStart(startup) + wake-check --hook");
        all.push(explore_tree(&writer, &l.scratch(), &|| l.restore(), &hook, &stdin(startup), &["wake-check"], &|at, out, _, t| {
            t.states += 1;
            if out.status.signal().is_none() && !context(out).contains(wake_text) {
                t.violations.push(format!("{at}: the hook lived and answered without wake-check's text: {}", context(out)));
            }
            if hold.exists() && fs::read(&hold).ok().and_then(|b| serde_json::from_slice::<Value>(&b).ok()).is_none() {
                t.violations.push(format!("{at}: the wake hold is torn"));
            }
            // the next start comes later than any live write lasts
            age_temps(&l.dirs().map(|(d, _)| d));
            let next = context(&hook().output_with(&stdin(resume)));
            if !next.contains(&format!("{wake_text}: trust mode")) {
                t.violations.push(format!("{at}: the next start got no wake-check answer: {next}"));
            }
            l.next_write(start, at, t);
        }));
    }
    assert_clean(&all);
}

/// PreToolUse of a call the user consented to, and the `memory-latch
/// tool-gate` it forks to spend that consent (docs/memory-latch.md,
/// "Crashes"): killed in the hook or in the child at each mutating call.
/// A child killed before its answer never lets the call through (fail
/// closed); the consent lets the call through at most once (the killed
/// run's answer and two more identical calls); the latch is TRUSTED after
/// the next write with `entry_seq` one or two on; no temp file is left.
#[test]
fn no_kill_of_pretool_use_or_its_tool_gate_child_passes_a_consent_twice_or_wedges_the_latch() {
    if strace().is_none() {
        return;
    }
    let l = Latched::new(support::latch::env());
    let e = &l.e;
    e.ok(&["init", "--objective", "crash the tool gate"]);
    let bin = Forking::new(&["pretool-hook", "prompt-hook"], &["memory-latch"]);
    let host = "claude";
    let mut call = support::gate::pre_tool_use(host, "s1", "Bash", serde_json::json!({"command": "rm -rf build", "description": "clean"}));
    call["transcript_path"] = serde_json::json!(e.w.transcript.to_str().unwrap());
    call["cwd"] = serde_json::json!(e.ws.to_str().unwrap());
    call["permission_mode"] = serde_json::json!("default");
    let stdin = call.to_string().into_bytes();
    let pretool = || {
        let mut c = e.command(&bin.bin("pretool-hook"));
        c.args(["--host", host, "--expect", "PreToolUse", "--data-dir", &e.w.data_arg()]);
        c
    };
    let first = String::from_utf8(pretool().output_with(&stdin).stdout).unwrap();
    assert!(first.contains("policy_consent_required"), "{first}");
    let cmd = first.split('`').nth(1).unwrap().replace("\\\"", "\"");
    let words = shell_words::split(&cmd).unwrap();
    let out = e.command(&words[0]).args(&words[1..]).stdin(Stdio::null()).output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let token = &text[text.find("ACT-").expect("a token")..][..10];
    assert!(e.user_says_to(&bin.bin("prompt-hook"), host, token).unwrap().contains("confirmed"));
    l.save();
    let start = l.seq().unwrap();
    let allowed = |o: &Output| o.status.signal().is_none() && o.stdout.iter().all(u8::is_ascii_whitespace);
    l.restore();
    assert!(allowed(&pretool().output_with(&stdin)), "the consent lets the call through from the starting state");
    let t = explore_tree(
        "claude pretool-hook PreToolUse + memory-latch tool-gate",
        &l.scratch(),
        &|| l.restore(),
        &pretool,
        &stdin,
        &["memory-latch"],
        &|at, out, child_before_answer, t| {
            t.states += 1;
            if child_before_answer && allowed(out) {
                t.violations.push(format!("{at}: the child died before its answer and the call was let through"));
            }
            // the next calls come later than any live write lasts
            age_temps(&l.dirs().map(|(d, _)| d));
            let passes = usize::from(allowed(out)) + (0..2).filter(|_| allowed(&pretool().output_with(&stdin))).count();
            if passes > 1 {
                t.violations.push(format!("{at}: the consent let the call through {passes} times"));
            }
            l.next_write(start, at, t);
        },
    );
    assert_clean(&[t]);
}

/// PostToolUse of a call the user allowed in the host's dialog (consent
/// mode host) and the `memory-latch tool-record` it forks to write the
/// call's `host_consent` entry (docs/protocol.md §8a step 7a): killed in the
/// hook or in the child at each mutating call. The call is recorded at most
/// once (the killed run, then the same event again: an agent can run the
/// hook by hand); the latch is TRUSTED after the next write with `entry_seq`
/// one or two on; no temp file is left. A kill before the entry is written
/// loses that one entry (the host sends the event once and the asked record
/// is used up first, so it can never record a call twice); the test prints
/// how many kill points did.
#[test]
fn no_kill_of_post_tool_use_or_its_tool_record_child_records_a_call_twice_or_wedges_the_latch() {
    if strace().is_none() {
        return;
    }
    let mut e = support::latch::env();
    let cfg = e.w.dir().join("consent.json");
    write_private(&cfg, serde_json::json!({"schema": "memory-latch.consent/v1", "mode": "host"}).to_string().as_bytes());
    e.env.push(("MEMORY_LATCH_CONSENT_FILE", cfg));
    e.ok(&["init", "--objective", "crash the tool record"]);
    let l = Latched::new(e);
    let e = &l.e;
    let bin = Forking::new(&["pretool-hook"], &["memory-latch"]);
    let event = |name: &str| crate::consent_host::stdin_of(e, name, "rm -rf build", "toolu_01C").to_string().into_bytes();
    let hook = |name: &str| {
        let mut c = e.command(&bin.bin("pretool-hook"));
        c.args(["--host", "claude", "--expect", name, "--data-dir", &e.w.data_arg()]).env("CLAUDE_CODE_ENTRYPOINT", "cli");
        c
    };
    // The TUI asks in its own dialog (the hook's parent has a terminal).
    let mut tui = e.command("python3");
    tui.arg("-c").arg(crate::consent_host::TUI_PARENT).arg(bin.bin("pretool-hook"));
    tui.args(["--host", "claude", "--expect", "PreToolUse", "--data-dir", &e.w.data_arg()]).env("CLAUDE_CODE_ENTRYPOINT", "cli");
    let asked = String::from_utf8(tui.output_with(&event("PreToolUse")).stdout).unwrap();
    assert!(asked.contains("\"permissionDecision\":\"ask\""), "{asked}");
    l.save();
    let start = l.seq().unwrap();
    let post = event("PostToolUse");
    let recorded = || {
        // each entry's JSON block: its details name the tool_use_id
        let m = fs::read_to_string(e.ws.join(".memory-latch/_manifest.md")).unwrap_or_default();
        m.lines().filter(|l| l.starts_with('{') && l.contains("\"event\":\"host_consent\"") && l.contains("tool_use_id toolu_01C")).count()
    };
    l.restore();
    assert_eq!(hook("PostToolUse").output_with(&post).status.code(), Some(0));
    assert_eq!(
        recorded(),
        1,
        "the post event records the allowed call from the starting state: {}",
        fs::read_to_string(e.ws.join(".memory-latch/_manifest.md")).unwrap()
    );
    let lost = std::cell::Cell::new(0);
    let t = explore_tree(
        "claude pretool-hook PostToolUse + memory-latch tool-record",
        &l.scratch(),
        &|| l.restore(),
        &|| hook("PostToolUse"),
        &post,
        &["memory-latch"],
        &|at, out, _child_before_answer, t| {
            t.states += 1;
            if out.status.signal().is_none() && out.status.code() != Some(0) {
                t.violations.push(format!("{at}: the hook exited {:?}", out.status.code()));
            }
            age_temps(&l.dirs().map(|(d, _)| d));
            let again = hook("PostToolUse").output_with(&post);
            if again.status.code() != Some(0) {
                t.violations.push(format!("{at}: the event again exited {:?}", again.status.code()));
            }
            match recorded() {
                0 => lost.set(lost.get() + 1),
                1 => {}
                n => t.violations.push(format!("{at}: the allowed call was recorded {n} times")),
            }
            l.next_write(start, at, t);
        },
    );
    println!("crash explorer: PostToolUse + tool-record: {} of {} kill points lost the call's entry", lost.get(), t.explored);
    assert_clean(&[t]);
}

/// Found by the explorer: SessionStart killed after its `wake-check --hook`
/// child recorded a long sleep and before the wake hold's rename. The hold
/// write's temp file was taken as activity, so the next start measured no
/// sleep: the answer the killed start never gave was lost, and writes were
/// not held. Now the next start answers it again and holds writes, and
/// removes the temp file once stale.
#[test]
fn a_wake_hold_write_killed_before_its_rename_loses_neither_the_answer_nor_the_hold() {
    if strace().is_none() {
        return;
    }
    let e = support::latch::env();
    let mut cfg = kijito_latch::Config::new(&e.ws);
    cfg.boot_id_file = e.boot.clone();
    cfg.heads_dir = Some(e.w.home.join("latch-heads"));
    kijito_latch::Latch::open(&cfg).unwrap().seed_history(3, now_ms() as u64 - 3 * 86_400_000).unwrap();
    let l = Latched::new(e);
    l.save();
    let mut p = payload("claude", "SessionStart(source=startup)");
    p["session_id"] = serde_json::json!("s1");
    p["transcript_path"] = serde_json::json!(l.e.w.transcript.to_str().unwrap());
    p["cwd"] = serde_json::json!(l.e.ws.to_str().unwrap());
    let stdin = p.to_string().into_bytes();
    let mut hook = l.e.command(&SESSION_HOOK);
    hook.args(["--host", "claude", "--expect", "SessionStart", "--data-dir", &l.e.w.data_arg()]);
    let hold = kijito_wake::hold::path(&l.e.w.qa(), &l.e.ws);
    let name = hold.file_name().unwrap().to_str().unwrap().to_owned();
    l.kill_point(&|| {}, &hook, &stdin, |call| renames_into(call, &name));
    assert!(!hold.exists() && !l.temps().is_empty(), "killed before the hold's rename: {:?}", l.temps());
    age_temps(&l.dirs().map(|(d, _)| d));
    let t = context(&hook.output_with(&stdin));
    assert!(t.contains("kijito-qa wake-check (local checks): trust mode CAUTIOUS") && t.contains("Long sleep detected"), "{t}");
    assert!(t.contains("writes and irreversible tool calls are held"), "{t}");
    assert!(hold.exists() && l.temps().is_empty(), "{:?}", l.temps());
}

/// Found by the explorer: PreToolUse killed while it writes the call's
/// action file (`<data>/actions/sha256-*.json`, the file a consent names)
/// left its temp file, which no later call removed. Now the next call of
/// the same action removes it once stale.
#[test]
fn an_action_file_write_killed_before_its_rename_is_cleaned_by_the_next_call() {
    if strace().is_none() {
        return;
    }
    let l = Latched::new(support::latch::env());
    l.e.ok(&["init", "--objective", "crash the action file"]);
    l.save();
    let mut call = support::gate::pre_tool_use("claude", "s1", "Bash", serde_json::json!({"command": "rm -rf build"}));
    call["transcript_path"] = serde_json::json!(l.e.w.transcript.to_str().unwrap());
    call["cwd"] = serde_json::json!(l.e.ws.to_str().unwrap());
    call["permission_mode"] = serde_json::json!("default");
    let stdin = call.to_string().into_bytes();
    let mut pretool = l.e.command(&support::bin("pretool-hook"));
    pretool.args(["--host", "claude", "--expect", "PreToolUse", "--data-dir", &l.e.w.data_arg()]);
    l.kill_point(&|| {}, &pretool, &stdin, |c| {
        c.name.starts_with("rename") && c.paths().last().is_some_and(|p| p.contains("/actions/sha256-"))
    });
    assert!(l.temps().iter().any(|t| t.to_str().unwrap().contains("/actions/.sha256-")), "{:?}", l.temps());
    age_temps(&l.dirs().map(|(d, _)| d));
    let again = String::from_utf8(pretool.output_with(&stdin).stdout).unwrap();
    assert!(again.contains("policy_consent_required"), "{again}");
    assert!(l.temps().is_empty(), "{:?}", l.temps());
}

/// `kijito-compact request` starting the tmux worker, and that worker
/// (docs/protocol.md §9.3), with a real tmux pane running a stand-in host
/// (tests/it/compact_tmux.rs). `request` is killed at each mutating call
/// (the worker it starts runs untraced: the turn does not end, so it fails
/// `turn_not_ended` after 0.3 s); the worker, run as `request` runs it
/// (`kijito-compact worker ...`) from a pending request after the turn's
/// Stop, is killed at each of its own mutating calls (its `tmux` children
/// run untraced). After each kill: the request is absent or whole; once no
/// worker is left, the next `request` either goes through (a pending
/// request whose worker is gone gets one again) or says why
/// (`request_exists` for a final request, `no_safe_trigger` naming
/// `worker_gone` for a `sent` one); the request then ends final (nothing
/// wedged); `/compact` is typed at most once; no temp file is left.
#[test]
fn no_kill_of_the_tmux_workers_start_or_run_wedges_the_adapter_or_types_twice() {
    if strace().is_none() {
        return;
    }
    use crate::compact_tmux as ct;
    use kijito_compact::trigger;
    let Some((w, pane)) = ct::stand_in(ct::Shape::PaneCommand) else { return };
    let qa = kijito_gate::QaDir::open(&kijito_protocol::ids::AbsPath::parse(&w.data_arg()).unwrap()).unwrap();
    let s = kijito_protocol::ids::SessionId::parse(ct::S).unwrap();
    let env = [
        ("KIJITO_COMPACT_IDLE_WAIT_MS", "300"),
        ("KIJITO_COMPACT_CLAIM_WAIT_MS", "300"),
        ("KIJITO_COMPACT_SETTLE_MS", "0"),
        ("KIJITO_COMPACT_ENTER_GAP_MS", "0"),
    ];
    let compact = |args: &[&str]| {
        let mut c = w.command(env!("CARGO_BIN_EXE_kijito-compact"));
        c.args(args).args(["--session-id", ct::S, "--data-dir", &w.data_arg()]).env_remove("TMUX").env_remove("TMUX_PANE").envs(env);
        c
    };
    let request = || compact(&["request"]);
    let worker_left = || {
        ct::wait_for("no worker left", 20, || kijito_compact::worker::lock(&qa, &s).unwrap().is_some());
    };
    let snap = w.path("snap");
    fs::create_dir(&snap).unwrap();
    let typed = || ct::typed(&pane.typed).matches("/compact").count();
    // what was typed into the pane before the run that is killed
    let mark = std::cell::Cell::new(0);
    let restore = |name: &str| {
        worker_left();
        copy_tree(&snap.join(name), &w.data);
        mark.set(typed());
    };
    // A running turn with its pass: what `request` starts from.
    assert_eq!(ct::session_hook(&w, "UserPromptSubmit", "UserPromptSubmit").status.code(), Some(0));
    w.record_ok(ct::S);
    copy_tree(&w.data, &snap.join("turn"));
    // A pending request, then the turn's Stop: what the worker starts from.
    let (r, _) = trigger::create_request(&qa, &s, now_ms()).unwrap();
    ct::stop(&w);
    copy_tree(&w.data, &snap.join("stopped"));
    let worker = || compact(&["worker", "--nonce", &r.nonce]);
    // After a kill: the invariants above.
    let check = |at: &str, t: &mut Tally| {
        let before = mark.get();
        t.states += 1;
        if let Err(e) = trigger::read_request(&qa, &s) {
            t.violations.push(format!("{at}: the request is torn: {}", e.code()));
        }
        worker_left();
        age_temps(std::slice::from_ref(&w.data));
        let was = trigger::read_request(&qa, &s).ok().flatten().map(|r| r.state);
        let next = request().output_with(b"");
        let err = String::from_utf8_lossy(&next.stderr).into_owned();
        let why = match &was {
            Some(st) if st.is_final() => err.starts_with("kijito_compact_failed:request_exists"),
            Some(trigger::RequestState::Sent) => err.starts_with("kijito_compact_failed:no_safe_trigger") && err.contains("worker_gone"),
            _ => next.status.success(),
        };
        if !why {
            t.violations.push(format!("{at}: the next request (over {was:?}) neither went through nor said why: {err}"));
        }
        worker_left();
        match trigger::read_request(&qa, &s) {
            Ok(Some(r)) if r.state.is_final() => {}
            other => t.violations.push(format!("{at}: the request is left wedged: {other:?}")),
        }
        if typed() > before + 1 {
            t.violations.push(format!("{at}: /compact typed {} times", typed() - before));
        }
        let left = temp_files(&w.data);
        if !left.is_empty() {
            t.violations.push(format!("{at}: temp files left after the next request: {left:?}"));
        }
    };
    let all = [
        explore_alone(
            "kijito-compact request (tmux: the worker's start)",
            &w.path("scratch"),
            &|| restore("turn"),
            &request,
            b"",
            &|at, _, t| check(at, t),
        ),
        explore_alone("kijito-compact worker (tmux)", &w.path("scratch"), &|| restore("stopped"), &worker, b"", &|at, _, t| check(at, t)),
    ];
    worker_left();
    assert_clean(&all);
}

/// A tmux request and its worker, each killed right after a write of the
/// request file became visible (the fsync of `qa/` after its rename).
struct TmuxRequest {
    // (dropped first: its tmux server is killed while its socket still exists)
    pane: crate::compact_tmux::Pane,
    w: World,
    snap: PathBuf,
    qa: kijito_gate::QaDir,
    s: kijito_protocol::ids::SessionId,
}

impl TmuxRequest {
    /// A running turn with its pass (`stopped`: and a pending request, then
    /// the turn's Stop), saved; `None` without tmux.
    fn new(stopped: bool) -> Option<TmuxRequest> {
        use crate::compact_tmux as ct;
        let (w, pane) = ct::stand_in(ct::Shape::PaneCommand)?;
        let qa = kijito_gate::QaDir::open(&kijito_protocol::ids::AbsPath::parse(&w.data_arg()).unwrap()).unwrap();
        let s = kijito_protocol::ids::SessionId::parse(ct::S).unwrap();
        assert_eq!(ct::session_hook(&w, "UserPromptSubmit", "UserPromptSubmit").status.code(), Some(0));
        w.record_ok(ct::S);
        if stopped {
            kijito_compact::trigger::create_request(&qa, &s, now_ms()).unwrap();
            ct::stop(&w);
        }
        let snap = w.path("snap");
        copy_tree(&w.data, &snap);
        Some(TmuxRequest { pane, w, snap, qa, s })
    }
    fn compact(&self, args: &[&str]) -> Command {
        let mut c = self.w.command(env!("CARGO_BIN_EXE_kijito-compact"));
        c.args(args).args(["--session-id", self.s.as_str(), "--data-dir", &self.w.data_arg()]).env_remove("TMUX").env_remove("TMUX_PANE");
        c.envs([("KIJITO_COMPACT_IDLE_WAIT_MS", "300"), ("KIJITO_COMPACT_CLAIM_WAIT_MS", "300"), ("KIJITO_COMPACT_SETTLE_MS", "0")]);
        c
    }
    fn worker_left(&self) {
        crate::compact_tmux::wait_for("no worker left", 20, || kijito_compact::worker::lock(&self.qa, &self.s).unwrap().is_some());
    }
    fn state(&self) -> Option<kijito_compact::trigger::RequestState> {
        kijito_compact::trigger::read_request(&self.qa, &self.s).unwrap().map(|r| r.state)
    }
    /// Killed at the fsync of `qa/` right after the first rename into the request file.
    fn kill_after_request_write(&self, cmd: &Command) {
        let name = self.qa.request(&self.s).file_name().unwrap().to_str().unwrap().to_owned();
        let qa = format!("<{}>", self.w.qa().display());
        let renamed = std::cell::Cell::new(false);
        self.kill_point(&|| {}, cmd, b"", |c| {
            renamed.set(renamed.get() || renames_into(c, &name));
            renamed.get() && c.name == "fsync" && c.line.contains(&qa)
        });
        self.worker_left();
    }
}

impl Saved for TmuxRequest {
    fn restore(&self) {
        self.worker_left();
        copy_tree(&self.snap, &self.w.data);
    }
    fn scratch(&self) -> PathBuf {
        let d = self.w.path("scratch");
        fs::create_dir_all(&d).unwrap();
        d
    }
}

/// Found by the explorer: `request` killed after it recorded the request
/// and before it started the worker left a `pending` request no worker
/// would ever act on, and every later `request` answered `request_exists`.
/// Now the next `request` starts the worker again, which acts on it.
#[test]
fn a_request_killed_before_it_started_its_worker_gets_one_from_the_next_request() {
    if strace().is_none() {
        return;
    }
    let Some(t) = TmuxRequest::new(false) else { return };
    t.kill_after_request_write(&t.compact(&["request"]));
    assert_eq!(t.state(), Some(kijito_compact::trigger::RequestState::Pending));
    let next = t.compact(&["request"]).output_with(b"");
    assert!(next.status.success(), "{}", String::from_utf8_lossy(&next.stderr));
    // The worker started again: the turn never ends, so it fails after 0.3 s.
    t.worker_left();
    let st = t.state();
    assert_eq!(st, Some(kijito_compact::trigger::RequestState::Failed { code: "turn_not_ended".into() }), "{st:?}");
}

/// Found by the explorer: the worker killed after it marked the request
/// `sent` (so never typing twice) left it `sent` for good. Now the next
/// `request` ends it `failed` with `worker_gone` and says to ask the user;
/// nothing is typed.
#[test]
fn a_worker_killed_after_it_marked_the_request_sent_is_failed_by_the_next_request_and_never_types_twice() {
    if strace().is_none() {
        return;
    }
    let Some(t) = TmuxRequest::new(true) else { return };
    let nonce = kijito_compact::trigger::read_request(&t.qa, &t.s).unwrap().unwrap().nonce;
    t.kill_after_request_write(&t.compact(&["worker", "--nonce", &nonce]));
    assert_eq!(t.state(), Some(kijito_compact::trigger::RequestState::Sent));
    let next = t.compact(&["request"]).output_with(b"");
    let err = String::from_utf8_lossy(&next.stderr);
    assert!(
        err.starts_with("kijito_compact_failed:no_safe_trigger") && err.contains("worker_gone") && err.contains("/compact now"),
        "{err}"
    );
    assert_eq!(t.state(), Some(kijito_compact::trigger::RequestState::Failed { code: "worker_gone".into() }));
    // Only the whole traced run that found the kill point typed (once).
    assert_eq!(crate::compact_tmux::typed(&t.pane.typed), "/compact\r", "nothing typed after the kill");
}

/// Concurrency stays proven (docs/testing.md, "Crash explorer"): a Codex
/// session and a Claude Code session sharing one data dir (two hosts of one
/// user on one workspace), each with a pass from real verifier boots
/// against a real kijito-local, compact at the same time, each in its host's
/// hook order: each gets its own ATTESTED re-entry, once, and neither
/// touches the other's state.
#[test]
fn two_hosts_sharing_one_data_dir_compact_at_once_and_each_gets_its_own_reentry() {
    let c = support::gate::Cycle::new();
    for k in &HOSTS {
        c.record(k.s);
    }
    let steps = |k: &'static Keys| {
        let order: [(&str, &str, Option<&str>); 3] = if k.host == "claude" {
            [(&PRECOMPACT, k.precompact, None), (&SESSION_HOOK, k.compact_start, Some("SessionStart")), (&POSTCOMPACT, k.postcompact, None)]
        } else {
            [(&PRECOMPACT, k.precompact, None), (&POSTCOMPACT, k.postcompact, None), (&SESSION_HOOK, k.compact_start, Some("SessionStart"))]
        };
        order.map(|(bin, key, expect)| (bin.to_owned(), key, expect))
    };
    let run = |k: &'static Keys| {
        let mut delivered = Vec::new();
        for (bin, key, expect) in steps(k) {
            let args: Vec<&str> = expect.map(|e| vec!["--expect", e]).unwrap_or_default();
            let out = c.hook(&bin, k.host, &args, &c.stdin(k.host, key, k.s, None, None));
            delivered.extend(reentries(&out.stdout));
        }
        delivered
    };
    std::thread::scope(|scope| {
        let both: Vec<_> = HOSTS.iter().map(|k| (k, scope.spawn(move || run(k)))).collect();
        for (k, h) in both {
            let r = h.join().unwrap();
            assert_eq!(r.len(), 1, "{}: {r:?}", k.host);
            assert!(r[0].starts_with(&format!("kijito-qa re-entry after compaction: ATTESTED (session {}).", k.s)), "{}: {r:?}", k.host);
        }
    });
    // Delivered once each: the next prompt of each session carries none.
    for k in &HOSTS {
        let out = c.hook(&support::bin("prompt-hook"), k.host, &["--expect", "UserPromptSubmit"], &c.stdin(k.host, k.ups, k.s, None, None));
        assert!(reentries(&out.stdout).is_empty(), "{}", k.host);
    }
}
