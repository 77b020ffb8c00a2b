"""Events to spans: the call, its turns, each turn's stages and tool calls, MCP requests and transfers.

Why a builder that only reads events: every span is made after the fact with the start and end times the events
carry (nanoseconds since the epoch), so nothing on the call path waits for tracing. It makes plain ``SpanData``
protobuf, not SDK spans: no context, sampler or processor per span (the call's sampling decision holds for its whole
trace). A tool call's and a turn's span, the frequent ones, are written straight from cached pieces
(``engine.telemetry.otlp``), with span ids drawn a thousand at a time: no object per span but its bytes, which is
what keeps tracing cheap on the tool path (issue 36 item 5). The attributes are counts,
names, classes and timings; the caller's name, number and words, a tool's arguments and results, and a transfer's
destination number are never read from the events.
"""

from __future__ import annotations

import logging
import os
import struct
from collections.abc import Callable, Iterable
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
from engine.telemetry.open_calls import CallState, OpenSpan, TurnUsage, usage_attributes
from engine.telemetry.otlp import (
    CALL_ID,
    CALL_IDS,
    CHILD,
    CLIENT,
    INTERNAL,
    ROOT,
    SERVER,
    TAGS,
    SpanData,
    SpanEncoder,
    child_with_double,
    head,
    key_value,
    span_tag,
    string_attribute,
)
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


#: Span ids drawn at a time (one ``os.urandom``).
_IDS = 1024
#: A turn span's fixed part with its ``ava.latency_ms`` (one pack).
_TURN, _LATENCY = child_with_double("ava.latency_ms")


_SPLIT = struct.Struct("8s" * _IDS).unpack
_ZERO = bytes(8)


def _fresh_ids() -> list[bytes]:
    """Random non-zero span ids (as the SDK's ``RandomIdGenerator`` makes them), split from one ``os.urandom``."""
    ids = list(_SPLIT(os.urandom(8 * _IDS)))
    return [b"\x00" * 7 + b"\x01" if i == _ZERO else i for i in ids] if _ZERO in ids else ids


