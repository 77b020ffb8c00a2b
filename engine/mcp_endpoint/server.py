"""The MCP server object behind the engine's own endpoint: the engine's tools, and what its MCP servers offer.

Why it exists: other agents call the engine's tools through MCP, and they must get exactly what the engine's own
models get. ``tools/list`` publishes each exposed tool's ``ToolDefinition.schema()`` unchanged (optional stays
optional, defaults, enums and integers kept). ``tools/call`` admits the call (rate, daily budget), then runs it
through ``engine.executor.execute`` — the one execution path, with its argument validation naming every
violation, its events and metrics — allowed exactly the exposed set, under the endpoint's per-tool timeout.
Every outcome the calling model should read (bad arguments, limits, timeouts, tool errors) is an ``isError``
result; only a name this endpoint does not serve is a protocol error (``-32602``, as the MCP spec asks).
A tool of an MCP server keeps that server's annotations, and its progress and log messages reach the caller.
Resources, prompts and completion of the servers behind are ``engine.mcp_endpoint.proxy``'s; log levels,
subscriptions and relayed notifications ``engine.mcp_endpoint.relay``'s; list changes and 2026
``subscriptions/listen`` ``engine.mcp_endpoint.changes``'s (``listChanged`` is declared for all three lists).
"""

from __future__ import annotations

import asyncio
import logging
import warnings
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

from mcp import MCPError
from mcp.server.caching import CacheHint
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.models import InitializationOptions
from mcp.shared.exceptions import MCPDeprecationWarning
from mcp.types import (
    INVALID_PARAMS,
    CallToolRequestParams,
    CallToolResult,
    CompleteRequestParams,
    CompleteResult,
    EmptyResult,
    GetPromptRequestParams,
    GetPromptResult,
    InputRequiredResult,
    ListPromptsResult,
    ListResourcesResult,
    ListResourceTemplatesResult,
    ListToolsResult,
    PaginatedRequestParams,
    ReadResourceRequestParams,
    ReadResourceResult,
    SetLevelRequestParams,
    SubscribeRequestParams,
    Tool,
    ToolAnnotations,
    UnsubscribeRequestParams,
)
from prometheus_client import Counter

