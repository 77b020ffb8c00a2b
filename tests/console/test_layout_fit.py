"""Pilot tests of the console at the sizes operators use (issue 34 items 4, 8, 9): the key bar shows the screen
keys at 80×24 and only the tier keys that act on the selection, the Calls table's Why names the operator's default,
the Calls screen's tool invocations and the Budget's tiers fit on an 80×24 screen, and at 120×40 no column is cut:
columns fit their values, free text ends in an ellipsis and the whole value is in the detail."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.text import Text
from textual.geometry import Region
from textual.widget import Widget
from textual.widgets import DataTable, Static

from console.app import AvaConsole
from console.widgets.keybar import KeyBar
from console.widgets.tables import cell_text
from console.widgets.waterfall import Waterfall
from tests.console.conftest import servers_up
from tests.console.test_widths import _with_fixture_server

SCREEN_KEYS = ("F1", "F2", "F3", "F4", "F9", "F10", "F11")


def drawn(widget: Widget) -> list[str]:
    """The widget's lines as the terminal shows them (cut at its width and height)."""
    width, height = widget.outer_size
    return [strip.text for strip in widget.render_lines(Region(0, 0, width, height))]


def visible(widget: Widget) -> Region:
    """The part of the widget the terminal shows: its region cut by its containers and the screen."""
    geometry = widget.screen.find_widget(widget)
    return geometry.region.intersection(geometry.clip).intersection(widget.screen.region)


def on_screen(widget: Widget) -> bool:
    """Whether the whole widget shows (nothing of it cut by its container or past the terminal's edge)."""
    return widget.region.height > 0 and visible(widget) == widget.region


async def _call(pilot: Any, app: AvaConsole, wait: Any) -> str:
    await wait(pilot, lambda: app.engine_running, within=30)
    await pilot.press("ctrl+n")
    await wait(pilot, lambda: app.selected_call in app.state.calls)
    await wait(pilot, lambda: app.screen.detail_ready)  # type: ignore[attr-defined]
    await pilot.pause(0.2)
    return app.selected_call or ""


def _columns_fit(table: DataTable[Any], flex: str | None = None) -> None:
    """Every column but ``flex`` is as wide as its longest value, and the columns together fit the table's width."""
    pad = 2 * table.cell_padding
    for key, col in table.columns.items():
        if key.value == flex:
            continue
        longest = max([col.label.cell_len, *(Text(cell_text(table.get_cell(r, key))).cell_len for r in table.rows)])
        assert col.get_render_width(table) - pad >= longest, f"column {key.value!r} is cut"
    total = sum(col.get_render_width(table) for col in table.columns.values())
    assert total <= table.scrollable_content_region.width, f"{total} columns' cells past {table.size.width}"


