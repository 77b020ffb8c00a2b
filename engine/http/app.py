"""The engine's HTTP API (aiohttp): health, readiness, metrics, MCP status and server tests.

Why it exists: production runs headless (``ava-engine serve``), so orchestrators and operators need /health,
/ready (200 only when every eager MCP server is up or has failed; 503 with the reason otherwise), /metrics
(Prometheus text) and the MCP status and test endpoints the console also uses. The app is built by
``build_app`` from an ``HttpBackend`` (the engine); other components add routes by exposing
``install_routes(app)`` (the engine's own /mcp endpoint plugs in that way) or through ``HttpServer.add_routes``.
Every route, added routes included, sits behind the guard's middlewares (``engine.http.guard``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import Protocol

from aiohttp import web

from engine.http.backend import BACKEND_KEY, HttpBackend
from engine.http.guard import MIDDLEWARES
from engine.http.responses import json_response
from engine.http.server_probe import SLOTS_KEY, ProbeSlots, mcp_test

log = logging.getLogger(__name__)

RouteInstaller = Callable[[web.Application], None]


def ready_state(backend: HttpBackend) -> tuple[bool, str]:
    """(ready, reason): ready once started and no eager MCP server is still in its first attempt."""
    try:
        pending = backend.mcp.pending()
    except RuntimeError:  # no MCP host attached
        pending = []
    if pending:
        return False, "waiting for MCP servers: " + ", ".join(pending)
    if not backend.ready:
        return False, backend.not_ready_reason or "not started"
    return True, ""


class TaskHealth(Protocol):
    def health(self) -> dict[str, object]: ...


async def health(request: web.Request) -> web.Response:
    """Up and started, plus a section from each component offering ``health()`` (capacity, the store). ``status``
    is "degraded", with ``stopped`` naming each background task that stopped and why, once one has (a writer
    that died must not leave /health saying all is well)."""
    backend = request.app[BACKEND_KEY]
    body: dict[str, object] = {"status": "ok", "started": backend.started}
    tasks: TaskHealth | None = getattr(backend, "tasks", None)  # the engine's task group (engine.core.tasks)
    if tasks is not None:
        body.update(tasks.health())
    for component in backend.components:
        section = getattr(component, "health", None)
        if callable(section):
            body[str(getattr(component, "name", "component"))] = section()
    return json_response(body)


async def ready(request: web.Request) -> web.Response:
    ok, reason = ready_state(request.app[BACKEND_KEY])
    return json_response({"ready": True}) if ok else json_response({"ready": False, "reason": reason}, status=503)


async def metrics(request: web.Request) -> web.Response:
    body = request.app[BACKEND_KEY].metrics.render()
    return web.Response(body=body, headers={"Content-Type": "text/plain; version=0.0.4; charset=utf-8"})


async def mcp_status(request: web.Request) -> web.Response:
    return json_response(request.app[BACKEND_KEY].server_status())


def build_app(backend: HttpBackend, installers: Iterable[RouteInstaller] = ()) -> web.Application:
    """The aiohttp app: built-in routes, then every installer and every component's ``install_routes``."""
    # the routes read bodies through engine.http.body (limit read per request); this bounds aiohttp's own readers
    limit = backend.settings.engine.http.max_body_bytes
    app = web.Application(middlewares=list(MIDDLEWARES), client_max_size=limit)
    app[BACKEND_KEY] = backend
    app[SLOTS_KEY] = ProbeSlots()
    app.router.add_get("/health", health)
    app.router.add_get("/ready", ready)
    app.router.add_get("/metrics", metrics)
    app.router.add_get("/mcp/status", mcp_status)
    app.router.add_post("/mcp/test/{server_id}", mcp_test)
    for install in installers:
        install(app)
    for component in backend.components:
        hook = getattr(component, "install_routes", None)
        if callable(hook):
            hook(app)
    return app
