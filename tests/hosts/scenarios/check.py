#!/usr/bin/env python3
"""Assertions on one host-e2e run of the installed kijito-qa plugin (summary.json + requests.jsonl).

check.py KIND OUT_DIR ROOT [--side-effect FILE]
KIND: attested | unattested (a compaction scenario), deny | allow (a tool scenario).
Prints one line per check; exits 1 on the first failed check."""
import json
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from he2e.common import strings_in  # noqa: E402  (the harness's own marker search)

ATTESTED = re.compile(r"(?<!UN)ATTESTED")


def fail(msg):
    print("  FAIL: " + msg)
    sys.exit(1)


def ok(msg):
    print("  ok: " + msg)


def jsonl(path):
    out = []
    if os.path.exists(path):
        for line in open(path, encoding="utf-8"):
            if line.strip():
                out.append(json.loads(line))
    return out



def ours(s, root):
    """Hook runs of this installed root (the probe and other hooks excluded)."""
    return [e for e in s["hook_events"] if (e.get("command") or "").startswith(root + "/bin/")]


def succeeded(host, e, allow_block=False):
    if host == "codex":
        return e["status"] == "completed" or (allow_block and e["status"] == "blocked")
    return e["status"] == "success"


def contexts(host, e):
    """additionalContext texts a hook run gave the host, from the host's own report."""
    texts = []
    for ent in e.get("entries") or []:
        t = ent.get("text") if isinstance(ent, dict) else None
        if not isinstance(t, str):
            continue
        if host == "codex" and ent.get("kind") == "context":
            texts.append(t)
        elif host == "claude" and ") success:\n" in t:
            body = t.split(") success:\n", 1)[1]
            try:
                out = json.loads(body)
            except ValueError:
                texts.append(body)  # plain stdout also reaches the model
                continue
            ctx = (out.get("hookSpecificOutput") or {}).get("additionalContext") if isinstance(out, dict) else None
            if isinstance(ctx, str):
                texts.append(ctx)
    return texts


def check_compaction(kind, out, root, s, host):
    expected = json.load(open(os.path.join(out, "expected.json"))) if kind == "attested" else None
    mine = ours(s, root)
    events = [(e["event"], e.get("source") or e.get("trigger")) for e in mine]
    for ev in ("PreCompact", "PostCompact"):
        if not any(e == ev for e, _ in events):
            fail("no %s run of %s/bin (events: %s)" % (ev, root, s["event_sequence"]))
    if s["compactions"] < 1:
        fail("no compaction happened")
    bad = [(e["event"], e["status"], (e.get("entries") or [])[:2]) for e in mine if not succeeded(host, e)]
    if bad:
        fail("hooks did not report success to the host: %s" % json.dumps(bad)[:1500])
    ok("%d hook runs of the installed root, all reported success (%s)" % (len(mine), " ".join(s["event_sequence"])))

    first_pre = next(i for i, e in enumerate(mine) if e["event"] == "PreCompact")
    after = [e for e in mine[first_pre:] if e["event"] in ("SessionStart", "UserPromptSubmit")]
    if kind == "attested":
        sig = lambda t: expected["snapshotDigest"] in t  # noqa: E731
    else:
        sig = lambda t: "UNATTESTED" in t  # noqa: E731
    delivered = [t for e in after for t in contexts(host, e) if sig(t)]
    if len(delivered) != 1:
        fail("expected exactly one %s re-entry delivery after PreCompact, got %d: %s"
             % (kind, len(delivered), json.dumps(delivered)[:1500]))
    text = delivered[0]
    if kind == "attested":
        for what in ("pointerDigest", "snapshotDigest"):
            if expected[what] not in text:
                fail("attested text lacks the %s %s: %r" % (what, expected[what], text[:800]))
        if not ATTESTED.search(text) or "UNATTESTED" in text:
            fail("attested text does not say ATTESTED (or says UNATTESTED): %r" % text[:800])
        if "pointer-snapshot" not in text or "--expected-snapshot-digest" not in text:
            fail("attested text lacks the pointer-snapshot command with --expected-snapshot-digest: %r" % text[:800])
    else:
        if ATTESTED.search(text):
            fail("unattested text says ATTESTED: %r" % text[:800])
    ok("one %s re-entry delivery (%d chars)" % (kind, len(text)))

    if host == "claude":
        # PreCompact stdout is appended to the summariser's instructions: attested, it asks the
        # summary to carry the pointer id, lock id, both digests and the resume command; else nothing.
        kinds_all = {r["seq"]: r["kind"] for r in s["requests"]}
        comp_bodies = [t for r in jsonl(os.path.join(out, "requests.jsonl")) if kinds_all.get(r.get("seq")) == "compaction"
                       for t in strings_in(r.get("body"))]
        carried = [t for t in comp_bodies if "kijito-pointer-id:" in t]
        if kind == "attested":
            want = ["kijito-pointer-id: %s" % expected["pointerId"], "kijito-snapshot-digest: %s" % expected["snapshotDigest"],
                    "kijito-pointer-digest: %s" % expected["pointerDigest"], "kijito-resume-command: "]
            if not any(all(w in t for w in want) for t in carried):
                fail("the summariser request lacks the pointer values %s" % want)
            ok("the summariser request carries the pointer id, both digests and the resume command")
        elif carried:
            fail("an unattested compaction asked the summary to carry pointer values")

    reqs = jsonl(os.path.join(out, "requests.jsonl"))
    kinds = {r["seq"]: r["kind"] for r in s["requests"]}
    comp = [r["seq"] for r in s["requests"] if r["kind"] == "compaction"]
    nxt = [r for r in reqs if r["seq"] > comp[0] and kinds.get(r["seq"]) == "turn" and isinstance(r.get("body"), dict)]
    if not nxt:
        fail("no model request after the compaction request %d" % comp[0])
    first = nxt[0]
    n = sum(t.count(text) for t in strings_in(first["body"]))
    if n != 1:
        fail("the first request after compaction (seq %d) holds the re-entry text %d times" % (first["seq"], n))
    pre = sum(t.count(text) for r in reqs if r["seq"] <= comp[0] for t in strings_in(r.get("body")))
    if pre:
        fail("the re-entry text reached a request before/at the compaction (%d times)" % pre)
    ok("the model's next request (seq %d) contains the re-entry text exactly once" % first["seq"])


