"""Snapshot tests of the main screens at 120×40 and 80×24 (fixed clock, no ticking durations, fixed ids)."""

from __future__ import annotations

from pathlib import Path

import pytest

from console.app import AvaConsole
from console.format import FixedClock
from tests.fixtures.audio_backends import FeedBackend

ROOT = Path(__file__).resolve().parents[2]
SIZES = [(120, 40), (80, 24)]


@pytest.fixture(autouse=True)
def _repo_cwd(monkeypatch: pytest.MonkeyPatch, memory_keyring) -> None:
    monkeypatch.chdir(ROOT)


def _app(**kwargs: object) -> AvaConsole:
    return AvaConsole(Path("tests/console/data/console.yaml"), clock=FixedClock(), tick=False, **kwargs)  # type: ignore[arg-type]


async def _settle(pilot, predicate, within: float = 10.0) -> None:
    import asyncio

    end = asyncio.get_running_loop().time() + within
    while not predicate():
        assert asyncio.get_running_loop().time() < end, "snapshot set-up timed out"
        await pilot.pause(0.05)
    await pilot.pause(0.3)


async def _with_call(pilot) -> None:
    app: AvaConsole = pilot.app
    await _settle(pilot, lambda: app.engine_running)
    await pilot.press("ctrl+n")
    await _settle(pilot, lambda: app.focused is not None and app.focused.id == "talk")
    await pilot.press(*"hello", "enter")
    await _settle(pilot, lambda: len(app.state.transcript(app.selected_call or "")) >= 3)
    await pilot.press("escape")
    await pilot.pause(0.3)


@pytest.mark.parametrize("size", SIZES)
def test_calls_screen(snap_compare, size) -> None:
    assert snap_compare(_app(), run_before=_with_call, terminal_size=size)


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("key", ["f2", "f3", "f4", "f9", "f10"])
def test_other_screens(snap_compare, size, key) -> None:
    async def run_before(pilot) -> None:
        app: AvaConsole = pilot.app
        await _settle(pilot, lambda: app.engine_running)
        await pilot.press(key)
        await pilot.pause(0.8)

    assert snap_compare(_app(), run_before=run_before, terminal_size=size)


@pytest.mark.parametrize("size", SIZES)
def test_calls_screen_during_a_muted_voice_call(snap_compare, size) -> None:
    async def run_before(pilot) -> None:
        app: AvaConsole = pilot.app
        await _settle(pilot, lambda: app.engine_running)
        await pilot.press("v")
        await _settle(pilot, lambda: app.voice.state == "listening", within=30)
        await pilot.press("m")
        await _settle(pilot, lambda: app.voice.muted)
        app.clear_notifications()

    assert snap_compare(
        _app(audio_backend_factory=lambda i, o, rate, ms: FeedBackend(rate, ms)),
        run_before=run_before,
        terminal_size=size,
    )


@pytest.mark.parametrize("size", [(80, 24), (120, 40), (200, 60)])
def test_calls_screen_with_a_pending_approval(snap_compare, size) -> None:
    """The approval panel above the calls table: the waiting hangup_call, its arguments, 15 s left."""

    async def run_before(pilot) -> None:
        app: AvaConsole = pilot.app
        await _settle(pilot, lambda: app.engine_running)
        await pilot.press("ctrl+n")
        await _settle(pilot, lambda: app.focused is not None and app.focused.id == "talk")
        await pilot.press(*"goodbye", "enter")
        await _settle(pilot, lambda: bool(app.approvals.rows) and bool(app.screen.query("#approvals")))
        await pilot.press("escape")
        first = app.approvals.first
        assert first is not None
        app.clock = FixedClock(at=first.deadline - 15)
        app.screen.show_approvals()  # type: ignore[attr-defined]
        app.clear_notifications()
        await pilot.pause(0.3)

    app = AvaConsole(Path("tests/console/data/approvals.yaml"), clock=FixedClock(), tick=False)
    assert snap_compare(app, run_before=run_before, terminal_size=size)
