"""A stdio server's requests written to its stdin by the task that sends them, not handed to a writer task first.

Why it exists: the SDK's ``stdio_client`` passes every outgoing message through a memory stream to a task of its
own that serialises it and writes it to the child's stdin. That costs each request two turns of the event loop
before it leaves (the sender's checkpoint in the memory stream's ``send``, then the writer task waking up) and the
CPU of waking that task: on an MCP tool call to a quick stdio server, about a third of the loop iterations the
client spends (10 → 7) and ~0.1 ms of its CPU. ``DirectWriteStream`` is the SDK transport's write stream (the
``WriteStream`` protocol of ``mcp.shared._stream_protocols``) that does the writer's job in place: the same JSON
line, written straight into the pipe's buffer; it waits only when that buffer is over its high-water mark (a
server that stopped reading), exactly where the SDK's writer would wait.

Everything else stays the SDK's: the child's spawn, environment and process group, its stdout reader, and the
shutdown (closing this stream closes the SDK's own write stream, so its writer task ends and the SDK's stop
sequence runs as before). A write to a pipe the child closed raises ``anyio.BrokenResourceError`` (a write after
``aclose`` ``anyio.ClosedResourceError``), which the SDK's dispatcher turns into ``CONNECTION_CLOSED`` for that
request, as it does for its own writer's failures.
"""

from __future__ import annotations

import asyncio
from typing import Any

import anyio
from mcp.shared.message import SessionMessage

#: Write errors of a pipe whose reader is gone (uvloop raises RuntimeError where the stdlib raises the others).
_PIPE_GONE = (ConnectionResetError, BrokenPipeError, RuntimeError)


class DirectWriteStream:
    """Writes each ``SessionMessage`` as one JSON line to ``stdin`` (the child's anyio ``ByteSendStream``).

    ``inner`` is the SDK's own write stream for the same child; it carries nothing, and is closed with this one.
    When ``stdin`` wraps an asyncio ``StreamWriter`` (anyio's asyncio backend) the line goes into its buffer at once;
    otherwise it is sent through ``stdin.send`` (one checkpoint, still no task in between).
    """

    __slots__ = ("_closed", "_encoding", "_errors", "_inner", "_stdin", "_writer")

    def __init__(self, inner: Any, stdin: Any, encoding: str = "utf-8", errors: str = "strict") -> None:
        self._inner = inner
        self._stdin = stdin
        writer = getattr(stdin, "_stream", None)
        self._writer: asyncio.StreamWriter | None = writer if isinstance(writer, asyncio.StreamWriter) else None
        self._encoding = encoding
        self._errors = errors
        self._closed = False

    async def send(self, item: SessionMessage, /) -> None:
        if self._closed:
            raise anyio.ClosedResourceError
        # What the SDK's stdin writer sends: the message's JSON, one line.
        line = item.message.model_dump_json(by_alias=True, exclude_unset=True) + "\n"
        data = line.encode(self._encoding, self._errors)
        writer = self._writer
        if writer is None:
            await self._stdin.send(data)
            return
        if writer.is_closing():
            raise anyio.BrokenResourceError
        try:
            writer.write(data)
            await writer.drain()  # returns at once unless the pipe's buffer is over its high-water mark
        except _PIPE_GONE as e:
            raise anyio.BrokenResourceError from e

    async def aclose(self) -> None:
        if not self._closed:
            self._closed = True
            await self._inner.aclose()

    async def __aenter__(self) -> DirectWriteStream:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
