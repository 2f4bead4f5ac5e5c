//! Every fenced ```sh block of README.md and docs/*.md is either run here or
//! marked, on the line immediately before its fence, with
//! `<!-- not-run: REASON -->` saying why it cannot run offline in a test
//! (needs the real hosts, a hosted account, a release build, ...). A block
//! that is neither fails the test, so a new example cannot silently rot.
//!
//! A run block is executed by `bash -euo pipefail` with:
//! - a fresh temporary HOME (XDG_* unset, so every default lands inside it)
//!   and a fresh temporary working directory;
//! - PATH starting with the directory of this package's built binaries
//!   (target/debug: the parent of this test executable's `deps/`);
//! - `$HOME/.local/share/kijito-qa/codex/bin` prepared as a copy of an
//!   installed root's `bin/`: one entry per `[[bin]]` of Cargo.toml, a hard
//!   link to the built binary as install.sh makes it (the temp dirs live under
//!   the target dir, so the link is on the same filesystem), or a symlink when
//!   linking fails. Hard links matter: the command guard recognises helpers of
//!   the root its running executable lives in, and a symlinked helper
//!   resolves to target/debug instead;
//! - a 60 s timeout, after which the block's process group is killed.
//!
//! It must exit 0.

use crate::support;

use std::fs;
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const TIMEOUT: Duration = Duration::from_secs(60);
const NOT_RUN: &str = "<!-- not-run:";

struct Block {
    file: String,
    line: usize,
    code: String,
    not_run: Option<String>,
}

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn doc_files() -> Vec<PathBuf> {
    let mut files = vec![repo().join("README.md")];
    let mut docs: Vec<PathBuf> = fs::read_dir(repo().join("docs"))
        .expect("docs/")
        .map(|e| e.expect("docs entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    docs.sort();
    files.extend(docs);
    files
}

/// The fenced blocks of one markdown file whose info string is exactly `sh`.
/// Fences of other languages are skipped whole, so an `sh` fence quoted
/// inside a longer fence is not a block.
fn sh_blocks(path: &Path) -> Vec<Block> {
    let text = fs::read_to_string(path).expect("read markdown");
    let name = path.strip_prefix(repo()).unwrap_or(path).display().to_string();
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        let trimmed = line.trim_start();
        let indent = line.len() - trimmed.len();
        let ticks = trimmed.chars().take_while(|&c| c == '`').count();
        if ticks < 3 {
            i += 1;
            continue;
        }
        let info = trimmed[ticks..].trim();
        let mut body = Vec::new();
        let mut j = i + 1;
        while j < lines.len() {
            let t = lines[j].trim_start();
            let n = t.chars().take_while(|&c| c == '`').count();
            if n >= ticks && t[n..].trim().is_empty() {
                break;
            }
            body.push(lines[j].strip_prefix(&line[..indent]).unwrap_or(lines[j].trim_start()));
            j += 1;
        }
        assert!(j < lines.len(), "{name}:{}: unclosed fence", i + 1);
        if info == "sh" {
            let not_run = i.checked_sub(1).map(|k| lines[k].trim()).filter(|prev| prev.starts_with(NOT_RUN)).map(|prev| {
                assert!(prev.ends_with("-->"), "{name}:{i}: a not-run marker is one line ending in -->");
                let reason = prev[NOT_RUN.len()..prev.len() - 3].trim().to_string();
                assert!(!reason.is_empty(), "{name}:{i}: a not-run marker must name its reason");
                reason
            });
            out.push(Block { file: name.clone(), line: i + 1, code: body.join("\n") + "\n", not_run });
        }
        i = j + 1;
    }
    out
}

/// target/debug: this test executable is target/debug/deps/it-<hash>.
fn bin_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("current_exe");
    let dir = exe.parent().and_then(Path::parent).expect("target/debug").to_path_buf();
    assert!(dir.join("kijito-local").is_file(), "no built binaries in {}", dir.display());
    dir
}

/// The `[[bin]]` names of the workspace's packages (the root and
/// `shared/*`), as install.sh installs them.
fn bin_names() -> Vec<String> {
    let mut tomls = vec![repo().join("Cargo.toml")];
    for e in fs::read_dir(repo().join("shared")).expect("shared/") {
        let p = e.expect("entry").path().join("Cargo.toml");
        if p.is_file() {
            tomls.push(p);
        }
    }
    let toml: String = tomls.iter().map(|p| fs::read_to_string(p).expect("Cargo.toml") + "\n").collect();
    let mut names = Vec::new();
    let mut in_bin = false;
    for line in toml.lines().map(str::trim) {
        if line.starts_with('[') {
            in_bin = line == "[[bin]]";
        } else if in_bin {
            if let Some(v) = line.strip_prefix("name").map(str::trim).and_then(|r| r.strip_prefix('=')) {
                names.push(v.trim().trim_matches('"').to_string());
            }
        }
    }
    assert!(names.len() >= 10, "expected the toolkit's [[bin]] targets, found {names:?}");
    names
}

