//! install.sh end to end: installs into a temporary prefix (`--debug`: the
//! build `cargo test` has just made, so the suite stays fast; CI's `.ci/run`
//! installs the release build and runs the demo and the real hosts on it)
//! and checks the per-host plugin roots, idempotent re-runs, exact uninstall, and refused prefixes.

use crate::support;
use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const EVENTS: [&str; 6] = ["SessionStart", "UserPromptSubmit", "PreToolUse", "Stop", "PreCompact", "PostCompact"];
/// Claude Code only: the post events of host consent (docs/protocol.md §8a).
const CLAUDE_POST_EVENTS: [&str; 2] = ["PostToolUse", "PostToolUseFailure"];
const MANIFEST: &str = ".kijito-install-manifest";

fn install(args: &[&str]) -> Output {
    support::install_sh().args(args).output().expect("run install.sh")
}

fn ok(out: &Output) -> String {
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "install.sh failed: {}\n{}\n{}", out.status, stdout, String::from_utf8_lossy(&out.stderr));
    stdout
}

/// `[[bin]]` names of the workspace's Cargo.toml (the list install.sh must install).
fn bin_names() -> BTreeSet<String> {
    let toml = fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml")).expect("Cargo.toml");
    let mut names = BTreeSet::new();
    let mut in_bin = false;
    for line in toml.lines() {
        let l = line.trim();
        if l.starts_with('[') {
            in_bin = l == "[[bin]]";
        } else if in_bin {
            if let Some(v) = l.strip_prefix("name").map(str::trim).and_then(|r| r.strip_prefix('=')) {
                names.insert(v.trim().trim_matches('"').to_string());
            }
        }
    }
    assert!(!names.is_empty(), "no [[bin]] in Cargo.toml");
    names
}

/// Every path under dir (relative), with file bytes (None for directories) and mode.
/// Every entry under `dir`: (SHA-256 of a file's bytes, or `None` for a
/// directory; mode). A digest, not the bytes: a debug install holds ~40
/// binaries of ~50 MB, and holding them (three trees at once) ran this test
/// out of memory.
fn tree(dir: &Path) -> BTreeMap<PathBuf, (Option<Vec<u8>>, u32)> {
    use sha2::Digest;
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).expect("read_dir") {
            let p = e.expect("entry").path();
            let md = fs::symlink_metadata(&p).expect("metadata");
            assert!(!md.file_type().is_symlink(), "install created a symlink: {}", p.display());
            let rel = p.strip_prefix(dir).expect("under dir").to_path_buf();
            if md.is_dir() {
                out.insert(rel, (None, md.mode() & 0o7777));
                stack.push(p);
            } else {
                let mut h = sha2::Sha256::new();
                std::io::copy(&mut fs::File::open(&p).expect("open"), &mut h).expect("read");
                out.insert(rel, (Some(h.finalize().to_vec()), md.mode() & 0o7777));
            }
        }
    }
    out
}

fn manifest_entries(root: &Path) -> (BTreeSet<String>, BTreeSet<String>) {
    let text = fs::read_to_string(root.join(MANIFEST)).expect("install manifest");
    let (mut files, mut dirs) = (BTreeSet::new(), BTreeSet::new());
    for line in text.lines().filter(|l| !l.starts_with('#') && !l.is_empty()) {
        let (kind, rel) = line.split_once(' ').expect("kind path");
        match kind {
            "f" => files.insert(rel.to_string()),
            "d" => dirs.insert(rel.to_string()),
            other => panic!("unknown manifest kind {other}"),
        };
    }
    (files, dirs)
}

