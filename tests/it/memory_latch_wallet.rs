//! memory-latch wallet consent mode: with a configured
//! signer, a high-risk consent request is confirmed only by the user's own
//! message carrying the signer's EIP-712 signature over (action hash, nonce,
//! expiry). Each attack is a test through the real binaries (memory-latch,
//! session-hook with real host payloads, the PreToolUse guard) and real
//! files; the signatures are made at test time with the fixture's test key
//! (k256), over the digest of the typed data memory-latch printed (whose
//! encoding fixtures/wallet/eip712-vectors.json checks against eth_account).
//! Expiry is also checked through the library with an injected clock.

#![allow(clippy::unwrap_used)]

use crate::support;
use support::gate as support_gate;

use k256::ecdsa::SigningKey;
use kijito_latch::wallet;
use serde_json::{json, Value};
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use support::latch::Env;
use support_gate::*;

const LATCH: &str = env!("CARGO_BIN_EXE_memory-latch");
const VECTORS: &str = include_str!("../../fixtures/wallet/eip712-vectors.json");

fn vectors() -> Value {
    serde_json::from_str(VECTORS).unwrap()
}

fn key(which: &str) -> SigningKey {
    let hex = vectors()[which].as_str().unwrap().trim_start_matches("0x").to_owned();
    let bytes: Vec<u8> = (0..32).map(|i| u8::from_str_radix(&hex[i * 2..i * 2 + 2], 16).unwrap()).collect();
    SigningKey::from_slice(&bytes).unwrap()
}

/// `0x` + r ‖ s ‖ v (v = 27/28): what a wallet returns for eth_signTypedData_v4.
fn sign(k: &SigningKey, digest: &[u8; 32]) -> String {
    let (sig, recid) = k.sign_prehash_recoverable(digest).unwrap();
    format!("0x{}{:02x}", wallet::hex(&sig.to_bytes()), 27 + recid.to_byte())
}

/// The high-s twin of a low-s signature: s' = n - s, v flipped.
fn high_s_twin(sig: &str) -> String {
    const N: [u8; 32] = [
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfe, 0xba, 0xae, 0xdc, 0xe6, 0xaf, 0x48,
        0xa0, 0x3b, 0xbf, 0xd2, 0x5e, 0x8c, 0xd0, 0x36, 0x41, 0x41,
    ];
    let raw = hexbytes(&sig[2..]);
    let mut out = [0u8; 32];
    let mut borrow = 0i16;
    for i in (0..32).rev() {
        let d = N[i] as i16 - raw[32 + i] as i16 - borrow;
        borrow = i16::from(d < 0);
        out[i] = d.rem_euclid(256) as u8;
    }
    let v = if raw[64] == 27 { 28 } else { 27 };
    format!("0x{}{}{:02x}", wallet::hex(&raw[..32]), wallet::hex(&out), v)
}

fn hexbytes(h: &str) -> Vec<u8> {
    (0..h.len() / 2).map(|i| u8::from_str_radix(&h[i * 2..i * 2 + 2], 16).unwrap()).collect()
}

fn b32(h: &str) -> [u8; 32] {
    hexbytes(h.trim_start_matches("0x").trim_start_matches("sha256:")).try_into().unwrap()
}

/// The user's wallet configuration at its default place
/// (`$HOME/.config/kijito-qa/memory-latch-wallet.json`).
fn write_wallet(w: &World, text: &str) -> PathBuf {
    support::write_config_file(&w.home.join(".config"), "memory-latch-wallet.json", text.as_bytes())
}

fn signer_config() -> String {
    json!({"schema": "memory-latch.wallet/v1", "signer": vectors()["signer_address"]}).to_string()
}

pub(crate) fn env() -> Env {
    let e = support::latch::env();
    write_wallet(&e.w, &signer_config());
    e.ok(&["init", "--objective", "wallet consent", "--next-step", "push"]);
    e
}

/// A wallet request as printed by `consent request --json`.
struct Req {
    action_hash: String,
    nonce: String,
    expires_at: u64,
}

impl Req {
    fn digest(&self) -> [u8; 32] {
        wallet::consent_digest(&b32(&self.action_hash), &b32(&self.nonce), self.expires_at)
    }
}

