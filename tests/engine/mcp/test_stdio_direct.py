"""Requests to a stdio server are written by the task that sends them (``engine.mcp.stdio_direct``): the same JSON
line the SDK's writer task would send, without a loop turn; a full pipe waits for its reader; a gone reader and a
closed stream are the errors the SDK's dispatcher knows."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest
from anyio.abc import Process
from mcp.shared.message import SessionMessage
from mcp.types import JSONRPCRequest

from engine.mcp.stdio_direct import DirectWriteStream

#: Echoes each line back as soon as it is whole.
CAT = [
    sys.executable,
    "-c",
    "import sys\nfor line in sys.stdin.buffer:\n    sys.stdout.buffer.write(line)\n    sys.stdout.flush()",
]


def request(i: int, text: str = "hi") -> SessionMessage:
    return SessionMessage(JSONRPCRequest(jsonrpc="2.0", id=i, method="tools/call", params={"name": "e", "t": text}))


@contextlib.asynccontextmanager
async def child(command: list[str]) -> AsyncIterator[tuple[Process, Any, Any]]:
    """A child with pipes, and the SDK-side write stream a DirectWriteStream is handed (it carries nothing)."""
    inner_send, inner_receive = anyio.create_memory_object_stream[SessionMessage](0)
    async with await anyio.open_process(command) as process:
        try:
            yield process, inner_send, inner_receive
        finally:
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            inner_receive.close()


async def read_line(process: Process) -> bytes:
    assert process.stdout is not None
    data = b""
    while not data.endswith(b"\n"):
        data += await process.stdout.receive()
    return data


async def test_a_request_is_written_by_the_sender_without_a_loop_turn() -> None:
    async with child(CAT) as (process, inner, _):
        stream = DirectWriteStream(inner, process.stdin)
        msg = request(1, "héllo")
        step = stream.send(msg)
        with pytest.raises(StopIteration):  # finished on its first step: it never gave the loop a turn
            step.send(None)
        expected = msg.message.model_dump_json(by_alias=True, exclude_unset=True) + "\n"
        assert (await read_line(process)).decode() == expected  # what the SDK's writer task sends


async def test_a_message_bigger_than_the_pipe_waits_for_its_reader_and_arrives_whole() -> None:
    async with child(CAT) as (process, inner, _):
        stream = DirectWriteStream(inner, process.stdin)
        big, small = request(2, "x" * 1_000_000), request(3)
        lines = [(m.message.model_dump_json(by_alias=True, exclude_unset=True) + "\n").encode() for m in (big, small)]
        received = bytearray()

        async def reader() -> None:
            assert process.stdout is not None
            while len(received) < len(lines[0]) + len(lines[1]):
                received.extend(await process.stdout.receive())

        async with anyio.create_task_group() as tg:
            tg.start_soon(reader)
            await stream.send(big)  # 1 MB: the pipe holds 64 KiB, so this waits while the child reads
            await stream.send(small)
        assert bytes(received) == lines[0] + lines[1]


async def test_a_gone_reader_and_a_closed_stream_are_the_errors_the_dispatcher_knows() -> None:
    async with child([sys.executable, "-c", "pass"]) as (process, inner, inner_receive):
        await process.wait()
        stream = DirectWriteStream(inner, process.stdin)
        with pytest.raises(anyio.BrokenResourceError):
            for i in range(100):  # the first write may still land in the pipe's buffer before EPIPE shows
                await stream.send(request(i, "y" * 100_000))
        await stream.aclose()
        with pytest.raises(anyio.EndOfStream):  # closing it closed the SDK's own write stream too
            inner_receive.receive_nowait()
        with pytest.raises(anyio.ClosedResourceError):
            await stream.send(request(9))
