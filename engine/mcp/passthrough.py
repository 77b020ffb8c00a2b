"""The media blocks of an MCP tool's result, kept for a caller that can take them as they are (the engine's endpoint).

Why it exists: a tool result becomes a ``ToolResult`` for the model, with images, audio and blobs summarised (type,
size, SHA-256) instead of inlined (``engine.mcp.results``). An agent calling the same tool through the engine's own
MCP endpoint should get what the server sent: the endpoint opens a ``collecting()`` box around the call, the
supervisor ``offer``s each raw result to it, and the endpoint sends the boxed blocks after the message. Outside a
box (a phone call, the CLI) offering costs one context-variable read.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from mcp.types import CallToolResult, ContentBlock, TextContent

_box: ContextVar[list[ContentBlock] | None] = ContextVar("mcp_passthrough", default=None)


@contextmanager
def collecting() -> Iterator[list[ContentBlock]]:
    """A box for the non-text blocks of the MCP results offered in this context (and tasks started from it)."""
    box: list[ContentBlock] = []
    token = _box.set(box)
    try:
        yield box
    finally:
        _box.reset(token)


def offer(result: CallToolResult) -> None:
    """Put ``result``'s images, audio, resources and links in the open box, if there is one."""
    box = _box.get()
    if box is not None:
        box.extend(block for block in result.content if not isinstance(block, TextContent))
