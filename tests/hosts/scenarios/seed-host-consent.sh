#!/usr/bin/env bash
# seed-host-consent.sh ROOT: before the host starts (host-e2e --before-start, cwd = the project):
# the user's consent file chooses consent mode host (docs/protocol.md §10.3), the workspace gets a
# latch (enforcement on) and a build/ directory for the agent's `rm -rf build`.
set -euo pipefail
root="$1"
cfg="${XDG_CONFIG_HOME:?}/kijito-qa"
mkdir -p "$cfg"; chmod 700 "$cfg"
umask 077
printf '{"schema":"memory-latch.consent/v1","mode":"host"}\n' > "$cfg/memory-latch-consent.json"
"$root/bin/memory-latch" init --workspace "$PWD" --objective "clean the build" --next-step "remove build"
mkdir -p build; echo x > build/artefact.o
echo "seeded: consent mode host, latch in $PWD, build/"
