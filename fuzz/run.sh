#!/usr/bin/env bash
# Run each fuzz target for a bounded time (default 60 s each) with cargo-fuzz
# on nightly, seeded from the fixture corpora. Prints the executions per target.
# Usage: fuzz/run.sh [SECONDS]
set -euo pipefail
cd "$(dirname "$0")"
secs=${1:-60}
command -v cargo-fuzz >/dev/null || { echo "cargo-fuzz missing: cargo install cargo-fuzz --locked" >&2; exit 2; }
mkdir -p corpus/manifest corpus/rendering
cp ../fixtures/pointers/*.json corpus/manifest/ 2>/dev/null || true
cp ../fixtures/renderings/*.txt corpus/rendering/ 2>/dev/null || true
for target in manifest rendering; do
  log=$(mktemp)
  cargo +nightly fuzz run "$target" "corpus/$target" -- -max_total_time="$secs" -max_len=70000 2>"$log" || { tail -40 "$log"; exit 1; }
  runs=$(grep -Eo 'Done [0-9]+ runs' "$log" | tail -1 | grep -Eo '[0-9]+')
  echo "$target: ${runs:-?} executions in ${secs}s, no crash"
  rm -f "$log"
done
