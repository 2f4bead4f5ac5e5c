//! memory-latch through the real binary, real files and permissions.

#![allow(clippy::unwrap_used)]

use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::PathBuf;
use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_memory-latch");

struct Ws {
    _dir: tempfile::TempDir,
    root: PathBuf,
    boot: PathBuf,
}

fn ws() -> Ws {
    let dir = tempfile::tempdir().unwrap();
    fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o700)).unwrap();
    let root = fs::canonicalize(dir.path()).unwrap().join("ws");
    fs::create_dir(&root).unwrap();
    let boot = root.parent().unwrap().join("boot_id");
    fs::write(&boot, "11111111-2222-3333-4444-555555555555\n").unwrap();
    Ws { _dir: dir, root, boot }
}

impl Ws {
    fn run_env(&self, args: &[&str], env: &[(&str, &str)]) -> Output {
        let mut c = Command::new(BIN);
        c.args(args).arg("--workspace").arg(&self.root).env("MEMORY_LATCH_BOOT_ID_FILE", &self.boot).env_remove("MEMORY_LATCH_HMAC_KEY_FILE");
        for (k, v) in env {
            c.env(k, v);
        }
        c.output().unwrap()
    }
    fn run(&self, args: &[&str]) -> Output {
        self.run_env(args, &[])
    }
    fn ok(&self, args: &[&str]) -> String {
        let o = self.run(args);
        assert!(o.status.success(), "{args:?}: {}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8(o.stdout).unwrap()
    }
    fn fails(&self, args: &[&str], code: &str) -> Output {
        let o = self.run(args);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {}", String::from_utf8_lossy(&o.stderr));
        assert_first_line(&o, code);
        o
    }
    fn latch(&self) -> PathBuf {
        self.root.join(".memory-latch")
    }
    fn manifest(&self) -> PathBuf {
        self.latch().join("_manifest.md")
    }
    fn write(&self, name: &str, text: &str) -> String {
        let p = self.root.join(name);
        fs::write(&p, text).unwrap();
        p.to_str().unwrap().to_owned()
    }
    fn init(&self) {
        self.ok(&["init", "--objective", "ship memory-latch", "--next-step", "write the tests"]);
    }
    fn verify_json(&self) -> (i32, serde_json::Value) {
        let o = self.run(&["verify", "--json"]);
        (o.status.code().unwrap(), serde_json::from_slice(&o.stdout).unwrap())
    }
    fn finding_codes(&self) -> Vec<String> {
        let (code, v) = self.verify_json();
        assert_eq!(code, 1, "expected untrusted: {v}");
        assert_eq!(v["trusted"], false);
        v["findings"].as_array().unwrap().iter().map(|f| f["code"].as_str().unwrap().to_owned()).collect()
    }
}

fn assert_first_line(o: &Output, code: &str) {
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.lines().next().unwrap_or(""), format!("kijito_memory_latch_failed:{code}"), "stderr: {err}");
}

fn token_of(out: &str) -> String {
    let at = out.find("ACT-").expect("token printed");
    out[at..at + 10].to_owned()
}

/// Entry blocks of the live manifest (header excluded).
fn blocks(text: &str) -> (String, Vec<String>) {
    let first = text.find("## Entry ").unwrap();
    let header = text[..first].to_owned();
    let body = &text[first..];
    let mut starts: Vec<usize> = body.match_indices("\n## Entry ").map(|(i, _)| i + 1).collect();
    starts.insert(0, 0);
    let mut out = Vec::new();
    for (i, s) in starts.iter().enumerate() {
        out.push(body[*s..starts.get(i + 1).copied().unwrap_or(body.len())].to_owned());
    }
    (header, out)
}

fn three_entries(w: &Ws) {
    w.init();
    w.ok(&["checkpoint", "--known", "the library builds", "--next-step", "run the tests"]);
    w.ok(&["checkpoint", "--decision", "seal history in segments", "--next-step", "write docs"]);
}

