"""Codex CLI runner (runs inside the loopback-only namespace).

Throwaway CODEX_HOME with a fake provider and the user's hooks.json, hooks trusted
through the app-server (hooks/list -> config/batchWrite hooks.state.<key>.trusted_hash),
then one scenario driven over `codex app-server` JSON-RPC (or `codex exec`)."""
import glob
import json
import os
import re
import shutil
import string
import subprocess
import threading
import time

from . import common, fakeserver
from .common import log

# kijito-qa: adapter-long's ceiling: the auto-compaction limit of the thread, and what the ceiling
# turn's answer reports (fakeserver.TOKENS_MARKER); the other turns report 100 input tokens.
CEILING_LIMIT = 200000
CEILING_TOKENS = 990000

CONFIG_TOML = """model = "fake-model"
model_provider = "fake"
approval_policy = "never"
{sandbox_line}
[model_providers.fake]
name = "host-e2e fake provider"
base_url = "http://127.0.0.1:{port}/v1"
env_key = "FAKE_API_KEY"
wire_api = "responses"
request_max_retries = 0
stream_max_retries = 0

[features]
hooks = true

[analytics]
enabled = false
"""

# kijito-qa: --sandbox-mode MODE (codex, tui-codex): the config's top-level sandbox_mode; `none`
# writes no line (a newcomer's config, where kijito-setup --sandbox adds its own). Without the
# option: read-only, and the prompts/adapter/plain-request threads run danger-full-access (upstream).
SANDBOX_MODES = ("read-only", "workspace-write", "danger-full-access", "none")


def config_toml(port, sandbox_mode=None):
    mode = sandbox_mode or "read-only"
    return CONFIG_TOML.format(port=port, sandbox_line="" if mode == "none" else 'sandbox_mode = "%s"\n' % mode)


PROMPT_1 = "Say hello"
PROMPT_2 = "Second prompt after compaction"
SETTLE_S = 0.5  # let trailing notifications arrive before the next step
PROBE_HINT = ("the probe rides on the events of your hooks file (hook-inputs.jsonl), so one of them must "
              "fire in the first turn (SessionStart, UserPromptSubmit or Stop)")


class StepError(RuntimeError):
    pass


class _Done(Exception):
    """kijito-qa: the prompts scenario finished (skips the compaction steps)."""


def pascal(name):
    return name[:1].upper() + name[1:] if name else name


