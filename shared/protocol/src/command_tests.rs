//! The grammar and the guard, rule by rule: every case is built so that one
//! rule alone decides it (the others would let it through), and each value
//! kind is tested at its bounds.

#![allow(clippy::unwrap_used)]

use super::*;

const ROOT: &str = "/opt/kq/bin";

fn dir() -> HelperDir {
    HelperDir::new(Path::new(ROOT)).unwrap()
}

fn code(line: &str) -> String {
    match check_command(line, &dir()) {
        Ok(c) => panic!("{line}: accepted as {c:?}"),
        Err(e) => e.code().to_owned(),
    }
}

fn accepted(line: &str) -> HelperCommand {
    check_command(line, &dir()).unwrap_or_else(|e| panic!("{line}: {e:?}"))
}

fn denied(line: &str) -> bool {
    matches!(guard_line(line, Some(&dir())), Verdict::Deny(_))
}

fn unrelated(line: &str) -> bool {
    matches!(guard_line(line, Some(&dir())), Verdict::Unrelated)
}

const STATUS: &str = "/opt/kq/bin/qa-gate status --session-id s1";

#[test]
fn the_accepted_command_carries_its_words_in_order() {
    let c = accepted("/opt/kq/bin/qa-gate status --session-id s1 --data-dir /d --transcript /t.jsonl");
    assert_eq!((c.helper, c.subcommand), ("qa-gate", "status"));
    assert_eq!(c.args, vec![("--session-id", "s1".to_owned()), ("--data-dir", "/d".to_owned()), ("--transcript", "/t.jsonl".to_owned())]);
    let c = accepted("/opt/kq/bin/memory-latch status --json --workspace /w");
    assert_eq!(c.args, vec![("--json", String::new()), ("--workspace", "/w".to_owned())]);
    // A one-word subcommand with nothing after it.
    assert_eq!(accepted("/opt/kq/bin/memory-latch status").args, vec![]);
}

#[test]
fn line_level_rules() {
    // Exactly the limit is looked at; one byte more is refused unread.
    let padded = format!("{STATUS}{}", " ".repeat(MAX_COMMAND_BYTES - STATUS.len()));
    assert_eq!(padded.len(), MAX_COMMAND_BYTES);
    assert_eq!(accepted(&padded).helper, "qa-gate");
    assert_eq!(code(&format!("{padded} ")), codes::TOO_LONG.as_str());
    assert_eq!(code("   "), codes::EMPTY.as_str());
    assert_eq!(code(""), codes::EMPTY.as_str());
    assert_eq!(code(&format!("{STATUS}\t")), codes::CONTROL.as_str());
    assert_eq!(code(&format!("{STATUS};")), codes::METACHARACTER.as_str());
    assert_eq!(code("A=1 /opt/kq/bin/qa-gate status --session-id s1"), codes::ENV_ASSIGNMENT.as_str());
    assert_eq!(code("/opt/kq/bin/qa-gate=x status"), codes::ENV_ASSIGNMENT.as_str());
    assert_eq!(code("opt/kq/bin/qa-gate status --session-id s1"), codes::PROGRAM_NOT_ABSOLUTE.as_str());
}

#[test]
fn the_program_must_be_a_helper_of_this_root() {
    assert_eq!(code("/opt/kq/bin/../bin/qa-gate status --session-id s1"), codes::PATH_TRAVERSAL.as_str());
    assert_eq!(code("/opt/kq/./bin/qa-gate status --session-id s1"), codes::PATH_TRAVERSAL.as_str());
    assert_eq!(code("/opt/kq/bin/ls -la"), codes::UNKNOWN_HELPER.as_str());
    assert_eq!(code("/opt/kq/bin/kijito-setup --force"), codes::UNKNOWN_HELPER.as_str());
    // Path comparison ignores doubled slashes; the text check does not.
    assert_eq!(code("/opt/kq/bin//qa-gate status --session-id s1"), codes::FOREIGN_ROOT.as_str());
    assert_eq!(code("/opt//kq/bin/qa-gate status --session-id s1"), codes::FOREIGN_ROOT.as_str());
    assert_eq!(code("/opt/kq/qa-gate status --session-id s1"), codes::FOREIGN_ROOT.as_str());
    assert_eq!(code("/qa-gate status --session-id s1"), codes::FOREIGN_ROOT.as_str());
    // The file-system root is never a helper directory.
    assert_eq!(HelperDir::new(Path::new("/")).unwrap_err().code(), codes::ROOT_UNKNOWN.as_str());
}

