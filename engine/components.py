"""The list of engine components, in start order. Each issue's layer adds itself here."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from engine.app import Engine, EngineComponent


def default_components(engine: Engine) -> list[EngineComponent]:
    from engine.budget.layer import BudgetLayer  # budget: tiers, latency book, cache, selector
    from engine.http.server import HttpServer  # /health /ready /metrics /mcp/status /mcp/test
    from engine.mcp.host import McpHost  # MCP servers: supervisors, discovery, calls
    from engine.mcp_endpoint import McpEndpoint  # serves exposed tools to other agents

    components: list[EngineComponent] = []
    if engine.serve_http and engine.settings.engine.http.enabled:
        components.append(HttpServer(engine))  # first up, so /ready answers 503 while MCP servers start
    components.append(BudgetLayer(engine))  # budget
    components.append(McpHost(engine))  # mcp
    components.append(McpEndpoint(engine))  # the engine's own /mcp (engine.mcp_server)
    return components
