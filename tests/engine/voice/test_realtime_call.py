"""RealtimeVoiceCall, the voice driver for speech-to-speech providers, against a scripted RealtimeSession: audio
both ways in the negotiated formats, transcripts into the engine, barge-in with the played report, notices, the
session ending, hangup after the farewell, announcements, usage, and a WAV run whose answer lands on the input's
timeline."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from engine.app import Engine
from engine.config.models import ContextConfig, EngineConfig, HttpConfig, ProviderConfig, Settings
from engine.events import (
    AnnouncementPlayed,
    AnnouncementRequested,
    CallEnded,
    CallUsage,
    EngineError,
    Event,
    TranscriptAdded,
)
from engine.realtime.call import RealtimeVoiceCall
from engine.realtime.driver import voice_call
from engine.realtime.session import (
    PCM16_24K,
    PCMU_8K,
    AssistantAudio,
    AssistantInterrupted,
    AssistantText,
    CallerSpeechStarted,
    CallerSpeechStopped,
    CallerText,
    ProviderNotice,
    ResponseDone,
    UsageReport,
)
from engine.voice.audio import AudioFrame
from engine.voice.g711 import ulaw_decode, ulaw_encode
from engine.voice.pipeline import CallState, VoiceCall
from engine.voice.wav_backend import WavBackend, read_wav, write_wav
from tests.fixtures.audio_backends import FeedBackend
from tests.fixtures.realtime_scripted import (
    ScriptedRealtimeSession,
    provider_of,
    scripted_tools,
    tone,
    use_scripted_realtime,
)
from tests.waiting import wait_until

RATE = 16000


def _settings(tmp_path: Path, greeting: str | None = "Hello.", **options: Any) -> Settings:
    script = tmp_path / "typed.yaml"
    script.write_text('greeting: "Hi."\nfallback: "Pardon?"\n', encoding="utf-8")
    return Settings(
        engine=EngineConfig(http=HttpConfig(enabled=False)),
        providers={
            "rt": ProviderConfig(type="openai_realtime", model="m", options=options),
            "brain": ProviderConfig(type="scripted", script=str(script)),
            "voice": ProviderConfig(type="pipeline", brain="brain"),
        },
        contexts={
            "desk": ContextConfig(provider="rt", greeting=greeting, tools=["get_weather", "hangup_call"]),
            "cascade": ContextConfig(provider="voice", tools=[]),
        },
    )


@pytest.fixture
def make_engine(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Callable[..., Engine]:
    use_scripted_realtime(monkeypatch)

    def make(greeting: str | None = "Hello.", **options: Any) -> Engine:
        return Engine(_settings(tmp_path, greeting, **options), extra_tools=scripted_tools())

    return make


async def _until(pred: Callable[[], bool]) -> None:
    """A condition the code under test has no event for (bounded: 10 s)."""
    await wait_until(pred)


async def _begin(engine: Engine, backend: Any, **kw: Any) -> tuple[RealtimeVoiceCall, asyncio.Task[str], Any]:
    states: list[CallState] = kw.pop("states", [])
    call = RealtimeVoiceCall(engine.voice_parts, backend, "desk", on_state=states.append, settle_s=0.05, **kw)
    task = asyncio.create_task(call.run())
    async with asyncio.timeout(10):
        await call.started.wait()
    prov = provider_of(engine)
    return call, task, prov.sessions[-1]


def _of(events: list[Event], kind: type[Event]) -> list[Any]:
    return [e for e in events if isinstance(e, kind)]


def _ms(backend: FeedBackend) -> float:
    return 1000.0 * sum(f.num_samples for f in backend.played) / backend.sample_rate


async def test_voice_call_picks_the_realtime_driver_from_the_provider(make_engine: Callable[..., Engine]) -> None:
    async with make_engine() as engine:
        backend = FeedBackend(RATE)
        assert isinstance(voice_call(engine.voice_parts, backend, "desk"), RealtimeVoiceCall)
        assert isinstance(voice_call(engine.voice_parts, backend, "cascade"), VoiceCall)
        with pytest.raises(Exception, match="does not run on a realtime provider"):
            RealtimeVoiceCall(engine.voice_parts, backend, "cascade")


async def test_audio_both_ways_transcripts_usage_and_states(make_engine: Callable[..., Engine]) -> None:
    async with make_engine() as engine:
        sub = engine.bus.subscribe(maxsize=1000)
        backend = FeedBackend(RATE)
        states: list[CallState] = []
        levels: list[float] = []
        call, task, live = await _begin(engine, backend, states=states, on_level=levels.append)
        assert call.state in (CallState.THINKING, CallState.SPEAKING)  # the greeting is owed
        assert live.input_spec == PCM16_24K  # the provider takes no 16 kHz: resampled on the way
        await _until(lambda: _ms(backend) >= 5 * 60)  # "Hello." is 6 characters of 60 ms
        await _until(lambda: call.state == CallState.LISTENING)
        # the caller: 16 kHz at the backend, 24 kHz at the provider, the tone intact
        backend.feed(tone_16k(500))
        await live.wait_audio(450)
        heard = np.frombuffer(bytes(live.audio_in), dtype="<i2")
        assert np.abs(heard).max() > 6000
        call.mute(True)
        before = len(live.audio_in)
        backend.feed(tone_16k(200))
        await live.wait_audio(640)
        muted = np.frombuffer(bytes(live.audio_in[before + 960 :]), dtype="<i2")  # past the resampler's tail
        assert muted.size and np.abs(muted).max() < 50
        call.mute(False)
        assert call.input_level_dbfs > -40 and max(levels) > -40  # the meter still shows the real input
        # a turn: the provider heard the caller, answers, runs a tool, reports usage
        live.emit(CallerSpeechStarted())
        await _until(lambda: call.state == CallState.HEARING)
        sent = len(live.audio_in)
        backend.feed(tone_16k(300))
        await _until(lambda: len(live.audio_in) >= sent + live.input_spec.bytes_for_ms(280))
        live.emit(CallerSpeechStopped(), CallerText("weather in Oslo"))
        results = await live.call_tool("get_weather", '{"city": "Oslo"}')
        assert results[0].status == "success"
        live.say("It is 18 degrees.")
        live.emit(UsageReport(input_tokens=120, output_tokens=30, input_audio_s=1.5, output_audio_s=2.0))
        live.emit(UsageReport(input_tokens=10, output_tokens=5))
        await _until(lambda: len(engine.calls.session(call.call_id or "").history.items()) >= 5)
        call.stop()
        assert await task == call.call_id
        events = sub.drain()
        said = [(e.role, e.text) for e in _of(events, TranscriptAdded)]
        assert said == [("assistant", "Hello."), ("user", "weather in Oslo"), ("assistant", "It is 18 degrees.")]
        usage = _of(events, CallUsage)
        assert [(u.input_tokens, u.output_tokens, u.input_audio_s, u.output_audio_s) for u in usage] == [
            (130, 35, 1.5, 2.0)
        ]
        ended = _of(events, CallEnded)
        assert [e.reason for e in ended] == ["ended by operator"]
        assert CallState.SPEAKING in states and CallState.HEARING in states and states[-1] == CallState.ENDED
        assert call.turns and call.turns[0].text == "weather in Oslo" and call.turns[0].first_audio is not None
        assert call.turns[0].audio_s == pytest.approx(0.3, abs=0.03)  # the caller audio sent while speaking
        metrics = engine.metrics.render().decode()
        assert 'ai_agent_provider_tokens_total{kind="input",model="m",provider="rt"} 130.0' in metrics
        assert 'ai_agent_provider_audio_seconds_total{direction="output",provider="rt"} 2.0' in metrics
        assert live.closed and backend._closed


def tone_16k(ms: float) -> np.ndarray:
    t = np.arange(round(RATE * ms / 1000)) / RATE
    return (8000 * np.sin(2 * np.pi * 300 * t)).astype(np.int16)


async def test_barge_in_flushes_the_playout_and_reports_what_was_heard(make_engine: Callable[..., Engine]) -> None:
    async with make_engine(greeting=None) as engine:
        backend = FeedBackend(RATE)
        call, task, live = await _begin(engine, backend)
        chunk = tone(live.output_spec, 300)
        live.emit(AssistantAudio(chunk, "item_a"))  # 300 ms arrived, the rest of the answer still coming
        await _until(lambda: _ms(backend) >= 200)  # what the resampler has let through so far
        await asyncio.sleep(0.05)
        assert call.state == CallState.SPEAKING
        heard = _ms(backend)
        live.emit(CallerSpeechStarted())
        await _until(lambda: bool(live.played_reports))
        assert live.played_reports == [("item_a", heard)]  # exactly what reached the caller
        live.emit(AssistantAudio(chunk, "item_a"))  # late audio of the cut answer is not played
        live.emit(AssistantAudio(tone(live.output_spec, 100), "item_b"), ResponseDone())
        await _until(lambda: _ms(backend) >= heard + 100)
        await asyncio.sleep(0.05)
        after = _ms(backend)  # item_b whole (padded to a 20 ms chunk), nothing more of item_a
        assert heard + 100 <= after <= heard + 120 and call.barge_ins == 1
        # the provider cuts its own answer (Gemini interrupted): only that item's audio goes
        live.emit(AssistantAudio(chunk, "item_c"))
        await _until(lambda: _ms(backend) >= after + 200)
        await asyncio.sleep(0.05)
        heard_c = _ms(backend) - after
        live.emit(AssistantInterrupted("item_other"))  # not what is playing: nothing happens
        live.emit(AssistantInterrupted("item_c"))
        await _until(lambda: len(live.played_reports) == 2)
        assert live.played_reports[1] == ("item_c", heard_c)
        assert not call.barge_in()  # nothing playing any more
        call.stop()
        await task


@pytest.mark.parametrize("how", ["fatal", "closed", "raised"])
async def test_the_provider_ends_the_call_with_a_clear_reason(make_engine: Callable[..., Engine], how: str) -> None:
    async with make_engine(greeting=None) as engine:
        sub = engine.bus.subscribe(maxsize=1000)
        call, task, live = await _begin(engine, FeedBackend(RATE))
        live.emit(ProviderNotice("rate limited, slowing down", code="rate_limit"))
        if how == "fatal":
            live.emit(ProviderNotice("insufficient_quota: you exceeded your quota", fatal=True))
        elif how == "closed":
            live.end()
        else:
            live.fail(KeyError("delta"))  # an adapter bug: this call ends, the engine stays up
        async with asyncio.timeout(10):
            await task
        events = sub.drain()
        errors = [e.message for e in _of(events, EngineError)]
        assert "rt: rate limited, slowing down" in errors  # non-fatal: said with the provider's name, call went on
        reason = _of(events, CallEnded)[0].reason
        expected = {
            "fatal": "rt: insufficient_quota: you exceeded your quota",
            "closed": "rt: the provider closed the session",
        }
        if how in expected:
            assert reason == expected[how] == call.end_reason
        else:
            assert reason == call.end_reason == "rt: session failed: KeyError: 'delta'"
            assert engine.calls_info() == []


async def test_hangup_ends_the_call_after_the_farewell_has_played(make_engine: Callable[..., Engine]) -> None:
    async with make_engine(greeting=None) as engine:
        sub = engine.bus.subscribe(maxsize=1000)
        backend = FeedBackend(RATE)
        call, task, live = await _begin(engine, backend)
        live.emit(CallerSpeechStarted(), CallerSpeechStopped(), CallerText("bye"))
        await live.call_tool("hangup_call", '{"farewell_message": "Goodbye!"}')
        played_at_hangup = _ms(backend)
        live.emit(ResponseDone())  # the function-call response: no audio, the call stays up
        live.emit(AssistantText("One moment.", True, "item_note"))  # the later marker: read after the ResponseDone
        said: list[str] = []

        def marker_recorded() -> bool:
            said.extend(e.text for e in _of(sub.drain(), TranscriptAdded))
            return "One moment." in said

        await _until(marker_recorded)
        assert not task.done() and call.end_reason is None
        live.say("Goodbye, and thanks for calling!", ms=1500)
        async with asyncio.timeout(10):
            await task
        assert _ms(backend) - played_at_hangup >= 1500  # every sample of the farewell went out first
        assert call.end_reason == "hangup"
        assert [e.reason for e in _of(sub.drain(), CallEnded)] == ["hangup"]


async def test_hangup_without_a_farewell_ends_after_the_timeout(make_engine: Callable[..., Engine]) -> None:
    async with make_engine(greeting=None) as engine:
        call, task, live = await _begin(engine, FeedBackend(RATE), farewell_timeout_s=0.2)
        await live.call_tool("hangup_call", "{}")
        live.emit(ResponseDone())
        async with asyncio.timeout(10):
            await task
        assert call.end_reason == "hangup"


async def test_announcements_go_to_the_provider(make_engine: Callable[..., Engine]) -> None:
    async with make_engine(greeting=None) as engine:
        sub = engine.bus.subscribe(maxsize=1000)
        call, task, live = await _begin(engine, FeedBackend(RATE))
        assert call.call_id is not None
        engine.bus.publish(AnnouncementRequested(call_id="other", text="not ours", exposed_name="x"))
        engine.bus.publish(AnnouncementRequested(call_id=call.call_id, text="One moment.", exposed_name="x"))
        await _until(lambda: bool(live.announcements))
        live.announce_ok = False  # a provider without a mechanism: nothing is said, nothing claimed
        engine.bus.publish(AnnouncementRequested(call_id=call.call_id, text="Still on it.", exposed_name="x"))
        await _until(lambda: len(live.announcements) == 2)
        assert live.announcements == ["One moment.", "Still on it."]
        call.stop()
        await task
        played = [(e.call_id, e.text) for e in _of(sub.drain(), AnnouncementPlayed)]
        assert played == [(call.call_id, "One moment.")]


async def test_a_wav_run_puts_the_answer_on_the_inputs_timeline(
    make_engine: Callable[..., Engine], tmp_path: Path
) -> None:
    """in.wav: 1 s silence, 1 s of caller tone, 2 s silence. The scripted provider's VAD fires at 2.4 s of audio
    and it answers with 0.8 s: out.wav has the greeting at 0 and the answer from 2.4 s, nothing in between."""
    caller = np.concatenate([np.zeros(RATE, np.int16), tone_16k(1000), np.zeros(2 * RATE, np.int16)])
    write_wav(tmp_path / "in.wav", AudioFrame(caller, RATE))
    async with make_engine(greeting="Hi.") as engine:
        backend = WavBackend(tmp_path / "in.wav", tmp_path / "out.wav", timeline=True)
        call = RealtimeVoiceCall(engine.voice_parts, backend, "desk", settle_s=0.2)
        run = asyncio.create_task(call.run())
        await call.started.wait()
        live: ScriptedRealtimeSession = provider_of(engine).sessions[-1]

        def vad() -> None:
            live.emit(CallerSpeechStarted(), CallerSpeechStopped(), CallerText("hello"))
            live.say("Hello back.", ms=800)

        live.when_heard(2400, vad)
        async with asyncio.timeout(20):
            await run
    out = read_wav(tmp_path / "out.wav")
    assert out.sample_rate == RATE
    loud = np.flatnonzero(np.abs(out.samples.astype(np.int32)) > 2000) / RATE
    greeting = loud[loud < 1.0]
    answer = loud[loud >= 1.0]
    assert greeting.size and greeting[0] < 0.05 and greeting[-1] == pytest.approx(0.18, abs=0.03)
    # the provider fired on 2.4 s of audio it had; the backend had read that plus the 16→24 kHz resampler's
    # hold-back (≤ 31 ms) and at most one more 20 ms frame: the answer starts there, and lasts its 0.8 s
    assert 2.4 <= answer[0] <= 2.4 + 0.031 + 0.02 + 0.01
    assert answer[-1] - answer[0] == pytest.approx(0.8, abs=0.03)
    assert call.end_reason == "caller finished"


class BrokenSpeaker(FeedBackend):
    async def _output_chunk(self, frame: AudioFrame) -> None:
        raise OSError("output device unplugged")


async def test_a_failing_sound_device_ends_the_call_saying_so(make_engine: Callable[..., Engine]) -> None:
    async with make_engine() as engine:
        sub = engine.bus.subscribe(maxsize=1000)
        call, task, _ = await _begin(engine, BrokenSpeaker(RATE))  # the greeting's first chunk fails
        async with asyncio.timeout(10):
            await task
        assert call.end_reason is not None and call.end_reason.endswith(
            ":playout failed: OSError: output device unplugged"
        )
        assert [e.reason for e in _of(sub.drain(), CallEnded)] == [call.end_reason]


async def test_an_8_khz_backend_is_offered_as_mu_law_and_passes_through(make_engine: Callable[..., Engine]) -> None:
    """The phone's backend runs at 8 kHz: the session is offered μ-law, which the provider takes as is, so the
    caller's frames are only μ-law encoded (no resampling) and its μ-law answer is only decoded."""
    async with make_engine(greeting=None) as engine:
        backend = FeedBackend(8000)
        call, task, live = await _begin(engine, backend)
        assert live.setup is not None and live.setup.audio == PCMU_8K == live.input_spec == live.output_spec
        samples = (tone_16k(400)[::2]).astype(np.int16)  # 300 Hz at 8 kHz
        backend.feed(samples)
        await live.wait_audio(400)
        assert bytes(live.audio_in[:3200]) == ulaw_encode(samples)
        answer = tone(PCMU_8K, 200)
        live.emit(AssistantAudio(answer, "item_1"), ResponseDone())
        await _until(lambda: _ms(backend) >= 200)
        played = np.concatenate([f.samples for f in backend.played])[:1600]
        assert np.array_equal(played, ulaw_decode(answer))
        call.stop()
        await task