impl Env {
    fn request(&self, action: &str) -> Req {
        let (v, _) = self.request_json(action, "the action", "high");
        assert_eq!(v["token"], Value::Null, "wallet mode shows no token: {v}");
        let m = &v["wallet"]["typed_data"]["message"];
        let r = Req {
            action_hash: v["record"]["action_hash"].as_str().unwrap().into(),
            nonce: m["nonce"].as_str().unwrap().into(),
            expires_at: m["expiresAt"].as_u64().unwrap(),
        };
        assert_eq!(m["actionHash"].as_str().unwrap(), format!("0x{}", r.action_hash.trim_start_matches("sha256:")));
        assert_eq!(v["wallet"]["digest"].as_str().unwrap(), format!("0x{}", wallet::hex(&r.digest())));
        assert_eq!(v["wallet"]["typed_data"]["domain"], json!({"name": "memory-latch", "version": "1"}));
        r
    }
    fn consent(&self) -> String {
        self.status()["head"]["consent_state"].as_str().unwrap().to_owned()
    }
    fn ledger(&self) -> Value {
        serde_json::from_slice(&fs::read(self.ws.join(".memory-latch/tokens.json")).unwrap()).unwrap()
    }
}

fn refused(ctx: Option<String>, code: &str) {
    let ctx = ctx.expect("an answer");
    assert!(ctx.contains("NOT accepted") && ctx.contains(code), "expected {code}: {ctx}");
}

#[test]
fn the_signers_signature_from_the_user_confirms_once_and_a_replay_is_refused() {
    for host in ["claude", "codex"] {
        let e = env();
        let action = e.file("action.txt", "git push --force origin main\n");
        // the human-readable request names the signer and prints the typed data, no token
        let o = e.latch(&["consent", "request", "--action-file", &action, "--summary", "force push", "--risk", "high"]);
        let text = String::from_utf8(o.stdout).unwrap();
        assert!(
            text.contains("wallet consent mode") && text.contains(&vectors()["signer_address"].as_str().unwrap().to_lowercase()),
            "{text}"
        );
        assert!(text.contains("\"primaryType\":\"MemoryLatchConsent\"") && !text.contains("ACT-"), "{text}");
        let req = e.request(&action);
        let sig = sign(&key("signer_private_key"), &req.digest());
        let ctx = e.user_says(host, &format!("  {sig}\n")).unwrap();
        assert!(ctx.contains("confirmed consent"), "{ctx}");
        assert_eq!(e.consent(), "authorized");
        let rec = e.ledger()["tokens"].as_array().unwrap().last().unwrap().clone();
        assert_eq!(rec["wallet"]["signature"], json!(sig), "the ledger keeps the evidence");
        assert!(rec["reconfirmed_at_ms"].is_u64(), "the signature is the high-risk reconfirmation");
        // the same signature again, before the gate: already confirmed
        refused(e.user_says(host, &sig), "consent_already_confirmed");
        let (code, r) = e.gate(&action);
        assert_eq!(code, 0, "{r}");
        let consent = r["checks"].as_array().unwrap().iter().find(|c| c["name"] == "consent_integrity").unwrap().clone();
        assert!(consent["message"].as_str().unwrap().contains("EIP-712"), "{consent}");
        // replayed nonce: the used request's signature authorizes nothing again
        refused(e.user_says(host, &sig), "wallet_nonce_replayed");
        assert_eq!(e.consent(), "pending");
        let (code, _) = e.gate(&action);
        assert_eq!(code, 1);
    }
}

