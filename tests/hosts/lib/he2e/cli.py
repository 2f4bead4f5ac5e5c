"""Command line: install | codex | claude (and the hidden __inner used inside the namespace)."""
import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from . import codex as codex_mod, common
from .common import EXIT_ENV, EXIT_FAIL, EXIT_OK, EXIT_USAGE, Refuse, log

LIB = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def usage_error(msg):
    log("error: " + msg)
    return EXIT_USAGE


# ------------------------------------------------------------------ install

def installed_version(cache, pkg):
    try:
        with open(os.path.join(cache, "node_modules", pkg, "package.json"), encoding="utf-8") as f:
            return json.load(f).get("version")
    except (OSError, ValueError):
        return None


def runs(exe, prefix):
    """`exe --version` succeeds, run confined with a throwaway HOME (no traces in the real one)."""
    home = tempfile.mkdtemp(prefix="host-e2e-check.")
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": home, "TMPDIR": home,
           "CODEX_HOME": home, "CLAUDE_CONFIG_DIR": home, "DISABLE_AUTOUPDATER": "1"}
    try:
        return subprocess.run(prefix + [exe, "--version"], stdin=subprocess.DEVNULL, capture_output=True,
                              timeout=120, env=env, cwd=home).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False
    finally:
        shutil.rmtree(home, ignore_errors=True)


def cmd_install(a):
    cache = os.path.abspath(a.cache or os.environ.get("HOST_E2E_CACHE") or common.default_cache())
    bin_dir = os.path.join(cache, "node_modules", ".bin")
    bins = [os.path.join(bin_dir, "codex"), os.path.join(bin_dir, "claude")]
    have = all(installed_version(cache, p) == v for p, v in common.PACKAGES.items())
    if not (have and all(os.access(b, os.X_OK) for b in bins)) or a.force:
        if not shutil.which("npm"):
            log("error: npm not found on PATH")
            return EXIT_ENV
        os.makedirs(cache, exist_ok=True)
        common.write_json(os.path.join(cache, "package.json"),
                          {"name": "host-e2e-hosts", "private": True, "dependencies": common.PACKAGES})
        log("npm install %s into %s" % (" ".join("%s@%s" % kv for kv in common.PACKAGES.items()), cache))
        p = subprocess.run(["npm", "install", "--prefix", cache, "--no-audit", "--no-fund",
                            "--loglevel=error"], stdout=sys.stderr, stderr=sys.stderr)
        if p.returncode != 0:
            log("error: npm install failed (rc=%d)" % p.returncode)
            return EXIT_FAIL
    bad = [p for p, v in common.PACKAGES.items() if installed_version(cache, p) != v]
    if bad:
        log("error: wrong or missing versions after install: %s" % bad)
        return EXIT_FAIL
    try:
        prefix = common.netns_prefix()
    except Refuse as e:
        log("note: not smoke-testing the binaries (%s)" % e)
        print(bin_dir)
        return EXIT_OK
    claude_pkg = os.path.join(cache, "node_modules", "@anthropic-ai", "claude-code")
    if not runs(bins[1], prefix) and os.path.exists(os.path.join(claude_pkg, "install.cjs")):
        # npm may skip the postinstall that puts the native binary in place.
        subprocess.run(["node", "install.cjs"], cwd=claude_pkg, stdout=sys.stderr, stderr=sys.stderr)
    broken = [b for b in bins if not runs(b, prefix)]
    if broken:
        log("error: installed but `--version` fails for %s" % broken)
        return EXIT_FAIL
    print(bin_dir)
    return EXIT_OK


# ------------------------------------------------------------------ host runs

def check_json_hooks(path, what):
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError) as e:
        raise ValueError("%s %s is not readable JSON: %s" % (what, path, e))
    if not isinstance(data, dict) or not isinstance(data.get("hooks"), dict) or \
            not all(isinstance(v, list) for v in data["hooks"].values()):
        raise ValueError('%s %s must be an object with "hooks": {"<Event>": [ ... ], ...}' % (what, path))


def prepare_out(path):
    out = os.path.abspath(path)
    if os.path.exists(out) and (not os.path.isdir(out) or os.listdir(out)):
        raise ValueError("--out %s exists and is not an empty directory" % out)
    os.makedirs(out, exist_ok=True)
    return out


