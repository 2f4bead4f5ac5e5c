//! The `memory-latch` command line (bins/memory-latch.rs is its thin main):
//! flags, the renderers of each command's human and `--json` output, and the
//! exit policy (0 ok, 1 failure or untrusted, 2 usage).

use crate::{self as latch, gate::GateInput, recover, Config, Latch, Risk};
use kijito_cli as cli;
use kijito_files::private;
use kijito_protocol::argv::{Args, Command, Flag, Tool};
use kijito_protocol::codes::{cli as cli_codes, latch as codes};
use kijito_protocol::{Error, Result};
use std::path::PathBuf;

const COMMON: [Flag; 3] = [Flag::value("--workspace"), Flag::value("--hmac-key-file"), Flag::switch("--json")];

macro_rules! flags {
    ($($f:expr),* $(,)?) => { &[COMMON[0], COMMON[1], COMMON[2], $($f),*] };
}

pub const TOOL: Tool = Tool {
    name: "memory-latch",
    code_name: "memory_latch",
    help: HELP,
    commands: &[
        Command {
            name: "init",
            flags: flags![
                Flag::value("--objective"),
                Flag::repeated("--non-negotiable", 32),
                Flag::value("--next-step"),
                Flag::value("--integrity")
            ],
        },
        Command {
            name: "checkpoint",
            flags: flags![
                Flag::value("--objective"),
                Flag::repeated("--non-negotiable", 32),
                Flag::value("--blocked-by"),
                Flag::value("--next-step"),
                Flag::repeated("--known", 32),
                Flag::repeated("--unknown", 32),
                Flag::repeated("--decision", 32),
                Flag::value("--last-good-checkpoint"),
                Flag::value("--risk"),
                Flag::switch("--sign"),
                Flag::value("--secret-key"),
                Flag::value("--passphrase-file"),
                Flag::value("--note-out"),
            ],
        },
        Command { name: "status", flags: flags![] },
        Command { name: "verify", flags: flags![Flag::value("--since-checkpoint"), Flag::value("--public-key")] },
        Command {
            name: "keygen",
            flags: flags![
                Flag::value("--secret-key"),
                Flag::value("--public-key"),
                Flag::value("--passphrase-file"),
                Flag::switch("--no-passphrase")
            ],
        },
        Command {
            name: "consent request",
            flags: flags![
                Flag::value("--action-file"),
                Flag::value("--summary"),
                Flag::value("--risk"),
                Flag::value("--session-id"),
                Flag::value("--data-dir")
            ],
        },
        Command { name: "consent confirm", flags: flags![Flag::value("--action-file"), Flag::value("--message")] },
        Command {
            name: "approve",
            flags: flags![
                Flag::value("--token-id"),
                Flag::value("--secret-key"),
                Flag::value("--expires-in"),
                Flag::value("--session-id"),
                Flag::value("--data-dir")
            ],
        },
        Command {
            name: "gate",
            flags: flags![
                Flag::value("--action-file"),
                Flag::value("--checkpoint"),
                Flag::repeated("--target", 256),
                Flag::value("--intended"),
                Flag::value("--result"),
            ],
        },
        Command { name: "tool-gate", flags: flags![Flag::value("--action-file"), Flag::value("--min-risk")] },
        Command {
            name: "tool-record",
            flags: flags![Flag::value("--action-file"), Flag::value("--tool-use-id"), Flag::value("--outcome")],
        },
        Command { name: "recover", flags: flags![Flag::value("--session-id"), Flag::value("--data-dir")] },
        Command { name: "reseed", flags: flags![Flag::value("--message")] },
        Command { name: "review", flags: flags![Flag::value("--message")] },
        Command { name: "detect", flags: &[Flag::value("--message"), Flag::switch("--json")] },
        Command { name: "wallet-recover", flags: &[Flag::value("--signature"), Flag::repeated("--digest", latch::tokens::MAX_TOKENS * 2)] },
    ],
};

pub const HELP: &str = "memory-latch: local tamper-evident continuity, consent tokens, gate checks, recovery

