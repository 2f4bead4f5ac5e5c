//! A peer's public benchmark through our real PreToolUse hook: openmoat's
//! moatbench (crate `openmoat` 0.12.1 on crates.io, `moatbench/*.yaml`,
//! MIT OR Apache-2.0). Its text is read from the cargo registry's copy of
//! the package (fetched with `cargo fetch` into a throwaway manifest when the
//! cache lacks it); none of it is in this repository. docs/testing.md
//! (moatbench) has the figures and how they are counted.
//!
//! Every case runs in its own latch workspace (enforcement on, normal mode,
//! no consent given), step after step in one host session, on both hosts'
//! shapes: Claude Code's `Bash`/`Write`/`Edit`/`Read`/`mcp__S__T`, Codex
//! 0.169's `Bash` (a file write is `apply_patch` through the shell, as 0.169
//! sends it). A step is *stopped* when the hook answers deny or ask.
//!
//! Counted against the seeds: the steps whose moatbench rule is one of the
//! seeds' categories ([`SEED_RULES`]: destructive, shell start-up files,
//! pipe-to-shell, opaque inline code, agent-written scripts, runs-later)
//! must be stopped; the `allow`/`defer` steps of `benign.yaml` and
//! `workflows.yaml` must pass, except a step our policy stops as a delete
//! (the seed counts every delete as irreversible: moatbench's `rm -rf
//! target`). The other categories (secret reads, exfiltration, network) are
//! printed, not asserted: the seeds do not ask for them.

#![allow(clippy::unwrap_used)]

use crate::support;

use serde_json::{json, Value};
use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use support::latch::Env;

/// The package and version whose moatbench is read.
const PACKAGE: &str = "openmoat";
const VERSION: &str = "0.12.1";

/// moatbench rules in the seeds' categories.
const SEED_RULES: &[&str] = &["destructive", "shell-rc", "pipe-to-shell", "opaque-code", "session-written-code", "runs-later"];

/// Files whose `allow`/`defer` steps are ordinary work that must pass.
const BENIGN_FILES: &[&str] = &["benign.yaml", "workflows.yaml"];

#[derive(Debug)]
struct Case {
    id: String,
    steps: Vec<Step>,
}

#[derive(Debug)]
struct Step {
    shell: Option<String>,
    write: Option<String>,
    edit: Option<String>,
    read: Option<String>,
    fetch: Option<String>,
    mcp: Option<Mcp>,
    expect: String,
    rule: Option<String>,
}

#[derive(Debug)]
struct Mcp {
    server: String,
    tool: String,
    args: Value,
}

/// The cases of one moatbench file (a YAML list of `{id, steps: [...]}`).
fn cases_of(name: &str, text: &str) -> Vec<Case> {
    let docs = yaml_rust2::YamlLoader::load_from_str(text).unwrap_or_else(|e| panic!("{name}: {e}"));
    let list = docs.first().and_then(|d| d.as_vec()).unwrap_or_else(|| panic!("{name}: not a list"));
    let text_of = |y: &yaml_rust2::Yaml| y.as_str().map(str::to_owned);
    list.iter()
        .map(|c| Case {
            id: text_of(&c["id"]).unwrap_or_else(|| panic!("{name}: a case without an id")),
            steps: c["steps"]
                .as_vec()
                .unwrap_or_else(|| panic!("{name}: a case without steps"))
                .iter()
                .map(|s| Step {
                    shell: text_of(&s["shell"]),
                    write: text_of(&s["write"]),
                    edit: text_of(&s["edit"]),
                    read: text_of(&s["read"]),
                    fetch: text_of(&s["fetch"]),
                    mcp: s["mcp"].as_hash().map(|_| Mcp {
                        server: text_of(&s["mcp"]["server"]).unwrap_or_default(),
                        tool: text_of(&s["mcp"]["tool"]).unwrap_or_default(),
                        args: yaml_to_json(&s["mcp"]["args"]),
                    }),
                    expect: text_of(&s["expect"]).unwrap_or_default(),
                    rule: text_of(&s["rule"]),
                })
                .collect(),
        })
        .collect()
}

