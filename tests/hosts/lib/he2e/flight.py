"""kijito-qa: the flight recorder after a real-host run (docs/protocol.md §13, docs/testing.md,
*Real-host end-to-end tests*). The installed `kijito-report` and `kijito-local view` of a prefix,
against a copy of the data dir the run's hooks wrote (scenarios/journal-copy.sh):

- `kijito-report --last` prints the compactions ATTESTED/UNATTESTED with each reason, and
  `--json` gives the same counts;
- the viewer's session page, loaded in a headless Chromium (fresh profile; the secret URL sets the
  HttpOnly cookie), shows the same counts and reasons in its DOM;
- `kijito-report verify` says the chain is intact, and after one byte of a copy of the journal is
  flipped, names that line.

The viewer and the browser run together in a loopback-only network namespace (common.netns_prefix:
`flight.py __inner JOB` inside it), with HOME and the XDG dirs in a scratch dir, so nothing reads
the caller's config and nothing but 127.0.0.1 is reachable.

check(root, data, want, ok, fail): `want` = {"attested": A, "unattested": U, "reasons": {reason: n}};
`ok(msg)` / `fail(msg)` are the calling check's (scenarios/check.py). Returns the figures."""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from he2e import common  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
BROWSER_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]
COMPACTIONS = re.compile(r'<dd id="compactions" data-total="(\d+)" data-attested="(\d+)" data-unattested="(\d+)">'
                         r'\d+: <span class="badge attested">ATTESTED (\d+)</span> '
                         r'<span class="badge unattested">UNATTESTED (\d+)</span><ul class="reasons">(.*?)</ul></dd>')
REASON = re.compile(r'<li class="reason" data-reason="([^"]*)">[^<]*?\u00d7(\d+)</li>')
ROW = re.compile(r'<tr class="ev" data-kind="(claim|delivery|precompact)" data-seq="\d+">(?:<td>[^<]*</td>){2}'
                 r'<td><span class="badge (attested|unattested)">')


class Failed(Exception):
    pass


def run(argv, env, timeout=60):
    p = subprocess.run(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=timeout)
    return p.returncode, p.stdout, p.stderr


def scratch_env(tmp):
    env = common.base_env(tmp, {})
    return env


def report_checks(bin_dir, data, want, env, say):
    """kijito-report --last (text and --json) and verify; the session id."""
    argv = [os.path.join(bin_dir, "kijito-report"), "--last", "--data-dir", data]
    rc, text, err = run(argv, env)
    if rc != 0:
        raise Failed("kijito-report --last exited %d: %s" % (rc, err.strip()[:400]))
    head = text.split("\n\n", 1)[0]
    for line in head.splitlines():
        say("    | " + line)
    reasons = ", ".join("%s x%d" % (k, v) for k, v in sorted(want["reasons"].items()))
    line = "compactions %d: ATTESTED %d / UNATTESTED %d%s" % (
        want["attested"] + want["unattested"], want["attested"], want["unattested"], " (%s)" % reasons if reasons else "")
    if line not in head.splitlines():
        raise Failed("kijito-report --last does not print %r" % line)
    if not any(l.startswith("journal: chain intact (") for l in head.splitlines()):
        raise Failed("kijito-report --last does not say the chain is intact")
    say("ok: kijito-report --last prints %r and the chain intact" % line)
    rc, out, err = run(argv + ["--json"], env)
    if rc != 0:
        raise Failed("kijito-report --last --json exited %d: %s" % (rc, err.strip()[:400]))
    s = json.loads(out)
    c = s.get("compactions") or {}
    got = {"attested": c.get("attested"), "unattested": c.get("unattested"), "reasons": c.get("unattested_reasons")}
    if s.get("schema") != "kijito-report/1" or got != want or c.get("total") != want["attested"] + want["unattested"]:
        raise Failed("kijito-report --last --json: %s, want %s" % (json.dumps(dict(got, schema=s.get("schema"))), json.dumps(want)))
    say("ok: kijito-report --last --json gives the same counts: %s (session %s, %d events)"
        % (json.dumps(got), s["session"], s["events_total"]))
    session = s["session"]
    rc, out, err = run([os.path.join(bin_dir, "kijito-report"), "verify", "--data-dir", data], env)
    if rc != 0 or out.strip() != "session %s: chain intact (%d lines)" % (session, s["chain"]["lines"]):
        raise Failed("kijito-report verify exited %d: %s %s" % (rc, out.strip(), err.strip()[:300]))
    say("ok: kijito-report verify: %s" % out.strip())
    return session, s


