//! Timely nudges (docs/gate-and-hooks.md, "Nudges"): when a session's
//! context ratio crosses `qaAtContextRatio` and no valid QA pass waits,
//! UserPromptSubmit adds one line for the model and Stop shows the user one
//! `systemMessage`; each at most once per 10 percentage points (the band is
//! remembered per session in `qa/nudge.<session>.json`), never while a pass
//! is valid. After a claimed compaction, Stop also tells the user once that
//! the next compaction will be UNATTESTED unless QA runs again.

use crate::env::HookEnv;
use crate::{HookInput, Host};
use kijito_context::statusline::{pass_state, PassState};
use kijito_files::private::{self, FileRules};
use kijito_gate::QaDir;
use kijito_protocol::ids::SessionId;
use serde_json::{json, Value};
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;

/// What was already said to this session.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Said {
    /// The 10-point band (0..=10) of the last model nudge.
    pub prompt_band: Option<u8>,
    /// The band of the last user nudge at Stop.
    pub stop_band: Option<u8>,
    /// Which claimed compaction (`<inode>-<mtime ms>` of the claimed attempt)
    /// the user was last told about.
    pub claim_noticed: Option<String>,
}

fn state_path(qa: &QaDir, session: &SessionId) -> PathBuf {
    qa.path().as_path().join(format!("nudge.{session}.json"))
}

impl Said {
    fn load(qa: &QaDir, session: &SessionId) -> Said {
        let Ok((bytes, _)) = private::read_checked(&state_path(qa, session), FileRules { owner_only: true, min_bytes: 2, max_bytes: 4096 })
        else {
            return Said::default();
        };
        let Ok(Value::Object(o)) = serde_json::from_slice::<Value>(&bytes) else { return Said::default() };
        if o.get("sessionId").and_then(Value::as_str) != Some(session.as_str()) {
            return Said::default();
        }
        let band = |k: &str| o.get(k).and_then(Value::as_u64).filter(|b| *b <= 10).map(|b| b as u8);
        Said {
            prompt_band: band("promptBand"),
            stop_band: band("stopBand"),
            claim_noticed: o.get("claimNoticed").and_then(Value::as_str).filter(|s| s.len() <= 64).map(str::to_owned),
        }
    }

    fn save(&self, qa: &QaDir, session: &SessionId) {
        let v = json!({
            "schemaVersion": 1,
            "sessionId": session.as_str(),
            "promptBand": self.prompt_band,
            "stopBand": self.stop_band,
            "claimNoticed": self.claim_noticed,
        });
        // A nudge that cannot be remembered may repeat; never fail the hook.
        let _ = private::write_atomic(&state_path(qa, session), v.to_string().as_bytes());
    }
}

/// The rule, pure: given the ratio, the threshold, whether a pass is valid
/// and the band last nudged, return the band to remember and whether to
/// nudge now. Below the threshold the memory resets (so a later crossing,
/// e.g. after a compaction, nudges again).
pub fn due(ratio: Option<f64>, threshold: f64, pass_valid: bool, last: Option<u8>) -> (Option<u8>, bool) {
    match ratio {
        None => (last, false),
        Some(_) if pass_valid => (last, false),
        Some(r) if r < threshold => (None, false),
        Some(r) => {
            let band = (r * 10.0).floor().clamp(0.0, 10.0) as u8;
            (Some(band), last != Some(band))
        }
    }
}

/// The session's ratio, threshold and pass state; `None` when there is
/// nothing to measure.
fn look(env: &HookEnv, input: &HookInput) -> Option<(QaDir, Option<f64>, f64, PassState)> {
    let transcript = input.transcript_path.as_ref()?;
    let (_, qa) = env.qa().ok()?;
    let ratio = session_ratio(env, input);
    let threshold = env.config.as_ref().map(|c| c.qa_at_context_ratio).unwrap_or(kijito_files::config::DEFAULT_QA_AT_CONTEXT_RATIO);
    let pass = pass_state(&qa, &input.session_id, Some(transcript), env.now_ms);
    Some((qa, ratio, threshold, pass))
}

