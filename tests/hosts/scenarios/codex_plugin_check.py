#!/usr/bin/env python3
"""Install the Codex plugin root as a real Codex plugin and check what Codex loads from it.

codex_plugin_check.py CODEX_BIN ROOT WORK
Runs in a throwaway HOME/CODEX_HOME under WORK (call it inside `unshare -n`): copies ROOT into a
local marketplace (Codex plugins are installed from marketplaces, and copied into Codex's cache:
that is why hook commands carry the absolute installed paths), `codex plugin marketplace add`,
`codex plugin add kijito-qa@...`, then asks `codex app-server` for `hooks/list` and
`skills/list` and checks: the six hooks come from the plugin with the installed absolute
commands, and both skills are listed."""
import json
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from appserver import AppServer, AppServerError  # noqa: E402  (one copy of the JSON-RPC loop)

codex, root, work = sys.argv[1:4]
home = os.path.join(work, "codex-plugin-home")
market = os.path.join(work, "codex-marketplace")
os.makedirs(os.path.join(home, "codex"), mode=0o700)
os.makedirs(os.path.join(market, ".agents", "plugins"))
shutil.copytree(root, os.path.join(market, "kijito-qa"))
with open(os.path.join(market, ".agents", "plugins", "marketplace.json"), "w") as f:
    json.dump({"name": "kijito-qa-e2e", "interface": {"displayName": "kijito-qa e2e"},
               "plugins": [{"name": "kijito-qa", "source": {"source": "local", "path": "./kijito-qa"},
                            "policy": {"installation": "AVAILABLE"}, "category": "Developer Tools"}]}, f)
env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": home, "CODEX_HOME": os.path.join(home, "codex"),
       "TMPDIR": home, "LANG": "C.UTF-8"}


def run(*args):
    p = subprocess.run([codex, *args], env=env, cwd=home, capture_output=True, text=True, timeout=120,
                       stdin=subprocess.DEVNULL)
    if p.returncode != 0:
        sys.exit("codex %s failed (%d): %s" % (" ".join(args), p.returncode, p.stderr[-2000:]))
    return p.stdout


run("plugin", "marketplace", "add", market)
run("plugin", "add", "kijito-qa@kijito-qa-e2e")
listing = run("plugin", "list")
if "kijito-qa@kijito-qa-e2e" not in listing or "installed, enabled" not in listing:
    sys.exit("codex plugin list does not show kijito-qa installed and enabled:\n" + listing)

try:
    with AppServer(codex, env, home) as srv:
        srv.initialize()
        hooks = [h for d in srv.request("hooks/list", {"cwds": [home]})["data"] for h in d.get("hooks", [])]
        skills = [s for d in srv.request("skills/list", {"cwds": [home]})["data"] for s in d.get("skills", [])]
except AppServerError as e:
    sys.exit(str(e))

with open(os.path.join(root, "hooks", "hooks.json")) as f:
    want = sorted(h["command"] for groups in json.load(f)["hooks"].values() for g in groups for h in g["hooks"])
got = sorted(h.get("command") for h in hooks if h.get("pluginId", "").startswith("kijito-qa@")
             or h.get("source") == "plugin")
if got != want:
    sys.exit("codex hooks/list from the plugin:\n%s\nexpected:\n%s" % (json.dumps(got, indent=1), json.dumps(want, indent=1)))
names = sorted(s["name"] for s in skills if s.get("pluginId") == "kijito-qa@kijito-qa-e2e")
if names != ["kijito-qa:kijito-memory-qa", "kijito-qa:kijito-resume-from-pointer", "kijito-qa:memory-latch"]:
    sys.exit("codex skills/list from the plugin: %s" % names)
print("  ok: codex installs the plugin; hooks/list shows its %d hooks with the installed absolute commands; "
      "skills/list shows %s" % (len(got), ", ".join(names)))