USAGE: memory-latch <command> [--workspace DIR] [--hmac-key-file F] [--json] ...

  init        --objective TEXT [--non-negotiable TEXT]... [--next-step TEXT] [--integrity checksum|hmac]
  checkpoint  [--objective T] [--blocked-by T] [--next-step T] [--known T]... [--unknown T]...
              [--decision T]... [--non-negotiable T]... [--last-good-checkpoint sha256:HEX] [--risk low|medium|high]
              [--sign --secret-key F [--passphrase-file F] [--note-out F]]: the user signs a checkpoint
              of the chain after this entry (C2SP signed note) with their Ed25519 (minisign) key
  status      current state (last 3 decisions only)
  verify      [--since-checkpoint F] the whole chain and its RFC 6962 tree head; exit 0 trusted,
              1 untrusted (every finding listed); with F (a saved tree head or verify --json
              report, or a checkpoint note): the chain must be an append-only extension of it
              (consistency proof); --public-key F: the note must carry a valid signature by that key
  keygen      --secret-key F --public-key F [--passphrase-file F | --no-passphrase]: a minisign
              Ed25519 key pair for signing checkpoints (the passphrase is read from the terminal,
              echo off, unless --passphrase-file names an owner-only file outside the workspace)
  consent request --action-file F --summary TEXT --risk low|medium|high [--session-id S --data-dir D]
              (wallet consent mode: prints EIP-712 typed data; the user sends the signature;
              key consent mode: prints the user's approve command)
  consent confirm   always refused (consent_requires_user_message): the user confirms by sending
              the token as their whole message (the UserPromptSubmit hook records it)
  approve     [--token-id ID] [--secret-key F] [--expires-in SECONDS] [--session-id S --data-dir D]: key consent mode, run by the USER
              in their own terminal (never by the agent: the command guard denies it): shows the
              pending request, reads the key's passphrase from /dev/tty (refused without one:
              approve_needs_tty), signs the action hash, the record's nonce and the expiry with the
              configured Ed25519 key and records the signature in the ledger (consent confirmed)
  gate        --action-file F --checkpoint sha256:HEX --target PATH [--target PATH]... --intended F --result F
  tool-gate   --action-file F [--min-risk R]: the PreToolUse hook's consent check for one tool call (the action
              file pretool-hook wrote): exit 0 when the head authorizes exactly that action, the
              authorization consumed (a gate_pass entry); else exit 1 with the failing check's code.
              Run by pretool-hook, never by the agent (the command guard denies it)
  tool-record --action-file F --tool-use-id ID --outcome ran|failed: consent mode host, the PostToolUse
              hook's record of a call the user allowed in the host's own dialog (a host_consent entry
              with its action hash); nothing is authorized or consumed. Run by pretool-hook, never by
              the agent (the command guard denies it)
  recover     [--session-id S --data-dir D] recovery protocol (Silent Witness after max attempts)
  reseed      issue a reseed token in Silent Witness; the user's own message with it reseeds
  review      issue a review token in degraded mode (consent locked by a degraded_mode entry);
              the user's own message with it ends degraded mode (a checkpoint never does)
  detect      --message TEXT: exit 0 and print the signal if it is a continuity-break phrase, else 1
  wallet-recover --signature 0xHEX130 --digest 0xHEX64 [--digest ...]: the address each digest's
              signer recovers to (one line each, or none); pure, reads and writes nothing (the
              UserPromptSubmit hook runs it to check a wallet signature)

--session-id S --data-dir D (consent request, approve, recover): the host session and the data dir
whose flight recorder gets the command's line (<D>/journal/S.jsonl; the hooks name both in the
commands they give); without --session-id the line goes to <D>/journal/user.jsonl, D defaulting to
the config's dataDir, else ~/.cache/kijito-qa (an absent data dir gets no line). Docs: docs/protocol.md §13.

Environment: MEMORY_LATCH_HMAC_KEY_FILE (hmac key file, owner-only, outside the workspace);
MEMORY_LATCH_PUBLIC_KEY_FILE (the public key verify uses when --public-key is not given);
MEMORY_LATCH_WALLET_FILE (wallet consent mode: memory-latch.wallet/v1 with the signer address; default
$XDG_CONFIG_HOME/kijito-qa/memory-latch-wallet.json; absent: token mode);
MEMORY_LATCH_CONSENT_FILE (the user's consent configuration, memory-latch.consent/v1: mode token|key|wallet|host,
floor, public_key; default $XDG_CONFIG_HOME/kijito-qa/memory-latch-consent.json; absent: the wallet file decides);
MEMORY_LATCH_HEADS_DIR (where head records live; default $XDG_STATE_HOME/kijito-qa/latch-heads);
MEMORY_LATCH_BOOT_ID_FILE (test hook: where the boot id is read, default /proc/sys/kernel/random/boot_id).
Exit status: 0 ok, 1 failure or untrusted, 2 usage. Docs: docs/memory-latch.md
";

fn env_path(name: &str) -> Option<PathBuf> {
    std::env::var_os(name).filter(|v| !v.is_empty()).map(PathBuf::from)
}

fn open(args: &Args) -> Result<Latch> {
    let workspace = match args.raw("--workspace") {
        Some(w) => PathBuf::from(w),
        None => std::env::current_dir().map_err(|e| Error::new(codes::WORKSPACE_INVALID, format!("no current directory: {e}")))?,
    };
    let mut config = Config::new(workspace);
    config.hmac_key_file = args.raw("--hmac-key-file").map(PathBuf::from).or_else(|| env_path(latch::HMAC_KEY_ENV));
    if let Some(p) = env_path("MEMORY_LATCH_BOOT_ID_FILE") {
        config.boot_id_file = p;
    }
    Latch::open(&config)
}