/// The session's context ratio, as `kijito-context` computes it (None:
/// unknown). memory-latch's fatigue knob uses the same number.
pub(crate) fn session_ratio(env: &HookEnv, input: &HookInput) -> Option<f64> {
    let host = match env.host {
        Host::Codex => kijito_context::Host::Codex,
        Host::Claude => kijito_context::Host::Claude,
    };
    kijito_context::measure(input.transcript_path.as_ref()?, Some(host)).ratio
}

fn pct(r: f64) -> u64 {
    (r * 100.0).floor().max(0.0) as u64
}

/// UserPromptSubmit: one line of model context, or nothing.
pub fn prompt_context(env: &HookEnv, input: &HookInput) -> Option<String> {
    let (qa, ratio, threshold, pass) = look(env, input)?;
    let mut said = Said::load(&qa, &input.session_id);
    let (band, fire) = due(ratio, threshold, pass.is_valid(), said.prompt_band);
    if band != said.prompt_band {
        said.prompt_band = band;
        said.save(&qa, &input.session_id);
    }
    let r = ratio?;
    fire.then(|| {
        format!(
            "kijito-qa: context at {}% (QA threshold {}%) and no valid QA pass: run the kijito-memory-qa skill now, then request compaction.",
            pct(r),
            pct(threshold)
        )
    })
}

/// Stop: the user-facing nudge and the once-per-claim notice, joined.
pub fn stop_message(env: &HookEnv, input: &HookInput) -> Option<String> {
    let (qa, ratio, threshold, pass) = look(env, input)?;
    let mut said = Said::load(&qa, &input.session_id);
    let before = said.clone();
    let mut parts = Vec::new();
    let (band, fire) = due(ratio, threshold, pass.is_valid(), said.stop_band);
    said.stop_band = band;
    if let (true, Some(r)) = (fire, ratio) {
        parts.push(format!(
            "kijito-qa: context at {}% and no valid QA pass; run the kijito-memory-qa skill before compacting, or the compaction will be UNATTESTED.",
            pct(r)
        ));
    }
    if !pass.is_valid() {
        if let Ok(m) = std::fs::symlink_metadata(qa.attempt_claimed(&input.session_id)) {
            let key = format!("{}-{}", m.ino(), m.mtime() * 1000 + m.mtime_nsec() / 1_000_000);
            if said.claim_noticed.as_deref() != Some(key.as_str()) {
                said.claim_noticed = Some(key);
                parts.push(
                    "kijito-qa: a QA pass covers one compaction; the next compaction of this session will be UNATTESTED unless the kijito-memory-qa skill runs again."
                        .to_owned(),
                );
            }
        }
    }
    if said != before {
        said.save(&qa, &input.session_id);
    }
    (!parts.is_empty()).then(|| parts.join(" "))
}

#[cfg(test)]
mod tests {
    use super::due;

    #[test]
    fn once_per_band_never_with_a_valid_pass_and_reset_below() {
        assert_eq!(due(None, 0.6, false, Some(6)), (Some(6), false));
        assert_eq!(due(Some(0.59), 0.6, false, None), (None, false));
        assert_eq!(due(Some(0.63), 0.6, false, None), (Some(6), true));
        assert_eq!(due(Some(0.69), 0.6, false, Some(6)), (Some(6), false));
        assert_eq!(due(Some(0.70), 0.6, false, Some(6)), (Some(7), true));
        assert_eq!(due(Some(0.75), 0.6, true, Some(6)), (Some(6), false));
        assert_eq!(due(Some(0.2), 0.6, false, Some(9)), (None, false));
        assert_eq!(due(Some(1.7), 0.6, false, Some(10)), (Some(10), false));
        // a compaction that leaves the ratio above the threshold, in a lower band
        assert_eq!(due(Some(0.65), 0.6, false, Some(9)), (Some(6), true));
    }
}
