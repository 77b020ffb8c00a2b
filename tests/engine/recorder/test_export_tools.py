"""The export's tool rows: a request joined with its outcome, and an outcome whose request is not in the recording
(a recording that starts mid-call) still gets a row of its own, with no arguments."""

from __future__ import annotations

from pathlib import Path

from engine.recorder.codec import Recording
from engine.recorder.export import summarize

CALL = {"tool_call_id": "t1", "exposed_name": "mcp_dice_roll", "server": "dice", "tool": "roll"}


def test_tool_rows_join_a_request_with_its_outcome_and_keep_a_lone_outcome() -> None:
    lines = [
        {"type": "tool.requested", "ts": 1.0, **CALL, "arguments": {"expr": "2d6"}},
        {"type": "tool.completed", "ts": 1.5, **CALL, "status": "success", "latency_ms": 12.5, "message": "7"},
        {"type": "tool.rejected", "ts": 2.0, **CALL, "tool_call_id": "t2", "reason": "not shown"},
    ]
    tools = summarize(Recording(Path("r.jsonl"), {"call_id": "c"}, lines))["tools"]
    assert tools == [
        {"ts": 1.0, **CALL, "arguments": {"expr": "2d6"}, "status": "success", "latency_ms": 12.5, "message": "7"},
        {"ts": 2.0, **CALL, "tool_call_id": "t2", "arguments": None, "status": "rejected", "message": "not shown"},
    ]
    assert list(tools[0]) == ["ts", *CALL, "arguments", "status", "latency_ms", "message"]
