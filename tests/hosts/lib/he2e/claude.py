"""Claude Code runner (runs inside the loopback-only namespace).

Isolated HOME/CLAUDE_CONFIG_DIR/TMPDIR, fake Anthropic Messages server, the user's hooks
in settings.json and/or a plugin via --plugin-dir, then `claude -p` steps of one session
(`--session-id` then `--resume`). Hook events are read back from each step's --debug-file."""
import glob
import json
import os
import re
import shutil
import subprocess
import time
import uuid

from . import common, fakeserver
from .common import log

SCENARIOS = {
    "plain": [("1-hello", "hello")],
    "manual-compact": [("1-hello", "hello"), ("2-compact", "/compact"), ("3-after", "after compact")],
    "auto-compact": [("1-hello", "hello"), ("2-second", "second prompt")],
}

# `Hooks: SessionStart:compact [cmd] finished with status 0 (92ms)`
# `Hooks: SessionStart:resume [cmd] (plugin NAME@inline) finished with status 0 (9ms)`
# `PreCompact:manual [cmd] completed with status 0`
HOOK_DONE = re.compile(r"^(\S+) \[(\w+)\] (?:Hooks: )?([A-Z][A-Za-z]+)(?::(\S*))? \[(.*)\]"
                       r"(?: \(([^)]*)\))? (?:finished|completed) with status (-?\d+)")
# With --before-compact/--after, a probe hook (lib/he2e/probe.py, added with `--settings`) records
# the stdin of these events to hook-inputs.jsonl; its runs are left out of the hook events.
PROBE_EVENTS = ("SessionStart", "UserPromptSubmit")
PROBE_HINT = ("the probe hook on %s (added with --settings) recorded nothing; see 1-hello.debug"
              % "/".join(PROBE_EVENTS))
ENTRY_CHARS = 64 * 1024
NOISE = ("hooks module", "Hooks: Checking first line", "Hooks: Parsed initial", "Hooks: Initial response",
         "checkForNewResponses", "3P telemetry", "hooks native host", "Registered ")


def parse_debug(path, step, probe_cmd=None):
    """Hook runs in the order Claude logged their completion, with nearby hook notes
    (runs of probe_cmd, and the notes that follow them, are left out)."""
    events, warnings, cur = [], [], None
    if not os.path.exists(path):
        return events, warnings
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            line = line.rstrip("\n")
            m = HOOK_DONE.match(line)
            if m:
                ts, _lvl, ev, query, cmd, origin, code = m.groups()
                code = int(code)
                cur = {"step": step, "event": ev, "source": query if ev == "SessionStart" else None,
                       "trigger": query if ev in ("PreCompact", "PostCompact") else None,
                       "matcher_query": query, "command": cmd, "origin": origin, "exit_code": code,
                       "status": "success" if code == 0 else ("blocking" if code == 2 else "error"),
                       "entries": [], "time": ts}
                if probe_cmd and cmd == probe_cmd:
                    cur = dict(cur, entries=[])  # a sink: the probe's notes go nowhere
                else:
                    events.append(cur)
                continue
            if " with status " in line and "[" in line and "hook" in line.lower():
                warnings.append({"step": step, "level": "UNPARSED", "message": line[:500]})
            parts = line.split(" ", 2)
            if len(parts) < 3 or "hook" not in line.lower() or any(n in line for n in NOISE):
                continue
            level, msg = parts[1].strip("[]"), parts[2]
            if level in ("WARN", "ERROR"):
                warnings.append({"step": step, "level": level, "message": msg[:500]})
            if cur is not None and len(cur["entries"]) < 6:
                if msg.startswith('"'):
                    try:
                        msg = json.loads(msg)
                    except ValueError:
                        pass
                # kijito-qa: keep whole hook outputs (re-entry texts are longer than 500 chars)
                cur["entries"].append({"kind": level.lower(), "text": msg[:ENTRY_CHARS]})
    return events, warnings


def step_result(path):
    try:
        with open(path, encoding="utf-8") as f:
            d = json.load(f)
    except (OSError, ValueError):
        return None
    return {k: (str(d.get(k))[:300] if k == "result" else d.get(k))
            for k in ("type", "subtype", "is_error", "result", "session_id", "num_turns", "terminal_reason")}


def label(ev):
    extra = ev.get("source") or ev.get("trigger")
    return "%s(%s)" % (ev["event"], extra) if extra else ev["event"]


