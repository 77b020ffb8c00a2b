"""Voice loop latency: end of the caller's utterance → first sample of the answer, and STT's real-time factor.

Runs the demo context (config/default.yaml: scripted provider, real MCP servers, the memory server on a temporary
database) by voice: the demo script's example phrases, synthesised with espeak-ng in several voices and rates, go
through the WAV backend → VAD → pocketsphinx (grammar) → the engine → espeak-ng → out.wav. "End of utterance" is
when the endpointer closed it (``vad_silence_ms`` of silence after the last word, default 600 ms, not counted);
"first sample" is when the answer's first chunk went to the backend. Goal: p50 at most 300 ms on this machine.

    .venv/bin/python bench/voice_loop.py [--rounds 2]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from engine.app import Engine  # noqa: E402
from engine.config import load_settings  # noqa: E402
from engine.core.stats import percentiles  # noqa: E402
from engine.providers.script import load_script  # noqa: E402
from engine.voice.audio import AudioFrame  # noqa: E402
from engine.voice.phrases import PhraseSet  # noqa: E402
from engine.voice.pipeline import VoiceCall  # noqa: E402
from engine.voice.stt import Recognizer  # noqa: E402
from engine.voice.tts import Synthesizer  # noqa: E402
from engine.voice.wav_backend import WavBackend, write_wav  # noqa: E402

RATE = 16000
VOICES = [("en-us", 175), ("en-us", 140), ("en-us+f1", 160), ("en-us+m1", 175), ("en-us", 220), ("en-us+m5", 150)]
GOAL_P50_MS = 300.0


def phrases() -> list[str]:
    """20 phrases: every example of the demo script, the first ones again (other voices), goodbye last."""
    examples = load_script(ROOT / "config" / "scripts" / "demo.yaml").phrases()
    sentences = [sorted(PhraseSet([e]).sentences)[0] for e in examples]
    bye = [s for s in sentences if s in ("goodbye", "bye", "hang up", "that's all")]
    rest = [s for s in sentences if s not in bye]
    return (rest + rest)[:19] + bye[:1]


def caller_wav(path: Path, texts: list[str], gap_s: float) -> None:
    parts = [np.zeros(12 * RATE, dtype=np.int16)]  # the greeting plays first
    for i, text in enumerate(texts):
        voice, wpm = VOICES[i % len(VOICES)]
        parts.append(Synthesizer(voice=voice, rate=wpm, sample_rate=RATE).synthesize_blocking(text).samples)
        parts.append(np.zeros(round(gap_s * RATE), dtype=np.int16))
    write_wav(path, AudioFrame(np.concatenate(parts), RATE))


async def one_round(tmp: Path, texts: list[str], recognizer: Recognizer) -> tuple[list[float], list[float], int]:
    settings = load_settings(ROOT / "config" / "default.yaml")
    memory, db = settings.mcp.servers["memory"], ["--db", str(tmp / "memory.db")]
    if memory.transport == "stdio":
        memory.command += db
    else:  # inprocess or bundled (the demo runs it in-process): its command line is ``args``
        memory.args = [*(memory.args or []), *db]
    caller_wav(tmp / "in.wav", texts, gap_s=25.0)  # room for the longest answer (ATIS), so no barge-in
    async with Engine(settings, config_path=ROOT / "config" / "default.yaml") as engine:
        backend = WavBackend(tmp / "in.wav", tmp / "out.wav", sample_rate=RATE, timeline=True)
        call = VoiceCall(engine, backend, "demo", recognizer=recognizer)
        await call.run()
    latencies = [t.latency_ms for t in call.turns if t.latency_ms is not None]
    rtfs = [t.stt_rtf for t in call.turns]
    exact = sum(1 for t, want in zip(call.turns, texts, strict=False) if t.text == want)
    return latencies, rtfs, exact


async def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=2, help="calls to run (each says every phrase once)")
    args = ap.parse_args()
    texts = phrases()
    recognizer = Recognizer()
    latencies: list[float] = []
    rtfs: list[float] = []
    exact = 0
    t0 = time.perf_counter()
    for _ in range(args.rounds):
        with tempfile.TemporaryDirectory() as d:
            lat, rtf, ok = await one_round(Path(d), texts, recognizer)
        latencies += lat
        rtfs += rtf
        exact += ok
    n = len(texts) * args.rounds
    p50, p90 = percentiles(latencies, 0.5, 0.9)
    print(f"phrases: {len(texts)} x {args.rounds} rounds, recognised exactly: {exact}/{n}")
    print(
        f"utterance end -> first answer sample: p50 {p50:.0f} ms, p90 {p90:.0f} ms, "
        f"max {max(latencies):.0f} ms (n={len(latencies)}; plus the 600 ms endpointing silence)"
    )
    print(f"STT real-time factor: mean {statistics.mean(rtfs):.3f}, max {max(rtfs):.3f} (decode time / audio time)")
    print(
        f"goal p50 <= {GOAL_P50_MS:.0f} ms: ratio p50/goal = {p50 / GOAL_P50_MS:.2f} "
        f"({'met' if p50 <= GOAL_P50_MS else 'MISSED'}); wall time {time.perf_counter() - t0:.1f} s"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
