#!/usr/bin/env python3
"""record_pretool.py codex|claude FIXTURE [--bin-dir DIR]: measure what the real host's PreToolUse
hook receives for each kind of tool call and write it, sanitised, to FIXTURE
(fixtures/hosts/<host>/pretool-by-tool.json).

One `host-e2e <host> --scenario prompts` run, offline: a PreToolUse hook (pretool_probe.py) records
its stdin; a stdio MCP server named `kijito` (mcp_stub.py) is registered; the fake model makes one
call per prompt (`HOST-E2E-RUN-CALL: <tool> <json>`, lib/he2e/policy_driver.py):
  Codex 0.169: exec_command with a command string, exec_command running an `apply_patch` heredoc,
    a freeform `apply_patch` custom tool call, `mcp__kijito/kijito_update` (Codex offers MCP tools
    in the namespace `mcp__<server>`).
  Claude Code 2.1.328: Bash, Write, Edit, mcp__kijito__kijito_update (with --allowedTools for them).
Per call the fixture holds the PreToolUse stdin (or null when the hook did not fire) and the tool
result the model got. Paths of the run's work dir become /home/user (HOME) and /home/user/project
(the project dir). Prints the fixture's path."""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

here = os.path.dirname(os.path.abspath(__file__))
he2e = os.path.join(here, "..", "host-e2e")
sys.path.insert(0, os.path.join(here, "..", "lib"))
from he2e import policy_driver  # noqa: E402

PATCH = "*** Begin Patch\n*** Add File: added.txt\n+hello\n*** End Patch\n"
CALLS = {
    "codex": [
        ("exec_command (cmd string)", "exec_command", {"cmd": "echo hi > hi.txt"}),
        ("exec_command (apply_patch heredoc)", "exec_command", {"cmd": "apply_patch <<'EOF'\n" + PATCH + "EOF\n"}),
        ("apply_patch (freeform custom tool call)", "apply_patch", PATCH),
        ("mcp__kijito/kijito_update", "mcp__kijito/kijito_update", {"id": 21813, "content": "x"}),
    ],
    "claude": [
        ("Bash", "Bash", {"command": "echo hi > hi.txt", "description": "write a file"}),
        ("Write", "Write", {"file_path": "{cwd}/w.txt", "content": "w\n"}),
        ("Edit", "Edit", {"file_path": "{cwd}/edit-me.txt", "old_string": "old", "new_string": "new"}),
        ("mcp__kijito__kijito_update", "mcp__kijito__kijito_update", {"id": 21813, "content": "x"}),
    ],
}


