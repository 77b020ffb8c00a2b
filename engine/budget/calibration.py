"""Calibration: probe a server's idempotent tools so their tiers come from measurements, not guesses.

Only tools safe to call are probed: for MCP tools, read-only or idempotent by annotation or config and never one
annotated destructive (``engine.mcp.policy``: annotations only add caution); for others, idempotent ones. Each probe
uses the tool's declared example (config ``probe_args`` > the tool's ``_meta.probe_args``) or the minimal valid
arguments generated from its schema, is checked against the schema before it is sent, and goes through the one
execution path as a probe (``is_probe=True``; the result cache is bypassed). An ``error`` answer to generated
arguments is recorded for latency but not counted against health — made-up arguments ("city": "test") are not the
tool's fault — so a tool with required arguments calibrates without being demoted. Timeouts always count, and the
first timeout ends that tool's probing."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, Protocol

from engine.budget.probe_args import ProbeArgsError, minimal_args
from engine.core.scoped import bound
from engine.mcp.policy import probe_refusal

if TYPE_CHECKING:
    from engine.budget.tiers import TierBoard
    from engine.config.models import Settings
    from engine.tools.base import ToolResult
    from engine.tools.registry import RegisteredTool, ToolRegistry


class ProbeRunner(Protocol):
    """Runs one calibration probe through the engine's execution path (``is_probe``, only that tool allowed)."""

    async def __call__(self, exposed_name: str, args: Mapping[str, Any]) -> ToolResult: ...


class Calibrated(Protocol):
    """What calibration uses of the budget layer: the tools, the probe runner, the tier board it refreshes."""

    registry: ToolRegistry
    probe: ProbeRunner
    board: TierBoard

    @property
    def settings(self) -> Settings: ...

    def metrics_probe(self, server: str, tool: str, status: str) -> None: ...

    def environment(self, server: str) -> str: ...


#: Set while calibration runs a probe: "declared" (an example call) or "generated" (from the schema).
PROBE_MODE: ContextVar[str | None] = ContextVar("ava_probe_mode", default=None)


class CalibrationError(RuntimeError):
    """Calibration cannot run (unknown server, no tools)."""


def probe_arguments(settings: Settings, entry: RegisteredTool) -> tuple[dict[str, Any], str]:
    """(arguments, source) for probing one tool; raises ProbeArgsError when none can be built."""
    d = entry.tool.definition
    server_cfg = settings.mcp.servers.get(d.server)
    origin = d.origin_name or d.name
    if server_cfg is not None:
        for t in server_cfg.tools:
            if t.name == origin and t.probe_args is not None:
                return dict(t.probe_args), "config probe_args"
    declared = getattr(entry.tool, "probe_args", None)
    if isinstance(declared, Mapping):
        return dict(declared), "_meta.probe_args"
    return minimal_args(d.schema()), "generated from schema"


def _refusal(settings: Settings, entry: RegisteredTool) -> str | None:
    """Why this tool must not be probed (its annotations and config, ``engine.mcp.policy``), or None."""
    d = entry.tool.definition
    annotations = getattr(entry.tool, "annotations", None)
    if d.server == "builtin" or not isinstance(annotations, Mapping):
        return None if d.latency.idempotent else "not idempotent: never probed"
    server_cfg = settings.mcp.servers.get(d.server)
    origin = d.origin_name or d.name
    config = next((t for t in server_cfg.tools if t.name == origin), None) if server_cfg is not None else None
    return probe_refusal(annotations, config, d.latency.idempotent)


async def calibrate_server(layer: Calibrated, server_id: str, probes: int | None = None) -> dict[str, Any]:
    """Probe every idempotent tool of ``server_id``; the report names what was probed, skipped and why.

    Reads the tools from the layer's registry, runs each probe through the layer's probe runner (the engine's one
    execution path) and records the outcomes in the layer's latency book.
    """
    registry, settings = layer.registry, layer.settings
    entries = sorted(registry.by_server(server_id), key=lambda e: e.name)
    if not entries:
        known = sorted({e.tool.definition.server for e in registry.snapshot().tools.values()} - {"builtin"})
        raise CalibrationError(
            f"server {server_id!r} has no registered tools (is it connected? servers with tools: "
            f"{', '.join(known) or 'none'})"
        )
    n = probes if probes is not None else settings.budget.calibration_probes
    if n <= 0:
        raise CalibrationError(f"probes must be a positive number, got {n}")
    rows: list[dict[str, Any]] = []
    for entry in entries:
        d = entry.tool.definition
        row: dict[str, Any] = {"name": d.origin_name or d.name, "exposed_name": d.name}
        refusal = _refusal(settings, entry)
        if refusal is not None:
            rows.append({**row, "result": "skipped", "reason": refusal})
            continue
        try:
            args, source = probe_arguments(settings, entry)
        except ProbeArgsError as e:
            rows.append({**row, "result": "skipped", "reason": f"no probe arguments: {e}"})
            continue
        problems = entry.validator.problems(args)
        if problems:
            rows.append(
                {
                    **row,
                    "result": "skipped",
                    "args": args,
                    "reason": f"probe arguments ({source}) do not fit the schema: {'; '.join(problems)}",
                }
            )
            continue
        outcomes: Counter[str] = Counter()
        with bound(PROBE_MODE, "generated" if source == "generated from schema" else "declared"):
            for _ in range(n):
                result = await layer.probe(d.name, args)
                outcomes[result.status] += 1
                layer.metrics_probe(d.server, d.origin_name or d.name, result.status)
                if result.status == "timeout":
                    break
        status = layer.board.refresh(d)
        rows.append(
            {
                **row,
                "result": "calibrated",
                "args": args,
                "args_source": source,
                "outcomes": dict(outcomes),
                "tier": status.tier,
                "health": status.health,
                "p50_ms": _r(status.p50_ms),
                "p99_ms": _r(status.p99_ms),
                "samples": status.samples,
                "badge": status.badge,
                "basis": status.source,
            }
        )
    return {
        "server": server_id,
        "environment": layer.environment(server_id),
        "probes_per_tool": n,
        "calibrated": sum(1 for r in rows if r["result"] == "calibrated"),
        "skipped": sum(1 for r in rows if r["result"] == "skipped"),
        "tools": rows,
    }


def _r(v: float | None) -> float | None:
    return round(v, 3) if v is not None else None
