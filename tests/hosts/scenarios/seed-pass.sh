#!/usr/bin/env bash
# --before-compact command of the attested scenarios (runs inside the host-e2e namespace, in the
# run's isolated HOME/XDG dirs). Usage: seed-pass.sh ROOT
# Starts the installed kijito-local on 127.0.0.1 (left running for the hooks until the scenario
# ends), seeds a mutex message, two anchors and a pointer through the local extensions, writes the
# kijito-qa config (apiUrl, tokenFile, pointer and lock ids, dataDir), then runs the installed
# helpers as an agent would: pointer-digest, pointer-publish, pointer-digest, two context-free
# pointer-snapshot boots with fresh report paths, qa-gate record for $HOST_E2E_SESSION_ID and
# $HOST_E2E_TRANSCRIPT_PATH. Writes $HOST_E2E_OUT/expected.json for the checks.
# `seed-pass.sh ROOT publish-only` stops after the publication (scenarios/seed-boots.sh: the host's
# own agents run the boots and the record). KIJITO_E2E_DB: the store kijito-local serves (default
# $XDG_STATE_HOME/kijito-e2e/kijito.db; scenarios/mcp-cycle.sh: the store its MCP server also opens).
set -euo pipefail
root="$1"
mode="${2:-pass}"
bin="$root/bin"
: "${HOST_E2E_OUT:?}" "${XDG_CONFIG_HOME:?}" "${XDG_STATE_HOME:?}"
[ "$mode" = publish-only ] || : "${HOST_E2E_SESSION_ID:?}" "${HOST_E2E_TRANSCRIPT_PATH:?}"
step() { printf '[seed-pass] %s\n' "$*"; }

# The data dir the hooks will use: Claude Code gives plugins CLAUDE_PLUGIN_DATA
# (= $CLAUDE_CONFIG_DIR/plugins/data/<plugin name>-inline for --plugin-dir); Codex hooks
# from $CODEX_HOME/hooks.json get no plugin variable, so they read dataDir from the config.
# KIJITO_E2E_DATA_DIR overrides it (the tmux-adapter scenarios: Codex's SessionStart hook ran
# before this config existed, so it pinned the session in the default data dir).
case "${HOST_E2E_HOST:?}" in
  claude) data="${CLAUDE_CONFIG_DIR:?}/plugins/data/kijito-qa-inline" ;;
  codex) data="$XDG_STATE_HOME/kijito-qa-data" ;;
  *) echo "unknown host $HOST_E2E_HOST" >&2; exit 2 ;;
esac
data="${KIJITO_E2E_DATA_DIR:-$data}"
mkdir -p "$data"
[ "$HOST_E2E_HOST" = claude ] || chmod 0700 "$data"
work="$XDG_STATE_HOME/kijito-e2e"
mkdir -p -m 0700 "$work"
cfgdir="$XDG_CONFIG_HOME/kijito-qa"
mkdir -p -m 0700 "$cfgdir"
token="$cfgdir/token"
( umask 077; python3 -c 'import secrets; print(secrets.token_hex(24))' > "$token" )

step "starting $bin/kijito-local on 127.0.0.1"
"$bin/kijito-local" serve --db "${KIJITO_E2E_DB:-$work/kijito.db}" --token-file "$token" --listen 127.0.0.1:0 \
  --request-log "$work/requests.jsonl" > "$work/kijito-local.out" 2> "$work/kijito-local.err" < /dev/null &
url=""
for _ in $(seq 1 100); do
  line=$(head -n 1 "$work/kijito-local.out" 2>/dev/null || true)
  case "$line" in "kijito-local listening on http://127.0.0.1:"*) url="${line#kijito-local listening on }"; break ;; esac
  sleep 0.1
done
[ -n "$url" ] || { echo "kijito-local did not start:" >&2; cat "$work/kijito-local.err" >&2; exit 1; }
step "kijito-local at $url"

# Seed through the local extensions: POST /api/send, POST /api/memory.
python3 - "$url" "$token" "$work" <<'PY'
import hashlib, json, sys, urllib.request
url, token_file, work = sys.argv[1:]
token = open(token_file).read().strip()
def post(path, body):
    req = urllib.request.Request(url + path, data=json.dumps(body).encode(), method="POST", headers={
        "Authorization": "Bearer " + token, "Content-Type": "application/json", "Accept": "application/json",
        "User-Agent": "kijito-qa-host-e2e/1"})
    with urllib.request.urlopen(req, timeout=10) as r:
        return json.loads(r.read())
mem = lambda content: post("/api/memory", {"content": content, "persona": "codex", "scope": "project",
                                           "project": "Codex"})["id"]
