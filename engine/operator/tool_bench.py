"""The operator's tool bench, as part of the engine's public API: what each tool declares, and calling one by hand.

Why apart from ``engine.app``: the console's tool inspector and ``ava-engine mcp call`` need the same two things —
every tool's input schema and MCP annotations, and a call through the one execution path (allowlist, argument
validation, timeout, result shaping, events and metrics) as the operator — and ``app.py`` stays about lifecycle
and wiring (which is at its size limit). They are functions of a ``ToolBench`` — the narrow part of the engine
they use (registry, MCP host, context views, the execution path, the redactor), which ``Engine`` is — exported by
``engine`` as ``tool_catalog(engine, server)`` and ``call_tool(engine, exposed_name, args, context=)``.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

from engine.sessions.session import CallSession
from engine.tools.base import ToolResult
from engine.tools.limits import clip_repr

if TYPE_CHECKING:
    from engine.mcp.host import McpHost
    from engine.redaction.redactor import Redactor
    from engine.tools.execution import ToolExecutor
    from engine.tools.registry import ToolRegistry
    from engine.tools.view import ToolView


class UnknownTool(LookupError):
    """No tool of that exposed name (the message lists the ones there are)."""


class ToolBench(Protocol):
    """What the tool desk needs of the engine (``Engine`` has it all)."""

    registry: ToolRegistry
    redactor: Redactor

    @property
    def mcp(self) -> McpHost: ...

    @property
    def executor(self) -> ToolExecutor: ...

    def context_view(self, context: str, tier: str | None = None) -> ToolView: ...


def tool_catalog(bench: ToolBench, server: str | None = None) -> list[dict[str, Any]]:
    """Every registered tool (or one server's: ``server`` is an MCP server id or "builtin"), sorted by exposed
    name: ``exposed_name``, ``name`` (on its server), ``server``, ``description``, ``input_schema``,
    ``annotations`` (MCP tool annotations as the server listed them; {} for built-ins), ``timeout_ms``,
    ``estimated_duration_ms``, ``max_duration_ms``."""
    out: list[dict[str, Any]] = []
    for name in bench.registry.names():
        entry = bench.registry.get(name)
        if entry is None:
            continue
        d = entry.tool.definition
        if server is not None and d.server != server:
            continue
        out.append(
            {
                "exposed_name": d.name,
                "name": d.origin_name or d.name,
                "server": d.server,
                "description": d.description,
                "input_schema": d.schema(),
                "annotations": dict(d.annotations or {}),
                "timeout_ms": d.timeout_ms,
                "estimated_duration_ms": d.latency.estimated_duration_ms,
                "max_duration_ms": d.latency.max_duration_ms,
            }
        )
    return bench.redactor.value(out)


async def call_tool(
    bench: ToolBench,
    exposed_name: str,
    args: str | Mapping[str, Any] | None,
    *,
    context: str | None = None,
    tier: str | None = None,
    approved_by: str = "operator",
) -> ToolResult:
    """Call a tool as the operator (``ava-engine mcp call``, the console's tool inspector): the full execution
    path, shown every tool (or only what ``context`` shows its calls). A lazy server is started first.

    The time limit is the tool's own ``timeout_ms`` (else ``engine.tool_timeout_ms``): the operator's call is in no
    call, so no tier budget clamps it. With ``context`` (or ``tier``) it runs as a call of that context would, clamped
    to that tier's budget (the context's default tier unless ``tier`` names one).

    The operator asked for this very call, so it counts as approved (``approved_by``) where a tool needs approval.
    ``UnknownTool`` for a name no server has; the result (status, message, data) is redacted.
    """
    owner = bench.mcp.server_for(exposed_name)
    if owner is not None and bench.registry.get(exposed_name) is None:
        await bench.mcp.ensure_started(owner.server_id)
    if bench.registry.get(exposed_name) is None:
        known = ", ".join(bench.registry.names()) or "none"
        raise UnknownTool(f"no tool {clip_repr(exposed_name)} (available: {known})")
    session = CallSession(call_id=f"op-{uuid.uuid4().hex[:8]}", context=context or "(operator)", provider="operator")
    if context is None:
        session.shown_tools = frozenset(bench.registry.names())  # the operator is shown every tool
        session.tier_budget = tier is not None
        session.tier, session.tier_reason = tier or session.tier, "the operator's --tier"
    else:
        view = bench.context_view(context, tier)
        session.shown_tools = view.names
        session.tier = view.tier
        session.tier_reason = "the operator's --tier" if tier else f"context {context}'s default tier"
    result = await bench.executor.execute(session, exposed_name, args, tool_call_id="operator", approved_by=approved_by)
    return bench.redactor.value(result)
