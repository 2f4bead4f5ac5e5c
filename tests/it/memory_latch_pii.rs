//! Personal data never reaches the manifest or the ledger (seed 000: "never
//! copy secrets or unnecessary PII into the manifest"):
//! through the real `memory-latch checkpoint` and `consent request`, emails,
//! phone numbers, national id and card numbers in free text are redacted
//! before the entry is written, while ordinary engineering text (versions,
//! dates, line numbers, hashes, timestamps) is kept byte for byte.
#![allow(clippy::unwrap_used)]

use crate::support;

use std::fs;

#[test]
fn checkpoint_and_consent_request_redact_personal_data_before_the_manifest() {
    let e = support::latch::env();
    e.ok(&["init", "--objective", "reply to jane.doe@example.com about the invoice"]);
    let pii = [
        "jane.doe@example.com",
        "+44 20 7946 0958",
        "(415) 555-2671",
        "123-45-6789",
        "AB123456C",
        "4111 1111 1111 1111",
        "378282246310005",
    ];
    let ordinary = "bumped serde to 1.0.219 on 2026-12-01, see src/lib.rs:1234, commit 4f1c2a9, at 1733001234567 ms";
    e.ok(&[
        "checkpoint",
        "--next-step",
        "call the customer at +44 20 7946 0958 or (415) 555-2671",
        "--known",
        "their ssn 123-45-6789 and NINO AB123456C were on the form",
        "--known",
        ordinary,
        "--unknown",
        "whether card 4111 1111 1111 1111 or 378282246310005 was charged",
        "--decision",
        "write to jane.doe@example.com first",
    ]);
    let action = e.file("action.json", "{\"tool_name\":\"Bash\",\"tool_input\":{\"command\":\"sendmail x\"}}\n");
    e.ok(&[
        "consent",
        "request",
        "--action-file",
        &action,
        "--summary",
        "mail jane.doe@example.com the card 4111-1111-1111-1111",
        "--risk",
        "low",
    ]);

    let dir = e.ws.join(".memory-latch");
    let manifest = fs::read_to_string(dir.join("_manifest.md")).unwrap();
    let ledger = fs::read_to_string(dir.join("tokens.json")).unwrap();
    for p in pii {
        assert!(!manifest.contains(p), "the manifest holds {p:?}:\n{manifest}");
        assert!(!ledger.contains(p), "the ledger holds {p:?}");
    }
    // (no bare 4-digit group: one may occur in a hash or a timestamp by chance)
    for digits in ["79460958", "5552671", "45-6789", "4111111111111111", "1111 1111"] {
        assert!(!manifest.contains(digits) && !ledger.contains(digits), "{digits} left");
    }
    // what the agent wrote around the personal data stays, and so does ordinary text
    assert!(manifest.contains("call the customer at [REDACTED] or [REDACTED]"), "{manifest}");
    assert!(manifest.contains("their ssn [REDACTED] and NINO [REDACTED] were on the form"));
    assert!(manifest.contains("whether card [REDACTED] or [REDACTED] was charged"));
    assert!(manifest.contains("reply to [REDACTED] about the invoice"));
    assert!(manifest.contains(ordinary), "{manifest}");
    assert!(ledger.contains("mail [REDACTED] the card [REDACTED]"), "{ledger}");
    // the redacted chain verifies, and status shows the redacted state
    e.ok(&["verify"]);
    let st = e.status();
    assert_eq!(st["next_single_step"], "call the customer at [REDACTED] or [REDACTED]");
    assert_eq!(st["decisions"][0]["text"], "write to [REDACTED] first");
}