#[test]
fn init_checkpoint_status_verify_with_private_files() {
    let w = ws();
    w.init();
    let meta = fs::symlink_metadata(w.latch()).unwrap();
    assert_eq!(meta.mode() & 0o777, 0o700);
    for f in ["_manifest.md", "_manifest.lock", "tokens.json"] {
        assert_eq!(fs::metadata(w.latch().join(f)).unwrap().mode() & 0o777, 0o600, "{f}");
    }
    for d in ["one", "two", "three", "four", "five"] {
        w.ok(&["checkpoint", "--decision", d]);
    }
    let s: serde_json::Value = serde_json::from_str(&w.ok(&["status", "--json"])).unwrap();
    let decisions: Vec<&str> = s["decisions"].as_array().unwrap().iter().map(|d| d["text"].as_str().unwrap()).collect();
    assert_eq!(decisions, ["three", "four", "five"], "status composts to the last 3");
    assert_eq!(s["head"]["seq"], 6);
    assert_eq!(s["head"]["boot_id"], "11111111-2222-3333-4444-555555555555");
    assert_eq!(s["next_single_step"], "write the tests");
    let (code, v) = w.verify_json();
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["trusted"], true);
    assert_eq!(v["mode"], "checksum");
    assert_eq!(v["entries"], 6);
    assert!(v["findings"].as_array().unwrap().is_empty());
    w.fails(&["init", "--objective", "again"], "latch_already_initialised");
}

#[test]
fn one_byte_changed_in_human_text_or_payload_is_detected() {
    for (needle, replacement) in
        [("- known: the library builds", "- known: the library bui1ds"), ("\"next_single_step\":\"run the tests\"", "\"next_single_step\":\"run the tesTs\"")]
    {
        let w = ws();
        three_entries(&w);
        let text = fs::read_to_string(w.manifest()).unwrap();
        assert!(text.contains(needle));
        fs::write(w.manifest(), text.replacen(needle, replacement, 1)).unwrap();
        let codes = w.finding_codes();
        assert!(codes.iter().any(|c| c == "entry_rendering_mismatch" || c == "payload_hash_mismatch"), "{codes:?}");
        // never write on top of a manifest that fails verification
        let before = fs::read(w.manifest()).unwrap();
        w.fails(&["checkpoint", "--next-step", "x"], "latch_untrusted");
        assert_eq!(fs::read(w.manifest()).unwrap(), before);
    }
}

#[test]
fn deleted_swapped_and_truncated_entries_are_detected() {
    let w = ws();
    three_entries(&w);
    let text = fs::read_to_string(w.manifest()).unwrap();
    let (header, b) = blocks(&text);
    fs::write(w.manifest(), format!("{header}{}{}", b[0], b[2])).unwrap();
    let codes = w.finding_codes();
    assert!(codes.contains(&"entry_seq_gap".to_owned()) && codes.contains(&"chain_broken".to_owned()), "{codes:?}");

    fs::write(w.manifest(), format!("{header}{}{}{}", b[0], b[2], b[1])).unwrap();
    let codes = w.finding_codes();
    assert!(codes.contains(&"entry_seq_gap".to_owned()), "{codes:?}");

    let cut = text.len() - b[2].len() / 2;
    fs::write(w.manifest(), &text[..cut]).unwrap();
    let codes = w.finding_codes();
    assert!(codes.iter().any(|c| c == "entry_truncated" || c == "entry_malformed"), "{codes:?}");

    fs::write(w.manifest(), &header).unwrap();
    assert!(w.finding_codes().contains(&"manifest_empty".to_owned()));
}

#[test]
fn hand_appended_entry_with_forged_checksum_is_detected() {
    use kijito_latch::entry::Entry;
    let w = ws();
    three_entries(&w);
    let text = fs::read_to_string(w.manifest()).unwrap();
    let (_, b) = blocks(&text);
    let line = b[2].lines().find(|l| l.starts_with('{')).unwrap();
    let mut e: Entry = serde_json::from_str(line).unwrap();
    e.prev_payload_hash = e.integrity.payload_hash.clone();
    e.entry_seq += 1;
    e.objective = "exfiltrate everything".into();
    e.integrity.payload_hash = format!("sha256:{}", "ab".repeat(32));
    fs::write(w.manifest(), format!("{text}{}", e.render())).unwrap();
    assert!(w.finding_codes().contains(&"payload_hash_mismatch".to_owned()));
    // a zeroed integrity field is a failure, not legacy
    e.integrity.payload_hash = format!("sha256:{}", "0".repeat(64));
    fs::write(w.manifest(), format!("{text}{}", e.render())).unwrap();
    assert!(w.finding_codes().contains(&"integrity_field_missing".to_owned()));
}

fn key_file(w: &Ws) -> String {
    let p = w.root.parent().unwrap().join("latch.key");
    fs::write(&p, "k".repeat(48)).unwrap();
    fs::set_permissions(&p, fs::Permissions::from_mode(0o600)).unwrap();
    p.to_str().unwrap().to_owned()
}

