//! Redaction of obvious secrets and personal data in free text before it
//! enters the manifest or the token ledger ("never copy secrets or
//! unnecessary PII into the manifest"). Deliberately conservative for
//! credentials: it over-redacts rather than lets one through. Personal data
//! is recognised by shape, with checks that keep ordinary engineering text
//! (versions, dates, times, hashes, line numbers, ports, timestamps)
//! intact: email addresses, phone numbers (international `+` form, North
//! American `(NXX) NXX-XXXX` shapes, trunk-`0` national forms), US social
//! security numbers and UK national insurance numbers, and payment card
//! numbers (13 to 19 digits with an issuer prefix and a valid Luhn check
//! digit). Replacement text is [`REDACTED`].

/// What a redacted span becomes.
pub const REDACTED: &str = "[REDACTED]";

/// Key markers whose value (after `=` or `:`) is a secret.
const KEYS: &[&str] = &[
    "password",
    "passwd",
    "pwd",
    "secret",
    "client_secret",
    "token",
    "access_token",
    "refresh_token",
    "api_key",
    "apikey",
    "api-key",
    "access_key",
    "secret_key",
    "private_key",
    "auth",
    "authorization",
    "credential",
    "credentials",
    // personal identifiers whose value follows a label
    "ssn",
    "passport",
    "national_id",
    "tax_id",
    "iban",
];

/// Prefixes of well-known credential formats and the minimum length of the
/// tail after the prefix.
const PREFIXES: &[(&str, usize)] = &[
    ("sk-", 16),
    ("sk_live_", 8),
    ("sk_test_", 8),
    ("rk_live_", 8),
    ("ghp_", 16),
    ("gho_", 16),
    ("ghu_", 16),
    ("ghs_", 16),
    ("ghr_", 16),
    ("github_pat_", 16),
    ("glpat-", 16),
    ("xoxb-", 8),
    ("xoxp-", 8),
    ("xoxa-", 8),
    ("AKIA", 16),
    ("ASIA", 16),
    ("AIza", 30),
];

fn is_token_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '+' | '/' | '=')
}

fn is_b64_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '+' | '/' | '=' | '_' | '-')
}

/// Byte ranges inside `word` that hold a secret.
fn spans_in_word(word: &str) -> Vec<(usize, usize)> {
    let mut spans = Vec::new();
    let lower = word.to_ascii_lowercase();
    // key=value / key:value
    for key in KEYS {
        for sep in ['=', ':'] {
            let marker = format!("{key}{sep}");
            if let Some(pos) = lower.find(&marker) {
                let before_ok = pos == 0 || !lower.as_bytes()[pos - 1].is_ascii_alphanumeric();
                let start = pos + marker.len();
                if before_ok && start < word.len() {
                    spans.push((start, word.len()));
                }
            }
        }
    }
    // well-known prefixes
    for (prefix, min_tail) in PREFIXES {
        let mut from = 0;
        while let Some(rel) = word[from..].find(prefix) {
            let pos = from + rel;
            let before_ok = pos == 0 || !word.as_bytes()[pos - 1].is_ascii_alphanumeric();
            let tail_end = word[pos + prefix.len()..]
                .char_indices()
                .find(|(_, c)| !is_token_char(*c))
                .map(|(i, _)| pos + prefix.len() + i)
                .unwrap_or(word.len());
            if before_ok && tail_end - (pos + prefix.len()) >= *min_tail {
                spans.push((pos, tail_end));
            }
            from = pos + prefix.len();
        }
    }
    if word.contains("-----BEGIN") {
        spans.push((0, word.len()));
    }
    // long hex runs (32+) unless they are a labelled sha256 digest, and long
    // base64-looking runs (40+) mixing upper, lower and digits
    let chars: Vec<(usize, char)> = word.char_indices().collect();
    let mut i = 0;
    while i < chars.len() {
        if is_b64_char(chars[i].1) {
            let start = i;
            while i < chars.len() && is_b64_char(chars[i].1) {
                i += 1;
            }
            let (s, e) = (chars[start].0, chars.get(i).map(|c| c.0).unwrap_or(word.len()));
            let run = &word[s..e];
            // hex sub-runs
            let mut j = 0;
            let rb = run.as_bytes();
            while j < rb.len() {
                if rb[j].is_ascii_hexdigit() {
                    let hs = j;
                    while j < rb.len() && rb[j].is_ascii_hexdigit() {
                        j += 1;
                    }
                    let labelled = word[..s + hs].to_ascii_lowercase().ends_with("sha256:") && j - hs == 64;
                    if j - hs >= 32 && !labelled {
                        spans.push((s + hs, s + j));
                    }
                } else {
                    j += 1;
                }
            }
            let has_upper = run.bytes().any(|b| b.is_ascii_uppercase());
            let has_lower = run.bytes().any(|b| b.is_ascii_lowercase());
            let has_digit = run.bytes().any(|b| b.is_ascii_digit());
            if run.len() >= 40 && has_upper && has_lower && has_digit {
                spans.push((s, e));
            }
        } else {
            i += 1;
        }
    }
    spans
}

