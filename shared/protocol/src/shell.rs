//! A bounded model of what a POSIX/bash command line runs: the simple
//! commands (argv after quote removal, ANSI-C `$'..'` decoding, brace
//! expansion and the line's own plain assignments), their redirections and
//! here-document/here-string text, in compound lists (`;`, `&&`, `||`, `&`,
//! newlines), pipelines, subshells `( )`, groups `{ }`, command and process
//! substitution (`$(..)`, backticks, `<(..)`, `>(..)`). Reserved words of
//! `if`/`while`/`for`/`case` are stepped over so the commands inside them are
//! seen. Nothing is executed; expansions the line cannot resolve stay literal
//! (`$X`). Work is bounded: [`MAX_DEPTH`] nested parses, [`MAX_COMMANDS`]
//! commands, [`MAX_BRACE_WORDS`] words from one brace expansion; a bound
//! reached marks the parse [`Parsed::exceeded`] (what was not read is
//! unknown, and both readers fail closed on it).
//!
//! The one shell model of the toolkit: the command guard
//! ([`crate::command::reaches_helper`]) judges the words it yields, and the
//! PreToolUse policy (kijito-policy) classifies the commands it yields.
//!
//! One parse per command line (docs/architecture.md, "One parsed tool
//! call"): [`ShellLine::parse`] reads a line once, with no variables known;
//! a `$NAME`/`${NAME}` the line does not assign itself is kept as a
//! reference, and each reader takes its view of the one parse: the guard
//! [`ShellLine::as_written`] (`$HOME` stays `$HOME`), the policy
//! [`ShellLine::with_vars`] (`$HOME` and `$PWD` filled in). A line that
//! itself holds one of the model's marks (private-use U+E000..U+E006: the
//! brace marks, the here-document slot and the reference marks; as text or
//! ANSI-C escapes) is marked [`Parsed::exceeded`] (docs/policy.md,
//! `tripwire_shell_unparsed`).

use std::borrow::Cow;
use std::collections::HashMap;

/// Nested parses (command substitution, `bash -c`, wrappers) at most.
pub const MAX_DEPTH: usize = 8;
/// Simple commands kept per top-level line.
pub const MAX_COMMANDS: usize = 512;
/// Words one brace expansion may produce.
pub const MAX_BRACE_WORDS: usize = 256;
/// Longest line looked at (bytes); longer lines are cut and marked.
pub const MAX_LINE_BYTES: usize = 256 * 1024;
/// Words one simple command keeps (after brace expansion).
pub const MAX_WORDS: usize = 4096;
/// Words one parse keeps in all (after brace expansion).
pub const MAX_TOTAL_WORDS: usize = 65_536;
/// Longest variable value substituted (longer ones stay `$NAME`).
pub const MAX_VAR_BYTES: usize = 4096;

// Unquoted brace characters inside a word, kept apart from quoted ones.
const BR_OPEN: char = '\u{E000}';
const BR_COMMA: char = '\u{E001}';
const BR_CLOSE: char = '\u{E002}';
// A here-document's body slot in a command's stdin until the body is read.
const HEREDOC_SLOT: char = '\u{E003}';
// A variable reference left for the reader's view: `$NAME` is
// REF NAME REF_END, `${NAME}` is REF_BRACED NAME REF_END.
const REF: char = '\u{E004}';
const REF_BRACED: char = '\u{E005}';
const REF_END: char = '\u{E006}';
const REF_MARKS: &[char] = &[REF, REF_BRACED, REF_END];
/// Every mark of the model: a line that holds one itself (as text, or made
/// by an ANSI-C escape) would be read as the mark, so it is not read at all
/// (`$'\uE000' -rf x` would otherwise lose its program, a brace group's `{`).
const MARKS: &[char] = &[BR_OPEN, BR_COMMA, BR_CLOSE, HEREDOC_SLOT, REF, REF_BRACED, REF_END];

/// One redirection of a simple command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Redirect {
    /// `>`, `>>`, `>|`, `&>`, `&>>`, `<>`: the target is written.
    pub write: bool,
    /// The target word (a file; `&N` duplications are dropped).
    pub target: String,
}

/// One simple command as the shell would run it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Simple {
    pub argv: Vec<String>,
    pub redirects: Vec<Redirect>,
    /// Here-document bodies and here-strings fed to its standard input.
    pub stdin: Vec<String>,
    /// Commands with the same number belong to one pipeline.
    pub pipeline: usize,
    /// `NAME=value` words before the program.
    pub assigns: Vec<(String, String)>,
}

/// Everything one line runs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Parsed {
    pub commands: Vec<Simple>,
    /// Nesting went past [`MAX_DEPTH`], or the command count past
    /// [`MAX_COMMANDS`], the line past [`MAX_LINE_BYTES`], the words past
    /// [`MAX_WORDS`]/[`MAX_TOTAL_WORDS`] or one brace expansion past
    /// [`MAX_BRACE_WORDS`]: what was not parsed is unknown.
    pub exceeded: bool,
    /// Words kept so far (bounded by [`MAX_TOTAL_WORDS`]).
    pub words: usize,
    /// Its words hold variable references still to be filled in
    /// ([`ShellLine`]); never set on what [`parse`] returns.
    refs: bool,
}

