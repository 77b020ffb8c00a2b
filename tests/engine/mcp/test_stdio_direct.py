"""Requests to a stdio server are written by the task that sends them (``engine.mcp.stdio_direct``): the same JSON
line the SDK's writer task would send, without a loop turn; a full pipe waits for its reader; a gone reader and a
closed stream are the errors the SDK's dispatcher knows; and a tool call takes fewer loop turns than the raw SDK's."""

from __future__ import annotations

import asyncio
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
from tests.engine.mcp.helpers import FIXTURE_SERVER, settings, stdio

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
        big = request(2, "x" * 1_000_000)
        expected = (big.message.model_dump_json(by_alias=True, exclude_unset=True) + "\n").encode()
        received = bytearray()

        async def reader() -> None:
            assert process.stdout is not None
            while len(received) < len(expected):
                received.extend(await process.stdout.receive())

        async with anyio.create_task_group() as tg:
            tg.start_soon(reader)
            await stream.send(big)
            await stream.send(request(3))
        assert bytes(received[: len(expected)]) == expected
        assert (await read_line(process)).startswith(bytes(received[len(expected) :]))


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


async def _loop_turns_per_call(call: Any, calls: int = 30) -> float:
    loop = asyncio.get_running_loop()
    turns = 0
    original = loop._run_once  # type: ignore[attr-defined]

    def counted() -> None:
        nonlocal turns
        turns += 1
        original()

    loop._run_once = counted  # type: ignore[attr-defined]
    try:
        for _ in range(calls):
            await call()
    finally:
        del loop._run_once  # type: ignore[attr-defined]
    return turns / calls


async def test_an_engine_call_takes_fewer_loop_turns_than_the_raw_sdk(make_engine: Any) -> None:
    from mcp import StdioServerParameters
    from mcp.client.session import ClientSession
    from mcp.client.stdio import stdio_client

    from engine.sessions.session import CallSession

    engine = await make_engine(settings({"fx": stdio(mode="legacy")}))
    session = CallSession(call_id="c", context="c", provider="p")
    session.shown_tools = frozenset({"mcp_fx_echo"})

    async def engine_call() -> None:
        r = await engine.execute_tool(session, "mcp_fx_echo", {"text": "hi"})
        assert (r.status, r.message) == ("success", "hi")

    params = StdioServerParameters(command=sys.executable, args=[FIXTURE_SERVER])
    async with stdio_client(params) as (read, write), ClientSession(read, write) as raw:
        await raw.initialize()

        async def raw_call() -> None:
            r = await raw.call_tool("echo", {"text": "hi"})
            assert not r.is_error

        for _ in range(5):  # first calls set up what later calls reuse
            await engine_call()
            await raw_call()
        engine_turns = await _loop_turns_per_call(engine_call)
        raw_turns = await _loop_turns_per_call(raw_call)
    # The SDK's writer task costs each request two turns; nothing the engine adds may cost one.
    assert engine_turns <= raw_turns - 1.5, (engine_turns, raw_turns)