/// Whether the word is a bare marker (`Bearer`, `password:`, `token=`) whose
/// secret is the next word.
fn marks_next(word: &str) -> bool {
    let lower = word.to_ascii_lowercase();
    if lower == "bearer" || lower == "basic" || lower == "token" {
        return true;
    }
    KEYS.iter().any(|k| lower.ends_with(&format!("{k}:")) || lower.ends_with(&format!("{k}=")) || lower.ends_with(&format!("\"{k}\":")))
}

/// Byte ranges of personal data in `text` (see the module documentation).
/// Phone and card numbers may hold spaces, so this runs over the whole text.
pub fn pii_spans(text: &str) -> Vec<(usize, usize)> {
    let mut spans = Vec::new();
    emails(text.as_bytes(), &mut spans);
    numbers(text.as_bytes(), &mut spans);
    uk_nino(text.as_bytes(), &mut spans);
    spans
}

fn email_local(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'%' | b'+' | b'-')
}

/// `local@domain.tld`: a dot in the domain and an alphabetic top-level label
/// of 2+ letters (so `pkg@1.2.3` and `user@host` stay); `git@` (the SSH
/// service user of code hosts, not a person) is kept.
fn emails(b: &[u8], spans: &mut Vec<(usize, usize)>) {
    for at in (0..b.len()).filter(|&i| b[i] == b'@') {
        let mut s = at;
        while s > 0 && email_local(b[s - 1]) {
            s -= 1;
        }
        while s < at && !b[s].is_ascii_alphanumeric() {
            s += 1;
        }
        let mut e = at + 1;
        while e < b.len() && (b[e].is_ascii_alphanumeric() || matches!(b[e], b'.' | b'-')) {
            e += 1;
        }
        while e > at + 1 && matches!(b[e - 1], b'.' | b'-') {
            e -= 1;
        }
        if s == at || e == at + 1 || &b[s..at] == b"git" {
            continue;
        }
        let domain = &b[at + 1..e];
        let labels: Vec<&[u8]> = domain.split(|c| *c == b'.').collect();
        let tld = labels.last().copied().unwrap_or_default();
        if labels.len() >= 2 && labels.iter().all(|l| !l.is_empty()) && tld.len() >= 2 && tld.iter().all(u8::is_ascii_alphabetic) {
            spans.push((s, e));
        }
    }
}

/// The Luhn check over ASCII digits.
pub fn luhn(digits: &[u8]) -> bool {
    let mut sum = 0u32;
    for (i, d) in digits.iter().rev().enumerate() {
        let mut v = u32::from(d - b'0');
        if i % 2 == 1 {
            v *= 2;
            if v > 9 {
                v -= 9;
            }
        }
        sum += v;
    }
    !digits.is_empty() && sum.is_multiple_of(10)
}

