//! memory-latch wallet consent mode in the UserPromptSubmit hook: a user
//! prompt that is exactly an EIP-712 signature (`0x` + 130 hex) is checked
//! against the wallet configuration and the latch in the hook input's `cwd`
//! (`kijito_latch::wallet`). Like a token, only the user's own message can
//! carry it; a tool call never reaches this path.
//!
//! Every step runs here except the secp256k1 public-key recovery, which the
//! installed sibling `memory-latch wallet-recover` does ([`Sibling`]): the
//! hook binary runs on every prompt and tool call and must stay within the
//! size bound, so it links no `k256` (docs/architecture.md, Binary sizes). A
//! sibling that is missing, fails, hangs or answers malformed confirms
//! nothing (`wallet_recovery_failed`).

use kijito_files::child::{self, Ran};
use kijito_latch::codes;
use kijito_latch::wallet::{self, Address, Recoverer, Setting, Sig};
use kijito_protocol::command::HelperDir;
use kijito_protocol::error::{Error, Result};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// The sibling's whole run, below the session-hook watchdog (3.5 s).
const SIBLING_TIMEOUT: Duration = Duration::from_millis(2000);
/// Most stdout bytes read: one 43-byte line per digest, at most
/// 2 × MAX_TOKENS digests.
const MAX_OUT: u64 = 43 * 128 + 64;

/// The additionalContext for the model, or None when there is no latch.
/// With `flight`, the latch's answer is one line of the session's journal.
pub fn confirm_signature(
    cwd: Option<&Path>,
    helpers: Option<&HelperDir>,
    prompt: &str,
    now_ms: u64,
    flight: Option<&kijito_latch::flight::Flight>,
) -> Option<String> {
    let Some(l) = cwd.and_then(crate::latch_hook::open_latch) else {
        flight.inspect(|f| f.refused(kijito_latch::codes::FILE_MISSING.as_str()));
        return Some("memory-latch: the user's message looks like a wallet signature, but this session's directory has no readable latch; nothing was confirmed.".into());
    };
    let setting = Setting::from_env(&l.paths().root);
    let sibling = Sibling { exe: helpers.map(|h| PathBuf::from(h.helper("memory-latch"))), timeout: SIBLING_TIMEOUT };
    match l.user_signature_with(now_ms, prompt, &setting, &sibling) {
        Ok(Some(outcome)) => {
            flight.inspect(|f| f.outcome(&outcome));
            Some(outcome.context())
        }
        Ok(None) => None,
        Err(e) => {
            flight.inspect(|f| f.refused(e.code()));
            Some(format!(
                "memory-latch: the user's signature could not be processed ({}: {}); nothing was confirmed.",
                e.code(),
                e.message()
            ))
        }
    }
}

/// [`Recoverer`] by the installed `memory-latch wallet-recover` next to
/// this binary (absolute path, never `PATH`).
#[derive(Debug, Clone)]
pub struct Sibling {
    pub exe: Option<PathBuf>,
    pub timeout: Duration,
}

fn failed(why: String) -> Error {
    Error::new(codes::WALLET_RECOVERY_FAILED, why)
}

impl Recoverer for Sibling {
    fn recover_all(&self, sig: &Sig, digests: &[[u8; 32]]) -> Result<Vec<Option<Address>>> {
        let exe = self.exe.as_deref().ok_or_else(|| failed("cannot locate the installed memory-latch".into()))?;
        let mut cmd = Command::new(exe);
        cmd.arg("wallet-recover").arg("--signature").arg(sig.hex());
        for d in digests {
            cmd.arg("--digest").arg(format!("0x{}", wallet::hex(d)));
        }
        let (status, out) =
            match child::run_bounded(&mut cmd, self.timeout, MAX_OUT).map_err(|e| failed(format!("cannot run {}: {e}", exe.display())))? {
                Ran::Exited { status, stdout } => (status, stdout),
                Ran::TimedOut => return Err(failed(format!("{} wallet-recover did not finish in time", exe.display()))),
            };
        if !status.success() {
            return Err(failed(format!("{} wallet-recover failed ({status})", exe.display())));
        }
        wallet::parse_recover_lines(&out, digests.len())
            .ok_or_else(|| failed(format!("{} wallet-recover answered malformed output", exe.display())))
    }
}
