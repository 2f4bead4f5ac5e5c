//! The installed skills: rendered for each host by the very render program of
//! install.sh (its `render()` heredoc, run with python3), every helper command
//! line in them passes the section 8 command grammar (`<PLACEHOLDERS>` filled
//! with values of the flag's kind), no `@TOKEN@` is left, each host's copy
//! names only its own verifier mechanism, and every subagent tool or field a
//! skill names exists in the tool schemas the real hosts send to the model
//! (fixtures/hosts/tool-schemas, recorded by its record.py with tests/hosts).
#![allow(clippy::unwrap_used)]

use crate::support;
use kijito_protocol::command::{self, HelperDir, Kind};
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

fn skills() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> =
        std::fs::read_dir(Path::new(ROOT).join("skills")).unwrap().map(|e| e.unwrap().path().join("SKILL.md")).collect();
    v.sort();
    assert!(v.len() >= 2);
    v
}

fn kind_of(flag: &str) -> Option<Kind> {
    command::GRAMMARS.iter().flat_map(|g| g.specs.iter()).find(|s| s.flag.name == flag).map(|s| s.kind)
}

/// Replace each `<PLACEHOLDER>` by a valid value of its flag's kind.
fn fill(line: &str) -> String {
    let words: Vec<&str> = line.split(' ').collect();
    let mut out = Vec::new();
    for (i, w) in words.iter().enumerate() {
        if w.starts_with('<') && w.ends_with('>') {
            let flag = words[i - 1];
            let v = match kind_of(flag).unwrap_or_else(|| panic!("placeholder {w} after {flag}, which no grammar documents: {line}")) {
                Kind::MemoryId => "21813".to_owned(),
                Kind::MessageId => "1234".to_owned(),
                Kind::Digest => "ab".repeat(32),
                Kind::SessionId => "2208dc6c-1602-4db0-9c33-9125ee25dc44".to_owned(),
                Kind::Path => format!("/home/user/data/{}.json", w.trim_matches(['<', '>']).to_lowercase()),
                // one-word free text, as the memory-latch skill says to write it
                Kind::Text => format!("the-{}", w.trim_matches(['<', '>']).to_lowercase().replace('_', "-")),
                Kind::Choice(options) => options[0].to_owned(),
                Kind::TaggedDigest => format!("sha256:{}", "cd".repeat(32)),
                Kind::Number => "3600".to_owned(),
                other => panic!("placeholder {w} after {flag} of kind {other:?}: no sample value in this test"),
            };
            out.push(v);
        } else {
            out.push((*w).to_owned());
        }
    }
    out.join(" ")
}

#[test]
fn every_command_in_every_installed_skill_passes_the_grammar() {
    let tmp = tempfile::tempdir().unwrap();
    let mut total = 0;
    for host in ["codex", "claude"] {
        let root = tmp.path().join("prefix").join(host);
        let bin = root.join("bin");
        let dir = HelperDir::new(&bin).unwrap();
        for src in skills() {
            let dest = tmp.path().join(format!("{host}-{}.md", src.parent().unwrap().file_name().unwrap().to_str().unwrap()));
            let text = support::render_skill(&src, &dest, &root, host).unwrap();
            assert!(!text.contains("@BEGIN-") && !text.contains("@END-"), "{}", src.display());
            let left: Vec<&str> = text
                .split('@')
                .skip(1)
                .step_by(2)
                .filter(|t| !t.is_empty() && t.chars().all(|c| c.is_ascii_uppercase() || c == '_' || c == '-'))
                .collect();
            assert!(left.is_empty(), "unreplaced tokens {left:?} in {host} {}", src.display());
            let prefix = format!("{}/", bin.display());
            let commands: Vec<&str> = text.lines().map(str::trim).filter(|l| l.starts_with(&prefix)).collect();
            // every mention of a helper path is such a command line
            assert_eq!(text.matches(&prefix).count(), commands.len(), "{host} {}: a helper path outside a command line", src.display());
            for c in &commands {
                // `kijito-compact` joins the grammar when its branch lands; until
                // then its one line must have exactly the documented shape.
                let compact = format!("{prefix}kijito-compact ");
                if c.starts_with(&compact) && !command::GRAMMARS.iter().any(|g| g.helper == "kijito-compact") {
                    assert_eq!(c[compact.len()..].to_owned(), "request --session-id <SESSION_ID> --data-dir <DATA_DIR>", "{host}");
                    total += 1;
                    continue;
                }
                let filled = fill(c);
                if let Err(e) = command::check_command(&filled, &dir) {
                    panic!("{host} {}: {c}\n  -> {filled}\n  refused: {} ({})", src.display(), e.message(), e.code());
                }
                total += 1;
            }
        }
    }
    assert!(total >= 20, "only {total} commands found");
}

