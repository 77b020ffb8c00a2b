"""Who may talk to the engine's HTTP API: Host and Origin first, then the bearer token, then the body's type.

Why it exists: the API listens on 127.0.0.1, which every web page the operator opens can also reach. Two browser
tricks would otherwise let any site drive it: a cross-site "simple" POST (``Content-Type: text/plain``, no CORS
preflight) and DNS rebinding (a site's own name re-pointed at 127.0.0.1, so the request carries a foreign
``Host``). The middlewares here run on every route, in this order:

1. ``guard_middleware``: the ``Host`` must be a loopback name (localhost, 127.0.0.1, [::1], any port), the bound
   address itself, or listed in ``engine.http.allowed_hosts`` (421 otherwise, even from 127.0.0.1); a request with
   an ``Origin`` header (a browser) is refused (403) unless that origin is listed in
   ``engine.http.allowed_origins`` or is the request's own ``Host`` (same origin: only a page served from this
   very port has it). On the engine's own MCP endpoint path ``engine.mcp_server.allowed_hosts`` /
   ``allowed_origins`` count too.
2. ``auth_middleware``: when ``engine.http.auth_token`` is set every route but ``GET /health`` and ``GET /ready``
   needs ``Authorization: Bearer <token>`` (the MCP endpoint with a token of its own checks that one instead).
3. ``body_middleware``: a request body larger than ``engine.http.max_body_bytes`` is a 413 before it is read, and
   a state-changing request (POST, PUT, PATCH, DELETE) with a body must be ``application/json`` (415).
"""

from __future__ import annotations

import hmac
from collections.abc import Awaitable, Callable, Iterable

from aiohttp import hdrs, web

from engine.config.models import Settings
from engine.config.models.engine import is_loopback_host, split_host
from engine.http.backend import AUTHENTICATED, BACKEND_KEY
from engine.http.responses import echo, error

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

#: Paths answered without the bearer token (orchestrator probes), for GET and HEAD only.
PUBLIC_PATHS = frozenset({"/health", "/ready"})
STATE_CHANGING = frozenset({"POST", "PUT", "PATCH", "DELETE"})
WILDCARD_BINDS = frozenset({"", "0.0.0.0", "::", "[::]"})
LOOPBACK_HINT = "localhost, 127.0.0.1, [::1]"


def host_entry_matches(entry: str, name: str, port: str | None) -> bool:
    """An ``allowed_hosts`` entry: ``'name'`` and ``'name:*'`` match any port, ``'name:8088'`` only that port."""
    e_name, e_port = split_host(entry)
    return e_name == name and (e_port in (None, "*") or e_port == port)


def host_allowed(value: str, bind_host: str, allowed: Iterable[str]) -> bool:
    name, port = split_host(value)
    if not name:
        return False
    if is_loopback_host(name):
        return True
    bind = split_host(bind_host)[0]
    if bind not in WILDCARD_BINDS and bind == name:  # the address the API was bound to, by its literal value
        return True
    return any(host_entry_matches(e, name, port) for e in allowed)


def origin_allowed(value: str, allowed: Iterable[str]) -> bool:
    """Exact origins; ``'http://name:*'`` matches that scheme and name on any port (or none)."""
    origin = value.strip().lower().rstrip("/")
    for entry in allowed:
        e = entry.strip().lower().rstrip("/")
        if e.endswith(":*"):
            base = e[:-2]
            if origin == base or (origin.startswith(base + ":") and origin[len(base) + 1 :].isdigit()):
                return True
        elif origin == e:
            return True
    return False


def same_origin(origin: str, host: str | None) -> bool:
    """An Origin naming the very host:port the request was sent to: a page served from here, not a foreign site."""
    scheme, sep, rest = origin.strip().lower().partition("://")
    return bool(sep) and scheme in ("http", "https") and host is not None and rest == host.strip().lower()


