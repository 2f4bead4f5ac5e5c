//! Key consent mode end to end, through the real binaries.
//! keygen (passphrase-protected), the user's consent file (mode key, the
//! public key), the agent's `consent request` (no token shown), the user's
//! `memory-latch approve` in a real pseudo-terminal (python3 `pty`) typing
//! the passphrase, then `memory-latch gate` passes once; refused: approve
//! without a terminal, a replay, a signature over another action, an
//! expired signature; the guard denies the agent's `approve`.

#![allow(clippy::unwrap_used)]

use crate::support;

use serde_json::{json, Value};
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::process::Stdio;
use support::latch::{env, Env};

pub(crate) const PASSPHRASE: &str = "correct horse battery staple";

/// Runs argv[1:] in a new pseudo-terminal; types $KQA_TYPED + Enter once
/// the program prompts for the passphrase and turned echo off; prints all
/// it saw; exits with
/// its status. Bounded: 60 s.
const PTY_DRIVER: &str = r#"
import os, pty, select, sys, termios, time
typed = os.environ.pop("KQA_TYPED").encode() + b"\n"
pid, fd = pty.fork()
if pid == 0:
    os.execv(sys.argv[1], sys.argv[1:])
out, sent, deadline = b"", False, time.time() + 60
while time.time() < deadline:
    r, _, _ = select.select([fd], [], [], 1)
    if fd in r:
        try:
            b = os.read(fd, 4096)
        except OSError:
            break
        if not b:
            break
        out += b
        if not sent and b"passphrase of the signing key" in out:
            # type only once the program turned echo off (bounded wait)
            for _ in range(200):
                if not (termios.tcgetattr(fd)[3] & termios.ECHO):
                    break
                time.sleep(0.05)
            os.write(fd, typed)
            sent = True
else:
    os.kill(pid, 9)
_, status = os.waitpid(pid, 0)
sys.stdout.write(out.decode("utf-8", "replace"))
sys.exit(os.waitstatus_to_exitcode(status))
"#;

pub(crate) struct K {
    pub(crate) e: Env,
    sk: PathBuf,
}

fn private_file(p: &PathBuf, text: &str) {
    fs::write(p, text).unwrap();
    fs::set_permissions(p, fs::Permissions::from_mode(0o600)).unwrap();
}

/// A latch world in key consent mode with a passphrase-protected key.
pub(crate) fn key_world() -> K {
    let mut e = env();
    let keys = e.w.dir().join("keys");
    fs::create_dir(&keys).unwrap();
    fs::set_permissions(&keys, fs::Permissions::from_mode(0o700)).unwrap();
    let (sk, pk, pass) = (keys.join("user.key"), keys.join("user.pub"), keys.join("pass"));
    private_file(&pass, &format!("{PASSPHRASE}\n"));
    e.ok(&[
        "keygen",
        "--secret-key",
        sk.to_str().unwrap(),
        "--public-key",
        pk.to_str().unwrap(),
        "--passphrase-file",
        pass.to_str().unwrap(),
    ]);
    fs::remove_file(&pass).unwrap();
    let cfg = keys.join("consent.json");
    private_file(&cfg, &json!({"schema": "memory-latch.consent/v1", "mode": "key", "public_key": pk}).to_string());
    e.env.push(("MEMORY_LATCH_CONSENT_FILE", cfg));
    e.ok(&["init", "--objective", "ship it"]);
    K { e, sk }
}