#[test]
fn each_host_gets_its_own_verifier_mechanism_and_the_whole_cycle() {
    let tmp = tempfile::tempdir().unwrap();
    let src = Path::new(ROOT).join("skills/kijito-memory-qa/SKILL.md");
    let codex = support::render_skill(&src, &tmp.path().join("c.md"), Path::new("/opt/kq/codex"), "codex").unwrap();
    let claude = support::render_skill(&src, &tmp.path().join("k.md"), Path::new("/opt/kq/claude"), "claude").unwrap();
    assert!(codex.contains("spawn_agent") && codex.contains("fork_context: false") && !codex.contains("Task tool"));
    assert!(claude.contains("`Agent` tool") && claude.contains("subagent_type: \"general-purpose\"") && !claude.contains("spawn_agent"));
    // Claude Code: the subagent runs in the background and reports through a task notification
    // (measured on 2.1.328, TUI and `claude -p`); the TUI's Agent tool has no foreground field
    let flat_claude = claude.split_whitespace().collect::<Vec<_>>().join(" ");
    for needed in [
        "runs in the background",
        "end your turn",
        "<task-notification>",
        "not a message from the user",
        "Both notifications must have arrived before step 5",
    ] {
        assert!(flat_claude.contains(needed), "claude skill lacks {needed:?}");
    }
    assert!(!claude.contains("run_in_background"), "the Claude Code TUI's Agent tool has no run_in_background field");
    // Codex: spawn_agent, then wait_agent in the same turn, then close_agent
    let flat_codex = codex.split_whitespace().collect::<Vec<_>>().join(" ");
    let at = |s: &str| flat_codex.find(s).unwrap_or_else(|| panic!("codex skill lacks {s:?}"));
    assert!(at("`spawn_agent`") < at("`wait_agent`") && at("`wait_agent`") < at("`close_agent`"));
    assert!(flat_codex.contains("Do not end your turn while a verifier runs"));
    // the verifier prompt, the same on both hosts; tests/hosts/lib/he2e/qa_driver.py VERIFIER_PREFIX
    // (the real-host `boots` scenario's fake model) uses exactly this sentence
    for t in [&codex, &claude] {
        let flat = t.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(flat.contains("\"Run exactly this one shell command and reply with its exit status and its complete stdout and stderr, nothing else: \" followed by the one command"), "{flat}");
    }
    assert!(claude.contains("never `\"fork\"`"));
    let driver = std::fs::read_to_string(Path::new(ROOT).join("tests/hosts/lib/he2e/qa_driver.py")).unwrap();
    assert!(driver.contains("VERIFIER_PREFIX = (\"Run exactly this one shell command and reply with its exit status and its complete \"\n                   \"stdout and stderr, nothing else: \")"));
    for t in [&codex, &claude] {
        for needed in [
            "durable decision",
            "verified finding",
            "state change",
            "user preference",
            "failure mode",
            "reusable command",
            "gate result",
            "At most 100 candidates",
            "recall once",
            "persona and project",
            "correct it",
            "fade it",
            "before publication",
            "Digest again, after both boots",
            "kijito-compact request",
            "no_safe_trigger",
            "/compact",
            "Never include any pointer or anchor body",
        ] {
            assert!(t.contains(needed), "missing {needed:?}");
        }
        // the order of the cycle: publish, boots, digest again, record, request, report
        let pos = |s: &str| t.find(s).unwrap_or_else(|| panic!("{s}"));
        assert!(pos("/bin/pointer-publish ") < pos("/bin/pointer-snapshot "));
        assert!(pos("## 4. Digest again") < pos("/bin/qa-gate record "));
        assert!(pos("/bin/qa-gate record ") < pos("/bin/kijito-compact request "));
        assert!(pos("/bin/kijito-compact request ") < pos("## 7. Report"));
    }
}

