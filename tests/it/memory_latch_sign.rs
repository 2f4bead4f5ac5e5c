//! Ed25519 keyed mode through the real binaries: `memory-latch keygen`,
//! `checkpoint --sign`, `verify --since-checkpoint F --public-key K`, and
//! wake-check's consistency check from the last checkpoint; a forged
//! history and forged checkpoints fail with stable codes.

#![allow(clippy::unwrap_used)]

use serde_json::Value;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const LATCH: &str = env!("CARGO_BIN_EXE_memory-latch");
const WAKE: &str = env!("CARGO_BIN_EXE_wake-check");
const PASS: &str = "a long passphrase only the user knows";

struct Ws {
    _dir: tempfile::TempDir,
    /// The user's side: keys, passphrase file, saved notes (outside the workspace).
    keys: PathBuf,
    root: PathBuf,
    boot: PathBuf,
}

fn ws() -> Ws {
    let dir = tempfile::tempdir().unwrap();
    fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o700)).unwrap();
    let base = fs::canonicalize(dir.path()).unwrap();
    let root = base.join("ws");
    let keys = base.join("keys");
    fs::create_dir(&root).unwrap();
    fs::create_dir(&keys).unwrap();
    fs::set_permissions(&keys, fs::Permissions::from_mode(0o700)).unwrap();
    let boot = base.join("boot_id");
    fs::write(&boot, "11111111-2222-3333-4444-555555555555\n").unwrap();
    Ws { _dir: dir, keys, root, boot }
}

impl Ws {
    fn heads(&self) -> PathBuf {
        self.root.parent().unwrap().join("heads")
    }
    /// memory-latch in a new session (setsid): no controlling terminal, so a
    /// passphrase can only come from --passphrase-file.
    fn run(&self, args: &[&str]) -> Output {
        Command::new("setsid")
            .arg("-w")
            .arg(LATCH)
            .args(args)
            .arg("--workspace")
            .arg(&self.root)
            .env("MEMORY_LATCH_BOOT_ID_FILE", &self.boot)
            .env("MEMORY_LATCH_HEADS_DIR", self.heads())
            .env_remove("MEMORY_LATCH_HMAC_KEY_FILE")
            .env_remove("MEMORY_LATCH_PUBLIC_KEY_FILE")
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap()
    }
    fn ok(&self, args: &[&str]) -> String {
        crate::support::latch::expect_ok(args, self.run(args))
    }
    fn fails(&self, args: &[&str], code: &str) -> Output {
        crate::support::latch::expect_failure(args, self.run(args), code)
    }
    fn key(&self, name: &str) -> String {
        self.keys.join(name).to_str().unwrap().to_owned()
    }
    fn private(&self, name: &str, text: &str) -> String {
        let p = self.keys.join(name);
        fs::write(&p, text).unwrap();
        fs::set_permissions(&p, fs::Permissions::from_mode(0o600)).unwrap();
        p.to_str().unwrap().to_owned()
    }
    fn entries(&self) -> u64 {
        let v: Value = serde_json::from_str(&self.ok(&["verify", "--json"])).unwrap();
        v["entries"].as_u64().unwrap()
    }
    fn wake(&self) -> (i32, Value) {
        self.wake_with(None)
    }
    fn wake_with(&self, public_key: Option<&str>) -> (i32, Value) {
        let mut c = Command::new(WAKE);
        c.env_remove("MEMORY_LATCH_PUBLIC_KEY_FILE");
        if let Some(k) = public_key {
            c.env("MEMORY_LATCH_PUBLIC_KEY_FILE", k);
        }
        let o = c
            .args(["--json", "--workspace"])
            .arg(&self.root)
            .env("HOME", self.root.parent().unwrap())
            .env("MEMORY_LATCH_HEADS_DIR", self.heads())
            .env("MEMORY_LATCH_BOOT_ID_FILE", &self.boot)
            .env_remove("MEMORY_LATCH_HMAC_KEY_FILE")
            .env_remove("XDG_CONFIG_HOME")
            .output()
            .unwrap();
        (o.status.code().unwrap(), serde_json::from_slice(&o.stdout).unwrap_or(Value::Null))
    }
    /// The head record file (not the checkpoints beside it).
    fn head_record(&self) -> PathBuf {
        fs::read_dir(self.heads())
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .find(|p| p.extension().is_some_and(|x| x == "json") && !p.to_str().unwrap().ends_with(".checkpoints.json"))
            .unwrap()
    }
}

fn mode(p: &Path) -> u32 {
    fs::metadata(p).unwrap().permissions().mode() & 0o777
}

fn check<'a>(v: &'a Value, name: &str) -> &'a Value {
    v["checks"].as_array().unwrap().iter().find(|c| c["name"] == name).unwrap()
}

fn finding_codes(v: &Value) -> Vec<String> {
    v["findings"].as_array().unwrap().iter().map(|f| f["code"].as_str().unwrap().to_owned()).collect()
}

