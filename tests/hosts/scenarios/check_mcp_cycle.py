#!/usr/bin/env python3
"""Checks of the mcp-cycle scenario (scenarios/mcp-cycle.sh: the whole cycle
through kijito-local's MCP tools on the real host). Usage: check_mcp_cycle.py OUT ROOT HOST HOOK_ROOT
(ROOT: the registered copy of the plugin root; HOOK_ROOT: the installed root its hook commands name)

Asserted, from the run's evidence (requests.jsonl: what the host sent the fake model;
summary.json; reports/ and qa-witness.jsonl copied by after-boots.sh; the store read afterwards
through kijito-local's own MCP server, store-after.jsonl; the published manifest):
- the host's MCP client made each curation call and the model saw each result: a recall answer,
  Created [A], Created [B], Corrected [A] by [C], Faded [B];
- the agent's shell tool call published the manifest naming C current (SHA-256 of the corrected
  content) and A retired, superseded by C; the verifiers' reports are green for that manifest's
  digest (the boots read the anchors the agent curated), from two distinct witnessed subagents;
- the main agent's qa-gate record printed the ready signal;
- the compaction is re-entered ATTESTED, delivered to the resumed model's first request exactly
  once (scenarios/check.py attested, the attested-manual checks), and it says the boots were
  witnessed (bootsWitnessed: true);
- the store afterwards: A retired and scarred (corrected by C), B faded, C a correction holding the
  corrected text.
"""
import hashlib
import json
import os
import subprocess
import sys

sys.dont_write_bytecode = True
here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "lib"))
from he2e.common import strings_in  # noqa: E402
from he2e.verdict import exit_status, expect, failures, jsonl  # noqa: E402

WITNESSED = "The PreToolUse hook witnessed both cold boots, run by two distinct subagents (bootsWitnessed: true)."


def main(out, root, host, hook_root):
    with open(os.path.join(out, "summary.json")) as f:
        summary = json.load(f)
    expect(summary.get("ok"), "host-e2e run completed (%s)" % "; ".join(summary.get("errors") or ["no errors"]))
    ids = json.load(open(os.path.join(out, "cycle-ids.json")))
    a, b, c = ids["A"], ids["B"], ids["C"]
    seen = open(os.path.join(out, "requests.jsonl"), encoding="utf-8").read()
    for answer in ["Created [%d]" % a, "Created [%d]" % b, "Corrected [%d] by [%d]" % (a, c), "Faded [%d]" % b]:
        expect(answer in seen, "the model saw the MCP tool result %r" % answer)
    expect("No memories match" in seen or "host e2e anchor" in seen, "the model saw the recall's answer")

    # ---- the publication
    manifest = json.load(open(os.path.join(out, "cycle-manifest.json")))
    corrected = "Decision: the parser renames the AST nodes (the old names are gone since 0.4)."
    expect(manifest.get("anchors") == [
        {"id": c, "status": "current", "sha256": hashlib.sha256(corrected.encode()).hexdigest(), "purpose": "the parser decision, as corrected"},
        {"id": a, "status": "retired", "supersededBy": c, "purpose": "the parser decision before its correction"}],
       "the published manifest names C=[%d] current and A=[%d] retired, superseded by C" % (c, a))
    digest = hashlib.sha256(json.dumps(manifest, separators=(",", ":"), ensure_ascii=False).encode()).hexdigest()
    expect(("published pointer %d: digest " % manifest["pointerId"]) in seen and ("-> %s" % digest) in seen,
       "the agent's own tool call published it (pointer-publish; the model saw digest %s)" % digest[:12])

    reports = []
    for name in sorted(os.listdir(os.path.join(out, "reports"))) if os.path.isdir(os.path.join(out, "reports")) else []:
        reports.append(json.load(open(os.path.join(out, "reports", name))))
    expect(len(reports) == 2 and all(r.get("verdict") == "green" and r.get("pointerDigest") == digest for r in reports)
       and reports[0].get("snapshotDigest") == reports[1].get("snapshotDigest"),
       "two green cold-boot reports of the published manifest (digest %s), one snapshot digest" % digest[:12])
    wit = jsonl(os.path.join(out, "qa-witness.jsonl"))
    agents = [x.get("agentId") for x in wit]
    expect(len(wit) == 2 and None not in agents and len(set(agents)) == 2,
       "the PreToolUse hook witnessed both boots, two distinct subagents: %s" % agents)
    expect('"type":"kijito.compaction.ready"' in seen.replace('\\"', '"'), "qa-gate record printed the ready signal to the model")

    # ---- compaction and the ATTESTED re-entry (the attested-manual checks)
    if len(reports) == 2:
        with open(os.path.join(out, "expected.json"), "w") as f:
            json.dump({"pointerId": manifest["pointerId"], "lockMessageId": manifest["lock"]["messageId"],
                       "pointerDigest": digest, "snapshotDigest": reports[0]["snapshotDigest"]}, f)
        # the hooks run from the installed root (the copy's hook commands are the install's absolute paths)
        r = subprocess.run([sys.executable, os.path.join(here, "check.py"), "attested", out, hook_root])
        expect(r.returncode == 0, "scenarios/check.py attested: the ATTESTED re-entry reached the resumed model once")
        comp = [x["seq"] for x in summary.get("requests", []) if x.get("kind") == "compaction"]
        after = [x for x in jsonl(os.path.join(out, "requests.jsonl")) if comp and x.get("seq", 0) > comp[0]]
        expect(any(WITNESSED in t for x in after[:1] for t in strings_in(x.get("body"))),
           "the first request after the compaction carries the re-entry saying the boots were witnessed: %r" % WITNESSED)

    # ---- the store afterwards, through kijito-local's MCP server
    text = {m["id"]: m["result"]["content"][0]["text"] for m in jsonl(os.path.join(out, "store-after.jsonl")) if m.get("id") in (2, 3, 4)}
    expect("\nLifecycle: retired\n" in text.get(2, "") and text.get(2, "").endswith("Scarred: yes (corrected by [%d]; eroded)" % c),
       "A=[%d] is retired and scarred, corrected by [%d]" % (a, c))
    expect(" · faded\n" in text.get(3, ""), "B=[%d] is faded" % b)
    expect("\nSource: correction\n" in text.get(4, "") and "renames the AST nodes" in text.get(4, ""), "C=[%d] is the correction" % c)


if __name__ == "__main__":
    out, root, host, hook_root = sys.argv[1:5]
    try:
        main(out, root, host, hook_root)
    except (OSError, ValueError, KeyError) as e:
        expect(False, "evidence missing or malformed: %r" % e)
    print("  mcp-cycle %s: %s" % (host, "FAIL (%d)" % len(failures) if failures else "all checks passed"))
    sys.exit(exit_status())