def run(job):
    clock, out, work = common.Clock(), job["out"], job["work"]
    deadline = time.time() + job["timeout"]
    markers = common.load_markers(job.get("markers"))
    home, proj = os.path.join(work, "home"), os.path.join(work, "proj")
    config_dir = os.path.join(home, ".claude")
    os.makedirs(config_dir, mode=0o700)
    os.makedirs(proj)
    if job.get("settings_hooks"):
        shutil.copyfile(job["settings_hooks"], os.path.join(config_dir, "settings.json"))
    hooks_dir = os.path.dirname(job["settings_hooks"]) if job.get("settings_hooks") else job["plugin_dir"]
    req_log = common.JsonlWriter(os.path.join(out, "requests.jsonl"))
    cfg = {"input_tokens": job["auto_tokens"]} if job["scenario"] == "auto-compact" else {}
    # kijito-qa: --summary-echo / --summary-drop (fakeserver.echoed_lines)
    cfg.update({"summary_echo": bool(job.get("summary_echo")), "summary_drop": job.get("summary_drop")})
    srv, state = fakeserver.start("messages", req_log, clock, cfg)
    port = srv.server_address[1]
    probe_log = os.path.join(out, "hook-inputs.jsonl")
    probe_cmd = common.probe_command(job["lib"]) if job.get("probe") else None
    if probe_cmd:
        probe_settings = os.path.join(work, "probe-settings.json")
        common.write_json(probe_settings, {"hooks": {ev: [{"hooks": [
            {"type": "command", "command": probe_cmd, "timeout": 30}]}] for ev in PROBE_EVENTS}})
    env = common.base_env(work, {
        "CLAUDE_CONFIG_DIR": config_dir, "CLAUDE_CODE_TMPDIR": os.path.join(work, "tmp"),
        "ANTHROPIC_API_KEY": "sk-ant-host-e2e-dummy", "ANTHROPIC_BASE_URL": "http://127.0.0.1:%d" % port,
        "DISABLE_TELEMETRY": "1", "DISABLE_ERROR_REPORTING": "1", "DISABLE_AUTOUPDATER": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "HOST_E2E_HOST": "claude", "HOST_E2E_SCENARIO": job["scenario"], "HOST_E2E_OUT": out,
        "HOST_E2E_HOOKS_DIR": hooks_dir, **({"HOST_E2E_PROBE_LOG": probe_log} if probe_cmd else {})})
    exe = job["claude"]
    extra = ["--plugin-dir", job["plugin_dir"]] if job.get("plugin_dir") else []
    extra += job.get("host_args") or []  # kijito-qa: --host-arg, e.g. --allowedTools=Bash
    if probe_cmd:
        extra += ["--settings", probe_settings]
    sid = str(uuid.uuid4())
    summary = {"host": "claude", "host_version": common.host_version(exe, env, proj),
               "scenario": job["scenario"], "session_id": sid, "probe": bool(probe_cmd),
               "confinement": job.get("confinement"),
               "fake_server_port": port, "ok": False,
               "errors": [], "warnings": [], "steps": []}
    log("claude %s: %s, fake Messages server on 127.0.0.1:%d"
        % (job["scenario"], summary["host_version"] or "version unknown", port))
    events, hook_warnings, session = [], [], None
    cmds = common.UserCommands(out, proj, deadline)  # --before-compact / --after

    def first_turn_session():  # what the probe recorded in step 1
        got, notes = common.hook_session(common.read_jsonl(probe_log), PROBE_HINT)
        summary["warnings"] += notes
        if got["HOST_E2E_SESSION_ID"] != sid:
            summary["warnings"].append("hooks saw session id %s, host-e2e passed --session-id %s"
                                       % (got["HOST_E2E_SESSION_ID"], sid))
        return got

    try:
        steps = SCENARIOS.get(job["scenario"]) or [
            ("1-tool", "Run this. %s %s" % (fakeserver.TOOL_MARKER, job.get("tool_command") or "true"))]
        if job["scenario"] == "prompts":  # kijito-qa: each prompt read from its file right before its step
            steps = [("%d-prompt" % (n + 1), f) for n, f in enumerate(job.get("prompt_files") or [])]
        if job.get("before_first"):  # kijito-qa
            cmds.run("before-first", job["before_first"], env,
                     {"HOST_E2E_SESSION_ID": sid, "HOST_E2E_TRANSCRIPT_PATH": "", "HOST_E2E_CWD": proj}, summary["steps"])
        for i, (step, prompt) in enumerate(steps):
            if i == 1 and (job.get("before_compact") or job.get("after")):
                session = first_turn_session()
            if i == 1 and job.get("before_compact"):  # step 2 compacts (/compact, or auto); prompts: any step 2
                state["tag"] = "before-compact"
                cmds.run("before-compact", job["before_compact"], env, session, summary["steps"])
            if i >= 1 and job.get("before_each"):  # kijito-qa: may write this step's prompt file
                state["tag"] = "before-each"
                cmds.run("before-each", job["before_each"], dict(env, HOST_E2E_STEP=str(i + 1)),
                         {"HOST_E2E_SESSION_ID": sid, "HOST_E2E_TRANSCRIPT_PATH": "", "HOST_E2E_CWD": proj},
                         summary["steps"])
            if job["scenario"] == "prompts":  # read after --before-compact, which may write it
                with open(prompt, encoding="utf-8") as pf:
                    prompt = pf.read(64 * 1024).rstrip("\n")
            state["tag"] = step
            argv = [exe, "-p", prompt, "--session-id" if i == 0 else "--resume", sid, *extra,
                    "--output-format", "json", "--debug-file", os.path.join(out, step + ".debug")]
            t0 = time.time()
            with open(os.path.join(out, step + ".out.json"), "wb") as so, \
                    open(os.path.join(out, step + ".stderr.txt"), "wb") as se:
                try:
                    p = subprocess.run(argv, cwd=proj, env=env, stdin=subprocess.DEVNULL, stdout=so, stderr=se,
                                       timeout=max(5.0, min(180.0, deadline - time.time())))
                    rc = p.returncode
                except subprocess.TimeoutExpired:
                    rc = None
            res = step_result(os.path.join(out, step + ".out.json"))
            summary["steps"].append({"step": step, "prompt": prompt, "rc": rc,
                                     "duration_s": round(time.time() - t0, 2), "result": res})
            ev, warn = parse_debug(os.path.join(out, step + ".debug"), step, probe_cmd)
            events += ev
            hook_warnings += warn
            if rc is None:
                raise RuntimeError("step %s timed out" % step)
            if rc != 0 or res is None:
                raise RuntimeError("step %s: claude exited %s%s (see %s.stderr.txt)"
                                   % (step, rc, "" if res else " without JSON output", step))
        if job.get("after"):
            if session is None:  # one-step scenario (plain)
                session = first_turn_session()
            state["tag"] = "after"
            cmds.run("after", job["after"], env, session, summary["steps"])
        summary["ok"] = True
    except RuntimeError as e:
        summary["errors"].append(str(e))
    finally:
        cmds.stop()
        srv.shutdown()
        srv.server_close()
        req_log.close()
    if os.path.islink(os.path.join(out, "latest")):  # Claude's pointer to the newest debug file
        os.unlink(os.path.join(out, "latest"))

    for path in glob.glob(os.path.join(config_dir, "projects", "*", sid + ".jsonl"))[:1]:
        shutil.copyfile(path, os.path.join(out, "transcript.jsonl"))
    if os.path.exists(os.path.join(config_dir, "settings.json")):
        shutil.copyfile(os.path.join(config_dir, "settings.json"), os.path.join(out, "settings.json"))
    summary["hook_events_from"] = ("claude --debug-file lines '<Event>[:<matcher query>] [<command>] "
                                   "finished|completed with status N' (completion order)")
    summary["hook_events"] = events
    summary["event_sequence"] = [label(e) for e in events]
    summary["hook_warnings"] = hook_warnings
    requests = fakeserver.summarize_requests(common.read_jsonl(os.path.join(out, "requests.jsonl")), markers,
                                             lambda h, b: fakeserver.claude_request_kind(b))
    summary["requests"] = requests
    summary["compactions"] = sum(1 for r in requests if r["kind"] == "compaction")
    summary["markers"] = common.marker_index(requests, markers)
    if not events:
        summary["warnings"].append("no hook run was found in the debug files")
    if job["scenario"] != "plain" and summary["ok"] and not summary["compactions"]:
        summary["warnings"].append("no compaction request reached the fake server")
    summary["duration_s"] = clock.rel()
    common.write_json(os.path.join(out, "summary.json"), summary)
    return common.EXIT_OK if summary["ok"] else common.EXIT_FAIL
