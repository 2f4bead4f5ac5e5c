//! The crate graph is the architecture (docs/architecture.md): the table of
//! allowed dependencies there equals the workspace's real dependencies, the
//! crates below the client link no HTTP stack, no library depends on a
//! binary package, and the declared `rust-version` is the real minimum of the
//! locked dependency graph.
#![allow(clippy::unwrap_used)]

use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");
const HTTP_STACK: &[&str] = &["reqwest", "rustls", "hyper", "tokio", "h2", "hyper-util"];
const NO_HTTP: &[&str] = &["kijito-protocol", "kijito-files", "kijito-gate", "kijito-latch", "kijito-wake", "kijito-compact", "kijito-compact-codex", "kijito-hooks"];

fn metadata() -> Value {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args(["metadata", "--format-version", "1", "--locked", "--offline"])
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
    assert_eq!(bins, BTreeSet::from(["precompact", "postcompact", "session-hook"]));
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
