"""One built-in server over streamable HTTP (``--http PORT``), reached with the SDK's HTTP client."""

from __future__ import annotations

import asyncio
import socket
import sys
from pathlib import Path

from mcp import Client
from mcp.types import TextContent

REPO = Path(__file__).resolve().parents[3]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def _wait_listening(port: int, process: asyncio.subprocess.Process) -> None:
    for _ in range(200):
        if process.returncode is not None:
            raise AssertionError(f"server exited early with code {process.returncode}")
        try:
            _, writer = await asyncio.open_connection("127.0.0.1", port)
        except OSError:
            await asyncio.sleep(0.05)
            continue
        writer.close()
        await writer.wait_closed()
        return
    raise AssertionError(f"server did not listen on 127.0.0.1:{port}")


async def _start_dice() -> tuple[int, asyncio.subprocess.Process]:
    """The dice server on a free port, listening. A port picked free can be taken before the server binds it (the
    suite starts many servers at once): then the server exits while another one answers on that port, so the port
    counts as ours only once our process still runs after the port answered."""
    for _ in range(5):
        port = _free_port()
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "engine.servers.dice",
            "--http",
            str(port),
            "--seed",
            "3",
            cwd=str(REPO),
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.DEVNULL,
        )
        try:
            await _wait_listening(port, process)
        except AssertionError:
            await process.wait()
            continue
        try:  # a server that lost the port exits; one that bound it keeps running
            await asyncio.wait_for(process.wait(), 0.5)
        except TimeoutError:
            return port, process
    raise AssertionError("the dice server found no free port in 5 tries")


async def test_dice_over_streamable_http() -> None:
    port, process = await _start_dice()
    try:
        async with Client(f"http://127.0.0.1:{port}/mcp", read_timeout_seconds=20.0) as client:
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
            assert (tools["roll"].meta or {})["estimated_duration_ms"] == 2
            result = await client.call_tool("roll", {"expression": "1d20+5"})
            assert not result.is_error
            spoken = " ".join(b.text for b in result.content if isinstance(b, TextContent))
            assert spoken.startswith("You rolled 1d20+5:")
            bad = await client.call_tool("roll", {"expression": "1d0"})
            assert bad.is_error
    finally:
        process.terminate()
        try:
            await asyncio.wait_for(process.wait(), 10)
        except TimeoutError:
            process.kill()
            await process.wait()
