//! [`ToolCall`]: one PreToolUse call of either host, parsed at the edge.
//!
//! Claude Code 2.1.328: `Bash` (`command`), `Write`/`Edit`/`MultiEdit`
//! (`file_path`), `NotebookEdit` (`notebook_path`), `mcp__<server>__<tool>`,
//! and its read-only tools (`Read`, `Glob`, `Grep`, `LS`, `WebFetch`, ...).
//! Codex 0.169: the shell tool (`shell`, `exec_command`, `local_shell`,
//! `unified_exec`, or `Bash`) with `command`/`cmd` as a string or an argv
//! array, `apply_patch` whose patch text names the files, and MCP calls
//! (`mcp__<server>__<tool>`). The shell lines come from
//! [`kijito_protocol::command::tool_command_lines`].
//!
//! [`ParsedCall`] is the one reading of a PreToolUse call's raw
//! `tool_input` (docs/architecture.md, "One parsed tool call"): the
//! command guard, the boot witness and the classifier read its fields,
//! and nothing else pulls fields out of `tool_input`. Each command line is
//! parsed once, here ([`ShellLine`]); the guard and the classifier read that
//! parse.

use kijito_protocol::shell::ShellLine;
use serde_json::Value;

/// What one tool call is, for the classifier.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolCall {
    /// A shell tool: the command lines it would run (each with its one
    /// parse); `invalid` when a `command`/`cmd` value was neither a string
    /// nor an argv of strings.
    Shell { tool: String, lines: Vec<ShellLine>, invalid: Option<String> },
    /// A host tool that writes the named files (Write, Edit, MultiEdit, NotebookEdit).
    FileWrite { tool: String, paths: Vec<String> },
    /// `apply_patch`: the files the patch adds/updates (and moves to), and deletes.
    Patch { tool: String, writes: Vec<String>, deletes: Vec<String> },
    /// `mcp__<server>__<tool>` and its input (SQL tools and memory ids are read from it).
    Mcp { tool: String, server: String, name: String, input: Value },
    /// A host tool that only reads (or only talks to the agent itself).
    Read { tool: String },
    /// Any other tool name: treated as a write of unknown effect.
    Other { tool: String },
}

/// Claude Code's shell tool and Codex's shell tool names.
pub const SHELL_TOOLS: &[&str] = &["Bash", "shell", "exec_command", "local_shell", "unified_exec", "container.exec", "shell_command"];
/// Host tools that write one named file.
pub const FILE_WRITE_TOOLS: &[&str] = &["Write", "Edit", "MultiEdit", "NotebookEdit"];
/// Host tools that change nothing outside the agent's own state.
pub const READ_TOOLS: &[&str] = &[
    "Read",
    "Glob",
    "Grep",
    "LS",
    "NotebookRead",
    "WebFetch",
    "WebSearch",
    "TodoWrite",
    "TodoRead",
    "Task",
    "Agent",
    "ExitPlanMode",
    "BashOutput",
    "ListMcpResourcesTool",
    "ReadMcpResourceTool",
    "view_image",
    "update_plan",
    "web_search",
    "read_file",
    "list_dir",
    "grep_files",
];

/// One PreToolUse call, read once at the hook's edge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParsedCall {
    /// What the classifier judges.
    pub kind: ToolCall,
    /// Every `command`/`cmd` line of the input whatever the tool name, each
    /// parsed once (the command guard checks them all; `Err`: a value that
    /// is no command).
    pub lines: Vec<Result<ShellLine, String>>,
    /// Codex's `workdir`, when a non-empty string.
    pub workdir: Option<String>,
}

impl ParsedCall {
    pub fn parse(tool_name: &str, tool_input: &Value) -> ParsedCall {
        let lines = parse_lines(tool_input);
        let kind = ToolCall::parse_with_lines(tool_name, tool_input, &lines);
        let workdir = tool_input.get("workdir").and_then(Value::as_str).filter(|w| !w.is_empty()).map(str::to_owned);
        ParsedCall { kind, lines, workdir }
    }

    /// The call a raw hook stdin object names (its `tool_name`, if a
    /// string, and its `tool_input`): for stdin the hook could not parse
    /// whole, which is still denied unless clearly no shell call.
    pub fn of_hook_object(stdin: &Value) -> (Option<&str>, ParsedCall) {
        let tool = stdin.get("tool_name").and_then(Value::as_str);
        (tool, ParsedCall::parse(tool.unwrap_or(""), stdin.get("tool_input").unwrap_or(&Value::Null)))
    }