impl K {
    fn request(&self, action: &str, risk: &str) -> Value {
        let (v, _) = self.e.request_json(action, "deploy", risk);
        assert!(v["token"].is_null() && v["key"]["approve"].as_str().unwrap().contains("memory-latch approve"), "{v}");
        v
    }
    /// The user's `approve` in a real pseudo-terminal, typing `typed`.
    pub(crate) fn approve_in_pty(&self, typed: &str, extra: &[&str]) -> (i32, String) {
        let mut c = self.e.command("python3");
        c.arg("-c").arg(PTY_DRIVER).arg(support::bin("memory-latch"));
        c.args(["approve", "--workspace", self.e.ws.to_str().unwrap(), "--secret-key", self.sk.to_str().unwrap()]).args(extra);
        c.env("KQA_TYPED", typed).stdin(Stdio::null());
        let o = c.output().unwrap();
        (o.status.code().unwrap_or(-1), String::from_utf8_lossy(&o.stdout).into_owned())
    }
    fn consent_code(report: &Value) -> String {
        report["checks"].as_array().unwrap().iter().find(|c| c["name"] == "consent_integrity").unwrap()["code"]
            .as_str()
            .unwrap_or("")
            .to_owned()
    }
    fn ledger_path(&self) -> PathBuf {
        self.e.ws.join(".memory-latch/tokens.json")
    }
    fn ledger(&self) -> Value {
        serde_json::from_slice(&fs::read(self.ledger_path()).unwrap()).unwrap()
    }
}

#[test]
fn approve_from_a_terminal_signs_once_and_the_gate_passes_once() {
    let k = key_world();
    let action = k.e.file("action.txt", "git push --force origin main\n");
    // high risk: the user's signature is the reconfirmation
    let req = k.request(&action, "high");
    let id = req["record"]["id"].as_str().unwrap().to_owned();
    // the human text names the approve command, never a token
    let human = k.e.ok(&["consent", "request", "--action-file", &action, "--summary", "deploy", "--risk", "high"]);
    assert!(human.contains("key consent mode") && human.contains("memory-latch approve") && !human.contains("ACT-"), "{human}");
    let id2 = k.ledger()["tokens"].as_array().unwrap().last().unwrap()["id"].as_str().unwrap().to_owned();
    assert_ne!(id, id2);
    // the user's own message with a token cannot confirm a key request either:
    // nothing was shown, and the status stays pending
    assert_eq!(k.e.status()["head"]["consent_state"], "pending");
    // a wrong passphrase signs nothing
    let (rc, out) = k.approve_in_pty("not the passphrase", &[]);
    assert_ne!(rc, 0, "{out}");
    assert!(out.contains("passphrase_wrong"), "{out}");
    assert_eq!(k.e.status()["head"]["consent_state"], "pending");
    // the right one, in the terminal: shows the action, signs, confirms
    let (rc, out) = k.approve_in_pty(PASSPHRASE, &[]);
    assert_eq!(rc, 0, "{out}");
    assert!(out.contains("deploy") && out.contains("risk:     high") && out.contains(&format!("approved: {id2}")), "{out}");
    assert!(!out.contains(PASSPHRASE), "the passphrase is never echoed: {out}");
    assert_eq!(k.e.status()["head"]["consent_state"], "authorized");
    let rec = k.ledger()["tokens"].as_array().unwrap().iter().find(|t| t["id"] == id2.as_str()).unwrap().clone();
    assert!(rec["key"]["signature"].is_string() && rec["key"]["key_name"].as_str().unwrap().starts_with("memory-latch-"), "{rec}");
    assert!(!fs::read_to_string(k.ledger_path()).unwrap().contains(PASSPHRASE));
    // the gate passes once; a second identical gate is refused
    let (rc, report) = k.e.gate(&action);
    assert_eq!(rc, 0, "{report}");
    assert!(report["checks"].to_string().contains("Ed25519 signature"), "{report}");
    let (rc, report) = k.e.gate(&action);
    assert_eq!((rc, K::consent_code(&report).as_str()), (1, "consent_not_authorized"), "{report}");
}

