"""kijito-qa: interactive TUI runs (runs inside the loopback-only namespace).

The real Claude Code / Codex TUI in a tmux pane of a private tmux server (socket
<work>/tmux.sock, started inside the namespace), against the fake model server. Records
every model request (requests.jsonl), every tmux invocation made through the `tmux` shim that
is first on PATH for the pane, its hooks and the caller's command (tmux-calls.jsonl), every
hook event with its env and parent chain (hook-probe.jsonl, lib/he2e/tui_probe.py), and pane
captures (pane-*.txt). Every wait is bounded.

Flow (TuiRun.scenario): start the pane -> wait until the TUI is ready -> for each --prompt:
type it (send-keys -l TEXT, then send-keys Enter, caller "harness") and wait for the Stop hook
-> run --then CMD (caller "then", with TMUX/TMUX_PANE the hooks saw) -> with --wait-compact,
wait for PostCompact -> each --after-prompt like --prompt -> capture, kill the tmux server,
summarise."""
import glob
import json
import os
import re
import shutil
import signal
import string
import subprocess
import time
import uuid

from . import common, fakeserver
from .common import log

EVENTS = ("SessionStart", "UserPromptSubmit", "Stop", "PreCompact", "PostCompact", "SessionEnd")
# What the TUI shows once it takes input (checked on the captured pane text).
READY = {"claude": re.compile(r"for shortcuts|bypass permissions|accept edits|\u276f", re.M),
         "codex": re.compile(r"for shortcuts|context left|\u203a ", re.M)}
COLS, ROWS = 160, 50


class TuiError(RuntimeError):
    pass