class AppServer:
    """`codex app-server` over stdio; every message (both directions) goes to a JSONL log."""

    def __init__(self, exe, cwd, env, log_writer, stderr_path, clock, session, wrapper=None):
        self.log, self.clock, self.session = log_writer, clock, session
        self.msgs, self.cond, self.eof, self.next_id = [], threading.Condition(), False, 1
        self.stderr = open(stderr_path, "ab")
        # kijito-qa: --app-server-cmd runs a wrapper (the compaction adapter) in place of the app-server
        argv = ["/bin/sh", "-c", wrapper] if wrapper else [exe, "app-server"]
        env = dict(env, HOST_E2E_CODEX=exe) if wrapper else env
        self.proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=self.stderr)
        threading.Thread(target=self._reader, daemon=True).start()

    def _record(self, direction, msg):
        self.log.write({"t": self.clock.rel(), "session": self.session, "dir": direction, "msg": msg})

    def _reader(self):
        for raw in self.proc.stdout:
            line = raw.decode("utf-8", "replace").strip()
            if not line:
                continue
            try:
                msg = json.loads(line)
            except ValueError:
                msg = {"unparsed": line}
            self._record("in", msg)
            if "method" in msg and "id" in msg:  # server -> client request (approvals ...)
                if "pproval" in msg["method"]:
                    self.send({"id": msg["id"], "result": {"decision": "decline"}})
                else:
                    self.send({"id": msg["id"], "error": {"code": -32601,
                                                          "message": "not supported by host-e2e"}})
                continue
            with self.cond:
                self.msgs.append(msg)
                self.cond.notify_all()
        with self.cond:
            self.eof = True
            self.cond.notify_all()

    def send(self, msg):
        self._record("out", msg)
        try:
            self.proc.stdin.write((json.dumps(msg) + "\n").encode())
            self.proc.stdin.flush()
        except (BrokenPipeError, ValueError):
            try:
                rc = self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                rc = None
            raise StepError("codex app-server is not running (rc=%s); see appserver.stderr.txt" % rc)

    def mark(self):
        with self.cond:
            return len(self.msgs)

    def wait(self, pred, timeout, since, what):
        deadline = time.time() + timeout
        i = since
        with self.cond:
            while True:
                while i < len(self.msgs):
                    if pred(self.msgs[i]):
                        return self.msgs[i]
                    i += 1
                if self.eof:
                    raise StepError("codex app-server exited while waiting for %s (rc=%s); see "
                                    "appserver.stderr.txt" % (what, self.proc.poll()))
                left = deadline - time.time()
                if left <= 0:
                    raise StepError("timed out after %.0fs waiting for %s" % (timeout, what))
                self.cond.wait(min(left, 1.0))

    def request(self, method, params, timeout):
        rid, self.next_id = self.next_id, self.next_id + 1
        mark = self.mark()
        self.send({"id": rid, "method": method, "params": params})
        r = self.wait(lambda m: m.get("id") == rid and ("result" in m or "error" in m), timeout, mark, method)
        if "error" in r:
            raise StepError("%s failed: %s" % (method, json.dumps(r["error"])[:500]))
        return r["result"]

    def notify(self, method, params=None):
        self.send({"method": method, **({"params": params} if params is not None else {})})

    def close(self):
        try:
            self.proc.stdin.close()
        except Exception:  # noqa: BLE001
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.stderr.close()


def write_hooks(job, dest, probe_cmd):
    """The user's hooks.json, verbatim; with the probe, one extra handler group per event."""
    if not probe_cmd:
        shutil.copyfile(job["hooks"], dest)
        return
    with open(job["hooks"], encoding="utf-8") as f:
        data = json.load(f)
    for groups in data["hooks"].values():
        groups.append({"hooks": [{"type": "command", "command": probe_cmd, "timeout": 30}]})
    common.write_json(dest, data)


def trust_all(c, proj, probe_cmd, timeout):
    """hooks/list -> config/batchWrite(hooks.state.<key>.trusted_hash) -> hooks/list."""
    listing = c.request("hooks/list", {"cwds": [proj]}, timeout)
    problems = [e for d in listing.get("data", []) for e in d.get("errors", [])]
    warnings = [w for d in listing.get("data", []) for w in d.get("warnings", [])]
    hooks = [h for d in listing.get("data", []) for h in d.get("hooks", [])]
    if problems:
        raise StepError("codex rejected the hooks config: %s" % json.dumps(problems)[:1000])
    if not [h for h in hooks if h.get("command") != probe_cmd]:
        raise StepError("codex found no hooks in the given hooks.json%s"
                        % ("" if not warnings else ": " + json.dumps(warnings)[:1000]))
    edits = [{"keyPath": "hooks.state", "mergeStrategy": "upsert",
              "value": {h["key"]: {"trusted_hash": h["currentHash"]}}} for h in hooks]
    c.request("config/batchWrite", {"edits": edits, "reloadUserConfig": True}, timeout)
    listing = c.request("hooks/list", {"cwds": [proj]}, timeout)
    hooks = [h for d in listing.get("data", []) for h in d.get("hooks", [])]
    untrusted = [h["key"] for h in hooks if h.get("trustStatus") != "trusted"]
    if untrusted:
        raise StepError("hooks still untrusted after config/batchWrite: %s" % untrusted)
    warnings = [w for d in listing.get("data", []) for w in d.get("warnings", [])]
    return hooks, warnings


