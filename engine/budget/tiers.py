"""Tiers and health: which tier each tool needs, whether it is healthy, and the tier filter for tool views.

Rules (documented in README_SECTION.md):

* Effective latency, the number a tool is tiered by: its measured p99 once the window holds ``min_samples``
  invocations; else its declared ``max_duration_ms``; else its declared ``estimated_duration_ms`` ×
  ``estimate_multiplier`` (a p50 says little about the tail); else nothing, and the tool is STANDARD.
* Base tier: the smallest tier whose budget covers the effective latency; above DEEP the tool is hidden on every
  tier.
* Health, over the window's samples younger than ``health_horizon_s`` (once there are ``min_samples`` of them):
  unhealthy when the error rate reaches ``unhealthy_error_rate`` (hidden everywhere); degraded when it exceeds
  ``degraded_error_rate`` or the recent p99 exceeds the declared ``max_duration_ms`` (demoted one tier).
  Errors leave the window and age past the horizon, so health comes back by itself, even for a hidden tool.
* Exempt (call-control) tools are shown on every tier.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from engine.budget.stats import Bands, BookKey, LatencyBook, LatencyWindow, WindowStats
from engine.config.models import BudgetConfig
from engine.tools.base import ToolDefinition
from engine.tools.registry import RegisteredTool
from engine.tools.view import matches_allowlist

TIER_ORDER: tuple[str, ...] = ("fast", "standard", "deep")
HEALTHY, DEGRADED, UNHEALTHY = "healthy", "degraded", "unhealthy"


def tier_index(tier: str) -> int:
    try:
        return TIER_ORDER.index(tier)
    except ValueError:
        raise ValueError(f"unknown tier {tier!r} (fast, standard or deep)") from None


#: The badges by p50 (ms): each holds from its bound up to the next one's.
_BADGES: tuple[tuple[float, str], ...] = ((0.0, "Lightning"), (50.0, "Fast"), (200.0, "Standard"), (1000.0, "Slow"))
_INF = float("inf")


def badge_for(p50_ms: float | None) -> str:
    """Lightning < 50 ms, Fast < 200 ms, Standard < 1 s, Slow ≥ 1 s; Unmeasured without enough samples."""
    if p50_ms is None:
        return "Unmeasured"
    badge = _BADGES[0][1]
    for bound, name in _BADGES[1:]:
        if p50_ms < bound:
            break
        badge = name
    return badge


@dataclass(frozen=True, slots=True)
class ToolStatus:
    """Everything the budget layer concluded about one tool at one moment."""

    name: str
    server: str
    key: BookKey
    base_tier: str | None
    tier: str | None
    health: str
    health_reason: str
    effective_ms: float | None
    source: str
    p50_ms: float | None
    p99_ms: float | None
    samples: int
    error_rate: float
    badge: str
    exempt: bool
    hidden_reason: str
    #: The window's p50/p99 from however many samples it holds (``p50_ms``/``p99_ms`` wait for ``min_samples``):
    #: what operators see once a tool has run at all; nothing is decided by them.
    observed_p50_ms: float | None = None
    observed_p99_ms: float | None = None

    @property
    def signature(self) -> tuple[object, ...]:
        """What a tool view depends on; a change here bumps the filter's revision."""
        return (self.tier, self.health, self.exempt, self.badge)

    def visible_in(self, tier: str) -> bool:
        return self.exempt or (self.tier is not None and tier_index(self.tier) <= tier_index(tier))

    def reason_hidden(self, tier: str) -> str:
        if self.tier is None:
            return self.hidden_reason
        reason = f"needs {self.tier.upper()} ({self.source})"
        if self.health == DEGRADED:
            reason += f"; demoted one tier: {self.health_reason}"
        return reason

    @property
    def sort_key(self) -> tuple[float, str]:
        return (self.effective_ms if self.effective_ms is not None else 1e12, self.name)


