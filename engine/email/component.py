"""The e-mail component: the outbox's worker in the engine's task group, and the desk the e-mail tools (and the
elicitation desk's links, ``queue_link``) use.

Why one object: the tools (``request_transcript``, ``send_email_summary``), the call-end hook (the automatic
summary) and ``ava-engine email test`` all turn something into a stored message the same way — render it, give it
a Message-ID, put it in the outbox — and the worker that sends them must follow config reloads. The engine hands
this component narrow things only: its ``Services`` (a settings getter, the bus, metrics, ``spawn``) and its config
folder.

A caller's transcript is stored ``held`` the moment the caller confirms the address (durable from then on) and
released with the whole conversation when the call ends. The summary is rendered and stored in the call-end hook
itself: a few hundred microseconds of local work (``bench/outbox.py`` measures it), after which it survives a
crash of the engine.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import replace
from pathlib import Path

import platformdirs

from engine.bounds.json_text import valid_text
from engine.config.models import Settings
from engine.config.models.tools import EmailConfig
from engine.core.backoff import Backoff
from engine.email.messages import CallRecord, Kind, Templates, record_from_json, record_to_json, render_message
from engine.email.outbox import Email, Outbox, Row, Transport, mask_addresses, new_message_id
from engine.email.recipients import public
from engine.events import EmailFailed, EmailQueued, EmailRecipient, EmailSent
from engine.services import Component, Services
from engine.sessions.session import CallSession

log = logging.getLogger(__name__)

OUTBOX_FILE = "outbox.sqlite3"
#: At most this long (and never beyond one attempt's timeout) ``stop`` waits for messages that are due.
DRAIN_S = 5.0


class EmailNotReady(RuntimeError):
    """E-mail is off or not configured well enough to send (the message says which key)."""


def outbox_path(cfg: EmailConfig, base_dir: Path) -> Path:
    """``tools.email.outbox`` (relative to the config folder), else the user data folder's ``outbox.sqlite3``."""
    if cfg.outbox:
        return (base_dir / Path(cfg.outbox).expanduser()).resolve()
    return Path(platformdirs.user_data_dir("ava-console")) / OUTBOX_FILE