def flip_checks(bin_dir, data, session, tmp, env, say):
    """One byte of a copy of the journal flipped: verify names its line."""
    copy = os.path.join(tmp, "flipped-data")
    shutil.copytree(data, copy, symlinks=True)
    path = os.path.join(copy, "journal", session + ".jsonl")
    with open(path, "rb") as f:
        lines = f.read().split(b"\n")
    n = (len(lines) - 1) // 2 + 1  # a middle line (1-based): it has a successor
    line = lines[n - 1]
    at = line.index(b'"ts_ms":') + len(b'"ts_ms":')
    old = line[at:at + 1]
    new = b"1" if old != b"1" else b"2"
    lines[n - 1] = line[:at] + new + line[at + 1:]
    with open(path, "wb") as f:
        f.write(b"\n".join(lines))
    argv = [os.path.join(bin_dir, "kijito-report"), "verify", "--session", session, "--data-dir", copy]
    rc, out, err = run(argv, env)
    want = "session %s: chain BROKEN at line %d of %s (" % (session, n, path)
    if rc != 1 or not out.startswith(want) or "report_chain_broken" not in err:
        raise Failed("after flipping byte %d of line %d (%r -> %r), kijito-report verify exited %d: %s %s"
                     % (at, n, old, new, rc, out.strip(), err.strip()[:300]))
    rc, out, _ = run(argv + ["--json"], env)
    v = json.loads(out)
    if rc != 1 or v["ok"] is not False or v["break"]["line"] != n:
        raise Failed("verify --json on the flipped copy: exit %d, %s" % (rc, out.strip()))
    say("ok: one byte of line %d of %d flipped in a copy (ts_ms digit %r -> %r): kijito-report verify exits 1 "
        "and names line %d (%s)" % (n, len(lines) - 1, old.decode(), new.decode(), n, v["break"]["why"]))


