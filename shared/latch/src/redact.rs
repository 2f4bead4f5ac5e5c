//! Redaction of obvious secrets in free text before it enters the manifest
//! or the token ledger. Deliberately conservative: it over-redacts rather
//! than lets a credential through. Replacement text is [`REDACTED`].

/// What a redacted span becomes.
pub const REDACTED: &str = "[REDACTED]";

/// Key markers whose value (after `=` or `:`) is a secret.
const KEYS: &[&str] = &[
    "password", "passwd", "pwd", "secret", "client_secret", "token", "access_token", "refresh_token", "api_key", "apikey",
    "api-key", "access_key", "secret_key", "private_key", "auth", "authorization", "credential", "credentials",
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
    KEYS.iter().any(|k| {
        lower.ends_with(&format!("{k}:")) || lower.ends_with(&format!("{k}=")) || lower.ends_with(&format!("\"{k}\":"))
    })
}

/// Return `text` with obvious secrets replaced by [`REDACTED`].
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
    fn keeps_ordinary_text_and_labelled_digests() {
        let digest = format!("sha256:{}", "ab".repeat(32));
        for keep in ["fix the flaky test in src/lib.rs", "ask-user before deploy", digest.as_str(), "tokenizer change", "task-12345"] {
            assert_eq!(redact(keep), keep);
        }
        assert!(!redact("my token sk-live-0123456789abcdefghij").contains("0123456789abcdefghij"));
    }
}
