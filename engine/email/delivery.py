"""The outbox's transports: SMTP (aiosmtplib) and Resend's HTTP API (aiohttp).

Why here and this way: the outbox decides when to try again, a transport only says how one attempt went, as a
``DeliveryError`` that is ``permanent`` or not. SMTP: a 4xx reply, a timeout, a refused or dropped connection and a
TLS failure are temporary; a 5xx reply (a rejected recipient, a refused AUTH) is permanent. Resend: HTTP 429, 409
(the same idempotency key still in flight) and 5xx are temporary, the other 4xx permanent; the request carries the
message's ``Message-ID`` as ``Idempotency-Key``, so a retry after a lost answer is not sent twice.

The SMTP connection is kept for a burst of messages and closed by ``aclose`` when the outbox runs dry (one TLS
handshake and AUTH per burst, not per message). BCC recipients are in the envelope only, never in a header.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
from email.message import EmailMessage
from email.utils import formatdate
from pathlib import Path
from typing import Any

import aiohttp
import aiosmtplib

from engine.config.models.tools import EmailConfig
from engine.email.outbox import DeliveryError, Email, Transport

log = logging.getLogger(__name__)


def mime_message(email: Email) -> EmailMessage:
    """The message as sent over SMTP: text and HTML alternatives, the stable Message-ID, no Bcc header."""
    msg = EmailMessage()
    msg["From"] = email.sender
    msg["To"] = ", ".join(email.to)
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

    async def send(self, email: Email) -> None:
        try:
            if self._client is None or not self._client.is_connected:
                self._client = self._new_client()
                await self._client.connect()
            try:
                errors, _ = await self._client.send_message(
                    mime_message(email), sender=email.sender, recipients=[*email.to, *email.bcc]
                )
            except aiosmtplib.SMTPServerDisconnected:  # a kept connection the server closed: once more, fresh
                await self.aclose()
                self._client = self._new_client()
                await self._client.connect()
                errors, _ = await self._client.send_message(
                    mime_message(email), sender=email.sender, recipients=[*email.to, *email.bcc]
                )
        except aiosmtplib.SMTPRecipientsRefused as e:
            await self.aclose()
            codes = [r.code for r in e.recipients]
            reasons = "; ".join(f"{r.code} {r.message}" for r in e.recipients)
            raise DeliveryError(f"recipients refused: {reasons}", permanent=all(c >= 500 for c in codes)) from None
        except aiosmtplib.SMTPResponseException as e:
            await self.aclose()
            raise DeliveryError(f"{e.code} {e.message}", permanent=e.code >= 500) from None
        except (aiosmtplib.SMTPException, OSError, TimeoutError, ssl.SSLError) as e:
            await self.aclose()
            raise DeliveryError(f"{type(e).__name__}: {e}", permanent=False) from None
        if errors:  # some recipients were refused, others took it: not sent again (that would duplicate it)
            log.info("e-mail %s: %d recipient(s) refused", email.message_id, len(errors))

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
            "from": email.sender,
            "to": list(email.to),
            "subject": email.subject,
            "html": email.html,
            "text": email.text,
        }
        if email.bcc:
            body["bcc"] = list(email.bcc)
        return body

    async def send(self, email: Email) -> None:
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
                    return
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
