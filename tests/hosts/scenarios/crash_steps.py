#!/usr/bin/env python3
"""kijito-qa: the --steps file (host-e2e tui-* --pane-host, lib/he2e/tui.py run_steps) of the
kill/restart scenarios of run.sh (run_crash). Usage: crash_steps.py POINT ROOT HOST OUT_FILE

The fake model runs the kijito-memory-qa cycle (lib/he2e/qa_driver.py) from the hooks' own text;
the host is SIGKILLed from inside its own hook at POINT (arm_kill: the probe hook of that event,
which the host waits for, waits until the kijito-qa hook of the event has done its work, then kills
the pane's process and the host under it), restarted the way a person does (`claude --continue` /
`codex resume --last` as the pane's new command), then the cycle runs again:
  record       after `qa-gate record`: at the PreToolUse of the agent's next call, the hook text's
               `kijito-compact request` (the pass exists, nothing requested, nothing compacted)
  precompact   in PreCompact, once PreCompact recorded its real attempt (the pass promoted to the
               ticket), before any compaction request reaches the model
  postcompact  in PostCompact: Codex once PostCompact claimed (re-entry record written, not yet
               delivered: Codex runs SessionStart(compact) after PostCompact); Claude Code once
               PostCompact noted the summary check (it runs SessionStart(compact) first, which
               already delivered the re-entry to the host)
User prompts after the first are only what a person types plus the fake model's markers."""
import json
import shlex
import sys

point, root, host, path = sys.argv[1:5]
here = __file__.rsplit("/", 1)[0]
wait = lambda cond: "%s %s %s" % (shlex.quote(here + "/crash-wait.sh"), shlex.quote(root), cond)  # noqa: E731
status = lambda label: {"run": "%s %s %s" % (shlex.quote(here + "/agent-status.sh"), shlex.quote(root), label),  # noqa: E731
                        "name": "status-" + label}
FIRST = "Run the cold boots of the kijito-memory-qa skill, record the pass and request the compaction. HOST-E2E-QA-BOOTS"
arm = {"record": {"event": "PreToolUse", "match": "kijito-compact request", "wait": wait("pass")},
       "precompact": {"event": "PreCompact", "match": "", "wait": wait("attempt-final")},
       "postcompact": {"event": "PostCompact", "match": "",
                       "wait": wait("claimed" if host == "codex" else "noted")}}[point]
arm["timeout"] = 20
steps = [{"arm_kill": arm, "name": "arm-kill"}]
if point == "record":
    steps.append({"prompt": FIRST, "name": "cycle-1", "until_killed": True})
else:
    steps += [{"prompt": FIRST, "name": "cycle-1"}, {"wait_killed": 150, "name": "killed"}]
steps += [status("after-kill"),
          {"restart": "resume", "name": "restart"},
          {"prompt": "continue HOST-E2E-QA-BOOTS", "name": "cycle-2"},
          {"wait_compact": 120, "name": "after-compact-c2"},
          {"prompt": "continue HOST-E2E-QA-END", "name": "after"},
          status("end")]
with open(path, "w", encoding="utf-8") as f:
    json.dump(steps, f, indent=1)
