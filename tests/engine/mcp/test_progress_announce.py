"""Progress (issue 18 item 6): a running MCP tool's progress notifications reach the slow-response announcement
("… I'm about half way.") and the console's invocation row."""

from __future__ import annotations

import math
import sys
from typing import Any

import pytest

from engine.events import AnnouncementRequested, ToolProgressed
from engine.tools.progress import phrase, with_progress
from tests.engine.budget.helpers import session_on
from tests.engine.mcp.helpers import FIXTURES, settings

STRUCTURED = str(FIXTURES / "structured_server.py")


def _cfg() -> dict[str, Any]:
    return {
        "transport": "stdio",
        "command": [sys.executable, STRUCTURED],
        "connect_timeout_ms": 8000,
        "defaults": {"slow_response_threshold_ms": 500, "slow_response_message": "Still looking."},
    }


async def _announced(make_engine: Any, tool: str) -> list[AnnouncementRequested]:
    engine = await make_engine(settings({"st": _cfg()}))
    sub = engine.bus.subscribe(types={"announcement.requested", "tool.progress"})
    call = session_on("deep", {tool})
    engine.budget.before_turn(call, "x")
    result = await engine.execute_tool(call, tool, {"seconds": 1.1})
    engine.budget.after_turn(call)
    assert result.status == "success", result.message
    events = sub.drain()
    assert any(isinstance(e, ToolProgressed) for e in events)  # the console's invocation row hears it too
    return [e for e in events if isinstance(e, AnnouncementRequested)]


async def test_progress_with_a_total_is_spoken_in_the_still_running_announcement(make_engine: Any) -> None:
    (ev,) = await _announced(make_engine, "mcp_st_halfway")
    assert (ev.text, ev.reason) == ("Still looking. I'm about half way.", "still_running")


async def test_progress_without_a_total_leaves_the_announcement_as_configured(make_engine: Any) -> None:
    (ev,) = await _announced(make_engine, "mcp_st_counting")
    assert ev.text == "Still looking."


@pytest.mark.parametrize(
    ("progress", "total", "words"),
    [
        (1, 2, "I'm about half way."),
        (1, 3, "I'm about a third of the way."),
        (3, 4, "I'm most of the way there."),
        (9, 10, "I'm almost done."),
        (12, 10, "I'm almost done."),
        (1, 100, None),
        (5, None, None),
        (5, 0, None),
        (math.nan, 2, None),
        (-1, 2, None),
        (1, math.inf, None),
    ],
)
def test_progress_phrases(progress: float, total: float | None, words: str | None) -> None:
    assert phrase(progress, total) == words


def test_no_report_no_change() -> None:
    assert with_progress("One moment.", object()) == "One moment."
