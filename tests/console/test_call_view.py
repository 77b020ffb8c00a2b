"""Pilot tests of the call view (``g`` on Calls): the latency waterfall and the speaking timeline, on a recorded
call (fixed times) and on a call driven through the engine; a replay of the events' JSON draws the same view."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from console.app import AvaConsole
from console.screens.call_view import CallViewScreen
from console.timings_state import VIEW_ONLY, TimingsState
from console.widgets.timeline import LANE_W, Timeline
from console.widgets.waterfall import Waterfall, label_width, scale_ms, summary
from engine.events import Event
from tests.console.helpers import record_notifications
from tests.fixtures.timed_call import CALL, timed_call_events


def _lines(text: Any) -> list[str]:
    return str(text.plain if hasattr(text, "plain") else text).split("\n")


async def _recorded(pilot: Any, app: AvaConsole, wait: Any) -> None:
    await wait(pilot, lambda: app.engine_running, within=30)
    for ev in timed_call_events():
        app.engine.bus.publish(ev)  # type: ignore[union-attr]
    await wait(pilot, lambda: len(getattr(app.timings.get(CALL), "turns", ())) == 4)


async def test_g_opens_the_waterfall_whose_bars_match_the_recorded_timings(config_path: Path, wait) -> None:
    app = AvaConsole(config_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await _recorded(pilot, app, wait)
        app.selected_call = CALL
        await pilot.press("g")
        await wait(pilot, lambda: isinstance(app.screen, CallViewScreen))
        screen = app.screen
        head = str(screen.query_one("#cv-summary").render())
        assert "p50 1.80 s" in head and "p95 3.35 s" in head and "worst: turn 4 3.52 s" in head
        assert "(aviation_atis·get_atis)" in head and "over budget: 2" in head
        fall = screen.query_one(Waterfall)
        width = fall.size.width
        lines = _lines(fall.lines(width))
        turns = list(app.timings.get(CALL).turns)  # type: ignore[union-attr]
        label_w = label_width(turns, width)  # the longest stage label's width
        bar_w = width - label_w - 8 - 2
        scale = scale_ms(turns)
        turn2 = lines.index(next(ln for ln in lines if ln.startswith("turn 2")))
        assert "STANDARD" in lines[turn2] and "2.41 s / budget 1.50 s" in lines[turn2]
        assert "slowest: dice·roll" in lines[turn2]
        tool = next(ln for ln in lines[turn2:] if ln.lstrip().startswith("dice·roll"))
        bar = tool[label_w : label_w + bar_w]
        # the tool's bar starts at 900 ms and lasts 1100 ms on the shared scale (±1 cell of rounding)
        assert abs(bar.index("█") - 900 / scale * bar_w) <= 1
        assert abs(bar.count("█") - 1100 / scale * bar_w) <= 1
        assert tool.rstrip().endswith("1.10 s")
        # the budget rule (1500 ms) is drawn where no bar covers it, at the same column in every stage line
        stt = lines[turn2 + 2][label_w : label_w + bar_w]
        assert stt.index("│") == int(1500 / scale * bar_w)
        playout = next(ln for ln in lines[turn2:] if ln.startswith("playout"))
        assert playout.rstrip().endswith("1.80 s✂")  # cut by barge-in
        timeline = screen.query_one(Timeline)
        lanes = _lines(timeline.lines(timeline.size.width))
        assert [ln[:LANE_W].strip() for ln in lanes[:4]] == ["caller", "agent", "tools", "notes"]
        caller = lanes[0][LANE_W:]
        assert caller.count("█") > 0 and len([r for r in caller.replace("·", " ").split() if r]) == 4
        assert lanes[1].count("✂") == 1 and "♪One moment" in lanes[3]
        await pilot.press("escape")
        await wait(pilot, lambda: not isinstance(app.screen, CallViewScreen))


async def test_a_call_through_the_engine_shows_its_turns_live(config_path: Path, wait) -> None:
    app = AvaConsole(config_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait(pilot, lambda: app.engine_running)
        await pilot.press("ctrl+n")
        await wait(pilot, lambda: app.selected_call is not None)
        await pilot.press("s")  # Ctrl+N leaves focus on the calls table; s goes to the talk box
        await wait(pilot, lambda: app.focused is not None and app.focused.id == "talk")
        call_id = app.selected_call
        assert call_id is not None
        await pilot.press(*"hello", "enter")
        await wait(pilot, lambda: len(getattr(app.timings.get(call_id), "turns", ())) == 1)
        await pilot.press("escape", "g")
        await wait(pilot, lambda: isinstance(app.screen, CallViewScreen))
        fall = app.screen.query_one(Waterfall)
        turn = app.timings.get(call_id).turns[0]  # type: ignore[union-attr]
        assert [s.name for s in turn.stages] == ["model"]
        text = "\n".join(_lines(fall.lines(fall.size.width)))
        assert "turn 1" in text and f"{turn.stages[0].duration_ms:.0f} ms" in text
        assert not [line for line in app.state.log if line.type in VIEW_ONLY]  # the view's, not the event log's
        screen = app.screen
        await pilot.press("escape")  # back on Calls: a second turn reaches the view when it is opened again
        await pilot.press("s", *"hello again", "enter")
        await wait(pilot, lambda: len(app.timings.get(call_id).turns) == 2)  # type: ignore[union-attr]
        await pilot.press("escape", "g")
        await wait(pilot, lambda: isinstance(app.screen, CallViewScreen))
        assert app.screen is screen  # the call's view is kept: opening it again redraws it
        assert "turn 2" in "\n".join(_lines(app.screen.query_one(Waterfall).lines(100)))


async def test_g_without_a_selected_call_says_so(config_path: Path, wait) -> None:
    app = AvaConsole(config_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait(pilot, lambda: app.engine_running)
        seen = record_notifications(app)
        await pilot.press("g")
        await pilot.pause(0.2)
        assert not isinstance(app.screen, CallViewScreen)
        assert "select a call first" in seen


def _replayed(ev: Event) -> Event:
    """An event as the flight recorder's replay rebuilds it from its JSON line (stages come back as dicts)."""
    import json

    from engine.recorder.codec import event_from_dict

    back = event_from_dict(json.loads(ev.to_json()))
    assert back is not None and type(back) is type(ev)
    return back


def test_a_replay_of_the_events_json_draws_the_same_waterfall_and_timeline() -> None:
    live, replay = TimingsState(), TimingsState()
    live.apply(timed_call_events())
    replay.apply(_replayed(e) for e in timed_call_events())
    a, b = live.get(CALL), replay.get(CALL)
    assert str(summary(a)) == str(summary(b))
    for width in (80, 200):
        fa, fb = Waterfall(), Waterfall()
        fa.timings, fb.timings = a, b
        assert fa.lines(width).plain == fb.lines(width).plain
        ta, tb = Timeline(), Timeline()
        ta.timings, tb.timings = a, b
        assert ta.lines(width).plain == tb.lines(width).plain