#[test]
fn signatures_over_another_action_by_another_signer_or_high_s_are_refused() {
    let e = env();
    let action = e.file("action.txt", "git push --force origin main\n");
    let req = e.request(&action);
    // over another action hash (same nonce and expiry)
    let other = Req {
        action_hash: kijito_latch::action_hash(b"rm -rf /srv/data\n").unwrap().into(),
        nonce: req.nonce.clone(),
        expires_at: req.expires_at,
    };
    refused(e.user_says("claude", &sign(&key("signer_private_key"), &other.digest())), "wallet_signature_unmatched");
    // over another nonce or expiry
    let shifted = Req { action_hash: req.action_hash.clone(), nonce: req.nonce.clone(), expires_at: req.expires_at + 3600 };
    refused(e.user_says("claude", &sign(&key("signer_private_key"), &shifted.digest())), "wallet_signature_unmatched");
    // by the wrong key
    refused(e.user_says("claude", &sign(&key("other_private_key"), &req.digest())), "wallet_signature_unmatched");
    // the malleable high-s twin of the right signature
    let good = sign(&key("signer_private_key"), &req.digest());
    refused(e.user_says("claude", &high_s_twin(&good)), "wallet_signature_malleable");
    assert_eq!(e.consent(), "pending");
    // the fixture's own vectors through the hook: eth_account's high-s twin is refused too
    refused(e.user_says("claude", vectors()["signature_high_s_twin"].as_str().unwrap()), "wallet_signature_malleable");
    // the agent rewrites the ledger's signer to a key it holds: the hook checks the configured signer
    let mut l = e.ledger();
    let last = l["tokens"].as_array().unwrap().len() - 1;
    l["tokens"][last]["wallet"]["signer"] = json!(vectors()["other_address"].as_str().unwrap().to_lowercase());
    fs::write(e.ws.join(".memory-latch/tokens.json"), serde_json::to_vec(&l).unwrap()).unwrap();
    refused(e.user_says("claude", &sign(&key("other_private_key"), &req.digest())), "wallet_signature_unmatched");
    assert_eq!(e.consent(), "pending");
    // with the rewritten signer the request matches no configured-signer signature at all
    refused(e.user_says("claude", &good), "wallet_signature_unmatched");
    // a fresh request: the good signature over it confirms, and a non-standalone message never does
    let action2 = e.file("action2.txt", "git push origin main\n");
    let req2 = e.request(&action2);
    let good2 = sign(&key("signer_private_key"), &req2.digest());
    assert_eq!(e.user_says("claude", &format!("here it is: {good2}")), None);
    assert!(e.user_says("claude", &good2).unwrap().contains("confirmed consent"));
    assert_eq!(e.consent(), "authorized");
}

#[test]
fn a_signature_typed_by_the_model_in_a_tool_call_is_denied_and_refused() {
    let e = env();
    let action = e.file("action.txt", "git push --force origin main\n");
    let req = e.request(&action);
    let sig = sign(&key("signer_private_key"), &req.digest());
    let ws = e.ws.to_str().unwrap();
    for host in ["claude", "codex"] {
        for line in [
            format!("memory-latch consent confirm --action-file {action} --message {sig} --workspace {ws}"),
            format!("memory-latch consent confirm --signature {sig}"),
            format!("memory-latch consent request --action-file {action} --summary {sig} --risk high --message {sig}"),
        ] {
            let v: Value = serde_json::from_str(&e.guard(host, &line).expect("an answer")).unwrap();
            assert_eq!(v["hookSpecificOutput"]["permissionDecision"], "deny", "{host}: {line}");
        }
    }
    // and the binary refuses it anyway, were the guard bypassed
    let o = e.latch(&["consent", "confirm", "--action-file", &action, "--message", &sig]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).starts_with("kijito_memory_latch_failed:consent_requires_user_message"));
    assert_eq!(e.consent(), "pending");
    assert!(e.ledger()["tokens"][0]["wallet"]["signature"].is_null());
}

