"""The engine component that serves ``engine.mcp_server`` over streamable HTTP on the engine's HTTP server.

Why it exists: it owns the SDK's ``StreamableHTTPSessionManager`` (its task group lives as long as the endpoint
is enabled), puts it on the aiohttp app at ``engine.mcp_server.path`` through the ASGI adapter, and guards it:
Host and Origin are checked first (DNS rebinding: the SDK's ``TransportSecurityMiddleware``, loopback names plus
``allowed_hosts`` / ``allowed_origins``), then the bearer token (constant-time compare). Legacy clients get the
initialize handshake and ``Mcp-Session-Id`` sessions; 2026-07-28 clients are served statelessly by the same
manager (it routes on the ``MCP-Protocol-Version`` header).

It gets its ``Services`` (a settings getter, bus, metrics, the engine's ``spawn`` for the manager's task), the
registry, the execution path (``ToolRunner``), a ``restart_http`` callback for when its path moves, and the MCP host
(``upstream``: whose servers' resources, prompts and notifications it passes on) — not the engine.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from typing import TYPE_CHECKING, Any

from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecurityMiddleware, TransportSecuritySettings
from starlette.requests import Request
from starlette.responses import JSONResponse

from engine.config.models import McpEndpointConfig, Settings
from engine.config.models.engine import split_host
from engine.mcp_endpoint.proxy import Upstream
from engine.mcp_endpoint.resume import SessionOwners, header
from engine.mcp_endpoint.server import EndpointTools, ToolRunner, build_server, calls_counter
from engine.mcp_endpoint.stream_events import StreamEvents
from engine.services import Component, Services
from engine.tools.registry import ToolRegistry

if TYPE_CHECKING:  # aiohttp (0.2 s to import) only when the engine serves HTTP: not for a CLI command or a console
    from aiohttp import web

    from engine.mcp_endpoint.asgi import Receive, Send

log = logging.getLogger(__name__)

LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "[::1]")
MAX_SESSIONS = 1000
#: The SDK ends a session with no request in flight for this long (its default, passed on explicitly because the
#: session owners of resumable streams are forgotten a little after it).
SESSION_IDLE_S = 30 * 60
STOP_TIMEOUT_S = 5.0


def security_settings(
    cfg: McpEndpointConfig, http_host: str, http_hosts: Iterable[str] = (), http_origins: Iterable[str] = ()
) -> TransportSecuritySettings:
    """Accepted Host and Origin values: loopback on any port, the bind host, and the configured extras.

    ``http_hosts`` / ``http_origins`` are ``engine.http.allowed_hosts`` / ``allowed_origins``, which the engine's
    HTTP guard (engine.http.guard, run first on every route) also admits here; a bare name there means any port.
    """
    hosts = list(LOOPBACK_HOSTS)
    if http_host not in ("0.0.0.0", "::", "", *LOOPBACK_HOSTS, "::1"):
        hosts.append(f"[{http_host}]" if ":" in http_host else http_host)
    extra_hosts = [h for e in http_hosts for h in ((e,) if split_host(e)[1] else (e, f"{e}:*"))]
    allowed_hosts = [h for host in hosts for h in (host, f"{host}:*")] + list(cfg.allowed_hosts) + extra_hosts
    allowed_origins = [
        o for host in hosts for scheme in ("http", "https") for o in (f"{scheme}://{host}", f"{scheme}://{host}:*")
    ] + [*cfg.allowed_origins, *http_origins]
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True, allowed_hosts=allowed_hosts, allowed_origins=allowed_origins
    )


class McpEndpoint(Component):
    name = "mcp_endpoint"

    def __init__(
        self,
        services: Services,
        *,
        registry: ToolRegistry,
        runner: ToolRunner,
        restart_http: Callable[[], Awaitable[None]] | None = None,
        upstream: Upstream | None = None,
    ) -> None:
        super().__init__(services)
        self._restart_http = restart_http
        self.handlers = EndpointTools(
            lambda: self._settings().engine.mcp_server,
            registry,
            runner,
            self.bus,
            self.metrics,
            calls_counter(self.metrics),
            upstream=lambda: upstream,
        )
        http = self._settings().engine.http
        self.security = security_settings(self.config, http.host, http.allowed_hosts, http.allowed_origins)
        self._guard = TransportSecurityMiddleware(self.security)
        self._manager: StreamableHTTPSessionManager | None = None
        self._task: asyncio.Task[None] | None = None
        self._watch: asyncio.Task[None] | None = None
        self._stop: asyncio.Event | None = None
        self._inflight: set[asyncio.Task[Any]] = set()
        self._route_path: str | None = None
        self.events: StreamEvents
        self._owners: SessionOwners
        self._forget_streams()

    @property
    def config(self) -> McpEndpointConfig:
        return self._settings().engine.mcp_server

    @property
    def running(self) -> bool:
        return self._manager is not None

    # ------------------------------------------------------------------------------------------ HTTP

    def install_routes(self, app: web.Application) -> None:
        """Called by the HTTP app builder: the endpoint's path, all methods (POST, GET stream, DELETE)."""
        self._route_path = self.config.path
        app.router.add_route("*", self._route_path, self._handle)

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        from aiohttp import web

        from engine.mcp_endpoint.asgi import serve_asgi

        if not self.config.enabled or self.config.path != self._route_path:
            return web.json_response({"error": "the engine's MCP endpoint is not enabled here"}, status=404)
        if self._manager is None:
            return web.json_response({"error": "the engine's MCP endpoint is starting"}, status=503)
        task = asyncio.current_task()
        if task is not None:
            self._inflight.add(task)
        try:
            return await serve_asgi(self._asgi, request)
        finally:
            if task is not None:
                self._inflight.discard(task)

    async def _asgi(self, scope: MutableMapping[str, Any], receive: Receive, send: Send) -> None:
        from engine.http.guard import bearer_ok  # aiohttp is loaded by now: a request came through the HTTP server

        manager = self._manager
        if manager is None:
            await JSONResponse({"error": "the engine's MCP endpoint is stopping"}, 503)(scope, receive, send)
            return
        refused = await self._guard.validate_request(Request(scope), is_post=False)
        if refused is not None:
            await refused(scope, receive, send)
            return
        token = self.config.auth_token
        if token is not None and not bearer_ok(header(scope, b"authorization"), token.get_secret_value()):
            await JSONResponse(
                {"error": "missing or wrong bearer token (Authorization: Bearer <engine.mcp_server.auth_token>)"},
                401,
                headers={"WWW-Authenticate": 'Bearer realm="ava-engine-mcp"'},
            )(scope, receive, send)
            return
        await self._owners.serve(scope, receive, send, manager.handle_request)

    def _event_store(self) -> StreamEvents | None:
        return self.events if self.config.resume.enabled else None

    def _forget_streams(self) -> None:
        """Events kept for resumable streams (engine.mcp_server.resume; given to the SDK only while enabled)."""
        self.events = StreamEvents(lambda: self.config.resume)
        self._owners = SessionOwners(self._event_store, SESSION_IDLE_S + 60, 2 * MAX_SESSIONS)

    # ------------------------------------------------------------------------------------------ lifecycle

    async def start(self) -> None:
        if self.config.enabled:
            await self._start_manager()

    async def _start_manager(self) -> None:
        resume = self.config.resume
        manager = StreamableHTTPSessionManager(
            app=build_server(self.handlers),
            event_store=self._event_store(),
            security_settings=self.security,
            retry_interval=resume.retry_ms if resume.enabled else None,
            session_idle_timeout=SESSION_IDLE_S,
            max_sessions=MAX_SESSIONS,
        )
        stop = asyncio.Event()
        ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._stop = stop
        self._task = self._spawn(self._serve(manager, stop, ready), name="mcp-endpoint")
        await ready
        self.handlers.relay.start()
        self._watch = self._spawn(self.handlers.watch.run(self.handlers.bus), name="mcp-endpoint-list-changes")
        log.info("engine MCP endpoint serving %d tool(s) at %s", len(self.config.expose), self.config.path)

    async def _serve(
        self, manager: StreamableHTTPSessionManager, stop: asyncio.Event, ready: asyncio.Future[None]
    ) -> None:
        try:
            async with manager.run():
                self._manager = manager
                ready.set_result(None)
                await stop.wait()
        except BaseException as e:
            if not ready.done():
                ready.set_exception(e if isinstance(e, Exception) else RuntimeError(str(e)))
            raise
        finally:
            self._manager = None

    async def stop(self) -> None:
        self.handlers.relay.stop()
        self.handlers.listen.close()  # listen streams end gracefully (their final result) before the manager stops
        self.handlers.modern.stop()
        watch, self._watch = self._watch, None
        if watch is not None:
            watch.cancel()
        self._manager = None
        task, self._task = self._task, None
        if self._stop is not None:
            self._stop.set()
        if task is not None:
            try:
                await asyncio.wait_for(task, STOP_TIMEOUT_S)
            except (TimeoutError, asyncio.CancelledError):
                task.cancel()
            except Exception as e:  # stopping must finish
                log.warning("MCP endpoint stopped with %s", type(e).__name__)
        for t in list(self._inflight):  # requests whose transport did not end with the manager
            t.cancel()
        self._inflight.clear()
        self._forget_streams()  # their sessions ended with the manager

    async def reload(self, old: Settings, new: Settings) -> None:
        o, n = old.engine.mcp_server, new.engine.mcp_server
        http = new.engine.http
        fresh = security_settings(n, http.host, http.allowed_hosts, http.allowed_origins)
        self.security.allowed_hosts = fresh.allowed_hosts  # shared with live transports: applies at once
        self.security.allowed_origins = fresh.allowed_origins
        manager = self._manager
        if manager is not None:  # the manager hands these to each session it opens: sessions opened from now on
            manager.event_store = self._event_store()
            manager.retry_interval = n.resume.retry_ms if n.resume.enabled else None
        if n.path != o.path and self._route_path != n.path:
            await self._rebuild_http_routes()
        if n.enabled and not self.running:
            await self._start_manager()
        elif not n.enabled and self.running:
            await self.stop()

    async def _rebuild_http_routes(self) -> None:
        """A new path needs a new aiohttp app: restart the HTTP component (routes are fixed once built)."""
        if self._restart_http is not None:
            log.info("engine.mcp_server.path changed: restarting the HTTP server to move the endpoint")
            await self._restart_http()


__all__ = ["McpEndpoint", "security_settings"]
