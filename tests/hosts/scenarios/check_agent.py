#!/usr/bin/env python3
"""Assertions on the agent-driven TUI scenarios of run.sh (run_agent: host-e2e tui-* --pane-host
--steps, steps from scenarios/agent_steps.py). Usage: check_agent.py long|typing OUT_DIR ROOT

Both: the harness typed nothing but the steps' prompts, and after the first one only what a person
types (no command, no path, nothing with `kijito`); every qa-gate record / kijito-compact request
the agent ran is a command line of the newest kijito-qa hook text it had (cycle 1: SessionStart's
text; every later cycle after a compaction: that compaction's re-entry, never the summary); keys
from anyone but the harness are exactly the adapter's (`send-keys -l /compact`, `send-keys Enter`)
pairs, each after a Stop.
long: 5 cycles, 5 distinct requests (nonces), 5 adapter-typed compactions (PreCompact manual) each
  re-entered ATTESTED naming its own nonce, then the ceiling auto-compaction re-entered UNATTESTED;
  then the flight recorder of that run (lib/he2e/flight.py, on the journal scenarios/journal-copy.sh
  copied out): `kijito-report --last` and `--json` say ATTESTED 5 / UNATTESTED 1 with the reason the
  re-entry gave, so does the viewer's session page in a headless Chromium (its DOM), `kijito-report
  verify` says the chain is intact and names the line of a byte flipped in a copy.
typing: the user's `fix the bu`, typed right after cycle 1's Stop through an attached client, reached
  the model as exactly `fix the bu` (no prompt ever held /compact in it); no /compact was typed
  while the user's text was in the composer nor after that turn; `qa-gate status` after the user's
  Enter says pass_invalidated_by_new_turn; cycle 2 compacts once, ATTESTED with cycle 2's nonce.
Also prints the measured figures (pane shape, the hook's parent chain, whether a typed /compact
reached UserPromptSubmit) as `figures:` JSON for docs/adapters.md."""
import json
import os
import re
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from he2e import flight  # noqa: E402
from he2e.common import strings_in  # noqa: E402
from he2e.qa_driver import HOOK_HEAD, strings_in_order  # noqa: E402
from he2e.verdict import fail, jsonl, ok  # noqa: E402  (the checkers' one copy)

REENTRY = re.compile(r"kijito-qa re-entry after compaction: (ATTESTED|UNATTESTED) \(session ([^)]+)\)")
REASON = re.compile(r"^kijito-qa re-entry after compaction: UNATTESTED \(session [^)]+\)\. Reason: ([a-z0-9_]+)\.")
REQUESTED = re.compile(r'\{"type":"kijito\.compaction\.requested"[^}]*"nonce":"([0-9a-f]{32})"')
READY = re.compile(r'"type":"kijito\.compaction\.ready"[^}]*"compactionNonce":"([0-9a-f]{32})"')
HEX64 = re.compile(r"\b[0-9a-f]{64}\b")


def shell_calls(host, reqs):
    """(first request seq, command) of every shell tool call in the requests' histories, in order."""
    seen, out = set(), []
    for r in reqs:
        b = r.get("body") or {}
        if host == "claude":
            for m in b.get("messages", []) if isinstance(b, dict) else []:
                for c in m.get("content") if isinstance(m, dict) and isinstance(m.get("content"), list) else []:
                    if isinstance(c, dict) and c.get("type") == "tool_use" and c.get("name") == "Bash":
                        if c.get("id") not in seen:
                            seen.add(c.get("id"))
                            out.append((r["seq"], (c.get("input") or {}).get("command") or ""))
        else:
            for it in b.get("input", []) if isinstance(b, dict) else []:
                if isinstance(it, dict) and it.get("type") == "function_call" and it.get("name") == "exec_command":
                    if it.get("call_id") not in seen:
                        seen.add(it.get("call_id"))
                        try:
                            out.append((r["seq"], json.loads(it.get("arguments") or "{}").get("cmd") or ""))
                        except ValueError:
                            pass
    return out


def hook_texts(reqs, upto_seq):
    """The strings that hold the kijito-qa command block, in conversation order, of the last
    request before upto_seq (the first request whose history holds a call) that has any: the
    request the agent answered with that call (a verifier's requests have none)."""
    for r in sorted((r for r in reqs if r["seq"] < upto_seq), key=lambda r: -r["seq"]):
        texts = [t for t in strings_in_order(r.get("body")) if HOOK_HEAD in t and "--cold-boot-report" in t]
        if texts:
            return texts
    return []


