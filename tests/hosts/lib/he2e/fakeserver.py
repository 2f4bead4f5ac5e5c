"""Fake model servers on 127.0.0.1 (stdlib): OpenAI Responses for Codex, Anthropic
Messages for Claude Code. Every request is logged (seq, t, method, path, headers
without credentials, decoded body, `tag` = scenario step) to requests.jsonl."""
import gzip
import json
import re
import subprocess
import threading
import time
import uuid
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from . import qa_driver  # kijito-qa addition: the fake model as the QA skill's verifier boots
from . import policy_driver  # kijito-qa addition: any tool call; the consent role
from . import selfconsent_driver  # kijito-qa addition: the agent confirming its own token
from .common import markers_in

SECRET_HEADERS = ("authorization", "x-api-key")

# kijito-qa addition: a user prompt containing this marker makes the fake model call the host's
# shell tool once with the rest of that line as the command (Codex `exec_command`, Claude Code
# `Bash`), so PreToolUse hooks fire; once the tool result is in the conversation it answers text.
TOOL_MARKER = "HOST-E2E-RUN-TOOL:"


# kijito-qa addition: a user prompt containing `HOST-E2E-INPUT-TOKENS: N` makes the fake model report
# usage.input_tokens = N for the answer to that prompt only (a turn that fills the context window,
# so the host's own ceiling-time auto-compaction runs before the next request).
TOKENS_MARKER = "HOST-E2E-INPUT-TOKENS:"


def tokens_override(texts):
    """N after TOKENS_MARKER in the last of texts that has it, else None."""
    for t in reversed(texts):
        i = t.find(TOKENS_MARKER)
        if i >= 0:
            word = t[i + len(TOKENS_MARKER):].split(None, 1)
            return int(word[0]) if word and word[0].isdigit() and len(word[0]) <= 9 else None
    return None


def tool_command(texts):
    """The command after TOOL_MARKER in the last of texts that has it, else None."""
    for t in reversed(texts):
        i = t.find(TOOL_MARKER)
        if i >= 0:
            return t[i + len(TOOL_MARKER):].split("\n", 1)[0].strip() or None
    return None


def mcp_call(cmd):
    """kijito-qa: `HOST-E2E-RUN-TOOL: MCP <host tool name> <json arguments>` calls that tool
    instead of the shell: (name, args), else None. Codex names are `<namespace>.<tool>`."""
    if not cmd or not cmd.startswith("MCP "):
        return None
    parts = cmd[4:].strip().split(None, 1)
    return parts[0], json.loads(parts[1]) if len(parts) > 1 else {}


def _decode(raw, encoding):
    enc = (encoding or "").lower()
    try:
        if enc == "gzip":
            return gzip.decompress(raw)
        if enc == "deflate":
            return zlib.decompress(raw)
        if enc == "zstd":  # no stdlib codec; use the CLI when present
            return subprocess.run(["zstd", "-dc"], input=raw, capture_output=True, check=True).stdout
    except Exception:  # noqa: BLE001
        pass
    return raw


