//! What the shell model cannot resolve, and the halting modes' allow-list
//! (docs/policy.md, "Opaque calls" and "The halting modes' allow-list").
//!
//! Pure helpers over words and text: the classifier ([`crate::classify`])
//! calls them and records the hits.

use crate::shell::Simple;

/// Variables that make a shell or a later program run something the line
/// does not show (`BASH_ENV`, `PROMPT_COMMAND`, a prompt, a pager, an
/// editor, preloaded libraries, interpreter and tar start-up options), or
/// that move what the rest of the line names (`HOME` for `~`, `PWD` for
/// `~+`, `OLDPWD` for `cd -`).
pub const COMMAND_VARS: &[&str] = &[
    "IFS",
    "PROMPT_COMMAND",
    "BASH_ENV",
    "ENV",
    "PS0",
    "PS1",
    "PS2",
    "PS3",
    "PS4",
    "PAGER",
    "MANPAGER",
    "GIT_PAGER",
    "SYSTEMD_PAGER",
    "GIT_EXTERNAL_DIFF",
    "GIT_SSH",
    "GIT_SSH_COMMAND",
    "GIT_EDITOR",
    "GIT_SEQUENCE_EDITOR",
    "GIT_ASKPASS",
    "SSH_ASKPASS",
    "GIT_CONFIG_COUNT",
    "GIT_CONFIG_PARAMETERS",
    "GIT_EXEC_PATH",
    "EDITOR",
    "VISUAL",
    "LESSOPEN",
    "LESSCLOSE",
    "LD_PRELOAD",
    "LD_AUDIT",
    "PYTHONSTARTUP",
    "PYTHONINSPECT",
    "PERL5OPT",
    "RUBYOPT",
    "NODE_OPTIONS",
    "BASH_FUNC",
    "CDPATH",
    "RUSTC_WRAPPER",
    "RUSTC_WORKSPACE_WRAPPER",
    "RUSTC",
    "RUSTDOC",
    "CARGO_BUILD_RUSTC_WRAPPER",
    "CARGO_BUILD_RUSTC",
    "GIT_PROXY_COMMAND",
    "LD_LIBRARY_PATH",
    "TAR_OPTIONS",
    "HOME",
    "PWD",
    "OLDPWD",
];

/// Values of [`COMMAND_VARS`] that run nothing new (`GIT_PAGER=cat git log`).
const HARMLESS_VALUES: &[&str] = &["", "cat", "less", "more", "true", "false", ":", "less -R", "less -FRX", "less -FRSX"];

/// Builtins that set the variables their words name (`export NAME=..`).
const ASSIGNMENT_BUILTINS: &[&str] = &["export", "declare", "typeset", "local", "readonly"];

/// node's, bun's and deno's options that load code before the script.
pub const NODE_PRELOAD_OPTIONS: &[&str] = &["-r", "--require", "--import", "--loader", "--experimental-loader", "--preload"];

/// The variable an assignment's left side sets: `NAME+=..` appends,
/// `NAME[0]=..` sets the first element, both set NAME.
fn assigned_name(left: &str) -> &str {
    left.split('[').next().unwrap_or(left).trim_end_matches('+')
}

/// A [`COMMAND_VARS`] name (or one of their prefixes), whatever value it
/// is given: set by `read NAME`, `printf -v NAME`, `for NAME in`, ...
pub fn command_var_name(left: &str) -> bool {
    let name = assigned_name(left);
    COMMAND_VARS.contains(&name)
        || name.starts_with("BASH_FUNC_")
        || name.starts_with("GIT_CONFIG_")
        || name.starts_with("CARGO_TARGET_") && (name.ends_with("_RUNNER") || name.ends_with("_LINKER"))
}

/// A variable assignment that makes something run the line does not show;
/// `IFS=` only in front of `read` (`while IFS= read -r l`) is plain.
pub fn command_var(name: &str, value: &str, before: Option<&str>) -> bool {
    if !command_var_name(name) {
        return false;
    }
    if assigned_name(name) == "IFS" {
        return before != Some("read");
    }
    !HARMLESS_VALUES.contains(&value.trim())
}

/// Opaque forms read from the raw line (the shell model folds them away):
/// a function definition (`f() {`, `function f`), `coproc`, a standalone
/// assignment to a [`COMMAND_VARS`] name, `$IFS`. The rule id that fires.
pub fn scan_text(line: &str) -> Option<(&'static str, &'static str)> {
    use crate::classify::rules as r;
    // here-document bodies are data (a file's text); a shell that reads one
    // has it classified as a nested line
    let stripped = strip_heredocs(line);
    let line = stripped.as_str();
    let b = line.as_bytes();
    let ident = |c: u8| c == b'_' || c.is_ascii_alphanumeric();
    let word_at = |i: usize, w: &str| {
        b[i..].starts_with(w.as_bytes())
            && (i == 0 || !ident(b[i - 1]) && b[i - 1] != b'-' && b[i - 1] != b'.' && b[i - 1] != b'/')
            && b.get(i + w.len()).is_none_or(|c| !ident(*c) && *c != b'-' && *c != b'.')
    };
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c == b'$' && (b[i + 1..].starts_with(b"IFS") || b[i + 1..].starts_with(b"{IFS")) {
            return Some((r::OPAQUE_PROGRAM, "$IFS in a word"));
        }
        if word_at(i, "coproc") && command_position(b, i) {
            return Some((r::OPAQUE_DEFINITION, "coproc"));
        }
        if word_at(i, "function") && command_position(b, i) {
            return Some((r::OPAQUE_DEFINITION, "a function defined in the line"));
        }
        if c == b'(' && i > 0 {
            // NAME ( ) { or NAME ( ) (
            let mut k = i;
            while k > 0 && b[k - 1] == b' ' {
                k -= 1;
            }
            let name_end = k;
            while k > 0 && (ident(b[k - 1]) || b[k - 1] == b'-' || b[k - 1] == b':') {
                k -= 1;
            }
            let mut j = i + 1;
            while j < b.len() && b[j] == b' ' {
                j += 1;
            }
            if name_end > k && j < b.len() && b[j] == b')' && command_position(b, k) {
                let mut m = j + 1;
                while m < b.len() && matches!(b[m], b' ' | b'\n' | b'\t') {
                    m += 1;
                }
                if m < b.len() && matches!(b[m], b'{' | b'(') {
                    return Some((r::OPAQUE_DEFINITION, "a function defined in the line"));
                }
            }
        }
        if c.is_ascii_uppercase() && (i == 0 || !ident(b[i - 1])) && command_position(b, i) {
            let mut k = i;
            while k < b.len() && ident(b[k]) {
                k += 1;
            }
            if b.get(k) == Some(&b'=') {
                let name = &line[i..k];
                // the value, then the word after it
                let mut v = k + 1;
                let quote = b.get(v).copied().filter(|q| *q == b'\'' || *q == b'"');
                if let Some(q) = quote {
                    v += 1;
                    while v < b.len() && b[v] != q {
                        v += 1;
                    }
                    v += 1;
                } else {
                    while v < b.len() && !matches!(b[v], b' ' | b';' | b'\n' | b'&' | b'|') {
                        v += 1;
                    }
                }
                let value = line.get(k + 1..v.min(b.len())).unwrap_or("").trim_matches(|c| c == '\'' || c == '"');
                let rest = line.get(v.min(b.len())..).unwrap_or("").trim_start();
                let next = rest.split([' ', ';', '\n']).next().filter(|_| !rest.starts_with([';', '\n', '&', '|']));
                if command_var(name, value, next) {
                    return Some((r::OPAQUE_SHELL_ENV, "an assignment that makes a shell or program run more"));
                }
            }
        }
        i += 1;
    }
    if raw_assignment(line) {
        return Some((r::OPAQUE_SHELL_ENV, "an assignment that makes a shell or program run more"));
    }
    None
}

/// An assignment to a [`COMMAND_VARS`] name only the raw text shows: a
/// default that assigns (`${NAME:=..}`, `${NAME=..}`), a loop variable
/// (`for NAME in ..`, `select NAME in ..`), an append (`NAME+=..`).
fn raw_assignment(line: &str) -> bool {
    let b = line.as_bytes();
    let ident = |c: u8| c == b'_' || c.is_ascii_alphanumeric();
    let mut i = 0;
    while i < b.len() {
        if !ident(b[i]) {
            i += 1;
            continue;
        }
        let mut k = i;
        while k < b.len() && ident(b[k]) {
            k += 1;
        }
        let (before, after) = (&line[..i], &line[k..]);
        let loop_var = matches!(before.trim_end().rsplit([' ', '\t', ';', '\n', '(', '&', '|']).next(), Some("for" | "select"));
        let default = before.ends_with("${") && (after.starts_with(":=") || after.starts_with('=') || after.starts_with("::="));
        if (default || loop_var || after.starts_with("+=")) && command_var_name(&line[i..k]) {
            return true;
        }
        i = k;
    }
    false
}

