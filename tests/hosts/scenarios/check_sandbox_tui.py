#!/usr/bin/env python3
"""check_sandbox_tui.py OUT: the `sandbox-tui` scenario (the Claude Code TUI in tmux, the sandbox
as kijito-setup writes it, no kijito-qa hook): the helper ran (outside the sandbox), the config
write and the agent's `tmux if-shell ... send-keys` to its own pane failed. Exit 1 otherwise."""
import glob, json, os, sys

out = sys.argv[1]
calls, results = [], {}
for path in glob.glob(os.path.join(out, "transcript-*.jsonl")):
    for line in open(path):
        v = json.loads(line)
        content = (v.get("message") or {}).get("content")
        for p in content if isinstance(content, list) else []:
            if p.get("type") == "tool_use":
                calls.append((p["id"], p["input"].get("command", "")))
            elif p.get("type") == "tool_result":
                c = p.get("content")
                results[p["tool_use_id"]] = (c if isinstance(c, str) else json.dumps(c), bool(p.get("is_error")))
want = [
    ("helper: memory-latch init", lambda t, e: not e and "initialised" in t),
    ("cd to the config dir, write policy.json", lambda t, e: e and "Read-only file system" in t),
    ("tmux if-shell send-keys to the pane", lambda t, e: e and "Operation not permitted" in t),
    ("helper: memory-latch status", lambda t, e: not e and "objective: tui" in t),
]
bad = 0 if len(calls) == len(want) else 1
if bad:
    print("FAIL: %d tool calls, want %d" % (len(calls), len(want)))
for (name, ok), (cid, cmd) in zip(want, calls):
    text, err = results.get(cid, ("<no result>", True))
    good = ok(text, err)
    bad += not good
    print("%s %s: %s -> %s%s" % ("ok  " if good else "FAIL", name, cmd[:100], "error: " if err else "", text[:160].replace("\n", " | ")))
sys.exit(1 if bad else 0)