impl Parsed {
    /// The commands from `from` on with every variable reference filled in
    /// from `vars` (at most [`MAX_VAR_BYTES`] long) or written as in the line.
    fn resolve_from(&mut self, from: usize, vars: &HashMap<String, String>) {
        if !self.refs {
            return;
        }
        let fill = |s: &mut String| {
            if s.contains(REF_MARKS) {
                *s = render(s, vars);
            }
        };
        for cmd in self.commands.iter_mut().skip(from) {
            cmd.argv.iter_mut().for_each(fill);
            cmd.redirects.iter_mut().for_each(|r| fill(&mut r.target));
            cmd.stdin.iter_mut().for_each(fill);
            cmd.assigns.iter_mut().for_each(|(_, v)| fill(v));
        }
        self.refs = false;
    }
}

/// `s` with its variable references filled in from `vars` or written back.
fn render(s: &str, vars: &HashMap<String, String>) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(at) = rest.find([REF, REF_BRACED]) {
        out.push_str(&rest[..at]);
        let braced = rest[at..].starts_with(REF_BRACED);
        let after = &rest[at + REF.len_utf8()..];
        let Some(end) = after.find(REF_END) else {
            out.push_str(&rest[at..]);
            return out;
        };
        let name = &after[..end];
        match vars.get(name).filter(|v| v.len() <= MAX_VAR_BYTES) {
            Some(v) => out.push_str(v),
            None if braced => {
                out.push_str("${");
                out.push_str(name);
                out.push('}');
            }
            None => {
                out.push('$');
                out.push_str(name);
            }
        }
        rest = &after[end + REF_END.len_utf8()..];
    }
    out.push_str(rest);
    out
}

/// One command line of a tool call and its one parse (no variables known;
/// each reader fills in its own: [`ShellLine::as_written`],
/// [`ShellLine::with_vars`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShellLine {
    text: String,
    parsed: std::sync::Arc<Parsed>,
}

impl ShellLine {
    /// Parse `text` (the one parse of this line).
    pub fn parse(text: String) -> ShellLine {
        count_parse();
        let mut parsed = Parsed::default();
        parse_into(&text, HashMap::new(), 0, &mut parsed, &mut 0);
        ShellLine { text, parsed: std::sync::Arc::new(parsed) }
    }

    /// The line as the tool call gave it.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The parse with no variable known (`$HOME` stays `$HOME`): what
    /// [`parse`] with no variables returns.
    pub fn as_written(&self) -> Cow<'_, Parsed> {
        self.with_vars(&HashMap::new())
    }

    /// The parse with these variables filled in (the line's own
    /// assignments win): what [`parse`] with `vars` returns.
    pub fn with_vars(&self, vars: &HashMap<String, String>) -> Cow<'_, Parsed> {
        if !self.parsed.refs {
            return Cow::Borrowed(&self.parsed);
        }
        let mut p = Parsed::clone(&self.parsed);
        p.resolve_from(0, vars);
        Cow::Owned(p)
    }
}

impl AsRef<str> for ShellLine {
    fn as_ref(&self) -> &str {
        &self.text
    }
}

impl From<&str> for ShellLine {
    fn from(text: &str) -> ShellLine {
        ShellLine::parse(text.to_owned())
    }
}

impl From<String> for ShellLine {
    fn from(text: String) -> ShellLine {
        ShellLine::parse(text)
    }
}

thread_local! {
    static PARSES: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

fn count_parse() {
    PARSES.with(|n| n.set(n.get() + 1));
}

/// Top-level command-line parses ([`parse`], [`ShellLine::parse`]) this
/// thread has made: the tests that hold PreToolUse to one parse per line
/// read it.
pub fn parses_on_this_thread() -> usize {
    PARSES.with(|n| n.get())
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Word(String),
    /// `;` `&` `&&` `||` newline: ends a pipeline.
    Sep,
    /// `|` `|&`.
    Pipe,
    Open,
    Close,
    /// A redirection operator: (writes, heredoc: 0 none, 1 `<<`, 2 `<<-`, 3 `<<<`, fd-dup).
    Redir {
        write: bool,
        heredoc: u8,
        dup: bool,
    },
}

struct Lexer<'a> {
    s: Vec<char>,
    i: usize,
    depth: usize,
    /// Bodies of command substitutions met in words, parsed by the caller.
    subs: Vec<String>,
    pending_heredocs: Vec<(String, bool, usize)>,
    heredoc_bodies: HashMap<usize, String>,
    next_heredoc: usize,
    /// A variable the parse did not know was kept as a reference.
    refs: bool,
    /// An ANSI-C string decoded to a reference mark.
    spoofed: bool,
    _p: std::marker::PhantomData<&'a ()>,
}

