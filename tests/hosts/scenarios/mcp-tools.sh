#!/usr/bin/env bash
# mcp-tools.sh HE2E PREFIX HOST OUT: on the real host. In a throwaway HOME whose kijito-qa
# config points at a kijito-local URL, the real `kijito-setup --mcp` registers `kijito-local mcp`
# for HOST (a copy of the installed plugin root: Claude Code's .mcp.json, Codex's config.toml
# block), `kijito-doctor` must say the registered server lists the curation tools, then the real
# host (host-e2e: Claude Code `claude -p` with --plugin-dir, Codex `codex exec` with the block in
# its config.toml; fake model, loopback-only) starts it, and every tool `tools/list` names must
# reach the model's request (Claude Code: as mcp__plugin_kijito-qa_kijito__<tool>); then the fake
# model runs a curation cycle through them (recall, create two, correct one, fade one) and the
# store must show it.
set -euo pipefail
he2e=$1 prefix=$2 host=$3 out=$4
. "$(dirname "${BASH_SOURCE[0]}")/mcp-world.sh"
mcp_world mcp-tools "$prefix" "$host"
printf '%s\n' "$init" '{"jsonrpc":"2.0","id":2,"method":"tools/list"}' | "$root/bin/kijito-local" mcp --db "$db" > "$w/tools.jsonl"
# The curation cycle, one fake-model tool call per prompt, through the host's own MCP client:
# recall, create two anchors (ids 2 and 3 after the seed), correct the first (the correction is 4),
# fade the second.
case "$host" in
  claude) tool() { printf 'mcp__plugin_kijito-qa_kijito__%s' "$1"; } ;;
  codex) tool() { printf 'mcp__kijito.%s' "$1"; } ;;
esac
n=0
prompt() { n=$((n + 1)); printf 'Curate. HOST-E2E-RUN-TOOL: MCP %s %s\n' "$(tool "$1")" "$2" > "$w/prompt-$n"; }
prompt kijito_recall '{"query":"parser AST names","full":true}'
prompt kijito_remember '{"content":"Decision: the parser keeps the old AST names.","type":"decision"}'
prompt kijito_remember '{"content":"The build uses cargo 1.89.","type":"fact"}'
prompt kijito_correct '{"id":2,"content":"Decision: the parser renames the AST nodes (the old names are gone since 0.4)."}'
prompt kijito_fade '{"id":3}'
files=()
for i in $(seq 1 "$n"); do files+=(--prompt-file "$w/prompt-$i"); done
case "$host" in
  claude) "$he2e" claude --plugin-dir "$root" --scenario prompts "${files[@]}" --host-arg=--allowedTools=mcp__plugin_kijito-qa_kijito --out "$out" --timeout 240 ;;
  codex)
    block=$(sed -n '/^# BEGIN kijito-qa mcp/,/^# END kijito-qa mcp/p' "$CODEX_HOME/config.toml")
    [ -n "$block" ] || { echo "mcp-tools.sh: kijito-setup wrote no block into $CODEX_HOME/config.toml" >&2; exit 1; }
    "$he2e" codex --hooks "$root/hooks/hooks.json" --scenario prompts "${files[@]}" --config-extra "$block" --out "$out" --timeout 240 ;;
esac
# What the store holds afterwards, read through kijito-local's own MCP server.
printf '%s\n' "$init" \
  '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"kijito_anchor_audit","arguments":{"id":2}}}' \
  '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"kijito_get","arguments":{"id":3}}}' \
  '{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"kijito_get","arguments":{"id":4}}}' \
  | "$root/bin/kijito-local" mcp --db "$db" > "$w/after.jsonl"
python3 - "$w/after.jsonl" "$out/requests.jsonl" <<'PY'
import json, sys
text = {m["id"]: m["result"]["content"][0]["text"] for l in open(sys.argv[1]) for m in [json.loads(l)] if m.get("id") in (2, 3, 4)}
assert "\nLifecycle: retired\n" in text[2] and text[2].endswith("Scarred: yes (corrected by [4]; eroded)"), text[2]
assert " · faded\n" in text[3], text[3]
assert "\nSource: correction\n" in text[4] and "renames the AST nodes" in text[4], text[4]
seen = open(sys.argv[2], encoding="utf-8").read()
for answer in ["No memories match", "Created [2]", "Created [3]", "Corrected [2] by [4]", "Faded [3]"]:
    assert answer in seen, "the model never saw the tool result %r" % answer
print("  curation cycle through the host's MCP client: recall, create [2] and [3], correct [2] by [4], fade [3]; [2] is scarred, [3] faded")
PY
python3 - "$w/tools.jsonl" "$out/requests.jsonl" "$host" <<'PY'
import json, sys
tools = [t["name"] for l in open(sys.argv[1]) for m in [json.loads(l)] if m.get("id") == 2 for t in m["result"]["tools"]]
assert len(tools) >= 14, tools
requests = [json.loads(l)["body"] for l in open(sys.argv[2], encoding="utf-8")]
assert requests, "no model request"
if sys.argv[3] == "claude":
    # Claude Code defers MCP tools (ToolSearch): their names are listed in the request's text.
    seen = json.dumps(requests[0])
    name = lambda t: "mcp__plugin_kijito-qa_kijito__" + t
    missing = [t for t in tools if name(t) not in seen]
else:
    # Codex: one namespace tool per MCP server, its tools nested.
    ns = [t for t in requests[0].get("tools", []) if t.get("type") == "namespace" and t.get("name") == "mcp__kijito"]
    assert ns, "no mcp__kijito namespace among the request's tools"
    listed = {t.get("name") for t in ns[0].get("tools", [])}
    name = lambda t: "mcp__kijito." + t
    missing = [t for t in tools if t not in listed]
assert not missing, "the host did not list %s to the model" % missing
print("  %s listed all %d kijito-local tools to the model (%s ...)" % (sys.argv[3], len(tools), name(tools[0])))
PY
