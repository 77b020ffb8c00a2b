"""What the HTTP API needs from the engine, as a narrow protocol (``HttpBackend``), and the app keys.

Why it exists: the routes read the settings, the readiness state, the metrics text and the MCP servers' status,
and start server tests; nothing else. Naming exactly that lets the HTTP layer be built and tested without a whole
``Engine`` (which satisfies the protocol structurally) and keeps it from reaching into engine internals.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from aiohttp import web

from engine.config.models import Settings


class PendingServers(Protocol):
    """The MCP host as readiness sees it: the eager servers still in their first connection attempt."""

    def pending(self) -> list[str]: ...


class MetricsText(Protocol):
    def render(self) -> bytes: ...


class HttpBackend(Protocol):
    """Everything the HTTP API reads or calls. ``Engine`` satisfies it."""

    @property
    def settings(self) -> Settings: ...

    @property
    def started(self) -> bool: ...

    @property
    def ready(self) -> bool: ...

    @property
    def not_ready_reason(self) -> str: ...

    @property
    def metrics(self) -> MetricsText: ...

    @property
    def mcp(self) -> PendingServers:
        """Raises ``RuntimeError`` when no MCP host is attached."""
        ...

    @property
    def components(self) -> Sequence[object]:
        """Components offering ``install_routes(app)`` add their routes to the app (the /mcp endpoint does)."""
        ...

    def server_status(self) -> dict[str, Any]: ...

    async def test_server(self, target: str | Mapping[str, Any]) -> dict[str, Any]: ...


BACKEND_KEY: web.AppKey[HttpBackend] = web.AppKey("backend")
#: Set on a request once its bearer token matched ``engine.http.auth_token``.
AUTHENTICATED: web.RequestKey[bool] = web.RequestKey("authenticated", bool)
