"""Watching an MCP transport end: its read stream's end, its stdio child's exit, the process groups left to kill.

Why it exists: ``engine.mcp.transports`` (which builds every client) and ``engine.mcp.bundle`` (the shared child,
which transports loads only when a config bundles servers) both use these, so they live below both and neither
imports the other.
"""

from __future__ import annotations

import asyncio
import os
import select
import signal
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
from anyio.abc import ObjectReceiveStream
from mcp.client import Transport

from engine.mcp.reaper import ChildGroups

#: Process groups of stdio children spawned and not yet killed (a forced exit kills them all; the reaper kills them
#: when the engine dies).
live_groups = ChildGroups()
#: Largest SSE event accepted on streamable HTTP (one JSON-RPC message; the SDK's default is 1 MiB, which ends any
#: bigger result in an error). Results are cut to ``results.MAX_DATA_CHARS`` after they arrive.
MAX_SSE_EVENT_BYTES = 64 * 1024 * 1024


class EndWatchStream(ObjectReceiveStream[Any]):
    """The transport's read stream, passed through unchanged; ``on_end`` is called once when it ends.

    It ends when the server side is gone (EOF after the SSE stream dropped) or when the session closes it. ``async for``
    and ``async with`` are anyio's ``ObjectReceiveStream``'s, over ``receive`` and ``aclose``.
    """

    def __init__(self, inner: Any, on_end: Callable[[Exception | None], None]) -> None:
        self._inner = inner
        self._on_end: Callable[[Exception | None], None] | None = on_end
        #: The last error the transport put in the stream (it usually ends the stream right after).
        self._error: Exception | None = None

    @property
    def last_context(self) -> Any:  # the SDK reads the sender's contextvars from here (ReadStream protocol)
        return getattr(self._inner, "last_context", None)

    def _ended(self) -> None:
        on_end, self._on_end = self._on_end, None
        if on_end is not None:
            on_end(self._error)

    async def receive(self) -> Any:
        try:
            item = await self._inner.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            self._ended()
            raise
        if isinstance(item, Exception):
            self._error = item
        return item

    async def aclose(self) -> None:
        await self._inner.aclose()


@asynccontextmanager
async def watch_end(transport: Transport, on_end: Callable[[Exception | None], None]) -> AsyncIterator[tuple[Any, Any]]:
    """An SDK transport whose read stream reports its end (and the transport's last error) to ``on_end``."""
    async with transport as (read_stream, write_stream):
        yield EndWatchStream(read_stream, on_end), write_stream


class ProcessWatch:
    """Calls ``on_exit`` as soon as the process exits (a pidfd on Linux; polling its returncode elsewhere)."""

    POLL_S = 0.02

    def __init__(self, process: Any, on_exit: Callable[[int | None], None]) -> None:
        self.process = process
        self.pid: int = process.pid
        self._on_exit = on_exit
        self._loop = asyncio.get_running_loop()
        self._fd: int | None = None
        self._task: asyncio.Task[None] | None = None
        self._fired = False
        try:
            self._fd = os.pidfd_open(self.pid)
            self._loop.add_reader(self._fd, self._fire)
        except (AttributeError, OSError):
            self._fd = None
            self._task = self._loop.create_task(self._poll())

    async def _poll(self) -> None:
        while self.process.returncode is None:  # noqa: ASYNC110 - nothing to wait on without a pidfd
            await asyncio.sleep(self.POLL_S)
        self._fire()

    def check(self) -> bool:
        """Fire now if the process has already exited (before the event loop would have noticed); True if so."""
        if self._fired:
            return True
        if self._fd is not None:
            ready, _, _ = select.select([self._fd], [], [], 0)
            if not ready:
                return False
        elif self.process.returncode is None:
            return False
        self._fire()
        return True

    def _fire(self) -> None:
        if self._fired:
            return
        self._fired = True
        self.close()
        code = self.process.returncode
        if code is None:
            try:  # the pidfd says it exited; read the status without reaping (the SDK's watcher reaps)
                status = os.waitid(os.P_PID, self.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
                code = status.si_status if status is not None else None
            except (ChildProcessError, OSError, AttributeError):
                code = None
        self._on_exit(code)

    def close(self) -> None:
        if self._fd is not None:
            if not self._loop.is_closed():
                self._loop.remove_reader(self._fd)
            os.close(self._fd)
            self._fd = None
        if self._task is not None and self._task is not asyncio.current_task():
            self._task.cancel()
        self._task = None


def signal_group(pgid: int, sig: int) -> bool:
    """Send ``sig`` to a child's process group; False when the group is gone (or not ours to signal)."""
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError, OSError):
        return False
    return True


def kill_process_group(pid: int) -> None:
    """Kill whatever is left of the child's process group (the SDK starts each child in its own session)."""
    signal_group(pid, signal.SIGKILL)
    live_groups.discard(pid)


def kill_all_groups() -> int:
    """SIGKILL every stdio child's process group still alive (a forced exit); returns how many were signalled."""
    killed = 0
    for pgid in sorted(live_groups):
        killed += signal_group(pgid, signal.SIGKILL)
    live_groups.clear()
    return killed