fn check_root(prefix: &Path, host: &str, bins: &BTreeSet<String>) {
    let root = prefix.join(host);
    let root_s = root.to_str().expect("utf-8 root");
    // bin/: every workspace binary, a regular executable file
    for b in bins {
        let p = root.join("bin").join(b);
        let md = fs::symlink_metadata(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        assert!(md.is_file(), "{} is not a regular file", p.display());
        assert_eq!(md.permissions().mode() & 0o111, 0o111, "{} not executable", p.display());
        assert_eq!(md.permissions().mode() & 0o022, 0, "{} group/other writable", p.display());
    }
    // hooks/hooks.json: absolute paths inside this root, --host and --expect baked in
    let hooks: serde_json::Value =
        serde_json::from_slice(&fs::read(root.join("hooks/hooks.json")).expect("hooks.json")).expect("hooks.json is JSON");
    let events = hooks["hooks"].as_object().expect("hooks object");
    let mut want: BTreeSet<&str> = EVENTS.into_iter().collect();
    if host == "claude" {
        want.extend(CLAUDE_POST_EVENTS);
    }
    assert_eq!(events.keys().map(String::as_str).collect::<BTreeSet<_>>(), want);
    for (event, groups) in events {
        let groups = groups.as_array().expect("groups");
        assert_eq!(groups.len(), 1, "{event}");
        let g = &groups[0];
        // no matcher anywhere: PreToolUse sees every tool call (the policy, docs/protocol.md §8a)
        assert!(g.get("matcher").is_none(), "{event} has a matcher");
        let handlers = g["hooks"].as_array().expect("handlers");
        assert_eq!(handlers.len(), 1);
        let h = &handlers[0];
        assert_eq!(h["type"], "command");
        let timeout = h["timeout"].as_u64().expect("timeout");
        assert!((1..=10).contains(&timeout), "{event} timeout {timeout}");
        let cmd = h["command"].as_str().expect("command");
        let words: Vec<&str> = cmd.split(' ').collect();
        let program = Path::new(words[0]);
        assert!(program.is_absolute(), "{cmd}");
        assert_eq!(program.parent(), Some(root.join("bin").as_path()), "{cmd} not in {root_s}/bin");
        let name = program.file_name().and_then(|n| n.to_str()).expect("name");
        let expected: Vec<String> = match event.as_str() {
            "PreCompact" => vec![format!("{root_s}/bin/precompact"), "--host".into(), host.into()],
            "PostCompact" => vec![format!("{root_s}/bin/postcompact"), "--host".into(), host.into()],
            "UserPromptSubmit" => {
                vec![format!("{root_s}/bin/prompt-hook"), "--host".into(), host.into(), "--expect".into(), "UserPromptSubmit".into()]
            }
            "PreToolUse" | "PostToolUse" | "PostToolUseFailure" => {
                vec![format!("{root_s}/bin/pretool-hook"), "--host".into(), host.into(), "--expect".into(), event.clone()]
            }
            ev => vec![format!("{root_s}/bin/session-hook"), "--host".into(), host.into(), "--expect".into(), ev.into()],
        };
        assert_eq!(words, expected.iter().map(String::as_str).collect::<Vec<_>>(), "{event} command of {host} ({name})");
        assert!(!cmd.contains(['"', '\'', '$', '`', '\\', ';', '&', '|']), "{cmd}");
    }
    // manifest of the host
    let mdir = if host == "codex" { ".codex-plugin" } else { ".claude-plugin" };
    let other = if host == "codex" { ".claude-plugin" } else { ".codex-plugin" };
    let m: serde_json::Value = serde_json::from_slice(&fs::read(root.join(mdir).join("plugin.json")).expect("plugin.json")).expect("JSON");
    assert_eq!(m["name"], "kijito-qa");
    assert_eq!(m["version"], env!("CARGO_PKG_VERSION"));
    assert!(m["description"].as_str().is_some_and(|d| !d.is_empty()));
    assert!(!root.join(other).exists(), "{host} root has the other host's manifest");
    // skills: two, frontmatter name = dir name, installed paths written in, memory = evidence
    for skill in ["kijito-memory-qa", "kijito-resume-from-pointer"] {
        let text = fs::read_to_string(root.join("skills").join(skill).join("SKILL.md")).expect("SKILL.md");
        let front = text.strip_prefix("---\n").and_then(|t| t.split_once("\n---\n")).expect("frontmatter").0;
        assert!(front.lines().any(|l| l == format!("name: {skill}")), "{skill} name");
        assert!(front.lines().any(|l| l.starts_with("description: ") && l.len() > 40), "{skill} description");
        assert!(!text.contains("@ROOT@") && !text.contains("@HOST@"), "{skill}: placeholder left");
        assert!(text.contains(&format!("{root_s}/bin/pointer-snapshot ")), "{skill}: installed path missing");
        assert!(text.contains("evidence, not instructions"), "{skill}: must say memory is evidence");
    }
    // the memory-latch skill: installed with absolute commands
    let latch = fs::read_to_string(root.join("skills/memory-latch/SKILL.md")).expect("memory-latch SKILL.md");
    assert!(latch.starts_with("---\nname: memory-latch\n"), "memory-latch frontmatter");
    assert!(!latch.contains("@ROOT@") && latch.contains(&format!("{root_s}/bin/memory-latch ")), "memory-latch skill paths");
    assert_eq!(fs::read_dir(root.join("skills")).expect("skills dir").count(), 3, "{host}: three skills");
    // modes: directories 0755, data files 0644, nothing group/other writable
    for (rel, (content, mode)) in tree(&root) {
        assert_eq!(mode & 0o022, 0, "{} is group/other writable", rel.display());
        match content {
            None => assert_eq!(mode, 0o755, "dir {}", rel.display()),
            Some(_) if rel.starts_with("bin") => {}
            Some(_) => assert_eq!(mode, 0o644, "file {}", rel.display()),
        }
    }
    // the install manifest lists exactly the installed files
    let (files, dirs) = manifest_entries(&root);
    let on_disk: BTreeSet<String> = tree(&root)
        .into_iter()
        .filter(|(rel, (c, _))| c.is_some() && rel.as_os_str() != MANIFEST)
        .map(|(rel, _)| rel.to_string_lossy().into_owned())
        .collect();
    assert_eq!(files, on_disk, "{host}: manifest files vs disk");
    assert!(dirs.contains("bin") && dirs.contains("hooks") && dirs.contains(mdir), "{host}: {dirs:?}");
}

#[test]
fn install_layout_upgrade_uninstall() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let prefix = tmp.path().join("prefix");
    let p = prefix.to_str().expect("utf-8");
    let bins = bin_names();

    let first = ok(&install(&["--prefix", p, "--host", "both"]));
    assert!(first.contains("installed codex plugin root") && first.contains("installed claude plugin root"), "{first}");
    for host in ["codex", "claude"] {
        check_root(&prefix, host, &bins);
    }

    // idempotent: a second run leaves the same tree, byte for byte
    let before = tree(&prefix);
    ok(&install(&["--prefix", p]));
    assert_eq!(before, tree(&prefix), "re-running install.sh changed the tree");

    // upgrade in place removes a file an older install listed but this one does not
    let stale = prefix.join("codex/bin/retired-helper");
    fs::write(&stale, b"old").expect("write");
    let m = prefix.join("codex").join(MANIFEST);
    let text = fs::read_to_string(&m).expect("manifest");
    fs::write(&m, format!("{text}f bin/retired-helper\n")).expect("manifest");
    ok(&install(&["--prefix", p, "--host", "codex"]));
    assert!(!stale.exists(), "stale installed file kept");
    assert_eq!(before, tree(&prefix), "upgrade did not restore the same tree");

    // uninstall removes exactly what was installed: a user's file survives with its directory
    let mine = prefix.join("claude/skills/my-notes.txt");
    fs::write(&mine, b"mine").expect("write");
    let outside = prefix.join("README.user");
    fs::write(&outside, b"not ours").expect("write");
    ok(&install(&["--prefix", p, "--uninstall"]));
    let left: BTreeSet<PathBuf> = tree(&prefix).into_keys().collect();
    let want: BTreeSet<PathBuf> =
        ["claude", "claude/skills", "claude/skills/my-notes.txt", "README.user"].iter().map(PathBuf::from).collect();
    assert_eq!(left, want, "uninstall removed too much or too little");
    // a second uninstall is a no-op; with the user's files gone the prefix goes too
    ok(&install(&["--prefix", p, "--uninstall"]));
    fs::remove_file(&mine).expect("rm");
    fs::remove_file(&outside).expect("rm");
    fs::remove_dir(prefix.join("claude/skills")).expect("rmdir");
    fs::remove_dir(prefix.join("claude")).expect("rmdir");
    let only_codex = ok(&install(&["--prefix", p, "--host", "codex"]));
    assert!(prefix.join("codex/bin").is_dir() && !prefix.join("claude").exists(), "--host codex installed claude");
    doctor_hint_checks_only_what_was_installed(&only_codex, &prefix, tmp.path());
    ok(&install(&["--prefix", p, "--host", "codex", "--uninstall"]));
    assert!(!prefix.exists(), "empty prefix left after uninstall");
}

