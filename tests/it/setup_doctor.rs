//! kijito-setup and kijito-doctor against a real kijito-local on an
//! ephemeral loopback port, real binaries, real files, a fresh HOME each.
//! The doctor's plugin roots are laid out from the repository's templates
//! exactly as install.sh renders them (without its release build), with the
//! built hook binaries hard-linked into `bin/`.
#![allow(clippy::unwrap_used)]

use crate::support;

use serde_json::Value;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use support::LocalServer;

const SETUP: &str = env!("CARGO_BIN_EXE_kijito-setup");
const DOCTOR: &str = env!("CARGO_BIN_EXE_kijito-doctor");
const DIGEST: &str = env!("CARGO_BIN_EXE_pointer-digest");

struct Home {
    tmp: tempfile::TempDir,
    home: PathBuf,
    /// An empty directory used as PATH (no codex, no claude).
    empty_path: PathBuf,
}

impl Home {
    fn new() -> Home {
        let tmp = tempfile::tempdir().unwrap();
        fs::set_permissions(tmp.path(), fs::Permissions::from_mode(0o700)).unwrap();
        let home = tmp.path().join("home");
        let empty_path = tmp.path().join("empty-path");
        fs::create_dir(&home).unwrap();
        fs::create_dir(&empty_path).unwrap();
        Home { tmp, home, empty_path }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.tmp.path().join(name)
    }

    fn config(&self) -> PathBuf {
        self.home.join(".config/kijito-qa/config.json")
    }

    fn run(&self, bin: &str, args: &[&str]) -> Output {
        self.run_env(bin, args, &[])
    }

    fn run_env(&self, bin: &str, args: &[&str], env: &[(&str, &str)]) -> Output {
        let mut c = Command::new(bin);
        c.args(args)
            .current_dir(&self.home)
            .env("HOME", &self.home)
            .env("PATH", &self.empty_path)
            .env_remove("XDG_CONFIG_HOME")
            .env_remove("XDG_CACHE_HOME")
            .env_remove("CLAUDE_PLUGIN_DATA")
            .env_remove("PLUGIN_DATA")
            .env_remove("CODEX_HOME")
            .env_remove("CLAUDE_CONFIG_DIR")
            .stdin(Stdio::null());
        for (k, v) in env {
            c.env(k, v);
        }
        c.output().unwrap()
    }

