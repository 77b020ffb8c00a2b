"""The operator's commands on MCP servers, as part of the engine's public API: restart, test, switch, sign in and out.

Why apart from ``engine.app``: they are thin doors onto the MCP host, each answer passed through the engine's
``Redactor`` (a server's status quotes its command line, environment and errors), kept out of the composition root.
The engine's facade forwards to a ``ServerDesk`` handed the MCP host and the redactor.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from engine.mcp.host import McpHost
    from engine.redaction.redactor import Redactor


class ServerDesk:
    def __init__(self, mcp: McpHost, redactor: Redactor) -> None:
        self.mcp = mcp
        self.redactor = redactor

    async def restart_server(self, server_id: str) -> dict[str, Any]:
        """Restart one MCP server (resets its restart count; the way out of ``failed``); returns its status."""
        return self.redactor.value(await self.mcp.restart_server(server_id))

    async def sign_in_server(
        self, server_id: str, show_url: Callable[[str], Awaitable[None] | None], timeout_s: float = 300.0
    ) -> dict[str, Any]:
        """OAuth sign-in to a remote MCP server: ``show_url`` gets the URL to open, a loopback listener waits for the
        redirect, the tokens go to the OS keyring and the server restarts (``up`` when done). Raises ``SignInError``
        (``engine.mcp.signin``) with a message naming the server when it did not complete."""
        return self.redactor.value(await self.mcp.sign_in(server_id, show_url, timeout_s))

    async def sign_out_server(self, server_id: str) -> dict[str, Any]:
        """Forget a remote MCP server's OAuth tokens; it then waits in ``needs sign-in``."""
        return self.redactor.value(await self.mcp.sign_out(server_id))

    async def test_server(self, target: str | Mapping[str, Any]) -> dict[str, Any]:
        """Fresh connect → initialize → list for a configured server id or an unsaved server config dict."""
        return self.redactor.value(await self.mcp.test_server(target))

    def server_status(self) -> dict[str, Any]:
        """Every MCP server's state, protocol, pid, uptime, restarts, last error, tools and stderr tail."""
        return self.redactor.value(self.mcp.status())

    async def ensure_server_started(self, server_id: str) -> bool:
        """Start a lazy (or stopped) MCP server now and wait for it; True when it is up."""
        return await self.mcp.ensure_started(server_id)

    async def set_server_enabled(self, server_id: str, enabled: bool) -> dict[str, Any]:
        """Switch one MCP server on or off for this run (not saved); returns its status."""
        return self.redactor.value(await self.mcp.set_server_enabled(server_id, enabled))
