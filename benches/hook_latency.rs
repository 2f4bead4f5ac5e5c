//! Hook latency: the installed `precompact` (with a valid pass to promote),
//! `postcompact` (claiming the attempt and ticket), `session-hook`
//! SessionStart(compact) (delivering the re-entry) and `prompt-hook`
//! UserPromptSubmit (a plain prompt: the new-turn rule with no pass left to
//! withdraw, and the journal's `prompt` line), each run many times as fresh
//! processes doing their real work, beside `/bin/true` in the same run.
//! PreCompact has two rows: the steady state (the session's spent-nonce
//! ledger exists, as at every PreCompact of a data dir but the
//! first), on which its budget is judged, and the first-ever PreCompact of a
//! session (the ledger created: its file and directory entry fsynced too).
//! Prints median and p90 wall time, the ratio of medians to `/bin/true`, and
//! each binary's peak RSS from wait4's rusage. Linux carries the spawning
//! process's pre-exec high-water mark into the child's `ru_maxrss`, so the
//! figure is an upper bound: max(this bench's RSS at spawn, the hook's own).
//!
//! `cargo build --release -p kijito-hooks && cargo build --profile hooks -p kijito-hooks && cargo bench --bench hook_latency`
//! (the demo that makes the fixture runs the release hook binaries)
//! uses the hook binaries of the `hooks` profile (what install.sh installs;
//! they are the kijito-hooks package's, which `cargo bench` does not build)
//! from `target/hooks/` and the other binaries from `target/release/`;
//! `KIJITO_BENCH_BIN_DIR=<prefix>/codex/bin` measures an installed root.
//! Targets: median under 3 ms, at most 3x `/bin/true` (PreCompact: its
//! steady-state row), peak RSS under 8 MiB; it also prints each hook
//! binary's size against the 2 MB bound.
//!
//! A/B: `KIJITO_BENCH_AB_DIR=<dir>` also runs the four hook binaries of
//! another build (e.g. one from before the crate split) on the same fixture,
//! interleaved with this build's round by round (the order alternating each
//! round, each set starting from a freshly written pass with its own nonce), and prints both
//! sets' medians and, per hook, the ratio of medians B/A (above 1: B is
//! slower). On a shared machine only medians measured together compare.
#![allow(clippy::unwrap_used)]

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Rounds per run; `KIJITO_BENCH_ROUNDS` overrides (1..=100000).
const ROUNDS: usize = 200;
/// The size bound of each hook binary (docs/architecture.md, Binary sizes).
const MAX_HOOK_BYTES: u64 = 2_000_000;
const SESSION: &str = "bench-hook-latency-0001";

struct Sample {
    wall: Duration,
    /// The child's user + system CPU time (wait4's rusage): unlike the wall
    /// time, hardly moved by other processes' load or by fsync waits.
    cpu: Duration,
    max_rss_kib: i64,
    stdout: String,
}

/// Spawn, feed stdin, reap with wait4 to read the child's own peak RSS.
fn measure(program: &Path, args: &[&str], stdin: &str, env: &[(&str, &Path)]) -> Sample {
    let mut cmd = Command::new(program);
    cmd.args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .env_remove("CLAUDE_PLUGIN_DATA")
        .env_remove("PLUGIN_DATA");
    // cargo sets LD_LIBRARY_PATH for benches (its build output dirs); a host
    // runs hooks without it, and with it the loader probes ~50 directories
    // per library before it finds libc.
    cmd.env_remove("LD_LIBRARY_PATH");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let start = Instant::now();
    // Reaped below with wait4 (not Child::wait) to read its own rusage.
    #[allow(clippy::zombie_processes)]
    let mut child = cmd.spawn().expect("spawn");
    {
        let mut pipe = child.stdin.take().expect("stdin");
        let _ = pipe.write_all(stdin.as_bytes());
    }
    let mut stdout = child.stdout.take().expect("stdout");
    let mut out = String::new();
    let _ = std::io::Read::read_to_string(&mut stdout, &mut out);
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value; wait4 fills it for our child.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: waiting on our own child pid with valid out-pointers.
    let pid = unsafe { libc::wait4(child.id() as i32, &mut status, 0, &mut usage) };
    let wall = start.elapsed();
    assert_eq!(pid, child.id() as i32, "wait4 failed");
    assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0, "{} exited {status}", program.display());
    let tv = |t: libc::timeval| Duration::from_secs(t.tv_sec as u64) + Duration::from_micros(t.tv_usec as u64);
    Sample { wall, cpu: tv(usage.ru_utime) + tv(usage.ru_stime), max_rss_kib: usage.ru_maxrss, stdout: out }
}

