"""Shared plumbing for the built-in MCP servers.

Why it exists: every built-in server has the same command-line shape (stdio by default, ``--http PORT``
for streamable HTTP on 127.0.0.1), the same way of declaring latency metadata in each tool's ``_meta``,
the same way of failing (an ``isError`` result whose text says what was wrong) and the same result shape
(a short speakable text plus structured content carrying a ``speech`` field). Keeping that here means
each server module only holds its own job.

Every server module has ``create(argv)``: it parses the server's command line and returns the SDK server object,
raising ``StartupError`` (never exiting) on a bad setup. That one factory serves all three ways of running a
built-in server: ``main`` (``python -m``, its own process, stdio or ``--http``), ``transport: inprocess`` in the
engine, and the bundle child (``engine.servers.bundle``) that serves several of them from one process.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal, NoReturn

from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent, ToolAnnotations

from engine.text.spoken_lists import spoken_list as join_spoken  # "a, b and c", for every server

__all__ = [
    "ASSETS_DIR",
    "LogLevel",
    "StartupError",
    "ToolError",
    "env_default",
    "fail",
    "failing",
    "join_spoken",
    "make_parser",
    "make_server",
    "plural",
    "root_logger_kept",
    "serve",
    "spoken_result",
    "startup",
    "tool_meta",
]

LogLevel = Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"]

#: The repository's ``assets/`` folder (rules corpus, METAR sample, YAML tables).
ASSETS_DIR: Path = Path(__file__).resolve().parents[2] / "assets"


class StartupError(Exception):
    """A server cannot be set up (bad arguments, a missing data file …): one line saying why, never a traceback."""


class _Parser(argparse.ArgumentParser):
    """An argparse parser whose errors raise ``StartupError``: a server built in the engine's own process
    (``inprocess``) or in the bundle child must not end that process over a bad argument."""

    def error(self, message: str) -> NoReturn:
        raise StartupError(f"{self.prog}: error: {message}")


def contain_exits(server: MCPServer[Any]) -> None:
    """A tool that raises ``SystemExit`` or ``KeyboardInterrupt`` (``sys.exit()`` in a tool) fails that call with
    ``isError``, as any other exception does, instead of ending the process: the engine's, for an in-process server,
    or the bundle child with every server it hosts.

    The SDK turns ``Exception`` into an error result but lets those two through, and asyncio re-raises them out of
    the event loop. ``MCPServer`` looks ``call_tool`` up on the instance for every request, so wrapping it there
    covers every tool. What no wrapper can stop — ``os._exit``, a segfault in a C extension, a memory blowup, a
    loop that holds the GIL — is why ``bundled`` (one child for all of them) exists.
    """
    if getattr(server.call_tool, "_ava_contained", False):
        return
    original = server.call_tool

    async def call_tool(name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        try:
            return await original(name, arguments, context)
        except (SystemExit, KeyboardInterrupt) as e:
            raise ToolError(f"tool {name} tried to end the process ({type(e).__name__}); the call failed") from None

    call_tool._ava_contained = True  # type: ignore[attr-defined]
    server.call_tool = call_tool  # type: ignore[method-assign]


def make_parser(prog: str, description: str) -> argparse.ArgumentParser:
    """An argparse parser with the options every built-in server shares (errors raise ``StartupError``)."""
    parser = _Parser(prog=prog, description=description)
    parser.add_argument(
        "--http",
        metavar="PORT",
        type=_port,
        default=None,
        help="serve streamable HTTP on 127.0.0.1:PORT (path /mcp) instead of stdio",
    )
    parser.add_argument(
        "--log-level",
        choices=["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"],
        default=os.environ.get("AVA_SERVER_LOG_LEVEL", "WARNING").upper(),
        help="log level for the server's own stderr log (default WARNING; env AVA_SERVER_LOG_LEVEL)",
    )
    return parser


def _port(text: str) -> int:
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--http needs a port number, got {text!r}") from None
    if not 1 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"--http port must be 1..65535, got {port}")
    return port


def make_server(name: str, instructions: str, args: argparse.Namespace, **kwargs: Any) -> MCPServer[Any]:
    """Build an MCPServer named ``ava-NAME`` with the log level chosen on the command line.

    The SDK's constructor calls ``logging.basicConfig`` (a rich handler on stderr at that level); in the engine's
    process that would take over the host's root logger and draw over the console, so the root logger is put back
    as it was. ``serve`` configures logging the SDK's way for a server in a process of its own.
    """
    level: LogLevel = args.log_level
    with root_logger_kept():
        return MCPServer(name=f"ava-{name}", instructions=instructions, version="0.1.0", log_level=level, **kwargs)


@contextmanager
def root_logger_kept() -> Iterator[None]:
    """Put the root logger's handlers and level back as they were before the block, whatever it did to them (the
    SDK's ``MCPServer()`` configures the root logger each time one is built)."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    try:
        yield
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)


