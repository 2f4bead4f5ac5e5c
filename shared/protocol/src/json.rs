//! Canonical JSON (docs/protocol.md §4): the printer every digest in the
//! protocol is built with, and the strict parser that records every token
//! JavaScript would print differently.
//!
//! [`canonical_json`] prints exactly what JavaScript `JSON.stringify(value)`
//! prints: compact, keys in the value's order (serde_json keeps insertion
//! order here), strings escaped only as `\"`, `\\`, `\b`, `\f`, `\n`, `\r`,
//! `\t` and `\u00xx` (lowercase hex) for the other U+0000-U+001F; nothing
//! else is escaped (not `/`, not U+2028/U+2029, not non-ASCII). Integers are
//! printed as plain decimals; other numbers as JavaScript's `Number#toString`
//! would (`1e+21`, `1.5`, `0.000001`, `1e-7`).

use crate::ids::MAX_SAFE_INTEGER;
use serde_json::{Map, Number, Value};

// ---------------------------------------------------------------------------
// Canonical JSON (JavaScript JSON.stringify)
// ---------------------------------------------------------------------------

/// Exactly what JavaScript `JSON.stringify(value)` prints for `value`.
pub fn canonical_json(value: &Value) -> String {
    let mut out = String::new();
    write_value(&mut out, value);
    out
}

fn write_value(out: &mut String, value: &Value) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(true) => out.push_str("true"),
        Value::Bool(false) => out.push_str("false"),
        Value::Number(n) => write_number(out, n),
        Value::String(s) => write_string(out, s),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_value(out, item);
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            for (i, (key, item)) in map.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_string(out, key);
                out.push(':');
                write_value(out, item);
            }
            out.push('}');
        }
    }
}

fn write_number(out: &mut String, n: &Number) {
    if let Some(u) = n.as_u64() {
        out.push_str(&u.to_string());
    } else if let Some(i) = n.as_i64() {
        out.push_str(&i.to_string());
    } else if let Some(f) = n.as_f64() {
        out.push_str(&js_number(f));
    } else {
        out.push_str("null");
    }
}

fn write_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

/// JavaScript `Number.prototype.toString()` for a double, as
/// `JSON.stringify` uses it (non-finite values print `null`).
pub fn js_number(x: f64) -> String {
    if !x.is_finite() {
        return "null".to_owned();
    }
    if x == 0.0 {
        return "0".to_owned();
    }
    // Rust's `{:e}` without precision prints the shortest digits that
    // round-trip, which is what ECMAScript's Number::toString picks too.
    let sci = format!("{:e}", x.abs());
    let (mantissa, exponent) = sci.split_once('e').unwrap_or((sci.as_str(), "0"));
    let exponent: i64 = exponent.parse().unwrap_or(0);
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    let k = digits.len() as i64;
    let n = exponent + 1;
    let zeros = |count: i64| "0".repeat(count.max(0) as usize);
    let mut out = String::new();
    if x < 0.0 {
        out.push('-');
    }
    if k <= n && n <= 21 {
        out.push_str(&digits);
        out.push_str(&zeros(n - k));
    } else if 0 < n && n <= 21 {
        let (int, frac) = digits.split_at(n as usize);
        out.push_str(int);
        out.push('.');
        out.push_str(frac);
    } else if -6 < n && n <= 0 {
        out.push_str("0.");
        out.push_str(&zeros(-n));
        out.push_str(&digits);
    } else {
        let e = n - 1;
        let (first, rest) = digits.split_at(1);
        out.push_str(first);
        if !rest.is_empty() {
            out.push('.');
            out.push_str(rest);
        }
        out.push('e');
        out.push(if e >= 0 { '+' } else { '-' });
        out.push_str(&e.abs().to_string());
    }
    out
}

// ---------------------------------------------------------------------------
// Strict JSON parser that records non-canonical forms
// ---------------------------------------------------------------------------

/// Why a text is not JSON at all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fail {
    /// A syntax error at this byte.
    Syntax(usize),
    /// Nesting deeper than allowed at this byte.
    TooDeep(usize),
}

