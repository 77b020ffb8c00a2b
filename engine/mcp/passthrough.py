"""The media blocks of an MCP tool's result, kept for a caller that can take them as they are (the engine's endpoint).

Why it exists: a tool result becomes a ``ToolResult`` for the model, with images, audio and blobs summarised (type,
size, SHA-256) instead of inlined (``engine.mcp.results``). An agent calling the same tool through the engine's own
MCP endpoint should get what the server sent: the endpoint opens a ``collecting()`` box around the call, the
supervisor ``offer``s each raw result to it, and the endpoint sends the boxed blocks after the message. Outside a
box (a phone call, the CLI) offering costs one context-variable read.

Questions go the same way (MRTR, 2026-07-28): a server that needs input mid-call answers with an
``InputRequiredResult``. Inside an ``answering()`` box (the endpoint's 2026 client, who can answer, is the caller) a
call to a 2026 server is sent with the client's answers and state and may come back asking: the question is put in
the box for the endpoint to hand on, and the engine's call ends with an error result saying so. Outside a box the
SDK's client drives the rounds itself, with the engine's elicitation desk answering.
"""

from __future__ import annotations

from collections.abc import Awaitable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from mcp import Client
from mcp.shared.dispatcher import ProgressFnT
from mcp.types import CallToolResult, ContentBlock, InputRequiredResult, InputResponses, TextContent

from engine.core.scoped import bound

_box: ContextVar[list[ContentBlock] | None] = ContextVar("mcp_passthrough", default=None)


@dataclass
class Asking:
    """One endpoint request's answers and state for the server, and the server's question when it asks one."""

    input_responses: InputResponses | None = None
    request_state: str | None = None
    question: InputRequiredResult | None = None


_asking: ContextVar[Asking | None] = ContextVar("mcp_passthrough_asking", default=None)


@contextmanager
def collecting() -> Iterator[list[ContentBlock]]:
    """A box for the non-text blocks of the MCP results offered in this context (and tasks started from it)."""
    box: list[ContentBlock] = []
    with bound(_box, box):
        yield box


def offer(result: CallToolResult) -> None:
    """Put ``result``'s images, audio, resources and links in the open box, if there is one."""
    box = _box.get()
    if box is not None:
        box.extend(block for block in result.content if not isinstance(block, TextContent))


@contextmanager
def answering(input_responses: InputResponses | None, request_state: str | None) -> Iterator[Asking]:
    """A box for the calls in this context: sent with these answers; a server's question is kept, not answered."""
    box = Asking(input_responses, request_state)
    with bound(_asking, box):
        yield box


def asked_call(
    client: Client, name: str, arguments: dict[str, Any], timeout_s: float | None, progress: ProgressFnT | None
) -> Awaitable[CallToolResult] | None:
    """The call as the open ``answering()`` box wants it sent, or None outside one (send it as usual)."""
    box = _asking.get()
    return None if box is None else _call_asking(box, client, name, arguments, timeout_s, progress)


async def _call_asking(
    box: Asking,
    client: Client,
    name: str,
    arguments: dict[str, Any],
    timeout_s: float | None,
    progress: ProgressFnT | None,
) -> CallToolResult:
    got = await client.session.call_tool(
        name,
        arguments,
        timeout_s,
        progress,
        input_responses=box.input_responses,
        request_state=box.request_state,
        allow_input_required=True,
    )
    if isinstance(got, InputRequiredResult):
        box.question = got
        asked = ", ".join(sorted(got.input_requests or {})) or "nothing yet (state only)"
        return CallToolResult(
            content=[TextContent(type="text", text=f"The server asks its caller: {asked}")], is_error=True
        )
    return got