#[test]
fn subcommands_and_forms() {
    assert_eq!(code("/opt/kq/bin/qa-gate"), codes::MISSING_SUBCOMMAND.as_str());
    assert_eq!(code("/opt/kq/bin/qa-gate check-command x"), codes::UNKNOWN_SUBCOMMAND.as_str());
    assert_eq!(code("/opt/kq/bin/memory-latch consent"), codes::UNKNOWN_SUBCOMMAND.as_str());
    // The hook-only signer recovery (run by the UserPromptSubmit hook, never by the agent).
    assert_eq!(
        code(&format!("/opt/kq/bin/memory-latch wallet-recover --signature 0x{} --digest 0x{}", "a".repeat(130), "b".repeat(64))),
        codes::UNKNOWN_SUBCOMMAND.as_str()
    );
    let c = accepted("/opt/kq/bin/memory-latch consent request --action-file /w/a --summary s --risk low");
    assert_eq!(c.subcommand, "consent request");
    assert_eq!(c.args[0], ("--action-file", "/w/a".to_owned()));
    // pointer-publish: the default form and the form its switch selects.
    let d = "a".repeat(64);
    let c = accepted(&format!(
        "/opt/kq/bin/pointer-publish --pointer-id 1 --lock-message-id 2 --expected-pointer-digest {d} --content-file /c --rollback-file /r"
    ));
    assert_eq!(c.args.len(), 5);
    let c = accepted("/opt/kq/bin/pointer-publish --release-lease --lock-message-id 2");
    assert_eq!(c.args, vec![("--release-lease", String::new()), ("--lock-message-id", "2".to_owned())]);
    assert_eq!(code("/opt/kq/bin/pointer-publish --release-lease"), codes::MISSING_FLAG.as_str());
    assert_eq!(code("/opt/kq/bin/pointer-publish --release-lease --lock-message-id 2 --content-file /c"), codes::UNKNOWN_FLAG.as_str());
}

#[test]
fn flags_and_values() {
    assert_eq!(code("/opt/kq/bin/qa-gate status --session-id s1 --bogus x"), codes::UNKNOWN_FLAG.as_str());
    assert_eq!(code("/opt/kq/bin/qa-gate status --session-id s1 extra"), codes::EXTRA_WORD.as_str());
    assert_eq!(code("/opt/kq/bin/qa-gate status --session-id s1 --session-id s2"), codes::DUPLICATE_FLAG.as_str());
    assert_eq!(code("/opt/kq/bin/qa-gate status --session-id"), codes::MISSING_VALUE.as_str());
    assert_eq!(code("/opt/kq/bin/qa-gate status --data-dir /d"), codes::MISSING_FLAG.as_str());
    // The value is the next word, never the flag itself.
    assert_eq!(code("/opt/kq/bin/qa-gate status --session-id --data-dir /d"), codes::INVALID_SESSION_ID.as_str());
    // The repeated flag: exactly twice.
    let d = "a".repeat(64);
    let record = format!("/opt/kq/bin/qa-gate record --session-id s1 --transcript /t --pointer-id 1 --pointer-digest {d}");
    let one = format!("{record} --cold-boot-report /r1");
    let e = check_command(&one, &dir()).unwrap_err();
    assert_eq!(e.code(), codes::MISSING_FLAG.as_str());
    assert_eq!(e.message(), "--cold-boot-report is required 2 times");
    let two = format!("{one} --cold-boot-report /r2");
    assert_eq!(accepted(&two).args.iter().filter(|(f, _)| *f == "--cold-boot-report").count(), 2);
    assert_eq!(code(&format!("{two} --cold-boot-report /r3")), codes::DUPLICATE_FLAG.as_str());
    let e = check_command("/opt/kq/bin/qa-gate status", &dir()).unwrap_err();
    assert_eq!(e.message(), "--session-id is required");
    // pointer-publish: exactly one of --content-file and --restore-from.
    let base = format!("/opt/kq/bin/pointer-publish --pointer-id 1 --lock-message-id 2 --expected-pointer-digest {d} --rollback-file /r");
    assert_eq!(code(&base), codes::FLAG_CONFLICT.as_str());
    assert_eq!(code(&format!("{base} --content-file /c --restore-from /a")), codes::FLAG_CONFLICT.as_str());
    assert_eq!(accepted(&format!("{base} --restore-from /a")).helper, "pointer-publish");
    // The gate needs a target; other memory-latch forms do not.
    let cp = format!("sha256:{d}");
    assert_eq!(
        code(&format!("/opt/kq/bin/memory-latch gate --action-file /a --checkpoint {cp} --intended /i --result /r")),
        codes::MISSING_FLAG.as_str()
    );
}