#[test]
fn hmac_mode_needs_the_key_and_is_never_downgraded() {
    use kijito_latch::entry::Entry;
    let w = ws();
    let key = key_file(&w);
    let env = [("MEMORY_LATCH_HMAC_KEY_FILE", key.as_str())];
    assert!(w.run_env(&["init", "--objective", "o"], &env).status.success());
    assert!(w.run_env(&["checkpoint", "--next-step", "s"], &env).status.success());
    let o = w.run_env(&["verify", "--json"], &env);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!((o.status.code(), v["mode"].as_str()), (Some(0), Some("hmac")), "{v}");
    // read without the key: unverifiable, not trusted, no write
    let o = w.run(&["verify", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(v["mode"], "unverifiable");
    assert_eq!(v["trusted"], false);
    assert_first_line(&o, "latch_unverifiable");
    w.fails(&["checkpoint", "--next-step", "x"], "latch_unverifiable");
    // a forged entry with a correct checksum still fails the signature
    let text = fs::read_to_string(w.manifest()).unwrap();
    let (_, b) = blocks(&text);
    let mut e: Entry = serde_json::from_str(b[1].lines().find(|l| l.starts_with('{')).unwrap()).unwrap();
    e.prev_payload_hash = e.integrity.payload_hash.clone();
    e.entry_seq += 1;
    e.integrity.hmac_signature = format!("hmac-sha256:{}", "cd".repeat(32));
    e.integrity.payload_hash = e.compute_payload_hash();
    fs::write(w.manifest(), format!("{text}{}", e.render())).unwrap();
    let o = w.run_env(&["verify", "--json"], &env);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(v["findings"].as_array().unwrap().iter().any(|f| f["code"] == "hmac_signature_invalid"), "{v}");
    // a checksum entry after hmac entries is a downgrade
    e.integrity.mode = kijito_latch::Mode::Checksum;
    e.integrity.hmac_signature = "none".into();
    e.integrity.payload_hash = e.compute_payload_hash();
    fs::write(w.manifest(), format!("{text}{}", e.render())).unwrap();
    let o = w.run_env(&["verify", "--json"], &env);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(v["findings"].as_array().unwrap().iter().any(|f| f["code"] == "integrity_downgrade"), "{v}");
}

#[test]
fn hmac_asked_without_key_falls_back_and_says_so() {
    let w = ws();
    let missing = w.root.parent().unwrap().join("no-such.key");
    let o = w.run_env(&["init", "--objective", "o", "--integrity", "hmac"], &[("MEMORY_LATCH_HMAC_KEY_FILE", missing.to_str().unwrap())]);
    assert!(o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("falls back to checksum"));
    assert_eq!(w.verify_json().1["mode"], "checksum");
    // a key inside the workspace or readable by others is refused
    let inside = w.write("in.key", &"k".repeat(40));
    fs::set_permissions(&inside, fs::Permissions::from_mode(0o600)).unwrap();
    w.fails(&["status", "--hmac-key-file", &inside], "hmac_key_inside_workspace");
    let key = key_file(&w);
    fs::set_permissions(&key, fs::Permissions::from_mode(0o644)).unwrap();
    w.fails(&["status", "--hmac-key-file", &key], "hmac_key_invalid");
}

#[test]
fn concurrent_writers_serialise() {
    let w = ws();
    w.init();
    let spawn = |tag: &'static str| {
        let root = w.root.clone();
        let boot = w.boot.clone();
        std::thread::spawn(move || {
            let mut ok = 0;
            for i in 0..8 {
                let o = Command::new(BIN)
                    .args(["checkpoint", "--next-step", &format!("{tag} {i}"), "--workspace"])
                    .arg(&root)
                    .env("MEMORY_LATCH_BOOT_ID_FILE", &boot)
                    .output()
                    .unwrap();
                assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
                ok += 1;
            }
            ok
        })
    };
    let (a, b) = (spawn("a"), spawn("b"));
    assert_eq!(a.join().unwrap() + b.join().unwrap(), 16);
    let (code, v) = w.verify_json();
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["entries"], 17);
}

#[test]
fn a_lock_held_past_the_timeout_fails_closed() {
    use std::os::fd::AsRawFd;
    let w = ws();
    w.init();
    let before = fs::read(w.manifest()).unwrap();
    let f = fs::OpenOptions::new().read(true).write(true).open(w.latch().join("_manifest.lock")).unwrap();
    // SAFETY: flock on a valid fd.
    assert_eq!(unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX) }, 0);
    w.fails(&["checkpoint", "--next-step", "blocked"], "latch_lock_timeout");
    assert_eq!(fs::read(w.manifest()).unwrap(), before);
    drop(f);
    w.ok(&["checkpoint", "--next-step", "free again"]);
}

