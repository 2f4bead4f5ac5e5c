//! memory-latch: a local, append-only, tamper-evident continuity manifest,
//! consent tokens for irreversible actions, deterministic pre-execution
//! checks (gate), and a recovery protocol with Silent Witness.
//!
//! Pure core, I/O at the edges: every operation takes `now_ms`; the boot id
//! file and the hmac key file are injected through [`Config`]. See
//! docs/memory-latch.md for the formats and the threat model.
//!
//! | idea | module |
//! |---|---|
//! | paths, symlink/ownership checks | [`layout`] |
//! | entry schema, canonical payload, rendering | [`entry`] |
//! | file layout, segments, chain verification | [`chain`] |
//! | the manifest lock | [`lock`] |
//! | the head record outside the workspace (rollback, truncation, downgrade) | [`head`] |
//! | hmac key | [`integrity`] |
//! | Ed25519 keys (minisign format), signed notes, passphrases | [`sign`] |
//! | checkpoints (C2SP tlog-checkpoint), the check from the last one | [`checkpoint`] |
//! | consent tokens and ledger | [`tokens`] |
//! | wallet consent mode (EIP-712 signature, secp256k1 recovery) | [`wallet`] |
//! | the user's consent setting (mode, floor, public key), key-mode approvals | [`consent`] |
//! | the five gate checks (a sixth in one-step mode) | [`gate`] |
//! | the Stop hook's knobs: turn checkpoints, context fatigue, one-step mode | [`knobs`] |
//! | recovery text, Silent Witness | [`recover`] |
//! | the write transaction (every append), init, seeding | `write` |
//! | the token ledger, consent from the user's message, reseed | `ledger` |
//! | read-only views: verify, status, tokens, lock probe | `views` |
//! | continuity-break phrases | [`detect`] |
//! | secret redaction | [`redact`] |

#![forbid(unsafe_code)]

/// Stable codes (`kijito_memory_latch_failed:<code>`).
pub mod codes {
    pub use kijito_protocol::codes::latch::*;
}
pub mod chain;
pub mod checkpoint;
pub mod cli;
pub mod consent;
pub mod detect;
pub mod entry;
pub mod flight;
pub mod gate;
pub mod governance;
pub mod head;
pub mod index;
pub mod integrity;
pub mod knobs;
pub mod layout;
mod ledger;
pub mod lock;
pub mod merkle;
pub mod recover;
pub mod redact;
pub mod sign;
pub mod time;
pub mod tokens;
pub mod tool_gate;
pub use tool_gate::HostOutcome;
mod views;
pub mod wallet;
mod write;

pub use chain::{Depth, EntrySummary, Finding, ReportMode, VerifyReport};
pub use entry::{ConsentState, Entry, Event, Mode, OneStep, Risk};
pub use lock::LockProbe;
pub use tokens::{TokenState, TokenStatus};

use entry::{Decision, Governance, Storage};
use integrity::HmacKey;
use kijito_protocol::error::{Error, Result};
use kijito_protocol::ids::ActionHash;
use layout::Paths;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The default boot id source.
pub const BOOT_ID_FILE: &str = "/proc/sys/kernel/random/boot_id";
/// Environment variable naming the hmac key file.
pub const HMAC_KEY_ENV: &str = "MEMORY_LATCH_HMAC_KEY_FILE";
/// Longest free-text field (characters) and list length.
pub const MAX_TEXT_CHARS: usize = 2000;
pub const MAX_LIST_ITEMS: usize = 32;
/// Decisions carried in an entry at most by default: composting keeps the final 3
/// (`governance.compost_keep_decisions`, the user may set 1 to 32) in the manifest.
pub const MAX_DECISIONS: usize = 3;
/// Maximum bytes of an action file, intended or result file.
pub const MAX_ACTION_BYTES: usize = 64 * 1024;

/// How to open a latch.
#[derive(Debug, Clone)]
pub struct Config {
    pub workspace: PathBuf,
    /// The hmac key file, if one was named (flag or environment).
    pub hmac_key_file: Option<PathBuf>,
    /// Where the boot id is read (tests inject a fake file).
    pub boot_id_file: PathBuf,
    /// Where head records live, outside every workspace ([`head::default_dir`]).
    pub heads_dir: Option<PathBuf>,
    /// The user's governance knobs ([`governance::Source::from_env`]; `None`: the defaults).
    pub governance: Option<governance::Source>,
}

impl Config {
    pub fn new(workspace: impl Into<PathBuf>) -> Config {
        Config {
            workspace: workspace.into(),
            hmac_key_file: None,
            boot_id_file: PathBuf::from(BOOT_ID_FILE),
            heads_dir: head::default_dir(),
            governance: governance::Source::from_env(),
        }
    }
}

