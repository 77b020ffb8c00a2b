"""Keys that do what they say (issue 34 item 3): after Enter in the talk box, or after a dialog closes, the Calls
screen's single keys work again; while a tool waits for approval, its keys are never typed as text into the talk
box; Esc leaves every input of every screen.

Before: Enter in the talk box left the focus there, so the next ``i`` or ``e`` was typed as text; a dialog closed
over the talk box gave the focus back to it; ``y`` pressed to approve while the focus was in the talk box was typed
("y") and the countdown ran out.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from textual.widgets import Input

from console.app import AvaConsole
from console.bindings import SCREENS
from console.widgets.tables import ConsoleTable, TableFilter
from tests.console.test_approvals import notes_config  # noqa: F401  (the fixture)


async def _call(pilot: Any, app: AvaConsole, wait: Any) -> str:
    await wait(pilot, lambda: app.engine_running, 60)
    await pilot.press("ctrl+n")
    await wait(pilot, lambda: bool(app.state.calls) and app.selected_call in app.state.calls)
    await wait(pilot, lambda: app.focused is not None and app.focused.id == "calls")
    assert app.selected_call is not None
    return app.selected_call


def _focus_id(app: AvaConsole) -> str | None:
    return app.focused.id if app.focused is not None else None


async def test_enter_in_the_talk_box_gives_the_single_keys_back(config_path: Path, wait: Any) -> None:
    app = AvaConsole(config_path)
    async with app.run_test(size=(120, 40)) as pilot:
        call_id = await _call(pilot, app, wait)
        await pilot.press("s")
        await wait(pilot, lambda: _focus_id(app) == "talk")
        await pilot.press(*"hello there", "enter")
        await wait(pilot, lambda: ("user", "hello there") in {(r, t) for _, r, t in app.state.transcript(call_id)})
        await wait(pilot, lambda: _focus_id(app) == "calls")
        await pilot.press("i")  # a single key acts: the whisper dialog, not an "i" in the talk box
        await wait(pilot, lambda: type(app.screen).__name__ == "SteerModal")
        assert app.screen.query_one("#steer-text", Input).value == ""


async def test_closing_a_dialog_gives_the_single_keys_back(config_path: Path, wait: Any) -> None:
    from textual.command import CommandPalette

    app = AvaConsole(config_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await _call(pilot, app, wait)
        await pilot.press("s")
        await wait(pilot, lambda: _focus_id(app) == "talk")
        await pilot.press("ctrl+p")  # a dialog opened from the talk box (the palette), then left
        await wait(pilot, lambda: isinstance(app.screen, CommandPalette))
        await pilot.press("escape")
        await wait(pilot, lambda: type(app.screen).__name__ == "CallsScreen")
        await wait(pilot, lambda: _focus_id(app) == "calls")
        assert app.screen.query_one("#talk", Input).value == ""


async def test_approval_keys_are_never_typed_into_the_talk_box(notes_config: tuple[Path, Path], wait: Any) -> None:  # noqa: F811
    cfg, record = notes_config
    app = AvaConsole(cfg)
    async with app.run_test(size=(120, 40)) as pilot:
        await _call(pilot, app, wait)
        await pilot.press("s", *"delete shopping", "enter")
        await wait(pilot, lambda: bool(app.approvals.rows), 30)
        await pilot.press("s")  # back into the talk box while the countdown runs
        await wait(pilot, lambda: _focus_id(app) == "talk")
        await pilot.press("h", "y", "x", "X", "i")
        talk = app.screen.query_one("#talk", Input)
        await wait(pilot, lambda: talk.value.endswith("i"))  # the keys after the held ones were handled
        assert talk.value == "hi"
        assert app.approvals.rows and record.read_text() == ""  # held: neither typed nor an answer
        assert any("waits for your approval" in str(n.message) and "Esc" in str(n.message) for n in app._notifications)
        await pilot.press("escape", "y")  # Esc leaves the talk box; y approves
        await wait(pilot, lambda: not app.approvals.rows, 30)
        await wait(pilot, lambda: record.read_text() != "", 30)


async def test_escape_leaves_every_input_on_every_screen(config_path: Path, wait: Any) -> None:
    app = AvaConsole(config_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await _call(pilot, app, wait)  # the Calls screen's detail (its talk and caller boxes) is mounted
        checked: list[str] = []
        for mode, (key, _title) in SCREENS.items():
            await pilot.press(key)
            await wait(pilot, lambda m=mode: app.current_mode == m and app.screen.is_mounted)
            await pilot.pause()
            screen = app.screen
            tables = [t for t in screen.query(ConsoleTable) if t.display and t.filterable]
            if tables:  # every table's "/" filter box is an input too
                tables[0].focus()
                await pilot.press("slash")
                await wait(pilot, lambda: isinstance(app.focused, TableFilter))
            for box in [i for i in screen.query(Input) if i.focusable and i.display]:
                box.focus()
                await wait(pilot, lambda b=box: app.focused is b)
                await pilot.press("escape")
                await wait(pilot, lambda: not isinstance(app.focused, Input), within=5)
                assert app.screen is screen, f"Esc in {box!r} on {mode} left the screen"
                checked.append(f"{mode}:{box.id or type(box).__name__}")
        assert {"calls:talk", "calls:sp-caller", "tools:log-search"} <= set(checked), checked