class SpanBuilder:
    """Feed it the tap's records in order (``take``: tool calls and turns as ``recorder`` keeps them, other events as
    they are); each finished span is appended to ``out`` as its two pieces (``engine.telemetry.otlp``); ``end_all``
    at stop ends what is still open. ``sampled`` decides, once per trace (a call, or a tool call outside any),
    whether its spans are kept."""

    def __init__(
        self,
        trace_id: Callable[[str], int],
        sampled: Callable[[int, str], bool] = lambda trace_id, name: True,
        tool_class: Callable[[str], str | None] = lambda name: None,
    ) -> None:
        self.trace_id = trace_id
        self.sampled = sampled
        self.tool_class = tool_class
        self.calls: dict[str, CallState] = {}
        self.out: list[bytes] = []
        self._encoder = SpanEncoder()
        self._ids: list[bytes] = []
        self._pop = self._ids.pop
        #: What a tool span's head and its MCP request's head (if it made one) are, by the record's fields that
        #: decide them (``rec[6:]``); a turn's head by tier, budget and whether it went over; ``ava.turn`` by number.
        self._tools: dict[tuple[Any, ...], tuple[bytes, bytes | None]] = {}
        self._turns: dict[tuple[Any, ...], bytes] = {}
        self._numbers: dict[Any, bytes] = {}

    def new_id(self) -> bytes:
        """A span id from the batch drawn last (a new batch when it is used up)."""
        if not self._ids:
            self._ids += _fresh_ids()
        return self._pop()

    def emit(self, span: SpanData) -> None:
        """A span that is neither a tool call's nor a turn's (those are written in place)."""
        self._encoder.spans((span,), self.out)

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
                            self._tool_spans((rec,), tid.to_bytes(16, "big"), b"")
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
        call = CallState(
            tid.to_bytes(16, "big"), OpenSpan(self.new_id(), ns(ev.ts), attrs), ev.provider, self.sampled(tid, "call")
        )
        self.calls[ev.call_id] = call

    def _call_ended(self, call_id: str, at: float, reason: str) -> None:
        c = self.calls.pop(call_id, None)
        if c is None:
            return
        self._flush_turn(c)
        if c.sampled and c.tools:  # tool calls of a turn that never completed
            self._tool_spans(c.tools, c.trace_id, c.span.span_id)
        end = ns(at)
        if c.transfer is not None:
            self._end(c, c.transfer, "transfer", INTERNAL, end, None)
        c.span.attributes["ava.call.end_reason"] = reason
        if c.sampled:
            s = c.span
            self.emit(SpanData(c.trace_id, s.span_id, b"", "call", SERVER, s.start_ns, end, None, s.attributes, None))

    def _end(self, c: CallState, s: OpenSpan, name: str, kind: int, end: int, error: str | None) -> None:
        if c.sampled:
            ids = s.span_id, c.span.span_id
            self.emit(SpanData(c.trace_id, *ids, name, kind, s.start_ns, end, None, s.attributes, error))

    def end_all(self, at: float, reason: str = "engine stopping") -> None:
        for call_id in list(self.calls):
            self._call_ended(call_id, at, reason)

    # -------------------------------------------------------------------------------------------- turns

    def _usage(self, ev: UsageUpdated) -> None:
        c = self.calls.get(ev.call_id)
        if c is None:
            return
        had = c.usage.get(ev.turn)
        c.usage[ev.turn] = TurnUsage(ev.provider, ev.model, ev.usage if had is None else had.report + ev.usage)
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

    def _flush_turn(self, c: CallState) -> None:
        if c.pending is None:
            return
        (rec, tools), c.pending = c.pending, None
        _, _, turn, tier, budget_ms, latency_ms, stages, started_at, ts = rec
        usage = c.usage.pop(turn, None) if c.usage else None
        if not c.sampled:
            return
        reach = max([s.start_ms + s.duration_ms for s in map(_stage, stages)]) / 1000 if stages else 0.0
        start = started_at or ts - reach
        end = start + (took if (took := latency_ms / 1000) > reach else reach)
        key = (tier, budget_ms, latency_ms > budget_ms)
        shared = self._turns.get(key) or self._turn_head(key)
        try:
            turn_id = self._pop()
        except IndexError:
            turn_id = self.new_id()
        tid = c.trace_id
        if stages:
            self._stages(c, stages, start, turn_id, usage)
        if tools:
            self._tool_spans(tools, tid, turn_id)
        number = self._numbers.get(turn) or self._number(turn)
        start_ns, end_ns = int(start * 1e9), int(end * 1e9)
        fixed = _TURN(
            0x100A, tid, 0x0812, turn_id, 0x0822, c.span.span_id, 0x39, start_ns, 0x41, end_ns, _LATENCY, latency_ms
        )
        body = b"".join((fixed, shared, number))
        self.out += (TAGS[n] if (n := len(body)) < 4096 else span_tag(n), body)

    def _turn_head(self, key: tuple[Any, ...]) -> bytes:
        if len(self._turns) >= _SHARED_MAX:
            self._turns.clear()
        tier, budget_ms, over = key
        made = self._turns[key] = head(
            "turn", INTERNAL, {"ava.tier": tier, "ava.budget_ms": budget_ms, "ava.over_budget": over}
        )
        return made

    def _number(self, turn: Any) -> bytes:
        if len(self._numbers) >= _SHARED_MAX:
            self._numbers.clear()
        made = self._numbers[turn] = key_value(0x4A, "ava.turn", turn)
        return made

    def _stages(
        self, c: CallState, stages: tuple[Any, ...], start: float, turn_id: bytes, usage: TurnUsage | None
    ) -> None:
        emit, tid, parent = self.emit, c.trace_id, turn_id
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
            emit(SpanData(tid, self.new_id(), parent, name, kind, a_ns, end_ns, None, extra, None))

    # -------------------------------------------------------------------------------------------- tools

    def _tool_spans(self, tools: Iterable[tuple[Any, ...]], trace_id: bytes, parent: bytes) -> None:
        """Each tool record's span (and its MCP request's, if it made one) under ``parent`` (b"": none)."""
        out, known, pop, join = self.out, self._tools, self._pop, b"".join
        for rec in tools:
            end = int(rec[4] * 1e9)
            start = end - int(rec[3] * 1e6)
            shared, mcp = known.get(rec[6:]) or self._tool_kind(rec[6:])
            try:
                tool_id = pop()
            except IndexError:
                tool_id = self.new_id()
            if parent:
                fixed = CHILD(0x100A, trace_id, 0x0812, tool_id, 0x0822, parent, 0x39, start, 0x41, end)
            else:
                fixed = ROOT(0x100A, trace_id, 0x0812, tool_id, 0x39, start, 0x41, end)
            call_id = rec[2]
            if (n := len(call_id)) < 100 and call_id.isascii():  # an attribute head of this length is ready
                body = join((fixed, shared, CALL_IDS[n], call_id.encode()))
            else:
                body = join((fixed, shared, string_attribute(CALL_ID, call_id)))
            out += (TAGS[n] if (n := len(body)) < 4096 else span_tag(n), body)
            if mcp is not None:
                # the MCP request the tool call made: the executor's clock is the one around it (see the docs)
                body = CHILD(0x100A, trace_id, 0x0812, self.new_id(), 0x0822, tool_id, 0x39, start, 0x41, end) + mcp
                out += (span_tag(len(body)), body)

    def _tool_kind(self, key: tuple[Any, ...]) -> tuple[bytes, bytes | None]:
        """What every tool span with these fields shares (made once per distinct set)."""
        if len(self._tools) >= _SHARED_MAX:
            self._tools.clear()
        exposed_name, server, tool, status, cache_hit = key
        error = status if status in _TOOL_FAILED else None
        mcp: bytes | None = None
        if server != "builtin" and not cache_hit and status != "rejected":
            mcp_attrs = {"mcp.method.name": "tools/call", "gen_ai.tool.name": tool, "ava.mcp.server": server}
            mcp = head(f"tools/call {tool}", CLIENT, mcp_attrs, error)
        attrs: dict[str, Any] = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": exposed_name,
            "ava.tool.server": server,
            "ava.tool.status": status,
            "ava.tool.cache_hit": cache_hit,
        }
        if (cls := self.tool_class(exposed_name)) is not None:
            attrs["ava.tool.latency_class"] = cls
        made = self._tools[key] = (head(f"execute_tool {exposed_name}", INTERNAL, attrs, error), mcp)
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
            c.transfer = OpenSpan(self.new_id(), at, {"ava.transfer.target": ev.target, "ava.transfer.mode": ev.mode})
            return
        span, c.transfer = c.transfer, None
        if span is None:
            return
        span.attributes["ava.transfer.outcome"] = _OUTCOMES[type(ev)]
        if isinstance(ev, CallTransferAnswered):
            span.attributes["ava.transfer.handoff_ms"] = ev.handoff_ms
        self._end(c, span, "transfer", INTERNAL, at, "transfer failed" if isinstance(ev, CallTransferFailed) else None)
