"""Pilot tests of the console's last layout cuts at 80×24 (issue 34 items 8, 9, follow-up): the Calls table needs no
sideways scroll and shows three rows, the Budget leaderboard fits (compact columns below 100 columns, the highlighted
row's whole values in a line under it), the Secrets screen shows the highlighted secret's whole "Referenced at", and
the speaking timeline's notes lane ends a cut announcement in "…" with the whole text in a line under the lanes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from textual.widgets import DataTable, Static

from console.app import AvaConsole
from console.widgets.tables import cell_text
from console.widgets.timeline import Timeline
from engine.config import set_secret
from tests.console.conftest import servers_up
from tests.console.test_layout_fit import drawn, on_screen
from tests.console.test_widths import _with_fixture_server
from tests.fixtures.memory_keyring import MemoryKeyring


def _fits(table: DataTable[Any]) -> None:
    """The table's columns together fit its width: no horizontal scrollbar, nothing past its right edge."""
    total = sum(col.get_render_width(table) for col in table.columns.values())
    assert total <= table.scrollable_content_region.width, f"{total} cells of columns in {table.size.width}"
    assert not table.show_horizontal_scrollbar


def _said(widget: Static) -> str:
    """What a (wrapping) line says, its lines joined."""
    return " ".join(line.strip() for line in drawn(widget))


