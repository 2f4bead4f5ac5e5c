#!/usr/bin/env python3
"""kijito-qa: `tmux` shim of the TUI runs (lib/he2e/tui.py), installed as <work>/shim/tmux,
first on the PATH of the pane, the hooks and the caller's command. Appends one JSON line per
invocation to the log named in <work>/shim/tmux.conf.json (t, argv, pid, ppid, caller =
$HOST_E2E_TMUX_CALLER or "other", TMUX, TMUX_PANE), then execs the real tmux with the same
argv, so the caller sees tmux's own behaviour and exit code. A program that runs tmux by an
absolute path bypasses it."""
import json
import os
import sys
import time

here = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(here, "tmux.conf.json"), encoding="utf-8") as f:
    conf = json.load(f)
rec = {"t": time.time(), "argv": sys.argv[1:], "pid": os.getpid(), "ppid": os.getppid(),
       "caller": os.environ.get("HOST_E2E_TMUX_CALLER", "other"),
       "TMUX": os.environ.get("TMUX"), "TMUX_PANE": os.environ.get("TMUX_PANE")}
fd = os.open(conf["log"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
try:
    os.write(fd, (json.dumps(rec, ensure_ascii=False) + "\n").encode("utf-8"))
finally:
    os.close(fd)
os.execv(conf["real"], [conf["real"]] + sys.argv[1:])