def main():
    host, fixture = sys.argv[1], sys.argv[2]
    extra = sys.argv[3:]
    tmp = tempfile.mkdtemp(prefix="record-pretool.")
    try:
        probe = "python3 " + os.path.join(here, "pretool_probe.py")
        hooks = os.path.join(tmp, "hooks.json")
        with open(hooks, "w") as f:
            json.dump({"hooks": {"PreToolUse": [{"hooks": [{"type": "command", "command": probe, "timeout": 30}]}]}}, f)
        stub = os.path.join(here, "mcp_stub.py")
        calls = CALLS[host]
        prompts = [os.path.join(tmp, "p%d" % (i + 1)) for i in range(len(calls))]
        # the prompts name the project dir, known inside the run: --before-first writes them
        spec = os.path.join(tmp, "calls.json")
        with open(spec, "w") as f:
            json.dump([[tool, args] for _, tool, args in calls], f)
        write = ("python3 -c 'import json,os,sys\n"
                 "for i,(t,a) in enumerate(json.load(open(sys.argv[1]))):\n"
                 "    a=json.loads(json.dumps(a).replace(\"{cwd}\",os.getcwd()))\n"
                 "    open(sys.argv[2]+\"/p%%d\"%%(i+1),\"w\").write(\"%s %%s %%s\\n\"%%(t,json.dumps(a)))' %s %s; echo old > edit-me.txt"
                 % (policy_driver.CALL_MARKER, spec, tmp))
        out = os.path.join(tmp, "out")
        if host == "codex":
            # Codex reads config.toml at thread/start: register the MCP server there
            reg = ("printf '\\n[mcp_servers.kijito]\\ncommand = \"python3\"\\nargs = [\"%s\"]\\n' >> \"$CODEX_HOME/config.toml\"; "
                   % stub)
            argv = [he2e, "codex", "--hooks", hooks, "--before-first", reg + write]
        else:
            mcp = os.path.join(tmp, "mcp.json")
            with open(mcp, "w") as f:
                json.dump({"mcpServers": {"kijito": {"type": "stdio", "command": "python3", "args": [stub]}}}, f)
            argv = [he2e, "claude", "--settings-hooks", hooks, "--before-first", write,
                    "--host-arg=--mcp-config=" + mcp, "--host-arg=--strict-mcp-config",
                    "--host-arg=--allowedTools=Bash,Write,Edit,mcp__kijito__kijito_update"]
        argv += ["--scenario", "prompts", "--out", out, "--timeout", "240", *extra]
        for p in prompts:
            argv += ["--prompt-file", p]
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
        with open(os.path.join(out, "summary.json")) as f:
            summary = json.load(f)
        inputs = []
        if os.path.exists(os.path.join(out, "pretool-inputs.jsonl")):
            with open(os.path.join(out, "pretool-inputs.jsonl")) as f:
                inputs = [json.loads(line)["stdin"] for line in f if line.strip()]
        with open(os.path.join(out, "requests.jsonl")) as f:
            reqs = [json.loads(line) for line in f if line.strip()]
        last = [r["body"] for r in reqs if isinstance(r.get("body"), dict)][-1]
        events = policy_driver.claude_events(last) if host == "claude" else policy_driver.codex_events(last["input"])
        results = [e[1] for e in events if e[0] == "result"]
        record = {"host": summary.get("host_version"), "recordedWith": "tests/hosts/scenarios/record_pretool.py",
                  "calls": {}}
        # tool_use_id: Codex uses the fake model's call_id (call_<seq>); Claude Code its tool_use id. Match in order.
        used = iter(inputs)
        pending = next(used, None)
        for (label, tool, args), result in zip(calls, results + [None] * len(calls)):
            fired = None
            if pending is not None and (host == "claude" or _matches(pending, args)):
                fired, pending = pending, next(used, None)
            record["calls"][label] = {"model_call": {"tool": tool, "input": args}, "pretool_stdin": fired,
                                      "tool_result": result}
        text = json.dumps(record, indent=2, ensure_ascii=False)
        text = re.sub(r"/tmp/host-e2e-(?:codex|claude)\.[A-Za-z0-9_]+/(?:codex-home|home/\.claude)", "/home/user/.%s" % host, text)
        text = re.sub(r"/tmp/host-e2e-(?:codex|claude)\.[A-Za-z0-9_]+/home", "/home/user", text)
        text = re.sub(r"/tmp/host-e2e-(?:codex|claude)\.[A-Za-z0-9_]+/proj", "/home/user/project", text)
        text = re.sub(r"-tmp-host-e2e-(?:codex|claude)-[A-Za-z0-9_]+-proj", "-home-user-project", text)
        text = text.replace("{cwd}", "/home/user/project")
        os.makedirs(os.path.dirname(os.path.abspath(fixture)), exist_ok=True)
        with open(fixture, "w") as f:
            f.write(text + "\n")
        print(fixture)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _matches(stdin, args):
    """Codex: does this PreToolUse stdin belong to the call with these arguments?"""
    ti = stdin.get("tool_input") or {}
    if isinstance(args, dict) and "cmd" in args:
        return ti.get("command") == args["cmd"]
    return isinstance(args, dict) and ti == args


if __name__ == "__main__":
    sys.exit(main())
