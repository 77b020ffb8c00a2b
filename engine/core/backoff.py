"""Exponential backoff with jitter, and the one reconnect loop built on it.

Why it exists: MCP server restarts (``engine.mcp.supervisor``), provider HTTP retries (``engine.providers.http``) and
every reconnect (the ARI events socket, the realtime providers' sockets, Redis) wait the same way — a first step,
doubled on every further retry up to a cap, each wait drawn from the upper half of its step so that many clients
retrying at once spread out ("equal jitter"). ``Retry`` is one reconnect loop's state (failures since the last
success, why the last one failed, whether its tries are spent) and ``reconnect`` the bounded loop itself: wait,
try, count, stop at a refusal no retry can fix. Loops that run forever (ARI, Redis) keep a ``Retry`` and call
``succeeded``/``failed`` around their own connection; bounded ones (the realtime sessions) call ``reconnect``.
A small dataclass rather than tenacity: the loops need the delay for retry *n*, a reason and nothing else.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol, TypeVar

#: Past this many doublings every step is the cap anyway (and ``2 ** n`` cannot overflow a float).
_MAX_DOUBLINGS = 62

T = TypeVar("T")


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


class Delays(Protocol):
    """A ``Backoff``, or a policy built on one (Gemini Live's resume budget counts on from its last minute)."""

    def delay_s(self, retry: int) -> float: ...


@dataclass(slots=True)
class Retry:
    """One reconnect loop: failures since its last success, why the last one failed, and the wait before the next.

    ``tries`` bounds the failures (``None``: retry forever); ``sleep`` is injectable so tests need no wall clock.
    """

    backoff: Delays
    tries: int | None = None
    sleep: Callable[[float], Awaitable[object]] = asyncio.sleep
    failures: int = 0
    #: Why the last try failed ('' before any), kept for the operator's status and the notice that gives up.
    reason: str = ""
    #: True when ``reconnect`` ended because the caller stopped (not because the tries were spent or refused).
    stopped: bool = False

    def __post_init__(self) -> None:
        if self.tries is not None and self.tries < 0:
            raise ValueError(f"reconnect tries must be >= 0 or None (forever), not {self.tries}")

    @property
    def spent(self) -> bool:
        """The tries are used up: the loop gives up (never, with ``tries=None``)."""
        return self.tries is not None and self.failures >= self.tries

    def succeeded(self) -> None:
        """A connection is up: the next failure waits the first step again."""
        self.failures, self.reason = 0, ""

    def failed(self, reason: str) -> float:
        """Count one failure (``reason`` kept); the wait before the next try."""
        delay = self.backoff.delay_s(self.failures)
        self.failures += 1
        self.reason = reason
        return delay

    async def pause(self, reason: str) -> float:
        """Count one failure and wait the backoff before the next try; the wait it slept."""
        delay = self.failed(reason)
        await self.sleep(delay)
        return delay


async def reconnect(
    connect: Callable[[], Awaitable[T]],
    retry: Retry,
    errors: type[BaseException] | tuple[type[BaseException], ...],
    *,
    fatal: Callable[[BaseException], bool] | None = None,
    free: Callable[[BaseException], bool] | None = None,
    stopped: Callable[[], bool] | None = None,
    at_once: bool = False,
) -> T | None:
    """``connect()``'s result once a try succeeds, or None: the tries spent, a failure ``fatal`` (no retry can fix
    it) or ``stopped()`` (``retry.stopped``); ``retry.reason`` says why the last try failed.

    Before each try it waits ``retry``'s backoff (counted by the failures so far), except before the first when
    ``at_once`` (a planned reconnect). Only ``errors`` are retried; anything else passes up. A ``free`` failure
    (the caller changed what the next try sends) waits and tries again without counting.
    """
    while not retry.spent:
        if not at_once or retry.failures > 0:
            await retry.sleep(retry.backoff.delay_s(retry.failures))
        if stopped is not None and stopped():
            retry.stopped = True
            return None
        try:
            return await connect()
        except errors as e:
            if free is not None and free(e):
                retry.reason = str(e)
                continue
            retry.failures += 1
            retry.reason = str(e)
            if fatal is not None and fatal(e):
                return None
    return None
