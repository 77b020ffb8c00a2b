"""Events to spans: the call, its turns, each turn's stages and tool calls, MCP requests and transfers.

Why a builder that only reads events: every span is made after the fact with the start and end times the events
carry (nanoseconds since the epoch), so nothing on the call path waits for tracing. It makes plain ``SpanData``
records, not SDK spans: no context, sampler or processor per span (the call's sampling decision holds for its whole
trace), which is what keeps tracing within 5 % of the tool path (issue 36 item 5). The attributes are counts,
names, classes and timings; the caller's name, number and words, a tool's arguments and results, and a transfer's
destination number are never read from the events.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import partial
from random import getrandbits
from typing import Any

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
from engine.events.usage import CallUsage, UsageUpdated
from engine.telemetry.otlp import CLIENT, INTERNAL, SERVER, Shared, SpanData
from engine.telemetry.records import RECORDS, TOOL

log = logging.getLogger(__name__)

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
_SHARED_MAX = 4096
_OUTCOMES: dict[type, str] = {
    CallTransferAnswered: "answered",
    CallTransferFailed: "failed",
    CallTransferCancelled: "cancelled",
}


def _stage(s: TurnStage | dict[str, Any]) -> TurnStage:
    return s if isinstance(s, TurnStage) else TurnStage(**s)  # a replay rebuilds them as dicts


def ns(seconds: float) -> int:
    return int(seconds * 1e9)


def span_id() -> bytes:
    """A random non-zero span id (as the SDK's ``RandomIdGenerator`` makes them)."""
    return (getrandbits(64) or 1).to_bytes(8, "big")


#: ``SpanData`` from a tuple of its fields without the named tuple's Python-level ``__new__`` (a frame per span).
_span: Callable[[tuple[Any, ...]], SpanData] = partial(tuple.__new__, SpanData)


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
class _Open:
    """A span still open (the call, a transfer): ended, and only then handed on, when its end comes."""

    span_id: bytes
    start_ns: int
    attributes: dict[str, Any]


@dataclass
class _Usage:
    provider: str
    model: str | None
    report: Any  # UsageReport, summed over the turn's reports (a realtime turn may have several responses)


@dataclass
class _Call:
    trace_id: bytes
    span: _Open
    provider: str
    sampled: bool
    tools: list[tuple[Any, ...]] = field(default_factory=list)  # this turn's tool records, until its turn.timings
    usage: dict[int, _Usage] = field(default_factory=dict)  # by turn
    #: A turn whose timings came before its usage (a text call counts usage after the turn): made when it comes.
    pending: tuple[tuple[Any, ...], list[tuple[Any, ...]]] | None = None
    transfer: _Open | None = None


class SpanBuilder:
    """Feed it the tap's records in order (``take``: tool calls and turns as ``recorder`` keeps them, other events as
    they are); each finished span goes to ``emit``; ``end_all`` at stop ends what is still open. ``sampled`` decides,
    once per trace (a call, or a tool call outside any), whether its spans are kept."""

    def __init__(
        self,
        emit: Callable[[SpanData], None],
        trace_id: Callable[[str], int],
        sampled: Callable[[int, str], bool] = lambda trace_id, name: True,
        tool_class: Callable[[str], str | None] = lambda name: None,
    ) -> None:
        self.emit = emit
        self.trace_id = trace_id
        self.sampled = sampled
        self.tool_class = tool_class
        self.calls: dict[str, _Call] = {}
        self._shared: dict[tuple[Any, ...], Shared] = {}
        #: What a tool span's name, status and attributes make of its record's fields (``_TOOL_KEY``): the span's
        #: name, its shared attributes, its error, and the MCP request's name and shared attributes (if it made one).
        self._tools: dict[tuple[Any, ...], tuple[str, Shared, str | None, str | None, Shared | None]] = {}

    def shared(self, key: tuple[Any, ...], make: Callable[[], dict[str, Any]]) -> Shared:
        """The one ``Shared`` for attributes that ``key`` determines (made by ``make`` the first time)."""
        found = self._shared.get(key)
        if found is None:
            if len(self._shared) >= _SHARED_MAX:
                self._shared.clear()
            found = self._shared[key] = Shared(make())
        return found

    def tool_classes_changed(self) -> None:
        """A tool's latency class moved: its next span asks ``tool_class`` again."""
        self._tools.clear()

    def take(self, records: Iterable[Any]) -> None:
        calls, tool_type = self.calls, TOOL
        for rec in records:
            try:
                if rec.__class__ is not tuple:
                    self.handle(rec)
                elif rec[0] == tool_type:
                    if rec[5]:  # a probe (calibration): no span
                        continue
                    if (c := calls.get(rec[1])) is not None:
                        c.tools.append(rec)  # parented by its turn, made when the turn's timings come
                    elif not rec[1]:  # outside any call (the engine's MCP endpoint, ``mcp call``): a trace of its own
                        tid = getrandbits(128) or 1
                        if self.sampled(tid, "execute_tool"):
                            self._tool_span(rec, tid.to_bytes(16, "big"), b"")
                else:
                    self._turn(rec)
            except Exception as e:  # one odd event never stops the traces of the others
                kind = rec[0] if rec.__class__ is tuple else rec.type
                log.warning("telemetry: no span for a %s event (%s: %s)", kind, type(e).__name__, e)

    def handle(self, ev: Event) -> None:
        """One event as the bus publishes it (the tap keeps tool calls and turns as records: see ``recorder``)."""
        if isinstance(ev, ToolCompleted | TurnTimings):
            self.take((RECORDS[type(ev)](ev),))
        elif isinstance(ev, UsageUpdated):
            self._usage(ev)
        elif isinstance(ev, CallStarted):
            self._call_started(ev)
        elif isinstance(ev, CallUsage):
            if (c := self.calls.get(ev.call_id)) is not None:
                c.span.attributes.update({**usage_attributes(ev.usage), "ava.cost_usd": ev.cost})
                if ev.model:
                    c.span.attributes["gen_ai.request.model"] = ev.model
        elif isinstance(ev, CallEnded):
            self._call_ended(ev.call_id, ev.ts, ev.reason)
        elif isinstance(ev, CallTransferStarted | CallTransferAnswered | CallTransferFailed | CallTransferCancelled):
            self._transfer(ev)

    # -------------------------------------------------------------------------------------------- calls

    def _call_started(self, ev: CallStarted) -> None:
        if ev.call_id in self.calls:  # the same id again (a hand-back continues a call): one span per call id
            return
        tid = self.trace_id(ev.call_id)
        attrs = {
            "ava.call.id": ev.call_id,
            "ava.context": ev.context,
            "ava.provider": ev.provider,
            "ava.call.direction": ev.direction,
            "ava.tier": ev.tier,
        }
        call = _Call(
            tid.to_bytes(16, "big"), _Open(span_id(), ns(ev.ts), attrs), ev.provider, self.sampled(tid, "call")
        )
        self.calls[ev.call_id] = call

    def _call_ended(self, call_id: str, at: float, reason: str) -> None:
        c = self.calls.pop(call_id, None)
        if c is None:
            return
        self._flush_turn(c)
        if c.sampled:
            for t in c.tools:  # tool calls of a turn that never completed
                self._tool_span(t, c.trace_id, c.span.span_id)
        end = ns(at)
        if c.transfer is not None:
            self._end(c, c.transfer, "transfer", INTERNAL, end, None)
        c.span.attributes["ava.call.end_reason"] = reason
        if c.sampled:
            s = c.span
            self.emit(SpanData(c.trace_id, s.span_id, b"", "call", SERVER, s.start_ns, end, None, s.attributes, None))

    def _end(self, c: _Call, s: _Open, name: str, kind: int, end: int, error: str | None) -> None:
        if c.sampled:
            self.emit(
                SpanData(c.trace_id, s.span_id, c.span.span_id, name, kind, s.start_ns, end, None, s.attributes, error)
            )

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
        if c.pending is not None and c.pending[0][2] == ev.turn:
            self._flush_turn(c)

    def _turn(self, rec: tuple[Any, ...]) -> None:
        c = self.calls.get(rec[1])
        if c is None:
            return
        if c.pending is not None:
            self._flush_turn(c)
        tools, c.tools = c.tools, []
        c.pending = (rec, tools)
        if c.usage and rec[2] in c.usage:
            self._flush_turn(c)

    def _flush_turn(self, c: _Call) -> None:
        if c.pending is None:
            return
        (rec, tools), c.pending = c.pending, None
        _, _, turn, tier, budget_ms, latency_ms, stages, started_at, ts = rec
        usage = c.usage.pop(turn, None) if c.usage else None
        if not c.sampled:
            return
        reach = max([s.start_ms + s.duration_ms for s in map(_stage, stages)]) / 1000 if stages else 0.0
        start = started_at or ts - reach
        end = start + max(latency_ms / 1000, reach)
        over = latency_ms > budget_ms
        key = ("turn", tier, budget_ms, over)
        shared = self._shared.get(key) or self.shared(
            key, lambda: {"ava.tier": tier, "ava.budget_ms": budget_ms, "ava.over_budget": over}
        )
        turn_id, tid = span_id(), c.trace_id
        if stages:
            self._stages(c, stages, start, turn_id, usage)
        for t in tools:
            self._tool_span(t, tid, turn_id)
        attrs = {"ava.turn": turn, "ava.latency_ms": latency_ms}
        self.emit(
            _span(
                (tid, turn_id, c.span.span_id, "turn", INTERNAL, int(start * 1e9), int(end * 1e9), shared, attrs, None)
            )
        )

    def _stages(self, c: _Call, stages: tuple[Any, ...], start: float, turn_id: bytes, usage: _Usage | None) -> None:
        emit, tid = self.emit, c.trace_id
        for stage in map(_stage, stages):
            name = STAGE_SPANS.get(stage.name)
            if name is None:
                continue
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
            kind = CLIENT if name == "model" else INTERNAL
            a_ns = ns(start + stage.start_ms / 1000)  # the stage's measured duration exactly, not two rounded floats
            end_ns = a_ns + round(stage.duration_ms * 1e6)
            emit(_span((tid, span_id(), turn_id, name, kind, a_ns, end_ns, None, extra, None)))

    # -------------------------------------------------------------------------------------------- tools

    def _tool_span(self, rec: tuple[Any, ...], trace_id: bytes, parent: bytes) -> None:
        end = int(rec[4] * 1e9)
        start = end - int(rec[3] * 1e6)
        key = rec[6:]
        made = self._tools.get(key) or self._tool_kind(key)
        span_name, shared, error, mcp_name, mcp = made
        tool_id = (getrandbits(64) or 1).to_bytes(8, "big")
        attrs = {"gen_ai.tool.call.id": rec[2]}
        self.emit(_span((trace_id, tool_id, parent, span_name, INTERNAL, start, end, shared, attrs, error)))
        if mcp is not None:
            # the MCP request the tool call made: the executor's clock is the one around it (see the docs)
            self.emit(_span((trace_id, span_id(), tool_id, mcp_name, CLIENT, start, end, mcp, {}, error)))

    def _tool_kind(self, key: tuple[Any, ...]) -> tuple[str, Shared, str | None, str | None, Shared | None]:
        """What every tool span with these fields shares (made once per distinct set)."""
        if len(self._tools) >= _SHARED_MAX:
            self._tools.clear()
        exposed_name, server, tool, status, cache_hit = key
        mcp: Shared | None = None
        if server != "builtin" and not cache_hit and status != "rejected":
            mcp = self.shared(
                ("mcp", tool, server),
                lambda: {"mcp.method.name": "tools/call", "gen_ai.tool.name": tool, "ava.mcp.server": server},
            )
        attrs: dict[str, Any] = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": exposed_name,
            "ava.tool.server": server,
            "ava.tool.status": status,
            "ava.tool.cache_hit": cache_hit,
        }
        if (cls := self.tool_class(exposed_name)) is not None:
            attrs["ava.tool.latency_class"] = cls
        made = (
            f"execute_tool {exposed_name}",
            Shared(attrs),
            status if status in _TOOL_FAILED else None,
            f"tools/call {tool}" if mcp is not None else None,
            mcp,
        )
        self._tools[key] = made
        return made

    # -------------------------------------------------------------------------------------------- transfers

    def _transfer(self, ev: Event) -> None:
        c = self.calls.get(str(getattr(ev, "call_id", "")))
        if c is None:
            return
        at = ns(ev.ts)
        if isinstance(ev, CallTransferStarted):
            if c.transfer is not None:
                self._end(c, c.transfer, "transfer", INTERNAL, at, None)
            c.transfer = _Open(span_id(), at, {"ava.transfer.target": ev.target, "ava.transfer.mode": ev.mode})
            return
        span, c.transfer = c.transfer, None
        if span is None:
            return
        span.attributes["ava.transfer.outcome"] = _OUTCOMES[type(ev)]
        if isinstance(ev, CallTransferAnswered):
            span.attributes["ava.transfer.handoff_ms"] = ev.handoff_ms
        self._end(c, span, "transfer", INTERNAL, at, "transfer failed" if isinstance(ev, CallTransferFailed) else None)
