"""Built-in tools (call control, email) registered by the engine at start."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from engine.config.models import Settings
from engine.config.models.tools import TransferTarget
from engine.tools.base import Tool
from engine.tools.builtin.telephony import HangupCallTool
from engine.tools.builtin.transfer import BlindTransferTool, CancelTransferTool, PhoneLines, TransferTool


def builtin_tools(
    settings: Settings,
    lines: PhoneLines | None = None,
    extensions: Callable[[], Mapping[str, TransferTarget]] | None = None,
) -> list[Tool]:
    """The call-control tools; the transfer tools reach phone calls through ``lines`` and read the destinations
    through ``extensions`` (the running config's ``tools.extensions``)."""
    lines = lines or PhoneLines()
    extensions = extensions or (lambda: settings.tools.extensions)
    return [
        HangupCallTool(settings.tools.hangup.farewell),
        TransferTool(extensions, lines),
        BlindTransferTool(extensions, lines),
        CancelTransferTool(lines),
    ]
