"""CPU cost of carrying a phone call's audio to a realtime provider and back, per 20 ms of audio and at 50 calls.

Paths, measured in the same run over the same μ-law caller audio (8 kHz, 160 bytes per 20 ms frame):
- **μ-law pass-through** (OpenAI ``audio/pcmu``, ElevenLabs ``ulaw_8000``, Deepgram ``mulaw``): the engine's
  ``AudioConverter`` between equal formats, plus the JSON/base64 framing the socket needs both ways;
- **Gemini**: μ-law 8 kHz → PCM16 8 kHz in (Gemini is told ``rate=8000`` and resamples itself), PCM16 24 kHz →
  μ-law 8 kHz out (soxr streaming), plus the same framing.
The caller's side always arrives as 20 ms frames (RTP / the WebSocket channel). The provider's side arrives in
whatever chunks the provider sends: Gemini Live generates audio faster than real time and documents no chunk size
("the client must buffer"). The driver's playout converts when it takes audio to play, joining the pieces of the
utterance queued behind it, so what the converter sees is a burst, not a message; the Gemini path is measured for
converter pieces of 20 ms (the worst case: pieces arriving one by one in real time, soxr's per-call cost paid every
frame), 100 and 500 ms.
The baseline is the framing alone (what any client must do to put audio on a JSON socket), so the ratios show what
format conversion adds; Gemini's own framing carries 2× (in) and 6× (out) the bytes of μ-law, so each Gemini row is
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
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine.bounds.json_text import loads_bounded
from engine.core.stats import percentiles
from engine.realtime.audio import AudioConverter
from engine.realtime.gemini_wire import GeminiOptions, audio_in_message, audio_in_mime
from engine.realtime.input import CallerInput
from engine.realtime.session import PCM16_8K, PCM16_24K, PCMU_8K, AudioSpec
from engine.realtime.socket import MAX_DEPTH
from engine.telephony.media import phone_payload
from engine.voice.audio import AudioFrame, Chunker
from engine.voice.g711 import ulaw_encode

FRAMES = 3000  # one minute of audio per path and round
ROUNDS = 7
CALLS = 50
FRAMES_PER_S = 50
GEMINI_CHUNKS_MS = (20, 100, 500)
GEMINI_MIME = audio_in_mime(8000)
BATCH_FRAMES = GeminiOptions().input_batch_ms // 20
SEP = (",", ":")


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
    """OpenAI's ``input_audio_buffer.append``, framed as the engine frames it (``RealtimeSocket.send_json``)."""
    return json.dumps({"type": "input_audio_buffer.append", "audio": base64.b64encode(chunk).decode()}, separators=SEP)


def frame_out(chunk: bytes) -> str:
    return json.dumps({"type": "response.output_audio.delta", "delta": base64.b64encode(chunk).decode()})


def unframed_out(text: str) -> bytes:
    return base64.b64decode(loads_bounded(text, MAX_DEPTH)["delta"], validate=True)


def gemini_in(chunk: bytes) -> str:
    return audio_in_message(GEMINI_MIME, chunk)  # the engine's own builder


def gemini_frame_out(chunk: bytes) -> str:
    blob = {"mimeType": "audio/pcm;rate=24000", "data": base64.b64encode(chunk).decode()}
    return json.dumps({"serverContent": {"modelTurn": {"parts": [{"inlineData": blob}]}}})


def gemini_unframed_out(text: str) -> bytes:
    msg = loads_bounded(text, MAX_DEPTH)  # as RealtimeSocket.parse, then gemini_events' part reader
    return base64.b64decode(msg["serverContent"]["modelTurn"]["parts"][0]["inlineData"]["data"], validate=True)


@dataclass
class Path_:
    """One way of carrying a call's audio: ``chain`` runs the engine's own phone path, else framing alone."""

    frames_in: list[bytes]
    out: list[bytes]
    gemini: bool = False
    chain: bool = True


