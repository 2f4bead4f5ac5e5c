# mcp-world.sh: sourced by mcp-tools.sh and mcp-cycle.sh. `mcp_world NAME PREFIX HOST`
# builds the throwaway world both run the real host in: a copy of the installed plugin root, HOME
# and CODEX_HOME of their own, a kijito-local store seeded by the server itself, a kijito-qa config
# pointing at a kijito-local URL, the real `kijito-setup --mcp` registration, and `kijito-doctor`'s
# mcp line, which must be green. Sets w (removed at exit), root, db and init (the initialize line).
mcp_world() {
  local name=$1 prefix=$2 host=$3
  w=$(mktemp -d -t "kijito-$name.XXXXXX")
  trap 'rm -rf "$w"' EXIT
  chmod 700 "$w"
  mkdir -p "$w/prefix"
  cp -a "$prefix/$host" "$w/prefix/$host"
  root="$w/prefix/$host"
  # the hosts' npm cache is found before HOME is replaced
  export HOST_E2E_CACHE="${HOST_E2E_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/host-e2e}"
  export HOME="$w/home" CODEX_HOME="$w/codex-home"
  unset XDG_CONFIG_HOME XDG_CACHE_HOME CLAUDE_CONFIG_DIR
  mkdir -p "$HOME/.config/kijito-qa" "$CODEX_HOME"
  chmod 700 "$HOME/.config/kijito-qa" "$CODEX_HOME"
  db="$w/kijito.db"
  init='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"'"$name"'.sh","version":"1"}}}'
  # The store exists before registration (as serve's would): one memory, written by the server itself.
  printf '%s\n' "$init" '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"kijito_remember","arguments":{"content":"seeded by '"$name"'.sh"}}}' \
    | "$root/bin/kijito-local" mcp --db "$db" > /dev/null
  (umask 077; printf '{"apiUrl":"http://127.0.0.1:8787","pointerId":1,"lockMessageId":1}\n' > "$HOME/.config/kijito-qa/config.json")
  "$root/bin/kijito-setup" --mcp --host "$host" --db "$db" --root "$w/prefix" --write
  "$root/bin/kijito-doctor" --host "$host" --root "$w/prefix" --offline --json > "$w/doctor.json" || true
  python3 -c '
import json, sys
v = json.load(open(sys.argv[1]))
line = [c for c in v["checks"] if c["host"] == sys.argv[2] and c["check"] == "mcp"]
assert line and line[0]["status"] == "green", "kijito-doctor mcp line: %s" % line
print("  kijito-doctor mcp: green: " + line[0]["detail"])' "$w/doctor.json" "$host"
}
