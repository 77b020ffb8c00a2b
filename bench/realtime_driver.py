"""CPU cost of the realtime voice driver per 20 ms frame on a phone call, against format conversion alone.

``RealtimeVoiceCall`` carries every caller frame from its backend to the session (level meter, mute, conversion,
``send_audio``) and every piece of the provider's answer back (conversion, chunking, pacing, ``backend.play``).
This runs a real call on a backend that behaves as the phone's does (8 kHz μ-law frames in, made with
``AudioFrame.from_ulaw`` as the RTP backend makes them; a μ-law line out, ``wire_ulaw``, each chunk turned into its
wire bytes with ``phone_payload``) against an in-process provider that answers each 20 ms of caller audio with 20 ms
of its own — pieces arriving in real time, the worst case for the playout's joining — as fast as the loop allows,
and measures the process CPU time per frame (both directions) over the whole call. Two paths, in the same run:

- **μ-law pass-through** (OpenAI, Deepgram, ElevenLabs): the provider takes and speaks ``pcmu/8000``;
- **Gemini**: the provider takes ``pcm16/8000`` (Gemini resamples itself) and speaks ``pcm16/24000``.

Two baselines in the same rounds: the format conversion alone for the same frames in both directions (none for
μ-law; μ-law → PCM16 in and 24 kHz PCM16 → μ-law out for Gemini), and the **asyncio floor**: three bare tasks
handing each frame on (input → provider events → paced output, the three places a live call must wait on
something: the caller's next packet, the provider's next message, the line's next 20 ms), doing nothing else.
No driver that keeps those three waits apart costs less; the rest is the driver's own work and the in-process
provider's and backend's (which stand in for the socket and RTP, measured in ``realtime_audio.py``).
Prints medians over several rounds and the share of one core at 50 concurrent calls (issue 14's goal of < 5 % is
for the audio's pass-through and conversion, ``realtime_audio.py``; this shows what the loop adds around it).
"""

from __future__ import annotations

import asyncio
import logging
import sys
import time
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine.app import Engine
from engine.config.models import ContextConfig, EngineConfig, HttpConfig, ProviderConfig, Settings
from engine.providers import factory
from engine.providers.base import ProviderError
from engine.realtime.audio import AudioConverter, negotiate
from engine.realtime.call import RealtimeVoiceCall
from engine.realtime.session import (
    PCM16_8K,
    PCM16_24K,
    PCMU_8K,
    AssistantAudio,
    AudioSpec,
    RealtimeEvent,
    RealtimeProvider,
    RealtimeSession,
    RealtimeSetup,
    ResponseDone,
)
from engine.sessions.session import CallSession
from engine.telephony.media import phone_payload
from engine.tools.view import ToolView
from engine.voice.audio import AudioFrame
from engine.voice.backend import AudioBackend
from engine.voice.g711 import ulaw_encode

FRAMES = 3000  # one minute of caller audio per call
ROUNDS = 5
CALLS = 50
FRAMES_PER_S = 50
PATHS = {"mu-law pass-through": (PCMU_8K, PCMU_8K), "Gemini": (PCM16_8K, PCM16_24K)}


def caller_frames() -> list[AudioFrame]:
    t = np.arange(FRAMES * 160) / 8000
    voice = (6000 * np.sin(2 * np.pi * 220 * t)).astype(np.int16)
    ulaw = ulaw_encode(voice)
    return [AudioFrame.from_ulaw(ulaw[i : i + 160], i / 8000) for i in range(0, len(ulaw), 160)]


