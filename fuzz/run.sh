#!/usr/bin/env bash
# Run every fuzz target (or the ones named) with cargo-fuzz on nightly, one
# at a time, seeded from the fixtures and fuzz/seeds/. Each target stops at
# RUNS executions (default: unbounded) or after SECONDS (default 60),
# whichever comes first. Prints executions (libFuzzer's
# stat::number_of_executed_units), seconds and corpus size per target; stops
# at the first crash (the input is kept in fuzz/artifacts/<target>/).
#
# Usage: fuzz/run.sh [SECONDS] [TARGET...]
# Environment: RUNS=10000000 (stop each target there), NICE=19 (priority),
#   SANITIZER=none|address (default none: the targets are safe Rust; debug
#   assertions and overflow checks stay on), FUZZ_TARGET_DIR (cargo target
#   dir, default fuzz/target), LOG=file (append the summary lines there), KEEP_GOING=1 (after a
#   crash go on with the next target; the exit status is still 1),
#   UNTIL=<epoch seconds> (share the time left until then among the targets
#   not yet run, so time a fast target does not use goes to the next ones).
# The corpus grows in fuzz/corpus/<target>/ (not in git; only fuzz/seeds/ is).
set -euo pipefail
cd "$(dirname "$0")"
secs=${1:-60}
shift || true
all=(guard hook_stdin config token manifest rendering latch_manifest tokens_ledger)
[ -x /usr/bin/time ] || { echo "/usr/bin/time missing (apt-get install time)" >&2; exit 2; }
command -v cargo-fuzz >/dev/null || { echo "cargo-fuzz missing: cargo +nightly install cargo-fuzz --locked" >&2; exit 2; }
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=("${all[@]}")
sanitizer=${SANITIZER:-none}
tdir=(); [ -n "${FUZZ_TARGET_DIR:-}" ] && tdir=(--target-dir "$FUZZ_TARGET_DIR")
runs=(); [ -n "${RUNS:-}" ] && runs=(-runs="$RUNS")
# Longest input per target: bounded by what the format can usefully hold, so
# the executions go into structure rather than into re-parsing 64 KiB.
max_len() {
  case $1 in
    token) echo 256 ;;
    guard) echo 512 ;;
    config) echo 1024 ;;
    hook_stdin) echo 2048 ;;
    rendering|tokens_ledger|manifest|latch_manifest) echo 4096 ;;
  esac
}
for t in "${all[@]}"; do mkdir -p "corpus/$t"; [ -d "seeds/$t" ] && cp seeds/"$t"/* "corpus/$t/"; done
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
# Build once, then run the built binaries (what `cargo fuzz run` does), so
# the seconds below are fuzzing only and an edit of the sources during a long
# campaign does not rebuild in the middle of it.
nice -n "${NICE:-19}" cargo +nightly fuzz build --sanitizer "$sanitizer" "${tdir[@]}"
bindir="${FUZZ_TARGET_DIR:-target}/$(rustc +nightly -vV | sed -n 's/^host: //p')/release"
left=${#targets[@]}
for target in "${targets[@]}"; do
  t_secs=$secs
  if [ -n "${UNTIL:-}" ]; then
    share=$(( (UNTIL - $(date +%s)) / left ))
    [ "$share" -lt "$t_secs" ] && t_secs=$share
    [ "$t_secs" -ge 1 ] || t_secs=1
  fi
  left=$((left - 1))
  log=$(mktemp)
  start=$(date +%s)
  mkdir -p "artifacts/$target"
  cpu=$(mktemp)
  if ! /usr/bin/time -f '%U %S' -o "$cpu" nice -n "${NICE:-19}" "$bindir/$target" -artifact_prefix="artifacts/$target/" "corpus/$target" \
      -max_total_time="$t_secs" -max_len="$(max_len "$target")" -print_final_stats=1 "${runs[@]}" 2>"$log"; then
    tail -40 "$log"
    echo "$target: CRASH after $(( $(date +%s) - start ))s (see fuzz/artifacts/$target/), $(date -u +%FT%TZ)" | tee -a "${LOG:-/dev/null}"
    rm -f "$log" "$cpu"
    [ -n "${KEEP_GOING:-}" ] || exit 1
    crashed=1
    continue
  fi
  execs=$(grep -Eo 'stat::number_of_executed_units: *[0-9]+' "$log" | grep -Eo '[0-9]+$' | tail -1)
  fsecs=$(grep -Eo 'Done [0-9]+ runs in [0-9]+ second' "$log" | grep -Eo '[0-9]+ second' | grep -Eo '[0-9]+' | tail -1)
  cpus=$(awk '{printf "%.1f", $1 + $2}' "$cpu"); rm -f "$cpu"
  files=$(find "corpus/$target" -type f | wc -l)
  bytes=$(du -sb "corpus/$target" | cut -f1)
  line="$target: ${execs:-?} executions in ${fsecs:-?}s of fuzzing ($(( $(date +%s) - start ))s wall, ${cpus}s CPU), corpus $files files ($bytes bytes), max_len $(max_len "$target"), sanitizer $sanitizer, 0 crashes, $(date -u +%FT%TZ)"
  echo "$line" | tee -a "${LOG:-/dev/null}"
  rm -f "$log"
done
[ -z "${crashed:-}" ]
