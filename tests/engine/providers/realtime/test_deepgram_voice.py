"""A whole voice call on the Deepgram agent: the engine's realtime voice driver, a WAV caller, the loopback agent."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
from harness import API_KEY
from realtime_deepgram_fake import ScriptedDeepgram
from realtime_deepgram_harness import SlowBox, make_engine

from engine.events import AnnouncementRequested, CallEnded, Event, ToolCompleted
from engine.realtime.call import RealtimeVoiceCall
from engine.sessions.history import Message
from engine.voice.audio import AudioFrame
from engine.voice.wav_backend import WavBackend, read_wav, write_wav

RATE = 16000
STEPS = [
    (0.6, "Weather in Paris?", ("get_weather", '{"city": "Paris"}'), "It is 18 degrees in Paris."),
    (1.4, "Thanks, bye.", ("hangup_call", '{"farewell_message": "Goodbye!"}'), "Goodbye!"),
]


def caller_wav(path: Path, seconds: float = 3.0) -> None:
    t = np.arange(round(RATE * seconds)) / RATE
    write_wav(path, AudioFrame((3000 * np.sin(2 * np.pi * 220 * t)).astype(np.int16), RATE))


async def test_voice_call_with_tools_and_hangup(tmp_path: Path) -> None:
    caller_wav(tmp_path / "in.wav")
    fake = ScriptedDeepgram(greeting_ms=300, steps=list(STEPS), answer_ms=500)
    async with fake:
        engine = make_engine(fake, SlowBox())
        async with engine:
            sub = engine.bus.subscribe(maxsize=10_000)
            backend = WavBackend(tmp_path / "in.wav", tmp_path / "out.wav", timeline=True)
            call = RealtimeVoiceCall(engine.voice_parts, backend, "desk", settle_s=0.2)
            async with asyncio.timeout(30):
                await call.run()
            sub.close()
            events: list[Event] = [e async for e in sub]
    assert fake.errors == []
    assert call.end_reason == "hangup"
    assert fake.settings[0]["audio"]["input"] == {"encoding": "linear16", "sample_rate": 16000}
    tools = [e for e in events if isinstance(e, ToolCompleted)]
    assert [(t.exposed_name, t.status) for t in tools] == [("get_weather", "success"), ("hangup_call", "success")]
    assert [m["id"] for m in fake.of_type("FunctionCallResponse")] == ["fc-1", "fc-2"]
    ended = next(e for e in events if isinstance(e, CallEnded))
    assert ended.reason == "hangup"
    assert call.session is not None
    said = [(m.role, m.text) for m in call.session.history.items() if isinstance(m, Message)]
    assert ("user", "Weather in Paris?") in said and ("assistant", "It is 18 degrees in Paris.") in said
    assert call.usage is not None and call.usage.total.output_audio_s > 1.2  # greeting 0.3 + two answers 0.5 each
    out = read_wav(tmp_path / "out.wav")
    loud = np.flatnonzero(np.abs(out.samples.astype(np.int32)) > 2000) / out.sample_rate
    assert loud.size and loud[0] < 0.1  # the greeting opens the call
    assert (loud > 0.6).any()  # the answer comes after the caller's question


async def test_slow_tool_announcement_reaches_the_agent_as_an_injected_message(tmp_path: Path) -> None:
    caller_wav(tmp_path / "in.wav", 2.0)
    steps = [(0.4, "Where is my order?", ("slow_lookup", '{"q": "order 7"}'), "Your order ships today.")]
    fake = ScriptedDeepgram(greeting_ms=200, steps=steps, answer_ms=300)
    box = SlowBox()
    async with fake:
        engine = make_engine(fake, box)
        async with engine:
            sub = engine.bus.subscribe(maxsize=10_000)
            backend = WavBackend(tmp_path / "in.wav", tmp_path / "out.wav", timeline=True)
            call = RealtimeVoiceCall(engine.voice_parts, backend, "desk", settle_s=0.2)
            run = asyncio.create_task(call.run())
            await fake.wait_for(lambda m: isinstance(m, dict) and m.get("type") == "InjectAgentMessage", 20)
            box.release.set()
            async with asyncio.timeout(30):
                await run
            sub.close()
            events: list[Event] = [e async for e in sub]
    assert fake.errors == []
    assert [m["message"] for m in fake.of_type("InjectAgentMessage")] == ["Still looking, one moment."]
    assert any(isinstance(e, AnnouncementRequested) for e in events)
    resp = content_of(fake, "fc-1")
    assert resp["status"] == "success" and resp["message"] == "found it"
    assert call.session is not None
    said = [(m.role, m.text) for m in call.session.history.items() if isinstance(m, Message)]
    assert ("assistant", "Still looking, one moment.") in said  # the agent's own transcript of the injection


def test_cli_voice_call_against_the_fake(tmp_path: Path) -> None:
    """``ava-engine call --audio-in`` (the installed entry point, a subprocess) on a deepgram_agent context."""
    caller_wav(tmp_path / "in.wav")

    async def scenario() -> tuple[ScriptedDeepgram, subprocess.CompletedProcess[str]]:
        fake = ScriptedDeepgram(greeting_ms=300, steps=list(STEPS), answer_ms=500)
        async with fake:
            cfg = tmp_path / "cfg.yaml"
            cfg.write_text(
                "engine: {http: {enabled: false}}\n"
                "providers:\n"
                "  dg:\n"
                "    type: deepgram_agent\n"
                "    model: gpt-4o-mini\n"
                "    voice: aura-2-thalia-en\n"
                f"    base_url: {fake.url}\n"
                "    api_key: ${DG_TEST_KEY}\n"
                "contexts:\n"
                "  desk: {provider: dg, prompt: You are a test agent., greeting: Hello there., tools: [hangup_call]}\n"
            )
            exe = Path(sys.executable).parent / "ava-engine"
            cmd = [str(exe), "--config", str(cfg), "call", "--context", "desk", "--json"]
            cmd += ["--audio-in", str(tmp_path / "in.wav"), "--audio-out", str(tmp_path / "out.wav")]
            proc = await asyncio.create_subprocess_exec(
                *cmd,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env={**os.environ, "DG_TEST_KEY": API_KEY},
            )
            out, err = await asyncio.wait_for(proc.communicate(), 60)
            done = subprocess.CompletedProcess(cmd, proc.returncode or 0, out.decode(), err.decode())
        return fake, done

    fake, done = asyncio.run(scenario())
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    kinds = [e["type"] for e in events]
    assert "call.started" in kinds and "call.ended" in kinds
    # get_weather is not in this context: the agent's call is rejected and answered, and the call goes on.
    rejected = content_of(fake, "fc-1")
    assert rejected["status"] == "rejected"
    assert next(e for e in events if e["type"] == "call.ended")["reason"] == "hangup"
    assert fake.errors == [] and API_KEY not in done.stdout + done.stderr
    assert fake.request_headers[0]["Authorization"] == f"Token {API_KEY}"
    assert read_wav(tmp_path / "out.wav").samples.size > 0


def content_of(fake: ScriptedDeepgram, fid: str) -> dict[str, object]:
    msg = next(m for m in fake.of_type("FunctionCallResponse") if m["id"] == fid)
    return json.loads(str(msg["content"]))