fn value(kind: Kind, v: &str) -> std::result::Result<(), String> {
    let spec = ArgSpec { flag: Flag::value("--x"), kind, required: false };
    check_value(&spec, v).map_err(|e| e.code().to_owned())
}

#[test]
fn every_value_kind_at_its_bounds() {
    let hex = "0123456789abcdef".repeat(4);
    assert_eq!(value(Kind::MemoryId, "7"), Ok(()));
    assert_eq!(value(Kind::MemoryId, "0"), Err(codes::INVALID_ID.into()));
    assert_eq!(value(Kind::MessageId, "x"), Err(codes::INVALID_ID.into()));
    assert_eq!(value(Kind::MessageId, "12"), Ok(()));
    assert_eq!(value(Kind::Digest, &hex), Ok(()));
    assert_eq!(value(Kind::Digest, &hex.to_uppercase()), Err(codes::INVALID_DIGEST.into()));
    assert_eq!(value(Kind::SessionId, "s-1"), Ok(()));
    assert_eq!(value(Kind::SessionId, "-s"), Err(codes::INVALID_SESSION_ID.into()));
    assert_eq!(value(Kind::Switch, "anything"), Ok(()));
    assert_eq!(value(Kind::Path, "/a/b"), Ok(()));
    assert_eq!(value(Kind::Path, "/a/../b"), Err(codes::PATH_TRAVERSAL.into()));
    assert_eq!(value(Kind::Path, "/a/./b"), Err(codes::PATH_TRAVERSAL.into()));
    assert_eq!(value(Kind::Path, "a/b"), Err(codes::INVALID_PATH.into()));
    assert_eq!(value(Kind::Text, &"é".repeat(2000)), Ok(()));
    assert_eq!(value(Kind::Text, &"é".repeat(2001)), Err(codes::INVALID_VALUE.into()));
    assert_eq!(value(Kind::Text, ""), Err(codes::INVALID_VALUE.into()));
    assert_eq!(value(Kind::Text, "a\u{7f}b"), Err(codes::INVALID_VALUE.into()));
    assert_eq!(value(Kind::Word, &"a".repeat(256)), Ok(()));
    assert_eq!(value(Kind::Word, &"a".repeat(257)), Err(codes::INVALID_VALUE.into()));
    assert_eq!(value(Kind::Word, ""), Err(codes::INVALID_VALUE.into()));
    assert_eq!(value(Kind::Word, "a;b"), Err(codes::INVALID_VALUE.into()));
    assert_eq!(value(Kind::Word, "127.0.0.1:0"), Ok(()));
    assert_eq!(value(Kind::Number, &"9".repeat(19)), Ok(()));
    assert_eq!(value(Kind::Number, &"9".repeat(20)), Err(codes::INVALID_VALUE.into()));
    assert_eq!(value(Kind::Number, ""), Err(codes::INVALID_VALUE.into()));
    assert_eq!(value(Kind::Number, "1e3"), Err(codes::INVALID_VALUE.into()));
    assert_eq!(value(Kind::Choice(&["low", "high"]), "high"), Ok(()));
    assert_eq!(value(Kind::Choice(&["low", "high"]), "medium"), Err(codes::INVALID_VALUE.into()));
    assert_eq!(value(Kind::TaggedDigest, &format!("sha256:{hex}")), Ok(()));
    assert_eq!(value(Kind::TaggedDigest, &hex), Err(codes::INVALID_DIGEST.into()));
    assert_eq!(value(Kind::TaggedDigest, "sha256:abc"), Err(codes::INVALID_DIGEST.into()));
}