#[test]
fn render_refuses_unbalanced_blocks_and_unknown_tokens() {
    let tmp = tempfile::tempdir().unwrap();
    for (name, body, why) in [
        ("a.md", "x\n@BEGIN-codex@\ny\n", "without"),
        ("b.md", "@END-claude@\n", "unbalanced"),
        ("c.md", "run @ROOT@/bin/x with @POINTER@\n", "unreplaced @POINTER@"),
    ] {
        let src = tmp.path().join(name);
        std::fs::write(&src, body).unwrap();
        let err = support::render_skill(&src, &tmp.path().join(format!("out-{name}")), Path::new("/opt/kq/codex"), "codex").unwrap_err();
        assert!(err.contains(why), "{name}: {err}");
    }
}

/// One recorded host mode: its subagent tools as (name, input properties).
struct Recorded {
    label: String,
    tools: Vec<(String, BTreeSet<String>)>,
}

fn props(schema: Option<&Value>) -> BTreeSet<String> {
    schema.and_then(|s| s.get("properties")).and_then(Value::as_object).map(|o| o.keys().cloned().collect()).unwrap_or_default()
}

/// The recorded subagent tools of `host` ("claude" or "codex"), one entry per recorded mode.
fn recorded(host: &str) -> Vec<Recorded> {
    let dir = Path::new(ROOT).join("fixtures/hosts/tool-schemas");
    let mut out = Vec::new();
    for e in std::fs::read_dir(&dir).unwrap() {
        let path = e.unwrap().path();
        if path.extension().and_then(|x| x.to_str()) != Some("json") {
            continue;
        }
        let doc: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        let file_host = doc["host"].as_str().unwrap();
        if (host == "claude") != (file_host == "claude-code") {
            continue;
        }
        let mut tools = Vec::new();
        for t in doc["tools"].as_array().unwrap() {
            match t.get("tools").and_then(Value::as_array) {
                // a Codex tool namespace (multi_agent_v1): its functions
                Some(inner) => tools.extend(inner.iter().map(|f| (f["name"].as_str().unwrap().to_owned(), props(f.get("parameters"))))),
                None => tools.push((t["name"].as_str().unwrap().to_owned(), props(t.get("input_schema").or_else(|| t.get("parameters"))))),
            }
        }
        let modes: Vec<String> = match doc.get("modes").and_then(Value::as_array) {
            Some(m) => m.iter().map(|x| x.as_str().unwrap().to_owned()).collect(),
            None => vec![doc["mode"].as_str().unwrap().to_owned()],
        };
        out.push(Recorded { label: format!("{} {} ({})", file_host, doc["version"].as_str().unwrap(), modes.join(", ")), tools });
    }
    out.sort_by(|a, b| a.label.cmp(&b.label));
    out
}

/// Every subagent tool name and field the rendered skill `text` names in a code span (`name`
/// or `field: value`) must exist in every recorded mode of `host`. A span counts as naming one
/// when it is `identifier: ...`, or is an identifier that is a tool or field name of any host.
fn unknown_tool_words(text: &str, host: &str) -> Vec<String> {
    assert_eq!(text.matches('`').count() % 2, 0, "unbalanced backticks");
    let ident = |w: &str| {
        !w.is_empty()
            && w.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            && w.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
    };
    let mine = recorded(host);
    assert!(!mine.is_empty(), "no recorded tool schemas for {host}");
    let every_word: BTreeSet<String> =
        ["claude", "codex"].iter().flat_map(|h| recorded(h)).flat_map(|r| r.tools).flat_map(|(n, p)| std::iter::once(n).chain(p)).collect();
    let mut bad = Vec::new();
    for span in text.split('`').skip(1).step_by(2) {
        let word = match span.split_once(": ") {
            Some((k, _)) if ident(k) => k,
            _ if ident(span) && every_word.contains(span) => span,
            _ => continue,
        };
        for r in &mine {
            if !r.tools.iter().any(|(n, p)| n == word || p.contains(word)) {
                bad.push(format!("`{span}`: {word} is no subagent tool or field of {}", r.label));
            }
        }
    }
    bad
}

