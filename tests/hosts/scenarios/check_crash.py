#!/usr/bin/env python3
"""kijito-qa: assertions on the kill/restart scenarios of run.sh (run_crash; steps from
scenarios/crash_steps.py). Usage: check_crash.py record|precompact|postcompact OUT_DIR ROOT

All: the probe killed the host (SIGKILL of the pane's process and the host under it) from inside
the armed hook once the kijito-qa hook had done its work; the pane was restarted once (`claude
--continue` / `codex resume --last`); the agent took every record/request line from the newest
hook text (check_agent.common_checks). What the model received (the fake model's request log;
each delivery's text is distinct, it names a fresh report path, so a text repeated as history
counts once):
  record, precompact: nothing was compacted before the kill; exactly one compaction, after the
    restart; cycle 1's pass (nonce 1) is never attested; exactly one ATTESTED re-entry, naming
    cycle 2's nonce.
  postcompact: compaction 1 happened before the kill with a complete chain; its re-entry reaches
    the model exactly once, ATTESTED with nonce 1 (or, if a hook could not finish the chain,
    UNATTESTED with a reason, never both); then compaction 2, ATTESTED once with nonce 2.
And the qa/ files at the end (`qa-gate status` of the session): nothing waiting, nothing being
delivered."""
import json
import os
import re
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from he2e.common import strings_in  # noqa: E402
from he2e.verdict import fail, jsonl, ok  # noqa: E402  (the checkers' one copy)
import check_agent  # noqa: E402

REENTRY = re.compile(r"kijito-qa re-entry after compaction: (ATTESTED|UNATTESTED) \(session ([^)]+)\)")
READY = re.compile(r'"type":\s*"kijito\.compaction\.ready"[^}]*?"compactionNonce":\s*"([0-9a-f]{32})"')
REASON = re.compile(r"Reason: ([a-z_]+)")


def reentries(reqs):
    """[(first seq, kind, session, text)] of the distinct re-entry texts in the model's requests."""
    seen, out = set(), []
    for r in sorted(reqs, key=lambda r: r["seq"]):
        for t in strings_in(r.get("body")):
            for m in REENTRY.finditer(t):
                text = t[m.start():m.start() + 4000]
                key = text[:1500]
                if key not in seen:
                    seen.add(key)
                    out.append((r["seq"], m.group(1), m.group(2), text))
    return out


def status_json(out, label):
    t = check_agent.status_text(out, label)
    i = t.find("{")
    try:
        return json.JSONDecoder().raw_decode(t[i:])[0] if i >= 0 else {}
    except ValueError:
        return {}


