"""Pilot tests that logs and tables use the width they really have: a long transcript line wraps inside its pane
(its last word on screen at 80 columns), logs re-wrap on resize, and a table column widens when a value grows."""

from __future__ import annotations

import sys
from pathlib import Path

from rich.text import Text
from textual.widgets import DataTable, RichLog

from console.app import AvaConsole
from console.widgets.tables import ConsoleTable
from tests.console.helpers import paste

FIXTURE = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "mcp_servers" / "fixture_server.py"
LONG = "hello there this is a rather long line of words that must wrap inside the transcript pane ENDWORD"


async def _call_and_say(pilot, app: AvaConsole, wait, text: str) -> str:
    await wait(pilot, lambda: app.engine_running, within=30)
    await pilot.press("ctrl+n")
    await wait(pilot, lambda: bool(app.state.calls) and app.selected_call in app.state.calls)
    call_id = app.selected_call
    assert call_id is not None
    if app.focused is None or app.focused.id != "talk":
        await pilot.press("s")
    await wait(pilot, lambda: app.focused is not None and app.focused.id == "talk")
    await paste(pilot, text)  # 98 characters: typing into the talk box is covered by the other call tests
    await pilot.press("enter")
    await wait(pilot, lambda: any(t == text for _, _, t in app.state.transcript(call_id)))
    await pilot.pause(0.2)
    return call_id


def _visible_lines(log: RichLog) -> list[str]:
    """The transcript's lines as drawn: each cut at the pane's width, as the terminal shows them."""
    width = log.scrollable_content_region.width
    return [line.crop(0, width).text for line in log.lines]


async def test_long_transcript_line_wraps_inside_its_pane_at_80_columns(config_path: Path, wait) -> None:
    app = AvaConsole(config_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await _call_and_say(pilot, app, wait, LONG)
        log = app.screen.query_one("#transcript", RichLog)
        shown = " ".join(_visible_lines(log))
        assert "ENDWORD" in shown, shown
        assert all(line.cell_length <= log.scrollable_content_region.width for line in log.lines)


async def test_transcript_rewraps_when_the_terminal_grows(config_path: Path, wait) -> None:
    app = AvaConsole(config_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await _call_and_say(pilot, app, wait, LONG)
        log = app.screen.query_one("#transcript", RichLog)
        narrow = len(log.lines)
        await pilot.resize_terminal(200, 60)
        await pilot.pause(0.3)
        assert len(log.lines) < narrow  # fewer, wider lines
        assert "ENDWORD" in " ".join(_visible_lines(log))
        assert all(line.cell_length <= log.scrollable_content_region.width for line in log.lines)


async def test_a_column_widens_when_a_cell_grows(config_path: Path) -> None:
    app = AvaConsole(config_path)
    async with app.run_test(size=(80, 24)) as pilot:
        table = ConsoleTable()
        await app.screen.mount(table)
        table.add_column("State", key="state")
        table.add_row("● up", key="s1")
        await pilot.pause()
        table.update_cell("s1", "state", Text("✖ failed", style="red"))
        await pilot.pause()
        assert table.columns[next(iter(table.columns))].get_render_width(table) >= len("✖ failed")


def _with_fixture_server(config_path: Path) -> None:
    entry = f"    fx:\n      command: [{sys.executable}, {FIXTURE}]\n      connect_timeout_ms: 10000\n"
    config_path.write_text(config_path.read_text().replace("  servers: {}\n", "  servers:\n" + entry))


def _protocol(app: AvaConsole) -> str:
    assert app.engine is not None
    return str(app.engine.server_status()["servers"][0]["protocol_version"] or "")


async def test_servers_columns_fit_values_that_arrive_later(config_path: Path, wait) -> None:
    """The protocol version arrives after the row was drawn with "-": its column widens (was cut to "2026-07")."""
    _with_fixture_server(config_path)
    app = AvaConsole(config_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("f3")
        await wait(pilot, lambda: type(app.screen).__name__ == "ServersScreen")
        await wait(pilot, lambda: app.engine_running, within=30)
        table = app.screen.query_one("#servers", DataTable)
        await wait(pilot, lambda: bool(_protocol(app)))
        app.screen.poll()  # type: ignore[attr-defined]
        await pilot.pause(0.2)
        version = _protocol(app)
        cells = [str(c) for c in table.get_row("fx")]
        col = list(table.columns.values())[cells.index(version)]
        assert col.get_render_width(table) - 2 * table.cell_padding >= len(version)