Factory = Callable[[Sequence[str] | None], MCPServer[Any]]


def http_port(argv: Sequence[str] | None) -> int | None:
    """The ``--http PORT`` of a command line (``create`` has already validated it)."""
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--http", type=_port, default=None)
    known, _ = pre.parse_known_args(list(argv or []))
    port: int | None = known.http
    return port


def serve(create: Factory, argv: Sequence[str] | None = None) -> None:
    """``python -m engine.servers.NAME``: build the server with ``create`` and run it over stdio, or over
    streamable HTTP on 127.0.0.1 when ``--http PORT`` was given. A ``StartupError`` is one line on stderr, exit 2."""
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        server = create(argv)
    except StartupError as exc:
        print(exc, file=sys.stderr)
        raise SystemExit(2) from exc
    from mcp.server.mcpserver.utilities.logging import configure_logging

    configure_logging(server.settings.log_level)
    port = http_port(argv)
    if port is None:
        server.run("stdio")
    else:
        server.run("streamable-http", host="127.0.0.1", port=port)


@contextmanager
def startup(server: str, *errors: type[BaseException], doing: str = "") -> Iterator[None]:
    """Setting a server up (its data files, folder or database): one of ``errors`` is a bad setup, not a crash, so
    it becomes a ``StartupError`` saying ``SERVER: [DOING: ]message`` (``serve`` prints it as one line, exit 2)."""
    try:
        yield
    except errors as exc:
        raise StartupError(f"{server}: {doing + ': ' if doing else ''}{exc}") from exc


def env_default(value: str | None, env_name: str, default: str | None = None) -> str | None:
    """The command-line value if given, else the environment variable, else ``default``."""
    if value is not None:
        return value
    env_value = os.environ.get(env_name)
    if env_value is not None and env_value.strip():
        return env_value
    return default


#: A tool that only reads: the engine caches a read-only tool's results for its ``cacheable_seconds``.
READ_ONLY = ToolAnnotations(read_only_hint=True, idempotent_hint=True, destructive_hint=False)


def tool_meta(
    *,
    estimated_ms: int,
    max_ms: int,
    idempotent: bool,
    cacheable_seconds: int = 0,
    probe_args: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Latency metadata the engine's budget reads from a tool's ``_meta`` in tools/list."""
    if estimated_ms <= 0 or max_ms < estimated_ms:
        raise ValueError(f"bad latency metadata: estimated {estimated_ms} ms, max {max_ms} ms")
    if cacheable_seconds and not idempotent:
        raise ValueError("a tool that is not idempotent cannot be cacheable")
    meta: dict[str, Any] = {
        "estimated_duration_ms": estimated_ms,
        "max_duration_ms": max_ms,
        "idempotent": idempotent,
        "cacheable_seconds": cacheable_seconds,
    }
    if probe_args is not None:
        meta["probe_args"] = probe_args
    return meta


def fail(message: str) -> NoReturn:
    """Fail the current tool call with ``message`` as the ``isError`` text.

    The SDK turns a ``ToolError`` into ``isError: true`` carrying the message (prefixed with
    ``Error executing tool NAME:``); any other exception is reported only as the generic
    ``Error executing tool NAME`` and the message stays on the server. So anticipated failures go here.
    """
    raise ToolError(message)


@contextmanager
def failing(*errors: type[BaseException], doing: str = "") -> Iterator[None]:
    """A tool's anticipated failure (a bad expression, a path outside the sandbox …): one of ``errors`` raised in the
    block fails the call as ``fail`` does, its text ``[DOING: ]message``; any other exception stays a crash."""
    try:
        yield
    except errors as exc:
        fail(f"{doing}: {exc}" if doing else str(exc))


def spoken_result(speech: str, data: dict[str, Any]) -> CallToolResult:
    """A tool result: ``speech`` as the text content, ``data`` plus ``speech`` as structured content."""
    structured = dict(data)
    structured["speech"] = speech
    return CallToolResult(content=[TextContent(type="text", text=speech)], structured_content=structured)


def plural(count: int, word: str, plural_word: str | None = None) -> str:
    """``1 fact``, ``3 facts``."""
    return f"{count} {word if count == 1 else (plural_word or word + 's')}"