    /// The MCP tool's input, for the SQL, path and memory-id readers.
    pub fn mcp_input(&self) -> Option<&Value> {
        match &self.kind {
            ToolCall::Mcp { input, .. } => Some(input),
            _ => None,
        }
    }
}

impl ToolCall {
    /// Parse a PreToolUse `tool_name` and `tool_input`.
    pub fn parse(tool_name: &str, tool_input: &Value) -> ToolCall {
        ToolCall::parse_with_lines(tool_name, tool_input, &parse_lines(tool_input))
    }

    /// [`ToolCall::parse`] with the command lines already read.
    fn parse_with_lines(tool_name: &str, tool_input: &Value, lines: &[Result<ShellLine, String>]) -> ToolCall {
        let tool = tool_name.to_owned();
        if let Some(rest) = tool_name.strip_prefix("mcp__") {
            let (server, name) = rest.split_once("__").unwrap_or(("", rest));
            return ToolCall::Mcp { tool, server: server.to_owned(), name: name.to_owned(), input: tool_input.clone() };
        }
        if matches!(tool_name, "apply_patch" | "applypatch" | "ApplyPatch") {
            let text = ["input", "patch", "command", "cmd"]
                .iter()
                .filter_map(|k| tool_input.get(*k))
                .find_map(|v| match v {
                    Value::String(s) => Some(s.clone()),
                    Value::Array(a) => a.iter().filter_map(Value::as_str).find(|s| s.contains("*** Begin Patch")).map(str::to_owned),
                    _ => None,
                })
                .or_else(|| tool_input.as_str().map(str::to_owned))
                .unwrap_or_default();
            let (writes, deletes) = patch_files(&text);
            return ToolCall::Patch { tool, writes, deletes };
        }
        if FILE_WRITE_TOOLS.contains(&tool_name) {
            let paths = ["file_path", "notebook_path", "path"]
                .iter()
                .filter_map(|k| tool_input.get(*k).and_then(Value::as_str))
                .map(str::to_owned)
                .collect();
            return ToolCall::FileWrite { tool, paths };
        }
        if SHELL_TOOLS.contains(&tool_name) || !lines.is_empty() {
            let invalid = lines.iter().find_map(|l| l.as_ref().err().cloned());
            return ToolCall::Shell { tool, lines: lines.iter().filter_map(|l| l.as_ref().ok().cloned()).collect(), invalid };
        }
        if READ_TOOLS.contains(&tool_name) {
            return ToolCall::Read { tool };
        }
        ToolCall::Other { tool }
    }
}

/// The input's command lines ([`kijito_protocol::command::tool_command_lines`]),
/// each parsed once.
fn parse_lines(tool_input: &Value) -> Vec<Result<ShellLine, String>> {
    kijito_protocol::command::tool_command_lines(Some(tool_input)).into_iter().map(|l| l.map(ShellLine::parse)).collect()
}

