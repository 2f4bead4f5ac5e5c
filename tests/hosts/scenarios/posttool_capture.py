#!/usr/bin/env python3
"""kijito-qa: a throwaway capture hook.
posttool_capture.py LOG [KEY]: appends one JSON line to LOG (0600): the hook's stdin, the event it
was run for, its environment variable names (values only for a short list that tells hosts and
modes apart), whether fds 0/1/2 are ttys, and its parent chain (comm, argv) up to pid 1.
Prints nothing and exits 0 (the call is allowed), except: a PreToolUse whose tool_input holds
the string "deny-me" is denied (to see whether a call our hook denied gets a PostToolUse); with
KEY, one holding "ask-me" is answered "ask", and in a tmux pane KEY is typed 4 s later (the user's
answer to the host's dialog).
Registered only in a run's throwaway host config (record_posttool.py), never in a template."""
import json
import os
import sys
import time

SHOW = ("CLAUDECODE", "CLAUDE_CODE_ENTRYPOINT", "CLAUDE_CODE_SSE_PORT", "TERM", "TERM_PROGRAM",
        "COLORTERM", "TMUX_PANE", "CODEX_SANDBOX", "CODEX_SANDBOX_NETWORK_DISABLED", "CI",
        "CLAUDE_PROJECT_DIR", "NO_COLOR", "FORCE_COLOR", "COLUMNS", "LINES")


def proc(pid):
    try:
        with open("/proc/%d/stat" % pid, "rb") as f:
            st = f.read().decode("utf-8", "replace")
        comm = st[st.index("(") + 1:st.rindex(")")]
        ppid = int(st[st.rindex(")") + 2:].split()[1])
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            argv = [a.decode("utf-8", "replace")[:120] for a in f.read().split(b"\0") if a][:6]
        return comm, ppid, argv
    except (OSError, ValueError):
        return None


def chain():
    out, pid = [], os.getppid()
    for _ in range(32):  # bounded
        p = proc(pid)
        if p is None:
            break
        out.append({"comm": p[0], "argv": p[2]})
        if p[1] <= 1:
            break
        pid = p[1]
    return out


def host_fds():
    """fds 0/1/2 of the nearest ancestor that is not a shell (the host), as readlink shows them."""
    pid = os.getppid()
    for _ in range(8):  # bounded
        p = proc(pid)
        if p is None:
            return None
        if p[0] not in ("sh", "bash", "dash"):
            out = {"comm": p[0]}
            for fd in (0, 1, 2):
                try:
                    t = os.readlink("/proc/%d/fd/%d" % (pid, fd))
                except OSError:
                    t = None
                out[str(fd)] = t.split(":")[0] + ":" if t and ":" in t else t
            return out
        pid = p[1]
    return None


def ctty():
    """tty_nr of this process (0: no controlling terminal) and whether /dev/tty opens."""
    with open("/proc/self/stat", "rb") as f:
        st = f.read().decode("utf-8", "replace")
    tty_nr = int(st[st.rindex(")") + 2:].split()[4])
    try:
        os.close(os.open("/dev/tty", os.O_RDONLY | os.O_NOCTTY))
        opens = True
    except OSError:
        opens = False
    return {"tty_nr": tty_nr, "dev_tty_opens": opens}


raw = sys.stdin.buffer.read(4 * 1024 * 1024).decode("utf-8", "replace")
try:
    data = json.loads(raw)
except ValueError:
    data = {"unparsed": raw}
rec = {"t": time.time(), "event": data.get("hook_event_name") if isinstance(data, dict) else None,
       "stdin": data, "env_names": sorted(os.environ),
       "env": {k: os.environ[k] for k in SHOW if k in os.environ},
       "isatty": {str(fd): os.isatty(fd) for fd in (0, 1, 2)}, "parents": chain(),
       "host_fds": host_fds(), "controlling_tty": ctty()}
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
try:
    os.write(fd, (json.dumps(rec, ensure_ascii=False) + "\n").encode("utf-8"))
finally:
    os.close(fd)
if rec["event"] == "PreToolUse" and "ask-me" in json.dumps(data.get("tool_input")) and len(sys.argv) > 2:
    # ask in the host's own dialog; in a TUI run, answer it after 4 s by typing sys.argv[2] (a tmux
    # key name such as 1 or Escape) into the pane, from a detached child (the dialog waits for us to exit)
    print(json.dumps({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "ask",
                                             "permissionDecisionReason": "capture hook: ask-me"}}))
    tmux = os.environ.get("HOST_E2E_REAL_TMUX") or "tmux"
    if os.environ.get("TMUX_PANE") and os.fork() == 0:
        os.setsid()
        nul = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(nul, fd)
        os.execvp("sh", ["sh", "-c", 'sleep 4; "$0" send-keys -t "$TMUX_PANE" "$1"', tmux, sys.argv[2]])
elif rec["event"] == "PreToolUse" and "deny-me" in json.dumps(data.get("tool_input")):
    print(json.dumps({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
                                             "permissionDecisionReason": "capture hook: deny-me"}}))
