"""espeak-ng TTS: whole utterances in several voices/rates, streaming order, abort, bad settings."""

from __future__ import annotations

import asyncio
import itertools

import numpy as np
import pytest

from engine.voice.espeak import Espeak
from engine.voice.tts import Synthesizer

SENTENCE = "Roll two dice with six sides, then tell me the weather at the airport."


@pytest.mark.parametrize(
    ("voice", "rate", "out_rate"), [("en-us", 175, 16000), ("en-us+f3", 120, 8000), ("en-gb-x-rp", 260, 24000)]
)
async def test_synthesize_voices_and_rates(voice: str, rate: int, out_rate: int) -> None:
    audio = await Synthesizer(voice=voice, rate=rate, sample_rate=out_rate).synthesize(SENTENCE)
    assert audio.sample_rate == out_rate
    assert audio.rms_dbfs() > -35.0  # clearly not silence
    # ~13 words: plausible length at this words-per-minute rate (espeak adds pauses at the comma and the end)
    expected = 13 / rate * 60
    assert 0.5 * expected < audio.duration < 2.0 * expected


def test_slower_rate_is_longer() -> None:
    slow = Synthesizer(rate=120).synthesize_blocking(SENTENCE)
    fast = Synthesizer(rate=300).synthesize_blocking(SENTENCE)
    assert slow.duration > 1.8 * fast.duration


def test_pitch_changes_audio() -> None:
    low = Synthesizer(pitch=10).synthesize_blocking("hello")
    high = Synthesizer(pitch=90).synthesize_blocking("hello")
    n = min(low.num_samples, high.num_samples)
    assert not np.array_equal(low.samples[:n], high.samples[:n])


async def test_stream_chunks_are_contiguous_and_whole() -> None:
    text = " ".join(["This is a long answer that keeps going so that streaming matters."] * 6)
    stream = Synthesizer().stream(text)
    frames = [frame async for frame in stream]
    assert stream.synthesis_done
    assert len(frames) > 20
    for a, b in itertools.pairwise(frames):
        assert b.timestamp == pytest.approx(a.end_time)
    whole = Synthesizer().synthesize_blocking(text)
    assert abs(sum(f.num_samples for f in frames) - whole.num_samples) < 200


async def test_a_stream_played_slowly_does_not_hold_espeak_for_another_call() -> None:
    """One espeak serves every call of the process: a phone call playing a long greeting at real-time pace must not
    keep a second caller's greeting waiting until the first one has been heard to the end."""
    first = Synthesizer().stream("word " * 400)  # about two minutes of speech, consumed one chunk and then not at all
    it = first.__aiter__()
    await it.__anext__()
    audio = await asyncio.wait_for(Synthesizer().synthesize("hello, second caller"), timeout=30)
    assert audio.num_samples > 0
    await first.aclose()


async def test_stream_abort_releases_espeak() -> None:
    stream = Synthesizer().stream("word " * 400)
    it = stream.__aiter__()
    await it.__anext__()
    await stream.aclose()
    assert stream.synthesis_done
    # espeak is free again: a new synthesis completes
    audio = await asyncio.wait_for(Synthesizer().synthesize("hello again"), timeout=30)
    assert audio.num_samples > 0


def test_bad_settings_are_clear() -> None:
    with pytest.raises(ValueError, match="voice 'xx-nowhere' not found"):
        Synthesizer(voice="xx-nowhere").synthesize_blocking("hi")
    with pytest.raises(ValueError, match=r"rate must be 80\.\.450"):
        Synthesizer(rate=20).synthesize_blocking("hi")
    with pytest.raises(ValueError, match=r"pitch must be 0\.\.100"):
        Synthesizer(pitch=150).synthesize_blocking("hi")
    with pytest.raises(ValueError, match="empty text"):
        Synthesizer().synthesize_blocking("   ")


def test_voice_list_has_english() -> None:
    languages = {v.language for v in Espeak.instance().voices()}
    assert {"en-us", "en-gb"} <= languages