#[test]
fn consent_rules_standalone_case_replay_and_action_change() {
    let w = ws();
    w.init();
    let action = w.write("action.txt", "git push --force origin main\n");
    let out = w.ok(&["consent", "request", "--action-file", &action, "--summary", "force-push main", "--risk", "medium"]);
    let token = token_of(&out);
    assert!(token[4..].bytes().all(|b| b"23456789ABCDEFGHJKMNPQRSTUVWXYZ".contains(&b)));
    let s: serde_json::Value = serde_json::from_str(&w.ok(&["status", "--json"])).unwrap();
    assert_eq!(s["head"]["consent_state"], "pending");
    assert!(!fs::read_to_string(w.manifest()).unwrap().contains(&token), "raw token never enters the manifest");
    assert!(!fs::read_to_string(w.latch().join("tokens.json")).unwrap().contains(&token[4..]), "nor the ledger");

    w.fails(&["consent", "confirm", "--action-file", &action, "--message", &format!("yes {token}")], "consent_message_not_standalone");
    w.fails(&["consent", "confirm", "--action-file", &action, "--message", "ACT-ZZZZZZ"], "consent_token_unknown");
    let changed = w.write("action.txt", "git push --force origin release\n");
    w.fails(&["consent", "confirm", "--action-file", &changed, "--message", &token], "consent_action_changed");
    w.write("action.txt", "git push --force origin main\n");
    w.ok(&["consent", "confirm", "--action-file", &action, "--message", &format!("  {}\n", token.to_lowercase())]);
    let s: serde_json::Value = serde_json::from_str(&w.ok(&["status", "--json"])).unwrap();
    assert_eq!(s["head"]["consent_state"], "authorized");
    w.fails(&["consent", "confirm", "--action-file", &action, "--message", &token], "consent_token_replayed");
    // the gate consumes the authorization
    w.ok(&["gate", "--action-file", &action, "--target", "src/main.rs"]);
    let o = w.fails(&["gate", "--action-file", &action], "gate_failed");
    assert!(String::from_utf8_lossy(&o.stdout).contains("consent_not_authorized"));
}

#[test]
fn gate_runs_five_checks_and_refuses_unsafe_targets() {
    let w = ws();
    w.init();
    let action = w.write("action.txt", "deploy\n");
    let token = token_of(&w.ok(&["consent", "request", "--action-file", &action, "--summary", "deploy", "--risk", "high"]));
    w.ok(&["consent", "confirm", "--action-file", &action, "--message", &token]);
    fs::create_dir(w.root.join("src")).unwrap();
    std::os::unix::fs::symlink("/etc", w.root.join("src/etc")).unwrap();
    let outside = w.root.parent().unwrap().join("x").to_str().unwrap().to_owned();
    for (target, code) in [
        ("../escape", "gate_target_traversal"),
        ("src/../../escape", "gate_target_traversal"),
        (outside.as_str(), "gate_target_outside_workspace"),
        ("src/etc/passwd", "gate_target_symlink"),
        (".memory-latch/tokens.json", "gate_target_protected"),
    ] {
        let o = w.fails(&["gate", "--json", "--action-file", &action, "--target", target, "--reconfirmed"], "gate_failed");
        let r: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        let path = r["checks"].as_array().unwrap().iter().find(|c| c["name"] == "path_safety").unwrap().clone();
        assert_eq!(path["code"], code, "{target}");
        assert_eq!(r["checks"].as_array().unwrap().len(), 5);
        assert!(r["remediation"].as_str().unwrap().contains("inside the workspace"));
    }
    // high risk needs --reconfirmed even with a valid token
    let o = w.fails(&["gate", "--json", "--action-file", &action, "--target", "src/a.rs"], "gate_failed");
    let r: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(r["checks"][4]["code"], "risk_reconfirmation_required");
    // intent vs result, and an unknown checkpoint
    let i = w.write("intended.txt", "a\nb\n");
    let r1 = w.write("result.txt", "a\nc\n");
    let o = w.fails(&["gate", "--json", "--action-file", &action, "--intended", &i, "--result", &r1, "--reconfirmed"], "gate_failed");
    let r: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(r["checks"][0]["code"], "intent_result_mismatch");
    let bogus = format!("sha256:{}", "12".repeat(32));
    let o = w.fails(&["gate", "--json", "--action-file", &action, "--checkpoint", &bogus, "--reconfirmed"], "gate_failed");
    let r: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(r["checks"][1]["code"], "gate_checkpoint_unknown");
    let head: serde_json::Value = serde_json::from_str(&w.ok(&["status", "--json"])).unwrap();
    let cp = head["head"]["payload_hash"].as_str().unwrap().to_owned();
    let r2 = w.write("result.txt", "a\r\nb  \n\n");
    let out = w.ok(&[
        "gate", "--json", "--action-file", &action, "--intended", &i, "--result", &r2, "--checkpoint", &cp, "--target", "src/a.rs", "--reconfirmed",
    ]);
    let r: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(r["passed"], true);
    assert!(r["entry_seq"].as_u64().is_some());
}

