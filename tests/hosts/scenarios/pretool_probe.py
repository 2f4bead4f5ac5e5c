#!/usr/bin/env python3
"""kijito-qa: a PreToolUse hook that records its stdin, one JSON line, to
$HOST_E2E_OUT/pretool-inputs.jsonl and prints nothing (the call is allowed; the host runs its
other PreToolUse hooks too). Used to measure what each host's PreToolUse carries per tool."""
import json
import os
import sys
import time

raw = sys.stdin.buffer.read(4 * 1024 * 1024).decode("utf-8", "replace")
try:
    data = json.loads(raw)
except ValueError:
    data = {"unparsed": raw}
out = os.environ.get("HOST_E2E_OUT")
if out:
    fd = os.open(os.path.join(out, "pretool-inputs.jsonl"), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, (json.dumps({"t": time.time(), "stdin": data}, ensure_ascii=False) + "\n").encode("utf-8"))
    finally:
        os.close(fd)
