#!/usr/bin/env bash
# --after command of the Claude summary-carried scenarios (inside the host-e2e namespace, after the
# last step): copies this session's claim (re-entry) record the hooks left in the plugin data dir to
# $HOST_E2E_OUT/claim.json for check_summary.py. Usage: summary-after.sh
set -euo pipefail
: "${HOST_E2E_SESSION_ID:?}" "${HOST_E2E_OUT:?}" "${CLAUDE_CONFIG_DIR:?}"
qa="$CLAUDE_CONFIG_DIR/plugins/data/kijito-qa-inline/qa"
for f in "$qa/compaction-reentry-delivered.$HOST_E2E_SESSION_ID.json" "$qa/compaction-reentry.$HOST_E2E_SESSION_ID.json"; do
  if [ -f "$f" ] && [ ! -L "$f" ]; then cp "$f" "$HOST_E2E_OUT/claim.json"; echo "claim record: $f"; exit 0; fi
done
echo "no claim record in $qa" >&2
ls -la "$qa" >&2 || true
exit 1
