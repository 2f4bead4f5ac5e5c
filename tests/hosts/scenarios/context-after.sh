#!/usr/bin/env bash
# --after command of the `context` scenario (inside the host-e2e namespace, after the last real
# turn): run the installed kijito-context on the real transcript (Claude Code) or rollout (Codex)
# the host named in its hook stdin, and keep its answer in $HOST_E2E_OUT/context.json for check.py.
# Usage: context-after.sh ROOT
set -euo pipefail
root="$1"
: "${HOST_E2E_SESSION_ID:?}" "${HOST_E2E_TRANSCRIPT_PATH:?}" "${HOST_E2E_OUT:?}" "${HOST_E2E_HOST:?}"
"$root/bin/kijito-context" --session-id "$HOST_E2E_SESSION_ID" --transcript "$HOST_E2E_TRANSCRIPT_PATH" \
  --host "$HOST_E2E_HOST" > "$HOST_E2E_OUT/context.json"
cat "$HOST_E2E_OUT/context.json"
if [ "$HOST_E2E_HOST" = claude ]; then
  # the status line on the same session, as Claude Code would call it
  printf '{"session_id":"%s","transcript_path":"%s","model":{"id":"claude-opus-5-5"}}' \
    "$HOST_E2E_SESSION_ID" "$HOST_E2E_TRANSCRIPT_PATH" \
    | "$root/bin/kijito-context" --statusline --data-dir "$HOST_E2E_OUT/no-data" > "$HOST_E2E_OUT/statusline.txt"
  cat "$HOST_E2E_OUT/statusline.txt"
fi
