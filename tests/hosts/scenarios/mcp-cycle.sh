#!/usr/bin/env bash
# mcp-cycle.sh HE2E PREFIX HOST OUT: on the real host, the whole agent cycle
# through kijito-local's MCP tools, offline. As in mcp-tools.sh, the real `kijito-setup --mcp`
# registers `kijito-local mcp --db DB` for HOST (a copy of the installed plugin root) and
# `kijito-doctor` must call it green. In the run (host-e2e prompts scenario, fake model,
# loopback-only), the --before-first step is seed-pass.sh publish-only on the SAME store DB
# (KIJITO_E2E_DB: `kijito-local serve` and the host's MCP server open one SQLite file), so the
# SessionStart hook prints the pointer's commands; it then writes the user's prompts. One user
# prompt per step, the fake model acting on it exactly as a real session would:
#   1-5  through the host's own MCP client: kijito_recall, kijito_remember twice (anchors A and B),
#        kijito_correct A (the correction C), kijito_fade B;
#   6    the agent's shell tool call publishes the manifest naming C (current) and A (retired,
#        superseded by C) with pointer-publish (scenarios/publish-anchors.sh);
#   7    HOST-E2E-QA-BOOTS: the kijito-memory-qa skill's steps (lib/he2e/qa_driver.py, the same
#        steps as the `boots` scenario): pointer-digest, two verifier boots in fresh subagents
#        (Claude Code Agent, Codex spawn_agent), pointer-digest, qa-gate record, every command from
#        the SessionStart hook's text;
#   8    /compact (the user's manual compaction; Codex: thread/compact/start);
#   9    the next prompt: the ATTESTED re-entry must reach the resumed model exactly once
#        (scenarios/check.py attested, as in attested-manual), saying the boots were witnessed.
# Then the store, read through kijito-local's MCP server, must show the curation (A scarred and
# retired, B faded, C the correction) and the pointer must hold the published manifest.
# `mcp-cycle.sh --seed ROOT DB PDIR HOST` is the --before-first step (inside the namespace).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
tool() {
  case "$1" in
    claude) printf 'mcp__plugin_kijito-qa_kijito__%s' "$2" ;;
    codex) printf 'mcp__kijito.%s' "$2" ;;
  esac
}
CORRECTED="Decision: the parser renames the AST nodes (the old names are gone since 0.4)."

if [ "${1:-}" = --seed ]; then
  root=$2 db=$3 pdir=$4 host=$5
  KIJITO_E2E_DB="$db" "$here/seed-pass.sh" "$root" publish-only
  work="$XDG_STATE_HOME/kijito-e2e"
  pointer=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["pointerId"])' "$work/ids.json")
  # kijito-local numbers memories in creation order: the pointer is seed-pass.sh's last one
  a=$((pointer + 1)) b=$((pointer + 2)) c=$((pointer + 3))
  printf '{"A":%d,"B":%d,"C":%d,"work":"%s"}\n' "$a" "$b" "$c" "$work" > "$pdir/ids.json"
  n=0
  p() { n=$((n + 1)); printf '%s\n' "$1" > "$pdir/prompt-$n"; }
  p "Curate. HOST-E2E-RUN-TOOL: MCP $(tool "$host" kijito_recall) {\"query\":\"host e2e anchor\",\"full\":true}"
  p "Curate. HOST-E2E-RUN-TOOL: MCP $(tool "$host" kijito_remember) {\"content\":\"Decision: the parser keeps the old AST names.\",\"type\":\"decision\"}"
  p "Curate. HOST-E2E-RUN-TOOL: MCP $(tool "$host" kijito_remember) {\"content\":\"The build uses cargo 1.89.\",\"type\":\"fact\"}"
  p "Curate. HOST-E2E-RUN-TOOL: MCP $(tool "$host" kijito_correct) {\"id\":$a,\"content\":\"$CORRECTED\"}"
  p "Curate. HOST-E2E-RUN-TOOL: MCP $(tool "$host" kijito_fade) {\"id\":$b}"
  p "Publish the current state. HOST-E2E-RUN-TOOL: $(printf '%q %q %q %q %q %q' "$here/publish-anchors.sh" "$root" "$work" "$c" "$a" "$CORRECTED")"
  p "Run the cold boots of the kijito-memory-qa skill and record the pass. HOST-E2E-QA-BOOTS"
  p "/compact"
  p "Carry on after the compaction. HOST-E2E-QA-END"
  exit 0
fi

he2e=$1 prefix=$2 host=$3 out=$4
. "$(dirname "${BASH_SOURCE[0]}")/mcp-world.sh"
mcp_world mcp-cycle "$prefix" "$host"
mkdir -p "$w/p"

files=()
for i in $(seq 1 9); do files+=(--prompt-file "$w/p/prompt-$i"); done
seed=$(printf '%q --seed %q %q %q %q' "$here/mcp-cycle.sh" "$root" "$db" "$w/p" "$host")
after="$(printf '%q %q' "$here/after-boots.sh" "$root"); cp \"\$XDG_STATE_HOME/kijito-e2e/ids.json\" \"\$XDG_STATE_HOME/kijito-e2e/cycle-manifest.json\" \"\$HOST_E2E_OUT/\" 2>/dev/null || true"
case "$host" in
  claude) "$he2e" claude --plugin-dir "$root" --scenario prompts "${files[@]}" --before-first "$seed" --after "$after" \
            --host-arg=--allowedTools=Bash,mcp__plugin_kijito-qa_kijito --out "$out" --timeout 420 ;;
  codex)
    block=$(sed -n '/^# BEGIN kijito-qa mcp/,/^# END kijito-qa mcp/p' "$CODEX_HOME/config.toml")
    [ -n "$block" ] || { echo "mcp-cycle.sh: kijito-setup wrote no block into $CODEX_HOME/config.toml" >&2; exit 1; }
    "$he2e" codex --hooks "$root/hooks/hooks.json" --scenario prompts "${files[@]}" --before-first "$seed" --after "$after" \
      --config-extra "$block" --out "$out" --timeout 420 ;;
esac
cp "$w/p/ids.json" "$out/cycle-ids.json"
# What the store holds afterwards, read through kijito-local's own MCP server.
read -r a b c < <(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["A"], d["B"], d["C"])' "$w/p/ids.json")
printf '%s\n' "$init" \
  "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"kijito_anchor_audit\",\"arguments\":{\"id\":$a}}}" \
  "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{\"name\":\"kijito_get\",\"arguments\":{\"id\":$b}}}" \
  "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/call\",\"params\":{\"name\":\"kijito_get\",\"arguments\":{\"id\":$c}}}" \
  | "$root/bin/kijito-local" mcp --db "$db" > "$out/store-after.jsonl"
python3 "$here/check_mcp_cycle.py" "$out" "$root" "$host" "$prefix/$host"
