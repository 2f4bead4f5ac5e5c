#!/usr/bin/env bash
# kijito-qa: self-test of `host-e2e tui-claude` / `tui-codex` (lib/he2e/tui.py). On each TUI:
# prompt "hello" -> Stop hook -> --then tui-type-compact.sh (types /compact + Enter through the
# tmux shim) -> PostCompact -> prompt "after compact"; then asserts from summary.json: one
# compaction request at the fake server, SessionStart(compact) fired, the pane received exactly
# `send-keys -l /compact` and one `send-keys Enter` from the command, and every hook saw the pane.
# tui-selftest.sh [OUT_BASE] [claude|codex|both]   (extra host-e2e args via TUI_SELFTEST_ARGS)
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
he2e="$here/../host-e2e"
base=${1:-$(mktemp -d -t tui-selftest.XXXXXX)}
hosts=${2:-both}; [ "$hosts" = both ] && hosts="claude codex"
"$he2e" install >/dev/null
fail=0
for h in $hosts; do
  out="$base/$h"; rm -rf "$out"
  if [ "$h" = claude ]; then hk=(--settings-hooks "$here/hooks.json"); else hk=(--hooks "$here/hooks.json"); fi
  # shellcheck disable=SC2086
  "$he2e" "tui-$h" "${hk[@]}" --out "$out" --prompt hello --then "$here/tui-type-compact.sh" \
    --wait-compact 60 --after-prompt "after compact" --timeout 240 ${TUI_SELFTEST_ARGS:-} || true
  python3 - "$out/summary.json" "$h" <<'PY' || fail=1
import json, sys
s = json.load(open(sys.argv[1])); host = sys.argv[2]; pane = s["pane"]["id"]
errs = []
if not s["ok"]:
    errs.append("run failed: %s" % s["errors"])
if s["compactions"] != 1:
    errs.append("compaction requests at the fake server: %d, want 1" % s["compactions"])
if "SessionStart(compact)" not in s["event_sequence"]:
    errs.append("no SessionStart(compact): %s" % s["event_sequence"])
if "PostCompact(manual)" not in s["event_sequence"]:
    errs.append("no PostCompact(manual): %s" % s["event_sequence"])
then_keys = [k["argv"] for k in s["keys_to_pane"] if k["caller"] == "then"]
if then_keys != [["send-keys", "-t", pane, "-l", "/compact"], ["send-keys", "-t", pane, "Enter"]]:
    errs.append("keys from the command: %s" % then_keys)
others = [k for k in s["keys_to_pane"] if k["caller"] not in ("then", "harness")]
if others:
    errs.append("keys from someone else: %s" % others)
bad = [e["label"] for e in s["hook_events"] if e["TMUX_PANE"] != pane]
if bad:
    errs.append("hooks without TMUX_PANE=%s: %s" % (pane, bad))
print("tui-selftest %s: %s; events %s; Enter->PostCompact %ss" % (
    host, "FAIL " + "; ".join(errs) if errs else "ok", " ".join(s["event_sequence"]),
    s.get("enter_to_post_compact_s")))
sys.exit(1 if errs else 0)
PY
done
echo "tui-selftest: results in $base"
exit $fail
