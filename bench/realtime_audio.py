"""CPU cost of carrying a phone call's audio to a realtime provider and back, per 20 ms of audio and at 50 calls.

Paths, measured in the same run over the same μ-law caller audio (8 kHz, 160 bytes per 20 ms frame):
- **μ-law pass-through** (OpenAI ``audio/pcmu``, ElevenLabs ``ulaw_8000``, Deepgram ``mulaw``): the engine's
  ``AudioConverter`` between equal formats, plus the JSON/base64 framing the socket needs both ways;
- **Gemini resampling**: μ-law 8 kHz → PCM16 16 kHz in, PCM16 24 kHz → μ-law 8 kHz out (soxr streaming), plus
  the same framing.
The caller's side always arrives as 20 ms frames (RTP / the WebSocket channel). The provider's side arrives in
whatever chunks the provider sends: Gemini Live generates audio faster than real time and documents no chunk size
("the client must buffer"), and its chunks are far longer than a phone frame, so the Gemini path is measured for
several assistant chunk lengths, 20 ms (the worst case: soxr's per-call cost paid every frame), 100 and 500 ms.
The baseline is the framing alone (what any client must do to put audio on a JSON socket), so the ratios show what
format conversion adds; Gemini's own framing carries 4× (in) and 6× (out) the bytes of μ-law, so each Gemini row is
followed by its framing alone (the same PCM16 payloads, converted ahead of time): the difference is the conversion.
Each direction runs its own converter, as one call does. Cost is the process's CPU time (not wall time: the cores
are shared) over a minute of audio divided by its 20 ms frames (soxr works in blocks, so a median per call would
miss the calls that carry a block), median over rounds in rotating order; "% core @50" is that cost × 50 frames/s
× 50 calls.
Goal (issue 14): < 5 % of one core at 50 concurrent calls on either path.
"""

from __future__ import annotations

import base64
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine.providers.realtime.audio import AudioConverter
from engine.providers.realtime.session import PCM16_16K, PCM16_24K, PCMU_8K
from engine.stats import percentiles
from engine.voice.g711 import ulaw_encode

FRAMES = 3000  # one minute of audio per path and round
ROUNDS = 7
CALLS = 50
FRAMES_PER_S = 50
GEMINI_CHUNKS_MS = (20, 100, 500)
Converters = Callable[[], tuple[AudioConverter | None, AudioConverter | None]]


def caller_audio() -> list[bytes]:
    t = np.arange(FRAMES * 160) / 8000
    voice = (6000 * np.sin(2 * np.pi * 220 * t) * (1 + np.sin(2 * np.pi * 3 * t)) / 2).astype(np.int16)
    ulaw = ulaw_encode(voice)
    return [ulaw[i : i + 160] for i in range(0, len(ulaw), 160)]


def agent_audio(rate: int, pcm: bool, chunk_ms: int) -> list[bytes]:
    """A minute of the provider's audio cut into the chunks it sends."""
    t = np.arange(FRAMES * rate // FRAMES_PER_S) / rate
    voice = (6000 * np.sin(2 * np.pi * 330 * t)).astype(np.int16)
    data = voice.astype("<i2").tobytes() if pcm else ulaw_encode(voice)
    step = rate * chunk_ms // 1000 * (2 if pcm else 1)
    return [data[i : i + step] for i in range(0, len(data), step)]


def framed_in(chunk: bytes) -> str:
    return json.dumps({"type": "input_audio_buffer.append", "audio": base64.b64encode(chunk).decode()})


def unframed_out(text: str) -> bytes:
    return base64.b64decode(json.loads(text)["delta"])


def frame_out(chunk: bytes) -> str:
    return json.dumps({"type": "response.output_audio.delta", "delta": base64.b64encode(chunk).decode()})


def run(make: Converters, frames_in: list[bytes], out: list[bytes]) -> float:
    """µs of CPU per 20 ms of audio both ways (one caller frame in, 20 ms of the provider's audio out)."""
    cin, cout = make()
    frames_out = [frame_out(c) for c in out]  # what the provider sends; its framing is not ours to count
    t0 = time.process_time()  # CPU time: 2 shared cores, so wall time would count other processes' turns
    for a in frames_in:
        framed_in(cin.convert(a) if cin else a)
    for b in frames_out:
        got = unframed_out(b)
        if cout:
            cout.convert(got)
    return (time.process_time() - t0) * 1e6 / len(frames_in)


def main() -> None:
    ulaw_out = agent_audio(8000, pcm=False, chunk_ms=20)

    def gemini() -> tuple[AudioConverter, AudioConverter]:
        return AudioConverter(PCMU_8K, PCM16_16K), AudioConverter(PCM16_24K, PCMU_8K)

    def ulaw() -> tuple[AudioConverter, AudioConverter]:
        return AudioConverter(PCMU_8K, PCMU_8K), AudioConverter(PCMU_8K, PCMU_8K)

    caller = caller_audio()
    up = AudioConverter(PCMU_8K, PCM16_16K)
    caller_16k = [up.convert(f) for f in caller]  # what Gemini's framing carries, converted ahead of time
    paths: dict[str, tuple[Converters, list[bytes], list[bytes]]] = {
        "framing only (baseline)": (lambda: (None, None), caller, ulaw_out),
        "mu-law pass-through": (ulaw, caller, ulaw_out),
    }
    for ms in GEMINI_CHUNKS_MS:
        out = agent_audio(24000, pcm=True, chunk_ms=ms)
        paths[f"Gemini, {ms} ms chunks out"] = (gemini, caller, out)
        paths[f"  its framing alone, {ms} ms"] = (lambda: (None, None), caller_16k, out)
    results: dict[str, list[float]] = {k: [] for k in paths}
    for r in range(ROUNDS):
        order = list(paths)
        order = order[r % len(order) :] + order[: r % len(order)]
        for name in order:
            make, frames_in, out = paths[name]
            results[name].append(run(make, frames_in, out))
    base = percentiles(results["framing only (baseline)"], 0.5)[0]
    print(f"{FRAMES} caller frames of 20 ms per path, {ROUNDS} rounds in rotating order; cost = 20 ms in + 20 ms out")
    print(f"{'path':30} {'µs/20 ms':>9} {'× base':>7} {'% core @50 calls':>17}")
    for name, vals in results.items():
        med = percentiles(vals, 0.5)[0]
        share = med * 1e-6 * FRAMES_PER_S * CALLS * 100
        print(f"{name:30} {med:9.1f} {med / base:7.2f} {share:16.2f}%")
    print("goal: < 5 % of one core at 50 concurrent calls on either path")


if __name__ == "__main__":
    main()