/// An issuer prefix and length of a payment card network (Visa, Mastercard,
/// American Express, Discover, JCB, Diners Club, UnionPay).
fn card_issuer(d: &[u8]) -> bool {
    let n = d.len();
    let p = |k: usize| d[..k].iter().fold(0u32, |a, c| a * 10 + u32::from(c - b'0'));
    match d[0] {
        b'4' => matches!(n, 13 | 16 | 19),
        b'5' => n == 16 && (51..=55).contains(&p(2)),
        b'2' => n == 16 && (2221..=2720).contains(&p(4)),
        b'3' => (n == 15 && matches!(p(2), 34 | 37)) || ((16..=19).contains(&n) && p(2) == 35) || (n == 14 && matches!(p(2), 30 | 36 | 38)),
        b'6' => (16..=19).contains(&n) && (p(4) == 6011 || p(2) == 65 || p(2) == 62 || (644..=649).contains(&p(3))),
        _ => false,
    }
}

/// Runs of digits with single separators (space, `-`, `.`, parentheses),
/// an optional leading `+`, not inside a longer token; each run is then
/// judged as a card, a social security or a phone number.
fn numbers(b: &[u8], spans: &mut Vec<(usize, usize)>) {
    let mut i = 0;
    while i < b.len() {
        let starts = b[i].is_ascii_digit() || (matches!(b[i], b'+' | b'(') && b.get(i + 1).is_some_and(u8::is_ascii_digit));
        let free = i == 0
            || !(b[i - 1].is_ascii_alphanumeric()
                || matches!(b[i - 1], b'.' | b'_' | b'/' | b':' | b'@' | b'#' | b'-' | b'+' | b'=' | b'$'));
        if !(starts && free) {
            i += 1;
            continue;
        }
        let start = i;
        let mut e = i + 1;
        while e < b.len() {
            if b[e].is_ascii_digit() {
                e += 1;
            } else if matches!(b[e], b' ' | b'-' | b'.' | b'(' | b')') {
                // one separator (or `) ` / `) `-like pair) between digit groups
                let mut k = e + 1;
                if b[e] == b')' && b.get(k) == Some(&b' ') {
                    k += 1;
                }
                if b.get(k).is_some_and(|c| c.is_ascii_digit() || *c == b'(') && !(b[e] == b'(' && b[e - 1].is_ascii_digit()) {
                    e = k;
                } else {
                    break;
                }
            } else {
                break;
            }
        }
        let mut end = e;
        while end > start && !b[end - 1].is_ascii_digit() && b[end - 1] != b')' {
            end -= 1;
        }
        i = e.max(i + 1);
        if b.get(end).is_some_and(|c| c.is_ascii_alphanumeric()) || (end < b.len() && b[end] == b')' && !b[start..end].contains(&b'(')) {
            continue;
        }
        let run = &b[start..end];
        if pii_number(run) {
            spans.push((start, end));
        }
    }
}

fn pii_number(run: &[u8]) -> bool {
    let digits: Vec<u8> = run.iter().copied().filter(u8::is_ascii_digit).collect();
    let groups: Vec<&[u8]> = run.split(|c| !c.is_ascii_digit()).filter(|g| !g.is_empty()).collect();
    let seps: Vec<u8> = run.iter().copied().filter(|c| !c.is_ascii_digit()).collect();
    let n = digits.len();
    let lens: Vec<usize> = groups.iter().map(|g| g.len()).collect();
    if run[0] == b'+' {
        // international: +<country code><number>, 8 to 15 digits (E.164)
        return (8..=15).contains(&n) && groups.len() <= 6;
    }
    let dash_space = seps.iter().all(|c| matches!(c, b' ' | b'-'));
    // payment card: 13-19 digits, plain or in groups of 3 to 6, issuer prefix, Luhn
    if dash_space
        && (13..=19).contains(&n)
        && (groups.len() == 1 || lens.iter().all(|l| (3..=6).contains(l)))
        && card_issuer(&digits)
        && luhn(&digits)
    {
        return true;
    }
    // US social security number: AAA-GG-SSSS (no 000/666/9xx area, 00 group, 0000 serial)
    if seps == b"--" && lens == [3, 2, 4] {
        let area = &groups[0];
        return area != b"000" && area != b"666" && area[0] != b'9' && groups[1] != b"00" && groups[2] != b"0000";
    }
    if !seps.iter().all(|c| matches!(c, b' ' | b'-' | b'(' | b')')) || seps.is_empty() {
        return false;
    }
    // North American: [1] NXX NXX XXXX in groups (area and exchange start 2-9)
    let nanp = |g: &[&[u8]]| g.len() == 3 && g[0].len() == 3 && g[1].len() == 3 && g[2].len() == 4 && g[0][0] >= b'2' && g[1][0] >= b'2';
    if nanp(&groups) || (groups.len() == 4 && groups[0] == b"1" && nanp(&groups[1..])) {
        return true;
    }
    // trunk-prefix national form: 0 then 9-10 more digits in 2 to 4 groups of 2-5
    digits[0] == b'0'
        && (10..=11).contains(&n)
        && (2..=4).contains(&groups.len())
        && lens.iter().all(|l| (2..=5).contains(l))
        && lens[0] >= 3
}

