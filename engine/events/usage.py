"""The usage events (``usage.updated`` per turn, ``usage.budget`` at 80 % and 100 %, ``call.usage`` at the end),
re-exported by ``engine.events``.

Why apart: they belong to one feature (engine.usage) and ``engine.events`` is at its size limit; the bus, the
recorder and the console reach them through ``engine.events`` like every other event. Counts travel as
``UsageReport`` objects (a JSON object on the wire) so a trace exporter reads the same fields as the console.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from engine.events.catalog import Event
from engine.usage.report import UsageReport


@dataclass(frozen=True, slots=True, kw_only=True)
class UsageUpdated(Event):
    """A turn's (or a realtime response's) usage and cost, with the call's running totals. ``cost`` and
    ``total_cost`` are US dollars; ``priced`` is False when the provider has no price (cost then 0)."""

    type: ClassVar[str] = "usage.updated"
    call_id: str
    provider: str
    model: str | None = None
    turn: int = 0
    usage: UsageReport = field(default_factory=UsageReport)
    total: UsageReport = field(default_factory=UsageReport)
    cost: float = 0.0
    total_cost: float = 0.0
    session_s: float = 0.0
    priced: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class BudgetAlert(Event):
    """A call used ``fraction`` of its budget (``contexts.<name>.max_cost``/``max_tokens``, whichever is nearer):
    ``level`` warning at 80 %, reached at 100 % with ``action`` (wrap_up: the agent says goodbye and ends the call;
    ask_operator: the call goes on until the operator ends it)."""

    type: ClassVar[str] = "usage.budget"
    call_id: str
    level: str
    fraction: float
    cost: float
    tokens: int
    max_cost: float | None = None
    max_tokens: int | None = None
    action: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class CallUsage(Event):
    """What a call used and cost, summed (published when it ends); the flat fields are ``usage``'s, kept for
    readers of the first version of this event."""

    type: ClassVar[str] = "call.usage"
    call_id: str
    provider: str
    model: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    input_audio_s: float = 0.0
    output_audio_s: float = 0.0
    usage: UsageReport = field(default_factory=UsageReport)
    cost: float = 0.0
    session_s: float = 0.0
    priced: bool = False
