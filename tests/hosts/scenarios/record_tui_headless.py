#!/usr/bin/env python3
"""record_tui_headless.py FIXTURE [--bin-dir DIR]: what tells Claude Code 2.1.328's interactive TUI
from headless `claude -p` inside a PreToolUse hook (consent.mode "host"). Not in
the default run. Three offline runs with the same throwaway capture hook (posttool_capture.py)
on PreToolUse and the same Bash call by the fake model, `--allowedTools=Bash`: `host-e2e
tui-claude` (the TUI in a tmux pane), the same with `--permission-mode default`, and `host-e2e
claude --scenario plain` (`claude -p`). FIXTURE gets each run's PreToolUse stdin, env (names; values
of the few that differ), tty-ness of the hook's fds and the host's fds, controlling terminal and
parent chain, then the differences (paths sanitised to /home/user...). With --check (first after
FIXTURE) FIXTURE is only read and the facts that tell TUI from headless are compared with it
(exit 1 when they differ)."""
import json
import re
import os
import shutil
import subprocess
import sys
import tempfile

here = os.path.dirname(os.path.abspath(__file__))
he2e = os.path.join(here, "..", "host-e2e")
sys.path.insert(0, here)
from record_posttool import sanitize  # noqa: E402

CALL = 'HOST-E2E-RUN-CALL: Bash {"command": "echo hi > hi.txt", "description": "write a file"}'
HARNESS = ("HOST_E2E_", "TMUX")  # set by the harness's tmux, not by the host


def run(tmp, name, extra):
    log = os.path.join(tmp, name + ".jsonl")
    settings = os.path.join(tmp, name + ".settings.json")
    cap = "python3 %s %s" % (os.path.join(here, "posttool_capture.py"), log)
    with open(settings, "w") as f:
        json.dump({"hooks": {"PreToolUse": [{"hooks": [{"type": "command", "command": cap, "timeout": 30}]}]}}, f)
    out = os.path.join(tmp, name + ".out")
    if name.startswith("tui"):
        argv = [he2e, "tui-claude", "--settings-hooks", settings, "--prompt", CALL]
    else:
        pf = os.path.join(tmp, "prompt")
        with open(pf, "w") as f:
            f.write(CALL + "\n")
        argv = [he2e, "claude", "--settings-hooks", settings, "--scenario", "prompts", "--prompt-file", pf]
    argv += ["--out", out, "--timeout", "300", "--host-arg=--allowedTools=Bash", *extra]
    rc = subprocess.run(argv, stdout=subprocess.DEVNULL).returncode
    with open(log) as f:
        recs = [json.loads(line) for line in f if line.strip()]
    pre = [r for r in recs if r["event"] == "PreToolUse"]
    if rc != 0 or not pre:
        raise SystemExit("%s: host-e2e rc %d, %d PreToolUse records" % (name, rc, len(pre)))
    r = pre[0]
    r["parents"] = [p["argv"][:3] for p in r["parents"]]
    return r


def scrub(text, tmp):
    """The recording's own paths: its temp dir, this checkout, the host's bin dir."""
    text = text.replace(tmp, "/tmp/record").replace(os.path.dirname(tmp) + "/", "/tmp/").replace(os.path.dirname(os.path.dirname(os.path.dirname(here))), "<repo>")
    return re.sub(r"/[^\"\s]*?/node_modules/\.bin/", "<bin-dir>/", text)


def facts(rec):
    """The measured tells, per run: permission_mode, CLAUDE_CODE_ENTRYPOINT, the host's fd 0 on a pty,
    the hook's own fds ttys, a controlling terminal, `-p` in the host's argv."""
    out = {}
    for name, r in rec["runs"].items():
        host_argv = next((p for p in r["parents"] if "claude" in (p[0] if p else "")), [])
        out[name] = [r["stdin"].get("permission_mode"), r["env"].get("CLAUDE_CODE_ENTRYPOINT"),
                     str((r.get("host_fds") or {}).get("0")).startswith("/dev/pts/"),
                     any(r["isatty"].values()), r["controlling_tty"]["dev_tty_opens"], "-p" in host_argv]
    return out


def main():
    fixture, extra = sys.argv[1], sys.argv[2:]
    check = extra[:1] == ["--check"]
    if check:
        extra = extra[1:]
    tmp = tempfile.mkdtemp(prefix="record-tui-headless.")
    try:
        runs = {"tui": run(tmp, "tui", extra),
                "tui --permission-mode default": run(tmp, "tui-default", extra + ["--host-arg=--permission-mode=default"]),
                "headless -p": run(tmp, "headless", extra)}
        t, h = runs["tui"], runs["headless -p"]
        diff = {"stdin": {k: [t["stdin"].get(k), h["stdin"].get(k)] for k in sorted(set(t["stdin"]) | set(h["stdin"]))
                          if k not in ("session_id", "transcript_path", "cwd", "prompt_id", "tool_use_id")
                          and t["stdin"].get(k) != h["stdin"].get(k)},
                "env_names_only_tui": sorted(set(t["env_names"]) - set(h["env_names"])),
                "env_names_only_headless": sorted(set(h["env_names"]) - set(t["env_names"])),
                "env_values": {k: [t["env"].get(k), h["env"].get(k)] for k in sorted(set(t["env"]) | set(h["env"]))
                               if t["env"].get(k) != h["env"].get(k)},
                "isatty": [t["isatty"], h["isatty"]], "host_fds": [t["host_fds"], h["host_fds"]],
                "controlling_tty": [t["controlling_tty"], h["controlling_tty"]],
                "harness_only": "env names starting HOST_E2E_ or TMUX, TERM/TERM_PROGRAM values and the tmux "
                                "parent come from the harness's tmux pane, not from Claude Code"}
        rec = {"host": "2.1.328 (Claude Code)", "recordedWith": "tests/hosts/scenarios/record_tui_headless.py",
               "note": "differences are listed as [tui, headless]", "differences": diff, "runs": runs}
        text = sanitize(json.dumps(rec, indent=2, ensure_ascii=False), "claude")
        text = scrub(text, tmp)
        if check:
            with open(fixture) as f:
                want = facts(json.load(f))
            got = facts(json.loads(text))
            print("record_tui_headless: %s %s\n  fixture %s\n  now     %s"
                  % ("matches" if got == want else "DIFFERS from", fixture, want, got))
            return 0 if got == want else 1
        with open(fixture, "w") as f:
            f.write(text + "\n")
        print(fixture)
    finally:
        if not os.environ.get("KEEP"):
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
