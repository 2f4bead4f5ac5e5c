#!/bin/sh
# sandbox-tui-seed.sh ROOT PREFIX: host-e2e tui-claude --before-start (the TUI's CLAUDE_CONFIG_DIR):
# kijito-setup --sandbox --write and --allow-helpers --write; kijito-qa's config dir exists.
set -eu
root="$1" prefix="$2"
: "${XDG_CONFIG_HOME:?}"
"$root/bin/kijito-setup" --sandbox --host claude --root "$prefix" --write >/dev/null
"$root/bin/kijito-setup" --allow-helpers --host claude --root "$prefix" --write >/dev/null
mkdir -p -m 0700 "$XDG_CONFIG_HOME/kijito-qa"