#[test]
fn symlinked_latch_dir_manifest_or_ledger_is_refused() {
    let w = ws();
    let elsewhere = w.root.parent().unwrap().join("elsewhere");
    fs::create_dir(&elsewhere).unwrap();
    fs::set_permissions(&elsewhere, fs::Permissions::from_mode(0o700)).unwrap();
    std::os::unix::fs::symlink(&elsewhere, w.latch()).unwrap();
    w.fails(&["init", "--objective", "o"], "latch_dir_symlink");
    assert_eq!(fs::read_dir(&elsewhere).unwrap().count(), 0, "nothing written through the link");
    assert!(w.finding_codes().contains(&"latch_dir_symlink".to_owned()));
    fs::remove_file(w.latch()).unwrap();

    w.init();
    let ledger = w.latch().join("tokens.json");
    let real = w.root.parent().unwrap().join("real-tokens.json");
    fs::rename(&ledger, &real).unwrap();
    std::os::unix::fs::symlink(&real, &ledger).unwrap();
    let action = w.write("a.txt", "x\n");
    w.fails(&["consent", "request", "--action-file", &action, "--summary", "s", "--risk", "low"], "latch_ledger_symlink");
    assert!(w.finding_codes().contains(&"latch_ledger_symlink".to_owned()));
    fs::remove_file(&ledger).unwrap();

    let real_manifest = w.root.parent().unwrap().join("real-manifest.md");
    fs::rename(w.manifest(), &real_manifest).unwrap();
    std::os::unix::fs::symlink(&real_manifest, w.manifest()).unwrap();
    w.fails(&["checkpoint", "--next-step", "x"], "latch_manifest_symlink");
    w.fails(&["status"], "latch_manifest_symlink");
}

#[test]
fn silent_witness_after_max_recoveries_and_exit_by_reseed() {
    let w = ws();
    w.init();
    w.ok(&["checkpoint", "--known", "tests pass", "--unknown", "deploy target", "--blocked-by", "flaky CI"]);
    for attempt in 1..=3 {
        let out = w.ok(&["recover"]);
        assert!(out.contains("What was the last moment that felt aligned/correct?"));
        assert!(out.contains("- tests pass") && out.contains("- deploy target"));
        assert!(out.contains(&format!("recovery attempt {attempt} of 3")));
        let step = out.split("Next step:\n").nth(1).unwrap().split("\n\n").next().unwrap();
        assert!(step.lines().count() <= 2);
    }
    let o = w.fails(&["recover"], "silent_witness_active");
    let out = String::from_utf8(o.stdout).unwrap();
    let lines: Vec<&str> = out.lines().skip(1).collect();
    assert_eq!(lines.len(), 3, "{out}");
    assert!(lines[0].contains("flaky CI") && lines[1].contains("3 of 3") && lines[2].contains("reseed"));
    let s: serde_json::Value = serde_json::from_str(&w.ok(&["status", "--json"])).unwrap();
    assert_eq!(s["head"]["consent_state"], "locked");
    assert_eq!(s["silent_witness"], true);
    let action = w.write("a.txt", "x\n");
    w.fails(&["checkpoint", "--next-step", "x"], "silent_witness_active");
    w.fails(&["consent", "request", "--action-file", &action, "--summary", "s", "--risk", "low"], "silent_witness_active");
    w.fails(&["gate", "--action-file", &action], "silent_witness_active");
    let old_head = s["head"]["payload_hash"].as_str().unwrap().to_owned();

    let token = token_of(&w.ok(&["reseed"]));
    w.fails(&["reseed", "--message", &format!("ok {token}")], "consent_message_not_standalone");
    let e: serde_json::Value = serde_json::from_str(&w.ok(&["reseed", "--json", "--message", &token])).unwrap();
    assert_eq!(e["entry_seq"], 1);
    assert_eq!(e["event"], "reseed");
    assert_eq!(e["reseeded_from"]["old_head_payload_hash"], old_head.as_str());
    assert_eq!(e["reseeded_from"]["old_chain_trusted"], true);
    assert_eq!(e["objective"], "ship memory-latch");
    w.fails(&["reseed", "--message", &token], "reseed_not_needed");
    assert_eq!(w.verify_json().0, 0);
    w.ok(&["checkpoint", "--next-step", "back to work"]);
    assert!(w.latch().join(e["reseeded_from"]["archive"].as_str().unwrap()).join("_manifest.md").exists());
}

