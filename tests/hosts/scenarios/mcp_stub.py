#!/usr/bin/env python3
"""kijito-qa: a tiny stdio MCP server (JSON-RPC 2.0, one message per line) offering
`kijito_get` and `kijito_update`, for measuring how a host's PreToolUse carries an MCP call
(record_pretool.py). Every call answers one text block naming the tool and its arguments; nothing
is stored. Stops at the end of stdin."""
import json
import sys

TOOLS = [
    {"name": "kijito_get", "description": "Read one memory by id.",
     "inputSchema": {"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]}},
    {"name": "kijito_update", "description": "Replace the content of one memory.",
     "inputSchema": {"type": "object", "properties": {"id": {"type": "integer"}, "content": {"type": "string"}},
                     "required": ["id", "content"]}},
]

for line in sys.stdin:
    try:
        msg = json.loads(line)
    except ValueError:
        continue
    if not isinstance(msg, dict) or "id" not in msg:
        continue  # a notification
    method, rid = msg.get("method"), msg["id"]
    if method == "initialize":
        res = {"protocolVersion": (msg.get("params") or {}).get("protocolVersion", "2025-06-18"),
               "capabilities": {"tools": {}}, "serverInfo": {"name": "kijito-stub", "version": "0"}}
    elif method == "tools/list":
        res = {"tools": TOOLS}
    elif method == "tools/call":
        p = msg.get("params") or {}
        res = {"content": [{"type": "text", "text": "stub %s %s" % (p.get("name"), json.dumps(p.get("arguments")))}]}
    elif method == "ping":
        res = {}
    else:
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "no " + str(method)}}) + "\n")
        sys.stdout.flush()
        continue
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": rid, "result": res}) + "\n")
    sys.stdout.flush()
