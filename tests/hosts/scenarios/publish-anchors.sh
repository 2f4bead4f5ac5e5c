#!/usr/bin/env bash
# The agent's own publication in the mcp-cycle scenario (scenarios/mcp-cycle.sh): run by the fake
# model's shell tool call, in the host's environment. Usage:
#   publish-anchors.sh ROOT WORK CURRENT_ID RETIRED_ID CURRENT_CONTENT
# Writes the current-state manifest naming the anchors the agent curated through MCP (CURRENT_ID
# current, with the SHA-256 of the content the agent gave kijito_correct; RETIRED_ID, the anchor it
# corrected, retired and superseded by CURRENT_ID), then runs the installed helpers as the skill
# says: pointer-digest, pointer-publish, pointer-digest. WORK is seed-pass.sh's work dir (ids.json:
# the pointer and lock ids); the manifest and receipt stay there (WORK/cycle-*).
set -euo pipefail
root="$1" work="$2" current="$3" retired="$4" content="$5"
bin="$root/bin"
read -r pointer lock < <(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["pointerId"], d["lockMessageId"])' "$work/ids.json")
( umask 077; python3 - "$work/cycle-manifest.json" "$pointer" "$lock" "$current" "$retired" "$content" <<'PY'
import hashlib, json, sys
path, pointer, lock, current, retired, content = sys.argv[1:]
manifest = {"schema": "kijito.codex.current-state/v1", "pointerId": int(pointer),
            "lock": {"protocol": "kijito-message-claim/v1", "messageId": int(lock)}, "state": "active",
            "task": {"title": "kijito-qa MCP cycle", "nextAction": "Rename the AST nodes in the parser",
                     "done": ["curated the parser decision through kijito-local MCP"], "remaining": ["rename the AST nodes"],
                     "doneWhen": ["the parser uses the new names"],
                     "gate": {"requiredConsecutiveGreens": 2, "consecutiveGreens": 0, "artifactDigest": None}},
            "anchors": [{"id": int(current), "status": "current", "sha256": hashlib.sha256(content.encode()).hexdigest(),
                         "purpose": "the parser decision, as corrected"},
                        {"id": int(retired), "status": "retired", "supersededBy": int(current),
                         "purpose": "the parser decision before its correction"}]}
with open(path, "w") as f:
    f.write(json.dumps(manifest, separators=(",", ":"), ensure_ascii=False))
PY
)
d0=$("$bin/pointer-digest" --pointer-id "$pointer")
"$bin/pointer-publish" --pointer-id "$pointer" --lock-message-id "$lock" --expected-pointer-digest "$d0" \
  --content-file "$work/cycle-manifest.json" --rollback-file "$work/cycle-rollback.json" > "$work/cycle-receipt.json"
d1=$("$bin/pointer-digest" --pointer-id "$pointer")
printf 'published pointer %s: digest %s -> %s\n' "$pointer" "$d0" "$d1"
cat "$work/cycle-receipt.json"