/// The line without its here-document bodies (`<<EOF`, `<<-'EOF'`, `<< "EOF"`).
fn strip_heredocs(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut pending: Vec<(String, bool)> = Vec::new();
    let mut lines = line.split('\n').peekable();
    while let Some(l) = lines.next() {
        out.push_str(l);
        out.push('\n');
        // delimiters opened on this line
        let mut rest = l;
        while let Some(k) = rest.find("<<") {
            let after = &rest[k + 2..];
            if let Some(more) = after.strip_prefix('<') {
                rest = more;
                continue;
            }
            let strip = after.starts_with('-');
            let word = after.trim_start_matches('-').trim_start();
            let delim: String = word
                .chars()
                .take_while(|c| !c.is_whitespace() && !matches!(c, ';' | '&' | '|' | '<' | '>' | ')'))
                .filter(|c| !matches!(c, '\'' | '"' | '\\'))
                .collect();
            if !delim.is_empty() {
                pending.push((delim, strip));
            }
            rest = after;
        }
        for (delim, strip) in std::mem::take(&mut pending) {
            for body in lines.by_ref() {
                let cmp = if strip { body.trim_start_matches('\t') } else { body };
                if cmp == delim {
                    out.push_str(body);
                    out.push('\n');
                    break;
                }
            }
        }
    }
    out
}

/// Whether byte `i` starts a word in command position (line start, after
/// `;`, `&`, `|`, `(`, `{`, a newline, `export`/`declare`/... , or after
/// another assignment).
fn command_position(b: &[u8], i: usize) -> bool {
    let mut k = i;
    while k > 0 && matches!(b[k - 1], b' ' | b'\t') {
        k -= 1;
    }
    if k == 0 || matches!(b[k - 1], b';' | b'&' | b'|' | b'(' | b'{' | b'\n' | b'`') {
        return true;
    }
    // the word before: a builtin that takes assignments, or an assignment
    let end = k;
    while k > 0 && !matches!(b[k - 1], b' ' | b'\t' | b';' | b'&' | b'|' | b'(' | b'\n') {
        k -= 1;
    }
    let prev = std::str::from_utf8(&b[k..end]).unwrap_or("");
    matches!(prev, "then" | "do" | "else" | "!" | "time") || prev.contains('=') || {
        // an earlier word of this simple command is a builtin that
        // takes assignments (`export a NAME=..`, `declare -x NAME=..`,
        // `env -i NAME=..`, `$(export NAME=..)`); `(`, `{` and a backquote
        // do not end the search (`export ${x} NAME=..`); reading too much
        // (`echo export NAME=..`) costs a consent, reading too little a
        // missed assignment
        let start = b[..end].iter().rposition(|c| matches!(c, b';' | b'&' | b'|' | b'\n')).map_or(0, |p| p + 1);
        std::str::from_utf8(&b[start..end])
            .unwrap_or("")
            .split([' ', '\t'])
            .map(|w| w.trim_start_matches(['$', '(', '{', '`', '!']))
            .any(|w| w == "env" || ASSIGNMENT_BUILTINS.contains(&w))
    }
}

/// A program word the shell model could not resolve to a name: a variable
/// left unexpanded, a glob, `$IFS` tricks.
pub fn unresolved_program(word: &str) -> bool {
    if matches!(word, "[" | "[[") {
        return false;
    }
    word.contains('$') || word.contains(['*', '?']) || (word.contains('[') && word.contains(']'))
}

/// Identifiers interpreter inline code may use and still be harmless
/// (version and environment probes, JSON and text printing).
const HARMLESS_IDENTS: &[&str] = &[
    "print",
    "println",
    "import",
    "from",
    "as",
    "sys",
    "json",
    "math",
    "re",
    "platform",
    "datetime",
    "date",
    "time",
    "version",
    "version_info",
    "hexversion",
    "executable",
    "path",
    "argv",
    "stdin",
    "read",
    "readlines",
    "load",
    "loads",
    "dumps",
    "indent",
    "sort_keys",
    "len",
    "str",
    "int",
    "float",
    "bool",
    "list",
    "dict",
    "set",
    "tuple",
    "sorted",
    "range",
    "enumerate",
    "zip",
    "sum",
    "min",
    "max",
    "abs",
    "round",
    "repr",
    "hex",
    "for",
    "in",
    "if",
    "else",
    "elif",
    "not",
    "and",
    "or",
    "is",
    "None",
    "True",
    "False",
    "true",
    "false",
    "null",
    "nil",
    "lambda",
    "join",
    "split",
    "strip",
    "rstrip",
    "lstrip",
    "keys",
    "values",
    "items",
    "get",
    "format",
    "upper",
    "lower",
    "replace",
    "startswith",
    "endswith",
    "count",
    "match",
    "search",
    "findall",
    "group",
    "console",
    "log",
    "process",
    "versions",
    "arch",
    "JSON",
    "parse",
    "stringify",
    "Math",
    "Object",
    "length",
    "puts",
    "p",
    "RUBY_VERSION",
    "say",
    "exit",
    "quit",
    "maxsize",
    "byteorder",
    "implementation",
    "name",
    "python_version",
    "machine",
    "node",
    "release",
    "now",
    "today",
    "isoformat",
    "utcnow",
    "env",
    "x",
    "i",
    "k",
    "v",
    "d",
    "s",
    "line",
    "data",
    "obj",
    "e",
    "end",
    "do",
    "then",
    "const",
    "let",
    "var",
    "return",
    "new",
    "Date",
    "toISOString",
    "getTime",
    "PHP_VERSION",
    "phpversion",
    "echo",
];

/// Inline code an interpreter runs (`python -c`, `perl -e`, `node -e`,
/// `ruby -e`, here-documents) that only uses [`HARMLESS_IDENTS`]: no
/// imports of other modules, no file, process or network calls, no
/// backticks, no string interpolation that runs code.
pub fn harmless_code(code: &str) -> bool {
    if code.len() > 4096 || code.contains('`') {
        return false;
    }
    if substitutions_only(code) {
        return true;
    }
    let c: Vec<char> = code.chars().collect();
    let mut i = 0;
    let mut prev_ident = String::new();
    while i < c.len() {
        let ch = c[i];
        if ch == '\'' || ch == '"' {
            // an f-string (python), or interpolation (ruby, perl, js) runs code
            if matches!(prev_ident.as_str(), "f" | "F" | "rf" | "fr" | "Rf" | "fR" | "b" | "br") && prev_ident != "b" {
                return false;
            }
            let mut j = i + 1;
            let mut body = String::new();
            while j < c.len() && c[j] != ch {
                if c[j] == '\\' {
                    j += 1;
                }
                if let Some(x) = c.get(j) {
                    body.push(*x);
                }
                j += 1;
            }
            if ch == '"' && (body.contains("#{") || body.contains("${") || body.contains("@{") || body.contains("@[")) {
                return false;
            }
            i = j + 1;
            prev_ident.clear();
            continue;
        }
        if ch == '_' || ch.is_alphabetic() {
            let mut j = i;
            let mut w = String::new();
            while j < c.len() && (c[j] == '_' || c[j].is_alphanumeric()) {
                w.push(c[j]);
                j += 1;
            }
            if !HARMLESS_IDENTS.contains(&w.as_str()) {
                return false;
            }
            prev_ident = w;
            i = j;
            continue;
        }
        prev_ident.clear();
        i += 1;
    }
    true
}

/// Perl one-liners that only substitute text (`s/a/b/g`, `y/a-z/A-Z/`,
/// `tr/a/b/`), without the `e` (evaluate) or `r` flags.
fn substitutions_only(code: &str) -> bool {
    let c: Vec<char> = code.trim().chars().collect();
    let mut i = 0;
    let mut any = false;
    while i < c.len() {
        while i < c.len() && matches!(c[i], ' ' | ';' | '\n') {
            i += 1;
        }
        if i >= c.len() {
            break;
        }
        let parts = if c[i] == 's' || c[i] == 'y' {
            i += 1;
            2
        } else if c[i] == 't' && c.get(i + 1) == Some(&'r') {
            i += 2;
            2
        } else {
            return false;
        };
        let Some(&d) = c.get(i) else { return false };
        if d.is_alphanumeric() || d.is_whitespace() || matches!(d, '{' | '(' | '[' | '<') {
            return false;
        }
        i += 1;
        for _ in 0..parts {
            while i < c.len() && c[i] != d {
                if c[i] == '\\' {
                    i += 1;
                }
                // a variable or code in the replacement: `@{[ ]}`, `${\ }`
                if matches!(c.get(i), Some('@' | '$')) && matches!(c.get(i + 1), Some('{' | '(')) {
                    return false;
                }
                i += 1;
            }
            if i >= c.len() {
                return false;
            }
            i += 1;
        }
        while i < c.len() && c[i].is_ascii_alphabetic() {
            if !matches!(c[i], 'g' | 'i' | 'm' | 's' | 'x' | 'u' | 'c' | 'd') {
                return false;
            }
            i += 1;
        }
        any = true;
    }
    any
}

