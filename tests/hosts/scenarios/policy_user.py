#!/usr/bin/env python3
"""policy_user.py PROMPT_FILE: run by host-e2e --before-each (in the project dir, after the first
turn). The user of the consent scenario: reads the screen (the tool output the agent was shown,
as the fake model server received it: $HOST_E2E_OUT/requests.jsonl, the newest request first) for
memory-latch's "the USER sends only this token as their own message" line and types exactly that
token as the next prompt (writes it to PROMPT_FILE). Also notes for the check whether build/
still exists now, before the agent's retry ($HOST_E2E_OUT/build-before-retry.txt)."""
import json
import os
import re
import sys

SAYS = re.compile(r"the USER sends only this token as their own message \(no command can confirm it\): (\S+)")


def strings(obj):
    if isinstance(obj, str):
        yield obj
    elif isinstance(obj, dict):
        for v in obj.values():
            yield from strings(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from strings(v)


def main():
    out = os.environ["HOST_E2E_OUT"]
    with open(os.path.join(out, "build-before-retry.txt"), "w") as f:
        f.write("present\n" if os.path.isdir("build") else "absent\n")
    with open(os.path.join(out, "requests.jsonl"), encoding="utf-8") as f:
        reqs = [json.loads(line) for line in f if line.strip()]
    for r in reversed(reqs):
        found = [m.group(1) for s in strings(r.get("body")) for m in SAYS.finditer(s)]
        if found:
            with open(sys.argv[1], "w") as f:
                f.write(found[-1] + "\n")
            print("the user read token %s and sends it" % found[-1])
            return 0
    print("policy_user.py: no consent token on the screen", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
