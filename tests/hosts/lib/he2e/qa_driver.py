"""kijito-qa addition: the fake model as the kijito-memory-qa skill's steps 3-5 (two cold boots by
fresh verifier agents, digest again, record, then the compaction request), driven only by what a
real model would see in its request: the commands of the newest kijito-qa hook text in the
conversation (trusted hook output: SessionStart(startup), or after a compaction the re-entry's
command block), the results of its own tool calls, and, for a verifier agent, the one command in
its prompt. Stateless: every decision is recomputed from the request body.

Who is asking is read from the latest user message that carries QA_MARKER or a verifier prompt
(role_start): a forked verifier's history also holds the main prompt, before its own.
Main agent (that message carries QA_MARKER), one tool call per response:
  pointer-digest -> verifier 1 -> verifier 2 -> pointer-digest -> qa-gate record
  -> `kijito-compact request` (when the hook text has that line and record printed the ready
  line) -> text.
  Claude Code: a verifier is one `Agent` call (subagent_type general-purpose) whose prompt is
  VERIFIER_PREFIX + the command; 2.1.328 runs it in the background ("Async agent launched") and
  its result arrives as a <task-notification>: the main agent ends its turn until it is there. Codex: `spawn_agent` (fork_context false,
  message VERIFIER_PREFIX + command) -> `wait_agent` -> `close_agent`, per verifier.
  With FORK_MARKER in the prompt the main agent forks instead (negative control); with MAIN_MARKER
  it runs both boot commands itself with its own shell tool (no verifier agent at all: the
  witnessed-boots rule must refuse the record, boot_by_main_agent).
Verifier agent (that message carries VERIFIER_PREFIX): runs the command with the host's shell tool,
then answers the tool output as text.
"""
import json
import re

from .common import strings_in

QA_MARKER = "HOST-E2E-QA-BOOTS"
# Negative control: with this marker the main agent forks its conversation into the verifiers
# (Claude Code subagent_type "fork", Codex fork_context true), which the skill forbids;
# check_boots.py --expect-fork must then find the main conversation in the verifiers' requests.
FORK_MARKER = "HOST-E2E-QA-FORK"
# kijito-qa: with this marker the main agent runs the two boot commands itself (its own
# shell tool calls, no subagent); `qa-gate record` must then refuse (boot_by_main_agent).
MAIN_MARKER = "HOST-E2E-QA-MAIN"
# kijito-qa: a user prompt with this marker (and any later one) is not a QA cycle, even when an older
# QA_MARKER prompt is still in the history (Codex keeps the user's messages across a compaction).
END_MARKER = "HOST-E2E-QA-END"
# Must equal the prompt the installed skill prescribes (scenarios/check_boots.py checks the skill).
VERIFIER_PREFIX = ("Run exactly this one shell command and reply with its exit status and its complete "
                   "stdout and stderr, nothing else: ")
HOOK_HEAD = "kijito-qa (trusted hook output)"
HEX64 = re.compile(r"\b[0-9a-f]{64}\b")
# a green pointer-snapshot report in a verifier's answer (Codex's wait_agent output escapes its quotes)
GREEN = re.compile(r'verdict\\*"\s*:\s*\\*"green')


REQUEST_HEAD = "- Right after `qa-gate record` succeeds, request the compaction"


def hook_commands(texts):
    """digest, snapshot A, snapshot B, record (and request, when the text has the
    `kijito-compact request` line) from the NEWEST kijito-qa hook text among texts (in conversation
    order): after a compaction that is the re-entry's command block, not the SessionStart(startup)
    text a host may still carry from before. The fake agent never takes a command from anywhere
    else (a summary or a user prompt)."""
    for t in reversed(texts):
        if HOOK_HEAD not in t or "--cold-boot-report" not in t:
            continue
        # the block from its last head on (a text may quote an older block before it)
        lines = [line.strip() for line in t[t.rindex(HOOK_HEAD):].splitlines()]
        def after(head, n=1):
            for i, line in enumerate(lines):
                if line.startswith(head):
                    return lines[i + 1:i + 1 + n]
            return []
        digest, boots, record = after("- Current pointer digest"), after("- Verify twice", 2), after("- Record the one-use")
        request = after(REQUEST_HEAD)
        if digest and len(boots) == 2 and record:
            return {"digest": digest[0], "boot_a": boots[0], "boot_b": boots[1], "record": record[0],
                    "request": request[0] if request and " request " in request[0] else None}
    return None


def strings_in_order(obj):
    """Every string inside a JSON value in document order (common.strings_in walks a stack, so its
    order is not the conversation's; the newest hook text must be the last one here)."""
    out, stack = [], [obj]
    while stack:
        o = stack.pop()
        if isinstance(o, str):
            out.append(o)
        elif isinstance(o, dict):
            stack.extend(reversed(list(o.values())))
        elif isinstance(o, list):
            stack.extend(reversed(o))
    return out