/// Prints one line; returns the medians of wall and CPU time.
fn stats(name: &str, samples: &[Sample], baseline: Option<Duration>) -> (Duration, Duration) {
    let mut walls: Vec<Duration> = samples.iter().map(|s| s.wall).collect();
    walls.sort();
    let median = walls[walls.len() / 2];
    let p90 = walls[walls.len() * 9 / 10];
    let mut cpus: Vec<Duration> = samples.iter().map(|s| s.cpu).collect();
    cpus.sort();
    let cpu = cpus[cpus.len() / 2];
    let rss = samples.iter().map(|s| s.max_rss_kib).max().unwrap_or(0);
    let ratio =
        baseline.map(|b| format!("{:>5.2}x /bin/true", median.as_secs_f64() / b.as_secs_f64())).unwrap_or_else(|| "   baseline    ".into());
    println!(
        "{name:<42} median {:>6.3} ms  p90 {:>6.3} ms  {ratio}  cpu median {:>6.3} ms  peak RSS <= {:>5.2} MiB",
        median.as_secs_f64() * 1e3,
        p90.as_secs_f64() * 1e3,
        cpu.as_secs_f64() * 1e3,
        rss as f64 / 1024.0
    );
    (median, cpu)
}

/// One build's hook binaries and their samples.
struct HookSet {
    label: &'static str,
    dir: PathBuf,
    /// PreCompact with the ledger in place (steady state).
    pre: Vec<Sample>,
    /// The session's first PreCompact (the ledger created).
    pre_first: Vec<Sample>,
    post: Vec<Sample>,
    start: Vec<Sample>,
    prompt: Vec<Sample>,
}

impl HookSet {
    fn new(label: &'static str, dir: PathBuf) -> HookSet {
        HookSet { label, dir, pre: vec![], pre_first: vec![], post: vec![], start: vec![], prompt: vec![] }
    }
}

/// The hook binaries each set must have.
const HOOKS: [&str; 4] = ["precompact", "postcompact", "session-hook", "prompt-hook"];

const WRITE_PASS: &str = "KIJITO_BENCH_WRITE_PASS";

/// The child run: validate both green reports with the gate's own rules and
/// write the pass bound to the transcript. argv: DATA TRANSCRIPT POINTER DIGEST.
fn write_pass() {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let (data, transcript) = (PathBuf::from(&argv[0]), PathBuf::from(&argv[1]));
    let (pointer, digest) = (argv[2].clone(), argv[3].clone());
    let now = kijito_gate::now_ms();
    let pointer_id = kijito_protocol::ids::MemoryId::parse(&pointer).unwrap();
    let digest = kijito_protocol::ids::Digest::parse(&digest).unwrap();
    let abs = |p: PathBuf| kijito_protocol::ids::AbsPath::parse(p.to_str().unwrap()).unwrap();
    let [a, b] = [data.join("boot-1.json"), data.join("boot-2.json")]
        .map(|p| kijito_gate::report::validate_report(&abs(p), pointer_id, &digest, now).expect("green report"));
    let qa = kijito_gate::QaDir::open(&abs(data.clone())).unwrap();
    let pass = kijito_gate::Pass {
        session_id: kijito_protocol::ids::SessionId::parse(SESSION).unwrap(),
        recorded_at_ms: now,
        pointer_id: a.pointer_id,
        lock_message_id: a.lock_message_id,
        pointer_digest: a.pointer_digest.clone(),
        snapshot_digest: a.snapshot_digest.clone(),
        cold_boot_report_digests: [a.report_digest.clone(), b.report_digest.clone()],
        compaction_nonce: kijito_gate::fresh_nonce(),
        transcript: kijito_gate::transcript_identity(&abs(transcript.clone())).unwrap(),
    };
    kijito_files::private::write_atomic(&qa.pass(&pass.session_id), &pass.to_bytes()).unwrap();
}