fn is_meta(c: char) -> bool {
    matches!(c, ';' | '&' | '|' | '(' | ')' | '<' | '>' | '\n' | ' ' | '\t')
}

fn is_name(s: &str) -> bool {
    let mut c = s.chars();
    matches!(c.next(), Some(f) if f == '_' || f.is_ascii_alphabetic()) && c.all(|c| c == '_' || c.is_ascii_alphanumeric())
}

impl<'a> Lexer<'a> {
    fn peek(&self, k: usize) -> Option<char> {
        self.s.get(self.i + k).copied()
    }

    /// The index just past the `)` matching an opening already consumed,
    /// skipping quoted text; the end of input when unmatched.
    fn matching_paren(&self, mut j: usize) -> usize {
        let mut depth = 1usize;
        while j < self.s.len() {
            match self.s[j] {
                '\\' => j += 1,
                '\'' => {
                    j += 1;
                    while j < self.s.len() && self.s[j] != '\'' {
                        j += 1;
                    }
                }
                '"' => {
                    j += 1;
                    while j < self.s.len() && self.s[j] != '"' {
                        if self.s[j] == '\\' {
                            j += 1;
                        }
                        j += 1;
                    }
                }
                '(' => depth += 1,
                ')' => {
                    depth -= 1;
                    if depth == 0 {
                        return j + 1;
                    }
                }
                _ => {}
            }
            j += 1;
        }
        self.s.len()
    }

    fn command_sub(&mut self, out: &mut String) {
        // at "$(": arithmetic "$((" is text, not a command
        if self.peek(2) == Some('(') {
            let end = self.matching_paren(self.i + 2);
            out.extend(&self.s[self.i..end.min(self.s.len())]);
            self.i = end;
            return;
        }
        let start = self.i + 2;
        let end = self.matching_paren(start);
        let body: String = self.s[start..end.saturating_sub(1).max(start)].iter().collect();
        out.push_str("$(");
        out.push_str(&body);
        out.push(')');
        self.subs.push(body);
        self.i = end;
    }

    fn backtick(&mut self, out: &mut String) {
        let mut j = self.i + 1;
        let mut body = String::new();
        while j < self.s.len() && self.s[j] != '`' {
            if self.s[j] == '\\' && j + 1 < self.s.len() {
                j += 1;
            }
            body.push(self.s[j]);
            j += 1;
        }
        out.push('`');
        out.push_str(&body);
        out.push('`');
        self.subs.push(body);
        self.i = (j + 1).min(self.s.len());
    }

    fn dollar(&mut self, out: &mut String, vars: &HashMap<String, String>) {
        // at '$'
        match self.peek(1) {
            Some('(') => self.command_sub(out),
            Some('{') => {
                let mut j = self.i + 2;
                while j < self.s.len() && self.s[j] != '}' {
                    j += 1;
                }
                let inner: String = self.s[self.i + 2..j.min(self.s.len())].iter().collect();
                let name: String = inner.chars().take_while(|c| *c == '_' || c.is_ascii_alphanumeric()).collect();
                match vars.get(&name) {
                    Some(v) if name.len() == inner.len() && v.len() <= MAX_VAR_BYTES => out.push_str(v),
                    None if !name.is_empty() && name.len() == inner.len() => {
                        self.refs = true;
                        out.push(REF_BRACED);
                        out.push_str(&name);
                        out.push(REF_END);
                    }
                    _ => {
                        out.push_str("${");
                        out.push_str(&inner);
                        out.push('}');
                    }
                }
                self.i = (j + 1).min(self.s.len());
            }
            Some(c) if c == '_' || c.is_ascii_alphabetic() => {
                let mut j = self.i + 1;
                while j < self.s.len() && (self.s[j] == '_' || self.s[j].is_ascii_alphanumeric()) {
                    j += 1;
                }
                let name: String = self.s[self.i + 1..j].iter().collect();
                match vars.get(&name) {
                    Some(v) if v.len() <= MAX_VAR_BYTES => out.push_str(v),
                    Some(_) => {
                        out.push('$');
                        out.push_str(&name);
                    }
                    None => {
                        self.refs = true;
                        out.push(REF);
                        out.push_str(&name);
                        out.push(REF_END);
                    }
                }
                self.i = j;
            }
            _ => {
                out.push('$');
                self.i += 1;
            }
        }
    }