def _hex(output):
    m = HEX64.findall(output or "")
    return m[-1] if m else None


def _main_step(cmds, outputs, agent_calls):
    """The next action of the main agent after len(outputs) tool results: ('shell', cmd),
    ('agent', prompt), an agent_calls entry, or ('text', text)."""
    n = len(outputs)
    if n == 0:
        return ("shell", cmds["digest"])
    d = _hex(outputs[0])
    if d is None:
        return ("text", "HOST-E2E-QA: pointer-digest printed no digest; stopping.")
    boots = [VERIFIER_PREFIX + cmds[k].replace("<EXPECTED_POINTER_DIGEST>", d) for k in ("boot_a", "boot_b")]
    plan = []
    for prompt in boots:
        plan += agent_calls(prompt)
    if n <= len(plan):
        step = plan[n - 1]
        return step(outputs) if callable(step) else step
    if n == len(plan) + 1:
        # kijito-qa: both verifiers must have answered a green report (e.g. a reused report path is
        # refused, report_file_invalid): otherwise the agent stops, it records nothing
        if sum(bool(GREEN.search(o or "")) for o in outputs) < 2:
            return ("text", "HOST-E2E-QA: a verifier boot was not green; not recording.")
        return ("shell", cmds["digest"])
    if n == len(plan) + 2:
        if _hex(outputs[-1]) != d:
            return ("text", "HOST-E2E-QA: the pointer digest changed during the boots; not recording.")
        return ("shell", cmds["record"].replace("<POINTER_DIGEST>", d))
    # kijito-qa: then the hook text's `kijito-compact request` line, as the last action of the turn
    # (only once record succeeded: its output is the ready line, which names the pass)
    if n == len(plan) + 3 and cmds.get("request") and '"kijito.compaction.ready"' in (outputs[-1] or ""):
        return ("shell", cmds["request"])
    return ("text", "HOST-E2E-QA: done; last helper printed: %s" % (outputs[-1] or "")[:400])


def role_start(user_texts):
    """(index, 'main'|'verifier') of the latest user message that carries QA_MARKER or a verifier
    prompt (a forked verifier's history holds the main prompt before its own), else None."""
    for i in range(len(user_texts) - 1, -1, -1):
        if any(VERIFIER_PREFIX in t for t in user_texts[i]):
            return (i, "verifier")
        if any(END_MARKER in t for t in user_texts[i]):
            return None
        if any(QA_MARKER in t for t in user_texts[i]):
            return (i, "main")
    return None


def _verifier_command(text):
    i = text.find(VERIFIER_PREFIX)
    return text[i + len(VERIFIER_PREFIX):].split("\n", 1)[0].strip() if i >= 0 else None


# ------------------------------------------------------------------ Claude Code (Messages)

def _claude_texts(content):
    if isinstance(content, str):
        return [content]
    return [b.get("text", "") for b in content or [] if isinstance(b, dict) and b.get("type") == "text"]


def _claude_results(content):
    out = []
    for b in content if isinstance(content, list) else []:
        if isinstance(b, dict) and b.get("type") == "tool_result":
            c = b.get("content")
            out.append(c if isinstance(c, str) else "\n".join(strings_in(c)))
    return out


ASYNC_LAUNCHED = "Async agent launched"
NOTIFICATION = re.compile(r"<task-notification>.*?<tool-use-id>([^<]+)</tool-use-id>.*?</task-notification>", re.S)
NOTE_RESULT = re.compile(r"<result>(.*?)</result>", re.S)


def _claude_results_ids(content):
    """(tool_use_id, text) of the tool results of one message."""
    out = []
    for b in content if isinstance(content, list) else []:
        if isinstance(b, dict) and b.get("type") == "tool_result":
            c = b.get("content")
            out.append((b.get("tool_use_id"), c if isinstance(c, str) else "\n".join(strings_in(c))))
    return out


def _claude_notifications(body):
    """{tool_use_id: result text} of the <task-notification>s in the request (Claude Code 2.1.328
    runs an Agent subagent in the background: the Agent call answers "Async agent launched ...",
    the subagent's final text arrives later as a task notification naming the Agent call's
    tool-use id; measured in the agent-* TUI scenarios)."""
    out = {}
    for t in strings_in(body.get("messages")) + strings_in(body.get("system")):
        for m in NOTIFICATION.finditer(t):
            r = NOTE_RESULT.search(m.group(0))
            out.setdefault(m.group(1).strip(), r.group(1) if r else "")
    return out


