"""``transport: bundled``: the built-in servers in one shared child process, each still a server of its own.

Why it exists: a stdio child per server costs a whole Python with the mcp SDK (~70 MB each); in-process costs
nothing extra but a tool that kills its process (a segfault in a C extension, ``os._exit``, a memory blowup) takes
the engine, and the console, with it. The bundle child (``python -m engine.servers.bundle``) is one process for all
of them: the engine survives anything a tool does, at the price of one Python instead of one per server.

Each bundled server keeps its own id, tools, sessions and restarts: its connection is the SDK's streamable HTTP
client on the child's unix socket (a private folder, so only this user can connect), at an endpoint of its own
(``/s/KEY/mcp``, KEY from its target and arguments), and the child builds that server on the first request.
Restarting one server opens a new session and leaves the others alone. The child is shared by every open
bundled connection of the event loop and started by the first: when it dies, every bundled connection is told
at once (a pidfd watch) and the supervisors restart them, which starts a new child; when the last connection
closes, the child's stdin is closed and its process group is sent SIGTERM, then SIGKILL after ``KILL_AFTER_S``.
Should the engine die first (SIGKILL included), the engine's reaper kills it (``engine.mcp.reaper``).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import os
import shutil
import signal
import sys
import tempfile
import weakref
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx2
from mcp.client.stdio import get_default_environment
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CONNECTION_CLOSED, JSONRPCError

from engine.mcp.reaper import child_env
from engine.mcp.transport_watch import MAX_SSE_EVENT_BYTES, EndWatchStream, ProcessWatch, live_groups, signal_group

log = logging.getLogger(__name__)

#: How long the child may take to say ``ready`` (importing the SDK is most of it).
READY_TIMEOUT_S = 30.0
#: After the last connection closed: SIGTERM at once, SIGKILL this much later if it is still there.
KILL_AFTER_S = 1.0
#: How long a broken transport waits to learn whether the child died (the reason it then reports).
DEATH_WAIT_S = 0.3
#: Lines of the child's stderr kept for error messages.
STDERR_LINES = 20

EndFn = Callable[[Exception | None], None]


class BundleGone(Exception):
    """The bundle child exited (or never became ready)."""


def endpoint_key(target: str, args: list[str] | None) -> str:
    """A stable endpoint name for one target and command line: ``dice-1a2b3c4d5e6f``."""
    module = target.partition(":")[0].rsplit(".", 2)
    stem = next((p for p in reversed(module) if p not in ("server", "__main__")), "server")
    digest = hashlib.sha256(json.dumps([target, args]).encode()).hexdigest()[:12]
    safe = "".join(c if c.isalnum() or c == "_" else "_" for c in stem.lower())[:40] or "server"
    return f"{safe}-{digest}"


class BundleChild:
    """The shared child process: started on first use, stopped with its last connection."""

    def __init__(self) -> None:
        self.process: asyncio.subprocess.Process | None = None
        self.socket_path: str | None = None
        self._folder: str | None = None
        self._watch: ProcessWatch | None = None
        self._lock = asyncio.Lock()
        self._ends: set[EndFn] = set()
        self._stderr: list[str] = []
        self._readers: list[asyncio.Task[None]] = []
        #: The wait for the last child to exit (SIGKILL after ``KILL_AFTER_S``), from its stop on.
        self.stopping: asyncio.Task[None] | None = None
        self.refs = 0
        #: Children started so far, and why each that died did (by number).
        self.generation = 0
        self.deaths: dict[int, str] = {}

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.returncode is None and self._watch is not None

    async def acquire(self, on_end: EndFn | None) -> str:
        """The socket of a running child (started if needed); ``on_end`` hears of its death."""
        async with self._lock:
            if self._watch is not None:
                self._watch.check()  # died a moment ago, before the loop saw it: start a new one, not reuse it
            if not self.alive:
                await self._start()
            self.refs += 1
            if on_end is not None:
                self._ends.add(on_end)
            assert self.socket_path is not None
            return self.socket_path

    def release(self, on_end: EndFn | None) -> None:
        if on_end is not None:
            self._ends.discard(on_end)
        self.refs = max(0, self.refs - 1)
        if self.refs == 0:
            self._stop()

    async def _start(self) -> None:
        self._stop()
        self.generation += 1
        self._folder = tempfile.mkdtemp(prefix="ava-bundle-")  # mode 0700: only this user reaches the socket
        self.socket_path = os.path.join(self._folder, "mcp.sock")
        self._stderr = []
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "engine.servers.bundle",
            "--socket",
            self.socket_path,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=child_env(get_default_environment()),  # dies with the engine (engine.mcp.reaper)
            start_new_session=True,
        )
        self.process = process
        live_groups.add(process.pid)
        self._readers = [asyncio.get_running_loop().create_task(self._read_stderr(process), name="mcp:bundle:stderr")]
        try:
            assert process.stdout is not None
            line = await asyncio.wait_for(process.stdout.readline(), READY_TIMEOUT_S)
        except TimeoutError:
            self._stop()
            raise BundleGone(f"the bundle process did not start within {READY_TIMEOUT_S:g} s") from None
        except BaseException:  # cancelled while it started (connect timeout, engine stop): no child left behind
            self._stop()
            raise
        if line.strip() != b"ready":
            await asyncio.sleep(0.05)  # let the stderr reader catch the reason
            code = process.returncode
            self._stop()
            raise BundleGone(f"the bundle process exited while starting (code {code}){self._tail()}")
        self._watch = ProcessWatch(process, self._exited)
        log.info("bundle process %d serving built-in MCP servers on %s", process.pid, self.socket_path)

    async def _read_stderr(self, process: asyncio.subprocess.Process) -> None:
        assert process.stderr is not None
        async for raw in process.stderr:
            line = raw.decode(errors="replace").rstrip()
            if line:
                self._stderr = [*self._stderr[-(STDERR_LINES - 1) :], line]
                log.info("bundle: %s", line[:500])

    def _tail(self) -> str:
        return f"; stderr: {self._stderr[-1][:200]}" if self._stderr else ""

    async def death(self, generation: int) -> str | None:
        """A transport broke: why child number ``generation`` died, if it did — waiting up to ``DEATH_WAIT_S``,
        as its socket closes a moment before the process is seen to exit. Otherwise the reason would be whichever
        connection noticed the broken socket first ("ReadError", "connection closed")."""
        deadline = asyncio.get_running_loop().time() + DEATH_WAIT_S
        while generation not in self.deaths and generation == self.generation and self._watch is not None:
            if self._watch.check() or asyncio.get_running_loop().time() > deadline:
                break
            await asyncio.sleep(0.01)
        return self.deaths.get(generation)

    def _exited(self, code: int | None) -> None:
        """The child is gone: tell every bundled connection (their calls in flight end, their supervisors restart
        them, which starts a new child). The status is known only when asyncio has not reaped the child yet."""
        ends = tuple(self._ends)
        self._ends.clear()
        exit_code = code if code is not None else (self.process.returncode if self.process is not None else None)
        why = BundleGone(
            f"the bundle process exited{f' with code {exit_code}' if exit_code is not None else ''}{self._tail()}"
        )
        log.warning("%s", why)
        self.deaths = {self.generation: str(why)}
        self._stop()
        for on_end in ends:
            on_end(why)

    def _stop(self) -> None:
        """Close the child's stdin, SIGTERM its group now and SIGKILL it after ``KILL_AFTER_S``; forget it."""
        process, self.process = self.process, None
        if self._watch is not None:
            self._watch.close()
            self._watch = None
        if process is not None:
            if process.stdin is not None:
                process.stdin.close()
            if process.returncode is None:
                signal_group(process.pid, signal.SIGTERM)
            self.stopping = asyncio.get_running_loop().create_task(_reap(process), name="mcp:bundle:reap")
        for reader in self._readers:
            reader.cancel()
        self._readers = []
        if self._folder is not None:
            shutil.rmtree(self._folder, ignore_errors=True)
            self._folder = None


