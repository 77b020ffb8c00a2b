"""The realtime playout converts a burst of small provider pieces in one go and still plays every sample.

A speech-to-speech provider (Gemini Live above all) sends its answer faster than real time; converting each small
piece on arrival paid the resampler's per-call cost once per piece. The playout now converts when it takes audio
to play, joining what queued up behind it, so these tests check that the joined output is exactly the stream
converted whole (tail included), that pieces of another utterance are never joined in, and that a barge-in still
drops what was queued.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from engine.realtime.audio import AudioConverter
from engine.realtime.playout import Playout
from engine.realtime.session import PCM16_24K, PCMU_8K, AudioSpec
from engine.voice.audio import AudioFrame
from engine.voice.pacing import Pacer
from engine.voice.wav_backend import WavBackend, read_wav

PIECE = 960  # bytes: 20 ms at 24 kHz


def tone(ms: int, hz: float = 440.0) -> bytes:
    t = np.arange(24 * ms) / 24000
    return (8000 * np.sin(2 * np.pi * hz * t)).astype("<i2").tobytes()


def whole(data: bytes) -> np.ndarray:
    conv = AudioConverter(PCM16_24K, AudioSpec("pcm16", 8000))
    return np.frombuffer(conv.convert(data) + conv.flush(), dtype="<i2")


class CountingConverter(AudioConverter):
    def __init__(self, conv: AudioConverter) -> None:
        super().__init__(conv.source, conv.target)
        self.calls = 0

    def convert(self, data: bytes) -> bytes:
        self.calls += 1
        return super().convert(data)


async def play(out: Path, feed: Sequence[tuple[str | None, bytes]], interrupt_after: int | None = None) -> Playout:
    backend = WavBackend(output_path=out, sample_rate=8000)
    async with backend:
        playout = Playout(backend, Pacer(backend), PCM16_24K)
        playout._conv = CountingConverter(playout._conv)
        for n, (item, data) in enumerate(feed):
            playout.feed(item, data)
            if interrupt_after == n + 1:
                playout.interrupt()
        playout.end_response()
        runner = asyncio.create_task(playout.run())
        async with asyncio.timeout(10):
            await playout.drained()
        runner.cancel()
    return playout


async def test_a_burst_of_small_pieces_is_converted_once_and_played_whole(tmp_path: Path) -> None:
    audio = tone(500)
    pieces = [("item-1", audio[i : i + PIECE]) for i in range(0, len(audio), PIECE)]
    playout = await play(tmp_path / "out.wav", pieces)
    assert isinstance(playout._conv, CountingConverter) and playout._conv.calls == 1  # 25 pieces, one call
    expected = whole(audio)
    got = read_wav(tmp_path / "out.wav").samples
    assert got.size >= expected.size and got.size - expected.size < 160  # the last chunk padded to 20 ms
    assert np.array_equal(got[: expected.size], expected)  # same samples as the stream converted whole, tail too
    assert playout.log[0].item_id == "item-1" and abs(playout.played_ms("item-1") - got.size / 8) < 1e-9


async def test_pieces_of_the_next_utterance_are_not_joined_in(tmp_path: Path) -> None:
    a, b = tone(100, 440), tone(60, 660)
    feed = [("a", a[:PIECE]), ("a", a[PIECE:]), ("b", b[:PIECE]), ("b", b[PIECE:])]
    playout = await play(tmp_path / "out.wav", feed)
    assert [p.item_id for p in playout.log] == ["a", "b"]
    assert isinstance(playout._conv, CountingConverter) and playout._conv.calls == 2  # one per utterance
    got = read_wav(tmp_path / "out.wav").samples
    assert abs(got.size - (len(a) + len(b)) // 6) <= 2 * 160  # every sample played (each utterance padded)


async def test_barge_in_drops_the_queued_burst(tmp_path: Path) -> None:
    audio = tone(200)
    pieces = [("cut", audio[i : i + PIECE]) for i in range(0, len(audio), PIECE)]
    playout = await play(tmp_path / "out.wav", [*pieces, ("cut", audio[:PIECE])], interrupt_after=len(pieces))
    assert playout.log == [] and playout.played_ms("cut") == 0.0  # nothing of it reached the caller
    assert read_wav(tmp_path / "out.wav").samples.size == 0  # a late piece of the cut item is dropped too


class WireBackend(WavBackend):
    """A backend whose line is 8 kHz μ-law, like a phone's: keeps the μ-law each played frame carries."""

    def __init__(self, out: Path) -> None:
        super().__init__(output_path=out, sample_rate=8000)
        self.wire_ulaw = True
        self.codes: list[bytes | None] = []

    async def _output_chunk(self, frame: AudioFrame) -> None:
        self.codes.append(frame.ulaw)
        await super()._output_chunk(frame)


async def test_on_a_mulaw_line_pcm_is_encoded_once_per_piece(tmp_path: Path) -> None:
    """Gemini's 24 kHz PCM on the phone: the playout resamples and encodes whole pieces, so every frame reaches
    the line already μ-law (the backend sends its bytes), and those bytes are the stream converted whole."""
    audio = tone(300)
    backend = WireBackend(tmp_path / "out.wav")
    async with backend:
        playout = Playout(backend, Pacer(backend), PCM16_24K)
        for i in range(0, len(audio), PIECE):
            playout.feed("item", audio[i : i + PIECE])
        playout.end_response()
        runner = asyncio.create_task(playout.run())
        async with asyncio.timeout(10):
            await playout.drained()
        runner.cancel()
    assert backend.codes and all(c is not None and len(c) == 160 for c in backend.codes)
    conv = AudioConverter(PCM16_24K, PCMU_8K)
    whole_ulaw = conv.convert(audio) + conv.flush()
    sent = b"".join(c for c in backend.codes if c is not None)
    assert sent[: len(whole_ulaw)] == whole_ulaw and set(sent[len(whole_ulaw) :]) <= {0xFF}  # padded with silence
