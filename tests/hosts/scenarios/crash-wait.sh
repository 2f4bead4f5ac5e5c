#!/bin/sh
# kijito-qa: the `wait` command of an armed kill (lib/he2e/tui.py arm_kill; run by the probe hook
# inside the host's own hook, every 0.1 s until it exits 0): has the kijito-qa hook of the same
# event done its work? Usage: crash-wait.sh ROOT pass|attempt-final|claimed|noted
#   pass           the session has a pass (qa-gate record ran)
#   attempt-final  PreCompact recorded its real attempt (not the provisional precompact_interrupted)
#   claimed        the compaction's re-entry record is written, waiting for delivery (Codex PostCompact)
#   noted          the re-entry was delivered and PostCompact noted the summary check (Claude Code
#                  runs SessionStart(compact) first, then PostCompact)
root="$1" cond="$2"
data=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["dataDir"])' "$HOST_E2E_OUT/expected.json") || exit 1
s="${HOST_E2E_KILL_SESSION_ID:?}"
"$root/bin/qa-gate" status --session-id "$s" --data-dir "$data" 2>/dev/null | python3 -c '
import json, os, sys
v, cond, qa, s = json.load(sys.stdin), sys.argv[1], os.path.join(sys.argv[2], "qa"), sys.argv[3]
a = v.get("attempt") or {}
if cond == "pass":
    ok = v.get("pass") is True
elif cond == "attempt-final":
    ok = bool(a) and a.get("reason") != "precompact_interrupted"
elif cond == "claimed":
    ok = v.get("reentryPending") is True
elif cond == "noted":
    p = os.path.join(qa, "compaction-reentry-delivered.%s.json" % s)
    ok = (v.get("reentryDelivered") is True and not os.path.exists(os.path.join(qa, "compaction-reentry-noting.%s.json" % s))
          and json.load(open(p)).get("summaryCheck") not in (None, "pending"))
else:
    sys.exit("crash-wait.sh: unknown condition %s" % cond)
sys.exit(0 if ok else 1)' "$cond" "$data" "$s"