    /// A private file (0600).
    fn write_private(&self, name: &str, text: &str) -> PathBuf {
        let p = self.path(name);
        kijito_files::private::write_atomic(&p, text.as_bytes()).unwrap();
        p
    }
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn first_line(o: &Output) -> String {
    text(&o.stderr).lines().next().unwrap_or("").to_owned()
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// `kijito-setup --create` on a fresh HOME: the JSON line with the ids.
fn create(h: &Home, server: &LocalServer) -> Value {
    let anchor = h.write_private("anchor.md", "Decision: the parser keeps the old AST names.\n");
    let o = h.run(
        SETUP,
        &[
            "--api-url",
            &server.base_url(),
            "--token-file",
            s(&server.token_file()),
            "--create",
            "--anchor-file",
            s(&anchor),
            "--title",
            "Ship the parser",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    serde_json::from_slice(&o.stdout).unwrap()
}

#[test]
fn create_seeds_kijito_local_verifies_and_writes_an_owner_only_config() {
    let server = LocalServer::start();
    let h = Home::new();
    let out = create(&h, &server);
    let (pointer, lock) = (out["pointerId"].as_u64().unwrap(), out["lockMessageId"].as_u64().unwrap());
    assert!(out["anchorId"].as_u64().is_some());
    assert_eq!(out["config"].as_str().unwrap(), s(&h.config()));
    // owner-only config in an owner-only dir, loadable, naming exactly what was created
    assert_eq!(fs::metadata(h.config()).unwrap().permissions().mode() & 0o777, 0o600);
    assert_eq!(fs::metadata(h.config().parent().unwrap()).unwrap().permissions().mode() & 0o777, 0o700);
    let config: Value = serde_json::from_slice(&fs::read(h.config()).unwrap()).unwrap();
    assert_eq!(config["pointerId"].as_u64(), Some(pointer));
    assert_eq!(config["lockMessageId"].as_u64(), Some(lock));
    assert_eq!(config["apiUrl"].as_str(), Some(server.base_url().as_str()));
    assert_eq!(config["tokenFile"].as_str(), Some(s(&server.token_file())));
    // the pointer holds a valid first manifest, readable with the written config
    let manifest_text = kijito_protocol::render::parse_rendering(
        &server.get(pointer).rendering(),
        kijito_protocol::ids::MemoryId::new(pointer).unwrap(),
        None,
    )
    .unwrap()
    .content;
    kijito_protocol::manifest::parse_manifest(
        manifest_text.as_bytes(),
        kijito_protocol::ids::MemoryId::new(pointer).unwrap(),
        kijito_protocol::ids::MessageId::new(lock).unwrap(),
    )
    .unwrap();
    let d = h.run(DIGEST, &["--pointer-id", &pointer.to_string()]);
    assert_eq!(d.status.code(), Some(0), "{}", text(&d.stderr));
    assert_eq!(text(&d.stdout).trim(), out["pointerDigest"].as_str().unwrap());
    // it claimed and released the lease once: a new claim by another persona succeeds
    let log: Vec<String> = server
        .request_log()
        .iter()
        .map(|e| format!("{} {}", e["method"].as_str().unwrap_or(""), e["path"].as_str().unwrap_or("")))
        .collect();
    assert_eq!(log.iter().filter(|l| *l == "POST /api/claim").count(), 1, "{log:?}");
    assert_eq!(log.iter().filter(|l| *l == "POST /api/release").count(), 1, "{log:?}");
    assert_eq!(server.claim(lock, "other", 10).json()["claimed"], true);
    // the token never appears anywhere
    assert!(!fs::read_to_string(h.config()).unwrap().contains(server.token()));
}

#[test]
fn refuses_to_overwrite_a_config_without_force() {
    let server = LocalServer::start();
    let h = Home::new();
    let out = create(&h, &server);
    let before = fs::read(h.config()).unwrap();
    let (p, l) = (out["pointerId"].to_string(), out["lockMessageId"].to_string());
    let (url, tf) = (server.base_url(), server.token_file());
    let args = ["--api-url", &url, "--token-file", s(&tf), "--pointer-id", &p, "--lock-message-id", &l];
    let o = h.run(SETUP, &args);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(first_line(&o), "kijito_setup_failed:config_exists");
    assert!(text(&o.stderr).contains("--force"));
    assert_eq!(fs::read(h.config()).unwrap(), before);
    let mut forced = args.to_vec();
    forced.push("--force");
    let o = h.run(SETUP, &forced);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    // a symlink in place of the config is never written through
    fs::remove_file(h.config()).unwrap();
    let target = h.path("elsewhere");
    fs::write(&target, "x").unwrap();
    std::os::unix::fs::symlink(&target, h.config()).unwrap();
    let o = h.run(SETUP, &forced);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(fs::read_to_string(&target).unwrap(), "x");
}

/// Every error message says what to do; nothing is written on failure.
#[test]
fn error_messages_say_what_to_do() {
    let server = LocalServer::start();
    let h = Home::new();
    let out = create(&h, &server);
    fs::remove_file(h.config()).unwrap();
    let (p, l) = (out["pointerId"].as_u64().unwrap(), out["lockMessageId"].as_u64().unwrap());
    let url = server.base_url();
    let tf = server.token_file();
    let fail = |args: &[&str], code: &str, needles: &[&str]| {
        let o = h.run(SETUP, args);
        assert_ne!(o.status.code(), Some(0), "{args:?}");
        assert_eq!(first_line(&o), format!("kijito_setup_failed:{code}"), "{args:?}: {}", text(&o.stderr));
        let err = text(&o.stderr);
        for n in needles {
            assert!(err.contains(n), "{args:?}: {n:?} not in {err}");
        }
        assert!(!err.contains(server.token()));
        assert!(!h.config().exists(), "{args:?} wrote a config");
    };
    // 401 names the token file
    let wrong = h.write_private("wrong-token", "not-the-token\n");
    fail(
        &["--api-url", &url, "--token-file", s(&wrong), "--pointer-id", &p.to_string(), "--lock-message-id", &l.to_string()],
        "kijito_http_401",
        &[s(&wrong)],
    );
    // 403 names the memory id and the scope
    fail(
        &["--api-url", &url, "--token-file", s(&tf), "--pointer-id", "999999", "--lock-message-id", &l.to_string()],
        "kijito_http_403",
        &["memory 999999", "scope \"project\""],
    );
    // a lock id other than the manifest's: refused before any claim, naming both
    fail(
        &["--api-url", &url, "--token-file", s(&tf), "--pointer-id", &p.to_string(), "--lock-message-id", "424242"],
        "pointer_not_a_manifest",
        &["lock.messageId 1 is not the configured lock 424242"],
    );
    // a manifest naming a lock message that does not exist: 403 naming the message
    let orphan = server.create_memory("placeholder");
    let m = kijito_protocol::manifest::Manifest {
        pointer_id: kijito_protocol::ids::MemoryId::new(orphan).unwrap(),
        lock_message_id: kijito_protocol::ids::MessageId::new(424242).unwrap(),
        state: kijito_protocol::manifest::State::Active,
        task: kijito_protocol::manifest::Task {
            title: "T".into(),
            next_action: Some("N".into()),
            done: vec![],
            remaining: vec!["R".into()],
            done_when: vec!["D".into()],
            gate: kijito_protocol::manifest::Gate { consecutive_greens: 0, artifact_digest: None },
        },
        anchors: vec![kijito_protocol::manifest::Anchor::Current {
            id: kijito_protocol::ids::MemoryId::new(out["anchorId"].as_u64().unwrap()).unwrap(),
            sha256: kijito_protocol::ids::Digest::of(b"x"),
            purpose: "p".into(),
        }],
    };
    assert_eq!(server.patch(orphan, &m.to_canonical(), "Codex", None).status, 200);
    fail(
        &["--api-url", &url, "--token-file", s(&tf), "--pointer-id", &orphan.to_string(), "--lock-message-id", "424242"],
        "kijito_http_403",
        &["message 424242", "lockMessageId"],
    );
    // network errors name host and port
    let (_held, port) = support::closed_port();
    fail(
        &["--api-url", &format!("http://127.0.0.1:{port}"), "--token-file", s(&tf), "--pointer-id", "1", "--lock-message-id", "1"],
        "kijito_network_error",
        &[&format!("127.0.0.1 port {port}")],
    );
    // --flag=value says to write --flag value
    fail(&[&format!("--api-url={url}"), "--pointer-id", "1", "--lock-message-id", "1"], "unknown_flag", &["write `--api-url VALUE`"]);
    // token file rules, with the command that fixes them
    let loose = h.path("loose-token");
    fs::copy(&tf, &loose).unwrap();
    fs::set_permissions(&loose, fs::Permissions::from_mode(0o644)).unwrap();
    fail(
        &["--api-url", &url, "--token-file", s(&loose), "--pointer-id", "1", "--lock-message-id", "1"],
        "token_file_permissions_too_open",
        &[&format!("chmod 600 {}", s(&loose))],
    );
    fail(
        &["--api-url", &url, "--token-file", s(&h.path("absent")), "--pointer-id", "1", "--lock-message-id", "1"],
        "token_file_not_found",
        &["chmod 600"],
    );
    // the default token file is kijito-qa's own, and the message names it
    fail(&["--api-url", &url, "--pointer-id", "1", "--lock-message-id", "1"], "token_file_not_found", &[".config/kijito-qa/token"]);
    // an anchor is not a pointer: the message says the pointer needs a first manifest, scope project
    let anchor = out["anchorId"].as_u64().unwrap();
    fail(
        &["--api-url", &url, "--token-file", s(&tf), "--pointer-id", &anchor.to_string(), "--lock-message-id", &l.to_string()],
        "pointer_not_a_manifest",
        &["must exist first", "scope \"project\"", "§4"],
    );
    // a held lease is reported, never taken
    assert_eq!(server.claim(l, "other", 60).json()["claimed"], true);
    fail(
        &["--api-url", &url, "--token-file", s(&tf), "--pointer-id", &p.to_string(), "--lock-message-id", &l.to_string()],
        "lease_held",
        &["other", "wait"],
    );
    assert_eq!(server.release(l, "other").json()["released"], true);
    // --create is for kijito-local only
    let a = h.write_private("a2.md", "x\n");
    fail(
        &["--api-url", "https://api.kijito.ai", "--token-file", s(&tf), "--create", "--anchor-file", s(&a), "--title", "T"],
        "create_needs_kijito_local",
        &["--pointer-id N"],
    );
    // usage: both modes, or neither
    fail(&["--create", "--pointer-id", "1", "--anchor-file", s(&a), "--title", "T"], "conflicting_flags", &[]);
    fail(&["--api-url", &url], "missing_flag", &[]);
    fail(&["--api-url", &url, "--token-file", s(&tf), "--create", "--anchor-file", s(&a), "--title", " padded"], "title_invalid", &[]);
    fail(
        &["--api-url", &url, "--token-file", "relative/token", "--pointer-id", "1", "--lock-message-id", "1"],
        "invalid_path",
        &["absolute"],
    );
    // an anchor file that is a symlink is refused
    let link = h.path("anchor-link.md");
    std::os::unix::fs::symlink(&a, &link).unwrap();
    fail(
        &["--api-url", &url, "--token-file", s(&tf), "--create", "--anchor-file", s(&link), "--title", "T"],
        "anchor_file_invalid",
        &["symlink"],
    );
}

#[test]
fn a_quoted_tilde_in_token_file_means_home() {
    let server = LocalServer::start();
    let h = Home::new();
    fs::create_dir_all(h.home.join("tok")).unwrap();
    fs::copy(server.token_file(), h.home.join("tok/t")).unwrap();
    fs::set_permissions(h.home.join("tok/t"), fs::Permissions::from_mode(0o600)).unwrap();
    let anchor = h.write_private("anchor.md", "Fact: x.\n");
    let o = h
        .run(SETUP, &["--api-url", &server.base_url(), "--token-file", "~/tok/t", "--create", "--anchor-file", s(&anchor), "--title", "T"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let config: Value = serde_json::from_slice(&fs::read(h.config()).unwrap()).unwrap();
    assert_eq!(config["tokenFile"].as_str().unwrap(), s(&h.home.join("tok/t")));
}

/// `kijito-setup --create` on a fresh HOME, then the skill's cycle with only
/// the written config: digest, publish a new manifest, digest, two
/// context-free boots, record the pass.
#[test]
fn create_then_the_skills_cycle_works_with_the_written_config() {
    let server = LocalServer::start();
    let h = Home::new();
    let out = create(&h, &server);
    let (p, l) = (out["pointerId"].as_u64().unwrap(), out["lockMessageId"].as_u64().unwrap());
    let (ps, ls) = (p.to_string(), l.to_string());
    let ok = |o: Output| -> String {
        assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
        text(&o.stdout)
    };
    let d1 = ok(h.run(DIGEST, &["--pointer-id", &ps])).trim().to_owned();
    assert_eq!(d1, out["pointerDigest"].as_str().unwrap());
    // the next manifest: same anchors, a new nextAction
    let current =
        kijito_protocol::render::parse_rendering(&server.get(p).rendering(), kijito_protocol::ids::MemoryId::new(p).unwrap(), None)
            .unwrap()
            .content;
    let mut m = kijito_protocol::manifest::parse_manifest_unbound(current.as_bytes()).unwrap();
    m.task.next_action = Some("Write the parser tests".into());
    m.validate().unwrap();
    let next = h.write_private("next.json", &m.to_canonical());
    let rollback = h.path("rollback.json");
    ok(h.run(
        env!("CARGO_BIN_EXE_pointer-publish"),
        &[
            "--pointer-id",
            &ps,
            "--lock-message-id",
            &ls,
            "--expected-pointer-digest",
            &d1,
            "--content-file",
            s(&next),
            "--rollback-file",
            s(&rollback),
        ],
    ));
    let d2 = ok(h.run(DIGEST, &["--pointer-id", &ps])).trim().to_owned();
    assert_ne!(d1, d2);
    let reports = [h.path("boot-a.json"), h.path("boot-b.json")];
    for r in &reports {
        ok(h.run(
            env!("CARGO_BIN_EXE_pointer-snapshot"),
            &["--pointer-id", &ps, "--lock-message-id", &ls, "--expected-pointer-digest", &d2, "--report-file", s(r)],
        ));
    }
    let transcript = h.write_private("transcript.jsonl", "{}\n");
    let data = h.path("data");
    let ready = ok(h.run(
        env!("CARGO_BIN_EXE_qa-gate"),
        &[
            "record",
            "--session-id",
            "0b5e55ed-c0de-4a11-9e57-000000000002",
            "--transcript",
            s(&transcript),
            "--data-dir",
            s(&data),
            "--pointer-id",
            &ps,
            "--pointer-digest",
            &d2,
            "--cold-boot-report",
            s(&reports[0]),
            "--cold-boot-report",
            s(&reports[1]),
        ],
    ));
    assert!(ready.contains("kijito.compaction.ready"), "{ready}");
}

// ------------------------------------------------------------------ doctor

/// Lay out `<prefix>/<host>` from the templates as install.sh renders them.
pub(crate) fn install_root(prefix: &Path, host: &str) -> PathBuf {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let root = prefix.join(host);
    let mdir = if host == "codex" { ".codex-plugin" } else { ".claude-plugin" };
    for d in ["bin", "hooks", mdir] {
        fs::create_dir_all(root.join(d)).unwrap();
    }
    let render = |src: &Path, dest: &Path| {
        let t = fs::read_to_string(src).unwrap();
        let t = t
            .replace("@ROOT@", s(&root))
            .replace("@HOST@", host)
            .replace("@HOSTNAME@", host)
            .replace("@PREFIX@", s(prefix))
            .replace("@VERSION@", "0.1.0");
        fs::write(dest, t).unwrap();
    };
    render(&repo.join(format!("hooks/{host}/hooks.json.tmpl")), &root.join("hooks/hooks.json"));
    render(&repo.join(format!("hooks/{host}/plugin.json.tmpl")), &root.join(mdir).join("plugin.json"));
    for e in fs::read_dir(repo.join("skills")).unwrap() {
        let e = e.unwrap();
        fs::create_dir_all(root.join("skills").join(e.file_name())).unwrap();
        render(&e.path().join("SKILL.md"), &root.join("skills").join(e.file_name()).join("SKILL.md"));
    }
    for b in ["precompact", "postcompact", "session-hook", "prompt-hook", "pretool-hook"] {
        let src = support::bin(b);
        kijito_testkit::link_executable(Path::new(&src), &root.join("bin").join(b));
    }
    for d in [prefix.to_path_buf(), root.clone(), root.join("bin")] {
        fs::set_permissions(&d, fs::Permissions::from_mode(0o755)).unwrap();
    }
    root
}

fn doctor_json(h: &Home, args: &[&str]) -> (i32, Value, String) {
    let mut a = args.to_vec();
    a.push("--json");
    let o = h.run(DOCTOR, &a);
    let v: Value = serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {} {}", text(&o.stdout), text(&o.stderr)));
    (o.status.code().unwrap(), v, text(&o.stderr))
}

fn check<'a>(v: &'a Value, host: &str, name: &str) -> &'a Value {
    v["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["host"] == host && c["check"] == name)
        .unwrap_or_else(|| panic!("no {host} {name} in {v}"))
}

#[test]
fn doctor_is_green_on_a_fresh_install_and_red_with_the_fix_after_one_thing_breaks() {
    let server = LocalServer::start();
    let h = Home::new();
    create(&h, &server);
    let prefix = h.path("prefix");
    let codex = install_root(&prefix, "codex");
    let claude = install_root(&prefix, "claude");
    let root_arg = ["--root", s(&prefix)];
    let (code, v, _) = doctor_json(&h, &root_arg);
    assert_eq!(code, 0, "{v:#}");
    assert_eq!(v["ok"], true);
    for host in ["codex", "claude"] {
        for name in ["layout", "hooks.json", "hook binaries", "data dir"] {
            assert_eq!(check(&v, host, name)["status"], "green", "{host} {name}: {v:#}");
        }
    }
    for name in ["config", "token file", "api"] {
        assert_eq!(check(&v, "all", name)["status"], "green", "{name}: {v:#}");
    }
    // no codex / claude on PATH: not_checked lines that say so, never red nor green
    assert_eq!(check(&v, "codex", "hook trust")["status"], "not_checked");
    assert!(check(&v, "codex", "hook trust")["detail"].as_str().unwrap().contains("not on PATH"));
    assert_eq!(check(&v, "claude", "validate")["status"], "not_checked");
    // the token is never printed, in text or JSON
    let text_out = h.run(DOCTOR, &root_arg);
    assert_eq!(text_out.status.code(), Some(0));
    assert!(text(&text_out.stdout).contains("[ok]"));
    // the last line does not call that all green: it names what was not checked
    let last = text(&text_out.stdout).lines().last().unwrap().to_owned();
    assert_eq!(last, "kijito-doctor: nothing red, but 2 check(s) not made (codex hook trust, claude validate): see each [skip] line");
    assert!(!text(&text_out.stdout).contains(server.token()) && !v.to_string().contains(server.token()));
    // --offline skips the GET (not checked), still nothing red
    let (code, v, _) = doctor_json(&h, &[root_arg[0], root_arg[1], "--offline"]);
    assert_eq!(code, 0);
    assert_eq!(check(&v, "all", "api")["status"], "not_checked");
    // --root may name one host's plugin root
    let (code, v, _) = doctor_json(&h, &["--root", s(&codex), "--host", "codex", "--offline"]);
    assert_eq!(code, 0, "{v:#}");

    let red = |v: &Value, host: &str, name: &str, fix_needle: &str| {
        let c = check(v, host, name);
        assert_eq!(c["status"], "red", "{host} {name}: {v:#}");
        let fix = c["fix"].as_str().unwrap_or_default();
        assert!(fix.contains(fix_needle), "{host} {name}: fix {fix:?} lacks {fix_needle:?}");
        assert_eq!(v["ok"], false);
    };
    let offline = [root_arg[0], root_arg[1], "--offline"];

    // 1. bad permissions: a group-writable bin/
    fs::set_permissions(codex.join("bin"), fs::Permissions::from_mode(0o775)).unwrap();
    let (code, v, err) = doctor_json(&h, &offline);
    assert_eq!(code, 1);
    assert!(err.starts_with("kijito_doctor_failed:red"), "{err}");
    red(&v, "codex", "layout", "chmod go-w");
    fs::set_permissions(codex.join("bin"), fs::Permissions::from_mode(0o755)).unwrap();

    // 2. a hook binary missing
    fs::remove_file(claude.join("bin/postcompact")).unwrap();
    let (code, v, _) = doctor_json(&h, &offline);
    assert_eq!(code, 1);
    red(&v, "claude", "hook binaries", "install.sh --prefix");
    assert!(check(&v, "claude", "hook binaries")["detail"].as_str().unwrap().contains("postcompact is missing"));
    assert_eq!(check(&v, "codex", "hook binaries")["status"], "green");
    kijito_testkit::link_executable(Path::new(&support::bin("postcompact")), &claude.join("bin/postcompact"));

    // 3. a relative path in hooks.json
    let hj = codex.join("hooks/hooks.json");
    let good = fs::read_to_string(&hj).unwrap();
    fs::write(&hj, good.replacen(&format!("{}/bin/precompact", s(&codex)), "bin/precompact", 1)).unwrap();
    let (code, v, _) = doctor_json(&h, &offline);
    assert_eq!(code, 1);
    red(&v, "codex", "hooks.json", "absolute paths");
    assert!(check(&v, "codex", "hooks.json")["detail"].as_str().unwrap().contains("absolute path"));
    // text output carries the fix line under the red line
    let t = h.run(DOCTOR, &offline);
    let out = text(&t.stdout);
    let line = out.lines().position(|l| l.starts_with("[FAIL] codex") && l.contains("hooks.json")).unwrap();
    assert!(out.lines().nth(line + 1).unwrap().contains("fix: re-run ./install.sh --prefix"), "{out}");
    fs::write(&hj, &good).unwrap();

    // 4. a data dir others can write
    let data = h.home.join(".cache/kijito-qa");
    fs::create_dir_all(&data).unwrap();
    fs::set_permissions(&data, fs::Permissions::from_mode(0o777)).unwrap();
    let (code, v, _) = doctor_json(&h, &offline);
    assert_eq!(code, 1);
    red(&v, "codex", "data dir", &format!("chmod 700 {}", s(&data)));
    fs::set_permissions(&data, fs::Permissions::from_mode(0o700)).unwrap();

    // 5. a config others can read
    fs::set_permissions(h.config(), fs::Permissions::from_mode(0o644)).unwrap();
    let (code, v, _) = doctor_json(&h, &offline);
    assert_eq!(code, 1);
    red(&v, "all", "config", &format!("chmod 600 {}", s(&h.config())));
    fs::set_permissions(h.config(), fs::Permissions::from_mode(0o600)).unwrap();

    // 6. the server gone: the api line names host and port
    let port = server.addr().port();
    let mut server = server;
    server.stop();
    let (code, v, _) = doctor_json(&h, &root_arg);
    assert_eq!(code, 1);
    red(&v, "all", "api", &format!("127.0.0.1 port {port}"));

    // and all green again offline once repaired
    let (code, v, _) = doctor_json(&h, &offline);
    assert_eq!(code, 0, "{v:#}");
}

#[test]
fn doctor_run_from_an_install_checks_that_install_and_only_its_hosts() {
    // install.sh --host claude into a prefix, then the installed
    // kijito-doctor by its absolute path, without --root or --host: it checks
    // that prefix (not ~/.local/share/kijito-qa) and only Claude; Codex is
    // "not installed", not red.
    let server = LocalServer::start();
    let h = Home::new();
    create(&h, &server);
    let prefix = h.path("prefix");
    let claude = install_root(&prefix, "claude");
    let doctor = claude.join("bin/kijito-doctor");
    kijito_testkit::copy_executable(Path::new(DOCTOR), &doctor);
    let o = h.run(s(&doctor), &["--json", "--offline"]);
    let v: Value = serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {} {}", text(&o.stdout), text(&o.stderr)));
    assert_eq!(o.status.code(), Some(0), "{v:#}");
    assert_eq!(v["prefix"], s(&prefix));
    for name in ["layout", "hooks.json", "hook binaries", "data dir"] {
        assert_eq!(check(&v, "claude", name)["status"], "green", "claude {name}: {v:#}");
    }
    let codex = check(&v, "codex", "layout");
    assert_eq!(codex["status"], "not_checked", "{v:#}");
    assert!(codex["detail"].as_str().unwrap().contains("not installed"), "{codex}");
    let codex_lines: Vec<&Value> = v["checks"].as_array().unwrap().iter().filter(|c| c["host"] == "codex").collect();
    assert_eq!(codex_lines.len(), 1, "nothing else is checked for codex: {v:#}");
    // what it could not check says so: claude is not on PATH, --offline
    assert_eq!(check(&v, "claude", "validate")["status"], "not_checked");
    assert_eq!(check(&v, "all", "api")["status"], "not_checked");
    // --host codex asked for explicitly is red where nothing is installed
    let o = h.run(s(&doctor), &["--json", "--offline", "--host", "codex"]);
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(check(&v, "codex", "layout")["status"], "red");
}

#[test]
fn doctor_says_where_nothing_is_installed() {
    let h = Home::new();
    let o = h.run(DOCTOR, &["--offline"]);
    assert_eq!(o.status.code(), Some(1));
    let out = text(&o.stdout);
    assert!(out.contains("no plugin root at") && out.contains("fix: run ./install.sh --prefix"), "{out}");
    // no config and no token: yellow config, red token file naming kijito-qa's default path
    assert!(out.contains(".config/kijito-qa/token"), "{out}");
    let u = h.run(DOCTOR, &["--host=codex"]);
    assert_eq!(u.status.code(), Some(2));
    assert!(text(&u.stderr).contains("write `--host VALUE`"));
}

// ------------------------------------------------ Claude Code plugin options

fn session_start(h: &Home, host: &str, env: &[(&str, &str)]) -> String {
    let stdin = serde_json::json!({"session_id": "0b5e55ed-c0de-4a11-9e57-000000000001", "transcript_path": s(&h.path("t.jsonl")), "cwd": s(&h.home), "hook_event_name": "SessionStart", "source": "startup"}).to_string();
    fs::write(h.path("t.jsonl"), "{}\n").unwrap();
    let data = h.path("data");
    let mut c = Command::new(support::bin("session-hook"));
    c.args(["--host", host, "--expect", "SessionStart", "--data-dir", s(&data)])
        .env("HOME", &h.home)
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("CLAUDE_PLUGIN_OPTION_POINTER_ID")
        .env_remove("CLAUDE_PLUGIN_OPTION_LOCK_MESSAGE_ID")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in env {
        c.env(k, v);
    }
    let mut child = c.spawn().unwrap();
    use std::io::Write;
    child.stdin.take().unwrap().write_all(stdin.as_bytes()).unwrap();
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(0));
    text(&o.stdout)
}

#[test]
fn claude_hooks_take_the_pointer_ids_from_plugin_options_unless_the_config_has_them() {
    let h = Home::new();
    let opts = [("CLAUDE_PLUGIN_OPTION_POINTER_ID", "21813"), ("CLAUDE_PLUGIN_OPTION_LOCK_MESSAGE_ID", "77")];
    let out = session_start(&h, "claude", &opts);
    assert!(out.contains("Pointer id 21813, lock message id 77."), "{out}");
    // Codex hooks ignore Claude Code's variables
    let out = session_start(&h, "codex", &opts);
    assert!(out.contains("No pointer is configured"), "{out}");
    // the config file wins
    let config = support::write_config_file(&h.home.join(".config"), "config.json", br#"{"pointerId":5,"lockMessageId":6}"#);
    let out = session_start(&h, "claude", &opts);
    assert!(out.contains("Pointer id 5, lock message id 6."), "{out}");
    // a malformed option is a configuration problem, said so
    fs::remove_file(config).unwrap();
    let out = session_start(&h, "claude", &[("CLAUDE_PLUGIN_OPTION_POINTER_ID", "12; rm -rf /")]);
    assert!(out.contains("config_plugin_option_invalid") && !out.contains("rm -rf"), "{out}");
}

// ------------------------------------------------ doctor: Claude Code plugin options, token file

fn doctor_env(h: &Home, args: &[&str], env: &[(&str, &str)]) -> (i32, Value) {
    let mut a = args.to_vec();
    a.push("--json");
    let o = h.run_env(DOCTOR, &a, env);
    (o.status.code().unwrap(), serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&o.stdout))))
}

/// The config `kijito-setup --create` wrote, without the two ids (a user who
/// set them only in Claude Code's plugin options).
fn drop_ids_from_config(h: &Home) {
    let mut c: Value = serde_json::from_slice(&fs::read(h.config()).unwrap()).unwrap();
    let o = c.as_object_mut().unwrap();
    o.remove("pointerId");
    o.remove("lockMessageId");
    kijito_files::private::write_atomic(&h.config(), c.to_string().as_bytes()).unwrap();
}

/// User settings shaped as `claude plugin configure kijito-qa@local-test --values-stdin`
/// writes them (Claude Code 2.1.328, measured): numbers under pluginConfigs[id].options.
fn claude_settings(dir: &Path, options: Value) -> PathBuf {
    fs::create_dir_all(dir).unwrap();
    let p = dir.join("settings.json");
    let v = serde_json::json!({"enabledPlugins": {"kijito-qa@local-test": true}, "pluginConfigs": {"kijito-qa@local-test": {"options": options}}});
    fs::write(&p, serde_json::to_string_pretty(&v).unwrap()).unwrap();
    p
}

#[test]
fn doctor_reads_the_claude_plugin_options_where_claude_code_stores_them() {
    let server = LocalServer::start();
    let h = Home::new();
    let ids = create(&h, &server);
    let (pointer, lock) = (ids["pointerId"].as_u64().unwrap(), ids["lockMessageId"].as_u64().unwrap());
    let prefix = h.path("prefix");
    install_root(&prefix, "claude");
    let args = ["--root", s(&prefix), "--host", "claude"];
    // The config file names the pointer: the options are not needed (the file wins).
    let (code, v) = doctor_env(&h, &args, &[]);
    assert_eq!(code, 0, "{v:#}");
    assert_eq!(check(&v, "claude", "plugin options")["status"], "green");
    assert!(check(&v, "claude", "plugin options")["detail"].as_str().unwrap().contains("not needed"));

    // No ids anywhere: yellow, with the command that sets them; exit 0 (warnings do not stop hooks).
    drop_ids_from_config(&h);
    let (code, v) = doctor_env(&h, &args, &[]);
    assert_eq!(code, 0, "{v:#}");
    let c = check(&v, "claude", "plugin options");
    assert_eq!(c["status"], "yellow", "{v:#}");
    assert!(c["detail"].as_str().unwrap().contains(s(&h.home.join(".claude/settings.json"))), "{c}");
    assert!(c["fix"].as_str().unwrap().contains("claude plugin configure kijito-qa@<marketplace> --values-stdin"), "{c}");
    assert_eq!(check(&v, "all", "api")["status"], "yellow");

    // Set in ~/.claude/settings.json: green, naming the file and the plugin id; the api check
    // reads the pointer the hooks would use.
    let settings = claude_settings(&h.home.join(".claude"), serde_json::json!({"pointer_id": pointer, "lock_message_id": lock}));
    let (code, v) = doctor_env(&h, &args, &[]);
    assert_eq!(code, 0, "{v:#}");
    let c = check(&v, "claude", "plugin options");
    assert_eq!(c["status"], "green", "{v:#}");
    let d = c["detail"].as_str().unwrap();
    assert!(
        d.contains(&format!("pointer_id {pointer}, lock_message_id {lock}"))
            && d.contains(s(&settings))
            && d.contains("kijito-qa@local-test"),
        "{d}"
    );
    assert_eq!(check(&v, "all", "api")["status"], "green", "{v:#}");
    assert!(check(&v, "all", "api")["detail"].as_str().unwrap().contains(&format!("/api/memory/{pointer}")));

    // CLAUDE_CONFIG_DIR moves the user settings: only that directory counts (the doctor runs in
    // HOME, where ~/.claude/settings.json would also be the project settings, so move it aside).
    let aside = h.path("settings.aside");
    fs::rename(&settings, &aside).unwrap();
    let other = h.path("claude-config");
    let (_, v) = doctor_env(&h, &args, &[("CLAUDE_CONFIG_DIR", s(&other))]);
    assert_eq!(check(&v, "claude", "plugin options")["status"], "yellow");
    assert!(check(&v, "claude", "plugin options")["detail"].as_str().unwrap().contains(s(&other.join("settings.json"))));
    claude_settings(&other, serde_json::json!({"pointer_id": pointer.to_string(), "lock_message_id": lock.to_string()}));
    let (_, v) = doctor_env(&h, &args, &[("CLAUDE_CONFIG_DIR", s(&other))]);
    assert_eq!(check(&v, "claude", "plugin options")["status"], "green", "{v:#}");
    fs::rename(&aside, &settings).unwrap();

    // Only one option set: yellow, the fix keeps the known value and names the installed plugin id.
    claude_settings(&h.home.join(".claude"), serde_json::json!({"pointer_id": pointer}));
    let (_, v) = doctor_env(&h, &args, &[]);
    let c = check(&v, "claude", "plugin options");
    assert_eq!(c["status"], "yellow", "{v:#}");
    assert!(c["detail"].as_str().unwrap().contains("no lock_message_id"), "{c}");
    let fix = c["fix"].as_str().unwrap();
    assert!(
        fix.contains(&format!("{{\"pointer_id\":\"{pointer}\",\"lock_message_id\":\"M\"}}"))
            && fix.contains("claude plugin configure kijito-qa@local-test --values-stdin"),
        "{fix}"
    );

    // A value the hooks would refuse: red (exit 1), never echoed.
    claude_settings(&h.home.join(".claude"), serde_json::json!({"pointer_id": "12; rm -rf /", "lock_message_id": lock}));
    let (code, v) = doctor_env(&h, &args, &[]);
    assert_eq!(code, 1, "{v:#}");
    let c = check(&v, "claude", "plugin options");
    assert_eq!(c["status"], "red", "{v:#}");
    assert!(c["detail"].as_str().unwrap().contains("config_plugin_option_invalid") && !c.to_string().contains("rm -rf"), "{c}");

    // A settings file that is a symlink is not followed: reported, yellow.
    fs::remove_file(&settings).unwrap();
    let real = claude_settings(&h.path("elsewhere"), serde_json::json!({"pointer_id": pointer, "lock_message_id": lock}));
    std::os::unix::fs::symlink(&real, &settings).unwrap();
    let (_, v) = doctor_env(&h, &args, &[]);
    let c = check(&v, "claude", "plugin options");
    assert_eq!(c["status"], "yellow", "{v:#}");
    assert!(c["detail"].as_str().unwrap().contains("symlink"), "{c}");
}

/// A missing token file is red: hooks still fire, but `qa-gate record` needs
/// the one live pointer read, so no QA cycle can be recorded (docs/configuration.md).
#[test]
fn doctor_is_red_without_the_token_file_and_prints_the_fix() {
    let server = LocalServer::start();
    let h = Home::new();
    create(&h, &server);
    let prefix = h.path("prefix");
    install_root(&prefix, "codex");
    let token = h.path("my-token");
    let mut c: Value = serde_json::from_slice(&fs::read(h.config()).unwrap()).unwrap();
    c["tokenFile"] = Value::String(s(&token).to_owned());
    kijito_files::private::write_atomic(&h.config(), c.to_string().as_bytes()).unwrap();
    let (code, v) = doctor_env(&h, &["--root", s(&prefix), "--host", "codex", "--offline"], &[]);
    assert_eq!(code, 1, "{v:#}");
    let t = check(&v, "all", "token file");
    assert_eq!(t["status"], "red");
    assert_eq!(t["fix"].as_str().unwrap(), format!("put your token in {0} (one line) and make it owner-only: `chmod 600 {0}`", s(&token)));
    // the hook lines stay green: hooks fire without a token
    for name in ["layout", "hooks.json", "hook binaries", "data dir"] {
        assert_eq!(check(&v, "codex", name)["status"], "green", "{name}");
    }
    let o = h.run(DOCTOR, &["--root", s(&prefix), "--host", "codex", "--offline"]);
    let out = text(&o.stdout);
    assert!(out.contains(&format!("fix: put your token in {}", s(&token))) && out.contains("1 red line"), "{out}");
    // with the token in place (owner-only) it is green again
    fs::copy(server.token_file(), &token).unwrap();
    fs::set_permissions(&token, fs::Permissions::from_mode(0o600)).unwrap();
    let (code, v) = doctor_env(&h, &["--root", s(&prefix), "--host", "codex", "--offline"], &[]);
    assert_eq!(code, 0, "{v:#}");
}

// ------------------------------------------------ permissions (kijito-setup --allow-helpers)

/// The agent's helpers in `<root>/bin` as install.sh puts them (hard links to the built binaries).
pub(crate) fn link_helpers(root: &Path) {
    for b in ["pointer-digest", "pointer-publish", "pointer-snapshot", "qa-gate", "kijito-compact", "memory-latch", "wake-check"] {
        let src = support::bin(b);
        kijito_testkit::link_executable(Path::new(&src), &root.join("bin").join(b));
    }
}

fn mode(p: &Path) -> u32 {
    fs::symlink_metadata(p).unwrap().permissions().mode() & 0o777
}

#[test]
fn allow_helpers_shows_then_merges_the_claude_rules_into_the_user_settings() {
    let h = Home::new();
    let prefix = h.path("prefix");
    let root = install_root(&prefix, "claude");
    link_helpers(&root);
    let bin = root.join("bin");
    let settings = h.home.join(".claude/settings.json");
    let doctor_perm = |h: &Home| {
        let (_, v) = doctor_env(h, &["--host", "claude", "--root", s(&prefix), "--offline"], &[]);
        check(&v, "claude", "permissions").clone()
    };
    // the doctor: yellow with the exact fix while the rules are missing
    let c = doctor_perm(&h);
    assert_eq!(c["status"], "yellow", "{c}");
    assert!(
        c["detail"]
            .as_str()
            .unwrap()
            .contains(&format!("{n} of {n} helper commands have no allow rule", n = kijito_setup::permissions::AGENT_COMMANDS.len())),
        "{c}"
    );
    assert_eq!(
        c["fix"].as_str().unwrap(),
        format!("kijito-setup --allow-helpers --host claude --root {} --write (without --write it shows the rules first)", s(&root))
    );

    // without --write: the rules and where they go; nothing written
    let o = h.run(SETUP, &["--allow-helpers", "--host", "claude", "--root", s(&prefix)]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let out = text(&o.stdout);
    for r in [
        format!("  Bash({}/pointer-digest:*)", s(&bin)),
        format!("  Bash({}/qa-gate record:*)", s(&bin)),
        format!("  Bash({}/kijito-compact request:*)", s(&bin)),
        format!("  Bash({}/memory-latch consent request:*)", s(&bin)),
    ] {
        assert!(out.lines().any(|l| l == r), "{r} missing from {out}");
    }
    assert!(out.contains(s(&settings)) && out.contains("nothing written"), "{out}");
    for never in [
        "session-hook",
        "prompt-hook",
        "pretool-hook",
        "precompact",
        "postcompact",
        "kijito-setup:",
        "kijito-local",
        "worker",
        "consent confirm",
    ] {
        assert!(!out.lines().filter(|l| l.starts_with("  Bash(")).any(|l| l.contains(never)), "{never} allowed: {out}");
    }
    assert!(!settings.exists() && !h.home.join(".claude").exists(), "written without --write");

    // --write merges into the user's settings and keeps everything else
    fs::create_dir_all(h.home.join(".claude")).unwrap();
    let before = r#"{"theme":"dark","permissions":{"allow":["Read"],"deny":["Bash(rm:*)"]},"pluginConfigs":{"kijito-qa@inline":{"options":{"pointer_id":7}}}}"#;
    fs::write(&settings, before).unwrap();
    fs::set_permissions(&settings, fs::Permissions::from_mode(0o644)).unwrap();
    let o = h.run(SETUP, &["--allow-helpers", "--host", "claude", "--root", s(&prefix), "--write"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert!(
        text(&o.stdout).contains(&format!("merged {} new rule(s)", kijito_setup::permissions::AGENT_COMMANDS.len())),
        "{}",
        text(&o.stdout)
    );
    let v: Value = serde_json::from_slice(&fs::read(&settings).unwrap()).unwrap();
    assert_eq!(v["theme"], "dark");
    assert_eq!(v["permissions"]["deny"], serde_json::json!(["Bash(rm:*)"]));
    assert_eq!(v["pluginConfigs"]["kijito-qa@inline"]["options"]["pointer_id"], 7);
    let allow: Vec<&str> = v["permissions"]["allow"].as_array().unwrap().iter().map(|x| x.as_str().unwrap()).collect();
    assert_eq!(allow.len(), 1 + kijito_setup::permissions::AGENT_COMMANDS.len(), "the user's own \"Read\" rule and ours");
    assert_eq!(allow[0], "Read");
    assert!(allow.contains(&format!("Bash({}/wake-check:*)", s(&bin)).as_str()));
    assert_eq!(mode(&settings), 0o600);
    let leftovers: Vec<_> = fs::read_dir(h.home.join(".claude")).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(leftovers.len(), 1, "temp files left: {leftovers:?}");
    assert_eq!(doctor_perm(&h)["status"], "green");

    // again: nothing to write, the file byte for byte the same
    let bytes = fs::read(&settings).unwrap();
    let o = h.run(SETUP, &["--allow-helpers", "--host", "claude", "--root", s(&root), "--write"]);
    assert!(
        text(&o.stdout).contains(&format!("all {} rules are already in", kijito_setup::permissions::AGENT_COMMANDS.len())),
        "{}",
        text(&o.stdout)
    );
    assert_eq!(fs::read(&settings).unwrap(), bytes);

    // CLAUDE_CONFIG_DIR is where Claude Code reads user settings then
    let cfg = h.path("claude-config");
    let o = h.run_env(SETUP, &["--allow-helpers", "--host", "claude", "--root", s(&prefix), "--write"], &[("CLAUDE_CONFIG_DIR", s(&cfg))]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert_eq!(mode(&cfg), 0o700);
    assert_eq!(mode(&cfg.join("settings.json")), 0o600);

    // never through a symlink, never over a file Claude Code would not parse
    let target = h.path("elsewhere.json");
    fs::write(&target, "{}").unwrap();
    fs::remove_file(&settings).unwrap();
    std::os::unix::fs::symlink(&target, &settings).unwrap();
    let o = h.run(SETUP, &["--allow-helpers", "--host", "claude", "--root", s(&prefix), "--write"]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(first_line(&o), "kijito_setup_failed:settings_unreadable");
    assert!(text(&o.stderr).contains("symlink"), "{}", text(&o.stderr));
    assert_eq!(fs::read_to_string(&target).unwrap(), "{}");
    fs::remove_file(&settings).unwrap();
    fs::write(&settings, "{\"permissions\": []}").unwrap();
    let o = h.run(SETUP, &["--allow-helpers", "--host", "claude", "--root", s(&prefix), "--write"]);
    assert_eq!(first_line(&o), "kijito_setup_failed:settings_invalid");
    assert_eq!(fs::read_to_string(&settings).unwrap(), "{\"permissions\": []}");
}

#[test]
fn allow_helpers_writes_kijito_qas_own_codex_rules_file() {
    let h = Home::new();
    let prefix = h.path("prefix");
    let root = install_root(&prefix, "codex");
    link_helpers(&root);
    let codex_home = h.path("codex-home");
    fs::create_dir(&codex_home).unwrap();
    fs::set_permissions(&codex_home, fs::Permissions::from_mode(0o700)).unwrap();
    let env = [("CODEX_HOME", s(&codex_home))];
    let perm = |h: &Home| {
        let (_, v) = doctor_env(h, &["--host", "codex", "--root", s(&prefix), "--offline"], &env);
        check(&v, "codex", "permissions").clone()
    };
    let c = perm(&h);
    assert_eq!(c["status"], "yellow", "{c}");
    assert!(
        c["fix"].as_str().unwrap().starts_with(&format!("kijito-setup --allow-helpers --host codex --root {} --write", s(&root))),
        "{c}"
    );

    let file = codex_home.join("rules/kijito-qa.rules");
    let o = h.run_env(SETUP, &["--allow-helpers", "--host", "codex", "--root", s(&prefix)], &env);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let out = text(&o.stdout);
    assert!(out.contains(&format!("  prefix_rule(pattern=[\"{}/bin/qa-gate\", \"record\"], decision=\"allow\")", s(&root))), "{out}");
    assert!(out.contains(&format!("alias codex-qa='{}/bin/kijito-compact codex --'", s(&root))), "{out}");
    assert!(!file.exists());

    let o = h.run_env(SETUP, &["--allow-helpers", "--host", "codex", "--root", s(&prefix), "--write"], &env);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let rules = fs::read_to_string(&file).unwrap();
    let lines: Vec<&str> = rules.lines().filter(|l| !l.starts_with('#')).collect();
    assert_eq!(lines.len(), kijito_setup::permissions::AGENT_COMMANDS.len(), "{rules}");
    assert!(
        lines.iter().all(|l| l.starts_with(&format!("prefix_rule(pattern=[\"{}/bin/", s(&root))) && l.ends_with("], decision=\"allow\")")),
        "{rules}"
    );
    assert!(
        !rules.contains("kijito-local") && !rules.contains("session-hook") && !rules.contains("\"worker\"") && !rules.contains("\"codex\""),
        "{rules}"
    );
    assert_eq!(mode(&file), 0o600);
    assert_eq!(mode(&codex_home.join("rules")), 0o700);
    assert_eq!(perm(&h)["status"], "green");
    // a user's own rules file next to ours is left alone and still read
    fs::write(codex_home.join("rules/mine.rules"), "prefix_rule(pattern=[\"git\", \"status\"], decision=\"allow\")\n").unwrap();
    let o = h.run_env(SETUP, &["--allow-helpers", "--host", "codex", "--root", s(&prefix), "--write"], &env);
    assert!(
        text(&o.stdout).contains(&format!("all {} rules are already in", kijito_setup::permissions::AGENT_COMMANDS.len())),
        "{}",
        text(&o.stdout)
    );
    assert_eq!(
        fs::read_to_string(codex_home.join("rules/mine.rules")).unwrap(),
        "prefix_rule(pattern=[\"git\", \"status\"], decision=\"allow\")\n"
    );
}

#[test]
fn allow_helpers_refuses_a_root_without_the_helpers_and_bad_usage() {
    let h = Home::new();
    let prefix = h.path("prefix");
    install_root(&prefix, "claude"); // hook binaries only
    let o = h.run(SETUP, &["--allow-helpers", "--host", "claude", "--root", s(&prefix), "--write"]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(first_line(&o), "kijito_setup_failed:helpers_not_installed");
    assert!(text(&o.stderr).contains("pointer-digest"), "{}", text(&o.stderr));
    assert!(!h.home.join(".claude").exists());
    for (args, code) in [
        (&["--allow-helpers"][..], "missing_flag"),
        (&["--allow-helpers", "--host", "vim"][..], "invalid_host"),
        (&["--write"][..], "conflicting_flags"),
        (&["--allow-helpers", "--host", "claude", "--force"][..], "conflicting_flags"),
        (&["--codex-alias", "--write"][..], "conflicting_flags"),
    ] {
        let o = h.run(SETUP, args);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        assert_eq!(first_line(&o), format!("kijito_setup_failed:{code}"), "{args:?}");
    }
}

#[test]
fn doctor_says_what_to_do_about_codex_in_its_shared_daemon_mode() {
    let h = Home::new();
    let prefix = h.path("prefix");
    let root = install_root(&prefix, "codex");
    // a real process of this user whose argv is a Codex shared daemon's (`app-server … --managed-daemon`)
    let mut daemon = Command::new("sh").args(["-c", "sleep 60; :", "app-server", "--managed-daemon"]).stdin(Stdio::null()).spawn().unwrap();
    let pid = daemon.id().to_string();
    let (_, v) = doctor_env(&h, &["--host", "codex", "--root", s(&prefix), "--offline"], &[]);
    daemon.kill().unwrap();
    daemon.wait().unwrap();
    let c = check(&v, "codex", "compaction");
    assert_eq!(c["status"], "yellow", "{v:#}");
    let detail = c["detail"].as_str().unwrap();
    assert!(detail.starts_with("codex_daemon:") && detail.contains(&pid) && detail.contains("no_safe_trigger"), "{detail}");
    let fix = c["fix"].as_str().unwrap();
    assert!(
        fix.contains("`codex --no-daemon` inside tmux")
            && fix.contains(&format!("alias codex-qa='{}/bin/kijito-compact codex --'", s(&root))),
        "{fix}"
    );
    // yellow, never red: the hooks themselves are fine
    assert!(v["checks"].as_array().unwrap().iter().filter(|c| c["host"] == "codex").all(|c| c["status"] != "red"), "{v:#}");
    // kijito-setup prints the same one-line alias
    let o = h.run(SETUP, &["--codex-alias", "--root", s(&prefix)]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert_eq!(text(&o.stdout), format!("alias codex-qa='{}/bin/kijito-compact codex --'\n", s(&root)));
    assert!(text(&o.stderr).contains("codex --no-daemon"));
}

// ------------------------------------------------ sandbox (kijito-setup --sandbox)

/// Claude Code: the doctor's `sandbox` line is yellow with the fix; the
/// command shows the change and writes nothing; `--write` merges it into the
/// user settings (0600, every other setting kept, the helpers excluded, the
/// latch and kijito-qa's dirs write-denied); the doctor turns green; a second
/// `--write` changes nothing; `--uninstall --write` gives the user's settings back.
#[test]
fn sandbox_shows_writes_and_takes_out_the_claude_code_sandbox_settings() {
    let h = Home::new();
    let prefix = h.path("prefix");
    let root = install_root(&prefix, "claude");
    let settings = h.home.join(".claude/settings.json");
    fs::create_dir_all(settings.parent().unwrap()).unwrap();
    let user = r#"{"model":"opus","permissions":{"allow":["Bash(ls:*)"]},"sandbox":{"excludedCommands":["docker *"]}}"#;
    kijito_files::private::write_atomic(&settings, user.as_bytes()).unwrap();
    let doctor_sandbox = |h: &Home| {
        let (_, v) = doctor_env(h, &["--host", "claude", "--root", s(&prefix), "--offline"], &[]);
        check(&v, "claude", "sandbox").clone()
    };
    let c = doctor_sandbox(&h);
    assert_eq!(c["status"], "yellow", "{c}");
    assert_eq!(
        c["fix"].as_str().unwrap(),
        format!("kijito-setup --sandbox --host claude --root {} --write (without --write it shows the change first)", s(&prefix))
    );
    // shown, not written
    let o = h.run(SETUP, &["--sandbox", "--host", "claude", "--root", s(&prefix)]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let out = text(&o.stdout);
    let helper = format!("{}/bin/pointer-digest *", s(&root));
    assert!(out.contains(&format!("+ sandbox.excludedCommands: {helper}")), "{out}");
    assert!(out.contains("= sandbox.enabled: true") && out.contains("= sandbox.allowUnsandboxedCommands: false"), "{out}");
    assert!(out.contains(&format!("kijito-setup --sandbox --host claude --root {} --write", s(&prefix))), "{out}");
    assert_eq!(fs::read_to_string(&settings).unwrap(), user, "nothing written without --write");
    // written: merged, 0600, atomic (no temp file left), the user's keys kept
    let o = h.run(SETUP, &["--sandbox", "--host", "claude", "--root", s(&prefix), "--write"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert_eq!(mode(&settings), 0o600);
    assert_eq!(fs::read_dir(settings.parent().unwrap()).unwrap().count(), 1, "only settings.json in the dir");
    let v: Value = serde_json::from_slice(&fs::read(&settings).unwrap()).unwrap();
    assert_eq!(v["model"], "opus");
    assert_eq!(v["permissions"]["allow"][0], "Bash(ls:*)");
    let sb = &v["sandbox"];
    assert_eq!(
        (sb["enabled"].as_bool(), sb["failIfUnavailable"].as_bool(), sb["allowUnsandboxedCommands"].as_bool()),
        (Some(true), Some(true), Some(false))
    );
    let excluded: Vec<&str> = sb["excludedCommands"].as_array().unwrap().iter().map(|x| x.as_str().unwrap()).collect();
    assert_eq!(excluded[0], "docker *");
    assert_eq!(excluded.len(), 1 + kijito_setup::permissions::AGENT_COMMANDS.len());
    assert!(excluded.contains(&format!("{}/bin/memory-latch consent request *", s(&root)).as_str()));
    assert!(!excluded.iter().any(|e| e.contains("session-hook") || e.contains("kijito-setup") || e.contains(" approve")), "{excluded:?}");
    let deny: Vec<&str> = sb["filesystem"]["denyWrite"].as_array().unwrap().iter().map(|x| x.as_str().unwrap()).collect();
    for p in [
        prefix.clone(),
        h.home.join(".config/kijito-qa"),
        h.home.join(".local/state/kijito-qa"),
        h.home.join(".cache/kijito-qa"),
        h.home.join(".claude"),
        h.home.join(".ssh"),
        h.home.join(".bashrc"),
    ] {
        assert!(deny.contains(&s(&p)), "{} in {deny:?}", p.display());
    }
    let rules: Vec<&str> = v["permissions"]["deny"].as_array().unwrap().iter().map(|x| x.as_str().unwrap()).collect();
    assert!(rules.contains(&"Edit(.memory-latch/**)") && rules.contains(&"Edit(.git/hooks/**)"), "{rules:?}");
    assert_eq!(doctor_sandbox(&h)["status"], "green");
    // again: nothing to write
    let before = fs::read(&settings).unwrap();
    let o = h.run(SETUP, &["--sandbox", "--host", "claude", "--root", s(&prefix), "--write"]);
    assert!(text(&o.stdout).contains("already holds them all"), "{}", text(&o.stdout));
    assert_eq!(fs::read(&settings).unwrap(), before);
    // taken out: the user's settings as they were
    let o = h.run(SETUP, &["--sandbox", "--host", "claude", "--root", s(&prefix), "--uninstall", "--write"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let back: Value = serde_json::from_slice(&fs::read(&settings).unwrap()).unwrap();
    assert_eq!(back, serde_json::from_str::<Value>(user).unwrap());
    assert_eq!(doctor_sandbox(&h)["status"], "yellow");
    // a settings file that is not JSON is refused, and not touched
    kijito_files::private::write_atomic(&settings, b"{oops").unwrap();
    let o = h.run(SETUP, &["--sandbox", "--host", "claude", "--root", s(&prefix), "--write"]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(first_line(&o), "kijito_setup_failed:settings_invalid");
    assert_eq!(fs::read(&settings).unwrap(), b"{oops");
}

/// Codex: the permission profile kijito-qa in `$CODEX_HOME/config.toml`
/// (`default_permissions` first, the `[permissions.kijito-qa]` tables last;
/// docs/protocol.md §12); the user's own `sandbox_mode`, which would win over
/// it, kept as a comment and put back by `--uninstall`; every other line
/// kept; 0600; the doctor's line.
#[test]
fn sandbox_sets_the_codex_permission_profile_and_gives_the_users_mode_back() {
    let h = Home::new();
    let prefix = h.path("prefix");
    install_root(&prefix, "codex");
    let codex_home = h.path("codex-home");
    fs::create_dir(&codex_home).unwrap();
    let cfg = codex_home.join("config.toml");
    let user = "model = \"gpt\"\nsandbox_mode = \"danger-full-access\"\n\n[features]\nhooks = true\n";
    fs::write(&cfg, user).unwrap();
    let env = [("CODEX_HOME", s(&codex_home))];
    let doctor_sandbox = |h: &Home| {
        let (_, v) = doctor_env(h, &["--host", "codex", "--root", s(&prefix), "--offline"], &env);
        check(&v, "codex", "sandbox").clone()
    };
    let c = doctor_sandbox(&h);
    assert_eq!(c["status"], "yellow", "{c}");
    assert!(c["detail"].as_str().unwrap().contains("danger-full-access"), "{c}");
    let o = h.run_env(SETUP, &["--sandbox", "--host", "codex", "--root", s(&prefix)], &env);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert!(text(&o.stdout).contains("sandbox_mode: the user's line kept as a comment"), "{}", text(&o.stdout));
    assert!(text(&o.stdout).contains("+ default_permissions = \"kijito-qa\""), "{}", text(&o.stdout));
    assert_eq!(fs::read_to_string(&cfg).unwrap(), user);
    let o = h.run_env(SETUP, &["--sandbox", "--host", "codex", "--root", s(&prefix), "--write"], &env);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let t = fs::read_to_string(&cfg).unwrap();
    assert!(t.starts_with("default_permissions = \"kijito-qa\" # kijito-setup --sandbox\nmodel = \"gpt\"\n"), "{t}");
    assert!(t.contains("\n# kijito-setup --sandbox replaced: sandbox_mode = \"danger-full-access\"\n"), "{t}");
    assert!(
        t.contains("[features]\nhooks = true\n\n# kijito-setup --sandbox: the kijito-qa permission profile")
            && t.ends_with(
                "[permissions.kijito-qa]\nextends = \":workspace\"\n[permissions.kijito-qa.filesystem.\":workspace_roots\"]\n\".memory-latch\" = \"read\"\n"
            ),
        "{t}"
    );
    assert_eq!(mode(&cfg), 0o600);
    assert_eq!(doctor_sandbox(&h)["status"], "green");
    let o = h.run_env(SETUP, &["--sandbox", "--host", "codex", "--root", s(&prefix), "--uninstall", "--write"], &env);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert_eq!(fs::read_to_string(&cfg).unwrap(), user);
    // usage
    for (args, code) in [
        (&["--sandbox"][..], "missing_flag"),
        (&["--sandbox", "--host", "vim"][..], "invalid_host"),
        (&["--sandbox", "--host", "codex", "--force"][..], "conflicting_flags"),
        (&["--uninstall"][..], "conflicting_flags"),
    ] {
        let o = h.run_env(SETUP, args, &env);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        assert!(first_line(&o).ends_with(code), "{args:?}: {}", first_line(&o));
    }
}

/// The exclusion is not the escape: Claude Code 2.1.328 runs a line outside
/// the sandbox only when every command of it matches an excluded
/// `<helper> *` (measured, docs/protocol.md §12); every such line the agent
/// could send that is not exactly one helper command is denied by the
/// PreToolUse guard before the host matches it.
#[test]
fn every_line_the_hosts_exclusion_would_run_outside_is_one_helper_or_denied() {
    use kijito_protocol::command::{guard_line, HelperDir, Verdict};
    let dir = support::gate::helper_dir();
    let helpers = HelperDir::new(&dir).unwrap();
    let d = dir.display();
    let one = format!("{d}/pointer-digest --pointer-id 7");
    assert!(matches!(guard_line(&one, Some(&helpers)), Verdict::Helper(_)), "{one}");
    for line in [
        format!("{d}/pointer-digest --pointer-id 7; {d}/pointer-digest --pointer-id 8"),
        format!("{d}/pointer-digest --pointer-id 7 && {d}/memory-latch status"),
        format!("{d}/pointer-digest --pointer-id 7 | {d}/wake-check"),
        format!("LD_PRELOAD=/tmp/x.so {d}/pointer-digest --pointer-id 7"),
        format!("{d}/pointer-digest --pointer-id $(touch /tmp/x)"),
        format!("{d}/pointer-digest --pointer-id 7 > /tmp/x"),
        format!("sh -c '{d}/pointer-digest --pointer-id 7'"),
        format!("{d}/memory-latch consent confirm ACT-23456A"),
    ] {
        assert!(matches!(guard_line(&line, Some(&helpers)), Verdict::Deny(_)), "{line}");
    }
}
