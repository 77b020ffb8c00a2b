"""A tool call or a turn as tracing keeps it until the next handoff: a tuple of a few of the event's fields.

Why not the event: the bus's tap (``EventBus.tap``) hands each event over as it is published, and a queued event
would live until the handoff (200 ms), long enough to outlive the GC's young generations; promoted events then make
full collections run, each costing a pass over every object of the engine. A tuple of strings, numbers and flags is
no longer tracked once a young collection has seen it. Apart from the span builder so each stays a size to read.
"""

from __future__ import annotations

from collections.abc import Callable
from operator import attrgetter
from typing import Any

from engine.events import Event, ToolCompleted, TurnTimings

#: A record's fields, the event's type first. A tool record ends with what its span's name and shared attributes
#: depend on (``rec[6:]``).
TOOL_FIELDS = (
    "type",
    "call_id",
    "tool_call_id",
    "latency_ms",
    "ts",
    "is_probe",
    "exposed_name",
    "server",
    "tool",
    "status",
    "cache_hit",
)
TURN_FIELDS = ("type", "call_id", "turn", "tier", "budget_ms", "latency_ms", "stages", "started_at", "ts")
RECORDS: dict[type, Callable[[Any], tuple[Any, ...]]] = {
    ToolCompleted: attrgetter(*TOOL_FIELDS),
    TurnTimings: attrgetter(*TURN_FIELDS),
}
TOOL = ToolCompleted.type


def recorder(keep: Callable[[Any], object]) -> Callable[[Event], None]:
    """The bus tap's function: ``keep`` gets each tool call's or turn's record, and any other event as it is (those
    are a few per call)."""
    get = RECORDS.get

    def record(ev: Event) -> None:
        keep(get(ev.__class__, _same)(ev))

    return record


def _same(ev: Event) -> Event:
    return ev
