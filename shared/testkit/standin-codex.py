#!/usr/bin/env python3
"""Stand-in for the `codex` executable in the tests and benches of the Codex adapter (stdlib only).

The one stand-in of the workspace (docs/testing.md): the root package's tests and benches and the
kijito-compact-codex crate's tests run it, through kijito_testkit::codex.

standin-codex.py app-server
    A JSON-lines app-server on stdin/stdout with the messages the adapter watches, as measured on
    Codex 0.169 (docs/adapters.md, Codex app-server adapter): thread/start (answer, thread/started),
    turn/start (answer, turn/started), thread/compact/start (answer {}, a compaction turn with a
    contextCompaction item/started; a running turn is interrupted first). A turn/start or
    thread/compact/start naming a thread it never started is refused (thread not found); a
    turn/start during the compaction turn is refused with ActiveTurnNotSteerable, as the host does.
    $STANDIN_DIR/compact-mode, read at each thread/compact/start, makes it `refuse` (an error
    answer) or `silent` (no answer at all).
    Turns end on their own or when the test says so:
      STANDIN_TURN_MS=N      a user turn ends (turn/completed) N ms after it started, and reports
                             its token usage (thread/tokenUsage/updated) when it starts;
      STANDIN_COMPACT_MS=N   a compaction ends (item/completed, turn/completed) N ms after it started.
    Unset, the test drives it through requests on the adapter's client connection:
      test/endTurn {threadId}                   turn/completed (completed) of the running turn
      test/finishCompaction {threadId, status, item}
                                                item/completed (when item) and turn/completed (status)
      test/burst {count, size}                  count notifications of size bytes, then the file burst-done
      test/answerLater {ms}                     the answer ms later
    Any other request is answered {}. Every message is logged to $STANDIN_DIR/server.jsonl with a
    monotonic time; its KIJITO_* and PLUGIN_DATA environment goes to $STANDIN_DIR/env.json.
    STANDIN_PRELUDE=N: before reading anything, N notifications {"method":"prelude","params":{"n":i}},
    three of 40 KiB (more than a pipe holds, so the adapter has read the numbered ones when the
    writes return), then the file prelude-done.
    At the end of stdin: the pending answers go out (a turn still running is not ended), then 0.3 s
    later the file exited, then exit 0; with STANDIN_ON_EOF=linger it starts `sleep 120` in its
    process group at start (pid in grandchild.pid) and never exits on its own (at most 120 s, or
    until orphaned).
standin-codex.py --remote unix://SOCK ARGS...
    The TUI stand-in: its argv (and $KIJITO_COMPACT_ADAPTER_ID) to $STANDIN_DIR/tui.json, then it
    waits (at most 120 s) for $STANDIN_DIR/tui-exit to hold a number and exits with it (124 when
    orphaned first)."""
import json
import os
import selectors
import subprocess
import sys
import time

DIR = os.environ["STANDIN_DIR"]


def mark(name, text=""):
    with open(os.path.join(DIR, name + ".tmp"), "w") as f:
        f.write(text)
    os.rename(os.path.join(DIR, name + ".tmp"), os.path.join(DIR, name))


def ms_env(name):
    v = os.environ.get(name)
    return None if v is None else int(v) / 1000.0


def tui():
    mark("tui.json", json.dumps({"argv": sys.argv[1:], "env_adapter": os.environ.get("KIJITO_COMPACT_ADAPTER_ID")}))
    end, parent = time.time() + 120, os.getppid()
    path = os.path.join(DIR, "tui-exit")
    while time.time() < end and os.getppid() == parent:  # not once orphaned
        text = open(path).read().strip() if os.path.exists(path) else ""
        if text:  # an empty file is one still being written: wait on
            sys.exit(int(text))
        time.sleep(0.02)
    sys.exit(124)


