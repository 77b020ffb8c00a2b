"""Secrets and noise (issue 34 items 10 and 11), by pilot: the event log speaks sentences, the Budget leaderboard
shows p50/p99 once tools have run, unticked checkboxes draw nothing, a plaintext keyring is named as unencrypted
wherever the console says where secrets go, and removing a server offers to delete the keyring secrets it owns."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from console.app import AvaConsole
from console.widgets.wrap_log import WrapLog
from engine.events import CallTransferStarted, ToolApprovalResolved, TurnOverBudget

KEY_VALUE = re.compile(r"\b[a-z_]+=\S")


async def test_the_event_log_speaks_sentences(config_path: Path, wait: Any) -> None:
    """Before: ``call_id=c9 target=sales destination=PJSIP/200 mode=warm`` and "c9 dice timed out by timeout"."""
    app = AvaConsole(config_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait(pilot, lambda: app.engine_running and app.screen.query("#event-log"))
        assert app.engine is not None
        bus = app.engine.bus
        bus.publish(CallTransferStarted(call_id="c9", target="sales", destination="PJSIP/200"))
        bus.publish(
            ToolApprovalResolved(
                approval_id="a1", call_id="c9", tool_call_id="t1", exposed_name="dice", outcome="timed_out", by="timeout"
            )
        )
        bus.publish(TurnOverBudget(call_id="c9", tier="fast", budget_ms=500, latency_ms=730.4))
        log = app.screen.query_one("#event-log", WrapLog)
        await wait(pilot, lambda: sum("c9" in str(line.text) for line in log.lines) >= 3)
        lines = [line.text for line in app.state.log if line.call_id == "c9"]
        assert lines == [
            "c9: warm transfer to sales (PJSIP/200) started; it is ringing.",
            "c9: nobody approved dice in time, so it was not run.",
            "c9: a turn's tools took 730 ms, over the FAST tier's budget of 500 ms.",
        ]
        assert not [text for text in (line.text for line in app.state.log) if KEY_VALUE.search(text)]


async def test_an_unticked_checkbox_draws_nothing(config_path: Path, wait: Any) -> None:
    """Before: Textual's Checkbox drew its X unticked too (only dimmer), so "plain text" looked ticked."""
    from textual.widgets import Checkbox

    app = AvaConsole(config_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait(pilot, lambda: app.engine_running)
        await pilot.press("f3")
        await wait(pilot, lambda: type(app.screen).__name__ == "ServersScreen")
        await pilot.press("i")
        await wait(pilot, lambda: app.focused is not None and app.focused.id == "import-path")
        box = app.screen.query_one("#import-plain", Checkbox)
        assert not box.value
        assert box.render().plain.startswith("▐ ▌ keep credentials")
        await pilot.press("tab", "space")  # tick it from the keyboard
        await wait(pilot, lambda: box.value)
        assert box.render().plain.startswith("▐X▌ keep credentials")


def test_every_console_checkbox_is_a_tick_box() -> None:
    """A ``Checkbox(`` made anywhere in the console would draw its X unticked again."""
    console = Path(__file__).resolve().parents[2] / "console"
    made = [p.name for p in console.rglob("*.py") if p.name != "tick_box.py" and "Checkbox(" in p.read_text()]
    assert made == []


async def test_the_leaderboard_shows_p50_p99_once_a_tool_has_run(config_path: Path, wait: Any) -> None:
    """Before: p50/p99 stayed blank until a tool had run ``budget.min_samples`` (5) times, so after a few calls the
    leaderboard still looked as if nothing had been measured."""
    from textual.widgets import DataTable

    app = AvaConsole(config_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait(pilot, lambda: app.engine_running)
        await pilot.press("ctrl+n")
        await wait(pilot, lambda: app.selected_call in app.state.calls)
        call_id = app.selected_call
        await wait(pilot, lambda: app.focused is not None and app.focused.id == "calls")
        await pilot.press("s", *"goodbye", "enter")
        await wait(pilot, lambda: call_id not in app.state.calls)
        assert [i.status for i in app.state.invocations if i.exposed_name == "hangup_call"] == ["success"]
        await pilot.press("f4")
        await wait(pilot, lambda: type(app.screen).__name__ == "BudgetScreen")
        board = app.screen.query_one("#leaderboard", DataTable)

        def cells() -> dict[str, str] | None:
            keys = [str(k.value) for k in board.columns]
            rows = [dict(zip(keys, map(str, board.get_row_at(r)), strict=True)) for r in range(board.row_count)]
            return next((row for row in rows if row["name"] == "hangup_call"), None)

        await wait(pilot, lambda: cells() is not None)
        row = cells()
        assert row is not None
        p50, p99, samples = row["p50_ms"], row["p99_ms"], row["samples"]
        assert samples == "1"
        assert p50.strip() and p99.strip(), row  # measured, marked as few samples
        assert "~" in p50 and "~" in p99
