//! memory-latch in the hooks: the user's own message confirms a consent or
//! reseed token (UserPromptSubmit), acting on the latch in the hook input's
//! `cwd`. Only this path confirms; a tool call never can.

use kijito_latch::{self as latch, Latch};
use kijito_protocol::command::HelperDir;
use std::path::{Path, PathBuf};

/// Open the latch of `cwd` with the hook's environment (key, boot id, head
/// records), only when `cwd` holds a `.memory-latch` directory.
pub fn open_latch(cwd: &Path) -> Option<Latch> {
    std::fs::symlink_metadata(cwd.join(latch::layout::DIR_NAME)).ok()?;
    let mut c = latch::Config::new(cwd);
    c.hmac_key_file = std::env::var_os(latch::HMAC_KEY_ENV).filter(|v| !v.is_empty()).map(PathBuf::from);
    if let Some(p) = std::env::var_os("MEMORY_LATCH_BOOT_ID_FILE").filter(|v| !v.is_empty()) {
        c.boot_id_file = p.into();
    }
    Latch::open(&c).ok()
}

/// UserPromptSubmit: when the prompt is exactly a token, confirm it; the
/// returned text goes to the model as additionalContext. A wallet signature
/// is checked with the `memory-latch` next to the running executable.
pub fn confirm_from_prompt(cwd: Option<&Path>, prompt: Option<&str>, now_ms: u64) -> Option<String> {
    confirm_from_prompt_with(cwd, HelperDir::current().ok().as_ref(), prompt, now_ms)
}

/// [`confirm_from_prompt`] with the installed helpers' directory (where the
/// wallet signature recovery, `memory-latch wallet-recover`, is run from).
pub fn confirm_from_prompt_with(cwd: Option<&Path>, helpers: Option<&HelperDir>, prompt: Option<&str>, now_ms: u64) -> Option<String> {
    let prompt = prompt?;
    if latch::wallet::Sig::standalone(prompt).is_some() {
        return crate::latch_wallet::confirm_signature(cwd, helpers, prompt, now_ms);
    }
    latch::tokens::standalone_token(prompt).ok()?;
    let Some(l) = cwd.and_then(open_latch) else {
        return Some("memory-latch: the user's message looks like a token, but this session's directory has no readable latch; nothing was confirmed.".into());
    };
    match l.user_prompt(now_ms, prompt) {
        Ok(Some(outcome)) => Some(outcome.context()),
        Ok(None) => None,
        Err(e) => Some(format!("memory-latch: the user's token could not be processed ({}: {}); nothing was confirmed.", e.code(), e.message())),
    }
}