from engine.core.metrics import Metrics
from engine.core.version import __version__
from engine.events import EventBus, ToolProgressed
from engine.events.bus import Subscription
from engine.mcp.passthrough import answering, collecting
from engine.mcp_endpoint.changes import Listen, ToolWatch
from engine.mcp_endpoint.limits import CallLimits
from engine.mcp_endpoint.modern_watch import ModernWatch
from engine.mcp_endpoint.mrtr import client_answers, for_client, seal_request_state
from engine.mcp_endpoint.proxy import Catalog, Upstream
from engine.mcp_endpoint.relay import Relay, quiet
from engine.mcp_endpoint.results import bind_progress, to_call_tool_result, unbind_progress
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
        upstream: Callable[[], Upstream | None] = lambda: None,
    ) -> None:
        self._config = config
        self.registry = registry
        self.runner = runner
        self.bus = bus
        self.metrics = metrics
        self.limits = CallLimits()
        self._calls = calls
        self.catalog = Catalog(upstream, self._shares)
        self.relay = Relay(self._pass_subscription, self._shares)
        self.listen = Listen(self.relay, self.catalog.route)
        self.modern = ModernWatch(self.relay.on_upstream)
        self.watch = ToolWatch(self.tools, lambda: self._config().share, self._shares, self.relay.list_changed)

    @property
    def config(self) -> McpEndpointConfig:
        return self._config()

    def _shares(self, server: str | None) -> bool:
        """``engine.mcp_server.share`` names ``server`` (None: the engine's own warnings, shared only by '*')."""
        share = self._config().share
        return "*" in share or (server is not None and server in share)

    def tools(self) -> list[Tool]:
        """Exposed tools the registry has right now, in ``expose`` order (a missing one is left out)."""
        out: list[Tool] = []
        for name in dict.fromkeys(self.config.expose):
            entry = self.registry.get(name)
            if entry is None:
                continue
            d = entry.tool.definition
            hints = getattr(entry.tool, "annotations", None)  # an MCP server's own (engine.mcp.tool.MCPTool)
            out.append(
                Tool(
                    name=d.name,
                    title=getattr(entry.tool, "title", None),
                    description=d.description,
                    input_schema=d.schema(),
                    output_schema=OUTPUT_SCHEMA,
                    annotations=ToolAnnotations.model_validate(hints) if hints else None,
                )
            )
        return out

    async def on_list_tools(
        self, ctx: ServerRequestContext[Any, Any], params: PaginatedRequestParams | None
    ) -> ListToolsResult:
        return ListToolsResult(tools=self.tools())

    async def on_call_tool(
        self, ctx: ServerRequestContext[Any, Any], params: CallToolRequestParams
    ) -> CallToolResult | InputRequiredResult:
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
        with collecting() as media:  # the blocks an MCP server sent, whole (the model's data has them summarised)
            if not client_answers(ctx):
                result = await self._run(ctx, name, dict(params.arguments or {}))
            else:  # a server's question goes to this client (engine.mcp_endpoint.mrtr)
                with answering(params.input_responses, params.request_state) as asking:
                    result = await self._run(ctx, name, dict(params.arguments or {}))
                if asking.question is not None:
                    self._calls.labels(name, "input_required").inc()
                    return for_client(asking.question, ctx)
        self._calls.labels(name, result.status).inc()
        return to_call_tool_result(result, media)

    async def _run(self, ctx: ServerRequestContext[Any, Any], name: str, args: dict[str, Any]) -> ToolResult:
        cfg = self.config
        timeout_ms = cfg.tool_timeouts_ms.get(name) or cfg.timeout_ms
        tool_call_id = f"mcp-endpoint:{ctx.request_id}"
        token = bind_progress(ctx.session.report_progress, ctx.close_sse_stream)
        limit = None
        if timeout_ms:
            key = f"tool_timeouts_ms.{name}" if name in cfg.tool_timeouts_ms else "timeout_ms"
            limit = timeout_ms / 1000, f"the MCP endpoint's timeout (engine.mcp_server.{key}: {timeout_ms})"
        entry = self.registry.get(name)
        server = entry.tool.definition.server if entry is not None else None
        if not server:
            try:  # the executor's own deadline: its one timeout result and event, named after this limit
                return await self.runner.execute(
                    None, name, args, tool_call_id=tool_call_id, allowed=frozenset(cfg.expose), limit=limit
                )
            finally:
                unbind_progress(token)
        # A tool of an MCP server: its progress (published as ToolProgressed) and log messages reach the caller.
        progress = self.bus.subscribe(types={ToolProgressed.type})
        forward = asyncio.ensure_future(_forward_progress(progress, tool_call_id, ctx))
        try:
            with self.relay.running(server, ctx):
                return await self.runner.execute(
                    None, name, args, tool_call_id=tool_call_id, allowed=frozenset(cfg.expose), limit=limit
                )
        finally:
            unbind_progress(token)
            progress.close()  # the forwarder sends what is queued, then ends
            await asyncio.wait({forward})

    # ------------------------------------------------------------------------------------------ the servers behind

    async def on_list_resources(
        self, ctx: ServerRequestContext[Any, Any], params: PaginatedRequestParams | None
    ) -> ListResourcesResult:
        return ListResourcesResult(resources=await self.catalog.resources())

    async def on_list_resource_templates(
        self, ctx: ServerRequestContext[Any, Any], params: PaginatedRequestParams | None
    ) -> ListResourceTemplatesResult:
        return ListResourceTemplatesResult(resource_templates=await self.catalog.templates())

    async def on_read_resource(
        self, ctx: ServerRequestContext[Any, Any], params: ReadResourceRequestParams
    ) -> ReadResourceResult:
        return await self.catalog.read(str(params.uri))

    async def on_subscribe(self, ctx: ServerRequestContext[Any, Any], params: SubscribeRequestParams) -> EmptyResult:
        uri = str(params.uri)
        await self.relay.watch(ctx, uri, await self.catalog.route(uri))
        return EmptyResult()

    async def on_unsubscribe(
        self, ctx: ServerRequestContext[Any, Any], params: UnsubscribeRequestParams
    ) -> EmptyResult:
        await self.relay.unwatch(ctx, str(params.uri))
        return EmptyResult()

    async def _pass_subscription(self, server: str, uri: str, on: bool) -> None:
        conn = self.catalog.connections("resources").get(server)
        if conn is not None and conn.modern:  # 2026: no resources/subscribe, a listen stream names the URIs
            await self.modern.set(server, conn, uri, on)
            return
        session_call = "subscribe_resource" if on else "unsubscribe_resource"  # deprecated by 2026, spoken by 2025
        await self.catalog.ask("resources", server, lambda c: quiet(getattr(c.session, session_call), uri))

    async def on_list_prompts(
        self, ctx: ServerRequestContext[Any, Any], params: PaginatedRequestParams | None
    ) -> ListPromptsResult:
        return ListPromptsResult(prompts=await self.catalog.prompts())

    async def on_get_prompt(
        self, ctx: ServerRequestContext[Any, Any], params: GetPromptRequestParams
    ) -> GetPromptResult | InputRequiredResult:
        if not client_answers(ctx):
            return await self.catalog.get_prompt(params)
        result = await self.catalog.get_prompt(params, asking=True)
        return for_client(result, ctx) if isinstance(result, InputRequiredResult) else result

    async def on_completion(self, ctx: ServerRequestContext[Any, Any], params: CompleteRequestParams) -> CompleteResult:
        return await self.catalog.complete(params)

    async def on_set_level(self, ctx: ServerRequestContext[Any, Any], params: SetLevelRequestParams) -> EmptyResult:
        self.relay.set_level(ctx, params.level)
        return EmptyResult()


