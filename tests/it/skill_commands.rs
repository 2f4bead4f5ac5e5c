//! Every command the agent is told to run passes the PreToolUse command
//! guard: the installed skills (rendered for both hosts by
//! install.sh's own render program, as tests/it/skills.rs does), the text the
//! real hook binaries give the model (SessionStart's command block, the
//! withdrawn-pass text and its command block, the attested re-entry, the
//! continuity-break recovery context, the one-step reminder, the consent
//! confirmation), the real `memory-latch recover` Silent Witness incident,
//! the latch's fallback texts and the policy's deny reasons.
//!
//! What counts as a command: a backtick span or a line whose first word is
//! a toolkit executable (an absolute path ending in `/<name>`, or the bare
//! `<name>`) and that has more words. An absolute command, its
//! `<PLACEHOLDERS>` filled with a value of the flag's kind, must be a helper
//! command of the root that emitted it (`kijito_protocol::command::guard_line`,
//! the one decision the PreToolUse hook and `qa-gate check-command` use). A
//! short reference (`qa-gate record`) is allowed only where the same text
//! spells that helper and subcommand out as an absolute command the guard
//! accepts; anything else is denied (`command_program_not_absolute` and the
//! like), and the test fails naming it.
#![allow(clippy::unwrap_used)]

use crate::support;
use support::gate::{helper_dir, Cycle, PRECOMPACT};

use kijito_protocol::command::{self, HelperDir, Kind, Verdict};
use serde_json::json;
use std::path::{Path, PathBuf};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");
const CODEX_S: &str = "01a2295e-6929-7981-9da7-935145fb97be";
const CLAUDE_S: &str = "2208dc6c-1602-4db0-9c33-9125ee25dc44";

/// Helper forms the texts name as what the user or the host runs, never as
/// a step for the agent (the guard denies them from the agent on purpose):
/// `kijito-compact codex`, the user's launcher of a Codex session under the
/// app-server adapter (the hooks say whether "this session runs under" it),
/// and `kijito-local mcp`, the MCP server the host starts.
const NOT_THE_AGENTS: &[&str] = &["kijito-compact codex", "kijito-local mcp"];

fn is_tool(word: &str) -> bool {
    let name = word.rsplit('/').next().unwrap_or(word);
    command::GUARDED_NAMES.contains(&name) && (word == name || word.starts_with('/') || word.starts_with('<'))
}

/// The command candidates of a text: backtick spans, and lines that start
/// with an absolute toolkit executable, that have more words (a wrapped
/// prose line starting with a bare name is prose).
fn candidates(text: &str) -> Vec<String> {
    let spans = text.split('`').skip(1).step_by(2).map(str::trim);
    let lines = text.lines().map(str::trim).filter(|l| l.starts_with('/'));
    let mut out: Vec<String> = Vec::new();
    for c in spans.chain(lines) {
        // a line with inline code is prose (its spans are judged on their own)
        if c.contains('`') {
            continue;
        }
        let mut words = c.split(' ');
        let first = words.next().unwrap_or("");
        if is_tool(first) && words.next().is_some() && !out.iter().any(|o| o == c) && !NOT_THE_AGENTS.contains(&c) {
            out.push(c.to_owned());
        }
    }
    out
}

fn kind_of(helper: &str, flag: &str) -> Option<Kind> {
    let exact = command::GRAMMARS.iter().filter(|g| g.helper == helper).flat_map(|g| g.specs.iter()).find(|s| s.flag.name == flag);
    exact.or_else(|| command::GRAMMARS.iter().flat_map(|g| g.specs.iter()).find(|s| s.flag.name == flag)).map(|s| s.kind)
}

/// Replace each `<PLACEHOLDER>` by a valid value of its flag's kind.
fn fill(line: &str) -> String {
    let words: Vec<&str> = line.split(' ').collect();
    let helper = words[0].rsplit('/').next().unwrap_or("");
    let mut out = Vec::new();
    for (i, w) in words.iter().enumerate() {
        if w.starts_with('<') && w.ends_with('>') && i > 0 {
            let name = w.trim_matches(['<', '>']).to_lowercase().replace('_', "-");
            out.push(match kind_of(helper, words[i - 1]) {
                Some(Kind::MemoryId) => "21813".to_owned(),
                Some(Kind::MessageId) => "1234".to_owned(),
                Some(Kind::Digest) => "ab".repeat(32),
                Some(Kind::SessionId) => CLAUDE_S.to_owned(),
                Some(Kind::Path) => format!("/home/user/data/{name}.json"),
                Some(Kind::Text | Kind::Word) => format!("the-{name}"),
                Some(Kind::Choice(options)) => options[0].to_owned(),
                Some(Kind::TaggedDigest) => format!("sha256:{}", "cd".repeat(32)),
                Some(Kind::Number) => "3600".to_owned(),
                // not a flag's value: left as is, so the guard refuses it
                _ => (*w).to_owned(),
            });
        } else {
            out.push((*w).to_owned());
        }
    }
    out.join(" ")
}