fn main() {
    if std::env::var_os(WRITE_PASS).is_some() {
        return write_pass();
    }
    let release = Path::new(env!("CARGO_BIN_EXE_kijito-local")).parent().unwrap().to_owned();
    let (bin, hook_bin): (PathBuf, PathBuf) = match std::env::var_os("KIJITO_BENCH_BIN_DIR") {
        Some(d) => (d.clone().into(), d.into()),
        None => (release.clone(), release.parent().unwrap().join("hooks")),
    };
    // The hook binaries belong to the kijito-hooks package: `cargo bench`
    // builds only this package's binaries, so they must be built first.
    for path in [
        hook_bin.join("precompact"),
        hook_bin.join("postcompact"),
        hook_bin.join("session-hook"),
        hook_bin.join("prompt-hook"),
        bin.join("qa-gate"),
        bin.join("pointer-snapshot"),
    ] {
        assert!(
            path.is_file(),
            "{} is missing: run `cargo build --profile hooks -p kijito-hooks` first (or set KIJITO_BENCH_BIN_DIR)",
            path.display()
        );
    }
    // A real world to work in: the demo leaves a seeded store's reports, config and transcript.
    let out = Command::new(bin.join("kijito-local")).args(["demo", "--keep"]).output().expect("demo");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "demo failed:\n{text}");
    let dir = PathBuf::from(text.lines().find_map(|l| l.strip_prefix("kept ")).expect("kept dir"));
    let data = dir.join("data");
    let config_home = dir.join("config");
    let report: serde_json::Value = serde_json::from_slice(&std::fs::read(data.join("boot-1.json")).unwrap()).unwrap();
    let (pointer, digest) = (report["pointerId"].to_string(), report["pointerDigest"].as_str().unwrap().to_owned());
    let transcript = dir.join("transcript.jsonl");
    // The pass `qa-gate record` would write (record itself also re-reads the
    // live pointer, and the demo's server is gone by now), written by a child
    // run of this bench so the gate library (and its report schema) never
    // grows this process: `ru_maxrss` of the hooks counts this process's
    // memory from before exec.
    // Run before every set of every round: each PreCompact promotes a pass
    // with its own fresh nonce (a nonce is spent once: set B must never get
    // the pass set A just consumed, `pass_already_consumed`).
    let fresh_pass = || {
        let st = Command::new(std::env::current_exe().unwrap())
            .env(WRITE_PASS, "1")
            .args([data.as_os_str(), transcript.as_os_str(), pointer.as_ref(), digest.as_ref()])
            .status()
            .expect("pass writer");
        assert!(st.success(), "writing the pass failed");
    };

    let stdin = |event: &str, extra: &str| {
        format!(
            r#"{{"session_id":"{SESSION}","transcript_path":"{}","cwd":"{}","hook_event_name":"{event}"{extra}}}"#,
            transcript.display(),
            dir.display()
        )
    };
    let (pre, post, start, prompt) = (
        stdin("PreCompact", r#","trigger":"manual","custom_instructions":null"#),
        stdin("PostCompact", r#","trigger":"manual","compact_summary":"s""#),
        stdin("SessionStart", r#","source":"compact""#),
        stdin("UserPromptSubmit", r#","prompt":"fix the failing test""#),
    );
    // The spent-nonce ledger of this fixture's session lives here.
    let heads = dir.join("heads");
    std::fs::create_dir_all(&heads).unwrap();
    std::fs::set_permissions(&heads, std::fs::Permissions::from_mode(0o700)).unwrap();
    let spent = data.join(format!("qa/qa-spent.{SESSION}.json"));
    let ledgers = || -> Vec<PathBuf> {
        std::fs::read_dir(&heads)
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with("qa-ledger."))
            .map(|e| e.path())
            .collect()
    };
    // The first-ever PreCompact of the session: no ledger (nor a `qa-spent`
    // an earlier version's PreCompact wrote).
    let forget_spends = || {
        let _ = std::fs::remove_file(&spent);
        for l in ledgers() {
            std::fs::remove_file(l).unwrap();
        }
    };
    // The steady state: both kept, the ledger cut back to its last lines
    // (a data dir's ledger holds the last half hour's nonces; this one would
    // otherwise grow by one line per run up to its size bound).
    let trim_ledger = || {
        for l in ledgers() {
            let text = std::fs::read_to_string(&l).unwrap();
            let lines: Vec<&str> = text.lines().collect();
            if lines.len() > 8 {
                let kept: String = lines[lines.len() - 4..].iter().map(|l| format!("{l}\n")).collect();
                std::fs::write(&l, kept).unwrap();
            }
        }
    };
    let env: [(&str, &Path); 2] = [("XDG_CONFIG_HOME", &config_home), ("MEMORY_LATCH_HEADS_DIR", &heads)];
    let mut sets = vec![HookSet::new("A", hook_bin)];
    if let Some(d) = std::env::var_os("KIJITO_BENCH_AB_DIR") {
        sets.push(HookSet::new("B", d.into()));
    }
    for set in &sets {
        for name in HOOKS {
            assert!(set.dir.join(name).is_file(), "{} is missing", set.dir.join(name).display());
        }
    }
    let rounds =
        std::env::var("KIJITO_BENCH_ROUNDS").ok().and_then(|r| r.parse().ok()).filter(|r| (1..=100_000).contains(r)).unwrap_or(ROUNDS);
    let mut t_true = vec![];
    for round in 0..rounds {
        // Interleaved: the sets take turns going first.
        let n = sets.len();
        for i in 0..n {
            let set = &mut sets[(i + round) % n];
            // Two compactions, each from a fresh valid pass (its own nonce:
            // the previous one was promoted and consumed, by this set or the
            // other): the session's first, then one in the steady state.
            for first in [true, false] {
                if first {
                    forget_spends();
                } else {
                    trim_ledger();
                }
                fresh_pass();
                let s = measure(&set.dir.join("precompact"), &["--host", "codex"], &pre, &env);
                assert!(s.stdout.contains("attested"), "{} round {round}: {}", set.label, s.stdout);
                let row = if first { &mut set.pre_first } else { &mut set.pre };
                row.push(s);
                let s = measure(&set.dir.join("postcompact"), &["--host", "codex"], &post, &env);
                assert!(s.stdout.contains("\"continue\":true"), "{} round {round}: {}", set.label, s.stdout);
                let post_sample = s;
                let s = measure(&set.dir.join("session-hook"), &["--host", "codex", "--expect", "SessionStart"], &start, &env);
                assert!(s.stdout.contains("ATTESTED"), "{} round {round}: {}", set.label, s.stdout);
                if !first {
                    set.post.push(post_sample);
                    set.start.push(s);
                }
            }
            // The next prompt: a new turn, no pass left to withdraw.
            let s = measure(&set.dir.join("prompt-hook"), &["--host", "codex", "--expect", "UserPromptSubmit"], &prompt, &env);
            assert!(!s.stdout.contains("ATTESTED"), "{} round {round}: a second re-entry: {}", set.label, s.stdout);
            set.prompt.push(s);
        }
        t_true.push(measure(Path::new("/bin/true"), &[], "", &env));
    }
    println!("hook latency over {rounds} rounds each");
    let (base, _) = stats("/bin/true", &t_true, None);
    let mut medians = vec![];
    for set in &sets {
        println!("{}: hook binaries from {}", set.label, set.dir.display());
        medians.push([
            stats(&format!("{} precompact, steady state (the budget)", set.label), &set.pre, Some(base)),
            stats(&format!("{} precompact, the session's first", set.label), &set.pre_first, Some(base)),
            stats(&format!("{} postcompact (claim)", set.label), &set.post, Some(base)),
            stats(&format!("{} session-hook SessionStart(compact)", set.label), &set.start, Some(base)),
            stats(&format!("{} prompt-hook UserPromptSubmit (new turn)", set.label), &set.prompt, Some(base)),
        ]);
    }
    if let [a, b] = &medians[..] {
        for (k, name) in ["precompact (steady)", "precompact (first)", "postcompact", "session-hook", "prompt-hook"].iter().enumerate() {
            let ratio = |f: fn(&(Duration, Duration)) -> Duration| f(&b[k]).as_secs_f64() / f(&a[k]).as_secs_f64();
            println!("{name:<42} median B/A {:>5.3}  cpu median B/A {:>5.3}", ratio(|m| m.0), ratio(|m| m.1));
        }
    }
    for set in &sets {
        for name in HOOKS {
            let size = std::fs::metadata(set.dir.join(name)).unwrap().len();
            let verdict = if size <= MAX_HOOK_BYTES { "ok" } else { "OVER" };
            println!("{} {name:<36} size {size:>9} B  (bound {MAX_HOOK_BYTES} B: {verdict})", set.label);
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}
