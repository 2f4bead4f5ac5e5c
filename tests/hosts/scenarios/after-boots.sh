#!/usr/bin/env bash
# --after command of the `boots` scenarios: `qa-gate status` of the main session (the pass the
# main agent recorded) to $HOST_E2E_OUT/gate-status.json and, for Claude Code, the subagents'
# own transcripts (<project>/<session>/subagents/agent-*.jsonl) to $HOST_E2E_OUT/subagents/; the
# snapshot reports of the data dir to $HOST_E2E_OUT/reports/ (the run's HOME is deleted afterwards).
# Usage: after-boots.sh ROOT
set -euo pipefail
root="$1"
: "${HOST_E2E_SESSION_ID:?}" "${HOST_E2E_TRANSCRIPT_PATH:?}" "${HOST_E2E_OUT:?}"
data=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["dataDir"])' "$HOST_E2E_OUT/expected.json")
"$root/bin/qa-gate" status --session-id "$HOST_E2E_SESSION_ID" --transcript "$HOST_E2E_TRANSCRIPT_PATH" \
  --data-dir "$data" > "$HOST_E2E_OUT/gate-status.json"
mkdir -p "$HOST_E2E_OUT/reports"
find "$data/qa/reports" -maxdepth 1 -type f -name '*.json' -exec cp {} "$HOST_E2E_OUT/reports/" \;
if [ "${HOST_E2E_HOST:-}" = claude ]; then
  sub="${HOST_E2E_TRANSCRIPT_PATH%.jsonl}/subagents"
  mkdir -p "$HOST_E2E_OUT/subagents"
  if [ -d "$sub" ]; then find "$sub" -maxdepth 1 -type f -name '*.jsonl' -exec cp {} "$HOST_E2E_OUT/subagents/" \; ; fi
fi
