"""Prometheus collectors, one registry per Engine (no globals, so tests and several engines never collide)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

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


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
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
        self.realtime_tokens = Counter(
            "ai_agent_realtime_tokens",
            "Tokens realtime providers reported using, by provider and direction (input, output).",
            ["provider", "direction"],
            registry=r,
        )
        self.realtime_audio_seconds = Counter(
            "ai_agent_realtime_audio_seconds",
            "Audio seconds realtime providers reported, by provider and direction (input, output).",
            ["provider", "direction"],
            registry=r,
        )
        self._children: dict[tuple[str, str, str], tuple[object, object]] = {}
        self._rejections: dict[tuple[str, str], object] = {}

    def tool_done(self, server: str, tool: str, status: str, seconds: float) -> None:
        key = (server, tool, status)
        pair = self._children.get(key)
        if pair is None:
            pair = (self.tool_calls.labels(server, tool, status), self.tool_latency.labels(server, tool))
            self._children[key] = pair
        pair[0].inc()  # type: ignore[attr-defined]
        pair[1].observe(seconds)  # type: ignore[attr-defined]

    def tool_rejected(self, tool: str, reason: str) -> None:
        """Count a rejection. Label values must come from a bounded set: a registered tool's name or
        ``UNKNOWN_TOOL``, and a fixed reason word (callers guarantee it; see ToolExecutor._reject)."""
        key = (tool, reason)
        child = self._rejections.get(key)
        if child is None:
            child = self._rejections[key] = self.tool_rejections.labels(tool, reason)
        child.inc()  # type: ignore[attr-defined]

    def render(self) -> bytes:
        return generate_latest(self.registry)
