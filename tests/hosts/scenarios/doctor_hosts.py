#!/usr/bin/env python3
"""kijito-doctor against the real hosts (call inside `unshare -n`).

doctor_hosts.py BIN_DIR ROOT_PREFIX WORK
BIN_DIR holds the pinned `codex` and `claude`; ROOT_PREFIX is an install.sh prefix.
Codex: a throwaway CODEX_HOME with `[features] hooks = true` and <prefix>/codex/hooks/hooks.json as
its hooks.json. kijito-doctor (with codex on PATH) must show the hooks of this root as untrusted (red,
fix naming /hooks); after trusting them through the app-server (hooks/list -> config/batchWrite
hooks.state.<key>.trusted_hash, as tests/hosts/lib/he2e/codex.py does) as trusted (green); after one
hook entry of hooks.json is edited, as changed since trusted (red, hash mismatch, fix naming /hooks).
Claude Code: with claude on PATH, the `validate` check (claude plugin validate --strict) is green;
the `plugin options` check is yellow until the real `claude plugin configure --values-stdin` has
stored pointer_id/lock_message_id (settings.json pluginConfigs), then green.
Every process has a timeout."""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from appserver import AppServer, AppServerError  # noqa: E402  (one copy of the JSON-RPC loop)
from he2e.verdict import fail, ok  # noqa: E402

bindir, prefix, work = sys.argv[1:4]
root = os.path.join(prefix, "codex")
doctor = os.path.join(root, "bin", "kijito-doctor")
home = os.path.join(work, "doctor-home")
codex_home = os.path.join(home, "codex")
os.makedirs(codex_home, mode=0o700)
with open(os.path.join(codex_home, "config.toml"), "w") as f:
    f.write("[features]\nhooks = true\n\n[analytics]\nenabled = false\n")
hooks_file = os.path.join(codex_home, "hooks.json")
with open(os.path.join(root, "hooks", "hooks.json")) as src, open(hooks_file, "w") as dst:
    dst.write(src.read())
env = {"PATH": bindir + ":" + os.environ.get("PATH", "/usr/bin:/bin"), "HOME": home, "CODEX_HOME": codex_home,
       "CLAUDE_CONFIG_DIR": os.path.join(home, "claude"), "DISABLE_AUTOUPDATER": "1",
       "TMPDIR": home, "LANG": "C.UTF-8"}


def run_doctor(host):
    p = subprocess.run([doctor, "--host", host, "--root", prefix, "--offline", "--json"], env=env, cwd=home,
                       capture_output=True, text=True, timeout=240, stdin=subprocess.DEVNULL)
    try:
        report = json.loads(p.stdout)
    except ValueError:
        fail("kijito-doctor printed no JSON (exit %d): %s %s" % (p.returncode, p.stdout[-800:], p.stderr[-800:]))
    return p.returncode, report


def check(report, host, name):
    for c in report["checks"]:
        if c["host"] == host and c["check"] == name:
            return c
    fail("no %s %s check in %s" % (host, name, json.dumps(report)[:2000]))


def trust_all():
    try:
        with AppServer(os.path.join(bindir, "codex"), env, home) as srv:
            srv.initialize()
            hooks = [h for d in srv.request("hooks/list", {"cwds": [home]})["data"] for h in d.get("hooks", [])]
            edits = [{"keyPath": "hooks.state", "mergeStrategy": "upsert",
                      "value": {h["key"]: {"trusted_hash": h["currentHash"]}}} for h in hooks]
            srv.request("config/batchWrite", {"edits": edits, "reloadUserConfig": True})
            return len(hooks)
    except AppServerError as e:
        fail(str(e))


# 1. before trust: red, untrusted, the fix names /hooks
code, r = run_doctor("codex")
c = check(r, "codex", "hook trust")
if c["status"] != "red" or "not trusted" not in c["detail"] or "/hooks" not in (c["fix"] or ""):
    fail("before trust: %s" % json.dumps(c))
ok("before trust, kijito-doctor: [FAIL] %s / fix: %s" % (c["detail"], c["fix"]))
# 2. trusted
n = trust_all()
code, r = run_doctor("codex")
c = check(r, "codex", "hook trust")
if c["status"] != "green" or "trusted" not in c["detail"]:
    fail("after trusting %d hooks: %s" % (n, json.dumps(c)))
