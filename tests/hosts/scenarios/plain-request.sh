#!/usr/bin/env bash
# --before-compact of the plain-request scenario (Claude Code headless, `claude -p`, no tmux, no
# app-server adapter; inside the host-e2e namespace). Usage: plain-request.sh ROOT DIR
# Records a real pass for the session (seed-pass.sh), then writes DIR/prompt-2: the prompt whose
# tool call runs `kijito-compact request` for this session, as the skill prescribes after
# `qa-gate record`. With no adapter owning the session the answer must be no_safe_trigger.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root="$1" dir="$2"
: "${HOST_E2E_SESSION_ID:?}" "${HOST_E2E_OUT:?}"
"$here/seed-pass.sh" "$root"
data=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["dataDir"])' "$HOST_E2E_OUT/expected.json")
printf 'Run this. HOST-E2E-RUN-TOOL: %s/bin/kijito-compact request --session-id %s --data-dir %s\n' \
  "$root" "$HOST_E2E_SESSION_ID" "$data" > "$dir/prompt-2"