    /// `$'...'` with the cursor on `$`.
    fn ansi_c(&mut self, out: &mut String) {
        let mut j = self.i + 2;
        let mut bytes: Vec<u8> = Vec::new();
        let push_char = |bytes: &mut Vec<u8>, c: char| {
            let mut b = [0u8; 4];
            bytes.extend_from_slice(c.encode_utf8(&mut b).as_bytes());
        };
        while j < self.s.len() && self.s[j] != '\'' {
            let c = self.s[j];
            if c != '\\' || j + 1 >= self.s.len() {
                push_char(&mut bytes, c);
                j += 1;
                continue;
            }
            j += 1;
            let e = self.s[j];
            j += 1;
            let simple = match e {
                'n' => Some('\n'),
                't' => Some('\t'),
                'r' => Some('\r'),
                'a' => Some('\x07'),
                'b' => Some('\x08'),
                'e' | 'E' => Some('\x1b'),
                'f' => Some('\x0c'),
                'v' => Some('\x0b'),
                '\\' => Some('\\'),
                '\'' => Some('\''),
                '"' => Some('"'),
                '?' => Some('?'),
                _ => None,
            };
            if let Some(c) = simple {
                push_char(&mut bytes, c);
                continue;
            }
            let take = |j: &mut usize, max: usize, radix: u32| -> Option<u32> {
                let mut v: Option<u32> = None;
                let mut n = 0;
                while n < max && *j < self.s.len() {
                    match self.s[*j].to_digit(radix) {
                        Some(d) => {
                            v = Some(v.unwrap_or(0) * radix + d);
                            *j += 1;
                            n += 1;
                        }
                        None => break,
                    }
                }
                v
            };
            match e {
                'x' => match take(&mut j, 2, 16) {
                    Some(v) => bytes.push(v as u8),
                    None => bytes.extend_from_slice(b"\\x"),
                },
                'u' | 'U' => {
                    let max = if e == 'u' { 4 } else { 8 };
                    match take(&mut j, max, 16).and_then(char::from_u32) {
                        Some(c) => push_char(&mut bytes, c),
                        None => push_char(&mut bytes, e),
                    }
                }
                '0'..='7' => {
                    j -= 1;
                    if let Some(v) = take(&mut j, 3, 8) {
                        bytes.push((v & 0xff) as u8);
                    }
                }
                'c' => {
                    if j < self.s.len() {
                        push_char(&mut bytes, char::from_u32((self.s[j] as u32) & 0x1f).unwrap_or('?'));
                        j += 1;
                    }
                }
                other => {
                    push_char(&mut bytes, '\\');
                    push_char(&mut bytes, other);
                }
            }
        }
        let decoded = String::from_utf8_lossy(&bytes);
        self.spoofed |= decoded.contains(MARKS);
        out.push_str(&decoded);
        self.i = (j + 1).min(self.s.len());
    }

    fn double_quoted(&mut self, out: &mut String, vars: &HashMap<String, String>) {
        // cursor just past the opening quote
        while self.i < self.s.len() {
            let c = self.s[self.i];
            match c {
                '"' => {
                    self.i += 1;
                    return;
                }
                '\\' => {
                    match self.peek(1) {
                        Some(n @ ('$' | '`' | '"' | '\\')) => out.push(n),
                        Some('\n') => {}
                        Some(n) => {
                            out.push('\\');
                            out.push(n);
                        }
                        None => out.push('\\'),
                    }
                    self.i += 2;
                }
                '$' => self.dollar(out, vars),
                '`' => self.backtick(out),
                _ => {
                    out.push(c);
                    self.i += 1;
                }
            }
        }
    }

    fn word(&mut self, vars: &HashMap<String, String>) -> String {
        let mut out = String::new();
        while self.i < self.s.len() {
            let c = self.s[self.i];
            if is_meta(c) {
                break;
            }
            match c {
                '\\' => {
                    match self.peek(1) {
                        Some('\n') => {}
                        Some(n) => out.push(n),
                        None => {}
                    }
                    self.i += 2;
                }
                '\'' => {
                    let mut j = self.i + 1;
                    while j < self.s.len() && self.s[j] != '\'' {
                        out.push(self.s[j]);
                        j += 1;
                    }
                    self.i = (j + 1).min(self.s.len());
                }
                '"' => {
                    self.i += 1;
                    self.double_quoted(&mut out, vars);
                }
                '$' if self.peek(1) == Some('\'') => self.ansi_c(&mut out),
                '$' if self.peek(1) == Some('"') => {
                    self.i += 2;
                    self.double_quoted(&mut out, vars);
                }
                '$' => self.dollar(&mut out, vars),
                '`' => self.backtick(&mut out),
                '{' => {
                    out.push(BR_OPEN);
                    self.i += 1;
                }
                ',' => {
                    out.push(BR_COMMA);
                    self.i += 1;
                }
                '}' => {
                    out.push(BR_CLOSE);
                    self.i += 1;
                }
                _ => {
                    out.push(c);
                    self.i += 1;
                }
            }
        }
        out
    }

    /// Reads the bodies of pending here-documents after a newline.
    fn heredoc_bodies(&mut self) {
        for (delim, strip, id) in std::mem::take(&mut self.pending_heredocs) {
            let mut body = String::new();
            loop {
                if self.i >= self.s.len() {
                    break;
                }
                let mut j = self.i;
                while j < self.s.len() && self.s[j] != '\n' {
                    j += 1;
                }
                let line: String = self.s[self.i..j].iter().collect();
                self.i = (j + 1).min(self.s.len());
                let cmp = if strip { line.trim_start_matches('\t') } else { line.as_str() };
                if cmp == delim {
                    break;
                }
                body.push_str(cmp);
                body.push('\n');
            }
            self.heredoc_bodies.insert(id, body);
        }
    }