#[test]
fn helper_dir_rules() {
    assert_eq!(dir().helper("qa-gate"), "/opt/kq/bin/qa-gate");
    assert_eq!(dir().path(), Path::new(ROOT));
    assert_eq!(HelperDir::new(Path::new("/opt/k q/bin")).unwrap_err().code(), codes::ROOT_UNKNOWN.as_str());
    assert_eq!(HelperDir::new(Path::new("/opt/k$q/bin")).unwrap_err().code(), codes::ROOT_UNKNOWN.as_str());
    assert_eq!(HelperDir::new(Path::new("opt/bin")).unwrap_err().code(), codes::ROOT_UNKNOWN.as_str());
    let here = std::env::current_exe().unwrap().canonicalize().unwrap();
    if let Ok(d) = HelperDir::new(std::env::current_exe().unwrap().canonicalize().unwrap().parent().unwrap()) {
        assert_eq!(d.path(), here.parent().unwrap());
    }
}

#[test]
fn verdicts() {
    assert!(matches!(guard_line(STATUS, Some(&dir())), Verdict::Helper(c) if c.subcommand == "status"));
    assert!(guard_line(STATUS, Some(&dir())).allowed());
    // Trailing spaces and newlines are not words.
    assert!(matches!(guard_line(&format!("{STATUS} \n"), Some(&dir())), Verdict::Helper(_)));
    assert!(guard_line("ls", Some(&dir())).allowed());
    assert!(!guard_line("/opt/kq/bin/qa-gate status", Some(&dir())).allowed());
    assert!(!guard_line(STATUS, None).allowed());
    assert!(guard_line("ls", None).allowed());
}

/// Each line is caught by exactly one rule of [`reaches_helper`].
#[test]
fn each_rule_of_the_guard_alone() {
    // A word naming the helper directory itself or a file in it.
    assert!(denied("ls /opt/kq/bin"));
    assert!(denied("echo a /opt/kq/bin/x"));
    assert!(denied("true;/opt/kq/bin/x"));
    assert!(denied("X=/opt/kq/bin/anything"));
    // ... also once quotes are removed (a root whose parent is "/", so the
    // plugin-root rule cannot catch it).
    let bin = HelperDir::new(Path::new("/bin")).unwrap();
    assert!(!guard_line("cat '/bin/x'", Some(&bin)).allowed());
    assert!(guard_line("cat '/etc/hosts'", Some(&bin)).allowed());
    assert!(guard_line("ls /etc", Some(&bin)).allowed());
    // A quoted or escaped word that names an executable.
    assert!(denied("echo q\"a\"-gate"));
    assert!(unrelated("echo 'hello'"));
    // A quoted word under the plugin root; unquoted it is just a path.
    assert!(denied("cat '/opt/kq/x'"));
    assert!(unrelated("cat /opt/kq/x"));
    // Globs: a bare name, a relative directory, a pattern directory.
    assert!(denied("ls qa-gat?"));
    assert!(denied("ls bin/qa-gat?"));
    assert!(denied("ls /opt/k?/bin/qa-gat?"));
    assert!(unrelated("ls /usr/bin/qa-gat?"));
    assert!(unrelated("ls *.rs"));
    // An over-long glob word is assumed to match.
    assert!(denied(&format!("ls {}*", "a".repeat(1024))));
    assert!(unrelated(&format!("ls {}*", "a".repeat(1023))));
    // Expansions with a name fragment (any case) or the plugin root.
    assert!(denied("echo $HOME/pointer"));
    assert!(denied("echo $X/POINTER"));
    assert!(denied("echo `id` kijito"));
    assert!(denied("echo $X /opt/kq/y"));
    assert!(unrelated("grep pointer README.md"));
    assert!(unrelated("echo $HOME"));
}