/// An opened latch (paths resolved, key loaded). Cheap; holds no lock.
#[derive(Debug)]
pub struct Latch {
    paths: Paths,
    key: Option<HmacKey>,
    key_named: bool,
    boot_id_file: PathBuf,
    heads_dir: Option<PathBuf>,
    governance: Governance,
    /// The consent setting to use instead of the environment's (tests and
    /// embedders: [`Latch::with_consent`]).
    consent: Option<consent::Setting>,
    /// Why the user's governance file was refused: every write fails closed
    /// with it ([`Latch::lock`]).
    governance_error: Option<Error>,
}

/// The Silent Witness marker (`silent-witness.json`), written when the
/// chain itself cannot record it (a verification failure).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WitnessMarker {
    pub schema: String,
    pub entered_at_ms: u64,
    pub reason: String,
    pub findings: Vec<String>,
}

pub const WITNESS_SCHEMA: &str = "memory-latch.silent-witness/v1";

/// The user's consent setting for this workspace (the one home:
/// `memory-latch.consent/v1`, else the wallet file; see [`consent`]).
pub fn load_consent_setting(workspace_root: &Path) -> consent::Setting {
    consent::Setting::from_env(workspace_root)
}

/// Input of `init`.
#[derive(Debug, Clone, Default)]
pub struct InitInput {
    pub objective: String,
    pub non_negotiables: Vec<String>,
    pub next_single_step: Option<String>,
    /// `--integrity hmac` was asked for explicitly.
    pub want_hmac: bool,
}

#[derive(Debug, Clone)]
pub struct InitOutcome {
    pub entry: Entry,
    /// Set when no integrity was configured at all (checksum fallback).
    pub notice: Option<String>,
}

/// What the UserPromptSubmit hook did with a standalone token message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum PromptOutcome {
    /// The user's message confirmed the consent token: authorized.
    Confirmed { token_id: String, action_hash: ActionHash, risk: Risk, entry_seq: u64 },
    /// High risk: the first confirmation; a second, separate standalone
    /// message with the same token is still needed.
    AwaitingReconfirmation { token_id: String, action_hash: ActionHash, entry_seq: u64 },
    /// The reseed token: the old chain is archived and a new one started.
    Reseeded { entry_seq: u64, old_chain_trusted: bool },
    /// The review token: degraded mode ends (a `review` entry).
    Reviewed { entry_seq: u64 },
    /// The token matched but cannot be used (expired, used, locked,
    /// superseded, Silent Witness, latch untrusted).
    Refused { code: kijito_protocol::error::ErrorCode, message: String },
    /// No live token matched: a wrong attempt (attempts left before lock).
    Wrong { attempts_left: u32 },
}

impl PromptOutcome {
    /// The additionalContext the hook gives the model.
    pub fn context(&self) -> String {
        match self {
            PromptOutcome::Confirmed { token_id, action_hash, risk, .. } => format!(
                "memory-latch: the USER confirmed consent token {token_id} ({} risk) for action {action_hash} with their own standalone message. The action is authorized once: retry exactly the tool call that was denied, unchanged (a changed call, or a second run, needs a new token); an action described by your own action file passes through the memory-latch gate subcommand with that same file.",
                risk.as_str()
            ),
            PromptOutcome::AwaitingReconfirmation { token_id, action_hash, .. } => format!(
                "memory-latch: the USER confirmed high-risk consent token {token_id} for action {action_hash}. High risk needs a second, separate message: ask the user to send the same token once more, alone. Do not act before that."
            ),
            PromptOutcome::Reseeded { entry_seq, old_chain_trusted } => format!(
                "memory-latch: the USER confirmed the reseed token: the old chain was archived (trusted: {old_chain_trusted}) and a new chain starts at entry {entry_seq}. Silent Witness is over; restate the objective with the user."
            ),
            PromptOutcome::Reviewed { entry_seq } => format!(
                "memory-latch: the USER confirmed the review token: degraded mode ends at entry {entry_seq} and consent is no longer locked. Re-verify before resuming: run wake-check, and request consent again for any irreversible step."
            ),
            PromptOutcome::Refused { code, message } => format!("memory-latch: the user's token was NOT accepted ({code}: {message})."),
            PromptOutcome::Wrong { attempts_left } => format!(
                "memory-latch: the user's message looks like a token but matches no live token ({attempts_left} attempt(s) left before every live token locks)."
            ),
        }
    }
}