/// The quoted words of inline code that look like file names (`"diag2.py"`,
/// `'out/x.sh'`): inline code that may write writes every file it names
/// (the session taint, docs/policy.md). At most 32.
pub fn file_names(code: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = code;
    while let Some(k) = rest.find(['"', '\'']) {
        let q = rest[k..].chars().next().unwrap_or('"');
        let after = &rest[k + 1..];
        let Some(end) = after.find(q) else { break };
        let word = &after[..end];
        let ext = word
            .rsplit_once('.')
            .map(|(stem, e)| !stem.is_empty() && (1..=8).contains(&e.len()) && e.bytes().all(|b| b.is_ascii_alphanumeric()));
        if ext == Some(true)
            && word.len() <= 255
            && word.bytes().all(|b| b.is_ascii_alphanumeric() || b"._/-~".contains(&b))
            && !word.contains("..")
            && !out.iter().any(|w| w == word)
        {
            out.push(word.to_owned());
            if out.len() == 32 {
                break;
            }
        }
        rest = &after[end + 1..];
    }
    out
}

/// The option letters that give an interpreter its code inline, per program.
pub fn inline_code(prog: &str, args: &[String]) -> Option<Option<String>> {
    // (code letters, long code options, letters whose value is the rest of the word or the next)
    let (short, long, value): (&[char], &[&str], &[char]) = match prog {
        "python" | "python2" | "python3" | "py" | "pypy" | "pypy3" => (&['c'], &["--command"], &['W', 'X', 'm', 'Q']),
        "perl" => (&['e', 'E'], &["--eval"], &['M', 'm', 'I', 'x', 'C', 'd', 'D']),
        "ruby" => (&['e'], &["--eval"], &['r', 'I', 'E', 'C', 'F', 'x']),
        "lua" | "luajit" | "Rscript" => (&['e', 'E'], &["--eval"], &['l']),
        "node" | "nodejs" | "bun" => (&['e', 'p'], &["--eval", "--print"], &['r', 'C']),
        "deno" => (&[], &["eval"], &[]),
        "php" => (&['r'], &["--run"], &['d', 'c']),
        "osascript" => (&['e'], &[], &['l']),
        "expect" => (&['c'], &[], &['f', 'b']),
        // a script only from a file or standard input
        "tclsh" | "wish" | "jshell" => (&[], &[], &[]),
        _ => return None,
    };
    let mut code: Option<String> = None;
    let mut i = 0;
    while i < args.len() {
        let a = args[i].as_str();
        if long.contains(&a) {
            code = more_code(code, args.get(i + 1).map_or("", String::as_str));
            i += 2;
            continue;
        }
        if let Some(v) = long.iter().find_map(|l| a.strip_prefix(&format!("{l}="))) {
            code = more_code(code, v);
        } else if a.starts_with('-') && !a.starts_with("--") && a.len() > 1 {
            // a letter that takes a value ends the cluster: in `-MData::Dumper` the `e` is part of a module name, not `-e`
            let value_at = a[1..].find(|ch: char| value.contains(&ch));
            let code_at = a[1..].find(|ch| short.contains(&ch)).filter(|k| value_at.is_none_or(|v| *k < v));
            if code_at.is_none() && value_at.is_some_and(|v| v + 2 == a.len()) {
                // the value is the next word (`-M Module`, `-r lib`)
                i += 2;
                continue;
            }
            if let Some(k) = code_at {
                let rest = &a[2 + k..];
                // perl/ruby -ne 'code', python -c 'code'; a glued value: -c'code', perl -e'code'
                if rest.is_empty() {
                    code = more_code(code, args.get(i + 1).map_or("", String::as_str));
                    i += 2;
                    continue;
                }
                code = more_code(code, rest);
            }
        } else if !a.starts_with('-') && code.is_none() {
            break;
        }
        i += 1;
    }
    Some(code)
}

/// Every piece of inline code given so far, one a line: `perl -e 'system(..)'
/// -e 1` runs both pieces, not the last one.
fn more_code(code: Option<String>, piece: &str) -> Option<String> {
    Some(match code {
        Some(c) => format!("{c}\n{piece}"),
        None => piece.to_owned(),
    })
}

/// Code an interpreter takes from an option that is not its code option:
/// perl's `-M`/`-m` text (`-M'POSIX;system(..)'` becomes `use
/// POSIX;system(..);`), node's and bun's preloads from a `data:` or remote
/// URL (`--import 'data:text/javascript,..'`), php's per-line and
/// begin/end code (`-R`, `-B`, `-E`) and its prepended files (`-d
/// auto_prepend_file=`).
pub fn options_carry_code(prog: &str, args: &[String]) -> bool {
    let module = |v: &str| {
        let (name, list) = v.split_once('=').unwrap_or((v, ""));
        let name = name.strip_prefix('-').unwrap_or(name);
        !name.is_empty()
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
            && list.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | ':' | ',' | '.' | '-' | '+'))
    };
    let url = |v: &str| v.starts_with("data:") || v.contains("://");
    let mut i = 0;
    while i < args.len() {
        let a = args[i].as_str();
        let next = args.get(i + 1).map_or("", String::as_str);
        if a == "--" || !a.starts_with('-') && (i == 0 || !args[i - 1].starts_with('-')) {
            break;
        }
        let carries = a.starts_with('-')
            && match prog {
                "perl" if !a.starts_with("--") => {
                    // the first letter that takes a value ends the cluster; an M/m
                    // there takes the rest of the word, or the next word
                    a[1..].find(['e', 'E', 'M', 'm', 'I', 'x', 'C', 'd', 'D', 'i']).is_some_and(|k| {
                        let rest = &a[2 + k..];
                        matches!(a.as_bytes()[1 + k], b'M' | b'm') && !module(if rest.is_empty() { next } else { rest })
                    })
                }
                "node" | "nodejs" | "bun" | "deno" => {
                    let (opt, value) = a.split_once('=').unwrap_or((a, next));
                    NODE_PRELOAD_OPTIONS.contains(&opt) && url(value)
                }
                "php" => {
                    let value = if a.len() > 2 { &a[2..] } else { next };
                    matches!(a.get(..2), Some("-R" | "-B" | "-E"))
                        || a.starts_with("-d") && (value.starts_with("auto_prepend_file") || value.starts_with("auto_append_file"))
                }
                _ => false,
            };
        if carries {
            return true;
        }
        i += 1;
    }
    false
}

/// The variables a builtin sets from its words, when one makes a shell or
/// program run more ([`command_var`]): `export`/`declare`/`typeset`/
/// `local`/`readonly` (`NAME=..`, a bare `NAME`, a nameref `-n r=NAME`),
/// `read`/`mapfile`/`readarray NAME`, `printf -v NAME`, and `env NAME=..`
/// before its program. The words are the shell model's, after quotes,
/// escapes and braces (`export BASH_E\NV=..`, `export B{ASH_ENV=..,}`).
pub fn builtin_sets_command_var(prog: &str, args: &[String]) -> bool {
    let named = command_var_name;
    match prog {
        p if ASSIGNMENT_BUILTINS.contains(&p) => {
            let nameref = args.iter().take_while(|a| *a != "--").any(|a| a.starts_with('-') && a.contains('n'));
            args.iter().filter(|a| !a.starts_with('-') && !a.starts_with('+')).any(|a| match a.split_once('=') {
                Some((name, value)) => command_var(name, value, None) || nameref && named(value),
                None => named(a),
            })
        }
        "read" | "mapfile" | "readarray" => args.iter().any(|a| !a.starts_with('-') && named(a)),
        "printf" => args.iter().enumerate().any(|(i, a)| match a.strip_prefix("-v") {
            Some("") => args.get(i + 1).is_some_and(|n| named(n)),
            Some(n) => named(n),
            None => false,
        }),
        "env" => args
            .iter()
            .skip_while(|a| a.starts_with('-'))
            .take_while(|a| a.contains('='))
            .any(|a| a.split_once('=').is_some_and(|(name, value)| command_var(name, value, None))),
        _ => false,
    }
}

/// A sed script's `e` command or `e`/`w` flag of `s`, or a `w`/`W`
/// command: it runs a command or writes a file.
pub fn sed_runs_or_writes(script: &str) -> bool {
    let c: Vec<char> = script.chars().collect();
    let mut i = 0;
    while i < c.len() {
        // skip separators and the address
        while i < c.len() && matches!(c[i], ' ' | '\t' | '\n' | ';' | '{' | '}' | '!') {
            i += 1;
        }
        while i < c.len() {
            match c[i] {
                '0'..='9' | '$' | ',' | '~' | '+' | ' ' | '!' => i += 1,
                '/' | '\\' => {
                    let d = if c[i] == '\\' {
                        i += 1;
                        c.get(i).copied().unwrap_or('/')
                    } else {
                        '/'
                    };
                    i += 1;
                    while i < c.len() && c[i] != d {
                        if c[i] == '\\' {
                            i += 1;
                        }
                        i += 1;
                    }
                    i += 1;
                    // address flags I/M
                    while i < c.len() && matches!(c[i], 'I' | 'M') {
                        i += 1;
                    }
                }
                _ => break,
            }
        }
        let Some(&cmd) = c.get(i) else { break };
        i += 1;
        match cmd {
            'e' | 'w' | 'W' => return true,
            's' | 'y' => {
                let Some(&d) = c.get(i) else { break };
                i += 1;
                for _ in 0..2 {
                    while i < c.len() && c[i] != d {
                        if c[i] == '\\' {
                            i += 1;
                        }
                        i += 1;
                    }
                    i += 1;
                }
                if cmd == 's' {
                    while i < c.len() && !matches!(c[i], ';' | '\n' | '}') {
                        if matches!(c[i], 'e' | 'w' | 'W') {
                            return true;
                        }
                        i += 1;
                    }
                }
            }
            'a' | 'i' | 'c' | 'r' | 'R' | 'b' | 't' | 'T' | ':' | 'q' | 'Q' | 'l' | 'L' | 'v' | 'F' | 'z' => {
                // text or a label to the end of the line (a, i, c, r, R: the line; b, t, :, to `;`)
                let to_semicolon = matches!(cmd, 'b' | 't' | 'T' | 'q' | 'Q' | 'l' | 'L' | 'v' | 'F' | 'z');
                while i < c.len() && c[i] != '\n' && !(to_semicolon && matches!(c[i], ';' | '}')) {
                    i += 1;
                }
            }
            _ => {}
        }
    }
    false
}

