"""What the budget layer tells operators: per-tool rows (tier, p50/p99, badge, health, tags), a call's or a
context's shown and hidden tools, and the per-category leaderboard.

``tools_report`` is what ``ava-engine tools --context C --tier T --json`` prints (the lead's command merges its
``shown``, ``hidden`` and ``leaderboard`` keys into its own output); the console reads the same rows.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from engine.budget.tiers import TIER_ORDER, TierBoard, ToolStatus, tier_index
from engine.tools.base import ToolDefinition

if TYPE_CHECKING:
    from engine.config.models import Settings
    from engine.tools.registry import ToolRegistry
    from engine.tools.view import ToolViewBuilder

_BADGE_RANK = {"Lightning": 0, "Fast": 1, "Standard": 2, "Slow": 3, "Unmeasured": 4}


def compatibility(status: ToolStatus) -> str:
    """ "FAST compatible", "STANDARD compatible", "DEEP only", "every tier (call control)" or "unavailable"."""
    if status.exempt:
        return "every tier (call control)"
    if status.tier is None:
        return "unavailable"
    return {"fast": "FAST compatible", "standard": "STANDARD compatible", "deep": "DEEP only"}[status.tier]


def _ms(v: float | None) -> float | None:
    return round(v, 1) if v is not None else None


def tool_row(d: ToolDefinition, status: ToolStatus) -> dict[str, Any]:
    return {
        "name": d.name,
        "server": d.server,
        "tool": d.origin_name or d.name,
        "category": str(d.category),
        "environment": status.key[0],
        "tier": status.tier,
        "base_tier": status.base_tier,
        "basis": status.source,
        "p50_ms": _ms(status.p50_ms),
        "p99_ms": _ms(status.p99_ms),
        # from fewer than budget.min_samples too: shown (marked) once a tool has run, never used to tier it
        "observed_p50_ms": _ms(status.observed_p50_ms),
        "observed_p99_ms": _ms(status.observed_p99_ms),
        "samples": status.samples,
        "error_rate": round(status.error_rate, 4),
        "badge": status.badge,
        "health": status.health,
        "health_reason": status.health_reason or None,
        "compatibility": compatibility(status),
        "declared": {
            "estimated_duration_ms": d.latency.estimated_duration_ms,
            "max_duration_ms": d.latency.max_duration_ms,
            "idempotent": d.latency.idempotent,
            "cacheable_seconds": d.latency.cacheable_seconds,
        },
    }


def tools_report(
    settings: Settings,
    views: ToolViewBuilder,
    board: TierBoard,
    context: str | None,
    tier: str | None,
    provider_type: str | None = None,
) -> dict[str, Any]:
    """Shown tools (fastest first) with tier, p50, p99, badge and health; hidden ones with the reason.

    ``tools`` is the declarations array exactly as ``provider_type`` would receive it (canonical without one).
    """
    if context is not None:
        ctx = settings.contexts.get(context)
        if ctx is None:
            known = ", ".join(sorted(settings.contexts)) or "none"
            raise ValueError(f"unknown context {context!r} (known: {known})")
        allow: list[str] = list(ctx.tools)
        tier = tier or ctx.tier.default
    else:
        allow = ["*"]
        tier = tier or "deep"
    tier_index(tier)
    view = views.view(allow, tier, None, 0, context or "")
    shown = [tool_row(e.tool.definition, board.status(e.tool.definition)) for e in view.tools]
    if provider_type is None:
        tools: list[dict[str, Any]] = view.declarations()
    else:
        from engine.providers.rendering import render_declarations

        tools = render_declarations(provider_type, view)
    return {
        "context": context,
        "provider": provider_type,
        "tier": tier,
        "tools": tools,
        "shown": shown,
        "hidden": [{"name": n, "reason": r} for n, r in view.hidden],
        "tiers": {t: int(getattr(settings.budget.tiers, t)) for t in TIER_ORDER},
    }


def leaderboard(
    registry: ToolRegistry, board: TierBoard, names: Iterable[str] | None = None
) -> dict[str, list[dict[str, Any]]]:
    """Per category, tools ranked fastest first: by badge, then measured p50, then effective latency."""
    snap = registry.snapshot().tools
    wanted = set(names) if names is not None else None
    by_cat: dict[str, list[tuple[tuple[int, float, float, str], dict[str, Any]]]] = {}
    for name, entry in snap.items():
        if wanted is not None and name not in wanted:
            continue
        d = entry.tool.definition
        s = board.status(d)
        key = (
            _BADGE_RANK.get(s.badge, 9),
            s.p50_ms if s.p50_ms is not None else 1e12,
            s.effective_ms if s.effective_ms is not None else 1e12,
            name,
        )
        by_cat.setdefault(str(d.category), []).append((key, tool_row(d, s)))
    out: dict[str, list[dict[str, Any]]] = {}
    for cat in sorted(by_cat):
        rows = [row for _, row in sorted(by_cat[cat], key=lambda p: p[0])]
        for i, row in enumerate(rows, 1):
            row["rank"] = i
        out[cat] = rows
    return out
