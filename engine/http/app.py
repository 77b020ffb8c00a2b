"""The engine's HTTP API (aiohttp): health, readiness, metrics, MCP status and server tests.

Why it exists: production runs headless (``ava-engine serve``), so orchestrators and operators need /health,
/ready (200 only when every eager MCP server is up or has failed; 503 with the reason otherwise), /metrics
(Prometheus text) and the MCP status and test endpoints the console also uses. The app is built by
``build_app``; other components add routes by exposing ``install_routes(app)`` (the engine's own /mcp endpoint
plugs in that way) or through ``HttpServer.add_routes``.
"""

from __future__ import annotations

import hmac
import json
import logging
from collections.abc import Awaitable, Callable, Iterable
from typing import TYPE_CHECKING, Any

import pydantic
from aiohttp import web

if TYPE_CHECKING:
    from engine.app import Engine

log = logging.getLogger(__name__)

RouteInstaller = Callable[[web.Application], None]
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
ENGINE_KEY: web.AppKey[Engine] = web.AppKey("engine")
#: Paths answered without the bearer token (orchestrator probes).
PUBLIC_PATHS = frozenset({"/health", "/ready"})


def _json(data: Any, status: int = 200) -> web.Response:
    return web.json_response(data, status=status, dumps=lambda o: json.dumps(o, default=str, ensure_ascii=False))


def _error(status: int, message: str) -> web.Response:
    return _json({"error": message}, status=status)


@web.middleware
async def auth_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    engine = request.app[ENGINE_KEY]
    token = engine.settings.engine.http.auth_token
    endpoint = engine.settings.engine.mcp_server
    own_token = endpoint.enabled and endpoint.auth_token is not None and request.path == endpoint.path
    if token is None or request.path in PUBLIC_PATHS or own_token:
        # /health and /ready answer probes; an MCP endpoint with its own token checks that one instead
        return await handler(request)
    expected = f"Bearer {token.get_secret_value()}".encode()
    given = request.headers.get("Authorization", "").encode()
    if not hmac.compare_digest(given, expected):
        return _error(401, "missing or wrong bearer token (Authorization: Bearer <engine.http.auth_token>)")
    return await handler(request)


def ready_state(engine: Engine) -> tuple[bool, str]:
    """(ready, reason): ready once started and no eager MCP server is still in its first attempt."""
    try:
        pending = engine.mcp.pending()
    except RuntimeError:  # no MCP host attached
        pending = []
    if pending:
        return False, "waiting for MCP servers: " + ", ".join(pending)
    if not engine.ready:
        return False, engine.not_ready_reason or "not started"
    return True, ""


async def health(request: web.Request) -> web.Response:
    engine = request.app[ENGINE_KEY]
    return _json({"status": "ok", "started": engine.started})


async def ready(request: web.Request) -> web.Response:
    ok, reason = ready_state(request.app[ENGINE_KEY])
    return _json({"ready": True}) if ok else _json({"ready": False, "reason": reason}, status=503)


async def metrics(request: web.Request) -> web.Response:
    body = request.app[ENGINE_KEY].metrics.render()
    return web.Response(body=body, headers={"Content-Type": "text/plain; version=0.0.4; charset=utf-8"})


async def mcp_status(request: web.Request) -> web.Response:
    return _json(request.app[ENGINE_KEY].server_status())


async def mcp_test(request: web.Request) -> web.Response:
    """POST /mcp/test/{server_id}: test the configured server, or the unsaved config in the JSON body."""
    engine = request.app[ENGINE_KEY]
    server_id = request.match_info["server_id"]
    body: Any = None
    if request.can_read_body:
        try:
            body = await request.json()
        except ValueError as e:
            return _error(400, f"the body is not valid JSON: {e}")
    target: Any = server_id
    if isinstance(body, dict) and body:
        cfg = body.get("config", body)
        if not isinstance(cfg, dict):
            return _error(400, "'config' must be an object (a server config as in mcp.servers.<id>)")
        target = {**cfg, "id": server_id}
    elif body not in (None, {}):
        return _error(400, "the body must be a JSON object (a server config) or empty")
    try:
        report = await engine.test_server(target)
    except KeyError as e:
        return _error(404, str(e.args[0]) if e.args else str(e))
    except pydantic.ValidationError as e:
        problems = [f"{'.'.join(str(p) for p in err['loc']) or '(server)'}: {err['msg']}" for err in e.errors()]
        return _error(400, "invalid server config: " + "; ".join(problems))
    except ValueError as e:
        return _error(400, str(e))
    return _json(report, status=200)


def build_app(engine: Engine, installers: Iterable[RouteInstaller] = ()) -> web.Application:
    """The aiohttp app: built-in routes, then every installer and every component's ``install_routes``."""
    app = web.Application(middlewares=[auth_middleware], client_max_size=1024 * 1024)
    app[ENGINE_KEY] = engine
    app.router.add_get("/health", health)
    app.router.add_get("/ready", ready)
    app.router.add_get("/metrics", metrics)
    app.router.add_get("/mcp/status", mcp_status)
    app.router.add_post("/mcp/test/{server_id}", mcp_test)
    for install in installers:
        install(app)
    for component in engine.components:
        hook = getattr(component, "install_routes", None)
        if callable(hook):
            hook(app)
    return app