/// An awk program that runs commands (`system`, pipes to or from a command)
/// or writes files (`print > "f"`), or loads extensions.
pub fn awk_runs_or_writes(program: &str) -> bool {
    let r = awk_code(program);
    r.code.contains(">>") || !r.outputs.is_empty() || !r.commands.is_empty()
}

/// What an awk program does besides reading, when every part of it is a
/// literal: the files it writes (`print > "F"`, `printf >> "F"`) and the
/// command lines it runs (`system("C")`, `print | "C"`, `"C" | getline`);
/// `None` when a file or a command is computed, or the program loads code
/// (`@load`, `@include`).
pub fn awk_effects(program: &str) -> Option<(Vec<String>, Vec<String>)> {
    let r = awk_code(program);
    let files = r.outputs.into_iter().collect::<Option<Vec<String>>>()?;
    let commands = r.commands.into_iter().collect::<Option<Vec<String>>>()?;
    Some((files, commands))
}

/// One reading of an awk program ([`awk_code`]).
struct AwkReading {
    /// The program with every string blanked to `""` and every regular
    /// expression where no `/` could divide to `//`.
    code: String,
    /// For each output redirection, the file it names.
    outputs: Vec<Option<String>>,
    /// For each command the program runs, its line.
    commands: Vec<Option<String>>,
}

/// One reading of an awk program for [`awk_runs_or_writes`] and
/// [`awk_effects`]. An output redirection is a `>` or `>>` in a
/// `print`/`printf` statement outside parentheses (awk reads it so whatever
/// follows: `print $1 > f`); a statement ends at `;`, `{`, `}` or a newline
/// (not one inside parentheses or after `,`, `&&`, `||`, or escaped). Its
/// file is `Some` for a string literal without a backslash, alone or in
/// parentheses, up to the statement's end or a comment (`print > "o"`,
/// `print > ("o")`), `None` for anything else (`print > f`, `print > "a"
/// "b"`). A command is `print | "C"` (the same literal rule),
/// `"C" | getline` (a literal where an operand starts) or `system("C")`;
/// any other `|` (not `||`), `|&`, `@load` or `@include` is a command
/// `None`. Comments are read as code: a `#` may be in a regular expression
/// this reading does not skip.
fn awk_code(program: &str) -> AwkReading {
    // a backslash-newline joins lines (in a string too, where the backslash
    // left in place keeps the literal from being taken as a file name)
    let c: Vec<char> = program.replace("\\\n", "\\ ").chars().collect();
    let mut r = AwkReading { code: String::new(), outputs: Vec::new(), commands: Vec::new() };
    // The end of the string whose opening quote is at `open` (past its closing quote).
    let string_end = |open: usize| {
        let mut i = open + 1;
        while i < c.len() && c[i] != '"' {
            i += if c[i] == '\\' { 2 } else { 1 };
        }
        i + 1
    };
    let blank = |k: usize| k < c.len() && (c[k] == ' ' || c[k] == '\t');
    let skip_blank = |mut k: usize| {
        while blank(k) {
            k += 1;
        }
        k
    };
    let text_of = |open: usize, end: usize| -> Option<String> {
        // `end` is past the closing quote, or past the end of an open string
        let text: String = c[open + 1..(end - 1).min(c.len())].iter().collect();
        (!text.contains('\\')).then_some(text)
    };
    // After an operator at `k`: `(`s, a string literal, as many `)`s, then the
    // statement's end; its text (`None` for a backslash) and where it ends.
    let literal_to_end = |mut k: usize| -> Option<(Option<String>, usize)> {
        let mut open = 0;
        while k < c.len() && (c[k] == '(' || blank(k)) {
            open += usize::from(c[k] == '(');
            k += 1;
        }
        if k >= c.len() || c[k] != '"' {
            return None;
        }
        let end = string_end(k);
        let mut e = end;
        while e < c.len() && (c[e] == ')' || blank(e)) && open > 0 {
            open -= usize::from(c[e] == ')');
            e += 1;
        }
        let e = skip_blank(e);
        (open == 0 && (e >= c.len() || matches!(c[e], ';' | '}' | '\n' | '#'))).then(|| (text_of(k, end), e))
    };
    let word_at = |k: usize, w: &str| {
        let w: Vec<char> = w.chars().collect();
        c[k..].starts_with(&w)
            && (k == 0 || !(c[k - 1].is_alphanumeric() || c[k - 1] == '_'))
            && c.get(k + w.len()).is_none_or(|n| !(n.is_alphanumeric() || *n == '_'))
    };
    // the last string literal: the code's length after it, its text, and
    // whether it stood where an operand starts
    let mut last: Option<(usize, Option<String>, bool)> = None;
    let (mut printing, mut depth) = (false, 0usize);
    let mut i = 0;
    while i < c.len() {
        match c[i] {
            '"' => {
                let starts = regex_may_start(&r.code);
                let end = string_end(i);
                r.code.push_str("\"\"");
                last = Some((r.code.len(), text_of(i, end), starts));
                i = end;
                continue;
            }
            '/' if regex_may_start(&r.code) => {
                if let Some(end) = regex_end(&c, i) {
                    r.code.push_str("//");
                    i = end;
                    continue;
                }
            }
            // a newline inside parentheses or after `,`, `&&`, `||` goes on with the statement
            '\n' if depth > 0 || r.code.trim_end_matches([' ', '\t']).ends_with([',', '&', '|']) => {}
            ';' | '{' | '}' | '\n' => (printing, depth) = (false, 0),
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            '|' if c.get(i + 1) == Some(&'|') => {
                r.code.push_str("||");
                i += 2;
                continue;
            }
            '|' => {
                let k = i + 1;
                let command = if c.get(k) == Some(&'&') {
                    None
                } else if printing && depth == 0 {
                    literal_to_end(skip_blank(k)).map(|(text, _)| text).unwrap_or(None)
                } else {
                    let before = r.code.trim_end_matches([' ', '\t']).len();
                    match &last {
                        Some((len, text, true)) if *len == before && word_at(skip_blank(k), "getline") => text.clone(),
                        _ => None,
                    }
                };
                r.commands.push(command);
            }
            '>' if printing && depth == 0 => {
                let k = skip_blank(i + 1 + usize::from(c.get(i + 1) == Some(&'>')));
                r.code.extend(&c[i..k]);
                match literal_to_end(k) {
                    Some((file, e)) => {
                        r.outputs.push(file);
                        r.code.push_str("\"\"");
                        i = e;
                    }
                    None => {
                        r.outputs.push(None);
                        i = k;
                    }
                }
                continue;
            }
            's' if word_at(i, "system") => {
                let k = skip_blank(i + "system".len());
                let arg = (c.get(k) == Some(&'(')).then(|| skip_blank(k + 1)).filter(|&q| c.get(q) == Some(&'"'));
                let command = arg.and_then(|q| {
                    let end = string_end(q);
                    (c.get(skip_blank(end)) == Some(&')')).then(|| text_of(q, end)).flatten()
                });
                r.commands.push(command);
            }
            '@' => r.commands.push(None),
            'p' if c[i..].starts_with(&['p', 'r', 'i', 'n', 't']) && (i == 0 || !(c[i - 1].is_alphanumeric() || c[i - 1] == '_')) => {
                printing = true
            }
            _ => {}
        }
        r.code.push(c[i]);
        i += 1;
    }
    r
}

/// Whether a `/` after `code` (the program read so far) starts a regular
/// expression: where an operand is expected, after nothing, `(`, `,`, `{`,
/// `}`, `;`, a newline, `!`, `~`, `&`, `|`, `?`, `:` or `=`. After anything
/// else it divides, and the text after it is read as code.
fn regex_may_start(code: &str) -> bool {
    code.trim_end_matches([' ', '\t']).chars().last().is_none_or(|p| "(,{};\n!~&|?:=".contains(p))
}

/// The end (past the closing `/`) of the regular expression opening at
/// `open`, or `None` when no unescaped `/` closes it on the same line.
fn regex_end(c: &[char], open: usize) -> Option<usize> {
    let mut i = open + 1;
    while i < c.len() && c[i] != '\n' {
        match c[i] {
            '/' => return Some(i + 1),
            '\\' => i += 2,
            _ => i += 1,
        }
    }
    None
}

