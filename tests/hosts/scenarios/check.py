#!/usr/bin/env python3
"""Assertions on one host-e2e run of the installed kijito-qa plugin (summary.json + requests.jsonl).

check.py KIND OUT_DIR ROOT [--side-effect FILE]
KIND: attested | unattested (a compaction scenario), deny | allow (a tool scenario), adapter (the
Codex app-server adapter compacted on its own after the agent's `kijito-compact request`),
consent (the prompts scenario seeded by seed-consent.sh: the model's tool call with the token is
refused, and the user's message with that token is then refused too: the model had seen it in a
tool call).
Prints one line per check; exits 1 on the first failed check."""
import json
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from he2e.common import strings_in  # noqa: E402  (the harness's own marker search)
from he2e.verdict import fail, jsonl, ok  # noqa: E402  (the checkers' one copy)

ATTESTED = re.compile(r"(?<!UN)ATTESTED")



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
    elif kind == "withdrawn":  # the re-entry itself (the withdrawal text also says "would be UNATTESTED")
        sig = lambda t: "re-entry after compaction: UNATTESTED" in t  # noqa: E731
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
    if kind == "withdrawn":
        # a pass was recorded, then the next prompt's UserPromptSubmit (before the host's own
        # compaction) withdrew it and said so; the compaction is re-entered UNATTESTED with that reason
        if "Reason: pass_invalidated_by_new_turn" not in text:
            fail("the re-entry does not name pass_invalidated_by_new_turn: %r" % text[:600])
        ups = [t for e in mine[:first_pre] if e["event"] == "UserPromptSubmit" for t in contexts(host, e)
               if "pass_invalidated_by_new_turn" in t and "was withdrawn" in t]
        if len(ups) != 1:
            fail("want exactly one UserPromptSubmit before PreCompact saying the pass was withdrawn, got %d" % len(ups))
        ok("the prompt's UserPromptSubmit (before the auto-compaction) withdrew the recorded pass and said so")
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


def check_adapter(out, root, s):
    """`kijito-compact codex` compacted by itself: one thread/compact/start, from the adapter, for the
    session's thread; the client (host-e2e) never sent one, nobody sent thread/resume; the agent's
    own tool call made the request; the request ended compacted and attested."""
    msgs = jsonl(os.path.join(out, "adapter-messages.jsonl"))
    if not msgs:
        fail("no adapter message log (adapter-messages.jsonl)")
    comp = [m for m in msgs if (m.get("msg") or {}).get("method") == "thread/compact/start"]
    if len(comp) != 1 or comp[0]["dir"] != "adapter->server":
        fail("expected exactly one thread/compact/start, from the adapter: %s" % json.dumps(comp)[:800])
    sid = json.load(open(os.path.join(out, "compact-status.json")))
    thread = comp[0]["msg"]["params"]["threadId"]
    if thread != sid.get("sessionId"):
        fail("the adapter compacted thread %s, the session is %s" % (thread, sid.get("sessionId")))
    rid = comp[0]["msg"]["id"]
    if not any(m["dir"] == "server->adapter" and (m.get("msg") or {}).get("id") == rid for m in msgs):
        fail("no answer to the adapter's request reached the adapter")
    if any(m["dir"] == "server->client" and (m.get("msg") or {}).get("id") == rid for m in msgs):
        fail("the adapter forwarded the answer to its own request")
    client = jsonl(os.path.join(out, "appserver.jsonl"))
    sent = [m["msg"].get("method") for m in client if m.get("dir") == "out"]
    if "thread/compact/start" in sent or "thread/resume" in sent or any(
            (m.get("msg") or {}).get("method") == "thread/resume" for m in msgs):
        fail("the client sent thread/compact/start or someone sent thread/resume: %s" % sent)
    ok("exactly one thread/compact/start (id %s), from the adapter, for thread %s; the client sent none; "
       "no thread/resume" % (rid, thread))
    tool = next((x for x in s["steps"] if x["step"] == "tool-turn"), None)
    # the tool turn runs scenarios/record-request.sh (the pass recorded in that turn, then exactly
    # `kijito-compact request`): its result, the requested line, must have reached the model
    if not tool or not any(w in tool.get("command", "") for w in ("kijito-compact request", "record-request.sh")):
        fail("no tool turn running kijito-compact request: %s" % tool)
    if not any('"type":"kijito.compaction.requested"' in t for r in jsonl(os.path.join(out, "requests.jsonl"))
               for x in ((r.get("body") or {}).get("input") or [] if isinstance(r.get("body"), dict) else [])
               if isinstance(x, dict) and x.get("type") == "function_call_output" for t in strings_in(x.get("output"))):
        fail("no tool result the model received carries the requested line")
    if sid.get("state") != "compacted" or sid.get("attested") is not True or sid.get("via") != "codex-app-server":
        fail("kijito-compact status after the run: %s" % json.dumps(sid))
    # Codex hands no hook the compaction summary: the claim record says so (docs/protocol.md §7)
    if "summaryCarried" not in sid or sid["summaryCarried"] is not None or sid.get("summaryCheck") != "no_summary":
        fail("kijito-compact status summaryCarried/summaryCheck on Codex: %s" % json.dumps(sid))
    ok("the agent's tool call requested it (%s); status: compacted, attested (%s), summaryCarried null (no_summary)"
       % (tool["command"], sid.get("reason")))
    done = [m for m in msgs if m["dir"] == "server->client" and m["t"] <= comp[0]["t"]
            and (m.get("msg") or {}).get("method") == "turn/completed"
            and m["msg"]["params"].get("threadId") == thread]
    if not done:
        fail("no turn/completed of the thread before the adapter's thread/compact/start")
    t_done = done[-1]["t"]
    ok("turn/completed -> thread/compact/start in the adapter: %.1f ms" % ((comp[0]["t"] - t_done) * 1000))


