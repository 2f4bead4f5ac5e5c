#!/usr/bin/env python3
"""Checks of the `boots` scenarios (tests/hosts/run.sh): the two cold boots of the kijito-memory-qa
skill run by two fresh, context-free verifier agents of the real host, then the main agent takes the
digest again and records the pass. Usage: check_boots.py OUT ROOT HOST [--expect-fork|--expect-main]
(--expect-main: seed-boots.sh ... -main-refused, the main agent ran both boots itself: the
PreToolUse hook witnessed both calls with no agent identity and `qa-gate record` refused them with
boot_by_main_agent, no pass; --expect-fork: the negative control run, seed-boots.sh ... fork: the verifiers were forked from the
main conversation, and the no-fork check must find the main prompt's nonce and the hook text in
both verifier contexts.)

Evidence used: requests.jsonl (every request the host made to the fake model server),
expected.json (seed-boots.sh), main-nonce.txt, gate-status.json (after-boots.sh), the reports on
disk, summary.json; Claude Code also subagents/*.jsonl, Codex appserver.jsonl.
Asserted:
- the installed skill prescribes exactly the verifier prompt the fake model used;
- exactly two verifier contexts, each a conversation whose first user text is the verifier prompt
  with one pointer-snapshot command (distinct --report-file paths), whose own shell tool call ran
  exactly that command, and whose requests carry none of the main conversation: not the main
  prompt's nonce, not the SessionStart hook text, not the main session id, not the record command,
  not the other verifier's report path, not any tool call id of the main conversation;
- the two contexts are distinct and sequential (the second starts after the first has ended);
  Claude Code: two subagent transcripts with distinct agent ids; Codex: two spawned threads with
  distinct thread ids, none the main thread, spawned with fork_context false;
- both reports are green with the same snapshot digest for the published pointer digest;
- the main agent ran pointer-digest after both boots and qa-gate record with both report paths;
  record printed the ready signal and `qa-gate status` shows the pass valid for that digest;
- witnessed boots: the PreToolUse hook's witness record (qa-witness.<s>.jsonl) holds
  exactly the two boots, one line per report path, each with a subagent identity, two distinct
  ones (Claude Code: each is the agent id of the subagent transcript that ran that command; Codex:
  the agent_id the child's PreToolUse input carried), and the pass says "bootsWitnessed":true.
"""
import json
import os
import re
import sys

sys.dont_write_bytecode = True  # keep the tool folder free of __pycache__
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from he2e.qa_driver import HOOK_HEAD, VERIFIER_PREFIX, role_start  # noqa: E402
from he2e.common import strings_in  # noqa: E402
from he2e.verdict import exit_status, expect, failures, jsonl  # noqa: E402

EXPECT_FORK = "--expect-fork" in sys.argv[4:]
EXPECT_MAIN = "--expect-main" in sys.argv[4:]


def user_texts(host, body, per_message=False):
    """The user-role texts of a request, in order (tool results excluded); per_message: one list
    per conversation item (empty for the others), as qa_driver.role_start takes them."""
    out = []
    if host == "claude":
        for m in body.get("messages", []):
            texts = []
            if isinstance(m, dict) and m.get("role") == "user":
                c = m.get("content")
                texts = [c] if isinstance(c, str) else [b.get("text", "") for b in c or []
                                                        if isinstance(b, dict) and b.get("type") == "text"]
            out.append(texts)
    else:
        for it in body.get("input", []):
            texts = []
            if isinstance(it, dict) and it.get("type", "message") == "message" and it.get("role") == "user":
                c = it.get("content")
                texts = [c] if isinstance(c, str) else [b.get("text", "") for b in c or [] if isinstance(b, dict)]
            out.append(texts)
    return out if per_message else [t for ts in out for t in ts]


