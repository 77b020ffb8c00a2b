"""Per-call turn timings and speaking spans, built from events only (for the waterfall and the speaking timeline).

Why apart from ``console.state``: that module is the tables' state; this one keeps what the call view draws —
each turn's ``turn.timings``, who talked when (``speaking.changed``), tool spans (``tool.requested`` /
``tool.completed``) and announcements — all on the events' own ``ts``, never the time they arrived, so a recorded
call replayed through the console draws the same picture. Bounded per call, and calls beyond ``MAX_CALLS`` are
forgotten oldest first.
"""

from __future__ import annotations

from collections import OrderedDict, deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from engine import percentile

if TYPE_CHECKING:  # the engine's events load after the first frame (console.app), so only named here
    from engine.events import Event

#: Events only the call view draws: kept out of the event log (a few per turn would flood it) and the tables.
VIEW_ONLY = frozenset({"turn.timings", "speaking.changed"})

MAX_CALLS = 200
MAX_TURNS = 500
MAX_SPANS = 2000

#: The stage names as the waterfall shows them.
STAGE_LABELS = {
    "endpointing": "endpointing",
    "stt": "STT",
    "model": "model",
    "tool": "tool",
    "tts": "TTS → audio",
    "playout": "playout",
}


@dataclass(frozen=True, slots=True)
class Stage:
    name: str
    start_ms: float
    duration_ms: float
    label: str = ""
    server: str = ""
    status: str = ""

    @property
    def end_ms(self) -> float:
        return self.start_ms + self.duration_ms

    @property
    def title(self) -> str:
        if self.name == "tool":  # an MCP tool's exposed name is mcp_<server>_<tool>: show server·tool
            tool = self.label.removeprefix(f"mcp_{self.server}_") if self.server else self.label
            return f"{self.server}·{tool}" if self.server and self.server != "builtin" else tool
        return STAGE_LABELS.get(self.name, self.name)


@dataclass(frozen=True, slots=True)
class TurnRow:
    turn: int
    tier: str
    budget_ms: int
    latency_ms: float
    stages: tuple[Stage, ...]
    ts: float

    @property
    def over_budget(self) -> bool:
        return self.budget_ms > 0 and self.latency_ms > self.budget_ms

    def slowest(self) -> Stage | None:
        """The stage that cost the turn most before its first audio (playout is the answer, not its delay).

        A tool's time is its own; the model's is its span less the tools it waited on."""
        tools = [s for s in self.stages if s.name == "tool"]
        best: Stage | None = None
        best_ms = -1.0
        for s in self.stages:
            if s.name == "playout":
                continue
            own = s.duration_ms
            if s.name == "model":
                own -= sum(t.duration_ms for t in tools if t.start_ms >= s.start_ms and t.end_ms <= s.end_ms + 1)
            if own > best_ms:
                best, best_ms = s, own
        return best


@dataclass(frozen=True, slots=True)
class Span:
    """Something on the speaking timeline: ``lane`` caller | agent | tool | note, from ``start`` to ``end``."""

    lane: str
    start: float
    end: float | None
    text: str = ""
    barge_in: bool = False
    status: str = ""


@dataclass
class CallTimings:
    call_id: str
    started: float | None = None
    turns: deque[TurnRow] = field(default_factory=lambda: deque(maxlen=MAX_TURNS))
    spans: deque[Span] = field(default_factory=lambda: deque(maxlen=MAX_SPANS))
    #: Open spans by key (("caller",) / ("agent",) / ("tool", tool_call_id)).
    open: dict[tuple[str, ...], Span] = field(default_factory=dict)
    revision: int = 0
    last_ts: float = 0.0

    def latency_percentiles(self) -> tuple[float, float] | None:
        values = sorted(t.latency_ms for t in self.turns)
        if not values:
            return None
        return percentile(values, 0.5), percentile(values, 0.95)

    def worst(self) -> TurnRow | None:
        return max(self.turns, key=lambda t: t.latency_ms, default=None)

    def all_spans(self) -> list[Span]:
        """Closed spans and the ones still open (drawn up to the latest event)."""
        return [*self.spans, *self.open.values()]