def claude_action(body):
    """None (not ours) or ('Bash', input) / ('Agent', input) / ('text', text)."""
    if not isinstance(body, dict):
        return None
    tools = {t.get("name") for t in body.get("tools") or [] if isinstance(t, dict)}
    msgs = [m for m in body.get("messages", []) if isinstance(m, dict) and m.get("role") in ("user", "assistant")]
    if "Bash" not in tools:
        return None
    start = role_start([_claude_texts(m.get("content")) if m["role"] == "user" else [] for m in msgs])
    if start is not None and start[1] == "main" and "Agent" in tools:
        fork = any(FORK_MARKER in t for t in _claude_texts(msgs[start[0]].get("content")))
        itself = any(MAIN_MARKER in t for t in _claude_texts(msgs[start[0]].get("content")))
        start = start[0]
        cmds = hook_commands(strings_in_order(body.get("messages")))
        if cmds is None:
            return ("text", "HOST-E2E-QA: no kijito-qa commands in the hook context; stopping.")
        # kijito-qa: a background verifier's result is its task notification; until it is there the
        # main agent waits (ends its turn; Claude Code submits the notification when it comes).
        notes = _claude_notifications(body)
        outputs = []
        for m in msgs[start:]:
            for tid, r in _claude_results_ids(m.get("content")) if m["role"] == "user" else []:
                if r.startswith(ASYNC_LAUNCHED) or (ASYNC_LAUNCHED in r[:200]):
                    if tid not in notes:
                        return ("text", "HOST-E2E-QA: waiting for the background verifier agent to finish.")
                    r = notes[tid]
                outputs.append(r)
        agent = lambda prompt: [("Agent", {"description": "cold boot verifier", "prompt": prompt,  # noqa: E731
                                           "subagent_type": "fork" if fork else "general-purpose"})]
        if itself:
            agent = lambda prompt: [("shell", prompt[len(VERIFIER_PREFIX):])]  # noqa: E731
        act = _main_step(cmds, outputs, agent)
        if act[0] == "shell":
            return ("Bash", {"command": act[1], "description": "kijito-qa helper"})
        return act
    if start is None or start[1] != "verifier":
        return None
    cmd = next((c for c in map(_verifier_command, _claude_texts(msgs[start[0]].get("content"))) if c), None)
    # results after the prompt's message (a fork's prompt shares its message with the Agent call's
    # own "Fork started" result)
    outputs = [r for m in msgs[start[0] + 1:] if m["role"] == "user" for r in _claude_results(m.get("content"))]
    if not outputs:
        return ("Bash", {"command": cmd, "description": "cold boot"})
    return ("text", "exit status and output of the command:\n%s" % outputs[-1][:8000])


# ------------------------------------------------------------------ Codex (Responses)

def _codex_texts(item):
    c = item.get("content")
    if isinstance(c, str):
        return [c]
    return [b.get("text", "") for b in c or [] if isinstance(b, dict)]


def _agent_id(output):
    try:
        d = json.loads(output)
        for k in ("agent_id", "id", "target"):
            if isinstance(d.get(k), str):
                return d[k]
    except (ValueError, AttributeError):
        pass
    m = re.search(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", output or "")
    return m.group(0) if m else None


def codex_action(body):
    """None (not ours) or ('exec_command', args) / ('spawn_agent'|'wait_agent'|'close_agent', args) /
    ('text', text)."""
    inp = body.get("input") if isinstance(body, dict) else None
    if not isinstance(inp, list):
        return None
    items = [it for it in inp if isinstance(it, dict)]
    is_user = lambda it: it.get("type", "message") == "message" and it.get("role") == "user"  # noqa: E731
    found = role_start([_codex_texts(it) if is_user(it) else [] for it in items])
    start = found[0] if found and found[1] == "main" else None
    outputs = lambda since: [o.get("output") if isinstance(o.get("output"), str)  # noqa: E731
                             else "\n".join(strings_in(o.get("output")))
                             for o in items[since:] if o.get("type") == "function_call_output"]
    if start is not None:
        cmds = hook_commands([t for it in items if it.get("type", "message") == "message" for t in _codex_texts(it)])
        if cmds is None:
            return ("text", "HOST-E2E-QA: no kijito-qa commands in the hook context; stopping.")

        fork = any(FORK_MARKER in t for t in _codex_texts(items[start]))
        itself = any(MAIN_MARKER in t for t in _codex_texts(items[start]))

        def agent(prompt):
            if itself:
                return [("shell", prompt[len(VERIFIER_PREFIX):])]
            return [("spawn_agent", {"message": prompt, "fork_context": fork}),
                    lambda outs: ("wait_agent", {"targets": [_agent_id(outs[-1])], "timeout_ms": 120000}),
                    lambda outs: ("close_agent", {"target": _agent_id(outs[-2])})]
        act = _main_step(cmds, outputs(start), agent)
        if act[0] == "shell":
            return ("exec_command", {"cmd": act[1]})
        return act
    if not found:
        return None
    cmd = next((c for c in map(_verifier_command, _codex_texts(items[found[0]])) if c), None)
    outs = outputs(found[0])
    if not outs:
        return ("exec_command", {"cmd": cmd})
    return ("text", "exit status and output of the command:\n%s" % outs[-1][:8000])


CODEX_AGENT_NAMESPACE = "multi_agent_v1"
CODEX_AGENT_TOOLS = ("spawn_agent", "wait_agent", "close_agent")