class BufferedSpeaker(FeedBackend):
    """An output that holds 60 ms the caller has not heard yet (a sound card's or the network's buffer)."""

    def queued_output_s(self) -> float:
        return 0.06 if self.is_playing else 0.0


async def test_barge_in_reports_only_what_left_the_output_buffer(make_engine: Callable[..., Engine]) -> None:
    async with make_engine(greeting=None) as engine:
        backend = BufferedSpeaker(RATE)
        call, task, live = await _begin(engine, backend)
        live.emit(AssistantAudio(tone(live.output_spec, 300), "item_a"))
        await _until(lambda: _ms(backend) >= 200)
        await asyncio.sleep(0.05)
        handed = _ms(backend)
        live.emit(CallerSpeechStarted())
        await _until(lambda: bool(live.played_reports))
        assert live.played_reports == [("item_a", handed - 60.0)]
        call.stop()
        await task


async def test_the_callers_words_come_before_the_tools_of_their_turn(make_engine: Callable[..., Engine]) -> None:
    """An adapter reads the caller's transcript and a tool call in one burst and runs the tool at once: the
    transcript is recorded as soon as the driver sees it, so history and the bus show the words first."""
    async with make_engine(greeting=None) as engine:
        sub = engine.bus.subscribe(maxsize=1000)
        call, task, live = await _begin(engine, FeedBackend(RATE))
        await asyncio.sleep(0.05)  # every part of the call is up and waiting for the provider
        live.emit(CallerSpeechStarted(), CallerSpeechStopped(), CallerText("weather in Oslo"))
        tool = asyncio.create_task(live.call_tool("get_weather", '{"city": "Oslo"}'))  # the adapter's own task
        await tool
        live.say("It is 18 degrees.")
        session = engine.calls.session(call.call_id or "")
        await _until(lambda: len(session.history.items()) >= 4)
        kinds = [type(i).__name__ + ":" + str(getattr(i, "role", "")) for i in session.history.items()]
        assert kinds == ["Message:user", "ToolCallItem:", "ToolResultItem:", "Message:assistant"]
        order = [e.type for e in sub.drain() if e.type in ("transcript.added", "tool.requested")]
        assert order[:2] == ["transcript.added", "tool.requested"]
        call.stop()
        await task
