"""What the budget layer needs about a tool on every call, worked out once per tool definition and settings object.

Why apart: the layer's hooks run on every tool call and read these facts — the tool's own time limit and where it
comes from, whether it is exempt from tier budgets, its slow-response threshold and message, its latency book key —
without working them out again; deciding them (and how a limit is named in a timeout's message) is this module's
job, using them is the layer's.
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.budget.cache import cacheable
from engine.budget.stats import BookKey
from engine.config.models import Settings
from engine.tools.base import ToolDefinition
from engine.tools.execution import default_limit_for, own_limit
from engine.tools.view import matches_allowlist


@dataclass(frozen=True, slots=True)
class CallPlan:
    """Per tool definition and settings object: its own timeout, exemption, slow-response rule, book key and whether
    its results may be cached."""

    definition: ToolDefinition
    settings: Settings
    own_ms: int | None
    exempt: bool
    threshold_ms: int
    message: str
    key: BookKey
    #: ``own_limit`` of the definition under these settings: (seconds or None, where it comes from).
    own: tuple[float | None, str]
    #: Whether its results may be cached (``engine.budget.cache.cacheable``).
    cacheable: bool


def call_plan(d: ToolDefinition, settings: Settings, key: BookKey) -> CallPlan:
    """``d``'s plan under ``settings``: the tool's own values first, then its server's defaults, then the budget's."""
    cfg = settings.budget
    server_cfg = settings.mcp.servers.get(d.server)
    server_defaults = server_cfg.defaults if server_cfg is not None else None
    threshold = (
        d.slow_response_threshold_ms
        or (server_defaults.slow_response_threshold_ms if server_defaults else None)
        or cfg.slow_response_threshold_ms
    )
    message = (
        d.slow_response_message
        or (server_defaults.slow_response_message if server_defaults else None)
        or cfg.slow_response_message
    )
    return CallPlan(
        definition=d,
        settings=settings,
        own_ms=d.timeout_ms or d.latency.max_duration_ms,
        exempt=matches_allowlist(d.name, cfg.exempt_tools),
        threshold_ms=threshold,
        message=message,
        key=key,
        own=own_limit(d, settings),
        cacheable=cacheable(d),
    )


def limit_named(tier: str, ms: int) -> tuple[float, str]:
    """(seconds, where it comes from) of the engine's default limit (``tier`` "") or of a tier's budget of ``ms``."""
    if not tier:
        return default_limit_for(ms)
    return ms / 1000, f"the {tier.upper()} tier's budget (budget.tiers.{tier}: {ms})"