fn install_root(home: &Path, bins: &Path) {
    let dir = home.join(".local/share/kijito-qa/codex/bin");
    fs::create_dir_all(&dir).expect("mkdir root bin");
    for name in bin_names() {
        let src = bins.join(&name);
        // Missing or stale (older than its sources) fails loudly here.
        support::bin(&name);
        assert!(src.is_file(), "{} not built", src.display());
        if fs::hard_link(&src, dir.join(&name)).is_err() {
            std::os::unix::fs::symlink(&src, dir.join(&name)).expect("symlink");
        }
    }
}

/// Runs one block; returns a failure description, or None when it exited 0.
fn run(block: &Block, bins: &Path) -> Option<String> {
    let scratch = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    fs::create_dir_all(&scratch).expect("target tmp");
    let tmp = tempfile::Builder::new().prefix("doc-example-").tempdir_in(&scratch).expect("tempdir");
    let (home, cwd) = (tmp.path().join("home"), tmp.path().join("work"));
    fs::create_dir_all(&home).expect("home");
    fs::create_dir_all(&cwd).expect("cwd");
    install_root(&home, bins);
    let path = format!("{}:{}", bins.display(), std::env::var("PATH").unwrap_or_else(|_| "/usr/bin:/bin".into()));
    let log = tmp.path().join("output");
    let out = fs::File::create(&log).expect("log");
    let mut child = Command::new("bash")
        .args(["-euo", "pipefail", "-c", &block.code])
        .current_dir(&cwd)
        .env("HOME", &home)
        .env("PATH", path)
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("XDG_CACHE_HOME")
        .env_remove("XDG_DATA_HOME")
        .env_remove("XDG_STATE_HOME")
        .env_remove("MEMORY_LATCH_HMAC_KEY_FILE")
        .stdin(Stdio::null())
        .stdout(out.try_clone().expect("dup"))
        .stderr(out)
        .process_group(0)
        .spawn()
        .expect("spawn bash");
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait") {
            break Some(s);
        }
        if start.elapsed() > TIMEOUT {
            // SAFETY: kill(2) on the block's own process group, created above.
            unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut output = String::new();
    let _ = fs::File::open(&log).and_then(|mut f| f.read_to_string(&mut output));
    match status {
        Some(s) if s.success() => None,
        Some(s) => Some(format!("{}:{} exited with {s}\n--- block ---\n{}--- output ---\n{output}", block.file, block.line, block.code)),
        None => Some(format!(
            "{}:{} timed out after {TIMEOUT:?}\n--- block ---\n{}--- output ---\n{output}",
            block.file, block.line, block.code
        )),
    }
}

#[test]
fn every_sh_block_in_the_docs_runs_or_says_why_not() {
    let blocks: Vec<Block> = doc_files().iter().flat_map(|p| sh_blocks(p)).collect();
    assert!(blocks.iter().any(|b| b.not_run.is_none()), "no runnable sh block found");
    let bins = bin_dir();
    let mut failures = Vec::new();
    for b in &blocks {
        match &b.not_run {
            Some(reason) => eprintln!("not run  {}:{}  ({reason})", b.file, b.line),
            None => {
                let t = Instant::now();
                let failure = run(b, &bins);
                eprintln!("{}  {}:{}  {:?}", if failure.is_none() { "ran ok  " } else { "FAILED  " }, b.file, b.line, t.elapsed());
                failures.extend(failure);
            }
        }
    }
    assert!(failures.is_empty(), "{} sh block(s) failed:\n\n{}", failures.len(), failures.join("\n\n"));
}

#[test]
fn the_block_parser_sees_markers_and_skips_nested_fences() {
    let dir = tempfile::tempdir().expect("tempdir");
    let md = dir.path().join("x.md");
    fs::write(
        &md,
        "text\n<!-- not-run: needs the real hosts -->\n```sh\nexit 1\n```\n\n````markdown\n```sh\nnot a block\n```\n````\n\n1. step\n   ```sh\n   echo indented\n   ```\n",
    )
    .expect("write");
    let blocks = sh_blocks(&md);
    assert_eq!(blocks.len(), 2);
    assert_eq!(blocks[0].not_run.as_deref(), Some("needs the real hosts"));
    assert_eq!(blocks[0].code, "exit 1\n");
    assert_eq!(blocks[1].not_run, None);
    assert_eq!(blocks[1].code, "echo indented\n");
}
