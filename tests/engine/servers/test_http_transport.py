"""One built-in server over streamable HTTP (``--http PORT``), reached with the SDK's HTTP client."""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import sys
from pathlib import Path

from mcp import Client
from mcp.types import TextContent

from tests.waiting import wait_until

REPO = Path(__file__).resolve().parents[3]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _listens(pid: int, port: int) -> bool:
    """Process ``pid`` holds the socket listening on 127.0.0.1:``port`` (/proc/net/tcp's inode among its fds)."""
    inodes = set()
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        local, state, inode = fields[1], fields[3], fields[9]
        if state == "0A" and int(local.rsplit(":", 1)[1], 16) == port:  # 0A: LISTEN
            inodes.add(f"socket:[{inode}]")
    try:
        fds = Path(f"/proc/{pid}/fd").iterdir()
        return any(os.readlink(fd) in inodes for fd in fds)
    except OSError:
        return False


async def _start_dice() -> tuple[int, asyncio.subprocess.Process]:
    """The dice server on a free port, listening. A port picked free can be taken before the server binds it (the
    suite starts many servers at once), and then another server answers on it: the port is ours only once our
    process holds its listening socket."""
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

        def ready(p: asyncio.subprocess.Process = process, n: int = port) -> bool:
            return p.returncode is not None or _listens(p.pid, n)

        with contextlib.suppress(AssertionError):  # not listening after 20 s: another try on another port
            await wait_until(ready, within=20)
        if process.returncode is None and _listens(process.pid, port):
            return port, process
        process.kill()
        await process.wait()
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