def run_confined(job, host, prefix):
    """Run `host-e2e __inner` under `unshare -n` with the job; clean the work dir after."""
    work = tempfile.mkdtemp(prefix="host-e2e-%s." % host)  # mktemp -d (honours TMPDIR)
    job["work"] = work
    job["confinement"] = " ".join(prefix)
    job_file = os.path.join(work, "job.json")
    common.write_json(job_file, job)
    argv = prefix + [sys.executable, os.path.join(os.path.dirname(LIB), "host-e2e"), "__inner", job_file]
    t0 = time.time()
    proc = subprocess.Popen(argv, start_new_session=True)  # own process group: hosts, hooks, server
    rc = None

    def on_term(*_):
        raise KeyboardInterrupt
    signal.signal(signal.SIGTERM, on_term)
    try:
        rc = proc.wait(timeout=job["timeout"] + 60)
    except subprocess.TimeoutExpired:
        log("error: overall timeout; stopping the run")
    except KeyboardInterrupt:
        log("interrupted; stopping the run")
    finally:
        if proc.poll() is None:  # SIGTERM lets the runner write its summary first
            _killpg(proc.pid, signal.SIGTERM)
            try:
                rc = proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                pass
        _killpg(proc.pid, signal.SIGKILL)  # anything left behind (e.g. a hook still running)
        proc.wait()
        if os.environ.get("KEEP") == "1":
            log("KEEP=1: work dir kept at %s" % work)
        else:
            shutil.rmtree(work, ignore_errors=True)
    summary_path = os.path.join(job["out"], "summary.json")
    if os.path.exists(summary_path):
        with open(summary_path, encoding="utf-8") as f:
            s = json.load(f)
        log("%s %s: %s in %.1fs; events: %s" % (host, job["scenario"], "ok" if s.get("ok") else "FAILED",
                                                time.time() - t0, " ".join(s.get("event_sequence", []))))
        for e in s.get("errors", []):
            log("error: " + e)
        for w in s.get("warnings", []):
            log("warning: %s" % w)
        log("summary: " + summary_path)
    if rc is None or rc < 0:
        return EXIT_FAIL
    return rc


def _killpg(pgid, sig):
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def host_bin(a, name):
    exe = os.path.join(common.resolve_bin_dir(a.bin_dir, a.cache), name)
    if not os.access(exe, os.X_OK):
        raise Refuse("%s not found at %s; run `host-e2e install` (or pass --bin-dir)" % (name, exe))
    return exe


def check_user_commands(a, compact_scenarios, probe_off_reason=None):
    """--before-compact needs a compaction scenario; both need the hook stdin of the first turn."""
    for opt, cmd in (("--before-compact", a.before_compact), ("--after", a.after)):
        if cmd is not None and not cmd.strip():
            raise ValueError("%s needs a non-empty shell command" % opt)
    if a.before_compact and a.scenario not in compact_scenarios:
        raise ValueError("--before-compact needs --scenario %s" % " or ".join(compact_scenarios))
    for opt, cmd in (("--before-compact", a.before_compact), ("--after", a.after)):
        if cmd and probe_off_reason:
            raise ValueError("%s needs the session id from the probe records, and %s" % (opt, probe_off_reason))


def check_tool_command(a):
    if "\n" in a.tool_command or "\r" in a.tool_command or not a.tool_command.strip():
        raise ValueError("--tool-command must be one non-empty line")


def cmd_codex(a):
    try:
        check_tool_command(a)
        check_json_hooks(a.hooks, "--hooks")
        if (a.scenario == "prompts") != bool(a.prompt_file):
            raise ValueError("--prompt-file goes with --scenario prompts (and that scenario needs at least one)")
        if a.before_first is not None and not a.before_first.strip():
            raise ValueError("--before-first needs a non-empty shell command")
        if a.before_each is not None and (a.scenario != "prompts" or not a.before_each.strip()):
            raise ValueError("--before-each needs a non-empty shell command and goes with --scenario prompts")
        check_user_commands(a, ("manual-compact", "auto-compact", "adapter-compact", "adapter-long", "plain-request"),
                            "--no-probe turns the probe off" if a.no_probe else
                            "the exec scenario does not probe" if a.scenario == "exec" else None)
        if a.markers:
            common.load_markers(a.markers)
        exe = host_bin(a, "codex")
        if not shutil.which("node"):
            raise Refuse("node is not on PATH (the codex npm launcher needs it)")
        prefix = common.netns_prefix()
        out = prepare_out(a.out)
    except (ValueError, OSError) as e:
        return usage_error(str(e))
    job = {"host": "codex", "scenario": a.scenario, "hooks": os.path.abspath(a.hooks), "out": out,
           "markers": os.path.abspath(a.markers) if a.markers else None, "codex": exe, "lib": LIB,
           "probe": not a.no_probe, "timeout": a.timeout, "auto_compact_limit": a.auto_compact_limit,
           "before_compact": a.before_compact, "after": a.after, "tool_command": a.tool_command,
           "app_server_cmd": a.app_server_cmd, "cycles": a.cycles, "between": a.between,
           "config_extra": a.config_extra, "sandbox_mode": a.sandbox_mode,
           "before_first": a.before_first, "prompt_files": [os.path.abspath(f) for f in (a.prompt_file or [])],
           "before_each": a.before_each}
    return run_confined(job, "codex", prefix)


