"""Metrics.tool_done tallies calls in plain Python and hands them to Prometheus when the registry is collected:
the exposition must be exactly what a Counter.inc and Histogram.observe per call would give."""

from __future__ import annotations

import re

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest

from engine.core.metrics import LATENCY_BUCKETS, Metrics

# Every bucket edge, values just either side of one, zero, and beyond the last bucket (+Inf).
VALUES = [0.0, 0.0005, 0.001, 0.0010001, 0.0025, 0.003, 0.05, 0.7, 1.0, 14.9, 15.0, 30.0, 31.0, 1e6]


def _samples(text: str, name: str) -> list[str]:
    """The exposition lines of one family, ``_created`` timestamps left out (they differ between registries)."""
    return sorted(
        line
        for line in text.splitlines()
        if line.startswith(name) and not re.match(rf"{name}\w*_created", line) and "_created{" not in line
    )


def _reference(calls: list[tuple[str, str, str, float]]) -> str:
    r = CollectorRegistry()
    counter = Counter("ai_agent_mcp_tool_calls", "x", ["server", "tool", "status"], registry=r)
    hist = Histogram("ai_agent_mcp_tool_latency_seconds", "x", ["server", "tool"], buckets=LATENCY_BUCKETS, registry=r)
    for server, tool, status, seconds in calls:
        counter.labels(server, tool, status).inc()
        hist.labels(server, tool).observe(seconds)
    return generate_latest(r).decode()


def test_tallies_render_as_per_call_updates_would() -> None:
    calls = [("s1", "echo", "success", v) for v in VALUES]
    calls += [("s1", "echo", "error", 0.2), ("s2", "dice", "timeout", 8.0), ("s1", "echo", "success", 0.004)]
    m = Metrics()
    expected_calls = 0
    for i, call in enumerate(calls):
        m.tool_done(*call)
        if i in (3, 9):  # scrapes in between: later calls add to what was already handed over
            expected_calls = i + 1
            assert _samples(m.render().decode(), "ai_agent_mcp_tool_latency_seconds_count") == _samples(
                _reference(calls[: i + 1]), "ai_agent_mcp_tool_latency_seconds_count"
            )
    assert expected_calls == 10
    got, want = m.render().decode(), _reference(calls)
    for family in ("ai_agent_mcp_tool_calls_total", "ai_agent_mcp_tool_latency_seconds"):
        assert _samples(got, family) == _samples(want, family)
    assert _samples(m.render().decode(), "ai_agent_mcp_tool_latency_seconds") == _samples(
        want, "ai_agent_mcp_tool_latency_seconds"
    ), "a second scrape with no new calls changes nothing"


def test_collecting_the_registry_directly_sees_every_call() -> None:
    m = Metrics()
    m.tool_done("s", "t", "success", 0.01)
    m.tool_done("s", "t", "success", 0.02)
    values = {
        (s.name, s.labels.get("le")): s.value
        for family in m.registry.collect()
        for s in family.samples
        if s.name.startswith("ai_agent_mcp_tool")
    }
    assert values[("ai_agent_mcp_tool_calls_total", None)] == 2.0
    assert values[("ai_agent_mcp_tool_latency_seconds_count", None)] == 2.0
    assert values[("ai_agent_mcp_tool_latency_seconds_bucket", "0.01")] == 1.0
    assert abs(values[("ai_agent_mcp_tool_latency_seconds_sum", None)] - 0.03) < 1e-12
