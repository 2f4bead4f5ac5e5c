#!/bin/sh
# policy-seed.sh ROOT DIR MODE [CMD]: run by host-e2e --before-first in the project dir (the host's cwd),
# before the host starts (the PreToolUse policy on the real hosts).
#   consent: initialise a memory-latch here (enforcement is on where a latch is), make a build/
#            dir, and write DIR/prompt-1, the user's request that starts the fake model's consent
#            role (lib/he2e/policy_driver.py): `rm -rf build`. DIR/prompt-2 is written later by
#            policy_user.py, from what the user read on the screen. CMD (default `rm -rf build`) is
#            the delete the agent runs: Codex 0.169 itself refuses `rm -f` forms under its
#            approval policy "never" ("rm -f style commands are not permitted"), even after our
#            hook allowed the call, so run.sh gives Codex `rm -r build`.
#   mcp:     (Codex: register `ROOT/bin/kijito-local mcp` as MCP server kijito in $CODEX_HOME/config.toml;
#            Claude Code gets it from run.sh's --mcp-config) write the kijito-qa config with pointerId 21813 and lockMessageId 77 (the run's HOME),
#            and two prompts: an MCP `kijito_update` of the pointer (must be denied), then one of
#            another id (the control: the hook lets it through to the MCP server).
set -eu
root="$1" dir="$2" mode="$3" cmd="${4:-rm -rf build}"
case "$mode" in
  consent)
    "$root/bin/memory-latch" init --objective "host e2e: no token, no execution" >/dev/null
    mkdir build
    printf 'object code\n' > build/main.o
    printf 'Clean up the build output. HOST-E2E-CONSENT-AGENT: %s\n' "$cmd" > "$dir/prompt-1"
    printf '%s\n' "$cmd" > "$dir/command"
    ;;
  mcp)
    : "${XDG_CONFIG_HOME:?}"
    mkdir -p -m 0700 "$XDG_CONFIG_HOME/kijito-qa"
    ( umask 077; printf '{"apiUrl": "http://127.0.0.1:1", "pointerId": 21813, "lockMessageId": 77}\n' \
        > "$XDG_CONFIG_HOME/kijito-qa/config.json" )
    tool=mcp__kijito__kijito_update
    if [ "${HOST_E2E_HOST:-}" = codex ]; then
      # Codex reads config.toml at thread/start (after this command): register the server there; it
      # offers the server's tools to the model in the namespace mcp__kijito
      : "${CODEX_HOME:?}"
      printf '\n[mcp_servers.kijito]\ncommand = "%s"\nargs = ["mcp", "--db", "%s"]\n' \
        "$root/bin/kijito-local" "$dir/kijito.db" >> "$CODEX_HOME/config.toml"
      tool=mcp__kijito/kijito_update
    fi
    printf 'HOST-E2E-RUN-CALL: %s {"id": 21813, "content": "pointer overwritten by the agent"}\n' "$tool" > "$dir/prompt-1"
    printf 'HOST-E2E-RUN-CALL: %s {"id": 5, "content": "an ordinary memory"}\n' "$tool" > "$dir/prompt-2"
    ;;
  *) echo "policy-seed.sh: unknown mode $mode" >&2; exit 2 ;;
esac