def caller_side(spec: AudioSpec) -> CallerInput:
    """The realtime driver's caller side for a phone backend (8 kHz) and a session taking ``spec``."""
    return CallerInput(
        cast(Any, SimpleNamespace(sample_rate=8000)), cast(Any, None), cast(Any, SimpleNamespace(input_spec=spec)), None
    )


def run(path: Path_) -> float:
    """µs of CPU per 20 ms of audio both ways (one caller frame in, 20 ms of the provider's audio out)."""
    frame, unframe = (gemini_in, gemini_unframed_out) if path.gemini else (framed_in, unframed_out)
    provider_frame = gemini_frame_out if path.gemini else frame_out
    frames_out = [provider_frame(c) for c in path.out]  # what the provider sends; its framing is not ours to count
    join = BATCH_FRAMES if path.gemini else 1  # Gemini's session sends caller audio in input_batch_ms pieces
    source = PCM16_24K if path.gemini else PCMU_8K
    caller = caller_side(PCM16_8K if path.gemini else PCMU_8K)
    conv = AudioConverter(source, PCMU_8K)  # as Playout does on a phone backend (wire_ulaw)
    chunker = Chunker(8000, 20)
    piece = bytearray()
    played = 0
    t0 = time.process_time()  # CPU time: 2 shared cores, so wall time would count other processes' turns
    for i, payload in enumerate(path.frames_in, 1):
        if path.chain:  # PhoneBackend.frames → CallerInput.payload
            piece += caller.payload(AudioFrame.from_ulaw(payload))
        else:
            piece += payload
        if i % join == 0:
            frame(bytes(piece))
            piece.clear()
    for msg in frames_out:
        got = unframe(msg)
        if not path.chain:
            continue
        buf = conv.convert(got)  # Playout._take
        for at in range(0, len(buf) - len(buf) % 160, 160):  # Playout._frames
            out = AudioFrame.from_ulaw(buf[at : at + 160], played / 8000)
            played += 160
            for f in chunker.push(out):  # AudioBackend.play → PhoneBackend._output_chunk
                phone_payload(f)
    return (time.process_time() - t0) * 1e6 / len(path.frames_in)


def main() -> None:
    ulaw_out = agent_audio(8000, pcm=False, chunk_ms=20)
    caller = caller_audio()
    dec = AudioConverter(PCMU_8K, PCM16_8K)
    caller_pcm = [dec.convert(f) for f in caller]  # what Gemini's framing carries, converted ahead of time
    paths: dict[str, Path_] = {
        "framing only (baseline)": Path_(caller, ulaw_out, chain=False),
        "phone mu-law pass-through": Path_(caller, ulaw_out),
    }
    for ms in GEMINI_CHUNKS_MS:
        out = agent_audio(24000, pcm=True, chunk_ms=ms)
        paths[f"Gemini, {ms} ms pieces out"] = Path_(caller, out, gemini=True)
        paths[f"  its framing alone, {ms} ms"] = Path_(caller_pcm, out, gemini=True, chain=False)
    results: dict[str, list[float]] = {k: [] for k in paths}
    for r in range(ROUNDS):
        order = list(paths)
        order = order[r % len(order) :] + order[: r % len(order)]
        for name in order:
            results[name].append(run(paths[name]))
    base = percentiles(results["framing only (baseline)"], 0.5)[0]
    print(f"{FRAMES} caller frames of 20 ms per path, {ROUNDS} rounds in rotating order; cost = 20 ms in + 20 ms out")
    print(f"Gemini: caller audio at 8 kHz ({GEMINI_MIME}) in pieces of {BATCH_FRAMES} frames (input_batch_ms)")
    print(f"{'path':30} {'µs/20 ms':>9} {'× base':>7} {'% core @50 calls':>17}")
    for name, vals in results.items():
        med = percentiles(vals, 0.5)[0]
        share = med * 1e-6 * FRAMES_PER_S * CALLS * 100
        print(f"{name:30} {med:9.1f} {med / base:7.2f} {share:16.2f}%  (range {min(vals):.1f}-{max(vals):.1f})")
    print("goal: < 5 % of one core at 50 concurrent calls on either path")


if __name__ == "__main__":
    main()