/// A strictly parsed JSON text and what JavaScript would print differently.
#[derive(Debug, Clone, PartialEq)]
pub struct Strict {
    /// The value, keys in document order.
    pub value: Value,
    /// The first token `JSON.stringify` would print differently: (byte
    /// offset, docs/protocol.md §4 rule name).
    pub non_canonical: Option<(usize, &'static str)>,
    /// The first lone surrogate escape (byte offset).
    pub lone_surrogate: Option<usize>,
}

/// Parse `text` as strict JSON (RFC 8259, nesting at most `max_depth`),
/// recording non-canonical spellings and lone surrogate escapes instead of
/// rejecting them.
pub fn parse_strict(text: &str, max_depth: usize) -> Result<Strict, Fail> {
    let mut parser = Parser::new(text, max_depth);
    let value = parser.document()?;
    Ok(Strict { value, non_canonical: parser.canon, lone_surrogate: parser.lone_surrogate })
}

struct Parser<'a> {
    src: &'a str,
    bytes: &'a [u8],
    pos: usize,
    /// First token JavaScript would print differently: (offset, rule).
    canon: Option<(usize, &'static str)>,
    /// First lone surrogate escape.
    lone_surrogate: Option<usize>,
    max_depth: usize,
}

impl<'a> Parser<'a> {
    fn new(src: &'a str, max_depth: usize) -> Self {
        Parser { src, bytes: src.as_bytes(), pos: 0, canon: None, lone_surrogate: None, max_depth }
    }

    fn note(&mut self, at: usize, rule: &'static str) {
        if self.canon.is_none() {
            self.canon = Some((at, rule));
        }
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    fn skip_ws(&mut self) {
        let start = self.pos;
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.pos += 1;
        }
        if self.pos > start {
            self.note(start, "whitespace");
        }
    }

    fn expect(&mut self, byte: u8) -> Result<(), Fail> {
        if self.peek() == Some(byte) {
            self.pos += 1;
            Ok(())
        } else {
            Err(Fail::Syntax(self.pos))
        }
    }

    fn document(&mut self) -> Result<Value, Fail> {
        self.skip_ws();
        let value = self.value(1)?;
        self.skip_ws();
        if self.pos != self.bytes.len() {
            return Err(Fail::Syntax(self.pos));
        }
        Ok(value)
    }

    fn value(&mut self, depth: usize) -> Result<Value, Fail> {
        match self.peek() {
            Some(b'{') => self.object(depth),
            Some(b'[') => self.array(depth),
            Some(b'"') => self.string().map(Value::String),
            Some(b't') => self.literal("true", Value::Bool(true)),
            Some(b'f') => self.literal("false", Value::Bool(false)),
            Some(b'n') => self.literal("null", Value::Null),
            Some(b'-' | b'0'..=b'9') => self.number(),
            _ => Err(Fail::Syntax(self.pos)),
        }
    }

    fn literal(&mut self, word: &str, value: Value) -> Result<Value, Fail> {
        if self.bytes[self.pos..].starts_with(word.as_bytes()) {
            self.pos += word.len();
            Ok(value)
        } else {
            Err(Fail::Syntax(self.pos))
        }
    }

