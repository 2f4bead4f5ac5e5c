"""How a scenario's checker says what it found (tests/hosts/scenarios/check*.py): the one copy.

ok(msg)             a check that held: "  ok: msg".
fail(msg)           a check that failed: "  FAIL: msg", then exit 1 (the first failure ends the run).
fail(msg, stop=False)
                    the same, recorded in `failures` and the checker goes on (it exits with
                    exit_status() at its end).
expect(cond, what)  ok(what) when cond holds, else fail(what, stop=False); returns cond.
exit_status()       1 when a check failed, else 0.
jsonl(path)         the JSON lines of a file the run left ([] when it is missing; blank lines
                    skipped, a line that is not JSON raises: the checkers read what the harness
                    wrote, unlike he2e.common.read_jsonl, which keeps what a host wrote)."""
import json
import os
import sys

failures = []


def ok(msg):
    print("  ok: " + msg)


def fail(msg, stop=True):
    print("  FAIL: " + msg)
    failures.append(msg)
    if stop:
        sys.exit(1)


def expect(cond, what):
    if cond:
        ok(what)
    else:
        fail(what, stop=False)
    return cond


def exit_status():
    return 1 if failures else 0


def jsonl(path):
    if not os.path.exists(path):
        return []
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]
