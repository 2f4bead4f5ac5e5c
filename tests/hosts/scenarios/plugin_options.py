#!/usr/bin/env python3
"""The Claude Code plugin options reach the hooks (after a host-e2e claude run).

plugin_options.py OUT_DIR POINTER LOCK
The run used --plugin-dir <prefix>/claude and user settings with
pluginConfigs["kijito-qa@inline"].options = {pointer_id: POINTER, lock_message_id: LOCK}, and no
kijito-qa config file. Claude Code 2.1.328 hands them to hooks as CLAUDE_PLUGIN_OPTION_POINTER_ID /
CLAUDE_PLUGIN_OPTION_LOCK_MESSAGE_ID; session-hook's SessionStart(startup) context names them, and
that context must reach the model."""
import json
import os
import sys

out, pointer, lock = sys.argv[1:4]
want = "Pointer id %s, lock message id %s." % (pointer, lock)
found = False
path = os.path.join(out, "requests.jsonl")
if os.path.exists(path):
    for line in open(path, encoding="utf-8"):
        if want in line or json.dumps(want)[1:-1] in line:
            found = True
            break
if not found:
    print("  FAIL: no model request contains %r (the plugin options did not reach the hooks)" % want)
    sys.exit(1)
print("  ok: a model request contains %r: the userConfig options reached session-hook" % want)
