"""Admission limits for the engine's MCP endpoint: a rolling per-minute rate and a per-day call budget.

Why it exists: the endpoint lets other agents run the engine's tools (email, transfers, paid MCP servers), so a
runaway client must be stopped with a clear answer instead of burning the budget. Both limits apply to the whole
endpoint and count ``tools/call`` requests for exposed tools. A refused call consumes nothing; an admitted one
counts against both limits whatever its outcome. The day is the UTC calendar day. Limits are read at every call,
so a config reload applies at once and keeps the counts.
"""

from __future__ import annotations

import collections
import datetime as dt
import math
import time
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why a call was not admitted, and when it may be tried again."""

    reason: str
    message: str
    retry_after_s: int


def _today_utc() -> dt.date:
    return dt.datetime.now(dt.UTC).date()


class CallLimits:
    """Rolling 60-second window plus a daily counter. Not thread-safe (one event loop)."""

    WINDOW_S = 60.0

    def __init__(
        self,
        clock: Callable[[], float] = time.monotonic,
        today: Callable[[], dt.date] = _today_utc,
    ) -> None:
        self._clock = clock
        self._today = today
        self._recent: collections.deque[float] = collections.deque()
        self._day: dt.date = today()
        self._used_today = 0

    @property
    def used_today(self) -> int:
        self._roll_day()
        return self._used_today

    def _roll_day(self) -> None:
        today = self._today()
        if today != self._day:
            self._day, self._used_today = today, 0

    def admit(self, per_minute: int, per_day: int) -> Refusal | None:
        """Count one call if both limits allow it; otherwise say which limit refused it."""
        now = self._clock()
        while self._recent and now - self._recent[0] >= self.WINDOW_S:
            self._recent.popleft()
        self._roll_day()
        if self._used_today >= per_day:
            tomorrow = dt.datetime.combine(self._day + dt.timedelta(days=1), dt.time(), dt.UTC)
            wait = max(1, math.ceil((tomorrow - dt.datetime.now(dt.UTC)).total_seconds()))
            return Refusal(
                "daily_budget",
                f"Daily call budget exhausted: {per_day} calls per UTC day are allowed and all are used. "
                f"Try again after midnight UTC (in about {wait} seconds).",
                wait,
            )
        if len(self._recent) >= per_minute:
            wait = max(1, math.ceil(self.WINDOW_S - (now - self._recent[0])))
            return Refusal(
                "rate_limit",
                f"Rate limit reached: at most {per_minute} calls per minute. Try again in {wait} seconds.",
                wait,
            )
        self._recent.append(now)
        self._used_today += 1
        return None
