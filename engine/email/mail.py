"""What the outbox stores and the transports send: a message (``Email``), its stored row, the ``Transport``
protocol and its ``DeliveryError``, and the Message-ID every message gets when it is stored.

Kept apart from ``engine.email.outbox`` (storage and the worker) so transports and the e-mail component import the
types without the queue.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, Protocol

Status = Literal["held", "pending", "sending", "sent", "failed"]
STATUSES: tuple[Status, ...] = ("held", "pending", "sending", "sent", "failed")

_ADDRESS = re.compile(r"[^\s<>@,;:\"']+@[^\s<>@,;:\"']+")


def mask_addresses(text: str) -> str:
    """A server's reason with every e-mail address replaced (for events and logs above debug)."""
    return _ADDRESS.sub("<address>", text)


class DeliveryError(Exception):
    """One attempt failed; ``permanent`` says whether trying again can help."""

    def __init__(self, reason: str, *, permanent: bool) -> None:
        super().__init__(reason)
        self.reason = reason
        self.permanent = permanent


@dataclass(frozen=True, slots=True)
class Email:
    """One message as the outbox keeps and the transports send it."""

    message_id: str
    kind: str
    sender: str
    to: tuple[str, ...]
    bcc: tuple[str, ...]
    subject: str
    text: str
    html: str
    call_id: str | None = None
    #: The call as JSON (``engine.email.messages.record_to_json``) when the message is rendered by the worker
    #: just before its first attempt (subject, text and html are empty until then).
    record: str | None = None


@dataclass(frozen=True, slots=True)
class Row:
    """A stored message and where it stands."""

    id: int
    email: Email
    status: Status
    attempts: int
    resent: bool
    next_at: float
    created_at: float
    updated_at: float
    last_error: str | None


class Transport(Protocol):
    """Sends one message or raises ``DeliveryError`` (SMTP, Resend)."""

    name: str

    async def send(self, email: Email) -> None: ...

    async def aclose(self) -> None: ...


#: Told of every change of a row's status: (row, previous status).
Notify = Callable[[Row, str], None]
#: Renders a message stored with its call's record (the worker calls it before the first attempt).
Prepare = Callable[[Email], Email]


def new_message_id(sender: str) -> str:
    """A globally unique ``Message-ID`` in the sender's domain (RFC 5322 ``<left@right>``)."""
    domain = sender.rpartition("@")[2] or "ava-engine.invalid"
    return f"<{uuid.uuid4().hex}@{domain}>"
