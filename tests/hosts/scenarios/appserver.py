"""The one Codex app-server JSON-RPC client of the scenario scripts (doctor_hosts.py,
codex_plugin_check.py): newline-delimited JSON-RPC over the child's stdin/stdout, every wait
bounded in time (a deadline per request) and in count (messages skipped while waiting).
The Rust copy for kijito-doctor lives in shared/setup/src/codex.rs; the recording client of the
host-e2e tool is tests/hosts/lib/he2e/codex.py."""
import json
import os
import select
import subprocess
import time

# Messages (notifications, other answers) read while waiting for one answer, at most.
MAX_SKIPPED = 10000
# Longest line accepted from the app-server.
MAX_LINE = 16 * 1024 * 1024


class AppServerError(Exception):
    pass


class AppServer:
    """`codex app-server` as a child process; use as a context manager (closes it)."""

    def __init__(self, codex, env, cwd):
        self.proc = subprocess.Popen([codex, "app-server"], env=env, cwd=cwd, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.buf = b""
        self.next_id = 1

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _send(self, msg):
        try:
            self.proc.stdin.write((json.dumps(msg) + "\n").encode())
            self.proc.stdin.flush()
        except OSError as e:
            raise AppServerError("cannot write to codex app-server: %s" % e)

    def _line(self, deadline, method):
        fd = self.proc.stdout.fileno()
        while b"\n" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AppServerError("no answer to %s within the timeout" % method)
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                continue
            chunk = os.read(fd, 65536)
            if not chunk:
                raise AppServerError("codex app-server exited during " + method)
            self.buf += chunk
            if len(self.buf) > MAX_LINE:
                raise AppServerError("codex app-server sent a line longer than %d bytes" % MAX_LINE)
        line, self.buf = self.buf.split(b"\n", 1)
        return line

    def request(self, method, params, timeout=60):
        """Send one request; return its `result` (an `error` answer raises AppServerError)."""
        i, self.next_id = self.next_id, self.next_id + 1
        self._send({"id": i, "method": method, "params": params})
        deadline = time.monotonic() + timeout
        for _ in range(MAX_SKIPPED):
            line = self._line(deadline, method)
            if not line.strip():
                continue
            msg = json.loads(line)
            if msg.get("id") == i:
                if "error" in msg:
                    raise AppServerError("%s failed: %s" % (method, msg["error"]))
                return msg["result"]
        raise AppServerError("no answer to %s among %d messages" % (method, MAX_SKIPPED))

    def notify(self, method):
        self._send({"method": method})

    def initialize(self, timeout=60):
        """The handshake: `initialize` (experimental API on), then `initialized`."""
        self.request("initialize", {"clientInfo": {"name": "kijito-e2e", "title": "kijito-e2e", "version": "1"},
                                    "capabilities": {"experimentalApi": True}}, timeout)
        self.notify("initialized")

    def close(self):
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)
