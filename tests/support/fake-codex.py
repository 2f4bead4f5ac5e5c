#!/usr/bin/env python3
"""Stand-in for the `codex` executable in tests of `kijito-compact codex` (stdlib only).

fake-codex.py app-server
    A JSON-lines app-server on stdin/stdout that behaves as measured on Codex 0.169
    (docs/adapters.md, Codex app-server adapter): thread/start, turn/start (turn/started, turn/completed after
    FAKE_TURN_MS), thread/compact/start (result {} first, then turn/started, item/started
    contextCompaction, item/completed after FAKE_COMPACT_MS, turn/completed); a turn/start while
    the compaction turn runs is refused with ActiveTurnNotSteerable; a thread/compact/start during
    a running turn interrupts it. Every message is logged to $FAKE_CODEX_DIR/server.jsonl with a
    monotonic time; its environment goes to $FAKE_CODEX_DIR/env.json.
fake-codex.py --remote unix://SOCK ARGS...
    The TUI stand-in: writes its argv to $FAKE_CODEX_DIR/tui.json, then waits (at most 120 s) for
    $FAKE_CODEX_DIR/tui-exit and exits with the number in it."""
import json
import os
import selectors
import sys
import time

DIR = os.environ["FAKE_CODEX_DIR"]


def tui():
    with open(os.path.join(DIR, "tui.json"), "w") as f:
        json.dump({"argv": sys.argv[1:], "env_adapter": os.environ.get("KIJITO_COMPACT_ADAPTER_ID")}, f)
    end = time.time() + 120
    path = os.path.join(DIR, "tui-exit")
    while time.time() < end:
        if os.path.exists(path):
            sys.exit(int(open(path).read().strip() or "0"))
        time.sleep(0.02)
    sys.exit(124)


class Server:
    def __init__(self):
        self.log = open(os.path.join(DIR, "server.jsonl"), "a", buffering=1)
        self.turn_ms = int(os.environ.get("FAKE_TURN_MS", "50")) / 1000.0
        self.compact_ms = int(os.environ.get("FAKE_COMPACT_MS", "300")) / 1000.0
        self.threads, self.n, self.timers = set(), 0, []
        self.active = {}  # thread -> (turn id, kind)

    def rec(self, d, m):
        self.log.write(json.dumps({"t": time.monotonic(), "dir": d, "msg": m}) + "\n")

    def send(self, m):
        self.rec("out", m)
        sys.stdout.write(json.dumps(m, separators=(",", ":")) + "\n")
        sys.stdout.flush()

    def later(self, dt, fn):
        self.timers.append((time.monotonic() + dt, fn))
        self.timers.sort(key=lambda x: x[0])

    def new_id(self, p):
        self.n += 1
        return "%s-%d" % (p, self.n)

    def end_turn(self, thread, turn, status):
        if self.active.get(thread, (None,))[0] != turn:
            return
        del self.active[thread]
        self.send({"method": "thread/status/changed", "params": {"threadId": thread, "status": {"type": "idle"}}})
        self.send({"method": "turn/completed", "params": {"threadId": thread, "turn": {"id": turn, "status": status, "items": []}}})

    def handle(self, m):
        self.rec("in", m)
        meth, mid, p = m.get("method"), m.get("id"), m.get("params") or {}
        if meth is None:
            return
        if mid is None:
            return  # notification
        if meth == "thread/start":
            t = "019a0000-0000-7000-8000-%012d" % (len(self.threads) + 1)
            self.threads.add(t)
            self.send({"id": mid, "result": {"thread": {"id": t, "status": {"type": "idle"}}}})
            self.send({"method": "thread/started", "params": {"thread": {"id": t}}})
        elif meth == "turn/start":
            t = p.get("threadId")
            if t not in self.threads:
                return self.send({"id": mid, "error": {"code": -32600, "message": "thread not found: %s" % t}})
            if self.active.get(t, (None, None))[1] == "compact":
                return self.send({"id": mid, "error": {"code": -32603, "message": "failed to submit turn input: ActiveTurnNotSteerable { turn_kind: Compact }"}})
            turn = self.new_id("turn")
            self.active[t] = (turn, "user")
            self.send({"id": mid, "result": {"turn": {"id": turn, "status": "inProgress", "items": []}}})
            self.send({"method": "turn/started", "params": {"threadId": t, "turn": {"id": turn, "status": "inProgress"}}})
            self.send({"method": "thread/tokenUsage/updated", "params": {"threadId": t, "turnId": turn, "tokenUsage": {
                "total": {"totalTokens": 110}, "last": {"totalTokens": 110}, "modelContextWindow": 258400}}})
            self.later(self.turn_ms, lambda: self.end_turn(t, turn, "completed"))
        elif meth == "thread/compact/start":
            t = p.get("threadId")
            if t not in self.threads:
                return self.send({"id": mid, "error": {"code": -32600, "message": "thread not found: %s" % t}})
            self.send({"id": mid, "result": {}})
            if t in self.active:  # measured: interrupts the running turn
                self.end_turn(t, self.active[t][0], "interrupted")
            turn = self.new_id("compact")
            self.active[t] = (turn, "compact")
            item = {"type": "contextCompaction", "id": self.new_id("item")}
            self.send({"method": "turn/started", "params": {"threadId": t, "turn": {"id": turn, "status": "inProgress"}}})
            self.send({"method": "item/started", "params": {"threadId": t, "turnId": turn, "item": item}})

            def done():
                if self.active.get(t, (None,))[0] != turn:
                    return
                self.send({"method": "item/completed", "params": {"threadId": t, "turnId": turn, "item": item}})
                self.end_turn(t, turn, "completed")
            self.later(self.compact_ms, done)
        else:
            self.send({"id": mid, "result": {}})

    def run(self):
        with open(os.path.join(DIR, "env.json"), "w") as f:
            json.dump({k: v for k, v in os.environ.items() if k.startswith("KIJITO_") or k == "PLUGIN_DATA"}, f)
        sel = selectors.DefaultSelector()
        fd = sys.stdin.fileno()
        sel.register(fd, selectors.EVENT_READ)
        buf = b""
        while True:
            now = time.monotonic()
            while self.timers and self.timers[0][0] <= now:
                _, fn = self.timers.pop(0)
                fn()
            timeout = max(0.0, self.timers[0][0] - time.monotonic()) if self.timers else 1.0
            if not sel.select(timeout):
                continue
            chunk = os.read(fd, 65536)
            if not chunk:
                return
            buf += chunk
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                if line.strip():
                    self.handle(json.loads(line))


if __name__ == "__main__":
    if sys.argv[1:2] == ["app-server"]:
        Server().run()
    elif sys.argv[1:2] == ["--remote"]:
        tui()
    else:
        sys.exit("fake-codex: unsupported arguments %r" % sys.argv[1:])