fn read_input(path: &str, flag: &str) -> Result<Vec<u8>> {
    let rules = private::FileRules { owner_only: false, min_bytes: 0, max_bytes: latch::MAX_ACTION_BYTES as u64 };
    private::read_checked(std::path::Path::new(path), rules)
        .map(|(b, _)| b)
        .map_err(|e| Error::new(codes::ACTION_FILE_INVALID, format!("{flag}: {}", e.message())))
}

/// What `--since-checkpoint F` names.
enum Since {
    /// A saved tree head (`{"schema":"memory-latch.tree-head/v1",...}`) or
    /// a whole `verify --json` report holding one as `tree_head`.
    Head(crate::chain::TreeHead),
    /// A checkpoint note (signed or not) or a saved checkpoint
    /// (`memory-latch.checkpoint/v1`).
    Note(Box<crate::checkpoint::CheckpointNote>),
}

fn read_since(path: &str) -> Result<Since> {
    let bytes = read_input(path, "--since-checkpoint")?;
    let text = std::str::from_utf8(&bytes).map_err(|_| Error::new(codes::CHECKPOINT_FILE_INVALID, "--since-checkpoint: not UTF-8"))?;
    if !text.trim_start().starts_with('{') {
        return crate::checkpoint::parse_note(text).map(|n| Since::Note(Box::new(n)));
    }
    let v: serde_json::Value =
        serde_json::from_str(text).map_err(|e| Error::new(codes::CHECKPOINT_FILE_INVALID, format!("--since-checkpoint: {e}")))?;
    if v.get("schema").and_then(|s| s.as_str()) == Some(crate::checkpoint::SAVED_SCHEMA) {
        return crate::checkpoint::read_checkpoint_text(text).map(|n| Since::Note(Box::new(n)));
    }
    let th = v.get("tree_head").cloned().unwrap_or(v);
    let th: crate::chain::TreeHead = serde_json::from_value(th)
        .map_err(|e| Error::new(codes::CHECKPOINT_FILE_INVALID, format!("--since-checkpoint: not a tree head: {e}")))?;
    if th.schema != crate::chain::TREE_HEAD_SCHEMA || crate::merkle::parse_hex(&th.root).is_none() || th.size == 0 {
        return Err(Error::new(codes::CHECKPOINT_FILE_INVALID, "--since-checkpoint: unknown schema, empty tree or malformed root"));
    }
    Ok(Since::Head(th))
}

fn passphrase_source(args: &Args) -> latch::sign::PassphraseSource {
    match args.raw("--passphrase-file") {
        Some(p) => latch::sign::PassphraseSource::File(PathBuf::from(p)),
        None => latch::sign::PassphraseSource::Terminal,
    }
}

/// `checkpoint --sign`: the user's key, loaded (and the passphrase asked
/// for) before anything is written.
fn signing_key(args: &Args, latch: &Latch) -> Result<Option<latch::sign::SigningKey>> {
    let sign = args.has("--sign");
    for f in ["--secret-key", "--passphrase-file", "--note-out"] {
        if !sign && args.has(f) {
            return Err(Error::usage(cli_codes::FLAG_CONFLICT, format!("{f} needs --sign")));
        }
    }
    if !sign {
        return Ok(None);
    }
    let sk = args.raw("--secret-key").ok_or_else(|| Error::usage(cli_codes::MISSING_FLAG, "--sign needs --secret-key F"))?;
    let root = latch.paths().root.clone();
    let source = passphrase_source(args);
    latch::sign::load_secret_key(std::path::Path::new(sk), Some(&root), || {
        latch::sign::read_passphrase(&source, Some(&root), false).map(Some)
    })
    .map(Some)
}

fn write_note(path: &str, note: &str) -> Result<()> {
    private::create_new(std::path::Path::new(path), note.as_bytes())
        .map_err(|e| Error::new(codes::WRITE_FAILED, format!("--note-out: {}", e.message())))
}

fn required_file(args: &Args, flag: &str) -> Result<Vec<u8>> {
    let path = args.raw(flag).ok_or_else(|| Error::usage(cli_codes::MISSING_FLAG, format!("{flag} is required")))?;
    read_input(path, flag)
}

fn risk(args: &Args, required: bool) -> Result<Option<Risk>> {
    match args.raw("--risk") {
        Some(r) => Risk::parse(r).map(Some),
        None if required => Err(Error::usage(cli_codes::MISSING_FLAG, "--risk is required")),
        None => Ok(None),
    }
}

fn owned(v: Vec<&str>) -> Vec<String> {
    v.into_iter().map(str::to_owned).collect()
}

fn json_out<T: serde::Serialize>(value: &T) -> Result<()> {
    let text = serde_json::to_string(value).map_err(|e| Error::new(codes::OUTPUT_FAILED, e.to_string()))?;
    cli::print_stdout(&format!("{text}\n"))
}

fn now() -> u64 {
    latch::time::now_ms()
}

