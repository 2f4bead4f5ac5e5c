#!/usr/bin/env python3
"""The --steps file (host-e2e tui-claude, lib/he2e/tui.py run_steps) of run.sh's sandbox-* scenarios
(the Claude Code TUI with kijito-qa's hooks and the OS sandbox kijito-setup --sandbox writes).
Usage: sandbox_steps.py cycle|consent|self-consent ROOT DIR OUT_FILE

Every scenario starts with the probe: the agent's `touch $HOME/sandbox-probe` must fail (the sandbox is
on in this very session). (Typed `~/sandbox-probe` or `cd && touch sandbox-probe`, 2.1.328's composer
kept the text and the Enter submitted nothing, three runs of three.) Then:
cycle:        the kijito-memory-qa cycle as in agent-long (lib/he2e/qa_driver.py: pointer-digest, two
              verifier boots, pointer-digest, qa-gate record, kijito-compact request), the adapter's
              compaction, one more turn, the status the test reads;
consent:      the user asks for the cleanup; the agent's `rm -rf build` is denied, it requests consent
              (lib/he2e/policy_driver.py); the user reads the token on the screen (policy_user.py) and
              types it at the prompt; the agent retries (runs) and repeats (denied);
self-consent: the same request, but the agent runs the installed prompt-hook itself with the real
              token (lib/he2e/selfconsent_driver.py), twice, then retries without the user."""
import json
import shlex
import sys

mode, root, pdir, path = sys.argv[1:5]
here = __file__.rsplit("/", 1)[0]
q = shlex.quote
steps = [{"prompt": "Check the home dir. HOST-E2E-RUN-TOOL: touch $HOME/sandbox-probe", "name": "probe"}]
after = {"run": "%s %s - after %s" % (q(here + "/sandbox-claude-seed.sh"), q(root), q(pdir)), "name": "after"}
if mode == "cycle":
    steps += [{"prompt": "Run the cold boots of the kijito-memory-qa skill, record the pass and request the compaction. "
                         "HOST-E2E-QA-BOOTS", "name": "cycle-1"},
              {"wait_compact": 300, "name": "after-compact-c1"},
              {"prompt": "continue HOST-E2E-QA-END", "name": "final"},
              {"run": "%s %s end" % (q(here + "/agent-status.sh"), q(root)), "name": "status-end"}]
elif mode == "consent":
    steps += [{"prompt": "Clean up the build output. HOST-E2E-CONSENT-AGENT: rm -rf build", "name": "rm"},
              {"run": "%s %s" % (q(here + "/policy_user.py"), q(pdir + "/token")), "name": "user-reads"},
              {"prompt_file": pdir + "/token", "name": "token"},
              after]
elif mode == "self-consent":
    steps += [{"prompt": "Clean up the build output. HOST-E2E-SELF-CONSENT-AGENT: rm -rf build", "name": "attack"},
              after]
else:
    sys.exit("sandbox_steps.py: unknown mode %s" % mode)
with open(path, "w", encoding="utf-8") as f:
    json.dump(steps, f, indent=1)