/// Every command in `text` judged against the helpers of `dir`: the
/// failures, and how many commands were judged.
fn judge(label: &str, text: &str, dir: &HelperDir) -> (Vec<String>, usize) {
    let mut bad = Vec::new();
    let mut accepted: Vec<(&'static str, &'static str)> = Vec::new();
    let cands = candidates(text);
    let mut short = Vec::new();
    for c in &cands {
        if !c.starts_with('/') && !c.starts_with('<') {
            short.push(c.clone());
            continue;
        }
        let filled = fill(c);
        match command::guard_line(&filled, Some(dir)) {
            Verdict::Helper(h) => accepted.push((h.helper, h.subcommand)),
            Verdict::Deny(e) => bad.push(format!("{label}: `{c}` is denied: {} ({})", e.code(), e.message())),
            Verdict::Unrelated => bad.push(format!("{label}: `{c}` reaches no helper of {}", dir.path().display())),
        }
    }
    for c in &short {
        let words: Vec<&str> = c.split(' ').collect();
        let sub: Vec<&str> = words[1..].iter().take_while(|w| !w.starts_with('-')).copied().collect();
        let spelled = accepted.iter().any(|(h, s)| *h == words[0] && (s.is_empty() || *s == sub.join(" ")));
        if !spelled {
            let why = match command::guard_line(&fill(c), Some(dir)) {
                Verdict::Deny(e) => format!("{} ({})", e.code(), e.message()),
                v => format!("{v:?}"),
            };
            bad.push(format!("{label}: `{c}` is not absolute and the text spells out no exact command for it: the guard denies it: {why}"));
        }
    }
    (bad, cands.len())
}

fn report(all: Vec<(Vec<String>, usize)>, at_least: usize) {
    let judged: usize = all.iter().map(|(_, n)| n).sum();
    let bad: Vec<String> = all.into_iter().flat_map(|(b, _)| b).collect();
    println!("{judged} commands judged, {} denied", bad.len());
    assert!(bad.is_empty(), "{} command(s) the agent is told to run are denied by the guard:\n{}", bad.len(), bad.join("\n"));
    assert!(judged >= at_least, "only {judged} commands found (expected at least {at_least})");
}

#[test]
fn every_command_in_every_installed_skill_passes_the_guard() {
    let tmp = tempfile::tempdir().unwrap();
    let mut all = Vec::new();
    let mut skills: Vec<PathBuf> =
        std::fs::read_dir(Path::new(ROOT).join("skills")).unwrap().map(|e| e.unwrap().path().join("SKILL.md")).collect();
    skills.sort();
    assert!(skills.iter().any(|s| s.ends_with("memory-latch/SKILL.md")), "{skills:?}");
    for host in ["codex", "claude"] {
        // a real installed layout: the root with its bin/ directory
        let root = tmp.path().join("prefix").join(host);
        std::fs::create_dir_all(root.join("bin")).unwrap();
        let dir = HelperDir::new(&root.join("bin")).unwrap();
        for src in &skills {
            let name = src.parent().unwrap().file_name().unwrap().to_str().unwrap();
            let text =
                support::render_skill(src, &tmp.path().join(format!("{host}-{name}.md")), &root, host).unwrap_or_else(|e| panic!("{e}"));
            let judged = judge(&format!("{host} skill {name}"), &text, &dir);
            if name == "memory-latch" {
                assert!(judged.1 >= 10, "{host} memory-latch skill: only {} commands", judged.1);
            }
            all.push(judged);
        }
    }
    report(all, 40);
}