#[test]
fn without_a_known_root() {
    assert!(reaches_helper("ls /usr/bin/qa-gat?", None));
    assert!(reaches_helper("ls */qa-gat?", None));
    assert!(!reaches_helper("ls /qa-gat?", None));
    assert!(!reaches_helper("ls /opt/kq/bin/x", None));
    assert!(reaches_helper("qa-gate status", None));
}

#[test]
fn glob_and_class_edges() {
    assert!(!glob_match(b"a?b", b"a/b"));
    assert!(glob_match(b"a?b", b"axb"));
    assert!(glob_match(b"a*c", b"abbc"));
    assert!(!glob_match(b"a*c", b"abbd"));
    assert!(!glob_match(b"a*c", b"ab/c"));
    assert!(glob_match(b"abc**", b"abc"));
    assert!(!glob_match(b"abcd", b"abc"));
    assert!(!glob_match(b"ab", b"abc"));
    assert!(glob_match(b"", b""));
    assert!(!glob_match(b"", b"a"));
    // Unterminated class: a literal `[`.
    assert!(glob_match(b"[ab", b"[ab"));
    assert!(!glob_match(b"[ab", b"xab"));
    assert!(!glob_match(b"[ab", b"aab"));
    // Negation, a leading `]`, ranges, a trailing `-`.
    assert!(glob_match(b"[^x]a-gate", b"qa-gate"));
    assert!(!glob_match(b"[!q]a-gate", b"qa-gate"));
    assert!(glob_match(b"[]]", b"]"));
    assert!(!glob_match(b"[]]", b"a"));
    for (c, m) in [(b'a', false), (b'b', true), (b'c', true), (b'd', true), (b'e', false)] {
        assert_eq!(glob_match(b"[b-d]", &[c]), m, "{}", c as char);
    }
    assert!(glob_match(b"[a-]", b"-"));
    assert!(glob_match(b"[a-]", b"a"));
    assert!(!glob_match(b"[a-]", b"b"));
    assert!(glob_match(b"[ab]c", b"ac"));
    assert!(glob_match(b"[ab]c", b"bc"));
    assert!(!glob_match(b"[ab]c", b"cc"));
    assert!(!glob_match(b"[ab]c", b"a"));
    assert_eq!(class_match(b"[ab]", b'a'), Some((true, 4)));
    assert_eq!(class_match(b"[!ab]", b'a'), Some((false, 5)));
    assert_eq!(class_match(b"[a-c]x", b'b'), Some((true, 5)));
    assert_eq!(class_match(b"[ab", b'a'), None);
    // The negation mark is not a member, nor is the opening bracket.
    assert!(glob_match(b"[!q]", b"!"));
    assert!(glob_match(b"[!q]", b"["));
    assert!(!glob_match(b"[!q]", b"q"));
    // A negated range, then more pattern.
    assert!(glob_match(b"[!a-c]x", b"dx"));
    assert!(!glob_match(b"[!a-c]x", b"bx"));
    // An unterminated range is a literal.
    assert!(glob_match(b"[a-", b"[a-"));
    assert!(!glob_match(b"[a-", b"b"));
}

#[test]
fn mentions_by_segment_and_wrapper() {
    assert!(mentions_helper("qa-gate status"));
    assert!(mentions_helper("FOO=1 BAR=2 qa-gate"));
    assert!(!mentions_helper("--x=1 qa-gate"));
    assert!(mentions_helper("a\nqa-gate"));
    assert!(mentions_helper("nice -n 5 qa-gate"));
    assert!(!mentions_helper("echo qa-gate"));
    assert!(!mentions_helper("/x/qa-gatex"));
    assert!(!mentions_helper(""));
}

