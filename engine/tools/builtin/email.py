"""The business e-mail tools: ``request_transcript`` (the caller's transcript, after a read-back) and
``send_email_summary`` (the admin's summary, on demand).

Why the two-step confirm: an address heard over the phone is wrong often enough that nothing is sent before the
caller has heard it read back. The first call parses what the caller said (``engine.email.spoken``), checks that
the domain takes mail (``engine.email.domain``; a DNS failure is not "invalid") and returns the read-back for the
agent to say; a call with ``confirmed: true`` for an address read back earlier in the same call queues the message.
The same address twice in one call is refused politely. Delivery is the ``MailDesk``'s business (the e-mail
component and its durable outbox); the tools only see that narrow protocol.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, Protocol

from engine.config.models.tools import EmailConfig
from engine.sessions.session import CallSession
from engine.tools.base import (
    LatencyMeta,
    Tool,
    ToolCategory,
    ToolDefinition,
    ToolExecutionContext,
    ToolParameter,
    ToolResult,
)

log = logging.getLogger(__name__)
#: What the caller hears when the outbox refuses (its reason is for the operator: the log and the tool row).
NO_EMAIL = "Sorry, I can't send emails right now."

#: How long the read-back waits for DNS (a timeout is "unknown", never "invalid"): keeps the tool in a STANDARD view.
DNS_TIMEOUT_MS = 800


class MailDesk(Protocol):
    """What the e-mail tools need from the e-mail component (``engine.email.component.EmailService``)."""

    #: Addresses read back per live call (the confirm step checks it).
    read_back: dict[str, set[str]]

    def ready(self) -> None: ...

    def hold_transcript(self, session: CallSession | None, address: str) -> str: ...

    def queue_summary(self, session: CallSession | None) -> str: ...


class RequestTranscriptTool(Tool):
    definition = ToolDefinition(
        name="request_transcript",
        description=(
            "Email the caller a transcript of this call. First call it with the address exactly as the caller "
            "said it (spelled letters, 'dot', 'at' and all) and confirmed false: it returns how to read the "
            "address back. Read it back; only when the caller says it is right, call again with the same "
            "address and confirmed true. The transcript is sent when the call ends."
        ),
        category=ToolCategory.BUSINESS,
        parameters=(
            ToolParameter(
                "email_address",
                "string",
                "The address as the caller said it, e.g. 'john dot smith at gmail dot com'.",
                required=True,
                max_length=600,
            ),
            ToolParameter(
                "confirmed",
                "boolean",
                "True only after the caller confirmed the read-back.",
                default=False,
            ),
        ),
        latency=LatencyMeta(estimated_duration_ms=50, max_duration_ms=DNS_TIMEOUT_MS + 200, idempotent=False),
    )

    def __init__(self, desk: MailDesk, email: Callable[[], EmailConfig]) -> None:
        self.desk = desk
        self.email = email  # read per call: a reload applies at once

    async def execute(self, args: dict[str, Any], ctx: ToolExecutionContext) -> ToolResult:
        try:
            self.desk.ready()
        except RuntimeError as e:
            return ToolResult("error", f"Sorry, I can't send emails right now ({e}).", spoken=NO_EMAIL)
        from engine.email.domain import check_domain  # dnspython and email-validator load on first use
        from engine.email.spoken import AddressRefusal, parse_spoken_address

        heard = str(args.get("email_address") or "")
        parsed = parse_spoken_address(heard)
        if isinstance(parsed, AddressRefusal):
            understood = f" I understood '{parsed.understood}'." if parsed.understood else ""
            return ToolResult.error(
                f"That is not an email address I can use: {parsed.reason}.{understood} "
                "Please ask the caller to say it again, slowly, letter by letter.",
                {"understood": parsed.understood},
            )
        session = ctx.get_session()
        address, spelled = parsed.address, parsed.spelled
        if session is not None and address in session.transcript_recipients:
            return ToolResult.error(
                f"The transcript is already going to {spelled}: it will not be sent there twice.",
                {"address": address, "duplicate": True},
            )
        seen = self.desk.read_back.setdefault(ctx.call_id, set()) if session is not None else None
        confirmed = args.get("confirmed") is True
        if not confirmed or (seen is not None and address not in seen):
            cfg = self.email()
            if cfg.check_domains:
                check = await check_domain(
                    parsed.domain,
                    nameservers=cfg.nameservers or None,
                    port=cfg.dns_port,
                    timeout_s=DNS_TIMEOUT_MS / 1000,
                )
                if not check.usable:
                    log.debug("domain of %s refused: %s", address, check.reason)
                    return ToolResult.error(
                        f"The address {spelled} cannot receive email ({check.reason}). "
                        "Please ask the caller to check it and say it again.",
                        {"address": address, "spelled": spelled},
                    )
            if seen is not None:
                seen.add(address)
            return ToolResult.success(
                f"Read the address back to the caller: {spelled}. Is that right? If they say yes, call "
                "request_transcript again with this address and confirmed true.",
                {"address": address, "spelled": spelled, "queued": False},
            )
        try:
            message_id = self.desk.hold_transcript(session, address)
        except RuntimeError as e:
            return ToolResult("error", f"Sorry, I can't send emails right now ({e}).", spoken=NO_EMAIL)
        if session is not None:
            session.transcript_recipients.append(address)
        log.debug("transcript of %s queued for %s", ctx.call_id, address)
        return ToolResult.success(
            f"Done: the transcript will be emailed to {spelled} when the call ends.",
            {"address": address, "queued": True, "message_id": message_id},
        )


class SendEmailSummaryTool(Tool):
    definition = ToolDefinition(
        name="send_email_summary",
        description="Email the administrator a summary of this call so far (date, caller, transcript, tools).",
        category=ToolCategory.BUSINESS,
        parameters=(),
        latency=LatencyMeta(estimated_duration_ms=5, max_duration_ms=1000, idempotent=False),
    )

    def __init__(self, desk: MailDesk) -> None:
        self.desk = desk

    async def execute(self, args: dict[str, Any], ctx: ToolExecutionContext) -> ToolResult:
        try:
            message_id = self.desk.queue_summary(ctx.get_session())
        except RuntimeError as e:
            return ToolResult("error", f"The summary cannot be sent: {e}.", spoken=NO_EMAIL)
        return ToolResult.success("The call summary was queued for the administrator.", {"message_id": message_id})
