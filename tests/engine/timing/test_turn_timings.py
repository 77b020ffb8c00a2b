"""``turn.timings`` and ``speaking.changed``: the stage timings the waterfall and the speaking timeline draw.

Through the installed ``ava-engine call --json`` (text and voice), and the book itself on a fake clock (exact
stage durations for the text, pipeline and realtime shapes of a turn)."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any

from engine.calls.turn_timing import TurnTimingBook
from engine.events import EventBus, SpeakingChanged, ToolCompleted, TurnTimings
from engine.sessions.session import CallSession
from engine.voice.speaking import SpeakingTap
from tests.engine.voice.helpers import ROOT, caller_wav

ENGINE = ROOT / ".venv" / "bin" / "ava-engine"


def _cli(*args: str) -> list[dict[str, Any]]:
    p = subprocess.run(
        [str(ENGINE), "--config", str(ROOT / "config" / "default.yaml"), *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=90,
        env=dict(os.environ),
    )
    assert p.returncode == 0, p.stderr
    return [json.loads(line) for line in p.stdout.splitlines()]


def test_text_call_publishes_one_timings_event_per_turn_with_model_and_tool_stages() -> None:
    events = _cli("call", "--context", "demo", "--say", "roll a d20", "--say", "hello", "--json")
    timings = [e for e in events if e["type"] == "turn.timings"]
    assert [t["turn"] for t in timings] == [1, 2]
    first = timings[0]
    assert first["tier"] and first["budget_ms"] > 0
    names = [s["name"] for s in first["stages"]]
    assert names == ["model", "tool"]
    model, tool = first["stages"]
    done = next(e for e in events if e["type"] == "tool.completed")
    assert (tool["label"], tool["server"], tool["status"]) == ("mcp_dice_roll", "dice", "success")
    assert tool["duration_ms"] == done["latency_ms"]
    # the tool ran inside the model's span, and the turn's latency is the model's span on a text call
    assert model["start_ms"] == 0.0 and tool["start_ms"] + tool["duration_ms"] <= model["duration_ms"] + 1.0
    assert first["latency_ms"] == model["duration_ms"]
    assert [s["name"] for s in timings[1]["stages"]] == ["model"]


def test_voice_call_times_endpointing_stt_model_tts_and_playout(tmp_path: Path) -> None:
    caller_wav(tmp_path / "in.wav", 10.0, [("roll two d six", "en-us", 175, 6.0), ("goodbye", "en-us", 175, 4)])
    events = _cli(
        "call",
        "--context",
        "demo",
        "--audio-in",
        str(tmp_path / "in.wav"),
        "--audio-out",
        str(tmp_path / "out.wav"),
        "--json",
    )
    timings = [e for e in events if e["type"] == "turn.timings"]
    assert [t["turn"] for t in timings] == [1, 2]
    stages = {s["name"]: s for s in timings[0]["stages"]}
    assert list(stages) == ["endpointing", "stt", "model", "tool", "tts", "playout"]
    assert stages["tool"]["label"] == "mcp_dice_roll"
    # the endpointer waits the configured silence (softphone.vad_silence_ms in the demo config)
    assert stages["endpointing"]["start_ms"] == 0.0 and stages["endpointing"]["duration_ms"] > 100
    order = ["endpointing", "stt", "model", "tts", "playout"]
    for a, b in itertools.pairwise(order):  # each stage starts as the one before ends (a task switch between)
        gap = stages[b]["start_ms"] - (stages[a]["start_ms"] + stages[a]["duration_ms"])
        assert -0.2 <= gap <= 50.0, (a, b, gap)
    assert timings[0]["latency_ms"] == stages["playout"]["start_ms"]
    speaking = [(e["who"], e["speaking"]) for e in events if e["type"] == "speaking.changed"]
    assert speaking[:2] == [("agent", True), ("agent", False)]  # the greeting
    assert ("caller", True) in speaking and ("caller", False) in speaking


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _book() -> tuple[EventBus, TurnTimingBook, _Clock, Any]:
    bus, clock = EventBus(), _Clock()
    book = TurnTimingBook(bus, {"fast": 400, "standard": 1500}.__getitem__, clock)
    return bus, book, clock, bus.subscribe(types={TurnTimings.type})


def _session(turn: int = 1, tier: str = "fast") -> CallSession:
    s = CallSession(call_id="c1", context="demo", provider="p")
    s.turn, s.tier = turn, tier
    return s


def test_pipeline_turn_stages_from_the_stamps() -> None:
    _bus, book, clock, sub = _book()
    book.heard("c1", speech_end=100.0, endpointed=100.6, transcribed=100.9)
    clock.now = 101.0
    book.before_turn(_session(), "hi")
    clock.now = 101.5
    book.after_turn(_session())
    assert sub.drain() == []  # a voiced call's turn waits for its audio
    book.first_audio("c1", 101.7)
    book.cut("c1")
    book.played("c1", 102.7)
    (ev,) = sub.drain()
    assert isinstance(ev, TurnTimings)
    assert (ev.tier, ev.budget_ms, ev.latency_ms) == ("fast", 400, 1700.0)
    got = [(s.name, s.start_ms, s.duration_ms, s.status) for s in ev.stages]
    assert got == [
        ("endpointing", 0.0, 600.0, ""),
        ("stt", 600.0, 300.0, ""),
        ("model", 1000.0, 500.0, ""),
        ("tts", 1500.0, 200.0, ""),
        ("playout", 1700.0, 1000.0, "cut"),
    ]


def test_realtime_turn_model_runs_from_the_callers_stop_to_first_audio_and_tools_come_from_events() -> None:
    bus, book, clock, sub = _book()
    book.heard("c1", speech_end=100.0, realtime=True)
    book.first_audio("c1", 100.8)  # a realtime model may speak before its transcript of the caller arrives
    clock.now = 100.9
    book.before_turn(_session(tier="standard"), "roll")
    wall = time.time()
    bus.publish(
        ToolCompleted(
            call_id="c1",
            tool_call_id="t",
            exposed_name="mcp_dice_roll",
            server="dice",
            tool="roll",
            status="success",
            latency_ms=250.0,
            message="5",
            ts=wall,
        )
    )
    clock.now = 101.0
    book.after_turn(_session(tier="standard"))
    book.played("c1", 103.0)
    (ev,) = sub.drain()
    assert isinstance(ev, TurnTimings)
    names = [(s.name, s.label) for s in ev.stages]
    assert names == [("model", ""), ("tool", "mcp_dice_roll"), ("playout", "")]
    assert ev.stages[0].duration_ms == 800.0 and ev.stages[2].duration_ms == 2200.0
    assert ev.stages[1].duration_ms == 250.0 and ev.stages[1].server == "dice"
    assert ev.latency_ms == 800.0 and ev.budget_ms == 1500


def test_an_utterance_that_never_became_a_turn_publishes_nothing() -> None:
    _bus, book, _clock, sub = _book()
    book.heard("c1", speech_end=100.0, realtime=True)
    book.heard("c1", speech_end=101.0, realtime=True)
    book.flush("c1")
    assert sub.drain() == []


def test_speaking_tap_marks_lanes_and_the_barge_in() -> None:
    bus = EventBus()
    sub = bus.subscribe()
    tap = SpeakingTap(bus)
    for state in ["listening", "speaking", "hearing"]:
        if state == "hearing":
            tap.barge_in()
        tap.state("c1", state)
    tap.state("c1", "thinking")
    got = [(e.who, e.speaking, e.barge_in) for e in sub.drain() if isinstance(e, SpeakingChanged)]
    assert got == [("agent", True, False), ("agent", False, True), ("caller", True, False), ("caller", False, False)]
