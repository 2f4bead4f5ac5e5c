#!/usr/bin/env python3
"""check_policy.py consent|mcp OUT ROOT HOST [DIR]: checks of the PreToolUse policy scenarios on a real
host (run.sh policy-consent, policy-mcp). Reads only what the run left: the fake model
server's request log (what the agent was shown), summary.json (the host's own hook events), the
files the --before-each / --after commands wrote. Prints one line per check; exit 1 on a failure.

consent: the agent's `rm -rf build` (DIR/command: Codex `rm -r build`) is denied by pretool-hook (policy_consent_required) while
  build/ exists; the agent runs exactly the backticked consent request command of the deny reason;
  the user's next prompt is the token shown in that command's output; the agent's identical retry
  runs (build/ is gone afterwards, the latch's log holds a gate_pass entry); the identical repeat
  is denied again.
mcp (both; Codex offers the tool in the namespace mcp__kijito): an `mcp__kijito__kijito_update`
  of the configured pointerId is denied
  (policy_pointer_write) and never reaches the MCP server; the same call for another id passes the
  hook and the MCP server (kijito-local mcp) answers it.
"""
import json
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from he2e import policy_driver  # noqa: E402
import policy_user  # noqa: E402  (the user's reading of the screen)
from he2e.verdict import exit_status, expect  # noqa: E402

DENY = "kijito-qa policy: denied ("


def read(path):
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except OSError:
        return None


def conversation(out, host):
    """The events of the last model request of the run (each request carries the whole
    conversation: Claude Code resumes the session, Codex sends its thread's input)."""
    reqs = [json.loads(line) for line in (read(os.path.join(out, "requests.jsonl")) or "").splitlines() if line.strip()]
    bodies = [r["body"] for r in reqs if isinstance(r.get("body"), dict)
              and ("messages" in r["body"] or isinstance(r["body"].get("input"), list))]
    if not bodies:
        return []
    last = bodies[-1]
    return policy_driver.claude_events(last) if host == "claude" else policy_driver.codex_events(last["input"])


def pretool_runs(summary):
    return [e for e in summary.get("hook_events") or [] if e.get("event") == "PreToolUse"]


def check_consent(out, root, host, summary, pdir):
    ev = conversation(out, host)
    start = next((i for i, e in enumerate(ev) if e[0] == "prompt"
                  and any(policy_driver.CONSENT_MARKER in t for t in e[1])), None)
    if not expect(start is not None, "the consent role's prompt is in the conversation"):
        return
    ev = ev[start:]
    # pair each call with the result that follows it
    calls = []
    for i, e in enumerate(ev):
        if e[0] == "call":
            res = next((x[1] for x in ev[i + 1:] if x[0] == "result"), None)
            calls.append((e[1], res, sum(1 for x in ev[:i] if x[0] == "prompt")))
    cmds = [c for c, _, _ in calls]
    want = (read(os.path.join(pdir, "command")) or "rm -rf build\n").strip() if pdir else "rm -rf build"
    ml = os.path.join(root, "bin", "memory-latch") + " consent request "
    expect(len(calls) == 4, "the agent made 4 tool calls (rm, consent request, retry, repeat): %r" % cmds)
    if len(calls) < 4:
        return
    (c1, r1, _), (c2, r2, _), (c3, r3, p3), (c4, r4, _) = calls[:4]
    expect(c1 == want and r1 is not None and DENY + "policy_consent_required)" in r1,
       "1st `%s` denied with policy_consent_required (result: %r)" % (want, (r1 or "")[:160]))
    named = policy_driver.consent_command(r1 or "")
    expect(named is not None and named.startswith(ml), "the deny reason names the absolute `%s...` command" % ml)
    expect(c2 == named, "the agent ran exactly the command of the deny reason")
    expect(r2 is not None and "CONFIRMATION NEEDED" in r2 and DENY not in r2,
       "the consent request ran (its output asks the user for the token)")
    shown = policy_user.SAYS.findall(r2 or "")
    token = shown[-1] if shown else ""
    user = [e[1] for e in ev if e[0] == "prompt"][1:2]
    expect(bool(user) and token != "" and any(t.strip() == token for t in user[0]),
       "the user's next prompt is exactly the token shown in the tool output (%s)" % token)
    expect(read(os.path.join(out, "build-before-retry.txt")) == "present\n", "build/ still existed before the retry")
    expect(c3 == want and p3 == 2, "the retry is the identical call, after the user's prompt")
    # Codex: "Process exited with code 0"; Claude Code: "(Bash completed with no output)"
    expect(r3 is not None and DENY not in r3 and ("exited with code 0" in r3 or "completed with no output" in r3),
       "the retry ran, exit 0 (result: %r)" % (r3 or "")[:160])
    expect(read(os.path.join(out, "build-after.txt")) == "absent\n", "build/ is gone after the run")
    expect(c4 == want and r4 is not None and DENY + "policy_consent_required)" in r4,
       "the identical repeat is denied again (policy_consent_required)")
    log = read(os.path.join(out, "latch-log.txt")) or ""
    passes = re.findall(r'"event":"gate_pass".*', log)
    hashes = re.findall(r"Action hash: (sha256:[0-9a-f]{64})", r2 or "")
    expect(len(passes) == 1 and bool(hashes) and hashes[0] in passes[0],
       "the latch's manifest holds exactly one gate_pass entry, for the requested action hash (%s)"
       % (hashes[0] if hashes else "none shown"))
    expect((read(os.path.join(out, "latch-verify.txt")) or "").startswith("TRUSTED"), "memory-latch verify: TRUSTED")
    runs = [e for e in pretool_runs(summary) if "pretool-hook" in (e.get("command") or "")]
    expect(len(runs) == 4, "the host ran the installed pretool-hook for each of the 4 calls (%d runs in its log)" % len(runs))


def check_mcp(out, root, host, summary, pdir):
    ev = conversation(out, host)
    results = [e[1] for e in ev if e[0] == "result"]
    expect(len(results) == 2, "two MCP calls got a result (%d)" % len(results))
    if len(results) < 2:
        return
    expect(DENY + "policy_pointer_write)" in results[0], "the pointer update is denied by the hook (policy_pointer_write): %r"
       % results[0][:160])
    expect("pointer_update_refused" not in results[0], "the denied call never reached the MCP server")
    expect(DENY not in results[1] and results[1].strip() != "",
       "the control call (id 5) passed the hook and the MCP server answered: %r" % results[1][:160])
    runs = [e for e in pretool_runs(summary) if "pretool-hook" in (e.get("command") or "")]
    expect(len(runs) == 2, "the host ran the installed pretool-hook for both MCP calls (%d)" % len(runs))


def main():
    kind, out, root, host = sys.argv[1:5]
    pdir = sys.argv[5] if len(sys.argv) > 5 else None
    summary = json.loads(read(os.path.join(out, "summary.json")) or "{}")
    expect(summary.get("ok") is True, "host-e2e completed the scenario (%s)" % summary.get("host_version"))
    {"consent": check_consent, "mcp": check_mcp}[kind](out, root, host, summary, pdir)
    return exit_status()


if __name__ == "__main__":
    sys.exit(main())