def browser_refusal(
    hosts: Iterable[str],
    origins: Iterable[str],
    bind_host: str,
    allowed_hosts: Iterable[str],
    allowed_origins: Iterable[str],
) -> tuple[str, str] | None:
    """The first ``Host`` or ``Origin`` header value a server reachable from web pages must refuse, as
    ``("host", value)`` or ``("origin", value)``; None when all are admitted. ``hosts``/``origins`` are every value
    of those headers the request carries (a request without ``Host`` is no browser's, so no rebinding vector).
    The engine's HTTP API and the browser console (``ava-console --web``) both ask this."""
    allowed_hosts = list(allowed_hosts)
    hosts = list(hosts)
    for value in hosts:
        if not host_allowed(value, bind_host, allowed_hosts):
            return "host", value
    host = hosts[0] if hosts else None
    for origin in origins:
        if not same_origin(origin, host) and not origin_allowed(origin, allowed_origins):
            return "origin", origin
    return None


def admitted(settings: Settings, path: str) -> tuple[list[str], list[str], str]:
    """(allowed hosts, allowed origins, the keys that admit them) for a request to ``path``."""
    http, endpoint = settings.engine.http, settings.engine.mcp_server
    hosts, origins = list(http.allowed_hosts), list(http.allowed_origins)
    keys = "engine.http.allowed_{}"
    if endpoint.enabled and path == endpoint.path:
        hosts += endpoint.allowed_hosts
        origins += endpoint.allowed_origins
        keys = "engine.http.allowed_{0} (or engine.mcp_server.allowed_{0} for this endpoint only)"
    return hosts, origins, keys


@web.middleware
async def guard_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    settings = request.app[BACKEND_KEY].settings
    hosts, origins, keys = admitted(settings, request.path)
    refused = browser_refusal(
        request.headers.getall(hdrs.HOST, []),
        request.headers.getall(hdrs.ORIGIN, []),
        settings.engine.http.host,
        hosts,
        origins,
    )
    if refused is not None and refused[0] == "host":
        key = keys.format("hosts")
        return error(
            421,
            f"Host {echo(refused[1])} is not served here: the engine's HTTP API answers loopback names "
            f"({LOOPBACK_HINT}) and engine.http.host only, to defeat DNS rebinding; "
            f"to admit this name add it to {key}",
            key=key.split(" ")[0],
        )
    if refused is not None:
        key = keys.format("origins")
        return error(
            403,
            f"Origin {echo(refused[1])} is not allowed: requests from web pages are refused unless their origin "
            f"is listed in {key}",
            key=key.split(" ")[0],
        )
    return await handler(request)


def bearer_ok(header: str | None, token: str) -> bool:
    """``Authorization: Bearer <token>`` (scheme case-insensitive), compared in constant time."""
    scheme, _, given = (header or "").strip().partition(" ")
    ok_scheme = scheme.lower() == "bearer"
    return hmac.compare_digest(given.strip().encode(), token.encode()) and ok_scheme


@web.middleware
async def auth_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    settings = request.app[BACKEND_KEY].settings
    token = settings.engine.http.auth_token
    endpoint = settings.engine.mcp_server
    own_token = endpoint.enabled and endpoint.auth_token is not None and request.path == endpoint.path
    probe = request.path in PUBLIC_PATHS and request.method in (hdrs.METH_GET, hdrs.METH_HEAD)
    if token is None or probe or own_token:
        return await handler(request)
    if not bearer_ok(request.headers.get(hdrs.AUTHORIZATION), token.get_secret_value()):
        return error(
            401,
            "missing or wrong bearer token (Authorization: Bearer <engine.http.auth_token>)",
            key="engine.http.auth_token",
            headers={"WWW-Authenticate": 'Bearer realm="ava-engine"'},
        )
    request[AUTHENTICATED] = True
    return await handler(request)


def too_large(size: int, limit: int) -> str:
    return f"the request body is {size} bytes; the limit is {limit} bytes (engine.http.max_body_bytes)"


@web.middleware
async def body_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    if request.body_exists:
        limit = request.app[BACKEND_KEY].settings.engine.http.max_body_bytes
        length = request.content_length
        if length is not None and length > limit:
            return error(413, too_large(length, limit), key="engine.http.max_body_bytes")
        if request.method in STATE_CHANGING and request.content_type != "application/json":
            given = request.headers.get(hdrs.CONTENT_TYPE)
            return error(
                415,
                f"{request.method} bodies must be JSON sent as 'Content-Type: application/json', "
                f"not {echo(given) if given else 'without a Content-Type'}",
            )
    return await handler(request)


MIDDLEWARES = (guard_middleware, auth_middleware, body_middleware)