def _stage(x: Any) -> Stage:
    """A stage from the event (a ``TurnStage``) or from its JSON form (a dict, as a replayed recording has it)."""
    get = x.get if isinstance(x, Mapping) else lambda k, d=None: getattr(x, k, d)
    return Stage(
        str(get("name", "")),
        float(get("start_ms", 0.0)),
        float(get("duration_ms", 0.0)),
        str(get("label", "") or ""),
        str(get("server", "") or ""),
        str(get("status", "") or ""),
    )


class TimingsState:
    """Feeds on every event batch; ``revision(call_id)`` tells a view whether to redraw."""

    WANTED = frozenset(
        {
            "turn.timings",
            "speaking.changed",
            "tool.requested",
            "tool.completed",
            "tool.rejected",
            "announcement.played",
            "call.started",
        }
    )

    def __init__(self) -> None:
        self.calls: OrderedDict[str, CallTimings] = OrderedDict()

    def get(self, call_id: str | None) -> CallTimings | None:
        return self.calls.get(call_id) if call_id is not None else None

    def revision(self, call_id: str | None) -> int:
        c = self.get(call_id)
        return c.revision if c is not None else -1

    def apply(self, events: Iterable[Event]) -> set[str]:
        """Take a batch; returns the calls it changed."""
        changed: set[str] = set()
        for ev in events:
            if ev.type not in self.WANTED:
                continue
            call_id = getattr(ev, "call_id", None)
            if not isinstance(call_id, str):
                continue
            c = self._call(call_id)
            self._apply_one(c, ev)
            c.revision += 1
            c.last_ts = max(c.last_ts, ev.ts)
            changed.add(call_id)
        return changed

    def _call(self, call_id: str) -> CallTimings:
        c = self.calls.get(call_id)
        if c is None:
            c = self.calls[call_id] = CallTimings(call_id)
            while len(self.calls) > MAX_CALLS:
                self.calls.popitem(last=False)
        return c

    def _apply_one(self, c: CallTimings, ev: Event) -> None:
        from engine.events import (
            AnnouncementPlayed,
            SpeakingChanged,
            ToolCompleted,
            ToolRejected,
            ToolRequested,
            TurnTimings,
        )

        if c.started is None:
            c.started = ev.ts
        if isinstance(ev, TurnTimings):
            stages = tuple(_stage(s) for s in ev.stages)
            c.turns.append(TurnRow(ev.turn, ev.tier, ev.budget_ms, ev.latency_ms, stages, ev.ts))
        elif isinstance(ev, SpeakingChanged):
            self._open_close(c, (ev.who,), ev.who, ev.ts, ev.speaking, barge_in=ev.barge_in)
        elif isinstance(ev, ToolRequested):
            if not ev.is_probe:
                c.open[("tool", ev.tool_call_id)] = Span("tool", ev.ts, None, ev.exposed_name)
        elif isinstance(ev, ToolCompleted | ToolRejected):
            span = c.open.pop(("tool", ev.tool_call_id), None)
            status = ev.status if isinstance(ev, ToolCompleted) else "rejected"
            if span is not None:
                c.spans.append(Span("tool", span.start, ev.ts, span.text, status=status))
            elif isinstance(ev, ToolCompleted) and not ev.is_probe:  # its request was before we listened
                c.spans.append(Span("tool", ev.ts - ev.latency_ms / 1000, ev.ts, ev.exposed_name, status=status))
        elif isinstance(ev, AnnouncementPlayed):
            c.spans.append(Span("note", ev.ts, ev.ts, ev.text))

    @staticmethod
    def _open_close(
        c: CallTimings, key: tuple[str, ...], lane: str, ts: float, on: bool, *, barge_in: bool = False
    ) -> None:
        span = c.open.pop(key, None)
        if span is not None:
            c.spans.append(Span(lane, span.start, ts, span.text, barge_in=barge_in and not on))
        if on:
            c.open[key] = Span(lane, ts, None)
