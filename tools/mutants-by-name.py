#!/usr/bin/env python3
"""Score a cargo-mutants list by mutant name, from runs on other commits.

usage: tools/mutants-by-name.py FINAL LIST [COMMIT:OUTDIR ...]

FINAL is the commit whose mutants are scored, LIST its `cargo mutants
--list` output. Each COMMIT:OUTDIR is a run's `-o` directory and the commit
it ran on; later ones override earlier ones. A mutant of FINAL takes a
run's outcome when its line is unchanged between that commit and FINAL
(lines matched by difflib) and the run tested the same name at the old line.
Prints the counts and the score ((caught + timeouts) / tested viable) and
writes the names still missed and not yet tested to
$TMPDIR/mutants-by-name.{missed,untested}.txt, and both as cargo-mutants
`--re` arguments (exact names, NUL-separated, each regex under the kernel's
128 KiB bound for one argument) to $TMPDIR/mutants-by-name.retest.args, to
run them on FINAL:

    xargs -0 -x -s 1000000 -a "$TMPDIR/mutants-by-name.retest.args" cargo mutants -p CRATE -f FILE...

Run it in the repository.
See docs/mutants.md, "Counting by name across commits".
"""
import difflib
import os
import re
import subprocess
import sys

NAME = re.compile(r"^(\S+?):(\d+):(\d+): (.*)$")


def lines(commit, path):
    # a bin's mutants are named `<package dir>/../../bins/x.rs`: git wants it normalised
    return subprocess.check_output(["git", "show", f"{commit}:{os.path.normpath(path)}"], text=True).split("\n")


def line_map(old, final, paths):
    """FINAL line -> OLD line, for every line unchanged between them."""
    out = {}
    for p in paths:
        m = {}
        ops = difflib.SequenceMatcher(None, lines(old, p), lines(final, p), autojunk=False).get_opcodes()
        for tag, i1, i2, j1, _ in ops:
            if tag == "equal":
                m.update({j1 + k + 1: i1 + k + 1 for k in range(i2 - i1)})
        out[p] = m
    return out


def re_chunks(names, limit=100_000):
    """`names` as exact-match regexes joined by `|`, in chunks under `limit` bytes."""
    chunks, cur = [], []
    for n in names:
        e = "".join("\\" + c if c in "\\.+*?()|[]{}^$" else c for c in n)
        if cur and sum(len(x) + 1 for x in cur) + len(e) > limit:
            chunks.append("|".join(cur))
            cur = []
        cur.append(e)
    return chunks + (["|".join(cur)] if cur else [])


def main():
    final, listing, *runs = sys.argv[1:]
    names = [n.strip() for n in open(listing) if n.strip()]
    paths = sorted({NAME.match(n).group(1) for n in names})
    outcome = {}
    for run in runs:
        commit, outdir = run.split(":", 1)
        got = {}
        for kind in ("caught", "missed", "timeout", "unviable"):
            f = os.path.join(outdir, "mutants.out", f"{kind}.txt")
            if os.path.exists(f):
                got.update({n.strip(): kind for n in open(f) if n.strip()})
        lm = line_map(commit, final, paths)
        for n in names:
            path, line, col, what = NAME.match(n).groups()
            old = lm[path].get(int(line))
            if old is not None and f"{path}:{old}:{col}: {what}" in got:
                outcome[n] = got[f"{path}:{old}:{col}: {what}"]
    counts = {}
    for n in names:
        k = outcome.get(n, "untested")
        counts[k] = counts.get(k, 0) + 1
    for kind in ("missed", "untested"):
        with open(os.path.join(os.environ.get("TMPDIR", "/tmp"), f"mutants-by-name.{kind}.txt"), "w") as f:
            f.writelines(n + "\n" for n in names if outcome.get(n, "untested") == kind)
    retest = [n for n in names if outcome.get(n, "untested") in ("missed", "untested")]
    with open(os.path.join(os.environ.get("TMPDIR", "/tmp"), "mutants-by-name.retest.args"), "w") as f:
        for chunk in re_chunks(retest):
            f.write(f"--re\0{chunk}\0")
    tested = len(names) - counts.get("untested", 0) - counts.get("unviable", 0)
    detected = counts.get("caught", 0) + counts.get("timeout", 0)
    print(" ".join(f"{k}={v}" for k, v in sorted(counts.items())), f"of {len(names)}")
    print(f"tested viable {tested}, caught or timed out {detected}: {100 * detected / max(tested, 1):.1f} %")


if __name__ == "__main__":
    main()
