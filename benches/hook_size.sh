#!/usr/bin/env bash
# hook_size.sh BIN_DIR: the size gate of the hook binaries.
# The hosts run them on every tool call and prompt; each must be at most
# 2,000,000 B (docs/architecture.md, Binary sizes). Prints every size and
# exits 1 naming each binary over the bound or missing (a gate that finds
# nothing to measure does not pass). .ci/run runs it on the installed
# bin/ of each host root; tests/it/hook_size.rs tests both branches.
set -euo pipefail
bound=2000000
# kijito-hooks' [[bin]] targets (tests/it/hook_size.rs keeps this list equal to them).
hooks=(precompact postcompact session-hook prompt-hook pretool-hook)
if [ "$#" -ne 1 ] || [ ! -d "$1" ]; then
  echo "usage: hook_size.sh BIN_DIR (the directory holding ${hooks[*]})" >&2
  exit 2
fi
dir=$1
failed=()
echo "hook binary sizes in $dir (bound $bound B each):"
for h in "${hooks[@]}"; do
  f="$dir/$h"
  if [ ! -f "$f" ]; then
    echo "  $h: missing"
    failed+=("$h is missing")
    continue
  fi
  size=$(wc -c <"$f")
  size=$((size + 0))
  if [ "$size" -gt "$bound" ]; then
    echo "  $h: $size B OVER"
    failed+=("$h is $size B, over the $bound B bound")
  else
    echo "  $h: $size B ok ($((bound - size)) B to spare)"
  fi
done
if [ "${#failed[@]}" -gt 0 ]; then
  for m in "${failed[@]}"; do
    echo "hook_size: FAILED: $m (docs/architecture.md, Binary sizes)" >&2
  done
  exit 1
fi
echo "hook_size: ok"