    fn object(&mut self, depth: usize) -> Result<Value, Fail> {
        if depth > self.max_depth {
            return Err(Fail::TooDeep(self.pos));
        }
        self.expect(b'{')?;
        let mut map = Map::new();
        self.skip_ws();
        if self.peek() == Some(b'}') {
            self.pos += 1;
            return Ok(Value::Object(map));
        }
        loop {
            self.skip_ws();
            let key_at = self.pos;
            if self.peek() != Some(b'"') {
                return Err(Fail::Syntax(self.pos));
            }
            let key = self.string()?;
            self.skip_ws();
            self.expect(b':')?;
            self.skip_ws();
            let item = self.value(depth + 1)?;
            if map.contains_key(&key) {
                self.note(key_at, "duplicate_key");
            }
            map.insert(key, item);
            self.skip_ws();
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b'}') => {
                    self.pos += 1;
                    return Ok(Value::Object(map));
                }
                _ => return Err(Fail::Syntax(self.pos)),
            }
        }
    }

    fn array(&mut self, depth: usize) -> Result<Value, Fail> {
        if depth > self.max_depth {
            return Err(Fail::TooDeep(self.pos));
        }
        self.expect(b'[')?;
        let mut items = Vec::new();
        self.skip_ws();
        if self.peek() == Some(b']') {
            self.pos += 1;
            return Ok(Value::Array(items));
        }
        loop {
            self.skip_ws();
            items.push(self.value(depth + 1)?);
            self.skip_ws();
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b']') => {
                    self.pos += 1;
                    return Ok(Value::Array(items));
                }
                _ => return Err(Fail::Syntax(self.pos)),
            }
        }
    }

    fn hex4(&mut self) -> Result<(u32, bool), Fail> {
        let Some(chunk) = self.bytes.get(self.pos..self.pos + 4) else {
            return Err(Fail::Syntax(self.pos));
        };
        let mut value = 0u32;
        let mut lowercase = true;
        for &b in chunk {
            let digit = match b {
                b'0'..=b'9' => b - b'0',
                b'a'..=b'f' => b - b'a' + 10,
                b'A'..=b'F' => {
                    lowercase = false;
                    b - b'A' + 10
                }
                _ => return Err(Fail::Syntax(self.pos)),
            };
            value = value * 16 + u32::from(digit);
        }
        self.pos += 4;
        Ok((value, lowercase))
    }

    fn string(&mut self) -> Result<String, Fail> {
        self.expect(b'"')?;
        let mut out = String::new();
        loop {
            let run_start = self.pos;
            while let Some(b) = self.peek() {
                if b == b'"' || b == b'\\' || b < 0x20 {
                    break;
                }
                self.pos += 1;
            }
            // Runs end at ASCII bytes, so they are on char boundaries.
            out.push_str(self.src.get(run_start..self.pos).ok_or(Fail::Syntax(run_start))?);
            match self.peek() {
                Some(b'"') => {
                    self.pos += 1;
                    return Ok(out);
                }
                Some(b'\\') => self.escape(&mut out)?,
                _ => return Err(Fail::Syntax(self.pos)),
            }
        }
    }

    fn escape(&mut self, out: &mut String) -> Result<(), Fail> {
        let at = self.pos;
        self.pos += 1; // the backslash
        let Some(kind) = self.peek() else {
            return Err(Fail::Syntax(self.pos));
        };
        self.pos += 1;
        let short = match kind {
            b'"' => Some('"'),
            b'\\' => Some('\\'),
            b'/' => {
                self.note(at, "escape_form");
                Some('/')
            }
            b'b' => Some('\u{8}'),
            b'f' => Some('\u{c}'),
            b'n' => Some('\n'),
            b'r' => Some('\r'),
            b't' => Some('\t'),
            b'u' => None,
            _ => return Err(Fail::Syntax(at)),
        };
        if let Some(c) = short {
            out.push(c);
            return Ok(());
        }
        let (unit, lowercase) = self.hex4()?;
        if (0xD800..0xDC00).contains(&unit) && self.bytes[self.pos..].starts_with(b"\\u") {
            let save = self.pos;
            self.pos += 2;
            let (low, _) = self.hex4()?;
            if (0xDC00..0xE000).contains(&low) {
                // A valid pair: JavaScript prints the character itself.
                let cp = 0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00);
                out.push(char::from_u32(cp).unwrap_or('\u{FFFD}'));
                self.note(at, "escape_form");
                return Ok(());
            }
            self.pos = save;
        }
        match char::from_u32(unit) {
            Some(c) => {
                // JSON.stringify uses \uXXXX (lowercase) only for controls
                // that have no short escape.
                let canonical = lowercase && unit < 0x20 && !matches!(unit, 0x08 | 0x09 | 0x0A | 0x0C | 0x0D);
                if !canonical {
                    self.note(at, "escape_form");
                }
                out.push(c);
            }
            None => {
                // A lone surrogate: JSON.stringify prints it as lowercase \uXXXX.
                if !lowercase {
                    self.note(at, "escape_form");
                }
                if self.lone_surrogate.is_none() {
                    self.lone_surrogate = Some(at);
                }
                out.push('\u{FFFD}');
            }
        }
        Ok(())
    }

    fn number(&mut self) -> Result<Value, Fail> {
        let start = self.pos;
        if self.peek() == Some(b'-') {
            self.pos += 1;
        }
        match self.peek() {
            Some(b'0') => self.pos += 1,
            Some(b'1'..=b'9') => self.digits(),
            _ => return Err(Fail::Syntax(self.pos)),
        }
        let mut integer = true;
        if self.peek() == Some(b'.') {
            integer = false;
            self.pos += 1;
            if !matches!(self.peek(), Some(b'0'..=b'9')) {
                return Err(Fail::Syntax(self.pos));
            }
            self.digits();
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            integer = false;
            self.pos += 1;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.pos += 1;
            }
            if !matches!(self.peek(), Some(b'0'..=b'9')) {
                return Err(Fail::Syntax(self.pos));
            }
            self.digits();
        }
        let token = self.src.get(start..self.pos).ok_or(Fail::Syntax(start))?;
        let float: f64 = token.parse().map_err(|_| Fail::Syntax(start))?;
        if js_number(float) != token {
            self.note(start, "number_form");
        }
        if integer && float.abs() <= MAX_SAFE_INTEGER as f64 + 1.0 && token != "-0" {
            if let Ok(i) = token.parse::<i64>() {
                return Ok(Value::Number(Number::from(i)));
            }
        }
        Ok(Number::from_f64(float).map(Value::Number).unwrap_or(Value::Null))
    }

    fn digits(&mut self) {
        while matches!(self.peek(), Some(b'0'..=b'9')) {
            self.pos += 1;
        }
    }
}