ok("after trusting %d hooks through the app-server, kijito-doctor: [ok] %s" % (n, c["detail"]))
# 3. one hook entry edited: hash mismatch
with open(hooks_file) as f:
    data = json.load(f)
data["hooks"]["Stop"][0]["hooks"][0]["timeout"] = 6
with open(hooks_file, "w") as f:
    json.dump(data, f)
code, r = run_doctor("codex")
c = check(r, "codex", "hook trust")
if c["status"] != "red" or "hash mismatch" not in c["detail"] or "stop" not in c["detail"] or "/hooks" not in (c["fix"] or ""):
    fail("after editing hooks.json: %s" % json.dumps(c))
if code != 1:
    fail("kijito-doctor exited %d with a red line" % code)
ok("after editing the Stop hook in hooks.json, kijito-doctor: [FAIL] %s (exit 1)" % c["detail"])
# 4. claude plugin validate --strict through kijito-doctor
code, r = run_doctor("claude")
c = check(r, "claude", "validate")
if c["status"] != "green":
    fail("claude validate through kijito-doctor: %s" % json.dumps(c))
ok("kijito-doctor --host claude: [ok] %s" % c["detail"])
# 5. Claude Code plugin options (userConfig): none set -> yellow with the `claude plugin configure`
# fix; after the real `claude plugin configure --values-stdin` (which writes them into
# $CLAUDE_CONFIG_DIR/settings.json pluginConfigs, measured on 2.1.328) -> green, naming that file.
# The marketplace holds a copy of the installed plugin.json only (the userConfig schema is what
# `configure` needs; no binaries are copied).
c = check(r, "claude", "plugin options")
if c["status"] != "yellow" or "claude plugin configure" not in (c["fix"] or ""):
    fail("plugin options before configure: %s" % json.dumps(c))
ok("no plugin options yet, kijito-doctor: [warn] ... / fix: %s" % c["fix"])
mkt = os.path.join(work, "marketplace")
os.makedirs(os.path.join(mkt, ".claude-plugin"))
os.makedirs(os.path.join(mkt, "kijito-qa", ".claude-plugin"))
with open(os.path.join(prefix, "claude", ".claude-plugin", "plugin.json")) as src, \
        open(os.path.join(mkt, "kijito-qa", ".claude-plugin", "plugin.json"), "w") as dst:
    dst.write(src.read())
with open(os.path.join(mkt, ".claude-plugin", "marketplace.json"), "w") as f:
    json.dump({"name": "kijito-e2e", "owner": {"name": "kijito-qa tests"},
               "plugins": [{"name": "kijito-qa", "source": "./kijito-qa", "description": "options only"}]}, f)
claude = os.path.join(bindir, "claude")
for argv, stdin in (([claude, "plugin", "marketplace", "add", mkt], None),
                    ([claude, "plugin", "install", "kijito-qa@kijito-e2e"], None),
                    ([claude, "plugin", "configure", "kijito-qa@kijito-e2e", "--values-stdin"],
                     '{"pointer_id":"21813","lock_message_id":"77"}')):
    p = subprocess.run(argv, env=env, cwd=home, capture_output=True, text=True, timeout=120, input=stdin,
                       stdin=None if stdin is not None else subprocess.DEVNULL)
    if p.returncode != 0:
        fail("%s exited %d: %s %s" % (" ".join(argv[1:4]), p.returncode, p.stdout[-600:], p.stderr[-600:]))
settings = os.path.join(env["CLAUDE_CONFIG_DIR"], "settings.json")
stored = json.load(open(settings)).get("pluginConfigs", {}).get("kijito-qa@kijito-e2e", {}).get("options")
code, r = run_doctor("claude")
c = check(r, "claude", "plugin options")
if c["status"] != "green" or "pointer_id 21813, lock_message_id 77" not in c["detail"] or settings not in c["detail"]:
    fail("plugin options after claude plugin configure (settings hold %s): %s" % (json.dumps(stored), json.dumps(c)))
ok("after `claude plugin configure kijito-qa@kijito-e2e --values-stdin` (settings.json pluginConfigs: %s), "
      "kijito-doctor: [ok] %s" % (json.dumps(stored), c["detail"]))
