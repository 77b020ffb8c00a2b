"""A stdio server's messages go straight between the pipes and the tasks that use them, with no task in between.

Why it exists: the SDK's ``stdio_client`` runs two tasks of its own per server: a writer that takes each outgoing
message from a memory stream, serialises it and writes it to the child's stdin, and a reader that reads the child's
stdout, parses each line and hands it through another memory stream to the session's receive loop. Each hop costs
a request (and again its answer) a turn of the event loop and the CPU of waking that task and of the memory
stream's checkpoints: on an MCP tool call to a quick stdio server the raw SDK spends 10 loop turns, this transport 5.

- ``DirectWriteStream``: the sending task writes the same JSON line straight into the pipe's buffer; it waits only
  when that buffer is over its high-water mark (a server that stopped reading), exactly where the SDK's writer
  would wait.
- ``DirectReadStream``: the session's receive loop reads the child's stdout itself, one line at a time, parsed as
  the SDK parses it (a line that is not JSON-RPC is handed on as the parse error, which the session reports).
- ``stdio_transport``: the child spawned, stopped and drained by the SDK's own steps (``mcp.client.stdio``: the
  spawn in a process group of its own, the environment, closing stdin then the kill escalation, draining stdout
  meanwhile so a server blocked writing can exit), with these two streams in place of the SDK's tasks.

Errors are the ones the SDK's dispatcher knows: a write to a pipe the child closed raises
``anyio.BrokenResourceError`` (after ``aclose``: ``anyio.ClosedResourceError``); the child's stdout ending ends the
read stream (``anyio.EndOfStream``, or the end of ``async for``), which fails the requests still waiting with
``CONNECTION_CLOSED``.
"""

from __future__ import annotations

import asyncio
import codecs
import sys
from collections import deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, TextIO

import anyio
import mcp.client.stdio as sdk_stdio
import mcp.types as types
from anyio.abc import ObjectReceiveStream, ObjectSendStream
from mcp.shared.message import SessionMessage

from engine._compat.anyio_streams import asyncio_writer
from engine._compat.mcp_sdk import executable_command, spawn_stdio_process, stop_stdio_process

#: Write errors of a pipe whose reader is gone (uvloop raises RuntimeError where the stdlib raises the others).
_PIPE_GONE = (ConnectionResetError, BrokenPipeError, RuntimeError)


class DirectWriteStream(ObjectSendStream[SessionMessage]):
    """Writes each ``SessionMessage`` as one JSON line to ``stdin`` (the child's anyio ``ByteSendStream``).

    When ``stdin`` wraps an asyncio ``StreamWriter`` (anyio's asyncio backend) the line goes into its buffer at once;
    otherwise it is sent through ``stdin.send`` (one checkpoint, still no task in between). ``async with`` closes it
    (anyio's ``ObjectSendStream``).
    """

    __slots__ = ("_closed", "_encoding", "_errors", "_stdin", "_writer")

    def __init__(self, stdin: Any, encoding: str = "utf-8", errors: str = "strict") -> None:
        self._stdin = stdin
        self._writer: asyncio.StreamWriter | None = asyncio_writer(stdin)
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
        self._closed = True  # the pipe itself is closed by the transport's stop (stdin first, as the SDK does)


def parse_line(line: str) -> SessionMessage | Exception:
    """One stdout line as the SDK's stdio reader parses it: the message, or the parse error as a value."""
    try:
        return SessionMessage(types.jsonrpc_message_adapter.validate_json(line, by_name=False))
    except ValueError as e:  # pydantic's ValidationError is a ValueError
        return e


class DirectReadStream(ObjectReceiveStream[SessionMessage | Exception]):
    """The child's stdout (an anyio ``ByteReceiveStream``) as the SDK transport's read stream of ``SessionMessage``.

    Reads happen only when the receiver asks for the next message, so nothing is read ahead of a receiver that is
    busy (as the SDK's reader waits for its delivery). A line is kept in pieces until its newline arrives, so a
    10 MB result costs one join, not a copy per chunk. ``async for`` and ``async with`` are anyio's
    ``ObjectReceiveStream``'s, over ``receive`` and ``aclose``.
    """

    __slots__ = ("_closed", "_decoder", "_encoding", "_ended", "_lines", "_partial", "_reading", "_stdout")

    def __init__(self, stdout: Any, encoding: str = "utf-8", errors: str = "strict") -> None:
        self._stdout = stdout
        self._encoding = encoding
        self._decoder = codecs.getincrementaldecoder(encoding)(errors)
        self._lines: deque[str] = deque()
        self._partial: list[str] = []
        self._closed = False
        self._ended = False
        #: A receive is waiting on the pipe (the drain at shutdown must not read beside it).
        self._reading = False

    async def receive(self) -> SessionMessage | Exception:
        lines = self._lines
        while not lines:
            if self._closed:
                raise anyio.ClosedResourceError
            if self._ended:
                raise anyio.EndOfStream
            self._reading = True
            try:
                chunk = await self._stdout.receive()
            except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
                self._ended = True  # the child closed its stdout (or died): what the SDK's reader ends on too
                raise anyio.EndOfStream from None
            finally:
                self._reading = False
            try:
                text = self._decoder.decode(chunk)
            except UnicodeDecodeError:  # a byte that is not the encoding's: that line fails to parse, the rest go on
                self._decoder.reset()
                text = chunk.decode(self._encoding, "replace")
            if "\n" not in text:
                self._partial.append(text)
                continue
            pieces = text.split("\n")
            if self._partial:
                self._partial.append(pieces[0])
                pieces[0] = "".join(self._partial)
                self._partial.clear()
            tail = pieces.pop()
            if tail:
                self._partial.append(tail)
            lines.extend(pieces)
        return parse_line(lines.popleft())

    def close(self) -> None:
        """No more messages for the receiver (shutdown); what is still in the pipe is left to ``drain``."""
        self._closed = True

    async def drain(self) -> None:
        """Read and drop the child's remaining stdout until it ends, so a server blocked writing can exit (the
        SDK's ``_drain_stdout``); waits its turn while a receive is still reading."""
        while True:
            if self._reading:
                await anyio.sleep(0.01)
                continue
            try:
                await self._stdout.receive()
            except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
                return

    async def aclose(self) -> None:
        self.close()


@asynccontextmanager
async def stdio_transport(
    params: sdk_stdio.StdioServerParameters, errlog: TextIO = sys.stderr
) -> AsyncIterator[tuple[DirectReadStream, DirectWriteStream]]:
    """The SDK's ``stdio_client`` for ``params`` with the direct streams in place of its reader and writer tasks:
    the same spawn (through ``mcp.client.stdio``, so a hook on its spawn sees the child) and the same stop."""
    command = await executable_command(params.command)
    process = await spawn_stdio_process(
        command=command,
        args=params.args,
        env=sdk_stdio.get_default_environment() | (params.env or {}),
        errlog=errlog,
        cwd=params.cwd,
    )
    # No await between the spawn and the try: a cancellation in that gap would leak the live child.
    read = DirectReadStream(process.stdout, params.encoding, params.encoding_error_handler)
    write = DirectWriteStream(process.stdin, params.encoding, params.encoding_error_handler)
    try:
        yield read, write
    finally:
        # Shutdown must finish even when the caller is cancelled, or the child would leak; every wait is bounded.
        with anyio.CancelScope(shield=True):
            read.close()
            await write.aclose()
            async with anyio.create_task_group() as tg:
                tg.start_soon(read.drain)
                await stop_stdio_process(process)
                tg.cancel_scope.cancel()
