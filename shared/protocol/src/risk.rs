//! The consent risk of an action (one home): what `memory-latch consent
//! request --risk` takes, what a latch entry and a token record store
//! (`"risk_level": "low"`), what a policy rule carries and what the wallet's
//! `min_risk` compares with. Ordered `Low < Medium < High`.

use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Risk {
    Low,
    Medium,
    High,
}

impl Risk {
    pub const ALL: [Risk; 3] = [Risk::Low, Risk::Medium, Risk::High];

    pub fn as_str(self) -> &'static str {
        match self {
            Risk::Low => "low",
            Risk::Medium => "medium",
            Risk::High => "high",
        }
    }

    /// `low`, `medium` or `high`; anything else is `latch_risk_invalid`.
    pub fn parse(text: &str) -> Result<Risk> {
        Risk::ALL
            .into_iter()
            .find(|r| r.as_str() == text)
            .ok_or_else(|| Error::usage(crate::codes::latch::RISK_INVALID, "risk must be low, medium or high"))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn words_order_and_serialised_bytes() {
        for (r, w) in Risk::ALL.into_iter().zip(["low", "medium", "high"]) {
            assert_eq!(r.as_str(), w);
            assert_eq!(Risk::parse(w).unwrap(), r);
            // the bytes latch entries and token records carry
            assert_eq!(serde_json::to_string(&r).unwrap(), format!("\"{w}\""));
            assert_eq!(serde_json::from_str::<Risk>(&format!("\"{w}\"")).unwrap(), r);
        }
        assert!(Risk::Low < Risk::Medium && Risk::Medium < Risk::High);
        assert_eq!(Risk::parse("High").unwrap_err().code(), crate::codes::latch::RISK_INVALID.as_str());
        assert!(serde_json::from_str::<Risk>("\"extreme\"").is_err());
    }
}
