#!/usr/bin/env python3
"""kijito-qa: probe hook of the TUI runs (lib/he2e/tui.py). Appends one JSON line to
$HOST_E2E_PROBE_LOG: the hook's stdin, its TMUX/TMUX_PANE, its pid and its parent chain
(pid, ppid, comm, argv) up to pid 1, and the pane's pane_pid as tmux reports it (through
the real tmux, $HOST_E2E_REAL_TMUX, so the tmux call log only holds other callers).
Prints $HOST_E2E_PROBE_PRINT_<EVENT> when set (e.g. a PreCompact marker), else nothing;
exits 0."""
import json
import os
import subprocess
import sys
import time


def proc_info(pid):
    try:
        with open("/proc/%d/stat" % pid, "rb") as f:
            stat = f.read().decode("utf-8", "replace")
        # comm may hold spaces/parens: split at the last ')'
        comm = stat[stat.index("(") + 1:stat.rindex(")")]
        ppid = int(stat[stat.rindex(")") + 2:].split()[1])
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            argv = [a.decode("utf-8", "replace")[:200] for a in f.read().split(b"\0") if a][:8]
        return {"pid": pid, "ppid": ppid, "comm": comm, "argv": argv}
    except (OSError, ValueError):
        return None


def chain(pid):
    out = []
    while pid > 0 and len(out) < 40:
        info = proc_info(pid)
        if info is None:
            break
        out.append(info)
        pid = info["ppid"]
    return out


raw = sys.stdin.buffer.read(4 * 1024 * 1024).decode("utf-8", "replace")
try:
    data = json.loads(raw)
except ValueError:
    data = {"unparsed": raw}
event = data.get("hook_event_name") if isinstance(data, dict) else None
rec = {"t": time.time(), "event": event, "stdin": data, "pid": os.getpid(),
       "env": {k: os.environ.get(k) for k in ("TMUX", "TMUX_PANE", "TERM", "TERM_PROGRAM", "CLAUDECODE",
                                             "CLAUDE_PROJECT_DIR", "CODEX_HOME", "CODEX_THREAD_ID")},
       "env_keys": sorted(os.environ), "chain": chain(os.getpid())}
real = os.environ.get("HOST_E2E_REAL_TMUX")
if real and os.environ.get("TMUX_PANE"):
    try:
        p = subprocess.run([real, "display-message", "-p", "-t", os.environ["TMUX_PANE"],
                            "#{pane_id} #{pane_pid} #{pane_current_command} #{pane_dead}"],
                           capture_output=True, text=True, timeout=5)
        rec["tmux_display"] = p.stdout.strip() if p.returncode == 0 else "rc=%d %s" % (p.returncode, p.stderr.strip())
    except (OSError, subprocess.TimeoutExpired) as e:
        rec["tmux_display"] = "error: %s" % e
path = os.environ.get("HOST_E2E_PROBE_LOG")
if path:
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, (json.dumps(rec, ensure_ascii=False) + "\n").encode("utf-8"))
    finally:
        os.close(fd)
extra = os.environ.get("HOST_E2E_PROBE_PRINT_%s" % (event or "").upper())
if extra:
    sys.stdout.write(extra + "\n")