    fn next(&mut self, vars: &HashMap<String, String>) -> Option<Tok> {
        loop {
            let c = self.peek(0)?;
            match c {
                ' ' | '\t' | '\r' => self.i += 1,
                '\\' if self.peek(1) == Some('\n') => self.i += 2,
                '#' => {
                    while self.peek(0).is_some_and(|c| c != '\n') {
                        self.i += 1;
                    }
                }
                _ => break,
            }
        }
        let c = self.peek(0)?;
        let two: String = [c, self.peek(1).unwrap_or(' ')].iter().collect();
        let three: String = [c, self.peek(1).unwrap_or(' '), self.peek(2).unwrap_or(' ')].iter().collect();
        let tok = match c {
            '\n' => {
                self.i += 1;
                self.heredoc_bodies();
                Tok::Sep
            }
            ';' => {
                self.i += if two == ";;" || two == ";&" { 2 } else { 1 };
                Tok::Sep
            }
            '&' if three == "&>>" => {
                self.i += 3;
                Tok::Redir { write: true, heredoc: 0, dup: false }
            }
            '&' if two == "&>" => {
                self.i += 2;
                Tok::Redir { write: true, heredoc: 0, dup: false }
            }
            '&' => {
                self.i += if two == "&&" { 2 } else { 1 };
                Tok::Sep
            }
            '|' => {
                if two == "||" {
                    self.i += 2;
                    Tok::Sep
                } else {
                    self.i += if two == "|&" { 2 } else { 1 };
                    Tok::Pipe
                }
            }
            '(' => {
                self.i += 1;
                Tok::Open
            }
            ')' => {
                self.i += 1;
                Tok::Close
            }
            '<' | '>' if self.peek(1) == Some('(') => {
                // process substitution: a command whose output or input is a file name
                let start = self.i + 2;
                let end = self.matching_paren(start);
                let body: String = self.s[start..end.saturating_sub(1).max(start)].iter().collect();
                self.subs.push(body);
                self.i = end;
                Tok::Word("/dev/fd/63".into())
            }
            '<' => {
                if three == "<<<" {
                    self.i += 3;
                    Tok::Redir { write: false, heredoc: 3, dup: false }
                } else if three == "<<-" {
                    self.i += 3;
                    Tok::Redir { write: false, heredoc: 2, dup: false }
                } else if two == "<<" {
                    self.i += 2;
                    Tok::Redir { write: false, heredoc: 1, dup: false }
                } else if two == "<>" {
                    self.i += 2;
                    Tok::Redir { write: true, heredoc: 0, dup: false }
                } else if two == "<&" {
                    self.i += 2;
                    Tok::Redir { write: false, heredoc: 0, dup: true }
                } else {
                    self.i += 1;
                    Tok::Redir { write: false, heredoc: 0, dup: false }
                }
            }
            '>' => {
                if two == ">>" || two == ">|" {
                    self.i += 2;
                    Tok::Redir { write: true, heredoc: 0, dup: false }
                } else if two == ">&" {
                    self.i += 2;
                    // `>&file` writes a file, `>&2` duplicates
                    let digits = self.peek(0).is_some_and(|c| c.is_ascii_digit() || c == '-');
                    Tok::Redir { write: true, heredoc: 0, dup: digits }
                } else {
                    self.i += 1;
                    Tok::Redir { write: true, heredoc: 0, dup: false }
                }
            }
            _ => {
                let start = self.i;
                let w = self.word(vars);
                // `2>file`, `1>>file`: an all-digit word glued to a redirection
                if !w.is_empty()
                    && w.chars().all(|c| c.is_ascii_digit())
                    && self.i - start == w.len()
                    && matches!(self.peek(0), Some('<' | '>'))
                {
                    return self.next(vars);
                }
                Tok::Word(w)
            }
        };
        Some(tok)
    }
}

/// Brace expansion of one word (unquoted `{a,b}` only), at most
/// [`MAX_BRACE_WORDS`] words (depth first: the work stops once they are
/// made); `true` when words were left unmade (the expansion was cut short).
fn brace_expand(word: &str) -> (Vec<String>, bool) {
    let mut out = Vec::new();
    let mut cut = false;
    brace_into(word, &mut out, &mut cut);
    (out, cut)
}

