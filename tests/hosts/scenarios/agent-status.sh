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
  # what the adapter's keystroke rule reads: each attached client's activity second (tmux 3.x
  # updates client_activity on a key the client's terminal sends), now, through the real tmux
  echo "## tmux list-clients (now $(date +%s))"
  "${HOST_E2E_REAL_TMUX:-tmux}" -S "${HOST_E2E_TMUX_SOCKET:?}" list-clients -F '#{client_name} activity=#{client_activity} created=#{client_created}' 2>&1
} > "$HOST_E2E_OUT/status-$label.txt"
exit 0
