"""Snapshot tests of the main screens at 120×40 and 80×24 (fixed clock, no ticking durations, fixed ids)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Input, RichLog

from console.app import AvaConsole
from console.format import FixedClock
from console.widgets.wrap_log import WrapLog
from tests.console.conftest import servers_up
from tests.console.helpers import paste, transcript_drawn
from tests.console.snapshot_runs import compare_svg, screens_of_one_run
from tests.fixtures.audio_backends import FeedBackend

ROOT = Path(__file__).resolve().parents[2]
SIZES = [(120, 40), (80, 24)]


@pytest.fixture(autouse=True)
def _repo_cwd(monkeypatch: pytest.MonkeyPatch, memory_keyring) -> None:
    monkeypatch.chdir(ROOT)


def _app(**kwargs: object) -> AvaConsole:
    return AvaConsole(Path("tests/console/data/console.yaml"), clock=FixedClock(), tick=False, **kwargs)  # type: ignore[arg-type]


async def _settle(pilot, predicate, within: float = 30.0) -> None:
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
    await _settle(
        pilot, lambda: app.selected_call is not None and app.focused is not None and app.focused.id == "calls"
    )
    await pilot.press("s")
    await _settle(pilot, lambda: app.focused is not None and app.focused.id == "talk")
    await pilot.press(*"hello", "enter")
    await _settle(pilot, lambda: len(app.state.transcript(app.selected_call or "")) >= 3)
    await pilot.press("escape")
    # the state has the lines before the transcript pane has written them (a loaded machine shows the gap)
    await _settle(pilot, lambda: len(app.screen.query_one("#transcript", WrapLog).lines) >= 3)


@pytest.mark.parametrize("size", SIZES)
def test_calls_screen(snap_compare, size) -> None:
    assert snap_compare(_app(), run_before=_with_call, terminal_size=size)


OTHER_KEYS = ["f2", "f3", "f4", "f9", "f10"]


@pytest.mark.parametrize(
    ("key", "size"), [pytest.param(k, s, id=f"{k}-size{i}") for i, s in enumerate(SIZES) for k in OTHER_KEYS]
)
def test_other_screens(snapshot, request, size, key) -> None:
    """Tool log, Servers, Budget, Secrets and Config: one console run per size visits them all (snapshot_runs)."""

    async def run_before(pilot) -> None:
        app: AvaConsole = pilot.app
        await _settle(pilot, lambda: app.engine_running, within=60)  # a worker's first console imports the engine

    async def show(pilot, key: str) -> None:
        await pilot.press(key)
        await pilot.pause(0.8)

    shots = screens_of_one_run("other_screens", _app, size, run_before, OTHER_KEYS, show)
    assert compare_svg(snapshot, request, shots[key])


@pytest.mark.parametrize("size", SIZES)
def test_calls_screen_during_a_muted_voice_call(snap_compare, size) -> None:
    async def run_before(pilot) -> None:
        app: AvaConsole = pilot.app
        await _settle(pilot, lambda: app.engine_running)
        await pilot.press("v")
        await _settle(pilot, lambda: app.voice.state == "listening", within=30)
        await pilot.press("m")
        await _settle(pilot, lambda: app.voice.muted)
        # the greeting's line is in the state before the transcript pane and the event log have written it
        await _settle(pilot, lambda: len(app.screen.query_one("#transcript", WrapLog).lines) >= 1)
        log = app.screen.query_one("#event-log", WrapLog)  # left out below 30 lines
        await _settle(pilot, lambda: not log.display or len(log.lines) >= 1)
        app.clear_notifications()

    assert snap_compare(
        _app(audio_backend_factory=lambda i, o, rate, ms: FeedBackend(rate, ms)),
        run_before=run_before,
        terminal_size=size,
    )


COCKPIT_SIZES = [(80, 24), (120, 40), (200, 60)]


async def _cockpit(pilot, go: Path) -> None:
    """A test call on the config with servers, with a line long enough to wrap; every server settled (fx up, crashy
    failed). No tool runs: its latency (and a hung-up call's duration) would differ from run to run.

    crashy fails only when ``go`` exists (``--start-when``), made once fx is up: the event log has fx up before
    crashy failed however slowly either child starts."""
    app: AvaConsole = pilot.app

    def servers_settled() -> bool:
        if app.engine is None:
            return False
        states = {s["id"]: s["state"] for s in app.engine.server_status()["servers"]}
        return states == {"fx": "up", "crashy": "failed"}

    await _settle(pilot, lambda: servers_up(app, "fx"), within=60)  # from the console's start: the engine loads first
    await asyncio.to_thread(go.touch)
    await _settle(pilot, lambda: app.engine_running and servers_settled(), within=30)
    await pilot.press("ctrl+n")
    await _settle(pilot, lambda: app.selected_call is not None and app.focused is not None)
    call_id = app.selected_call or ""
    await pilot.press("s")
    await _settle(pilot, lambda: app.focused is not None and app.focused.id == "talk")
    await paste(pilot, "hello, this line is long enough to wrap inside the transcript pane at every size END")
    await pilot.press("enter")
    await _settle(pilot, lambda: len(app.state.transcript(call_id)) >= 3)
    await pilot.press("escape")
    # the transcript pane has drawn its lines (a RichLog renders a write once it has a size: a loaded run's 80x24
    # shot was taken with the pane still empty)
    await _settle(pilot, lambda: len(app.screen.query_one("#transcript", RichLog).lines) >= 3)


COCKPIT_KEYS = ["f1", "f2", "f3", "f4"]


@pytest.mark.parametrize(
    ("key", "size"),
    [pytest.param(k, s, id=f"{k}-size{i}") for i, s in enumerate(COCKPIT_SIZES) for k in COCKPIT_KEYS],
)
def test_cockpit_screens(snapshot, request, monkeypatch, tmp_path, size, key) -> None:
    """Calls, Tool log, Servers and Budget at 80×24, 120×40 and 200×60, with servers and calls on them: one console
    run per size visits the four screens (snapshot_runs)."""
    go = tmp_path / "crashy-go"
    monkeypatch.setenv("AVA_TEST_CRASHY_GO", str(go))  # the config's crashy waits for this file (see _cockpit)

    async def show(pilot, key: str) -> None:
        await pilot.press(key)
        await pilot.pause(0.8)
        pilot.app.clear_notifications()
        await pilot.pause(0.2)

    def make_app() -> AvaConsole:
        return AvaConsole(Path("tests/console/data/console_servers.yaml"), clock=FixedClock(), tick=False)

    async def run_before(pilot) -> None:
        await _cockpit(pilot, go)

    shots = screens_of_one_run("cockpit", make_app, size, run_before, COCKPIT_KEYS, show)
    assert compare_svg(snapshot, request, shots[key])


@pytest.mark.parametrize("size", [(80, 24), (120, 40), (200, 60)])
def test_calls_screen_with_a_pending_approval(snap_compare, size) -> None:
    """The approval panel above the calls table: the waiting hangup_call, its arguments, 15 s left."""

    async def run_before(pilot) -> None:
        app: AvaConsole = pilot.app
        await _settle(pilot, lambda: app.engine_running)
        await pilot.press("ctrl+n")
        await _settle(pilot, lambda: app.focused is not None and app.focused.id == "calls")
        await pilot.press("s")
        await _settle(pilot, lambda: app.focused is not None and app.focused.id == "talk")
        await pilot.press(*"goodbye", "enter")
        await _settle(pilot, lambda: bool(app.approvals.rows) and bool(app.screen.query("#approvals")))
        # the "one moment" the caller hears meanwhile is the log's last line: wait for it, or the log may end earlier
        await _settle(pilot, lambda: any(line.type == "announcement.requested" for line in app.state.log))
        await pilot.press("escape")
        await _settle(pilot, lambda: transcript_drawn(app))
        first = app.approvals.first
        assert first is not None
        app.clock = FixedClock(at=first.deadline - 15)
        app.screen.show_approvals()  # type: ignore[attr-defined]
        app.clear_notifications()
        await pilot.pause(0.3)

    app = AvaConsole(Path("tests/console/data/approvals.yaml"), clock=FixedClock(), tick=False)
    assert snap_compare(app, run_before=run_before, terminal_size=size)


@pytest.mark.parametrize("size", [(80, 24), (120, 40), (200, 60)])
def test_call_view_waterfall_and_timeline(snap_compare, size) -> None:
    """A recorded four-turn call (fixed times) on the call view: ``g`` on the Calls screen."""
    from tests.fixtures.timed_call import CALL, timed_call_events

    async def run_before(pilot) -> None:
        app: AvaConsole = pilot.app
        await _settle(pilot, lambda: app.engine_running, within=30)
        for ev in timed_call_events():
            app.engine.bus.publish(ev)  # type: ignore[union-attr]
        await _settle(pilot, lambda: len(getattr(app.timings.get(CALL), "turns", ())) == 4)
        app.selected_call = CALL
        await pilot.press("g")
        await pilot.pause(0.5)

    assert snap_compare(_app(), run_before=run_before, terminal_size=size)


@pytest.mark.parametrize("size", [(80, 24), (120, 40), (200, 60)])
def test_a_tools_question_to_the_operator(snap_compare, size) -> None:
    """The elicitation dialog over the Calls screen: the table server asks how many guests, 42 s left."""

    async def run_before(pilot) -> None:
        app: AvaConsole = pilot.app
        await _settle(pilot, lambda: app.engine_running)
        await _settle(pilot, lambda: bool(app.engine and app.engine.server_status()["servers"]))
        await _settle(pilot, lambda: app.engine.server_status()["servers"][0]["state"] == "up")  # type: ignore[union-attr]
        await pilot.press("ctrl+n")
        await _settle(pilot, lambda: app.focused is not None and app.focused.id == "calls")
        await pilot.press("s")
        await _settle(pilot, lambda: app.focused is not None and app.focused.id == "talk")
        await pilot.press(*"book", "enter")
        await _settle(pilot, lambda: bool(app.elicitations.open))
        # the caller's "one moment" comes once the tool has run past its slow threshold: in the log every time
        await _settle(pilot, lambda: any(line.type == "announcement.requested" for line in app.state.log))
        # under the dialog, the Calls screen's transcript pane writes its lines after the state has them (a loaded
        # machine took the frame before: the greeting and "book" were missing)
        await _settle(pilot, lambda: len(app.screen_stack[0].query_one("#transcript", WrapLog).lines) >= 1)
        (row,) = [app.elicitations.rows[i] for i in app.elicitations.open]
        app.clock = FixedClock(at=row.deadline - 42)
        app.screen._tick()  # type: ignore[attr-defined]
        field = app.screen.query_one("#el-guests", Input)
        field.cursor_blink = False  # a blinking cursor is on or off depending on when the frame is taken
        field.blur()
        app.clear_notifications()
        await pilot.pause(0.3)

    app = AvaConsole(Path("tests/console/data/elicitation.yaml"), clock=FixedClock(), tick=False)
    assert snap_compare(app, run_before=run_before, terminal_size=size)


@pytest.mark.parametrize("size", [(80, 24), (120, 40), (200, 60)])
def test_calls_screen_attached_to_three_engines(snap_compare, size) -> None:
    """``--attach``: three engines (the same call id on two of them), the Engine column, one engine lost (its call
    "lost"), the selected call's transcript and the engine's tools; an in-process client, fixed times."""
    from engine.events import CallStarted, TranscriptAdded
    from tests.console.remote_double import InProcessRemote

    def answer(engine_id: str, command: str, args: dict[str, Any]) -> dict[str, Any]:
        tools = [{"exposed_name": "mcp_dice_roll"}, {"exposed_name": "mcp_dice_coin"}]
        return {"servers": [{"id": "dice", "tools": tools}]} if command == "server_status" else {}

    remote = InProcessRemote("redis://10.0.0.5:6379/0", answer=answer)
    for i, (engine_id, caller) in enumerate((("east-1", "Ann"), ("west-2", "Bob"), ("lab-3", "Cy"))):
        remote.join(engine_id, host=f"host{i}", version="0.1.0", contexts=("demo",))
        remote.emit(
            engine_id,
            CallStarted(
                ts=905 + i * 10,
                call_id="call-1",
                context="demo",
                provider="script",
                caller_name=caller,
                tier="standard",
            ),
        )
    remote.emit(
        "west-2",
        CallStarted(ts=970, call_id="call-2", context="demo", provider="script", caller_name="Dee", tier="fast"),
    )
    remote.emit(
        "east-1",
        TranscriptAdded(ts=910, call_id="call-1", role="assistant", text="Hello, how can I help?"),
        TranscriptAdded(ts=920, call_id="call-1", role="caller", text="Roll a die for me"),
    )

    async def run_before(pilot) -> None:
        app: AvaConsole = pilot.app
        await _settle(pilot, lambda: len(app.state.calls) == 4 and app.screen.detail_ready)  # type: ignore[attr-defined]
        remote.lose("lab-3", "heartbeat expired")
        await _settle(
            pilot,
            lambda: (
                "lab-3/call-1" in app.state.ended
                and app.link is not None
                and all(e in app.link.tools for e in ("east-1", "west-2"))
            ),
        )
        app.screen._select("east-1/call-1")  # type: ignore[attr-defined]
        app.screen.refresh_all()  # type: ignore[attr-defined]
        app.clear_notifications()
        await pilot.pause(0.3)

    app = AvaConsole(Path("."), clock=FixedClock(at=1000.0), tick=False, remote=remote)
    assert snap_compare(app, run_before=run_before, terminal_size=size)
