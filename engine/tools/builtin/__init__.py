"""Built-in tools (call control, email) registered by the engine at start."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from engine.config.models import Settings
from engine.config.models.tools import EmailConfig, TransferTarget
from engine.tools.base import Tool
from engine.tools.builtin.email import MailDesk, RequestTranscriptTool, SendEmailSummaryTool
from engine.tools.builtin.telephony import HangupCallTool
from engine.tools.builtin.transfer import BlindTransferTool, CancelTransferTool, PhoneLines, TransferTool


def builtin_tools(
    settings: Settings,
    lines: PhoneLines | None = None,
    extensions: Callable[[], Mapping[str, TransferTarget]] | None = None,
    mail: MailDesk | None = None,
    email: Callable[[], EmailConfig] | None = None,
) -> list[Tool]:
    """The call-control tools; the transfer tools reach phone calls through ``lines`` and read the destinations
    through ``extensions`` (the running config's ``tools.extensions``). With ``mail`` (the e-mail component),
    also ``request_transcript`` and ``send_email_summary``, reading ``tools.email`` through ``email``."""
    lines = lines or PhoneLines()
    extensions = extensions or (lambda: settings.tools.extensions)
    return [
        HangupCallTool(settings.tools.hangup.farewell),
        TransferTool(extensions, lines),
        BlindTransferTool(extensions, lines),
        CancelTransferTool(lines),
        *_email_tools(settings, mail, email),
    ]


def _email_tools(settings: Settings, mail: MailDesk | None, email: Callable[[], EmailConfig] | None) -> list[Tool]:
    if mail is None:
        return []
    return [RequestTranscriptTool(mail, email or (lambda: settings.tools.email)), SendEmailSummaryTool(mail)]