/// The model-facing text of the real hooks and binaries, emitted against
/// the real root of the built binaries (target/<profile>, where each hook's
/// helper directory is).
#[test]
fn every_command_the_hooks_and_the_latch_emit_passes_the_guard() {
    let bin_dir = helper_dir();
    let dir = HelperDir::new(&bin_dir).unwrap();
    let mut all = Vec::new();

    for (host, s, start, ups, pre, compact_start) in [
        (
            "codex",
            CODEX_S,
            "app-server:SessionStart:startup",
            "app-server:UserPromptSubmit",
            "app-server:PreCompact:auto",
            "app-server:SessionStart:compact",
        ),
        ("claude", CLAUDE_S, "SessionStart(source=startup)", "UserPromptSubmit", "PreCompact(auto)", "SessionStart(source=compact)"),
    ] {
        let c = Cycle::new();
        // SessionStart(startup): the command block of a configured pointer
        let startup = c.session_hook(host, "SessionStart", &c.stdin(host, start, s, None, None)).expect("SessionStart context");
        assert!(startup.contains(&format!("{}/pointer-publish ", bin_dir.display())), "{startup}");
        all.push(judge(&format!("{host} SessionStart(startup)"), &startup, &dir));
        // a new turn after record: the withdrawn text and its command block
        c.record(s);
        let withdrawn =
            c.session_hook(host, "UserPromptSubmit", &c.stdin(host, ups, s, Some("carry on"), None)).expect("withdrawn context");
        assert!(withdrawn.contains("pass_invalidated_by_new_turn"), "{withdrawn}");
        all.push(judge(&format!("{host} UserPromptSubmit after record"), &withdrawn, &dir));
        // an attested compaction: the re-entry text with its snapshot command
        c.record(s);
        c.hook(&PRECOMPACT, host, &[], &c.stdin(host, pre, s, None, None));
        let reentry = c.session_hook(host, "SessionStart", &c.stdin(host, compact_start, s, None, None)).expect("re-entry");
        assert!(reentry.contains("ATTESTED") && reentry.contains(&format!("{}/pointer-snapshot ", bin_dir.display())), "{reentry}");
        all.push(judge(&format!("{host} SessionStart(compact)"), &reentry, &dir));
    }

    // memory-latch through the real prompt hook, on a latch in the session's cwd
    for host in ["codex", "claude"] {
        let e = support::latch::env();
        e.ok(&["init", "--objective", "ship", "--next-step", "write-the-tests"]);
        let forgot = e.user_says(host, "you forgot what we were doing").expect("recovery context");
        let recover = format!(
            "{}/memory-latch recover --workspace {} --session-id s1 --data-dir {}",
            bin_dir.display(),
            e.ws.display(),
            e.w.data_arg()
        );
        assert!(forgot.contains(&format!("`{recover}`")), "{forgot}");
        all.push(judge(&format!("{host} continuity break"), &forgot, &dir));

        // a consent request confirmed by the user's own message
        let action = e.file("action.json", "{\"tool_name\":\"Bash\",\"tool_input\":{\"command\":\"rm -rf build\"}}\n");
        let out = e.ok(&["consent", "request", "--action-file", &action, "--summary", "delete-build", "--risk", "low"]);
        let token = out.split_whitespace().find(|w| w.starts_with("ACT-")).unwrap_or_else(|| panic!("no token in {out}")).to_owned();
        all.push(judge(&format!("{host} consent request"), &out, &dir));
        let confirmed = e.user_says(host, &token).expect("confirmation context");
        assert!(confirmed.contains("the USER confirmed consent token"), "{confirmed}");
        all.push(judge(&format!("{host} consent confirmed"), &confirmed, &dir));

        // one-step mode (context fatigue): the reminder names the exact checkpoint
        let mut cfg = kijito_latch::Config::new(&e.ws);
        cfg.boot_id_file = e.boot.clone();
        cfg.heads_dir = Some(e.w.home.join("latch-heads"));
        let l = kijito_latch::Latch::open(&cfg).unwrap();
        let fatigue = l
            .turn_ended(&kijito_protocol::ids::SessionId::parse("other-session").unwrap(), support::gate::now_ms() as u64, Some(0.9))
            .unwrap();
        assert!(fatigue.written.is_some());
        let reminder = e.user_says(host, "carry on").expect("one-step reminder");
        let checkpoint = format!("`{}/memory-latch checkpoint --workspace {} --next-step <NEXT_STEP>`", bin_dir.display(), e.ws.display());
        assert!(reminder.contains("ONE-STEP MODE") && reminder.contains(&checkpoint), "{reminder}");
        all.push(judge(&format!("{host} one-step reminder"), &reminder, &dir));

        // Silent Witness: the real recover's incident names the exact reseed command
        let mut incident = String::new();
        for _ in 0..5 {
            incident = String::from_utf8(e.latch(&["recover"]).stdout).unwrap();
            if incident.starts_with("SILENT WITNESS") {
                break;
            }
        }
        let reseed = format!("`{}/memory-latch reseed --workspace {}`", bin_dir.display(), e.ws.display());
        assert!(incident.starts_with("SILENT WITNESS") && incident.contains(&reseed), "{incident}");
        all.push(judge(&format!("{host} Silent Witness incident"), &incident, &dir));
    }

    // the latch's texts where no exact command can be built name none
    use kijito_latch::entry::OneStep;
    let mut fallback =
        vec![kijito_latch::recover::hook_context("you forgot", None), kijito_latch::recover::incident_lines("b", 3, 3, None).join("\n")];
    for mode in [OneStep::Ready, OneStep::StepTaken] {
        for step in ["write the tests", "none"] {
            fallback.push(kijito_latch::knobs::one_step_context(mode, step, None));
        }
    }
    for t in &fallback {
        all.push(judge("latch fallback text", t, &dir));
    }
    for t in kijito_hooks::messages::ALL {
        all.push(judge("hook systemMessage", t, &dir));
    }

    // the policy's deny reasons, pointed at this root
    use kijito_policy::decide::{decide, ConsentTarget, LatchMode, Modes, Wake};
    let bin_s = bin_dir.display().to_string();
    let target = ConsentTarget {
        helper_dir: &bin_s,
        workspace: "/w/project",
        action_file: "/w/project/.memory-latch/actions/a.json",
        session_id: CLAUDE_S,
        data_dir: "/d",
    };
    let env = kijito_policy::classify::Env { home: "/home/u".into(), cwd: "/w/project".into(), ..Default::default() };
    let mut denied = 0;
    for (tool, input, latch, frozen) in [
        ("Bash", json!({"command": "rm -rf build"}), LatchMode::Normal, false),
        ("Bash", json!({"command": "git push --force origin main"}), LatchMode::Normal, false),
        ("Write", json!({"file_path": "/w/project/src/a.rs", "content": "x"}), LatchMode::SilentWitness, false),
        ("Write", json!({"file_path": "/w/project/src/a.rs", "content": "x"}), LatchMode::Degraded, false),
        ("Write", json!({"file_path": "/w/project/src/a.rs", "content": "x"}), LatchMode::OneStepWithoutStep, false),
        ("mcp__kijito__kijito_remember", json!({"content": "x"}), LatchMode::Absent, true),
    ] {
        let cls = kijito_policy::classify(&kijito_policy::ToolCall::parse(tool, &input), &env);
        if let kijito_policy::decide::Decision::Deny { reason, .. } =
            decide(&cls, &Modes { wake: Wake::Clear, latch, qa_frozen: frozen, consent_confirmed: false }, &target)
        {
            denied += 1;
            all.push(judge(&format!("policy deny {tool} {latch:?}"), &reason.replace(" TEXT", " <NEXT_STEP>"), &dir));
        }
    }
    assert_eq!(denied, 6, "every sample call is denied in its mode");
    report(all, 30);
}

