//! The exact one-line messages the hooks show the user (`systemMessage`),
//! in one place: the hooks fill these templates, and tests compare them
//! with the table in docs/gate-and-hooks.md. Placeholders: `<reason>`,
//! `<code>` (a stable code) and `N` (minutes).

pub const PRECOMPACT_ATTESTED: &str = "kijito-qa: compaction attested (QA pass promoted); re-entry will ask for one verification";
pub const PRECOMPACT_UNATTESTED: &str = "kijito-qa: compaction UNATTESTED (<reason>); compaction proceeds";
pub const PRECOMPACT_TIMEOUT: &str = "kijito-qa: PreCompact did not finish in time; compaction proceeds UNATTESTED";
pub const POSTCOMPACT_ATTESTED: &str = "kijito-qa: attested compaction claimed; re-entry is delivered at the next session start or prompt";
pub const POSTCOMPACT_UNATTESTED: &str = "kijito-qa: compaction claimed UNATTESTED (<reason>)";
pub const POSTCOMPACT_FAILED: &str = "kijito-qa: PostCompact could not claim (<code>)";
/// Claude Code, after SessionStart(compact) claimed: the summary check.
pub const POSTCOMPACT_SUMMARY_CARRIED: &str =
    "kijito-qa: the compaction summary kept the pointer id, lock id and both digests (summaryCarried: true)";
pub const POSTCOMPACT_SUMMARY_MISSING: &str = "kijito-qa: the compaction summary lost at least one of the pointer id, lock id and both digests (summaryCarried: false); the re-entry text has them";
/// `<advice>`: `kijito_hooks::compact::stop_advice` (filled after `N`).
pub const STOP_WAITING: &str = "kijito-qa: a QA pass for this session waits for compaction (valid for about N more min); <advice>";
pub const STOP_REFUSED: &str =
    "kijito-qa: a QA pass for this session waits but would be refused (<code>); record a fresh one or invalidate it";

/// Every template, for the docs check.
pub const ALL: &[&str] = &[
    PRECOMPACT_ATTESTED,
    PRECOMPACT_UNATTESTED,
    PRECOMPACT_TIMEOUT,
    POSTCOMPACT_ATTESTED,
    POSTCOMPACT_UNATTESTED,
    POSTCOMPACT_FAILED,
    POSTCOMPACT_SUMMARY_CARRIED,
    POSTCOMPACT_SUMMARY_MISSING,
    STOP_WAITING,
    STOP_REFUSED,
];

/// Longest message a hook prints (every filled template fits: codes are at
/// most 128 characters).
pub const MAX_MESSAGE_CHARS: usize = 400;

/// A template with its one placeholder (`<reason>`, `<code>` or ` N `)
/// replaced.
pub fn fill(template: &str, value: &str) -> String {
    if template.contains("<reason>") {
        template.replacen("<reason>", value, 1)
    } else if template.contains("<code>") {
        template.replacen("<code>", value, 1)
    } else {
        template.replacen(" N ", &format!(" {value} "), 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_filled_template_fits_whole() {
        for t in ALL {
            let filled = fill(t, &"x".repeat(128));
            assert!(filled.chars().count() <= MAX_MESSAGE_CHARS, "{t}");
            assert_eq!(crate::one_line(&filled), filled, "printed whole: {t}");
        }
        assert_eq!(fill(STOP_WAITING, "12"), STOP_WAITING.replace(" N ", " 12 "));
        assert!(fill(STOP_WAITING, "12").replacen("<advice>", &"a".repeat(120), 1).chars().count() <= MAX_MESSAGE_CHARS);
    }
}