/// Input of `checkpoint`: `None` keeps the previous value.
#[derive(Debug, Clone, Default)]
pub struct CheckpointInput {
    pub objective: Option<String>,
    pub non_negotiables: Option<Vec<String>>,
    pub blocked_by: Option<String>,
    pub next_single_step: Option<String>,
    pub known_state: Option<Vec<String>>,
    pub unknown_state: Option<Vec<String>>,
    pub decisions: Vec<String>,
    pub last_good_checkpoint: Option<String>,
    pub risk: Option<Risk>,
}

/// A freshly issued token (the raw token is shown once, never stored).
#[derive(Debug, Clone)]
pub struct Issued {
    pub token: String,
    pub record: tokens::TokenState,
    pub entry: Option<Entry>,
    /// Wallet consent mode: the challenge the user's wallet signs (then
    /// `token` is empty: only the signature confirms).
    pub wallet: Option<wallet::Challenge>,
    /// Key consent mode: the challenge `memory-latch approve` signs (then
    /// `token` is empty).
    pub key: Option<consent::KeyChallenge>,
}

/// Status: the quick-verified head with composted decisions.
#[derive(Debug, Clone, Serialize)]
pub struct Status {
    pub schema: &'static str,
    pub head: EntrySummary,
    pub objective: String,
    pub non_negotiables: Vec<String>,
    pub next_single_step: String,
    pub blocked_by: String,
    pub known_state: Vec<String>,
    pub unknown_state: Vec<String>,
    pub last_good_checkpoint: String,
    /// Only the newest `compost_keep_decisions`.
    pub decisions: Vec<Decision>,
    pub silent_witness: bool,
    /// One-step mode (context fatigue): `ready`, `step_taken`, or null.
    pub one_step: Option<OneStep>,
    pub tokens: Vec<TokenState>,
}

fn read_boot_id(path: &Path) -> String {
    let Ok(bytes) = std::fs::read(path) else { return "unknown".into() };
    let text = String::from_utf8_lossy(&bytes[..bytes.len().min(128)]).trim().to_ascii_lowercase();
    if !text.is_empty() && text.len() <= 64 && text.bytes().all(|b| b.is_ascii_hexdigit() || b == b'-') {
        text
    } else {
        "unknown".into()
    }
}

/// Normalise free text: whitespace runs collapse to one space, trimmed, no
/// control characters, bounded, then redacted.
pub fn clean_text(text: &str, field: &str, allow_empty: bool) -> Result<String> {
    let collapsed = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if collapsed.chars().any(char::is_control) {
        return Err(Error::usage(crate::codes::TEXT_INVALID, format!("{field} contains control characters")));
    }
    if collapsed.chars().count() > MAX_TEXT_CHARS {
        return Err(Error::usage(crate::codes::TEXT_INVALID, format!("{field} is longer than {MAX_TEXT_CHARS} characters")));
    }
    if collapsed.is_empty() && !allow_empty {
        return Err(Error::usage(crate::codes::TEXT_INVALID, format!("{field} must not be empty")));
    }
    Ok(redact::redact(&collapsed))
}

fn clean_list(items: &[String], field: &str) -> Result<Vec<String>> {
    if items.len() > MAX_LIST_ITEMS {
        return Err(Error::usage(crate::codes::TEXT_INVALID, format!("{field} has more than {MAX_LIST_ITEMS} items")));
    }
    items.iter().map(|t| clean_text(t, field, false)).collect()
}

/// The canonical action summary: UTF-8, CRLF to LF, trailing whitespace
/// trimmed on each line, trailing blank lines dropped, one final LF.
pub fn canonical_action(bytes: &[u8]) -> Result<String> {
    if bytes.len() > MAX_ACTION_BYTES {
        return Err(Error::new(crate::codes::ACTION_FILE_INVALID, format!("the action file is larger than {MAX_ACTION_BYTES} bytes")));
    }
    let text = std::str::from_utf8(bytes).map_err(|_| Error::new(crate::codes::ACTION_FILE_INVALID, "the action file is not UTF-8"))?;
    let lines: Vec<&str> = text.split('\n').map(|l| l.trim_end()).collect();
    let mut out = lines.join("\n").trim_end().to_owned();
    if out.is_empty() {
        return Err(Error::new(crate::codes::ACTION_FILE_INVALID, "the action file is empty"));
    }
    out.push('\n');
    Ok(out)
}

/// The action hash of the canonical action summary.
pub fn action_hash(bytes: &[u8]) -> Result<ActionHash> {
    Ok(ActionHash::of_canonical(canonical_action(bytes)?.as_bytes()))
}