#[test]
fn without_a_usable_signer_config_it_fails_closed_to_token_mode_with_a_notice() {
    // 1. nothing configured: token mode, no notice (the default)
    let e = env();
    fs::remove_file(e.w.home.join(".config/kijito-qa/memory-latch-wallet.json")).unwrap();
    let action = e.file("action.txt", "deploy\n");
    let (v, err) = e.request_json(&action, "the action", "high");
    assert!(v["token"].as_str().unwrap().starts_with("ACT-") && v["wallet"].is_null() && v["wallet_notice"].is_null(), "{v}");
    assert!(!err.contains("notice"), "{err}");
    // 2. a malformed config (mistyped address): token mode with a notice
    write_wallet(&e.w, &json!({"schema": "memory-latch.wallet/v1", "signer": "0x9b65d0B1B43c9aB03545a78f0d962122176Bc23"}).to_string());
    let (v, err) = e.request_json(&action, "the action", "high");
    assert!(v["token"].as_str().unwrap().starts_with("ACT-"), "{v}");
    assert!(v["wallet_notice"].as_str().unwrap().contains("wallet_config_invalid"), "{v}");
    assert!(err.contains("notice") && err.contains("token mode"), "{err}");
    // the token confirms as usual (twice, high risk), so consent still needs the user
    let t = v["token"].as_str().unwrap().to_owned();
    assert!(e.user_says("claude", &t).unwrap().contains("second"));
    assert!(e.user_says("claude", &t).unwrap().contains("confirmed consent"));
    // 3. a config readable by others: token mode with a notice
    let p = write_wallet(&e.w, &signer_config());
    fs::set_permissions(&p, fs::Permissions::from_mode(0o644)).unwrap();
    let (v, _) = e.request_json(&action, "the action", "high");
    assert!(v["token"].is_string() && v["wallet_notice"].is_string(), "{v}");
    // 4. MEMORY_LATCH_WALLET_FILE naming a missing file: token mode with a notice
    let mut e2 = env();
    let missing = e2.w.dir().join("missing-wallet.json");
    e2.env.push(("MEMORY_LATCH_WALLET_FILE", missing));
    let a2 = e2.file("a.txt", "x\n");
    let (v, _) = e2.request_json(&a2, "the action", "high");
    assert!(v["token"].is_string() && v["wallet_notice"].as_str().unwrap().contains("does not exist"), "{v}");
    // 5. the floor is the user's: with no `min_risk` the wallet applies to
    // every action, whatever `--risk` the requester (the agent) chose
    // (a `--risk medium` of the agent's skipped the wallet).
    let e3 = env();
    let a3 = e3.file("a.txt", "x\n");
    for risk in ["low", "medium"] {
        let (v, _) = e3.request_json(&a3, "the action", risk);
        assert!(v["token"].is_null() && v["wallet"].is_object(), "{risk}: {v}");
    }
    // 5b. a floor the user set above low is the lowest risk of every
    // request: the agent's `--risk medium` gets no token, the request is
    // high risk and needs the signature (`min_risk: high` and the
    // agent's `--risk medium` used to issue a text token).
    write_wallet(
        &e3.w,
        &json!({"schema": "memory-latch.wallet/v1", "signer": vectors()["signer_address"], "min_risk": "high"}).to_string(),
    );
    for risk in ["low", "medium"] {
        let (v, _) = e3.request_json(&a3, "the action", risk);
        assert!(v["token"].is_null() && v["wallet"].is_object() && v["record"]["risk"] == "high", "{risk}: {v}");
    }
    // 6. a wallet request whose config disappears before the user signs: nothing confirms
    let e4 = env();
    let a4 = e4.file("a.txt", "x\n");
    let req = e4.request(&a4);
    let sig = sign(&key("signer_private_key"), &req.digest());
    write_wallet(&e4.w, "{}");
    refused(e4.user_says("claude", &sig), "wallet_config_invalid");
    assert_eq!(e4.consent(), "pending");
}

