#!/bin/sh
# seed-consent.sh ROOT DIR: run by host-e2e --before-first in the project dir (the host's cwd).
# Initialise a memory-latch there, request consent for an action, and write the two prompts of
# the "consent" scenario into DIR: prompt-1 makes the fake model run `memory-latch consent
# confirm` with the token in a tool call (must be refused), prompt-2 is exactly the token (the
# user's own message: refused, because the token already appeared in a tool call).
set -eu
root="$1" dir="$2"
ml="$root/bin/memory-latch"
"$ml" init --objective "host e2e: consent only from the user" >/dev/null 2>&1
printf 'git push --force origin main\n' > action.txt
out=$("$ml" consent request --json --action-file "$PWD/action.txt" --summary "force-push main" --risk low)
token=$(printf '%s' "$out" | python3 -c 'import json, sys; print(json.load(sys.stdin)["token"])')
printf 'Run this. HOST-E2E-RUN-TOOL: %s consent confirm --action-file %s/action.txt --message %s\n' "$ml" "$PWD" "$token" > "$dir/prompt-1"
printf '%s\n' "$token" > "$dir/prompt-2"
printf '%s\n' "$token" > "$dir/token"
