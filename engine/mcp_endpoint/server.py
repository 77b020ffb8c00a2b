"""The MCP server object behind the engine's own endpoint: tools/list and tools/call over the engine's tools.

Why it exists: other agents call the engine's tools through MCP, and they must get exactly what the engine's own
models get. ``tools/list`` publishes each exposed tool's ``ToolDefinition.schema()`` unchanged (optional stays
optional, defaults, enums and integers kept). ``tools/call`` admits the call (rate, daily budget), then runs it
through ``engine.executor.execute`` — the one execution path, with its argument validation naming every
violation, its events and metrics — allowed exactly the exposed set, under the endpoint's per-tool timeout.
Every outcome the calling model should read (bad arguments, limits, timeouts, tool errors) is an ``isError``
result; only a name this endpoint does not serve is a protocol error (``-32602``, as the MCP spec asks).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

from mcp import MCPError
from mcp.server.caching import CacheHint
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.types import (
    INVALID_PARAMS,
    CallToolRequestParams,
    CallToolResult,
    ListToolsResult,
    PaginatedRequestParams,
    Tool,
)
from prometheus_client import Counter

import engine
from engine.events import EventBus
from engine.mcp_endpoint.limits import CallLimits
from engine.mcp_endpoint.results import bind_progress, to_call_tool_result, unbind_progress
from engine.metrics import Metrics
from engine.tools.base import ToolResult
from engine.tools.registry import ToolRegistry

if TYPE_CHECKING:
    from engine.config.models import McpEndpointConfig
    from engine.sessions.session import CallSession

log = logging.getLogger(__name__)

SERVER_NAME = "ava-engine"
#: What ``structuredContent`` always looks like (the product's ToolResult contract).
OUTPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "status": {"type": "string", "enum": ["success", "error", "timeout", "rejected"]},
        "message": {"type": "string"},
        "data": {},
    },
    "required": ["status", "message", "data"],
}


class ToolRunner(Protocol):
    """The engine's one execution path (``ToolExecutor.execute``), as much of it as the endpoint calls."""

    async def execute(
        self,
        session: CallSession | None,
        exposed_name: str,
        args: str | Mapping[str, Any] | None,
        *,
        tool_call_id: str = "",
        is_probe: bool = False,
        allowed: frozenset[str] | None = None,
        limit: tuple[float, str] | None = None,
    ) -> ToolResult: ...


class EndpointTools:
    """The handlers: read the registry and the endpoint's config at every request (reload applies at once)."""

    def __init__(
        self,
        config: Callable[[], McpEndpointConfig],
        registry: ToolRegistry,
        runner: ToolRunner,
        bus: EventBus,
        metrics: Metrics,
        calls: Counter,
    ) -> None:
        self._config = config
        self.registry = registry
        self.runner = runner
        self.bus = bus
        self.metrics = metrics
        self.limits = CallLimits()
        self._calls = calls

    @property
    def config(self) -> McpEndpointConfig:
        return self._config()

    def tools(self) -> list[Tool]:
        """Exposed tools the registry has right now, in ``expose`` order (a missing one is left out)."""
        out: list[Tool] = []
        for name in dict.fromkeys(self.config.expose):
            entry = self.registry.get(name)
            if entry is None:
                continue
            d = entry.tool.definition
            out.append(
                Tool(name=d.name, description=d.description, input_schema=d.schema(), output_schema=OUTPUT_SCHEMA)
            )
        return out

    async def on_list_tools(
        self, ctx: ServerRequestContext[Any, Any], params: PaginatedRequestParams | None
    ) -> ListToolsResult:
        return ListToolsResult(tools=self.tools())

    async def on_call_tool(self, ctx: ServerRequestContext[Any, Any], params: CallToolRequestParams) -> CallToolResult:
        cfg = self.config
        name = params.name
        if name not in cfg.expose:
            self._calls.labels(name[:64], "unknown_tool").inc()
            raise MCPError(INVALID_PARAMS, f"Unknown tool: {name!r} is not served by this endpoint")
        refusal = self.limits.admit(cfg.requests_per_minute, cfg.daily_budget)
        if refusal is not None:
            self._calls.labels(name, refusal.reason).inc()
            log.info("MCP endpoint refused %s: %s", name, refusal.reason)
            data = {"reason": refusal.reason, "retry_after_s": refusal.retry_after_s}
            return to_call_tool_result(ToolResult("rejected", refusal.message, data))
        result = await self._run(ctx, name, dict(params.arguments or {}))
        self._calls.labels(name, result.status).inc()
        return to_call_tool_result(result)

    async def _run(self, ctx: ServerRequestContext[Any, Any], name: str, args: dict[str, Any]) -> ToolResult:
        cfg = self.config
        timeout_ms = cfg.tool_timeouts_ms.get(name) or cfg.timeout_ms
        tool_call_id = f"mcp-endpoint:{ctx.request_id}"
        token = bind_progress(ctx.session.report_progress)
        limit = None
        if timeout_ms:
            key = f"tool_timeouts_ms.{name}" if name in cfg.tool_timeouts_ms else "timeout_ms"
            limit = timeout_ms / 1000, f"the MCP endpoint's timeout (engine.mcp_server.{key}: {timeout_ms})"
        try:  # the executor's own deadline: its one timeout result and event, named after this limit
            return await self.runner.execute(
                None, name, args, tool_call_id=tool_call_id, allowed=frozenset(cfg.expose), limit=limit
            )
        finally:
            unbind_progress(token)


def build_server(handlers: EndpointTools) -> Server[Any]:
    """A lowlevel SDK server serving only tools (ping and server/discover come with the SDK)."""
    return Server(
        SERVER_NAME,
        version=engine.__version__,
        title="AVA engine tools",
        instructions="Tools of an AVA voice-agent engine. Results carry {status, message, data}.",
        # The tool list follows the engine's registry (MCP servers come and go): never serve it from a cache.
        cache_hints={"tools/list": CacheHint(ttl_ms=0, scope="private")},
        on_list_tools=handlers.on_list_tools,
        on_call_tool=handlers.on_call_tool,
    )


def calls_counter(metrics: Metrics) -> Counter:
    return Counter(
        "ai_agent_mcp_endpoint_calls",
        "tools/call requests to the engine's own MCP endpoint, by tool and outcome.",
        ["tool", "outcome"],
        registry=metrics.registry,
    )
