"""The realtime adapters' reports to the engine: an ignored event type from the wire cannot grow the metrics
without bound, and only well-formed rate limits reach the event and the gauge."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from engine.core.metrics import IGNORED_TYPES_KEPT, OTHER_TYPE, Metrics
from engine.events import ProviderRateLimits, RateLimit
from engine.events.bus import EventBus
from engine.realtime.reporting import EngineReports


@dataclass
class _Executor:
    bus: EventBus = field(default_factory=lambda: EventBus(100))
    metrics: Metrics = field(default_factory=Metrics)


@dataclass
class _Gateway:
    executor: _Executor = field(default_factory=_Executor)


def test_ignored_types_are_bounded_per_provider() -> None:
    gateway = _Gateway()
    reports = EngineReports("rt", logging.getLogger("test"))
    reports.bind(gateway, "c1")
    for i in range(IGNORED_TYPES_KEPT + 6):
        reports.unhandled(f"type.{i}" + "x" * 100)
    reports.unhandled(None)
    scrape = gateway.executor.metrics.render().decode()
    series = [line for line in scrape.splitlines() if line.startswith("ai_agent_provider_events_ignored_total{")]
    assert len(series) == IGNORED_TYPES_KEPT + 1  # the first types, then (other)
    assert f'ai_agent_provider_events_ignored_total{{provider="rt",type="{OTHER_TYPE}"}} 7.0' in series
    assert all(len(line.split('type="')[1].split('"')[0]) <= 64 for line in series)


def test_rate_limits_skip_malformed_entries() -> None:
    gateway = _Gateway()
    sub = gateway.executor.bus.subscribe()
    reports = EngineReports("rt", logging.getLogger("test"))
    reports.bind(gateway, "c1")
    got = reports.rate_limits([{"name": "tokens", "remaining": 5, "limit": True}, {"remaining": 3}, "x", {"name": ""}])
    assert got == (RateLimit("tokens", None, 5, None),)
    events = sub.drain()
    assert len(events) == 1 and isinstance(events[0], ProviderRateLimits) and events[0].limits == got
    assert reports.rate_limits([{"name": 7}]) == () and sub.drain() == []  # nothing well-formed: no event