/// The halting modes' allow-list (docs/policy.md): `Ok` when this simple
/// command is a known read-only program with read-only options;
/// `Err(what)` otherwise. Our helper commands pass (the command guard
/// holds them to their grammar).
pub fn allow_listed(cmd: &Simple, is_helper: impl Fn(&str) -> bool) -> Result<(), String> {
    let Some(first) = cmd.argv.first() else { return Ok(()) };
    let prog = first.rsplit('/').next().unwrap_or(first);
    if is_helper(prog) {
        return Ok(());
    }
    let deny = |why: &str| Err(format!("{prog}: {why}"));
    if !cmd.assigns.is_empty() {
        return deny("an assignment in front of the program");
    }
    if first.contains('/') && !["/bin/", "/usr/bin/", "/usr/local/bin/"].iter().any(|d| first.starts_with(d)) {
        return deny("a program outside /bin, /usr/bin and /usr/local/bin");
    }
    let args = &cmd.argv[1..];
    let any = |f: &dyn Fn(&str) -> bool| args.iter().any(|a| f(a));
    match prog {
        "cat" | "head" | "tail" | "ls" | "stat" | "wc" | "pwd" | "cd" | "true" | "false" | "test" | "[" | "echo" | "printf"
        | "basename" | "dirname" | "realpath" | "readlink" | "whoami" | "id" | "uname" | "which" | "sha256sum" | "md5sum" | "du" | "df"
        | "nproc" | "grep" | "egrep" | "fgrep" => Ok(()),
        "date" if !any(&|a| a == "-s" || a.starts_with("--set")) => Ok(()),
        "file" if !any(&|a| a == "-C" || a == "--compile") => Ok(()),
        "less" | "more"
            if !any(&|a| {
                a.starts_with('+') && (a.contains('!') || a.contains('|'))
                    || a.starts_with("-k")
                    || a.starts_with("--lesskey")
                    || a.starts_with("-o")
                    || a.starts_with("-O")
                    || a.starts_with("--log-file")
                    || a.starts_with("--LOG-FILE")
            }) =>
        {
            Ok(())
        }
        "rg" if !any(&|a| {
            a.starts_with("--pre")
                || a == "--search-zip"
                || a.starts_with("--hostname-bin")
                || (a.starts_with('-') && !a.starts_with("--") && a.contains('z'))
        }) =>
        {
            Ok(())
        }
        "find"
            if !any(&|a| {
                matches!(a, "-exec" | "-execdir" | "-ok" | "-okdir" | "-delete" | "-fprint" | "-fprint0" | "-fprintf" | "-fls")
            }) =>
        {
            Ok(())
        }
        "git" => git_read_only(args).map_err(|why| format!("git: {why}")),
        _ => deny("not on the read-only list"),
    }
}

/// git's `--output[=F]`, or a prefix of it git takes for it (`--out=F`),
/// which writes F; not `--output-indicator-new` and the like.
pub(crate) fn git_output_option(arg: &str) -> bool {
    let name = arg.split('=').next().unwrap_or(arg);
    name.len() > 3 && "--output".starts_with(name)
}

