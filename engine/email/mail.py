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
    """One attempt failed (for the whole message, or in ``Refused`` for one recipient); ``permanent`` says whether
    trying again can help; ``maybe_sent`` that the server may have taken the message anyway (the connection was lost
    or timed out after the message was sent, before its answer), so a retry is marked ``resent``."""

    def __init__(self, reason: str, *, permanent: bool, maybe_sent: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.permanent = permanent
        self.maybe_sent = maybe_sent


#: What a transport's ``send`` returns: the recipients the server did not take, each with why (None: all took it).
Refused = dict[str, DeliveryError]


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
    #: The recipients this attempt goes to when not all of ``to`` and ``bcc`` (a retry after some took it).
    envelope: tuple[str, ...] | None = None

    @property
    def recipients(self) -> tuple[str, ...]:
        """The addresses this attempt goes to (``envelope``, else every ``to`` and ``bcc``)."""
        return self.envelope if self.envelope is not None else (*self.to, *self.bcc)


DeliveryStatus = Literal["pending", "sent", "failed"]


@dataclass(frozen=True, slots=True)
class Delivery:
    """Where one recipient of a message stands: ``role`` to or bcc, and the server's answer when it refused."""

    address: str
    role: Literal["to", "bcc"]
    status: DeliveryStatus = "pending"
    reason: str | None = None


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
    #: One per recipient, in the order of ``to`` then ``bcc``.
    deliveries: tuple[Delivery, ...] = ()
    #: Since when the message has been due (stored, released, or retried by the operator): its age counts from here.
    due_since: float = 0.0


class Transport(Protocol):
    """Sends one message to ``email.recipients``: returns the recipients refused (None or empty: all took it), or
    raises ``DeliveryError`` when the attempt failed for all of them (SMTP, Resend)."""

    name: str

    async def send(self, email: Email) -> Refused | None: ...

    async def aclose(self) -> None: ...


#: Told of every change of a row's status: (row, previous status).
Notify = Callable[[Row, str], None]
#: Renders a message stored with its call's record (the worker calls it before the first attempt).
Prepare = Callable[[Email], Email]


def new_message_id(sender: str) -> str:
    """A globally unique ``Message-ID`` in the sender's domain (RFC 5322 ``<left@right>``)."""
    domain = sender.rpartition("@")[2] or "ava-engine.invalid"
    return f"<{uuid.uuid4().hex}@{domain}>"
