#!/usr/bin/env python3
"""The --steps file (host-e2e tui-*, lib/he2e/tui.py run_steps) of the agent-driven TUI scenarios of
run.sh. The user's prompts after the first are only what a person types ("continue", "fix the bu")
plus the marker the fake model picks its behaviour from (HOST-E2E-QA-BOOTS: run the kijito-memory-qa
cycle from the hook text; HOST-E2E-QA-END: do nothing of it; HOST-E2E-INPUT-TOKENS: N: report N input
tokens): never a command or a path. Usage: agent_steps.py long|typing ROOT OUT_FILE [CYCLES]

long: CYCLES (default 5) x (a prompt, the fake agent's whole cycle in that turn: pointer-digest, two
  verifier boots by fresh subagents, pointer-digest, qa-gate record, kijito-compact request; then
  the wait for the compaction the adapter types), then a turn reporting 990000 input tokens (no pass)
  and two more prompts: the host's own ceiling auto-compaction, UNATTESTED; then the journal is
  copied out for the flight-recorder checks (scenarios/journal-copy.sh).
typing: the cycle once; as soon as its Stop is seen the user (an attached tmux client) types
  `fix the bu`; 8 s of quiet (the adapter must not type /compact into the user's text); the user
  presses Enter (a new turn: the pass and the pending request are invalidated); the test reads the
  status; then the cycle again (continue, typed by send-keys), whose compaction the adapter types:
  ATTESTED."""
import json
import shlex
import sys

mode, root, path = sys.argv[1:4]
here = __file__.rsplit("/", 1)[0]
status = lambda label: {"run": "%s %s %s" % (shlex.quote(here + "/agent-status.sh"), shlex.quote(root), label),  # noqa: E731
                        "name": "status-" + label}
FIRST = "Run the cold boots of the kijito-memory-qa skill, record the pass and request the compaction. HOST-E2E-QA-BOOTS"
steps = []
if mode == "long":
    cycles = int(sys.argv[4]) if len(sys.argv) > 4 else 5
    for k in range(1, cycles + 1):
        steps.append({"prompt": FIRST if k == 1 else "continue HOST-E2E-QA-BOOTS", "name": "cycle-%d" % k})
        steps.append({"wait_compact": 120, "name": "after-compact-c%d" % k})
    steps += [{"prompt": "continue HOST-E2E-QA-END HOST-E2E-INPUT-TOKENS: 990000", "name": "ceiling-turn"},
              {"prompt": "continue HOST-E2E-QA-END", "name": "after-ceiling"},
              {"prompt": "continue HOST-E2E-QA-END", "name": "final"},
              status("end"),
              # the journal the hooks wrote, for the flight-recorder checks (lib/he2e/flight.py)
              {"run": shlex.quote(here + "/journal-copy.sh"), "name": "journal-copy"}]
elif mode == "typing":
    steps += [{"attach": True, "name": "attach"},
              {"prompt": FIRST, "name": "cycle-1", "type_after_stop": "fix the bu"},
              {"quiet": 8, "name": "quiet-after-typing"},
              status("before-enter"),
              {"enter": True, "name": "user-enter"},
              status("after-enter"),
              # typed by send-keys, not by the client: the fake model's Codex cycle is one turn of
              # under a second, and a client key in the second of both the turn's start and its Stop
              # may have come after the Stop (the adapter's same-second rule), so the adapter would
              # rightly wait (measured: request pending, reason user_typed, no compaction)
              {"prompt": "continue HOST-E2E-QA-BOOTS", "name": "cycle-2"},
              {"wait_compact": 120, "name": "after-compact-c2"},
              {"prompt": "continue HOST-E2E-QA-END", "name": "after", "via": "client"},
              status("end")]
else:
    sys.exit("agent_steps.py: unknown mode %s" % mode)
with open(path, "w", encoding="utf-8") as f:
    json.dump(steps, f, indent=1)