/// `git status|log|diff|show|blame` with no `-c`, `--output`, pager or
/// external-diff option; `-C DIR` and `--no-pager` only as global options.
fn git_read_only(args: &[String]) -> Result<(), String> {
    let mut i = 0;
    while i < args.len() {
        match args[i].as_str() {
            "-C" => i += 2,
            "--no-pager" | "-P" => i += 1,
            a if a.starts_with('-') => return Err(format!("the global option {a}")),
            _ => break,
        }
    }
    let Some(sub) = args.get(i) else { return Err("no subcommand".into()) };
    if !matches!(sub.as_str(), "status" | "log" | "diff" | "show" | "blame") {
        return Err(format!("{sub} is not a read-only subcommand here"));
    }
    for a in &args[i + 1..] {
        if a == "--" {
            break;
        }
        if git_output_option(a) || a == "--ext-diff" || a == "--textconv" || a.starts_with("--open-files-in-pager") || a == "-O" {
            return Err(format!("the option {a}"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The files of [`awk_effects`].
    fn outputs_of(program: &str) -> Option<Vec<String>> {
        awk_effects(program).map(|(files, _)| files)
    }

    #[test]
    fn harmless_code_is_a_narrow_probe() {
        for ok in [
            "s/x/y/",
            "s/foo/bar/g; s|a|b|",
            "y/abc/xyz/",
            "import sys; print(sys.version)",
            "import json,sys; print(json.load(sys.stdin)['name'])",
            "console.log(process.version)",
            "puts RUBY_VERSION",
            "print('hello world')",
        ] {
            assert!(harmless_code(ok), "{ok}");
        }
        for bad in [
            "import os; os.system('rm -rf build')",
            "__import__('shutil').rmtree('build')",
            "open('x','w').write('y')",
            "print(f'{__import__(\"os\").getcwd()}')",
            "require('fs').rmSync('build',{recursive:true})",
            "system 'rm -rf build'",
            "puts \"#{`rm -rf build`}\"",
            "exec('x')",
            "print(f'{x}')",
            "s/x/system('id')/e",
            "s/x/@{[system 'id']}/",
        ] {
            assert!(!harmless_code(bad), "{bad}");
        }
    }

    #[test]
    fn file_names_in_inline_code() {
        assert_eq!(file_names("open(\"diag2.py\",\"w\").write('x')"), ["diag2.py"]);
        assert_eq!(file_names("open('out/run.sh','w'); open('../x.py')"), ["out/run.sh"]);
        assert!(file_names("print('hello world'); x = \"a.b c\"").is_empty());
    }

    #[test]
    fn sed_and_awk_that_run_commands() {
        assert!(sed_runs_or_writes("1e rm -rf build"));
        assert!(sed_runs_or_writes("s/x/rm -rf build/e"));
        assert!(sed_runs_or_writes("w out.txt"));
        assert!(sed_runs_or_writes("/re/w out"));
        assert!(sed_runs_or_writes("/foo/w out"));
        assert!(sed_runs_or_writes("/abc/w out"));
        assert!(sed_runs_or_writes("/a\\/bc/w out"));
        // text to the end of the line, a label to `;`
        assert!(!sed_runs_or_writes("1a w out"));
        assert!(sed_runs_or_writes("/x/b skip; w out"));
        assert!(sed_runs_or_writes("; w out"));
        assert!(sed_runs_or_writes("1{\n\tw out\n}"));
        assert!(sed_runs_or_writes("1!{;e ls\n}"));
        assert!(!sed_runs_or_writes(";;"));
        assert!(!sed_runs_or_writes("s/foo/bar/g"));
        // `we` is the replacement, not the flags
        assert!(!sed_runs_or_writes("s/a/we/"));
        assert!(!sed_runs_or_writes("s/a\\/b/c/"));
        assert!(!sed_runs_or_writes("s/\\/x/w/"));
        assert!(!sed_runs_or_writes("1,5p"));
        assert!(!sed_runs_or_writes("/^#/d;s/a/b/"));
        assert!(!sed_runs_or_writes("s|/usr/local|/opt|g"));
        assert!(awk_runs_or_writes("BEGIN{system(\"rm -rf build\")}"));
        assert!(awk_runs_or_writes("{ print | \"sh\" }"));
        assert!(awk_runs_or_writes("{ \"date\" | getline d }"));
        assert!(awk_runs_or_writes("{ print > \"out\" }"));
        assert!(!awk_runs_or_writes("$3 > 100 { print $1 }"));
        assert!(!awk_runs_or_writes("{ if (a || b) print }"));
        assert!(!awk_runs_or_writes("{ s += $2 } END { print s }"));
    }

    /// The one reading both awk judges share: strings blanked, the literal
    /// after each output redirection (the program, not a guess about it).
    #[test]
    fn awk_code_blanks_strings_and_keeps_each_output_literal() {
        let AwkReading { code, outputs: lits, .. } = awk_code("{ print \"a>b\" >> \"o 1\"; print > \"x\\\\y\"; n = $1 > 3 }");
        assert_eq!(code, "{ print \"\" >> \"\"; print > \"\"; n = $1 > 3 }");
        // `n = $1 > 3` compares: no print statement
        assert_eq!(lits, vec![Some("o 1".to_owned()), None]);
        assert_eq!(outputs_of("{ print > \"o\" ; printf >> \"p\" }"), Some(vec!["o".to_owned(), "p".to_owned()]));
        assert_eq!(awk_effects("{ print > \"o\" ; system(\"x\") }"), Some((vec!["o".to_owned()], vec!["x".to_owned()])));
        assert_eq!(outputs_of("{ print > f }"), None);
        assert_eq!(outputs_of("{ print > \"unterminated }"), Some(vec!["unterminated }".to_owned()]));
    }

    #[test]
    fn the_text_scan_finds_definitions_and_shell_variables() {
        use crate::classify::rules as r;
        assert_eq!(scan_text("function f { rm -rf \"$1\"; }; f build").map(|x| x.0), Some(r::OPAQUE_DEFINITION));
        assert_eq!(scan_text("f() { rm -rf \"$1\"; }; f build").map(|x| x.0), Some(r::OPAQUE_DEFINITION));
        assert_eq!(scan_text("f () { rm -rf \"$1\"; }; f build").map(|x| x.0), Some(r::OPAQUE_DEFINITION));
        assert_eq!(scan_text("coproc rm -rf build").map(|x| x.0), Some(r::OPAQUE_DEFINITION));
        // a word after the start of the line, and an upper-case word that ends it
        assert_eq!(scan_text("ls; coproc rm -rf build").map(|x| x.0), Some(r::OPAQUE_DEFINITION));
        assert_eq!(scan_text("true && function f { rm -rf x; }").map(|x| x.0), Some(r::OPAQUE_DEFINITION));
        assert_eq!(scan_text("ls; mycoproc x"), None);
        assert_eq!(scan_text("ls; PAGER"), None);
        // spaces inside the parentheses; a name and `()` with nothing after
        assert_eq!(scan_text("f( ) { rm -rf x; }; f").map(|x| x.0), Some(r::OPAQUE_DEFINITION));
        assert_eq!(scan_text("f() "), None);
        // a word joined to a `-` is no keyword (`a=-coproc` is a value)
        assert_eq!(scan_text("a=-coproc x"), None);
        // after `declare -x` and after another assignment, a name is assigned
        assert_eq!(scan_text("declare -x PROMPT_COMMAND='rm -rf build'").map(|x| x.0), Some(r::OPAQUE_SHELL_ENV));
        assert_eq!(scan_text("rm$IFS-rf${IFS}build").map(|x| x.0), Some(r::OPAQUE_PROGRAM));
        assert_eq!(scan_text("PROMPT_COMMAND='rm -rf build'; ls").map(|x| x.0), Some(r::OPAQUE_SHELL_ENV));
        assert_eq!(scan_text("export BASH_ENV=./x.sh; bash -c ls").map(|x| x.0), Some(r::OPAQUE_SHELL_ENV));
        assert_eq!(scan_text("IFS=,; set -- a,b").map(|x| x.0), Some(r::OPAQUE_SHELL_ENV));
        for ok in [
            "while IFS= read -r l; do echo $l; done < f",
            "GIT_PAGER=cat git log",
            "grep -n 'main()' src/*.c",
            "echo function",
            "npm run build-function",
            "cat > app.js <<'EOF'\nfunction main() {\n  run();\n}\nEOF\nnode app.js",
            "cat <<-EOF > x.sh\n\tf() { ls; }\n\tEOF",
        ] {
            assert_eq!(scan_text(ok), None, "{ok}");
        }
    }
    /// Inline code's file names, each once, at most 32; a long code option
    /// (`--eval CODE`) gives the code after it.
    #[test]
    fn file_names_are_bounded_and_long_code_options_read_their_value() {
        assert_eq!(file_names("open('a.txt'); open('b.txt'); open('a.txt')"), ["a.txt", "b.txt"]);
        let many: Vec<String> = (0..40).map(|i| format!("open('f{i}.txt')")).collect();
        assert_eq!(file_names(&many.join("; ")).len(), 32);
        let args = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(inline_code("node", &args(&["--eval", "console.log(1)"])), Some(Some("console.log(1)".into())));
        assert_eq!(inline_code("node", &args(&["--no-warnings", "--eval", "x()"])), Some(Some("x()".into())));
    }
    /// An empty string is no file name and does not stop the scan; a
    /// substitution followed by a separator is still only a substitution.
    #[test]
    fn empty_strings_and_a_trailing_separator() {
        assert_eq!(file_names("x = '' + 'a.txt'"), ["a.txt"]);
        // only quoted words: `b.txt` between two strings is code
        assert_eq!(file_names("'a.txt'b.txt'c'"), ["a.txt"]);
        assert!(substitutions_only("s/a/b/;"));
        assert!(substitutions_only("s/a/b/g; y/a/b/;"));
    }
    /// An awk program that ends in an output redirection is read to its
    /// end (no index past it); its target is not a literal.
    #[test]
    fn awk_code_ending_in_a_redirection() {
        let AwkReading { code, outputs: literals, .. } = awk_code("{print >");
        assert_eq!((code.as_str(), literals), ("{print >", vec![None]));
        // a string left open at the end
        let AwkReading { code, outputs: literals, .. } = awk_code("{print > \"");
        assert_eq!((code.as_str(), literals), ("{print > \"\"", vec![Some(String::new())]));
    }

    /// Shard 4/5 survivors: a word glued after `.` is no keyword; `$IFS`
    /// alone (without braces) is found; a `NAME (` at the end of a line and
    /// an unterminated `s/a`, sed address `/x/` or `x>"out"` are read to
    /// their end without indexing past it; a quoted value with a space is
    /// one value (`IFS=' ' read`); an option's value is no assignment
    /// builtin's (`grep -e NAME=`).
    #[test]
    fn keywords_ifs_line_ends_quoted_values_and_option_values() {
        assert_eq!(scan_text("x=.coproc ls"), None);
        assert_eq!(scan_text("cat$IFS/etc/passwd").map(|x| x.0), Some(crate::classify::rules::OPAQUE_PROGRAM));
        assert_eq!(scan_text("cat${IFS}/etc/passwd").map(|x| x.0), Some(crate::classify::rules::OPAQUE_PROGRAM));
        assert_eq!(scan_text("a:b() { rm -rf x; }").map(|x| x.0), Some(crate::classify::rules::OPAQUE_DEFINITION));
        assert_eq!(scan_text("f ("), None);
        assert_eq!(scan_text("f("), None);
        assert_eq!(scan_text("IFS=' ' read -r a b"), None);
        assert_eq!(scan_text("GIT_PAGER='less -R' git log"), None);
        assert_eq!(scan_text("grep -r PROMPT_COMMAND=1 ."), None);
        // an assignment after any word of an assignment builtin (these passed as plain reads)
        for line in [
            "declare -x PROMPT_COMMAND=1",
            "export a PROMPT_COMMAND='rm -rf x'",
            "declare -x a PROMPT_COMMAND=1",
            "env -i BASH_ENV=/tmp/x bash -c ls",
            "(export a PS4='$(rm -rf x)'; set -x)",
            "export ${x} PROMPT_COMMAND=1",
            "ls; builtin export a PROMPT_COMMAND=1",
        ] {
            assert_eq!(scan_text(line).map(|x| x.0), Some(crate::classify::rules::OPAQUE_SHELL_ENV), "{line}");
        }
        assert_eq!(scan_text("export a; ls PROMPT_COMMAND=1"), None);
        // a keyword before the assignment; a separator glued to the builtin
        for line in ["if x; then PROMPT_COMMAND=1; fi", "ls;export a PROMPT_COMMAND=1"] {
            assert_eq!(scan_text(line).map(|x| x.0), Some(crate::classify::rules::OPAQUE_SHELL_ENV), "{line}");
        }
        assert!(!substitutions_only("s/a"));
        assert!(!sed_runs_or_writes("/x/"));
        assert!(sed_runs_or_writes("/x/Iw out"));
        assert!(!sed_runs_or_writes("/x/I d"));
        assert_eq!(outputs_of("{print x>\"out\"}"), Some(vec!["out".to_string()]));
        assert_eq!(outputs_of("print>\"out\""), Some(vec!["out".to_string()]));
        assert_eq!(outputs_of(">\"out\""), Some(vec![]));
    }

    /// Shards 6/7 survivors: a name is unresolved with both brackets; an
    /// unterminated string is read to its end; an escaped delimiter inside
    /// `s///`; an extension is 1-8 alphanumerics after a non-empty stem.
    #[test]
    fn brackets_open_strings_escaped_delimiters_and_extensions() {
        assert!(!unresolved_program("a["));
        assert!(unresolved_program("a[b]"));
        assert!(harmless_code("print('abc"), "read to its end, no index past it");
        assert!(substitutions_only("s/a\\/b/c/"));
        assert!(file_names("open('.bashrc')").is_empty());
        assert!(file_names("open('a.abcdefghi')").is_empty());
        assert_eq!(file_names("open('a.abcdefgh')"), ["a.abcdefgh"]);
    }

    /// The assignments only the raw text shows: each form of a default
    /// that assigns, a loop variable, an append; reads and other names
    /// are none.
    #[test]
    fn raw_assignments_defaults_loops_and_appends() {
        for line in [
            ": ${BASH_ENV:=/tmp/x}",
            "echo ${BASH_ENV=/tmp/x}",
            "echo ${PROMPT_COMMAND::=x}",
            "for PS4 in x; do :; done",
            "select PS4 in a b; do :; done",
            "BASH_ENV+=/tmp/x bash -c true",
        ] {
            assert!(raw_assignment(&strip_heredocs(line)), "{line}");
        }
        for line in ["echo ${PAGER:-less}", "echo $BASH_ENV", "for f in *.rs; do :; done", "PATH+=:/x", "echo ${X:=1}"] {
            assert!(!raw_assignment(&strip_heredocs(line)), "{line}");
        }
    }

    /// Options that carry code: the scan ends at `--` and at the first
    /// word that is no option's value; perl's long options are no
    /// clusters; php's `-d` value glued or apart, other `-d` settings
    /// plain. A keyword after `/`, a name whose `(` holds no `)`, and a
    /// harmless value in quotes are nothing.
    #[test]
    fn options_carrying_code_end_where_the_options_do() {
        let args = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert!(!options_carry_code("perl", &args(&["-e", "1", "--", "-Ma;b"])));
        assert!(!options_carry_code("perl", &args(&["x.pl", "-Ma;b"])));
        assert!(options_carry_code("perl", &args(&["-I", "lib", "-Ma;b", "-e1"])));
        assert!(!options_carry_code("perl", &args(&["--mx;y"])));
        assert!(options_carry_code("php", &args(&["-dauto_prepend_file=/tmp/x", "-r", "echo 1;"])));
        assert!(options_carry_code("php", &args(&["-d", "auto_prepend_file=/tmp/x", "-r", "echo 1;"])));
        assert!(!options_carry_code("php", &args(&["-d", "memory_limit=1G", "-r", "echo 1;"])));
        assert_eq!(scan_text("x=/coproc ls"), None);
        assert_eq!(scan_text("echo a (b {"), None);
        assert_eq!(scan_text("GIT_PAGER='cat' git log"), None);
    }

    /// Backquotes are never harmless; an escaped quote stays in its
    /// string; `$1` in a replacement is text; `export a=NAME` sets `a`
    /// (only a nameref's value names a variable); `\%x%` addresses.
    #[test]
    fn backquotes_escapes_replacements_namerefs_and_custom_addresses() {
        assert!(!harmless_code("print(`ls`)"));
        assert!(harmless_code(&"print(1);".repeat(455)));
        assert!(!harmless_code(&"print(1);".repeat(456)), "over 4,096 bytes is never read as harmless");
        assert!(harmless_code("print('it\\'s')"));
        assert!(!harmless_code("print('it\\'s'); os.system('x')"));
        assert!(substitutions_only("s/(a)/$1/"));
        let args = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert!(!builtin_sets_command_var("export", &args(&["a=PS4"])));
        assert!(!builtin_sets_command_var("export", &args(&["name=PS4"])), "a word holding an n is no -n flag");
        assert!(builtin_sets_command_var("declare", &args(&["-n", "a=PS4"])));
        assert!(sed_runs_or_writes("\\%x%w out"));
        assert!(!sed_runs_or_writes("\\%x%d"));
    }

    /// Shards 10-19 survivors: only `CARGO_TARGET_<triple>_RUNNER`/`_LINKER`
    /// run something (`CARGO_TARGET_DIR` or any other `_RUNNER` name is plain);
    /// a keyword glued to a following `-` or `.` is no keyword.
    #[test]
    fn cargo_runner_names_and_keywords_glued_after() {
        assert!(command_var_name("CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_RUNNER"));
        assert!(command_var_name("CARGO_TARGET_AARCH64_APPLE_DARWIN_LINKER"));
        assert!(!command_var_name("CARGO_TARGET_DIR"));
        assert!(!command_var_name("TEST_RUNNER"));
        assert_eq!(scan_text("CARGO_TARGET_DIR=/tmp/t cargo build"), None);
        assert_eq!(scan_text("TEST_RUNNER=x make check"), None);
        assert_eq!(
            scan_text("CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_RUNNER=./x cargo run").map(|x| x.0),
            Some(crate::classify::rules::OPAQUE_SHELL_ENV)
        );
        assert_eq!(scan_text("coproc.sh --all"), None);
        assert_eq!(scan_text("function-list --all"), None);
        assert_eq!(scan_text("ls; coproc-tool x"), None);
    }

    /// A function name with a `-` in it is read back over the `-`
    /// (`my-func() {` is a definition); a here-document's delimiter ends
    /// at the first blank, so what follows its body is still scanned.
    #[test]
    fn dashed_function_names_and_heredoc_delimiters_end_at_a_blank() {
        use crate::classify::rules as r;
        assert_eq!(scan_text("my-func() { rm -rf x; }; my-func").map(|x| x.0), Some(r::OPAQUE_DEFINITION));
        assert_eq!(scan_text("ls; do-it () ( rm -rf x ); do-it").map(|x| x.0), Some(r::OPAQUE_DEFINITION));
        assert_eq!(strip_heredocs("cat <<EOF > x\nhi\nEOF\nls"), "cat <<EOF > x\nEOF\nls\n");
        assert_eq!(strip_heredocs("cat <<EOF; ls\nhi\nEOF"), "cat <<EOF; ls\nEOF\n");
        assert_eq!(scan_text("cat <<EOF > x\nhi\nEOF\nPROMPT_COMMAND='rm -rf x'").map(|x| x.0), Some(r::OPAQUE_SHELL_ENV));
    }

    /// Interpolation runs code only in a double-quoted string, and each of
    /// `#{`, `${`, `@{`, `@[` alone is enough; in single quotes it is text.
    #[test]
    fn interpolation_only_in_double_quotes_each_form_alone() {
        for bad in ["puts \"#{x}\"", "print \"${x}\"", "print \"@{x}\"", "print \"@[x]\""] {
            assert!(!harmless_code(bad), "{bad}");
        }
        for ok in ["print('${x}')", "puts '#{x}'", "print('@{x} @[x]')", "print(\"hi\")"] {
            assert!(harmless_code(ok), "{ok}");
        }
    }

    /// Perl's `tr` is a substitution like `s` and `y`, found by both its
    /// letters at once; a delimiter is no letter, digit or blank
    /// (`sxaxbx`, `s a b c` are words).
    #[test]
    fn tr_substitutions_and_word_delimiters() {
        assert!(substitutions_only("tr/a-z/A-Z/"));
        assert!(substitutions_only("s/a/b/; tr/a/b/d"));
        assert!(!substitutions_only("tx/a/b/"));
        assert!(!substitutions_only("ar/a/b/"));
        assert!(!substitutions_only("sxaxbx"));
        assert!(!substitutions_only("s a b c"));
        assert!(!substitutions_only("s(a(b("));
        assert!(harmless_code("tr/a-z/A-Z/"));
    }

    /// Each interpreter with inline code is known: lua, luajit and
    /// Rscript's `-e`, `deno eval`, osascript's `-e`; the assignment check
    /// is only for the builtins that set what their words name.
    #[test]
    fn inline_code_of_lua_deno_osascript_and_builtins_that_assign() {
        let args = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        for p in ["lua", "luajit", "Rscript"] {
            assert_eq!(inline_code(p, &args(&["-e", "os.execute('x')"])), Some(Some("os.execute('x')".into())), "{p}");
        }
        assert_eq!(inline_code("deno", &args(&["eval", "Deno.exit(1)"])), Some(Some("Deno.exit(1)".into())));
        assert_eq!(inline_code("php", &args(&["-r", "system('x');"])), Some(Some("system('x');".into())));
        assert_eq!(inline_code("osascript", &args(&["-e", "do shell script \"x\""])), Some(Some("do shell script \"x\"".into())));
        assert!(builtin_sets_command_var("read", &args(&["PS1"])));
        assert!(!builtin_sets_command_var("echo", &args(&["PS1"])));
        assert!(!builtin_sets_command_var("printf", &args(&["PS1"])));
        assert!(!builtin_sets_command_var("ls", &args(&["PS1=x"])));
    }

    /// An address regex left open is read to the script's end, no index
    /// past it.
    #[test]
    fn sed_open_address_read_to_its_end() {
        assert!(!sed_runs_or_writes("/x"));
        assert!(!sed_runs_or_writes("\\%x"));
        assert!(!sed_runs_or_writes("/a\\/"));
    }

    /// A `(` with only blanks before it opens a subshell, read back to the
    /// line start without indexing before it; a quoted value left open is
    /// read to the end and still judged.
    #[test]
    fn leading_subshell_and_an_open_quoted_value() {
        use crate::classify::rules as r;
        assert_eq!(scan_text(" (cd x && ls)"), None);
        assert_eq!(scan_text("  ( ls )"), None);
        assert_eq!(scan_text("PS1='rm -rf x").map(|x| x.0), Some(r::OPAQUE_SHELL_ENV));
        assert_eq!(scan_text("GIT_PAGER=\"cat"), None);
    }

    /// `print > f` and `printf > f` (a variable) and `>>` without blanks
    /// are writes; `@load` and `@include` each load code alone.
    #[test]
    fn awk_writes_to_variables_and_loads_each_alone() {
        assert!(awk_runs_or_writes("{ print > f }"));
        assert!(awk_runs_or_writes("{ printf > f }"));
        assert!(awk_runs_or_writes("{ print>>f }"));
        assert!(awk_runs_or_writes("@load \"ordchr\"; BEGIN { print ord(\"a\") }"));
        assert!(awk_runs_or_writes("@include \"lib.awk\"; BEGIN { f() }"));
    }

    /// The allow-list: a program under /bin, /usr/bin or /usr/local/bin
    /// passes, another path does not; `file` passes but with `-C` or
    /// `--compile`; git's pager and output options are refused, and
    /// global options alone name no subcommand.
    #[test]
    fn allow_list_paths_file_compile_and_git_options() {
        let cmd = |a: &[&str]| Simple { argv: a.iter().map(|s| s.to_string()).collect(), ..Simple::default() };
        let listed = |a: &[&str]| allow_listed(&cmd(a), |_| false);
        assert_eq!(listed(&["/usr/bin/cat", "x"]), Ok(()));
        assert_eq!(listed(&["/bin/ls"]), Ok(()));
        assert_eq!(listed(&["./cat", "x"]), Err("cat: a program outside /bin, /usr/bin and /usr/local/bin".into()));
        assert_eq!(listed(&["file", "x.txt"]), Ok(()));
        assert_eq!(listed(&["file", "-z", "x.gz"]), Ok(()));
        assert_eq!(listed(&["file", "-C", "-m", "magic"]), Err("file: not on the read-only list".into()));
        assert_eq!(listed(&["file", "--compile", "-m", "magic"]), Err("file: not on the read-only list".into()));
        assert_eq!(listed(&["git", "diff", "--open-files-in-pager=vim"]), Err("git: the option --open-files-in-pager=vim".into()));
        assert_eq!(listed(&["git", "log", "--textconv"]), Err("git: the option --textconv".into()));
        let args = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(git_read_only(&args(&["--no-pager"])), Err("no subcommand".into()));
        assert_eq!(git_read_only(&args(&["-C", "repo"])), Err("no subcommand".into()));
        assert_eq!(git_read_only(&args(&["-C", "repo", "log"])), Ok(()));
    }

    /// Code of 4,096 bytes is still read; `s///i` is a flag, not sed's
    /// `i` (insert) command, so a `w` after it is seen.
    #[test]
    fn code_at_the_size_bound_and_sed_flags_before_a_command() {
        let code = format!("{} ", "print(1);".repeat(455));
        assert_eq!(code.len(), 4096);
        assert!(harmless_code(&code));
        assert!(sed_runs_or_writes("s/a/b/i;w out"));
        assert!(sed_runs_or_writes("s/a/b/gi\nw out"));
        assert!(!sed_runs_or_writes("s/a/b/i;p"));
    }

    /// An `s`/`y` command left open is read to the script's end; `less +G`
    /// and a file name with `|` pass (only a `+` command with `!` or `|`
    /// runs something); git names an option before the subcommand as a
    /// global option.
    #[test]
    fn open_substitutions_less_commands_and_git_global_options() {
        assert!(!sed_runs_or_writes("s/a"));
        assert!(!sed_runs_or_writes("y/abc"));
        let cmd = |a: &[&str]| Simple { argv: a.iter().map(|s| s.to_string()).collect(), ..Simple::default() };
        assert_eq!(allow_listed(&cmd(&["less", "+G", "notes.txt"]), |_| false), Ok(()));
        assert_eq!(allow_listed(&cmd(&["less", "a|b.txt"]), |_| false), Ok(()));
        assert_eq!(allow_listed(&cmd(&["less", "+!sh", "notes.txt"]), |_| false), Err("less: not on the read-only list".into()));
        let args = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(git_read_only(&args(&["-c", "core.pager=sh", "log"])), Err("the global option -c".into()));
        assert_eq!(git_read_only(&args(&["--paginate", "log"])), Err("the global option --paginate".into()));
    }

    /// An awk `print` redirected to a file named by a variable or a field,
    /// whatever stands between `print` and `>`, writes; a `>` in a pattern
    /// or in parentheses compares.
    #[test]
    fn awk_prints_redirected_to_variables_and_fields() {
        for code in [
            "BEGIN{f=\"x.sh\"; print \"rm -rf ~\" > f}",
            "{print $1 > f}",
            "{print $2 > $1}",
            "{ printf \"%s\", $1 > out }",
            "{ printf(\"%s\", $1) > f }",
        ] {
            assert!(awk_runs_or_writes(code), "{code}");
            assert_eq!(outputs_of(code), None, "{code}");
        }
        for code in [
            "$3 > 100 { print $1 }",
            "{ print ($1 > 3) }",
            "{ if ($1 > 3) print $1 }",
            "{ x = $1 > 3; print x }",
            "{ sprint > 1 }",
            "{ n_print > 1 }",
            "{ print $1 } $3 > 100 { n++ }",
            "{ print; x = $1 > 2 }",
        ] {
            assert!(!awk_runs_or_writes(code), "{code}");
        }
        assert_eq!(outputs_of("{ print $1 > \"o\" }"), Some(vec!["o".to_owned()]));
    }

    /// The fifth attacking pass (fixtures/policy/adversarial/writes.jsonl):
    /// regular expressions skipped only where no `/` divides, a literal
    /// file in parentheses, a concatenated name, a statement that goes on
    /// over a newline, and the literal commands.
    #[test]
    fn awk_regexes_parenthesised_names_and_literal_commands() {
        for code in
            ["$0 ~ /warn|error/", "/a|b/ { n++ }", "{ if (/x|y/ && !/z|w/) print }", "{ n = split($0, a, /,|;/) }", "$1 == /a|b/ { n++ }"]
        {
            assert!(!awk_runs_or_writes(code), "{code}");
        }
        // after an operand `/` divides, and what follows is read as code
        assert_eq!(awk_effects("{ x = a / 2; system(\"rm -rf x\"); y = 1 / 3 }"), Some((vec![], vec!["rm -rf x".to_owned()])));
        assert!(awk_runs_or_writes("{ x = (a) / 2 | \"sh\"; y = 1 / 3 }"));
        // a `/` not closed on its line, an escaped `/`, a backslash-newline
        assert!(awk_runs_or_writes("$0 ~ /a|b\n{ print }"));
        assert!(!awk_runs_or_writes("$0 ~ /a\\/|b/"));
        assert_eq!(awk_effects("{ x = a \\\n/ 2; system(c); y = 1 / 3 }"), None);
        // a literal file alone or in parentheses, to the statement's end or a comment
        assert_eq!(outputs_of("{ print $1 > (\"cols.txt\") }"), Some(vec!["cols.txt".to_owned()]));
        assert_eq!(outputs_of("{ print $1 > ( (\"c\") ) ; n++ }"), Some(vec!["c".to_owned()]));
        assert_eq!(outputs_of("{ print > \"o\" # note\n}"), Some(vec!["o".to_owned()]));
        assert_eq!(outputs_of("{ print > \"o\"\tprint }"), None);
        for code in [
            "BEGIN{print \"x\" > \"/h/.bash\" \"rc\"}",
            "{ print > (\"a\") \"b\" }",
            "{ print > (\"a\" }",
            "{ print > \"a\")) }",
            "{ print > (f) }",
        ] {
            assert_eq!(outputs_of(code), None, "{code}");
        }
        // a statement goes on over a newline after `,` or inside parentheses, and after a backslash
        for code in [
            "{ print $1,\n $2 > f }",
            "{ print ($1,\n $2) > f }",
            "{ print (\n$1) > f }",
            "{ print $1 \\\n > f }",
            "{ print $1 ||\n 0 > f }",
        ] {
            assert!(awk_runs_or_writes(code), "{code}");
            assert_eq!(outputs_of(code), None, "{code}");
        }
        assert!(!awk_runs_or_writes("{ print $1 }\n$2 > 3 { n++ }"));
        assert!(!awk_runs_or_writes("{ print $1\n x = $2 > 3 }"));
        // literal commands
        assert_eq!(awk_effects("{ print $1 | \"sort -u\" }"), Some((vec![], vec!["sort -u".to_owned()])));
        assert_eq!(awk_effects("BEGIN { \"date +%s\" | getline t; print t }"), Some((vec![], vec!["date +%s".to_owned()])));
        assert_eq!(awk_effects("BEGIN { while ((\"ls\" |getline l) > 0) n++ }"), Some((vec![], vec!["ls".to_owned()])));
        assert_eq!(awk_effects("BEGIN { system ( \"make\" ) ; x = a || b }"), Some((vec![], vec!["make".to_owned()])));
        for code in [
            "{ print | cmd }",
            "{ print | \"sort\" \" -u\" }",
            "{ cmd | getline }",
            "{ \"a\" \"b\" | getline }",
            "{ $1 \"x\" | getline }",
            "{ \"ls\" | foo }",
            "{ \"ls\" | getlines }",
            "{ print |& \"sh\" }",
            "BEGIN { system(\"rm \" $1) }",
            "BEGIN { system(c) }",
            "BEGIN { system \"x\" }",
            "BEGIN { f = \"system\"; @f(\"rm -rf x\") }",
            "BEGIN { system(\"a\\\\b\") }",
            "@load \"x\"",
        ] {
            assert!(awk_runs_or_writes(code), "{code}");
            assert_eq!(awk_effects(code), None, "{code}");
        }
        assert!(!awk_runs_or_writes("BEGIN { systems = 1; x = a || b }"));
        // a function of the program's own is no `system`
        assert!(!awk_runs_or_writes("function mysystem(c) { return c } BEGIN { mysystem(\"x\"); _system(\"y\") }"));
        assert_eq!(awk_effects("BEGIN { awk::system(\"make\") }"), Some((vec![], vec!["make".to_owned()])));
        // a regular expression not closed at the end, one that ends in `|`, and where reading goes on after one
        assert!(awk_runs_or_writes("$0 ~ /a|b"));
        assert!(!awk_runs_or_writes("/x|/"));
        let AwkReading { code, .. } = awk_code("/a|b/ { n++ }");
        assert_eq!(code, "// { n++ }");
    }
}