def tool_calls(host, body):
    """(id, name, input) of the assistant's tool calls in a request's history."""
    out = []
    if host == "claude":
        for m in body.get("messages", []):
            if isinstance(m, dict) and m.get("role") == "assistant" and isinstance(m.get("content"), list):
                out += [(b.get("id"), b.get("name"), b.get("input") or {}) for b in m["content"]
                        if isinstance(b, dict) and b.get("type") == "tool_use"]
    else:
        for it in body.get("input", []):
            if isinstance(it, dict) and it.get("type") == "function_call":
                try:
                    args = json.loads(it.get("arguments") or "{}")
                except ValueError:
                    args = {}
                out.append((it.get("call_id"), it.get("name"), args))
    return out


def tool_outputs(host, body):
    out = []
    if host == "claude":
        for m in body.get("messages", []):
            if isinstance(m, dict) and m.get("role") == "user" and isinstance(m.get("content"), list):
                out += ["\n".join(strings_in(b.get("content"))) for b in m["content"]
                        if isinstance(b, dict) and b.get("type") == "tool_result"]
    else:
        out = ["\n".join(strings_in(it.get("output"))) for it in body.get("input", [])
               if isinstance(it, dict) and it.get("type") == "function_call_output"]
    return out


def shell_cmd(host, name, args):
    if host == "claude":
        return args.get("command") if name == "Bash" else None
    return args.get("cmd") if name == "exec_command" else None


