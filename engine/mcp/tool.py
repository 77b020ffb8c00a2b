"""``MCPTool``: one discovered MCP tool as a registry ``Tool``, and building the set for one server.

Why it exists: the registry and the execution path know only ``Tool``; this wraps a server's ``tools/list`` entry
with its exposed name, the per-tool config overrides (description, timeout, speech, latency metadata — config
wins over the tool's ``_meta``), and routes ``execute`` through the server's supervisor, which owns the live
connection.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
from collections.abc import Callable, Mapping
from typing import Any, Protocol

import mcp.types as types
from mcp.shared.dispatcher import ProgressFnT

from engine.budget.metadata import resolve_latency, resolve_probe_args
from engine.config.models import McpServerConfig
from engine.events import ToolProgressed
from engine.mcp.host_services import HostServices
from engine.mcp.naming import exposed_names
from engine.mcp.policy import cache_seconds
from engine.mcp.results import SpeechOptions
from engine.mcp.structured import shown_schema
from engine.tools.base import Tool, ToolCategory, ToolDefinition, ToolExecutionContext, ToolResult
from engine.tools.progress import note

log = logging.getLogger(__name__)


#: A call that answers faster than this is "quick": progress notifications would say nothing a caller could use.
QUICK_CALL_S = 0.2
#: After this many quick calls in a row without a progress notification, calls stop asking for progress.
QUICK_STREAK = 8


class ToolHost(Protocol):
    """What an ``MCPTool`` uses of its server's supervisor (``engine.mcp.supervisor.Supervisor``)."""

    @property
    def services(self) -> HostServices: ...

    async def call_tool(self, tool: MCPTool, args: dict[str, Any], ctx: ToolExecutionContext) -> ToolResult: ...


class MCPTool(Tool):
    """A tool living on an MCP server; ``definition.origin_name`` is its name on that server.

    Progress is asked for (a progress token in the request) only while it can matter: always for a tool that
    has reported progress, and otherwise until the tool has answered ``QUICK_STREAK`` calls in a row within
    ``QUICK_CALL_S`` without reporting any; one slow call asks again. The SDK's progress plumbing costs about
    0.1 ms a call on the 2026 protocol, which a tool that answers in a millisecond and never reports pays for
    nothing.
    """

    def __init__(
        self,
        definition: ToolDefinition,
        supervisor: ToolHost,
        speech: SpeechOptions,
        probe_args: dict[str, Any] | None = None,
        *,
        title: str | None = None,
        annotations: dict[str, Any] | None = None,
        output_schema: dict[str, Any] | None = None,
    ) -> None:
        self.definition = definition
        self.supervisor = supervisor
        self.speech = speech
        #: Arguments the budget layer may use to probe this tool (from ``_meta`` or config).
        self.probe_args = probe_args
        #: The server's display name for the tool (``title``, else ``annotations.title``), for the console.
        self.title = title
        #: The tool's MCP annotations as listed (``readOnlyHint`` …): hints that only ever add caution.
        self.annotations = annotations or {}
        #: The tool's declared ``outputSchema`` (its results are checked against it; shown in ``tools --json``).
        self.output_schema = output_schema
        #: The server sent a progress notification for one of this tool's calls.
        self.reports_progress = False
        self._quick_streak = 0

    async def execute(self, args: dict[str, Any], ctx: ToolExecutionContext) -> ToolResult:
        return await self.supervisor.call_tool(self, args, ctx)

    def progress_callback(self, ctx: ToolExecutionContext) -> ProgressFnT | None:
        """What to hand the SDK for this call's progress: a callback publishing ``ToolProgressed``, or None for
        a tool known to be quick and silent (see the class docstring)."""
        if not self.reports_progress and self._quick_streak >= QUICK_STREAK:
            return None
        d = self.definition
        try:  # the task running the call: the turn tracker knows the call by it
            task = asyncio.current_task()
        except RuntimeError:  # no loop running (a caller outside any call): nothing to note against
            task = None

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            self.reports_progress = True
            note(task, progress, total)
            ctx.emit(
                ToolProgressed(
                    call_id=ctx.call_id,
                    tool_call_id=ctx.tool_call_id,
                    exposed_name=d.name,
                    server=d.server,
                    progress=progress,
                    total=total,
                    message=message,
                )
            )

        return on_progress

    def answered(self, elapsed_s: float) -> None:
        """A call came back after ``elapsed_s``: counts towards (or breaks) the quick streak."""
        self._quick_streak = self._quick_streak + 1 if elapsed_s < QUICK_CALL_S else 0

    def same_as(self, other: MCPTool) -> bool:
        """Equal declaration and metadata (so a re-list that changed nothing leaves the registry alone)."""
        return (
            self.definition == other.definition
            and self.speech == other.speech
            and self.probe_args == other.probe_args
            and self.title == other.title
            and self.annotations == other.annotations
            and self.output_schema == other.output_schema
        )

    def info(self) -> dict[str, Any]:
        """What the console's tool inspector and ``tools --json`` show beyond the declaration."""
        return {
            "title": self.title,
            "annotations": dict(self.annotations),
            "output_schema": shown_schema(self.output_schema),
        }