class Server:
    def __init__(self):
        self.log = open(os.path.join(DIR, "server.jsonl"), "a", buffering=1)
        self.turn_s, self.compact_s = ms_env("STANDIN_TURN_MS"), ms_env("STANDIN_COMPACT_MS")
        self.threads, self.n = [], 0
        # (due, fn, owed): owed entries (late answers) still go out at the end of stdin.
        self.timers = []
        self.active = {}  # thread -> (turn id, kind, item)

    def rec(self, d, m):
        self.log.write(json.dumps({"t": time.monotonic(), "dir": d, "msg": m}) + "\n")

    def send(self, m):
        self.rec("out", m)
        sys.stdout.write(json.dumps(m, separators=(",", ":")) + "\n")
        sys.stdout.flush()

    def later(self, dt, fn, owed=False):
        self.timers.append((time.monotonic() + dt, fn, owed))
        self.timers.sort(key=lambda x: x[0])

    def new_id(self, p):
        self.n += 1
        return "%s-%d" % (p, self.n)

    def end_turn(self, t, turn, status):
        if self.active.get(t, (None,))[0] != turn:
            return  # already ended (or interrupted)
        del self.active[t]
        self.send({"method": "thread/status/changed", "params": {"threadId": t, "status": {"type": "idle"}}})
        self.send({"method": "turn/completed", "params": {"threadId": t, "turn": {"id": turn, "status": status, "items": []}}})

    def finish_compaction(self, t, turn, status, with_item):
        if self.active.get(t, (None,))[0] != turn:
            return
        if with_item:
            item = self.active[t][2]
            self.send({"method": "item/completed", "params": {"threadId": t, "turnId": turn, "item": item}})
        self.end_turn(t, turn, status)

    def handle(self, m):
        self.rec("in", m)
        meth, mid, p = m.get("method"), m.get("id"), m.get("params") or {}
        if meth is None or mid is None:
            return  # a client's answer, or a notification
        t = p.get("threadId")
        if meth in ("turn/start", "thread/compact/start") and t not in self.threads:
            return self.send({"id": mid, "error": {"code": -32600, "message": "thread not found: %s" % t}})
        if meth == "thread/start":
            t = "019a0000-0000-7000-8000-%012d" % (len(self.threads) + 1)
            self.threads.append(t)
            self.send({"id": mid, "result": {"thread": {"id": t, "status": {"type": "idle"}}}})
            self.send({"method": "thread/started", "params": {"thread": {"id": t}}})
        elif meth == "turn/start":
            if self.active.get(t, (None, None))[1] == "compact":
                return self.send({"id": mid, "error": {"code": -32603, "message": "failed to submit turn input: ActiveTurnNotSteerable { turn_kind: Compact }"}})
            turn = self.new_id("turn")
            self.active[t] = (turn, "user", None)
            self.send({"id": mid, "result": {"turn": {"id": turn, "status": "inProgress", "items": []}}})
            self.send({"method": "turn/started", "params": {"threadId": t, "turn": {"id": turn, "status": "inProgress"}}})
            if self.turn_s is not None:
                self.send({"method": "thread/tokenUsage/updated", "params": {"threadId": t, "turnId": turn, "tokenUsage": {
                    "total": {"totalTokens": 110}, "last": {"totalTokens": 110}, "modelContextWindow": 258400}}})
                self.later(self.turn_s, lambda: self.end_turn(t, turn, "completed"))
        elif meth == "test/endTurn":
            self.end_turn(t, self.active[t][0], "completed")
            self.send({"id": mid, "result": {}})
        elif meth == "thread/compact/start":
            try:
                mode = open(os.path.join(DIR, "compact-mode")).read().strip()
            except FileNotFoundError:
                mode = "ok"
            if mode == "refuse":
                return self.send({"id": mid, "error": {"code": -32600, "message": "thread not found: %s" % t}})
            if mode == "silent":
                return
            self.send({"id": mid, "result": {}})
            if t in self.active:  # measured: interrupts the running turn
                self.end_turn(t, self.active[t][0], "interrupted")
            turn, item = self.new_id("compact"), {"type": "contextCompaction", "id": self.new_id("item")}
            self.active[t] = (turn, "compact", item)
            self.send({"method": "turn/started", "params": {"threadId": t, "turn": {"id": turn, "status": "inProgress"}}})
            self.send({"method": "item/started", "params": {"threadId": t, "turnId": turn, "item": item}})
            if self.compact_s is not None:
                self.later(self.compact_s, lambda: self.finish_compaction(t, turn, "completed", True))
        elif meth == "test/finishCompaction":
            self.finish_compaction(t, self.active[t][0], p.get("status", "completed"), p.get("item"))
            self.send({"id": mid, "result": {}})
        elif meth == "test/burst":
            self.send({"id": mid, "result": {}})
            pad = "x" * int(p["size"])
            for i in range(int(p["count"])):
                self.send({"method": "burst", "params": {"n": i, "pad": pad}})
            mark("burst-done")
        elif meth == "test/answerLater":
            self.later(p["ms"] / 1000.0, lambda: self.send({"id": mid, "result": {"late": True}}), owed=True)
        else:
            self.send({"id": mid, "result": {}})

    def run(self):
        mark("env.json", json.dumps({k: v for k, v in os.environ.items() if k.startswith("KIJITO_") or k == "PLUGIN_DATA"}))
        linger = os.environ.get("STANDIN_ON_EOF") == "linger"
        if linger:
            g = subprocess.Popen(["sleep", "120"])
            mark("grandchild.pid", str(g.pid))
        n = int(os.environ.get("STANDIN_PRELUDE", "0"))
        if n:
            for i in range(1, n + 1):
                self.send({"method": "prelude", "params": {"n": i}})
            for _ in range(3):
                self.send({"method": "prelude", "params": {"pad": "p" * 40960}})
            mark("prelude-done")
        sel = selectors.DefaultSelector()
        fd = sys.stdin.fileno()
        sel.register(fd, selectors.EVENT_READ)
        buf, eof = b"", False
        while not eof or self.timers:
            now = time.monotonic()
            while self.timers and self.timers[0][0] <= now:
                _, fn, _ = self.timers.pop(0)
                fn()
            if eof:
                time.sleep(0.01)
                continue
            timeout = min(0.02, max(0.0, self.timers[0][0] - time.monotonic())) if self.timers else 0.02
            if not sel.select(timeout):
                continue
            chunk = os.read(fd, 65536)
            if not chunk:
                eof = True
                self.timers = [x for x in self.timers if x[2]]  # only the owed answers
                continue
            buf += chunk
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                if line.strip():
                    self.handle(json.loads(line))
        if linger:
            parent, end = os.getppid(), time.time() + 120
            while time.time() < end and os.getppid() == parent:
                time.sleep(0.05)
            sys.exit(124)
        time.sleep(0.3)
        mark("exited")


if __name__ == "__main__":
    if sys.argv[1:2] == ["app-server"]:
        Server().run()
    elif sys.argv[1:2] == ["--remote"]:
        tui()
    else:
        sys.exit("standin-codex: unsupported arguments %r" % sys.argv[1:])