#[test]
fn an_expired_request_is_refused_with_the_injected_clock() {
    use kijito_latch::{Config, Latch, PromptOutcome, Risk};
    let d = tempfile::tempdir().unwrap();
    fs::set_permissions(d.path(), fs::Permissions::from_mode(0o700)).unwrap();
    let ws = d.path().join("ws");
    fs::create_dir(&ws).unwrap();
    let mut c = Config::new(&ws);
    c.heads_dir = Some(d.path().join("heads"));
    let l = Latch::open(&c).unwrap();
    l.init(1_000, &kijito_latch::InitInput { objective: "o".into(), ..Default::default() }).unwrap();
    let cfg = d.path().join("wallet.json");
    write_private(&cfg, signer_config().as_bytes());
    let setting = wallet::Setting::load(&cfg, true, &ws);
    let t0 = 1_800_000_000_000u64;
    let issued = l.consent_request_with(t0, b"deploy\n", "deploy", Risk::High, &setting).unwrap();
    assert!(issued.token.is_empty());
    let ch = issued.wallet.unwrap();
    assert_eq!(ch.expires_at, (t0 + 600_000) / 1000);
    let sig = sign(&key("signer_private_key"), &ch.digest(&issued.record.action_hash).unwrap());
    let code = |o: Option<PromptOutcome>| match o {
        Some(PromptOutcome::Refused { code, .. }) => code,
        other => panic!("{other:?}"),
    };
    assert_eq!(code(l.user_signature(t0 + 600_000, &sig, &setting).unwrap()).as_str(), "wallet_expired");
    assert_eq!(code(l.user_signature(t0 + 3_600_000, &sig, &setting).unwrap()).as_str(), "wallet_expired");
    // one millisecond before the expiry it still confirms
    assert!(matches!(l.user_signature(t0 + 599_999, &sig, &setting).unwrap(), Some(PromptOutcome::Confirmed { .. })));
}

#[test]
fn the_gate_verifies_the_stored_signature_again() {
    let e = env();
    let action = e.file("action.txt", "git push --force origin main\n");
    let req = e.request(&action);
    let good = sign(&key("signer_private_key"), &req.digest());
    assert!(e.user_says("codex", &good).unwrap().contains("confirmed consent"));
    let original = fs::read(e.ws.join(".memory-latch/tokens.json")).unwrap();
    let check = |r: &Value| r["checks"].as_array().unwrap().iter().find(|c| c["name"] == "consent_integrity").unwrap()["code"].clone();
    // the agent swaps the stored evidence for its own key's signature
    let mut l = e.ledger();
    l["tokens"][0]["wallet"]["signature"] = json!(sign(&key("other_private_key"), &req.digest()));
    fs::write(e.ws.join(".memory-latch/tokens.json"), serde_json::to_vec(&l).unwrap()).unwrap();
    let (code, r) = e.gate(&action);
    assert_eq!((code, check(&r)), (1, json!("consent_record_mismatch")), "{r}");
    // ... or erases it
    l["tokens"][0]["wallet"]["signature"] = Value::Null;
    fs::write(e.ws.join(".memory-latch/tokens.json"), serde_json::to_vec(&l).unwrap()).unwrap();
    assert_eq!(check(&e.gate(&action).1), json!("consent_record_mismatch"));
    // the configured signer changed since the confirmation
    fs::write(e.ws.join(".memory-latch/tokens.json"), &original).unwrap();
    write_wallet(&e.w, &json!({"schema": "memory-latch.wallet/v1", "signer": vectors()["other_address"]}).to_string());
    assert_eq!(check(&e.gate(&action).1), json!("consent_record_mismatch"));
    // restored: it passes
    write_wallet(&e.w, &signer_config());
    let (code, r) = e.gate(&action);
    assert_eq!(code, 0, "{r}");
}