fn witness_error(reason: &str) -> Error {
    Error::new(
        crate::codes::SILENT_WITNESS_ACTIVE,
        format!("Silent Witness is active ({reason}); write and irreversible commands are refused until `memory-latch reseed` with a confirmed token"),
    )
}

impl Latch {
    /// Open a latch: canonicalise the workspace, load the key (if named and
    /// present). Does not require the latch to exist.
    pub fn open(config: &Config) -> Result<Latch> {
        let paths = Paths::new(&config.workspace)?;
        let key = match &config.hmac_key_file {
            Some(p) => integrity::load(p, &paths.root)?,
            None => None,
        };
        let (governance, governance_error) = match governance::load(config.governance.as_ref(), &paths.root) {
            Ok(g) => (g, None),
            Err(e) => (Governance::default(), Some(e)),
        };
        Ok(Latch {
            paths,
            key,
            key_named: config.hmac_key_file.is_some(),
            boot_id_file: config.boot_id_file.clone(),
            heads_dir: config.heads_dir.clone(),
            governance,
            governance_error,
            consent: None,
        })
    }

    /// Use an in-memory key (benches and tests).
    pub fn with_key(mut self, key: HmacKey) -> Latch {
        self.key = Some(key);
        self.key_named = true;
        self
    }

    /// Use this consent setting instead of [`load_consent_setting`]'s.
    pub fn with_consent(mut self, setting: consent::Setting) -> Latch {
        self.consent = Some(setting);
        self
    }

    /// The consent setting this latch checks records against.
    pub fn consent_setting(&self) -> consent::Setting {
        self.consent.clone().unwrap_or_else(|| load_consent_setting(&self.paths.root))
    }

    pub fn paths(&self) -> &Paths {
        &self.paths
    }

    pub fn has_key(&self) -> bool {
        self.key.is_some()
    }

    pub(crate) fn storage(&self) -> Storage {
        Storage {
            root: Paths::show(&self.paths.root),
            manifest_path: Paths::show(&self.paths.manifest),
            lock_path: Paths::show(&self.paths.lock),
            token_ledger_path: Paths::show(&self.paths.ledger),
        }
    }

    pub(crate) fn lock(&self) -> Result<lock::LockGuard> {
        if let Some(e) = &self.governance_error {
            return Err(e.clone());
        }
        match layout::check_latch_dir(&self.paths.dir, ".memory-latch")? {
            Some(()) => {}
            None => return Err(Error::new(crate::codes::NOT_INITIALISED, "no .memory-latch directory (run memory-latch init)")),
        }
        layout::refuse_symlink(&self.paths.manifest, crate::codes::MANIFEST_SYMLINK)?;
        layout::refuse_symlink(&self.paths.ledger, crate::codes::LEDGER_SYMLINK)?;
        layout::check_latch_dir(&self.paths.history, "history directory")?;
        let held = lock::acquire(&self.paths.lock, self.governance.lock_timeout_ms)?;
        self.remove_interrupted_writes();
        Ok(held)
    }

    /// Under the held lock, before anything is read: remove the temp files
    /// a killed write of this latch left (`.memory-latch/` and `history/`,
    /// the segment seal's included, and this workspace's head record and
    /// checkpoints in the state directory), so a crashed write never wedges
    /// the latch (docs/memory-latch.md, "Crashes"). Best effort: a file that
    /// cannot be removed is what `verify` reports.
    fn remove_interrupted_writes(&self) {
        let _ = kijito_files::private::remove_stale_temps_in(&self.paths.dir);
        let _ = kijito_files::private::remove_stale_temps_in(&self.paths.history);
        for p in [self.head_record_path(), self.checkpoint_state_path()].into_iter().flatten() {
            let _ = kijito_files::private::remove_stale_temps(&p);
        }
    }

    /// Run the five deterministic checks; a pass consumes the authorization.
    pub fn gate(&self, now_ms: u64, input: &gate::GateInput) -> Result<gate::GateReport> {
        gate::run(self, now_ms, input)
    }

    /// One recovery attempt (or Silent Witness when attempts are exhausted
    /// or the chain fails verification).
    pub fn recover(&self, now_ms: u64) -> Result<recover::RecoverOutcome> {
        recover::run(self, now_ms)
    }

    pub(crate) fn governance(&self) -> &Governance {
        &self.governance
    }

    /// The governance knobs in force (the user's file over the defaults),
    /// or why the user's file was refused.
    pub fn governance_in_force(&self) -> Result<&Governance> {
        match &self.governance_error {
            Some(e) => Err(e.clone()),
            None => Ok(&self.governance),
        }
    }
}
