#!/usr/bin/env bash
# A `run` step of the agent-driven TUI scenarios (host-e2e tui-* --steps; inside the namespace, with
# the session values the hooks saw): what the test (not the agent) observes at that moment.
# Writes $HOST_E2E_OUT/status-LABEL.txt: `qa-gate status` and `kijito-compact status` of the
# session, each with its exit code (both may fail: e.g. no pass). Usage: agent-status.sh ROOT LABEL
set -uo pipefail
root="$1" label="$2"
: "${HOST_E2E_SESSION_ID:?}" "${HOST_E2E_TRANSCRIPT_PATH:?}" "${HOST_E2E_OUT:?}"
data=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["dataDir"])' "$HOST_E2E_OUT/expected.json")
{
  echo "## qa-gate status"
  "$root/bin/qa-gate" status --session-id "$HOST_E2E_SESSION_ID" --transcript "$HOST_E2E_TRANSCRIPT_PATH" --data-dir "$data" 2>&1
  echo "## rc=$?"
  echo "## kijito-compact status"
  "$root/bin/kijito-compact" status --session-id "$HOST_E2E_SESSION_ID" --data-dir "$data" 2>&1
  echo "## rc=$?"
} > "$HOST_E2E_OUT/status-$label.txt"
exit 0
