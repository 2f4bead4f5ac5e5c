//! memory-latch wallet consent mode in the UserPromptSubmit hook: a user
//! prompt that is exactly an EIP-712 signature (`0x` + 130 hex) is checked
//! against the wallet configuration and the latch in the hook input's `cwd`
//! (`kijito_latch::wallet`). Like a token, only the user's own message can
//! carry it; a tool call never reaches this path.

use kijito_latch::wallet::Setting;
use std::path::Path;

/// The additionalContext for the model, or None when there is no latch.
pub fn confirm_signature(cwd: Option<&Path>, prompt: &str, now_ms: u64) -> Option<String> {
    let Some(l) = cwd.and_then(crate::latch_hook::open_latch) else {
        return Some("memory-latch: the user's message looks like a wallet signature, but this session's directory has no readable latch; nothing was confirmed.".into());
    };
    let setting = Setting::from_env(&l.paths().root);
    match l.user_signature(now_ms, prompt, &setting) {
        Ok(Some(outcome)) => Some(outcome.context()),
        Ok(None) => None,
        Err(e) => Some(format!("memory-latch: the user's signature could not be processed ({}: {}); nothing was confirmed.", e.code(), e.message())),
    }
}