/// install.sh's last line names a doctor command for exactly the installed host; run as printed
/// (fresh HOME, nothing on PATH) it checks only that root: no line about the other host, and the
/// installed root's own checks are green (only the missing token file is red on a fresh HOME).
fn doctor_hint_checks_only_what_was_installed(out: &str, prefix: &Path, tmp: &Path) {
    let p = prefix.to_str().expect("utf-8");
    let want = format!("then check what this installed: {p}/codex/bin/kijito-doctor --host codex --root {p}");
    let line = out.lines().find(|l| l.contains("then check what this installed:")).unwrap_or_else(|| panic!("no doctor hint in {out}"));
    assert!(line.ends_with(&want), "{line}");
    assert!(out.contains(&format!("{p}/codex/bin/kijito-setup --allow-helpers --host codex --root {p}/codex")), "{out}");
    assert!(out.contains(&format!("{p}/codex/bin/kijito-setup --codex-alias --root {p}/codex")), "{out}");
    assert!(
        out.contains(&format!("{p}/codex/bin/kijito-setup --sandbox --host codex --root {p} (shows the change; add --write)")),
        "{out}"
    );
    let words: Vec<&str> = want.rsplit(": ").next().expect("command").split(' ').collect();
    let home = tmp.join("doctor-home");
    let empty = tmp.join("doctor-path");
    fs::create_dir_all(&home).expect("mkdir");
    fs::create_dir_all(&empty).expect("mkdir");
    let o = Command::new(words[0])
        .args(&words[1..])
        .args(["--offline", "--json"])
        .env_clear()
        .env("HOME", &home)
        .env("PATH", &empty)
        .current_dir(&home)
        .output()
        .expect("run the doctor");
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&o.stdout)));
    let checks = v["checks"].as_array().expect("checks");
    assert!(checks.iter().all(|c| c["host"] != "claude"), "a claude check for a codex-only install: {v:#}");
    for name in ["layout", "hooks.json", "hook binaries", "data dir"] {
        let c = checks.iter().find(|c| c["host"] == "codex" && c["check"] == name).unwrap_or_else(|| panic!("no codex {name}: {v:#}"));
        assert_eq!(c["status"], "green", "{name}: {v:#}");
    }
    let red: Vec<&str> = checks.iter().filter(|c| c["status"] == "red").map(|c| c["check"].as_str().unwrap_or("")).collect();
    assert_eq!(red, ["token file"], "{v:#}");
    fs::remove_dir_all(&home).expect("rm");
}

