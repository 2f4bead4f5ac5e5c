"""Conformance of `kijito-local mcp` through the official MCP Python SDK.

Usage: python conformance.py KIJITO_LOCAL_BINARY DATABASE

Run by tests/it/kijito_local_mcp.rs (conformance_through_the_official_python_sdk)
with the SDK pinned in .ci/run (`pip install mcp==2.3.0` into target/mcp-venv).
The SDK spawns the server over stdio, initializes (it offers 2025-11-25),
lists the tools and calls each one on its success and its error path. Every
check is an assert; the last stdout line summarises what passed.
"""

import asyncio
import json
import os
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

EXPECTED_TOOLS = [
    "kijito_startup",
    "kijito_recall",
    "kijito_get",
    "kijito_recent",
    "kijito_remember",
    "kijito_correct",
    "kijito_fade",
    "kijito_update",
    "kijito_dream",
    "kijito_anchor_audit",
    "kijito_wake_check",
    "kijito_hive_send",
    "kijito_hive_claim",
    "kijito_hive_release",
]


def text_of(result):
    assert len(result.content) == 1, result
    block = result.content[0]
    assert block.type == "text", block
    return block.text


async def main(binary, db):
    checks = 0
    params = StdioServerParameters(
        command=binary,
        args=["mcp", "--db", db, "--pointer-id", "1", "--lock-message-id", "1"],
        env={"XDG_CONFIG_HOME": os.environ["XDG_CONFIG_HOME"], "PATH": os.environ.get("PATH", "")},
    )
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            assert init.protocol_version == "2025-11-25", init.protocol_version
            assert init.server_info.name == "kijito-local", init.server_info
            assert init.capabilities.tools is not None
            checks += 1

            listed = await session.list_tools()
            names = [t.name for t in listed.tools]
            assert names == EXPECTED_TOOLS, names
            for tool in listed.tools:
                schema = tool.input_schema
                assert schema["type"] == "object", (tool.name, schema)
                assert schema["additionalProperties"] is False, tool.name
                for required in schema.get("required", []):
                    assert required in schema["properties"], (tool.name, required)
            checks += 1

            called = set()

            async def ok(name, arguments):
                nonlocal checks
                called.add(name)
                result = await session.call_tool(name, arguments)
                text = text_of(result)
                assert not result.is_error, (name, text)
                checks += 1
                return text

            async def err(name, arguments, code):
                nonlocal checks
                called.add(name)
                result = await session.call_tool(name, arguments)
                text = text_of(result)
                assert result.is_error, (name, text)
                assert text.startswith(code + ": "), (name, code, text)
                checks += 1
                return text

            pointer = await ok("kijito_remember", {"content": "CODEX_CURRENT_STATE_POINTER_V1 RESUME NOW: conformance", "importance": 0.9})
            assert pointer == "Created [1]", pointer
            anchor = await ok("kijito_remember", {"content": "An anchor about the SQLite store.", "type": "decision"})
            anchor_id = int(anchor[len("Created ["):-1])
            await err("kijito_remember", {}, "missing_field")

            got = await ok("kijito_get", {"id": anchor_id})
            assert got.startswith(f"Memory [{anchor_id}]\nType: decision\n"), got
            assert "\nStatus: active\nSource: mcp\n" in got, got
            await err("kijito_get", {"id": 999}, "not_found_or_forbidden")

            found = await ok("kijito_recall", {"query": "CODEX_CURRENT_STATE_POINTER_V1 RESUME NOW", "scope": "project", "project": "Codex", "full": True})
            assert "\n\nMemory [1]\n" in found, found
            await err("kijito_recall", {"query": "x", "limit": 0}, "invalid_field")

            recent = await ok("kijito_recent", {"hours": 1, "limit": 5})
            assert f"  [{anchor_id}] decision" in recent, recent
            await err("kijito_recent", {"hours": 0}, "invalid_field")

            startup = await ok("kijito_startup", {"persona": "codex", "project": "Codex"})
            assert "\nCurrent-state pointer: [1] " in startup, startup
            await err("kijito_startup", {"persona": "NOT VALID"}, "invalid_persona")

            corrected = await ok("kijito_correct", {"id": anchor_id, "content": "The store is SQLite (WAL)."})
            assert corrected.startswith(f"Corrected [{anchor_id}] by ["), corrected
            correction_id = int(corrected.rsplit("[", 1)[1][:-1])
            assert " · eroded\n" in await ok("kijito_get", {"id": anchor_id})
            await err("kijito_correct", {"id": 999, "content": "x"}, "not_found_or_forbidden")

            assert await ok("kijito_fade", {"id": correction_id}) == f"Faded [{correction_id}]"
            await err("kijito_fade", {"id": 999}, "not_found_or_forbidden")

            extra = await ok("kijito_remember", {"content": "living note"})
            extra_id = int(extra[len("Created ["):-1])
            assert await ok("kijito_update", {"id": extra_id, "content": "living note, updated"}) == f"Updated [{extra_id}]"
            refused = await err("kijito_update", {"id": 1, "content": "hijack"}, "pointer_update_refused")
            assert "pointer changes go through pointer-publish" in refused, refused

            audit = await ok("kijito_anchor_audit", {"id": anchor_id})
            assert audit.startswith(f"Anchor audit [{anchor_id}]\nLifecycle: retired\n"), audit
            assert audit.endswith("Scarred: yes (corrected by [%d]; eroded)" % correction_id), audit
            await err("kijito_anchor_audit", {"id": 999}, "not_found_or_forbidden")

            here = os.path.dirname(db)
            wake = await ok("kijito_wake_check", {"workspace": here, "data_dir": here, "session_id": "sdk"})
            assert "\nSession binding: sdk (only this session's QA files)\nWorkspace: " in wake, wake
            assert "\nTrust mode: " in wake and "\nReport: {" in wake, wake
            await err("kijito_wake_check", {"workspace": "not/absolute"}, "invalid_field")

            dream = await err("kijito_dream", {}, "not_available")
            assert "not available on kijito-local" in dream, dream

            sent = json.loads(await ok("kijito_hive_send", {"to": "codex", "content": "lock"}))
            claim = json.loads(await ok("kijito_hive_claim", {"message_id": sent["id"], "lease_seconds": 30}))
            assert claim == {"claimed": True, "message_id": sent["id"]}, claim
            await err("kijito_hive_claim", {"message_id": 999}, "message_not_found_or_forbidden")
            release = json.loads(await ok("kijito_hive_release", {"message_id": sent["id"]}))
            assert release == {"released": True, "message_id": sent["id"]}, release
            await err("kijito_hive_release", {"message_id": 999}, "message_not_found_or_forbidden")

            await err("kijito_hive_send", {"content": "no recipient"}, "missing_field")

            # Over the bounds of an argument: a clear error, nothing written.
            before = await ok("kijito_recent", {"limit": 100})
            await err("kijito_recall", {"query": "w" * 4097}, "invalid_field")
            await err("kijito_recall", {"query": "x", "limit": 51}, "invalid_field")
            await err("kijito_hive_claim", {"message_id": sent["id"], "lease_seconds": 301}, "invalid_lease_seconds")
            await err("kijito_remember", {"content": "bounded", "importance": 1.5}, "invalid_field")
            await err("kijito_remember", {"content": "bounded", "no_such_argument": 1}, "unknown_field")
            # A call over the 1 MiB line bound: the server discards it unread, so
            # its answer (-32600 request_too_large) has id null, which the SDK
            # routes to no request: no result comes back, nothing is written,
            # and the session goes on (tests/it/kijito_local_mcp.rs reads that answer raw).
            try:
                result = await asyncio.wait_for(session.call_tool("kijito_remember", {"content": "x" * (1 << 20)}), 5)
            except asyncio.TimeoutError:
                pass
            else:
                raise AssertionError(f"an over-long call answered {result}")
            assert await ok("kijito_recent", {"limit": 100}) == before, "nothing was written"
            checks += 1

            # An unknown tool is a protocol error the SDK raises.
            try:
                result = await session.call_tool("kijito_no_such_tool", {})
            except Exception as e:  # the SDK's MCPError
                assert "unknown tool" in str(e), e
            else:
                raise AssertionError(f"an unknown tool answered {result}")
            checks += 1

            assert called == set(EXPECTED_TOOLS), set(EXPECTED_TOOLS) - called
            print(f"conformance ok: protocol {init.protocol_version}, {len(names)} tools, {checks} checks, every tool called")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    asyncio.run(main(sys.argv[1], sys.argv[2]))
