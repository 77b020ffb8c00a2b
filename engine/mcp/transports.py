"""Build an SDK ``Client`` for one configured server, and learn the stdio child's process.

Why it exists: every transport goes through the official mcp 2.x SDK (stdio, streamable HTTP, SSE, in-process, and
``bundled``: streamable HTTP to one shared child serving several built-in servers, see ``engine.mcp.bundle``),
and the host must know the pid of a stdio child to notice its death at once — the SDK gives no signal of it and
keeps the process private. A context-variable hook around the SDK's process spawn hands the process to whichever
connection is opening in the current task, so concurrent starts never mix their children up. The child gets the
SDK's allow-listed environment plus the configured ``env``, never the whole parent environment. A network server
has no process to watch: there the end of the transport's read stream (the SSE stream dropped) is the signal, seen
through a pass-through read stream handed to the SDK's ``Client`` as its transport.

Only stdio spawns children, and the SDK starts each in a session (process group) of its own
(``start_new_session=True`` in ``mcp.client.stdio``), so the group id is the child's pid and ``killpg`` reaches its
grandchildren (``npx`` → node, ``sh -c`` → sleep). ``live_groups`` holds every group not yet reaped, so a forced
exit can kill them all (``kill_all_groups``), and mirrors them to the engine's reaper (``engine.mcp.reaper``), which
kills them, and every process carrying the engine's marker in its environment, when the engine dies (SIGKILL too).
"""

from __future__ import annotations

import asyncio
import importlib
import importlib.metadata
import logging
import os
import select
import signal
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any, TextIO

import anyio
import httpx2
from mcp import Client, StdioServerParameters
from mcp.client import Transport
from mcp.client.session import ElicitationFnT, MessageHandlerFnT
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client
from mcp.server import MCPServer, Server
from mcp.types import Implementation
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS

from engine._compat.mcp_sdk import SpawnFn, create_mcp_http_client, wrap_stdio_spawn
from engine.config.models import McpServerConfig
from engine.mcp.reaper import ChildGroups, child_env
from engine.mcp.stdio_direct import stdio_transport
from engine.servers.common import contain_exits

log = logging.getLogger(__name__)
#: Who the engine is to the servers it calls (their logs, their operators).
CLIENT_INFO = Implementation(name="ava-engine", version=importlib.metadata.version("ava-console"))

SpawnSink = Callable[[Any], None]
_spawn_sink: ContextVar[SpawnSink | None] = ContextVar("ava_mcp_spawn_sink", default=None)
#: Called with the pid of every stdio child the SDK spawns (diagnostics; the tests' no-orphan check).
spawn_listeners: list[Callable[[int], None]] = []
#: Process groups of stdio children spawned and not yet killed (a forced exit kills them all; the reaper kills them
#: when the engine dies).
live_groups = ChildGroups()
#: Largest SSE event accepted on streamable HTTP (one JSON-RPC message; the SDK's default is 1 MiB, which ends any
#: bigger result in an error). Results are cut to ``results.MAX_DATA_CHARS`` after they arrive.
MAX_SSE_EVENT_BYTES = 64 * 1024 * 1024


class TransportConfigError(ValueError):
    """A server config that cannot become a transport (bad target, unknown protocol version …)."""


def _reporting(original: SpawnFn) -> SpawnFn:
    async def spawn_and_report(*args: Any, **kwargs: Any) -> Any:
        if len(args) > 2:  # (command, args, env, ...)
            args = (*args[:2], child_env(args[2]), *args[3:])
        else:
            kwargs["env"] = child_env(kwargs.get("env"))
        process = await original(*args, **kwargs)
        live_groups.add(process.pid)
        for listener in tuple(spawn_listeners):
            listener(process.pid)
        sink = _spawn_sink.get()
        if sink is not None:
            sink(process)
        return process

    return spawn_and_report


wrap_stdio_spawn(_reporting)


@asynccontextmanager
async def report_spawn(sink: SpawnSink) -> AsyncIterator[None]:
    """Within this block, a stdio child spawned by the SDK in this task is passed to ``sink``."""
    token = _spawn_sink.set(sink)
    try:
        yield
    finally:
        _spawn_sink.reset(token)


def client_mode(mode: str) -> str:
    """The SDK's ``mode=``: auto, legacy, a modern version; a handshake-era version means the legacy handshake."""
    if mode in ("auto", "legacy") or mode in MODERN_PROTOCOL_VERSIONS:
        return mode
    if mode in HANDSHAKE_PROTOCOL_VERSIONS:
        return "legacy"
    known = ", ".join([*MODERN_PROTOCOL_VERSIONS, *HANDSHAKE_PROTOCOL_VERSIONS])
    raise TransportConfigError(f"mode {mode!r} is not auto, legacy or a known protocol version ({known})")