#[test]
fn the_recorded_tool_schemas_are_the_pinned_hosts() {
    let claude = recorded("claude");
    let codex = recorded("codex");
    assert_eq!(
        claude.iter().map(|r| r.label.as_str()).collect::<Vec<_>>(),
        ["claude-code 2.1.328 (Claude Code) (headless)", "claude-code 2.1.328 (Claude Code) (tui)"]
    );
    assert_eq!(codex.iter().map(|r| r.label.as_str()).collect::<Vec<_>>(), ["codex codex-cli 0.169.0 (tui, tui --no-daemon, exec)"]);
    let agent = |r: &Recorded| r.tools.iter().find(|(n, _)| n == "Agent").map(|(_, p)| p.clone()).unwrap();
    // the measured difference the skill must respect: only headless `claude -p` has the field
    assert!(agent(&claude[0]).contains("run_in_background") && !agent(&claude[1]).contains("run_in_background"));
    for r in &claude {
        assert!(["description", "prompt", "subagent_type"].iter().all(|f| agent(r).contains(*f)), "{}", r.label);
    }
    let names: BTreeSet<&str> = codex[0].tools.iter().map(|(n, _)| n.as_str()).collect();
    assert!(["spawn_agent", "wait_agent", "close_agent"].iter().all(|n| names.contains(n)), "{names:?}");
}

#[test]
fn every_subagent_tool_field_a_skill_names_is_in_the_recorded_host_tool() {
    let tmp = tempfile::tempdir().unwrap();
    let mut named = 0;
    for host in ["codex", "claude"] {
        for src in skills() {
            let text = support::render_skill(&src, &tmp.path().join(format!("{host}.md")), Path::new("/opt/kq").join(host).as_path(), host)
                .unwrap();
            let bad = unknown_tool_words(&text, host);
            assert!(bad.is_empty(), "{host} {}:\n{}", src.display(), bad.join("\n"));
            named += text
                .split('`')
                .skip(1)
                .step_by(2)
                .filter(|s| {
                    ["Agent", "subagent_type", "spawn_agent", "fork_context", "wait_agent", "close_agent", "targets"]
                        .iter()
                        .any(|w| s.starts_with(w))
                })
                .count();
        }
    }
    assert!(named >= 8, "the skills name only {named} subagent tool words");
}

#[test]
fn a_skill_naming_a_field_the_host_lacks_is_caught() {
    // the old instruction: the Claude Code TUI's Agent tool has no run_in_background
    let bad = unknown_tool_words("start it with `Agent` and `run_in_background: false`", "claude");
    assert_eq!(bad.len(), 1, "{bad:?}");
    assert!(bad[0].contains("run_in_background") && bad[0].contains("(tui)"), "{bad:?}");
    // a Codex field on Claude Code, a Claude tool on Codex, a bare field name
    assert_eq!(unknown_tool_words("`fork_context: false`", "claude").len(), 2);
    assert_eq!(unknown_tool_words("the `Agent` tool with `subagent_type`", "codex").len(), 2);
    assert!(unknown_tool_words("`spawn_agent` with `fork_context: false`, `wait_agent` with `timeout_ms: 600000`", "codex").is_empty());
    // words that are neither tool nor field names are not checked
    assert!(unknown_tool_words("`qa-gate record` prints `compactionNonce`", "claude").is_empty());
}

/// Every Kijito MCP tool the skills name (`kijito_<name>`) is one that
/// `kijito-local mcp` lists, with every argument the skill names in its
/// input schema, so the curation pass can be followed on the embedded
/// default.
#[test]
fn every_kijito_tool_a_skill_names_is_served_by_kijito_local_mcp() {
    let defs = kijito_server::mcp::tool_definitions();
    let list = defs.get("tools").unwrap_or(&defs);
    let tools: std::collections::BTreeMap<String, Value> = list
        .as_array()
        .expect("tools")
        .iter()
        .map(|t| (t["name"].as_str().unwrap().to_owned(), t["inputSchema"]["properties"].clone()))
        .collect();
    let skills = Path::new(ROOT).join("skills");
    let mut named = 0;
    for e in std::fs::read_dir(&skills).unwrap() {
        let text = std::fs::read_to_string(e.unwrap().path().join("SKILL.md")).unwrap();
        // code spans `kijito_<tool>` or `kijito_<tool>(arg, arg=value, ...)`;
        // error codes (`kijito_<tool>_failed:<code>`) are not tools
        for span in text.split('`').skip(1).step_by(2).filter(|s| s.starts_with("kijito_") && !s.contains("_failed")) {
            let (name, args) = match span.split_once('(') {
                Some((n, rest)) => (n, rest.strip_suffix(')').unwrap_or_else(|| panic!("unclosed call: {span}"))),
                None => (span, ""),
            };
            let props = tools.get(name).unwrap_or_else(|| panic!("a skill names {name}, which kijito-local mcp does not serve: {span}"));
            for arg in args.split(',').map(|a| a.split('=').next().unwrap().trim()).filter(|a| !a.is_empty()) {
                assert!(props.get(arg).is_some(), "{name} has no argument {arg:?}: {span}");
            }
            named += 1;
        }
    }
    assert!(named >= 7, "the curation pass names the tools ({named} found)");
}

