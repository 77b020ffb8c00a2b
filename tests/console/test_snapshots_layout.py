"""Snapshots of the screens issue 34 items 4, 8 and 9 changed, at 80×24, 120×40 and 200×60: the Calls screen with a
call and the operator's default tier set (its Why, the key bar's tier keys), the Tool log, Budget and Secrets, and
the recorded four-turn call's waterfall. One console run per size visits them all (``snapshot_runs``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from console.app import AvaConsole
from console.format import FixedClock
from console.widgets.wrap_log import WrapLog
from tests.console.snapshot_runs import compare_svg, screens_of_one_run

ROOT = Path(__file__).resolve().parents[2]
SIZES = [(80, 24), (120, 40), (200, 60)]
KEYS = ["f1", "f2", "f4", "f9", "g"]


@pytest.fixture(autouse=True)
def _repo_cwd(monkeypatch: pytest.MonkeyPatch, memory_keyring: Any) -> None:
    monkeypatch.chdir(ROOT)


async def _settle(pilot: Any, predicate: Any, within: float = 30.0) -> None:
    import asyncio

    end = asyncio.get_running_loop().time() + within
    while not predicate():
        assert asyncio.get_running_loop().time() < end, "snapshot set-up timed out"
        await pilot.pause(0.05)
    await pilot.pause(0.3)


async def _call_with_a_default(pilot: Any) -> None:
    """A test call (its greeting in the transcript), then the operator's global default FAST (⇧F5)."""
    app: AvaConsole = pilot.app
    await _settle(pilot, lambda: app.engine_running, within=60)
    await pilot.press("ctrl+n")
    await _settle(pilot, lambda: app.selected_call in app.state.calls and app.screen.detail_ready)  # type: ignore[attr-defined]
    await _settle(pilot, lambda: len(app.screen.query_one("#transcript", WrapLog).lines) >= 1, within=60)
    await pilot.press("escape")
    await pilot.press("shift+f5")
    await _settle(pilot, lambda: app.state.default_tier == "fast")


async def _show(pilot: Any, key: str) -> None:
    app: AvaConsole = pilot.app
    if key == "g":  # the recorded call's waterfall: its labels whole, its bars on one scale
        from tests.fixtures.timed_call import CALL, timed_call_events

        await pilot.press("f1")
        for event in timed_call_events():
            app.engine.bus.publish(event)  # type: ignore[union-attr]
        await _settle(pilot, lambda: len(getattr(app.timings.get(CALL), "turns", ())) == 4)
        app.selected_call = CALL
    await pilot.press(key)
    await pilot.pause(0.8)
    app.clear_notifications()
    await pilot.pause(0.2)


@pytest.mark.parametrize(("key", "size"), [pytest.param(k, s, id=f"{k}-{s[0]}x{s[1]}") for s in SIZES for k in KEYS])
def test_layout_screens(snapshot: Any, request: pytest.FixtureRequest, size: tuple[int, int], key: str) -> None:
    def make_app() -> AvaConsole:
        return AvaConsole(Path("tests/console/data/console.yaml"), clock=FixedClock(), tick=False)

    shots = screens_of_one_run("layout", make_app, size, _call_with_a_default, KEYS, _show)
    assert compare_svg(snapshot, request, shots[key])
