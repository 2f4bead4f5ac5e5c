//! The crate graph is the architecture (docs/architecture.md): the table of
//! allowed dependencies there equals the workspace's real dependencies, the
//! crates below the client link no HTTP stack, no library depends on a
//! binary package, and the declared `rust-version` is the real minimum of the
//! locked dependency graph. Error codes come from the one registry
//! (`kijito_protocol::codes`): no library or binary builds an error from a
//! code literal or compares code strings.
#![allow(clippy::unwrap_used)]

use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");
const HTTP_STACK: &[&str] = &["reqwest", "rustls", "hyper", "tokio", "h2", "hyper-util"];
const NO_HTTP: &[&str] = &[
    "kijito-protocol",
    "kijito-files",
    "kijito-gate",
    "kijito-latch",
    "kijito-wake",
    "kijito-compact",
    "kijito-compact-codex",
    "kijito-hooks",
    "kijito-context",
    "kijito-policy",
    "kijito-cli",
];

/// The host's target triple (`rustc -vV`).
fn host_triple() -> String {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let out = Command::new(rustc).arg("-vV").output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    text.lines().find_map(|l| l.strip_prefix("host: ")).expect("rustc -vV names the host").to_owned()
}

/// The locked graph as it builds on this host. `--filter-platform` keeps
/// `--offline` working on a fresh machine: without it cargo wants the
/// manifests of other platforms' crates (wasm's bumpalo, ...) that no build
/// here ever downloads.
fn metadata() -> Value {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args(["metadata", "--format-version", "1", "--locked", "--offline", "--filter-platform", &host_triple()])
        .current_dir(ROOT)
        .output()
        .unwrap();
    assert!(out.status.success(), "cargo metadata failed: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

fn workspace_names(m: &Value) -> BTreeMap<String, String> {
    let members: BTreeSet<&str> = m["workspace_members"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
    m["packages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| members.contains(p["id"].as_str().unwrap()))
        .map(|p| (p["id"].as_str().unwrap().to_owned(), p["name"].as_str().unwrap().to_owned()))
        .collect()
}

/// package name -> its normal workspace dependencies, from the resolve graph.
fn workspace_edges(m: &Value) -> BTreeMap<String, BTreeSet<String>> {
    let names = workspace_names(m);
    let mut edges = BTreeMap::new();
    for node in m["resolve"]["nodes"].as_array().unwrap() {
        let Some(name) = names.get(node["id"].as_str().unwrap()) else { continue };
        let deps: BTreeSet<String> = node["deps"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|d| d["dep_kinds"].as_array().unwrap().iter().any(|k| k["kind"].is_null()))
            .filter_map(|d| names.get(d["pkg"].as_str().unwrap()).cloned())
            .collect();
        edges.insert(name.clone(), deps);
    }
    edges
}

/// Names of every package in the normal-dependency closure of `id`.
fn closure(m: &Value, root_name: &str) -> BTreeSet<String> {
    let nodes: BTreeMap<&str, &Value> = m["resolve"]["nodes"].as_array().unwrap().iter().map(|n| (n["id"].as_str().unwrap(), n)).collect();
    let name_of: BTreeMap<&str, &str> =
        m["packages"].as_array().unwrap().iter().map(|p| (p["id"].as_str().unwrap(), p["name"].as_str().unwrap())).collect();
    let start = name_of.iter().find(|(_, n)| **n == root_name).map(|(id, _)| *id).unwrap();
    let mut seen = BTreeSet::new();
    let mut stack = vec![start];
    while let Some(id) = stack.pop() {
        if !seen.insert(id) {
            continue;
        }
        for d in nodes[id]["deps"].as_array().unwrap() {
            if d["dep_kinds"].as_array().unwrap().iter().any(|k| k["kind"].is_null()) {
                stack.push(d["pkg"].as_str().unwrap());
            }
        }
    }
    seen.into_iter().map(|id| name_of[id].to_owned()).collect()
}

fn documented_table() -> BTreeMap<String, BTreeSet<String>> {
    let text = std::fs::read_to_string(Path::new(ROOT).join("docs/architecture.md")).unwrap();
    let mut table = BTreeMap::new();
    for line in text.lines().filter(|l| l.starts_with("| kijito-")) {
        let cells: Vec<&str> = line.trim_matches('|').split('|').map(str::trim).collect();
        assert_eq!(cells.len(), 4, "bad table row: {line}");
        let deps = if cells[3] == "(none)" { BTreeSet::new() } else { cells[3].split(',').map(|s| s.trim().to_owned()).collect() };
        table.insert(cells[0].to_owned(), deps);
    }
    table
}

#[test]
fn the_documented_dependency_table_is_the_real_graph() {
    let m = metadata();
    let real = workspace_edges(&m);
    let doc = documented_table();
    assert_eq!(doc.keys().collect::<Vec<_>>(), real.keys().collect::<Vec<_>>(), "docs/architecture.md must list every workspace crate");
    for (name, deps) in &real {
        assert_eq!(&doc[name], deps, "docs/architecture.md row of {name} differs from Cargo.toml");
    }
}

/// The diagram of docs/architecture.md: crate -> the crates after its arrow
/// (up to a two-space-and-parenthesis comment), from the first fenced block.
fn documented_diagram() -> Vec<(String, BTreeSet<String>)> {
    let text = std::fs::read_to_string(Path::new(ROOT).join("docs/architecture.md")).unwrap();
    let block = text.split("```").nth(1).expect("the diagram is the first fenced block");
    let mut rows = Vec::new();
    for line in block.lines().filter(|l| l.starts_with("kijito-")) {
        let line = line.split("  (").next().unwrap();
        let (name, deps) = match line.split_once("──►") {
            Some((n, d)) => (n.trim(), d.split(',').map(|s| s.trim().to_owned()).filter(|s| !s.is_empty()).collect()),
            None => (line.trim(), BTreeSet::new()),
        };
        rows.push((name.to_owned(), deps));
    }
    rows
}

/// The transitive reduction of the workspace graph: each crate's direct
/// dependencies that no other direct dependency already reaches.
fn reduced_edges(edges: &BTreeMap<String, BTreeSet<String>>) -> BTreeMap<String, BTreeSet<String>> {
    let reach = |from: &str, skip: &str| {
        let mut seen = BTreeSet::new();
        let mut stack: Vec<&str> = edges[from].iter().map(String::as_str).filter(|d| *d != skip).collect();
        while let Some(n) = stack.pop() {
            if seen.insert(n.to_owned()) {
                stack.extend(edges[n].iter().map(String::as_str));
            }
        }
        seen
    };
    edges.iter().map(|(n, deps)| (n.clone(), deps.iter().filter(|d| !reach(n, d).contains(*d)).cloned().collect())).collect()
}

#[test]
fn the_documented_diagram_is_the_reduced_real_graph_top_down() {
    let real = reduced_edges(&workspace_edges(&metadata()));
    let rows = documented_diagram();
    let names: BTreeSet<&String> = rows.iter().map(|(n, _)| n).collect();
    assert_eq!(names.len(), rows.len(), "a crate is listed twice in the diagram");
    assert_eq!(names, real.keys().collect(), "the diagram of docs/architecture.md must list every workspace crate");
    for (i, (name, deps)) in rows.iter().enumerate() {
        assert_eq!(deps, &real[name], "the diagram's edges of {name} differ from cargo metadata (transitive reduction)");
        for d in deps {
            assert!(rows[i + 1..].iter().any(|(n, _)| n == d), "{name} ──► {d}: the diagram lists {d} above {name}");
        }
    }
}

#[test]
fn the_reduction_drops_an_edge_reached_through_another() {
    let real: BTreeMap<String, BTreeSet<String>> = [("a", vec!["b", "c"]), ("b", vec!["c"]), ("c", vec![])]
        .into_iter()
        .map(|(n, d)| (n.to_owned(), d.into_iter().map(str::to_owned).collect()))
        .collect();
    assert_eq!(reduced_edges(&real)["a"], BTreeSet::from(["b".to_owned()]), "a reaches c through b");
}

#[test]
fn the_gate_the_hooks_and_everything_below_link_no_http_stack() {
    let m = metadata();
    for krate in NO_HTTP {
        let deps = closure(&m, krate);
        let bad: Vec<_> = deps.iter().filter(|d| HTTP_STACK.contains(&d.as_str()) || d.starts_with("rustls")).collect();
        assert!(bad.is_empty(), "{krate} reaches the HTTP stack through {bad:?}");
    }
    // The hook binaries are targets of kijito-hooks, so its closure is theirs.
    let hooks = m["packages"].as_array().unwrap().iter().find(|p| p["name"] == "kijito-hooks").unwrap();
    let bins: BTreeSet<&str> = hooks["targets"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["kind"].as_array().unwrap().iter().any(|k| k == "bin"))
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(bins, BTreeSet::from(["precompact", "postcompact", "session-hook", "prompt-hook", "pretool-hook"]));
}

#[test]
fn the_hooks_never_link_the_server() {
    // kijito-server depends on kijito-wake (the MCP wake check); the hook
    // binaries link kijito-wake but must never reach the server through it.
    let m = metadata();
    for krate in ["kijito-hooks", "kijito-wake", "kijito-context", "kijito-gate"] {
        let deps = closure(&m, krate);
        assert!(!deps.contains("kijito-server") && !deps.contains("rusqlite"), "{krate} reaches kijito-server or SQLite: {deps:?}");
    }
}

#[test]
fn no_library_depends_on_a_binary_package() {
    let m = metadata();
    let real = workspace_edges(&m);
    for (name, deps) in &real {
        assert!(!deps.contains("kijito-qa"), "{name} depends on the binary package kijito-qa");
        if name != "kijito-qa" {
            assert!(!deps.contains("kijito-hooks"), "{name} depends on kijito-hooks, whose package holds the hook binaries");
        }
    }
}

/// The Rust files a workspace package's code can be in: every `.rs` under
/// its directory (the root package: bins/, benches/, tests/), each target's
/// own file (the hook binaries' are in bins/), and the files those pull in
/// with `#[path = "..."]`; all of it as one text.
fn package_text(p: &Value) -> String {
    let dir = Path::new(p["manifest_path"].as_str().unwrap()).parent().unwrap().to_owned();
    let mut files = Vec::new();
    if dir == Path::new(ROOT) {
        for d in ["bins", "benches", "tests"] {
            rust_files(&dir.join(d), &mut files);
        }
    } else {
        rust_files(&dir, &mut files);
    }
    files.extend(p["targets"].as_array().unwrap().iter().map(|t| std::path::PathBuf::from(t["src_path"].as_str().unwrap())));
    let mut text = String::new();
    let mut seen = BTreeSet::new();
    while let Some(f) = files.pop() {
        if !seen.insert(f.clone()) {
            continue;
        }
        let t = std::fs::read_to_string(&f).unwrap();
        for l in t.lines().filter_map(|l| l.trim().strip_prefix("#[path = \"")) {
            let included = f.parent().unwrap().join(l.split('"').next().unwrap());
            if included.is_file() {
                files.push(included);
            }
        }
        text.push_str(&t);
    }
    text
}

/// The dependencies (normal, dev, build) `p` declares that no file of it
/// names (`crate::`, `use crate`, `crate!`).
fn unused_dependencies(p: &Value, text: &str) -> Vec<String> {
    let mut unused = Vec::new();
    for d in p["dependencies"].as_array().unwrap() {
        let name = d["rename"].as_str().unwrap_or(d["name"].as_str().unwrap()).replace('-', "_");
        let named = [format!("{name}::"), format!("use {name}"), format!("{name}!"), format!("extern crate {name}")];
        if !named.iter().any(|n| text.contains(n.as_str())) {
            unused.push(format!("{} ({})", d["name"].as_str().unwrap(), d["kind"].as_str().unwrap_or("normal")));
        }
    }
    unused
}

#[test]
fn every_declared_dependency_is_used() {
    let m = metadata();
    let members: BTreeSet<&str> = m["workspace_members"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
    let mut found = Vec::new();
    for p in m["packages"].as_array().unwrap().iter().filter(|p| members.contains(p["id"].as_str().unwrap())) {
        for d in unused_dependencies(p, &package_text(p)) {
            found.push(format!("{}: {d}", p["name"].as_str().unwrap()));
        }
    }
    assert!(found.is_empty(), "declared but never named in the package's code (remove them from its Cargo.toml):\n{}", found.join("\n"));
}

#[test]
fn the_unused_dependency_scan_sees_a_use_and_its_absence() {
    let p = serde_json::json!({"dependencies": [{"name": "shell-words", "rename": null, "kind": null}, {"name": "libc", "rename": null, "kind": "dev"}]});
    assert_eq!(unused_dependencies(&p, "let w = shell_words::split(x);"), ["libc (dev)"]);
    assert_eq!(unused_dependencies(&p, "use shell_words;\n// libc is not named as code here\nlibc::getuid()"), Vec::<String>::new());
}

fn version(v: &str) -> Vec<u64> {
    let mut parts: Vec<u64> = v.split('.').map(|p| p.parse().unwrap()).collect();
    parts.resize(3, 0);
    parts
}

#[test]
fn rust_version_is_the_real_minimum_of_the_locked_graph() {
    let m = metadata();
    let members: BTreeSet<&str> = m["workspace_members"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
    let (highest, who) = m["packages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| !members.contains(p["id"].as_str().unwrap()))
        .filter_map(|p| p["rust_version"].as_str().map(|v| (version(v), p["name"].as_str().unwrap().to_owned())))
        .max()
        .unwrap();
    for p in m["packages"].as_array().unwrap().iter().filter(|p| members.contains(p["id"].as_str().unwrap())) {
        let declared = version(p["rust_version"].as_str().expect("every workspace crate declares rust-version"));
        assert_eq!(declared, highest, "{} declares rust-version {declared:?}, but {who} needs {highest:?}", p["name"]);
    }
}

/// Every `.rs` file under `dir`, recursively, sorted.
fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

/// The non-test sources: shared/*/src and bins/, each file cut at its first
/// `#[cfg(test)]` line, without the files that such a line declares as a
/// module (`#[cfg(test)] mod tests;`).
fn non_test_sources() -> Vec<(String, String)> {
    let root = Path::new(ROOT);
    let mut files = Vec::new();
    rust_files(&root.join("bins"), &mut files);
    let mut crates: Vec<_> = std::fs::read_dir(root.join("shared")).unwrap().map(|e| e.unwrap().path()).collect();
    crates.sort();
    for c in crates {
        // kijito-testkit is test support, a dev-dependency only (docs/testing.md).
        if c.join("src").is_dir() && !c.ends_with("testkit") {
            rust_files(&c.join("src"), &mut files);
        }
    }
    assert!(files.len() > 50, "too few sources found: {}", files.len());
    let mut test_modules = BTreeSet::new();
    let mut out = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        let cut = lines.iter().position(|l| l.trim() == "#[cfg(test)]").unwrap_or(lines.len());
        for w in lines[cut..].windows(2) {
            if w[0].trim() == "#[cfg(test)]" {
                let dir = f.parent().unwrap();
                if let Some(name) = w[1].trim().strip_prefix("mod ").and_then(|r| r.strip_suffix(';')) {
                    test_modules.insert(dir.join(format!("{name}.rs")));
                    test_modules.insert(dir.join(name).join("mod.rs"));
                }
                // `#[cfg(test)] #[path = "x_tests.rs"] mod tests;`
                if let Some(file) = w[1].trim().strip_prefix("#[path = \"").and_then(|r| r.strip_suffix("\"]")) {
                    test_modules.insert(dir.join(file));
                }
            }
        }
        out.push((f.clone(), lines[..cut].join("\n")));
    }
    out.into_iter()
        .filter(|(f, _)| !test_modules.contains(f))
        .map(|(f, text)| (f.strip_prefix(root).unwrap().display().to_string(), text))
        .collect()
}

/// Where `text` builds an error from a code literal or compares code strings.
fn code_literal_uses(text: &str) -> Vec<(usize, &'static str)> {
    let line_of = |at: usize| text[..at].matches('\n').count() + 1;
    let mut found = Vec::new();
    for call in ["Error::new(", "Error::usage("] {
        for (at, _) in text.match_indices(call) {
            if text[at + call.len()..].trim_start().starts_with('"') {
                found.push((line_of(at), call));
            }
        }
    }
    for cmp in ["code() == \"", "code() != \"", "code().starts_with(", "code().ends_with(", "code().contains("] {
        for (at, _) in text.match_indices(cmp) {
            found.push((line_of(at), cmp));
        }
    }
    found.sort();
    found
}

#[test]
fn the_scan_finds_code_literals() {
    let text = "let a = Error::new(codes::X, \"m\");\nErr(Error::usage(\n    \"bad\",\n    \"m\"))\nif e.code() == \"x\" {}\ne.code().starts_with(\"x_\")";
    assert_eq!(code_literal_uses(text), vec![(2, "Error::usage("), (5, "code() == \""), (6, "code().starts_with(")]);
}

#[test]
fn errors_take_their_codes_from_the_registry() {
    let mut bad = Vec::new();
    for (path, text) in non_test_sources() {
        for (line, what) in code_literal_uses(&text) {
            bad.push(format!("{path}:{line}: {what}"));
        }
    }
    assert!(bad.is_empty(), "use a codes! enum constant (and Error::code_as / Kind to compare), not a literal:\n{}", bad.join("\n"));
}

/// Where `text` compares an error's code with a spelling (`.code() == "…"`,
/// `.code() != "…"`, or a prefix, suffix or substring of it).
fn code_spelling_comparisons(text: &str) -> Vec<(usize, &'static str)> {
    let mut found = Vec::new();
    for cmp in [".code() == \"", ".code() != \"", ".code().starts_with(", ".code().ends_with(", ".code().contains("] {
        for (at, _) in text.match_indices(cmp) {
            found.push((text[..at].matches('\n').count() + 1, cmp));
        }
    }
    found.sort();
    found
}

#[test]
fn the_scan_finds_spelling_comparisons() {
    let text =
        "assert_eq!(e.code(), codes::X.as_str());\nif e.code() == \"x\" {}\nassert!(e.code() != \"y\");\nout.status.code() == Some(0)";
    assert_eq!(code_spelling_comparisons(text), vec![(2, ".code() == \""), (3, ".code() != \"")]);
}

/// No Rust file of the repository, tests included,
/// compares an error's code with a spelling: a test asserts
/// `e.code_as() == Some(CODE)` or `assert_eq!(e.code(), CODE.as_str())`, and
/// a `codes!` enum compares with no string (only with a JSON value).
#[test]
fn no_rust_file_compares_a_code_with_a_spelling() {
    let mut files = Vec::new();
    text_files(Path::new(ROOT), &mut files);
    // This file spells the patterns it scans for (and its scans' samples).
    let this = Path::new(ROOT).join("tests/it/architecture.rs");
    files.retain(|f| f.extension().is_some_and(|e| e == "rs") && *f != this);
    assert!(files.len() > 100, "too few Rust files: {}", files.len());
    let mut bad = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        for (line, what) in code_spelling_comparisons(&text) {
            bad.push(format!("{}:{line}: {what}", f.strip_prefix(ROOT).unwrap().display()));
        }
    }
    assert!(bad.is_empty(), "compare e.code_as() with Some(CODE), or e.code() with CODE.as_str():\n{}", bad.join("\n"));
}

/// Every area's code enum (`kijito_protocol::codes!`), with its name.
fn registry() -> Vec<(&'static str, Vec<&'static str>)> {
    fn spellings<C: kijito_protocol::error::CodeSet>(all: &[C]) -> Vec<&'static str> {
        all.iter().map(|c| c.as_str()).collect()
    }
    vec![
        ("ids", spellings(kijito_protocol::codes::ids::Code::ALL)),
        ("snapshot", spellings(kijito_protocol::codes::snapshot::Code::ALL)),
        ("command", spellings(kijito_protocol::codes::command::Code::ALL)),
        ("files", spellings(kijito_files::private::codes::Code::ALL)),
        ("config", spellings(kijito_files::config::codes::Code::ALL)),
        ("data_dir", spellings(kijito_files::datadir::codes::Code::ALL)),
        ("journal", spellings(kijito_files::journal::codes::Code::ALL)),
        ("flight", spellings(kijito_server::report::codes::Code::ALL)),
        ("view", spellings(kijito_server::view::codes::Code::ALL)),
        ("token", spellings(kijito_client::token::codes::Code::ALL)),
        ("http", spellings(kijito_client::http::codes::Code::ALL)),
        ("publish", spellings(kijito_client::publish::codes::Code::ALL)),
        ("pass", spellings(kijito_gate::pass::codes::Code::ALL)),
        ("report", spellings(kijito_gate::report::codes::Code::ALL)),
        ("compaction", spellings(kijito_gate::compaction::codes::Code::ALL)),
        ("summary", spellings(kijito_gate::summary::codes::Code::ALL)),
        ("record", spellings(kijito_gate::record::codes::Code::ALL)),
        ("hooks", spellings(kijito_hooks::codes::Code::ALL)),
        ("server", spellings(kijito_server::codes::Code::ALL)),
        ("store", spellings(kijito_server::store::codes::Code::ALL)),
        ("faults", spellings(kijito_server::faults::codes::Code::ALL)),
        ("render", spellings(kijito_protocol::codes::render::Code::ALL)),
        ("manifest", spellings(kijito_protocol::codes::manifest::Code::ALL)),
        ("cli", spellings(kijito_protocol::codes::cli::Code::ALL)),
        ("gate", spellings(kijito_gate::codes::Code::ALL)),
        ("fetch", spellings(kijito_client::snapshot::codes::fetch::Code::ALL)),
        ("wake", spellings(kijito_wake::cli::codes::Code::ALL)),
        ("latch", spellings(kijito_protocol::codes::latch::Code::ALL)),
        ("local::demo", spellings(kijito_server::demo::codes::Code::ALL)),
        ("local::reqlog", spellings(kijito_server::reqlog::codes::Code::ALL)),
        ("trigger", spellings(kijito_compact::trigger::codes::Code::ALL)),
        ("setup", spellings(kijito_setup::codes::Code::ALL)),
        ("context", spellings(kijito_context::codes::Code::ALL)),
        ("compact_codex", spellings(kijito_compact_codex::adapter::codes::Code::ALL)),
        ("compact", spellings(kijito_compact::codes::Code::ALL)),
        ("policy", spellings(kijito_protocol::codes::policy::Code::ALL)),
        ("setup::setup", spellings(kijito_setup::setup::codes::Code::ALL)),
        ("setup::mcp", spellings(kijito_setup::mcp::codes::Code::ALL)),
        ("setup::permissions", spellings(kijito_setup::permissions::codes::Code::ALL)),
        ("setup::sandbox", spellings(kijito_setup::sandbox::codes::Code::ALL)),
    ]
}

#[test]
fn every_registry_code_is_snake_case() {
    let registry = registry();
    // Every `codes!` invocation of the workspace is in `registry()`.
    let invocations: usize = non_test_sources()
        .iter()
        .map(|(_, t)| t.lines().map(str::trim).filter(|l| !l.starts_with("//") && l.ends_with("codes! {")).count())
        .sum();
    assert_eq!(invocations, registry.len(), "a codes! area is missing from registry()");
    let mut count = 0;
    let mut owner: BTreeMap<&str, &str> = BTreeMap::new();
    for (area, codes) in &registry {
        for code in codes {
            assert!(
                code.starts_with(|c: char| c.is_ascii_lowercase())
                    && code.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'),
                "{area}: {code}"
            );
            // one spelling, one enum: `Error::code_as` answers by the enum an error was raised with
            if let Some(first) = owner.insert(code, area) {
                panic!("{code} is in both {first} and {area}: raise the one area's code from both places");
            }
            count += 1;
        }
    }
    assert!(count > 200, "only {count} codes found");
}

/// `Error::code_as` matches the enum an error was raised with: it never
/// reads the code's spelling back (no `parse`, no scan of `ALL` by text).
#[test]
fn code_as_does_not_scan_spellings() {
    let text = std::fs::read_to_string(Path::new(ROOT).join("shared/protocol/src/error.rs")).unwrap();
    for name in ["pub fn code_as<", "pub fn as_code<"] {
        let start = text.find(name).unwrap_or_else(|| panic!("{name} not found"));
        let body = &text[start..start + text[start..].find("\n    }\n").unwrap()];
        assert!(!body.contains("parse") && !body.contains("as_str") && !body.contains("find("), "{name} reads spellings:\n{body}");
    }
}

/// A host is a `kijito_protocol::host::HostKind`: its name (`codex`,
/// `claude`) is spelled by `HostKind::as_str` and nowhere else in the
/// non-test sources, so code matches on the enum and a new host is a
/// compile error where it must be answered for (docs/architecture.md). The
/// allow-list holds the literals that are no host name, each with why.
#[test]
fn host_names_are_spelled_only_by_host_kind() {
    const ALLOWED: &[(&str, &str, &str)] = &[
        (
            "shared/compact/src/cli.rs",
            "codex",
            "kijito-compact's `codex` command names the adapter that runs `codex app-server` (docs/adapters.md), a command word like `tmux`",
        ),
        ("shared/protocol/src/ids.rs", "Persona(\"codex\"", "the default persona, a write identity (docs/protocol.md §1), not a host"),
    ];
    let mut bad = Vec::new();
    let mut used = BTreeSet::new();
    for (path, text) in non_test_sources() {
        if path == "shared/protocol/src/host.rs" {
            assert_eq!(text.matches("\"codex\"").count() + text.matches("\"claude\"").count(), 2, "spelled once each, in as_str");
            continue;
        }
        for (n, line) in text.lines().enumerate() {
            if !(line.contains("\"codex\"") || line.contains("\"claude\"")) {
                continue;
            }
            match ALLOWED.iter().position(|(p, snippet, _)| *p == path && line.contains(snippet)) {
                Some(i) => {
                    used.insert(i);
                }
                None => bad.push(format!("{path}:{}: {}", n + 1, line.trim())),
            }
        }
    }
    assert!(bad.is_empty(), "a host name as a string: use kijito_protocol::host::HostKind (as_str, match):\n{}", bad.join("\n"));
    for (i, (path, snippet, _)) in ALLOWED.iter().enumerate() {
        assert!(used.contains(&i), "allow-list entry {path} {snippet:?} matches nothing: remove it");
    }
}

/// An adapter is a `kijito_compact::trigger::ViaKind`: its name is spelled
/// once (`ViaKind::as_str`) and never compared as a string elsewhere.
#[test]
fn adapters_are_named_by_their_enum_only() {
    let mut bad = Vec::new();
    for (path, text) in non_test_sources() {
        for what in ["via == ", "via != ", "Pinned(\"", "\"codex-app-server\""] {
            if what.starts_with('"') && path == "shared/compact/src/trigger.rs" {
                continue;
            }
            for (at, _) in text.match_indices(what) {
                bad.push(format!("{path}:{}: {what}", text[..at].matches('\n').count() + 1));
            }
        }
    }
    assert!(bad.is_empty(), "match on kijito_compact::trigger::ViaKind instead:\n{}", bad.join("\n"));
    let trigger = non_test_sources()
        .into_iter()
        .find(|(f, _)| f == "shared/compact/src/trigger.rs")
        .expect("the adapters' state lives in kijito-compact");
    assert_eq!(trigger.1.matches("\"codex-app-server\"").count(), 1, "spelled once, in ViaKind::as_str");
    assert!(!Path::new(ROOT).join("shared/gate/src/trigger.rs").exists(), "the QA gate knows no adapter");
}

/// Every `.md`, `.rs` and `.schema.json` file of the repository (no build
/// output; the fixtures' data, which quote the old name as text, are not
/// citations).
fn text_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    entries.sort();
    for p in entries {
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        if p.is_dir() {
            if !(name == "target" || name.starts_with('.')) {
                text_files(&p, out);
            }
        } else if name.ends_with(".md") || name.ends_with(".rs") || name.ends_with(".schema.json") {
            out.push(p);
        }
    }
}

/// The contract is cited by its home, `docs/protocol.md §N`: no file names
/// the workplace copy it started from.
#[test]
fn the_contract_is_cited_by_its_home() {
    let mut files = Vec::new();
    text_files(Path::new(ROOT), &mut files);
    assert!(files.len() > 100, "too few files: {}", files.len());
    let bare = ["PROTOCOL", ".md"].concat();
    let bad: Vec<_> = files
        .iter()
        .filter(|f| std::fs::read_to_string(f).is_ok_and(|t| t.contains(&bare)))
        .map(|f| f.strip_prefix(ROOT).unwrap().display().to_string())
        .collect();
    assert!(bad.is_empty(), "cite docs/protocol.md §N instead of the bare workplace copy in {bad:?}");
}

/// kijito-policy decides on every tool call from what its caller read: its
/// sources (outside tests) touch no file, process, environment or network.
#[test]
fn the_policy_crate_does_no_io() {
    let sources: Vec<_> = non_test_sources().into_iter().filter(|(f, _)| f.starts_with("shared/policy/")).collect();
    assert!(sources.len() >= 4, "{sources:?}");
    for (file, text) in sources {
        for io in ["std::fs", "std::net", "std::process", "std::env", "std::io", "File::", "Command::", "TcpStream", "UnixStream"] {
            assert!(!text.contains(io), "{file} uses {io}");
        }
    }
}

/// Where `text` pulls a field out of a raw `tool_input` or reads its
/// command lines (docs/architecture.md, "One parsed tool call").
fn tool_input_reads(text: &str) -> Vec<(usize, &'static str)> {
    let mut found = Vec::new();
    for pat in ["tool_input.get(", "get(\"tool_input\")", "tool_command_lines(", "get(\"workdir\")"] {
        for (at, _) in text.match_indices(pat) {
            found.push((text[..at].matches('\n').count() + 1, pat));
        }
    }
    found.sort();
    found
}

#[test]
fn the_tool_input_scan_finds_each_read() {
    let text =
        "let a = tool_input.get(\"command\");\nlet b = o.get(\"tool_input\");\nlet c = command::tool_command_lines(x);\nv.get(\"workdir\")";
    let found: Vec<usize> = tool_input_reads(text).into_iter().map(|(l, _)| l).collect();
    assert_eq!(found, [1, 2, 3, 4]);
}

/// A PreToolUse call is read once, by `kijito_policy::ParsedCall`; the
/// guard, the witness and the classifier read its fields. Only the call
/// type and the command grammar that defines the line extraction read
/// `tool_input` (the hook's stdin parser only moves it, whole).
#[test]
fn only_the_call_type_reads_tool_input() {
    let mut bad = Vec::new();
    for (path, text) in non_test_sources() {
        if path == "shared/policy/src/call.rs" || path == "shared/protocol/src/command.rs" {
            continue;
        }
        for (line, what) in tool_input_reads(&text) {
            bad.push(format!("{path}:{line}: {what}"));
        }
    }
    assert!(bad.is_empty(), "read the call through kijito_policy::ParsedCall:\n{}", bad.join("\n"));
}

/// The five hook mains parse their arguments one way (`HookArgs::parse`)
/// and name no flag themselves.
#[test]
fn the_hook_mains_share_one_args_type() {
    for bin in ["prompt-hook", "session-hook", "pretool-hook", "precompact", "postcompact"] {
        let text = std::fs::read_to_string(Path::new(ROOT).join("bins").join(format!("{bin}.rs"))).unwrap();
        assert!(text.contains("HookArgs::parse(&TOOL)"), "{bin} does not parse with HookArgs");
        for own in ["hook_args(", "Flag::value(", "required::<", "optional::<"] {
            assert!(!text.contains(own), "{bin} parses its own arguments ({own})");
        }
    }
}

/// The hooks' environment is its own module: no hook module reaches into
/// the dispatcher (`run.rs`) for it, so the modules form no circle.
#[test]
fn no_hook_module_reaches_into_the_dispatcher() {
    for (path, text) in non_test_sources() {
        if path.starts_with("shared/hooks/src/") && path != "shared/hooks/src/run.rs" && path != "shared/hooks/src/lib.rs" {
            for name in ["crate::run::", "crate::run;", "crate::run,", "crate::run}"] {
                assert!(!text.contains(name), "{path} names {name}");
            }
        }
    }
}

/// Every Rust file of the repository (shared, bins, tests, benches, fuzz).
fn repository_rust_files() -> Vec<std::path::PathBuf> {
    let root = Path::new(ROOT);
    let mut files = Vec::new();
    for dir in ["shared", "bins", "tests", "benches", "fuzz"] {
        if root.join(dir).is_dir() {
            rust_files(&root.join(dir), &mut files);
        }
    }
    files.retain(|f| !f.components().any(|c| c.as_os_str() == "target"));
    files
}

/// Where `text` cites a tracker issue by number (`issue` and a number).
fn issue_references(text: &str) -> Vec<usize> {
    let mut found = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let lower = line.to_ascii_lowercase();
        let hit = lower.match_indices("issue ").any(|(at, m)| lower[at + m.len()..].chars().next().is_some_and(|c| c.is_ascii_digit()));
        if hit {
            found.push(n + 1);
        }
    }
    found
}

#[test]
fn the_issue_scan_finds_a_numbered_reference() {
    assert_eq!(issue_references("// fine\n// see Issue\u{20}12 item 3\n// an issue with x\n// (issue\u{20}7)"), [2, 4]);
}

/// Comments cite docs/..., never a tracker a reader does not have.
#[test]
fn no_rust_file_cites_an_issue_number() {
    let files = repository_rust_files();
    assert!(files.len() > 100, "too few Rust files found: {}", files.len());
    let mut bad = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        for line in issue_references(&text) {
            bad.push(format!("{}:{line}", f.display()));
        }
    }
    assert!(bad.is_empty(), "cite docs/... instead of an issue number:\n{}", bad.join("\n"));
}

/// The package directory `file` belongs to: its nearest ancestor holding a
/// Cargo.toml (a `shared/<crate>` inside the root package's directory is a
/// package of its own).
fn owning_package(file: &Path) -> Option<std::path::PathBuf> {
    file.ancestors().skip(1).find(|d| d.join("Cargo.toml").is_file()).map(Path::to_owned)
}

/// `a/b/../c` as `a/c`, on the path's text alone.
fn normalized(p: &Path) -> std::path::PathBuf {
    let mut out = std::path::PathBuf::new();
    for c in p.components() {
        match c {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            c => out.push(c),
        }
    }
    out
}

/// The `#[path = "..."]` lines of `file` (its text `text`) whose file lies
/// in another package than `file`: the line and where it points.
fn path_includes_leaving_the_package(file: &Path, text: &str) -> Vec<(usize, std::path::PathBuf)> {
    let own = owning_package(file);
    let mut found = Vec::new();
    for (n, l) in text.lines().enumerate() {
        let Some(rest) = l.trim().strip_prefix("#[path = \"") else { continue };
        let target = normalized(&file.parent().unwrap().join(rest.split('"').next().unwrap()));
        if owning_package(&target) != own {
            found.push((n + 1, target));
        }
    }
    found
}

#[test]
fn the_path_scan_finds_an_include_of_another_package() {
    let root = Path::new(ROOT);
    let hooks = root.join("shared/hooks/tests/it/main.rs");
    let text = "//! x\n#[path = \"../../../../tests/support/pass.rs\"]\nmod pass;\n#[path = \"../common/mod.rs\"]\nmod common;";
    assert_eq!(path_includes_leaving_the_package(&hooks, text), [(2, root.join("tests/support/pass.rs"))]);
    let gate = root.join("shared/compact/tests/it/main.rs");
    assert_eq!(path_includes_leaving_the_package(&gate, "#[path = \"../../../gate/tests/common/mod.rs\"]").len(), 1);
    // The root package's benches and its test harness share tests/support.
    let bench = root.join("benches/snapshot.rs");
    assert!(path_includes_leaving_the_package(&bench, "#[path = \"../tests/support/mod.rs\"]").is_empty());
}

/// Test support is shared as a crate, kijito-testkit (docs/testing.md), never
/// by including another package's files: a `#[path]` stays inside its own
/// package. The root package's benches include its `tests/support`: the
/// same package (they are its bench targets, beside its test harness),
/// since the support there runs the root package's own binaries
/// (`CARGO_BIN_EXE_*`), which only its targets can name.
#[test]
fn no_path_include_crosses_a_package() {
    let files = repository_rust_files();
    assert!(files.len() > 100, "too few Rust files found: {}", files.len());
    let mut bad = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        for (line, target) in path_includes_leaving_the_package(&f, &text) {
            bad.push(format!("{}:{line} -> {}", f.strip_prefix(ROOT).unwrap().display(), target.display()));
        }
    }
    assert!(bad.is_empty(), "take it from kijito-testkit (or a module of the package) instead:\n{}", bad.join("\n"));
}
