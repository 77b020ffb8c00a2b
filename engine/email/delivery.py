"""The outbox's transports: SMTP (aiosmtplib) and Resend's HTTP API (aiohttp).

Why here and this way: the outbox decides when to try again, a transport only says how one attempt went, as a
``DeliveryError`` that is ``permanent`` or not, for the whole message or per recipient. SMTP: a 4xx reply, a timeout,
a refused or dropped connection and a TLS failure are temporary; a 5xx reply (a rejected recipient, a refused AUTH)
is permanent. The SMTP transaction is driven command by command (MAIL, one RCPT per recipient, DATA) so that
every recipient gets the server's own answer, and so that a connection lost after the message was sent is told
from one lost before (the former is ``maybe_sent``: its retry is marked ``resent``). Domains go out as IDNA
A-labels; an address with a non-ASCII local part goes only to a server offering SMTPUTF8, else the message fails
permanently, saying so. Resend: HTTP 429, 409
(the same idempotency key still in flight) and 5xx are temporary, the other 4xx permanent; the request carries the
message's ``Message-ID`` as ``Idempotency-Key``, so a retry after a lost answer is not sent twice.

The SMTP connection is kept for a burst of messages and closed by ``aclose`` when the outbox runs dry (one TLS
handshake and AUTH per burst, not per message). BCC recipients are in the envelope only, never in a header.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
from email import policy
from email.message import EmailMessage
from email.utils import formatdate
from pathlib import Path
from typing import Any

import aiohttp
import aiosmtplib

from engine.config.models.tools import EmailConfig
from engine.email.mail import Refused
from engine.email.outbox import DeliveryError, Email, Transport
from engine.email.recipients import needs_smtputf8, wire_address

log = logging.getLogger(__name__)


class _Stale(Exception):
    """A kept connection the server had closed: nothing was sent on it, so one fresh try is safe."""


def _wire(address: str) -> str:
    try:
        return wire_address(address)
    except ValueError:
        return address


def mime_message(email: Email) -> EmailMessage:
    """The message as sent over SMTP: text and HTML alternatives, the stable Message-ID, no Bcc header, domains as
    their A-labels."""
    msg = EmailMessage()
    msg["From"] = _wire(email.sender)
    msg["To"] = ", ".join(_wire(a) for a in email.to)
    msg["Subject"] = email.subject
    msg["Date"] = formatdate(localtime=False, usegmt=True)
    msg["Message-ID"] = email.message_id
    msg["Auto-Submitted"] = "auto-generated"  # RFC 3834: vacation responders do not answer it
    msg.set_content(email.text)
    msg.add_alternative(email.html, subtype="html")
    return msg


class SmtpTransport:
    name = "smtp"

    def __init__(self, cfg: EmailConfig, base_dir: Path | None = None) -> None:
        self.cfg = cfg
        self._tls: ssl.SSLContext | None = None
        if cfg.use_tls or cfg.starttls:
            ca = cfg.tls_ca_file
            if ca is not None and base_dir is not None:
                ca = str((base_dir / ca).resolve())
            self._tls = ssl.create_default_context(cafile=ca)
        self._client: aiosmtplib.SMTP | None = None

    def _new_client(self) -> aiosmtplib.SMTP:
        cfg = self.cfg
        return aiosmtplib.SMTP(
            hostname=cfg.smtp_host,
            port=cfg.smtp_port,
            username=cfg.username,
            password=cfg.password.get_secret_value() if cfg.password is not None else None,
            timeout=cfg.timeout_s,
            use_tls=cfg.use_tls,
            start_tls=cfg.starttls,
            tls_context=self._tls,
        )

    async def _connect(self) -> aiosmtplib.SMTP:
        await self.aclose()
        self._client = self._new_client()
        await self._client.connect()
        return self._client

    async def send(self, email: Email) -> Refused | None:
        try:
            client = self._client
            if client is None or not client.is_connected:
                client = await self._connect()
            try:
                refused = await self._transaction(client, email)
            except _Stale:
                refused = await self._transaction(await self._connect(), email)
        except DeliveryError:
            await self.aclose()
            raise
        except aiosmtplib.SMTPResponseException as e:
            await self.aclose()
            raise DeliveryError(f"{e.code} {e.message}", permanent=e.code >= 500) from None
        except _Stale as e:  # again on a fresh connection
            await self.aclose()
            raise DeliveryError(str(e), permanent=False) from None
        except (aiosmtplib.SMTPException, OSError, TimeoutError, ssl.SSLError) as e:
            await self.aclose()
            raise DeliveryError(f"{type(e).__name__}: {e}", permanent=False) from None
        if any(e.maybe_sent for e in refused.values()):
            await self.aclose()
        if refused:
            log.info("e-mail %s: %d recipient(s) not taken", email.message_id, len(refused))
        return refused or None

    async def _transaction(self, client: aiosmtplib.SMTP, email: Email) -> Refused:
        """MAIL, RCPT per recipient, DATA: the recipients the server did not take, with its answers."""
        utf8 = [a for a in (email.sender, *email.to, *email.bcc) if needs_smtputf8(a)]
        if utf8 and not client.supports_extension("smtputf8"):
            raise DeliveryError(
                f"the mail server does not offer SMTPUTF8, which {', '.join(utf8)} needs (non-ASCII characters"
                " before the @); no ASCII form of such an address exists",
                permanent=True,
            )
        data = mime_message(email).as_bytes(policy=policy.SMTPUTF8 if utf8 else policy.SMTP)
        options = ["SMTPUTF8"] if utf8 else []
        if not data.isascii() and client.supports_extension("8bitmime"):
            options.append("BODY=8BITMIME")
        encoding = "utf-8" if utf8 else "ascii"
        refused: Refused = {}
        wire: dict[str, str] = {}
        for a in email.recipients:
            try:
                wire[a] = wire_address(a)
            except ValueError as e:
                refused[a] = DeliveryError(str(e), permanent=True)
        if not wire:
            return refused
        try:
            await client.mail(_wire(email.sender), options=options, encoding=encoding)
        except aiosmtplib.SMTPServerDisconnected as e:
            raise _Stale(f"SMTPServerDisconnected: {e}") from None
        accepted = []
        for a, address in wire.items():
            try:
                await client.rcpt(address, encoding=encoding)
                accepted.append(a)
            except aiosmtplib.SMTPRecipientRefused as e:
                refused[a] = DeliveryError(f"{e.code} {e.message}", permanent=e.code >= 500)
        if not accepted:  # every refusal stands as answered, even if the server hangs up on the RSET
            try:
                await client.rset()
            except aiosmtplib.SMTPException:
                client.close()
            return refused
        try:
            await client.data(data)
        except aiosmtplib.SMTPResponseException as e:  # DATA refused: every recipient taken at RCPT alike
            refused.update({a: DeliveryError(f"{e.code} {e.message}", permanent=e.code >= 500) for a in accepted})
        except (aiosmtplib.SMTPServerDisconnected, aiosmtplib.SMTPTimeoutError) as e:
            why = f"{type(e).__name__}: {e} (after the message was sent: the server may have it)"
            refused.update({a: DeliveryError(why, permanent=False, maybe_sent=True) for a in accepted})
        return refused

    async def aclose(self) -> None:
        client, self._client = self._client, None
        if client is not None and client.is_connected:
            try:
                async with asyncio.timeout(2.0):  # not wait_for: on 3.11 it can swallow a cancellation
                    await client.quit()
            except (aiosmtplib.SMTPException, OSError, TimeoutError):
                client.close()


class ResendTransport:
    """``POST {resend_url}/emails`` with a Bearer key (https://resend.com/docs/api-reference/emails/send-email)."""

    name = "resend"

    def __init__(self, cfg: EmailConfig) -> None:
        if cfg.resend_api_key is None:
            raise ValueError("tools.email.resend_api_key is not set")
        self.cfg = cfg
        self._http: aiohttp.ClientSession | None = None

    def payload(self, email: Email) -> dict[str, Any]:
        body: dict[str, Any] = {
            "from": _wire(email.sender),
            "to": [_wire(a) for a in email.to],
            "subject": email.subject,
            "html": email.html,
            "text": email.text,
        }
        if email.bcc:
            body["bcc"] = [_wire(a) for a in email.bcc]
        return body

    async def send(self, email: Email) -> Refused | None:
        assert self.cfg.resend_api_key is not None
        if self._http is None or self._http.closed:
            self._http = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=self.cfg.timeout_s))
        headers = {
            "Authorization": f"Bearer {self.cfg.resend_api_key.get_secret_value()}",
            "Idempotency-Key": email.message_id.strip("<>")[:256],
        }
        url = self.cfg.resend_url.rstrip("/") + "/emails"
        try:
            async with self._http.post(url, json=self.payload(email), headers=headers) as resp:
                if resp.status < 300:
                    return None
                text = (await resp.text())[:500]
                status = resp.status
        except (aiohttp.ClientError, OSError, TimeoutError) as e:
            raise DeliveryError(f"{type(e).__name__}: {e}", permanent=False) from None
        temporary = status in (408, 409, 429) or status >= 500
        raise DeliveryError(f"HTTP {status}: {text}", permanent=not temporary)

    async def aclose(self) -> None:
        http, self._http = self._http, None
        if http is not None:
            await http.close()


def make_transport(cfg: EmailConfig, base_dir: Path | None = None) -> Transport:
    """The transport ``tools.email.transport`` names."""
    return ResendTransport(cfg) if cfg.transport == "resend" else SmtpTransport(cfg, base_dir)
