"""Where a tool's declared latency comes from: config overrides > the tool's MCP ``_meta`` > defaults.

The MCP host calls ``resolve_latency`` when it wraps a discovered tool. ``_meta`` keys are read at its top level
or inside a ``latency`` object: ``estimated_duration_ms`` (declared p50), ``max_duration_ms`` (declared p99 and
hard timeout), ``idempotent``, ``cacheable_seconds`` and ``probe_args`` (an example call for calibration). When
neither config nor ``_meta`` says whether a tool is idempotent, an MCP ``readOnlyHint: true`` annotation counts
as idempotent (a read-only tool is safe to probe); ``idempotentHint`` alone does not, because an idempotent
write still changes state when probed. A server's bad value is never fatal: it is ignored and named in the
returned problems, so the host can log it and the tool keeps working on defaults.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from engine.config.models import McpToolConfig
from engine.tools.base import LatencyMeta

_INT_FIELDS = ("estimated_duration_ms", "max_duration_ms", "cacheable_seconds")


def _meta_section(meta: Mapping[str, Any] | None) -> dict[str, Any]:
    if not isinstance(meta, Mapping):
        return {}
    out = {k: v for k, v in meta.items() if k in (*_INT_FIELDS, "idempotent", "probe_args")}
    nested = meta.get("latency")
    if isinstance(nested, Mapping):
        out.update({k: v for k, v in nested.items() if k in (*_INT_FIELDS, "idempotent", "probe_args")})
    return out


def _annotation(annotations: Any, name: str) -> Any:
    if annotations is None:
        return None
    if isinstance(annotations, Mapping):
        return annotations.get(name)
    return getattr(annotations, name, None)


def resolve_latency(
    tool_name: str,
    config: McpToolConfig | None,
    meta: Mapping[str, Any] | None,
    annotations: Any = None,
    defaults: LatencyMeta | None = None,
) -> tuple[LatencyMeta, list[str]]:
    """The tool's LatencyMeta and the problems found in its ``_meta`` (each naming the tool and key)."""
    base = defaults or LatencyMeta()
    problems: list[str] = []
    from_meta = _meta_section(meta)
    values: dict[str, Any] = {}
    for key in _INT_FIELDS:
        v = from_meta.get(key)
        if v is None:
            continue
        minimum = 0 if key != "max_duration_ms" else 1
        if isinstance(v, bool) or not isinstance(v, int | float) or v < minimum or v != v:
            problems.append(f"tool {tool_name!r}: _meta.{key} must be a number >= {minimum}, got {v!r} (ignored)")
            continue
        values[key] = int(v)
    if "idempotent" in from_meta:
        if isinstance(from_meta["idempotent"], bool):
            values["idempotent"] = from_meta["idempotent"]
        else:
            problems.append(
                f"tool {tool_name!r}: _meta.idempotent must be true or false, got {from_meta['idempotent']!r} (ignored)"
            )
    if "idempotent" not in values and _annotation(annotations, "readOnlyHint") is True:
        values["idempotent"] = True
    if config is not None:
        for key in (*_INT_FIELDS, "idempotent"):
            v = getattr(config, key)
            if v is not None:
                values[key] = v
    est = values.get("estimated_duration_ms", base.estimated_duration_ms)
    mx = values.get("max_duration_ms", base.max_duration_ms)
    if est is not None and mx is not None and est > mx:
        problems.append(
            f"tool {tool_name!r}: estimated_duration_ms ({est}) is above max_duration_ms ({mx}); "
            "the estimate is capped at the maximum"
        )
        est = mx
    return (
        LatencyMeta(
            estimated_duration_ms=est,
            max_duration_ms=mx,
            idempotent=values.get("idempotent", base.idempotent),
            cacheable_seconds=values.get("cacheable_seconds", base.cacheable_seconds),
        ),
        problems,
    )


def resolve_probe_args(
    tool_name: str, config: McpToolConfig | None, meta: Mapping[str, Any] | None
) -> tuple[dict[str, Any] | None, list[str]]:
    """A declared example call for calibration: config ``probe_args`` > ``_meta.probe_args`` > none."""
    if config is not None and config.probe_args is not None:
        return dict(config.probe_args), []
    v = _meta_section(meta).get("probe_args")
    if v is None:
        return None, []
    if not isinstance(v, Mapping):
        return None, [f"tool {tool_name!r}: _meta.probe_args must be an object, got {type(v).__name__} (ignored)"]
    return dict(v), []
