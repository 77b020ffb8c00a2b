"""A stdio server's pipes with no task in between (``engine.mcp.stdio_direct``): requests written by the task that
sends them (the same JSON line the SDK's writer task would send, without a loop turn; a full pipe waits for its
reader; a gone reader and a closed stream are the errors the SDK's dispatcher knows), answers read by the receiver
itself (whole lines however the pipe cuts them, no read-ahead, parse errors handed on, the end of stdout ends the
stream), and the SDK's own stop and drain around them."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest
from anyio.abc import Process
from mcp import StdioServerParameters
from mcp.shared.message import SessionMessage
from mcp.types import JSONRPCRequest, JSONRPCResponse, TextContent

from engine.mcp.stdio_direct import DirectReadStream, DirectWriteStream, stdio_transport
from tests.engine.mcp.helpers import FIXTURE_SERVER

#: Echoes each line back as soon as it is whole.
CAT = [
    sys.executable,
    "-c",
    "import sys\nfor line in sys.stdin.buffer:\n    sys.stdout.buffer.write(line)\n    sys.stdout.flush()",
]


def request(i: int, text: str = "hi") -> SessionMessage:
    return SessionMessage(JSONRPCRequest(jsonrpc="2.0", id=i, method="tools/call", params={"name": "e", "t": text}))


@contextlib.asynccontextmanager
async def child(command: list[str]) -> AsyncIterator[Process]:
    """A child with pipes, killed on the way out."""
    async with await anyio.open_process(command) as process:
        try:
            yield process
        finally:
            with contextlib.suppress(ProcessLookupError):
                process.kill()


async def read_line(process: Process) -> bytes:
    assert process.stdout is not None
    data = b""
    while not data.endswith(b"\n"):
        data += await process.stdout.receive()
    return data


async def test_a_request_is_written_by_the_sender_without_a_loop_turn() -> None:
    async with child(CAT) as process:
        stream = DirectWriteStream(process.stdin)
        msg = request(1, "héllo")
        step = stream.send(msg)
        with pytest.raises(StopIteration):  # finished on its first step: it never gave the loop a turn
            step.send(None)
        expected = msg.message.model_dump_json(by_alias=True, exclude_unset=True) + "\n"
        assert (await read_line(process)).decode() == expected  # what the SDK's writer task sends


async def test_a_message_bigger_than_the_pipe_waits_for_its_reader_and_arrives_whole() -> None:
    async with child(CAT) as process:
        stream = DirectWriteStream(process.stdin)
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
    async with child([sys.executable, "-c", "pass"]) as process:
        await process.wait()
        stream = DirectWriteStream(process.stdin)
        with pytest.raises(anyio.BrokenResourceError):
            for i in range(100):  # the first write may still land in the pipe's buffer before EPIPE shows
                await stream.send(request(i, "y" * 100_000))
        await stream.aclose()
        with pytest.raises(anyio.ClosedResourceError):
            await stream.send(request(9))


class Chunks:
    """A stdout that hands out the given chunks, then ends (``anyio.EndOfStream``), as anyio's pipe stream does."""

    def __init__(self, *chunks: bytes) -> None:
        self.chunks = list(chunks)
        self.reads = 0

    async def receive(self) -> bytes:
        self.reads += 1
        if not self.chunks:
            raise anyio.EndOfStream
        return self.chunks.pop(0)


def response(i: int, text: str) -> bytes:
    return JSONRPCResponse(jsonrpc="2.0", id=i, result={"t": text}).model_dump_json(by_alias=True).encode() + b"\n"


async def test_lines_are_whole_and_in_order_however_the_pipe_cuts_them() -> None:
    one, two, three = response(1, "é" * 3), response(2, "b"), response(3, "c")
    both = one + two
    cut = both.index("é".encode()) + 1  # inside a two-byte character
    stdout = Chunks(both[:cut], both[cut:-5], both[-5:] + three[:4], three[4:])
    got = [item async for item in DirectReadStream(stdout)]
    answers = [m.message for m in got if isinstance(m, SessionMessage) and isinstance(m.message, JSONRPCResponse)]
    assert len(got) == 3 and [a.id for a in answers] == [1, 2, 3]
    assert answers[0].result == {"t": "ééé"}


async def test_reads_only_when_asked_and_a_line_that_is_not_json_rpc_is_handed_on_as_its_error() -> None:
    stdout = Chunks(b"not json\n" + response(5, "x"), b'{"bad": "\xff\xfe"}\n' + response(6, "y"))
    stream = DirectReadStream(stdout)
    first = await stream.receive()
    assert isinstance(first, ValueError)  # the session's message handler counts it (malformed_messages)
    assert stdout.reads == 1  # the second line was in the same chunk: no read ahead of the receiver
    assert (await stream.receive()).message.id == 5  # type: ignore[union-attr]
    assert stdout.reads == 1
    assert isinstance(await stream.receive(), ValueError)  # not UTF-8: that line is malformed, the stream goes on
    assert stdout.reads == 2
    assert (await stream.receive()).message.id == 6  # type: ignore[union-attr]
    with pytest.raises(anyio.EndOfStream):  # the child closed its stdout: the requests still waiting fail
        await stream.receive()
    with pytest.raises(anyio.EndOfStream):
        await stream.receive()
    stream.close()
    with pytest.raises(anyio.ClosedResourceError):
        await stream.receive()


async def test_a_tool_call_through_the_transport_and_a_stop_that_drains_a_server_blocked_writing(
    tmp_path: Path,
) -> None:
    """The SDK's own session over ``stdio_transport``; then a child that never reads stdin and is stuck writing
    stdout is drained (so it can finish its write) and stopped by the SDK's escalation, within its bound."""
    from mcp import ClientSession

    server = StdioServerParameters(command=sys.executable, args=[FIXTURE_SERVER])
    async with stdio_transport(server) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        result = await session.call_tool("echo", {"text": "hi"})
        assert [c.text for c in result.content if isinstance(c, TextContent)] == ["hi"]
    flood = (
        "import signal, sys\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        "sys.stdout.write('x' * 1_000_000)\nsys.stdout.flush()\nsys.stdin.read()\nopen(sys.argv[1], 'w').write('done')"
    )
    marker = tmp_path / "exited-cleanly"
    async with stdio_transport(StdioServerParameters(command=sys.executable, args=["-c", flood, str(marker)])):
        await anyio.sleep(0.2)  # the child is now blocked on its full stdout pipe
    # Without the drain it would still be blocked writing when its stdin closed, and be killed (SIGKILL) instead.
    assert marker.read_text() == "done"
