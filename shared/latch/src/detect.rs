//! Continuity-break phrases: a user prompt that says the agent lost its
//! memory triggers the recovery protocol (session-hook, UserPromptSubmit).

/// The signals, in match priority order (normalised lowercase form).
pub const SIGNALS: &[&str] = &["you forgot", "start over", "lost context", "memory unavailable", "cache cleared", "why are you confused"];

/// Maximum bytes inspected (a prompt can be long; the phrase is short).
pub const MAX_SCAN_BYTES: usize = 64 * 1024;

fn normalise(text: &str) -> String {
    let mut out = String::with_capacity(text.len().min(MAX_SCAN_BYTES));
    let mut space = true;
    for c in text.chars().take(MAX_SCAN_BYTES) {
        let c = match c {
            '\u{2019}' | '\u{2018}' => '\'',
            c => c,
        };
        if c.is_whitespace() {
            if !space {
                out.push(' ');
            }
            space = true;
        } else {
            out.extend(c.to_lowercase());
            space = false;
        }
    }
    out
}

fn bounded_find(hay: &str, needle: &str) -> bool {
    let mut from = 0;
    while let Some(rel) = hay[from..].find(needle) {
        let pos = from + rel;
        let end = pos + needle.len();
        let before = hay[..pos].chars().next_back();
        let after = hay[end..].chars().next();
        if !before.is_some_and(char::is_alphanumeric) && !after.is_some_and(char::is_alphanumeric) {
            return true;
        }
        from = pos + needle.chars().next().map(char::len_utf8).unwrap_or(1);
    }
    false
}

/// The matched continuity-break signal, if `text` contains one
/// (case-insensitive, whole words, whitespace-insensitive).
pub fn continuity_break(text: &str) -> Option<&'static str> {
    let norm = normalise(text);
    SIGNALS.iter().copied().find(|s| bounded_find(&norm, s))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_each_signal_case_insensitively() {
        assert_eq!(continuity_break("Hmm, YOU FORGOT the plan"), Some("you forgot"));
        assert_eq!(continuity_break("let's   Start\nOver"), Some("start over"));
        assert_eq!(continuity_break("you lost context again"), Some("lost context"));
        assert_eq!(continuity_break("Memory unavailable?"), Some("memory unavailable"));
        assert_eq!(continuity_break("cache cleared"), Some("cache cleared"));
        assert_eq!(continuity_break("Why are you confused?"), Some("why are you confused"));
    }

    #[test]
    fn ignores_ordinary_prompts() {
        for text in ["please restart over there", "you forgotten", "restart overall", "clear the cache", ""] {
            assert_eq!(continuity_break(text), None, "{text}");
        }
    }
}
