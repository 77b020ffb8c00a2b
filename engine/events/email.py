"""The e-mail events (``email.queued|sent|failed`` and each recipient's outcome), re-exported by ``engine.events``.

Why apart: ``engine.events`` had grown past 400 lines; these belong to one feature (the outbox, engine.email), and the
bus, the recorder and the console reach them through ``engine.events`` like every other event.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from engine.events.catalog import Event


@dataclass(frozen=True, slots=True, kw_only=True)
class EmailQueued(Event):
    """An e-mail is in the durable outbox (``kind``: summary, transcript, test). No address: they stay in the outbox."""

    type: ClassVar[str] = "email.queued"
    message_id: str
    kind: str
    call_id: str | None = None
    held: bool = False


@dataclass(frozen=True, slots=True)
class EmailRecipient:
    """One recipient's outcome in ``email.sent``/``email.failed``: ``role`` to or bcc, ``status`` sent, failed or
    pending (to be retried), ``reason`` the server's answer with addresses masked."""

    role: str
    status: str
    reason: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class EmailSent(Event):
    """Every addressee (``to``) got the e-mail (``resent``: it may have gone before, after a crash, a cut send or a
    lost answer; same Message-ID). ``recipients``: each one's outcome (a refused BCC shows here)."""

    type: ClassVar[str] = "email.sent"
    message_id: str
    kind: str
    call_id: str | None = None
    attempts: int = 1
    resent: bool = False
    recipients: tuple[EmailRecipient, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class EmailFailed(Event):
    """An attempt failed: ``final`` when the outbox gave up (a permanent refusal of an addressee, or the maximum
    age); else ``next_attempt_at`` (epoch seconds) says when it tries again. ``recipients``: each one's outcome."""

    type: ClassVar[str] = "email.failed"
    message_id: str
    kind: str
    reason: str
    call_id: str | None = None
    attempts: int = 1
    final: bool = False
    recipients: tuple[EmailRecipient, ...] = ()
    next_attempt_at: float | None = None