class TuiRun:
    def __init__(self, job):
        self.job, self.host = job, job["host"]
        self.out, self.work = job["out"], job["work"]
        self.clock = common.Clock()
        self.deadline = time.time() + job["timeout"]
        self.proj = os.path.join(self.work, "proj")
        os.makedirs(self.proj)
        self.real_tmux = job["real_tmux"]
        self.sock = os.path.join(self.work, "tmux.sock")
        self.probe_log = os.path.join(self.out, "hook-probe.jsonl")
        self.tmux_log = os.path.join(self.out, "tmux-calls.jsonl")
        self.summary = {"host": self.host, "scenario": "tui", "confinement": job.get("confinement"), "ok": False,
                        "errors": [], "warnings": [], "steps": [], "captures": []}
        self.pane, self.pane_pid, self.ncap = None, None, 0
        self._shim()

    # ---------------------------------------------------------------- setup
    def _shim(self):
        shim = os.path.join(self.work, "shim")
        os.makedirs(shim)
        common.write_json(os.path.join(shim, "tmux.conf.json"), {"log": self.tmux_log, "real": self.real_tmux})
        dst = os.path.join(shim, "tmux")
        with open(os.path.join(self.job["lib"], "he2e", "tmux_shim.py"), encoding="utf-8") as f:
            src = f.read()
        import sys
        with open(dst, "w", encoding="utf-8") as f:
            f.write("#!%s\n%s" % (sys.executable, src.split("\n", 1)[1]))
        os.chmod(dst, 0o755)
        self.shim_dir = shim

    def env_for(self, extra):
        env = common.base_env(self.work, extra)
        env["PATH"] = self.shim_dir + os.pathsep + env["PATH"]
        env.update({"HOST_E2E_PROBE_LOG": self.probe_log, "HOST_E2E_REAL_TMUX": self.real_tmux,
                    "HOST_E2E_TMUX_LOG": self.tmux_log, "HOST_E2E_OUT": self.out, "HOST_E2E_HOST": self.host,
                    "HOST_E2E_SCENARIO": "tui", "HOST_E2E_TMUX_CALLER": "pane"})
        for item in self.job.get("probe_print") or []:
            ev, _, text = item.partition("=")
            env["HOST_E2E_PROBE_PRINT_%s" % ev.upper()] = text
        env.pop("TMUX", None)
        env.pop("TMUX_PANE", None)
        return env

    def probe_cmd(self):
        import sys
        return "%s %s" % (sys.executable, os.path.join(self.job["lib"], "he2e", "tui_probe.py"))

    # ---------------------------------------------------------------- tmux
    def tmux(self, *args, caller=None, check=True, timeout=10):
        """caller None: the real tmux (not logged: captures, setup); else the shim with that caller."""
        exe = os.path.join(self.shim_dir, "tmux") if caller else self.real_tmux
        env = dict(self.env, HOST_E2E_TMUX_CALLER=caller) if caller else self.env
        p = subprocess.run([exe, "-S", self.sock, *args], env=env, capture_output=True, text=True,
                           timeout=timeout, stdin=subprocess.DEVNULL)
        if check and p.returncode != 0:
            raise TuiError("tmux %s failed (rc=%d): %s" % (" ".join(args), p.returncode, p.stderr.strip()))
        return p.stdout

    def start_pane(self, argv):
        line = " ".join(shlex_quote(a) for a in argv)
        if self.job.get("pane_host"):
            # kijito-qa --pane-host: the host IS the pane's command (`tmux new-session -d claude`, no
            # shell): pane_pid is the host process itself. remain-on-exit (set in the config tmux
            # reads when the server starts, so it holds from the first moment) keeps a dead pane
            # visible to pane_dead() instead of ending the session.
            conf = os.path.join(self.work, "tmux.conf")
            with open(conf, "w", encoding="utf-8") as f:
                f.write("set-option -g remain-on-exit on\nset-option -g history-limit 20000\n")
            shell = None
            self.tmux("-f", conf, "new-session", "-d", "-s", "he2e", "-x", str(COLS), "-y", str(ROWS),
                      "-c", self.proj, *argv)
        else:
            # A shell runs the host (as when a user types it at a prompt): pane_pid is the shell,
            # the host is its child. The trailing echo keeps sh from exec'ing the host.
            shell = "%s; echo HOST-E2E-HOST-EXITED rc=$?; sleep 600" % line
            self.tmux("-f", "/dev/null", "new-session", "-d", "-s", "he2e", "-x", str(COLS), "-y", str(ROWS),
                      "-c", self.proj, "/bin/sh", "-c", shell)
        self.tmux("set-option", "-g", "history-limit", "20000")
        info = self.tmux("display-message", "-p", "-t", "he2e", "#{pane_id} #{pane_pid}").split()
        self.pane, self.pane_pid = info[0], int(info[1])
        self.summary["pane"] = {"id": self.pane, "pane_pid": self.pane_pid, "socket": self.sock,
                                "command": shell if shell is not None else argv,
                                "shape": "host-is-pane" if shell is None else "host-under-shell",
                                "size": "%dx%d" % (COLS, ROWS)}
        log("%s in tmux pane %s (pane_pid %d)" % (self.host, self.pane, self.pane_pid))

    def capture(self, name=None):
        try:
            text = self.tmux("capture-pane", "-p", "-J", "-t", self.pane, "-S", "-200")
        except (TuiError, subprocess.TimeoutExpired) as e:
            return "capture failed: %s" % e
        if name:
            self.ncap += 1
            fname = "pane-%02d-%s.txt" % (self.ncap, name)
            with open(os.path.join(self.out, fname), "w", encoding="utf-8") as f:
                f.write(text)
            self.summary["captures"].append({"t": self.clock.rel(), "file": fname})
        return text

    def send_text(self, text, caller="harness"):
        """Literal text, then Enter as a separate call (what the compaction adapter does)."""
        self.tmux("send-keys", "-t", self.pane, "-l", text, caller=caller)
        time.sleep(0.4)
        self.tmux("send-keys", "-t", self.pane, "Enter", caller=caller)

    # ---------------------------------------------------------------- waits
    def left(self, limit):
        left = min(limit, self.deadline - time.time())
        if left <= 0:
            raise TuiError("run --timeout exhausted")
        return left

    def wait_ready(self, limit=90.0):
        end = time.time() + self.left(limit)
        last, stable_since = None, time.time()
        while time.time() < end:
            text = self.capture()
            self.dismiss_dialogs(text)
            if text != last:
                last, stable_since = text, time.time()
            elif READY[self.host].search(text or "") and time.time() - stable_since > 1.5 and \
                    (self.host != "codex" or "\u00b7 " + self.proj in text):
                # Codex: its status line "<model> <effort> · <cwd>" shows once the session is
                # configured; an Enter typed before that is lost (measured).
                self.capture("ready")
                return
            time.sleep(0.3)
        self.capture("not-ready")
        raise TuiError("the %s TUI did not become ready in %.0fs (see the last pane-*.txt)" % (self.host, limit))

    def dismiss_dialogs(self, text):
        """Known first-run screens that the pre-seeded config should have prevented: note, don't type."""
        for pat in ("Do you trust", "trust this folder", "Choose the text style", "Select login method",
                    "Detected a custom API key", "Sign in with ChatGPT", "Welcome to Codex"):
            if pat in (text or "") and pat not in self.summary.get("dialogs_seen", []):
                self.summary.setdefault("dialogs_seen", []).append(pat)

    def probes(self):
        return common.read_jsonl(self.probe_log)

    def wait_event(self, event, since, limit, what, pred=None):
        """First probe record of EVENT with index >= since (and pred), bounded."""
        end = time.time() + self.left(limit)
        while True:
            recs = self.probes()
            for i, r in enumerate(recs[since:], since):
                if r.get("event") == event and (pred is None or pred(r)):
                    return i, r
            if time.time() >= end:
                self.capture("timeout")
                raise TuiError("timed out after %.0fs waiting for %s" % (limit, what))
            if self.pane_dead():
                self.capture("host-exited")
                raise TuiError("the host exited while waiting for %s" % what)
            time.sleep(0.2)

    def pane_dead(self):
        try:
            if self.job.get("pane_host"):
                return self.tmux("display-message", "-p", "-t", self.pane, "#{pane_dead}").strip() == "1"
            return "HOST-E2E-HOST-EXITED" in self.capture()
        except Exception:  # noqa: BLE001
            return False

    # ---------------------------------------------------------------- steps
    def prompt(self, text, name):
        n = len(self.probes())
        t0 = time.time()
        self.state["tag"] = name
        self.send_text(text)
        self.submitted(text, n, name, False, "UserPromptSubmit after typing %r and Enter (Enter lost?)" % text)
        i, rec = self.wait_event("Stop", n, self.job["turn_timeout"], "Stop after prompt %r" % text)
        self.summary["steps"].append({"step": name, "prompt": text, "t": round(t0 - self.clock.t0, 3),
                                      "stop_after_s": round(rec["t"] - t0, 3)})
        time.sleep(0.5)
        self.capture(name)

    def session_vars(self):
        recs = [r for r in self.probes() if isinstance(r.get("stdin"), dict)]
        first = next((r for r in recs if r["stdin"].get("session_id")), None)
        if first is None:
            raise TuiError("no hook reported a session id")
        s, env = first["stdin"], first.get("env") or {}
        host_pid = host_pid_of(first.get("chain") or [], self.pane_pid, self.job.get("pane_host"))
        out = {"HOST_E2E_SESSION_ID": s.get("session_id") or "", "HOST_E2E_TRANSCRIPT_PATH":
               s.get("transcript_path") or "", "HOST_E2E_CWD": s.get("cwd") or "",
               "HOST_E2E_TMUX_PANE": self.pane, "HOST_E2E_TMUX_SOCKET": self.sock,
               "HOST_E2E_PANE_PID": str(self.pane_pid), "HOST_E2E_HOST_PID": str(host_pid or "")}
        if env.get("TMUX"):
            out["TMUX"] = env["TMUX"]
        if env.get("TMUX_PANE"):
            out["TMUX_PANE"] = env["TMUX_PANE"]
        return out

    def then(self, cmd, step="then", session=True):
        self.state["tag"] = step
        env = dict(self.env, **(self.session_vars() if session else {}), HOST_E2E_TMUX_CALLER="then")
        t0 = time.time()
        log("%s: running %s" % (step, cmd))
        with open(os.path.join(self.out, "then.log"), "ab") as f:
            p = subprocess.Popen(["/bin/sh", "-c", cmd], cwd=self.proj, env=env, stdin=subprocess.DEVNULL,
                                 stdout=f, stderr=subprocess.STDOUT, start_new_session=True)
        self.then_pgids.append(p.pid)
        try:
            rc = p.wait(timeout=self.left(self.job["then_timeout"]))
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
            rc = None
        self.summary["steps"].append({"step": step, "command": cmd, "rc": rc, "t": round(t0 - self.clock.t0, 3),
                                      "duration_s": round(time.time() - t0, 2), "log": "then.log",
                                      "env": {k: v for k, v in env.items() if k.startswith("HOST_E2E_")
                                              or k in ("TMUX", "TMUX_PANE")}})
        if rc != 0:
            raise TuiError("--%s command %s (see then.log)" % (step, "timed out" if rc is None else "exited %d" % rc))
        return t0

    def wait_compact(self, since, limit, name="after-compact"):
        t0 = time.time()
        i, rec = self.wait_event("PostCompact", since, limit, "PostCompact")
        time.sleep(1.0)
        self.capture(name)
        self.summary["steps"].append({"step": "wait-compact", "post_compact_after_s": round(rec["t"] - t0, 3)})

    def submitted(self, text, mark, name, client, what=None):
        """kijito-qa: wait for the UserPromptSubmit of a typed prompt (20 s, as before). Claude Code
        2.1.328 sometimes keeps the first prompt of a session in its composer and the Enter submits
        nothing (measured under load, the text and the Enter both in the pane); while the composer
        (the line under a rule) still holds the text 6 s after an Enter, the Enter is pressed again,
        as a person would (at most twice)."""
        end, again = time.time() + min(20.0, self.job["turn_timeout"]), 0
        while True:
            try:
                return self.wait_event("UserPromptSubmit", mark, max(0.5, min(6.0, end - time.time())),
                                       what or "UserPromptSubmit of step %s" % name)
            except TuiError:
                if time.time() >= end or self.pane_dead():
                    raise
            lines = (self.capture() or "").splitlines()
            # the composer: the line under a rule (a submitted prompt is echoed above, not there)
            if again < 2 and [b for a, b in zip(lines, lines[1:]) if a.startswith("\u2500") and text[:40] in b]:
                again += 1
                self.summary.setdefault("enter_again", []).append(name)  # kijito-qa: which prompts needed it
                if client:
                    self.client.type("\r")
                else:
                    self.tmux("send-keys", "-t", self.pane, "Enter", caller="harness")

    # ---------------------------------------------------------------- kijito-qa --steps
    def run_steps(self, steps):
        """A scripted session (JSON list, --steps FILE), each step one dict:
        {"prompt": TEXT | "prompt_file": FILE (read when the step starts)[, "name": N][, "via": "keys"|"client"][, "type_after_stop": TEXT]
         [, "answer": {"when": TEXT, "keys": K}]}: type TEXT and Enter (send-keys as caller
          "harness", or the attached client), wait for UserPromptSubmit and Stop; with answer, once
          the pane shows `when` (a host dialog) the attached client types K; with type_after_stop,
          the attached client types that text (no Enter) as soon as the Stop is seen (polled every
          20 ms);
        {"enter": true[, "name": N]}: the attached client presses Enter, wait UserPromptSubmit, Stop;
        {"attach": true}: attach the client (a pty running `tmux attach`);
        {"quiet": S[, "name": N]}: wait S seconds (keys the adapter sends meanwhile are in the log);
        {"wait_compact": S[, "name": N]}: wait for a PostCompact after the last prompt step began;
        {"run": CMD[, "name": N]}: like --then (session values in the env; a non-zero exit fails);
        kijito-qa: {"arm_kill": SPEC} (TuiRun.arm_kill: the probe hook SIGKILLs the host
          at a hook event), {"wait_killed": S}, {"restart": "resume"} (TuiRun.restart), and
          "until_killed": true on a prompt step (the armed kill ends the turn; no Stop awaited).
        Each step is appended to summary["steps"] with its start time."""
        mark = len(self.probes())
        self.state.setdefault("last_request_result_t", None)
        for i, st in enumerate(steps):
            name = st.get("name") or "step-%d" % (i + 1)
            if "prompt_file" in st:  # kijito-qa: the text a person types, written by an earlier `run` step
                with open(st["prompt_file"], encoding="utf-8") as f:
                    st = dict(st, prompt=f.read().strip())
            self.summary["steps"].append({"step": name, "kind": next(k for k in ("prompt", "enter", "attach", "quiet",
                                          "wait_compact", "run", "arm_kill", "wait_killed", "restart") if k in st),
                                          "t": self.clock.rel(),
                                          **{k: v for k, v in st.items() if k != "name"}})
            if "prompt" in st or "enter" in st:
                mark = len(self.probes())
                self.state["tag"] = name
                t0 = time.time()
                if "enter" in st:
                    self.client.type("\r")
                elif st.get("via") == "client":
                    self.client.type(st["prompt"])
                    time.sleep(0.3)
                    self.client.type("\r")
                else:
                    self.send_text(st["prompt"])
                if "prompt" in st:
                    self.submitted(st["prompt"], mark, name, st.get("via") == "client")
                else:
                    self.wait_event("UserPromptSubmit", mark, min(20.0, self.job["turn_timeout"]),
                                    "UserPromptSubmit of step %s" % name)
                if st.get("answer"):
                    # kijito-qa: a dialog the host shows in this turn (its permission prompt): wait
                    # until the pane shows answer.when, then the attached client types answer.keys,
                    # as the person at the keyboard does (bounded by --turn-timeout)
                    want = st["answer"]
                    end = time.time() + self.left(self.job["turn_timeout"])
                    while want["when"] not in self.capture():
                        if time.time() >= end or self.pane_dead():
                            self.capture("no-dialog")
                            raise TuiError("step %s: the pane never showed %r" % (name, want["when"]))
                        time.sleep(0.2)
                    time.sleep(0.5)
                    self.capture(name + "-dialog")
                    self.client.type(want["keys"])
                    self.summary["steps"][-1]["answered_t"] = self.clock.rel()
                if st.get("until_killed"):
                    # kijito-qa: an armed kill (arm_kill) ends this turn: wait for it, not for Stop
                    self.wait_killed(name, self.job["turn_timeout"])
                elif st.get("type_after_stop"):
                    # the Stop of the turn whose model request carried the `kijito-compact request`
                    # result (Claude Code: a cycle may end several turns while it waits for background
                    # verifiers); the fake server notes when such a request first comes in
                    end = time.time() + self.left(self.job["turn_timeout"])
                    while not any(r.get("event") == "Stop" and r["t"] > (self.state.get("last_request_result_t") or 1e18)
                                  for r in self.probes()[mark:]):
                        if time.time() >= end:
                            self.capture("timeout")
                            raise TuiError("timed out waiting for the Stop of step %s" % name)
                        time.sleep(0.02)
                    self.client.type(st["type_after_stop"])
                    self.summary["steps"][-1]["typed_after_stop_t"] = self.clock.rel()
                else:
                    self.wait_event("Stop", mark, self.job["turn_timeout"], "Stop of step %s" % name)
                self.summary["steps"][-1]["stop_after_s"] = round(time.time() - t0, 3)
                time.sleep(0.3)
                self.capture(name)
            elif "attach" in st:
                self.client = AttachedClient(self)
            elif "quiet" in st:
                time.sleep(min(float(st["quiet"]), self.left(st["quiet"])))
                self.capture(name)
            elif "wait_compact" in st:
                self.state["tag"] = name
                self.wait_compact(mark, float(st["wait_compact"]), name)
            elif "run" in st:
                self.then(st["run"], name)
            elif "arm_kill" in st:
                self.arm_kill(st["arm_kill"])
            elif "wait_killed" in st:
                self.wait_killed(name, float(st["wait_killed"]))
            elif "restart" in st:
                self.state["tag"] = name
                self.restart(st["restart"], name)
            else:
                raise TuiError("unknown step %r" % st)

    # ---------------------------------------------------------------- kijito-qa: kill and restart
    def arm_kill(self, spec):
        """{"event": E, "match": M, "wait": CMD, "timeout": S}: written to $HOST_E2E_OUT/kill-at.json,
        which the probe hook reads (lib/he2e/tui_probe.py kill_host): on the first hook event E whose
        stdin holds M, once CMD exits 0, the probe SIGKILLs the host from inside the host's own hook,
        so the host is stopped exactly there (it waits for its hooks). CMD gets the run's
        HOST_E2E_* values plus HOST_E2E_KILL_SESSION_ID and HOST_E2E_KILL_TRANSCRIPT."""
        common.write_json(os.path.join(self.out, "kill-at.json"), spec)
        self.summary.setdefault("kills", []).append({"armed_t": self.clock.rel(), "spec": spec})

    def wait_killed(self, name, limit):
        """Until the armed kill fired (kill-fired.json) and the pane's process is dead (bounded)."""
        fired = os.path.join(self.out, "kill-fired.json")
        end = time.time() + self.left(limit)
        while not (os.path.exists(fired) and self.pane_dead()):
            if time.time() >= end:
                self.capture("no-kill")
                raise TuiError("step %s: the armed kill did not fire within %.0fs" % (name, limit))
            time.sleep(0.2)
        time.sleep(0.3)
        with open(fired, encoding="utf-8") as f:
            rec = json.load(f)
        rec["t_rel"] = round(rec["t"] - self.clock.t0, 3)
        self.summary["kills"][-1].update(fired=rec)
        os.rename(fired, os.path.join(self.out, "kill-fired-%d.json" % len(self.summary["kills"])))
        os.unlink(os.path.join(self.out, "kill-at.json"))
        self.capture(name)

    def restart(self, how, name):
        """The dead pane's command restarted the way a person resumes (`tmux respawn-pane`, same
        env and cwd): how "resume" = `claude --continue` (the first argv without --session-id, a new
        --debug-file) or `codex resume --last` (plus the --host-arg's). Then waits until ready."""
        if how != "resume":
            raise TuiError("restart: unknown way %r" % how)
        if not self.pane_dead():
            raise TuiError("restart: the pane's process is still alive")
        n = len(self.summary.get("restarts", [])) + 1
        if self.host == "claude":
            argv, skip = [], 0
            for a in self.argv:
                if skip:
                    skip -= 1
                elif a in ("--session-id", "--debug-file"):
                    skip = 1
                else:
                    argv.append(a)
            argv[1:1] = ["--continue", "--debug-file", os.path.join(self.out, "claude-restart-%d.debug" % n)]
        else:
            argv = [self.job["exe"], "resume", "--last", *(self.job.get("host_args") or [])]
        self.tmux("clear-history", "-t", self.pane, check=False)
        self.tmux("respawn-pane", "-t", self.pane, "-c", self.proj, *argv)
        self.pane_pid = int(self.tmux("display-message", "-p", "-t", self.pane, "#{pane_pid}").strip())
        self.summary.setdefault("restarts", []).append({"t": self.clock.rel(), "argv": argv, "pane_pid": self.pane_pid})
        log("%s: restarted the pane's command (pane_pid %d): %s" % (name, self.pane_pid, " ".join(argv)))
        time.sleep(3.0)  # the dead host's last screen may still match READY until the new one draws
        self.wait_ready(self.job["ready_timeout"])

    def stop(self):
        if getattr(self, "client", None):
            self.summary["client_keys"] = self.client.keys
            self.client.close()
        try:
            self.capture("final")
            self.tmux("kill-server", check=False)
        except Exception:  # noqa: BLE001
            pass
        for g in self.then_pgids:
            try:
                os.killpg(g, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass


class AttachedClient:
    """kijito-qa: a user at a terminal. `tmux -S SOCK attach -t he2e` runs on the slave of a pty
    (COLSxROWS, TERM xterm-256color); keys are written to the master, as a terminal emulator
    writes a person's keystrokes; a thread drains the client's output (a full pty would block
    tmux). Every write is logged (t, bytes) to summary["client_keys"]."""

    def __init__(self, run):
        import fcntl
        import pty
        import struct
        import termios
        import threading
        self.run, self.keys = run, []
        self.master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLS, 0, 0))
        env = dict(run.env, TERM="xterm-256color")
        env.pop("TMUX", None)
        self.proc = subprocess.Popen([run.real_tmux, "-S", run.sock, "attach-session", "-t", "he2e"],
                                     stdin=slave, stdout=slave, stderr=slave, env=env, cwd=run.proj,
                                     start_new_session=True)
        os.close(slave)
        self.out = bytearray()
        self.reader = threading.Thread(target=self._drain, daemon=True)
        self.reader.start()
        end = time.time() + 10
        while time.time() < end:  # attached once tmux lists the client
            if run.tmux("list-clients", "-t", "he2e", "-F", "#{client_tty}", check=False).strip():
                run.summary["client"] = {"pid": self.proc.pid, "attached_t": run.clock.rel()}
                return
            time.sleep(0.1)
        raise TuiError("the attached tmux client did not show up in list-clients within 10 s")

    def _drain(self):
        while True:
            try:
                b = os.read(self.master, 65536)
            except OSError:
                return
            if not b:
                return
            if len(self.out) < 4 * 1024 * 1024:
                self.out += b

    def type(self, text, per_key=0.03):
        """One byte at a time, as a person types (Enter is "\r")."""
        for ch in text:
            os.write(self.master, ch.encode("utf-8"))
            self.keys.append({"t": self.run.clock.rel(), "key": ch})
            time.sleep(per_key)

    def close(self):
        try:
            self.proc.terminate()
            self.proc.wait(timeout=5)
        except Exception:  # noqa: BLE001
            try:
                self.proc.kill()
            except Exception:  # noqa: BLE001
                pass
        try:
            os.close(self.master)
        except OSError:
            pass