#[test]
fn approve_without_a_terminal_is_refused_and_signs_nothing() {
    let k = key_world();
    let action = k.e.file("action.txt", "rm -rf build\n");
    k.request(&action, "low");
    let before = fs::read(k.ledger_path()).unwrap();
    // a new session (setsid): no controlling terminal; stdin carries the
    // passphrase, which approve never reads
    let mut c = k.e.command("setsid");
    c.arg("-w").arg(support::bin("memory-latch"));
    c.args(["approve", "--workspace", k.e.ws.to_str().unwrap(), "--secret-key", k.sk.to_str().unwrap()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = c.spawn().unwrap();
    {
        use std::io::Write;
        let _ = child.stdin.take().unwrap().write_all(format!("{PASSPHRASE}\n").as_bytes());
    }
    let o = support::gate::wait_bounded(child, 30);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert_eq!(err.lines().next().unwrap(), "kijito_memory_latch_failed:approve_needs_tty", "{err}");
    assert_eq!(fs::read(k.ledger_path()).unwrap(), before, "nothing written");
    assert_eq!(k.e.status()["head"]["consent_state"], "pending");
    let (rc, report) = k.e.gate(&action);
    assert_eq!((rc, K::consent_code(&report).as_str()), (1, "consent_not_authorized"), "{report}");
}

#[test]
fn a_signature_over_another_action_an_expired_one_and_a_replay_are_refused() {
    let k = key_world();
    // A: approved and used
    let a = k.e.file("a.txt", "git push --force origin main\n");
    k.request(&a, "low");
    assert_eq!(k.approve_in_pty(PASSPHRASE, &[]).0, 0);
    let saved = k.e.w.dir().join("saved-latch");
    let copy =
        |from: &PathBuf, to: &PathBuf| assert!(std::process::Command::new("cp").arg("-a").arg(from).arg(to).status().unwrap().success());
    copy(&k.e.ws.join(".memory-latch"), &saved);
    let saved_cp = k.e.status()["head"]["payload_hash"].as_str().unwrap().to_owned();
    assert_eq!(k.e.gate(&a).0, 0);
    let sig_a = k.ledger()["tokens"].as_array().unwrap().last().unwrap()["key"]["signature"].as_str().unwrap().to_owned();
    // B: approved, then its signature replaced by A's (a signature over another action)
    let b = k.e.file("b.txt", "rm -rf build\n");
    k.request(&b, "low");
    assert_eq!(k.approve_in_pty(PASSPHRASE, &[]).0, 0);
    let mut l = k.ledger();
    let last = l["tokens"].as_array_mut().unwrap().last_mut().unwrap();
    last["key"]["signature"] = json!(sig_a);
    private_file(&k.ledger_path(), &l.to_string());
    let (rc, report) = k.e.gate(&b);
    assert_eq!((rc, K::consent_code(&report).as_str()), (1, "consent_signature_mismatch"), "{report}");
    // C: signed for one second; after it, refused
    let c = k.e.file("c.txt", "npm publish\n");
    k.request(&c, "low");
    assert_eq!(k.approve_in_pty(PASSPHRASE, &["--expires-in", "1"]).0, 0);
    std::thread::sleep(std::time::Duration::from_millis(2200));
    let (rc, report) = k.e.gate(&c);
    assert_eq!((rc, K::consent_code(&report).as_str()), (1, "consent_signature_expired"), "{report}");
    // D: the signed record made "unused" again after its gate pass (the
    // ledger and the head restored from a copy): refused
    let live = k.e.ws.join(".memory-latch");
    fs::remove_dir_all(&live).unwrap();
    copy(&saved, &live);
    // (the head record outside the workspace names a newer entry: untrusted)
    let intended = k.e.file("intended.txt", "a\n");
    let o = k.e.latch(&[
        "gate",
        "--json",
        "--action-file",
        &a,
        "--intended",
        &intended,
        "--result",
        &intended,
        "--checkpoint",
        &saved_cp,
        "--target",
        "src/a.rs",
    ]);
    let report: Value = serde_json::from_slice(&o.stdout).unwrap_or(Value::Null);
    assert_eq!(o.status.code(), Some(1), "a replayed approval must not pass: {report}");
    assert_eq!(K::consent_code(&report), "latch_untrusted", "{report}");
    assert!(
        report["checks"].to_string().contains("latch_rolled_back") || String::from_utf8_lossy(&o.stderr).contains("latch_rolled_back"),
        "{report}"
    );
}

#[test]
fn the_guard_denies_the_agents_approve_in_every_form() {
    let k = key_world();
    let ml = support::bin("memory-latch");
    let ws = k.e.ws.to_str().unwrap().to_owned();
    for host in ["claude", "codex"] {
        for line in [
            format!("{ml} approve --workspace {ws}"),
            format!("{ml} approve --workspace {ws} --token-id tok_0123456789abcdef"),
            format!("cd {ws} && {ml} app{{r,}}ove"),
            format!("bash -c '{ml} approve'"),
            format!("script -qc \"{ml} approve --workspace {ws}\" /dev/null"),
            format!("{ml} $'\\x61pprove'"),
        ] {
            let text = k.e.guard(host, &line).unwrap_or_default();
            assert!(text.contains("deny") && text.contains("command_user_only"), "{host} {line}: {text}");
        }
    }
}

/// The PreToolUse path (`Latch::tool_gate`, the lead's tool_gate.rs) runs
/// the same consent predicate: in key mode it passes a signed record once,
/// and refuses an unsigned one or a text-token record (library, real files,
/// an unencrypted key so no terminal is needed here).
#[test]
fn the_tool_path_verifies_key_mode_alike() {
    use kijito_latch::{consent, sign, Config, InitInput, Latch, PromptOutcome, Risk};
    let d = tempfile::tempdir().unwrap();
    fs::set_permissions(d.path(), fs::Permissions::from_mode(0o700)).unwrap();
    let ws = fs::canonicalize(d.path()).unwrap().join("ws");
    fs::create_dir(&ws).unwrap();
    let (sk, pk) = (d.path().join("u.key"), d.path().join("u.pub"));
    sign::keygen(&sk, &pk, None, Some(&ws)).unwrap();
    let key = sign::load_secret_key(&sk, Some(&ws), || Ok(None)).unwrap();
    let public = consent::load_public_key(&pk).unwrap();
    let setting = consent::Setting { mode: consent::Mode::Key, public_key: Some(public.clone()), ..consent::Setting::default() };
    let mut c = Config::new(&ws);
    c.heads_dir = Some(d.path().join("heads"));
    let open = |s: consent::Setting| Latch::open(&c).unwrap().with_consent(s);
    let l = open(setting.clone());
    let now = kijito_latch::time::now_ms();
    l.init(now, &InitInput { objective: "o".into(), ..Default::default() }).unwrap();
    let call = br#"{"tool_name":"Bash","tool_input":{"command":"rm -rf build"}}"#;
    // requested (no token shown), not yet approved: refused
    let issued = l.consent_request_under(now, call, "rm -rf build", Risk::Low, &setting).unwrap();
    assert!(issued.token.is_empty() && issued.key.is_some());
    assert_eq!(l.tool_gate(now + 1, call, &|_, _, _| false).unwrap_err().code(), "consent_not_authorized");
    // approved by the user's key: passes once
    assert!(matches!(l.approve(now + 2, &issued.record.id, &key, &public, None).unwrap(), PromptOutcome::Confirmed { .. }));
    l.tool_gate(now + 3, call, &|_, _, _| false).unwrap();
    assert_eq!(l.tool_gate(now + 4, call, &|_, _, _| false).unwrap_err().code(), "consent_not_authorized");
    // a record confirmed by a text token (issued before the user switched to
    // key mode) does not pass in key mode
    let token_latch = open(consent::Setting::default());
    let t = token_latch.consent_request(now + 5, call, "rm -rf build", Risk::Low).unwrap();
    assert!(matches!(token_latch.user_prompt(now + 6, &t.token).unwrap(), Some(PromptOutcome::Confirmed { .. })));
    assert_eq!(l.tool_gate(now + 7, call, &|_, _, _| false).unwrap_err().code(), "consent_signature_required");
    // an unusable consent configuration refuses even a good record
    let broken = consent::Setting { invalid: Some((kijito_latch::codes::CONSENT_CONFIG_INSECURE.into(), "test".into())), ..setting };
    assert_eq!(open(broken).tool_gate(now + 8, call, &|_, _, _| false).unwrap_err().code(), "consent_config_insecure");
}
