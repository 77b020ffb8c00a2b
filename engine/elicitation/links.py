"""A URL-mode question on a caller's call: the link e-mailed through the outbox (``elicitation.url: email``).

Why it exists: an MCP server may ask the user to open a link (sign in, pay, finish a form); a caller on the phone
cannot. With ``contexts.<name>.elicitation.url: email`` the engine sends the link, with the server's message, as a
``link`` message through the durable outbox — at once, not held to the end of the call — to ``url_to``: a fixed
address, or the caller's own (one they confirmed earlier in this call, else asked by voice, parsed with
``engine.email.spoken`` and read back spelled out: the elicitation desk's own listen-and-confirm loop). The caller
then hears where it went and the server gets *accept* (the user agreed to open it; URL mode carries no content).
Only http(s) links are sent; anything else, e-mail being off, or the outbox refusing, declines with a spoken reason.

The desk gets the e-mail side through ``LinkMail`` only (``engine.email.component.EmailService`` is one), handed to
it where the engine builds it. A link may carry a token: ``masked_url`` is what events show of a link that is not
for the operator's eyes.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any, Protocol
from urllib.parse import urlsplit

from engine.config.models.contexts import ElicitationConfig
from engine.elicitation import answers
from engine.elicitation.schema import FormField
from engine.email.mail import mask_addresses

log = logging.getLogger(__name__)

#: What the caller is asked when the link goes to them and no address of theirs is confirmed yet.
ASK_ADDRESS = "What e-mail address should I send the link to?"
#: The field the caller's address is asked as (the desk's listen/confirm loop; spelled back on confirmation).
ADDRESS_FIELD = FormField("email", "string", "E-mail address", required=True, format="email")
NOT_A_WEB_LINK = "That isn't a web link I can send, so I'll skip it."
NO_EMAIL = "I can't send links by e-mail right now, so I'll skip that."
MASK = "••••••"


class Declined(Exception):
    """The question is declined: ``by`` whom (caller, policy, timeout, engine) and why (``reason``, for events)."""

    def __init__(self, by: str, reason: str) -> None:
        super().__init__(reason)
        self.by, self.reason = by, reason


class LinkMail(Protocol):
    """What the elicitation desk needs of the e-mail component to send a link."""

    def ready(self) -> None:
        """Raise (a ``RuntimeError``, saying which key) unless messages can be queued."""
        ...

    def queue_link(self, session: Any, address: str, message: str, url: str) -> str:
        """The link and the server's message to ``address`` through the outbox, sent at once; the Message-ID."""
        ...


def link_refusal(url: str) -> str | None:
    """Why ``url`` is not sent (not an absolute http(s) link with a host), or None when it may be. The reason names
    the scheme only: the rest of a link may carry a token."""
    if any(ord(c) < 0x21 or ord(c) == 0x7F for c in url):
        return "the link contains spaces or control characters"
    try:
        parts = urlsplit(url)
        host = parts.hostname
    except ValueError:
        return "the link is not a valid URL"
    if parts.scheme.lower() not in ("http", "https"):
        scheme = f"{parts.scheme[:20]!r}" if parts.scheme else "none"
        return f"only http(s) links are sent by e-mail (scheme {scheme})"
    if not host:
        return "the link has no host"
    return None


def masked_url(url: str) -> str:
    """``url`` with everything after its host masked (``https://example.test/••••••``): what an event shows of a
    link only the caller's mailbox needs, since its path or query may be a sign-in token."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = f":{parts.port}" if parts.port is not None else ""
    except ValueError:
        return MASK
    if not parts.scheme or not host:
        return MASK
    rest = url.split(parts.netloc, 1)[1] if parts.netloc else ""
    return f"{parts.scheme}://{host}{port}/{MASK if rest.strip('/') else ''}"


class LinkSender:
    """Sends one call's links: remembers the address a caller confirmed (for a second link in the same call)."""

    def __init__(self, mail: LinkMail | None) -> None:
        self.mail = mail
        #: The address each live call's caller confirmed for a link.
        self.confirmed: dict[str, str] = {}

    def call_ended(self, call_id: str) -> None:
        self.confirmed.pop(call_id, None)

    async def send(
        self,
        cfg: ElicitationConfig,
        session: Any,
        message: str,
        url: str,
        say: Callable[[str], Awaitable[bool]],
        ask_address: Callable[[str], Awaitable[str]],
    ) -> None:
        """E-mail ``url`` for the caller of ``session`` and tell them where it went; ``Declined`` (said first)
        otherwise. ``ask_address`` asks, reads back and confirms (raising ``Declined`` after ``attempts``)."""
        refusal = link_refusal(url)
        if refusal is not None:
            await say(f"{message} {NOT_A_WEB_LINK}")
            raise Declined("policy", refusal)
        mail = self.mail
        try:
            if mail is None:
                raise RuntimeError("this engine has no e-mail component")
            mail.ready()
        except RuntimeError as e:
            await say(f"{message} {NO_EMAIL}")
            raise Declined("engine", f"the link cannot be e-mailed: {e}") from None
        call_id = session.call_id
        address = cfg.url_to if cfg.url_to != "caller" else self._known(session)
        lead = f"{message} "
        if address is None:
            await say(message)
            address = await ask_address(ASK_ADDRESS)
            lead = ""
        try:
            mail.queue_link(session, address, message, url)
        except Exception as e:  # a full disk or a broken outbox file declines the question, never ends the call
            log.warning("the link for call %s could not be queued: %s", call_id, type(e).__name__)
            await say(f"{lead}I couldn't send the link by e-mail, so I'll skip that.")
            raise Declined("engine", f"the link could not be queued: {mask_addresses(str(e))}") from None
        if cfg.url_to == "caller":
            self.confirmed[call_id] = address
        await say(f"{lead}I've sent the link to {answers.spelled_address(address)}.")

    def _known(self, session: Any) -> str | None:
        """An address this caller confirmed in this call: for an earlier link, else for their transcript."""
        known = self.confirmed.get(session.call_id)
        if known is not None:
            return known
        recipients = list(getattr(session, "transcript_recipients", ()) or ())
        return str(recipients[-1]) if recipients else None