def shlex_quote(s):
    import shlex
    return shlex.quote(s)


def host_pid_of(chain, pane_pid, pane_host=False):
    """The hook's ancestor whose parent is the pane's process (the host the pane's shell started);
    the pane process itself when it is an ancestor but has no such child in the chain. With
    --pane-host (kijito-qa) the pane's process is the host, whatever its child in the chain (the
    hook's own shell on Claude Code; Codex's npm launcher runs the native codex under it)."""
    if pane_host:
        return pane_pid if any(p.get("pid") == pane_pid for p in chain) else None
    for p in chain:
        if p.get("ppid") == pane_pid:
            return p["pid"]
    return pane_pid if any(p.get("pid") == pane_pid for p in chain) else None


# -------------------------------------------------------------------- hosts

def probe_events(job):
    """EVENTS, plus PreToolUse when a --steps step arms a kill there (kijito-qa, TuiRun.arm_kill)."""
    extra = ()
    if job.get("steps"):
        with open(job["steps"], encoding="utf-8") as f:
            if any((st.get("arm_kill") or {}).get("event") == "PreToolUse" for st in json.load(f)):
                extra = ("PreToolUse",)
    return EVENTS + extra


def setup_claude(r, job):
    home = os.path.join(r.work, "home")
    config_dir = os.path.join(home, ".claude")
    os.makedirs(config_dir, mode=0o700, exist_ok=True)
    if job.get("settings_hooks"):
        shutil.copyfile(job["settings_hooks"], os.path.join(config_dir, "settings.json"))
    key = "sk-ant-host-e2e-dummy-key-000000000000"
    # First-run screens: onboarding (theme), custom API key approval, folder trust.
    common.write_json(os.path.join(config_dir, ".claude.json"), {
        "hasCompletedOnboarding": True, "theme": "dark", "numStartups": 1,
        "customApiKeyResponses": {"approved": [key[-20:]], "rejected": []},
        "bypassPermissionsModeAccepted": True, "hasSeenTasksHint": True,
        "projects": {r.proj: {"hasTrustDialogAccepted": True, "hasCompletedProjectOnboarding": True,
                              "allowedTools": [], "projectOnboardingSeenCount": 1}}})
    probe_settings = os.path.join(r.work, "probe-settings.json")
    common.write_json(probe_settings, {"hooks": {ev: [{"hooks": [
        {"type": "command", "command": r.probe_cmd(), "timeout": 30}]}] for ev in probe_events(job)}})
    cfg = {"input_tokens": job["input_tokens"]} if job.get("input_tokens") else {}
    srv, state = fakeserver.start("messages", r.req_log, r.clock, cfg)
    r.env = r.env_for({
        "CLAUDE_CONFIG_DIR": config_dir, "CLAUDE_CODE_TMPDIR": os.path.join(r.work, "tmp"),
        "ANTHROPIC_API_KEY": key, "ANTHROPIC_BASE_URL": "http://127.0.0.1:%d" % srv.server_address[1],
        "DISABLE_TELEMETRY": "1", "DISABLE_ERROR_REPORTING": "1", "DISABLE_AUTOUPDATER": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "HOST_E2E_HOOKS_DIR": os.path.dirname(job["settings_hooks"]) if job.get("settings_hooks")
        else (job.get("plugin_dir") or "")})
    r.sid = str(uuid.uuid4())
    argv = [job["exe"], "--session-id", r.sid, "--debug-file", os.path.join(r.out, "claude.debug"),
            "--settings", probe_settings]
    if job.get("plugin_dir"):
        argv += ["--plugin-dir", job["plugin_dir"]]
    argv += job.get("host_args") or []
    r.config_dir = config_dir
    return srv, state, argv