fn brace_into(word: &str, out: &mut Vec<String>, cut: &mut bool) {
    if out.len() >= MAX_BRACE_WORDS {
        *cut = true;
        return;
    }
    let chars: Vec<char> = word.chars().collect();
    // the first top-level `{ ... }` that holds a top-level comma
    let mut i = 0;
    while i < chars.len() {
        if chars[i] == BR_OPEN {
            let mut depth = 0usize;
            let mut commas = Vec::new();
            let mut close = None;
            for (j, &c) in chars.iter().enumerate().skip(i) {
                if c == BR_OPEN {
                    depth += 1;
                } else if c == BR_CLOSE {
                    depth -= 1;
                    if depth == 0 {
                        close = Some(j);
                        break;
                    }
                } else if c == BR_COMMA && depth == 1 {
                    commas.push(j);
                }
            }
            if let (Some(close), false) = (close, commas.is_empty()) {
                let prefix: String = chars[..i].iter().collect();
                let suffix: String = chars[close + 1..].iter().collect();
                let mut bounds = vec![i];
                bounds.extend(&commas);
                bounds.push(close);
                for w in bounds.windows(2) {
                    if out.len() >= MAX_BRACE_WORDS {
                        *cut = true;
                        return;
                    }
                    let alt: String = chars[w[0] + 1..w[1]].iter().collect();
                    brace_into(&format!("{prefix}{alt}{suffix}"), out, cut);
                }
                return;
            }
        }
        i += 1;
    }
    out.push(
        chars
            .iter()
            .map(|c| match *c {
                BR_OPEN => '{',
                BR_COMMA => ',',
                BR_CLOSE => '}',
                c => c,
            })
            .collect(),
    );
}

/// A word that is not a command word (an assignment's value, a
/// redirection target), its brace alternatives joined by spaces; a cut-short
/// expansion marks `out` exceeded.
fn plain(word: &str, out: &mut Parsed) -> String {
    let (words, cut) = brace_expand(word);
    out.exceeded |= cut;
    words.join(" ")
}

/// Parse one command line. `vars` are variables the line may expand
/// (`HOME`, ...); plain assignments in the line are added as they are met.
/// A tool call's line is parsed once, by [`ShellLine::parse`].
pub fn parse(line: &str, vars: &HashMap<String, String>) -> Parsed {
    count_parse();
    let mut out = Parsed::default();
    let mut pipeline = 0usize;
    parse_into(line, vars.clone(), 0, &mut out, &mut pipeline);
    out.resolve_from(0, vars);
    out
}

/// Parse `line` at nesting `depth` into `out` (used for `bash -c` and the
/// like by the classifier: a line inside a line, not a tool call's line).
pub fn parse_nested(line: &str, vars: &HashMap<String, String>, depth: usize, out: &mut Parsed) {
    let mut pipeline = out.commands.iter().map(|c| c.pipeline + 1).max().unwrap_or(0) + 1;
    let from = out.commands.len();
    parse_into(line, vars.clone(), depth, out, &mut pipeline);
    out.resolve_from(from, vars);
}

