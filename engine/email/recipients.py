"""One message, several recipients: each recipient's outcome, and each address as it goes on the wire.

Why apart: a server answers RCPT per address, so "the message was sent" is not one fact. The caller may be refused
while the admin's BCC is taken; then the caller's message is ``failed`` with the server's code and text, the BCC's
delivery is recorded as sent, and a retry goes only to the recipients still pending (never again to one that took
it). A message is ``sent`` only when every ``to`` recipient got it.

On the wire a domain is its IDNA A-label (``bücher.example`` → ``xn--bcher-kva.example``, UTS 46 mapping, by the
``idna`` package); a non-ASCII local part can only go to a server offering SMTPUTF8 (RFC 6531). Lengths are RFC 5321's
in octets: 64 for a local part, 254 for the address (its 256-octet path less the angle brackets).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import replace

import idna

from engine.email.mail import Delivery, DeliveryError, Email, Refused, mask_addresses

MAX_LOCAL_OCTETS = 64
MAX_ADDRESS_OCTETS = 254


def ascii_domain(domain: str) -> str:
    """The domain as sent: its IDNA A-label form (ASCII domains unchanged but for case); ``ValueError`` if invalid."""
    if domain.isascii():
        return domain.lower()
    try:
        return idna.encode(domain, uts46=True).decode("ascii")
    except idna.IDNAError as e:
        raise ValueError(f"the domain {domain!r} is not a valid international domain name: {e}") from None


def wire_address(address: str) -> str:
    """``local@domain`` with the domain as its A-label."""
    local, _, domain = address.rpartition("@")
    return f"{local}@{ascii_domain(domain)}"


def needs_smtputf8(address: str) -> bool:
    """Whether the address can only be sent with SMTPUTF8 (a non-ASCII local part: no ASCII form exists)."""
    return not address.rpartition("@")[0].isascii()


def length_problem(address: str) -> str | None:
    """Why RFC 5321 does not allow the address's length (said to a caller), or None."""
    local, _, domain = address.rpartition("@")
    octets = len(local.encode("utf-8"))
    if octets > MAX_LOCAL_OCTETS:
        return (
            f"the name before the 'at' is {octets} characters long, and email allows at most {MAX_LOCAL_OCTETS}"
            if local.isascii()
            else f"the name before the 'at' is {octets} bytes long, and email allows at most {MAX_LOCAL_OCTETS}"
        )
    try:
        total = octets + 1 + len(ascii_domain(domain))
    except ValueError:
        total = octets + 1 + len(domain.encode("utf-8"))
    if total > MAX_ADDRESS_OCTETS:
        return f"the whole address is {total} characters long, and email allows at most {MAX_ADDRESS_OCTETS}"
    return None


def initial(email: Email) -> tuple[Delivery, ...]:
    """Every recipient pending (a message as stored)."""
    return (*(Delivery(a, "to") for a in email.to), *(Delivery(a, "bcc") for a in email.bcc))


def pending(deliveries: Iterable[Delivery]) -> tuple[str, ...]:
    return tuple(d.address for d in deliveries if d.status == "pending")


def applied(
    deliveries: tuple[Delivery, ...], attempted: Iterable[str], refused: Refused | None, error: DeliveryError | None
) -> tuple[Delivery, ...]:
    """The deliveries after one attempt at ``attempted``: the whole attempt failed with ``error``, or the server took
    every attempted recipient but those in ``refused``."""
    tried = set(attempted)
    out = []
    for d in deliveries:
        if d.address not in tried:
            out.append(d)
            continue
        e = error if error is not None else (refused or {}).get(d.address)
        if e is None:
            out.append(replace(d, status="sent", reason=None))
        else:
            out.append(replace(d, status="failed" if e.permanent else "pending", reason=e.reason[:500]))
    return tuple(out)


def given_up(deliveries: tuple[Delivery, ...], why: str) -> tuple[Delivery, ...]:
    """Every recipient still pending ends failed: ``why`` and the last reason."""
    return tuple(
        replace(d, status="failed", reason=f"{why}: {d.reason}" if d.reason else why) if d.status == "pending" else d
        for d in deliveries
    )


def verdict(deliveries: tuple[Delivery, ...]) -> tuple[str, str | None]:
    """The message's status (``pending`` while a recipient is; then ``sent`` only when every ``to`` recipient got
    it, else ``failed``) and its reason: the refusals that matter, the addressee's first."""
    if any(d.status == "pending" for d in deliveries):
        status = "pending"
        reasons = [d for d in deliveries if d.status == "pending"]
    elif all(d.status == "sent" for d in deliveries if d.role == "to"):
        status = "sent"
        reasons = [d for d in deliveries if d.status == "failed"]  # a refused BCC: noted, the message went
    else:
        status = "failed"
        reasons = [d for d in deliveries if d.status == "failed" and d.role == "to"]
    texts = list(dict.fromkeys(d.reason for d in reasons if d.reason))
    return status, "; ".join(texts) if texts else None


def to_json(deliveries: tuple[Delivery, ...]) -> str:
    return json.dumps({d.address: [d.status, d.reason] for d in deliveries}, ensure_ascii=False)


def from_json(email: Email, text: str | None) -> tuple[Delivery, ...]:
    """The stored outcomes laid over ``initial(email)`` (a row stored before per-recipient outcomes: all pending)."""
    stored = json.loads(text) if text else {}
    out = []
    for d in initial(email):
        status, reason = stored.get(d.address, ["pending", None])
        out.append(replace(d, status=status, reason=reason))
    return tuple(out)


def public(deliveries: tuple[Delivery, ...]) -> tuple[tuple[str, str, str | None], ...]:
    """(role, status, reason with addresses masked) per recipient: what events carry."""
    return tuple((d.role, d.status, mask_addresses(d.reason) if d.reason else None) for d in deliveries)