def run_turn(c, thread_id, text, timeout):
    mark = c.mark()
    turn = c.request("turn/start", {"threadId": thread_id, "input": [{"type": "text", "text": text}]},
                     timeout)["turn"]
    done = c.wait(lambda m: m.get("method") == "turn/completed" and
                  m["params"]["turn"]["id"] == turn["id"], timeout, mark, "turn/completed (%r)" % text)
    return done["params"]["turn"]


def compact(c, thread_id, timeout):
    mark = c.mark()
    c.request("thread/compact/start", {"threadId": thread_id}, timeout)
    started = c.wait(lambda m: m.get("method") == "turn/started", timeout, mark, "compaction turn/started")
    tid = started["params"]["turn"]["id"]
    done = c.wait(lambda m: m.get("method") == "turn/completed" and m["params"]["turn"]["id"] == tid,
                  timeout, mark, "compaction turn/completed")
    return done["params"]["turn"]


def turn_record(step, turn):
    return {"step": step, "turn_id": turn.get("id"), "status": turn.get("status"), "error": turn.get("error")}


# ------------------------------------------------------------------ summary

def hook_runs(log_entries, hooks, probe_cmd, probe_records):
    """Ordered hook runs from hook/started + hook/completed, user runs annotated with the
    probe's stdin (SessionStart source, Pre/PostCompact trigger)."""
    by_slot = {(h.get("sourcePath"), h.get("displayOrder")): h for h in hooks}
    runs, open_runs = [], {}
    for i, rec in enumerate(log_entries):
        m = rec.get("msg", {})
        meth = m.get("method")
        if rec.get("dir") != "in" or meth not in ("hook/started", "hook/completed"):
            continue
        p, run = m["params"], m["params"]["run"]
        if meth == "hook/started" or not open_runs.get(run["id"]):
            h = by_slot.get((run.get("sourcePath"), run.get("displayOrder")), {})
            r = {"i": i, "event": pascal(run.get("eventName")), "source": None, "trigger": None,
                 "status": run.get("status"), "entries": run.get("entries") or [],
                 "status_message": run.get("statusMessage"), "duration_ms": run.get("durationMs"),
                 "turn_id": p.get("turnId"), "command": h.get("command"), "run_id": run["id"],
                 "t": rec.get("t"), "probe": bool(probe_cmd) and h.get("command") == probe_cmd}
            runs.append(r)
            open_runs.setdefault(run["id"], []).append(r)
        if meth == "hook/completed":
            r = open_runs[run["id"]].pop(0)
            r.update(status=run.get("status"), entries=run.get("entries") or [],
                     status_message=run.get("statusMessage"), duration_ms=run.get("durationMs"))
    notes = []
    probes = [r for r in runs if r["probe"]]
    if probe_cmd:
        per_event = {}
        for rec in probe_records:
            ev = (rec.get("stdin") or {}).get("hook_event_name")
            per_event.setdefault(ev, []).append(rec.get("stdin") or {})
        counts_ok = all(len(per_event.get(ev, [])) == len([r for r in probes if r["event"] == ev])
                        for ev in {r["event"] for r in probes} | set(per_event))
        if counts_ok:
            seen = {}
            for r in probes:
                stdin = per_event[r["event"]][seen.setdefault(r["event"], 0)]
                seen[r["event"]] += 1
                r["source"], r["trigger"] = stdin.get("source"), stdin.get("trigger")
            for r in runs:
                if not r["probe"]:
                    near = [q for q in probes if q["event"] == r["event"] and q["turn_id"] == r["turn_id"]]
                    if near:
                        q = min(near, key=lambda q: abs(q["i"] - r["i"]))
                        r["source"], r["trigger"] = q["source"], q["trigger"]
        else:
            notes.append("probe records and probe runs differ in number; source/trigger left null")
    user = [{k: v for k, v in r.items() if k not in ("i", "probe")} for r in runs if not r["probe"]]
    return user, notes


def label(ev):
    extra = ev.get("source") or ev.get("trigger")
    return "%s(%s)" % (ev["event"], extra) if extra else ev["event"]


