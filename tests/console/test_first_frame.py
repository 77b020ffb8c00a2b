"""The console's first frame stays light: what it imports, what styles it parses, and the Calls screen's detail.

The first frame is the Calls screen's calls table, key bar and footer. The engine, its events, the call detail, the
softphone panel and the event log (and their modules) come after it; the Calls screen is the default mode's screen,
so no mode switch re-parses the app's stylesheets before the frame. These tests hold each of those in place.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from textual.css.stylesheet import Stylesheet

import console.app as console_app
from console.app import AvaConsole
from console.screens.calls import CallsScreen

ROOT = Path(__file__).resolve().parents[2]

#: Modules the first frame must not need: the engine's events, the config models, the MCP SDK, the detail's widgets.
LATER = (
    "engine.events",
    "engine.config.models",
    "pydantic",
    "mcp",
    "aiohttp",
    "rich.pretty",
    "textual.widgets._rich_log",
    "console.widgets.softphone",
    "console.screens.audio_devices",
    "console.config_flow",
    "console.screens.servers",
)


def test_importing_the_console_leaves_the_engine_and_the_detail_for_later() -> None:
    code = f"import json, sys, console.app; print(json.dumps([m for m in {list(LATER)!r} if m in sys.modules]))"
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == []


async def test_first_frame_parses_no_stylesheet_twice_and_f1_returns_to_the_same_screen(
    config_path: Path, monkeypatch: pytest.MonkeyPatch, wait
) -> None:
    reparsed: list[int] = []
    real_reparse = Stylesheet.reparse

    def counting(self: Stylesheet) -> None:
        reparsed.append(1)
        real_reparse(self)

    monkeypatch.setattr(Stylesheet, "reparse", counting)
    app = AvaConsole(config_path)
    async with app.run_test(size=(120, 40)) as pilot:
        first = app.screen
        assert isinstance(first, CallsScreen) and app.current_mode == "calls"
        assert reparsed == []  # the calls screen's styles came with the app's
        await wait(pilot, lambda: first.detail_ready and app.engine_running)
        await pilot.press("f2")
        await wait(pilot, lambda: type(app.screen).__name__ == "ToolLogScreen")
        await pilot.press("f1")
        await wait(pilot, lambda: app.screen is first)
        assert app.current_mode == "calls"
        assert first.query_one("#softphone") and first.query_one("#event-log") and first.query_one("#call-tools")


async def test_the_detail_comes_before_the_engine_and_even_when_another_screen_is_shown(
    config_path: Path, monkeypatch: pytest.MonkeyPatch, wait
) -> None:
    release = asyncio.Event()
    order: list[str] = []
    real_detail = CallsScreen.after_first_frame
    real_load = AvaConsole.load_engine

    async def held_detail(self: CallsScreen) -> None:
        await release.wait()
        await real_detail(self)
        order.append("detail")

    def load(self: AvaConsole) -> Any:
        order.append("engine")
        return real_load(self)

    monkeypatch.setattr(CallsScreen, "after_first_frame", held_detail)
    monkeypatch.setattr(console_app.AvaConsole, "load_engine", load)
    app = AvaConsole(config_path)
    async with app.run_test(size=(120, 40)) as pilot:
        first = app.screen
        assert isinstance(first, CallsScreen)
        await pilot.press("f2")  # away from Calls before its detail exists
        await wait(pilot, lambda: type(app.screen).__name__ == "ToolLogScreen")
        await pilot.pause(0.2)
        assert order == [] and app.engine is None and not first.detail_ready
        release.set()
        await wait(pilot, lambda: app.engine_running)
        assert order == ["detail", "engine"]
        await pilot.press("f1")
        await wait(pilot, lambda: app.screen is first)
        assert first.detail_ready and first.query_one("#softphone") and first.query_one("#event-log")
