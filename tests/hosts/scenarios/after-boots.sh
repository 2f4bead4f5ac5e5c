#!/usr/bin/env bash
# --after command of the `boots` scenarios: `qa-gate status` of the main session (the pass the
# main agent recorded) to $HOST_E2E_OUT/gate-status.json and, for Claude Code, the subagents'
# own transcripts (<project>/<session>/subagents/agent-*.jsonl) to $HOST_E2E_OUT/subagents/; the
# snapshot reports of the data dir to $HOST_E2E_OUT/reports/, and the PreToolUse hook's witness
# record and the pass, when they exist, to $HOST_E2E_OUT/qa-witness.jsonl and qa-pass.json (issue
# 22; the run's HOME is deleted afterwards).
# Usage: after-boots.sh ROOT
set -euo pipefail
root="$1"
: "${HOST_E2E_SESSION_ID:?}" "${HOST_E2E_TRANSCRIPT_PATH:?}" "${HOST_E2E_OUT:?}"
data=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["dataDir"])' "$HOST_E2E_OUT/expected.json")
"$root/bin/qa-gate" status --session-id "$HOST_E2E_SESSION_ID" --transcript "$HOST_E2E_TRANSCRIPT_PATH" \
  --data-dir "$data" > "$HOST_E2E_OUT/gate-status.json"
mkdir -p "$HOST_E2E_OUT/reports"
find "$data/qa/reports" -maxdepth 1 -type f -name '*.json' -exec cp {} "$HOST_E2E_OUT/reports/" \;
qa="$data/qa"
[ -f "$qa/qa-witness.$HOST_E2E_SESSION_ID.jsonl" ] && cp "$qa/qa-witness.$HOST_E2E_SESSION_ID.jsonl" "$HOST_E2E_OUT/qa-witness.jsonl"
[ -f "$qa/qa-pass.$HOST_E2E_SESSION_ID.json" ] && cp "$qa/qa-pass.$HOST_E2E_SESSION_ID.json" "$HOST_E2E_OUT/qa-pass.json"
ls -la "$qa" > "$HOST_E2E_OUT/qa-dir.txt" 2>&1 || true
if [ "${HOST_E2E_HOST:-}" = claude ]; then
  sub="${HOST_E2E_TRANSCRIPT_PATH%.jsonl}/subagents"
  mkdir -p "$HOST_E2E_OUT/subagents"
  if [ -d "$sub" ]; then find "$sub" -maxdepth 1 -type f -name '*.jsonl' -exec cp {} "$HOST_E2E_OUT/subagents/" \; ; fi
fi