def setup_codex(r, job):
    from . import codex
    codex_home = os.path.join(r.work, "codex-home")
    os.makedirs(codex_home, mode=0o700)
    srv, state = fakeserver.start("responses", r.req_log, r.clock,
                                  {"input_tokens": job["input_tokens"]} if job.get("input_tokens") else {})
    with open(os.path.join(codex_home, "config.toml"), "w") as f:
        f.write(codex.config_toml(srv.server_address[1], job.get("sandbox_mode")))  # kijito-qa: --sandbox-mode
        f.write('\n[projects."%s"]\ntrust_level = "trusted"\n' % r.proj)
        if job.get("config_extra"):
            f.write("\n" + job["config_extra"] + "\n")
    with open(job["hooks"], encoding="utf-8") as f:
        data = json.load(f)
    for ev in probe_events(job):  # the probe on every event, next to the user's handlers
        data["hooks"].setdefault(ev, []).append({"hooks": [{"type": "command", "command": r.probe_cmd(),
                                                            "timeout": 30}]})
    common.write_json(os.path.join(codex_home, "hooks.json"), data)
    r.env = r.env_for({"CODEX_HOME": codex_home, "FAKE_API_KEY": "sk-host-e2e-dummy",
                       "HOST_E2E_HOOKS_DIR": os.path.dirname(job["hooks"])})
    # Trust every hook through a short-lived app-server (same CODEX_HOME; the TUI reads the state).
    state["tag"] = "trust"
    rpc_log = common.JsonlWriter(os.path.join(r.out, "appserver-trust.jsonl"))
    c = codex.AppServer(job["exe"], r.proj, r.env, rpc_log, os.path.join(r.out, "appserver-trust.stderr.txt"),
                        r.clock, "trust")
    try:
        c.request("initialize", {"clientInfo": {"name": "host-e2e", "title": "host-e2e", "version": "1"},
                                 "capabilities": {"experimentalApi": True}}, 60)
        c.notify("initialized")
        hooks, _ = codex.trust_all(c, r.proj, None, 60)
        r.summary["steps"].append({"step": "trust", "trusted_hooks": len(hooks)})
    finally:
        c.close()
        rpc_log.close()
    r.codex_home = codex_home
    if job.get("host_wrapper"):  # kijito-qa: e.g. `kijito-compact codex ... -- "$@"`, which starts the TUI
        r.env["HOST_E2E_CODEX"] = job["exe"]
        return srv, state, ["/bin/sh", "-c", job["host_wrapper"], "sh", *(job.get("host_args") or [])]
    return srv, state, [job["exe"], *(job.get("host_args") or [])]


