#!/usr/bin/env python3
"""record_posttool.py codex|claude FIXTURE [host-e2e args...]: measure what the real host's
PostToolUse (and Claude Code's PostToolUseFailure) hook receives, next to PreToolUse, per tool
call (reserve at PreToolUse, spend at PostToolUse). Not in the default run.

One `host-e2e <host> --scenario prompts` run, offline. A throwaway capture hook
(posttool_capture.py, registered only in the run's own hooks file) records every PreToolUse,
PostToolUse and PostToolUseFailure stdin; it denies a call whose input holds "deny-me". The fake
model makes one call per prompt (HOST-E2E-RUN-CALL, lib/he2e/policy_driver.py): calls that
succeed, fail, are refused by the host itself, or are denied by the hook. FIXTURE gets, in order,
the model calls, the tool results the model got, and every hook stdin (paths of the run's work dir
become /home/user and /home/user/project), plus per tool_use_id the events that fired.
With --check (first after FIXTURE) FIXTURE is only read: the run's facts (per call, in order, the
events that fired) are compared with it; exit 1 and a diff when they differ."""
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
BAD_PATCH = "*** Begin Patch\n*** Update File: missing.txt\n@@\n-a\n+b\n*** End Patch\n"
CALLS = {
    "codex": [
        ("exec_command ok", "exec_command", {"cmd": "echo hi > hi.txt"}),
        ("exec_command exit 3", "exec_command", {"cmd": "echo oops; exit 3"}),
        ("exec_command refused by the host (rm -rf)", "exec_command", {"cmd": "rm -rf build"}),
        ("exec_command rm -f one file", "exec_command", {"cmd": "rm -f gone.txt"}),
        ("exec_command denied by the hook", "exec_command", {"cmd": "echo deny-me"}),
        ("exec_command apply_patch heredoc", "exec_command", {"cmd": "apply_patch <<'EOF'\n" + PATCH + "EOF\n"}),
        ("exec_command apply_patch heredoc failing", "exec_command", {"cmd": "apply_patch <<'EOF'\n" + BAD_PATCH + "EOF\n"}),
        ("apply_patch (freeform custom tool call)", "apply_patch", PATCH),
        ("mcp__kijito/kijito_update", "mcp__kijito/kijito_update", {"id": 21813, "content": "x"}),
    ],
    "claude": [
        ("Bash ok", "Bash", {"command": "echo hi > hi.txt", "description": "write a file"}),
        ("Bash exit 3", "Bash", {"command": "echo oops; exit 3", "description": "fail"}),
        ("Bash refused by the host (disallowedTools Bash(rm:*))", "Bash", {"command": "rm -f gone.txt", "description": "rm"}),
        ("Bash denied by the hook", "Bash", {"command": "echo deny-me", "description": "deny"}),
        ("Write", "Write", {"file_path": "{cwd}/w.txt", "content": "w\n"}),
        ("Edit", "Edit", {"file_path": "{cwd}/edit-me.txt", "old_string": "old", "new_string": "new"}),
        ("Edit failing (old_string absent)", "Edit", {"file_path": "{cwd}/edit-me.txt", "old_string": "absent", "new_string": "x"}),
        ("mcp__kijito__kijito_update", "mcp__kijito__kijito_update", {"id": 21813, "content": "x"}),
    ],
}


def sanitize(text, host):
    w = r"[^\"\s]*?/host-e2e-(?:tui-)?(?:codex|claude)\.[A-Za-z0-9_]+"
    text = re.sub(w + r"/(?:codex-home|home/\.claude)", "/home/user/.%s" % host, text)
    text = re.sub(w + r"/home", "/home/user", text)
    text = re.sub(w + r"/proj", "/home/user/project", text)
    text = re.sub(w + r"/tmux\.sock", "/home/user/tmux.sock", text)
    text = re.sub(r"-[^\"/\s]*?-host-e2e-(?:tui-)?(?:codex|claude)-[A-Za-z0-9_]+-proj", "-home-user-project", text)
    return text.replace("{cwd}", "/home/user/project")


def facts(record):
    """What the fixture asserts: per tool call, in order, the events that fired."""
    return [[e["event"] for e in v] for v in record["events_by_tool_use_id"].values()]