def viewer_checks(bin_dir, data, session, want, tmp, env, say):
    """The session page in a headless Chromium: the DOM's counts and reasons."""
    view = subprocess.Popen([os.path.join(bin_dir, "kijito-local"), "view", "--listen", "127.0.0.1:0", "--data-dir", data],
                            env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = view.stdout.readline().strip()
        m = re.fullmatch(r"kijito-local view on (http://127\.0\.0\.1:\d+)/\?k=([0-9a-f]+)", line)
        if not m:
            raise Failed("kijito-local view printed %r (stderr %s)" % (line, view.stderr.read()[:300] if view.poll() is not None else ""))
        base, secret = m.groups()
        profile = tempfile.mkdtemp(prefix="chromium-profile.", dir=tmp)
        t0 = time.time()
        rc, dom, _ = run([CHROMIUM, *BROWSER_FLAGS, "--user-data-dir=" + profile, "--dump-dom",
                          "%s/s/%s?k=%s" % (base, session, secret)], env, timeout=90)
        took = time.time() - t0
        if rc != 0 or "<html" not in dom:
            raise Failed("chromium --dump-dom of the session page exited %d: %r" % (rc, dom[:300]))
        m = COMPACTIONS.search(dom)
        if not m:
            raise Failed("the session page's DOM has no compactions summary: %r" % dom[:1500])
        total, att, unatt, att_badge, unatt_badge = (int(x) for x in m.groups()[:5])
        reasons = {r: int(k) for r, k in REASON.findall(m.group(6))}
        n = want["attested"] + want["unattested"]
        if (total, att, unatt, att_badge, unatt_badge) != (n, want["attested"], want["unattested"], want["attested"],
                                                           want["unattested"]) or reasons != want["reasons"]:
            raise Failed("the session page's DOM says %d compactions, data-attested %d, data-unattested %d, badges "
                         "ATTESTED %d / UNATTESTED %d, reasons %s; want %s"
                         % (total, att, unatt, att_badge, unatt_badge, reasons, json.dumps(want)))
        rows = {}
        for kind, badge in ROW.findall(dom):
            rows.setdefault(kind, {"attested": 0, "unattested": 0})[badge] += 1
        claims = rows.get("claim") or {}
        if (claims.get("attested"), claims.get("unattested")) != (want["attested"], want["unattested"]):
            raise Failed("the timeline's claim rows carry %s badges, want %d attested and %d unattested"
                         % (json.dumps(claims), want["attested"], want["unattested"]))
        if "<span class=\"badge intact\">chain intact</span>" not in dom:
            raise Failed("the session page does not show the chain intact")
        say("ok: the viewer's session page in headless Chromium (%.1fs; the secret URL, then the cookie): the DOM's "
            "compactions data-total=%d data-attested=%d data-unattested=%d, badges ATTESTED %d / UNATTESTED %d, "
            "reasons %s, timeline badges %s, chain intact" % (took, total, att, unatt, att_badge, unatt_badge,
                                                               json.dumps(reasons), json.dumps(rows, sort_keys=True)))
        if "k=" + secret in dom or secret in dom:
            raise Failed("the page's DOM holds the launch secret")
    finally:
        view.kill()
        view.wait()


def inner(job_file):
    """In the namespace: every check; one JSON result line last."""
    with open(job_file, encoding="utf-8") as f:
        job = json.load(f)
    common.enter_loopback_only()
    tmp = job["tmp"]
    env = scratch_env(tmp)
    lines = []

    def say(msg):
        print("  " + msg, flush=True)
        lines.append(msg)
    try:
        session, _ = report_checks(job["bin"], job["data"], job["want"], env, say)
        flip_checks(job["bin"], job["data"], session, tmp, env, say)
        if not os.access(CHROMIUM, os.X_OK):
            raise Failed("%s is not installed (the real-host check needs it: .ci/run installs it)" % CHROMIUM)
        viewer_checks(job["bin"], job["data"], session, job["want"], tmp, env, say)
    except (Failed, subprocess.TimeoutExpired, OSError, ValueError, KeyError) as e:
        print("  FAIL: %s" % e, flush=True)
        return 1
    return 0


def check(root, data, want, ok, fail):
    """Run the checks in a loopback-only namespace; relay their lines through ok/fail."""
    tmp = tempfile.mkdtemp(prefix="kijito-flight.")
    try:
        job = os.path.join(tmp, "job.json")
        common.write_json(job, {"bin": os.path.join(root, "bin"), "data": data, "want": want, "tmp": tmp})
        try:
            prefix = common.netns_prefix()
        except common.Refuse as e:
            fail("flight recorder: %s" % e)
        p = subprocess.run(prefix + [sys.executable, os.path.abspath(__file__), "__inner", job],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300)
        for line in p.stdout.splitlines():
            if line.startswith("  ok: "):
                ok("flight recorder: " + line[len("  ok: "):])
            elif line.startswith("  FAIL: "):
                fail("flight recorder: " + line[len("  FAIL: "):])
            else:
                print(line)
        if p.returncode != 0:
            fail("flight recorder: the checks exited %d" % p.returncode)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__" and sys.argv[1:2] == ["__inner"]:
    sys.exit(inner(sys.argv[2]))
