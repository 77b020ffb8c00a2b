"""Built-in tools (call control, email) registered by the engine at start."""

from __future__ import annotations

from engine.config.models import Settings
from engine.tools.base import Tool
from engine.tools.builtin.telephony import HangupCallTool


def builtin_tools(settings: Settings) -> list[Tool]:
    return [HangupCallTool(settings.tools.hangup.farewell)]