def main():
    host, fixture = sys.argv[1], sys.argv[2]
    extra = sys.argv[3:]
    check = extra[:1] == ["--check"]
    if check:
        extra = extra[1:]
    tmp = tempfile.mkdtemp(prefix="record-posttool.")
    try:
        log = os.path.join(tmp, "capture.jsonl")
        cap = "python3 %s %s" % (os.path.join(here, "posttool_capture.py"), log)
        events = ["PreToolUse", "PostToolUse"] + (["PostToolUseFailure"] if host == "claude" else [])
        hooks = os.path.join(tmp, "hooks.json")
        with open(hooks, "w") as f:
            json.dump({"hooks": {ev: [{"hooks": [{"type": "command", "command": cap, "timeout": 30}]}]
                                 for ev in events}}, f)
        stub = os.path.join(here, "mcp_stub.py")
        calls = CALLS[host]
        spec = os.path.join(tmp, "calls.json")
        with open(spec, "w") as f:
            json.dump([[tool, args] for _, tool, args in calls], f)
        write = ("python3 -c 'import json,os,sys\n"
                 "for i,(t,a) in enumerate(json.load(open(sys.argv[1]))):\n"
                 "    a=json.loads(json.dumps(a).replace(\"{cwd}\",os.getcwd()))\n"
                 "    open(sys.argv[2]+\"/p%%d\"%%(i+1),\"w\").write(\"%s %%s %%s\\n\"%%(t,json.dumps(a)))' %s %s;"
                 " echo old > edit-me.txt; echo g > gone.txt; mkdir -p build"
                 % (policy_driver.CALL_MARKER, spec, tmp))
        out = os.path.join(tmp, "out")
        if host == "codex":
            reg = ("printf '\\n[mcp_servers.kijito]\\ncommand = \"python3\"\\nargs = [\"%s\"]\\n' >> \"$CODEX_HOME/config.toml\"; "
                   % stub)
            argv = [he2e, "codex", "--hooks", hooks, "--before-first", reg + write]
        else:
            mcp = os.path.join(tmp, "mcp.json")
            with open(mcp, "w") as f:
                json.dump({"mcpServers": {"kijito": {"type": "stdio", "command": "python3", "args": [stub]}}}, f)
            argv = [he2e, "claude", "--settings-hooks", hooks, "--before-first", write,
                    "--host-arg=--mcp-config=" + mcp, "--host-arg=--strict-mcp-config",
                    "--host-arg=--allowedTools=Bash,Write,Edit,mcp__kijito__kijito_update",
                    "--host-arg=--disallowedTools=Bash(rm:*)"]
        argv += ["--scenario", "prompts", "--out", out, "--timeout", "400", *extra]
        for i in range(len(calls)):
            argv += ["--prompt-file", os.path.join(tmp, "p%d" % (i + 1))]
        rc = subprocess.run(argv, stdout=subprocess.DEVNULL).returncode
        with open(os.path.join(out, "summary.json")) as f:
            summary = json.load(f)
        recs = []
        if os.path.exists(log):
            with open(log) as f:
                recs = [json.loads(line) for line in f if line.strip()]
        with open(os.path.join(out, "requests.jsonl")) as f:
            reqs = [json.loads(line) for line in f if line.strip()]
        last = [r["body"] for r in reqs if isinstance(r.get("body"), dict)][-1]
        evs = policy_driver.claude_events(last) if host == "claude" else policy_driver.codex_events(last["input"])
        by_id = {}
        for r in recs:
            s = r["stdin"] if isinstance(r["stdin"], dict) else {}
            by_id.setdefault(s.get("tool_use_id"), []).append(
                {"event": r["event"], "tool_name": s.get("tool_name"), "input": s.get("tool_input")})
        record = {"host": summary.get("host_version"), "recordedWith": "tests/hosts/scenarios/record_posttool.py",
                  "host_e2e_rc": rc,
                  "model_calls": [{"label": l, "tool": t, "input": a} for l, t, a in calls],
                  "tool_results": [e[1] for e in evs if e[0] == "result"],
                  "events_by_tool_use_id": by_id,
                  "hook_stdin": [r["stdin"] for r in recs]}
        text = sanitize(json.dumps(record, indent=2, ensure_ascii=False), host)
        if check:
            with open(fixture) as f:
                want = facts(json.load(f))
            got = facts(record)
            if got != want:
                print("record_posttool: %s differs from %s:\n  fixture %s\n  now     %s" % (host, fixture, want, got))
                return 1
            print("record_posttool: %s matches %s" % (host, fixture))
            return 0 if rc == 0 else 1
        os.makedirs(os.path.dirname(os.path.abspath(fixture)), exist_ok=True)
        with open(fixture, "w") as f:
            f.write(text + "\n")
        print(fixture)
        return 0 if rc == 0 else 1
    finally:
        if not os.environ.get("KEEP"):
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            print(tmp, file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