/// The guard reads brace expansion through the one shell model
/// ([`crate::shell`]): every word it makes, and a bound that says so.
#[test]
fn brace_expansion_is_followed_to_every_word() {
    let argv = |line: &str| crate::shell::parse(line, &std::collections::HashMap::new()).commands.remove(0).argv;
    assert_eq!(argv("a{b,c}d"), ["abd", "acd"]);
    assert_eq!(argv("{x,{y,z}}{1,2}"), ["x1", "x2", "y1", "y2", "z1", "z2"]);
    // No comma at the group's depth: not an expansion.
    assert_eq!(argv("{abc}"), ["{abc}"]);
    assert_eq!(argv("a{b"), ["a{b"]);
    // Bounded: 2^40 words are not all made, and a cut-short expansion says so.
    let many = crate::shell::parse(&"{a,b}".repeat(40), &std::collections::HashMap::new());
    assert_eq!(many.commands[0].argv.len(), crate::shell::MAX_BRACE_WORDS);
    assert!(many.exceeded);
    assert_eq!(argv(&"{a,b}".repeat(8)).len(), 256);
    // A quoted brace is not expanded.
    assert_eq!(argv("'{qa-gate,x}'"), ["{qa-gate,x}"]);
}

/// `cd <root> && {bin/session-hook,--host} claude ...` ran the
/// UserPromptSubmit hook by hand past the guard.
#[test]
fn a_helper_inside_a_brace_expansion_is_seen_and_denied() {
    let d = dir();
    for line in [
        "cd /opt/kq && {bin/session-hook,--host} claude --expect UserPromptSubmit",
        "{/opt/kq/bin/qa-gate,record} --session-id s",
        "echo x | {./session-hook,--host} codex",
        "a{b,/opt/kq/bin/memory-latch}",
    ] {
        assert!(reaches_helper(line, Some(&d)), "{line}");
        assert!(matches!(guard_line(line, Some(&d)), Verdict::Deny(_)), "{line}");
    }
    // A brace expansion too large to follow is held to the grammar.
    assert!(reaches_helper(&format!("echo {}{{x,qa-gate}}", "{a,b}".repeat(20)), Some(&d)));
    // A brace word naming nothing of ours stays unrelated.
    assert!(!reaches_helper("cp src/{a,b}.rs /tmp", Some(&d)));
    assert!(matches!(guard_line("mkdir -p build/{x,y}", Some(&d)), Verdict::Unrelated));
}

/// ANSI-C quoting spells a helper's name in escapes (`$'\x71a-gate'`):
/// the shell model decodes it before the guard judges the words.
#[test]
fn ansi_c_quoting_is_decoded_before_judging() {
    let words = |line: &str| -> Vec<String> {
        crate::shell::parse(line, &std::collections::HashMap::new()).commands.into_iter().flat_map(|c| c.argv).collect()
    };
    assert_eq!(words("$'\\x71a-gate' status"), ["qa-gate", "status"]);
    assert_eq!(words("$'\\161a-gate'"), ["qa-gate"]);
    assert_eq!(words("$'\\u0071a-gate'"), ["qa-gate"]);
    assert_eq!(words("a$'b\\'c'd"), ["ab'cd"]);
    assert_eq!(words("echo 'plain'"), ["echo", "plain"]);
    let d = dir();
    for line in ["$'\\x71a-gate' status", "$'/opt/kq/bin/\\x71a-gate' record", "x=$'\\x73ession-hook'; $x --host claude"] {
        assert!(reaches_helper(line, Some(&d)), "{line}");
        assert!(matches!(guard_line(line, Some(&d)), Verdict::Deny(_)), "{line}");
    }
    assert!(!reaches_helper("printf $'a\\tb\\n'", Some(&d)));
}

/// Rule 2 alone: words only the shell model makes (an assignment followed
/// into a redirection target, a brace alternative under the plugin root, a
/// fragment spelled in escapes), and a line it cannot read whole.
#[test]
fn the_words_the_shell_model_makes_are_judged() {
    let d = dir();
    assert!(denied("A=/op; B=t/kq; echo hi > $A$B/y"));
    assert!(denied("cat $'\\x2fopt/kq/x'"));
    assert!(denied("echo $'\\x70ointer'"));
    let mut nested = "ls".to_owned();
    for _ in 0..(crate::shell::MAX_DEPTH + 2) {
        nested = format!("echo $({nested})");
    }
    assert!(denied(&nested));
    // Written as is, a plain word is judged on the raw text alone.
    assert!(unrelated("grep qa-gate README.md"));
    assert!(unrelated("cat /opt/kq/x"));
    assert!(!reaches_helper("cp src/{a,b}.rs /tmp", Some(&d)));
}

