"""Exponential backoff with jitter: the one implementation behind every retry and restart loop of the engine.

Why it exists: MCP server restarts (``engine.mcp.supervisor``) and provider HTTP retries (``engine.providers.http``)
wait the same way — a first step, doubled on every further retry up to a cap, each wait drawn from the upper half
of its step so that many clients retrying at once spread out ("equal jitter"). The loops themselves stay where
they are (a restart loop with a count that resets after a stable spell is not a function retry); what they share
is this policy. A small dataclass rather than tenacity: both loops need the delay for retry *n* and nothing else.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

#: Past this many doublings every step is the cap anyway (and ``2 ** n`` cannot overflow a float).
_MAX_DOUBLINGS = 62


@dataclass(frozen=True, slots=True)
class Backoff:
    """Retry ``n`` (0 for the first retry) waits between ``(1 - jitter)`` and 1 times ``min(max_s, first_s * 2**n)``."""

    first_s: float
    max_s: float
    jitter: float = 0.5

    def __post_init__(self) -> None:
        if self.first_s < 0 or self.max_s < 0:
            raise ValueError(f"backoff steps must be >= 0 (first {self.first_s}, max {self.max_s})")
        if not 0 <= self.jitter <= 1:
            raise ValueError(f"jitter must be between 0 and 1, not {self.jitter}")

    def step_s(self, retry: int) -> float:
        """The longest wait before retry ``retry`` (no jitter)."""
        return min(self.max_s, self.first_s * 2.0 ** min(max(0, retry), _MAX_DOUBLINGS))

    def delay_s(self, retry: int, rng: random.Random | None = None) -> float:
        """The wait before retry ``retry``: its step times a uniform factor in ``[1 - jitter, 1]``."""
        step = self.step_s(retry)
        return step * (rng or random).uniform(1.0 - self.jitter, 1.0)
