#!/usr/bin/env bash
# The last `run` step of agent-long (scenarios/agent_steps.py; inside the namespace, after the
# final turn): copies the journal dir of the data dir the hooks used ($HOST_E2E_OUT/expected.json's
# dataDir, docs/protocol.md §13) to $HOST_E2E_OUT/flight-data/journal, modes kept (0700 dir, 0600
# files), so check_agent.py can run the installed kijito-report and kijito-local view on it after
# the run's work dir is gone (lib/he2e/flight.py). Usage: journal-copy.sh
set -euo pipefail
: "${HOST_E2E_OUT:?}"
data=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["dataDir"])' "$HOST_E2E_OUT/expected.json")
[ -d "$data/journal" ] || { echo "journal-copy.sh: no journal dir in $data" >&2; exit 1; }
mkdir -m 0700 "$HOST_E2E_OUT/flight-data"
cp -a "$data/journal" "$HOST_E2E_OUT/flight-data/journal"
ls -la "$HOST_E2E_OUT/flight-data/journal"
