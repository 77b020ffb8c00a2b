"""Issue 16 A13 (console side): the key bar marks the selected call's active tier, whether an operator override
holds it ("auto" marked while none does), and the global default; it follows tier changes as they happen."""

from __future__ import annotations

from pathlib import Path

from rich.text import Text

from console.app import AvaConsole
from console.widgets.keybar import ACTIVE, KeyBar


def marked(text: Text) -> list[str]:
    """The labels the key bar shows as active, in order."""
    return [text.plain[s.start : s.end] for s in text.spans if str(s.style) == ACTIVE]


def bar_marks(app: AvaConsole) -> list[str]:
    content = app.screen.query_one(KeyBar).content
    assert isinstance(content, Text)
    return marked(content)


async def test_keybar_marks_the_active_tiers(config_path: Path, wait) -> None:
    app = AvaConsole(config_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait(pilot, lambda: app.engine_running, 90)  # a loaded test box starts the engine slowly
        assert bar_marks(app) == ["auto"]  # no call selected: only the global default (auto)
        await pilot.press("ctrl+n")
        await wait(pilot, lambda: app.selected_call in app.state.calls)
        await pilot.press("escape")
        await wait(pilot, lambda: bar_marks(app) == ["STD", "auto", "auto"])  # standard, chosen automatically
        await pilot.press("f7")  # this call: DEEP (an operator override: "auto" is no longer marked)
        await wait(pilot, lambda: bar_marks(app) == ["DEEP", "auto"])
        await pilot.press("f17")  # shift+F5: the global default FAST; the override still holds this call
        await wait(pilot, lambda: bar_marks(app) == ["DEEP", "FAST"])
        await pilot.press("f8")  # this call back to auto: the global default now decides it
        await wait(pilot, lambda: bar_marks(app) == ["FAST", "auto", "FAST"])