/// UK national insurance number, compact (`AB123456C`): two prefix letters
/// (not D, F, I, Q, U, V; the second not O; not BG GB KN NK NT TN ZZ), six
/// digits, a suffix A-D.
fn uk_nino(b: &[u8], spans: &mut Vec<(usize, usize)>) {
    if b.len() < 9 {
        return;
    }
    for s in 0..=b.len() - 9 {
        let w = &b[s..s + 9];
        let bounded = (s == 0 || !b[s - 1].is_ascii_alphanumeric()) && b.get(s + 9).is_none_or(|c| !c.is_ascii_alphanumeric());
        let bad1 = |c: u8| matches!(c, b'D' | b'F' | b'I' | b'Q' | b'U' | b'V');
        if bounded
            && w[0].is_ascii_uppercase()
            && w[1].is_ascii_uppercase()
            && !bad1(w[0])
            && !bad1(w[1])
            && w[1] != b'O'
            && !matches!(&w[..2], b"BG" | b"GB" | b"KN" | b"NK" | b"NT" | b"TN" | b"ZZ")
            && w[2..8].iter().all(u8::is_ascii_digit)
            && matches!(w[8], b'A'..=b'D')
        {
            spans.push((s, s + 9));
        }
    }
}

/// Return `text` with obvious secrets and personal data replaced by [`REDACTED`].
pub fn redact(text: &str) -> String {
    let mut words: Vec<(usize, usize)> = Vec::new();
    let mut start = None;
    for (i, c) in text.char_indices() {
        if c.is_whitespace() {
            if let Some(s) = start.take() {
                words.push((s, i));
            }
        } else if start.is_none() {
            start = Some(i);
        }
    }
    if let Some(s) = start {
        words.push((s, text.len()));
    }
    let mut spans: Vec<(usize, usize)> = Vec::new();
    for (n, &(s, e)) in words.iter().enumerate() {
        let word = &text[s..e];
        if n > 0 {
            let (ps, pe) = words[n - 1];
            let scheme = matches!(word.to_ascii_lowercase().as_str(), "bearer" | "basic" | "token");
            if marks_next(&text[ps..pe]) && !scheme {
                let lead = word.len() - word.trim_start_matches(['"', '\'']).len();
                let trail = word.len() - word.trim_end_matches(['"', '\'', ',', ';', '.']).len();
                if s + lead < e - trail {
                    spans.push((s + lead, e - trail));
                }
            }
        }
        spans.extend(spans_in_word(word).into_iter().map(|(a, b)| (s + a, s + b)));
    }
    spans.extend(pii_spans(text));
    if spans.is_empty() {
        return text.to_owned();
    }
    spans.sort_unstable();
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for (a, b) in spans {
        if b <= at {
            continue;
        }
        let a = a.max(at);
        out.push_str(&text[at..a]);
        out.push_str(REDACTED);
        at = b;
    }
    out.push_str(&text[at..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redacts_known_formats() {
        let cases = [
            ("key sk-abcdefghijklmnopqrstuvwx here", "key [REDACTED] here"),
            ("ghp_abcdefghijklmnopqrstuvwxyz0123456789", "[REDACTED]"),
            ("aws AKIAABCDEFGHIJKLMNOP", "aws [REDACTED]"),
            ("Authorization: Bearer abc.def.ghi", "Authorization: Bearer [REDACTED]"),
            ("db password=hunter2 ok", "db password=[REDACTED] ok"),
            ("password: hunter2", "password: [REDACTED]"),
            ("API_KEY=xyz123", "API_KEY=[REDACTED]"),
            ("blob 0123456789abcdef0123456789abcdef0123", "blob [REDACTED]"),
            ("b64 QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVphYmNkZWZnaGlqazEyMzQ1", "b64 [REDACTED]"),
        ];
        for (input, want) in cases {
            assert_eq!(redact(input), want, "{input}");
        }
    }

    #[test]
    fn redacts_personal_data() {
        let cases = [
            ("mail jane.doe+ops@example.co.uk now", "mail [REDACTED] now"),
            ("<bob@mail.example.com>", "<[REDACTED]>"),
            ("call +1 415 555 2671 today", "call [REDACTED] today"),
            ("call +44 20 7946 0958.", "call [REDACTED]."),
            ("+4915123456789", "[REDACTED]"),
            ("office (415) 555-2671", "office [REDACTED]"),
            ("cell 415-555-2671, home 1 415 555 2671", "cell [REDACTED], home [REDACTED]"),
            ("uk 020 7946 0958", "uk [REDACTED]"),
            ("ssn 123-45-6789", "ssn [REDACTED]"),
            ("ssn: 123456789", "ssn: [REDACTED]"),
            ("passport=X1234567", "passport=[REDACTED]"),
            ("nino QQ123456C? no; AB123456C yes", "nino QQ123456C? no; [REDACTED] yes"),
            ("card 4111 1111 1111 1111 exp", "card [REDACTED] exp"),
            ("card 4111-1111-1111-1111", "card [REDACTED]"),
            ("visa 4012888888881881", "visa [REDACTED]"),
            ("amex 3782 822463 10005", "amex [REDACTED]"),
            ("mc 5555555555554444 and 2223003122003222", "mc [REDACTED] and [REDACTED]"),
        ];
        for (input, want) in cases {
            assert_eq!(redact(input), want, "{input}");
        }
        assert!(luhn(b"4111111111111111") && !luhn(b"4111111111111112") && luhn(b"79927398713"));
    }

    #[test]
    fn keeps_ordinary_engineering_text() {
        for keep in [
            "bump serde to 1.0.219 and tokio 1.47.1",
            "released v2.10.3 on 2026-12-01 at 20:50:02 UTC",
            "dates 2026-12-01, 01/12/2026 and 2026.12.01",
            "see src/lib.rs:1234 and lines 120-135, 1200-1300",
            "listen on 127.0.0.1:8080 and 192.168.100.200",
            "updated_at_ms 1733001234567 (ns 1733001234567000000)",
            "entry_seq 4111111111111112 is not a card (Luhn fails)",
            "commit 4f1c2a9 and 0a1b2c3d4e5f",
            "pkg@1.2.3, npm i lodash@4.17.21, @types/node, user@host",
            "git@github.com:org/repo.git",
            "ran 100 200 3000 iterations; 12 345 6789 bytes",
            "the 123-45-678 ticket and 000-12-3456",
            "ids 21813 and 1234, port 5432, pid 987654",
            "ratio 0.75 of 1,000,000 B; 3.14159265358979",
            "issue #4111111111111111 and PR-5555555555554444",
            "ISO 8601 2026-12-01T20:50:02.123Z",
            "uuid 2208dc6c-1602-4db0-9c33-9125ee25dc44",
        ] {
            assert_eq!(redact(keep), keep);
        }
    }

    #[test]
    fn keeps_ordinary_text_and_labelled_digests() {
        let digest = format!("sha256:{}", "ab".repeat(32));
        for keep in ["fix the flaky test in src/lib.rs", "ask-user before deploy", digest.as_str(), "tokenizer change", "task-12345"] {
            assert_eq!(redact(keep), keep);
        }
        assert!(!redact("my token sk-live-0123456789abcdefghij").contains("0123456789abcdefghij"));
    }
}
