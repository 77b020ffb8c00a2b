"""CPU cost of carrying a phone call's audio to a realtime provider and back, per 20 ms frame and at 50 calls.

Two paths, measured in the same run over the same μ-law caller audio (8 kHz, 160 bytes per 20 ms frame):
- **μ-law pass-through** (OpenAI ``audio/pcmu``, ElevenLabs ``ulaw_8000``, Deepgram ``mulaw``): the engine's
  ``AudioConverter`` between equal formats, plus the JSON/base64 framing the socket needs both ways;
- **Gemini resampling**: μ-law 8 kHz → PCM16 16 kHz in, PCM16 24 kHz → μ-law 8 kHz out (soxr streaming), plus
  the same framing.
The baseline is the framing alone (what any client must do to put audio on a JSON socket), so the ratios show
what format conversion adds. Each direction of each path runs its own converter, as one call would. Prints the
median cost per frame (in + out), the share of one core at 50 concurrent calls (50 frames/s each), and ratios.
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
ROUNDS = 5
CALLS = 50
FRAMES_PER_S = 50


def caller_audio() -> list[bytes]:
    t = np.arange(FRAMES * 160) / 8000
    voice = (6000 * np.sin(2 * np.pi * 220 * t) * (1 + np.sin(2 * np.pi * 3 * t)) / 2).astype(np.int16)
    ulaw = ulaw_encode(voice)
    return [ulaw[i : i + 160] for i in range(0, len(ulaw), 160)]


def agent_audio(spec_rate: int, pcm: bool) -> list[bytes]:
    n = spec_rate // FRAMES_PER_S
    t = np.arange(FRAMES * n) / spec_rate
    voice = (6000 * np.sin(2 * np.pi * 330 * t)).astype(np.int16)
    data = voice.astype("<i2").tobytes() if pcm else ulaw_encode(voice)
    step = n * (2 if pcm else 1)
    return [data[i : i + step] for i in range(0, len(data), step)]


def framed_in(chunk: bytes) -> str:
    return json.dumps({"type": "input_audio_buffer.append", "audio": base64.b64encode(chunk).decode()})


def unframed_out(text: str) -> bytes:
    return base64.b64decode(json.loads(text)["delta"])


def frame_out(chunk: bytes) -> str:
    return json.dumps({"type": "response.output_audio.delta", "delta": base64.b64encode(chunk).decode()})


def run(name: str, make: Callable[[], tuple[AudioConverter | None, AudioConverter | None]], out: list[bytes]) -> float:
    """Median µs per frame (one frame in and one frame out) over one pass of the caller audio."""
    cin, cout = make()
    frames_in = caller_audio()
    frames_out = [frame_out(c) for c in out]  # what the provider sends; its framing is not ours to count
    costs: list[float] = []
    for a, b in zip(frames_in, frames_out, strict=False):
        t0 = time.perf_counter()
        framed_in(cin.convert(a) if cin else a)
        got = unframed_out(b)
        if cout:
            cout.convert(got)
        costs.append((time.perf_counter() - t0) * 1e6)
    return percentiles(costs, 0.5)[0]


def main() -> None:
    ulaw_out = agent_audio(8000, pcm=False)
    gemini_out = agent_audio(24000, pcm=True)
    paths: dict[str, tuple[Callable[[], tuple[AudioConverter | None, AudioConverter | None]], list[bytes]]] = {
        "framing only (baseline)": (lambda: (None, None), ulaw_out),
        "mu-law pass-through": (lambda: (AudioConverter(PCMU_8K, PCMU_8K), AudioConverter(PCMU_8K, PCMU_8K)), ulaw_out),
        "Gemini resampling": (
            lambda: (AudioConverter(PCMU_8K, PCM16_16K), AudioConverter(PCM16_24K, PCMU_8K)),
            gemini_out,
        ),
    }
    results: dict[str, list[float]] = {k: [] for k in paths}
    for r in range(ROUNDS):
        order = list(paths)
        order = order[r % len(order) :] + order[: r % len(order)]
        for name in order:
            make, out = paths[name]
            results[name].append(run(name, make, out))
    base = percentiles(results["framing only (baseline)"], 0.5)[0]
    print(f"{FRAMES} frames of 20 ms per path, {ROUNDS} rounds in rotating order; cost = one frame in + one out")
    print(f"{'path':28} {'µs/frame':>9} {'× base':>7} {'% core @50 calls':>17}")
    for name, vals in results.items():
        med = percentiles(vals, 0.5)[0]
        share = med * 1e-6 * FRAMES_PER_S * CALLS * 100
        print(f"{name:28} {med:9.1f} {med / base:7.2f} {share:16.2f}%")
    print("goal: < 5 % of one core at 50 concurrent calls on either path")


if __name__ == "__main__":
    main()
