#!/usr/bin/env python3
"""check_host_consent.py OUT ROOT: consent mode host on the real Claude Code TUI (docs/protocol.md §8a
step 7a). The fake model's `rm -rf build` was put to the user in the host's own dialog (the pane showed
the policy's ask reason), the person answered 1 (Yes), the call ran (build/ is gone; the transcript has
its result), and the PostToolUse hook recorded one host_consent latch entry naming that call's action
hash and the transcript's tool_use id; the asked record is spent."""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from he2e.verdict import exit_status, fail, ok  # noqa: E402

out, root = sys.argv[1], sys.argv[2]

summary = json.load(open(os.path.join(out, "summary.json")))
if not summary.get("ok"):
    fail("host-e2e run not ok: %s" % summary.get("errors"), stop=False)
dialog = [c["file"] for c in summary.get("captures", []) if c["file"].endswith("-dialog.txt")]
text = open(os.path.join(out, dialog[0]), encoding="utf-8").read() if dialog else ""
flat = " ".join(text.split())
if "asks the user (policy_host_consent)" in flat and "rm -rf build" in flat:
    ok("the host's own dialog showed the policy's reason for `rm -rf build` (%s)" % dialog[0])
else:
    fail("no dialog with the policy's ask reason in the pane captures: %r" % flat[-600:], stop=False)

kept = os.path.join(out, "host-consent")  # scenarios/after-host-consent.sh
# The call as the host recorded it: the transcript's tool_use of `rm -rf build` and its result.
uses, results = [], {}
for line in open(os.path.join(kept, "transcript.jsonl"), encoding="utf-8"):
    try:
        e = json.loads(line)
    except ValueError:
        continue
    content = (e.get("message") or {}).get("content") if isinstance(e.get("message"), dict) else None
    for part in content if isinstance(content, list) else []:
        if part.get("type") == "tool_use" and (part.get("input") or {}).get("command") == "rm -rf build":
            uses.append(part["id"])
        if part.get("type") == "tool_result":
            results[part.get("tool_use_id")] = part
tool_use_id = uses[0] if len(uses) == 1 else None
if tool_use_id and tool_use_id in results and not results[tool_use_id].get("is_error"):
    ok("the transcript has one Bash `rm -rf build` call (%s) and its result, not an error" % tool_use_id)
else:
    fail("expected one `rm -rf build` tool_use with a non-error result: %s" % uses, stop=False)

state = open(os.path.join(kept, "build"), encoding="utf-8").read().strip()
if state == "gone":
    ok("the call ran: build/ is gone")
else:
    fail("build/ is %s (the call did not run)" % state, stop=False)

files = [l.split(None, 1) for l in open(os.path.join(kept, "actions.txt"), encoding="utf-8") if l.strip()]
actions = [(h, os.path.basename(p.strip())) for h, p in files if os.path.basename(p.strip()).startswith("sha256-")]
asked = [p.strip() for _, p in files if os.path.basename(p.strip()).startswith("asked-")]
manifest = open(os.path.join(kept, "manifest.md"), encoding="utf-8").read()
want = ["tool call ran after the user's Yes in the host's dialog (consent mode host): sha256:%s, tool_use_id %s" % (h, tool_use_id)
        for h, _ in actions]
events = manifest.replace(" ", "").count('"event":"host_consent"')
if len(actions) == 1 and actions[0][1] == "sha256-%s.json" % actions[0][0] and events == 1 and any(w in manifest for w in want):
    ok("the latch recorded one host_consent entry with the call's action hash (%s) and tool_use_id" % actions[0][1])
else:
    fail("expected one host_consent entry naming the one action file's hash and %s: actions %s, %d entries" % (tool_use_id, actions, events), stop=False)
if not asked:
    ok("the asked record was spent")
else:
    fail("asked records left: %s" % asked, stop=False)

sys.exit(exit_status())
