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
from he2e.verdict import fail, jsonl, ok  # noqa: E402  (the checkers' one copy)

ATTESTED = re.compile(r"re-entry after compaction: ATTESTED")
UNATTESTED = re.compile(r"re-entry after compaction: UNATTESTED")
# The hooks' re-entry text (shared/hooks/src/text.rs): "kijito-qa re-entry after compaction:
# ATTESTED (session S).\n..." / "... UNATTESTED (session S). Reason: ...".
REENTRY = re.compile(r"kijito-qa re-entry after compaction: (ATTESTED|UNATTESTED) \(session ([^)]+)\)")


def reentries(texts, sid):
    """(kind, text from the marker on, at most 2000 chars) of each re-entry for session sid."""
    out = []
    for t in texts:
        for m in REENTRY.finditer(t):
            if m.group(2) == sid:
                out.append((m.group(1), t[m.start():m.start() + 2000]))
    return out
REQUESTED = re.compile(r'\{"type":"kijito\.compaction\.requested"[^}]*"nonce":"([0-9a-f]{32})"')


def adapter_keys(s):
    """Keys from anyone but the harness (caller "harness" types the prompts, "then" the request
    prompt): the adapter's worker runs in the pane's process tree (caller "pane")."""
    return [k for k in s["keys_to_pane"] if k["caller"] not in ("harness", "then")]


def check_long(out, s, reqs, planned):
    """long: PLANNED request -> /compact cycles in one TUI session through the tmux adapter, each
    ATTESTED (the re-entry names that cycle's nonce), then one ceiling-time auto-compaction with no
    valid pass, whose re-entry says UNATTESTED."""
    sock = next(st["env"].get("HOST_E2E_TMUX_SOCKET") for st in s["steps"] if st.get("step") == "then")
    pane = next(st["env"].get("HOST_E2E_TMUX_PANE") for st in s["steps"] if st.get("step") == "then")
    sid = next(st["env"].get("HOST_E2E_SESSION_ID") for st in s["steps"] if st.get("step") == "then")
    keys = adapter_keys(s)
    pair = [["-S", sock, "send-keys", "-t", pane, "-l", "/compact"], ["-S", sock, "send-keys", "-t", pane, "Enter"]]
    got = [k["argv"] for k in keys]
    if got != pair * planned:
        fail("the pane received %s from the adapter, want exactly %d x %s" % (json.dumps(got)[:1500], planned,
                                                                               json.dumps(pair)))
    ok("the adapter typed exactly %d x (`send-keys -l /compact`, `send-keys Enter`) into %s, nothing else"
       % (planned, pane))
    stops = [e["t"] for e in s["hook_events"] if e["event"] == "Stop"]
    for lit in keys[::2]:
        if not any(t <= lit["t"] for t in stops):
            fail("the adapter typed before any Stop")
    pre = [e for e in s["hook_events"] if e["event"] == "PreCompact"]
    triggers = [e.get("trigger") for e in pre]
    if triggers != ["manual"] * planned + ["auto"]:
        fail("PreCompact triggers %s, want %d x manual (typed by the adapter) then one auto (the ceiling)"
             % (triggers, planned))
    comps = s["compaction_requests"]
    if len(comps) != planned + 1:
        fail("%d compaction requests reached the model, want %d planned + 1 ceiling" % (len(comps), planned))
    ok("%d compactions in one session (%d planned: PreCompact manual; 1 ceiling: PreCompact auto)"
       % (len(comps), planned))
    # the nonce of each planned request, in order, from the tool results the model received
    nonces = []
    for r in reqs:
        for t in strings_in(r.get("body")):
            for n in REQUESTED.findall(t):
                if n not in nonces:
                    nonces.append(n)
    if len(nonces) != planned:
        fail("%d distinct requested lines (nonces) reached the model, want %d" % (len(nonces), planned))
    expected = json.load(open(os.path.join(out, "expected.json")))
    kinds = {q["seq"]: q["kind"] for q in s["requests"]}
    attested = 0
    for i, c in enumerate(comps):
        nxt = [r for r in reqs if r["seq"] > c and kinds.get(r["seq"]) == "turn"
               and (i + 1 == len(comps) or r["seq"] < comps[i + 1])]
        texts = [t for r in nxt for t in strings_in(r.get("body"))]
        if i < planned:
            hit = [t for k, t in reentries(texts, sid) if k == "ATTESTED" and nonces[i] in t and expected["snapshotDigest"] in t]
            if not hit:
                fail("no model request between compaction %d (seq %d) and the next carries the ATTESTED re-entry "
                     "for nonce %s" % (i + 1, c, nonces[i]))
            attested += 1
        else:
            if not nxt:
                fail("no model request after the ceiling compaction (seq %d)" % c)
            first = [t for k, t in reentries(strings_in(nxt[0].get("body")), sid) if k == "UNATTESTED"]
            if not first:
                fail("the first model request after the ceiling compaction (seq %d) lacks the UNATTESTED re-entry" % nxt[0]["seq"])
            if [k for k, t in reentries(strings_in(nxt[0].get("body")), sid) if k == "ATTESTED" and nonces[-1] not in t]:
                fail("the ceiling compaction was re-entered as ATTESTED")
            ok("ceiling compaction (seq %d, no valid pass): the next model request (seq %d) says %r"
               % (c, nxt[0]["seq"], first[0][:200]))
    ok("%d of %d planned compactions ATTESTED (each re-entry names its own nonce and snapshot %s)"
       % (attested, planned, expected["snapshotDigest"][:16]))
    summary = {"host": s.get("host"), "compactions": len(comps), "planned": planned, "attested": attested,
               "ceiling_unattested": 1}
    print("  counts: " + json.dumps(summary))


