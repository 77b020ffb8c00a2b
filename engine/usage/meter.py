"""One call's usage, summed as its provider reports it, priced, published and held to the context's budget.

Why one meter per call for every provider: text turns, realtime responses and the offline pipeline all end in
the same ``usage.updated`` event, the same Prometheus series and the same budget guard; the drivers only hand
each report to ``add``. Per-minute prices accrue with the session's open time (``clock``), so a turn's cost is
the growth of the call's cost since the last report.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from engine.config.models import ContextConfig, Settings
from engine.config.models.prices import Prices
from engine.core.metrics import Metrics
from engine.events import EventBus
from engine.events.usage import BudgetAlert, CallUsage, UsageUpdated
from engine.usage.prices import cost_of, prices_for
from engine.usage.report import UsageReport

WARN_AT = 0.8
#: The parts of a report counted in ``ai_agent_provider_tokens`` (its ``kind`` label).
TOKEN_KINDS = ("input", "output", "cached_input", "cache_write", "cache_write_1h", "input_audio", "output_audio")


@dataclass(frozen=True, slots=True)
class Budget:
    """A context's per-call limits (either may be None) and what happens at 100 %."""

    max_cost: float | None = None
    max_tokens: int | None = None
    on_budget: str = "wrap_up"

    @classmethod
    def of(cls, ctx: ContextConfig | None) -> Budget | None:
        if ctx is None or (ctx.max_cost is None and ctx.max_tokens is None):
            return None
        return cls(ctx.max_cost, ctx.max_tokens, ctx.on_budget)


