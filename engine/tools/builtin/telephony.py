"""Built-in call-control tools. ``hangup_call`` speaks a farewell and ends the call once it has been delivered."""

from __future__ import annotations

from typing import Any

from engine.tools.base import (
    LatencyMeta,
    Tool,
    ToolCategory,
    ToolDefinition,
    ToolExecutionContext,
    ToolParameter,
    ToolResult,
)


class HangupCallTool(Tool):
    definition = ToolDefinition(
        name="hangup_call",
        description=(
            "End the call politely. Use when the caller says goodbye or asks to hang up. "
            "The farewell is spoken before the line is closed."
        ),
        category=ToolCategory.TELEPHONY,
        parameters=(
            ToolParameter(
                "farewell_message",
                "string",
                "What to say before hanging up (optional; a default farewell is used otherwise).",
                max_length=300,
            ),
        ),
        latency=LatencyMeta(estimated_duration_ms=1, max_duration_ms=1000, idempotent=False),
    )

    def __init__(self, default_farewell: str = "Thank you for calling. Goodbye!") -> None:
        self.default_farewell = default_farewell

    async def execute(self, args: dict[str, Any], ctx: ToolExecutionContext) -> ToolResult:
        farewell = (args.get("farewell_message") or "").strip() or self.default_farewell
        session = ctx.get_session()
        if session is not None:
            session.hangup_requested = True
            session.farewell = farewell
            session.current_action = "hanging up"
        return ToolResult.success(farewell, {"farewell": farewell}, will_hangup=True)
