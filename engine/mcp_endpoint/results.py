"""ToolResult → MCP CallToolResult, and progress reporting from an engine tool to the MCP caller.

Why it exists: other agents read the engine's results over MCP. The contract is fixed: the text content is the
result's speakable ``message``, ``structuredContent`` is ``{status, message, data}`` and ``isError`` is set for
every status but ``success`` (so a rejected argument or a timeout is a result the calling model can read, not a
protocol error). A tool that really produces media may put MCP content blocks under ``data["mcp_content"]``
(a list of content-block objects as the MCP spec writes them); they follow the message in ``content`` and are left
out of ``structuredContent``; so do the media of an MCP server's tool, as that server sent them (its ``data`` has
them summarised). ``report_progress`` lets any tool tell an MCP caller how far it is, and ``close_stream`` lets a
long one end the call's SSE stream so the client polls (SEP-1699: it reconnects after the retry interval and gets
what it missed); both do nothing when the tool runs for anything else (a phone call, the CLI).
"""

from __future__ import annotations

import contextvars
import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

import pydantic
from mcp.types import CallToolResult, ContentBlock, TextContent

from engine.tools.base import ToolResult

#: Key under ``ToolResult.data`` for MCP content blocks a tool wants sent as they are.
MCP_CONTENT_KEY = "mcp_content"

ProgressFn = Callable[[float, float | None, str | None], Awaitable[None]]
CloseFn = Callable[[], Awaitable[None]]
_progress: contextvars.ContextVar[ProgressFn | None] = contextvars.ContextVar("mcp_endpoint_progress", default=None)
_close: contextvars.ContextVar[CloseFn | None] = contextvars.ContextVar("mcp_endpoint_close_stream", default=None)
_CONTENT = pydantic.TypeAdapter(list[ContentBlock])


async def report_progress(progress: float, total: float | None = None, message: str | None = None) -> None:
    """Send a progress notification to the MCP client whose tools/call runs this tool (no-op otherwise)."""
    fn = _progress.get()
    if fn is not None:
        await fn(progress, total, message)


async def close_stream() -> bool:
    """End the SSE stream of the MCP tools/call running this tool; the client resumes it with Last-Event-ID.

    False (and nothing happens) when there is none to end: not an MCP call, a 2026 or pre-2025-11-25 client, or
    ``engine.mcp_server.resume.enabled`` off (the SDK offers it only with an event store).
    """
    fn = _close.get()
    if fn is None:
        return False
    await fn()
    return True


Bound = tuple[contextvars.Token[ProgressFn | None], contextvars.Token[CloseFn | None]]


def bind_progress(fn: ProgressFn | None, close: CloseFn | None = None) -> Bound:
    """Make ``report_progress`` reach ``fn`` and ``close_stream`` ``close`` in this task (around one call)."""
    return _progress.set(fn), _close.set(close)


def unbind_progress(token: Bound) -> None:
    _progress.reset(token[0])
    _close.reset(token[1])


def _split_content(data: Any) -> tuple[Any, list[ContentBlock], str | None]:
    """(data without the media blocks, the blocks, a problem with them if any)."""
    if not isinstance(data, Mapping) or MCP_CONTENT_KEY not in data:
        return data, [], None
    rest = {k: v for k, v in data.items() if k != MCP_CONTENT_KEY}
    try:
        blocks = _CONTENT.validate_python(data[MCP_CONTENT_KEY])
    except pydantic.ValidationError as e:
        first = e.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        return rest, [], f"data.{MCP_CONTENT_KEY}[{where}]: {first['msg']}"
    return rest, blocks, None


def _jsonable(value: Any) -> Any:
    """``data`` as plain JSON (tools may return dataclasses, dates …; they become strings)."""
    return json.loads(json.dumps(value, default=str, ensure_ascii=False))


def to_call_tool_result(result: ToolResult, passed: Sequence[ContentBlock] = ()) -> CallToolResult:
    """``passed``: the content blocks an MCP server behind the engine sent (``engine.mcp.passthrough``), whole."""
    data, blocks, problem = _split_content(result.data)
    status = result.status
    message = result.message
    if problem is not None:
        status, message = "error", f"The tool returned malformed MCP content: {problem}"
    structured: dict[str, Any] = {"status": status, "message": message, "data": _jsonable(data)}
    content: list[ContentBlock] = [TextContent(type="text", text=message)]
    content.extend(blocks)
    content.extend(passed)
    return CallToolResult(content=content, structured_content=structured, is_error=status != "success")
