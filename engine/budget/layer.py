"""The budget layer as an engine component: the latency book, tiers, cache, selector and turn accounting.

It plugs into the engine through three DECLARED seams that the engine's wiring (``engine/components.py``) hands
it to: the executor's ``ExecutionHooks`` (timeouts, cache, latency recording), the view builder's tier filter
(``self.board``) and a ``TurnHooks`` entry (tier selection and turn accounting). It never rewires other objects:
it gets its ``Services`` (a settings getter, the bus, metrics, the engine's ``Spawn`` for background calibrations),
the registry, the narrow ``CallTiers`` protocol to set a call's tier and a ``ProbeRunner`` for calibration.

Timeout rule: a tool's own hard timeout (``timeout_ms``, else ``max_duration_ms``, else the engine's global
``tool_timeout_ms``), clamped to the call's tier budget when the tool runs inside a call. A FAST call therefore
never waits more than the FAST budget for any tool; a built-in tool that takes a millisecond is unaffected.
Exempt call-control tools and calls outside a session (probes, ``mcp call``) keep their own timeout.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

from prometheus_client import Counter, Gauge

from engine.budget.cache import ResultCache
from engine.budget.calibration import PROBE_MODE, ProbeRunner, calibrate_server
from engine.budget.plans import CallPlan, call_plan, limit_named
from engine.budget.selector import Decision, TurnFacts, decide, default_decision
from engine.budget.stats import BookKey, LatencyBook, Sample
from engine.budget.tier_control import CallTiers
from engine.budget.tiers import HEALTHY, TIER_ORDER, UNHEALTHY, TierBoard, ToolStatus
from engine.budget.turns import TurnTracker
from engine.config.models import BudgetConfig, ContextTierConfig, Settings
from engine.services import Component, Services
from engine.sessions.session import CallSession
from engine.tools.base import ToolDefinition, ToolResult
from engine.tools.registry import RegisteredTool, ToolRegistry

log = logging.getLogger(__name__)

EnvironmentFn = Callable[[str], str]


class BudgetLayer(Component):
    """ExecutionHooks + TurnHooks + EngineComponent for the latency budget."""

    name = "budget"

    def __init__(
        self,
        services: Services,
        *,
        registry: ToolRegistry,
        tiers: CallTiers,
        probe: ProbeRunner,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__(services)
        self.registry = registry
        self.tiers = tiers
        self.probe = probe
        self._clock = clock
        self._env_fn: EnvironmentFn | None = None
        self._env_cache: dict[str, str] = {}
        self._plans: dict[str, CallPlan] = {}
        self._limit_texts: dict[tuple[str, int], tuple[float, str]] = {}
        cfg = self.config
        # The parts get the clock itself (one call on every tool call, not two); ``set_clock`` hands on a new one.
        self.book = LatencyBook(cfg.window, clock)
        self.board = TierBoard(self.book, lambda: self._settings().budget, self.environment, clock)
        self.board.on_change = self._status_changed
        self.cache = ResultCache(cfg.cache_size, clock)
        self.turns = TurnTracker(
            self.bus,
            self.tier_budget_ms,
            lambda tier: self.metrics.turns_over_budget.labels(tier).inc(),
            lambda: self._announcements.inc(),
        )
        self._tasks: set[asyncio.Task[Any]] = set()
        self.last_calibration: dict[str, dict[str, Any]] = {}
        #: Told of every calibration report while the latency book is shared (``share``).
        self._on_calibrated: Callable[[str, dict[str, Any]], None] | None = None
        reg = self.metrics.registry
        self._probes = Counter(
            "ai_agent_budget_probes", "Calibration probes.", ["server", "tool", "status"], registry=reg
        )
        self._announcements = Counter(
            "ai_agent_announcements_requested", "Slow-tool announcements requested.", registry=reg
        )
        self._health = Gauge(
            "ai_agent_tool_health", "0 healthy, 1 degraded, 2 unhealthy.", ["server", "tool"], registry=reg
        )
        self._tier = Gauge(
            "ai_agent_tool_tier",
            "0 fast, 1 standard, 2 deep, -1 hidden on every tier.",
            ["server", "tool"],
            registry=reg,
        )

    @property
    def settings(self) -> Settings:
        return self._settings()

    # ------------------------------------------------------------------------------------------ plumbing

    @property
    def config(self) -> BudgetConfig:
        return self._settings().budget

    def clock(self) -> float:
        return self._clock()

    def set_clock(self, clock: Callable[[], float]) -> None:
        """Tests inject a fake clock (cooldown, cache TTL, health horizon)."""
        self._clock = clock
        self.book.clock = self.board.clock = self.cache.clock = clock

    def tier_budget_ms(self, tier: str) -> int:
        return int(getattr(self.config.tiers, tier))

    def set_environment_resolver(self, fn: EnvironmentFn | None) -> None:
        """The MCP host may supply server id -> environment (e.g. "http://host:port"); default from config."""
        self._env_fn = fn
        self._env_cache.clear()
        self._plans.clear()
        self.board.clear()

    def environment(self, server: str) -> str:
        env = self._env_cache.get(server)
        if env is None:
            env = self._env_fn(server) if self._env_fn is not None else self._default_environment(server)
            self._env_cache[server] = env
        return env

    def _default_environment(self, server: str) -> str:
        cfg = self._settings().mcp.servers.get(server)
        if cfg is None or cfg.transport in ("stdio", "inprocess") or not cfg.url:
            return "local"
        parts = urlsplit(cfg.url)
        return f"{cfg.transport}://{parts.hostname or ''}{':' + str(parts.port) if parts.port else ''}"

    def metrics_probe(self, server: str, tool: str, status: str) -> None:
        self._probes.labels(server, tool, status).inc()

    def _status_changed(self, old: ToolStatus | None, new: ToolStatus) -> None:
        self._health.labels(new.server, new.key[2]).set(
            0 if new.health == HEALTHY else 2 if new.health == UNHEALTHY else 1
        )
        self._tier.labels(new.server, new.key[2]).set(TIER_ORDER.index(new.tier) if new.tier else -1)
        if old is not None:
            log.info(
                "tool %s: tier %s -> %s, health %s -> %s%s",
                new.name,
                old.tier,
                new.tier,
                old.health,
                new.health,
                f" ({new.health_reason})" if new.health_reason else "",
            )

    def status(self, name: str) -> ToolStatus | None:
        entry = self.registry.get(name)
        return self.board.status(entry.tool.definition) if entry is not None else None

    # ------------------------------------------------------------------------------------ execution hooks

    def _plan(self, d: ToolDefinition, settings: Settings | None = None) -> CallPlan:
        """What the hooks need about ``d`` on every call, worked out once per definition and settings."""
        if settings is None:
            settings = self._settings()
        plan = self._plans.get(d.name)
        if plan is None or plan.definition is not d or plan.settings is not settings:
            plan = self._plans[d.name] = call_plan(d, settings, self.board.key_for(d))
            # The board has the tool's status before its first call under this plan, so that call's ``recorded``
            # compares against it (and bumps the revision only if the call changed it), as a view built earlier
            # would. Whatever clears the board clears the plans too.
            self.board.seed(d)
        return plan

    def begin(
        self,
        entry: RegisteredTool,
        args: Mapping[str, Any],
        session: CallSession | None,
        task: asyncio.Task[Any] | None,
        settings: Settings,
    ) -> ToolResult | tuple[float, str]:
        """A cached result for an idempotent tool; else the call's time limit and where it comes from: the tool's own
        limit (else the engine's default), clamped to the call's tier budget inside a call, where it also starts the
        turn's accounting of the call run by ``task`` (None: the current task).

        The limit's wording is built once per value (``_limit_text``), not per call; the numbers themselves are
        read from the settings on every call, so a setting changed in place applies to the next call."""
        d = entry.tool.definition
        plan = self._plans.get(d.name)
        if plan is None or plan.definition is not d or plan.settings is not settings:
            plan = self._plan(d, settings)
        if plan.cacheable and PROBE_MODE.get() is None:
            hit = self.cache.get(d, args)
            if hit is not None:
                return hit
        own = plan.own
        if own[0] is None:
            ms = settings.engine.tool_timeout_ms
            own = self._limit_texts.get(("", ms)) or self._limit_text("", ms)
        if session is None:
            return own  # type: ignore[return-value]
        # The turn's accounting of this call, from the tool's measured p50 once the window holds min_samples
        # calls (what its status reports), else its declared one.
        w = self.book.get(plan.key)
        expected: float | None = d.latency.estimated_duration_ms
        if w is not None:
            min_samples = settings.budget.min_samples
            if w.settled_below(plan.threshold_ms, min_samples):
                expected = None  # measured, and no call was ever slow: the timer decides, as a low p50 would
            else:
                p50, _ = w.measured_p50_p99(min_samples)
                if p50 is not None:
                    expected = p50
        self.turns.started(session, d, expected, plan.threshold_ms, plan.message, task)
        tier = session.tier
        if plan.exempt or tier not in TIER_ORDER or not session.tier_budget:
            return own  # type: ignore[return-value]
        budget_ms = int(getattr(settings.budget.tiers, tier))
        if budget_ms / 1000 < own[0]:  # type: ignore[operator]
            return self._limit_texts.get((tier, budget_ms)) or self._limit_text(tier, budget_ms)
        return own  # type: ignore[return-value]

    def _limit_text(self, tier: str, ms: int) -> tuple[float, str]:
        """(seconds, source) of the engine's default limit (``tier`` "") or of a tier's budget, built once per value."""
        key = (tier, ms)
        out = self._limit_texts.get(key)
        if out is None:
            out = limit_named(tier, ms)
            if len(self._limit_texts) > 64:  # values only change by hand: a handful at most
                self._limit_texts.clear()
            self._limit_texts[key] = out
        return out

    def completed(
        self,
        entry: RegisteredTool,
        args: Mapping[str, Any],
        result: ToolResult,
        latency_ms: float,
        is_probe: bool,
        task: asyncio.Task[Any] | None,
        settings: Settings,
    ) -> None:
        self.turns.finished(task)
        if result.cache_hit or result.status in ("rejected", "cancelled"):  # a cancelled call says nothing of speed
            return
        d = entry.tool.definition
        status: str = result.status
        if is_probe and status == "error" and PROBE_MODE.get() == "generated":
            status = "probe_error"
        plan = self._plans.get(d.name)
        if plan is None or plan.definition is not d or plan.settings is not settings:
            plan = self._plan(d, settings)
        self.board.recorded(d, self.book.record(plan.key, latency_ms, status, is_probe=is_probe), settings.budget)
        if not is_probe and status == "success" and plan.cacheable:
            self.cache.put(d, args, result)

    # ----------------------------------------------------------------------------------------- turn hooks

    def decide(self, session: CallSession, text: str) -> Decision:
        ctx = self._settings().contexts.get(session.context)
        facts = TurnFacts(
            text=text,
            turn=session.turn,
            now=self.clock(),
            override=session.tier_override,
            context_tier=ctx.tier if ctx is not None else ContextTierConfig(),
            engine_default=self.tiers.default_tier,
            waiting_callers=self.tiers.waiting_callers,
            last_deep_turn_at=session.last_deep_turn_at,
        )
        return decide(facts, self.config.selector)

    def before_turn(self, session: CallSession, text: str) -> None:
        decision = self.decide(session, text)
        if decision.is_deep_turn:
            session.last_deep_turn_at = self.clock()
        self.apply(session, decision)
        self.turns.begin(session)

    def apply(self, session: CallSession, decision: Decision) -> None:
        """Set the call's tier; only a real change emits tier.changed (and re-renders the call's tool view)."""
        if decision.tier != session.tier:
            self.tiers.set_call_tier(session, decision.tier, decision.reason)
        else:
            session.tier_reason = decision.reason

    def after_turn(self, session: CallSession) -> None:
        self.turns.end(session)

    def call_ended(self, session: CallSession) -> None:
        """The call is over, maybe mid-turn (a hangup, a dropped line): its turn is dropped unreported."""
        self.turns.forget(session.call_id)

    def start_tier(self, session: CallSession) -> tuple[str, str]:
        """A new call's tier before its first turn: the operator's global default, else its context's."""
        d = self.default_for(session)
        return d.tier, d.reason

    def default_for(self, session: CallSession) -> Decision:
        ctx = self._settings().contexts.get(session.context)
        if ctx is None:
            return Decision("standard", "context gone: standard")
        return default_decision(ctx.tier, self.tiers.default_tier)

    # ------------------------------------------------------------------------------------- calibration

    async def calibrate(self, server_id: str, probes: int | None = None) -> dict[str, Any]:
        report = await calibrate_server(self, server_id, probes)
        self.last_calibration[server_id] = report
        if self._on_calibrated is not None:
            self._on_calibrated(server_id, report)
        return report

    def on_server_up(self, server_id: str) -> asyncio.Task[dict[str, Any]] | None:
        """The MCP host calls this after a server connected and its tools are registered.

        Starts calibration in the background when the server's config says ``calibrate: true``.
        """
        cfg = self._settings().mcp.servers.get(server_id)
        if cfg is None or not cfg.calibrate:
            return None
        task = self._spawn(self.calibrate(server_id), name=f"budget:calibrate:{server_id}")
        self._tasks.add(task)
        task.add_done_callback(self._calibration_done)
        return task

    def _calibration_done(self, task: asyncio.Task[dict[str, Any]]) -> None:
        self._tasks.discard(task)  # a failure is logged and published by the engine's task group

    # ------------------------------------------------------------------------------------- shared book

    def share(
        self,
        on_sample: Callable[[BookKey, Sample], None] | None,
        on_calibrated: Callable[[str, dict[str, Any]], None] | None,
    ) -> None:
        """Tell the shared latency book (``engine.store.shared_book``) of every sample and calibration report from
        now on (None, None: stop)."""
        self.book.on_record = on_sample
        self._on_calibrated = on_calibrated

    def load_shared(
        self, samples: Mapping[BookKey, Sequence[Sample]], calibrations: Mapping[str, dict[str, Any]]
    ) -> int:
        """Merge what other engines of the environment measured (before this engine's own calls, in time order) and
        their calibration reports (this engine's own win); tools are re-tiered from it. Returns the samples taken."""
        for key, rows in samples.items():
            self.book.load(key, rows)
        for server, report in calibrations.items():
            self.last_calibration.setdefault(server, dict(report))
        if samples:
            self.board.refresh_all()  # known tools re-tiered from the merged windows (views move on); others on use
        return sum(len(rows) for rows in samples.values())

    # ------------------------------------------------------------------------------------------ lifecycle

    async def start(self) -> None:
        return None

    async def stop(self) -> None:
        tasks = list(self._tasks)
        for t in tasks:
            t.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
        self.turns.cancel_all()

    async def reload(self, old: Settings, new: Settings) -> None:
        self._plans.clear()
        if old.mcp.servers != new.mcp.servers:
            self._env_cache.clear()
            self.board.clear()
        if old.budget != new.budget:
            self.book.set_window(new.budget.window)
            self.cache.resize(new.budget.cache_size)
            self.board.clear()
