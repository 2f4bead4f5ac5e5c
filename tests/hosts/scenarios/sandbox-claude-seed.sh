#!/bin/sh
# sandbox-claude-seed.sh ROOT PREFIX MODE DIR: host-e2e tui-claude --before-start of run.sh's
# sandbox-cycle / sandbox-consent / sandbox-self-consent (the Claude Code TUI with kijito-qa's hooks
# AND the OS sandbox; cwd = the project, env = the run's isolated HOME, XDG dirs, CLAUDE_CONFIG_DIR).
#   cycle:   seed-pass.sh publish-only (kijito-local on 127.0.0.1, the pointer published, the config
#            written), so SessionStart prints the session's commands;
#   consent: a latch in the project (enforcement on) and a build/ directory; DIR/command is the
#            delete the agent runs.
# Then, as a user does after install.sh: kijito-setup --sandbox --write and --allow-helpers --write
# (after the config exists: the sandbox entries read it), and a copy of the settings they wrote
# (DIR/settings.json) for the check.
# `sandbox-claude-seed.sh ROOT - after DIR`: the run's last step, what the consent checks read.
set -eu
root="$1" prefix="$2" mode="$3" dir="$4"
: "${CLAUDE_CONFIG_DIR:?}" "${XDG_CONFIG_HOME:?}" "${HOST_E2E_OUT:?}"
case "$mode" in
  cycle) "$(dirname "$0")/seed-pass.sh" "$root" publish-only ;;
  consent)
    "$root/bin/memory-latch" init --objective "host e2e: no token, no execution" >/dev/null
    mkdir build
    printf 'object code\n' > build/main.o
    printf 'rm -rf build\n' > "$dir/command" ;;
  after)
    { [ -d build ] && echo present || echo absent; } > "$HOST_E2E_OUT/build-after.txt"
    cat .memory-latch/_manifest.md > "$HOST_E2E_OUT/latch-log.txt"
    "$root/bin/memory-latch" verify > "$HOST_E2E_OUT/latch-verify.txt" 2>&1 || true
    exit 0 ;;
  *) echo "sandbox-claude-seed.sh: unknown mode $mode" >&2; exit 2 ;;
esac
"$root/bin/kijito-setup" --sandbox --host claude --root "$prefix" --write > "$dir/setup-sandbox.txt"
"$root/bin/kijito-setup" --allow-helpers --host claude --root "$prefix" --write > "$dir/setup-allow.txt"
mkdir -p -m 0700 "$XDG_CONFIG_HOME/kijito-qa"
cp "$CLAUDE_CONFIG_DIR/settings.json" "$dir/settings.json"
