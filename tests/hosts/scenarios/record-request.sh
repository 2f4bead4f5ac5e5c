#!/usr/bin/env bash
# The agent's own tool call in the harness-prompted tmux scenarios (tmux-compact, tmux-long): the
# fake model runs this one command through the host's shell tool (HOST-E2E-RUN-TOOL), so the QA
# pass is recorded and the compaction requested in ONE turn, as the skill does it. (A pass the
# harness recorded before typing a new prompt is withdrawn by that prompt's UserPromptSubmit:
# pass_invalidated_by_new_turn, docs/protocol.md §7; that is why the record is no longer a harness
# step between turns.) Reads ROOT, DATA and the run's HOME/XDG dirs from OUT/record-request.env
# (written by seed-request.sh, which also started kijito-local). Runs rerecord-pass.sh (pointer-digest, two
# context-free boots with fresh report paths, qa-gate record), writes the snapshot digest into
# OUT/expected.json, then `kijito-compact request` (its output is the tool result the model sees).
# Usage: record-request.sh OUT SESSION_ID TRANSCRIPT_PATH
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
out="$1" sid="$2" transcript="$3"
# shellcheck disable=SC1091
. "$out/record-request.env"
export HOST_E2E_OUT="$out" HOST_E2E_SESSION_ID="$sid" HOST_E2E_TRANSCRIPT_PATH="$transcript" XDG_STATE_HOME XDG_CONFIG_HOME HOME
ready=$("$here/rerecord-pass.sh" "$ROOT")
printf '%s\n' "$ready" > "$out/ready.json"
python3 - "$out/expected.json" "$ready" "$XDG_STATE_HOME/kijito-e2e" <<'PY'
import glob, json, os, sys
path, ready, work = sys.argv[1:]
boots = sorted(glob.glob(os.path.join(work, "boot-*.json")), key=os.path.getmtime)[-1]
e = json.load(open(path))
e["snapshotDigest"] = json.load(open(boots))["snapshotDigest"]
json.dump(e, open(path, "w"), indent=2)
PY
exec "$ROOT/bin/kijito-compact" request --session-id "$sid" --data-dir "$DATA"
