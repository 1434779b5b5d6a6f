# wakeprobe's Agent SDK host (Python SDK, `claude-agent-sdk`): the program a run of driver mode
# `sdk-py` starts in place of the CLI. It drives the real CLI through `ClaudeSDKClient` and
# speaks the CLI's stream-json protocol on both ends, as the TypeScript host (host.mjs) does:
#
#   stdin   stream-json lines: user messages (the first is the prompt) and `control_request`
#           lines `interrupt` and `stop_task`; end of input ends the session's input (a string
#           prompt, `query()`, ignores everything after the first line).
#   stdout  every message the SDK yields, as JSON (system messages as the SDK keeps them, the
#           others from their fields), and the host's own `{"type":"wakeprobe_sdk",...}` lines:
#           `hook` (a hook given as a callback fired), `can_use_tool`, `error`, `ended`.
#   stderr  the CLI's stderr, forwarded.
#
# Settings come from the JSON file WAKEPROBE_SDK_CONFIG names. The SDK merges the host's
# environment into the CLI's, and the harness built the host's environment from nothing.
import asyncio
import dataclasses
import json
import os
import sys

from claude_agent_sdk import (
    ClaudeAgentOptions,
    ClaudeSDKClient,
    HookMatcher,
    PermissionResultAllow,
    ResultMessage,
    SystemMessage,
    query,
)

CONFIG = json.load(open(os.environ["WAKEPROBE_SDK_CONFIG"]))


def emit(value):
    sys.stdout.write(json.dumps(value, default=str) + "\n")
    sys.stdout.flush()


def own(event, **fields):
    emit({"type": "wakeprobe_sdk", "event": event, **fields})


def as_line(message):
    """A yielded message as a stream-json-shaped object."""
    if isinstance(message, SystemMessage):
        return {"type": "system", "subtype": message.subtype, **message.data}
    fields = dataclasses.asdict(message) if dataclasses.is_dataclass(message) else {}
    kind = type(message).__name__
    if isinstance(message, ResultMessage):
        return {"type": "result", **fields}
    names = {"AssistantMessage": "assistant", "UserMessage": "user", "StreamEvent": "stream_event"}
    return {"type": names.get(kind, kind), **fields}


def text_of(line):
    content = (line.get("message") or {}).get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(b.get("text", "") for b in content if b.get("type") == "text")
    return ""


async def stdin_lines():
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    while True:
        raw = await reader.readline()
        if not raw:
            return
        raw = raw.decode("utf-8", "replace").strip()
        if not raw:
            continue
        try:
            yield json.loads(raw)
        except json.JSONDecodeError:
            own("error", message=f"the host ignored an input line that is not JSON: {raw[:80]}")


def callback(name):
    async def fired(payload, tool_use_id, context):
        own("hook", payload=payload)
        return {}

    return fired


async def can_use_tool(tool_name, tool_input, context):
    own(
        "can_use_tool",
        tool_name=tool_name,
        tool_use_id=getattr(context, "tool_use_id", None),
        agent_id=getattr(context, "agent_id", None),
        answer="allow",
    )
    return PermissionResultAllow(updated_input=tool_input)


def options():
    extra = {} if CONFIG.get("persist_session", True) else {"no-session-persistence": None}
    return ClaudeAgentOptions(
        cwd=CONFIG["cwd"],
        cli_path=CONFIG["cli_path"],
        env=dict(os.environ),
        permission_mode=CONFIG["permission_mode"],
        allowed_tools=CONFIG["allowed_tools"],
        setting_sources=["project", "local"],
        hooks={n: [HookMatcher(hooks=[callback(n)])] for n in CONFIG.get("callback_hooks", [])},
        can_use_tool=can_use_tool,
        extra_args=extra,
        stderr=lambda data: sys.stderr.write(data),
    )


async def control(client, line):
    request = line.get("request") or {}
    subtype = request.get("subtype")
    rid = line.get("request_id")

    def answer(kind, **extra):
        emit({"type": "control_response", "response": {"subtype": kind, "request_id": rid, **extra}})

    try:
        if subtype == "interrupt":
            await client.interrupt()
            answer("success", response={})
        elif subtype == "stop_task":
            await client.stop_task(request.get("task_id"))
            answer("success", response={})
        else:
            answer("error", error=f"the SDK host has no call for control request `{subtype}`")
    except Exception as e:  # the SDK's error is the evidence
        answer("error", error=str(e))


async def streamed(first, lines):
    async with ClaudeSDKClient(options()) as client:
        # Drained by a task of its own: a timeout around the iterator would cancel it.
        async def drain():
            async for message in client.receive_messages():
                emit(as_line(message))

        reader = asyncio.create_task(drain())
        await client.query(text_of(first))
        async for line in lines:
            if line.get("type") == "user":
                await client.query(text_of(line))
            elif line.get("type") == "control_request":
                await control(client, line)
        # End of input: the CLI finishes what runs and ends; the stream ends with it. (The
        # client's own `disconnect` would stop the CLI at once; closing its stdin is what a
        # session's end is. `_transport` is the pinned release's field.)
        await client._transport.end_input()
        await reader


async def once(first):
    async for message in query(prompt=text_of(first), options=options()):
        emit(as_line(message))


async def main():
    lines = stdin_lines()
    first = await anext(lines, None)
    if not first or first.get("type") != "user":
        own("error", message="the host's first input line must be the prompt, a user message")
        sys.exit(2)
    try:
        if CONFIG.get("prompt_form") == "string":
            await once(first)
        else:
            await streamed(first, lines)
        own("ended")
    except Exception as e:
        own("error", message=repr(e))
        sys.exit(1)


asyncio.run(main())
