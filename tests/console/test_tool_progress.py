"""The tool log's row of a running MCP call shows the progress its server reports (``tool.progress``)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from console.app import AvaConsole
from engine.events import ToolCompleted, ToolProgressed, ToolRequested

SHOTS = os.environ.get("AVA_SHOTS")  # a directory: save the screen as SVG at each size (for looking at it)


def _status(app: AvaConsole) -> str:
    table = app.screen.query_one("#invocations")
    return str(table.get_cell("1", "status"))  # type: ignore[attr-defined]


async def test_running_row_shows_reported_progress(config_path: Path, wait) -> None:
    app = AvaConsole(config_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait(pilot, lambda: app.engine_running)
        bus = app.engine.bus  # type: ignore[union-attr]
        ids: dict[str, Any] = {"call_id": "c1", "tool_call_id": "t1", "exposed_name": "mcp_ev_research", "server": "ev"}
        bus.publish(ToolRequested(**ids, tool="research"))
        await pilot.press("f2")
        await wait(pilot, lambda: type(app.screen).__name__ == "ToolLogScreen")
        await wait(pilot, lambda: _status(app).endswith("running"))
        bus.publish(ToolProgressed(**ids, progress=1, total=2, message="half"))
        await wait(pilot, lambda: _status(app).endswith("running 50%"))
        bus.publish(ToolProgressed(**ids, progress=7, total=None))
        await wait(pilot, lambda: _status(app).endswith("running 7"))
        for size in ((80, 24), (120, 40), (200, 60)) if SHOTS else ():
            await pilot.resize_terminal(*size)
            await pilot.pause()
            app.save_screenshot(f"progress_{size[0]}x{size[1]}.svg", SHOTS)
        bus.publish(ToolCompleted(**ids, tool="research", status="success", latency_ms=5.0, message="ok"))
        await wait(pilot, lambda: _status(app).endswith("success"))