def run(job):
    r = TuiRun(job)
    r.then_pgids = []
    r.req_log = common.JsonlWriter(os.path.join(r.out, "requests.jsonl"))
    srv = None
    try:
        srv, r.state, argv = (setup_claude if r.host == "claude" else setup_codex)(r, job)
        r.argv = argv  # kijito-qa: TuiRun.restart derives the resume command from it
        r.summary["host_version"] = common.host_version(job["exe"], r.env, r.proj)
        r.summary["fake_server_port"] = srv.server_address[1]
        if job.get("before_start"):  # kijito-qa: e.g. seed the pointer before SessionStart prints its commands
            r.then(job["before_start"], "before-start", session=False)
        r.state["tag"] = "startup"
        r.start_pane(argv)
        r.wait_ready(job["ready_timeout"])
        for i, p in enumerate(job.get("prompts") or []):
            r.prompt(p, "prompt-%d" % (i + 1))
        if job.get("steps"):  # kijito-qa
            with open(job["steps"], encoding="utf-8") as f:
                r.run_steps(json.load(f))
        if job.get("then"):
            n = len(r.probes())
            r.then(job["then"])
            cycles = job.get("cycles") or 1
            for k in range(cycles):  # kijito-qa: --cycles N repeats --between, --then-prompt, --wait-compact
                if k:
                    n = len(r.probes())
                    if job.get("between"):
                        r.then(job["between"], "between-%d" % (k + 1))
                sfx = "" if cycles == 1 else "-c%d" % (k + 1)
                for i, p in enumerate(job.get("then_prompts") or []):
                    sv = r.session_vars()
                    text = string.Template(p.replace("{session_id}", sv["HOST_E2E_SESSION_ID"])).safe_substitute(
                        dict(r.env, **sv))  # kijito-qa: the session values too ($HOST_E2E_TRANSCRIPT_PATH)
                    r.prompt(text, "then-prompt-%d%s" % (i + 1, sfx))
                if job.get("wait_compact"):
                    r.state["tag"] = "compact" + sfx
                    r.wait_compact(n, job["wait_compact"], "after-compact" + sfx)
        for i, p in enumerate(job.get("after_prompts") or []):
            r.prompt(p, "after-%d" % (i + 1))
        r.summary["ok"] = True
    except (RuntimeError, subprocess.TimeoutExpired, OSError) as e:
        r.summary["errors"].append(str(e))
    finally:
        r.stop()
        if srv:
            srv.shutdown()
            srv.server_close()
        r.req_log.close()
    summarise(r, job)
    return common.EXIT_OK if r.summary["ok"] else common.EXIT_FAIL