fn install_env(args: &[&str], home: &Path) -> Output {
    support::install_sh()
        .args(args)
        .env("HOME", home)
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("XDG_STATE_HOME")
        .env_remove("CODEX_HOME")
        .env_remove("CLAUDE_CONFIG_DIR")
        .output()
        .expect("run install.sh")
}

#[test]
fn uninstall_removes_the_allow_rules_of_its_roots_and_lists_what_stays_yours() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let home = tmp.path().join("home");
    let prefix = tmp.path().join("prefix");
    let p = prefix.to_str().expect("utf-8");
    fs::create_dir_all(&home).expect("mkdir");
    ok(&install_env(&["--prefix", p, "--host", "both"], &home));
    // the allow rules, as the user writes them with kijito-setup
    for host in ["codex", "claude"] {
        let root = prefix.join(host);
        let o = Command::new(root.join("bin/kijito-setup"))
            .args(["--allow-helpers", "--host", host, "--root", root.to_str().expect("utf-8"), "--write"])
            .env("HOME", &home)
            .env_remove("CODEX_HOME")
            .env_remove("CLAUDE_CONFIG_DIR")
            .output()
            .expect("kijito-setup");
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    let rules = home.join(".codex/rules/kijito-qa.rules");
    let settings = home.join(".claude/settings.json");
    assert!(rules.is_file());
    // the user's own rules and settings, and what the helpers write while in use
    fs::write(home.join(".codex/rules/mine.rules"), "prefix_rule(pattern=[\"ls\"], decision=\"allow\")\n").expect("write");
    let mut v: serde_json::Value = serde_json::from_slice(&fs::read(&settings).expect("settings")).expect("json");
    v["permissions"]["allow"].as_array_mut().expect("allow").push("Bash(ls:*)".into());
    v["theme"] = "dark".into();
    fs::write(&settings, serde_json::to_string_pretty(&v).expect("json")).expect("write");
    for d in [".config/kijito-qa", ".cache/kijito-qa/qa", ".local/state/kijito-qa/latch-heads"] {
        fs::create_dir_all(home.join(d)).expect("mkdir");
    }
    fs::write(home.join(".config/kijito-qa/token"), "t\n").expect("write");

    let out = ok(&install_env(&["--prefix", p, "--uninstall"], &home));
    assert!(!prefix.exists(), "{out}");
    assert!(!rules.exists(), "the Codex rules file of the root stays: {out}");
    assert!(home.join(".codex/rules/mine.rules").is_file(), "the user's rules file went");
    let v: serde_json::Value = serde_json::from_slice(&fs::read(&settings).expect("settings")).expect("json");
    assert_eq!(v["permissions"]["allow"], serde_json::json!(["Bash(ls:*)"]), "{v:#}");
    assert_eq!(v["theme"], "dark");
    assert!(out.contains(&format!("removed {} (the Codex allow rules for {p}/codex/bin/)", rules.display())), "{out}");
    assert!(out.contains(&format!("removed 19 Claude Code allow rule(s) for {p}/claude/bin/ from {}", settings.display())), "{out}");
    // kept and listed, never deleted
    for d in [".config/kijito-qa", ".cache/kijito-qa", ".local/state/kijito-qa"] {
        assert!(home.join(d).is_dir(), "{d} deleted");
        assert!(out.contains(&format!("install.sh:   {}: ", home.join(d).display())), "{d} not listed: {out}");
    }
    assert!(out.contains(".memory-latch/"), "{out}");
}

