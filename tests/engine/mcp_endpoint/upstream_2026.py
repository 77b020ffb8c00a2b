"""A 2026-07-28 MCP server whose prompt and resource lists change at run time, for the endpoint's list-change tests.

Why it exists: a 2026 server announces list changes only on ``subscriptions/listen`` streams (no unsolicited
notifications), so the engine must listen for them to relay them; ``upstream.py`` beside the conformance fixture
speaks the handshake era. Configured in process as server ``modern``; ``add_prompt`` / ``add_resource`` add one
and announce it (``ctx.notify_*_changed``, the SDK's listen bus); ``touch`` announces that an item
(``modern://item/{name}``) was updated.
"""

from __future__ import annotations

from mcp.server import MCPServer
from mcp.server.mcpserver import Context

SERVER_ID = "modern"


def build() -> MCPServer:
    server = MCPServer("changing-2026")

    @server.prompt(description="Always here.")
    def hello() -> str:
        return "Hello."

    @server.resource("modern://always", name="always", mime_type="text/plain")
    def always() -> str:
        return "always here"

    @server.tool(description="Add a prompt named `name` and announce it.")
    async def add_prompt(name: str, ctx: Context) -> str:
        server.prompt(name=name, description="Added at run time.")(lambda: f"I am {name}.")
        await ctx.notify_prompts_changed()
        return f"added prompt {name}"

    @server.tool(description="Add a resource at modern://{name} and announce it.")
    async def add_resource(name: str, ctx: Context) -> str:
        server.resource(f"modern://{name}", name=name, mime_type="text/plain")(lambda: f"I am {name}.")
        await ctx.notify_resources_changed()
        return f"added resource {name}"

    @server.resource("modern://item/{name}", name="item", mime_type="text/plain")
    def item(name: str) -> str:
        return f"item {name}"

    @server.tool(description="Announce that modern://item/{name} changed.")
    async def touch(name: str, ctx: Context) -> str:
        await ctx.notify_resource_updated(f"modern://item/{name}")
        return f"touched modern://item/{name}"

    return server


def server_config() -> dict[str, object]:
    """``mcp.servers.modern``: this server in process, spoken to in 2026-07-28 (``auto`` discovers it)."""
    return {
        "transport": "inprocess",
        "target": "upstream_2026:build",
        "mode": "auto",
        "tools": [{"name": n, "expose_as": f"{SERVER_ID}_{n}"} for n in ("add_prompt", "add_resource", "touch")],
    }
