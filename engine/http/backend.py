"""What the HTTP API is handed (``HttpBackend``, a record built by the composition root) and the app's keys.

Why it exists: the routes read the settings, the engine's lifecycle, the metrics text and the MCP servers' status,
start server tests, and show the health sections and the routes the wiring registered; nothing else. The composition
root (``engine.components``) builds this record from the parts (the task group, the MCP host, the server desk, the
components offering a /health section or routes) and hands it over, so the HTTP layer holds no engine to reach
through, searches no component list, and can be built and tested from fakes.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from aiohttp import web

from engine.config.models import Settings

#: Adds routes to the app as it is built (an HTTP door's ``install_routes``, the engine's own /mcp endpoint's).
RouteInstaller = Callable[[web.Application], None]


class MetricsText(Protocol):
    def render(self) -> bytes: ...


@dataclass(frozen=True)
class Lifecycle:
    """The engine's state as /health and /ready report it."""

    started: bool
    ready: bool
    not_ready_reason: str


@dataclass(frozen=True)
class HealthSection:
    """One named section of /health's body (the store's, capacity's …), read on each request."""

    name: str
    read: Callable[[], Mapping[str, object]]


def no_task_health() -> Mapping[str, object]:
    return {}


@dataclass(frozen=True)
class HttpBackend:
    """Everything the HTTP API reads or calls, each from the part that owns it."""

    #: The live settings (a reload swaps them): the guard, the body limit and the routes read them per request.
    read_settings: Callable[[], Settings]
    lifecycle: Callable[[], Lifecycle]
    metrics: MetricsText
    #: The MCP host's eager servers still in their first connection attempt (/ready waits for them).
    pending_servers: Callable[[], list[str]]
    server_status: Callable[[], dict[str, Any]]
    test_server: Callable[[str | Mapping[str, Any]], Awaitable[dict[str, Any]]]
    #: The task group's report (``stopped`` tasks and why), merged into /health's top level.
    task_health: Callable[[], Mapping[str, object]] = no_task_health
    #: /health's named sections, in this order.
    health: Sequence[HealthSection] = ()
    #: Route installers run, in this order, after the built-in routes when the app is built.
    routes: Sequence[RouteInstaller] = ()

    def __post_init__(self) -> None:
        names = [s.name for s in self.health]
        if twice := sorted({n for n in names if names.count(n) > 1}):
            raise ValueError(f"HttpBackend.health: two /health sections named {', '.join(map(repr, twice))}")

    @property
    def settings(self) -> Settings:
        return self.read_settings()


BACKEND_KEY: web.AppKey[HttpBackend] = web.AppKey("backend")
#: Set on a request once its bearer token matched ``engine.http.auth_token``.
AUTHENTICATED: web.RequestKey[bool] = web.RequestKey("authenticated", bool)
