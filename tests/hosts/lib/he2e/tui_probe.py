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


def kill_host(spec_path, data, pid):
    """kijito-qa: the host killed from inside one of its own hooks, race-free (tui.TuiRun.run_steps
    `arm_kill`). $HOST_E2E_OUT/kill-at.json = {"event", "match", "wait", "timeout"}: on the first
    EVENT whose stdin holds MATCH, this probe (which the host waits for, so the host cannot move
    on) runs WAIT (`sh -c`, with HOST_E2E_KILL_SESSION_ID / HOST_E2E_KILL_TRANSCRIPT) every 0.1 s
    until it exits 0 (at most TIMEOUT s: the kijito-qa hook of the same event has done its work),
    then SIGKILLs, top first, the pane's process and every process between it and this probe (the
    host: on Codex the npm launcher and the native binary under it), as `kill -9` or the OOM
    killer would. Fires once: $HOST_E2E_OUT/kill-fired.json records what it did."""
    import signal
    fired = os.path.join(os.path.dirname(spec_path), "kill-fired.json")
    with open(spec_path, encoding="utf-8") as f:
        spec = json.load(f)
    if spec.get("event") != event or spec.get("match", "") not in raw:
        return
    try:
        fd = os.open(fired, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return
    env = dict(os.environ, HOST_E2E_KILL_SESSION_ID=str(data.get("session_id") or ""),
               HOST_E2E_KILL_TRANSCRIPT=str(data.get("transcript_path") or ""))
    t0, ready, tries = time.time(), False, 0
    while time.time() - t0 < float(spec.get("timeout", 30)):
        tries += 1
        if spec.get("wait") is None or subprocess.run(["/bin/sh", "-c", spec["wait"]], env=env, stdin=subprocess.DEVNULL,
                                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0:
            ready = True
            break
        time.sleep(0.1)
    pane_pid = None
    try:
        pane_pid = int((rec.get("tmux_display") or "").split()[1])
    except (IndexError, ValueError):
        pass
    ups = chain(pid)[1:]
    cut = next((i for i, c in enumerate(ups) if c["pid"] == pane_pid), None)
    victims = list(reversed(ups[:cut + 1])) if cut is not None else []
    killed = []
    for c in victims:
        try:
            os.kill(c["pid"], signal.SIGKILL)
            killed.append({"pid": c["pid"], "comm": c["comm"]})
        except OSError as e:
            killed.append({"pid": c["pid"], "comm": c["comm"], "error": str(e)})
    os.write(fd, json.dumps({"t": time.time(), "event": event, "session_id": data.get("session_id"),
                             "wait_ready": ready, "wait_tries": tries, "waited_s": round(time.time() - t0, 3),
                             "pane_pid": pane_pid, "killed": killed}).encode("utf-8"))
    os.close(fd)


spec_path = os.path.join(os.environ.get("HOST_E2E_OUT") or "/nonexistent", "kill-at.json")
if event and os.path.exists(spec_path) and isinstance(data, dict):
    kill_host(spec_path, data, os.getpid())
