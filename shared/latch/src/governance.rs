//! The governance knobs from the user's configuration:
//! seed 000's defaults (`checkpoint_freq_turns` 5, `compost_keep_decisions`
//! 3, `compost_retire_turns` 20, `fatigue_trigger_context_ratio` 0.75,
//! `token_ttl_minutes` 10, `token_single_use` true, `lock_timeout_ms` 800,
//! `max_recovery_attempts` 3), each overridable in one user-owned file:
//!
//! `$MEMORY_LATCH_GOVERNANCE_FILE` (explicit: it must exist), else
//! `$XDG_CONFIG_HOME/kijito-qa/memory-latch-governance.json` (else
//! `~/.config/...`; absent: the defaults), of the form
//! `{"schema":"memory-latch.governance/v1","checkpoint_freq_turns":8,...}`
//! (every knob optional; an omitted one keeps its default).
//!
//! The file is the user's, not the agent's: absolute, outside the
//! workspace, a regular file owned by the user with no group/other bits,
//! never a symlink, at most 4 KiB (`kijito_files::private::read_checked`).
//! Anything else — a missing named file, a loose mode, a symlink, a file in
//! the workspace, JSON that is not this schema, an unknown key — is
//! `governance_config_invalid`; a value outside its range (below) is
//! `governance_value_invalid`. Either way the latch fails closed: every
//! write (`checkpoint`, `consent request`, `gate`, `recover`, the hooks'
//! turn entries) is refused with that code
//! ([`crate::Latch::governance_in_force`] says why), rather than running on
//! defaults the user did not choose.

use crate::entry::Governance;
use kijito_files::private;
use kijito_protocol::error::{Error, Result};
use serde_json::Value;
use std::path::{Path, PathBuf};

pub const GOVERNANCE_ENV: &str = "MEMORY_LATCH_GOVERNANCE_FILE";
pub const FILE_NAME: &str = "memory-latch-governance.json";
pub const SCHEMA: &str = "memory-latch.governance/v1";
const MAX_BYTES: u64 = 4096;

/// The allowed range of each knob (inclusive). `token_single_use` must stay
/// `true` (a token is single use, seed 000); `fatigue_trigger_context_ratio`
/// is a finite number in 0.10..=1.00.
pub const RANGES: &[(&str, u64, u64)] = &[
    ("checkpoint_freq_turns", 1, 100),
    ("compost_keep_decisions", 1, crate::MAX_LIST_ITEMS as u64),
    ("compost_retire_turns", 1, 1000),
    ("token_ttl_minutes", 1, 60),
    ("lock_timeout_ms", 100, 10_000),
    ("max_recovery_attempts", 1, 10),
];
pub const RATIO_RANGE: (f64, f64) = (0.10, 1.0);

/// Where the configuration is read from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Source {
    pub path: PathBuf,
    /// Named by [`GOVERNANCE_ENV`]: its absence is an error, not the defaults.
    pub explicit: bool,
}

impl Source {
    /// From the environment; `None` when there is no config directory (no
    /// absolute `XDG_CONFIG_HOME` or `HOME`): the defaults.
    pub fn from_env() -> Option<Source> {
        let var = |n: &str| std::env::var_os(n).filter(|v| !v.is_empty()).map(PathBuf::from);
        if let Some(p) = var(GOVERNANCE_ENV) {
            return Some(Source { path: p, explicit: true });
        }
        let base = var("XDG_CONFIG_HOME")
            .filter(|p| p.is_absolute())
            .or_else(|| var("HOME").filter(|p| p.is_absolute()).map(|h| h.join(".config")))?;
        Some(Source { path: base.join("kijito-qa").join(FILE_NAME), explicit: false })
    }
}

/// Every key the file may hold.
const KEYS: &[&str] = &[
    "schema",
    "checkpoint_freq_turns",
    "compost_keep_decisions",
    "compost_retire_turns",
    "fatigue_trigger_context_ratio",
    "token_ttl_minutes",
    "token_single_use",
    "lock_timeout_ms",
    "max_recovery_attempts",
];