#[test]
fn install_refuses_prefixes_that_need_shell_quoting() {
    let tmp = tempfile::tempdir().expect("tempdir");
    for bad in ["with space", "semi;colon", "dollar$HOME", "back`tick", "quote'd", "star*", "tilde~x", "new\nline"] {
        let prefix = tmp.path().join(bad);
        let out = install(&["--prefix", prefix.to_str().expect("utf-8"), "--host", "both"]);
        assert_eq!(out.status.code(), Some(1), "{bad:?} accepted");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("would need shell quoting"), "{bad:?}: {err}");
        assert!(!prefix.exists(), "{bad:?}: something was created");
    }
    assert_eq!(fs::read_dir(tmp.path()).expect("read_dir").count(), 0, "refused installs wrote files");
}

#[test]
fn install_usage() {
    let help = install(&["--help"]);
    assert!(help.status.success());
    assert!(String::from_utf8_lossy(&help.stdout).contains("--uninstall"));
    for args in [&["--host", "vim"][..], &["--bogus"][..], &["--prefix"][..]] {
        let out = install(args);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        assert!(String::from_utf8_lossy(&out.stderr).contains("install.sh: error:"), "{args:?}");
    }
}

/// install.sh's `cargo build`, run from a test, relinks none of the binaries
/// the other tests are running at that moment (`support::install_sh`): the
/// package's own, built by `cargo test`, and a hook, built by `cargo build`.
#[test]
fn install_from_a_test_relinks_no_binary_the_tests_run() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let prefix = tmp.path().join("prefix");
    let bins = [env!("CARGO_BIN_EXE_qa-gate").to_owned(), env!("CARGO_BIN_EXE_kijito-local").to_owned(), support::bin("prompt-hook")];
    let inodes = || bins.iter().map(|b| fs::metadata(b).expect(b).ino()).collect::<Vec<_>>();
    let before = inodes();
    ok(&install(&["--prefix", prefix.to_str().expect("utf-8"), "--host", "claude"]));
    assert_eq!(inodes(), before, "install.sh relinked one of {bins:?}");
}
