"""How far a running tool call has got, as its server reported it, and saying so in the slow-tool announcement.

Why it exists: an MCP server may send ``notifications/progress`` (progress, total) for a call in flight. The
console shows them on the invocation row (``ToolProgressed``); the caller should hear them too, in the one
"still looking" announcement a slow turn gets ("One moment while I check that. I'm about half way."). The MCP
tool notes each report against the task running the call, and the turn tracker (which keys its running calls by
that same task) reads the latest when the slow-response threshold passes. A weak mapping: an entry goes with its
task, and noting costs one dict write per notification, nothing for a tool that reports nothing.
"""

from __future__ import annotations

import asyncio
import math
from typing import Any
from weakref import WeakKeyDictionary

_LATEST: WeakKeyDictionary[asyncio.Task[Any], tuple[float, float | None]] = WeakKeyDictionary()

#: Spoken progress by the fraction done: (below this fraction, the words). Under the first nothing is said.
PHRASES = (
    (0.15, None),
    (0.42, "I'm about a third of the way."),
    (0.6, "I'm about half way."),
    (0.85, "I'm most of the way there."),
    (math.inf, "I'm almost done."),
)


def note(task: asyncio.Task[Any] | None, progress: float, total: float | None) -> None:
    """The server reported ``progress`` of ``total`` for the call ``task`` runs."""
    if task is not None:
        _LATEST[task] = (progress, total)


def latest(task: Any) -> tuple[float, float | None] | None:
    """The last report for ``task``'s call, or None."""
    try:
        return _LATEST.get(task)
    except TypeError:  # not weak-referenceable: never noted
        return None


def phrase(progress: float, total: float | None) -> str | None:
    """Words for the caller when the fraction done is known and sane; None otherwise (no total, 0, NaN …)."""
    if total is None or not (total > 0) or not math.isfinite(total) or not math.isfinite(progress) or progress < 0:
        return None
    fraction = min(progress / total, 1.0)
    for below, words in PHRASES:
        if fraction < below:
            return words
    return None


def with_progress(message: str, task: Any) -> str:
    """``message`` with the progress sentence of ``task``'s call added, when one is known."""
    report = latest(task)
    words = phrase(*report) if report is not None else None
    return f"{message.rstrip()} {words}" if words else message