class _ChildCheck(EndWatchStream):
    """The transport's read stream; a broken connection on it first learns whether the child died."""

    def __init__(self, inner: Any, child: BundleChild) -> None:
        super().__init__(inner, lambda _error: None)
        self._child = child
        self._generation = child.generation

    async def receive(self) -> Any:
        try:
            item = await super().receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            await self._child.death(self._generation)
            raise
        message = getattr(item, "message", None)
        if isinstance(item, Exception) or (
            isinstance(message, JSONRPCError) and message.error.code == CONNECTION_CLOSED
        ):
            await self._child.death(self._generation)
        return item


async def _reap(process: asyncio.subprocess.Process) -> None:
    """Wait for the child to exit, SIGKILL its group after ``KILL_AFTER_S``; it is reaped before the loop ends."""
    try:
        try:
            await asyncio.wait_for(process.wait(), KILL_AFTER_S)
        except TimeoutError:
            signal_group(process.pid, signal.SIGKILL)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(process.wait(), 1.0)
    finally:
        live_groups.discard(process.pid)


_children: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, BundleChild] = weakref.WeakKeyDictionary()


def shared_child() -> BundleChild:
    """The bundle child of the running event loop (one per loop: an engine and all its bundled servers)."""
    loop = asyncio.get_running_loop()
    child = _children.get(loop)
    if child is None:
        child = _children[loop] = BundleChild()
    return child


@asynccontextmanager
async def bundled_transport(
    target: str, args: list[str] | None, connect_s: float, on_end: EndFn | None
) -> AsyncIterator[Any]:
    """The SDK's streamable HTTP transport to ``target``'s endpoint in the shared bundle child."""
    child = shared_child()
    socket_path = await child.acquire(on_end)
    generation = child.generation
    try:
        headers = {"X-Ava-Target": target}
        if args is not None:
            headers["X-Ava-Args"] = json.dumps(list(args))
        url = f"http://localhost/s/{endpoint_key(target, args)}/mcp"
        timeout = httpx2.Timeout(connect_s, read=300.0)
        transport = httpx2.AsyncHTTPTransport(uds=socket_path)
        async with httpx2.AsyncClient(transport=transport, headers=headers, timeout=timeout) as http:
            async with streamable_http_client(url, http_client=http, max_sse_event_size=MAX_SSE_EVENT_BYTES) as streams:
                read_stream, write_stream = streams
                yield _ChildCheck(read_stream, child), write_stream
    except Exception as e:  # the transport broke (its socket reset): when the child died, that is the reason
        reason = await child.death(generation)
        if reason is not None:
            raise BundleGone(reason) from e
        raise
    finally:
        child.release(on_end)
        if child.refs == 0 and child.stopping is not None:
            await asyncio.wait({child.stopping})  # the last connection leaves with the child reaped
