#!/usr/bin/env bash
# Between cycles of the adapter-long scenario (inside the host-e2e namespace): a new QA pass for the
# same session, as an agent records it after each compaction: pointer-digest, two context-free
# pointer-snapshot boots with fresh report paths, qa-gate record. Uses the kijito-local, config and
# ids seed-pass.sh left (it keeps running until the scenario ends). Usage: rerecord-pass.sh ROOT
set -euo pipefail
bin="$1/bin"
: "${HOST_E2E_SESSION_ID:?}" "${HOST_E2E_TRANSCRIPT_PATH:?}" "${HOST_E2E_OUT:?}" "${XDG_STATE_HOME:?}"
work="$XDG_STATE_HOME/kijito-e2e"
data=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["dataDir"])' "$HOST_E2E_OUT/expected.json")
read -r pointer lock < <(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["pointerId"], d["lockMessageId"])' "$work/ids.json")
n=$(date +%s%N)
d=$("$bin/pointer-digest" --pointer-id "$pointer")
for i in 1 2; do
  "$bin/pointer-snapshot" --pointer-id "$pointer" --lock-message-id "$lock" --expected-pointer-digest "$d" \
    --report-file "$work/boot-$n-$i.json" > /dev/null
done
"$bin/qa-gate" record --session-id "$HOST_E2E_SESSION_ID" --transcript "$HOST_E2E_TRANSCRIPT_PATH" \
  --data-dir "$data" --pointer-id "$pointer" --pointer-digest "$d" \
  --cold-boot-report "$work/boot-$n-1.json" --cold-boot-report "$work/boot-$n-2.json"
