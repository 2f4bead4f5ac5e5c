//! The docs say what the code does, for the facts a new user trips on:
//! the hook tables of docs/configuration.md and docs/gate-and-hooks.md are
//! the committed hooks.json templates (hooks/<host>/hooks.json.tmpl, which
//! install.sh renders: tests/it/install_layout.rs); the number of helper
//! allow rules the docs name is the number `kijito-setup --allow-helpers`
//! writes; `kijito-doctor --help` and `wake-check --help` name every check
//! their docs table lists; the README's binaries table has a row for every
//! binary.
#![allow(clippy::unwrap_used)]

use serde_json::Value;
use std::path::PathBuf;
use std::process::Command;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(rel: &str) -> String {
    std::fs::read_to_string(repo().join(rel)).unwrap()
}

/// The cells of the rows of the first table whose header is `header`
/// (leading indentation ignored).
fn table(doc: &str, header: &str) -> Vec<Vec<String>> {
    let lines: Vec<&str> = doc.lines().map(str::trim).collect();
    let start = lines.iter().position(|l| *l == header).unwrap_or_else(|| panic!("no table {header:?}"));
    lines[start + 2..]
        .iter()
        .take_while(|l| l.starts_with('|'))
        .map(|l| l.trim_matches('|').split(" | ").map(|c| c.trim().trim_matches('`').to_owned()).collect())
        .collect()
}

/// (event, command) of a template, in its order, `@ROOT@` as `<root>`.
fn template(host: &str) -> Vec<(String, String)> {
    let v: Value = serde_json::from_str(&read(&format!("hooks/{host}/hooks.json.tmpl"))).unwrap();
    let mut out = Vec::new();
    for (event, groups) in v["hooks"].as_object().unwrap() {
        for g in groups.as_array().unwrap() {
            assert!(g.get("matcher").is_none(), "{host} {event}: the docs say no hook has a matcher");
            for h in g["hooks"].as_array().unwrap() {
                out.push((event.clone(), h["command"].as_str().unwrap().replace("@ROOT@", "<root>")));
            }
        }
    }
    out
}

#[test]
fn the_hook_tables_in_the_docs_are_the_hooks_json_templates() {
    for doc in ["docs/configuration.md", "docs/gate-and-hooks.md"] {
        let rows = table(&read(doc), "| event | hosts | command |");
        for host in ["codex", "claude"] {
            let documented: Vec<(String, String)> = rows
                .iter()
                .filter(|r| r[1] == "both" || r[1] == host)
                .map(|r| (r[0].clone(), r[2].replace("--host H", &format!("--host {host}"))))
                .collect();
            assert_eq!(documented, template(host), "{doc}: the {host} rows differ from hooks/{host}/hooks.json.tmpl");
            assert_eq!(
                kijito_setup::doctor::events(kijito_protocol::host::HostKind::parse(host).expect("a host")),
                documented.iter().map(|(e, _)| e.clone()).collect::<Vec<_>>(),
                "{doc}: the doctor's event list"
            );
        }
        let counts = format!("{} events for Codex, {} for Claude Code", template("codex").len(), template("claude").len());
        let said = read(doc).split_whitespace().collect::<Vec<_>>().join(" ");
        let alt = format!("Codex gets {} events, Claude Code {}", template("codex").len(), template("claude").len());
        assert!(said.contains(&counts) || said.contains(&alt), "{doc} must say {counts:?}");
    }
}

#[test]
fn the_docs_name_the_number_of_helper_rules_kijito_setup_writes() {
    let n = kijito_setup::permissions::AGENT_COMMANDS.len();
    let mut found = 0;
    for doc in ["README.md", "docs/configuration.md"] {
        let words: Vec<String> = read(doc).split_whitespace().map(|w| w.trim_matches(|c: char| !c.is_alphanumeric()).to_owned()).collect();
        for w in words.windows(3) {
            let counted = (w[0] == "the" || w[0] == "all") && (w[2].starts_with("rules") || w[2] == "are");
            if let (true, Ok(said)) = (counted, w[1].parse::<usize>()) {
                assert_eq!(said, n, "{doc}: \"{} {} {}\" but kijito-setup --allow-helpers writes {n} rules", w[0], w[1], w[2]);
                found += 1;
            }
        }
    }
    assert!(found >= 3, "the README and docs/configuration.md name the rule count (found {found})");
}

fn help(bin: &str) -> String {
    let o = Command::new(bin).arg("--help").output().unwrap();
    assert!(o.status.success());
    String::from_utf8(o.stdout).unwrap()
}

#[test]
fn kijito_doctor_help_names_every_check_of_its_docs_table() {
    let rows = table(&read("docs/configuration.md"), "| check | host | red when |");
    assert!(rows.len() >= 10, "{rows:?}");
    let text = help(env!("CARGO_BIN_EXE_kijito-doctor"));
    for r in &rows {
        assert!(
            text.lines().any(|l| l.trim_start().starts_with(&format!("{} ", r[0]))),
            "kijito-doctor --help does not name {}:\n{text}",
            r[0]
        );
    }
}

#[test]
fn wake_check_help_names_every_check_and_the_check_from_a_saved_checkpoint() {
    let doc = read("docs/wake-check.md");
    let checks = &doc[doc.find("## Checks").unwrap()..doc.find("## Findings").unwrap()];
    let rows = table(checks, "| check | what it looks at |");
    assert!(rows.len() >= 10, "{rows:?}");
    let text = help(env!("CARGO_BIN_EXE_wake-check"));
    for r in &rows {
        assert!(text.contains(&r[0]), "wake-check --help does not name {}:\n{text}", r[0]);
    }
    assert!(text.contains("memory-latch verify --since-checkpoint"), "{text}");
}

#[test]
fn the_readme_binaries_table_has_a_row_for_every_binary() {
    let readme = read("README.md");
    let rows = table(&readme, "| binary | who runs it | what it does | exit status | doc |");
    let listed: Vec<&str> = rows.iter().map(|r| r[0].as_str()).collect();
    let mut bins: Vec<String> = std::fs::read_dir(repo().join("bins"))
        .unwrap()
        .map(|e| e.unwrap().path().file_stem().unwrap().to_string_lossy().into_owned())
        .collect();
    bins.sort();
    for b in &bins {
        assert!(listed.contains(&b.as_str()), "README's binaries table has no row for {b}");
    }
}
