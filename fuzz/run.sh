#!/usr/bin/env bash
# Run every fuzz target for a bounded time (default 60 s each) with
# cargo-fuzz on nightly, seeded from the fixture corpora. Prints executions,
# seconds and corpus size per target; stops at the first crash.
# Usage: fuzz/run.sh [SECONDS] [TARGET...]
set -euo pipefail
cd "$(dirname "$0")"
secs=${1:-60}
shift || true
command -v cargo-fuzz >/dev/null || { echo "cargo-fuzz missing: cargo +nightly install cargo-fuzz --locked" >&2; exit 2; }
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(manifest rendering guard hook_stdin config token)
for t in manifest rendering guard hook_stdin config token; do mkdir -p "corpus/$t"; done
cp ../fixtures/pointers/*.json corpus/manifest/ 2>/dev/null || true
cp ../fixtures/renderings/*.txt corpus/rendering/ 2>/dev/null || true
# Hook stdin seeds: every real payload of both hosts.
python3 - <<'PY' 2>/dev/null || true
import json, glob, hashlib, os
for f in glob.glob("../fixtures/hosts/*/stdin-by-event.json"):
    for v in json.load(open(f)).values():
        b = json.dumps(v).encode()
        open(os.path.join("corpus/hook_stdin", hashlib.sha1(b).hexdigest()), "wb").write(b)
PY
printf '%s' '/opt/kq/bin/qa-gate status --session-id abc --data-dir /d' > corpus/guard/valid
printf '%s' '/opt/kq/bin/pointer\-digest --pointer-id 3; echo x' > corpus/guard/escape
printf '%s' 'P=pointer-digest; /opt/kq/bin/$P --pointer-id 3' > corpus/guard/var
printf '%s' '{"apiUrl":"http://127.0.0.1:8787","tokenFile":"/t","persona":"codex","dataDir":"/d"}' > corpus/config/seed
printf 'abcdef0123456789\n' > corpus/token/seed
for target in "${targets[@]}"; do
  log=$(mktemp)
  start=$(date +%s)
  cargo +nightly fuzz run "$target" "corpus/$target" -- -max_total_time="$secs" -max_len=70000 2>"$log" || { tail -40 "$log"; exit 1; }
  runs=$(grep -Eo 'Done [0-9]+ runs' "$log" | tail -1 | grep -Eo '[0-9]+')
  files=$(find "corpus/$target" -type f | wc -l)
  echo "$target: ${runs:-?} executions in $(( $(date +%s) - start ))s, corpus $files files, no crash"
  rm -f "$log"
done