/// `memory-latch verify`: the whole chain; an untrusted verification of an
/// initialised latch enters Silent Witness (docs/memory-latch.md) before the
/// report is returned. Entering may itself fail on a broken latch; the report
/// stands either way.
pub fn verify(latch: &Latch, now_ms: u64, since: Option<&crate::chain::TreeHead>) -> crate::chain::VerifyReport {
    witness_on_failure(latch, now_ms, latch.verify_since(since))
}

fn witness_on_failure(latch: &Latch, now_ms: u64, report: crate::chain::VerifyReport) -> crate::chain::VerifyReport {
    if !report.trusted && report.initialised {
        let _ = latch.enter_silent_witness(now_ms, &report);
    }
    report
}

/// Where this command records its line (docs/protocol.md §13).
fn command_flight(args: &Args) -> Result<Option<latch::flight::CommandFlight>> {
    let session: Option<kijito_protocol::ids::SessionId> = args.optional("--session-id")?;
    let data: Option<kijito_protocol::ids::AbsPath> = args.optional("--data-dir")?;
    latch::flight::CommandFlight::resolve(session, data.as_ref())
}

/// The controlling terminal, read and write, or `approve_needs_tty`.
fn open_tty() -> Result<std::fs::File> {
    std::fs::OpenOptions::new().read(true).write(true).open("/dev/tty").map_err(|e| {
        Error::new(
            codes::APPROVE_NEEDS_TTY,
            format!("memory-latch approve needs the user's own terminal (/dev/tty: {e}); it never reads the passphrase from stdin, argv or the environment"),
        )
    })
}

/// `memory-latch approve` (key consent mode): the user, in their own
/// terminal, signs the pending request with their key.
fn approve(args: &Args) -> Result<i32> {
    use std::io::Write as _;
    let latch = open(args)?;
    let root = latch.paths().root.clone();
    let setting = latch::load_consent_setting(&root);
    if let Some(e) = setting.error() {
        return Err(e);
    }
    if setting.mode != latch::consent::Mode::Key {
        return Err(Error::new(
            codes::APPROVE_NOT_KEY_MODE,
            format!("the consent mode is {}, not key: approve signs only key-mode requests", setting.mode.as_str()),
        ));
    }
    let public =
        setting.public_key.clone().ok_or_else(|| Error::new(codes::CONSENT_CONFIG_INVALID, "key consent mode without a public key"))?;
    let expires_in = match args.raw("--expires-in") {
        None => None,
        Some(t) => match t.parse::<u64>() {
            Ok(n) if (1..=86_400).contains(&n) => Some(n),
            _ => return Err(Error::usage(cli_codes::INVALID_ARGUMENT, "--expires-in must be 1 to 86400 seconds")),
        },
    };
    let sk = args.raw("--secret-key").map(PathBuf::from).or_else(|| setting.secret_key_file.clone()).ok_or_else(|| {
        Error::usage(cli_codes::MISSING_FLAG, "--secret-key F is required (or \"secret_key\" in the consent configuration)")
    })?;
    let flight = command_flight(args)?;
    let mut tty = open_tty()?;
    let rec = latch.pending_approval(now(), args.raw("--token-id"))?;
    let shown = format!(
        "memory-latch approve: the agent asks to act.\n  action:   {}\n  class:    {}\n  risk:     {}\n  hash:     {}\n  record:   {}\n  key:      {}\nEnter the passphrase to approve exactly this action once (Ctrl-C to refuse).\n",
        rec.summary,
        rec.purpose_class(),
        rec.risk.as_str(),
        rec.action_hash,
        rec.id,
        public.name
    );
    tty.write_all(shown.as_bytes()).map_err(|e| Error::new(codes::APPROVE_NEEDS_TTY, format!("cannot write to /dev/tty: {e}")))?;
    let key = latch::sign::load_secret_key(&sk, Some(&root), || {
        latch::sign::read_passphrase(&latch::sign::PassphraseSource::Terminal, Some(&root), false).map(Some)
    })?;
    let expires_at = expires_in.map(|n| now() / 1000 + n);
    let outcome = latch.approve(now(), &rec.id, &key, &public, expires_at)?;
    if let Some(f) = &flight {
        let (kind, fields) = latch::flight::approve_line(&outcome, &rec.id, &root);
        f.record(kind, fields);
    }
    if args.has("--json") {
        json_out(
            &serde_json::json!({"schema":"memory-latch.approve/v1","outcome":outcome,"token_id":rec.id,"action_hash":rec.action_hash,"key_name":public.name}),
        )?;
    } else {
        cli::print_stdout(&format!(
            "approved: {} for {} (signed by {}); the agent's gate passes once.\n",
            rec.id, rec.action_hash, public.name
        ))?;
    }
    Ok(0)
}

