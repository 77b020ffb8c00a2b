"""The console paints before the engine exists: "starting…" states, keys that need the engine say it is still
starting (no crash), and quitting before the engine was built leaves it unstarted.

The config load and the engine's construction run in a thread worker after the first frame; these tests hold that
worker at each step (a ``threading.Event``) so the starting states can be looked at and pressed on.
"""

from __future__ import annotations

import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from rich.text import Text
from textual.widgets import DataTable

import console.engine_boot as console_boot  # where the config is loaded
import engine
from console.app import AvaConsole
from console.screens.calls import STARTING_NOTE
from engine.config import Settings
from tests.console.helpers import record_notifications
from tests.waiting import wait_until

FIXTURE = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "mcp_servers" / "fixture_server.py"
STILL_STARTING = "the engine is still starting"


def _with_server(config_path: Path, server_id: str = "fx") -> None:
    entry = f"    {server_id}:\n      command: [{sys.executable}, {FIXTURE}]\n      connect_timeout_ms: 10000\n"
    config_path.write_text(config_path.read_text().replace("  servers: {}\n", "  servers:\n" + entry))


class Gate:
    """Holds the start-up thread until ``open()``; ``reached`` is set once the thread waits at the gate."""

    def __init__(self) -> None:
        self.reached = threading.Event()
        self._open = threading.Event()

    def wait(self) -> None:
        self.reached.set()
        assert self._open.wait(30), "the test never opened the gate"

    def open(self) -> None:
        self._open.set()


@pytest.fixture
def config_gate(monkeypatch: pytest.MonkeyPatch) -> Gate:
    """The config load waits at this gate (before reading the file)."""
    gate = Gate()
    real = console_boot.load_config

    def held(path: Any) -> Settings:
        gate.wait()
        return real(path)

    monkeypatch.setattr(console_boot, "load_config", held)
    return gate


@pytest.fixture
def build_gate(monkeypatch: pytest.MonkeyPatch) -> tuple[Gate, list[Any]]:
    """The engine's construction waits at this gate (the config is loaded by then); built engines are recorded."""
    gate = Gate()
    built: list[Any] = []
    real = engine.Engine

    class HeldEngine(real):  # type: ignore[misc, valid-type]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            gate.wait()
            super().__init__(*args, **kwargs)
            built.append(self)

    monkeypatch.setattr(engine, "Engine", HeldEngine)
    return gate, built


def _server_states(app: AvaConsole) -> dict[str, str]:
    table = app.screen.query_one("#servers", DataTable)
    return {str(key.value): Text.from_markup(str(table.get_cell(key, "state"))).plain for key in table.rows}


async def test_keys_before_the_config_is_loaded_say_the_engine_is_starting(
    config_path: Path, config_gate: Gate, wait
) -> None:
    app = AvaConsole(config_path)
    async with app.run_test(size=(120, 40)) as pilot:
        seen = record_notifications(app)
        await wait(pilot, config_gate.reached.is_set)
        assert app.engine is None and app.settings is None
        assert app.sub_title == f"engine starting… · {config_path}"
        calls = app.screen.query_one("#calls", DataTable)
        assert calls.row_count == 0 and calls.border_subtitle == STARTING_NOTE
        # Calls: tier keys (call and default), new text call, voice call, tool on/off next turn and now
        for key in ("f5", "shift+f6", "ctrl+n", "v", "t", "n"):
            await pilot.press(key)
            await pilot.pause()
        assert seen.count(STILL_STARTING) == 6, seen
        await pilot.press("f3")  # Servers: no config yet, so no rows; the note says the engine is starting
        await wait(pilot, lambda: type(app.screen).__name__ == "ServersScreen")
        assert "engine starting" in str(app.screen.query_one("#mcp-note").render())
        for key in ("f4", "c", "f2", "f1"):  # Budget (next context), Tool log, back to Calls
            await pilot.press(key)
            await pilot.pause()
        assert app.is_running and app.engine is None
        config_gate.open()
        await wait(pilot, lambda: app.engine_running)
        assert app.sub_title == f"0 calls · servers 0 up · 0 errors/5 min · {config_path}"  # the header's glance
        assert app.screen.query_one("#calls", DataTable).border_subtitle is None
        await pilot.press("ctrl+n")  # now it acts: a call starts
        await wait(pilot, lambda: len(app.state.calls) == 1)


async def test_servers_show_starting_from_the_config_until_the_engine_runs(
    config_path: Path, build_gate: tuple[Gate, list[Any]], wait
) -> None:
    _with_server(config_path)
    gate, built = build_gate
    app = AvaConsole(config_path)
    async with app.run_test(size=(120, 40)) as pilot:
        seen = record_notifications(app)
        await pilot.press("f3")
        await wait(pilot, lambda: type(app.screen).__name__ == "ServersScreen")
        await wait(pilot, lambda: gate.reached.is_set() and app.settings is not None)
        await wait(pilot, lambda: _server_states(app) == {"fx": "◐ starting…"})
        for key in ("t", "r", "x"):  # test, restart, on/off for this run: each needs the engine
            await pilot.press(key)
            await pilot.pause()
        assert seen.count(STILL_STARTING) == 3, seen
        gate.open()
        await wait(pilot, lambda: app.engine_running)
        await wait(pilot, lambda: _server_states(app) == {"fx": "● up"})
        assert built and app.engine is built[0]


async def test_quit_before_the_engine_is_built_never_starts_it(
    config_path: Path, build_gate: tuple[Gate, list[Any]], wait
) -> None:
    _with_server(config_path)
    gate, built = build_gate
    app = AvaConsole(config_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait(pilot, gate.reached.is_set)
        await app.action_quit()
    gate.open()  # the worker builds the engine after the app has gone: it must not start it
    await wait_until(lambda: built, what="the worker building the engine")
    assert len(built) == 1
    assert app.engine is None and not built[0].started and not len(built[0].tasks)
