"""Events to spans: the call, its turns, each turn's stages and tool calls, MCP requests and transfers.

Why a builder that only reads events: every span is made after the fact with the start and end times the events
carry (``start_span(start_time=…)``, ``end(end_time=…)``, nanoseconds since the epoch), so nothing on the call path
waits for tracing. The attributes are counts, names, classes and timings; the caller's name, number and words, a
tool's arguments and results, and a transfer's destination number are never read from the events.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import SpanKind, Status, StatusCode

from engine.events import (
    CallEnded,
    CallStarted,
    CallTransferAnswered,
    CallTransferCancelled,
    CallTransferFailed,
    CallTransferStarted,
    Event,
    ToolCompleted,
    TurnStage,
    TurnTimings,
)
from engine.usage.events import CallUsage, UsageUpdated

if TYPE_CHECKING:
    from opentelemetry.trace import Span, Tracer

#: What the component subscribes to (nothing else reaches it).
EVENT_TYPES = frozenset(
    c.type
    for c in (
        CallStarted,
        CallEnded,
        TurnTimings,
        ToolCompleted,
        UsageUpdated,
        CallUsage,
        CallTransferStarted,
        CallTransferAnswered,
        CallTransferFailed,
        CallTransferCancelled,
    )
)
#: Stage names of ``turn.timings`` and the span each becomes (tools are made from ``tool.completed``).
STAGE_SPANS = {"endpointing": "endpointing", "stt": "stt", "model": "model", "tts": "tts", "playout": "playout"}
_TOOL_FAILED = frozenset({"error", "timeout", "rejected", "cancelled"})


def ns(seconds: float) -> int:
    return int(seconds * 1e9)


def usage_attributes(usage: Any) -> dict[str, int | float]:
    """A ``UsageReport`` (or its dict, from a replay) as gen_ai usage attributes; zeros left out."""
    d = usage.to_dict() if hasattr(usage, "to_dict") else dict(usage or {})
    names = {
        "input_tokens": "gen_ai.usage.input_tokens",
        "output_tokens": "gen_ai.usage.output_tokens",
        "cached_input_tokens": "gen_ai.usage.cached_input_tokens",
        "input_audio_tokens": "ava.usage.input_audio_tokens",
        "output_audio_tokens": "ava.usage.output_audio_tokens",
        "cpu_s": "ava.usage.cpu_s",
    }
    return {attr: v for key, attr in names.items() if isinstance(v := d.get(key), int | float) and v}


@dataclass
class _Usage:
    provider: str
    model: str | None
    report: Any  # UsageReport, summed over the turn's reports (a realtime turn may have several responses)


@dataclass
class _Call:
    span: Span
    provider: str
    tools: list[ToolCompleted] = field(default_factory=list)  # this turn's, until its turn.timings
    usage: dict[int, _Usage] = field(default_factory=dict)  # by turn
    #: A turn whose timings came before its usage (a text call counts usage after the turn): made when it comes.
    pending: tuple[TurnTimings, list[ToolCompleted]] | None = None
    transfer: Span | None = None


class SpanBuilder:
    """Feed it the bus's events in order (``handle``); ``end_all`` at stop ends what is still open."""

    def __init__(
        self,
        tracer: Tracer,
        trace_id: Callable[[str], int],
        next_trace_id: list[int],
        tool_class: Callable[[str], str | None] = lambda name: None,
    ) -> None:
        self.tracer = tracer
        self.trace_id = trace_id
        self._next_trace_id = next_trace_id
        self.tool_class = tool_class
        self.calls: dict[str, _Call] = {}

    def handle(self, ev: Event) -> None:
        if isinstance(ev, ToolCompleted):
            self._tool(ev)
        elif isinstance(ev, TurnTimings):
            self._turn(ev)
        elif isinstance(ev, UsageUpdated):
            self._usage(ev)
        elif isinstance(ev, CallStarted):
            self._call_started(ev)
        elif isinstance(ev, CallUsage):
            if (c := self.calls.get(ev.call_id)) is not None:
                c.span.set_attributes({**usage_attributes(ev.usage), "ava.cost_usd": ev.cost})
                if ev.model:
                    c.span.set_attribute("gen_ai.request.model", ev.model)
        elif isinstance(ev, CallEnded):
            self._call_ended(ev.call_id, ev.ts, ev.reason)
        elif isinstance(ev, CallTransferStarted | CallTransferAnswered | CallTransferFailed | CallTransferCancelled):
            self._transfer(ev)

    # -------------------------------------------------------------------------------------------- calls

    def _call_started(self, ev: CallStarted) -> None:
        if ev.call_id in self.calls:  # the same id again (a hand-back continues a call): one span per call id
            return
        self._next_trace_id[0] = self.trace_id(ev.call_id)
        span = self.tracer.start_span(
            "call",
            kind=SpanKind.SERVER,
            start_time=ns(ev.ts),
            context=Context(),
            attributes={
                "ava.call.id": ev.call_id,
                "ava.context": ev.context,
                "ava.provider": ev.provider,
                "ava.call.direction": ev.direction,
                "ava.tier": ev.tier,
            },
        )
        self._next_trace_id[0] = 0
        self.calls[ev.call_id] = _Call(span, ev.provider)

    def _call_ended(self, call_id: str, at: float, reason: str) -> None:
        c = self.calls.pop(call_id, None)
        if c is None:
            return
        self._flush_turn(c)
        for t in c.tools:  # tool calls of a turn that never completed
            self._tool_span(t, c.span)
        if c.transfer is not None:
            c.transfer.end(end_time=ns(at))
        c.span.set_attribute("ava.call.end_reason", reason)
        c.span.end(end_time=ns(at))

    def end_all(self, at: float, reason: str = "engine stopping") -> None:
        for call_id in list(self.calls):
            self._call_ended(call_id, at, reason)

    # -------------------------------------------------------------------------------------------- turns

    def _usage(self, ev: UsageUpdated) -> None:
        c = self.calls.get(ev.call_id)
        if c is None:
            return
        had = c.usage.get(ev.turn)
        c.usage[ev.turn] = _Usage(ev.provider, ev.model, ev.usage if had is None else had.report + ev.usage)
        if c.pending is not None and c.pending[0].turn == ev.turn:
            self._flush_turn(c)

    def _turn(self, ev: TurnTimings) -> None:
        c = self.calls.get(ev.call_id)
        if c is None:
            return
        self._flush_turn(c)
        tools, c.tools = c.tools, []
        c.pending = (ev, tools)
        if ev.turn in c.usage:
            self._flush_turn(c)

    def _flush_turn(self, c: _Call) -> None:
        if c.pending is None:
            return
        (ev, tools), c.pending = c.pending, None
        start = ev.started_at or ev.ts - max((s.start_ms + s.duration_ms for s in ev.stages), default=0.0) / 1000
        end = max([start + ev.latency_ms / 1000, *(start + (s.start_ms + s.duration_ms) / 1000 for s in ev.stages)])
        attrs: dict[str, Any] = {
            "ava.turn": ev.turn,
            "ava.tier": ev.tier,
            "ava.budget_ms": ev.budget_ms,
            "ava.latency_ms": ev.latency_ms,
            "ava.over_budget": ev.latency_ms > ev.budget_ms,
        }
        turn = self.tracer.start_span(
            "turn", context=trace.set_span_in_context(c.span), start_time=ns(start), attributes=attrs
        )
        parent = trace.set_span_in_context(turn)
        usage = c.usage.pop(ev.turn, None)
        for s in ev.stages:
            stage = s if isinstance(s, TurnStage) else TurnStage(**s)  # a replay rebuilds them as dicts
            name = STAGE_SPANS.get(stage.name)
            if name is None:
                continue
            a = start + stage.start_ms / 1000
            extra: dict[str, Any] = {}
            if name == "model":
                extra = {"gen_ai.operation.name": "chat", "ava.provider": c.provider}
                if usage is not None:
                    extra.update(usage_attributes(usage.report))
                    extra["gen_ai.provider.name"] = usage.provider
                    if usage.model:
                        extra["gen_ai.request.model"] = usage.model
            elif stage.status:
                extra["ava.status"] = stage.status
            span = self.tracer.start_span(
                name,
                context=parent,
                start_time=ns(a),
                attributes=extra,
                kind=SpanKind.CLIENT if name == "model" else SpanKind.INTERNAL,
            )
            span.end(end_time=ns(a + stage.duration_ms / 1000))
        for t in tools:
            self._tool_span(t, turn)
        turn.end(end_time=ns(end))

    # -------------------------------------------------------------------------------------------- tools

    def _tool(self, ev: ToolCompleted) -> None:
        if ev.is_probe:
            return
        c = self.calls.get(ev.call_id)
        if c is not None:
            c.tools.append(ev)  # parented by its turn, made when the turn's timings come
        elif not ev.call_id:  # outside any call (the engine's MCP endpoint, ``mcp call``): a trace of its own
            self._tool_span(ev, None)

    def _tool_span(self, ev: ToolCompleted, parent: Span | None) -> None:
        end = ns(ev.ts)
        start = end - ns(ev.latency_ms / 1000)
        attrs: dict[str, Any] = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": ev.exposed_name,
            "gen_ai.tool.call.id": ev.tool_call_id,
            "ava.tool.server": ev.server,
            "ava.tool.status": ev.status,
            "ava.tool.cache_hit": ev.cache_hit,
        }
        if (cls := self.tool_class(ev.exposed_name)) is not None:
            attrs["ava.tool.latency_class"] = cls
        ctx = trace.set_span_in_context(parent) if parent is not None else Context()
        span = self.tracer.start_span(
            f"execute_tool {ev.exposed_name}", context=ctx, start_time=start, attributes=attrs
        )
        if ev.status in _TOOL_FAILED:
            span.set_status(Status(StatusCode.ERROR, ev.status))
        if ev.server != "builtin" and not ev.cache_hit and ev.status != "rejected":
            # the MCP request the tool call made: the executor's clock is the one around it (see the docs)
            mcp = self.tracer.start_span(
                f"tools/call {ev.tool}",
                context=trace.set_span_in_context(span),
                kind=SpanKind.CLIENT,
                start_time=start,
                attributes={"mcp.method.name": "tools/call", "gen_ai.tool.name": ev.tool, "ava.mcp.server": ev.server},
            )
            if ev.status in _TOOL_FAILED:
                mcp.set_status(Status(StatusCode.ERROR, ev.status))
            mcp.end(end_time=end)
        span.end(end_time=end)

    # -------------------------------------------------------------------------------------------- transfers

    def _transfer(self, ev: Event) -> None:
        c = self.calls.get(str(getattr(ev, "call_id", "")))
        if c is None:
            return
        at = ns(ev.ts)
        if isinstance(ev, CallTransferStarted):
            if c.transfer is not None:
                c.transfer.end(end_time=at)
            c.transfer = self.tracer.start_span(
                "transfer",
                context=trace.set_span_in_context(c.span),
                start_time=at,
                attributes={"ava.transfer.target": ev.target, "ava.transfer.mode": ev.mode},
            )
            return
        span, c.transfer = c.transfer, None
        if span is None:
            return
        outcome: Mapping[type, str] = {
            CallTransferAnswered: "answered",
            CallTransferFailed: "failed",
            CallTransferCancelled: "cancelled",
        }
        span.set_attribute("ava.transfer.outcome", outcome[type(ev)])
        if isinstance(ev, CallTransferAnswered):
            span.set_attribute("ava.transfer.handoff_ms", ev.handoff_ms)
        elif isinstance(ev, CallTransferFailed):
            span.set_status(Status(StatusCode.ERROR, "transfer failed"))
        span.end(end_time=at)
