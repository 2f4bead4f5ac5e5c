#!/usr/bin/env bash
# after-host-consent.sh: the last --steps "run" of host-consent (cwd = the project, the session's
# values in the env): keep in $HOST_E2E_OUT what check_host_consent.py reads once host-e2e removed
# its work dir: the latch manifest, whether build/ is still there, the data dir's action and asked
# files (name and sha256 of each) and the session's transcript.
set -euo pipefail
dst="${HOST_E2E_OUT:?}/host-consent"
mkdir -p "$dst"
cp .memory-latch/_manifest.md "$dst/manifest.md"
if [ -e build ]; then echo present > "$dst/build"; else echo gone > "$dst/build"; fi
find "$HOME" -path '*/actions/*' -type f \( -name 'sha256-*' -o -name 'asked-*' \) -print0 \
  | xargs -0 -r sha256sum > "$dst/actions.txt"
cp "${HOST_E2E_TRANSCRIPT_PATH:?}" "$dst/transcript.jsonl"
echo "kept the latch manifest, build/ state, action files and transcript in $dst"
