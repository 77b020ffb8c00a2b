"""What follows a delivery attempt: sent, failed, or pending again — and when the next attempt is due.

Why apart: the retry rule (exponential backoff with a cap, until a maximum age, or a maximum number of attempts when
one is set) is the outbox's one policy decision, and it is a pure function of the row, the recipients' outcomes and
the clock: kept out of ``engine.email.outbox``'s SQLite and worker code, and testable alone.
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.core.backoff import Backoff
from engine.email.mail import Delivery, Row, Status
from engine.email.recipients import given_up, verdict


@dataclass(frozen=True, slots=True)
class NextStep:
    """The row's new status and reason, the recipients' outcomes, and (pending only) when to try again."""

    status: Status
    reason: str | None
    deliveries: tuple[Delivery, ...]
    retry_at: float | None = None


def after_attempt(
    row: Row,
    deliveries: tuple[Delivery, ...],
    now: float,
    backoff: Backoff,
    max_age_s: float,
    max_attempts: int | None,
) -> NextStep:
    """A message that still has recipients to reach is tried again after ``backoff``'s delay for its attempt
    count (never past its maximum age); once it is ``max_age_s`` old since it became due (``row.due_since``), or
    after ``max_attempts`` when that is set, the pending recipients are given up and the message ends ``failed``."""
    status, reason = verdict(deliveries)
    if status == "pending":
        why = None
        if now - row.due_since >= max_age_s:
            why = f"gave up after {max_age_s / 3600:g} h"
        elif max_attempts is not None and row.attempts >= max_attempts:
            why = f"gave up after {row.attempts} attempts"
        if why is None:
            retry_at = min(now + backoff.delay_s(row.attempts - 1), row.due_since + max_age_s)
            return NextStep("pending", reason, deliveries, retry_at)
        deliveries = given_up(deliveries, why)
        status, reason = verdict(deliveries)
    return NextStep(status, reason, deliveries)  # type: ignore[arg-type]