def exposable(cfg: McpServerConfig, listed: list[types.Tool]) -> tuple[list[types.Tool], list[str]]:
    """The listed tools this server exposes (``expose_unlisted``, first of duplicates), plus warnings."""
    by_name = {t.name: t for t in cfg.tools}
    warnings: list[str] = []
    seen_raw: set[str] = set()
    unique: list[types.Tool] = []
    for t in listed:
        if not (cfg.expose_unlisted or t.name in by_name):
            continue
        if t.name in seen_raw:
            warnings.append(f"tool {t.name!r} is listed twice by the server; the first one is used")
            continue
        seen_raw.add(t.name)
        unique.append(t)
    listed_names = {t.name for t in listed}
    for name in by_name:
        if name not in listed_names:
            warnings.append(f"tools: {name!r} is configured but the server does not list it")
    return unique, warnings


def build_tools(
    server_id: str,
    cfg: McpServerConfig,
    listed: list[types.Tool],
    supervisor: ToolHost,
    taken: Callable[[str], bool] | None = None,
    names: Mapping[str, str] | None = None,
) -> tuple[list[MCPTool], list[str]]:
    """The ``MCPTool`` set for one server's listing, plus warnings (unlisted config tools, name conflicts).

    ``names`` maps raw tool names to exposed names (the host's ``NameBook``, which settles collisions across
    servers); without it the server's names are worked out alone. ``taken(name)`` says whether something outside
    the MCP servers (a built-in tool) already owns a name: such a tool gets the hashed form, with a warning.
    """
    from engine.mcp.naming import hashed_name

    by_name = {t.name: t for t in cfg.tools}
    unique, warnings = exposable(cfg, listed)
    if names is None:
        overrides = {n: tc.expose_as for n, tc in by_name.items() if tc.expose_as}
        names = exposed_names(server_id, [t.name for t in unique], overrides)
    out: list[MCPTool] = []
    for t in unique:
        if t.execution is not None and t.execution.task_support == "required":
            warnings.append(
                f"tool {t.name!r} can only run as an MCP task (execution.taskSupport: required), which the engine "
                "does not run; it is not shown to models"
            )
            continue
        tc = by_name.get(t.name)
        exposed = names.get(t.name) or hashed_name(server_id, t.name)
        if taken is not None and taken(exposed):
            fallback = hashed_name(server_id, t.name)
            if fallback == exposed or taken(fallback):
                warnings.append(f"tool {t.name!r}: exposed name {exposed!r} is taken by another tool; skipped")
                continue
            warnings.append(
                f"tool {t.name!r}: exposed name {exposed!r} is taken by another tool; exposed as {fallback!r}"
            )
            exposed = fallback
        annotations = t.annotations.model_dump(by_alias=True, exclude_none=True) if t.annotations else None
        latency, problems = resolve_latency(t.name, tc, t.meta, annotations)
        seconds, refused = cache_seconds(t.name, annotations, tc, latency.cacheable_seconds)
        if refused is not None:  # annotations as policy: only read-only (or configured) tools are cached
            latency = dataclasses.replace(latency, cacheable_seconds=seconds)
            problems.append(refused)
        probe, probe_problems = resolve_probe_args(t.name, tc, t.meta)
        warnings.extend(problems + probe_problems)
        description = (tc.description if tc and tc.description else None) or t.description or t.title or t.name
        schema = dict(t.input_schema) if t.input_schema else {"type": "object", "properties": {}}
        redact = supervisor.services.redact
        if redact is not None:  # what a server says about its tools reaches providers, status and screens
            description = redact(description)
            dumped = json.dumps(schema, ensure_ascii=False)
            if (clean := redact(dumped)) != dumped:
                schema = json.loads(clean)
        definition = ToolDefinition(
            name=exposed,
            description=description,
            category=ToolCategory.INFORMATION,
            input_schema=schema,
            latency=latency,
            server=server_id,
            origin_name=t.name,
            slow_response_message=(tc.slow_response_message if tc else None) or cfg.defaults.slow_response_message,
            slow_response_threshold_ms=cfg.defaults.slow_response_threshold_ms,
            timeout_ms=(tc.timeout_ms if tc else None) or cfg.defaults.timeout_ms,
            annotations=annotations,
        )
        speech = SpeechOptions(template=tc.speech_template if tc else None, field=tc.speech_field if tc else None)
        title = t.title or (t.annotations.title if t.annotations else None)
        output = dict(t.output_schema) if t.output_schema else None
        if redact is not None and title is not None:
            title = redact(title)
        out.append(
            MCPTool(definition, supervisor, speech, probe, title=title, annotations=annotations, output_schema=output)
        )
    return out, warnings
