//! MCP tool calls (`mcp__<server>__<tool>`): classified by the words of the
//! tool's name, and for SQL tools by the statement they carry; a Kijito
//! store's tools on any server name; the memory ids a call targets, in
//! every spelling (docs/policy.md, "MCP").

use crate::classify::{rules as r, Class, Classification};
use serde_json::Value;

/// The words of a tool name: `create_or_update_file`, `sendMessage`,
/// `kijito-fade` split at `_`, `-`, `.`, spaces and lower-to-upper case.
pub fn words_of(name: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut prev_lower = false;
    for c in name.chars() {
        if c == '_' || c == '-' || c == '.' || c == ' ' {
            if !cur.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
            prev_lower = false;
            continue;
        }
        if c.is_ascii_uppercase() && prev_lower && !cur.is_empty() {
            out.push(std::mem::take(&mut cur));
        }
        prev_lower = c.is_ascii_lowercase();
        cur.push(c.to_ascii_lowercase());
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// A word or its singular (`payments`, `refunds`, `charges`, `orders`).
fn stem(w: &str) -> &str {
    if w.len() > 3 && w.ends_with('s') && !w.ends_with("ss") && !w.ends_with("us") {
        &w[..w.len() - 1]
    } else {
        w
    }
}

/// A tool of a Kijito memory store, whatever the server's name: the server
/// is named kijito, or the tool's name starts with `kijito`.
pub fn kijito_store(server: &str, name: &str) -> bool {
    server.to_ascii_lowercase().contains("kijito") || words_of(name).first().is_some_and(|w| w == "kijito")
}

const READ: &[&str] = &[
    "get", "list", "search", "read", "fetch", "find", "view", "show", "describe", "status", "lookup", "count", "recall", "recent",
    "startup", "explain", "inspect",
];
/// An edit of something others read: an issue, a pull request, a comment,
/// a file or branch of a hosted repository, ...
const PUBLIC_THINGS: &[&str] = &["issue", "pull", "pr", "comment", "review", "release", "discussion", "gist", "post", "page", "wiki"];
/// What a forge server (`github`, `gitlab`, ...) hosts for others to read.
const REPO_THINGS: &[&str] = &["file", "content"];
const CHANGE: &[&str] = &["create", "open", "submit", "update", "edit", "close", "reopen", "add", "lock", "approve", "put", "upsert"];
const MONEY: &[&str] =
    &["transfer", "pay", "payment", "withdraw", "swap", "charge", "refund", "payout", "order", "invoice", "capture", "subscription"];
const DESTROY: &[&str] = &[
    "delete",
    "remove",
    "destroy",
    "drop",
    "purge",
    "erase",
    "truncate",
    "archive",
    "terminate",
    "cancel",
    "revoke",
    "wipe",
    "kill",
    "rm",
];
const SEND: &[&str] = &["send", "email", "mail", "message", "notify", "dm", "sms", "deploy", "rollout", "invoke", "trigger", "dispatch"];
const POST: &[&str] = &["post", "publish", "comment", "tweet", "release", "merge", "reply", "push", "share"];

/// Classify one MCP call by its tool name (after the server's own name)
/// and, for SQL tools, the statement in its input.
pub fn classify_mcp(server: &str, name: &str, input: &Value, out: &mut Classification) {
    let mut words = words_of(name);
    let kijito = kijito_store(server, name);
    // `kijito_update` on server `kijito`: the tool's own verb comes after the server's name
    if words.len() > 1 && (words[0] == server.to_ascii_lowercase() || words[0] == "kijito") {
        words.remove(0);
    }
    let has = |set: &[&str]| words.iter().any(|w| set.contains(&w.as_str()) || set.contains(&stem(w)));
    if has(&["sql", "query", "statement", "execute", "exec"]) && !kijito {
        let sql: Vec<String> = sql_texts(input).into_iter().filter(|t| looks_like_sql(t)).collect();
        if sql.iter().any(|t| crate::classify::sql_writes(t)) {
            out.hit(Class::Delete, r::MCP_SQL_WRITE);
            return;
        }
        if !sql.is_empty() {
            out.hit(Class::Read, r::MCP_READ);
            return;
        }
        // an SQL tool with no statement to read (`execute_sql {}`); a `query_*` tool goes by its name
        if has(&["sql", "statement", "execute", "exec"]) {
            out.hit(Class::Delete, r::MCP_SQL_WRITE);
            return;
        }
    }
    if words.first().is_some_and(|w| READ.contains(&w.as_str()) || w == "query") {
        out.hit(Class::Read, r::MCP_READ);
        return;
    }
    if has(MONEY) {
        out.hit(Class::WalletTransfer, r::MCP_TRANSFER);
    } else if has(DESTROY) {
        out.hit(Class::Delete, r::MCP_DELETE);
    } else if has(SEND) {
        out.hit(Class::Send, r::MCP_SEND);
    } else if has(POST) || (has(CHANGE) && (has(PUBLIC_THINGS) || forge(server) && has(REPO_THINGS))) {
        out.hit(Class::PublicPost, r::MCP_PUBLIC_POST);
    } else {
        out.hit(Class::Write, r::MCP_WRITE);
    }
    if kijito {
        out.hit(Class::Write, r::KIJITO_MCP_WRITE);
    }
}

/// A server that hosts repositories others read.
fn forge(server: &str) -> bool {
    let s = server.to_ascii_lowercase();
    ["git", "bitbucket", "forge", "codeberg"].iter().any(|f| s.contains(f))
}

/// The SQL an MCP call carries (`sql`, `query`, `statement`, `q`, any key case).
fn sql_texts(input: &Value) -> Vec<String> {
    let mut out = Vec::new();
    if let Value::Object(m) = input {
        for (k, v) in m {
            let k = normal_key(k);
            if matches!(k.as_str(), "sql" | "query" | "statement" | "q" | "command" | "statements" | "queries") {
                collect_strings(v, &mut out, 0);
            }
        }
    }
    out
}

fn collect_strings(v: &Value, out: &mut Vec<String>, depth: usize) {
    match v {
        Value::String(s) => out.push(s.clone()),
        Value::Array(a) if depth < 4 => a.iter().take(256).for_each(|x| collect_strings(x, out, depth + 1)),
        _ => {}
    }
}

/// Text whose first word is an SQL statement's (not a search phrase).
fn looks_like_sql(text: &str) -> bool {
    let first: String = text.trim_start_matches(|c: char| !c.is_ascii_alphabetic()).chars().take_while(char::is_ascii_alphabetic).collect();
    matches!(
        first.to_ascii_uppercase().as_str(),
        "SELECT"
            | "INSERT"
            | "UPDATE"
            | "DELETE"
            | "DROP"
            | "CREATE"
            | "ALTER"
            | "TRUNCATE"
            | "WITH"
            | "MERGE"
            | "REPLACE"
            | "GRANT"
            | "REVOKE"
            | "COPY"
            | "CALL"
            | "EXEC"
            | "EXECUTE"
            | "SET"
            | "VACUUM"
            | "SHOW"
            | "DESCRIBE"
            | "DESC"
            | "EXPLAIN"
            | "PRAGMA"
            | "BEGIN"
            | "COMMIT"
            | "VALUES"
            | "TABLE"
            | "USE"
            | "ATTACH"
            | "DETACH"
            | "LOAD"
            | "INSTALL"
            | "RENAME"
            | "COMMENT"
            | "LOCK"
            | "DO"
            | "REINDEX"
            | "CLUSTER"
            | "ANALYZE"
            | "UPSERT"
            | "UNLOAD"
            | "OPTIMIZE"
            | "REFRESH"
    )
}

/// A key lower-cased without `_` and `-` (`memory_id`, `memoryId`, `MEMORY-ID`).
fn normal_key(k: &str) -> String {
    k.chars().filter(|c| *c != '_' && *c != '-').flat_map(char::to_lowercase).collect()
}

/// Keys that name the memory or message a Kijito tool changes.
const ID_KEYS: &[&str] = &["id", "ids", "memoryid", "memoryids", "messageid", "targetid", "pointerid", "lockmessageid", "memory", "target"];

/// Every memory id an MCP call's input names, in any spelling the server
/// could read as that id: `21813`, `21813.0`, `"21813"`, `" 21813.0 "`,
/// `[21813]`, under any key case (`id`, `ID`, `memoryId`, `memory_id`, ...).
pub fn target_ids(input: &Value) -> Vec<u64> {
    let mut out = Vec::new();
    if let Value::Object(m) = input {
        for (k, v) in m {
            if ID_KEYS.contains(&normal_key(k).as_str()) {
                ids_in(v, &mut out, 0);
            }
        }
    }
    out
}

fn ids_in(v: &Value, out: &mut Vec<u64>, depth: usize) {
    match v {
        Value::Number(n) => {
            if let Some(u) = n.as_u64() {
                out.push(u);
            } else if let Some(f) = n.as_f64().filter(|f| f.fract() == 0.0 && *f >= 0.0 && *f < 1.8e19) {
                out.push(f as u64);
            }
        }
        Value::String(s) => {
            let t = s.trim().trim_start_matches('+');
            if let Ok(u) = t.parse::<u64>() {
                out.push(u);
            } else if let Some(f) = t.parse::<f64>().ok().filter(|f| f.fract() == 0.0 && *f >= 0.0 && *f < 1.8e19) {
                out.push(f as u64);
            }
        }
        Value::Array(a) if depth < 4 => a.iter().take(256).for_each(|x| ids_in(x, out, depth + 1)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::classify::{classify, Env};
    use crate::ToolCall;
    use serde_json::json;

    fn rules(tool: &str, input: Value) -> Vec<&'static str> {
        classify(&ToolCall::parse(tool, &input), &Env::default()).irreversible().iter().map(|h| h.rule).collect()
    }

    /// Every rule that fired, in order (reads and plain writes included).
    fn fired(tool: &str, input: Value) -> Vec<&'static str> {
        classify(&ToolCall::parse(tool, &input), &Env::default()).hits.iter().map(|h| h.rule).collect()
    }

    #[test]
    fn tool_names_split_into_lower_case_words() {
        for (name, words) in [
            ("create_or_update_file", &["create", "or", "update", "file"][..]),
            ("sendMessage", &["send", "message"]),
            ("kijito-fade", &["kijito", "fade"]),
            ("a.b c", &["a", "b", "c"]),
            ("__list__Issues_", &["list", "issues"]),
            ("createPR", &["create", "pr"]),
            ("ab", &["ab"]),
            ("", &[]),
        ] {
            assert_eq!(words_of(name), words, "{name:?}");
        }
        for (w, singular) in [
            ("payments", "payment"),
            ("runs", "run"),
            ("ids", "ids"),
            ("pass", "pass"),
            ("status", "status"),
            ("s", "s"),
            ("order", "order"),
        ] {
            assert_eq!(stem(w), singular, "{w}");
        }
    }

    #[test]
    fn a_kijito_store_is_known_by_its_server_or_its_first_word() {
        assert!(kijito_store("Kijito-Prod", "update"));
        assert!(kijito_store("memory", "kijito_update"));
        assert!(!kijito_store("memory", "update_kijito"));
        assert!(!kijito_store("github", "create_issue"));
    }

    /// The server's own name before the verb is dropped (`github_get_issue`
    /// on `github` is a read), but never the only word; public things, and a
    /// forge's files, are public posts; a private thing is a write.
    #[test]
    fn the_server_prefix_public_things_and_forge_files() {
        assert_eq!(fired("mcp__github__github_get_issue", json!({})), [r::MCP_READ]);
        assert_eq!(fired("mcp__search__search", json!({})), [r::MCP_READ]);
        assert_eq!(fired("mcp__x__", json!({})), [r::MCP_WRITE]);
        assert_eq!(fired("mcp__linear__create_issue", json!({})), [r::MCP_PUBLIC_POST]);
        assert_eq!(fired("mcp__gitlab__update_file", json!({})), [r::MCP_PUBLIC_POST]);
        assert_eq!(fired("mcp__files__update_file", json!({})), [r::MCP_WRITE]);
        assert_eq!(fired("mcp__todo__create_task", json!({})), [r::MCP_WRITE]);
        assert_eq!(fired("mcp__kijito__kijito_update", json!({})), [r::MCP_WRITE, r::KIJITO_MCP_WRITE]);
        // a Kijito store's query tool reads memories, whatever its text says
        assert_eq!(fired("mcp__kijito__kijito_query", json!({"query": "DELETE FROM memories"})), [r::MCP_READ]);
    }

    /// Statements are read from strings and lists up to four levels deep
    /// (no server reads a statement nested deeper).
    #[test]
    fn statements_are_read_from_nested_lists_up_to_the_bound() {
        assert_eq!(fired("mcp__pg__query", json!({"statements": [["SELECT 1"], "DELETE FROM t"]})), [r::MCP_SQL_WRITE]);
        assert_eq!(fired("mcp__pg__query", json!({"sql": [[[["DELETE FROM t"]]]]})), [r::MCP_SQL_WRITE]);
        assert_eq!(fired("mcp__pg__query", json!({"sql": [[[[["DELETE FROM t"]]]]]})), [r::MCP_READ]);
        assert_eq!(fired("mcp__pg__query", json!({"sql": "  (select 1)"})), [r::MCP_READ]);
    }

    /// Numbers and numeric strings that are whole, non-negative and below
    /// 1.8e19 are ids; fractions, negatives and larger values are not; lists
    /// are read four levels deep.
    #[test]
    fn target_ids_are_whole_non_negative_and_bounded() {
        for input in [
            json!({"id": 21813.5}),
            json!({"id": -21813.0}),
            json!({"id": "21813.5"}),
            json!({"id": "-21813"}),
            json!({"id": 1.8e19}),
            json!({"id": "1.8e19"}),
            json!({"id": [[[[[21813]]]]]}),
        ] {
            assert!(target_ids(&input).is_empty(), "{input}");
        }
        assert_eq!(target_ids(&json!({"id": 1.7e19})), [17_000_000_000_000_000_000]);
        assert_eq!(target_ids(&json!({"ids": "+7", "target": [[[[5]]]]})), [7, 5]);
    }

    #[test]
    fn money_destruction_deploys_and_repository_writes_by_name() {
        for (tool, rule) in [
            ("mcp__stripe__create_payment", r::MCP_TRANSFER),
            ("mcp__stripe__create_charge", r::MCP_TRANSFER),
            ("mcp__stripe__create_refund", r::MCP_TRANSFER),
            ("mcp__stripe__createPayout", r::MCP_TRANSFER),
            ("mcp__shop__create_order", r::MCP_TRANSFER),
            ("mcp__bank__transfers", r::MCP_TRANSFER),
            ("mcp__linear__archive_issue", r::MCP_DELETE),
            ("mcp__db__drop_table", r::MCP_DELETE),
            ("mcp__db__truncate", r::MCP_DELETE),
            ("mcp__ec2__terminate_instances", r::MCP_DELETE),
            ("mcp__files__delete_file", r::MCP_DELETE),
            ("mcp__vercel__deploy", r::MCP_SEND),
            ("mcp__github__create_or_update_file", r::MCP_PUBLIC_POST),
            ("mcp__github__merge_pull_request", r::MCP_PUBLIC_POST),
        ] {
            assert_eq!(rules(tool, json!({})), vec![rule], "{tool}");
        }
    }

    #[test]
    fn sql_tools_by_their_statement() {
        assert_eq!(rules("mcp__supabase__execute_sql", json!({"query": "delete from users"})), vec![r::MCP_SQL_WRITE]);
        assert_eq!(rules("mcp__pg__query", json!({"sql": "INSERT INTO t VALUES (1)"})), vec![r::MCP_SQL_WRITE]);
        assert_eq!(rules("mcp__supabase__execute_sql", json!({})), vec![r::MCP_SQL_WRITE]);
        assert!(rules("mcp__pg__query", json!({"sql": "select * from t where x = 'delete'"})).is_empty());
        assert!(rules("mcp__supabase__execute_sql", json!({"query": "SELECT 1"})).is_empty());
        // a search tool whose input is called query is no SQL tool
        let c = classify(&ToolCall::parse("mcp__docs__query_docs", &json!({"query": "how to delete a branch"})), &Env::default());
        assert!(!c.mutates(), "{:?}", c.hits);
    }

    #[test]
    fn kijito_stores_on_any_server_and_their_reads() {
        let c = |tool: &str| classify(&ToolCall::parse(tool, &json!({"id": 1})), &Env::default());
        for tool in ["mcp__kijito__kijito_update", "mcp__memory__kijito_update", "mcp__k2__kijito_fade", "mcp__x__kijito_correct"] {
            assert!(c(tool).kijito_write(), "{tool}");
        }
        for tool in ["mcp__kijito__kijito_recall", "mcp__other__kijito_get", "mcp__kijito__kijito_recent"] {
            let got = c(tool);
            assert!(!got.kijito_write() && !got.mutates(), "{tool}");
        }
    }

    #[test]
    fn target_ids_in_every_spelling() {
        for input in [
            json!({"id": 21813}),
            json!({"id": 21813.0}),
            json!({"id": "21813.0"}),
            json!({"id": " 21813 "}),
            json!({"id": [21813]}),
            json!({"ID": 21813}),
            json!({"Memory_Id": "21813"}),
            json!({"memoryId": [1, 21813.0]}),
        ] {
            assert!(target_ids(&input).contains(&21813), "{input}");
        }
        assert!(target_ids(&json!({"content": "21813"})).is_empty());
    }
}