class Base(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    state = None  # set per server: dict(log=JsonlWriter, lock, n, tag, clock, cfg)

    def log_message(self, *a):
        pass

    def _body(self):
        n = int(self.headers.get("Content-Length") or 0)
        raw = _decode(self.rfile.read(n) if n else b"", self.headers.get("Content-Encoding"))
        try:
            return json.loads(raw.decode("utf-8")) if raw else None
        except ValueError:
            return raw.decode("utf-8", "replace")

    def _record(self, body):
        st = self.state
        with st["lock"]:
            st["n"] += 1
            seq = st["n"]
        if body is not None and "last_request_result_t" in st:  # kijito-qa: see tui.run_steps type_after_stop
            # the requested line as a tool result holds it inside a JSON string: escaped quotes
            n = json.dumps(body).count('\\"type\\":\\"kijito.compaction.requested\\"')
            if n:
                if n > st.get("last_request_result_n", 0):
                    st["last_request_result_n"], st["last_request_result_t"] = n, time.time()
        st["log"].write({"seq": seq, "t": st["clock"].rel(), "tag": st["tag"], "method": self.command,
                         "path": self.path,
                         "headers": {k: v for k, v in self.headers.items() if k.lower() not in SECRET_HEADERS},
                         "body": body})
        return seq

    def _json(self, code, obj):
        data = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _sse(self, events):
        data = "".join("event: %s\ndata: %s\n\n" % (name, json.dumps(p)) for name, p in events).encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        self._record(None)
        if self.path.split("?")[0].rstrip("/").endswith("/models"):
            return self._json(200, {"object": "list", "data": [], "has_more": False})
        self._json(404, {"error": {"type": "not_found_error", "message": "fake: no route " + self.path}})

    def do_DELETE(self):
        self.do_GET()


# ------------------------------------------------------------------ OpenAI Responses

def codex_request_kind(headers, body):
    """'compaction' or 'turn' (Codex says so in x-codex-turn-metadata.request_kind)."""
    if body is None:
        return None
    meta = next((v for k, v in headers.items() if k.lower() == "x-codex-turn-metadata"), None)
    try:
        kind = json.loads(meta or "{}").get("request_kind")
        if kind:
            return kind
    except ValueError:
        pass
    inp = body.get("input") if isinstance(body, dict) else None
    if isinstance(inp, list) and inp:
        last = json.dumps(inp[-1]).lower()
        if "checkpoint" in last or "summar" in last or "handoff" in last:
            return "compaction"
    return "turn"


def codex_pending_tool(body):
    """TOOL_MARKER command of the last user message, unless a tool output already follows it."""
    inp = body.get("input") if isinstance(body, dict) else None
    if not isinstance(inp, list):
        return None
    last_user = max((i for i, it in enumerate(inp) if isinstance(it, dict) and it.get("type", "message") == "message"
                     and it.get("role") == "user"), default=None)
    if last_user is None or any(isinstance(it, dict) and it.get("type") == "function_call_output"
                                for it in inp[last_user:]):
        return None
    return tool_command(common_strings(inp[last_user]))


def codex_last_user_texts(body):
    inp = body.get("input") if isinstance(body, dict) else None
    if not isinstance(inp, list):
        return []
    last_user = max((i for i, it in enumerate(inp) if isinstance(it, dict) and it.get("type", "message") == "message"
                     and it.get("role") == "user"), default=None)
    return [] if last_user is None else common_strings(inp[last_user])


def common_strings(obj):
    from .common import strings_in
    return strings_in(obj)


class Responses(Base):
    def _codex_tool_call(self, rid, seq, cmd, name="exec_command", args=None):
        ns = None
        if "/" in name:  # kijito-qa (policy_driver): `namespace/name`
            ns, name = name.split("/", 1)
        if isinstance(args, str):  # kijito-qa (policy_driver): a freeform tool (e.g. apply_patch) takes raw text
            item = {"type": "custom_tool_call", "id": "ctc_%d" % seq, "call_id": "call_%d" % seq, "name": name,
                    "input": args, "status": "completed"}
        else:
            item = {"type": "function_call", "id": "fc_%d" % seq, "call_id": "call_%d" % seq, "name": name,
                    "arguments": json.dumps(args if args is not None else {"cmd": cmd}), "status": "completed"}
        if name in qa_driver.CODEX_AGENT_TOOLS:  # kijito-qa: Codex 0.169 offers them in a namespace
            item["namespace"] = qa_driver.CODEX_AGENT_NAMESPACE
        if ns:
            item["namespace"] = ns
        elif "." in name:  # kijito-qa: an MCP tool, `<namespace>.<tool>`
            item["namespace"], item["name"] = name.split(".", 1)
        tokens = int(self.state["cfg"].get("input_tokens", 100))
        self._sse([
            ("response.created", {"type": "response.created", "response": {"id": rid}}),
            ("response.output_item.added", {"type": "response.output_item.added", "output_index": 0,
                                            "item": dict(item, status="in_progress", arguments="")}),
            ("response.output_item.done", {"type": "response.output_item.done", "output_index": 0, "item": item}),
            ("response.completed", {"type": "response.completed", "response": {
                "id": rid, "status": "completed", "output": [item],
                "usage": {"input_tokens": tokens, "input_tokens_details": {"cached_tokens": 0},
                          "output_tokens": 10, "output_tokens_details": {"reasoning_tokens": 0},
                          "total_tokens": tokens + 10}}}),
        ])

    def do_POST(self):
        body = self._body()
        seq = self._record(body)
        path = self.path.split("?")[0].rstrip("/")
        if path.endswith("/responses/compact"):  # remote compaction (OpenAI providers only)
            return self._json(200, {"output": [{"type": "message", "role": "user", "content": [
                {"type": "input_text", "text": "FAKE-REMOTE-COMPACT-SUMMARY seq=%d" % seq}]}]})
        if not path.endswith("/responses"):
            return self._json(404, {"error": {"message": "fake: no route " + self.path}})
        kind = codex_request_kind(self.headers, body)
        if kind == "compaction":
            text = "FAKE-COMPACTION-SUMMARY seq=%d: the user asked for a greeting." % seq
        else:
            text = "Hello from the fake model (seq=%d)." % seq
        rid, mid = "resp_%d" % seq, "msg_%d" % seq
        act = (policy_driver.codex_action(body) or qa_driver.codex_action(body)) if kind == "turn" else None  # kijito-qa
        if act and act[0] != "text":
            return self._codex_tool_call(rid, seq, None, act[0], act[1])
        if act:
            text = act[1]
        cmd = codex_pending_tool(body) if kind == "turn" and not act else None
        if mcp_call(cmd):
            return self._codex_tool_call(rid, seq, None, *mcp_call(cmd))
        if cmd:
            return self._codex_tool_call(rid, seq, cmd)
        done = {"type": "message", "role": "assistant", "id": mid, "status": "completed",
                "content": [{"type": "output_text", "text": text, "annotations": []}]}
        tokens = int(self.state["cfg"].get("input_tokens", 100))
        if kind == "turn":
            tokens = tokens_override(codex_last_user_texts(body)) or tokens
        self._sse([
            ("response.created", {"type": "response.created", "response": {"id": rid}}),
            ("response.output_item.added", {"type": "response.output_item.added", "output_index": 0,
                                            "item": dict(done, status="in_progress", content=[])}),
            ("response.output_text.delta", {"type": "response.output_text.delta", "item_id": mid,
                                            "output_index": 0, "content_index": 0, "delta": text}),
            ("response.output_item.done", {"type": "response.output_item.done", "output_index": 0, "item": done}),
            ("response.completed", {"type": "response.completed", "response": {
                "id": rid, "status": "completed", "output": [done],
                "usage": {"input_tokens": tokens, "input_tokens_details": {"cached_tokens": 0},
                          "output_tokens": 10, "output_tokens_details": {"reasoning_tokens": 0},
                          "total_tokens": tokens + 10}}}),
        ])


# ------------------------------------------------------------------ Anthropic Messages

def _texts(content):
    if isinstance(content, str):
        return content
    return "\n".join(b.get("text", "") for b in content or [] if isinstance(b, dict) and b.get("type") == "text")


def claude_request_kind(body):
    """Claude Code's summariser prompt asks for an <analysis> + <summary> block."""
    if body is None:
        return None
    msgs = body.get("messages", []) if isinstance(body, dict) else []
    users = [m for m in msgs if isinstance(m, dict) and m.get("role") == "user"]
    last = _texts(users[-1].get("content")).lower() if users else ""
    if "<summary> block" in last or ("<summary>" in last and "do not call any tools" in last):
        return "compaction"
    return "turn"


def claude_last_user_text(body):
    """Text of the last user/assistant entry when it is the user's (skipping role "system" entries)."""
    msgs = [m for m in body.get("messages", []) if isinstance(m, dict) and m.get("role") in ("user", "assistant")]
    return _texts(msgs[-1].get("content")) if msgs and msgs[-1].get("role") == "user" else ""


def claude_pending_tool(body):
    """TOOL_MARKER command of the last user message of a turn that offers Bash, unless that
    message already carries a tool result."""
    tools = body.get("tools") if isinstance(body, dict) else None
    if not isinstance(tools, list) or not any(isinstance(t, dict) and t.get("name") == "Bash" for t in tools):
        return None
    # Claude Code may append role "system" entries after the user's message: skip them.
    msgs = [m for m in body.get("messages", []) if isinstance(m, dict) and m.get("role") in ("user", "assistant")]
    if not msgs or msgs[-1].get("role") != "user":
        return None
    content = msgs[-1].get("content")
    if isinstance(content, list) and any(isinstance(b, dict) and b.get("type") == "tool_result" for b in content):
        return None
    return tool_command([_texts(content)])


def echoed_lines(body, drop=None):
    """kijito-qa: the `kijito-<label>: value` lines of a Claude compaction request (PreCompact
    stdout arrives there as "Additional Instructions"), minus the line of label `drop`."""
    msgs = body.get("messages", []) if isinstance(body, dict) else []
    users = [m for m in msgs if isinstance(m, dict) and m.get("role") == "user"]
    text = _texts(users[-1].get("content")) if users else ""
    out = []
    for line in text.splitlines():
        label = line.split(": ", 1)[0]
        if re.fullmatch(r"kijito-[a-z-]+", label) and label != "kijito-qa" and label != drop and line not in out:
            out.append(line)
    return out


class Messages(Base):
    def _claude_tool_use(self, body, model, mid, usage, cmd, name="Bash", args=None):
        tid = "toolu_fake_" + uuid.uuid4().hex[:16]
        args = args if args is not None else {"command": cmd, "description": "host-e2e tool call"}
        if not body.get("stream"):
            return self._json(200, {"id": mid, "type": "message", "role": "assistant", "model": model,
                                    "content": [{"type": "tool_use", "id": tid, "name": name, "input": args}],
                                    "stop_reason": "tool_use", "stop_sequence": None, "usage": usage})
        self._sse([
            ("message_start", {"type": "message_start", "message": {
                "id": mid, "type": "message", "role": "assistant", "model": model, "content": [],
                "stop_reason": None, "stop_sequence": None, "usage": dict(usage, output_tokens=1)}}),
            ("content_block_start", {"type": "content_block_start", "index": 0,
                                     "content_block": {"type": "tool_use", "id": tid, "name": name, "input": {}}}),
            ("content_block_delta", {"type": "content_block_delta", "index": 0,
                                     "delta": {"type": "input_json_delta", "partial_json": json.dumps(args)}}),
            ("content_block_stop", {"type": "content_block_stop", "index": 0}),
            ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": None},
                               "usage": {"output_tokens": 12}}),
            ("message_stop", {"type": "message_stop"}),
        ])

    def do_HEAD(self):
        self._record(None)
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_POST(self):
        body = self._body()
        self._record(body)
        path = self.path.split("?")[0]
        if path == "/v1/messages/count_tokens":
            return self._json(200, {"input_tokens": 42})
        if path != "/v1/messages":
            return self._json(404, {"type": "error", "error": {"type": "not_found_error",
                                                               "message": "fake: " + path}})
        body = body if isinstance(body, dict) else {}
        model = body.get("model", "claude-fake")
        if claude_request_kind(body) == "compaction":
            kept = ""
            if self.state["cfg"].get("summary_echo"):  # kijito-qa
                kept = "".join("\n" + l for l in echoed_lines(body, self.state["cfg"].get("summary_drop")))
            text = ("<analysis>fake analysis</analysis>\n<summary>FAKE-COMPACT-SUMMARY: the user "
                    "said hello and the assistant replied.%s</summary>" % kept)
        else:
            text = "FAKE-REPLY: hello from the fake server."
        usage = {"input_tokens": int(self.state["cfg"].get("input_tokens", 50)), "output_tokens": 12,
                 "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
        if claude_request_kind(body) != "compaction":
            usage["input_tokens"] = tokens_override([claude_last_user_text(body)]) or usage["input_tokens"]
        mid = "msg_fake_" + uuid.uuid4().hex[:16]
        act = ((selfconsent_driver.claude_action(body) or policy_driver.claude_action(body) or qa_driver.claude_action(body))
               if claude_request_kind(body) == "turn" else None)  # kijito-qa
        if act and act[0] != "text":
            return self._claude_tool_use(body, model, mid, usage, None, act[0], act[1])
        if act:
            text = act[1]
        cmd = claude_pending_tool(body) if not act else None
        if mcp_call(cmd):
            return self._claude_tool_use(body, model, mid, usage, None, *mcp_call(cmd))
        if cmd:
            return self._claude_tool_use(body, model, mid, usage, cmd)
        if not body.get("stream"):
            return self._json(200, {"id": mid, "type": "message", "role": "assistant", "model": model,
                                    "content": [{"type": "text", "text": text}], "stop_reason": "end_turn",
                                    "stop_sequence": None, "usage": usage})
        half = len(text) // 2
        self._sse([
            ("message_start", {"type": "message_start", "message": {
                "id": mid, "type": "message", "role": "assistant", "model": model, "content": [],
                "stop_reason": None, "stop_sequence": None, "usage": dict(usage, output_tokens=1)}}),
            ("content_block_start", {"type": "content_block_start", "index": 0,
                                     "content_block": {"type": "text", "text": ""}}),
            ("content_block_delta", {"type": "content_block_delta", "index": 0,
                                     "delta": {"type": "text_delta", "text": text[:half]}}),
            ("content_block_delta", {"type": "content_block_delta", "index": 0,
                                     "delta": {"type": "text_delta", "text": text[half:]}}),
            ("content_block_stop", {"type": "content_block_stop", "index": 0}),
            ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                               "usage": {"output_tokens": 12}}),
            ("message_stop", {"type": "message_stop"}),
        ])

    do_PUT = do_POST


def start(kind, log_writer, clock, cfg=None):
    """Start a fake server thread on a free 127.0.0.1 port. Returns (server, state)."""
    state = {"log": log_writer, "lock": threading.Lock(), "n": 0, "tag": None, "clock": clock,
             "cfg": dict(cfg or {})}
    handler = type("H", ({"responses": Responses, "messages": Messages}[kind],), {"state": state})
    srv = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    srv.daemon_threads = True
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv, state


def summarize_requests(entries, markers, kind_fn):
    """Per logged request: seq, step tag, path, kind (turn/compaction), markers it contains."""
    out = []
    for e in entries:
        body = e.get("body")
        out.append({"seq": e.get("seq"), "t": e.get("t"), "tag": e.get("tag"), "method": e.get("method"),
                    "path": e.get("path"), "kind": kind_fn(e.get("headers") or {}, body),
                    "markers": markers_in(body, markers) if body is not None else []})
    return out
