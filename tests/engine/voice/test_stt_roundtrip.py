"""espeak-ng speech → WAV file → WAV backend → VAD segmentation → pocketsphinx with a phrase grammar.

Voices/rates used were each measured at 24/24 exact on this phrase list (en-us at 140/175/220 wpm, en-us+m5 at
150/175, en-us+f1 160, en-us+m1 175), and espeak renders them identically on every run. Not used: the +f2/+f3
variants (24/24 when measured, but espeak adds random breath noise, so their audio differs run to run) and
en-us+m3 (23/24), en-gb-x-rp (22/24), en-us+m2 (23/24).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import numpy as np
import pytest

from engine.voice.audio import AudioFrame
from engine.voice.stt import Recognizer
from engine.voice.tts import Synthesizer
from engine.voice.vad import VadSegmenter, segment_stream
from engine.voice.wav_backend import WavBackend, write_wav

PHRASES = [
    "roll (two | 2) dice with six sides",
    "roll a d twenty",
    "roll three dice with eight sides",
    "roll one die",
    "what's the weather at LSZH",
    "what is the weather at KJFK",
    "what is the weather at EGLL",
    "what time is it",
    "remember that my name is Bob",
    "remember that my favourite colour is blue",
    "what is my name",
    "what do you remember",
    "forget everything",
    "hello",
    "hi there",
    "good morning",
    "goodbye",
    "bye bye",
    "thank you",
    "transfer me to sales",
    "hang up",
    "yes",
    "no",
    "repeat that please",
]
VOICES = [
    ("en-us", 175),
    ("en-us", 140),
    ("en-us", 220),
    ("en-us+f1", 160),
    ("en-us+m1", 175),
    ("en-us+m5", 175),
    ("en-us+m5", 150),
]


@pytest.fixture(scope="module")
def recognizer() -> Recognizer:
    rec = Recognizer()
    rec.set_phrases(PHRASES)
    return rec


def _speech_file(path: Path, texts: list[tuple[str, str, int]], rate: int = 22050) -> None:
    gap = np.zeros(int(1.0 * rate), dtype=np.int16)
    parts = [gap]
    for text, voice, wpm in texts:
        parts += [Synthesizer(voice=voice, rate=wpm, sample_rate=rate).synthesize_blocking(text).samples, gap]
    write_wav(path, AudioFrame(np.concatenate(parts), rate))


async def test_round_trip_through_wav_vad_and_grammar(recognizer: Recognizer, tmp_path: Path) -> None:
    assert recognizer.phrases is not None
    sentences = sorted(recognizer.phrases.sentences)
    assert len(sentences) >= 20
    plan = [(s, *VOICES[i % len(VOICES)]) for i, s in enumerate(sentences)]
    wav = tmp_path / "speech.wav"
    _speech_file(wav, plan)  # written at 22050 Hz: the backend resamples to 16 kHz

    heard: list[tuple[str, str]] = []
    async with WavBackend(wav, sample_rate=16000, frame_ms=20) as mic:
        segmenter = VadSegmenter(16000, silence_ms=600)
        async for utt in segment_stream(mic.frames(), segmenter):
            result = await recognizer.transcribe(utt.audio)
            heard.append((result.text, result.source))
    assert [t for t, _ in heard] == [s for s, _, _ in plan]
    assert {src for _, src in heard} == {"grammar"}


async def test_out_of_grammar_falls_back_to_general_model(recognizer: Recognizer) -> None:
    audio = Synthesizer().synthesize_blocking("roll two dice")  # a prefix of a phrase, not a whole one
    result = await recognizer.transcribe(audio)
    assert result.source == "lm"
    assert result.grammar_text not in recognizer.phrases  # type: ignore[operator]
    assert result.text  # the general model heard something


async def test_no_fallback_returns_nothing(recognizer: Recognizer) -> None:
    recognizer.fallback = False
    try:
        result = await recognizer.transcribe(Synthesizer().synthesize_blocking("roll two dice"))
    finally:
        recognizer.fallback = True
    assert (result.text, result.source) == ("", "none")


async def test_decoding_does_not_block_the_event_loop(recognizer: Recognizer) -> None:
    audio = Synthesizer().synthesize_blocking("remember that my favourite colour is blue")
    ticks = 0
    done = asyncio.Event()

    async def ticker() -> None:
        nonlocal ticks
        while not done.is_set():
            ticks += 1
            await asyncio.sleep(0)

    task = asyncio.create_task(ticker())
    result = await recognizer.transcribe(audio)
    done.set()
    await task
    assert result.text == "remember that my favourite colour is blue"
    assert ticks > 1


def test_decode_rejects_non_frames(recognizer: Recognizer) -> None:
    with pytest.raises(TypeError, match="AudioFrame"):
        recognizer.decode(b"\x00\x00")  # type: ignore[arg-type]
