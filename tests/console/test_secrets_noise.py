"""Secrets and noise (issue 34 items 10 and 11), by pilot: the event log speaks sentences, the Budget leaderboard
shows p50/p99 once tools have run, unticked checkboxes draw nothing, a plaintext keyring is named as unencrypted
wherever the console says where secrets go, and removing a server offers to delete the keyring secrets it owns."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import keyring
import pytest
from textual.widgets import DataTable

from console.app import AvaConsole
from console.widgets.wrap_log import WrapLog
from engine.events import CallTransferStarted, ToolApprovalResolved, TurnOverBudget
from tests.console.helpers import record_notifications
from tests.fixtures.memory_keyring import MemoryKeyring

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
                approval_id="a1",
                call_id="c9",
                tool_call_id="t1",
                exposed_name="dice",
                outcome="timed_out",
                by="timeout",
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


DICE = '    dice:\n      command: ["{python}", "-m", "engine.servers.dice"]\n'
SECRET = "sk-live-9f8e7d6c5b4a39281706"


def _with_servers(config_path: Path, servers: str) -> Path:
    config_path.write_text(config_path.read_text().replace("  servers: {}\n", "  servers:\n" + servers))
    return config_path


@pytest.fixture
def plaintext_keyring(tmp_path: Path, monkeypatch: Any) -> Iterator[Path]:
    """keyrings.alt's real PlaintextKeyring, writing under ``tmp_path``; yields the data directory."""
    from keyrings.alt.file import PlaintextKeyring

    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    old = keyring.get_keyring()
    keyring.set_keyring(PlaintextKeyring())
    try:
        yield tmp_path / "data"
    finally:
        keyring.set_keyring(old)


async def test_the_server_form_names_a_plaintext_keyring_unencrypted(
    config_path: Path, plaintext_keyring: Path, wait: Any
) -> None:
    """Before: the form said "store in keyring" and, once saved, "stored in the keyring" — for a plain file."""
    from textual.widgets import Checkbox

    _with_servers(config_path, DICE)
    app = AvaConsole(config_path)
    notes = record_notifications(app)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait(pilot, lambda: app.engine_running)
        await pilot.press("f3")
        await wait(pilot, lambda: type(app.screen).__name__ == "ServersScreen")
        await pilot.press("e")
        await wait(pilot, lambda: type(app.screen).__name__ == "ServerForm" and app.screen.loaded)  # type: ignore[attr-defined]
        app.screen.query_one("#add-env").press()  # type: ignore[attr-defined]
        await wait(pilot, lambda: app.focused is not None and "kv-key" in app.focused.classes)
        box = app.screen.query_one(".kv-keyring", Checkbox)
        await wait(pilot, lambda: "UNENCRYPTED" in box.label.plain)
        await pilot.press(*"WEATHER_KEY", "tab", *SECRET)
        await pilot.press("ctrl+s")
        await wait(pilot, lambda: type(app.screen).__name__ == "DiffScreen")
        await pilot.press("y")
        await wait(pilot, lambda: any("DICE_WEATHER_KEY" in n for n in notes), within=20)
        stored = next(n for n in notes if "DICE_WEATHER_KEY" in n)
        assert "UNENCRYPTED" in stored and str(plaintext_keyring) in stored, stored
        assert "the OS keyring" not in stored


async def test_removing_a_server_offers_to_delete_the_secrets_it_owns(
    config_path: Path, memory_keyring: MemoryKeyring, wait: Any
) -> None:
    """Before: removing a server left its keyring secrets behind, unused, with nothing saying so."""
    from engine.config import set_secret

    env = "      env: {WEATHER_KEY: '${keyring:DICE_WEATHER_KEY}', SHARED: '${keyring:SHARED_TOKEN}'}\n"
    other = "    other:\n      enabled: false\n      url: http://127.0.0.1:9/mcp\n      transport: http\n"
    other += "      headers: {Authorization: '${keyring:SHARED_TOKEN}'}\n"
    _with_servers(config_path, DICE + env + other)
    set_secret("DICE_WEATHER_KEY", "w-1")
    set_secret("SHARED_TOKEN", "s-1")
    app = AvaConsole(config_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait(pilot, lambda: app.engine_running)
        await pilot.press("f3")
        await wait(pilot, lambda: type(app.screen).__name__ == "ServersScreen")
        table = app.screen.query_one("#servers", DataTable)
        await wait(pilot, lambda: table.row_count == 2)
        table.move_cursor(row=table.get_row_index("dice"))
        await pilot.press("d")
        await wait(pilot, lambda: type(app.screen).__name__ == "ConfirmScreen")
        await pilot.press("y")
        await wait(pilot, lambda: type(app.screen).__name__ == "DiffScreen")
        await pilot.press("y")
        await wait(pilot, lambda: type(app.screen).__name__ == "ConfirmScreen", within=20)
        question = app.screen.question  # type: ignore[attr-defined]
        assert "DICE_WEATHER_KEY" in question and "SHARED_TOKEN" not in question, question
        await pilot.press("y")
        await wait(pilot, lambda: ("ava-console", "DICE_WEATHER_KEY") not in memory_keyring.store)
        assert memory_keyring.store[("ava-console", "SHARED_TOKEN")] == "s-1"  # still referenced elsewhere
