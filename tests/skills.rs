//! The installed skills: rendered for each host by the very render program of
//! install.sh (its `render()` heredoc, run with python3), every helper command
//! line in them passes the section 8 command grammar (`<PLACEHOLDERS>` filled
//! with values of the flag's kind), no `@TOKEN@` is left, and each host's copy
//! names only its own verifier mechanism.
#![allow(clippy::unwrap_used)]

use kijito_protocol::command::{self, HelperDir, Kind};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// The python program of install.sh's `render()`.
fn render_program() -> String {
    let script = std::fs::read_to_string(Path::new(ROOT).join("install.sh")).unwrap();
    let start = script.find("render() {").expect("render() in install.sh");
    let body = &script[start..];
    let from = body.find("<<'PY'\n").unwrap() + "<<'PY'\n".len();
    let to = body[from..].find("\nPY\n").unwrap();
    body[from..from + to].to_owned()
}

/// Render `src` for `host` into `dest` as install.sh does; Err(stderr) on refusal.
fn render(src: &Path, dest: &Path, root: &Path, host: &str) -> Result<String, String> {
    let mut child = Command::new("python3")
        .args(["-", src.to_str().unwrap(), dest.to_str().unwrap(), root.to_str().unwrap(), host, "/opt/kq", "0.1.0"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python3");
    child.stdin.take().unwrap().write_all(render_program().as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    Ok(std::fs::read_to_string(dest).unwrap())
}

fn skills() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(Path::new(ROOT).join("skills")).unwrap().map(|e| e.unwrap().path().join("SKILL.md")).collect();
    v.sort();
    assert!(v.len() >= 2);
    v
}

fn kind_of(flag: &str) -> Option<Kind> {
    command::GRAMMARS.iter().flat_map(|g| g.specs.iter()).find(|s| s.flag.name == flag).map(|s| s.kind)
}

/// Replace each `<PLACEHOLDER>` by a valid value of its flag's kind.
fn fill(line: &str) -> String {
    let words: Vec<&str> = line.split(' ').collect();
    let mut out = Vec::new();
    for (i, w) in words.iter().enumerate() {
        if w.starts_with('<') && w.ends_with('>') {
            let flag = words[i - 1];
            let v = match kind_of(flag).unwrap_or_else(|| panic!("placeholder {w} after {flag}, which no grammar documents: {line}")) {
                Kind::MemoryId => "21813".to_owned(),
                Kind::MessageId => "1234".to_owned(),
                Kind::Digest => "ab".repeat(32),
                Kind::SessionId => "2208dc6c-1602-4db0-9c33-9125ee25dc44".to_owned(),
                Kind::Path => format!("/home/user/data/{}.json", w.trim_matches(['<', '>']).to_lowercase()),
                other => panic!("placeholder {w} after {flag} of kind {other:?}: no sample value in this test"),
            };
            out.push(v);
        } else {
            out.push((*w).to_owned());
        }
    }
    out.join(" ")
}

#[test]
fn every_command_in_every_installed_skill_passes_the_grammar() {
    let tmp = tempfile::tempdir().unwrap();
    let mut total = 0;
    for host in ["codex", "claude"] {
        let root = tmp.path().join("prefix").join(host);
        let bin = root.join("bin");
        let dir = HelperDir::new(&bin).unwrap();
        for src in skills() {
            let dest = tmp.path().join(format!("{host}-{}.md", src.parent().unwrap().file_name().unwrap().to_str().unwrap()));
            let text = render(&src, &dest, &root, host).unwrap();
            assert!(!text.contains("@BEGIN-") && !text.contains("@END-"), "{}", src.display());
            let left: Vec<&str> = text.split('@').skip(1).step_by(2).filter(|t| !t.is_empty() && t.chars().all(|c| c.is_ascii_uppercase() || c == '_' || c == '-')).collect();
            assert!(left.is_empty(), "unreplaced tokens {left:?} in {host} {}", src.display());
            let prefix = format!("{}/", bin.display());
            let commands: Vec<&str> = text.lines().map(str::trim).filter(|l| l.starts_with(&prefix)).collect();
            // every mention of a helper path is such a command line
            assert_eq!(text.matches(&prefix).count(), commands.len(), "{host} {}: a helper path outside a command line", src.display());
            for c in &commands {
                // `kijito-compact` (issue 12) joins the grammar when its branch lands; until
                // then its one line must have exactly the documented shape.
                let compact = format!("{prefix}kijito-compact ");
                if c.starts_with(&compact) && !command::GRAMMARS.iter().any(|g| g.helper == "kijito-compact") {
                    assert_eq!(c[compact.len()..].to_owned(), "request --session-id <SESSION_ID> --data-dir <DATA_DIR>", "{host}");
                    total += 1;
                    continue;
                }
                let filled = fill(c);
                if let Err(e) = command::check_command(&filled, &dir) {
                    panic!("{host} {}: {c}\n  -> {filled}\n  refused: {} ({})", src.display(), e.message(), e.code());
                }
                total += 1;
            }
        }
    }
    assert!(total >= 20, "only {total} commands found");
}

#[test]
fn each_host_gets_its_own_verifier_mechanism_and_the_whole_cycle() {
    let tmp = tempfile::tempdir().unwrap();
    let src = Path::new(ROOT).join("skills/kijito-memory-qa/SKILL.md");
    let codex = render(&src, &tmp.path().join("c.md"), Path::new("/opt/kq/codex"), "codex").unwrap();
    let claude = render(&src, &tmp.path().join("k.md"), Path::new("/opt/kq/claude"), "claude").unwrap();
    assert!(codex.contains("spawn_agent") && codex.contains("fork_context: false") && !codex.contains("Task tool"));
    assert!(claude.contains("Agent tool") && claude.contains("subagent_type: \"general-purpose\"") && claude.contains("run_in_background: false") && !claude.contains("spawn_agent"));
    // the verifier prompt, the same on both hosts; tests/hosts/lib/he2e/qa_driver.py VERIFIER_PREFIX
    // (the real-host `boots` scenario's fake model) uses exactly this sentence
    for t in [&codex, &claude] {
        let flat = t.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(flat.contains("\"Run exactly this one shell command and reply with its exit status and its complete stdout and stderr, nothing else: \" followed by the one command"), "{flat}");
    }
    assert!(claude.contains("never `\"fork\"`"));
    let driver = std::fs::read_to_string(Path::new(ROOT).join("tests/hosts/lib/he2e/qa_driver.py")).unwrap();
    assert!(driver.contains("VERIFIER_PREFIX = (\"Run exactly this one shell command and reply with its exit status and its complete \"\n                   \"stdout and stderr, nothing else: \")"));
    for t in [&codex, &claude] {
        for needed in [
            "durable decision", "verified finding", "state change", "user preference", "failure mode", "reusable command", "gate result",
            "At most 100 candidates", "recall once", "persona and project", "correct it", "fade it", "before publication",
            "Digest again, after both boots", "kijito-compact request", "no_safe_trigger", "/compact",
            "Never include any pointer or anchor body",
        ] {
            assert!(t.contains(needed), "missing {needed:?}");
        }
        // the order of the cycle: publish, boots, digest again, record, request, report
        let pos = |s: &str| t.find(s).unwrap_or_else(|| panic!("{s}"));
        assert!(pos("/bin/pointer-publish ") < pos("/bin/pointer-snapshot "));
        assert!(pos("## 4. Digest again") < pos("/bin/qa-gate record "));
        assert!(pos("/bin/qa-gate record ") < pos("/bin/kijito-compact request "));
        assert!(pos("/bin/kijito-compact request ") < pos("## 7. Report"));
    }
}

#[test]
fn render_refuses_unbalanced_blocks_and_unknown_tokens() {
    let tmp = tempfile::tempdir().unwrap();
    for (name, body, why) in [
        ("a.md", "x\n@BEGIN-codex@\ny\n", "without"),
        ("b.md", "@END-claude@\n", "unbalanced"),
        ("c.md", "run @ROOT@/bin/x with @POINTER@\n", "unreplaced @POINTER@"),
    ] {
        let src = tmp.path().join(name);
        std::fs::write(&src, body).unwrap();
        let err = render(&src, &tmp.path().join(format!("out-{name}")), Path::new("/opt/kq/codex"), "codex").unwrap_err();
        assert!(err.contains(why), "{name}: {err}");
    }
}