/// The hook checks everything but the secp256k1 recovery itself, which the
/// installed `memory-latch wallet-recover` next to it does (so the hook
/// binary links no k256, docs/architecture.md). A hook whose sibling is
/// missing, fails or answers something else confirms nothing, counts no
/// wrong attempt and consumes nothing: the real pair then confirms.
#[test]
fn without_a_working_sibling_memory_latch_the_hook_confirms_nothing() {
    let e = env();
    let action = e.file("action.txt", "git push --force origin main\n");
    let req = e.request(&action);
    let sig = sign(&key("signer_private_key"), &req.digest());
    let before = e.ledger();
    let dir = e.w.home.join("hook-alone");
    fs::create_dir_all(&dir).unwrap();
    // UserPromptSubmit is prompt-hook's (session-hook execs it).
    let hook = dir.join("prompt-hook");
    kijito_testkit::copy_executable(std::path::Path::new(&support::bin("prompt-hook")), &hook);
    let hook = hook.to_str().unwrap().to_owned();
    // A session-hook installed without its prompt-hook sibling answers a
    // prompt with nothing: nothing is confirmed, nothing counted.
    let lone = e.w.home.join("session-hook-alone");
    fs::create_dir_all(&lone).unwrap();
    kijito_testkit::copy_executable(std::path::Path::new(&*SESSION_HOOK), &lone.join("session-hook"));
    for host in ["claude", "codex"] {
        assert_eq!(e.user_says_to(lone.join("session-hook").to_str().unwrap(), host, &sig), None);
        assert_eq!((e.consent(), e.ledger()), ("pending".to_owned(), before.clone()));
    }
    let sibling = dir.join("memory-latch");
    // missing, exits 1, prints something that is not an answer
    for fake in [None, Some("/bin/false"), Some("/bin/echo")] {
        let _ = fs::remove_file(&sibling);
        if let Some(target) = fake {
            std::os::unix::fs::symlink(target, &sibling).unwrap();
        }
        for host in ["claude", "codex"] {
            let ctx = e.user_says_to(&hook, host, &sig).expect("an answer");
            assert!(
                ctx.contains("could not be processed (wallet_recovery_failed:") && ctx.ends_with("nothing was confirmed."),
                "{fake:?} {host}: {ctx}"
            );
            assert_eq!(e.consent(), "pending");
            assert_eq!(e.ledger(), before, "{fake:?}: no wrong attempt, no signature stored");
        }
    }
    // a sibling that is the real memory-latch: confirmed
    fs::remove_file(&sibling).unwrap();
    std::os::unix::fs::symlink(LATCH, &sibling).unwrap();
    assert!(e.user_says_to(&hook, "claude", &sig).unwrap().contains("confirmed consent"));
    assert_eq!(e.consent(), "authorized");
}

/// `memory-latch wallet-recover`: the signer each digest recovers to (the
/// fixture's eth_account vectors), the same form rules as the hook, bounded
/// argv; pure (no latch needed, nothing written).
#[test]
fn wallet_recover_prints_the_recovered_signers_and_refuses_bad_input() {
    let v = vectors();
    let e = env();
    let run = |args: &[&str]| {
        let mut c = e.w.command(LATCH);
        c.arg("wallet-recover").args(args).stdin(std::process::Stdio::null());
        c.output().unwrap()
    };
    let s = |k: &str| v[k].as_str().unwrap().to_owned();
    let o = run(&["--signature", &s("signature"), "--digest", &s("digest"), "--digest", &s("other_action_digest")]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = String::from_utf8(o.stdout).unwrap();
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 2, "{out}");
    assert_eq!(lines[0], s("signer_address").to_lowercase());
    assert!(lines[1] != lines[0] && lines[1].len() == 42, "another digest recovers another address: {out}");
    let o = run(&["--signature", &s("signature_by_other_key"), "--digest", &s("digest")]);
    assert_eq!(String::from_utf8(o.stdout).unwrap(), format!("{}\n", s("other_address").to_lowercase()));
    // the high-s twin: the same refusal as the hook's
    let o = run(&["--signature", &s("signature_high_s_twin"), "--digest", &s("digest")]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).starts_with("kijito_memory_latch_failed:wallet_signature_malleable"));
    // r = 0
    let zero_r = format!("0x{}{}", "0".repeat(64), &s("signature")[66..]);
    let o = run(&["--signature", &zero_r, "--digest", &s("digest")]);
    assert!(String::from_utf8_lossy(&o.stderr).starts_with("kijito_memory_latch_failed:wallet_signature_invalid"), "{o:?}");
    // usage: not hex, short, no digest, too many digests
    for args in [
        vec!["--signature".to_owned(), "0xzz".to_owned(), "--digest".to_owned(), s("digest")],
        vec!["--signature".to_owned(), s("signature"), "--digest".to_owned(), s("digest")[..64].to_owned()],
        vec!["--signature".to_owned(), s("signature")],
        std::iter::once("--signature".to_owned())
            .chain(std::iter::once(s("signature")))
            .chain((0..129).flat_map(|_| ["--digest".to_owned(), s("digest")]))
            .collect(),
    ] {
        let a: Vec<&str> = args.iter().map(String::as_str).collect();
        let o = run(&a);
        assert_eq!(o.status.code(), Some(2), "{}", String::from_utf8_lossy(&o.stderr));
        assert!(o.stdout.is_empty());
    }
}