def common_checks(out, s, reqs, host, steps):
    if not s.get("ok"):
        fail("the TUI run failed: %s" % s.get("errors"))
    # the user's prompts: UserPromptSubmit of the main agent, leaving out a subagent's (Codex: its
    # stdin has agent_id) and Claude Code's task notifications (a background subagent's result is
    # submitted as a prompt starting with <task-notification>; it fires UserPromptSubmit too)
    ups = [e for e in jsonl(os.path.join(out, "hook-probe.jsonl"))
           if e.get("event") == "UserPromptSubmit" and isinstance(e.get("stdin"), dict)]
    notes = [e for e in ups if (e["stdin"].get("prompt") or "").startswith("<task-notification>")]
    subs = [e for e in ups if e["stdin"].get("agent_id")]
    prompts = [(e["stdin"].get("prompt"), e) for e in ups if e not in notes and e not in subs]
    print("  UserPromptSubmit: %d user prompts, %d task notifications, %d subagent prompts"
          % (len(prompts), len(notes), len(subs)))
    typed = [st["prompt"] for st in steps if "prompt" in st]
    for p, _ in prompts[1:]:
        if p is None:
            continue
        if p.strip() == "/compact":
            continue
        if "kijito" in p or "/" in p or "--" in p:
            fail("a user prompt after the first holds a command or path: %r" % p)
    ok("%d user prompts reached UserPromptSubmit; after the first only what a person types: %s"
       % (len(prompts), json.dumps(sorted({p for p, _ in prompts[1:] if p}))[:400]))
    if not set(typed) <= {p for p, _ in prompts}:
        fail("not every typed prompt reached UserPromptSubmit: %s" % (set(typed) - {p for p, _ in prompts}))
    calls = shell_calls(host, reqs)
    records = [(q, c) for q, c in calls if " record " in c and "qa-gate" in c]
    requests = [(q, c) for q, c in calls if "kijito-compact" in c and " request " in c]
    # each record / request line is a line of the newest hook text the agent had at that request
    for q, c in records + requests:
        d = HEX64.search(c.split("--pointer-digest", 1)[-1]) if " record " in c else None
        line = c.replace(d.group(0), "<POINTER_DIGEST>", 1) if d else c
        texts = hook_texts(reqs, q)
        if not texts:
            fail("the agent ran %r with no kijito-qa hook text in its context" % c[:200])
        newest = texts[-1]
        if line not in newest.splitlines() and ("  " + line) not in newest.splitlines():
            fail("the agent ran %r, which is not a line of the newest hook text it had (seq < %d): %r"
                 % (c[:300], q, newest[:600]))
    ok("%d qa-gate record and %d kijito-compact request calls, each a command line of the newest kijito-qa "
       "hook text in the agent's context" % (len(records), len(requests)))
    keys = [k for k in s["keys_to_pane"] if k["caller"] not in ("harness", "then")]
    return prompts, calls, records, requests, keys


def adapter_pairs(s, keys):
    sock, pane = s["pane"]["socket"], s["pane"]["id"]
    pair = [["-S", sock, "send-keys", "-t", pane, "-l", "/compact"], ["-S", sock, "send-keys", "-t", pane, "Enter"]]
    return pair, [k["argv"] for k in keys]


def nonces_in(reqs, rx):
    out = []
    for r in reqs:
        for t in strings_in(r.get("body")):
            for n in rx.findall(t):
                if n not in out:
                    out.append(n)
    return out


def reentry_after(reqs, kinds, comps, i, sid):
    nxt = [r for r in reqs if r["seq"] > comps[i] and kinds.get(r["seq"]) == "turn"
           and (i + 1 == len(comps) or r["seq"] < comps[i + 1])]
    found = []
    for r in nxt[:1]:
        for t in strings_in(r.get("body")):
            for m in REENTRY.finditer(t):
                if m.group(2) == sid:
                    found.append((m.group(1), t[m.start():]))
    return nxt, found


def figures(s, prompts, out):
    probes = jsonl(os.path.join(out, "hook-probe.jsonl"))
    first = next((p for p in probes if p.get("event") == "SessionStart"), {})
    chain = ["%s(%d)" % (c["comm"], c["pid"]) for c in first.get("chain") or []]
    pane_pid = s["pane"]["pane_pid"]
    cut = next((i for i, c in enumerate(first.get("chain") or []) if c["pid"] == pane_pid), None)
    fig = {"host": s.get("host"), "host_version": s.get("host_version"), "pane_shape": s["pane"].get("shape"),
           "pane_command": s["pane"].get("command") if isinstance(s["pane"].get("command"), str)
           else " ".join(os.path.basename(a) if i == 0 else a for i, a in enumerate(s["pane"]["command"][:1])),
           "hook_chain_to_pane": chain[:cut + 1] if cut is not None else chain,
           "pane_pid_in_chain": cut is not None,
           "compact_reached_user_prompt_submit": sum(1 for p, _ in prompts if (p or "").strip() == "/compact"),
           "pre_compact_manual": sum(1 for e in s["hook_events"] if e["event"] == "PreCompact" and e.get("trigger") == "manual")}
    print("  figures: " + json.dumps(fig))