fn config_error(msg: String) -> Error {
    Error::new(crate::codes::GOVERNANCE_CONFIG_INVALID, msg)
}

fn value_error(msg: String) -> Error {
    Error::new(crate::codes::GOVERNANCE_VALUE_INVALID, msg)
}

/// The governance for a latch whose workspace is `workspace_root`
/// (canonical): the defaults when nothing is configured, else the file's
/// knobs over them, validated.
pub fn load(source: Option<&Source>, workspace_root: &Path) -> Result<Governance> {
    let Some(src) = source else { return Ok(Governance::default()) };
    let path = &src.path;
    match std::fs::symlink_metadata(path) {
        Err(_) if !src.explicit => return Ok(Governance::default()),
        Err(e) => return Err(config_error(format!("{GOVERNANCE_ENV} names {}, which cannot be read: {e}", path.display()))),
        Ok(_) => {}
    }
    if !path.is_absolute() {
        return Err(config_error(format!("{} must be an absolute path", path.display())));
    }
    let resolved = path.parent().and_then(|d| d.canonicalize().ok()).map(|d| d.join(path.file_name().unwrap_or_default()));
    if path.starts_with(workspace_root) || resolved.is_some_and(|r| r.starts_with(workspace_root)) {
        return Err(config_error(format!("{} is inside the workspace; the governance file is the user's, outside it", path.display())));
    }
    let rules = private::FileRules { owner_only: true, min_bytes: 2, max_bytes: MAX_BYTES };
    let (bytes, _) =
        private::read_checked(path, rules).map_err(|e| config_error(format!("{}: {} ({})", path.display(), e.message(), e.code())))?;
    // Parsed as a JSON value (no derive: this runs in the hook binaries,
    // which keep to a size budget).
    let file: Value =
        serde_json::from_slice(&bytes).map_err(|e| config_error(format!("{} is not a {SCHEMA} file: {e}", path.display())))?;
    let Some(obj) = file.as_object() else { return Err(config_error(format!("{} is not a {SCHEMA} object", path.display()))) };
    if let Some(k) = obj.keys().find(|k| !KEYS.contains(&k.as_str())) {
        return Err(config_error(format!("{} has the unknown key {k:?}", path.display())));
    }
    let schema = obj.get("schema").and_then(Value::as_str);
    if schema != Some(SCHEMA) {
        return Err(config_error(format!("{} has schema {schema:?}, not {SCHEMA}", path.display())));
    }
    let d = Governance::default();
    let int = |name: &str, default: u64| -> Result<u64> {
        let Some(raw) = obj.get(name) else { return Ok(default) };
        let v = raw.as_u64().ok_or_else(|| config_error(format!("{name} must be a non-negative integer ({})", path.display())))?;
        let (_, lo, hi) = RANGES.iter().find(|(n, _, _)| *n == name).copied().unwrap_or((name, v, v));
        if (lo..=hi).contains(&v) {
            Ok(v)
        } else {
            Err(value_error(format!("{name} is {v}; it must be {lo} to {hi} ({})", path.display())))
        }
    };
    let small = |v: u64| u32::try_from(v).unwrap_or(u32::MAX);
    let ratio = match obj.get("fatigue_trigger_context_ratio") {
        None => d.fatigue_trigger_context_ratio,
        Some(raw) => match raw.as_f64() {
            Some(r) if r.is_finite() && (RATIO_RANGE.0..=RATIO_RANGE.1).contains(&r) => r,
            Some(r) => {
                return Err(value_error(format!(
                    "fatigue_trigger_context_ratio is {r}; it must be {} to {} ({})",
                    RATIO_RANGE.0,
                    RATIO_RANGE.1,
                    path.display()
                )))
            }
            None => return Err(config_error(format!("fatigue_trigger_context_ratio must be a number ({})", path.display()))),
        },
    };
    match obj.get("token_single_use").map(Value::as_bool) {
        None | Some(Some(true)) => {}
        Some(Some(false)) => {
            return Err(value_error(format!(
                "token_single_use is false; consent tokens are single use and it must stay true ({})",
                path.display()
            )))
        }
        Some(None) => return Err(config_error(format!("token_single_use must be true or false ({})", path.display()))),
    }
    Ok(Governance {
        checkpoint_freq_turns: small(int("checkpoint_freq_turns", d.checkpoint_freq_turns.into())?),
        compost_keep_decisions: small(int("compost_keep_decisions", d.compost_keep_decisions.into())?),
        compost_retire_turns: small(int("compost_retire_turns", d.compost_retire_turns.into())?),
        fatigue_trigger_context_ratio: ratio,
        token_ttl_minutes: small(int("token_ttl_minutes", d.token_ttl_minutes.into())?),
        token_single_use: true,
        lock_timeout_ms: int("lock_timeout_ms", d.lock_timeout_ms)?,
        max_recovery_attempts: small(int("max_recovery_attempts", d.max_recovery_attempts.into())?),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn write(dir: &Path, name: &str, text: &str, mode: u32) -> PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
        p
    }

    fn src(path: &Path, explicit: bool) -> Source {
        Source { path: path.to_owned(), explicit }
    }

    #[test]
    fn absent_is_the_defaults_and_named_absent_is_refused() {
        let d = tempfile::tempdir().unwrap();
        let ws = d.path().join("ws");
        let missing = d.path().join("none.json");
        assert_eq!(load(None, &ws).unwrap(), Governance::default());
        assert_eq!(load(Some(&src(&missing, false)), &ws).unwrap(), Governance::default());
        assert_eq!(load(Some(&src(&missing, true)), &ws).unwrap_err().code(), crate::codes::GOVERNANCE_CONFIG_INVALID.as_str());
    }

    #[test]
    fn the_users_knobs_replace_the_defaults() {
        let d = tempfile::tempdir().unwrap();
        let ws = d.path().join("ws");
        let p = write(
            d.path(),
            "g.json",
            r#"{"schema":"memory-latch.governance/v1","checkpoint_freq_turns":8,"compost_keep_decisions":5,"compost_retire_turns":40,"fatigue_trigger_context_ratio":0.9,"token_ttl_minutes":5,"token_single_use":true,"lock_timeout_ms":1500,"max_recovery_attempts":2}"#,
            0o600,
        );
        let g = load(Some(&src(&p, true)), &ws).unwrap();
        assert_eq!(
            g,
            Governance {
                checkpoint_freq_turns: 8,
                compost_keep_decisions: 5,
                compost_retire_turns: 40,
                fatigue_trigger_context_ratio: 0.9,
                token_ttl_minutes: 5,
                token_single_use: true,
                lock_timeout_ms: 1500,
                max_recovery_attempts: 2
            }
        );
        // omitted knobs keep their defaults
        let p = write(d.path(), "h.json", r#"{"schema":"memory-latch.governance/v1","checkpoint_freq_turns":2}"#, 0o600);
        assert_eq!(load(Some(&src(&p, false)), &ws).unwrap(), Governance { checkpoint_freq_turns: 2, ..Governance::default() });
    }

    #[test]
    fn bad_values_and_bad_files_are_refused_with_their_code() {
        let d = tempfile::tempdir().unwrap();
        let ws = d.path().join("ws");
        std::fs::create_dir(&ws).unwrap();
        let value = crate::codes::GOVERNANCE_VALUE_INVALID;
        let config = crate::codes::GOVERNANCE_CONFIG_INVALID;
        for (i, (body, code)) in [
            (r#"{"schema":"memory-latch.governance/v1","checkpoint_freq_turns":0}"#, value),
            (r#"{"schema":"memory-latch.governance/v1","checkpoint_freq_turns":101}"#, value),
            (r#"{"schema":"memory-latch.governance/v1","compost_keep_decisions":33}"#, value),
            (r#"{"schema":"memory-latch.governance/v1","compost_retire_turns":0}"#, value),
            (r#"{"schema":"memory-latch.governance/v1","fatigue_trigger_context_ratio":0.05}"#, value),
            (r#"{"schema":"memory-latch.governance/v1","fatigue_trigger_context_ratio":1.5}"#, value),
            (r#"{"schema":"memory-latch.governance/v1","token_ttl_minutes":61}"#, value),
            (r#"{"schema":"memory-latch.governance/v1","token_single_use":false}"#, value),
            (r#"{"schema":"memory-latch.governance/v1","lock_timeout_ms":99}"#, value),
            (r#"{"schema":"memory-latch.governance/v1","max_recovery_attempts":11}"#, value),
            (r#"{"schema":"memory-latch.governance/v1","checkpoint_freq_turns":-1}"#, config),
            (r#"{"schema":"memory-latch.governance/v1","checkpoint_freq_turns":"5"}"#, config),
            (r#"{"schema":"memory-latch.governance/v1","fatigue":0.5}"#, config),
            (r#"{"schema":"memory-latch.governance/v2"}"#, config),
            (r#"{"checkpoint_freq_turns":5}"#, config),
            ("not json", config),
            ("[1]", config),
            (r#"{"schema":"memory-latch.governance/v1","token_single_use":"yes"}"#, config),
            (r#"{"schema":"memory-latch.governance/v1","fatigue_trigger_context_ratio":"high"}"#, config),
            (r#"{"schema":"memory-latch.governance/v1","lock_timeout_ms":800.5}"#, config),
        ]
        .into_iter()
        .enumerate()
        {
            let p = write(d.path(), &format!("bad{i}.json"), body, 0o600);
            let e = load(Some(&src(&p, false)), &ws).unwrap_err();
            assert_eq!(e.code(), code.as_str(), "{body}: {}", e.message());
        }
        // the file must be the user's: owner-only, no symlink, outside the workspace
        let ok = r#"{"schema":"memory-latch.governance/v1"}"#;
        let loose = write(d.path(), "loose.json", ok, 0o644);
        assert_eq!(load(Some(&src(&loose, false)), &ws).unwrap_err().code(), config.as_str());
        let real = write(d.path(), "real.json", ok, 0o600);
        let link = d.path().join("link.json");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        assert_eq!(load(Some(&src(&link, false)), &ws).unwrap_err().code(), config.as_str());
        let inside = write(&ws, "g.json", ok, 0o600);
        assert_eq!(load(Some(&src(&inside, false)), &ws).unwrap_err().code(), config.as_str());
        assert_eq!(load(Some(&src(Path::new("relative.json"), true)), &ws).unwrap_err().code(), config.as_str());
        assert_eq!(load(Some(&src(&real, false)), &ws).unwrap(), Governance::default());
    }

    #[test]
    fn a_refused_file_fails_every_write_closed() {
        let d = tempfile::tempdir().unwrap();
        let ws = d.path().join("ws");
        std::fs::create_dir(&ws).unwrap();
        let mut c = crate::Config::new(&ws);
        c.heads_dir = Some(d.path().join("heads"));
        c.governance = None;
        let l = crate::Latch::open(&c).unwrap();
        l.init(1_000, &crate::InitInput { objective: "o".into(), ..Default::default() }).unwrap();
        assert_eq!(l.tool_mode(), crate::tool_gate::ToolMode::Normal);
        let bad = write(d.path(), "g.json", r#"{"schema":"memory-latch.governance/v1","max_recovery_attempts":0}"#, 0o600);
        c.governance = Some(src(&bad, false));
        let l = crate::Latch::open(&c).unwrap();
        assert_eq!(l.governance_in_force().unwrap_err().code(), crate::codes::GOVERNANCE_VALUE_INVALID.as_str());
        let e = l.checkpoint(2_000, &crate::CheckpointInput { next_single_step: Some("s".into()), ..Default::default() }).unwrap_err();
        assert_eq!(e.code(), crate::codes::GOVERNANCE_VALUE_INVALID.as_str());
        // status still reads (the user can see the latch while fixing the file)
        assert_eq!(l.status(2_000).unwrap().head.seq, 1);
    }
}