#[test]
fn a_verification_failure_enters_silent_witness() {
    let w = ws();
    three_entries(&w);
    let text = fs::read_to_string(w.manifest()).unwrap();
    fs::write(w.manifest(), text.replacen("write docs", "write dogs", 1)).unwrap();
    w.fails(&["verify"], "latch_untrusted");
    assert!(w.latch().join("silent-witness.json").exists());
    let o = w.fails(&["recover"], "silent_witness_active");
    assert!(String::from_utf8_lossy(&o.stdout).contains("failed verification"));
    let token = token_of(&w.ok(&["reseed"]));
    let e: serde_json::Value = serde_json::from_str(&w.ok(&["reseed", "--json", "--message", &token, "--objective", "restart cleanly"])).unwrap();
    assert_eq!(e["reseeded_from"]["old_chain_trusted"], false);
    assert_eq!(e["objective"], "restart cleanly");
    assert!(!w.latch().join("silent-witness.json").exists());
    assert_eq!(w.verify_json().0, 0);
}

#[test]
fn secrets_are_redacted_before_the_manifest() {
    let w = ws();
    w.init();
    w.ok(&[
        "checkpoint",
        "--known",
        "api key sk-abcdefghijklmnopqrstuvwxyz123",
        "--decision",
        "use Bearer abc.def.ghi",
        "--next-step",
        "login with password=hunter2",
    ]);
    let text = fs::read_to_string(w.manifest()).unwrap();
    for secret in ["sk-abcdefghijklmnopqrstuvwxyz123", "abc.def.ghi", "hunter2"] {
        assert!(!text.contains(secret), "{secret}");
    }
    assert!(text.contains("[REDACTED]"));
}

#[test]
fn detect_matches_continuity_breaks() {
    let o = Command::new(BIN).args(["detect", "--message", "Why are you CONFUSED? you forgot"]).output().unwrap();
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&o.stdout), "you forgot\n");
    let o = Command::new(BIN).args(["detect", "--json", "--message", "please continue"]).output().unwrap();
    assert_eq!(o.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["matched"], false);
}

#[test]
fn sealed_segments_are_chained_and_checked() {
    use kijito_latch::{Config, Latch};
    let w = ws();
    let latch = Latch::open(&Config::new(&w.root)).unwrap();
    latch.seed_history(300, 1_700_000_000_000).unwrap();
    let (code, v) = w.verify_json();
    assert_eq!(code, 0, "{v}");
    assert_eq!((v["entries"].as_u64(), v["segments"].as_u64()), (Some(300), Some(2)));
    w.ok(&["checkpoint", "--next-step", "appended on top of sealed history"]);
    let seg1 = w.latch().join("history/segment-000001.md");
    let text = fs::read_to_string(&seg1).unwrap();
    fs::write(&seg1, text.replacen("step 5\"", "step 6\"", 1)).unwrap();
    let codes = w.finding_codes();
    assert!(codes.contains(&"segment_ref_mismatch".to_owned()), "{codes:?}");
    fs::write(&seg1, &text).unwrap();
    assert_eq!(w.verify_json().0, 0);
    fs::remove_file(w.latch().join("history/segment-000002.md")).unwrap();
    let codes = w.finding_codes();
    assert!(!codes.is_empty());
    w.fails(&["checkpoint", "--next-step", "x"], "latch_untrusted");
}

#[test]
fn usage_errors_exit_2() {
    let w = ws();
    w.fails(&["verify"], "latch_not_initialised");
    w.fails(&["status"], "latch_not_initialised");
    for args in [&["init"][..], &["checkpoint", "--risk", "extreme"], &["nope"], &["consent"], &["consent", "request", "--bogus"]] {
        let o = w.run(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", String::from_utf8_lossy(&o.stderr));
    }
}