def load_target(target: str, args: list[str] | None = None) -> Server[Any] | MCPServer:
    """``module:attribute`` → an SDK server object, or what a factory returns: called with no argument, or with
    ``args`` (a command line) when given. A factory that fails — or exits, as argparse does — is a config error,
    never the end of the engine's process. The SDK's ``MCPServer()`` configures the root logger (a rich handler on
    stderr, which would draw over the console): whatever importing and building did to it is undone."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    try:
        server = _load_target(target, args)
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)
    if isinstance(server, MCPServer):
        contain_exits(server)
    return server


def _load_target(target: str, args: list[str] | None) -> Server[Any] | MCPServer:
    module_name, sep, attr = target.partition(":")
    if not sep or not module_name or not attr:
        raise TransportConfigError(f"target {target!r} must be 'module:attribute'")
    try:
        module = importlib.import_module(module_name)
    except ImportError as e:
        raise TransportConfigError(f"target {target!r}: cannot import {module_name!r}: {e}") from e
    obj: Any = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise TransportConfigError(f"target {target!r}: {module_name} has no attribute {attr!r}")
        obj = getattr(obj, part)
    if callable(obj) and not isinstance(obj, MCPServer | Server):
        try:
            obj = obj() if args is None else obj(list(args))
        except SystemExit as e:
            raise TransportConfigError(f"target {target!r} exited while setting up (status {e.code})") from None
        except Exception as e:
            raise TransportConfigError(f"target {target!r}: {str(e)[:300] or type(e).__name__}") from e
    if not isinstance(obj, MCPServer | Server):
        raise TransportConfigError(f"target {target!r} is a {type(obj).__name__}, not an MCP server object")
    return obj


def _secrets(values: dict[str, Any]) -> dict[str, str]:
    return {k: v.get_secret_value() if hasattr(v, "get_secret_value") else str(v) for k, v in values.items()}


def stdio_parameters(cfg: McpServerConfig, base_dir: Path) -> StdioServerParameters:
    if not cfg.command:
        raise TransportConfigError("a stdio server needs 'command'")
    cwd = cfg.cwd
    if cwd is not None and not os.path.isabs(cwd):
        cwd = str(base_dir / cwd)
    return StdioServerParameters(
        command=cfg.command[0],
        args=list(cfg.command[1:]),
        env=_secrets(dict(cfg.env)) or None,
        cwd=cwd,
        encoding_error_handler="replace",
    )


@asynccontextmanager
async def _http_transport(
    url: str, headers: dict[str, str], connect_s: float, auth: httpx2.Auth | None = None
) -> AsyncIterator[Any]:
    timeout = httpx2.Timeout(connect_s, read=300.0)
    async with create_mcp_http_client(headers=headers or None, timeout=timeout, auth=auth) as http:
        async with streamable_http_client(url, http_client=http, max_sse_event_size=MAX_SSE_EVENT_BYTES) as streams:
            yield streams


class EndWatchStream:
    """The transport's read stream, passed through unchanged; ``on_end`` is called once when it ends.

    It ends when the server side is gone (EOF after the SSE stream dropped) or when the session closes it.
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

    def __aiter__(self) -> EndWatchStream:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def __aenter__(self) -> EndWatchStream:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


@asynccontextmanager
async def watch_end(transport: Transport, on_end: Callable[[Exception | None], None]) -> AsyncIterator[tuple[Any, Any]]:
    """An SDK transport whose read stream reports its end (and the transport's last error) to ``on_end``."""
    async with transport as (read_stream, write_stream):
        yield EndWatchStream(read_stream, on_end), write_stream


def build_client(
    cfg: McpServerConfig,
    *,
    base_dir: Path,
    message_handler: MessageHandlerFnT | None,
    errlog: TextIO | None,
    connect_s: float,
    on_transport_end: Callable[[Exception | None], None] | None = None,
    auth: httpx2.Auth | None = None,
    elicitation_callback: ElicitationFnT | None = None,
) -> Client:
    """An un-entered SDK ``Client`` for ``cfg`` (entering it connects and negotiates the protocol).

    ``on_transport_end`` is called when a network transport's read stream ends (the server went away), with the
    last error the transport reported, if any. ``auth`` signs a streamable HTTP server's requests (OAuth, see
    ``engine.mcp.oauth``).
    """
    mode = client_mode(cfg.mode)
    server: Any
    if cfg.transport == "stdio":
        params = stdio_parameters(cfg, base_dir)
        server = stdio_transport(params, errlog if errlog is not None else sys.stderr)  # no SDK tasks between
    elif cfg.transport == "http":
        server = _http_transport(str(cfg.url), _secrets(dict(cfg.headers)), connect_s, auth)
    elif cfg.transport == "sse":
        server = sse_client(str(cfg.url), headers=_secrets(dict(cfg.headers)) or None, timeout=connect_s)
    elif cfg.transport == "inprocess":
        server = load_target(str(cfg.target), cfg.args)
    elif cfg.transport == "bundled":
        from engine.mcp.bundle import bundled_transport  # only configs that bundle servers pay for it

        server = bundled_transport(str(cfg.target), cfg.args, connect_s, on_transport_end)
    else:  # pragma: no cover - the config model only allows the five above
        raise TransportConfigError(f"unknown transport {cfg.transport!r}")
    if on_transport_end is not None and cfg.transport in ("http", "sse"):
        server = watch_end(server, on_transport_end)
    return Client(
        server,
        mode=mode,
        message_handler=message_handler,
        cache=None,
        elicitation_callback=elicitation_callback,
        client_info=CLIENT_INFO,  # servers log and show who called: the engine, not the SDK's default "mcp"
    )


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
