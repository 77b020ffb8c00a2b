"""A whole voice call on Gemini Live: the engine's realtime voice driver, a WAV caller, the scripted loopback fake.

The driver resamples the caller's 16 kHz audio as it is (the softphone's rate) and Gemini's 24 kHz answer down
to the WAV's rate; every client message is validated by the fake against google-genai's types.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
from harness import ToolBox
from realtime_gemini_fake import API_KEY, GeminiRig, ScriptedGemini

from engine.events import CallEnded, Event, ToolCompleted
from engine.realtime.call import RealtimeVoiceCall
from engine.sessions.history import Message
from engine.tools.base import FunctionTool, LatencyMeta, ToolDefinition, ToolExecutionContext, ToolParameter, ToolResult
from engine.voice.audio import AudioFrame
from engine.voice.wav_backend import WavBackend, read_wav, write_wav

RATE = 16000
STEPS = [
    (0.6, "Weather in Paris?", ("get_weather", {"city": "Paris"}), "It is 18 degrees in Paris."),
    (1.4, "Thanks, bye.", ("hangup_call", {"farewell_message": "Goodbye!"}), "Goodbye!"),
]


def caller_wav(path: Path, seconds: float = 3.0, rate: int = RATE) -> None:
    t = np.arange(round(rate * seconds)) / rate
    write_wav(path, AudioFrame((3000 * np.sin(2 * np.pi * 220 * t)).astype(np.int16), rate))


async def test_voice_call_with_a_tool_and_hangup(tmp_path: Path) -> None:
    caller_wav(tmp_path / "in.wav")
    fake = ScriptedGemini(list(STEPS))
    async with fake:
        rig = GeminiRig(fake, ToolBox().tools(), ["get_weather", "hangup_call"], greeting="Hello there.")
        engine = rig.engine
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
    tools = [e for e in events if isinstance(e, ToolCompleted)]
    assert [(t.exposed_name, t.status) for t in tools] == [("get_weather", "success"), ("hangup_call", "success")]
    assert [fr["id"] for fr in fake.responses()] == ["fc-1", "fc-2"]
    assert next(e for e in events if isinstance(e, CallEnded)).reason == "hangup"
    assert call.session is not None
    said = [(m.role, m.text) for m in call.session.history.items() if isinstance(m, Message)]
    assert ("user", "Weather in Paris?") in said and ("assistant", "It is 18 degrees in Paris.") in said
    assert ("assistant", "Goodbye!") in said
    audio_in = fake.of_kind("realtimeInput")[0]["realtimeInput"]["audio"]
    assert audio_in["mimeType"] == "audio/pcm;rate=16000" and len(base64.b64decode(audio_in["data"])) % 2 == 0
    assert call.usage is not None and call.usage.total.output_audio_s > 1.2  # greeting 0.3 + two answers 0.5 each
    assert call.usage.total.input_tokens == 150 and call.usage.total.output_tokens == 60
    out = read_wav(tmp_path / "out.wav")
    assert out.sample_rate == RATE  # Gemini's 24 kHz resampled to the caller's rate
    loud = np.flatnonzero(np.abs(out.samples.astype(np.int32)) > 2000) / out.sample_rate
    assert loud.size and loud[0] < 0.1  # the greeting opens the call
    assert (loud > 0.6).any()  # the answer comes after the caller's question


async def test_slow_tool_announcement_through_the_driver(tmp_path: Path) -> None:
    """The budget layer asks for the slow tool's announcement; the driver hands it to the session, which sends it
    as the NON_BLOCKING call's interim result; the model says it, then the answer once the result is in."""

    async def lookup(args: dict[str, Any], ctx: ToolExecutionContext) -> ToolResult:
        await asyncio.sleep(0.3)
        return ToolResult.success("found it", {"year": 1984})

    slow = FunctionTool(
        ToolDefinition(
            "slow_lookup",
            "Archive lookup.",
            parameters=(ToolParameter("q", "string"),),
            latency=LatencyMeta(estimated_duration_ms=2000, max_duration_ms=3000),
        ),
        lookup,
    )
    caller_wav(tmp_path / "in.wav", seconds=2.0)
    steps = [(0.6, "When was it?", ("slow_lookup", {"q": "it"}), "It was 1984.")]
    fake = ScriptedGemini(steps)
    async with fake:
        engine = GeminiRig(fake, [slow], ["slow_lookup"], greeting="Hello there.").engine
        async with engine:
            backend = WavBackend(tmp_path / "in.wav", tmp_path / "out.wav", timeline=True)
            # the call ends once the caller's WAV is over and the model stayed quiet for settle_s: on a loaded
            # run the answer after the tool's result came later than 0.3 s, and the call had ended without it
            call = RealtimeVoiceCall(engine.voice_parts, backend, "desk", settle_s=1.5)
            async with asyncio.timeout(30):
                await call.run()
    assert fake.errors == []
    interim, final = fake.responses()
    assert interim["willContinue"] is True and interim["response"]["output"]["say_to_caller"]
    assert final["id"] == interim["id"] == "fc-1" and final["response"]["output"]["data"] == {"year": 1984}
    assert call.session is not None
    said = [m.text for m in call.session.history.items() if isinstance(m, Message) and m.role == "assistant"]
    assert said == ["Hello there.", interim["response"]["output"]["say_to_caller"], "It was 1984."]


def test_cli_voice_call_against_the_fake(tmp_path: Path) -> None:
    """``ava-engine call --audio-in`` (the installed entry point, a subprocess) on a gemini_live context, the
    caller's WAV at 8 kHz as on the phone."""
    caller_wav(tmp_path / "in.wav", rate=8000)

    async def scenario() -> tuple[ScriptedGemini, subprocess.CompletedProcess[str]]:
        fake = ScriptedGemini(list(STEPS))
        async with fake:
            cfg = tmp_path / "cfg.yaml"
            cfg.write_text(
                "engine: {http: {enabled: false}}\n"
                "providers:\n"
                "  gem:\n"
                "    type: gemini_live\n"
                "    model: gemini-live-test\n"
                "    voice: Kore\n"
                f"    base_url: {fake.url}\n"
                "    api_key: ${GEM_TEST_KEY}\n"
                "contexts:\n"
                "  desk: {provider: gem, prompt: You are a test agent., greeting: Hello there., tools: [hangup_call]}\n"
            )
            exe = Path(sys.executable).parent / "ava-engine"
            cmd = [str(exe), "--config", str(cfg), "call", "--context", "desk", "--json"]
            cmd += ["--audio-in", str(tmp_path / "in.wav"), "--audio-out", str(tmp_path / "out.wav")]
            proc = await asyncio.create_subprocess_exec(
                *cmd,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env={**os.environ, "GEM_TEST_KEY": API_KEY},
            )
            out, err = await asyncio.wait_for(proc.communicate(), 60)
            done = subprocess.CompletedProcess(cmd, proc.returncode or 0, out.decode(), err.decode())
        return fake, done

    fake, done = asyncio.run(scenario())
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    kinds = [e["type"] for e in events]
    assert "call.started" in kinds and "call.ended" in kinds
    # get_weather is not in this context: the model's call is rejected and answered, and the call goes on.
    first = next(fr for fr in fake.responses() if fr["id"] == "fc-1")
    assert first["name"] == "get_weather" and first["response"]["error"]["status"] == "rejected"
    assert next(e for e in events if e["type"] == "call.ended")["reason"] == "hangup"
    assert fake.errors == [] and API_KEY not in done.stdout + done.stderr
    assert f"key={API_KEY}" in fake.request_paths[0]
    assert read_wav(tmp_path / "out.wav").samples.size > 0