def classify(
    d: ToolDefinition,
    key: BookKey,
    window: WindowStats,
    recent: WindowStats,
    cfg: BudgetConfig,
    exempt: bool,
) -> ToolStatus:
    tiers = {"fast": cfg.tiers.fast, "standard": cfg.tiers.standard, "deep": cfg.tiers.deep}
    lat = d.latency
    measured = window.count >= cfg.min_samples
    effective: float | None
    if measured and window.p99_ms is not None:
        effective, source = window.p99_ms, f"p99 {window.p99_ms:.0f} ms"
    elif lat.max_duration_ms is not None:
        effective, source = float(lat.max_duration_ms), f"declared max {lat.max_duration_ms} ms"
    elif lat.estimated_duration_ms is not None:
        effective = lat.estimated_duration_ms * cfg.estimate_multiplier
        source = f"declared p50 {lat.estimated_duration_ms} ms × {cfg.estimate_multiplier:g}"
    else:
        effective, source = None, "no latency information"
    hidden_reason = ""
    base: str | None
    if effective is None:
        base = "standard"
    else:
        base = next((t for t in TIER_ORDER if effective <= tiers[t]), None)
        if base is None:
            hidden_reason = f"too slow for any tier ({source} > DEEP {cfg.tiers.deep} ms)"
    health, health_reason = HEALTHY, ""
    if recent.count >= cfg.min_samples:
        rate = recent.error_rate
        pct = f"error rate {rate:.0%} over the last {recent.count} calls"
        if rate >= cfg.unhealthy_error_rate:
            health, health_reason = UNHEALTHY, pct
        elif rate > cfg.degraded_error_rate:
            health, health_reason = DEGRADED, pct
        elif lat.max_duration_ms is not None and recent.p99_ms is not None and recent.p99_ms > lat.max_duration_ms:
            health = DEGRADED
            health_reason = f"p99 {recent.p99_ms:.0f} ms over its declared max {lat.max_duration_ms} ms"
    tier = base
    if health == UNHEALTHY:
        tier, hidden_reason = None, f"unhealthy: {health_reason}"
    elif health == DEGRADED and base is not None:
        i = tier_index(base) + 1
        if i < len(TIER_ORDER):
            tier = TIER_ORDER[i]
        else:
            tier, hidden_reason = None, f"degraded beyond DEEP: {health_reason}"
    return ToolStatus(
        name=d.name,
        server=d.server,
        key=key,
        base_tier=base,
        tier=tier,
        health=health,
        health_reason=health_reason,
        effective_ms=effective,
        source=source,
        p50_ms=window.p50_ms if measured else None,
        p99_ms=window.p99_ms if measured else None,
        samples=window.count,
        error_rate=window.error_rate,
        badge=badge_for(window.p50_ms if measured else None),
        exempt=exempt,
        hidden_reason=hidden_reason,
        observed_p50_ms=window.p50_ms,
        observed_p99_ms=window.p99_ms,
    )


def _bands(d: ToolDefinition, status: ToolStatus, cfg: BudgetConfig) -> Bands | None:
    """Where the measured p50 and p99 of ``d``'s window may move while ``_same_class`` would still say yes, for a
    status of ``d`` taken under ``cfg``: its tier's latency band and its badge's. None when the class depends on more
    than the two percentiles (not healthy, a declared max, or not measured yet) or the status is not one that
    measured percentiles give (its tier is not its p99's)."""
    if status.health != HEALTHY or d.latency.max_duration_ms is not None or status.badge == "Unmeasured":
        return None
    t = cfg.tiers
    edges = (-_INF, float(t.fast), float(t.standard), float(t.deep), _INF)
    tiers = (*TIER_ORDER, None)
    if status.tier not in tiers:
        return None
    k = tiers.index(status.tier)
    b = next((i for i, (_, badge) in enumerate(_BADGES) if badge == status.badge), None)
    if b is None:
        return None
    p50_from = _BADGES[b][0] if b else -_INF
    p50_below = _BADGES[b + 1][0] if b + 1 < len(_BADGES) else _INF
    return Bands(cfg.min_samples, edges[k], edges[k + 1], p50_from, p50_below)