#[test]
fn a_signed_checkpoint_verifies_with_only_the_public_key_and_forgeries_fail_closed() {
    let w = ws();
    w.ok(&["init", "--objective", "ship signing"]);
    w.ok(&["checkpoint", "--next-step", "two"]);
    let (sk, pk, pass) = (w.key("user.key"), w.key("user.pub"), w.private("pass", &format!("{PASS}\n")));

    // keygen: minisign key files, owner-only, the secret key encrypted; the
    // passphrase appears nowhere.
    let out = w.ok(&["keygen", "--secret-key", &sk, "--public-key", &pk, "--passphrase-file", &pass, "--json"]);
    let kg: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(kg["encrypted"], true);
    let name = kg["key_name"].as_str().unwrap().to_owned();
    assert!(name.starts_with("memory-latch-") && kg["note_vkey"].as_str().unwrap().starts_with(&format!("{name}+")));
    assert_eq!((mode(Path::new(&sk)), mode(Path::new(&pk))), (0o600, 0o600));
    let sk_text = fs::read_to_string(&sk).unwrap();
    assert!(sk_text.starts_with("untrusted comment: ") && !sk_text.contains(PASS) && !out.contains(PASS));
    assert!(fs::read_to_string(&pk).unwrap().lines().nth(1).unwrap().starts_with("RW"), "minisign public keys start with RW (\"Ed\")");
    w.fails(&["keygen", "--secret-key", &sk, "--public-key", &pk, "--passphrase-file", &pass], "signing_key_file_exists");
    let inside = w.root.join("agent.key");
    w.fails(
        &["keygen", "--secret-key", inside.to_str().unwrap(), "--public-key", &w.key("x.pub"), "--passphrase-file", &pass],
        "secret_key_inside_workspace",
    );

    // Signing fails closed, and writes nothing, without the right passphrase:
    // no terminal and no file, a wrong one, one in a group-readable file.
    let before = w.entries();
    w.fails(&["checkpoint", "--sign", "--secret-key", &sk], "passphrase_unavailable");
    w.fails(&["checkpoint", "--sign", "--secret-key", &sk, "--passphrase-file", &w.private("wrong", "not it\n")], "passphrase_wrong");
    let loose = w.private("loose", PASS);
    fs::set_permissions(&loose, fs::Permissions::from_mode(0o644)).unwrap();
    w.fails(&["checkpoint", "--sign", "--secret-key", &sk, "--passphrase-file", &loose], "passphrase_unavailable");
    let o = w.run(&["checkpoint", "--secret-key", &sk]);
    assert_eq!(o.status.code(), Some(2), "--secret-key without --sign is a usage error");
    assert_eq!(w.entries(), before);

    // The user signs: a C2SP signed note (origin, size, base64 root, signature line).
    let note_path = w.key("cp1.note");
    let out = w.ok(&[
        "checkpoint",
        "--next-step",
        "signed",
        "--sign",
        "--secret-key",
        &sk,
        "--passphrase-file",
        &pass,
        "--note-out",
        &note_path,
        "--json",
    ]);
    let signed: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(signed["checkpoint"]["size"], 3);
    assert_eq!(signed["checkpoint"]["signed_by"], name.as_str());
    let note = fs::read_to_string(&note_path).unwrap();
    assert_eq!(note, signed["checkpoint"]["note"].as_str().unwrap());
    let lines: Vec<&str> = note.lines().collect();
    assert!(lines[0].starts_with("kijito-qa/memory-latch/") && lines[1] == "3" && lines[2].len() == 44 && lines[3].is_empty(), "{note}");
    assert!(lines[4].starts_with(&format!("\u{2014} {name} ")) && lines.len() == 5, "{note}");
    assert!(!out.contains(PASS));

    // The agent appends more; anyone with only the public key (here a copy
    // committed in the repository) checks the history since the checkpoint.
    w.ok(&["checkpoint", "--next-step", "four"]);
    w.ok(&["checkpoint", "--next-step", "five"]);
    let repo_pub = w.root.join("memory-latch.pub");
    fs::copy(&pk, &repo_pub).unwrap();
    fs::set_permissions(&repo_pub, fs::Permissions::from_mode(0o644)).unwrap();
    for key in [pk.as_str(), repo_pub.to_str().unwrap()] {
        let v: Value = serde_json::from_str(&w.ok(&["verify", "--json", "--since-checkpoint", &note_path, "--public-key", key])).unwrap();
        assert_eq!(v["trusted"], true);
        let notes = v["notes"].to_string();
        assert!(notes.contains("consistent with the checkpoint of 3 entries") && notes.contains("verifies with the public key"), "{notes}");
    }
    // wake-check: consistent from the last checkpoint (the signed one).
    let (code, v) = w.wake();
    assert_eq!(code, 0, "{v}");
    let c = check(&v, "latch_checkpoint");
    assert_eq!(c["status"], "pass", "{v}");
    assert!(c["detail"].as_str().unwrap().contains("extends the checkpoint of 3 entries"), "{c}");
    let (code, v) = w.wake_with(Some(&pk));
    assert_eq!(code, 0, "{v}");
    assert!(check(&v, "latch_checkpoint")["detail"].as_str().unwrap().contains(&format!("signed by {name}")), "{v}");

    // A tampered note: the size changed after signing.
    let tampered = w.private("tampered.note", &note.replacen("\n3\n", "\n2\n", 1));
    w.fails(&["verify", "--since-checkpoint", &tampered, "--public-key", &pk], "checkpoint_signature_invalid");
    // The wrong key: another key pair (the agent's own) verifies nothing.
    let (osk, opk) = (w.key("agent.key"), w.key("agent.pub"));
    w.ok(&["keygen", "--secret-key", &osk, "--public-key", &opk, "--no-passphrase"]);
    w.fails(&["verify", "--since-checkpoint", &note_path, "--public-key", &opk], "checkpoint_not_signed_by_key");
    // An unsigned tree head does not satisfy --public-key.
    let head = w.private(
        "head.json",
        &serde_json::to_string(&serde_json::json!({"schema":"memory-latch.tree-head/v1","size":3,"root":"00".repeat(32)})).unwrap(),
    );
    w.fails(&["verify", "--since-checkpoint", &head, "--public-key", &pk], "checkpoint_not_signed_by_key");
    // Nothing above entered Silent Witness: a bad checkpoint file is not a bad chain.
    w.ok(&["verify"]);

    // The agent rewrites the whole history and the head record on purpose:
    // a chain built in another workspace, copied over both. Plain verify
    // and the head record agree with it...
    let forged = ws();
    forged.ok(&["init", "--objective", "ship signing"]);
    for step in ["two", "signed", "four", "five", "six"] {
        forged.ok(&["checkpoint", "--next-step", step]);
    }
    fs::remove_dir_all(w.root.join(".memory-latch")).unwrap();
    Command::new("cp").arg("-a").arg(forged.root.join(".memory-latch")).arg(&w.root).status().unwrap();
    fs::copy(forged.head_record(), w.head_record()).unwrap();
    w.ok(&["verify"]);
    // ...but the user's signed checkpoint is not a prefix of it,
    let o = w.fails(&["verify", "--json", "--since-checkpoint", &note_path, "--public-key", &pk], "latch_untrusted");
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let codes = finding_codes(&v);
    assert!(codes.contains(&"checkpoint_inconsistent".to_owned()) && codes.contains(&"checkpoint_origin_mismatch".to_owned()), "{codes:?}");
    // and a checkpoint the agent signs for its history with its own key is refused.
    let agent_note = forged.key("agent.note");
    forged.ok(&["checkpoint", "--sign", "--secret-key", &osk, "--note-out", &agent_note]);
    w.fails(&["verify", "--since-checkpoint", &agent_note, "--public-key", &pk], "checkpoint_not_signed_by_key");
    // Editing the user's note to name the forged chain breaks its signature.
    let agent_lines: Vec<String> = fs::read_to_string(&agent_note).unwrap().lines().map(str::to_owned).collect();
    let spliced = note.replacen(lines[0], &agent_lines[0], 1).replacen("\n3\n", "\n6\n", 1).replacen(lines[2], &agent_lines[2], 1);
    w.fails(&["verify", "--since-checkpoint", &w.private("spliced.note", &spliced), "--public-key", &pk], "checkpoint_signature_invalid");

    // wake-check compares the forged chain with the last checkpoint it saw
    // (outside the workspace): degraded, with a clear finding.
    let (code, v) = w.wake();
    assert_eq!(code, 20, "{v}");
    assert!(finding_codes(&v).contains(&"latch_checkpoint_inconsistent".to_owned()), "{v}");
    let f = v["findings"].as_array().unwrap().iter().find(|f| f["code"] == "latch_checkpoint_inconsistent").unwrap();
    assert_eq!(f["severity"], "degrading");
    assert!(f["message"].as_str().unwrap().contains("rewritten"), "{f}");

    // The agent also replaces the saved checkpoints outside the workspace
    // with its own (same uid: it can). Without the user's public key
    // wake-check cannot tell (documented); with it, the latest checkpoint
    // signed by the user is required, and the agent's is not one.
    let states = |w: &Ws| w.head_record().with_extension("checkpoints.json");
    fs::remove_dir_all(w.root.join(".memory-latch")).unwrap();
    Command::new("cp").arg("-a").arg(forged.root.join(".memory-latch")).arg(&w.root).status().unwrap();
    fs::copy(forged.head_record(), w.head_record()).unwrap();
    fs::copy(states(&forged), states(&w)).unwrap();
    let (code, v) = w.wake();
    assert_eq!(code, 0, "the documented limit of unsigned checkpoints: {v}");
    let (code, v) = w.wake_with(Some(&pk));
    assert_eq!(code, 20, "{v}");
    let f = v["findings"].as_array().unwrap().iter().find(|f| f["code"] == "latch_checkpoint_invalid").unwrap_or_else(|| panic!("{v}"));
    assert!(f["message"].as_str().unwrap().starts_with("checkpoint_not_signed_by_key"), "{f}");
}