def exec_hook_lines(stderr_text):
    """`codex exec` (human output) prints `hook: Event` and `hook: Event <Status>` per run."""
    events, started = [], {}
    for line in stderr_text.splitlines():
        m = re.match(r"^hook: (\w+)(?: (\w+))?\s*$", line)
        if not m:
            continue
        if m.group(2) is None:
            started[m.group(1)] = started.get(m.group(1), 0) + 1
        else:
            started[m.group(1)] = started.get(m.group(1), 0) - 1
            events.append({"event": m.group(1), "source": None, "trigger": None,
                           "status": m.group(2).lower(), "entries": []})
    for ev, n in started.items():
        events.extend({"event": ev, "source": None, "trigger": None, "status": "no-completion-line",
                       "entries": []} for _ in range(max(n, 0)))
    return events


# ------------------------------------------------------------------ main

def run(job):
    clock, out, work = common.Clock(), job["out"], job["work"]
    deadline = time.time() + job["timeout"]
    step_timeout = lambda: max(5.0, min(120.0, deadline - time.time()))  # noqa: E731
    markers = common.load_markers(job.get("markers"))
    codex_home, proj = os.path.join(work, "codex-home"), os.path.join(work, "proj")
    os.makedirs(codex_home, mode=0o700)
    os.makedirs(proj)
    probe_log = os.path.join(out, "hook-inputs.jsonl")
    use_probe = job["probe"] and job["scenario"] != "exec"
    probe_cmd = common.probe_command(job["lib"]) if use_probe else None
    env = common.base_env(work, {
        "CODEX_HOME": codex_home, "FAKE_API_KEY": "sk-host-e2e-dummy",
        "HOST_E2E_HOST": "codex", "HOST_E2E_SCENARIO": job["scenario"], "HOST_E2E_OUT": out,
        "HOST_E2E_HOOKS_DIR": os.path.dirname(job["hooks"]),
        **({"HOST_E2E_PROBE_LOG": probe_log} if use_probe else {})})
    req_log = common.JsonlWriter(os.path.join(out, "requests.jsonl"))
    rpc_log = common.JsonlWriter(os.path.join(out, "appserver.jsonl"))
    srv, state = fakeserver.start("responses", req_log, clock)
    port = srv.server_address[1]
    with open(os.path.join(codex_home, "config.toml"), "w") as f:
        f.write(config_toml(port, job.get("sandbox_mode")))  # kijito-qa: --sandbox-mode
        if job.get("config_extra"):  # kijito-qa: --config-extra
            f.write("\n" + job["config_extra"] + "\n")
    write_hooks(job, os.path.join(codex_home, "hooks.json"), probe_cmd)
    exe = job["codex"]
    summary = {"host": "codex", "host_version": common.host_version(exe, env, proj),
               "scenario": job["scenario"], "probe": use_probe, "confinement": job.get("confinement"),
               "fake_server_port": port, "ok": False,
               "errors": [], "warnings": [], "steps": []}
    log("codex %s: %s, fake Responses server on 127.0.0.1:%d"
        % (job["scenario"], summary["host_version"] or "version unknown", port))
    c = AppServer(exe, proj, env, rpc_log, os.path.join(out, "appserver.stderr.txt"), clock, "main",
                  job.get("app_server_cmd"))
    hooks = []
    cmds = common.UserCommands(out, proj, deadline)  # --before-compact / --after
    try:
        state["tag"] = "trust"
        try:
            init = c.request("initialize", {
                "clientInfo": {"name": "host-e2e", "title": "host-e2e", "version": "1"},
                "capabilities": {"experimentalApi": True}}, step_timeout())
        except StepError as e:
            raise StepError("codex app-server failed to start: %s" % e)
        c.notify("initialized")
        summary["steps"].append({"step": "initialize", "user_agent": init.get("userAgent")})
        hooks, warnings = trust_all(c, proj, probe_cmd, step_timeout())
        summary["warnings"] += ["hooks/list: %s" % w for w in warnings]
        with open(job["hooks"], encoding="utf-8") as f:
            ignored = sorted(set(json.load(f)["hooks"]) - {pascal(h.get("eventName")) for h in hooks})
        summary["warnings"] += ["event %r in the hooks file: codex lists no hook for it" % e for e in ignored]
        summary["steps"].append({"step": "trust", "trusted_hooks": len(hooks),
                                 "of_which_probe": sum(1 for h in hooks if h.get("command") == probe_cmd)})
        if job["scenario"] == "exec":
            c.close()
            state["tag"] = "exec"
            t0 = time.time()
            with open(os.path.join(out, "exec.stdout.txt"), "wb") as so, \
                    open(os.path.join(out, "exec.stderr.txt"), "wb") as se:
                p = subprocess.run([exe, "exec", "--skip-git-repo-check", PROMPT_1], cwd=proj, env=env,
                                   stdin=subprocess.DEVNULL, stdout=so, stderr=se, timeout=step_timeout())
            summary["steps"].append({"step": "exec", "rc": p.returncode,
                                     "duration_s": round(time.time() - t0, 2)})
            if p.returncode != 0:
                raise StepError("codex exec exited %d (see exec.stderr.txt)" % p.returncode)
        else:
            params = {"cwd": proj}
            if job["scenario"] == "prompts":  # kijito-qa: --before-first, then one turn per --prompt-file
                if job.get("before_first"):
                    state["tag"] = "before-first"
                    cmds.run("before-first", job["before_first"], env, {"HOST_E2E_SESSION_ID": "",
                             "HOST_E2E_TRANSCRIPT_PATH": "", "HOST_E2E_CWD": proj}, summary["steps"])
                if not job.get("sandbox_mode"):  # kijito-qa: with --sandbox-mode the config decides
                    params["config"] = {"sandbox_mode": "danger-full-access"}
                state["tag"] = "thread"
                thread_id = c.request("thread/start", params, step_timeout())["thread"]["id"]
                for n, pf in enumerate(job["prompt_files"]):
                    if n >= 1 and job.get("before_each"):  # kijito-qa: may write this turn's prompt file
                        state["tag"] = "before-each"
                        cmds.run("before-each", job["before_each"], dict(env, HOST_E2E_STEP=str(n + 1)),
                                 {"HOST_E2E_SESSION_ID": "", "HOST_E2E_TRANSCRIPT_PATH": "", "HOST_E2E_CWD": proj},
                                 summary["steps"])
                    with open(pf, encoding="utf-8") as f:
                        text = f.read(64 * 1024).rstrip("\n")
                    state["tag"] = "%d-prompt" % (n + 1)
                    if text == "/compact":  # kijito-qa: a prompt file `/compact` is the user's manual compaction
                        state["tag"] = "compact"
                        summary["steps"].append(dict(turn_record("compact", compact(c, thread_id, step_timeout())),
                                                     prompt=text))
                        time.sleep(SETTLE_S)
                        continue
                    summary["steps"].append(dict(turn_record(state["tag"], run_turn(c, thread_id, text,
                                                                                     step_timeout())), prompt=text))
                    time.sleep(SETTLE_S)
                if job.get("after"):
                    session, notes = common.hook_session(common.read_jsonl(probe_log), PROBE_HINT)
                    summary["warnings"] += notes
                    c.close()
                    state["tag"] = "after"
                    cmds.run("after", job["after"], env, session, summary["steps"])
                summary["ok"] = True
                raise _Done()
            if job["scenario"] == "auto-compact":
                params["config"] = {"model_auto_compact_token_limit": job["auto_compact_limit"]}
            if job["scenario"] in ("adapter-compact", "adapter-long", "plain-request"):  # the tool call writes the request file
                params["config"] = {} if job.get("sandbox_mode") else {"sandbox_mode": "danger-full-access"}
            if job["scenario"] == "adapter-long":  # the ceiling turn (HOST-E2E-INPUT-TOKENS) crosses it
                params["config"]["model_auto_compact_token_limit"] = CEILING_LIMIT
            state["tag"] = "thread"
            thread_id = c.request("thread/start", params, step_timeout())["thread"]["id"]
            state["tag"] = "turn-1"
            prompt = PROMPT_1
            if job["scenario"] == "tool":  # kijito-qa addition: the fake model calls exec_command
                prompt = "Run this. %s %s" % (fakeserver.TOOL_MARKER, job["tool_command"])
            summary["steps"].append(turn_record("turn-1", run_turn(c, thread_id, prompt, step_timeout())))
            time.sleep(SETTLE_S)
            if job.get("before_compact") or job.get("after"):
                session, notes = common.hook_session(common.read_jsonl(probe_log), PROBE_HINT)
                summary["warnings"] += notes
            if job.get("before_compact"):  # manual: before thread/compact/start; auto: before turn 2
                state["tag"] = "before-compact"
                cmds.run("before-compact", job["before_compact"], env, session, summary["steps"])
            if job["scenario"] == "tool":
                pass  # one turn: the fake model calls exec_command once, then answers text
            elif job["scenario"] == "plain-request":
                # kijito-qa: a plain app-server session (no wrapper, no tmux): the fake model runs
                # --tool-command ({session_id} and $VARS filled in) in turn 2; nothing compacts.
                cmd = string.Template(job["tool_command"].replace("{session_id}", session["HOST_E2E_SESSION_ID"])
                                      ).safe_substitute(dict(env, **session))  # kijito-qa: session values too
                state["tag"] = "tool-turn"
                summary["steps"].append(dict(turn_record("tool-turn", run_turn(
                    c, thread_id, "Run this. %s %s" % (fakeserver.TOOL_MARKER, cmd), step_timeout())), command=cmd))
                time.sleep(SETTLE_S)
            elif job["scenario"] in ("adapter-compact", "adapter-long"):
                # kijito-qa: the fake model runs --tool-command ({session_id} and $VARS of the run filled
                # in) in turn 2; the wrapper (--app-server-cmd) compacts after that turn on its own;
                # this client sends no thread/compact/start and waits for the compaction turn.
                cmd = string.Template(job["tool_command"].replace("{session_id}", session["HOST_E2E_SESSION_ID"])
                                      ).safe_substitute(dict(env, **session))  # kijito-qa: session values too
                cycles = (job.get("cycles") or 5) if job["scenario"] == "adapter-long" else 1
                for k in range(cycles):
                    if k and job.get("between"):  # adapter-long: a new pass before each further cycle
                        state["tag"] = "between-%d" % (k + 1)
                        cmds.run("between", job["between"], env, session, summary["steps"])
                    mark = c.mark()
                    state["tag"] = "tool-turn" if cycles == 1 else "tool-turn-%d" % (k + 1)
                    summary["steps"].append(dict(turn_record(state["tag"], run_turn(
                        c, thread_id, "Run this. %s %s" % (fakeserver.TOOL_MARKER, cmd), step_timeout())),
                        command=cmd))
                    state["tag"] = "compact" if cycles == 1 else "compact-%d" % (k + 1)
                    t0 = time.time()
                    item = c.wait(lambda m: m.get("method") == "item/completed" and
                                  m["params"].get("item", {}).get("type") == "contextCompaction", step_timeout(),
                                  mark, "the wrapper's compaction (contextCompaction item)")
                    tid = item["params"]["turnId"]
                    done = c.wait(lambda m: m.get("method") == "turn/completed" and
                                  m["params"]["turn"]["id"] == tid, step_timeout(), mark,
                                  "the wrapper's compaction turn/completed")
                    summary["steps"].append(dict(turn_record("adapter-compact", done["params"]["turn"]),
                                                 waited_s=round(time.time() - t0, 3)))
                    time.sleep(SETTLE_S)
                if job["scenario"] == "adapter-long":
                    # kijito-qa: no new pass; one turn whose answer reports more input tokens than
                    # model_auto_compact_token_limit: Codex's own auto-compaction runs before turn-2.
                    state["tag"] = "ceiling"
                    summary["steps"].append(turn_record("ceiling", run_turn(
                        c, thread_id, "Ceiling turn. %s %d" % (fakeserver.TOKENS_MARKER, CEILING_TOKENS),
                        step_timeout())))
                    time.sleep(SETTLE_S)
            elif job["scenario"] == "manual-compact":
                state["tag"] = "compact"
                summary["steps"].append(turn_record("compact", compact(c, thread_id, step_timeout())))
                time.sleep(SETTLE_S)
            state["tag"] = "turn-2"
            summary["steps"].append(turn_record("turn-2", run_turn(c, thread_id, PROMPT_2, step_timeout())))
            time.sleep(SETTLE_S)
            if job["scenario"] == "adapter-long":  # SessionStart(compact) of the ceiling compaction
                state["tag"] = "turn-3"
                summary["steps"].append(turn_record("turn-3", run_turn(c, thread_id, "Final prompt", step_timeout())))
                time.sleep(SETTLE_S)
            if job.get("after"):  # once the app-server has exited (rollout flushed, hooks done)
                c.close()
                state["tag"] = "after"
                cmds.run("after", job["after"], env, session, summary["steps"])
        summary["ok"] = True
    except _Done:
        pass
    except (RuntimeError, subprocess.TimeoutExpired) as e:  # StepError, common.Interrupted
        summary["errors"].append(str(e))
    finally:
        cmds.stop()
        c.close()
        srv.shutdown()
        srv.server_close()
        req_log.close()
        rpc_log.close()

    # ---- collect artefacts
    for name in ("config.toml", "hooks.json"):
        if os.path.exists(os.path.join(codex_home, name)):
            shutil.copyfile(os.path.join(codex_home, name), os.path.join(out, name))
    rollouts = sorted(glob.glob(os.path.join(codex_home, "sessions", "**", "rollout-*.jsonl"),
                                recursive=True))
    for i, path in enumerate(rollouts):
        shutil.copyfile(path, os.path.join(out, "transcript.jsonl" if i == 0 else "transcript-%d.jsonl" % i))

    rpc = common.read_jsonl(os.path.join(out, "appserver.jsonl"))
    if job["scenario"] == "exec":
        stderr_path = os.path.join(out, "exec.stderr.txt")
        events = []
        if os.path.exists(stderr_path):
            with open(stderr_path, errors="replace") as f:
                events = exec_hook_lines(f.read())
        summary["hook_events_from"] = "codex exec stderr lines 'hook: <Event> [<Status>]' (no entries/source)"
    else:
        events, notes = hook_runs(rpc, hooks, probe_cmd, common.read_jsonl(probe_log))
        summary["warnings"] += notes
        summary["hook_events_from"] = "app-server hook/started + hook/completed notifications" + (
            "; source/trigger from the probe hook's stdin" if use_probe else "")
    summary["hooks_configured"] = [{"key": h.get("key"), "event": pascal(h.get("eventName")),
                                    "command": h.get("command"), "matcher": h.get("matcher"),
                                    "trust_status": h.get("trustStatus")}
                                   for h in hooks if h.get("command") != probe_cmd]
    summary["hook_events"] = events
    summary["event_sequence"] = [label(e) for e in events]
    summary["compactions"] = sum(1 for r in rpc if r.get("msg", {}).get("method") == "item/completed" and
                                 r["msg"]["params"].get("item", {}).get("type") == "contextCompaction")
    requests = fakeserver.summarize_requests(common.read_jsonl(os.path.join(out, "requests.jsonl")),
                                             markers, fakeserver.codex_request_kind)
    summary["requests"] = requests
    summary["markers"] = common.marker_index(requests, markers)
    if job["scenario"] not in ("exec", "plain-request", "prompts") and summary["ok"] and not summary["compactions"]:
        summary["warnings"].append("no contextCompaction item was observed")
    summary["duration_s"] = clock.rel()
    common.write_json(os.path.join(out, "summary.json"), summary)
    return common.EXIT_OK if summary["ok"] else common.EXIT_FAIL
