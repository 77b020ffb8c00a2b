"""The engine's MCP endpoint as a component that builds the real one (and loads the MCP SDK) only when it can serve.

Why it exists: ``McpEndpoint`` is made of the SDK's server machinery (~1 s of imports), and every engine has the
component, though most never serve it: a CLI command or a console without HTTP, with ``engine.mcp_server``
disabled. This slot builds the endpoint when the HTTP server installs its routes, or when a start or reload finds
``engine.mcp_server.enabled``; before that there is nothing it could serve, so it has nothing to start, stop or
relay. Once built, every call goes to the endpoint.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, NotRequired, TypedDict, Unpack

from engine.config.models import Settings
from engine.services import Component, Services
from engine.tools.registry import ToolRegistry

if TYPE_CHECKING:
    from aiohttp import web
    from mcp.types import ServerNotification

    from engine.mcp_endpoint.component import McpEndpoint
    from engine.mcp_endpoint.proxy import Upstream
    from engine.mcp_endpoint.server import ToolRunner


class EndpointParts(TypedDict):
    """``McpEndpoint``'s keyword arguments, kept until the endpoint is built."""

    registry: ToolRegistry
    runner: ToolRunner
    restart_http: NotRequired[Callable[[], Awaitable[None]] | None]
    upstream: NotRequired[Upstream | None]


class EndpointSlot(Component):
    name = "mcp_endpoint"

    def __init__(self, services: Services, **parts: Unpack[EndpointParts]) -> None:
        super().__init__(services)
        self._services, self._parts = services, parts
        self.endpoint: McpEndpoint | None = None

    def _built(self) -> McpEndpoint:
        if self.endpoint is None:
            from engine.mcp_endpoint.component import McpEndpoint  # the MCP SDK loads only for an endpoint to serve

            self.endpoint = McpEndpoint(self._services, **self._parts)
        return self.endpoint

    def install_routes(self, app: web.Application) -> None:
        """Called by the HTTP app builder: an engine that serves HTTP has the endpoint (enabled later by a reload)."""
        self._built().install_routes(app)

    async def on_upstream(self, server: str, note: ServerNotification) -> None:
        """The MCP host's hook (``HostServices.on_notification``): the endpoint's clients get servers' messages."""
        if self.endpoint is not None:
            await self.endpoint.handlers.relay.on_upstream(server, note)

    async def start(self) -> None:
        if self.endpoint is not None or self._settings().engine.mcp_server.enabled:
            await self._built().start()

    async def stop(self) -> None:
        if self.endpoint is not None:
            await self.endpoint.stop()

    async def reload(self, old: Settings, new: Settings) -> None:
        if self.endpoint is not None or new.engine.mcp_server.enabled:
            await self._built().reload(old, new)
