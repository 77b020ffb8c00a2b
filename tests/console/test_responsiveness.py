"""What keeps the console quick under load, each checked for its effect (not for wall-clock time):

- an operator's key wakes the event pump, so its answer does not wait out the pump's rest between batches;
- a screen that saw every batch under another screen (the call view, a dialog) is not rebuilt when it comes back,
  and one that was switched away from is;
- table cells are literal text: markup in a caller's name or a tool's arguments shows as typed and cannot break the
  table, and writing the value a cell already holds does not redraw the table;
- once the engine runs, start-up objects are frozen out of the GC's full passes (engine/core/heap.py).
"""

from __future__ import annotations

import gc
from pathlib import Path
from typing import Any

from rich.text import Text

from console.app import AvaConsole
from console.screens.calls import CallsScreen
from console.widgets.tables import ConsoleTable
from engine.events import CallStarted


async def _selected_call(app: AvaConsole, pilot: Any, wait: Any) -> str:
    await wait(pilot, lambda: app.engine_running, within=30)
    assert app.engine is not None
    await app.engine.start_call("demo", caller_name="ada")
    await wait(pilot, lambda: app.selected_call is not None)
    assert app.selected_call is not None
    return app.selected_call


def _tier_cell(app: AvaConsole, call_id: str) -> str:
    return str(app.screen.query_one("#calls", ConsoleTable).get_row(call_id)[4])


async def test_a_key_is_answered_without_waiting_for_the_pump(config_path: Path, wait) -> None:
    """With a pump that rests a minute between batches, the tier key's answer still shows: the key woke it."""
    app = AvaConsole(config_path, pump_interval=60.0)
    async with app.run_test(size=(120, 40)) as pilot:
        call_id = await _selected_call(app, pilot, wait)
        await wait(pilot, lambda: _tier_cell(app, call_id) != "-")
        before = app.feed.batches
        await pilot.press("f7")
        await wait(pilot, lambda: _tier_cell(app, call_id) == "DEEP", within=20)
        assert app.feed.batches > before


async def test_a_screen_under_the_call_view_is_not_rebuilt(config_path: Path, wait) -> None:
    app = AvaConsole(config_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await _selected_call(app, pilot, wait)
        calls_screen = app.screen
        assert isinstance(calls_screen, CallsScreen)
        rebuilt: list[str] = []
        original = calls_screen.refresh_all

        def counting() -> None:
            rebuilt.append(type(app.screen).__name__)
            original()

        calls_screen.refresh_all = counting  # type: ignore[method-assign]
        await pilot.press("g")
        await wait(pilot, lambda: type(app.screen).__name__ == "CallViewScreen")
        assert app.engine is not None
        app.engine.bus.publish(CallStarted(call_id="other", context="demo", provider="script", caller_name="bo"))
        await wait(pilot, lambda: "other" in app.state.calls)
        await pilot.press("escape")
        await wait(pilot, lambda: app.screen is calls_screen)
        await pilot.pause(0.1)
        assert rebuilt == []  # it took the batch while under the view
        assert "other" in calls_screen.query_one("#calls", ConsoleTable).keys()
        # Switched away (F2): it misses batches, so coming back rebuilds it.
        await pilot.press("f2")
        await wait(pilot, lambda: type(app.screen).__name__ == "ToolLogScreen")
        app.engine.bus.publish(CallStarted(call_id="third", context="demo", provider="script", caller_name="cy"))
        await wait(pilot, lambda: "third" in app.state.calls)
        await pilot.press("f1")
        await wait(pilot, lambda: app.screen is calls_screen)
        await wait(pilot, lambda: len(rebuilt) == 1)
        assert "third" in calls_screen.query_one("#calls", ConsoleTable).keys()


async def test_markup_in_cells_shows_as_typed(config_path: Path, wait) -> None:
    app = AvaConsole(config_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait(pilot, lambda: app.engine_running, within=30)
        assert app.engine is not None
        for cid, name in (("m1", "[bold red]Mallory"), ("m2", "[/] unmatched"), ("m3", ":smile: [link=x]y")):
            app.engine.bus.publish(CallStarted(call_id=cid, context="demo", provider="script", caller_name=name))
        table = app.screen.query_one("#calls", ConsoleTable)
        await wait(pilot, lambda: {"m1", "m2", "m3"} <= set(table.keys()))
        await pilot.pause(0.2)  # drawn without a MarkupError
        names = {cid: table.get_row(cid)[1] for cid in ("m1", "m2", "m3")}
        assert {k: v.plain for k, v in names.items()} == {
            "m1": "[bold red]Mallory",
            "m2": "[/] unmatched",
            "m3": ":smile: [link=x]y",
        }
        assert all(isinstance(v, Text) and not v.spans for v in names.values())


async def test_writing_the_same_value_does_not_redraw_the_table(config_path: Path, wait) -> None:
    app = AvaConsole(config_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait(pilot, lambda: app.engine_running, within=30)
        table = app.screen.query_one("#calls", ConsoleTable)
        table.add_row("x", "caller", "demo", "script", "FAST", "", "0:01", "talking", "", key="row-a")
        count = table._update_count
        table.update_cell("row-a", "tier", "FAST")
        table.update_cell("row-a", "tier", Text("FAST"))
        assert table._update_count == count
        table.update_cell("row-a", "tier", "DEEP")
        assert table._update_count == count + 1
        assert str(table.get_row("row-a")[4]) == "DEEP"


async def test_the_running_console_freezes_its_start_up_heap(config_path: Path, wait) -> None:
    gc.unfreeze()
    app = AvaConsole(config_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait(pilot, lambda: app.engine_running, within=30)
        await wait(pilot, lambda: gc.get_freeze_count() > 10_000)
