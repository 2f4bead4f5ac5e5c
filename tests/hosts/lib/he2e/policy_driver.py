"""kijito-qa addition: the fake model as an agent meeting the PreToolUse policy, driven
only by what a real model sees in its request (the user's prompts, its own tool calls' results).
Stateless: every decision is recomputed from the request body.

1. `HOST-E2E-RUN-CALL: <tool> <json>` in the last user prompt: one call of any tool with that input,
   then text. Codex: a JSON object is a `function_call` (arguments = the object); a JSON string is
   a `custom_tool_call` (Codex's freeform tools, e.g. `apply_patch`, take the raw text); a tool
   written `namespace/name` carries `namespace` (Codex groups some tools, e.g. MCP servers').
2. `HOST-E2E-CONSENT-AGENT: <shell command>` in a user prompt starts the consent role. One tool
   call per response, decided from the calls made since that prompt:
   - run the command with the host's shell tool;
   - once: run exactly the backticked `.../memory-latch consent request ...` command the deny
     reason in that call's result names, then answer text (waiting for the user's confirmation)
     until the user says something;
   - after the user's next prompt (e.g. the token they read on the screen): retry the identical
     command, then run it once more (the repeat), then answer text.
"""
import json
import re

from .common import strings_in

CALL_MARKER = "HOST-E2E-RUN-CALL:"
CONSENT_MARKER = "HOST-E2E-CONSENT-AGENT:"
CONSENT_CMD = re.compile(r"`([^`\n]*/memory-latch consent request [^`\n]*)`")


def _after(texts, marker):
    """The rest of the line after marker in the last of texts that has it, else None."""
    for t in reversed(texts):
        i = t.find(marker)
        if i >= 0:
            return t[i + len(marker):].split("\n", 1)[0].strip() or None
    return None


def parse_call(texts):
    """(tool, input) of a CALL_MARKER line, else None (a malformed line is None too)."""
    rest = _after(texts, CALL_MARKER)
    if not rest or " " not in rest:
        return None
    tool, raw = rest.split(" ", 1)
    try:
        args = json.loads(raw)
    except ValueError:
        return None
    return (tool, args) if isinstance(args, (dict, str)) else None


def consent_command(result_text):
    """The consent request command a deny reason names (the first backticked one), else None."""
    m = CONSENT_CMD.search(result_text or "")
    return m.group(1) if m else None


def _role(events, shell):
    """events: the conversation in order, ("prompt", texts) / ("call", shell command or None) /
    ("result", text). Returns an action or None (not ours)."""
    prompts = [i for i, e in enumerate(events) if e[0] == "prompt"]
    if not prompts:
        return None
    last = prompts[-1]
    call = parse_call(events[last][1])
    if call is not None:
        done = any(e[0] == "result" for e in events[last:])
        return ("text", "HOST-E2E-RUN-CALL: done.") if done else call
    start = next((i for i in reversed(prompts) if _after(events[i][1], CONSENT_MARKER)), None)
    if start is None:
        return None
    cmd = _after(events[start][1], CONSENT_MARKER)
    calls = [(i, e[1]) for i, e in enumerate(events) if i > start and e[0] == "call"]
    n_cmd = sum(1 for _, c in calls if c == cmd)
    reqs = [i for i, c in calls if c is not None and c != cmd and "/memory-latch consent request " in c]
    results = [e[1] for e in events[start:] if e[0] == "result"]
    if n_cmd == 0:
        return shell(cmd)
    if n_cmd == 1 and not reqs:
        req = consent_command(results[-1] if results else "")
        return shell(req) if req else ("text", "HOST-E2E-CONSENT: the tool result names no consent request command.")
    if n_cmd == 1:
        # the retry only after the user has said something since the request (their confirmation)
        if any(e[0] == "prompt" for e in events[reqs[-1]:]):
            return shell(cmd)
        return ("text", "HOST-E2E-CONSENT: consent requested; waiting for the user's confirmation.")
    if n_cmd == 2:
        return shell(cmd)  # the repeat: the identical call once more
    return ("text", "HOST-E2E-CONSENT: done.")


# ---------------------------------------------------------------- Claude Code (Anthropic Messages)

def _claude_texts(content):
    if isinstance(content, str):
        return [content]
    return [b.get("text", "") for b in content or [] if isinstance(b, dict) and b.get("type") == "text"]


def _claude_result_text(block):
    c = block.get("content")
    return c if isinstance(c, str) else "\n".join(strings_in(c))


def claude_events(body):
    """The conversation of a Messages request as _role's events (a call's command is None unless
    it is a Bash call)."""
    msgs = [m for m in body.get("messages", []) if isinstance(m, dict) and m.get("role") in ("user", "assistant")]
    events = []
    for m in msgs:
        content = m.get("content")
        blocks = [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []
        if m["role"] == "assistant":
            events += [("call", (b.get("input") or {}).get("command") if b.get("name") == "Bash" else None)
                       for b in blocks if b.get("type") == "tool_use"]
            continue
        tool_results = [b for b in blocks if b.get("type") == "tool_result"]
        if tool_results:
            events += [("result", _claude_result_text(b)) for b in tool_results]
        else:
            events.append(("prompt", _claude_texts(content)))
    return events


def claude_action(body):
    """None (not ours) or (tool, input) / ('text', text)."""
    if not isinstance(body, dict):
        return None
    return _role(claude_events(body), lambda c: ("Bash", {"command": c, "description": "host-e2e policy agent"}))


# ---------------------------------------------------------------- Codex (OpenAI Responses)

OUTPUT_TYPES = ("function_call_output", "custom_tool_call_output", "mcp_tool_call_output")


def _codex_texts(item):
    return [c.get("text", "") for c in item.get("content") or [] if isinstance(c, dict)]


def codex_events(inp):
    """The conversation of a Responses request's input as _role's events (a call's command is None
    unless it is an exec_command call)."""
    events = []
    for it in inp:
        if not isinstance(it, dict):
            continue
        kind = it.get("type", "message")
        if kind == "message" and it.get("role") == "user":
            events.append(("prompt", _codex_texts(it)))
        elif kind == "function_call":
            try:
                args = json.loads(it.get("arguments") or "{}")
            except ValueError:
                args = {}
            cmd = args.get("cmd") if isinstance(args, dict) else None
            events.append(("call", cmd if it.get("name") == "exec_command" and isinstance(cmd, str) else None))
        elif kind in ("custom_tool_call", "mcp_tool_call", "local_shell_call"):
            events.append(("call", None))
        elif kind in OUTPUT_TYPES:
            o = it.get("output")
            events.append(("result", o if isinstance(o, str) else "\n".join(strings_in(o))))
    return events


def codex_action(body):
    """None (not ours) or (tool, args) / ('text', text)."""
    inp = body.get("input") if isinstance(body, dict) else None
    if not isinstance(inp, list):
        return None
    return _role(codex_events(inp), lambda c: ("exec_command", {"cmd": c}))
