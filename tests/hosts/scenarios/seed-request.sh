#!/usr/bin/env bash
# Before the agent's record-and-request turn (scenarios/record-request.sh): start the installed
# kijito-local and publish the pointer (seed-pass.sh ROOT publish-only; kijito-local keeps running
# until the scenario ends), then write $HOST_E2E_OUT/record-request.env (ROOT, DATA, and the run's
# HOME/XDG dirs, so the agent's tool call needs no environment of its own). No pass is recorded
# here: a pass recorded before a new user turn is withdrawn by that turn (pass_invalidated_by_new_turn).
# KIJITO_E2E_DATA_DIR overrides the data dir as for seed-pass.sh. Usage: seed-request.sh ROOT
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root="$1"
: "${HOST_E2E_OUT:?}" "${XDG_STATE_HOME:?}" "${XDG_CONFIG_HOME:?}" "${HOME:?}"
"$here/seed-pass.sh" "$root" publish-only
data=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["dataDir"])' "$HOST_E2E_OUT/expected.json")
printf 'ROOT=%q\nDATA=%q\nXDG_STATE_HOME=%q\nXDG_CONFIG_HOME=%q\nHOME=%q\n' \
  "$root" "$data" "$XDG_STATE_HOME" "$XDG_CONFIG_HOME" "$HOME" > "$HOST_E2E_OUT/record-request.env"