def summarise(r, job):
    s, t0 = r.summary, r.clock.t0
    probes = r.probes()
    events = []
    for p in probes:
        st = p.get("stdin") if isinstance(p.get("stdin"), dict) else {}
        extra = st.get("source") or st.get("trigger")
        events.append({"t": round(p["t"] - t0, 3), "event": p.get("event"), "source": st.get("source"),
                       "trigger": st.get("trigger"), "session_id": st.get("session_id"),
                       "TMUX": (p.get("env") or {}).get("TMUX"), "TMUX_PANE": (p.get("env") or {}).get("TMUX_PANE"),
                       "tmux_display": p.get("tmux_display"),
                       "host_pid": host_pid_of(p.get("chain") or [], r.pane_pid, job.get("pane_host")),
                       "chain": ["%d:%s" % (c["pid"], c["comm"]) for c in p.get("chain") or []],
                       "label": "%s(%s)" % (p.get("event"), extra) if extra else p.get("event")})
    s["hook_events"] = events
    s["event_sequence"] = [e["label"] for e in events]
    calls = common.read_jsonl(r.tmux_log)
    s["tmux_calls"] = [{"t": round(c["t"] - t0, 3), "caller": c.get("caller"), "argv": c.get("argv")} for c in calls]
    s["keys_to_pane"] = [{"t": round(c["t"] - t0, 3), "caller": c.get("caller"), "argv": c.get("argv")}
                         for c in calls if (c.get("argv") or [None])[0:1] == ["send-keys"]
                         or "send-keys" in (c.get("argv") or [])]
    kind = (lambda h, b: fakeserver.claude_request_kind(b)) if r.host == "claude" else fakeserver.codex_request_kind
    reqs = fakeserver.summarize_requests(common.read_jsonl(os.path.join(r.out, "requests.jsonl")), [], kind)
    s["requests"] = [dict(q, markers=None) for q in reqs]
    s["compactions"] = sum(1 for q in reqs if q["kind"] == "compaction")
    s["compaction_requests"] = [q["seq"] for q in reqs if q["kind"] == "compaction"]
    then = next((x for x in s["steps"] if x["step"] == "then"), None)
    if then:
        enters = [c for c in calls if c.get("caller") == "then" and "Enter" in (c.get("argv") or [])]
        post = [e for e in events if e["event"] == "PostCompact" and e["t"] >= then["t"]]
        if enters and post:
            s["enter_to_post_compact_s"] = round(post[0]["t"] - (enters[-1]["t"] - t0), 3)
    if r.host == "claude":
        for path in glob.glob(os.path.join(r.config_dir, "projects", "*", "*.jsonl")):
            shutil.copyfile(path, os.path.join(r.out, "transcript-%s" % os.path.basename(path)))
        if os.path.islink(os.path.join(r.out, "latest")):
            os.unlink(os.path.join(r.out, "latest"))
    else:
        for i, path in enumerate(sorted(glob.glob(os.path.join(r.codex_home, "sessions", "**", "rollout-*.jsonl"),
                                                  recursive=True))):
            shutil.copyfile(path, os.path.join(r.out, "transcript.jsonl" if i == 0 else "transcript-%d.jsonl" % i))
        for name in ("config.toml", "hooks.json"):
            p = os.path.join(r.codex_home, name)
            if os.path.exists(p):
                shutil.copyfile(p, os.path.join(r.out, name))
        logs = glob.glob(os.path.join(r.codex_home, "log", "*"))
        for p in logs[:3]:
            shutil.copyfile(p, os.path.join(r.out, "codex-" + os.path.basename(p)))
    s["duration_s"] = r.clock.rel()
    common.write_json(os.path.join(r.out, "summary.json"), s)