async def test_80x24_calls_table_fits_without_sideways_scroll_and_shows_three_rows(
    config_path: Path, wait: Any
) -> None:
    app = AvaConsole(config_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait(pilot, lambda: app.engine_running, within=30)
        for n in (1, 2, 3):
            await pilot.press("ctrl+n")
            await wait(pilot, lambda n=n: len(app.state.calls) == n)
        await pilot.pause(0.3)
        table = app.screen.query_one("#calls", DataTable)
        _fits(table)
        shown = "\n".join(drawn(table))
        assert all(call in shown for call in app.state.calls), shown  # three rows under the header
        assert "console" in shown, shown  # the last column (Line) shows
        assert "Dur " in drawn(table)[1], drawn(table)[1]  # a heading wider than its values gave way
        await pilot.resize_terminal(120, 40)
        await pilot.pause(0.3)
        assert "Duration" in drawn(table)[1], drawn(table)[1]  # room again: the headings are whole
        _fits(table)


async def test_80x24_budget_leaderboard_fits_with_the_whole_row_below(config_path: Path, wait: Any) -> None:
    app = AvaConsole(config_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait(pilot, lambda: app.engine_running, within=30)
        await pilot.press("f4")
        await wait(pilot, lambda: type(app.screen).__name__ == "BudgetScreen")
        await pilot.pause(0.3)
        board = app.screen.query_one("#leaderboard", DataTable)
        assert board.row_count > 1
        _fits(board)
        assert on_screen(app.screen.query_one("#tiers"))  # the tiers still fit above it
        board.focus()
        board.move_cursor(row=1)
        await pilot.pause(0.2)
        row = list(board.rows)[1]
        name = cell_text(board.get_cell(row, "name"))
        detail = _said(app.screen.query_one("#leaderboard-row", Static))
        for whole in (name, "builtin", "standard", "samples", "Unmeasured"):  # the columns left out at 80 too
            assert whole in detail, (whole, detail)
        await pilot.resize_terminal(120, 40)  # wide enough for every column
        await pilot.pause(0.3)
        top = drawn(board)[1]
        assert "Server" in top and "Fits" in top, top
        _fits(board)


def _referenced_from(config_path: Path, contexts: tuple[str, ...]) -> None:
    """More contexts in the config, each prompt referencing the keyring secret AGENT_PERSONA."""
    extra = "".join(
        f"  {c}:\n    provider: script\n    prompt: 'Agent ${{keyring:AGENT_PERSONA}}'\n    tools: [hangup_call]\n"
        for c in contexts
    )
    config_path.write_text(config_path.read_text().replace("contexts:\n", "contexts:\n" + extra))


async def test_80x24_budget_tools_per_tier_fit_beside_the_tiers(config_path: Path, wait: Any) -> None:
    """The fixture server's tools: more rows than the table's height (a scrollbar) and longer names."""
    _with_fixture_server(config_path)
    app = AvaConsole(config_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait(pilot, lambda: servers_up(app, "fx"), within=60)
        await pilot.press("f4")
        await wait(pilot, lambda: type(app.screen).__name__ == "BudgetScreen")
        await pilot.pause(0.3)
        tt = app.screen.query_one("#tier-tools", DataTable)
        assert tt.row_count > 3
        _fits(tt)
        rows = drawn(tt)[1:]
        assert any("–" in r and "✔" in r and "…" in r for r in rows), rows  # the marks, then the reason cut


async def test_80x24_a_calls_tools_fit_the_tools_pane(config_path: Path, wait: Any) -> None:
    """The fixture server's tools (long names, a scrollbar) in the Calls screen's tools pane at 80 columns."""
    _with_fixture_server(config_path)
    app = AvaConsole(config_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait(pilot, lambda: servers_up(app, "fx"), within=60)
        await pilot.press("ctrl+n")
        await wait(pilot, lambda: app.selected_call in app.state.calls and app.screen.detail_ready)  # type: ignore[attr-defined]
        tools = app.screen.query_one("#call-tools", DataTable)
        await wait(pilot, lambda: tools.row_count > 3)
        await pilot.pause(0.3)
        _fits(tools)
        assert any("builtin" in line for line in drawn(tools)), drawn(tools)  # Server, before the cut column


async def test_80x24_secrets_whole_references_of_the_highlighted_secret(
    config_path: Path, memory_keyring: MemoryKeyring, wait: Any
) -> None:
    """A secret referenced from four contexts: its cell ends in "…" at 80 columns, the line below says all four."""
    contexts = ("after_hours_escalation", "billing_disputes_line", "weather_briefing_desk", "night_shift_handover")
    _referenced_from(config_path, contexts)
    set_secret("AGENT_PERSONA", "calm")
    app = AvaConsole(config_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait(pilot, lambda: app.engine_running, within=30)
        await pilot.press("f9")
        await wait(pilot, lambda: type(app.screen).__name__ == "SecretsScreen")
        table = app.screen.query_one("#secrets", DataTable)
        await wait(pilot, lambda: "AGENT_PERSONA" in [k.value for k in table.rows])
        table.move_cursor(row=table.get_row_index("AGENT_PERSONA"))
        await pilot.pause(0.2)
        assert "…" in "\n".join(drawn(table))  # the cell is cut
        _fits(table)
        line = app.screen.query_one("#secret-refs", Static)
        assert on_screen(line)
        said = _said(line).replace(" ", "")
        assert all(f"contexts.{c}.prompt" in said for c in contexts), said


async def test_80x24_timeline_notes_end_in_an_ellipsis_with_the_whole_text_below(config_path: Path, wait: Any) -> None:
    from tests.fixtures.timed_call import CALL, timed_call_events

    app = AvaConsole(config_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait(pilot, lambda: app.engine_running, within=30)
        for ev in timed_call_events():
            app.engine.bus.publish(ev)  # type: ignore[union-attr]
        await wait(pilot, lambda: len(getattr(app.timings.get(CALL), "turns", ())) == 4)
        app.selected_call = CALL
        await pilot.press("g")
        await wait(pilot, lambda: type(app.screen).__name__ == "CallViewScreen")
        await pilot.pause(0.3)
        timeline = app.screen.query_one(Timeline)
        assert on_screen(timeline)
        lines = drawn(timeline)
        notes = next(line for line in lines if line.lstrip().startswith("notes"))
        assert "♪" in notes and "…" in notes and "One moment please." not in notes, notes  # cut, and says so
        assert any("One moment please." in line for line in lines), lines  # whole, under the lanes
