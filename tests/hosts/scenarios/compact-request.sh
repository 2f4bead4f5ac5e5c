#!/usr/bin/env bash
# --then of the tmux-adapter scenarios (host-e2e tui-claude / tui-codex; runs inside the namespace
# with TMUX/TMUX_PANE as the hooks saw them). Usage: compact-request.sh ROOT pass|nopass|seed
# pass and seed: start kijito-local and publish the pointer, and write
# $HOST_E2E_OUT/record-request.env for scenarios/record-request.sh (seed-request.sh); the pass itself is recorded by
# the agent's tool call in the same turn as its request (a pass recorded here, before a new user
# prompt, would be withdrawn by that prompt: pass_invalidated_by_new_turn). seed: only that (the
# long scenario types its prompts through host-e2e --then-prompt). Then, in pass/nopass modes, type
# one user prompt that makes the fake model run, through the host's own shell tool, pass:
# record-request.sh (record, then `kijito-compact request`), nopass: `ROOT/bin/kijito-compact
# request ...` alone; and wait (bounded) for that turn's Stop. The adapter then types /compact by
# itself; nothing here types anything else.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root="$1" mode="$2"
: "${HOST_E2E_SESSION_ID:?}" "${HOST_E2E_PROBE_LOG:?}" "${TMUX_PANE:?}" "${HOST_E2E_OUT:?}"
case "$HOST_E2E_HOST" in
  claude) data="${CLAUDE_CONFIG_DIR:?}/plugins/data/kijito-qa-inline" ;;
  codex) data="$HOME/.cache/kijito-qa" ;;  # the default: no config existed at SessionStart
esac
if [ "$mode" = pass ] || [ "$mode" = seed ]; then
  KIJITO_E2E_DATA_DIR="$data" "$here/seed-request.sh" "$root"
fi
[ "$mode" != seed ] || exit 0
stops() { grep -c '"event": *"Stop"' "$HOST_E2E_PROBE_LOG" || true; }
n=$(stops)
cmd="$root/bin/kijito-compact request --session-id $HOST_E2E_SESSION_ID --data-dir $data"
if [ "$mode" = pass ]; then
  cmd="$here/record-request.sh $HOST_E2E_OUT $HOST_E2E_SESSION_ID ${HOST_E2E_TRANSCRIPT_PATH:?}"
fi
echo "[compact-request] typing the prompt for: $cmd"
tmux send-keys -t "$TMUX_PANE" -l "Run this. HOST-E2E-RUN-TOOL: $cmd"
sleep 0.3
tmux send-keys -t "$TMUX_PANE" Enter
for _ in $(seq 1 1200); do
  [ "$(stops)" -gt "$n" ] && { echo "[compact-request] the turn ended (Stop)"; exit 0; }
  sleep 0.1
done
echo "[compact-request] no Stop within 120 s" >&2
exit 1