def main(out, root, host):
    with open(os.path.join(out, "summary.json")) as f:
        summary = json.load(f)
    expect(summary.get("ok"), "host-e2e run completed (%s)" % "; ".join(summary.get("errors") or ["no errors"]))
    with open(os.path.join(out, "expected.json")) as f:
        expected = json.load(f)
    with open(os.path.join(out, "main-nonce.txt")) as f:
        nonce = f.read().strip()
    d = expected["pointerDigest"]

    with open(os.path.join(root, "skills", "kijito-memory-qa", "SKILL.md"), encoding="utf-8") as f:
        skill = " ".join(f.read().split())
    expect(('"%s" followed by the one command' % VERIFIER_PREFIX) in skill,
       "the installed skill prescribes the verifier prompt %r" % VERIFIER_PREFIX)

    reqs = [r for r in jsonl(os.path.join(out, "requests.jsonl")) if isinstance(r.get("body"), dict)]
    main_reqs, verifier = [], {}
    for r in reqs:
        per_msg = user_texts(host, r["body"], per_message=True)
        role = role_start(per_msg)
        if role and role[1] == "main":
            main_reqs.append(r)
        elif role:
            first = next(t for t in per_msg[role[0]] if VERIFIER_PREFIX in t)
            cmd = first[first.index(VERIFIER_PREFIX) + len(VERIFIER_PREFIX):].split("\n", 1)[0].strip()
            verifier.setdefault(cmd, []).append(r)
    expect(main_reqs, "the main agent's requests reached the fake server (%d)" % len(main_reqs))
    if not main_reqs:
        return
    last_main = main_reqs[-1]["body"]
    main_calls = tool_calls(host, last_main)
    main_outs = tool_outputs(host, last_main)
    main_session = summary.get("session_id") or next(
        (s.get("env", {}).get("HOST_E2E_SESSION_ID") for s in summary.get("steps", []) if s.get("step") == "after"), None)
    expect(bool(main_session), "main session id known (%s)" % main_session)

    # ---- every hook run of the installed root succeeded; the guard (PreToolUse) saw every shell call,
    # the verifiers' included (Codex reports a verifier turn's hooks under the main session id with
    # agent_id/agent_type, which the hooks take as a subagent)
    mine = [e for e in summary.get("hook_events", []) if (e.get("command") or "").startswith(os.path.join(root, "bin") + "/")]
    good = "completed" if host == "codex" else "success"
    expect(mine and all(e.get("status") == good for e in mine),
       "%d hook runs of the installed root, all %s (%s)" % (len(mine), good, " ".join(summary.get("event_sequence", []))))
    guard_runs = [e for e in mine if e.get("event") == "PreToolUse"]
    expect(len(guard_runs) >= 5, "PreToolUse ran for the 3 main and 2 verifier shell calls at least (%d runs)" % len(guard_runs))
    if host == "codex" and not EXPECT_FORK and not EXPECT_MAIN:
        subs = [r["stdin"] for r in jsonl(os.path.join(out, "hook-inputs.jsonl"))
                if (r.get("stdin") or {}).get("hook_event_name") == "UserPromptSubmit" and r["stdin"].get("agent_id")]
        expect(len({x["agent_id"] for x in subs}) == 2, "Codex: the two verifier turns' hooks carry two distinct agent_id values")

    if EXPECT_MAIN:
        return main_refused(out, root, host, expected, main_calls, main_outs, verifier, summary)

    # ---- the verifier contexts
    cmds = list(verifier)
    expect(len(cmds) == 2, "exactly two verifier contexts (got %d: %s)" % (len(cmds), cmds))
    reports = []
    for c in cmds:
        m = re.search(r"--report-file (\S+)", c)
        reports.append(m.group(1) if m else None)
        expect(c.startswith(os.path.join(root, "bin", "pointer-snapshot") + " ") and "--expected-pointer-digest %s " % d in c,
           "verifier command is the installed pointer-snapshot for digest %s: %s" % (d[:12], c))
    expect(len(set(reports)) == 2 and None not in reports, "distinct report paths: %s" % reports)
    main_ids = [i for i, _, _ in main_calls if i]
    for n, c in enumerate(cmds):
        rs = verifier[c]
        other = reports[1 - n] if len(reports) == 2 else None
        leaks = []
        for r in rs:
            # what the model sees: Claude `system` + `messages`, Codex `instructions` + `input` (Codex's
            # routing metadata, prompt_cache_key and client_metadata, names the parent session by design)
            blob = json.dumps([r["body"].get(k) for k in (("system", "messages") if host == "claude"
                                                          else ("instructions", "input"))])
            for label, needle in (("main nonce", nonce), ("SessionStart hook text", HOOK_HEAD),
                                  ("main session id", main_session),
                                  ("qa-gate record command", "--cold-boot-report"),
                                  ("the other verifier's report path", other)) + tuple(
                                      ("main tool call id %s" % i, i) for i in main_ids):
                if needle and needle in blob:
                    leaks.append("request %s carries %s" % (r["seq"], label))
        if EXPECT_FORK:  # the negative control: the check must see the fork
            expect(any("main nonce" in x for x in leaks) and any("SessionStart hook text" in x for x in leaks),
               "negative control, verifier %d forked: its requests carry the main conversation (%s)"
               % (n + 1, "; ".join(sorted({x.split(" carries ", 1)[1] for x in leaks}))))
            continue
        expect(not leaks, "verifier %d: no main-conversation content in its %d requests%s"
           % (n + 1, len(rs), (": " + "; ".join(sorted(set(leaks)))) if leaks else ""))
        first_texts = [t for t in user_texts(host, rs[0]["body"]) if t.strip()]
        prompt = VERIFIER_PREFIX + c
        expect(any(t.strip() == prompt for t in first_texts),
           "verifier %d: its prompt is exactly the verifier sentence + the command" % (n + 1))
        # the host's own framing (Claude Code <system-reminder>, Codex <environment_context>) is not
        # conversation content; check_boots checks it for leaks above with the rest of the request
        extra = [t for t in first_texts if t.strip() != prompt
                 and not t.lstrip().startswith(("<system-reminder>", "<environment_context>"))]
        expect(not extra, "verifier %d: its first request carries no other user text%s"
           % (n + 1, (": %r" % [t[:120] for t in extra]) if extra else ""))
        ran = [shell_cmd(host, nm, a) for _, nm, a in tool_calls(host, rs[-1]["body"])]
        expect(ran == [c], "verifier %d: its own shell tool call ran exactly the command (%s)" % (n + 1, ran))
    if EXPECT_FORK:
        return
    sub_agent = {}  # report path -> the agent id the host gave the verifier that wrote it
    if len(cmds) == 2:
        a, b = verifier[cmds[0]], verifier[cmds[1]]
        expect(max(r["seq"] for r in a) < min(r["seq"] for r in b),
           "sequential: verifier 2's first request (seq %d) after verifier 1's last (seq %d)"
           % (min(r["seq"] for r in b), max(r["seq"] for r in a)))
        if host == "codex":
            tid = lambda r: next((v for k, v in r["headers"].items() if k.lower() == "thread-id"), None)  # noqa: E731
            main_t = {tid(r) for r in main_reqs}
            ta, tb = {tid(r) for r in a}, {tid(r) for r in b}
            expect(len(main_t) == 1 and len(ta) == 1 and len(tb) == 1 and len(main_t | ta | tb) == 3,
               "three distinct Codex threads: main %s, verifiers %s %s" % (main_t, ta, tb))
            for n, t in enumerate((ta, tb)):
                sub_agent[reports[n]] = next(iter(t)) if len(t) == 1 else None
        else:
            subs = sorted(os.listdir(os.path.join(out, "subagents"))) if os.path.isdir(os.path.join(out, "subagents")) else []
            expect(len(subs) == 2, "two subagent transcripts: %s" % subs)
            for n, c in enumerate(cmds):
                hits = [s for s in subs if c in open(os.path.join(out, "subagents", s), encoding="utf-8").read()]
                expect(len(hits) == 1, "verifier %d: exactly one subagent transcript holds its command (%s)" % (n + 1, hits))
                sub_agent[reports[n]] = hits[0][len("agent-"):-len(".jsonl")] if len(hits) == 1 else None

    # ---- the main agent: agent calls, digest again, record
    names = [nm for _, nm, _ in main_calls]
    shells = [shell_cmd(host, nm, a) for _, nm, a in main_calls]
    if host == "claude":
        agents = [a for _, nm, a in main_calls if nm == "Agent"]
        expect(len(agents) == 2 and all(a.get("subagent_type") != "fork" and a.get("prompt") == VERIFIER_PREFIX + c
                                    for a, c in zip(agents, cmds)),
           "main: two Agent calls (not fork), prompt only the command: %s"
           % [(a.get("subagent_type"), a.get("run_in_background")) for a in agents])
    else:
        spawns = [a for _, nm, a in main_calls if nm == "spawn_agent"]
        expect(len(spawns) == 2 and all(a.get("fork_context") is False and a.get("message") == VERIFIER_PREFIX + c
                                    for a, c in zip(spawns, cmds)),
           "main: two spawn_agent calls with fork_context false, message only the command")
        expect(names.count("wait_agent") == 2 and names.count("close_agent") == 2, "main: wait_agent and close_agent per verifier")
    digest_cmd = "%s --pointer-id %d" % (os.path.join(root, "bin", "pointer-digest"), expected["pointerId"])
    rec = [s for s in shells if s and " record " in s]
    expect(shells and shells[0] == digest_cmd and shells.count(digest_cmd) == 2, "main: pointer-digest before and after the boots")
    last_agent = max(i for i, nm in enumerate(names) if nm in ("Agent", "close_agent")) if names else -1
    second_digest = max((i for i, s in enumerate(shells) if s == digest_cmd), default=-1)
    expect(last_agent < second_digest, "main: the second pointer-digest comes after both verifiers")
    expect(len(rec) == 1 and all(p and ("--cold-boot-report %s" % p) in rec[0] for p in reports)
       and ("--pointer-digest %s " % d) in rec[0], "main: qa-gate record with both report paths and digest %s" % d[:12])
    expect(main_outs and len(main_outs) == len(main_calls), "main: every tool call has its result")
    if len(main_outs) == len(main_calls) and rec:
        expect(d in main_outs[second_digest], "main: the digest after the boots equals the published one")
        ready = main_outs[shells.index(rec[0])]
        expect('"type":"kijito.compaction.ready"' in ready,
           "main: record printed the ready signal: %s" % (ready.strip().splitlines() or [""])[-1][:160])

    # ---- the reports and the pass
    got = []
    for p in reports:
        try:  # after-boots.sh copied them out of the run's data dir
            with open(os.path.join(out, "reports", os.path.basename(p))) as f:
                got.append(json.load(f))
        except (OSError, TypeError, ValueError) as e:
            expect(False, "report %s readable: %s" % (p, e))
    if len(got) == 2:
        expect(all(g.get("verdict") == "green" and g.get("pointerDigest") == d for g in got), "both reports green for %s" % d[:12])
        expect(got[0].get("snapshotDigest") == got[1].get("snapshotDigest"), "same snapshot digest %s" % got[0].get("snapshotDigest"))
        expect(got[0].get("bootNonce") != got[1].get("bootNonce"), "distinct boot nonces")
    try:
        with open(os.path.join(out, "gate-status.json")) as f:
            status = json.load(f)
    except (OSError, ValueError) as e:
        status = {"error": str(e)}
    expect(status.get("pass") is True and status.get("passAcceptedNow") is True and status.get("sessionId") == main_session,
       "qa-gate status after the turn: the main session's pass is recorded and accepted (%s)"
       % {k: status.get(k) for k in ("pass", "passAcceptedNow", "passRejectedBecause", "error")})

    # ---- the boots were witnessed by the PreToolUse hook, as two distinct subagents
    seen = jsonl(os.path.join(out, "qa-witness.jsonl"))
    expect(sorted(x.get("reportFile") for x in seen) == sorted(reports),
       "witness record: exactly the two boots, one line per report path (%s)" % [x.get("reportFile") for x in seen])
    expect(all(list(x) == ["reportFile", "pointerId", "expectedPointerDigest", "agentId", "seenAtMs"]
           and x.get("pointerId") == expected["pointerId"] and x.get("expectedPointerDigest") == d for x in seen),
       "witness record: every line names the pointer %d and digest %s" % (expected["pointerId"], d[:12]))
    agents = {x.get("reportFile"): x.get("agentId") for x in seen}
    expect(len(agents) == 2 and None not in agents.values() and len(set(agents.values())) == 2,
       "witness record: two distinct subagent identities, neither the main agent: %s" % sorted(map(str, agents.values())))
    expect(agents and all(agents.get(p) == sub_agent.get(p) for p in reports),
       "witness record: each identity is the host's id of the verifier that ran that boot (%s: %s)"
       % ("Claude Code subagent transcript agent-<id>.jsonl" if host == "claude" else "Codex child thread-id", sub_agent))
    if host == "codex":
        # Codex 0.169.0's PreToolUse input of a spawn_agent child's shell call (the probe's copy of
        # the hook's stdin): the parent's session_id, agent_id = the child's thread id, agent_type
        # "default"; the main agent's shell calls carry neither (fixtures/hosts/codex/pretool-spawn-child.json)
        shell = [x for r in jsonl(os.path.join(out, "hook-inputs.jsonl")) for x in [r.get("stdin") or {}]
                 if x.get("hook_event_name") == "PreToolUse" and x.get("tool_name") == "Bash"]
        child = {}
        for x in shell:
            m = re.search(r"--report-file (\S+)", (x.get("tool_input") or {}).get("command") or "")
            if m and "pointer-snapshot" in m.string:
                child[m.group(1)] = (x.get("agent_id"), x.get("agent_type"), x.get("session_id"))
        expect(all(child.get(p) == (sub_agent.get(p), "default", main_session) for p in reports),
           "Codex: each child's PreToolUse input carries the parent's session_id, agent_id = its thread id, agent_type default (%s)" % child)
        mains = [x for x in shell if "pointer-snapshot" not in json.dumps(x.get("tool_input"))]
        expect(mains and all("agent_id" not in x and "agent_type" not in x for x in mains),
           "Codex: the main agent's %d shell calls' PreToolUse inputs carry no agent_id/agent_type" % len(mains))
    try:
        with open(os.path.join(out, "qa-pass.json")) as f:
            passed = json.load(f)
    except (OSError, ValueError) as e:
        passed = {"error": str(e)}
    expect(passed.get("bootsWitnessed") is True, "the pass says bootsWitnessed true (%s)" % passed.get("bootsWitnessed", passed.get("error")))


