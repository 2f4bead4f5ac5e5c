//! memory-latch through the real binary, real files and permissions.

#![allow(clippy::unwrap_used)]

use crate::support::latch::assert_failed_with;
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
        c.args(args)
            .arg("--workspace")
            .arg(&self.root)
            .env("MEMORY_LATCH_BOOT_ID_FILE", &self.boot)
            .env("MEMORY_LATCH_HEADS_DIR", self.heads())
            .env_remove("MEMORY_LATCH_HMAC_KEY_FILE");
        for (k, v) in env {
            c.env(k, v);
        }
        c.output().unwrap()
    }
    fn run(&self, args: &[&str]) -> Output {
        self.run_env(args, &[])
    }
    fn ok(&self, args: &[&str]) -> String {
        crate::support::latch::expect_ok(args, self.run(args))
    }
    fn fails(&self, args: &[&str], code: &str) -> Output {
        crate::support::latch::expect_failure(args, self.run(args), code)
    }
    fn heads(&self) -> PathBuf {
        self.root.parent().unwrap().join("heads")
    }
    fn config(&self) -> kijito_latch::Config {
        let mut c = kijito_latch::Config::new(&self.root);
        c.boot_id_file = self.boot.clone();
        c.heads_dir = Some(self.heads());
        c
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
    for (needle, replacement) in [
        ("- known: the library builds", "- known: the library bui1ds"),
        ("\"next_single_step\":\"run the tests\"", "\"next_single_step\":\"run the tesTs\""),
    ] {
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
    assert_failed_with(&o, "latch_unverifiable");
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
fn an_explicit_hmac_mode_whose_key_is_missing_fails_and_writes_nothing() {
    let w = ws();
    let missing = w.root.parent().unwrap().join("no-such.key");
    let missing = missing.to_str().unwrap();
    // A mistyped key path: named by flag, by environment, or asked by --integrity.
    type Case<'a> = (&'a [&'a str], &'a [(&'a str, &'a str)]);
    let cases: [Case; 3] = [
        (&["init", "--objective", "o", "--hmac-key-file", missing], &[]),
        (&["init", "--objective", "o"], &[("MEMORY_LATCH_HMAC_KEY_FILE", missing)]),
        (&["init", "--objective", "o", "--integrity", "hmac"], &[]),
    ];
    for (args, env) in cases {
        let o = w.run_env(args, env);
        assert_eq!(o.status.code(), Some(1), "{args:?}");
        assert_failed_with(&o, "hmac_key_missing");
        assert!(!w.manifest().exists(), "no silent checksum fallback");
    }
    // Nothing configured at all: checksum, with a notice.
    let o = w.run(&["init", "--objective", "o"]);
    assert!(o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("checksum mode"), "{}", String::from_utf8_lossy(&o.stderr));
}

#[test]
fn an_hmac_latch_rewritten_as_a_checksum_chain_is_a_downgrade() {
    use kijito_latch::entry::Entry;
    let w = ws();
    let key = key_file(&w);
    let env = [("MEMORY_LATCH_HMAC_KEY_FILE", key.as_str())];
    assert!(w.run_env(&["init", "--objective", "o"], &env).status.success());
    for step in ["a", "b"] {
        assert!(w.run_env(&["checkpoint", "--next-step", step], &env).status.success());
    }
    // Rewrite every entry as checksum: hashes recomputed, chain re-linked, no key needed.
    let text = fs::read_to_string(w.manifest()).unwrap();
    let (header, b) = blocks(&text);
    let mut prev = "none".to_owned();
    let mut out = header.clone();
    for block in &b {
        let mut e: Entry = serde_json::from_str(block.lines().find(|l| l.starts_with('{')).unwrap()).unwrap();
        e.integrity.mode = kijito_latch::Mode::Checksum;
        e.integrity.hmac_signature = "none".into();
        e.prev_payload_hash = prev.clone();
        e.integrity.payload_hash = e.compute_payload_hash();
        prev = e.integrity.payload_hash.clone();
        out.push_str(&e.render());
    }
    fs::write(w.manifest(), out).unwrap();
    for env in [&env[..], &[]] {
        let o = w.run_env(&["verify", "--json"], env);
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!((o.status.code(), &v["trusted"]), (Some(1), &serde_json::json!(false)), "{v}");
        assert!(v["findings"].as_array().unwrap().iter().any(|f| f["code"] == "latch_mode_downgrade"), "{v}");
    }
    let o = w.run_env(&["checkpoint", "--next-step", "x"], &env);
    assert_eq!(o.status.code(), Some(1));
}

#[test]
fn an_older_copy_or_a_dropped_last_entry_is_detected() {
    let w = ws();
    three_entries(&w);
    let older = fs::read(w.manifest()).unwrap();
    w.ok(&["checkpoint", "--next-step", "four"]);
    w.ok(&["checkpoint", "--next-step", "five"]);
    let current = fs::read_to_string(w.manifest()).unwrap();
    // Rollback: a whole older copy, internally valid.
    fs::write(w.manifest(), &older).unwrap();
    let codes = w.finding_codes();
    assert_eq!(codes, ["latch_rolled_back"], "{codes:?}");
    // Truncation: the last entry dropped cleanly.
    let (header, b) = blocks(&current);
    fs::write(w.manifest(), format!("{header}{}", b[..b.len() - 1].concat())).unwrap();
    let codes = w.finding_codes();
    assert_eq!(codes, ["latch_truncated"], "{codes:?}");
    w.fails(&["checkpoint", "--next-step", "x"], "latch_untrusted");
    // Back to the real head: no finding (the witness marker stays until a reseed).
    fs::write(w.manifest(), &current).unwrap();
    let (_, v) = w.verify_json();
    assert_eq!(v["findings"].as_array().unwrap().len(), 0, "{v}");
}

#[test]
fn a_missing_head_record_or_a_deleted_latch_is_never_silent() {
    let w = ws();
    w.init();
    // The head records (`<hash>.json`; the workspace index beside them is `.jsonl`).
    let heads: Vec<_> =
        fs::read_dir(w.heads()).unwrap().map(|e| e.unwrap().path()).filter(|p| p.extension().is_some_and(|x| x == "json")).collect();
    assert_eq!(heads.len(), 1);
    let rec = &heads[0];
    assert_eq!(fs::metadata(rec).unwrap().mode() & 0o777, 0o600);
    assert_eq!(fs::metadata(w.heads()).unwrap().mode() & 0o777, 0o700);
    let saved = fs::read(rec).unwrap();
    fs::remove_file(rec).unwrap();
    assert_eq!(w.finding_codes(), ["latch_head_record_missing"]);
    kijito_files::private::write_atomic(rec, &saved).unwrap();
    // (verify entered Silent Witness on the finding; the record itself is fine again)
    let (_, v) = w.verify_json();
    assert_eq!(v["findings"].as_array().unwrap().len(), 0, "{v}");
    // The latch deleted: verify says so, and init refuses to paper over it.
    fs::remove_dir_all(w.latch()).unwrap();
    let codes = w.finding_codes();
    assert!(codes.contains(&"latch_deleted".to_owned()), "{codes:?}");
    w.fails(&["init", "--objective", "fresh start"], "latch_head_record_exists");
}

#[test]
fn concurrent_writers_serialise() {
    let w = ws();
    w.init();
    let spawn = |tag: &'static str| {
        let root = w.root.clone();
        let boot = w.boot.clone();
        let heads = w.heads();
        std::thread::spawn(move || {
            let mut ok = 0;
            for i in 0..8 {
                let o = Command::new(BIN)
                    .args(["checkpoint", "--next-step", &format!("{tag} {i}"), "--workspace"])
                    .arg(&root)
                    .env("MEMORY_LATCH_BOOT_ID_FILE", &boot)
                    .env("MEMORY_LATCH_HEADS_DIR", &heads)
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
fn consent_confirm_from_a_command_is_always_refused() {
    let w = ws();
    w.init();
    let action = w.write("action.txt", "git push --force origin main\n");
    let out = w.ok(&["consent", "request", "--action-file", &action, "--summary", "force-push main", "--risk", "medium"]);
    let token = token_of(&out);
    assert!(token[4..].bytes().all(|b| b"23456789ABCDEFGHJKMNPQRSTUVWXYZ".contains(&b)));
    assert!(out.contains("the USER sends only this token"));
    assert!(!fs::read_to_string(w.manifest()).unwrap().contains(&token), "raw token never enters the manifest");
    assert!(!fs::read_to_string(w.latch().join("tokens.json")).unwrap().contains(&token[4..]), "nor the ledger");
    for message in [token.clone(), format!("  {}\n", token.to_lowercase())] {
        w.fails(&["consent", "confirm", "--action-file", &action, "--message", &message], "consent_requires_user_message");
    }
    let s: serde_json::Value = serde_json::from_str(&w.ok(&["status", "--json"])).unwrap();
    assert_eq!(s["head"]["consent_state"], "pending");
}

#[test]
fn no_gate_check_passes_vacuously() {
    let w = ws();
    w.init();
    let action = w.write("action.txt", "deploy\n");
    // Only the action file: no declared delta, no checkpoint, no consent, no target.
    let o = w.fails(&["gate", "--json", "--action-file", &action], "gate_failed");
    let r: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let codes: Vec<&str> = r["checks"].as_array().unwrap().iter().map(|c| c["code"].as_str().unwrap_or("")).collect();
    assert_eq!(codes, ["intent_undeclared", "gate_checkpoint_missing", "consent_not_authorized", "gate_target_missing", ""]);
    // Every failed check carries exactly one single-line remediation step.
    for c in r["checks"].as_array().unwrap().iter().filter(|c| c["passed"] == false) {
        let step = c["remediation"].as_str().unwrap();
        assert!(!step.is_empty() && !step.contains('\n'), "{c}");
    }
}

#[test]
fn gate_runs_five_checks_and_refuses_unsafe_targets() {
    let w = ws();
    w.init();
    let action = w.write("action.txt", "deploy\n");
    fs::create_dir(w.root.join("src")).unwrap();
    std::os::unix::fs::symlink("/etc", w.root.join("src/etc")).unwrap();
    let outside = w.root.parent().unwrap().join("x").to_str().unwrap().to_owned();
    let i = w.write("intended.txt", "a\nb\n");
    let r1 = w.write("result.txt", "a\nc\n");
    let head: serde_json::Value = serde_json::from_str(&w.ok(&["status", "--json"])).unwrap();
    let cp = head["head"]["payload_hash"].as_str().unwrap().to_owned();
    for (target, code) in [
        ("../escape", "gate_target_traversal"),
        ("src/../../escape", "gate_target_traversal"),
        (outside.as_str(), "gate_target_outside_workspace"),
        ("src/etc/passwd", "gate_target_symlink"),
        (".memory-latch/tokens.json", "gate_target_protected"),
    ] {
        let o = w.fails(
            &["gate", "--json", "--action-file", &action, "--target", "src/ok.rs", "--target", target, "--checkpoint", &cp],
            "gate_failed",
        );
        let r: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        let path = r["checks"].as_array().unwrap().iter().find(|c| c["name"] == "path_safety").unwrap().clone();
        assert_eq!(path["code"], code, "{target}");
        assert!(path["remediation"].as_str().unwrap().contains("inside the workspace"));
        assert_eq!(r["checks"].as_array().unwrap().len(), 5);
    }
    let o = w.fails(
        &["gate", "--json", "--action-file", &action, "--intended", &i, "--result", &r1, "--checkpoint", &cp, "--target", "src/a.rs"],
        "gate_failed",
    );
    let r: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(r["checks"][0]["code"], "intent_result_mismatch");
    assert_eq!(r["checks"][1]["passed"], true);
    assert_eq!(r["checks"][3]["passed"], true);
    let bogus = format!("sha256:{}", "12".repeat(32));
    let o = w.fails(&["gate", "--json", "--action-file", &action, "--checkpoint", &bogus], "gate_failed");
    let r: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(r["checks"][1]["code"], "gate_checkpoint_unknown");
    // The whole path with the user's own confirmation: tests/it/memory_latch_consent.rs.
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

    assert!(old_head.starts_with("sha256:"));
    let token = token_of(&w.ok(&["reseed"]));
    // Only the user's own message reseeds (tests/it/memory_latch_consent.rs).
    w.fails(&["reseed", "--message", &token], "consent_requires_user_message");
    w.fails(&["checkpoint", "--next-step", "x"], "silent_witness_active");
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
    w.fails(&["reseed", "--message", &token], "consent_requires_user_message");
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
    use kijito_latch::Latch;
    let w = ws();
    let latch = Latch::open(&w.config()).unwrap();
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

#[test]
fn a_saved_tree_head_catches_a_history_rewritten_in_workspace_and_head_record() {
    use kijito_latch::entry::Entry;
    let w = ws();
    three_entries(&w);
    let (code, v) = w.verify_json();
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["tree_head"]["size"], 3);
    // The user keeps the tree head outside the workspace.
    let saved = w.root.parent().unwrap().join("tree-head.json");
    fs::write(&saved, v["tree_head"].to_string()).unwrap();
    let saved = saved.to_str().unwrap().to_owned();
    w.ok(&["checkpoint", "--next-step", "four"]);
    let out = w.ok(&["verify", "--since-checkpoint", &saved]);
    assert!(out.contains("consistent with the checkpoint of 3 entries"), "{out}");
    // A whole verify --json report works as the saved file too.
    let report = w.root.parent().unwrap().join("report.json");
    fs::write(&report, serde_json::to_string(&v).unwrap()).unwrap();
    w.ok(&["verify", "--since-checkpoint", report.to_str().unwrap()]);

    // The deliberate attacker with the user's uid: rewrite entry 2 and every
    // hash after it (checksum mode needs no key), then the head record to match.
    let text = fs::read_to_string(w.manifest()).unwrap();
    let (header, b) = blocks(&text);
    let mut prev = "none".to_owned();
    let mut out = header.clone();
    let mut last = None;
    for block in &b {
        let mut e: Entry = serde_json::from_str(block.lines().find(|l| l.starts_with('{')).unwrap()).unwrap();
        if e.entry_seq == 2 {
            e.known_state = vec!["the library builds and was deployed".into()];
        }
        e.prev_payload_hash = prev.clone();
        e.integrity.payload_hash = e.compute_payload_hash();
        prev = e.integrity.payload_hash.clone();
        out.push_str(&e.render());
        last = Some(e);
    }
    fs::write(w.manifest(), out).unwrap();
    let rec_path =
        fs::read_dir(w.heads()).unwrap().map(|e| e.unwrap().path()).find(|p| p.extension().is_some_and(|x| x == "json")).unwrap();
    let mut rec: serde_json::Value = serde_json::from_slice(&fs::read(&rec_path).unwrap()).unwrap();
    let last = last.unwrap();
    rec["payload_hash"] = serde_json::json!(last.integrity.payload_hash);
    rec["prev_payload_hash"] = serde_json::json!(last.prev_payload_hash);
    kijito_files::private::write_atomic(&rec_path, rec.to_string().as_bytes()).unwrap();
    // Honest limit: on its own the rewritten latch verifies ...
    assert_eq!(w.verify_json().0, 0);
    // ... but not against the tree head the user kept.
    let o = w.fails(&["verify", "--json", "--since-checkpoint", &saved], "latch_untrusted");
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["findings"][0]["code"], "checkpoint_inconsistent", "{v}");
    let bad = w.write("bad.json", "{\"schema\":\"memory-latch.tree-head/v1\",\"size\":0,\"root\":\"00\"}");
    w.fails(&["verify", "--since-checkpoint", &bad], "checkpoint_file_invalid");
}
