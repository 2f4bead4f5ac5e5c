#!/usr/bin/env python3
"""Assertions on one tmux-adapter run (host-e2e tui-claude / tui-codex with compact-request.sh).

check_compact.py KIND OUT_DIR ROOT
KIND: compacted (a pass was recorded: exactly one compaction, typed by the adapter, and the next
model request carries the ATTESTED re-entry), pass_missing | no_safe_trigger (the request is
refused with that code, the adapter types nothing, nothing compacts).
Prints one line per check; exits 1 on the first failed check."""
import json
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from he2e.common import strings_in  # noqa: E402
from check import fail, jsonl, ok  # noqa: E402  (one copy of the scenario helpers)

ATTESTED = re.compile(r"re-entry after compaction: ATTESTED")


def main():
    kind, out, root = sys.argv[1:4]
    s = json.load(open(os.path.join(out, "summary.json")))
    host = s.get("host") or ("codex" if "codex" in os.path.basename(out.rstrip("/")) else "claude")
    if not s.get("ok"):
        fail("the TUI run failed: %s" % s.get("errors"))
    reqs = jsonl(os.path.join(out, "requests.jsonl"))
    texts = [t for r in reqs for t in strings_in(r.get("body"))]
    # Keys from anyone but the harness (caller "harness" types the prompts, "then" the request
    # prompt): the adapter's worker runs in the pane's process tree (caller "pane").
    keys = [k for k in s["keys_to_pane"] if k["caller"] not in ("harness", "then")]
    sock = next((st["env"].get("HOST_E2E_TMUX_SOCKET") for st in s["steps"] if st.get("step") == "then"), None)
    pane = next((st["env"].get("HOST_E2E_TMUX_PANE") for st in s["steps"] if st.get("step") == "then"), None)
    if kind == "compacted":
        if not any('"type":"kijito.compaction.requested"' in t for t in texts):
            fail("no model request carries the requested line (the tool result of kijito-compact request)")
        ok("the agent's tool call ran kijito-compact request (requested line in the tool result)")
        want = [["-S", sock, "send-keys", "-t", pane, "-l", "/compact"], ["-S", sock, "send-keys", "-t", pane, "Enter"]]
        got = [k["argv"] for k in keys]
        if host == "codex" and not got:
            # Codex runs shell tools through a login shell whose profile resets PATH, so the
            # worker (started by the tool call) reaches the real tmux, not the logging shim.
            # Then the pane itself is the evidence: "/compact" typed once, nothing else.
            final = open(os.path.join(out, sorted(f for f in os.listdir(out) if f.startswith("pane-") and "final" in f)[-1]),
                         encoding="utf-8").read()
            after = final.split("kijito.compaction.requested", 1)[-1]
            if "Context compacted" not in after:
                fail("the pane does not show 'Context compacted' after the request")
            before = after.split("Context compacted", 1)[0]
            typed = [line.strip() for line in before.splitlines() if line.strip().startswith("\u203a ")]
            if [t for t in typed if t != "\u203a /compact"]:
                fail("text other than /compact was typed before the compaction: %s" % typed)
            ok("Codex: the worker's tmux calls bypass the shim (login-shell PATH); the pane shows nothing "
               "typed between the request and 'Context compacted'")
        elif got != want:
            fail("the pane received %s from the adapter, want exactly %s" % (json.dumps(got), json.dumps(want)))
        else:
            ok("the adapter typed exactly `send-keys -l /compact` then one `send-keys Enter` into %s, nothing else" % pane)
        if s["compactions"] != 1:
            fail("%d compactions, want exactly 1" % s["compactions"])
        if keys:
            stop_t = [e["t"] for e in s["hook_events"] if e["event"] == "Stop"]
            if not stop_t or keys[0]["t"] < max(t for t in stop_t if t <= keys[0]["t"]):
                fail("the adapter typed before a Stop")
            ok("one compaction, typed %.3f s after the last Stop" % (keys[0]["t"] - max(t for t in stop_t if t <= keys[0]["t"])))
        else:
            ok("one compaction")
        expected = json.load(open(os.path.join(out, "expected.json")))
        comp = s["compaction_requests"][0]
        kinds = {q["seq"]: q["kind"] for q in s["requests"]}
        nxt = [r for r in reqs if r["seq"] > comp and kinds.get(r["seq"]) == "turn"]
        if not nxt:
            fail("no model request after the compaction")
        body = [t for t in strings_in(nxt[0].get("body"))]
        hit = [t for t in body if ATTESTED.search(t) and expected["snapshotDigest"] in t]
        if not hit:
            fail("the first model request after compaction (seq %d) lacks the ATTESTED re-entry with snapshot %s"
                 % (nxt[0]["seq"], expected["snapshotDigest"]))
        ok("the next model request (seq %d) carries the ATTESTED re-entry with snapshot digest %s"
           % (nxt[0]["seq"], expected["snapshotDigest"][:16]))
    else:
        code = "kijito_compact_failed:" + kind
        if not any(code in t for t in texts):
            fail("no model request carries %s (the tool result)" % code)
        ok("the request was refused with %s (seen by the model as the tool result)" % code)
        if kind == "no_safe_trigger" and not any("ask the user to run /compact" in t for t in texts):
            fail("the refusal does not tell the agent to ask the user to run /compact")
        if [k for k in keys if "send-keys" in (k["argv"] or [])]:
            fail("the pane received keys from the adapter: %s" % json.dumps(keys))
        if s["compactions"] != 0:
            fail("%d compactions, want 0" % s["compactions"])
        ok("nothing typed, nothing compacted")


main()
