//! The policy runs on every tool call inside a hook built with
//! `panic = "abort"`: no input may make it panic, loop or grow without
//! bound. Random command lines over the shell's special characters, random
//! Unicode, and random tool names and inputs.

use kijito_policy::{classify, decide, ConsentTarget, Env, LatchMode, Modes, ToolCall, Wake};
use proptest::prelude::*;

fn env() -> Env {
    Env {
        home: "/home/u".into(),
        cwd: "/home/u/p".into(),
        config_dir: Some("/home/u/.config/kijito-qa".into()),
        data_dir: Some("/d".into()),
        plugin_roots: vec!["/opt/k".into()],
        ..Env::default()
    }
}

fn run(tool: &str, input: serde_json::Value) {
    let cls = classify(&ToolCall::parse(tool, &input), &env());
    let target =
        ConsentTarget { helper_dir: "/opt/k/bin", workspace: "/home/u/p", action_file: "/home/u/a.json", session_id: "s", data_dir: "/d" };
    for latch in [LatchMode::Normal, LatchMode::SilentWitness] {
        let _ = decide(&cls, &Modes { wake: Wake::Clear, latch, qa_frozen: true, consent_confirmed: false }, &target);
    }
}

const PIECES: &[&str] = &[
    "rm",
    " ",
    "-rf",
    "'",
    "\"",
    "\\",
    "$'",
    "\\x7",
    "$(",
    ")",
    "`",
    "{",
    "}",
    ",",
    ";",
    "&&",
    "||",
    "|",
    "&",
    "(",
    "<<",
    "<<-",
    "<<<",
    "EOF",
    "\n",
    ">",
    ">>",
    "2>&1",
    "$X",
    "${",
    "X=",
    "bash -c ",
    "sudo -iu ",
    "xargs ",
    "find . -exec ",
    "\\;",
    "tmux ",
    "send-keys",
    "é",
    "💥",
    "\t",
    "#",
    "=",
    "-",
    "--",
    "*",
    "~/",
    "psql -c ",
    "DROP",
    "git push ",
    "-f",
    "/dev/pts/1",
    ".memory-latch/",
    "for ",
    " in ",
    "do ",
    "done",
    "case ",
    "esac",
    "!",
    "$((",
    "))",
    "<(",
    ">(",
];

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, max_shrink_iters: 2000, ..ProptestConfig::default() })]

    #[test]
    fn shell_lines_of_special_pieces(parts in proptest::collection::vec(0..PIECES.len(), 0..60)) {
        let line: String = parts.iter().map(|i| PIECES[*i]).collect();
        run("Bash", serde_json::json!({ "command": line }));
    }

    #[test]
    fn arbitrary_unicode_lines(line in "\\PC{0,200}") {
        run("Bash", serde_json::json!({ "command": line.clone() }));
        run("apply_patch", serde_json::json!({ "input": line.clone() }));
        run(&format!("mcp__{line}"), serde_json::json!({}));
        run("Write", serde_json::json!({ "file_path": line }));
    }
}

/// Lines past a bound are denied as unreadable (`tripwire_shell_unparsed`);
/// lines within them are read whole.
#[test]
fn deep_and_long_lines_stay_bounded() {
    for (line, past_a_bound) in [
        ("$(".repeat(5000), true),
        ("`".repeat(5001), true), // a program name computed by a command
        // 2^40 words: the expansion is cut short, so the line is not read whole
        ("{a,b}".repeat(40), true),
        ("{a,b}".repeat(8), false),
        ("bash -c ".repeat(200) + "rm -rf x", false),
        ("x;".repeat(100_000), true),
        ("'".to_owned() + &"a".repeat(300_000), true),
        (format!("X={}; ", "a".repeat(4000)) + &"bash -c \"$X$X$X$X$X$X$X$X$X$X\"; ".repeat(500), true),
        ("{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx ".repeat(4000), true),
    ] {
        let cls = classify(&ToolCall::parse("Bash", &serde_json::json!({ "command": line })), &env());
        let tripped = cls.tripwires.iter().any(|t| t.code == kijito_policy::classify::tripwires::SHELL_UNPARSED);
        assert_eq!(tripped, past_a_bound, "{}: {:?}", kijito_protocol::ids::clip(&line), cls.tripwires);
        run("Bash", serde_json::json!({ "command": line }));
    }
}
