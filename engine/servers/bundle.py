"""One child process serving several built-in MCP servers: ``python -m engine.servers.bundle --socket PATH``.

Why it exists: every MCP server as a process of its own costs a whole Python with the mcp SDK loaded (~70 MB
each); the built-in servers can share one. Each stays a separate MCP server to the host — its own endpoint, its
own sessions, its own tools — on the SDK's own streamable HTTP transport, served on a unix socket (only its owner
can connect: it lives in a private folder) instead of a TCP port, so nothing else on the machine can call them.

A server is built on the first request for its endpoint ``/s/KEY/mcp``: the host names what to build in two
headers (``X-Ava-Target``: ``module:attribute`` of a server or of a factory such as
``engine.servers.dice.server:create``, ``X-Ava-Args``: a JSON list, its command line); a bad setup answers that
request with HTTP 400 and the one-line reason. Startup prints ``ready`` on stdout once the socket accepts; the
process ends when its stdin closes (the host went away) or on SIGTERM.
"""

from __future__ import annotations

import argparse
import importlib
import json
import logging
import os
import re
import sys
import threading
from typing import Any

import anyio
import uvicorn
from anyio.abc import TaskGroup, TaskStatus
from mcp.server import MCPServer
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.types import Receive, Scope, Send

from engine.servers.common import StartupError, contain_exits, root_logger_kept

TARGET_HEADER = b"x-ava-target"
ARGS_HEADER = b"x-ava-args"
_PATH = re.compile(r"^/s/([a-z0-9_-]{1,80})/mcp$")
#: The host connects as ``http://localhost/...`` over the socket; any other Host or an Origin (a browser) is refused.
_SECURITY = TransportSecuritySettings(allowed_hosts=["localhost"], allowed_origins=[])


def build(target: str, args: list[str] | None) -> MCPServer[Any]:
    """``module:attribute`` → the server object, or what the factory builds from ``args``.

    The SDK's ``MCPServer()`` configures the root logger each time; this process's logging is set up once, in
    ``main``, so whatever building did to it is undone."""
    with root_logger_kept():
        server = _build(target, args)
    contain_exits(server)
    return server


def _build(target: str, args: list[str] | None) -> MCPServer[Any]:
    module_name, sep, attr = target.partition(":")
    if not sep or not module_name or not attr:
        raise StartupError(f"target {target!r} must be 'module:attribute'")
    try:
        obj: Any = importlib.import_module(module_name)
        for part in attr.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError) as e:
        raise StartupError(f"target {target!r}: {e}") from e
    if callable(obj) and not isinstance(obj, MCPServer):
        try:
            obj = obj() if args is None else obj(list(args))
        except SystemExit as e:  # argparse's --help
            raise StartupError(f"target {target!r} exited while setting up (status {e.code})") from None
    if not isinstance(obj, MCPServer):
        raise StartupError(f"target {target!r} is a {type(obj).__name__}, not an MCPServer")
    return obj


class Bundle:
    """The ASGI app: routes ``/s/KEY/mcp`` to that server's session manager, building it on first use."""

    def __init__(self, tasks: TaskGroup) -> None:
        self._tasks = tasks
        self._apps: dict[str, Any] = {}
        self._lock = anyio.Lock()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        match = _PATH.match(scope["path"])
        if match is None:
            await _answer(send, 404, "no such endpoint; servers are at /s/KEY/mcp")
            return
        try:
            app = await self._app(match.group(1), dict(scope["headers"]))
        except StartupError as e:
            await _refuse(scope, receive, send, str(e))
            return
        await app(scope, receive, send)

    async def _app(self, key: str, headers: dict[bytes, bytes]) -> Any:
        async with self._lock:
            app = self._apps.get(key)
            if app is not None:
                return app
            target = headers.get(TARGET_HEADER, b"").decode()
            try:
                args = json.loads(headers[ARGS_HEADER]) if ARGS_HEADER in headers else None
            except ValueError as e:
                raise StartupError(f"X-Ava-Args is not JSON: {e}") from e
            if args is not None and not (isinstance(args, list) and all(isinstance(a, str) for a in args)):
                raise StartupError("X-Ava-Args must be a JSON list of strings")
            server = build(target, args)
            app = server.streamable_http_app(streamable_http_path=f"/s/{key}/mcp", transport_security=_SECURITY)
            await self._tasks.start(_run_manager, server.session_manager)
            self._apps[key] = app
            return app


async def _run_manager(manager: StreamableHTTPSessionManager, *, task_status: TaskStatus[None]) -> None:
    async with manager.run():
        task_status.started()
        await anyio.sleep_forever()


async def _refuse(scope: Scope, receive: Receive, send: Send, reason: str) -> None:
    """A server that cannot be built: a JSON-RPC error answering the client's request (the SDK's client shows an
    HTTP error only as "Server returned an error response", so the reason would be lost), else HTTP 400."""
    request_id: Any = None
    if scope.get("method") == "POST":
        body, more = b"", True
        while more and len(body) <= 1 << 20:
            message = await receive()
            body += message.get("body", b"")
            more = message.get("more_body", False)
        try:
            request_id = json.loads(body).get("id")
        except (ValueError, AttributeError):
            request_id = None
    if request_id is None:
        await _answer(send, 400, reason)
        return
    error = {"jsonrpc": "2.0", "id": request_id, "error": {"code": -32603, "message": f"cannot start: {reason}"}}
    await _answer(send, 200, json.dumps(error), b"application/json")


async def _answer(send: Send, status: int, text: str, content_type: bytes = b"text/plain; charset=utf-8") -> None:
    body = text.encode()
    headers = [(b"content-type", content_type), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def _exit_when_stdin_closes(server: uvicorn.Server) -> None:
    """The host holds our stdin open; when it closes (the host stopped us, or died) the bundle ends."""

    def watch() -> None:
        try:
            while sys.stdin.buffer.read(4096):
                pass
        except (OSError, ValueError):
            pass
        server.should_exit = True

    threading.Thread(target=watch, name="stdin-watch", daemon=True).start()


async def serve(socket_path: str, log_level: str) -> None:
    async with anyio.create_task_group() as tasks:
        config = uvicorn.Config(
            Bundle(tasks),
            uds=socket_path,
            lifespan="off",
            log_level=log_level.lower(),
            access_log=False,
            timeout_graceful_shutdown=1,
        )
        server = uvicorn.Server(config)
        _exit_when_stdin_closes(server)

        async def announce() -> None:
            while not server.started:
                if server.should_exit:
                    return
                await anyio.sleep(0.01)
            print("ready", flush=True)

        tasks.start_soon(announce)
        await server.serve()
        tasks.cancel_scope.cancel()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m engine.servers.bundle", description=__doc__.splitlines()[0])
    parser.add_argument("--socket", required=True, help="unix socket path to serve on (its folder should be private)")
    parser.add_argument(
        "--log-level",
        choices=["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"],
        default=os.environ.get("AVA_SERVER_LOG_LEVEL", "WARNING").upper(),
    )
    opts = parser.parse_args(argv)
    logging.basicConfig(level=opts.log_level, format="%(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    anyio.run(serve, opts.socket, opts.log_level)


if __name__ == "__main__":
    main()
