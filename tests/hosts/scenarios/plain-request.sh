#!/usr/bin/env bash
# --before-compact of the plain-request scenario (Claude Code headless, `claude -p`, no tmux, no
# app-server adapter; inside the host-e2e namespace). Usage: plain-request.sh ROOT DIR
# Seeds the pointer (seed-request.sh), then writes DIR/prompt-2: the prompt whose one tool call
# records a real pass and runs `kijito-compact request` for this session (record-request.sh), as the
# skill prescribes: both in the same turn (a pass recorded here, before prompt 2, would be withdrawn
# by prompt 2: pass_invalidated_by_new_turn). With no adapter owning the session the answer must be
# no_safe_trigger.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root="$1" dir="$2"
: "${HOST_E2E_SESSION_ID:?}" "${HOST_E2E_OUT:?}"
: "${HOST_E2E_TRANSCRIPT_PATH:?}"
"$here/seed-request.sh" "$root"
printf 'Run this. HOST-E2E-RUN-TOOL: %s/record-request.sh %s %s %s\n' \
  "$here" "$HOST_E2E_OUT" "$HOST_E2E_SESSION_ID" "$HOST_E2E_TRANSCRIPT_PATH" > "$dir/prompt-2"