def main():
    point, out, root = sys.argv[1:4]
    s = json.load(open(os.path.join(out, "summary.json")))
    reqs = jsonl(os.path.join(out, "requests.jsonl"))
    steps = json.load(open(out.rstrip("/") + ".steps.json"))
    host = s.get("host")
    prompts, calls, records, requests, keys = check_agent.common_checks(out, s, reqs, host, steps)
    kills = s.get("kills") or []
    fired = (kills[0].get("fired") if kills else None) or {}
    if len(kills) != 1 or not fired.get("wait_ready") or not [k for k in fired.get("killed", []) if "error" not in k]:
        fail("the armed kill did not fire as planned: %s" % json.dumps(kills)[:1200])
    if fired.get("pane_pid") not in [k["pid"] for k in fired["killed"]]:
        fail("the pane's process was not among the killed: %s" % json.dumps(fired))
    ok("killed in %s after the kijito-qa hook's work (waited %.2f s): SIGKILL %s"
       % (fired["event"], fired["waited_s"], ", ".join("%s(%d)" % (k["comm"], k["pid"]) for k in fired["killed"])))
    restarts = s.get("restarts") or []
    if len(restarts) != 1:
        fail("%d restarts, want 1" % len(restarts))
    t_kill, t_restart = fired["t_rel"], restarts[0]["t"]
    ok("restarted as `%s` %.1f s after the kill" % (" ".join(os.path.basename(a) if i == 0 else a
                                                           for i, a in enumerate(restarts[0]["argv"][:4])),
                                                    t_restart - t_kill))
    kinds = {q["seq"]: q["kind"] for q in s["requests"]}
    t_of = {q["seq"]: q.get("t") for q in s["requests"]}
    comps = s["compaction_requests"]
    nonces = check_agent.nonces_in(reqs, READY)
    if len(nonces) != 2:
        fail("%d distinct ready nonces (qa-gate record), want 2 (cycle 1 before the kill, cycle 2): %s" % (len(nonces), nonces))
    n1, n2 = nonces
    ents = reentries(reqs)
    for seq, kind, sid, text in ents:
        why = REASON.search(text)
        print("  re-entry at request %d: %s session %s%s%s" % (seq, kind, sid, (" reason " + why.group(1)) if why and kind == "UNATTESTED" else "",
                                                              " (nonce 1)" if n1 in text else " (nonce 2)" if n2 in text else ""))
    att1 = [e for e in ents if e[1] == "ATTESTED" and n1 in e[3]]
    att2 = [e for e in ents if e[1] == "ATTESTED" and n2 in e[3]]
    unatt = [e for e in ents if e[1] == "UNATTESTED"]
    if len(att2) != 1:
        fail("cycle 2's compaction: %d ATTESTED re-entries naming its nonce reached the model, want exactly 1" % len(att2))
    if point in ("record", "precompact"):
        if len(comps) != 1:
            fail("%d compaction requests reached the model, want 1 (cycle 2's; the kill came before any compaction)" % len(comps))
        if att1:
            fail("cycle 1's pass (nonce %s) was attested after the kill: %s" % (n1, att1[0][3][:400]))
        before = [e for e in ents if e[0] < comps[0]]
        if before:
            fail("a re-entry reached the model before any compaction happened: %s" % [e[3][:300] for e in before])
        ok("no compaction before the kill; the one compaction after the restart (request %d) is re-entered "
           "ATTESTED exactly once with cycle 2's nonce; cycle 1's pass never attested%s"
           % (comps[0], "; extra UNATTESTED texts: %d" % len(unatt) if unatt else ""))
    else:
        if len(comps) != 2:
            fail("%d compaction requests reached the model, want 2 (cycle 1 before the kill, cycle 2)" % len(comps))
        first = [e for e in ents if comps[0] < e[0] < comps[1]]
        # Did the host keep compaction 1? A host killed before it persisted the compaction resumes
        # the conversation from before it (measured: Claude Code 2.1.328 killed in PostCompact,
        # `claude --continue`): the first turn after the restart then still holds the tool calls
        # of the last turn before compaction 1, the model lost nothing, and no re-entry is due.
        before = [r for r in reqs if kinds.get(r["seq"]) == "turn" and r["seq"] < comps[0]]
        resumed = [r for r in reqs if kinds.get(r["seq"]) == "turn" and comps[0] < r["seq"] < comps[1]
                   and (s["requests"][[q["seq"] for q in s["requests"]].index(r["seq"])].get("t") or 0) >= t_restart]
        ids = set(re.findall(r'"(?:id|call_id)":\s*"((?:toolu_|call_)[^"]+)"', json.dumps(before[-1]["body"]))) if before else set()
        undone = bool(resumed) and bool(ids) and any(i in json.dumps(resumed[0]["body"]) for i in ids)
        if undone:
            if first or att1:
                fail("the host resumed from before compaction 1, yet a re-entry for it reached the model: %s"
                     % [e[3][:300] for e in first + att1])
            ok("the host resumed the conversation from before compaction 1 (request %d holds the tool calls of request "
               "%d): nothing compacted from the model's view, no re-entry due, none given; cycle 1's nonce never "
               "ATTESTED; compaction 2 ATTESTED once with cycle 2's nonce" % (resumed[0]["seq"], before[-1]["seq"]))
            first = None
    if point == "postcompact" and first is not None:
        if [e for e in first if e[1] == "ATTESTED"] and [e for e in first if e[1] == "UNATTESTED"]:
            fail("compaction 1 was re-entered both ATTESTED and UNATTESTED: %s" % [e[3][:200] for e in first])
        if len(att1) > 1:
            fail("compaction 1 was re-entered ATTESTED %d times" % len(att1))
        if len(first) != 1:
            fail("compaction 1 (request %d, before the kill) reached the model with %d re-entry texts before compaction 2, "
                 "want exactly 1: %s" % (comps[0], len(first), [e[3][:300] for e in first]))
        if first[0][1] == "ATTESTED" and n1 not in first[0][3]:
            fail("compaction 1's ATTESTED re-entry does not name cycle 1's nonce")
        after = [q for q in sorted(kinds) if kinds[q] == "turn" and t_of.get(q) is not None and t_of[q] >= t_restart]
        ok("compaction 1 (before the kill) re-entered exactly once after the restart: %s (request %d; first request "
           "after the restart: %s); compaction 2 ATTESTED once with cycle 2's nonce"
           % (first[0][1] + ("" if first[0][1] == "ATTESTED" else " " + (REASON.search(first[0][3]) or [None, "?"])[1]),
              first[0][0], after[0] if after else None))
    end = status_json(out, "end")
    if end.get("reentryPending") or end.get("reentryDelivering"):
        fail("at the end the session still has a re-entry waiting or being delivered: %s" % json.dumps(end)[:800])
    ok("qa-gate status at the end: reentryPending %s, reentryDelivering %s, reentryDelivered %s"
       % (end.get("reentryPending"), end.get("reentryDelivering"), end.get("reentryDelivered")))
    print("  counts: " + json.dumps({"host": host, "point": point, "compactions": len(comps),
                                     "reentries": [[e[1], "n1" if n1 in e[3] else "n2" if n2 in e[3] else None] for e in ents],
                                     "killed": [k["comm"] for k in fired["killed"]]}))


main()