def agent_piece(spec: AudioSpec) -> bytes:
    """20 ms of the agent's voice in ``spec`` (converted from PCM16 at the same rate: encoding only)."""
    t = np.arange(spec.rate // FRAMES_PER_S) / spec.rate
    pcm = (6000 * np.sin(2 * np.pi * 330 * t)).astype("<i2").tobytes()
    return AudioConverter(AudioSpec("pcm16", spec.rate), spec).convert(pcm)


class EchoSession(RealtimeSession):
    """Answers every 20 ms of caller audio with 20 ms of its own (one utterance, done when the caller is)."""

    def __init__(self, provider: EchoProvider) -> None:
        self.provider = provider
        self._queue: asyncio.Queue[RealtimeEvent | None] = asyncio.Queue()
        self.frames = 0
        self.heard_ms = 0.0
        self._done = False

    async def start(self, setup: RealtimeSetup) -> None:
        self.input_spec = negotiate(setup.audio, self.provider.supported_formats())
        self.output_spec = self.provider.output
        self._piece = agent_piece(self.output_spec)

    async def send_audio(self, audio: bytes) -> None:
        # 20 ms of answer per 20 ms of caller audio heard (a resampler hands audio over in bursts)
        self.heard_ms += self.input_spec.duration_ms(len(audio))
        while self.heard_ms >= 20 * (self.frames + 1):
            self.frames += 1
            self._queue.put_nowait(AssistantAudio(self._piece, "answer"))
        if not self._done and self.heard_ms >= 20 * FRAMES - 200:  # the resampler keeps its last ~100 ms
            self._done = True
            self._queue.put_nowait(ResponseDone())

    async def events(self) -> AsyncIterator[RealtimeEvent]:
        while (ev := await self._queue.get()) is not None:
            yield ev

    async def update_tools(self, view: ToolView, *, apply_now: bool = False) -> None:
        return None

    async def aclose(self) -> None:
        self._queue.put_nowait(None)


class EchoProvider(RealtimeProvider):
    type = "openai_realtime"
    accepts: AudioSpec = PCMU_8K
    output: AudioSpec = PCMU_8K

    def __init__(self, name: str, config: ProviderConfig, base_dir: Path | None = None) -> None:
        super().__init__(name, config)

    def open_session(self, session: CallSession) -> EchoSession:
        return EchoSession(self)

    def supported_formats(self) -> Sequence[AudioSpec]:
        return (self.accepts,)


class PhoneBackend(AudioBackend):
    """The caller's frames as fast as the call takes them; played audio goes nowhere (counted)."""

    def __init__(self, frames: list[AudioFrame]) -> None:
        super().__init__(8000, 20)
        self.wire_ulaw = True
        self._frames = frames
        self.played = 0

    async def frames(self) -> AsyncIterator[AudioFrame]:
        for f in self._frames:
            await asyncio.sleep(0)
            yield f

    async def _output_chunk(self, frame: AudioFrame) -> None:
        self.played += len(phone_payload(frame))
        await asyncio.sleep(0)

    def _drop_pending_output(self) -> None:
        """Nothing is buffered."""

    async def _drain_output(self) -> None:
        """Nothing is buffered."""

    async def _release(self) -> None:
        """Nothing is held."""


async def driver_cost(engine: Engine, frames: list[AudioFrame]) -> float:
    """CPU seconds per frame (in + out) of one whole call through RealtimeVoiceCall."""
    backend = PhoneBackend(frames)
    call = RealtimeVoiceCall(engine, backend, "desk", settle_s=0.2)  # idle wait: no CPU
    t0 = time.process_time()
    await call.run()
    spent = time.process_time() - t0
    if backend.played < FRAMES * 160 * 0.9:
        raise ProviderError("bench", f"only {backend.played} samples played of {FRAMES * 160} ({call.end_reason})")
    return spent / FRAMES


async def floor_cost() -> float:
    """CPU seconds per frame of three tasks handing each frame on, as the driver's three do, with no work."""
    to_events: asyncio.Queue[int] = asyncio.Queue()
    to_output: list[int] = []
    arrived, done = asyncio.Event(), asyncio.Event()

    async def caller() -> None:
        for i in range(FRAMES):
            await asyncio.sleep(0)  # the next packet
            to_events.put_nowait(i)

    async def provider() -> None:
        while True:
            to_output.append(await to_events.get())
            arrived.set()

    async def output() -> None:
        played = 0
        while played < FRAMES:
            arrived.clear()
            await arrived.wait()
            played += len(to_output)
            to_output.clear()
        done.set()

    tasks = [asyncio.create_task(c()) for c in (caller, provider, output)]
    t0 = time.process_time()
    await done.wait()
    spent = time.process_time() - t0
    for t in tasks:
        t.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    return spent / FRAMES


def converter_cost(frames: list[AudioFrame], accepts: AudioSpec, output: AudioSpec) -> float:
    """CPU seconds per frame of the format conversion alone, both directions."""
    piece = agent_piece(output)
    conv_in = AudioConverter(PCMU_8K, accepts)
    conv_out = AudioConverter(output, PCMU_8K)
    t0 = time.process_time()
    for f in frames:
        assert f.ulaw is not None
        conv_in.convert(f.ulaw)
        conv_out.convert(piece)
    return (time.process_time() - t0) / FRAMES


async def main() -> None:
    logging.disable(logging.WARNING)
    factory.PROVIDER_CLASSES["openai_realtime"] = f"{__name__}:EchoProvider"
    settings = Settings(
        engine=EngineConfig(http=HttpConfig(enabled=False)),
        providers={"rt": ProviderConfig(type="openai_realtime", model="m")},
        contexts={"desk": ContextConfig(provider="rt", tools=[])},
    )
    frames = caller_frames()
    print(f"{FRAMES} frames of 20 ms per call, {ROUNDS} rounds; µs per frame (caller in + agent out), median")
    async with Engine(settings) as engine:
        for name, (accepts, output) in PATHS.items():
            EchoProvider.accepts, EchoProvider.output = accepts, output
            drv, conv, flo = [], [], []
            for _ in range(ROUNDS):
                conv.append(converter_cost(frames, accepts, output))
                flo.append(await floor_cost())
                drv.append(await driver_cost(engine, frames))
            d, c, f = (float(np.median(x)) for x in (drv, conv, flo))
            share = d * FRAMES_PER_S * CALLS * 100
            print(
                f"{name:22} driver {d * 1e6:6.1f} µs ({share:4.1f} % of one core at {CALLS} calls)  "
                f"conversion alone {c * 1e6:5.1f} µs  asyncio floor {f * 1e6:5.1f} µs  "
                f"driver - conversion - floor {(d - c - f) * 1e6:5.1f} µs"
            )


if __name__ == "__main__":
    asyncio.run(main())
