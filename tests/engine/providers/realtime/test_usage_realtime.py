"""Usage and cost of a realtime call: OpenAI Realtime's ``response.done`` usage (text and audio tokens both ways,
cached input with its audio part; the shape checked against the SDK's ``RealtimeResponseUsage`` by the fake) is
published per response as ``usage.updated``, priced at the shipped ``gpt-realtime-1.5`` prices, summed in
``call.usage``; per-minute providers cost their session's minutes."""

from __future__ import annotations

import asyncio
from pathlib import Path

import numpy as np
import pytest
from harness import ToolBox
from realtime_openai_fake import Calls, OpenAIRealtimeFake, Say
from realtime_openai_harness import TOOLS, provider_config

from engine.app import Engine
from engine.config.models import ContextConfig, EngineConfig, HttpConfig, ProviderConfig, Settings
from engine.events import BudgetAlert, CallUsage, Event, TranscriptAdded, UsageUpdated
from engine.realtime.call import RealtimeVoiceCall
from engine.voice.audio import AudioFrame
from engine.voice.wav_backend import WavBackend, write_wav

RATE = 16000
#: What one of the fake's responses costs at gpt-realtime-1.5's shipped prices: 40 input tokens (16 cached, of which
#: 10 audio; 30 audio in all, so 20 uncached audio, 4 uncached text), 25 output (20 audio, 5 text).
ONE_RESPONSE = (4 * 4.00 + 16 * 0.40 + 20 * 32.00 + 5 * 16.00 + 20 * 64.00) / 1e6
#: A model with a shipped price (read on OpenAI's model page).
MODEL = "gpt-realtime-1.5"


def _priced(url: str) -> ProviderConfig:
    return provider_config(url).model_copy(update={"model": MODEL})


def _caller() -> np.ndarray:
    t = np.arange(int(0.8 * RATE)) / RATE
    speech = (8000 * np.sin(2 * np.pi * 220 * t)).astype(np.int16)
    return np.concatenate([np.zeros(RATE, np.int16), speech, np.zeros(int(1.5 * RATE), np.int16)])


async def test_realtime_responses_are_metered_and_priced(tmp_path: Path) -> None:
    write_wav(tmp_path / "in.wav", AudioFrame(_caller(), RATE))
    fake = OpenAIRealtimeFake([Calls([("get_weather", {"city": "Paris"}, "call_u")]), Say("18 in Paris.", 600)])
    fake.caller_texts.append("Weather in Paris?")
    async with fake:
        settings = Settings(
            engine=EngineConfig(http=HttpConfig(enabled=False)),
            providers={"rt": _priced(fake.url)},
            contexts={"desk": ContextConfig(provider="rt", greeting="Hello.", tools=TOOLS)},
        )
        async with Engine(settings, extra_tools=ToolBox().tools()) as engine:
            sub = engine.bus.subscribe(maxsize=10_000, types={UsageUpdated.type, CallUsage.type})
            backend = WavBackend(tmp_path / "in.wav", tmp_path / "out.wav", timeline=True)
            call = RealtimeVoiceCall(engine.voice_parts, backend, "desk", settle_s=0.3)
            async with asyncio.timeout(30):
                await call.run()
            events: list[Event] = sub.drain()
            metrics = engine.metrics.render().decode()
    assert fake.errors == []
    updated = [e for e in events if isinstance(e, UsageUpdated)]
    assert len(updated) >= 2  # the greeting, the tool call's response, the answer
    first = updated[0].usage
    assert (first.input_tokens, first.cached_input_tokens, first.input_audio_tokens) == (40, 16, 20)
    assert (first.output_tokens, first.output_audio_tokens) == (25, 20)
    assert all(e.priced and e.model == MODEL for e in updated)
    assert updated[0].cost == pytest.approx(ONE_RESPONSE)
    assert updated[-1].total.input_tokens == 40 * len(updated)
    assert updated[-1].total_cost == pytest.approx(ONE_RESPONSE * len(updated))
    (final,) = [e for e in events if isinstance(e, CallUsage)]
    assert final.usage == updated[-1].total and final.cost == pytest.approx(ONE_RESPONSE * len(updated))
    assert final.usage.output_audio_s > 0.5  # the seconds of audio received are counted beside the tokens
    audio = 'ai_agent_provider_tokens_total{kind="output_audio",model="gpt-realtime-1.5",provider="rt"} '
    assert f"{audio}{20.0 * len(updated)}" in metrics


async def test_a_realtime_call_over_its_budget_says_the_farewell_and_ends(tmp_path: Path) -> None:
    write_wav(tmp_path / "in.wav", AudioFrame(np.zeros(4 * RATE, np.int16), RATE))  # a caller who listens
    fake = OpenAIRealtimeFake([])
    async with fake:
        ctx = ContextConfig(provider="rt", greeting="Hello.", tools=TOOLS, max_cost=0.0015, farewell="Bye for now.")
        settings = Settings(
            engine=EngineConfig(http=HttpConfig(enabled=False)),
            providers={"rt": _priced(fake.url)},
            contexts={"desk": ctx},
        )
        async with Engine(settings, extra_tools=ToolBox().tools()) as engine:
            sub = engine.bus.subscribe(maxsize=10_000, types={BudgetAlert.type, TranscriptAdded.type})
            backend = WavBackend(tmp_path / "in.wav", tmp_path / "out.wav", timeline=True)
            call = RealtimeVoiceCall(engine.voice_parts, backend, "desk", settle_s=0.3)
            async with asyncio.timeout(30):
                await call.run()
            events: list[Event] = sub.drain()
    assert fake.errors == []
    alerts = [(e.level, e.action) for e in events if isinstance(e, BudgetAlert)]
    assert alerts == [("reached", "wrap_up")]  # the greeting alone cost more than 0.0015 $
    assert "Bye for now." in fake.of_type("response.create")[-1]["response"]["instructions"]
    said = [e.text for e in events if isinstance(e, TranscriptAdded) and e.role == "assistant"]
    assert said[-1] == "Bye for now."
    assert call.end_reason == "budget reached"
