"""When an MCP call asks the server for progress: while it can matter, not for a tool known to be quick and
silent (the SDK's progress plumbing costs ~0.1 ms a call on the 2026 protocol)."""

from __future__ import annotations

from typing import Any, cast

from engine.events import Event, ToolProgressed
from engine.mcp.results import SpeechOptions
from engine.mcp.tool import QUICK_CALL_S, QUICK_STREAK, MCPTool
from engine.tools.base import ToolDefinition, ToolExecutionContext


def _tool() -> tuple[MCPTool, ToolExecutionContext, list[Event]]:
    seen: list[Event] = []
    d = ToolDefinition("mcp_fx_echo", "Echo.", server="fx", origin_name="echo")
    ctx = ToolExecutionContext("call-1", None, cast(Any, None), seen.append, tool_call_id="t1")
    return MCPTool(d, cast(Any, None), SpeechOptions()), ctx, seen


def test_a_quick_silent_tool_stops_asking_for_progress_and_a_slow_call_asks_again() -> None:
    tool, ctx, _ = _tool()
    for _ in range(QUICK_STREAK):
        assert tool.progress_callback(ctx) is not None  # not yet known to be quick
        tool.answered(QUICK_CALL_S / 10)
    assert tool.progress_callback(ctx) is None
    tool.answered(QUICK_CALL_S * 2)  # one slow call: progress may matter again
    assert tool.progress_callback(ctx) is not None


async def test_a_tool_that_reported_progress_always_gets_a_callback() -> None:
    tool, ctx, seen = _tool()
    callback = tool.progress_callback(ctx)
    assert callback is not None
    await callback(1, 3, "step 1")
    assert [
        (e.progress, e.total, e.message, e.server, e.exposed_name) for e in seen if isinstance(e, ToolProgressed)
    ] == [(1, 3, "step 1", "fx", "mcp_fx_echo")]
    for _ in range(QUICK_STREAK * 2):
        tool.answered(0.0)
    assert tool.progress_callback(ctx) is not None