async def _forward_progress(sub: Subscription, tool_call_id: str, ctx: ServerRequestContext[Any, Any]) -> None:
    async for event in sub:
        if isinstance(event, ToolProgressed) and event.tool_call_id == tool_call_id:
            try:
                await ctx.session.report_progress(event.progress, event.total, event.message)
            except Exception as e:  # the caller left: the call still ends as it would
                log.debug("progress for %s not delivered: %s", tool_call_id, e)
                return


class _EndpointServer(Server[Any]):
    """Declares ``listChanged`` for tools, prompts and resources to handshake-era clients too (the SDK derives the
    2026 flags from ``subscriptions/listen`` being served, but asks the handshake's caller for them)."""

    def create_initialization_options(
        self,
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
    ) -> InitializationOptions:
        every = NotificationOptions(prompts_changed=True, resources_changed=True, tools_changed=True)
        return super().create_initialization_options(
            notification_options or every, experimental_capabilities, extensions
        )


def build_server(handlers: EndpointTools) -> Server[Any]:
    """A lowlevel SDK server: the engine's tools, the servers' resources, prompts, completion and logging, list
    changes (ping and server/discover come with the SDK)."""
    # The lists follow the engine's registry and its MCP servers (they come and go): never served from a cache.
    fresh = CacheHint(ttl_ms=0, scope="private")
    with warnings.catch_warnings():  # logging/setLevel: deprecated by 2026-07-28, still what 2025 clients speak
        warnings.simplefilter("ignore", MCPDeprecationWarning)
        server: Server[Any] = _EndpointServer(
            SERVER_NAME,
            version=__version__,
            title="AVA engine tools",
            instructions="Tools of an AVA voice-agent engine. Results carry {status, message, data}.",
            cache_hints={
                "tools/list": fresh,
                "prompts/list": fresh,
                "resources/list": fresh,
                "resources/templates/list": fresh,
            },
            on_list_tools=handlers.on_list_tools,
            on_call_tool=handlers.on_call_tool,
            on_list_resources=handlers.on_list_resources,
            on_list_resource_templates=handlers.on_list_resource_templates,
            on_read_resource=handlers.on_read_resource,
            on_subscribe_resource=handlers.on_subscribe,
            on_unsubscribe_resource=handlers.on_unsubscribe,
            on_list_prompts=handlers.on_list_prompts,
            on_get_prompt=handlers.on_get_prompt,
            on_completion=handlers.on_completion,
            on_set_logging_level=handlers.on_set_level,
            on_subscriptions_listen=handlers.listen,
        )

    async def seen(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        handlers.relay.seen(ctx)  # a handshake-era session hears of list changes from its first request on
        return await call_next(ctx)

    server.middleware.append(seen)
    seal_request_state(server, SERVER_NAME)
    return server


def calls_counter(metrics: Metrics) -> Counter:
    return Counter(
        "ai_agent_mcp_endpoint_calls",
        "tools/call requests to the engine's own MCP endpoint, by tool and outcome.",
        ["tool", "outcome"],
        registry=metrics.registry,
    )