/// A glob without a directory part names a helper only as the program
/// (`*`, `sudo q*-gate`, `xargs *`); as an argument it is ordinary work
/// (`ls *`, `git add *`, the `*** Begin Patch` lines of a patch Codex applies
/// through its shell), which the guard used to deny.
#[test]
fn a_bare_glob_counts_only_in_program_position() {
    let patch = "apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: a.txt\n+hi\n*** End Patch\nEOF";
    // quoted, or after a `NAME=`: `find . -name 'of=*'` (the fifth attacking pass)
    for line in ["ls *", "echo ***", "git add *", "rm -rf *", "ls src/*.rs", "ls ?", patch, "find . -name 'of=*'", "ls \"*\" \\?"] {
        assert!(unrelated(line), "{line:?}");
    }
    for line in [
        "*",
        "sudo q*-gate status",
        "env X=1 *",
        "cat *.txt | xargs *",
        "nice -n 5 ?a-gate status",
        &format!("{ROOT}/q*-gate status"),
        &format!("ls {ROOT}/*"),
    ] {
        assert!(denied(line), "{line:?}");
    }
}

#[test]
fn a_helper_checks_its_own_form_with_the_guards_rule() {
    let given = |flags: &[&'static str]| flags.iter().map(|f| (*f, "x".to_owned())).collect::<Vec<_>>();
    let code = |flags: &[&'static str]| check_form("pointer-publish", &given(flags)).map_err(|e| e.code().to_owned());
    let publish = ["--pointer-id", "--lock-message-id", "--expected-pointer-digest", "--rollback-file"];
    assert_eq!(code(&[&publish[..], &["--content-file"]].concat()), Ok(()));
    assert_eq!(code(&[&publish[..], &["--restore-from"]].concat()), Ok(()));
    for source in [&[][..], &["--content-file", "--restore-from"][..]] {
        assert_eq!(code(&[&publish[..], source].concat()), Err(codes::FLAG_CONFLICT.as_str().to_owned()), "{source:?}");
    }
    assert_eq!(code(&["--release-lease", "--lock-message-id", "--token-file"]), Ok(()));
    for other in ["--pointer-id", "--expected-pointer-digest", "--content-file", "--restore-from", "--rollback-file"] {
        assert_eq!(code(&["--release-lease", "--lock-message-id", other]), Err(codes::FLAG_CONFLICT.as_str().to_owned()), "{other}");
    }
    // Required flags stay the argv parser's (missing_flag), not this check's.
    assert_eq!(code(&["--content-file"]), Ok(()));
}

#[test]
fn a_journaling_latch_command_is_bound_to_the_calling_session() {
    let line = |sub: &str, s: &str| format!("{ROOT}/memory-latch {sub} --workspace /w --session-id {s} --data-dir /d");
    let consent = |s: &str| {
        format!("{ROOT}/memory-latch consent request --action-file /a --summary x --risk low --workspace /w --session-id {s} --data-dir /d")
    };
    assert!(session_bound(&accepted(&consent("s1")), "s1").is_ok());
    assert_eq!(session_bound(&accepted(&consent("s2")), "s1").unwrap_err().code(), codes::SESSION_MISMATCH.as_str());
    assert!(session_bound(&accepted(&line("recover", "s1")), "s1").is_ok());
    assert_eq!(session_bound(&accepted(&line("recover", "s2")), "s1").unwrap_err().code(), codes::SESSION_MISMATCH.as_str());
    // without --session-id (the user journal) and other helpers' session flags: not bound here
    assert!(session_bound(&accepted(&format!("{ROOT}/memory-latch recover --workspace /w")), "s1").is_ok());
    assert!(session_bound(&accepted(&format!("{ROOT}/qa-gate status --session-id s2 --data-dir /d")), "s1").is_ok());
}
