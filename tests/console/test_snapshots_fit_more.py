"""Snapshots of the screens the last layout cuts changed (issue 34 items 8, 9 follow-up), at 80×24, 120×40 and
200×60: the Calls table with three calls (short headings at 80 columns, no sideways scroll), Budget (the compact
leaderboard below 100 columns and the highlighted row whole under it), Secrets (the highlighted secret's references
under the table: console_refs.yaml references one from two contexts) and the recorded call's view (the latest
announcement whole under the timeline). One console run per size visits them all (``snapshot_runs``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from console.app import AvaConsole
from console.format import FixedClock
from console.widgets.wrap_log import WrapLog
from engine.config import set_secret
from tests.console.snapshot_runs import compare_svg, screens_of_one_run
from tests.console.test_snapshots_layout import _settle, _show

ROOT = Path(__file__).resolve().parents[2]
SIZES = [(80, 24), (120, 40), (200, 60)]
KEYS = ["f1", "f4", "f9", "g"]


@pytest.fixture(autouse=True)
def _repo_cwd(monkeypatch: pytest.MonkeyPatch, memory_keyring: Any) -> None:
    monkeypatch.chdir(ROOT)


async def _three_calls(pilot: Any) -> None:
    """Three test calls, the last one's greeting in the transcript, the focus back on the calls table."""
    app: AvaConsole = pilot.app
    await _settle(pilot, lambda: app.engine_running, within=60)
    for n in (1, 2, 3):
        await pilot.press("ctrl+n")
        await _settle(pilot, lambda n=n: len(app.state.calls) == n and app.screen.detail_ready, 60)  # type: ignore[attr-defined]
    await _settle(pilot, lambda: len(app.screen.query_one("#transcript", WrapLog).lines) >= 1, within=60)
    await pilot.press("escape")


@pytest.mark.parametrize(("key", "size"), [pytest.param(k, s, id=f"{k}-{s[0]}x{s[1]}") for s in SIZES for k in KEYS])
def test_fit_more_screens(snapshot: Any, request: pytest.FixtureRequest, size: tuple[int, int], key: str) -> None:
    def make_app() -> AvaConsole:
        set_secret("AGENT_PERSONA", "calm")  # the memory keyring: the contexts' prompts need it to load
        set_secret("OPENAI_KEY", "unused")  # stored, referenced nowhere
        return AvaConsole(Path("tests/console/data/console_refs.yaml"), clock=FixedClock(), tick=False)

    shots = screens_of_one_run("fit-more", make_app, size, _three_calls, KEYS, _show)
    assert compare_svg(snapshot, request, shots[key])