fn parse_into(line: &str, mut vars: HashMap<String, String>, depth: usize, out: &mut Parsed, pipeline: &mut usize) {
    if depth > MAX_DEPTH {
        out.exceeded = true;
        return;
    }
    let text = if line.len() > MAX_LINE_BYTES {
        out.exceeded = true;
        let mut cut = MAX_LINE_BYTES;
        while !line.is_char_boundary(cut) {
            cut -= 1;
        }
        &line[..cut]
    } else {
        line
    };
    // Marks written in the line would be read as the model's own.
    out.exceeded |= text.contains(MARKS);
    let mut lx = Lexer {
        s: text.chars().collect(),
        i: 0,
        depth,
        subs: Vec::new(),
        pending_heredocs: Vec::new(),
        heredoc_bodies: HashMap::new(),
        next_heredoc: 0,
        refs: false,
        spoofed: false,
        _p: std::marker::PhantomData,
    };
    let mut cur = Simple { pipeline: *pipeline, ..Simple::default() };
    let mut skip_header = false; // inside `for NAME in ...` / `case WORD in`
    let start = out.commands.len();
    let finish = |cur: &mut Simple, out: &mut Parsed, vars: &mut HashMap<String, String>, pipeline: usize| {
        if cur.argv.is_empty() {
            for (k, v) in &cur.assigns {
                vars.insert(k.clone(), v.clone());
            }
        }
        if !cur.argv.is_empty() || !cur.redirects.is_empty() || !cur.stdin.is_empty() {
            if out.commands.len() >= MAX_COMMANDS {
                out.exceeded = true;
            } else {
                out.commands.push(std::mem::take(cur));
            }
        }
        *cur = Simple { pipeline, ..Simple::default() };
    };
    while let Some(tok) = lx.next(&vars) {
        match tok {
            Tok::Sep | Tok::Open | Tok::Close => {
                skip_header = false;
                *pipeline += 1;
                finish(&mut cur, out, &mut vars, *pipeline);
            }
            Tok::Pipe => finish(&mut cur, out, &mut vars, *pipeline),
            Tok::Redir { write, heredoc, dup } => {
                let Some(Tok::Word(target)) = lx.next(&vars) else { continue };
                let target = plain(&target, out);
                match heredoc {
                    1 | 2 => {
                        let id = lx.next_heredoc;
                        lx.next_heredoc += 1;
                        lx.pending_heredocs.push((target, heredoc == 2, id));
                        // the body is read at the next newline; mark its slot
                        cur.stdin.push(format!("{HEREDOC_SLOT}{id}"));
                    }
                    3 => cur.stdin.push(target),
                    _ if dup && (target.chars().all(|c| c.is_ascii_digit()) || target == "-") => {}
                    _ => cur.redirects.push(Redirect { write, target }),
                }
            }
            Tok::Word(w) => {
                if skip_header {
                    continue;
                }
                if cur.argv.is_empty() {
                    match w.as_str() {
                        "!" | "then" | "do" | "else" | "elif" | "if" | "while" | "until" | "fi" | "done" | "esac" | "time" => continue,
                        s if s == "\u{E000}" || s == "\u{E002}" => continue,
                        "for" | "select" | "case" => {
                            skip_header = true;
                            continue;
                        }
                        _ => {}
                    }
                    if let Some((name, value)) = w.split_once('=') {
                        if is_name(name) {
                            let value = plain(value, out);
                            cur.assigns.push((name.to_owned(), value));
                            continue;
                        }
                    }
                }
                if cur.argv.len() >= MAX_WORDS || out.words >= MAX_TOTAL_WORDS {
                    out.exceeded = true;
                    continue;
                }
                let before = cur.argv.len();
                let (words, cut) = brace_expand(&w);
                out.exceeded |= cut;
                cur.argv.extend(words);
                if cur.argv.len() > MAX_WORDS {
                    out.exceeded = true;
                    cur.argv.truncate(MAX_WORDS);
                }
                out.words += cur.argv.len() - before;
            }
        }
    }
    finish(&mut cur, out, &mut vars, *pipeline);
    *pipeline += 1;
    out.refs |= lx.refs;
    out.exceeded |= lx.spoofed;
    // attach here-document bodies
    let bodies = std::mem::take(&mut lx.heredoc_bodies);
    for cmd in out.commands[start..].iter_mut() {
        for s in cmd.stdin.iter_mut() {
            if let Some(id) = s.strip_prefix(HEREDOC_SLOT).and_then(|n| n.parse::<usize>().ok()) {
                *s = bodies.get(&id).cloned().unwrap_or_default();
            }
        }
    }
    // command substitutions run too
    for body in std::mem::take(&mut lx.subs) {
        parse_into(&body, vars.clone(), lx.depth + 1, out, pipeline);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argvs(line: &str) -> Vec<Vec<String>> {
        parse(line, &HashMap::new()).commands.into_iter().map(|c| c.argv).collect()
    }

    #[test]
    fn compound_lists_pipelines_and_subshells() {
        assert_eq!(argvs("a 1 && b 2 || (c; d) | e & f"), vec![vec!["a", "1"], vec!["b", "2"], vec!["c"], vec!["d"], vec!["e"], vec!["f"]]);
        let p = parse("echo x | psql -d y", &HashMap::new());
        assert_eq!(p.commands[0].pipeline, p.commands[1].pipeline);
        assert_eq!(argvs("if true; then rm -r x; fi"), vec![vec!["true"], vec!["rm", "-r", "x"]]);
        assert_eq!(argvs("for f in a b; do rm -f $f; done"), vec![vec!["rm", "-f", "$f"]]);
        assert_eq!(argvs("{ rm -rf x; }"), vec![vec!["rm", "-rf", "x"]]);
    }

    #[test]
    fn quotes_backslashes_and_ansi_c() {
        assert_eq!(argvs(r#"'r'"m" -\rf "a b""#), vec![vec!["rm", "-rf", "a b"]]);
        assert_eq!(argvs(r"$'\x72\x6d' $'-\162f' $'\u0078'"), vec![vec!["rm", "-rf", "x"]]);
        assert_eq!(argvs(r#"echo "a\"b" 'c\d'"#), vec![vec!["echo", "a\"b", "c\\d"]]);
    }

    #[test]
    fn braces_expand_only_unquoted() {
        assert_eq!(argvs("{rm,-rf,/tmp/x}"), vec![vec!["rm", "-rf", "/tmp/x"]]);
        assert_eq!(argvs("rm -{r,f} a{1,2}b"), vec![vec!["rm", "-r", "-f", "a1b", "a2b"]]);
        assert_eq!(argvs("echo '{a,b}' {x}"), vec![vec!["echo", "{a,b}", "{x}"]]);
    }

    #[test]
    fn substitutions_redirections_heredocs_and_assignments() {
        let p = parse("echo $(rm -rf a) `git push -f` > /tmp/o 2>&1", &HashMap::new());
        let names: Vec<&str> = p.commands.iter().map(|c| c.argv[0].as_str()).collect();
        assert_eq!(names, vec!["echo", "rm", "git"]);
        assert_eq!(p.commands[0].redirects, vec![Redirect { write: true, target: "/tmp/o".into() }]);
        let p = parse("psql db <<'EOF'\nDROP TABLE t;\nEOF\nls", &HashMap::new());
        assert_eq!(p.commands[0].stdin, vec!["DROP TABLE t;\n".to_owned()]);
        assert_eq!(p.commands[1].argv, vec!["ls"]);
        assert_eq!(argvs("X=rm; Y=-rf; $X $Y ${X}"), vec![vec!["rm", "-rf", "rm"]]);
        let mut vars = HashMap::new();
        vars.insert("HOME".to_owned(), "/home/u".to_owned());
        assert_eq!(parse("cat $HOME/a", &vars).commands[0].argv, vec!["cat", "/home/u/a"]);
    }

    #[test]
    fn brace_expansion_is_bounded_and_fast() {
        let p = parse(&"{a,b}".repeat(60), &HashMap::new());
        assert_eq!(p.commands[0].argv.len(), MAX_BRACE_WORDS);
        assert_eq!(p.commands[0].argv[0], "a".repeat(60));
        assert!(p.exceeded, "a cut-short brace expansion leaves words unread");
        // exactly the bound is read whole
        let p = parse(&"{a,b}".repeat(8), &HashMap::new());
        assert_eq!(p.commands[0].argv.len(), MAX_BRACE_WORDS);
        assert!(!p.exceeded);
        let p = parse(&"{a,b} ".repeat(100), &HashMap::new());
        assert_eq!(p.commands[0].argv.len(), 200);
        assert!(!p.exceeded);
        // in an assignment's value and a redirection target too
        assert!(parse(&format!("X={}", "{a,b}".repeat(9)), &HashMap::new()).exceeded);
        assert!(parse(&format!("echo > {}", "{a,b}".repeat(9)), &HashMap::new()).exceeded);
        let p = parse(&"{1,2,3,4,5,6,7,8,9,0}{1,2,3,4,5,6,7,8,9,0}{a,b} ".repeat(40), &HashMap::new());
        assert_eq!(p.commands[0].argv.len(), MAX_WORDS);
        assert!(p.exceeded);
    }

    /// The one parse of a tool call's line gives each reader what parsing
    /// with its own variables would: the guard none, the policy `HOME`/`PWD`.
    #[test]
    fn one_parse_gives_each_reader_its_view() {
        let mut vars = HashMap::new();
        vars.insert("HOME".to_owned(), "/home/u".to_owned());
        vars.insert("PWD".to_owned(), "/p".to_owned());
        vars.insert("LONG".to_owned(), "x".repeat(MAX_VAR_BYTES + 1));
        let lines = [
            "cat $HOME/a ${HOME}/b ${HOME:-x} '$HOME' \"$PWD\" $LONG ${LONG}",
            "X=$HOME; cp $X/a $Y > ${PWD}/o <<< $HOME",
            "HOME=/x; rm -rf $HOME; echo $(ls $PWD) `cd $HOME`",
            "for f in a b; do rm -f $f; done {$HOME,x}/y",
            "plain words only",
        ];
        for line in lines {
            let l = ShellLine::from(line);
            assert_eq!(*l.as_written(), parse(line, &HashMap::new()), "{line}");
            assert_eq!(*l.with_vars(&vars), parse(line, &vars), "{line}");
            assert_eq!(l.text(), line);
        }
        assert_eq!(ShellLine::from("cat $HOME/a").with_vars(&vars).commands[0].argv, vec!["cat", "/home/u/a"]);
        assert_eq!(ShellLine::from("cat $HOME/a").as_written().commands[0].argv, vec!["cat", "$HOME/a"]);
        // the reference marks written in a line, as text or ANSI-C, are not references
        for line in ["cat \u{E004}HOME\u{E006}", "cat $'\\uE004'HOME$'\\uE006'", "cat \u{E005}"] {
            assert!(ShellLine::from(line).as_written().exceeded, "{line}");
            assert!(parse(line, &vars).exceeded, "{line}");
        }
        // so are the brace marks and the here-document slot (the attack of
        // fixtures/policy/adversarial/unparsed.jsonl: a program named U+E000)
        for line in [
            "PATH=.:$PATH $'\\uE000' -rf ../x",
            "PATH=.:$PATH \u{E000} -rf ../x",
            "./$'\\uE000'x$'\\uE001'y$'\\uE002' -rf ../x",
            "sh <<< \u{E003}0",
            "sh <<< $'\\xee\\x80\\x83'0",
        ] {
            assert!(ShellLine::from(line).as_written().exceeded, "{line}");
            assert!(parse(line, &vars).exceeded, "{line}");
        }
        assert!(!ShellLine::from("cat $'\\u0041'").as_written().exceeded);
    }

    #[test]
    fn nesting_is_bounded() {
        let mut line = "rm -rf x".to_owned();
        for _ in 0..(MAX_DEPTH + 2) {
            line = format!("echo $({line})");
        }
        assert!(parse(&line, &HashMap::new()).exceeded);
    }
}