class EmailService(Component):
    """``name``/``start``/``stop``/``reload``: an ``EngineComponent``; the rest is what tools and hooks call."""

    name = "email"

    def __init__(self, services: Services, base_dir: Path) -> None:
        super().__init__(services)
        self.base_dir = base_dir
        self._outbox: Outbox | None = None
        self._transport: Transport | None = None
        self._templates: Templates | None = None
        self._worker: asyncio.Task[None] | None = None
        #: Held transcript messages per live call: released (with the whole conversation) when it ends.
        self._held: dict[str, list[str]] = {}
        #: Addresses read back to a caller per live call: ``confirmed`` is honoured only for one of these.
        self.read_back: dict[str, set[str]] = {}
        #: Stopping gives messages that are due at most this long (and never beyond one attempt's timeout).
        self.drain_s = DRAIN_S

    @property
    def cfg(self) -> EmailConfig:
        return self._settings().tools.email

    # ------------------------------------------------------------------------------------------------ lifecycle

    @property
    def outbox(self) -> Outbox:
        if self._outbox is None:
            cfg = self.cfg
            self._outbox = Outbox(
                outbox_path(cfg, self.base_dir),
                backoff=Backoff(cfg.retry_first_s, cfg.retry_max_s),
                max_attempts=cfg.max_attempts,
                max_age_s=cfg.max_age_s,
                notify=self._changed,
                prepare=self._prepare,
            )
            self._outbox.open()
        return self._outbox

    def _current_transport(self) -> Transport:
        if self._transport is None:
            from engine.email.delivery import make_transport  # aiosmtplib loads when mail is first sent

            self._transport = make_transport(self.cfg, self.base_dir)
        return self._transport

    async def start(self) -> None:
        if self.cfg.enabled:
            import engine.email.domain
            import engine.email.spoken  # noqa: F401 - loaded now rather than in a caller's first request

            self._start_worker()

    def _start_worker(self) -> None:
        if self._worker is None or self._worker.done():
            self._worker = self._spawn(self.outbox.run(self._current_transport), name="email-outbox")

    async def _stop_worker(self) -> None:
        worker, self._worker = self._worker, None
        while worker is not None and not worker.done():  # again if a library swallowed the cancellation
            worker.cancel()
            await asyncio.wait({worker}, timeout=1.0)
        transport, self._transport = self._transport, None
        if transport is not None:
            await transport.aclose()

    async def stop(self) -> None:
        await self._drain()
        await self._finish()
        await self._stop_worker()
        if self._outbox is not None:
            self._outbox.close()
            self._outbox = None

    async def _drain(self) -> None:
        """Stopping: give messages that are due now (a call's summary just stored) a few seconds to go out;
        whatever is left stays in the outbox for the next start."""
        if self._worker is None or self._worker.done() or self._outbox is None:
            return
        if not self._outbox.due():
            return
        try:
            async with asyncio.timeout(min(self.drain_s, self.cfg.timeout_s)):
                await self._outbox.idle.wait()
        except TimeoutError:
            log.info("e-mail: %d message(s) left in the outbox for the next start", self._outbox.due())

    async def _finish(self) -> None:
        """Stopping: a message being sent is not cut (the server may be taking it: cut, it would go again at the next
        start); the worker returns once it has the server's answer, which the attempt's own timeouts bound. Only a
        worker still busy after that is cancelled, and its message is marked possibly sent (``resent``)."""
        worker, box = self._worker, self._outbox
        if worker is None or worker.done() or box is None:
            return
        if box.in_flight is not None:
            log.info("e-mail: waiting for the server's answer to %s before stopping", box.in_flight.email.message_id)
        box.finish()
        await asyncio.wait({worker}, timeout=self.cfg.timeout_s * 3 + 2)  # connect/MAIL/RCPT/DATA each get timeout_s

    async def reload(self, old: Settings, new: Settings) -> None:
        before, after = old.tools.email, new.tools.email
        if before == after:
            return
        self._templates = None
        await self._finish()
        await self._stop_worker()
        if self._outbox is not None and outbox_path(before, self.base_dir) != outbox_path(after, self.base_dir):
            self._outbox.close()
            self._outbox = None
        if self._outbox is not None:
            self._outbox.backoff = Backoff(after.retry_first_s, after.retry_max_s)
            self._outbox.max_attempts = after.max_attempts
            self._outbox.max_age_s = after.max_age_s
            self._outbox.stopping = False
        if after.enabled:
            self._start_worker()

    # ------------------------------------------------------------------------------------------------ messages

    def ready(self) -> None:
        """Raise ``EmailNotReady`` unless messages can be queued."""
        if not self.cfg.enabled:
            raise EmailNotReady("e-mail is off (tools.email.enabled is false)")

    @property
    def templates(self) -> Templates:
        if self._templates is None:
            folder = self.cfg.templates
            self._templates = Templates((self.base_dir / folder).resolve() if folder else None)
        return self._templates

    @property
    def _subjects(self) -> dict[str, str]:
        cfg = self.cfg
        return {"summary": cfg.summary_subject, "transcript": cfg.transcript_subject, "link": cfg.link_subject}

    def _email(
        self,
        kind: Kind,
        record: CallRecord | None,
        to: tuple[str, ...],
        bcc: tuple[str, ...],
        extra: dict[str, str] | None = None,
    ) -> Email:
        cfg = self.cfg
        assert cfg.from_address is not None  # the config refuses enabled without it
        r = render_message(kind, record, self.templates, self._subjects, time.time(), extra)
        mid = new_message_id(cfg.from_address)
        call_id = record.call_id if record is not None else None
        return Email(mid, kind, cfg.from_address, to, bcc, r.subject, r.text, r.html, call_id)

    def hold_transcript(self, session: CallSession | None, address: str) -> str:
        """The caller's transcript to ``address`` (admin in BCC when configured): stored now, sent when the call
        ends (at once when the call is over). Returns the Message-ID."""
        self.ready()
        if session is None:
            raise EmailNotReady("there is no call here to send a transcript of")
        admin = self.cfg.admin_address
        bcc = (admin,) if admin and admin != address else ()
        email = self._email("transcript", CallRecord.of(session), (address,), bcc)
        if not session.active:
            return self.outbox.enqueue(email).email.message_id
        self.outbox.hold(email)
        self._held.setdefault(session.call_id, []).append(email.message_id)
        return email.message_id

    def queue_summary(self, session: CallSession | None) -> str:
        """The admin's summary of a call (as far as it went) into the outbox; returns the Message-ID."""
        self.ready()
        admin = self.cfg.admin_address
        if admin is None:
            raise EmailNotReady("there is no tools.email.admin_address to send the summary to")
        record = CallRecord.of(session) if session is not None else None
        if record is None:
            raise EmailNotReady("a summary needs a call")
        return self.outbox.enqueue(self._email("summary", record, (admin,), ())).email.message_id

    def queue_link(self, session: CallSession | None, address: str, message: str, url: str) -> str:
        """A link a tool asked the caller to open (URL-mode elicitation), with the server's message, to ``address``:
        into the outbox now, sent at once (not held to the end of the call). Returns the Message-ID."""
        self.ready()
        record = CallRecord.of(session) if session is not None else None
        email = self._email("link", record, (address,), (), {"message": message, "url": url})
        return self.outbox.enqueue(email).email.message_id

    def queue_test(self, address: str) -> str:
        self.ready()
        return self.outbox.enqueue(self._email("test", None, (address,), ())).email.message_id

    def call_ended(self, session: CallSession) -> None:
        """The call-end hook: release the call's held transcripts, store the summary when ``summary`` is on.

        Only the call's record (JSON) is stored here, in one SQLite commit: the worker renders the messages just
        before sending them, so the end of a call pays tens of microseconds, not the templates."""
        self.read_back.pop(session.call_id, None)
        held = self._held.pop(session.call_id, [])
        cfg = self.cfg
        summary = self.summary_for(session.context)
        if not cfg.enabled or (not held and not summary):
            return
        # the call's words came from outside (a caller, a model): one lone surrogate in them must not cost the
        # record its place in the outbox (SQLite refuses text that is not valid UTF-8)
        record = valid_text(record_to_json(CallRecord.of(session)))
        for mid in held:
            self.outbox.release(mid, record)
        if summary and cfg.admin_address is not None and cfg.from_address is not None:
            sender = cfg.from_address
            mid = new_message_id(sender)
            message = Email(mid, "summary", sender, (cfg.admin_address,), (), "", "", "", session.call_id, record)
            self.outbox.enqueue(message)

    def summary_for(self, context: str) -> bool:
        """Whether a call of ``context`` ends with a summary: the context's ``email_summary`` when it says,
        else ``tools.email.summary``."""
        ctx = self._settings().contexts.get(context)
        if ctx is not None and ctx.email_summary is not None:
            return ctx.email_summary
        return self.cfg.summary

    def _prepare(self, email: Email) -> Email:
        """Render a message stored with its call's record (the outbox's worker calls this before sending)."""
        assert email.record is not None
        kind: Kind = "transcript" if email.kind == "transcript" else "summary"
        r = render_message(kind, record_from_json(email.record), self.templates, self._subjects, time.time())
        return replace(email, subject=r.subject, text=r.text, html=r.html)

    # ------------------------------------------------------------------------------------------------ surfaces

    def _changed(self, row: Row, before: str) -> None:
        e = row.email
        if before == "":
            self.bus.publish(
                EmailQueued(message_id=e.message_id, kind=e.kind, call_id=e.call_id, held=row.status == "held")
            )
            self.metrics.email_total.labels(e.kind, "queued").inc()
            log.debug("e-mail %s (%s) queued for %s", e.message_id, e.kind, ", ".join(e.to + e.bcc))
        elif row.status == "sent":
            self.bus.publish(
                EmailSent(
                    message_id=e.message_id,
                    kind=e.kind,
                    call_id=e.call_id,
                    attempts=row.attempts,
                    resent=row.resent,
                    recipients=_recipients(row),
                )
            )
            self.metrics.email_total.labels(e.kind, "sent").inc()
            log.info("e-mail %s (%s) sent after %d attempt(s)", e.message_id, e.kind, row.attempts)
        elif row.status in ("failed", "pending") and before == "sending":
            final = row.status == "failed"
            reason = mask_addresses(row.last_error or "")
            self.bus.publish(
                EmailFailed(
                    message_id=e.message_id,
                    kind=e.kind,
                    call_id=e.call_id,
                    reason=reason,
                    attempts=row.attempts,
                    final=final,
                    recipients=_recipients(row),
                    next_attempt_at=None if final else row.next_at,
                )
            )
            self.metrics.email_total.labels(e.kind, "failed" if final else "retry").inc()


def _recipients(row: Row) -> tuple[EmailRecipient, ...]:
    return tuple(EmailRecipient(role, status, reason) for role, status, reason in public(row.deliveries))