def cmd_claude(a):
    if not (a.settings_hooks or a.plugin_dir):
        return usage_error("give --settings-hooks FILE and/or --plugin-dir DIR")
    try:
        check_tool_command(a)
        if a.settings_hooks:
            check_json_hooks(a.settings_hooks, "--settings-hooks")
        if a.plugin_dir and not os.path.isdir(a.plugin_dir):
            raise ValueError("--plugin-dir %s is not a directory" % a.plugin_dir)
        check_user_commands(a, ("manual-compact", "auto-compact", "prompts"))
        if (a.scenario == "prompts") != bool(a.prompt_file):
            raise ValueError("--prompt-file goes with --scenario prompts (and that scenario needs at least one)")
        if a.before_first is not None and not a.before_first.strip():
            raise ValueError("--before-first needs a non-empty shell command")
        if a.before_each is not None and (a.scenario != "prompts" or not a.before_each.strip()):
            raise ValueError("--before-each needs a non-empty shell command and goes with --scenario prompts")
        if a.markers:
            common.load_markers(a.markers)
        exe = host_bin(a, "claude")
        prefix = common.netns_prefix()
        out = prepare_out(a.out)
    except (ValueError, OSError) as e:
        return usage_error(str(e))
    job = {"host": "claude", "scenario": a.scenario, "out": out,
           "settings_hooks": os.path.abspath(a.settings_hooks) if a.settings_hooks else None,
           "plugin_dir": os.path.abspath(a.plugin_dir) if a.plugin_dir else None,
           "markers": os.path.abspath(a.markers) if a.markers else None, "claude": exe, "lib": LIB,
           "timeout": a.timeout, "auto_tokens": a.auto_tokens, "summary_echo": a.summary_echo,
           "summary_drop": a.summary_drop,
           "before_compact": a.before_compact, "after": a.after, "probe": bool(a.before_compact or a.after),
           "tool_command": a.tool_command, "before_first": a.before_first,
           "prompt_files": [os.path.abspath(f) for f in (a.prompt_file or [])], "host_args": a.host_arg or [],
           "before_each": a.before_each}
    return run_confined(job, "claude", prefix)


