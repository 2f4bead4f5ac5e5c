#!/usr/bin/env python3
"""The Claude Code compaction summary and summaryCarried (after a host-e2e claude run).

check_summary.py true|false OUT_DIR ROOT
The run: manual-compact with a seeded QA pass (seed-pass.sh), a fake summariser that keeps the
`kijito-*` lines of its instructions (--summary-echo; with --summary-drop one of them is left out),
and summary-after.sh copying the claim record to OUT_DIR/claim.json. Checks: everything
`check.py attested` checks (one ATTESTED re-entry, the summariser request carries the values);
the summary Claude Code handed PostCompact is the fake one; the claim record (schemaVersion 2) has
summaryCarried true (all four values kept) or false (one dropped) with the matching summaryCheck;
the order PreCompact -> SessionStart(compact) -> PostCompact held."""
import json
import os
import subprocess
import sys

want, out, root = sys.argv[1], sys.argv[2], sys.argv[3]
here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "lib"))
from he2e.common import strings_in  # noqa: E402
from he2e.verdict import fail, jsonl, ok  # noqa: E402

r = subprocess.run([sys.executable, os.path.join(here, "check.py"), "attested", out, root])
if r.returncode != 0:
    sys.exit(r.returncode)
s = json.load(open(os.path.join(out, "summary.json")))
seq = s.get("event_sequence") or []
compact = [e for e in seq if e in ("PreCompact(manual)", "SessionStart(compact)", "PostCompact(manual)")]
if compact[:3] != ["PreCompact(manual)", "SessionStart(compact)", "PostCompact(manual)"]:
    fail("hook order around the compaction: %s" % compact)
ok("order PreCompact -> SessionStart(compact) -> PostCompact (SessionStart claims before the summary is known)")
expected = json.load(open(os.path.join(out, "expected.json")))
try:
    claim = json.load(open(os.path.join(out, "claim.json")))
except (OSError, ValueError) as e:
    fail("no claim record copied by summary-after.sh: %s" % e)
if claim.get("schemaVersion") != 2 or claim.get("attested") is not True:
    fail("claim record is not an attested schemaVersion 2 record: %s" % claim)
for k in ("pointerId", "pointerDigest", "snapshotDigest"):
    if claim.get(k) != expected.get(k):
        fail("claim record %s %r != expected %r" % (k, claim.get(k), expected.get(k)))
carried = want == "true"
pair = (claim.get("summaryCarried"), claim.get("summaryCheck"))
if pair != (carried, "carried" if carried else "values_missing"):
    fail("claim record summaryCarried/summaryCheck = %s, expected %s" % (pair, carried))
ok("claim record: summaryCarried %s (%s), pointer %s" % (json.dumps(pair[0]), pair[1], claim["pointerId"]))
# The summary text the host kept (a later request carries it) holds the values, or lacks one.
reqs = jsonl(os.path.join(out, "requests.jsonl"))
kinds = {r["seq"]: r["kind"] for r in s["requests"]}
comp = [r["seq"] for r in s["requests"] if r["kind"] == "compaction"]
line = "kijito-snapshot-digest: %s" % expected["snapshotDigest"]
after = [r for r in reqs if r["seq"] > comp[0] and kinds.get(r["seq"]) == "turn"]
pending = [t for t in strings_in(after[0].get("body")) if "kijito-qa re-entry after compaction: ATTESTED" in t] if after else []
if not any("summaryCarried: pending" in t for t in pending):
    fail("the re-entry text in the first request after compaction does not say summaryCarried: pending")
ok("the re-entry text (delivered at SessionStart(compact), before PostCompact) says summaryCarried: pending")
summary_texts = [t for r in after for t in strings_in(r.get("body")) if "FAKE-COMPACT-SUMMARY" in t]
if not summary_texts:
    fail("no request after the compaction carries the compaction summary")
has = any("kijito-pointer-id: %s" % expected["pointerId"] in t for t in summary_texts)
if not has:
    fail("the resumed model's summary lacks the pointer id line")
has_sd = any(line in t for t in summary_texts)
if has_sd != carried:
    fail("the resumed model's summary %s the snapshot digest line, yet summaryCarried is %s" % ("has" if has_sd else "lacks", carried))
ok("the resumed model's summary %s the snapshot digest line, as the claim record says" % ("keeps" if has_sd else "lacks"))