def main_refused(out, root, host, expected, main_calls, main_outs, verifier, summary):
    """--expect-main: the main agent ran both boots itself; record must refuse them."""
    d = expected["pointerDigest"]
    expect(not verifier, "no verifier agent context at all (%d)" % len(verifier))
    names = [nm for _, nm, _ in main_calls]
    expect(not any(nm in ("Agent", "spawn_agent") for nm in names), "main: no Agent/spawn_agent call (%s)" % names)
    shells = [shell_cmd(host, nm, a) for _, nm, a in main_calls]
    snap = os.path.join(root, "bin", "pointer-snapshot") + " "
    boots = [s for s in shells if s and s.startswith(snap)]
    expect(len(boots) == 2 and all(("--expected-pointer-digest %s " % d) in b for b in boots),
       "main: ran both pointer-snapshot boots itself with its shell tool")
    reports = [re.search(r"--report-file (\S+)", b).group(1) for b in boots if "--report-file " in b]
    rec = [i for i, s in enumerate(shells) if s and " record " in s]
    expect(len(rec) == 1 and len(main_outs) == len(main_calls), "main: ran qa-gate record once and every call has its result")
    if rec and len(main_outs) == len(main_calls):
        got = main_outs[rec[0]]
        expect("boot_by_main_agent" in got and '"kijito.compaction.ready"' not in got,
           "qa-gate record refused with boot_by_main_agent: %s" % (got.strip().splitlines() or [""])[-1][:200])
    got = []
    for p in reports:
        try:
            with open(os.path.join(out, "reports", os.path.basename(p))) as f:
                got.append(json.load(f))
        except (OSError, ValueError) as e:
            expect(False, "report %s readable: %s" % (p, e))
    expect(len(got) == 2 and all(g.get("verdict") == "green" and g.get("pointerDigest") == d for g in got),
       "both boots themselves were green (refused for who ran them, not for what they found)")
    seen = jsonl(os.path.join(out, "qa-witness.jsonl"))
    expect(sorted(x.get("reportFile") for x in seen) == sorted(reports) and all(x.get("agentId") is None for x in seen),
       "witness record: both boots seen with no agent identity, agentId null (%s)" % [(x.get("reportFile"), x.get("agentId")) for x in seen])
    expect(not os.path.exists(os.path.join(out, "qa-pass.json")), "no pass file was written")
    try:
        with open(os.path.join(out, "gate-status.json")) as f:
            status = json.load(f)
    except (OSError, ValueError) as e:
        status = {"error": str(e)}
    expect(status.get("pass") is not True and status.get("passAcceptedNow") is not True,
       "qa-gate status: no pass (%s)" % {k: status.get(k) for k in ("pass", "passAcceptedNow", "passRejectedBecause", "error")})


if __name__ == "__main__":
    out, root, host = sys.argv[1:4]
    try:
        main(out, root, host)
    except (OSError, ValueError, KeyError) as e:
        expect(False, "evidence missing or malformed: %r" % e)
    print("  boots %s: %s" % (host, "FAIL (%d)" % len(failures) if failures else "all checks passed"))
    sys.exit(exit_status())
