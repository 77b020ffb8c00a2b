"""The engine's HTTP API (aiohttp): health, readiness, metrics, MCP status and server tests.

Why it exists: production runs headless (``ava-engine serve``), so orchestrators and operators need /health,
/ready (200 only when every eager MCP server is up or has failed; 503 with the reason otherwise), /metrics
(Prometheus text) and the MCP status and test endpoints the console also uses. The app is built by
``build_app`` from an ``HttpBackend``: what the composition root hands over, including /health's named sections
and the route installers of the other doors (approvals, capacity, the remote console's routes, the engine's own
/mcp endpoint). Every route, added routes included, sits behind the guard's middlewares (``engine.http.guard``).
"""

from __future__ import annotations

import logging

from aiohttp import web

from engine.http.backend import BACKEND_KEY, HttpBackend
from engine.http.guard import MIDDLEWARES
from engine.http.responses import json_response
from engine.http.server_probe import SLOTS_KEY, ProbeSlots, mcp_test

log = logging.getLogger(__name__)


def ready_state(backend: HttpBackend) -> tuple[bool, str]:
    """(ready, reason): ready once started and no eager MCP server is still in its first attempt."""
    pending = backend.pending_servers()
    if pending:
        return False, "waiting for MCP servers: " + ", ".join(pending)
    life = backend.lifecycle()
    if not life.ready:
        return False, life.not_ready_reason or "not started"
    return True, ""


async def health(request: web.Request) -> web.Response:
    """Up and started, plus each section the wiring registered (capacity, the store …). ``status`` is "degraded",
    with ``stopped`` naming each background task that stopped and why, once one has (a writer that died must not
    leave /health saying all is well)."""
    backend = request.app[BACKEND_KEY]
    body: dict[str, object] = {"status": "ok", "started": backend.lifecycle().started}
    body.update(backend.task_health())
    for section in backend.health:
        body[section.name] = section.read()
    return json_response(body)


async def ready(request: web.Request) -> web.Response:
    ok, reason = ready_state(request.app[BACKEND_KEY])
    return json_response({"ready": True}) if ok else json_response({"ready": False, "reason": reason}, status=503)


async def metrics(request: web.Request) -> web.Response:
    body = request.app[BACKEND_KEY].metrics.render()
    return web.Response(body=body, headers={"Content-Type": "text/plain; version=0.0.4; charset=utf-8"})


async def mcp_status(request: web.Request) -> web.Response:
    return json_response(request.app[BACKEND_KEY].server_status())


def build_app(backend: HttpBackend) -> web.Application:
    """The aiohttp app: built-in routes, then the backend's route installers in order."""
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
    for install in backend.routes:
        install(app)
    return app