def check_adapter_tui(out, root, s):
    """The real Codex TUI attached through `kijito-compact codex` (tmux pane): the adapter compacted on
    its own after the agent's request; nothing but the harness's prompts was typed into the pane."""
    keys = s.get("keys_to_pane") or []
    typed = [k["argv"] for k in keys]
    if any(k.get("caller") != "harness" for k in keys) or any("/compact" in a for argv in typed for a in argv):
        fail("something other than the harness's prompts reached the pane: %s" % json.dumps(typed)[:1000])
    ok("the pane got only the harness's %d prompts (no /compact keystroke)" % (len(typed) // 2))
    msgs = jsonl(os.path.join(out, "adapter-messages.jsonl"))
    comp = [m for m in msgs if (m.get("msg") or {}).get("method") == "thread/compact/start"]
    if len(comp) != 1 or comp[0]["dir"] != "adapter->server":
        fail("expected exactly one thread/compact/start, from the adapter: %s" % json.dumps(comp)[:800])
    sent = {(m.get("msg") or {}).get("method") for m in msgs if m["dir"] == "client->server"}
    if "thread/compact/start" in sent or "thread/resume" in sent:
        fail("the TUI sent thread/compact/start or thread/resume: %s" % sorted(m for m in sent if m))
    thread = comp[0]["msg"]["params"]["threadId"]
    sids = {e.get("session_id") for e in s["hook_events"] if e.get("session_id")}
    if sids != {thread}:
        fail("the adapter compacted %s; the hooks saw sessions %s" % (thread, sorted(sids)))
    ok("exactly one thread/compact/start, from the adapter, for the session's thread; the TUI (%d messages "
       "forwarded) sent none, no thread/resume" % len(msgs))
    expected = json.load(open(os.path.join(out, "expected.json")))
    comp_reqs = s.get("compaction_requests") or []
    if len(comp_reqs) != 1:
        fail("expected one compaction request to the model, got %s" % comp_reqs)
    reqs = jsonl(os.path.join(out, "requests.jsonl"))
    kinds = {q["seq"]: q["kind"] for q in s["requests"]}
    nxt = [r for r in reqs if r["seq"] > comp_reqs[0] and kinds.get(r["seq"]) == "turn"]
    if not nxt:
        fail("no model request after the compaction")
    texts = [t for t in strings_in(nxt[0].get("body")) if expected["snapshotDigest"] in t]
    if not texts or not any(ATTESTED.search(t) and "UNATTESTED" not in t for t in texts):
        fail("the first request after the compaction (seq %d) lacks the ATTESTED re-entry with snapshot digest %s"
             % (nxt[0]["seq"], expected["snapshotDigest"]))
    ok("the model's next request (seq %d) carries the ATTESTED re-entry with snapshot digest %s"
       % (nxt[0]["seq"], expected["snapshotDigest"]))
    if not any("Context compacted" in open(os.path.join(out, c["file"]), encoding="utf-8").read()
               for c in s.get("captures") or []):
        fail("the TUI never showed 'Context compacted'")
    ok("the TUI shows 'Context compacted'")


def check_adapter_long(out, root, s):
    """adapter-long: N request -> compaction cycles in one session under `kijito-compact codex`; every
    planned compaction came from the adapter and was followed by an ATTESTED re-entry naming that
    cycle's nonce; then a ceiling turn with no pass left: Codex's own auto-compaction (no
    thread/compact/start), whose re-entry says UNATTESTED."""
    n = sum(1 for x in s["steps"] if x["step"] == "adapter-compact")
    if n < 5:
        fail("only %d adapter compactions (want at least 5)" % n)
    msgs = jsonl(os.path.join(out, "adapter-messages.jsonl"))
    comp = [m for m in msgs if (m.get("msg") or {}).get("method") == "thread/compact/start"]
    if len(comp) != n or any(m["dir"] != "adapter->server" for m in comp):
        fail("expected %d thread/compact/start, all from the adapter: %s" % (n, [m["dir"] for m in comp]))
    if s["compactions"] != n + 1:
        fail("%d contextCompaction items, want %d planned + 1 ceiling" % (s["compactions"], n))
    expected = json.load(open(os.path.join(out, "expected.json")))
    reqs = jsonl(os.path.join(out, "requests.jsonl"))
    kinds = {q["seq"]: q["kind"] for q in s["requests"]}
    comp_seqs = [q["seq"] for q in s["requests"] if q["kind"] == "compaction"]
    if len(comp_seqs) != n + 1:
        fail("%d compaction requests reached the model, want %d" % (len(comp_seqs), n + 1))
    nonces = []
    for r in reqs:
        for t in strings_in(r.get("body")):
            for x in re.findall(r'"type":"kijito\.compaction\.requested"[^}]*"nonce":"([0-9a-f]{32})"', t):
                if x not in nonces:
                    nonces.append(x)
    if len(nonces) != n:
        fail("%d distinct requested lines reached the model, want %d" % (len(nonces), n))
    attested = 0
    for i, c in enumerate(comp_seqs):
        upto = comp_seqs[i + 1] if i + 1 < len(comp_seqs) else None
        nxt = [r for r in reqs if r["seq"] > c and kinds.get(r["seq"]) == "turn" and (upto is None or r["seq"] < upto)]
        if i < n:
            texts = [t for r in nxt[:1] for t in strings_in(r.get("body"))]
            if any(ATTESTED.search(t) and "UNATTESTED" not in t and nonces[i] in t and expected["snapshotDigest"] in t
                   for t in texts):
                attested += 1
            else:
                fail("the turn after compaction request %d did not carry the ATTESTED re-entry for nonce %s" % (c, nonces[i]))
        else:
            if "ceiling" not in [r.get("tag") for r in reqs if r["seq"] < c]:
                fail("the last compaction (request %d) did not follow the ceiling turn" % c)
            un = [(r["seq"], t) for r in nxt for t in strings_in(r.get("body"))
                  if "re-entry after compaction: UNATTESTED" in t]
            if not un:
                fail("no model request after the ceiling compaction (request %d) carries the UNATTESTED re-entry" % c)
            ok("ceiling compaction (request %d, Codex's own, no pass): request %d says %r"
               % (c, un[0][0], un[0][1][un[0][1].find("UNATTESTED"):][:100]))
    client = jsonl(os.path.join(out, "appserver.jsonl"))
    if any(m.get("dir") == "out" and m["msg"].get("method") in ("thread/compact/start", "thread/resume") for m in client):
        fail("the client sent thread/compact/start or thread/resume")
    ok("%d planned compactions in one session, all from the adapter; %d of %d ATTESTED (each names its nonce)"
       % (n, attested, n))
    print("  counts: " + json.dumps({"host": "codex-app-server", "compactions": n + 1, "planned": n,
                                     "attested": attested, "ceiling_unattested": 1}))


def check_plain_request(out, root, s):
    """plain-request: a headless session (no tmux, no app-server adapter) with a real pass; the
    agent's own tool call `kijito-compact request` is answered no_safe_trigger (the model gets the
    code and the sentence to ask the user), nothing is recorded, nothing compacts."""
    if not os.path.exists(os.path.join(out, "ready.json")):
        fail("no pass was recorded (ready.json missing; see before-compact.log)")
    reqs = jsonl(os.path.join(out, "requests.jsonl"))
    # the tool results the model received (not the SessionStart context, which also names the code):
    # Claude Code `tool_result` blocks, Codex `function_call_output` items
    results = []
    for r in reqs:
        b = r.get("body") if isinstance(r.get("body"), dict) else {}
        for m in b.get("messages", []):
            if isinstance(m, dict) and isinstance(m.get("content"), list):
                results += [t for x in m["content"] if isinstance(x, dict) and x.get("type") == "tool_result"
                            for t in strings_in(x.get("content"))]
        results += [t for x in b.get("input", []) if isinstance(x, dict) and x.get("type") == "function_call_output"
                    for t in strings_in(x.get("output"))]
    hit = next((t for t in results if "kijito_compact_failed:no_safe_trigger" in t), None)
    if hit is None:
        fail("no tool result carries kijito_compact_failed:no_safe_trigger (tool results: %r)" % results[:2])
    if "ask the user to run /compact" not in hit:
        fail("the refusal does not tell the agent to ask the user to run /compact: %r" % hit[:400])
    ok("the agent's tool call `kijito-compact request` got, as its tool result: %r" % hit[:240])
    if s["compactions"] != 0:
        fail("%d compactions, want 0" % s["compactions"])
    status = open(os.path.join(out, "compact-status.txt"), encoding="utf-8").read().strip()
    if "kijito_compact_failed:no_request" not in status:
        fail("kijito-compact status after the run: %s (want no_request: nothing recorded)" % status)
    ok("nothing compacted; kijito-compact status: %s" % status.splitlines()[0])


def check_consent(out, root, s, host, token_file):
    token = open(token_file, encoding="utf-8").read().strip()
    # 1. the model typed the token into a tool call: denied by the guard, nothing authorized
    check_tool("deny", out, root, s, host, None)
    reqs = jsonl(os.path.join(out, "requests.jsonl"))
    tool_results = [t for r in reqs for t in strings_in(r.get("body"))
                    if "blocked by PreToolUse hook" in t or "PreToolUse:Bash hook error" in t]
    if not any("command_unknown_subcommand" in t for t in tool_results):
        fail("the tool call was not denied for its grammar: %r" % tool_results[:1])
    ok("memory-latch consent confirm with the token, run by the model, was denied (command_unknown_subcommand)")
    # 2. the user's own message, exactly the token: the token already appeared in a tool call's
    #    input in the transcript (the model typed it), so it is refused, nothing is confirmed
    #    (consent_token_seen_by_tool; the confirming path runs in policy-consent)
    ups = [e for e in ours(s, root) if e["event"] == "UserPromptSubmit"]
    said = [t for e in ups for t in contexts(host, e) if "consent_token_seen_by_tool" in t]
    if len(said) != 1:
        fail("expected one UserPromptSubmit context refusing the leaked token (consent_token_seen_by_tool), got %d" % len(said))
    if any("the USER confirmed consent token" in t for e in ups for t in contexts(host, e)):
        fail("a token the model had typed into a tool call was confirmed")
    ok("the user's message %s was refused: the model had typed it into a tool call (consent_token_seen_by_tool)" % token)
    status = json.load(open(os.path.join(out, "latch-status.json")))
    head = status["head"]
    # The resumed session's SessionStart may append one state-neutral `wake_findings` entry (every
    # wake-check run with findings leaves one, docs/wake-check.md): it copies entry 2's consent state.
    wake = head["event"] == "wake_findings" and head["seq"] == 3 and head["consent_state"] == "pending"
    if head["consent_state"] == "authorized" or not (wake or (head["event"] == "consent_request" and head["seq"] == 2)):
        fail("expected the head to stay entry 2, consent_request (or a wake_findings entry 3 still pending), not authorized: %s"
             % json.dumps(head)[:600])
    ok("latch head: entry %d %s, consent still pending, nothing authorized" % (head["seq"], head["event"]))


def main(argv):
    kind, out, root = argv[:3]
    side_effect = argv[4] if len(argv) > 4 and argv[3] == "--side-effect" else None
    s = json.load(open(os.path.join(out, "summary.json")))
    if not s.get("ok"):
        fail("host-e2e run failed: %s" % s.get("errors"))
    host = s["host"]
    if kind == "adapter-tui":
        return check_adapter_tui(out, root, s)
    if kind == "adapter-long":
        return check_adapter_long(out, root, s)
    if kind == "plain-request":
        return check_plain_request(out, root, s)
    if kind in ("attested", "unattested", "withdrawn"):
        check_compaction(kind, out, root, s, host)
    elif kind == "context":
        check_context(out, host)
    elif kind == "adapter":
        check_compaction("attested", out, root, s, host)
        check_adapter(out, root, s)
    elif kind == "consent":
        check_consent(out, root, s, host, side_effect)
    else:
        check_tool(kind, out, root, s, host, side_effect)


if __name__ == "__main__":
    main(sys.argv[1:])
