"""Snapshots of the screens issue 34's "secrets and noise" changed, at 80×24, 120×40 and 200×60: the event log in
sentences (Calls), the leaderboard's p50/p99 before ``min_samples`` runs (Budget), a plaintext keyring named
unencrypted (Secrets, the server form's "store in keyring"), and an unticked checkbox drawn empty (the server form).
One console run per size takes all four (``snapshot_runs``); fixed clock, fixed latencies, a keyring in memory that
calls itself plaintext so the file it names is the same on every machine."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import keyring
import pytest
from textual.widgets import Checkbox

from console.app import AvaConsole
from console.format import FixedClock
from engine.config import set_secret
from engine.events import CallTransferStarted, ToolApprovalResolved, TurnOverBudget
from tests.console.snapshot_runs import compare_svg, screens_of_one_run
from tests.fixtures.memory_keyring import MemoryKeyring

ROOT = Path(__file__).resolve().parents[2]
SIZES = [(80, 24), (120, 40), (200, 60)]
STEPS = ["log", "budget", "secrets", "form"]


class PlaintextKeyring(MemoryKeyring):
    """Named like keyrings.alt's plain-file keyring (so the engine calls it unencrypted); keeps nothing on disk."""

    file_path = "/home/operator/.local/share/python_keyring/keyring_pass.cfg"


@pytest.fixture(autouse=True)
def _plaintext(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.chdir(ROOT)
    old = keyring.get_keyring()
    keyring.set_keyring(PlaintextKeyring())
    try:
        yield
    finally:
        keyring.set_keyring(old)


async def _settle(pilot: Any, predicate: Any, within: float = 30.0) -> None:
    import asyncio

    end = asyncio.get_running_loop().time() + within
    while not predicate():
        assert asyncio.get_running_loop().time() < end, "snapshot set-up timed out"
        await pilot.pause(0.05)
    await pilot.pause(0.3)


async def _run_before(pilot: Any) -> None:
    app: AvaConsole = pilot.app
    await _settle(pilot, lambda: app.engine_running, within=60)
    engine = app.engine
    assert engine is not None
    set_secret("OPENAI_KEY", "sk-test-value")
    layer = engine.budget  # three runs of hangup_call, fewer than budget.min_samples: shown as "~"
    entry = engine.registry.get("hangup_call")
    assert entry is not None
    for ms in (40.0, 42.0, 90.0):
        layer.book.record(layer.board.key_for(entry.tool.definition), ms, "success")
    layer.board.recorded(entry.tool.definition)
    engine.bus.publish(CallTransferStarted(call_id="call-1", target="sales", destination="PJSIP/200", ts=1.0))
    engine.bus.publish(
        ToolApprovalResolved(
            approval_id="a1",
            call_id="call-1",
            tool_call_id="t1",
            exposed_name="mcp_dice_roll",
            outcome="timed_out",
            by="timeout",
            ts=2.0,
        )
    )
    engine.bus.publish(TurnOverBudget(call_id="call-1", tier="fast", budget_ms=500, latency_ms=730.4, ts=3.0))
    await _settle(pilot, lambda: sum(line.call_id == "call-1" for line in app.state.log) >= 3)


async def _show(pilot: Any, step: str) -> None:
    app: AvaConsole = pilot.app
    if step == "form":  # a new server's form: two env rows, the second unticked
        await pilot.press("f3")
        await _settle(pilot, lambda: type(app.screen).__name__ == "ServersScreen")
        await pilot.press("a")
        await _settle(pilot, lambda: type(app.screen).__name__ == "ServerForm" and app.screen.loaded)  # type: ignore[attr-defined]
        for _ in range(2):
            app.screen.query_one("#add-env").press()  # type: ignore[attr-defined]
            await pilot.pause(0.2)
        boxes = list(app.screen.query(".kv-keyring").results(Checkbox))
        await _settle(pilot, lambda: len(boxes) == 2 and all("UNENCRYPTED" in b.label.plain for b in boxes))
        boxes[1].value = False
        app.set_focus(None)
        # Each added row's focus scrolls the form, animated and centred on a layout that may not have settled yet:
        # where it stops depends on timing. Scroll to the end, unanimated, so the shot does not.
        await pilot.wait_for_scheduled_animations()
        await pilot.pause(0.2)
        form = app.screen.query_one("#form")
        form.scroll_end(animate=False, immediate=True)
        await _settle(pilot, lambda: form.scroll_y == form.max_scroll_y)
    else:
        await pilot.press({"log": "f1", "budget": "f4", "secrets": "f9"}[step])
    await pilot.pause(0.8)
    app.clear_notifications()
    await pilot.pause(0.2)


def _app() -> AvaConsole:
    return AvaConsole(Path("tests/console/data/console.yaml"), clock=FixedClock(), tick=False)


@pytest.mark.parametrize(
    ("step", "size"), [pytest.param(k, s, id=f"{k}-size{i}") for i, s in enumerate(SIZES) for k in STEPS]
)
def test_secrets_and_noise_screens(snapshot: Any, request: pytest.FixtureRequest, size: Any, step: str) -> None:
    shots = screens_of_one_run("secrets_noise", _app, size, _run_before, STEPS, _show)
    assert compare_svg(snapshot, request, shots[step])
