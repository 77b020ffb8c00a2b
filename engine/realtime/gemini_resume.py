"""When a Gemini Live call stops reconnecting: a bounded resume budget, and 1007 as an error, never a retry.

Why it exists: the session reconnects (resumes) after every dropped socket and ``goAway``. Without a bound, a
service that drops every connection — or one that refuses what the client sends with 1007 and is resumed into
the same refusal — keeps the call in a reconnect loop the operator never hears about. Two rules end that: the
provider may cause at most ``max_resumes_per_minute`` reconnects in any minute, spaced by the project's
``Backoff`` (the wait grows with the reconnects of the last minute), and the next one ends the call with a notice
saying why; a close with 1007 (invalid payload: the client broke a rule of the model's family, see
``gemini_families``) ends the call at once with a notice naming that rule and the last text route used. The
notices of a reconnect that worked (resumed, or fresh from the transcript) are worded here too, beside those
that end one.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from engine.core.backoff import Backoff, Delays, Retry, reconnect
from engine.providers.base import ProviderError
from engine.realtime.gemini_connect import SetupRefused
from engine.realtime.gemini_families import Family
from engine.realtime.session import ProviderNotice

log = logging.getLogger(__name__)

#: The close code of a message the service refuses as invalid ("Request contains an invalid argument.").
INVALID_PAYLOAD = 1007
WINDOW_S = 60.0


@dataclass(slots=True)
class ResumeBudget:
    """The reconnects the provider caused within the last minute, and the wait before the next one."""

    per_minute: int
    backoff: Backoff
    _times: deque[float] = field(default_factory=deque)

    def recent(self, now: float | None = None) -> int:
        """Reconnects within the last minute (older ones are forgotten)."""
        now = time.monotonic() if now is None else now
        while self._times and now - self._times[0] >= WINDOW_S:
            self._times.popleft()
        return len(self._times)

    def take(self) -> bool:
        """Count one more reconnect; False (nothing counted) when the minute's budget is spent."""
        now = time.monotonic()
        if self.recent(now) >= self.per_minute:
            return False
        self._times.append(now)
        return True

    def delay_s(self, retry: int) -> float:
        """The wait before connection attempt ``retry``, counted on from the reconnects of the last minute."""
        return self.backoff.delay_s(max(0, self.recent() - 1) + retry)

    def exhausted(self, provider: str, why: str) -> ProviderNotice:
        """The notice that ends the call when the budget is spent."""
        return ProviderNotice(
            f"{provider}: gave up reconnecting: the session was resumed {self.recent()} times within a minute and "
            f"the connection ended again ({why}); at most {self.per_minute} resumes a minute "
            "(options.max_resumes_per_minute)",
            fatal=True,
            code="resumes_exhausted",
        )


def invalid_payload(provider: str, model: str, family: Family, closed: str, last_text: str | None) -> ProviderNotice:
    """The notice that ends the call on a 1007 close: what was refused, the family's rule, the last text route."""
    return ProviderNotice(
        f"{provider}: Gemini Live refused a message as invalid and {closed}. Model {model} follows this rule: "
        f"{family.rule}. The last text went as {last_text or 'nothing yet'}. The session is not resumed: "
        "it would be refused again",
        fatal=True,
        code="invalid_payload",
    )


def reconnected(provider: str, why: str, resumed: bool, lost: list[str]) -> list[ProviderNotice]:
    """The notices of a reconnect that worked: results lost with the old connection, then how it went on."""
    notices = (
        [ProviderNotice(f"{provider}: results of {', '.join(lost)} were lost with the connection")] if lost else []
    )
    if resumed:
        notices.append(ProviderNotice(f"{provider}: reconnected and resumed the session ({why})", code="resumed"))
    else:
        notices.append(
            ProviderNotice(
                f"{provider}: reconnected without a resumption handle ({why}); the conversation continues from "
                "the call's transcript",
                code="fresh",
            )
        )
    return notices


#: HTTP statuses no reconnect can fix (bad key, no access, unknown model).
FATAL_STATUS = (400, 401, 403, 404)
#: Close codes of a refused setup that a retry cannot fix (invalid argument, policy: bad key, unknown model).
FATAL_CLOSE = (1007, 1008)


async def reopen(
    connect: Callable[[str | None], Awaitable[None]],
    handle: Callable[[bool], str | None],
    delays: Delays,
    attempts: int,
    *,
    at_once: bool,
    closed: Callable[[], bool],
    name: str,
) -> tuple[str | None, str]:
    """Open a new connection after one ended: (the handle it resumed with, the last refusal). ``connect(handle)``
    raises on a refusal; ``handle(drop)`` gives the resumption handle to try (``drop``: the server refused it, so
    the next attempt starts fresh, which does not count as an attempt). Waits ``delays.delay_s(attempt)`` before each
    attempt but a planned reconnect's first (``at_once``); stops at a refusal no retry can fix, after ``attempts``
    failures, or when ``closed()``. Whether it connected is the caller's to see."""
    current: str | None = None

    async def attempt() -> bool:
        nonlocal current
        current = handle(False)
        try:
            await connect(current)
        except SetupRefused as e:
            if current is not None:  # the handle expired or is unknown: the next try starts fresh, not counted
                log.info("%s: resumption refused (%s); reconnecting without the handle", name, e)
                handle(True)
                raise _HandleRefused(str(e)) from e
            raise
        return True

    retry = Retry(delays, tries=attempts + 1)
    free = lambda e: isinstance(e, _HandleRefused)  # noqa: E731
    errors = (_HandleRefused, ProviderError)
    await reconnect(attempt, retry, errors, fatal=_unfixable, free=free, stopped=closed, at_once=at_once)
    return current, retry.reason


class _HandleRefused(Exception):
    """The server refused the resumption handle (a free retry: the next try goes without it)."""


def _unfixable(e: BaseException) -> bool:
    if isinstance(e, SetupRefused):
        return e.code in FATAL_CLOSE
    return isinstance(e, ProviderError) and e.status in FATAL_STATUS