async def test_80x24_keeps_the_screen_keys_and_three_invocation_rows_on_the_calls_screen(
    config_path: Path, wait: Any
) -> None:
    app = AvaConsole(config_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await _call(pilot, app, wait)
        bar = app.screen.query_one(KeyBar)
        text = " ".join(drawn(bar))
        assert on_screen(bar)
        assert all(k in text.split() or f" {k}" in f" {text}" for k in SCREEN_KEYS), text
        inv = app.screen.query_one("#call-invocations", DataTable)
        assert on_screen(inv)
        assert inv.scrollable_content_region.height - 1 >= 3, inv.region  # the header, then three rows


async def test_80x24_budget_shows_every_tier_and_the_tool_log_three_rows(config_path: Path, wait: Any) -> None:
    app = AvaConsole(config_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait(pilot, lambda: app.engine_running, within=30)
        await pilot.press("f4")
        await wait(pilot, lambda: type(app.screen).__name__ == "BudgetScreen")
        await pilot.pause(0.3)
        tiers = app.screen.query_one("#tiers", DataTable)
        assert tiers.row_count == 4
        assert on_screen(tiers)
        shown = "\n".join(drawn(tiers))
        assert all(t in shown for t in ("FAST", "STANDARD", "DEEP", "AUTO")), shown
        assert any("F4" in line for line in drawn(app.screen.query_one(KeyBar)))
        await pilot.press("f2")
        await wait(pilot, lambda: type(app.screen).__name__ == "ToolLogScreen")
        await pilot.pause(0.3)
        log = app.screen.query_one("#invocations", DataTable)
        assert on_screen(log) and log.scrollable_content_region.height - 1 >= 3
        assert any("F2" in line for line in drawn(app.screen.query_one(KeyBar)))


async def test_key_bar_shows_only_the_tier_keys_that_act_on_the_selection(config_path: Path, wait: Any) -> None:
    app = AvaConsole(config_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait(pilot, lambda: app.engine_running, within=30)
        await pilot.pause(0.2)
        bar = app.screen.query_one(KeyBar)
        idle = " ".join(drawn(bar))
        assert "F5" not in idle.replace("⇧F5", ""), idle  # no call: its tier keys would do nothing
        assert "⇧F5" in idle  # the default applies to every call, selected or not
        call = await _call(pilot, app, wait)
        live = " ".join(drawn(bar))
        assert "F5" in live.replace("⇧F5", "") and call in live, live
        await pilot.press("e")
        await wait(pilot, lambda: call in app.state.ended)
        await pilot.pause(0.3)
        ended = " ".join(drawn(bar))
        assert "F5" not in ended.replace("⇧F5", ""), ended  # an ended call's tier is history


async def test_why_says_the_operator_default_once_one_is_set(config_path: Path, wait: Any) -> None:
    app = AvaConsole(config_path)
    async with app.run_test(size=(120, 40)) as pilot:
        call = await _call(pilot, app, wait)
        table = app.screen.query_one("#calls", DataTable)
        await pilot.press("shift+f5")
        await wait(pilot, lambda: app.state.default_tier == "fast")
        await pilot.pause(0.2)
        why = cell_text(table.get_cell(call, "why"))
        assert "operator's default" in why and "FAST" in why, why
        await pilot.press("f6")  # the call's own override wins over the default
        await wait(pilot, lambda: app.state.calls[call].tier_reason == "operator override")
        await pilot.pause(0.2)
        assert cell_text(table.get_cell(call, "why")) == "operator override"


async def test_120x40_calls_columns_fit_and_a_long_why_ends_in_an_ellipsis(config_path: Path, wait: Any) -> None:
    from engine.events import TierChanged

    long_why = "deep cooldown: deep keyword 'weather briefing' 12 s after the last deep turn (cooldown 30 s) END"
    app = AvaConsole(config_path)
    async with app.run_test(size=(120, 40)) as pilot:
        call = await _call(pilot, app, wait)
        assert app.engine is not None
        app.engine.bus.publish(TierChanged(call_id=call, old="standard", new="standard", reason=long_why))
        await wait(pilot, lambda: app.state.calls[call].tier_reason == long_why)
        await pilot.pause(0.3)
        table = app.screen.query_one("#calls", DataTable)
        _columns_fit(table, flex="why")
        top, *rows = drawn(table)
        shown = " ".join(rows)
        assert "…" in shown and "END" not in shown and "console" in shown, shown  # Line, the last column, shows
        assert "END" in top, top  # the selected call's whole Why, in the table's top border


async def test_120x40_budget_why_hidden_fits_with_the_whole_reason_below(config_path: Path, wait: Any) -> None:
    """The fixture server's tools are hidden from FAST until their latency is measured: a long reason each."""
    _with_fixture_server(config_path)
    app = AvaConsole(config_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait(pilot, lambda: servers_up(app, "fx"), within=60)
        await pilot.press("f4")
        await wait(pilot, lambda: type(app.screen).__name__ == "BudgetScreen")
        await pilot.pause(0.3)
        tt = app.screen.query_one("#tier-tools", DataTable)
        assert tt.row_count > 0
        _columns_fit(tt, flex="why")
        tt.focus()
        hidden = [i for i, r in enumerate(tt.rows) if cell_text(tt.get_cell(r, "why"))]
        assert hidden, "no tool is hidden from any tier"
        tt.move_cursor(row=hidden[-1])
        await pilot.pause(0.2)
        reason = cell_text(tt.get_cell(list(tt.rows)[hidden[-1]], "why"))
        note = app.screen.query_one("#tier-tools-why", Static)
        assert reason and reason in " ".join(drawn(note)).replace("  ", " "), (reason, drawn(note))


async def test_120x40_waterfall_labels_are_whole(config_path: Path, wait: Any) -> None:
    from tests.fixtures.timed_call import CALL, timed_call_events

    app = AvaConsole(config_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait(pilot, lambda: app.engine_running, within=30)
        for ev in timed_call_events():
            app.engine.bus.publish(ev)  # type: ignore[union-attr]
        await wait(pilot, lambda: len(getattr(app.timings.get(CALL), "turns", ())) == 4)
        app.selected_call = CALL
        await pilot.press("g")
        await pilot.pause(0.5)
        fall = app.screen.query_one(Waterfall)
        text = fall.lines(fall.size.width).plain
        labels = [line[:30] for line in text.splitlines() if not line.startswith("turn")]  # stage lines
        assert any("aviation_atis·get_atis" in label for label in labels), labels


async def test_120x40_a_calls_hidden_tools_fit_with_the_whole_reason_in_the_pane(config_path: Path, wait: Any) -> None:
    """FAST hides the fixture server's unmeasured tools from the call: their long reasons end in "…" in the Shown
    column, and the highlighted one's whole reason is in the tools pane's bottom border."""
    _with_fixture_server(config_path)
    app = AvaConsole(config_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait(pilot, lambda: servers_up(app, "fx"), within=60)
        call = await _call(pilot, app, wait)
        await pilot.press("escape", "f5")
        await wait(pilot, lambda: app.state.calls[call].tier == "fast")
        tools = app.screen.query_one("#call-tools", DataTable)
        await wait(pilot, lambda: any(cell_text(tools.get_cell(r, "shown")).startswith("hidden") for r in tools.rows))
        await pilot.pause(0.3)
        _columns_fit(tools, flex="shown")
        hidden = [i for i, r in enumerate(tools.rows) if "needs" in cell_text(tools.get_cell(r, "shown"))]
        tools.move_cursor(row=hidden[0])
        await pilot.pause(0.2)
        reason = cell_text(tools.get_cell(list(tools.rows)[hidden[0]], "shown")).removeprefix("hidden: ")
        bottom = drawn(app.screen.query_one("#tools-pane"))[-1]
        assert f"hidden: {reason}" in bottom, (reason, bottom)
        assert "…" in " ".join(drawn(tools)), drawn(tools)