/// The files a Codex patch (`*** Begin Patch` ... `*** End Patch`) touches:
/// (added, updated and moved-to files; deleted files).
pub fn patch_files(text: &str) -> (Vec<String>, Vec<String>) {
    let mut writes = Vec::new();
    let mut deletes = Vec::new();
    for line in text.lines() {
        let line = line.trim_end();
        for prefix in ["*** Add File: ", "*** Update File: ", "*** Move to: "] {
            if let Some(p) = line.strip_prefix(prefix) {
                writes.push(p.trim().to_owned());
            }
        }
        if let Some(p) = line.strip_prefix("*** Delete File: ") {
            deletes.push(p.trim().to_owned());
        }
    }
    (writes, deletes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn both_hosts_shapes() {
        assert_eq!(
            ToolCall::parse("Bash", &json!({"command": "ls -la", "description": "list"})),
            ToolCall::Shell { tool: "Bash".into(), lines: vec!["ls -la".into()], invalid: None }
        );
        assert_eq!(
            ToolCall::parse("shell", &json!({"command": ["bash", "-lc", "rm -rf x"], "workdir": "/p"})),
            ToolCall::Shell { tool: "shell".into(), lines: vec!["rm -rf x".into()], invalid: None }
        );
        assert_eq!(
            ToolCall::parse("exec_command", &json!({"cmd": "git status"})),
            ToolCall::Shell { tool: "exec_command".into(), lines: vec!["git status".into()], invalid: None }
        );
        assert!(matches!(ToolCall::parse("shell", &json!({"command": 5})), ToolCall::Shell { invalid: Some(_), .. }));
        assert_eq!(
            ToolCall::parse("NotebookEdit", &json!({"notebook_path": "/p/n.ipynb", "new_source": "x"})),
            ToolCall::FileWrite { tool: "NotebookEdit".into(), paths: vec!["/p/n.ipynb".into()] }
        );
        assert_eq!(
            ToolCall::parse("mcp__github__create_issue", &json!({})),
            ToolCall::Mcp {
                tool: "mcp__github__create_issue".into(),
                server: "github".into(),
                name: "create_issue".into(),
                input: json!({})
            }
        );
        let patch =
            "*** Begin Patch\n*** Add File: a.rs\n+x\n*** Update File: b.rs\n*** Move to: c.rs\n*** Delete File: d.rs\n*** End Patch\n";
        assert_eq!(
            ToolCall::parse("apply_patch", &json!({"input": patch})),
            ToolCall::Patch {
                tool: "apply_patch".into(),
                writes: vec!["a.rs".into(), "b.rs".into(), "c.rs".into()],
                deletes: vec!["d.rs".into()]
            }
        );
        assert_eq!(ToolCall::parse("Read", &json!({"file_path": "/x"})), ToolCall::Read { tool: "Read".into() });
        assert_eq!(ToolCall::parse("Frobnicate", &json!({})), ToolCall::Other { tool: "Frobnicate".into() });
    }

    /// A shell tool is a shell call even with no command line to read (its
    /// classification then decides on nothing it could run); any other tool
    /// carrying a `command` is one too.
    #[test]
    fn a_shell_tool_without_a_command_is_still_a_shell_call() {
        for tool in SHELL_TOOLS {
            assert_eq!(ToolCall::parse(tool, &json!({})), ToolCall::Shell { tool: (*tool).into(), lines: vec![], invalid: None }, "{tool}");
        }
        assert_eq!(
            ToolCall::parse("Frobnicate", &json!({"command": "ls"})),
            ToolCall::Shell { tool: "Frobnicate".into(), lines: vec!["ls".into()], invalid: None }
        );
    }

    /// Codex's `apply_patch` as an argv (`["apply_patch", "<patch>"]`): the
    /// files come from the element holding the patch, not the tool's name.
    #[test]
    fn a_patch_given_as_an_argv_names_its_files() {
        let patch = "*** Begin Patch\n*** Update File: src/a.rs\n*** Delete File: old.rs\n*** End Patch\n";
        assert_eq!(
            ToolCall::parse("apply_patch", &json!({"command": ["apply_patch", patch]})),
            ToolCall::Patch { tool: "apply_patch".into(), writes: vec!["src/a.rs".into()], deletes: vec!["old.rs".into()] }
        );
    }

    /// The one reading: every command line whatever the tool (an MCP call
    /// carrying a `command` is still guarded), the workdir, the MCP input.
    #[test]
    fn a_parsed_call_keeps_every_line_the_workdir_and_the_mcp_input() {
        let c = ParsedCall::parse("mcp__x__run", &json!({"command": "rm -rf /", "workdir": "/p"}));
        assert_eq!(c.lines, vec![Ok("rm -rf /".into())]);
        assert_eq!(c.workdir.as_deref(), Some("/p"));
        assert_eq!(c.mcp_input(), Some(&json!({"command": "rm -rf /", "workdir": "/p"})));
        let c = ParsedCall::parse("shell", &json!({"command": ["bash", "-lc", "ls"], "workdir": ""}));
        assert_eq!(c.kind, ToolCall::Shell { tool: "shell".into(), lines: vec!["ls".into()], invalid: None });
        assert_eq!((c.workdir.as_deref(), c.mcp_input()), (None, None));
        let stdin = json!({"tool_name": "Bash", "tool_input": {"cmd": "ls"}});
        let (tool, c) = ParsedCall::of_hook_object(&stdin);
        assert_eq!((tool, c.lines), (Some("Bash"), vec![Ok("ls".into())]));
        let stdin = json!({"tool_name": 5});
        let (tool, c) = ParsedCall::of_hook_object(&stdin);
        assert_eq!((tool, c.kind), (None, ToolCall::Other { tool: String::new() }));
        let c = ParsedCall::parse("Read", &serde_json::Value::Null);
        assert_eq!((c.kind, c.lines), (ToolCall::Read { tool: "Read".into() }, vec![]));
    }
}
