#!/bin/sh
# sandbox-codex-seed.sh ROOT PREFIX VARIANT TMUX STEPS: host-e2e tui-codex --before-start (in the project dir, the run's
# CODEX_HOME and XDG dirs; the throwaway config.toml has no sandbox_mode line: --sandbox-mode none).
# The setup a user runs: kijito-setup --sandbox --host codex --write (the permission profile kijito-qa:
# workspace-write with .memory-latch read-only),
# --allow-helpers --host codex --write (the prefix rules in $CODEX_HOME/rules/kijito-qa.rules); then
# kijito-qa's config dir, a build/ dir to delete and the action file the agent asks consent for.
# Writes $HOST_E2E_OUT/setup-*.txt, $HOST_E2E_OUT/before.json (scenarios/sandbox_codex.py state) and
# STEPS, the --steps file, with this run's literal paths (host-e2e reads it after --before-start).
set -eu
root="$1" prefix="$2" variant="$3" tmux="$4" steps="$5"
: "${CODEX_HOME:?}" "${XDG_CONFIG_HOME:?}" "${HOST_E2E_OUT:?}"
"$root/bin/kijito-setup" --sandbox --host codex --root "$prefix" --write > "$HOST_E2E_OUT/setup-sandbox.txt"
"$root/bin/kijito-setup" --allow-helpers --host codex --root "$prefix" --write > "$HOST_E2E_OUT/setup-allow.txt"
mkdir -p -m 0700 "$XDG_CONFIG_HOME/kijito-qa"
mkdir build && printf 'object code\n' > build/main.o
printf '{"tool":"exec_command","command":"rm -r build"}\n' > action.json
python3 "$(dirname "$0")/sandbox_codex.py" state "$root" > "$HOST_E2E_OUT/before.json"
python3 "$(dirname "$0")/sandbox_codex.py" steps "$variant" "$root" "$prefix" "$tmux" "$steps"