lock = post("/api/send", {"to": "codex", "from": "codex", "content": "kijito-qa host e2e pointer mutex"})["result"]["id"]
anchors = ["host e2e anchor one: the build is green.", "host e2e anchor two: the next step is the release."]
ids = [mem(a) for a in anchors]
pointer = mem("bootstrap pointer content, replaced by pointer-publish")
manifest = {"schema": "kijito.codex.current-state/v1", "pointerId": pointer,
            "lock": {"protocol": "kijito-message-claim/v1", "messageId": lock}, "state": "active",
            "task": {"title": "kijito-qa host e2e", "nextAction": "Re-run the host e2e scenarios",
                     "done": [], "remaining": ["check attested re-entry"], "doneWhen": ["every scenario is green"],
                     "gate": {"requiredConsecutiveGreens": 2, "consecutiveGreens": 0, "artifactDigest": None}},
            "anchors": [{"id": i, "status": "current", "sha256": hashlib.sha256(a.encode()).hexdigest(),
                         "purpose": "host e2e anchor %d" % n} for n, (i, a) in enumerate(zip(ids, anchors), 1)]}
with open(work + "/manifest.json", "w") as f:
    f.write(json.dumps(manifest, separators=(",", ":"), ensure_ascii=False))
json.dump({"pointerId": pointer, "lockMessageId": lock, "anchors": ids}, open(work + "/ids.json", "w"))
PY
read -r pointer lock < <(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["pointerId"], d["lockMessageId"])' "$work/ids.json")
chmod 0600 "$work/manifest.json"
( umask 077; python3 - "$cfgdir/config.json" "$url" "$token" "$pointer" "$lock" "$data" <<'PY'
import json, sys
path, url, token, pointer, lock, data = sys.argv[1:]
json.dump({"apiUrl": url, "tokenFile": token, "persona": "codex", "project": "Codex",
           "pointerId": int(pointer), "lockMessageId": int(lock), "dataDir": data}, open(path, "w"))
PY
)
step "pointer $pointer, lock message $lock, data dir $data"

d0=$("$bin/pointer-digest" --pointer-id "$pointer")
step "pointer-digest (before): $d0"
"$bin/pointer-publish" --pointer-id "$pointer" --lock-message-id "$lock" --expected-pointer-digest "$d0" \
  --content-file "$work/manifest.json" --rollback-file "$work/rollback-1.json" > "$work/receipt.json"
step "pointer-publish: $(cat "$work/receipt.json")"
d1=$("$bin/pointer-digest" --pointer-id "$pointer")
step "pointer-digest (after): $d1"
want=$(sha256sum "$work/manifest.json" | cut -d' ' -f1)
[ "$d1" = "$want" ] || { echo "published digest $d1 != manifest digest $want" >&2; exit 1; }
if [ "$mode" = publish-only ]; then
  python3 -c 'import json,sys; json.dump({"pointerId": int(sys.argv[2]), "lockMessageId": int(sys.argv[3]), "pointerDigest": sys.argv[4], "dataDir": sys.argv[5]}, open(sys.argv[1], "w"), indent=2)' \
    "$HOST_E2E_OUT/expected.json" "$pointer" "$lock" "$d1" "$data"
  exit 0
fi
# Two context-free boots: fresh processes, fresh report paths.
"$bin/pointer-snapshot" --pointer-id "$pointer" --lock-message-id "$lock" --expected-pointer-digest "$d1" \
  --report-file "$work/boot-1.json" > /dev/null
"$bin/pointer-snapshot" --pointer-id "$pointer" --lock-message-id "$lock" --expected-pointer-digest "$d1" \
  --report-file "$work/boot-2.json" > /dev/null
snap=$(python3 -c 'import json,sys; a,b=(json.load(open(p)) for p in sys.argv[1:]); assert a["verdict"]==b["verdict"]=="green" and a["snapshotDigest"]==b["snapshotDigest"]; print(a["snapshotDigest"])' "$work/boot-1.json" "$work/boot-2.json")
step "two green boots, snapshot digest $snap"
"$bin/qa-gate" record --session-id "$HOST_E2E_SESSION_ID" --transcript "$HOST_E2E_TRANSCRIPT_PATH" \
  --data-dir "$data" --pointer-id "$pointer" --pointer-digest "$d1" \
  --cold-boot-report "$work/boot-1.json" --cold-boot-report "$work/boot-2.json" > "$HOST_E2E_OUT/ready.json"
step "qa-gate record: $(cat "$HOST_E2E_OUT/ready.json")"
python3 - "$HOST_E2E_OUT/expected.json" "$pointer" "$lock" "$d1" "$snap" "$data" <<'PY'
import json, sys
path, pointer, lock, d, snap, data = sys.argv[1:]
json.dump({"pointerId": int(pointer), "lockMessageId": int(lock), "pointerDigest": d, "snapshotDigest": snap,
           "dataDir": data}, open(path, "w"), indent=2)
PY