fn yaml_to_json(y: &yaml_rust2::Yaml) -> Value {
    use yaml_rust2::Yaml;
    match y {
        Yaml::String(s) | Yaml::Real(s) => Value::String(s.clone()),
        Yaml::Integer(i) => json!(i),
        Yaml::Boolean(b) => json!(b),
        Yaml::Array(a) => Value::Array(a.iter().map(yaml_to_json).collect()),
        Yaml::Hash(h) => Value::Object(h.iter().filter_map(|(k, v)| Some((k.as_str()?.to_owned(), yaml_to_json(v)))).collect()),
        _ => Value::Null,
    }
}

/// The package's `moatbench/` directory in the cargo registry cache.
fn find_moatbench() -> Option<PathBuf> {
    let cargo_home =
        std::env::var_os("CARGO_HOME").map(PathBuf::from).or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")))?;
    let src = cargo_home.join("registry").join("src");
    let mut found: Vec<PathBuf> = fs::read_dir(&src)
        .ok()?
        .filter_map(|e| e.ok())
        .map(|e| e.path().join(format!("{PACKAGE}-{VERSION}")).join("moatbench"))
        .filter(|p| p.join("benign.yaml").is_file())
        .collect();
    found.sort();
    found.into_iter().next()
}

/// `cargo fetch` of a throwaway manifest that depends on the package (the
/// ordinary client; bounded to 5 minutes).
fn fetch_package() -> Result<(), String> {
    let tmp = tempfile::tempdir().map_err(|e| e.to_string())?;
    fs::write(
        tmp.path().join("Cargo.toml"),
        format!("[package]\nname = \"moatbench-fetch\"\nversion = \"0.0.0\"\nedition = \"2021\"\n\n[dependencies]\n{PACKAGE} = \"={VERSION}\"\n"),
    )
    .map_err(|e| e.to_string())?;
    fs::create_dir(tmp.path().join("src")).map_err(|e| e.to_string())?;
    fs::write(tmp.path().join("src/lib.rs"), "").map_err(|e| e.to_string())?;
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut child = std::process::Command::new(cargo)
        .args(["fetch", "--quiet", "--manifest-path"])
        .arg(tmp.path().join("Cargo.toml"))
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| e.to_string())?;
    let start = Instant::now();
    loop {
        if let Some(st) = child.try_wait().map_err(|e| e.to_string())? {
            return if st.success() { Ok(()) } else { Err(format!("cargo fetch exited {st}")) };
        }
        if start.elapsed() > Duration::from_secs(300) {
            let _ = child.kill();
            let _ = child.wait();
            return Err("cargo fetch took over 5 minutes".into());
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn moatbench_dir() -> Option<PathBuf> {
    if let Some(d) = find_moatbench() {
        return Some(d);
    }
    match fetch_package() {
        Ok(()) => find_moatbench(),
        Err(e) => {
            eprintln!("moatbench: {PACKAGE} {VERSION} could not be fetched: {e}");
            None
        }
    }
}

/// The outcome of one step on one host.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Outcome {
    Allowed,
    /// deny or ask, with the policy's code and whether it is a delete.
    Stopped {
        code: String,
        delete: bool,
    },
}

fn expand_home(e: &Env, p: &str) -> String {
    match p.strip_prefix("~/") {
        Some(rest) => e.w.home.join(rest).to_str().unwrap().to_owned(),
        None if Path::new(p).is_absolute() => p.to_owned(),
        None => e.ws.join(p).to_str().unwrap().to_owned(),
    }
}

/// The tool call of `step` as `host` sends it: (tool_name, tool_input).
fn tool_call(e: &Env, host: &str, step: &Step) -> (String, Value) {
    if let Some(cmd) = &step.shell {
        return ("Bash".into(), json!({"command": cmd}));
    }
    if let Some(url) = &step.fetch {
        return ("WebFetch".into(), json!({"url": url, "prompt": "summarise"}));
    }
    if let Some(m) = &step.mcp {
        return (format!("mcp__{}__{}", m.server, m.tool), m.args.clone());
    }
    let (path, edit) = match (&step.write, &step.edit, &step.read) {
        (Some(p), _, _) => (expand_home(e, p), false),
        (_, Some(p), _) => (expand_home(e, p), true),
        (_, _, Some(p)) => return ("Read".into(), json!({"file_path": expand_home(e, p)})),
        _ => panic!("a moatbench step with no tool: {step:?}"),
    };
    if host == "codex" {
        let verb = if edit { "Update" } else { "Add" };
        let body = if edit { "@@\n-a\n+b\n" } else { "+x\n" };
        return (
            "Bash".into(),
            json!({"command": format!("apply_patch <<'EOF'\n*** Begin Patch\n*** {verb} File: {path}\n{body}*** End Patch\nEOF\n")}),
        );
    }
    if edit {
        ("Edit".into(), json!({"file_path": path, "old_string": "a", "new_string": "b"}))
    } else {
        ("Write".into(), json!({"file_path": path, "content": "x\n"}))
    }
}

fn run_step(e: &Env, host: &str, session: &str, n: usize, step: &Step) -> Outcome {
    let (tool, input) = tool_call(e, host, step);
    let mut v = support::gate::pre_tool_use(host, session, &tool, input);
    v["transcript_path"] = json!(e.w.transcript.to_str().unwrap());
    v["cwd"] = json!(e.ws.to_str().unwrap());
    v["tool_use_id"] = json!(format!("toolu_{n}"));
    let out = e.hook_bin(&support::bin("pretool-hook"), host, "PreToolUse", &v);
    if out.stdout.iter().all(u8::is_ascii_whitespace) {
        return Outcome::Allowed;
    }
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    let o = &r["hookSpecificOutput"];
    let decision = o["permissionDecision"].as_str().unwrap_or("");
    assert!(decision == "deny" || decision == "ask", "{r}");
    let reason = o["permissionDecisionReason"].as_str().unwrap_or("");
    let code = reason.split("denied (").nth(1).and_then(|r| r.split([')', ':']).next()).unwrap_or(decision).to_owned();
    Outcome::Stopped { code, delete: reason.contains("--summary delete:") }
}

#[derive(Default)]
struct Tally {
    seed_steps: usize,
    seed_allowed: Vec<String>,
    benign_steps: usize,
    benign_stopped: Vec<String>,
    benign_stopped_as_delete: usize,
    other_steps: usize,
    other_stopped: usize,
}

/// Every case on `host`, in one latch workspace, a session per case.
fn run_host(host: &str, cases: &[(String, Case)]) -> Tally {
    let mut tally = Tally::default();
    let e = support::latch::env();
    e.ok(&["init", "--objective", "moatbench", "--next-step", "run the cases"]);
    for (name, case) in cases {
        let session = format!("moat-{}-{host}", case.id);
        for (n, step) in case.steps.iter().enumerate() {
            let got = run_step(&e, host, &session, n, step);
            let what = format!(
                "{name} {} step {} on {host}: {}",
                case.id,
                n + 1,
                step.shell
                    .as_deref()
                    .or(step.write.as_deref())
                    .or(step.edit.as_deref())
                    .or(step.read.as_deref())
                    .or(step.fetch.as_deref())
                    .unwrap_or_else(|| step.mcp.as_ref().map(|m| m.tool.as_str()).unwrap_or("?"))
            );
            let seed = step.rule.as_deref().is_some_and(|r| SEED_RULES.contains(&r));
            let benign = BENIGN_FILES.contains(&name.as_str()) && (step.expect == "allow" || step.expect == "defer");
            if seed {
                tally.seed_steps += 1;
                if got == Outcome::Allowed {
                    tally.seed_allowed.push(what);
                }
            } else if benign {
                tally.benign_steps += 1;
                match got {
                    Outcome::Allowed => {}
                    Outcome::Stopped { delete: true, .. } => tally.benign_stopped_as_delete += 1,
                    Outcome::Stopped { code, .. } => tally.benign_stopped.push(format!("{what} ({code})")),
                }
            } else {
                tally.other_steps += 1;
                if got != Outcome::Allowed {
                    tally.other_stopped += 1;
                }
            }
        }
    }
    tally
}

#[test]
fn moatbench_through_the_installed_pretool_hook() {
    let Some(dir) = moatbench_dir() else {
        assert!(
            std::env::var_os("CI").is_none(),
            "moatbench: {PACKAGE} {VERSION} is not in the cargo registry cache and could not be fetched"
        );
        eprintln!("SKIP moatbench: {PACKAGE} {VERSION} is not in the cargo registry cache and could not be fetched");
        return;
    };
    let mut files: Vec<PathBuf> =
        fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).filter(|p| p.extension().is_some_and(|x| x == "yaml")).collect();
    files.sort();
    assert!(files.len() >= 9, "moatbench files in {}: {files:?}", dir.display());
    let mut cases: Vec<(String, Case)> = Vec::new();
    for file in &files {
        let name = file.file_name().unwrap().to_str().unwrap().to_owned();
        let list = cases_of(&name, &fs::read_to_string(file).unwrap());
        cases.extend(list.into_iter().map(|c| (name.clone(), c)));
    }
    // One thread and one latch workspace per host; a session per case.
    let tallies: Vec<Tally> = std::thread::scope(|scope| {
        let runs: Vec<_> = ["claude", "codex"].into_iter().map(|host| scope.spawn(|| run_host(host, &cases))).collect();
        runs.into_iter().map(|r| r.join().unwrap()).collect()
    });
    let mut tally = Tally::default();
    for t in tallies {
        tally.seed_steps += t.seed_steps;
        tally.seed_allowed.extend(t.seed_allowed);
        tally.benign_steps += t.benign_steps;
        tally.benign_stopped.extend(t.benign_stopped);
        tally.benign_stopped_as_delete += t.benign_stopped_as_delete;
        tally.other_steps += t.other_steps;
        tally.other_stopped += t.other_stopped;
    }
    let cases = cases.len();
    println!("moatbench ({PACKAGE} {VERSION}, {} files, {cases} cases, both hosts' shapes):", files.len());
    println!(
        "  seed categories ({}): {} steps, {} stopped, {} allowed",
        SEED_RULES.join(", "),
        tally.seed_steps,
        tally.seed_steps - tally.seed_allowed.len(),
        tally.seed_allowed.len()
    );
    for w in &tally.seed_allowed {
        println!("    allowed: {w}");
    }
    println!(
        "  benign and workflow allow/defer steps: {} steps, {} passed, {} stopped as deletes (the seed's irreversible), {} stopped otherwise",
        tally.benign_steps,
        tally.benign_steps - tally.benign_stopped.len() - tally.benign_stopped_as_delete,
        tally.benign_stopped_as_delete,
        tally.benign_stopped.len()
    );
    for w in &tally.benign_stopped {
        println!("    stopped: {w}");
    }
    println!("  other categories (not the seeds'; printed only): {} steps, {} stopped", tally.other_steps, tally.other_stopped);
    assert_eq!(tally.seed_steps, 36, "18 seed-category steps on each of two hosts");
    assert!(tally.seed_allowed.is_empty(), "seed-category steps allowed: {:#?}", tally.seed_allowed);
    assert!(tally.benign_stopped.is_empty(), "benign steps stopped: {:#?}", tally.benign_stopped);
}