/// One `memory-latch` run from parsed argv: the command, its output
/// (human or `--json`) and the exit policy (0 ok, 1 failure or untrusted).
pub fn run(args: Args) -> Result<i32> {
    let json = args.has("--json");
    match args.subcommand.as_str() {
        "detect" => {
            let message = args.required::<String>("--message")?;
            let hit = latch::detect::continuity_break(&message);
            if json {
                json_out(&serde_json::json!({"schema":"memory-latch.detect/v1","matched":hit.is_some(),"signal":hit}))?;
            } else if let Some(s) = hit {
                cli::print_stdout(&format!("{s}\n"))?;
            }
            Ok(if hit.is_some() { 0 } else { 1 })
        }
        "wallet-recover" => {
            let invalid = |what: &str| {
                Error::usage(
                    cli_codes::INVALID_ARGUMENT,
                    format!("{what} must be 0x followed by hex digits (130 for --signature, 64 for --digest)"),
                )
            };
            let sig = latch::wallet::Sig::parse(&args.required::<String>("--signature")?).ok_or_else(|| invalid("--signature"))?;
            sig.check_form()?;
            let digests = args
                .raw_all("--digest")
                .into_iter()
                .map(|d| latch::wallet::parse_digest(d).ok_or_else(|| invalid("--digest")))
                .collect::<Result<Vec<_>>>()?;
            if digests.is_empty() {
                return Err(Error::usage(cli_codes::MISSING_FLAG, "--digest is required"));
            }
            cli::print_stdout(&latch::wallet::recover_lines(&sig, &digests))?;
            Ok(0)
        }
        "init" => {
            let latch = open(&args)?;
            let want_hmac = match args.raw("--integrity") {
                None | Some("checksum") => false,
                Some("hmac") => true,
                Some(_) => return Err(Error::usage(codes::INTEGRITY_INVALID, "--integrity must be checksum or hmac")),
            };
            let input = latch::InitInput {
                objective: args.required::<String>("--objective")?,
                non_negotiables: owned(args.raw_all("--non-negotiable")),
                next_single_step: args.raw("--next-step").map(str::to_owned),
                want_hmac,
            };
            let out = latch.init(now(), &input)?;
            if let Some(n) = &out.notice {
                eprintln!("memory-latch: {n}");
            }
            if json {
                json_out(&serde_json::json!({"schema":"memory-latch.init/v1","entry":out.entry,"notice":out.notice}))?;
            } else {
                cli::print_stdout(&format!(
                    "initialised {} ({} mode); entry 1 {}\n",
                    latch.paths().manifest.display(),
                    out.entry.integrity.mode.as_str(),
                    out.entry.integrity.payload_hash
                ))?;
            }
            Ok(0)
        }
        "checkpoint" => {
            let latch = open(&args)?;
            let list = |f: &str| if args.has(f) { Some(owned(args.raw_all(f))) } else { None };
            let input = latch::CheckpointInput {
                objective: args.raw("--objective").map(str::to_owned),
                non_negotiables: list("--non-negotiable"),
                blocked_by: args.raw("--blocked-by").map(str::to_owned),
                next_single_step: args.raw("--next-step").map(str::to_owned),
                known_state: list("--known"),
                unknown_state: list("--unknown"),
                decisions: owned(args.raw_all("--decision")),
                last_good_checkpoint: args.raw("--last-good-checkpoint").map(str::to_owned),
                risk: risk(&args, false)?,
            };
            let key = signing_key(&args, &latch)?;
            let e = latch.checkpoint(now(), &input)?;
            let Some(key) = key else {
                if json {
                    json_out(&e)?;
                } else {
                    cli::print_stdout(&format!("checkpoint entry {} {}\n", e.entry_seq, e.integrity.payload_hash))?;
                }
                return Ok(0);
            };
            let saved = latch.write_checkpoint(now(), Some(&key))?;
            if let Some(p) = args.raw("--note-out") {
                write_note(p, &saved.note)?;
            }
            if json {
                json_out(&serde_json::json!({"schema":"memory-latch.signed-checkpoint/v1","entry":e,"checkpoint":saved}))?;
            } else {
                cli::print_stdout(&format!(
                    "checkpoint entry {} {}\nsigned checkpoint of {} entries by {}:\n{}",
                    e.entry_seq,
                    e.integrity.payload_hash,
                    saved.size,
                    key.name(),
                    saved.note
                ))?;
            }
            Ok(0)
        }
        "status" => {
            let latch = open(&args)?;
            let s = latch.status(now())?;
            if json {
                json_out(&s)?;
            } else {
                let mut t = format!(
                    "entry {} ({}, {}) · {} mode\nobjective: {}\nnext single step: {}\nblocked by: {}\nconsent: {} · pending {} · action {}\nrisk: {} · recovery attempts: {}{}\n",
                    s.head.seq,
                    s.head.event.as_str(),
                    s.head.updated_at,
                    s.head.mode.as_str(),
                    s.objective,
                    s.next_single_step,
                    s.blocked_by,
                    s.head.consent_state.as_str(),
                    s.head.irreversible_action_pending,
                    latch::entry::action_or_none::text(&s.head.action_hash),
                    s.head.risk_level.as_str(),
                    s.head.recovery_attempts,
                    if s.silent_witness { "\nSILENT WITNESS ACTIVE" } else { "" }
                );
                if let Some(m) = s.one_step {
                    t.push_str(&format!(
                        "one-step mode: {} (context fatigue: one gated action per checkpoint naming the next step)\n",
                        m.as_str()
                    ));
                }
                for k in &s.known_state {
                    t.push_str(&format!("known: {k}\n"));
                }
                for u in &s.unknown_state {
                    t.push_str(&format!("unknown: {u}\n"));
                }
                for d in &s.decisions {
                    t.push_str(&format!("decision [{}]: {}\n", d.seq, d.text));
                }
                cli::print_stdout(&t)?;
            }
            Ok(0)
        }
        "verify" => {
            let latch = open(&args)?;
            let since = args.raw("--since-checkpoint").map(read_since).transpose()?;
            let key_file = args.raw("--public-key").map(PathBuf::from).or_else(|| env_path(latch::checkpoint::PUBLIC_KEY_ENV));
            let key = key_file.as_deref().map(latch::sign::load_public_key).transpose()?;
            let report = match (since, &key) {
                (None, _) => verify(&latch, now(), None),
                (Some(Since::Head(_)), Some(k)) => {
                    return Err(Error::new(
                        codes::CHECKPOINT_NOT_SIGNED_BY_KEY,
                        format!("--since-checkpoint names an unsigned tree head; a signature by {} is required", k.name),
                    ));
                }
                (Some(Since::Head(th)), None) => verify(&latch, now(), Some(&th)),
                (Some(Since::Note(n)), k) => {
                    let signed = match k {
                        Some(k) => {
                            n.note.verify(k)?;
                            Some(format!("the checkpoint's signature by {} verifies with the public key", k.name))
                        }
                        None if !n.note.signatures.is_empty() => {
                            Some("the checkpoint is signed; its signature was not checked (no --public-key)".to_owned())
                        }
                        None => None,
                    };
                    let mut report = latch.verify_checkpoint(&n.checkpoint);
                    report.notes.extend(signed);
                    witness_on_failure(&latch, now(), report)
                }
            };
            if json {
                json_out(&report)?;
            } else {
                let mut t = format!(
                    "{} · {} mode · {} entries in {} sealed segment(s) + live\n",
                    if report.trusted { "TRUSTED" } else { "UNTRUSTED" },
                    serde_json::to_value(report.mode).ok().and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default(),
                    report.entries,
                    report.segments
                );
                for f in &report.findings {
                    t.push_str(&format!("finding {}: {}\n", f.code, f.message));
                }
                for n in &report.notes {
                    t.push_str(&format!("note: {n}\n"));
                }
                if let Some(th) = &report.tree_head {
                    t.push_str(&format!("tree head: {} entries, root {}\n", th.size, th.root));
                }
                cli::print_stdout(&t)?;
            }
            if report.trusted {
                Ok(0)
            } else {
                let code = if report.findings.is_empty() {
                    codes::UNVERIFIABLE.into()
                } else if !report.initialised {
                    report.findings[0].code.clone()
                } else {
                    codes::UNTRUSTED.into()
                };
                Err(Error::new(code, format!("{} finding(s)", report.findings.len())))
            }
        }
        "keygen" => {
            let latch = open(&args)?;
            let (sk, pk) = (args.required::<String>("--secret-key")?, args.required::<String>("--public-key")?);
            let root = latch.paths().root.clone();
            let pass = if args.has("--no-passphrase") {
                if args.has("--passphrase-file") {
                    return Err(Error::usage(cli_codes::FLAG_CONFLICT, "--no-passphrase and --passphrase-file exclude each other"));
                }
                eprintln!(
                    "memory-latch: --no-passphrase: the secret key is NOT encrypted; anyone (the agent included) who can read it can sign"
                );
                None
            } else {
                Some(latch::sign::read_passphrase(&passphrase_source(&args), Some(&root), true)?)
            };
            let kg = latch::sign::keygen(std::path::Path::new(&sk), std::path::Path::new(&pk), pass.as_ref(), Some(&root))?;
            if json {
                json_out(
                    &serde_json::json!({"schema":"memory-latch.keygen/v1","key_name":kg.verifier.name,"secret_key_file":sk,"public_key_file":pk,
                    "encrypted":kg.encrypted,"note_vkey":kg.verifier.note_vkey()}),
                )?;
            } else {
                cli::print_stdout(&format!(
                    "wrote the secret key {sk} ({}) and the public key {pk}\nkey name: {}\nnote verifier key: {}\nKeep the secret key and its passphrase away from the agent; sign with: memory-latch checkpoint --sign --secret-key {sk}\n",
                    if kg.encrypted { "passphrase-protected" } else { "NOT encrypted" },
                    kg.verifier.name,
                    kg.verifier.note_vkey()
                ))?;
            }
            Ok(0)
        }
        "consent request" => {
            let latch = open(&args)?;
            let flight = command_flight(&args)?;
            let action = required_file(&args, "--action-file")?;
            let summary = args.required::<String>("--summary")?;
            let risk = risk(&args, true)?.unwrap_or(Risk::High);
            let setting = latch::load_consent_setting(&latch.paths().root);
            if let Some(n) = &setting.notice {
                eprintln!("memory-latch: notice: {n}");
            }
            let issued = latch.consent_request_under(now(), &action, &summary, risk, &setting)?;
            let risk = issued.record.risk;
            let via = if issued.key.is_some() {
                "key"
            } else if issued.wallet.is_some() {
                "wallet"
            } else {
                "token"
            };
            if let Some(f) = &flight {
                f.record(kijito_files::journal::Kind::ConsentIssued, latch::flight::issued_line(via, &issued.record, &latch.paths().root));
            }
            if issued.key.is_some() {
                let cmd = format!(
                    "memory-latch approve --workspace {} --token-id {}{}",
                    latch.paths().root.display(),
                    issued.record.id,
                    flight.as_ref().map(|f| f.flags()).unwrap_or_default()
                );
                if json {
                    json_out(&serde_json::json!({"schema":"memory-latch.consent-request/v1","token":null,"record":issued.record,
                        "key":{"approve":cmd,"expires_at":issued.key.as_ref().map(|k| k.expires_at)}}))?;
                } else {
                    cli::print_stdout(&format!(
                        "CONFIRMATION NEEDED ({} risk, key consent mode)\nAction: {}\nAction hash: {}\nTo authorize, the USER runs this in their own terminal (it asks for their key's passphrase; no tool call can run it):\n  {cmd}\n(single use; expires in {} minutes)\n",
                        risk.as_str(),
                        issued.record.summary,
                        issued.record.action_hash,
                        (issued.record.expires_at_ms - issued.record.issued_at_ms) / 60_000
                    ))?;
                }
                return Ok(0);
            }
            if let Some(c) = &issued.wallet {
                let typed = c.typed_data(&issued.record.action_hash);
                if json {
                    json_out(&serde_json::json!({"schema":"memory-latch.consent-request/v1","token":null,"record":issued.record,
                        "wallet":{"signer":c.signer,"typed_data":typed,"digest":format!("0x{}", latch::wallet::hex(&c.digest(&issued.record.action_hash)?))}}))?;
                } else {
                    cli::print_stdout(&format!(
                        "CONFIRMATION NEEDED ({} risk, wallet consent mode)\nAction: {}\nAction hash: {}\nTo authorize, the USER signs this EIP-712 typed data with the wallet of {} (eth_signTypedData_v4) and sends only the signature (0x + 130 hex) as their own message (no command can confirm it):\n{}\n(expires at {} Unix seconds, single-use nonce)\n",
                        risk.as_str(),
                        issued.record.summary,
                        issued.record.action_hash,
                        c.signer,
                        typed,
                        c.expires_at
                    ))?;
                }
                return Ok(0);
            }
            if json {
                json_out(
                    &serde_json::json!({"schema":"memory-latch.consent-request/v1","token":issued.token,"record":issued.record,"wallet_notice":setting.notice}),
                )?;
            } else {
                cli::print_stdout(&format!(
                    "CONFIRMATION NEEDED ({} risk)\nAction: {}\nAction hash: {}\nTo authorize, the USER sends only this token as their own message (no command can confirm it): {}\n(expires in {} minutes, single use{})\n",
                    risk.as_str(),
                    issued.record.summary,
                    issued.record.action_hash,
                    issued.token,
                    (issued.record.expires_at_ms - issued.record.issued_at_ms) / 60_000,
                    if risk == Risk::High { "; high risk: the user sends it twice, in two separate messages" } else { "" }
                ))?;
            }
            Ok(0)
        }
        "consent confirm" => {
            let latch = open(&args)?;
            latch.consent_confirm_from_tool().map(|_| 0)
        }
        "approve" => approve(&args),
        "tool-gate" => {
            // --json: the outcome is always one line on stdout (what
            // pretool-hook reads); the exit status is 0 only when passed.
            let outcome = open(&args).and_then(|latch| {
                let bytes = required_file(&args, "--action-file")?;
                let min_risk = args.raw("--min-risk").map(latch::Risk::parse).transpose()?;
                latch.tool_gate_at_least(now(), &bytes, &latch::gate::wallet_ok, min_risk)
            });
            match (outcome, json) {
                (Ok(e), true) => {
                    json_out(&serde_json::json!({"schema": "memory-latch.tool-gate/v1", "passed": true, "entry_seq": e.entry_seq}))?
                }
                (Ok(e), false) => cli::print_stdout(&format!("tool call authorized; authorization consumed (entry {})\n", e.entry_seq))?,
                (Err(e), true) => {
                    json_out(
                        &serde_json::json!({"schema": "memory-latch.tool-gate/v1", "passed": false, "code": e.code(), "message": e.message()}),
                    )?;
                    return Ok(1);
                }
                (Err(e), false) => return Err(e),
            }
            Ok(0)
        }
        "tool-record" => {
            let latch = open(&args)?;
            let bytes = required_file(&args, "--action-file")?;
            let id = args.raw("--tool-use-id").unwrap_or("");
            let outcome = latch::HostOutcome::parse(args.raw("--outcome").unwrap_or(""))?;
            let e = latch.record_host_consent(now(), &bytes, id, outcome)?;
            if json {
                json_out(&serde_json::json!({"schema": "memory-latch.tool-record/v1", "recorded": true, "entry_seq": e.entry_seq}))?
            } else {
                cli::print_stdout(&format!("host consent recorded (entry {})\n", e.entry_seq))?
            }
            Ok(0)
        }
        "gate" => {
            let latch = open(&args)?;
            let input = GateInput {
                action_bytes: required_file(&args, "--action-file")?,
                checkpoint: args.raw("--checkpoint").map(str::to_owned),
                targets: owned(args.raw_all("--target")),
                intended: args.raw("--intended").map(|p| read_input(p, "--intended")).transpose()?,
                result: args.raw("--result").map(|p| read_input(p, "--result")).transpose()?,
                wallet: latch::load_consent_setting(&latch.paths().root).wallet,
            };
            let report = latch.gate(now(), &input)?;
            if json {
                json_out(&report)?;
            } else {
                let mut t = String::new();
                for c in &report.checks {
                    t.push_str(&format!(
                        "{} {}: {}{}\n",
                        if c.passed { "PASS" } else { "FAIL" },
                        c.name,
                        c.message,
                        c.code.as_ref().map(|c| format!(" [{c}]")).unwrap_or_default()
                    ));
                }
                if let Some(r) = &report.remediation {
                    t.push_str(&format!("Remediation: {r}\n"));
                }
                cli::print_stdout(&t)?;
            }
            if report.passed {
                Ok(0)
            } else {
                let first =
                    report.checks.iter().find(|c| !c.passed).and_then(|c| c.code.as_ref()).map(|c| c.to_string()).unwrap_or_default();
                Err(Error::new(codes::GATE_FAILED, format!("gate failed ({first})")))
            }
        }
        "recover" => {
            let latch = open(&args)?;
            let flight = command_flight(&args)?;
            let out = latch.recover(now())?;
            if let Some(f) = &flight {
                f.record(kijito_files::journal::Kind::Recovery, latch::flight::recovery_line(&out, &latch.paths().root));
            }
            if json {
                json_out(&out)?;
            } else {
                cli::print_stdout(&match &out {
                    recover::RecoverOutcome::Protocol(p) => recover::protocol_text(p),
                    recover::RecoverOutcome::SilentWitness(i) => recover::incident_text(i),
                })?;
            }
            match out {
                recover::RecoverOutcome::Protocol(_) => Ok(0),
                recover::RecoverOutcome::SilentWitness(_) => {
                    Err(Error::new(codes::SILENT_WITNESS_ACTIVE, "Silent Witness: see the incident summary"))
                }
            }
        }
        "reseed" => {
            let latch = open(&args)?;
            if args.has("--message") {
                return latch.consent_confirm_from_tool().map(|_| 0);
            }
            let issued = latch.reseed_request(now())?;
            if json {
                json_out(&serde_json::json!({"schema":"memory-latch.reseed-request/v1","token":issued.token,"record":issued.record}))?;
            } else {
                cli::print_stdout(&format!(
                    "RESEED CONFIRMATION NEEDED\nThis archives the current chain and starts a new one.\nTo authorize, the USER sends only this token as their own message (no command can confirm it): {}\n",
                    issued.token
                ))?;
            }
            Ok(0)
        }
        "review" => {
            let latch = open(&args)?;
            if args.has("--message") {
                return latch.consent_confirm_from_tool().map(|_| 0);
            }
            let issued = latch.review_request(now())?;
            if json {
                json_out(&serde_json::json!({"schema":"memory-latch.review-request/v1","token":issued.token,"record":issued.record}))?;
            } else {
                cli::print_stdout(&format!(
                    "REVIEW CONFIRMATION NEEDED\nShow the user the degraded-mode findings (wake-check, memory-latch status). Degraded mode ends only when the USER sends only this token as their own message (no command can confirm it): {}\n",
                    issued.token
                ))?;
            }
            Ok(0)
        }
        other => Err(Error::usage(cli_codes::UNKNOWN_SUBCOMMAND, format!("unknown subcommand {other:?}"))),
    }
}
