"""``turn.timings`` and ``speaking.changed`` from the realtime driver (a scripted realtime session): the model's
span runs from the caller's stop to the answer's first audio, the tool call sits inside it with its server, the
playout follows; a barge-in marks the agent's stop and the turn's playout as cut."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from engine.app import Engine
from engine.config.models import ContextConfig, EngineConfig, HttpConfig, ProviderConfig, Settings
from engine.events import SpeakingChanged, TurnTimings
from engine.realtime.call import RealtimeVoiceCall
from engine.realtime.session import CallerSpeechStarted, CallerSpeechStopped, CallerText
from engine.voice.pipeline import CallState
from tests.fixtures.audio_backends import FeedBackend
from tests.fixtures.realtime_scripted import provider_of, scripted_tools, use_scripted_realtime
from tests.waiting import wait_until


@pytest.fixture
def engine(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Engine:
    use_scripted_realtime(monkeypatch)
    settings = Settings(
        engine=EngineConfig(http=HttpConfig(enabled=False)),
        providers={"rt": ProviderConfig(type="openai_realtime", model="m")},
        contexts={"desk": ContextConfig(provider="rt", greeting=None, tools=["get_weather"])},
    )
    return Engine(settings, extra_tools=scripted_tools())


async def _until(pred: Callable[[], bool]) -> None:
    await wait_until(pred, what="the driver's state")


async def _call(engine: Engine) -> tuple[RealtimeVoiceCall, asyncio.Task[str], Any]:
    call = RealtimeVoiceCall(engine.voice_parts, FeedBackend(16000), "desk", settle_s=0.05)
    task = asyncio.create_task(call.run())
    async with asyncio.timeout(10):
        await call.started.wait()
    return call, task, provider_of(engine).sessions[-1]


async def test_a_realtime_turn_is_timed_from_the_callers_stop(engine: Engine) -> None:
    async with engine:
        sub = engine.bus.subscribe(types={TurnTimings.type, SpeakingChanged.type})
        call, task, live = await _call(engine)
        live.emit(CallerSpeechStarted())
        await _until(lambda: call.state == CallState.HEARING)
        live.emit(CallerSpeechStopped(), CallerText("weather in Oslo"))
        await _until(lambda: call.state == CallState.THINKING)
        await live.call_tool("get_weather", '{"city": "Oslo"}')
        live.say("It is 18 degrees.", ms=300)
        await _until(lambda: bool(call.turns) and call.turns[-1].first_audio is not None)
        await _until(lambda: call.state == CallState.LISTENING)
        call.stop()
        await task
        events = sub.drain()
        (timed,) = [e for e in events if isinstance(e, TurnTimings)]
        assert timed.turn == 1 and timed.tier == "standard" and timed.budget_ms > 0
        stages = {s.name: s for s in timed.stages}
        assert [s.name for s in timed.stages] == ["model", "tool", "playout"]
        model, tool, playout = stages["model"], stages["tool"], stages["playout"]
        assert model.start_ms == 0.0 and timed.latency_ms == model.duration_ms
        assert abs(model.duration_ms - playout.start_ms) <= 0.2  # model to first audio, then the answer plays
        assert (tool.label, tool.status) == ("get_weather", "success")
        assert 0 <= tool.start_ms <= model.duration_ms
        assert playout.duration_ms > 0 and playout.status == ""  # as long as the backend took (a test backend
        # takes audio faster than real time; a sound card at its pace)
        lanes = [(e.who, e.speaking) for e in events if isinstance(e, SpeakingChanged)]
        assert lanes[:3] == [("caller", True), ("caller", False), ("agent", True)]
        # the answer plays as one span or more (a gap in the provider's audio ends a span), each one closed
        assert lanes[2:] == [("agent", True), ("agent", False)] * (len(lanes[2:]) // 2)


async def test_barge_in_cuts_the_agent_on_the_timeline_and_the_playout_in_the_waterfall(engine: Engine) -> None:
    async with engine:
        sub = engine.bus.subscribe(types={TurnTimings.type, SpeakingChanged.type})
        call, task, live = await _call(engine)
        live.emit(CallerSpeechStarted())
        live.emit(CallerSpeechStopped(), CallerText("tell me a story"))
        live.say("Once upon a time there was a very long story.", ms=3000, done=False)
        await _until(lambda: call.state == CallState.SPEAKING)
        await asyncio.sleep(0.1)
        live.emit(CallerSpeechStarted())
        await _until(lambda: call.state == CallState.HEARING)
        call.stop()
        await task
        events = sub.drain()
        stops = [e for e in events if isinstance(e, SpeakingChanged) and e.who == "agent" and not e.speaking]
        assert [e.barge_in for e in stops] == [True]
        (timed,) = [e for e in events if isinstance(e, TurnTimings)]
        playout = next(s for s in timed.stages if s.name == "playout")
        assert playout.status == "cut" and playout.duration_ms < 3000