class UsageMeter:
    """Sums one call's reports; ``on_reached(action)`` is told once when the budget is used up."""

    def __init__(
        self,
        *,
        call_id: str,
        provider: str,
        model: str | None,
        prices: Prices | None,
        metrics: Metrics,
        bus: EventBus,
        context: str = "",
        budget: Budget | None = None,
        on_reached: Callable[[str], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.call_id, self.provider, self.model, self.context = call_id, provider, model, context
        self.prices = prices
        self.metrics, self.bus = metrics, bus
        self.budget = budget
        self.on_reached = on_reached
        self._clock = clock
        self._started = clock()
        self.total = UsageReport()
        self.cost = 0.0
        #: Since the last switch of provider: its reports and when it began; what the call cost before it.
        self._segment = UsageReport()
        self._segment_started = self._started
        self._cost_before = 0.0
        self._priced_ever = prices is not None
        self.reports = 0
        self.warned = self.reached = False

    @property
    def priced_by_time(self) -> bool:
        """Whether the call costs by the minute (so it has a cost even without a report)."""
        return self.prices is not None and self.prices.per_minute > 0

    @property
    def session_s(self) -> float:
        return max(0.0, self._clock() - self._started)

    def _cost_now(self) -> float:
        if self.prices is None:
            return self._cost_before
        segment_s = max(0.0, self._clock() - self._segment_started)
        return self._cost_before + cost_of(self._segment, self.prices, segment_s)

    def switch(self, provider: str, model: str | None, prices: Prices | None) -> None:
        """The call goes on with another provider: what it used so far stays priced at the old prices (and in the
        old provider's cost counter), what comes next is priced at ``prices``."""
        before, self.cost = self.cost, self._cost_now()
        if self.cost > before:
            self.metrics.provider_cost.labels(self.provider, self.model or "").inc(self.cost - before)
        self._cost_before = self.cost
        self._segment, self._segment_started = UsageReport(), self._clock()
        self.provider, self.model, self.prices = provider, model, prices
        self._priced_ever = self._priced_ever or prices is not None

    def add(self, r: UsageReport | None, turn: int = 0) -> None:
        """Count one report (a turn's, or a realtime response's): totals, metrics, ``usage.updated``, the guard."""
        if r is None or r.empty:
            return
        self.reports += 1
        self.total = self.total + r
        self._segment = self._segment + r
        before, self.cost = self.cost, self._cost_now()
        self._count(r, self.cost - before)
        self.bus.publish(
            UsageUpdated(
                call_id=self.call_id,
                provider=self.provider,
                model=self.model,
                turn=turn,
                usage=r,
                total=self.total,
                cost=round(self.cost - before, 9),
                total_cost=round(self.cost, 9),
                session_s=round(self.session_s, 3),
                priced=self.prices is not None,
            )
        )
        self._guard()

    def _count(self, r: UsageReport, cost: float) -> None:
        model = self.model or ""
        tokens = self.metrics.provider_tokens
        parts = (
            r.input_tokens,
            r.output_tokens,
            r.cached_input_tokens,
            r.cache_write_tokens,
            r.cache_write_1h_tokens,
            r.input_audio_tokens,
            r.output_audio_tokens,
        )
        for kind, n in zip(TOKEN_KINDS, parts, strict=True):
            if n:
                tokens.labels(self.provider, model, kind).inc(n)
        if r.input_audio_s:
            self.metrics.provider_audio_seconds.labels(self.provider, "input").inc(r.input_audio_s)
        if r.output_audio_s:
            self.metrics.provider_audio_seconds.labels(self.provider, "output").inc(r.output_audio_s)
        if r.cpu_s:
            self.metrics.provider_cpu_seconds.labels(self.provider).inc(r.cpu_s)
        if cost > 0:
            self.metrics.provider_cost.labels(self.provider, model).inc(cost)

    def fraction(self) -> float:
        """How much of the budget is used: the nearer of the cost and token limits (0 without a budget)."""
        b = self.budget
        if b is None:
            return 0.0
        parts = [
            self.cost / b.max_cost if b.max_cost else 0.0,
            self.total.tokens / b.max_tokens if b.max_tokens else 0.0,
        ]
        return max(parts)

    def _guard(self) -> None:
        b = self.budget
        if b is None or self.reached:
            return
        used = self.fraction()
        if used >= 1.0:
            self.warned = self.reached = True
            self._alert("reached", used, b.on_budget)
            if self.on_reached is not None:
                self.on_reached(b.on_budget)
        elif used >= WARN_AT and not self.warned:
            self.warned = True
            self._alert("warning", used, None)

    def _alert(self, level: str, used: float, action: str | None) -> None:
        b = self.budget
        assert b is not None
        self.metrics.budget_alerts.labels(self.context, level).inc()
        self.bus.publish(
            BudgetAlert(
                call_id=self.call_id,
                level=level,
                fraction=round(used, 4),
                cost=round(self.cost, 9),
                tokens=self.total.tokens,
                max_cost=b.max_cost,
                max_tokens=b.max_tokens,
                action=action,
            )
        )

    def final(self) -> CallUsage:
        """The ``call.usage`` event of the call as it stands (per-minute prices counted up to now)."""
        before, self.cost = self.cost, self._cost_now()
        if self.cost > before:
            self.metrics.provider_cost.labels(self.provider, self.model or "").inc(self.cost - before)
        t = self.total
        return CallUsage(
            call_id=self.call_id,
            provider=self.provider,
            model=self.model,
            input_tokens=t.input_tokens,
            output_tokens=t.output_tokens,
            input_audio_s=round(t.input_audio_s, 3),
            output_audio_s=round(t.output_audio_s, 3),
            usage=t,
            cost=round(self.cost, 9),
            session_s=round(self.session_s, 3),
            priced=self._priced_ever,
        )


def meter_for(
    settings: Settings,
    *,
    call_id: str,
    context: str,
    provider: str,
    metrics: Metrics,
    bus: EventBus,
    on_reached: Callable[[str], None] | None = None,
) -> UsageMeter:
    """The meter of a new call on ``provider``."""
    model, prices = priced_as(settings, provider)
    return UsageMeter(
        call_id=call_id,
        provider=provider,
        model=model,
        prices=prices,
        metrics=metrics,
        bus=bus,
        context=context,
        budget=Budget.of(settings.contexts.get(context)),
        on_reached=on_reached,
    )


def priced_as(settings: Settings, provider: str) -> tuple[str | None, Prices | None]:
    """The model and prices a call on ``provider`` is costed at (a pipeline without prices of its own is priced as
    its brain)."""
    pc = settings.providers.get(provider)
    if pc is not None and pc.type == "pipeline" and pc.prices is None and pc.brain:
        pc = settings.providers.get(pc.brain, pc)
    return (pc.model, prices_for(pc)) if pc is not None else (None, None)
