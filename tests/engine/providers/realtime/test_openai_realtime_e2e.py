"""End to end: the voice driver plays a WAV caller into the OpenAI Realtime adapter and the loopback fake.

The fake hears the caller by energy (its server VAD), answers with a function call, gets the result and speaks;
the driver writes the agent's audio on the input's timeline. Every client event is SDK-validated by the fake.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import numpy as np
from harness import ToolBox
from realtime_openai_fake import Calls, OpenAIRealtimeFake, Say
from realtime_openai_harness import TOOLS, provider_config

from engine.app import Engine
from engine.config.models import ContextConfig, EngineConfig, HttpConfig, Settings
from engine.events import Event
from engine.realtime.call import RealtimeVoiceCall
from engine.voice.audio import AudioFrame
from engine.voice.wav_backend import WavBackend, read_wav, write_wav

RATE = 16000


def _caller(rate: int) -> np.ndarray:
    """1 s of silence, 0.8 s of a loud tone (the caller speaking), 1.5 s of silence."""
    t = np.arange(int(0.8 * rate)) / rate
    speech = (8000 * np.sin(2 * np.pi * 220 * t)).astype(np.int16)
    return np.concatenate([np.zeros(rate, np.int16), speech, np.zeros(int(1.5 * rate), np.int16)])


async def test_a_wav_caller_gets_a_tool_backed_answer(tmp_path: Path) -> None:
    write_wav(tmp_path / "in.wav", AudioFrame(_caller(RATE), RATE))
    fake = OpenAIRealtimeFake([Calls([("get_weather", {"city": "Paris"}, "call_e2e")]), Say("18 in Paris.", 600)])
    fake.caller_texts.append("Weather in Paris?")
    box = ToolBox()
    async with fake:
        settings = Settings(
            engine=EngineConfig(http=HttpConfig(enabled=False)),
            providers={"rt": provider_config(fake.url)},
            contexts={"desk": ContextConfig(provider="rt", greeting="Hello.", tools=TOOLS)},
        )
        async with Engine(settings, extra_tools=box.tools()) as engine:
            events: list[Event] = []
            sub = engine.bus.subscribe(maxsize=10_000)

            async def collect() -> None:
                async for ev in sub:
                    events.append(ev)

            reader = asyncio.create_task(collect())
            backend = WavBackend(tmp_path / "in.wav", tmp_path / "out.wav", timeline=True)
            call = RealtimeVoiceCall(engine.voice_parts, backend, "desk", settle_s=0.3)
            async with asyncio.timeout(30):
                await call.run()
            await asyncio.sleep(0)
            sub.close()
            await reader
    assert fake.errors == []
    assert box.calls == [("get_weather", {"city": "Paris"})]
    assert [o["call_id"] for o in fake.outputs] == ["call_e2e"]
    assert json.loads(fake.outputs[0]["output"])["status"] == "success"
    transcripts = [(e.role, e.text) for e in events if e.type == "transcript.added"]  # type: ignore[attr-defined]
    assert ("user", "Weather in Paris?") in transcripts and ("assistant", "18 in Paris.") in transcripts
    assert any(e.type == "tool.completed" for e in events)
    session = fake.of_type("session.update")[0]["session"]
    assert session["audio"]["input"]["format"] == {"type": "audio/pcm", "rate": 24000}  # 16 kHz driver → 24 kHz
    out = read_wav(tmp_path / "out.wav")
    loud = np.flatnonzero(np.abs(out.samples.astype(np.int32)) > 1000) / out.sample_rate
    assert loud.size and loud[0] < 0.1  # the greeting at once
    assert loud[-1] > 1.8  # the answer after the caller's turn (speech ended at 1.8 s)