def check_long(out, s, reqs, host, steps, root, planned=5):
    prompts, calls, records, requests, keys = common_checks(out, s, reqs, host, steps)
    sid = next((p[1]["stdin"].get("session_id") for p in prompts), None)
    pair, got = adapter_pairs(s, keys)
    if got != pair * planned:
        fail("the pane received %s from the adapter, want exactly %d x %s" % (json.dumps(got)[:1500], planned, json.dumps(pair)))
    stops = [e["t"] for e in s["hook_events"] if e["event"] == "Stop"]
    for lit in keys[::2]:
        if not any(t <= lit["t"] for t in stops):
            fail("the adapter typed before any Stop")
    ok("the adapter typed exactly %d x (`send-keys -l /compact`, `send-keys Enter`), each after a Stop" % planned)
    triggers = [e.get("trigger") for e in s["hook_events"] if e["event"] == "PreCompact"]
    if triggers != ["manual"] * planned + ["auto"]:
        fail("PreCompact triggers %s, want %d x manual then one auto (the ceiling)" % (triggers, planned))
    if len({c for _, c in records}) != planned or len({c for _, c in requests}) < 1:
        fail("%d distinct record commands (want %d), %d request calls" % (len({c for _, c in records}), planned, len(requests)))
    reports = [p for _, c in records for p in re.findall(r"--cold-boot-report (\S+)", c)]
    if len(set(reports)) != 2 * planned:
        fail("the record commands name %d distinct report paths, want %d (fresh paths from each hook text)"
             % (len(set(reports)), 2 * planned))
    ok("%d distinct qa-gate record commands with %d distinct report paths: each cycle's own hook text"
       % (planned, len(set(reports))))
    nonces = nonces_in(reqs, REQUESTED)
    if len(nonces) != planned:
        fail("%d distinct requested lines (nonces) reached the model, want %d" % (len(nonces), planned))
    comps = s["compaction_requests"]
    if len(comps) != planned + 1:
        fail("%d compaction requests reached the model, want %d planned + 1 ceiling" % (len(comps), planned))
    kinds = {q["seq"]: q["kind"] for q in s["requests"]}
    attested, reasons = 0, {}
    for i in range(len(comps)):
        nxt, found = reentry_after(reqs, kinds, comps, i, sid)
        if not nxt:
            fail("no model request after compaction %d (seq %d)" % (i + 1, comps[i]))
        if i < planned:
            if not [t for k, t in found if k == "ATTESTED" and nonces[i] in t]:
                fail("the first request after compaction %d (seq %d) lacks the ATTESTED re-entry for nonce %s: %s"
                     % (i + 1, comps[i], nonces[i], [t[:300] for _, t in found]))
            # the re-entry itself carries the session's command block, the request line included
            if not [t for k, t in found if k == "ATTESTED" and HOOK_HEAD in t and "--cold-boot-report" in t
                    and " request --session-id " + sid in t]:
                fail("the re-entry after compaction %d carries no command block with the request line" % (i + 1))
            attested += 1
        else:
            if not [t for k, t in found if k == "UNATTESTED"] or [t for k, t in found if k == "ATTESTED"]:
                fail("the first request after the ceiling compaction (seq %d) lacks the UNATTESTED re-entry: %s"
                     % (nxt[0]["seq"], [t[:300] for _, t in found]))
            why = [m.group(1) for k, t in found if k == "UNATTESTED" for m in [REASON.match(t)] if m][:1]
            if not why:
                fail("the UNATTESTED re-entry after the ceiling compaction gives no reason: %s" % [t[:300] for _, t in found])
            reasons[why[0]] = reasons.get(why[0], 0) + 1
            ok("ceiling compaction (seq %d, no pass): the next request (seq %d) is re-entered UNATTESTED (Reason: %s)"
               % (comps[i], nxt[0]["seq"], why[0]))
    ok("%d of %d planned compactions ATTESTED, each re-entry naming its own nonce" % (attested, planned))
    print("  counts: " + json.dumps({"host": host, "compactions": len(comps), "planned": planned,
                                     "attested": attested, "ceiling_unattested": 1}))
    figures(s, prompts, out)
    data = os.path.join(out, "flight-data")
    if not os.path.isdir(os.path.join(data, "journal")):
        fail("no journal copied out of the run (%s; scenarios/journal-copy.sh)" % data)
    flight.check(root, data, {"attested": attested, "unattested": len(comps) - attested, "reasons": reasons}, ok, fail)


def status_text(out, label):
    p = os.path.join(out, "status-%s.txt" % label)
    return open(p, encoding="utf-8").read() if os.path.exists(p) else ""