class TierBoard:
    """Every tool's current status, and the view builder's tier filter (with a revision that moves on change)."""

    def __init__(
        self,
        book: LatencyBook,
        config: Callable[[], BudgetConfig],
        environment: Callable[[str], str],
        clock: Callable[[], float],
    ) -> None:
        self.book = book
        self._config = config
        self.environment = environment
        self.clock = clock
        #: Each tool's definition, status, and the budget config with the ``Bands`` its measured percentiles may
        #: move in without changing its class (None: no such shortcut; see ``recorded``), worked out on first use.
        self._status: dict[str, tuple[ToolDefinition, ToolStatus, tuple[BudgetConfig, Bands | None] | None]] = {}
        #: Tools recorded since their status was built whose class provably did not change (see ``recorded``).
        self._stale: set[str] = set()
        self._revision = 0
        self._next_expiry = float("inf")
        self.on_change: Callable[[ToolStatus | None, ToolStatus], None] | None = None

    # -------------------------------------------------------------------------------------------- status

    def key_for(self, d: ToolDefinition) -> BookKey:
        return (self.environment(d.server), d.server, d.origin_name or d.name)

    def _compute(self, d: ToolDefinition) -> ToolStatus:
        cfg = self._config()
        key = self.key_for(d)
        w = self.book.get(key)
        since = self.clock() - cfg.health_horizon_s
        window = w.stats() if w is not None else WindowStats(0, None, None, 0)
        recent = w.recent(since) if w is not None else window
        status = classify(d, key, window, recent, cfg, matches_allowlist(d.name, cfg.exempt_tools))
        if status.health != HEALTHY and w is not None:
            oldest = w.oldest_failure_at(since)
            newest = w.newest_at()
            ref = oldest if oldest is not None else newest
            if ref is not None:
                self._next_expiry = min(self._next_expiry, ref + cfg.health_horizon_s)
        return status

    def status(self, d: ToolDefinition) -> ToolStatus:
        cached = self._status.get(d.name)
        if cached is not None and cached[0] is d:
            if d.name not in self._stale:
                return cached[1]
            return self.refresh(d)  # its numbers moved since: rebuilt now that someone reads them
        status = self._compute(d)
        self._status[d.name] = (d, status, None)
        return status

    def seed(self, d: ToolDefinition) -> None:
        """Build ``d``'s status if the board has none, so its first call's ``recorded`` compares against the status
        before that call (and bumps the revision only if the call changed it), as a view built earlier would."""
        cached = self._status.get(d.name)
        if cached is None or cached[0] is not d:
            self.status(d)

    def refresh(self, d: ToolDefinition) -> ToolStatus:
        """Recompute one tool; bump the revision when its view-relevant status changed."""
        cached = self._status.get(d.name)
        status = self._compute(d)
        self._status[d.name] = (d, status, None)
        self._stale.discard(d.name)
        old = cached[1] if cached is not None else None
        if old is None or old.signature != status.signature:
            self._revision += 1
            if self.on_change is not None:
                self.on_change(old, status)
        return status

    def recorded(self, d: ToolDefinition, window: LatencyWindow | None = None, cfg: BudgetConfig | None = None) -> None:
        """One invocation of ``d`` was just recorded (into ``window``, its book window, when the caller has it at
        hand): what ``refresh`` does, at the cost of a few comparisons when the tool stays healthy in the same tier
        with the same badge (the steady state of every call).

        Then the status's numbers (samples, percentiles, error rate) are marked stale and rebuilt when read;
        the revision and ``on_change`` depend only on the signature, which this check proves unchanged.
        ``cfg`` is the budget config in force, when the caller has it at hand.
        """
        name = d.name
        cached = self._status.get(name)
        if cached is not None and cached[0] is d:
            if cfg is None:
                cfg = self._config()
            bands = cached[2]
            if bands is None or bands[0] is not cfg:
                bands = (cfg, _bands(d, cached[1], cfg))
                self._status[name] = (d, cached[1], bands)
            w = window if window is not None else self.book.get(cached[1].key)
            if w is not None and bands[1] is not None and not w.errors and w.within(bands[1]):
                self._stale.add(name)  # the common case: what _same_class would say, from a few comparisons
                return
            if self._same_class(d, cached[1], w, cfg):
                self._stale.add(name)
                return
        self.refresh(d)

    def _same_class(
        self, d: ToolDefinition, old: ToolStatus, window: LatencyWindow | None = None, cfg: BudgetConfig | None = None
    ) -> bool:
        """Whether ``classify`` would give ``old``'s signature, for a status that was and stays healthy."""
        if old.health != HEALTHY:
            return False  # the full path also schedules the health horizon's expiry
        w = window if window is not None else self.book.get(old.key)
        if w is None:
            return False
        if cfg is None:
            cfg = self._config()
        lat = d.latency
        min_samples = cfg.min_samples
        if not w.errors and lat.max_duration_ms is None:
            # The horizon can only make the tool unhealthy through failures or a p99 over its declared max: with no
            # failure in the whole window and no max declared, health needs no look, and the class only the
            # window's two percentiles (taken here without building its stats: this runs after every call).
            p50, p99 = w.measured_p50_p99(min_samples)
            measured = p99 is not None
        else:
            stats = w.stats()
            recent = w.recent(self.clock() - cfg.health_horizon_s)
            if recent.count >= min_samples:
                if recent.errors:
                    rate = recent.error_rate
                    if rate >= cfg.unhealthy_error_rate or rate > cfg.degraded_error_rate:
                        return False
                if (
                    lat.max_duration_ms is not None
                    and recent.p99_ms is not None
                    and recent.p99_ms > lat.max_duration_ms
                ):
                    return False
            measured = stats.count >= min_samples
            p50, p99 = stats.p50_ms, stats.p99_ms
        effective: float | None
        if measured and p99 is not None:
            effective = p99
        elif lat.max_duration_ms is not None:
            effective = float(lat.max_duration_ms)
        elif lat.estimated_duration_ms is not None:
            effective = lat.estimated_duration_ms * cfg.estimate_multiplier
        else:
            effective = None
        if effective is None:
            base: str | None = "standard"
        else:
            t = cfg.tiers
            base = (
                "fast"
                if effective <= t.fast
                else "standard"
                if effective <= t.standard
                else "deep"
                if effective <= t.deep
                else None
            )
        return base == old.tier and badge_for(p50 if measured else None) == old.badge

    def refresh_all(self) -> None:
        """Recompute everything (config reload, horizon expiry)."""
        self._next_expiry = float("inf")
        for d, *_ in list(self._status.values()):
            self.refresh(d)

    def forget(self, name: str) -> None:
        self._stale.discard(name)
        if self._status.pop(name, None) is not None:
            self._revision += 1

    def known(self) -> list[ToolStatus]:
        return [self.status(d) for d, *_ in list(self._status.values())]

    def invalidate(self) -> None:
        self._revision += 1

    def clear(self) -> None:
        """Forget every computed status (config or environment changed); views recompute."""
        self._status.clear()
        self._stale.clear()
        self._next_expiry = float("inf")
        self._revision += 1

    # ---------------------------------------------------------------------------------------- tier filter

    @property
    def revision(self) -> int:
        if self._next_expiry <= self.clock():
            self.refresh_all()
        return self._revision

    def __call__(
        self, tools: Sequence[RegisteredTool], tier: str
    ) -> tuple[list[RegisteredTool], list[tuple[str, str]]]:
        tier_index(tier)
        shown: list[tuple[tuple[float, str], RegisteredTool]] = []
        hidden: list[tuple[str, str]] = []
        for entry in tools:
            s = self.status(entry.tool.definition)
            if s.visible_in(tier):
                shown.append((s.sort_key, entry))
            else:
                hidden.append((entry.name, s.reason_hidden(tier)))
        shown.sort(key=lambda p: p[0])
        return [e for _, e in shown], hidden