def main():
    kind, out, root = sys.argv[1:4]
    planned = int(sys.argv[4]) if len(sys.argv) > 4 else 0
    s = json.load(open(os.path.join(out, "summary.json")))
    host = s.get("host") or ("codex" if "codex" in os.path.basename(out.rstrip("/")) else "claude")
    if not s.get("ok"):
        fail("the TUI run failed: %s" % s.get("errors"))
    reqs = jsonl(os.path.join(out, "requests.jsonl"))
    texts = [t for r in reqs for t in strings_in(r.get("body"))]
    # Keys from anyone but the harness (caller "harness" types the prompts, "then" the request
    # prompt): the adapter's worker runs in the pane's process tree (caller "pane").
    keys = adapter_keys(s)
    if kind == "long":
        return check_long(out, s, reqs, planned)
    sock = next((st["env"].get("HOST_E2E_TMUX_SOCKET") for st in s["steps"] if st.get("step") == "then"), None)
    pane = next((st["env"].get("HOST_E2E_TMUX_PANE") for st in s["steps"] if st.get("step") == "then"), None)
    if kind == "compacted":
        if not any('"type":"kijito.compaction.requested"' in t for t in texts):
            fail("no model request carries the requested line (the tool result of kijito-compact request)")
        ok("the agent's tool call ran kijito-compact request (requested line in the tool result)")
        want = [["-S", sock, "send-keys", "-t", pane, "-l", "/compact"], ["-S", sock, "send-keys", "-t", pane, "Enter"]]
        got = [k["argv"] for k in keys]
        if got != want:
            fail("the pane received %s from the adapter, want exactly %s" % (json.dumps(got), json.dumps(want)))
        else:
            ok("the adapter typed exactly `send-keys -l /compact` then one `send-keys Enter` into %s, nothing else" % pane)
        if s["compactions"] != 1:
            fail("%d compactions, want exactly 1" % s["compactions"])
        stop_t = [e["t"] for e in s["hook_events"] if e["event"] == "Stop" and e["t"] <= keys[0]["t"]]
        if not stop_t:
            fail("the adapter typed before a Stop")
        ok("one compaction, typed %.3f s after the last Stop" % (keys[0]["t"] - max(stop_t)))
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