def cmd_tui(a):
    """kijito-qa: tui-claude / tui-codex (lib/he2e/tui.py)."""
    host = "claude" if a.cmd == "tui-claude" else "codex"
    try:
        if host == "claude":
            if not (a.settings_hooks or a.plugin_dir):
                raise ValueError("give --settings-hooks FILE and/or --plugin-dir DIR")
            if a.settings_hooks:
                check_json_hooks(a.settings_hooks, "--settings-hooks")
            if a.plugin_dir and not os.path.isdir(a.plugin_dir):
                raise ValueError("--plugin-dir %s is not a directory" % a.plugin_dir)
        else:
            check_json_hooks(a.hooks, "--hooks")
        if a.wait_compact and not a.then:
            raise ValueError("--wait-compact needs --then")
        if not 1 <= a.cycles <= 20 or (a.between and not a.then):
            raise ValueError("--cycles is 1..20; --between needs --then")
        real_tmux = shutil.which("tmux")
        if not real_tmux:
            raise Refuse("tmux is not on PATH")
        exe = host_bin(a, host)
        prefix = common.netns_prefix()
        out = prepare_out(a.out)
    except (ValueError, OSError) as e:
        return usage_error(str(e))
    job = {"host": host, "tui": True, "scenario": "tui", "out": out, "exe": exe, "lib": LIB,
           "real_tmux": os.path.realpath(real_tmux), "timeout": a.timeout, "prompts": a.prompt or [],
           "after_prompts": a.after_prompt or [], "then": a.then, "wait_compact": a.wait_compact,
           "ready_timeout": a.ready_timeout, "turn_timeout": a.turn_timeout, "then_timeout": a.then_timeout,
           "input_tokens": a.input_tokens, "probe_print": a.probe_print or [],
           "host_args": a.host_arg or [], "then_prompts": a.then_prompt or [],
           "host_wrapper": getattr(a, "host_wrapper", None), "cycles": a.cycles, "between": a.between,
           "pane_host": a.pane_host, "before_start": a.before_start,
           "steps": os.path.abspath(a.steps) if a.steps else None}
    if host == "claude":
        job.update(settings_hooks=os.path.abspath(a.settings_hooks) if a.settings_hooks else None,
                   plugin_dir=os.path.abspath(a.plugin_dir) if a.plugin_dir else None)
    else:
        job.update(hooks=os.path.abspath(a.hooks), config_extra=a.config_extra, sandbox_mode=a.sandbox_mode)
    return run_confined(job, a.cmd, prefix)


def cmd_inner(job_file):
    with open(job_file, encoding="utf-8") as f:
        job = json.load(f)
    def on_term(*_):
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # the group-wide SIGTERM hits us once
        raise common.Interrupted("terminated by host-e2e (overall timeout or interrupt)")
    signal.signal(signal.SIGTERM, on_term)
    common.enter_loopback_only()
    if job.get("tui"):  # kijito-qa
        from . import tui
        return tui.run(job)
    if job["host"] == "codex":
        from . import codex
        return codex.run(job)
    from . import claude
    return claude.run(job)


# ------------------------------------------------------------------ parser

