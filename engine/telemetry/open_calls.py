"""What the span builder keeps of a call while it is open: its span, its trace, this turn's tool records, the turns'
usage and a transfer in progress.

Why apart from the builder: these are plain records the builder fills as events come (engine/telemetry/spans.py);
kept here so the builder stays one pass over the records.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


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
class OpenSpan:
    """A span still open (the call, a transfer): ended, and only then handed on, when its end comes."""

    span_id: bytes
    start_ns: int
    attributes: dict[str, Any]


@dataclass
class TurnUsage:
    provider: str
    model: str | None
    report: Any  # UsageReport, summed over the turn's reports (a realtime turn may have several responses)


@dataclass
class CallState:
    trace_id: bytes
    span: OpenSpan
    provider: str
    sampled: bool
    tools: list[tuple[Any, ...]] = field(default_factory=list)  # this turn's tool records, until its turn.timings
    usage: dict[int, TurnUsage] = field(default_factory=dict)  # by turn
    #: A turn whose timings came before its usage (a text call counts usage after the turn): made when it comes.
    pending: tuple[tuple[Any, ...], list[tuple[Any, ...]]] | None = None
    transfer: OpenSpan | None = None