def check_tool(kind, out, root, s, host, side_effect):
    mine = [e for e in ours(s, root) if e["event"] == "PreToolUse"]
    if len(mine) != 1:
        fail("expected one PreToolUse run of %s/bin/session-hook, got %d (events %s)"
             % (root, len(mine), s["event_sequence"]))
    e = mine[0]
    if not succeeded(host, e, allow_block=(kind == "deny")):
        fail("PreToolUse hook failed: %s %s" % (e["status"], json.dumps(e.get("entries"))[:1000]))
    reqs = jsonl(os.path.join(out, "requests.jsonl"))
    results = []
    for r in reqs:
        for t in strings_in(r.get("body")):
            if "blocked by PreToolUse hook" in t or "PreToolUse:Bash hook error" in t:
                results.append(t)
    denied = bool(results) or (host == "codex" and e["status"] == "blocked")
    if kind == "deny":
        if not denied:
            fail("the tampered helper command was not denied (hook status %s)" % e["status"])
        if side_effect and os.path.exists(side_effect):
            fail("the tampered command ran: %s exists" % side_effect)
        ok("PreToolUse denied the tampered command; the model got: %r" % (results[0][:200] if results else e["status"]))
    else:
        if denied:
            fail("a command that is not a helper was denied: %r" % results[:1])
        ok("PreToolUse let an unrelated command through (status %s)" % e["status"])


def check_context(out, host):
    """`context`: kijito-context on the real session file after a real turn gives a ratio."""
    path = os.path.join(out, "context.json")
    if not os.path.exists(path):
        fail("the --after command wrote no context.json (see after.log)")
    v = json.load(open(path))
    if not isinstance(v.get("ratio"), (int, float)) or v["ratio"] <= 0:
        fail("kijito-context gave no ratio for the real %s file: %s" % (host, json.dumps(v)))
    want = "codex-rollout:token_count" if host == "codex" else "claude-transcript:usage;"
    if not str(v.get("source", "")).startswith(want) or not v.get("usedTokens") or not v.get("windowTokens"):
        fail("unexpected kijito-context answer: %s" % json.dumps(v))
    ok("kijito-context on the real %s file: %s" % (host, json.dumps(v)))
    if host == "claude":
        line = open(os.path.join(out, "statusline.txt")).read()
        if not line.startswith("ctx ") or "no QA pass" not in line:
            fail("status line: %r" % line)
        ok("status line: %s" % line.strip())


def main(argv):
    kind, out, root = argv[:3]
    side_effect = argv[4] if len(argv) > 4 and argv[3] == "--side-effect" else None
    s = json.load(open(os.path.join(out, "summary.json")))
    if not s.get("ok"):
        fail("host-e2e run failed: %s" % s.get("errors"))
    host = s["host"]
    if kind in ("attested", "unattested"):
        check_compaction(kind, out, root, s, host)
    elif kind == "context":
        check_context(out, host)
    else:
        check_tool(kind, out, root, s, host, side_effect)


if __name__ == "__main__":
    main(sys.argv[1:])