def parser():
    p = argparse.ArgumentParser(prog="host-e2e", description=(
        "Run real Codex CLI / Claude Code against a fake model server on 127.0.0.1 inside a "
        "loopback-only network namespace, to check hook commands end to end."))
    sub = p.add_subparsers(dest="cmd", required=True)
    i = sub.add_parser("install", help="npm-install the pinned hosts into a cache dir; print the bin dir")
    i.add_argument("--cache", help="default: ${XDG_CACHE_HOME:-$HOME/.cache}/host-e2e (or $HOST_E2E_CACHE)")
    i.add_argument("--force", action="store_true", help="reinstall even if present")

    def common_args(s, scenarios, default):
        s.add_argument("--scenario", choices=scenarios, default=default)
        s.add_argument("--out", required=True, help="results dir (created; must be empty)")
        s.add_argument("--markers", help="file: one marker string per line, looked up in every model request")
        s.add_argument("--bin-dir", help="dir with the host binary (default: <cache>/node_modules/.bin "
                                         "or $HOST_E2E_BIN_DIR)")
        s.add_argument("--cache", help="cache dir used by `install`")
        s.add_argument("--timeout", type=float, default=300.0, help="overall limit in seconds (default 300)")
        s.add_argument("--before-compact", metavar="CMD",
                       help="shell command (/bin/sh -c, inside the namespace) run after the first turn, right "
                            "before the compaction is requested; gets HOST_E2E_SESSION_ID, "
                            "HOST_E2E_TRANSCRIPT_PATH, HOST_E2E_CWD; output to before-compact.log; "
                            "non-zero exit aborts the run")
        s.add_argument("--after", metavar="CMD",
                       help="shell command run the same way after the last turn; output to after.log")
        s.add_argument("--tool-command", metavar="CMD", default="true",
                       help="tool scenario: the shell command the fake model asks the host's shell tool to run "
                            "(one line; kijito-qa addition)")

    c = sub.add_parser("codex", help="run Codex CLI with a hooks.json")
    c.add_argument("--hooks", required=True, help="Codex hooks.json to test")
    common_args(c, ["manual-compact", "auto-compact", "exec", "tool", "adapter-compact", "adapter-long", "plain-request", "prompts"],
                "manual-compact")
    c.add_argument("--before-first", metavar="CMD",
                   help="kijito-qa: prompts scenario: shell command run after the hooks are trusted, before "
                        "thread/start (output to before-first.log); it may write the --prompt-file files")
    c.add_argument("--prompt-file", action="append", metavar="FILE",
                   help="kijito-qa: prompts scenario: one turn per file (repeatable), read right before its "
                        "turn; the thread runs with sandbox_mode danger-full-access")
    c.add_argument("--before-each", metavar="CMD",
                   help="kijito-qa: prompts scenario: shell command run before every step after the first "
                        "(HOST_E2E_STEP = its number, 2..N; output to before-each.log), like --before-first; "
                        "it may write that step's --prompt-file (e.g. what the user read on the screen)")
    c.add_argument("--cycles", type=int, default=5, help="adapter-long: request/compaction cycles (kijito-qa)")
    c.add_argument("--between", metavar="CMD", help="adapter-long: shell command run before cycles 2..N, like "
                   "--before-compact (kijito-qa)")
    # kijito-qa: run the app-server through a wrapper (the compaction adapter) and let it compact
    c.add_argument("--app-server-cmd", metavar="CMD",
                   help="shell command (/bin/sh -c) started instead of `codex app-server`; it must speak the "
                        "app-server's JSON lines on stdin/stdout; gets HOST_E2E_CODEX (the codex binary) and "
                        "the run's environment (kijito-qa addition)")
    c.add_argument("--config-extra", metavar="TOML",
                   help="kijito-qa: TOML appended to the throwaway config.toml (e.g. an [mcp_servers.x] table)")
    c.add_argument("--sandbox-mode", choices=codex_mod.SANDBOX_MODES,
                   help="kijito-qa: the config's top-level sandbox_mode (`none`: no line); the threads then keep it "
                        "(default: read-only, and the prompts/adapter/plain-request threads run danger-full-access)")
    c.add_argument("--no-probe", action="store_true",
                   help="do not add the stdin-recording probe hook (source/trigger then stay null)")
    c.add_argument("--auto-compact-limit", type=int, default=50,
                   help="model_auto_compact_token_limit for auto-compact (fake usage is 110 tokens/turn)")

    k = sub.add_parser("claude", help="run Claude Code with settings hooks and/or a plugin dir")
    k.add_argument("--settings-hooks", help="settings.json (with a \"hooks\" object) to install as user settings")
    k.add_argument("--plugin-dir", help="plugin directory passed to claude --plugin-dir")
    common_args(k, ["manual-compact", "auto-compact", "plain", "tool", "prompts"], "manual-compact")
    k.add_argument("--before-first", metavar="CMD",
                   help="kijito-qa: shell command run in the project dir before the first step, like "
                        "--before-compact (output to before-first.log); it may write the --prompt-file files")
    k.add_argument("--prompt-file", action="append", metavar="FILE",
                   help="kijito-qa: prompts scenario: one step per file (repeatable), each file read right "
                        "before its step, so --before-first can write prompts it only then knows"),
    k.add_argument("--before-each", metavar="CMD",
                   help="kijito-qa: prompts scenario: shell command run before every step after the first "
                        "(HOST_E2E_STEP = its number, 2..N; output to before-each.log), like --before-first; "
                        "it may write that step's --prompt-file (e.g. what the user read on the screen)")
    k.add_argument("--host-arg", action="append", metavar="ARG",
                   help="kijito-qa: extra argument for every `claude -p` step, e.g. --host-arg=--allowedTools=Bash "
                        "(headless Claude Code refuses Bash without it: \"This command requires approval\"); repeatable")
    k.add_argument("--auto-tokens", type=int, default=990000,
                   help="usage.input_tokens the fake server reports in auto-compact (default 990000)")
    # kijito-qa: a summariser that obeys (or half-obeys) PreCompact's "Additional Instructions"
    k.add_argument("--summary-echo", action="store_true",
                   help="kijito-qa: the fake summary ends with every `kijito-<label>: value` line of the "
                        "compaction request's instructions (a summariser that keeps them verbatim)")
    k.add_argument("--summary-drop", metavar="LABEL",
                   help="kijito-qa: with --summary-echo, leave out the line of this label "
                        "(e.g. kijito-snapshot-digest)")

    # kijito-qa: the interactive TUIs in a tmux pane (lib/he2e/tui.py)
    for name, host in (("tui-claude", "Claude Code"), ("tui-codex", "Codex")):
        t = sub.add_parser(name, help="run the %s TUI in a tmux pane inside the namespace" % host)
        if name == "tui-claude":
            t.add_argument("--settings-hooks", help="settings.json with a \"hooks\" object (user settings)")
            t.add_argument("--plugin-dir", help="plugin directory passed to claude --plugin-dir")
        else:
            t.add_argument("--hooks", required=True, help="Codex hooks.json (trusted through the app-server)")
            t.add_argument("--config-extra", help="TOML appended to config.toml")
            t.add_argument("--sandbox-mode", choices=codex_mod.SANDBOX_MODES,
                           help="kijito-qa: the config's top-level sandbox_mode (`none`: no line; default read-only)")
        t.add_argument("--out", required=True, help="results dir (created; must be empty)")
        t.add_argument("--prompt", action="append", help="typed into the pane (send-keys -l, then Enter); "
                                                         "waits for the Stop hook; repeatable")
        t.add_argument("--then", metavar="CMD", help="shell command run after the prompts, inside the namespace, "
                       "with TMUX/TMUX_PANE as the hooks saw them and HOST_E2E_TMUX_PANE, HOST_E2E_HOST_PID, "
                       "HOST_E2E_PANE_PID, HOST_E2E_SESSION_ID, ...; `tmux` on PATH is the logging shim")
        t.add_argument("--wait-compact", type=float, metavar="S", help="after --then, wait up to S seconds "
                                                                     "for PostCompact")
        t.add_argument("--after-prompt", action="append", help="typed after --then/--wait-compact; repeatable")
        t.add_argument("--then-prompt", action="append", help="typed after --then, before --wait-compact; "
                       "{session_id} is replaced by the session id the hooks saw; repeatable (kijito-qa)")
        if name == "tui-codex":
            t.add_argument("--host-wrapper", metavar="CMD",
                           help="the pane runs `/bin/sh -c CMD sh HOST_ARGS...` instead of codex; CMD gets "
                                "HOST_E2E_CODEX (the codex binary), e.g. a compaction adapter that starts the "
                                "TUI itself (kijito-qa)")
        t.add_argument("--cycles", type=int, default=1, metavar="N",
                       help="after --then: N times (--between, then each --then-prompt, then --wait-compact); "
                            "--between runs before cycles 2..N (kijito-qa)")
        t.add_argument("--between", metavar="CMD", help="shell command run like --then before cycles 2..N (kijito-qa)")
        t.add_argument("--pane-host", action="store_true",
                       help="the host is the pane's own command (tmux new-session -d HOST ARGS..., no shell; "
                            "remain-on-exit on) instead of `sh -c 'HOST; ...'` (kijito-qa)")
        t.add_argument("--before-start", metavar="CMD",
                       help="shell command run inside the namespace before the pane starts (no session values "
                            "yet), e.g. seeding what SessionStart reads (kijito-qa)")
        t.add_argument("--steps", metavar="FILE",
                       help="JSON list of steps run after the --prompt's: prompt (send-keys or the attached "
                            "client), attach, enter, quiet, wait_compact, run; see tui.TuiRun.run_steps (kijito-qa)")
        t.add_argument("--host-arg", action="append", metavar="ARG",
                       help="extra argument for the host command line, e.g. --host-arg=--no-daemon (Codex); "
                            "repeatable")
        t.add_argument("--input-tokens", type=int, help="usage.input_tokens the fake server reports")
        t.add_argument("--probe-print", action="append", metavar="EVENT=TEXT",
                       help="the probe hook prints TEXT on EVENT (e.g. PreCompact=MARKER)")
        t.add_argument("--bin-dir")
        t.add_argument("--cache")
        t.add_argument("--timeout", type=float, default=300.0)
        t.add_argument("--ready-timeout", type=float, default=90.0)
        t.add_argument("--turn-timeout", type=float, default=120.0)
        t.add_argument("--then-timeout", type=float, default=120.0)
    return p


def main(argv):
    if argv[:1] == ["__inner"] and len(argv) == 2:
        try:
            return cmd_inner(argv[1])
        except Refuse as e:
            log("refusing: %s" % e)
            return EXIT_ENV
    a = parser().parse_args(argv)
    try:
        return {"install": cmd_install, "codex": cmd_codex, "claude": cmd_claude,
                "tui-claude": cmd_tui, "tui-codex": cmd_tui}[a.cmd](a)
    except Refuse as e:
        log("refusing: %s" % e)
        return EXIT_ENV