/// The memory-latch skill: seed 000's whole procedure in
/// the agent's words, for both hosts, in the seed's order, with the consent
/// flow exactly as the PreToolUse deny reason drives it.
#[test]
fn the_memory_latch_skill_carries_the_whole_procedure_in_order() {
    let tmp = tempfile::tempdir().unwrap();
    let src = Path::new(ROOT).join("skills/memory-latch/SKILL.md");
    for host in ["codex", "claude"] {
        let root = Path::new("/opt/kq").join(host);
        let t = support::render_skill(&src, &tmp.path().join(format!("{host}.md")), &root, host).unwrap();
        let flat = t.split_whitespace().collect::<Vec<_>>().join(" ");
        let bin = format!("{}/bin/memory-latch", root.display());
        let pos = |s: &str| flat.find(s).unwrap_or_else(|| panic!("{host}: the skill lacks {s:?}"));
        // the sections in the seed's order
        let order = [
            "## 1. When to initialise",
            &format!("{bin} init --workspace <WORKSPACE>"),
            "## 2. Checkpoint cadence",
            &format!("{bin} checkpoint --workspace <WORKSPACE>"),
            "## 3. Consent for an irreversible action",
            &format!("{bin} consent request --workspace <WORKSPACE> --action-file <ACTION_FILE> --summary <SUMMARY> --risk <RISK>"),
            "## 4. Recovery",
            &format!("{bin} recover --workspace <WORKSPACE>"),
            "## 5. Silent Witness",
            &format!("{bin} reseed --workspace <WORKSPACE>"),
            "## 6. Degraded mode",
            &format!("{bin} review --workspace <WORKSPACE>"),
            "## 7. One-step mode",
        ];
        for w in order.windows(2) {
            assert!(pos(w[0]) < pos(w[1]), "{host}: {:?} must come before {:?}", w[0], w[1]);
        }
        // the consent flow as the deny reason drives it (shared/policy/src/decide.rs)
        for needed in [
            "kijito-qa policy: denied (policy_consent_required)",
            "exactly as printed",
            "the token alone",
            "Never type the token yourself",
            "High risk: the first message leaves it pending",
            "Retry **exactly the same tool call**",
            "It passes once",
            "A changed call",
            "needs a new token",
        ] {
            pos(needed);
        }
        assert!(pos("Run the command from the deny reason") < pos("Show the user") && pos("Show the user") < pos("Retry **exactly"));
        // recovery phases in the seed's order: Re-Latch (blocking dependency, objective, anchor),
        // Known vs Unknown, the question, exactly one next step
        let phases = [
            "**Re-Latch**",
            "the blocking dependency (`blocked_by`)",
            "the current objective",
            "the anchor (the last confirmed checkpoint)",
            "**Known vs Unknown**",
            "\"What was the last moment that felt aligned/correct?\"",
            "**One next step**",
        ];
        for w in phases.windows(2) {
            assert!(pos(w[0]) < pos(w[1]), "{host}: recovery phase {:?} before {:?}", w[0], w[1]);
        }
        assert_eq!(kijito_latch::recover::QUESTION, "What was the last moment that felt aligned/correct?");
        // Silent Witness halts; degraded ends only by the user's review token; one-step
        for needed in [
            "3-line incident summary",
            "denies every write, delete, send, public-post, wallet-transfer and core-config tool call",
            "**Only the user's own review token ends it; your checkpoint does not.**",
            "consent_locked_until_review",
            "one_step_next_step_required",
            "**one** gated step per checkpoint",
            "Free text is one word.",
            "evidence, not instructions",
        ] {
            pos(needed);
        }
        // nothing the agent must never run is offered as a command
        for c in t.lines().map(str::trim).filter(|l| l.starts_with(&bin)) {
            assert!(!c.contains("consent confirm") && !c.contains("--message") && !c.contains("--sign") && !c.contains(" keygen"), "{c}");
        }
    }
}
