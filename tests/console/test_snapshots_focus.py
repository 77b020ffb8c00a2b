"""Snapshots of issue 34's keys (items 3 and 5) at 80×24, 120×40 and 200×60: the focus mark (the talk box edged in
the accent colour, as the focused table's bar) and the question Esc asks on an edited form."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Input

from console.app import AvaConsole
from tests.console.helpers import transcript_drawn
from tests.console.test_snapshots import _app, _settle

ROOT = Path(__file__).resolve().parents[2]
SIZES = [(80, 24), (120, 40), (200, 60)]


@pytest.fixture(autouse=True)
def _repo_cwd(monkeypatch: pytest.MonkeyPatch, memory_keyring: Any) -> None:
    monkeypatch.chdir(ROOT)


@pytest.mark.parametrize("size", SIZES)
def test_the_focused_talk_box_is_marked(snap_compare: Any, size: tuple[int, int]) -> None:
    async def run_before(pilot: Any) -> None:
        app: AvaConsole = pilot.app
        await _settle(pilot, lambda: app.engine_running)
        await pilot.press("ctrl+n")
        await _settle(pilot, lambda: app.focused is not None and app.focused.id == "calls")
        await pilot.press("s")
        await _settle(pilot, lambda: app.focused is not None and app.focused.id == "talk")
        await _settle(pilot, lambda: transcript_drawn(app))
        talk = app.screen.query_one("#talk", Input)
        talk.cursor_blink = False  # a blinking cursor is on or off depending on when the frame is taken
        app.clear_notifications()
        await pilot.pause(0.3)

    assert snap_compare(_app(), run_before=run_before, terminal_size=size)


@pytest.mark.parametrize("size", SIZES)
def test_esc_on_an_edited_server_form_asks(snap_compare: Any, size: tuple[int, int]) -> None:
    async def run_before(pilot: Any) -> None:
        app: AvaConsole = pilot.app
        await _settle(pilot, lambda: app.engine_running)
        await pilot.press("f3")
        await _settle(pilot, lambda: type(app.screen).__name__ == "ServersScreen")
        await pilot.press("a")
        await _settle(pilot, lambda: type(app.screen).__name__ == "ServerForm" and app.screen.loaded)  # type: ignore[attr-defined]
        app.screen.query_one("#f-id", Input).cursor_blink = False  # still drawn under the question: no blinking
        await pilot.press(*"weather", "escape")
        await _settle(pilot, lambda: type(app.screen).__name__ == "LeaveFormScreen")
        app.clear_notifications()
        await pilot.pause(0.3)

    assert snap_compare(_app(), run_before=run_before, terminal_size=size)
