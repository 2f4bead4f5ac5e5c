#!/usr/bin/env bash
# --before-first command of the `boots` scenarios (inside the host-e2e namespace, before the host's
# session starts, so its SessionStart hook prints the pointer's commands). Usage: seed-boots.sh ROOT PROMPT_FILE
# Seeds kijito-local and publishes the pointer (seed-pass.sh ROOT publish-only; kijito-local keeps
# running for the turn), then writes the one user prompt: it carries QA_MARKER (the fake model then
# acts as the kijito-memory-qa skill's steps 3-5, lib/he2e/qa_driver.py) and a fresh nonce that
# exists only in the main conversation ($HOST_E2E_OUT/main-nonce.txt; check_boots.py looks for it
# in the verifier agents' requests). `seed-boots.sh ROOT PROMPT_FILE -fork`: the negative control,
# the prompt also carries HOST-E2E-QA-FORK (the fake main agent forks its conversation instead).
# `... -main-refused`: the prompt carries HOST-E2E-QA-MAIN (the fake main agent runs both boot
# commands itself; `qa-gate record` must refuse them, boot_by_main_agent).
set -euo pipefail
root="$1" prompt="$2" fork="${3:-}"
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
"$here/seed-pass.sh" "$root" publish-only
nonce="HOST-E2E-MAIN-CONTEXT-$(python3 -c 'import secrets; print(secrets.token_hex(12))')"
printf '%s\n' "$nonce" > "$HOST_E2E_OUT/main-nonce.txt"
extra=""
case "$fork" in
  -fork) extra=" HOST-E2E-QA-FORK" ;;
  -main-refused) extra=" HOST-E2E-QA-MAIN" ;;
  "") ;;
  *) echo "seed-boots.sh: unknown variant $fork" >&2; exit 2 ;;
esac
printf 'Run the cold boots of the kijito-memory-qa skill and record the pass. HOST-E2E-QA-BOOTS %s%s\n' "$nonce" "$extra" > "$prompt"
