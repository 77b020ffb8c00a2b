"""Prometheus collectors, one registry per Engine (no globals, so tests and several engines never collide).

The per-call tool metrics (a call counter and a latency histogram) are the one thing on the tool path, so they are
tallied in plain Python — a count per series and a bucket found by one C ``bisect`` — and handed to the Prometheus
children when the registry is collected (``render``, or anyone calling ``collect`` on it). A ``Counter.inc`` and
``Histogram.observe`` per call cost a Python loop over the buckets and four locked value updates; a scrape every
few seconds pays for a whole interval's calls in one go, and the exposition is exactly what per-call updates
give.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterator
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.metrics_core import Metric

from engine._compat.prometheus import add_to_histogram

LATENCY_BUCKETS = (
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    1.5,
    2.5,
    4.0,
    8.0,
    15.0,
    30.0,
)


#: The ``tool`` label of a rejection whose name is not a registered tool: one series however many bad names arrive.
UNKNOWN_TOOL = "(unknown)"
#: Event types a provider's ``ai_agent_provider_events_ignored`` keeps apart; later ones share ``OTHER_TYPE``.
IGNORED_TYPES_KEPT = 64
OTHER_TYPE = "(other)"


class _Tally:
    """What one (server, tool) has done since the last collection: calls per status, and latency buckets."""

    __slots__ = ("buckets", "calls", "count", "sum")

    def __init__(self, size: int) -> None:
        self.calls: dict[str, int] = {}
        self.buckets = [0] * size
        self.count = 0
        self.sum = 0.0


class _Flush:
    """Registered first, so collecting the registry moves the tallies into the Prometheus children before they
    are read; it reports no metric of its own."""

    def __init__(self, metrics: Metrics) -> None:
        self._metrics = metrics

    def collect(self) -> Iterator[Metric]:
        self._metrics.flush()
        return iter(())

    def describe(self) -> list[Metric]:
        return []


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        r.register(_Flush(self))  # a collector needs only collect (and describe)
        self.tool_calls = Counter(
            "ai_agent_mcp_tool_calls",
            "Tool calls by server, tool and status.",
            ["server", "tool", "status"],
            registry=r,
        )
        self.tool_latency = Histogram(
            "ai_agent_mcp_tool_latency_seconds",
            "Tool call latency.",
            ["server", "tool"],
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.server_restarts = Counter("ai_agent_mcp_server_restarts", "MCP server restarts.", ["server"], registry=r)
        self.server_up = Gauge("ai_agent_mcp_server_up", "1 when the MCP server is up.", ["server"], registry=r)
        self.tool_rejections = Counter(
            "ai_agent_mcp_tool_rejections",
            "Tool calls rejected before running.",
            ["tool", "reason"],
            registry=r,
        )
        self.calls_active = Gauge("ai_agent_calls_active", "Live calls.", registry=r)
        self.calls_total = Counter("ai_agent_calls", "Calls started.", ["context"], registry=r)
        self.events_dropped = Gauge(
            "ai_agent_events_dropped", "Events dropped by slow subscribers (oldest first).", registry=r
        )
        self.events_skipped = Counter(
            "ai_agent_events_skipped",
            "Events a consumer skipped because it could not write them (consumer: store, event stream, recorder, "
            "cli; reason: invalid_text, not_serialisable); the consumer went on with the next.",
            ["consumer", "reason"],
            registry=r,
        )
        self.store_events_dropped = Counter(
            "ai_agent_store_events_dropped",
            "Events the store never got: its buffer (engine.store_buffer) overflowed while it was away.",
            registry=r,
        )
        self.store_connected = Gauge("ai_agent_store_connected", "1 while the engine.store is reachable.", registry=r)
        self.store_events_buffered = Gauge(
            "ai_agent_store_events_buffered", "Events waiting to be written to the store.", registry=r
        )
        self.turns_over_budget = Counter(
            "ai_agent_turns_over_budget",
            "Turns whose tool time exceeded the tier budget.",
            ["tier"],
            registry=r,
        )
        self.tier_changes = Counter("ai_agent_tier_changes", "Tier changes by reason.", ["reason"], registry=r)
        self.cache_hits = Counter(
            "ai_agent_mcp_tool_cache_hits", "Tool results served from cache.", ["tool"], registry=r
        )
        self.provider_tokens = Counter(
            "ai_agent_provider_tokens",
            "Tokens providers reported using, by provider, model and kind (input, output; cached_input, "
            "cache_write and input_audio are parts of input, cache_write_1h of cache_write, output_audio of output).",
            ["provider", "model", "kind"],
            registry=r,
        )
        self.provider_audio_seconds = Counter(
            "ai_agent_provider_audio_seconds",
            "Audio seconds sent to and received from providers, by provider and direction (input, output).",
            ["provider", "direction"],
            registry=r,
        )
        self.provider_cpu_seconds = Counter(
            "ai_agent_provider_cpu_seconds",
            "CPU seconds the offline pipeline spent, by provider.",
            ["provider"],
            registry=r,
        )
        self.provider_cost = Counter(
            "ai_agent_provider_cost_usd",
            "US dollars calls cost at the configured (or shipped) prices, by provider and model.",
            ["provider", "model"],
            registry=r,
        )
        self.budget_alerts = Counter(
            "ai_agent_call_budget_alerts",
            "Calls that reached 80 % (warning) or 100 % (reached) of their budget.",
            ["context", "level"],
            registry=r,
        )
        self.email_total = Counter(
            "ai_agent_email",
            "E-mails by kind (summary, transcript, test) and status (queued, sent, retry, failed).",
            ["kind", "status"],
            registry=r,
        )
        self.steering_total = Counter(
            "ai_agent_steering", "Operator steering on live calls, by kind (say, whisper).", ["kind"], registry=r
        )
        self.provider_events_ignored = Counter(
            "ai_agent_provider_events_ignored",
            "Server events a realtime provider sent that its adapter did not handle, by provider and event type "
            f"(past {IGNORED_TYPES_KEPT} types per provider the rest count as {OTHER_TYPE}).",
            ["provider", "type"],
            registry=r,
        )
        self.provider_rate_limit_remaining = Gauge(
            "ai_agent_provider_rate_limit_remaining",
            "What is left of a provider's rate limit (name: requests, tokens), as the provider last said.",
            ["provider", "name"],
            registry=r,
        )
        self.rtp_foreign_packets = Counter(
            "ai_agent_rtp_foreign_packets",
            "RTP packets dropped because they came from another source than the call's Asterisk.",
            registry=r,
        )
        self._ignored_types: dict[str, set[str]] = {}
        self._tallies: dict[tuple[str, str], _Tally] = {}
        self._bounds: tuple[float, ...] = (*LATENCY_BUCKETS, float("inf"))
        self._rejections: dict[tuple[str, str], object] = {}

    def tool_done(self, server: str, tool: str, status: str, seconds: float) -> None:
        """Count one finished call and its latency (see the module docstring for when Prometheus sees it)."""
        tally = self._tallies.get((server, tool))
        if tally is None:
            # The series exist from the first call on, as with per-call updates (a scrape shows them at 0 at worst).
            self.tool_latency.labels(server, tool)
            tally = self._tallies[(server, tool)] = _Tally(len(self._bounds))
        calls = tally.calls
        if status in calls:
            calls[status] += 1
        else:
            self.tool_calls.labels(server, tool, status)
            calls[status] = 1
        # Prometheus puts a value in the first bucket whose upper bound is >= it: bisect_left on the bounds.
        tally.buckets[bisect_left(self._bounds, seconds)] += 1
        tally.count += 1
        tally.sum += seconds

    def flush(self) -> None:
        """Move the tallies into the Prometheus counters and histograms (the registry's collection does this)."""
        for (server, tool), tally in self._tallies.items():
            if not tally.count:
                continue
            for status, n in tally.calls.items():
                if n:
                    self.tool_calls.labels(server, tool, status).inc(n)
                    tally.calls[status] = 0
            child: Any = self.tool_latency.labels(server, tool)
            # tests/engine/core/test_metrics_tally.py holds this to what observe() gives, value by value.
            add_to_histogram(child, tally.sum, tally.buckets)
            tally.buckets = [0] * len(tally.buckets)
            tally.count = 0
            tally.sum = 0.0

    def tool_rejected(self, tool: str, reason: str) -> None:
        """Count a rejection. Label values must come from a bounded set: a registered tool's name or
        ``UNKNOWN_TOOL``, and a fixed reason word (callers guarantee it; see ToolExecutor._reject)."""
        key = (tool, reason)
        child = self._rejections.get(key)
        if child is None:
            child = self._rejections[key] = self.tool_rejections.labels(tool, reason)
        child.inc()  # type: ignore[attr-defined]

    def count_skipped(self, consumer: str, reason: str) -> None:
        """One event ``consumer`` could not write and skipped (``engine.events.bus.SkippedEvents``)."""
        self.events_skipped.labels(consumer, reason).inc()

    def count_ignored(self, provider: str, kind: str) -> None:
        """One server event ``provider``'s adapter did not handle; the ``type`` label comes from the wire, so it is
        cut to 64 characters and at most ``IGNORED_TYPES_KEPT`` values per provider get their own series."""
        kind = kind[:64]
        seen = self._ignored_types.setdefault(provider, set())
        if kind not in seen:
            if len(seen) >= IGNORED_TYPES_KEPT:
                kind = OTHER_TYPE
            else:
                seen.add(kind)
        self.provider_events_ignored.labels(provider, kind).inc()

    def render(self) -> bytes:
        return generate_latest(self.registry)
