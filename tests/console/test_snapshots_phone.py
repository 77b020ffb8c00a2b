"""Snapshot tests of the screens issue 34's items 6, 7 and 12 change, at 80×24, 120×40 and 200×60: the Calls
table's operator badge and the header's count, the voice panel's two levels (the caller's and the agent's), and the
Servers screen of an attached console (each engine's servers, named engine/server).

The operator's place and the levels are engine events published on the console's own engine (a monitored phone
call needs the ARI emulator, whose channel ids and timing are not fixed; test_phone_first_class drives that), and
the attached engine is the in-process double, so every SVG is the same run after run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from console.app import AvaConsole
from console.format import FixedClock
from engine.events import CallMonitorChanged, ServerStateChanged, SoftphoneLevel
from tests.console.helpers import transcript_drawn
from tests.console.remote_double import InProcessRemote
from tests.fixtures.audio_backends import FeedBackend

ROOT = Path(__file__).resolve().parents[2]
SIZES = [(80, 24), (120, 40), (200, 60)]


@pytest.fixture(autouse=True)
def _repo_cwd(monkeypatch: pytest.MonkeyPatch, memory_keyring: Any) -> None:
    monkeypatch.chdir(ROOT)


def _app(**kwargs: Any) -> AvaConsole:
    return AvaConsole(Path("tests/console/data/console.yaml"), clock=FixedClock(), tick=False, **kwargs)


async def _settle(pilot: Any, predicate: Any, within: float = 30.0) -> None:
    import asyncio

    end = asyncio.get_running_loop().time() + within
    while not predicate():
        assert asyncio.get_running_loop().time() < end, "snapshot set-up timed out"
        await pilot.pause(0.05)
    await pilot.pause(0.3)


@pytest.mark.parametrize("size", SIZES)
def test_calls_screen_with_the_operator_on_a_call(snap_compare: Any, size: tuple[int, int]) -> None:
    async def run_before(pilot: Any) -> None:
        app: AvaConsole = pilot.app
        await _settle(pilot, lambda: app.engine_running)
        await pilot.press("ctrl+n")
        await _settle(pilot, lambda: app.selected_call is not None and app.focused is not None)
        call_id = app.selected_call
        assert app.engine is not None and call_id is not None
        app.engine.bus.publish(CallMonitorChanged(call_id=call_id, mode="takeover"))
        await _settle(pilot, lambda: app.state.calls[call_id].operator == "takeover" and "operator" in app.sub_title)
        await _settle(pilot, lambda: transcript_drawn(app))
        app.clear_notifications()

    assert snap_compare(_app(), run_before=run_before, terminal_size=size)


@pytest.mark.parametrize("size", SIZES)
def test_voice_panel_with_the_callers_and_the_agents_level(snap_compare: Any, size: tuple[int, int]) -> None:
    async def run_before(pilot: Any) -> None:
        app: AvaConsole = pilot.app
        await _settle(pilot, lambda: app.engine_running)
        await pilot.press("v")
        await _settle(pilot, lambda: app.voice.state == "listening", within=30)
        assert app.engine is not None
        app.engine.bus.publish(SoftphoneLevel(level_dbfs=-40.0, agent_dbfs=-12.0, call_id=app.selected_call))
        await _settle(pilot, lambda: app.voice.agent_dbfs == -12.0)
        await _settle(pilot, lambda: app.voice.state == "listening")
        app.clear_notifications()

    assert snap_compare(
        _app(audio_backend_factory=lambda i, o, rate, ms: FeedBackend(rate, ms)),
        run_before=run_before,
        terminal_size=size,
    )


def _servers(_engine: str, command: str, _args: dict[str, Any]) -> dict[str, Any]:
    if command != "server_status":
        return {"ok": True}
    return {
        "servers": [
            {"id": "dice", "state": "up", "transport": "inprocess", "restarts": 0, "protocol_version": "2025-06-18"},
            {
                "id": "crashy",
                "state": "failed",
                "transport": "stdio",
                "restarts": 0,
                "last_error": "the server exited with code 3 before it initialised",
            },
        ]
    }


@pytest.mark.parametrize("size", SIZES)
def test_servers_screen_of_an_attached_console(snap_compare: Any, size: tuple[int, int]) -> None:
    remote = InProcessRemote(answer=_servers)
    remote.join("solo")

    async def run_before(pilot: Any) -> None:
        app: AvaConsole = pilot.app
        await _settle(pilot, lambda: "solo/crashy" in app.state.servers)
        remote.emit("solo", ServerStateChanged(server="search", state="starting", transport="http"))
        await _settle(pilot, lambda: "solo/search" in app.state.servers)
        await pilot.press("f3")
        await _settle(pilot, lambda: app.screen.query_one("#servers").row_count == 3)  # type: ignore[attr-defined]
        app.clear_notifications()

    app = AvaConsole(Path("."), remote=remote, tick=False, clock=FixedClock())
    assert snap_compare(app, run_before=run_before, terminal_size=size)