/// The test's own rule catches what it must: a bare helper command, a
/// command of another root, a placeholder left where no value fits, and a
/// short reference that the text does not spell out.
#[test]
fn the_judge_catches_denied_commands() {
    let dir = HelperDir::new(Path::new("/opt/kq/bin")).unwrap();
    let ok = "run `/opt/kq/bin/memory-latch recover --workspace /w` now";
    assert_eq!(judge("t", ok, &dir), (vec![], 1));
    for bad in [
        "run `memory-latch recover` now",
        "run `/other/bin/memory-latch recover --workspace /w`",
        "run `/opt/kq/bin/memory-latch consent confirm --token ACT-ABCDEF`",
        "    /opt/kq/bin/memory-latch checkpoint --next-step \"two words\"",
        "write `<root>/bin/memory-latch recover --workspace <the workspace>`",
    ] {
        let (b, n) = judge("t", bad, &dir);
        assert_eq!((b.len(), n), (1, 1), "{bad}: {b:?}");
    }
    // a short reference spelled out in the same text passes
    let spelled = "after `qa-gate record`:\n  /opt/kq/bin/qa-gate record --session-id <SESSION_ID> --transcript <TRANSCRIPT_PATH> --data-dir <DATA_DIR> --pointer-id <POINTER_ID> --pointer-digest <POINTER_DIGEST> --cold-boot-report <A> --cold-boot-report <B>";
    assert_eq!(judge("t", spelled, &dir).0, Vec::<String>::new());
    // a bare name alone is a mention, not a command
    assert_eq!(judge("t", "the `memory-latch` record", &dir), (vec![], 0));
}
