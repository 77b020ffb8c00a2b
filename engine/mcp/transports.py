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
grandchildren (``npx`` → node, ``sh -c`` → sleep). ``live_groups`` (``engine.mcp.transport_watch``) holds every
group not yet reaped, so a forced exit can kill them all (``kill_all_groups``), and mirrors them to the engine's
reaper (``engine.mcp.reaper``), which kills them, and every process carrying the engine's marker in its
environment, when the engine dies (SIGKILL too).
"""

from __future__ import annotations

import importlib
import importlib.metadata
import logging
import os
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any, TextIO

import httpx2
from mcp import Client, StdioServerParameters
from mcp.client.session import ElicitationFnT, MessageHandlerFnT
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client
from mcp.server import MCPServer, Server
from mcp.types import Implementation
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS

from engine._compat.mcp_sdk import SpawnFn, create_mcp_http_client, wrap_stdio_spawn
from engine.config.models import McpServerConfig
from engine.core.scoped import bound
from engine.mcp.reaper import child_env
from engine.mcp.stdio_direct import stdio_transport
from engine.mcp.transport_watch import MAX_SSE_EVENT_BYTES, live_groups, watch_end
from engine.servers.common import contain_exits, root_logger_kept

log = logging.getLogger(__name__)
#: Who the engine is to the servers it calls (their logs, their operators).
CLIENT_INFO = Implementation(name="ava-engine", version=importlib.metadata.version("ava-console"))

SpawnSink = Callable[[Any], None]
_spawn_sink: ContextVar[SpawnSink | None] = ContextVar("ava_mcp_spawn_sink", default=None)
#: Called with the pid of every stdio child the SDK spawns (diagnostics; the tests' no-orphan check).
spawn_listeners: list[Callable[[int], None]] = []


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
    with bound(_spawn_sink, sink):
        yield


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
    with root_logger_kept():
        server = _load_target(target, args)
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