def check_typing(out, s, reqs, host, steps, root):
    prompts, calls, records, requests, keys = common_checks(out, s, reqs, host, steps)
    sid = next((p[1]["stdin"].get("session_id") for p in prompts), None)
    got = [p for p, _ in prompts]
    if "fix the bu" not in got:
        fail("the user's `fix the bu` never reached UserPromptSubmit as typed: %s" % got)
    bad = [p for p in got if p and "/compact" in p and p.strip() != "/compact"]
    if bad:
        fail("a submitted prompt holds /compact in the user's text: %s" % bad)
    for r in reqs:
        for t in strings_in(r.get("body")):
            if "fix the bu/" in t or "/compactfix the bu" in t:
                fail("model request seq %d holds the user's text run together with /compact: %r" % (r["seq"], t[:200]))
    ok("the user's text reached the model as exactly `fix the bu`; no prompt held /compact in it")
    cyc = {st["step"]: st for st in s["steps"] if "kind" in st}
    t_type, t_c2 = cyc["cycle-1"].get("typed_after_stop_t"), cyc["cycle-2"]["t"]
    stop1 = max(e["t"] for e in s["hook_events"] if e["event"] == "Stop" and e["t"] <= t_type)
    pair, argv = adapter_pairs(s, keys)
    early = [k for k in keys if k["t"] < t_c2]
    if early:
        fail("the adapter typed %s while the user's text was in the composer or after the user's turn"
             % json.dumps(early)[:800])
    ok("the user typed `fix the bu` %.3f s after cycle 1's Stop; the adapter typed nothing until cycle 2"
       % (t_type - stop1))
    m = re.search(r"now (\d+)\)\n\S+ activity=(\d+) created=(\d+)", status_text(out, "before-enter"))
    if not m or not int(m.group(3)) < int(m.group(2)) <= int(m.group(1)):
        fail("tmux list-clients before the Enter does not show the client's keys moving client_activity past "
             "its creation: %r" % (m.groups() if m else status_text(out, "before-enter")[-300:]))
    ok("the attached client's keys moved #{client_activity} to %s (created %s, read at %s): what the keystroke "
       "rule reads" % (m.group(2), m.group(3), m.group(1)))
    after = status_text(out, "after-enter")
    if "pass_invalidated_by_new_turn" not in after:
        fail("qa-gate/kijito-compact status after the user's Enter does not say pass_invalidated_by_new_turn: %s"
             % after[:1200])
    ok("after the user's Enter the status says pass_invalidated_by_new_turn")
    if argv != pair:
        fail("the pane received %s from the adapter, want exactly one %s (cycle 2)" % (json.dumps(argv), json.dumps(pair)))
    comps = s["compaction_requests"]
    if len(comps) != 1:
        fail("%d compactions, want exactly 1 (cycle 2's)" % len(comps))
    reports = [p for _, c in records for p in re.findall(r"--cold-boot-report (\S+)", c)]
    if len(records) != 2 or len(set(reports)) != 4:
        fail("%d record commands naming %d distinct report paths, want 2 and 4 (cycle 2 runs two fresh boots "
             "with the paths of the withdrawal text's command block)" % (len(records), len(set(reports))))
    ok("2 record commands with 4 distinct report paths (cycle 2: the fresh paths the withdrawal text gave)")
    nonces = nonces_in(reqs, REQUESTED)
    if len(nonces) != 2:
        fail("%d distinct requested nonces, want 2 (cycle 1, invalidated; cycle 2)" % len(nonces))
    kinds = {q["seq"]: q["kind"] for q in s["requests"]}
    nxt, found = reentry_after(reqs, kinds, comps, 0, sid)
    if not [t for k, t in found if k == "ATTESTED" and nonces[1] in t]:
        fail("the request after the compaction lacks the ATTESTED re-entry for cycle 2's nonce %s: %s"
             % (nonces[1], [t[:300] for _, t in found]))
    ok("cycle 2 compacted once (typed by the adapter after its Stop), ATTESTED with its own nonce %s" % nonces[1][:12])
    figures(s, prompts, out)


def main():
    mode, out, root = sys.argv[1:4]
    s = json.load(open(os.path.join(out, "summary.json")))
    reqs = jsonl(os.path.join(out, "requests.jsonl"))
    steps = json.load(open(out.rstrip("/") + ".steps.json"))
    if mode == "long":  # as many cycles as the steps file has (agent_steps.py long ROOT OUT [CYCLES])
        check_long(out, s, reqs, s.get("host"), steps, root, sum(1 for st in steps if st.get("name", "").startswith("cycle-")))
    else:
        check_typing(out, s, reqs, s.get("host"), steps, root)


if __name__ == "__main__":
    main()
